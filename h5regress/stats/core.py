"""Distributions, the paired tests and their intervals, Benjamini-Hochberg, pooled variance."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special


#: Beyond this many non-zero pairs the signed-rank distribution is approximated.
EXACT_MAX_N = 60


def _sps():
    """``scipy.stats``, imported on first use: it takes 0.5-2 s to import, which
    the commands that only need medians and percentiles (report, refs) skip."""
    import scipy.stats
    return scipy.stats


def norm_cdf(x: float) -> float:
    """Standard normal CDF (``scipy.stats.norm.cdf``)."""
    return float(special.ndtr(x))


def norm_ppf(p: float) -> float:
    """Standard normal quantile (``scipy.stats.norm.ppf``)."""
    return float(special.ndtri(p))


# --------------------------------------------------------------------------- basics
def median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError('median of no values')
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def percentile(values: Sequence[float], q: float) -> float:
    """``q``-th percentile (0..100), linear interpolation (numpy's default)."""
    s = sorted(values)
    if not s:
        raise ValueError('percentile of no values')
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def mad_sigma(values: Sequence[float]) -> float:
    """Robust standard deviation: 1.4826 x median absolute deviation."""
    m = median(values)
    return 1.4826 * median([abs(v - m) for v in values])


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def variance(values: Sequence[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.fsum((v - m) ** 2 for v in values) / (n - 1)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) and the sizes of tie groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        r = (i + j + 2) / 2.0
        for k in range(i, j + 1):
            ranks[order[k]] = r
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


# ----------------------------------------------------------------- signed rank
def signed_rank_counts(n: int) -> tuple[int, ...]:
    """Number of sign assignments giving each value of T+ (0..n(n+1)/2).

    Coefficients of prod_{i=1..n} (1 + x^i); they sum to 2^n. Kept as the
    exact integer reference of the law the gate takes from scipy (scipy gives
    probabilities in floating point); the tests hold one to the other.
    """
    counts = [1]
    for i in range(1, n + 1):
        new = counts + [0] * i
        for t, c in enumerate(counts):
            new[t + i] += c
        counts = new
    return tuple(counts)


@functools.lru_cache(maxsize=None)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t), t = 0..n(n+1)/2: the exact null law of ``scipy.stats.wilcoxon``.

    scipy gives the law only as p-values of samples, so it is asked once per
    ``n``, in one vectorised call, for one sample per value of T+ (ranks 1..n,
    the greedy subset summing to t positive). Cached: the gate and the
    calibration then read p-values and critical values from the table (one
    scipy call per sample would cost ~2 ms).
    """
    top = n * (n + 1) // 2
    rows = np.empty((top + 1, n))
    for t in range(top + 1):
        rest = t
        for k in range(n, 0, -1):
            rows[t, k - 1] = k if k <= rest else -k
            rest -= k if k <= rest else 0
    res = _sps().wilcoxon(rows, method='exact', alternative='less', axis=1)
    return tuple(float(p) for p in np.atleast_1d(res.pvalue))


@functools.lru_cache(maxsize=None)
def signed_rank_critical(n: int, confidence: float) -> int:
    """Largest c with P(T+ <= c) <= (1 - confidence) / 2, or -1 if none.

    The two-sided interval is then [W_(c+1), W_(M-c)] over the sorted Walsh
    averages (1-based), M = n(n+1)/2; c = -1 means the interval is unbounded
    (too few pairs for that confidence).
    """
    half = (1.0 - confidence) / 2.0
    if n <= EXACT_MAX_N:
        cdf = _signed_rank_cdf(n)
        c = -1
        for t, p in enumerate(cdf):
            if p <= half + 1e-12:
                c = t
            else:
                break
        return c
    m = n * (n + 1) / 4.0
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    z = norm_ppf(half)
    return max(-1, math.floor(m - 0.5 + z * sd))


@dataclasses.dataclass
class Comparison:
    """Result of comparing candidate with baseline on one metric (log scale).

    ``estimate``, ``lo`` and ``hi`` are log performance ratios (> 0: candidate
    better); ``lo``/``hi`` may be -inf/+inf when there are too few samples.
    ``p_worse`` is the one-sided p-value against "no change" in favour of a
    slowdown, ``p_two_sided`` the two-sided one.
    """
    n: int
    estimate: float
    lo: float
    hi: float
    p_worse: float
    p_better: float
    p_two_sided: float
    method: str
    #: what one-sided bounds at other confidences are read from: the sorted Walsh
    #: averages (signed rank), the sorted pairwise differences and the normal
    #: law of U (rank sum: ``(mu, sd)``), or the standard error and df (pooled t)
    walsh: tuple[float, ...] | None = dataclasses.field(default=None, repr=False)
    diffs: tuple[float, ...] | None = dataclasses.field(default=None, repr=False)
    u_law: tuple[float, float] | None = dataclasses.field(default=None, repr=False)
    se: float | None = None
    df: float | None = None

    def upper(self, confidence: float) -> float:
        """One-sided upper confidence bound of the log ratio at ``confidence``
        (0.5: the estimate)."""
        return self._bound(confidence, upper=True)

    def lower(self, confidence: float) -> float:
        """One-sided lower confidence bound of the log ratio at ``confidence``."""
        return self._bound(confidence, upper=False)

    def _bound(self, confidence: float, upper: bool) -> float:
        if not 0.5 <= confidence < 1.0:
            raise ValueError(f'one-sided confidence must be in [0.5, 1), got {confidence}')
        if confidence == 0.5 or self.n == 0:
            return self.estimate if self.n else (math.inf if upper else -math.inf)
        if self.se is not None and self.df is not None:            # pooled t
            half = t_ppf(confidence, self.df) * self.se
            return self.estimate + half if upper else self.estimate - half
        if self.walsh is not None:                                  # signed rank
            c = signed_rank_critical(self.n, 2.0 * confidence - 1.0)
            w = self.walsh
        elif self.diffs is not None and self.u_law is not None:     # rank sum
            mu, sd = self.u_law
            c = math.floor(mu - 0.5 + norm_ppf(1.0 - confidence) * sd) if sd > 0 else -1
            w = self.diffs
        else:
            return self.hi if upper else self.lo
        if c < 0:
            return math.inf if upper else -math.inf
        return w[len(w) - 1 - c] if upper else w[c]

    @property
    def ratio(self) -> float:
        return math.exp(self.estimate)

    @property
    def ratio_lo(self) -> float:
        return math.exp(self.lo) if self.lo > -math.inf else 0.0

    @property
    def ratio_hi(self) -> float:
        return math.exp(self.hi) if self.hi < math.inf else math.inf


def walsh_averages(d: Sequence[float]) -> list[float]:
    n = len(d)
    return sorted((d[i] + d[j]) * 0.5 for i in range(n) for j in range(i, n))


def signed_rank(d: Sequence[float], confidence: float = 0.95) -> Comparison:
    """Wilcoxon signed-rank test, Hodges-Lehmann estimate and interval.

    ``d`` are log performance ratios (> 0: candidate better). Zeros are left
    out of the test statistic (Wilcoxon's convention) but kept for the
    estimate and the interval. Exact distribution when there are no ties and
    at most :data:`EXACT_MAX_N` non-zero values, else the normal approximation
    with tie and continuity corrections.
    """
    n = len(d)
    if n == 0:
        return Comparison(0, 0.0, -math.inf, math.inf, 1.0, 1.0, 1.0, 'none')
    walsh = walsh_averages(d)
    est = median(walsh)
    c = signed_rank_critical(n, confidence)
    if c < 0:
        lo, hi = -math.inf, math.inf
    else:
        lo, hi = walsh[c], walsh[len(walsh) - 1 - c]

    nz = [x for x in d if x != 0.0]
    m = len(nz)
    if m == 0:
        return Comparison(n, est, lo, hi, 1.0, 1.0, 1.0, 'exact', walsh=tuple(walsh))
    ranks, ties = _ranks([abs(x) for x in nz])
    t_plus = sum(r for r, x in zip(ranks, nz) if x > 0)
    if not ties and m <= EXACT_MAX_N:
        cdf = _signed_rank_cdf(m)
        t = int(round(t_plus))
        p_worse = cdf[t]                                  # P(T+ <= t)
        p_better = cdf[len(cdf) - 1 - t]                  # P(T+ >= t), by symmetry
        method = 'exact'
    else:
        mu = m * (m + 1) / 4.0
        var = m * (m + 1) * (2 * m + 1) / 24.0 - sum(k ** 3 - k for k in ties) / 48.0
        sd = math.sqrt(var) if var > 0 else 0.0
        if sd == 0.0:
            p_worse = p_better = 1.0
        else:
            p_worse = norm_cdf((t_plus - mu + 0.5) / sd)
            p_better = norm_cdf((mu - t_plus + 0.5) / sd)
        method = 'normal'
    p_worse = min(1.0, p_worse)
    p_better = min(1.0, p_better)
    p_two = min(1.0, 2.0 * min(p_worse, p_better))
    return Comparison(n, est, lo, hi, p_worse, p_better, p_two, method, walsh=tuple(walsh))


# --------------------------------------------------------------- two-sample
def rank_sum(base: Sequence[float], cand: Sequence[float],
             confidence: float = 0.95) -> Comparison:
    """Unpaired comparison on log values: shift ``cand - base``.

    Two-sample Hodges-Lehmann estimate (median of all differences), the
    Mann-Whitney interval and p-values (normal approximation with tie and
    continuity corrections). Inputs are already signed log values.
    """
    m, n = len(base), len(cand)
    if m == 0 or n == 0:
        return Comparison(0, 0.0, -math.inf, math.inf, 1.0, 1.0, 1.0, 'none')
    diffs = sorted(y - x for x in base for y in cand)
    est = median(diffs)
    mu = m * n / 2.0
    pooled = list(base) + list(cand)
    ranks, ties = _ranks(pooled)
    big_n = m + n
    var = m * n / 12.0 * ((big_n + 1) - sum(t ** 3 - t for t in ties) / (big_n * (big_n - 1)))
    sd = math.sqrt(var) if var > 0 else 0.0
    z = norm_ppf((1.0 - confidence) / 2.0)
    c = math.floor(mu - 0.5 + z * sd) if sd > 0 else -1
    if c < 0:
        lo, hi = -math.inf, math.inf
    else:
        lo, hi = diffs[c], diffs[len(diffs) - 1 - c]
    u = sum(ranks[m:]) - n * (n + 1) / 2.0   # U of the candidate sample
    if sd == 0.0:
        p_worse = p_better = 1.0
    else:
        p_worse = norm_cdf((u - mu + 0.5) / sd)
        p_better = norm_cdf((mu - u + 0.5) / sd)
    p_worse, p_better = min(1.0, p_worse), min(1.0, p_better)
    return Comparison(min(m, n), est, lo, hi, p_worse, p_better,
                      min(1.0, 2 * min(p_worse, p_better)), 'rank-sum',
                      diffs=tuple(diffs), u_law=(mu, sd))


# ------------------------------------------------------------------- multiplicity
def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in input order.

    Reject at FDR level q every hypothesis whose adjusted value is <= q.
    (``scipy.stats.false_discovery_control``.)
    """
    if len(pvalues) == 0:
        return []
    return [float(q) for q in _sps().false_discovery_control(list(pvalues), method='bh')]


# ------------------------------------------------------------------- Student t
def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if math.isnan(t) or df <= 0:
        return 1.0
    return min(1.0, 2.0 * float(special.stdtr(df, -abs(t))))


def welch_t(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Welch's t-test of mean(b) - mean(a): (t, df, two-sided p) (``scipy.stats.ttest_ind``)."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return 0.0, 0.0, 1.0
    if variance(a) + variance(b) <= 0.0:      # scipy: nan; here the limit
        diff = mean(b) - mean(a)
        if diff == 0.0:
            return 0.0, float(na + nb - 2), 1.0
        return math.copysign(math.inf, diff), float(na + nb - 2), 0.0
    res = _sps().ttest_ind(b, a, equal_var=False)
    return float(res.statistic), float(res.df), float(res.pvalue)


# ------------------------------------------------------- variance from history
# Tonight's 10-20 pairs estimate the noise of the pair log-ratios poorly: a
# t-test at 19 df needs t > 2.54 where a z-test with the variance known needs
# 2.33 (one-sided 1 %), and the rank test pays about as much. The history of
# the same metric (same configuration, tool, operation and metric) holds many
# nights of pairs of the same kind: their pooled variance is known far better
# (20 nights x 19 df = 380 df: t > 2.34), so a night's test can borrow it --
# but only when tonight's own spread agrees with it. See :func:`pool_variance`,
# :func:`variance_consistent` and :func:`pooled_t`.

#: fewest past nights, and fewest pairs in each, to pool a variance from
POOL_MIN_NIGHTS = 8
POOL_MIN_PAIRS = 10
#: newest nights pooled
POOL_WINDOW = 20
#: a past night whose variance is beyond this two-sided level of the chi-square
#: law around the others' median is an outlier night, left out of the pool
POOL_SCREEN_LEVEL = 1e-4
#: tonight borrows only if its variance passes an upper F test at this level
#: against the pool (a noisier night falls back to the rank test). 0.2, not 0.05:
#: at 0.05 nights 1.2-1.5 times noisier than their history slipped through and
#: false alarms rose to 1.6-2.7 % (issue 19; benchmarks/calibrate.py, section 0)
CONSISTENCY_LEVEL = 0.2


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (df = inf: normal)."""
    return float(special.stdtr(df, t))            # scipy.stats.t.cdf


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t (df = inf: normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError('t_ppf: p must be in (0, 1)')
    return float(special.stdtrit(df, p))          # scipy.stats.t.ppf


def f_sf(f: float, df1: float, df2: float) -> float:
    """Upper tail P(F >= f) of Fisher's F(df1, df2); df2 = inf: chi-square(df1)/df1."""
    if f <= 0.0:
        return 1.0
    if math.isinf(f):
        return 0.0
    if math.isinf(df2):                           # scipy's fdtrc gives nan there
        return chi2_sf(f * df1, df1)
    return float(special.fdtrc(df1, df2, f))      # scipy.stats.f.sf


def chi2_sf(x: float, df: float) -> float:
    """Upper tail P(X >= x) of chi-square with ``df`` degrees of freedom."""
    if x <= 0.0:
        return 1.0
    return float(special.chdtrc(df, x))           # scipy.stats.chi2.sf


@functools.lru_cache(maxsize=4096)   # pool_variance asks the same few per metric
def chi2_ppf(p: float, df: float) -> float:
    """Quantile of chi-square with ``df`` degrees of freedom."""
    return 2.0 * float(special.gammaincinv(df / 2.0, p))   # scipy.stats.chi2.ppf


@dataclasses.dataclass
class PooledVariance:
    """Variance of pair log-ratios pooled from past nights of one metric.

    ``var`` = sum((n_i - 1) s_i^2) / sum(n_i - 1) over the ``nights`` kept,
    ``df`` = sum(n_i - 1); ``outliers``: nights left out by the screen;
    ``usable`` is False (with ``reason``) when too few nights qualify.
    """
    var: float
    df: int
    nights: int
    outliers: int
    usable: bool
    reason: str

    @property
    def sigma(self) -> float:
        return math.sqrt(self.var) if self.var > 0 else 0.0


def pool_variance(nights: Sequence[tuple[int, float]], min_nights: int = POOL_MIN_NIGHTS,
                  min_pairs: int = POOL_MIN_PAIRS, window: int = POOL_WINDOW,
                  screen: float = POOL_SCREEN_LEVEL) -> PooledVariance:
    """Pool per-night (pairs, sample variance) of one metric, oldest first.

    The newest ``window`` nights with at least ``min_pairs`` pairs count.
    Robust screen: the median of their variances (corrected for the median
    of chi-square(n-1)/(n-1) at the typical n) is the reference; a night
    whose variance lies outside its chi-square(n_i - 1) band at two-sided
    level ``screen`` around it (a storm on the file system, a broken node)
    is left out. The rest are pooled the classical way -- the efficient
    estimate, with its exact degrees of freedom ``sum(n_i - 1)``, which the
    test then uses as the t reference (:func:`pooled_t`): a short history
    stays conservative, a long one approaches the known-variance z-test.
    """
    good = [(int(n), float(v)) for n, v in nights
            if n is not None and v is not None and n >= min_pairs and math.isfinite(v)
            and v > 0][-window:]
    if len(good) < min_nights:
        return PooledVariance(0.0, 0, len(good), 0, False,
                              f'{len(good)} past night(s) with >= {min_pairs} pairs, '
                              f'need {min_nights}')
    n_typ = int(median([n for n, _ in good]))
    ref = median([v for _, v in good]) / (chi2_ppf(0.5, n_typ - 1) / (n_typ - 1))
    kept = []
    for n, v in good:
        k = n - 1
        lo = chi2_ppf(screen / 2, k) / k
        hi = chi2_ppf(1 - screen / 2, k) / k
        if lo <= v / ref <= hi:
            kept.append((n, v))
    outliers = len(good) - len(kept)
    if len(kept) < min_nights:
        return PooledVariance(0.0, 0, len(kept), outliers, False,
                              f'{len(kept)} consistent past night(s), need {min_nights}')
    df = sum(n - 1 for n, _ in kept)
    var = math.fsum((n - 1) * v for n, v in kept) / df
    return PooledVariance(var, df, len(kept), outliers, True,
                          f'pooled from {len(kept)} night(s), {df} df')


def variance_consistent(var_tonight: float, n: int, pooled: PooledVariance,
                        level: float = CONSISTENCY_LEVEL) -> tuple[bool, float, float]:
    """Upper F test of tonight's variance against the pooled one: (ok, F, p).

    ``ok`` is False when tonight is significantly noisier than its history at
    ``level``: then the night must not borrow the (too small) pooled variance.
    A night quieter than its history may borrow it (conservative).
    """
    if n < 3 or pooled.var <= 0:
        return False, math.nan, math.nan
    f = var_tonight / pooled.var
    p = f_sf(f, n - 1, pooled.df)
    return p > level, f, p


def pooled_t(d: Sequence[float], pooled: PooledVariance,
             confidence: float = 0.95) -> Comparison:
    """One-sample t test of the mean log-ratio with the history's variance.

    ``t = mean(d) / (sigma_pooled / sqrt(n))`` against Student's t with the
    pooled degrees of freedom (tonight's mean is independent of the past
    nights' variances, so this is an exact t test under normal noise);
    interval ``mean +- t_{df, (1+confidence)/2} sigma_pooled / sqrt(n)``.
    """
    n = len(d)
    if n == 0:
        return Comparison(0, 0.0, -math.inf, math.inf, 1.0, 1.0, 1.0, 'none')
    return _mean_t(d, pooled.sigma, pooled.df, 'pooled-t', confidence)


def student_t(d: Sequence[float], confidence: float = 0.95) -> Comparison:
    """One-sample Student t test of the mean log-ratio with tonight's own variance
    (``scipy.stats.ttest_1samp``'s statistic, df n - 1); interval
    ``mean +- t_{n-1, (1+confidence)/2} s / sqrt(n)``.

    Why beside the signed-rank test: an exact test of signs (signed rank, or a
    permutation of the mean) cannot give a p-value below ``2^-n``, so at 10 pairs
    and Benjamini-Hochberg over 12 metrics its smallest q is 12/1024 -- above
    alpha itself, far above an early look's level: no slowdown, however large,
    could FAIL there. The t statistic has no such floor. Under "no change" the
    log-ratios are symmetric about 0 (the two runs of a pair are exchangeable),
    where the t test keeps (or undercuts) its level even with heavy tails, which
    inflate its variance estimate more than its mean.
    """
    n = len(d)
    if n < 2:
        return signed_rank(d, confidence)
    return _mean_t(d, math.sqrt(variance(d)), n - 1, 'student-t', confidence)


def _mean_t(d: Sequence[float], sigma: float, df: float, method: str,
            confidence: float) -> Comparison:
    """The t test of the mean of ``d`` with noise ``sigma`` known to ``df`` degrees
    of freedom (the signed-rank test when ``sigma`` is 0: all pairs equal)."""
    n = len(d)
    m = mean(d)
    se = sigma / math.sqrt(n)
    if se <= 0:
        return signed_rank(d, confidence)
    t = m / se
    p_worse = t_cdf(t, df)
    p_better = t_cdf(-t, df)
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return Comparison(n, m, m - half, m + half, p_worse, p_better,
                      min(1.0, 2.0 * min(p_worse, p_better)), method, se=se, df=df)
