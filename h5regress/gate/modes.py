"""The two-mode check of each build's runs (issue 25)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import stats


def _modes(lb: Sequence[float], lc: Sequence[float], cfg: Mapping[str, Any]
           ) -> tuple[dict[str, Any] | None, list[float] | None]:
    """The two-mode check of the night's runs (log values), and the pair log-ratios
    of the runs with the modes' gap taken out (None: the pairs are compared as they
    are).

    The modes are found in all the night's runs (both builds: twice the runs of
    one build, so that 10 pairs suffice to see them); a run above the cut of
    their best two-group split is in the high mode. They are used when that split
    is bimodal, each build has runs in both modes, a build bimodal on its own
    splits its runs as the pooled cut does, and each build's distance between its
    modes is within ``centre_tolerance`` of their mean (the gap). Each run then
    loses the gap when it is in the high mode, and *keeps its build's level*: a
    slowdown of both modes stays whole in the pairs, whatever its size against
    the gap. (Centring each mode on the median of both builds' runs, the rule
    before, took up to half a slowdown about the modes' distance out.) A slowdown
    about the gap puts the cut between the builds (each build's runs on one side):
    compared as they are. A shift of the modes' shares is what the gap-free pairs
    cannot see: :func:`two_mode_comparison` tests it apart. The level of the test
    is measured, not exact: ``benchmarks/calibrate.py --only-modes``.
    """
    mc = cfg['modes']
    if not mc['enabled']:
        return None, None
    kw = {'min_d': float(mc['min_d']), 'min_share': float(mc['min_share'])}
    per = {side: stats.two_modes(vals, **kw) for side, vals in (('base', lb), ('cand', lc))}
    out: dict[str, Any] = {side: (t.as_dict() if t else None) for side, t in per.items()}
    out['bimodal'] = [side for side, t in per.items() if t and t.bimodal]
    out.update({'same_mode_pairs': None, 'centred': False, 'gap': None})
    if not mc['each_build']:
        return _pooled_centres_rule(lb, lc, out, kw['min_share'])
    pooled = stats.two_modes(list(lb) + list(lc), **kw)
    out['pooled'] = pooled.as_dict() if pooled else None
    if not out['bimodal'] and not (pooled and pooled.bimodal):
        out['note'] = 'one mode' if pooled else 'too few runs to check for two modes'
        return out, None
    own = {'baseline': _split(lb), 'candidate': _split(lc)}
    why = _modes_disagree(own, float(mc['min_d']), float(mc['centre_tolerance']))
    if why is not None:
        out['note'] = f'the night\'s runs fall in two modes, but {why}: pairs compared as they are'
        return out, None
    gap = out['gap'] = (own['baseline'][1] + own['candidate'][1]) / 2.0
    out.update(_share_shift(lb, lc, own['baseline'][0], own['candidate'][0]))
    cut_b, cut_c = own['baseline'][0], own['candidate'][0]
    out['centred'] = True
    out['note'] = (f'the runs of both builds fall in two modes (x{math.exp(gap):.2f} apart): '
                   f'each high-mode run measured down by the gap, each build\'s level kept; '
                   f'{out["same_mode_pairs"]} of {len(lb)} pairs had both runs in one mode')
    return out, [(c - gap * (c > cut_c)) - (b - gap * (b > cut_b)) for b, c in zip(lb, lc)]


def _split(values: Sequence[float]) -> tuple[float, float, float]:
    """The best two-group split of one build's runs (exact two-means, a group may
    hold one run): its cut, the gap between the groups' means and the pooled SD
    within the groups (0 with fewer than 3 runs)."""
    x = sorted(values)
    n = len(x)
    best = None
    for k in range(1, n):
        lo, hi = x[:k], x[k:]
        ss = sum((v - stats.mean(lo)) ** 2 for v in lo) + sum((v - stats.mean(hi)) ** 2
                                                              for v in hi)
        if best is None or ss < best[0]:
            best = (ss, k)
    if best is None:
        return math.inf, 0.0, 0.0
    ss, k = best
    sd = math.sqrt(ss / (n - 2)) if n > 2 else 0.0
    return (x[k - 1] + x[k]) / 2.0, stats.mean(x[k:]) - stats.mean(x[:k]), sd


def _pooled_centres_rule(lb: Sequence[float], lc: Sequence[float], out: dict[str, Any],
                         min_share: float) -> tuple[dict[str, Any], list[float] | None]:
    """The rule before issue 25 (``each_build: false``, kept to measure it): whenever
    both builds are bimodal, each run measured from the median of its mode over both
    builds' runs."""
    if len(out['bimodal']) < 2:
        out['note'] = 'pairs compared as they are'
        return out, None
    both = list(lb) + list(lc)
    cut = stats.two_modes(both, min_d=0.0, min_share=min_share).cut
    out.update(_pooled_split(lb, lc, cut))
    low = stats.median([x for x in both if x <= cut])
    high = stats.median([x for x in both if x > cut])
    centre = lambda x: x - (high if x > cut else low)  # noqa: E731
    out['centred'], out['note'] = True, 'each run measured from its mode\'s centre'
    return out, [centre(c) - centre(b) for b, c in zip(lb, lc)]


def _pooled_split(lb: Sequence[float], lc: Sequence[float], cut: float) -> dict[str, Any]:
    """:func:`_share_shift` with one cut for both builds."""
    return _share_shift(lb, lc, cut, cut)


def _share_shift(lb: Sequence[float], lc: Sequence[float], cut_b: float, cut_c: float
                 ) -> dict[str, Any]:
    """The pairs within one mode and the pairs across the modes each way (each
    build's runs split at its cut), with the one-sided sign test of "the candidate
    lands in the slow mode more often"."""
    slow = sum(b > cut_b and c <= cut_c for b, c in zip(lb, lc))   # baseline fast
    fast = sum(c > cut_c and b <= cut_b for b, c in zip(lb, lc))
    return {'cut': {'baseline': cut_b, 'candidate': cut_c},
            'same_mode_pairs': len(lb) - slow - fast,
            'share_shift': {'slow': slow, 'fast': fast,
                            'p': stats.sign_test_p(slow, slow + fast)}}


def _modes_disagree(own: Mapping[str, tuple[float, float, float]], min_d: float,
                    tolerance: float) -> str | None:
    """Why the builds' runs do not share two modes (None: they do): a build whose
    best split (:func:`_split`) is no clean separation (gap below ``min_d`` times
    the SD within its groups: its runs lie in one mode, as when a slowdown about
    the modes' distance moved every run of one build), or builds whose gaps differ
    by more than ``tolerance`` of their mean (the modes themselves moved apart)."""
    for name, (_, gap, sd) in own.items():
        if not gap > min_d * sd:
            return (f'the {name}\'s runs split no more than {gap / sd if sd else 0:.1f} SDs '
                    f'apart (not two modes, fewer than {min_d:g}: a shift between the builds '
                    f'about the modes\' distance)')
    gaps = [gap for _, gap, _ in own.values()]
    if abs(gaps[0] - gaps[1]) > tolerance * (gaps[0] + gaps[1]) / 2.0:
        return (f'the baseline\'s modes are x{math.exp(gaps[0]):.3f} apart, the '
                f'candidate\'s x{math.exp(gaps[1]):.3f}, further apart than '
                f'{tolerance:g} of their mean')
    return None


@dataclasses.dataclass
class TwoModeComparison(stats.Comparison):
    """A comparison of gap-free pairs (:func:`_modes`, their bounds: ``gap_free``)
    whose lower bound also holds a shift of the modes' shares toward the slow mode:
    ``as_they_are`` (the pairs' own comparison) lowers it when ``widened``."""
    gap_free: stats.Comparison | None = dataclasses.field(default=None, repr=False)
    as_they_are: stats.Comparison | None = dataclasses.field(default=None, repr=False)
    widened: bool = False

    def upper(self, confidence: float) -> float:
        return self.gap_free.upper(confidence)

    def lower(self, confidence: float) -> float:
        own = self.gap_free.lower(confidence)
        return min(own, self.as_they_are.lower(confidence)) if self.widened else own


def two_mode_comparison(gap_free: stats.Comparison, as_they_are: stats.Comparison,
                        modes: Mapping[str, Any], share_level: float) -> TwoModeComparison:
    """The comparison of a two-mode night: the gap-free pairs' test of a slowdown
    of the modes, beside the exact sign test of the candidate landing in the slow
    mode more often (Bonferroni: p = 2 min of the two, so that neither is chosen
    after seeing the data, as "compare the pairs as they are when the shares
    moved" did). When the shares moved toward the slow mode (sign test at
    ``share_level``), the estimate and the lower bound are those of the pairs as
    they are, so that such a shift never PASSes; a FAIL still needs the modes
    themselves slower beyond the margin (the gap-free upper bound), which a shift
    toward the slow mode only makes slower still."""
    shift = modes['share_shift']
    p = min(1.0, 2.0 * min(gap_free.p_worse, shift['p']))
    moved = dataclasses.replace(gap_free, p_worse=p, method=gap_free.method + ", modes' gap out")
    widened = shift['slow'] > shift['fast'] and shift['p'] <= share_level
    if widened:
        moved = dataclasses.replace(
            moved, estimate=min(gap_free.estimate, as_they_are.estimate),
            lo=min(gap_free.lo, as_they_are.lo), method=moved.method + ', shares moved')
    return TwoModeComparison(**{f.name: getattr(moved, f.name)
                                for f in dataclasses.fields(stats.Comparison)},
                             gap_free=gap_free, as_they_are=as_they_are, widened=widened)
