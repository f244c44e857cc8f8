"""The looks of a rerun loop (alpha spending) and the two-mode check."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from h5regress.stats.core import (_sps, norm_cdf, norm_ppf)


# ------------------------------------------------------------ sequential looks
#: Cumulative false-alarm spending of the rerun loop: alpha * (n / cap) ** rho.
#: rho = 2 spends a quarter of alpha at a first look at half the cap, so that a
#: large slowdown can FAIL there among many metrics (issue 25: rho = 3 spent an
#: eighth), and the last look keeps most of alpha and the fixed design's power.
SPENDING_RHO = 2.0


@functools.lru_cache(maxsize=1024)
def sequential_levels(looks: tuple[int, ...], alpha: float, rho: float = SPENDING_RHO,
                      cap: int | None = None, final: bool = True) -> tuple[float, ...]:
    """One-sided nominal levels of a FAIL at each look of a rerun loop.

    ``looks`` are the numbers of pairs at the looks made (e.g. 10, 15, 20: gate,
    add pairs while INCONCLUSIVE, gate again); ``cap`` the pairs the loop plans
    at most (default: the last look). Judging every look at ``alpha`` would
    raise the false-alarm rate of the loop above ``alpha`` (three looks at 1 %
    give about 1.2-1.4 %). The levels returned spend ``alpha`` by the function
    ``alpha * (n_k / cap) ** rho`` (Lan & DeMets) on the information actually
    observed, and a ``final`` last look (the one that ends the loop) spends
    whatever is left, at whatever number of pairs it has: a night that lost a
    pair at the cap keeps nearly the whole alpha. Under "no change" the
    probability of a first FAIL at look k is exactly the k-th increment, so
    the loop's false-alarm rate is ``alpha``. They are computed for the test
    statistic ``Z_k`` of the mean of the first ``n_k`` pairs, whose looks are
    correlated as ``sqrt(n_j / n_k)`` (independent increments), by the
    recursive numerical integration of Armitage, McPherson and Rowe (1969) on
    a grid -- ours: scipy has no group-sequential boundaries (it gives the
    normal law, Simpson's rule and the root finder). Stopping early for PASS
    is ignored (non-binding), which keeps the levels conservative. The gate
    spends the error of a wrong PASS the same way: the same function of
    (1 - confidence) / 2 gives the level of the PASS bound at each look. A
    single final look returns ``(alpha,)``.
    """
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 1:
        raise ValueError(f'looks must be increasing positive pair counts, got {looks}')
    cap = looks[-1] if cap is None else cap
    spend = [alpha * min(1.0, n / cap) ** rho for n in looks]
    if final:
        spend[-1] = alpha
    if len(looks) == 1:
        return (spend[0],)
    # the correlations need only the ratios of the pairs
    return _boundary_levels(tuple(n / looks[-1] for n in looks), tuple(spend))


def _boundary_levels(info: tuple[float, ...], spend: tuple[float, ...]) -> tuple[float, ...]:
    """The nominal levels of the looks at information fractions ``info`` whose
    cumulative spending is ``spend`` (Armitage, McPherson and Rowe's recursion)."""
    from scipy import integrate, optimize
    norm = _sps().norm
    grid_n = 241                 # odd: composite Simpson's rule on the grid
    lo_z = -8.0
    levels: list[float] = []
    density = grid = np.empty(0)   # density of Z_{k-1} on the continuation grid
    for k, t in enumerate(info):
        target = spend[k] - (spend[k - 1] if k else 0.0)
        if k == 0:
            c = -norm_ppf(target)
        else:
            prev_t = info[k - 1]
            sd = math.sqrt(t - prev_t)
            z_prev = grid * math.sqrt(prev_t)

            def crossing(c: float) -> float:
                tail = special.ndtr((z_prev - c * math.sqrt(t)) / sd)   # 1 - Phi(...)
                return float(integrate.simpson(density * tail, x=grid)) - target
            c = optimize.brentq(crossing, -8.0, 12.0, xtol=1e-12)
        levels.append(norm_cdf(-c))
        # density of Z_k on (lo_z, c): continue only below the FAIL boundary
        new_grid = np.linspace(lo_z, c, grid_n)
        if k == 0:
            density = norm.pdf(new_grid)
        else:
            kernel = norm.pdf((new_grid[:, None] * math.sqrt(t) - z_prev[None, :]) / sd)
            density = integrate.simpson(kernel * density, x=grid, axis=1) * math.sqrt(t) / sd
        grid = new_grid
    return tuple(levels)


def looks_made(n: int, looks: Sequence[int], pairs_run: int | None = None
               ) -> tuple[tuple[int, ...], bool]:
    """The pair counts of the looks a metric with ``n`` pairs has had, this one
    last, and whether this look ends the loop, when the loop planned ``looks``
    and has run ``pairs_run`` pairs (default ``n``: none lost).

    This look is the last planned one at or below ``pairs_run``; it is final
    when ``pairs_run`` reaches the last planned look. An earlier look had
    ``min(planned, n)`` of the metric's pairs (kept only when below ``n``: the
    pairs a metric lost are not known to have been lost late or early, and an
    earlier look's count barely moves the levels).
    """
    run = n if pairs_run is None else max(pairs_run, n)
    k = sum(1 for planned in looks if planned <= run)
    earlier = sorted({min(p, n) for p in looks[:max(k - 1, 0)]} - {n})
    return tuple([x for x in earlier if x < n] + [n]), run >= looks[-1]


def look_level(n: int, looks: Sequence[int] | None, alpha: float,
               rho: float = SPENDING_RHO, pairs_run: int | None = None) -> float:
    """Nominal level of a FAIL with ``n`` pairs in a loop that plans to look at
    ``looks`` and has run ``pairs_run`` pairs (default ``n``).

    Spent on the pairs actually reached (:func:`looks_made`,
    :func:`sequential_levels`): the look that ends the loop (``pairs_run`` at
    the last planned look, or beyond) spends all that is left of ``alpha``
    whatever ``n`` it has, so a pair lost at the cap costs little; an earlier
    look at ``n`` spends ``alpha * (n / cap) ** rho`` in all. Without looks (a
    single fixed look): ``alpha``.
    """
    if not looks:
        return alpha
    made, final = looks_made(max(n, 1), looks, pairs_run)
    return sequential_levels(made, alpha, rho, looks[-1], final)[-1]


# ------------------------------------------------------------------- two modes
#: Ashman's D of the best two-group split above which a sample has two modes.
#: D = sqrt(2) |m1 - m2| / sqrt(s1^2 + s2^2) is > 2 for a clean separation of two
#: normal components; but the best split of a *unimodal* sample of 10-20 values
#: already gives D of 2.5-4 and beyond (the split itself makes the groups look
#: apart), so the threshold is set by simulation (2000-3000 samples per cell): at
#: D >= 6 with both groups holding >= 20 % of the values (and >= 3), normal, t(3)
#: and heavy-tail (5 % of runs 30 % slow) samples are flagged 1.3 / 0.6 / 1.0 % of
#: the time at n = 10 and <= 0.3 / 0.3 / 1.1 % at n = 15-20, while runs landing
#: in one of two modes a factor 2 apart (700 or 1400 MiB/s, log-sd 5-8 % within
#: a mode, half in each) are flagged 85-88 % at n = 10 and 98-99.6 % at n = 15-20
#: (83-90 % with 30 % of the runs in the high mode).
MODES_MIN_D = 6.0
MODES_MIN_SHARE = 0.2


@dataclasses.dataclass
class TwoModes:
    """The best split of a sample into a low and a high group (exact two-means in
    one dimension: the sorted values cut where the within-group sum of squares is
    least -- what ``scipy.cluster.vq.kmeans2`` approximates from a random start)."""
    bimodal: bool
    cut: float          # values above it are in the high group
    low_mean: float
    high_mean: float
    low_n: int
    high_n: int
    d: float            # Ashman's D of the split

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def two_modes(values: Sequence[float], min_d: float = MODES_MIN_D,
              min_share: float = MODES_MIN_SHARE) -> TwoModes | None:
    """Whether ``values`` (log performance of one build's runs, say) fall in two
    modes: the two-means split with each group >= ``min_share`` of the values
    (and >= 3), and its Ashman's D >= ``min_d``. None with fewer than 6 values."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    kmin = max(3, math.ceil(min_share * n))
    if n < 6 or n < 2 * kmin:
        return None
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    c2 = np.concatenate(([0.0], np.cumsum(x * x)))
    k = np.arange(kmin, n - kmin + 1)
    ss_lo = c2[k] - c1[k] ** 2 / k
    ss_hi = (c2[n] - c2[k]) - (c1[n] - c1[k]) ** 2 / (n - k)
    best = int(k[np.argmin(ss_lo + ss_hi)])
    lo, hi = x[:best], x[best:]
    v = float(np.var(lo, ddof=1) + np.var(hi, ddof=1))
    gap = float(hi.mean() - lo.mean())
    d = math.sqrt(2.0) * gap / math.sqrt(v) if v > 0 else (math.inf if gap > 0 else 0.0)
    return TwoModes(d >= min_d, float((lo[-1] + hi[0]) / 2), float(lo.mean()),
                    float(hi.mean()), len(lo), len(hi), d)


def sign_test_p(k: int, n: int) -> float:
    """One-sided exact sign test: P(X >= k) for X ~ Binomial(n, 1/2) (1.0 when n is 0).

    McNemar's exact test when ``n`` are the discordant pairs of two paired
    binary outcomes and ``k`` those discordant one way: under "no change" the
    two runs of a pair are exchangeable, so each discordant pair is either way
    with probability 1/2 (``scipy.stats.binomtest(k, n, alternative='greater')``).
    """
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0 ** n
