"""A night noisier than its history, told from all its metrics at once (issue 25).

Each metric's upper F test (:func:`h5regress.stats.variance_consistent`) keeps a
night that is clearly noisier than that metric's history from borrowing its
variance; but when the whole night is noisier (a busier machine, another file
system load), the metrics whose own spread happens to come out small still pass
it, and their pooled t test then uses a variance smaller than tonight's: with
twelve metrics each a little noisier than its history, some FAIL in a night
where nothing changed. Tonight's metrics share the machine: the ratio of their
variances to their histories', pooled over the metrics (tonight's pairs minus
one each as degrees of freedom), is known far better than any one metric's.
When that ratio is significantly above 1, each metric's pooled variance is
scaled by it before its own F test and its t test, and the scaled variance's
degrees of freedom combine both estimates' (the relative variances of a product
of two independent variance estimates add: ``1/df = 1/df_history + 1/df_night``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from h5regress.stats.core import PooledVariance, chi2_ppf, f_sf, median


@dataclasses.dataclass
class NightNoise:
    """Tonight's variance over the histories', pooled over the night's metrics.

    ``ratio``: sum((n_i - 1) s_i^2 / sigma_i^2) / ``df``, ``df`` = sum(n_i - 1)
    over the ``metrics`` counted; ``p``: the upper F test of ``ratio`` against 1;
    ``left_out``: metrics whose ratio lies beyond ``screen`` of the night's
    median ratio (a row gone bimodal, a broken run: judged on their own pairs anyway); ``scaled``:
    whether the histories' variances are scaled by ``ratio`` tonight."""
    ratio: float
    df: int
    metrics: int
    left_out: int
    p: float
    scaled: bool

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def night_noise(metrics: Sequence[tuple[int, float, PooledVariance]], level: float,
                screen: float, min_metrics: int) -> NightNoise | None:
    """The night's variance ratio from ``(pairs, variance of the pair log-ratios,
    usable pooled history)`` of each metric with >= 3 pairs (None: fewer than
    ``min_metrics`` such metrics). Scaled when the ratio's upper F test has
    p <= ``level`` (the per-metric ``consistency_level``)."""
    usable = [(n, v, pv) for n, v, pv in metrics if n >= 3 and pv.usable and pv.var > 0]
    if len(usable) < min_metrics:
        return None
    kept = _screened(usable, screen)
    if len(kept) < min_metrics:
        return None
    df = sum(n - 1 for n, _, _ in kept)
    ratio = sum((n - 1) * v / pv.var for n, v, pv in kept) / df
    p = f_sf(ratio, df, min(pv.df for _, _, pv in kept))
    return NightNoise(ratio, df, len(kept), len(usable) - len(kept), p,
                      ratio > 1.0 and p <= level)


def _screened(usable: Sequence[tuple[int, float, PooledVariance]], screen: float
              ) -> list[tuple[int, float, PooledVariance]]:
    """The metrics whose variance ratio lies inside its chi-square band at two-sided
    level ``screen`` around the night's median ratio (corrected for the median of
    chi-square(n-1)/(n-1) at the typical n), as :func:`pool_variance` screens nights:
    around the night's own ratio, not 1, so a night noisier than its histories does
    not lose its noisiest metrics and come out quieter than it is."""
    n_typ = int(median([n for n, _, _ in usable]))
    ref = median([v / pv.var for _, v, pv in usable]) / (chi2_ppf(0.5, n_typ - 1) / (n_typ - 1))
    return [(n, v, pv) for n, v, pv in usable
            if chi2_ppf(screen / 2, n - 1) / (n - 1) <= v / pv.var / ref
            <= chi2_ppf(1 - screen / 2, n - 1) / (n - 1)]


def scaled_pool(pooled: PooledVariance, night: NightNoise | None) -> PooledVariance:
    """``pooled`` with its variance scaled by the night's ratio when the night is
    noisier than its histories (else ``pooled`` itself)."""
    if night is None or not night.scaled or not pooled.usable:
        return pooled
    df = int(1.0 / (1.0 / pooled.df + 1.0 / night.df))
    return dataclasses.replace(
        pooled, var=pooled.var * night.ratio, df=df,
        reason=f'{pooled.reason}, x{night.ratio:.2f} for a night noisier than its '
               f'histories ({night.metrics} metrics, {df} df)')
