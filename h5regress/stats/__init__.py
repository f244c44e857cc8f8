"""Statistics of the performance gate, built on scipy's distributions and tests.

Why these methods
-----------------
The gate compares a candidate HDF5 build with a baseline from *pairs* of runs
made back to back in the same allocation (ABBA order). For each pair ``i`` it
takes the log-ratio ``d_i = s * ln(candidate_i / baseline_i)`` with ``s = +1``
when higher is better and ``-1`` otherwise, so ``d > 0`` always means "the
candidate is better" and ``exp(d)`` is the *performance ratio*.

* **Wilcoxon signed-rank test with the Hodges-Lehmann estimate and its exact
  confidence interval** (:func:`signed_rank`). Under "no change" the two runs
  of a pair are exchangeable (their order is alternated), so ``d_i`` is
  symmetric about 0 and the signed-rank null distribution is *exact*: the
  test has its nominal size at n = 10 or 20 without assuming normal noise.
  I/O noise is skewed and has outliers (one slow run from a busy file system);
  the Hodges-Lehmann estimate (median of Walsh averages) has 95 % efficiency
  of the mean under normal noise and is far more robust under heavy tails.
  The interval comes from the order statistics of the Walsh averages with the
  exact critical value (Hollander & Wolfe, ch. 3), normal approximation with
  tie correction beyond :data:`EXACT_MAX_N` pairs or with ties.
* A bootstrap (percentile or BCa) was not chosen: at n <= 20 the percentile
  interval undercovers noticeably, BCa is still only approximate, and both
  cost thousands of resamples per metric (the calibration benchmark runs
  millions of gates).
* **Unpaired fallback** (:func:`rank_sum`): foreign logs without pair ids get
  the two-sample Hodges-Lehmann shift with the Mann-Whitney interval (normal
  approximation with tie correction).
* **Benjamini-Hochberg** (:func:`benjamini_hochberg`): step-up adjusted
  p-values across the night's gated metrics.
* **Welch t-test** (:func:`welch_t`). The change points of the nightly history
  are Apache Otava's (:mod:`h5regress.creep`).

Where the numbers come from
---------------------------
Every distribution is scipy's: the normal, Student t, chi-square and F laws
through the ``scipy.special`` functions that ``scipy.stats.norm/t/chi2/f``
evaluate themselves (``ndtr``, ``stdtr``, ``chdtrc``, ... -- the same values,
without the ~80 us per call of ``rv_continuous`` dispatch, which the change
points and the calibration's millions of gates would feel); the exact null law
of the signed-rank statistic from ``scipy.stats.wilcoxon(method='exact')``;
Benjamini-Hochberg from ``scipy.stats.false_discovery_control``; the Welch
test from ``scipy.stats.ttest_ind``; root finding and Simpson's rule of the
alpha-spending levels from ``scipy.optimize`` and ``scipy.integrate``.
scipy has no Hodges-Lehmann estimator or interval, no pooled-history t test
and no group-sequential boundaries: those are ours, built on its pieces.
"""

from __future__ import annotations

# a module per part; their names stay the statistics' (stats.signed_rank, ...)
from h5regress.stats.core import (  # noqa: F401
    CONSISTENCY_LEVEL, Comparison, EXACT_MAX_N, POOL_MIN_NIGHTS, POOL_MIN_PAIRS, POOL_SCREEN_LEVEL,
    POOL_WINDOW, PooledVariance, _mean_t, _ranks, _signed_rank_cdf, _sps, benjamini_hochberg,
    chi2_ppf, chi2_sf, f_sf, mad_sigma, mean, median, norm_cdf, norm_ppf, percentile,
    pool_variance, pooled_t, rank_sum, signed_rank, signed_rank_counts, signed_rank_critical,
    student_t, t_cdf, t_ppf, t_two_sided_p, variance, variance_consistent, walsh_averages, welch_t)
from h5regress.stats.nightnoise import (  # noqa: F401
    NightNoise, night_noise, scaled_pool)
from h5regress.stats.sequential import (  # noqa: F401
    MODES_MIN_D, MODES_MIN_SHARE, SPENDING_RHO, TwoModes, look_level, looks_made,
    sequential_levels, sign_test_p, two_modes)
