"""The two-mode check of each build's runs (issue 25)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import stats


def _modes(lb: Sequence[float], lc: Sequence[float], cfg: Mapping[str, Any]
           ) -> tuple[dict[str, Any] | None, list[float] | None]:
    """The bimodality check of each build's runs (log values), and the pair
    log-ratios of the runs measured from their modes' centres (None: not used).

    The modes are those of *all* the night's runs (both builds): a run above
    the cut of their best two-group split is in the high mode, and each mode's
    centre is the median of its runs. Used when both builds' runs are bimodal
    (a slowdown makes the pooled runs of two unimodal builds look like two
    modes, not each build's) and each build agrees with that split
    (:func:`_modes_disagree`): a slowdown of both modes by one factor then
    stays in the centred log-ratios (a pair within one mode is unchanged; a
    pair across the modes loses the modes' distance, not the slowdown). A
    slowdown about the modes' distance would instead put the cut between the
    builds, each centred on its own runs, and subtract the slowdown out; and
    a candidate landing in the slow mode more often would be hidden by the
    centring: both are compared as they are. The level of the centred test
    is measured, not exact: ``benchmarks/calibrate.py --only-modes``.
    """
    mc = cfg['modes']
    if not mc['enabled']:
        return None, None
    kw = {'min_d': float(mc['min_d']), 'min_share': float(mc['min_share'])}
    per = {side: stats.two_modes(vals, **kw) for side, vals in (('base', lb), ('cand', lc))}
    out: dict[str, Any] = {side: (t.as_dict() if t else None) for side, t in per.items()}
    out['bimodal'] = [side for side, t in per.items() if t and t.bimodal]
    out['same_mode_pairs'] = None
    out['centred'] = False
    if not out['bimodal']:
        out['note'] = 'one mode' if all(per.values()) else 'too few runs to check for two modes'
        return out, None
    which = ' and '.join({'base': 'baseline', 'cand': 'candidate'}[s] for s in out['bimodal'])
    if len(out['bimodal']) < 2:
        out['note'] = (f'the {which} runs fall in two modes, the other build\'s do not: '
                       f'pairs compared as they are')
        return out, None
    out.update(_pooled_split(lb, lc, kw['min_share']))
    cut, low, high = out['cut'], out['low_centre'], out['high_centre']
    slow, fast = out['share_shift']['slow'], out['share_shift']['fast']
    apart = f'x{math.exp(high - low):.2f} apart'
    why = _modes_disagree({'baseline': (lb, per['base']), 'candidate': (lc, per['cand'])},
                          cut, low, high, mc) if mc['each_build'] else None
    if why is None and mc['each_build'] and out['share_shift']['p'] <= mc['share_level']:
        why = (f'the candidate\'s runs land in the slow mode more often ({slow} pairs with '
               f'the baseline\'s run fast and the candidate\'s slow, {fast} the other way; '
               f'sign test p={out["share_shift"]["p"]:.2g} <= {mc["share_level"]}): the '
               f'shift of the modes\' shares counts')
    if why is not None:
        out['note'] = f'both builds\' runs fall in two modes ({apart}), but {why}: pairs ' \
                      f'compared as they are'
        return out, None
    centre = lambda x: x - (high if x > cut else low)  # noqa: E731
    out['centred'] = True
    out['note'] = (f'both builds\' runs fall in two modes ({apart}): each run measured from '
                   f'its mode\'s centre; {out["same_mode_pairs"]} of {len(lb)} pairs had both '
                   f'runs in one mode')
    return out, [centre(c) - centre(b) for b, c in zip(lb, lc)]


def _pooled_split(lb: Sequence[float], lc: Sequence[float], min_share: float
                  ) -> dict[str, Any]:
    """The modes of both builds' runs: the cut, each mode's centre (median), the
    pairs within one mode and the pairs across them each way (with the sign test)."""
    both = list(lb) + list(lc)
    cut = stats.two_modes(both, min_d=0.0, min_share=min_share).cut
    slow = sum(b > cut >= c for b, c in zip(lb, lc))     # baseline fast, candidate slow
    fast = sum(c > cut >= b for b, c in zip(lb, lc))
    return {'cut': cut, 'low_centre': stats.median([x for x in both if x <= cut]),
            'high_centre': stats.median([x for x in both if x > cut]),
            'same_mode_pairs': len(lb) - slow - fast,
            'share_shift': {'slow': slow, 'fast': fast,
                            'p': stats.sign_test_p(slow, slow + fast)}}


def _modes_disagree(builds: Mapping[str, tuple[Sequence[float], stats.TwoModes]],
                    cut: float, low: float, high: float, mc: Mapping[str, Any]) -> str | None:
    """Why a build's own two modes are not those of both builds' runs (None: they
    are): its own split puts a run on the other side of the pooled cut (the cut
    falls between the builds: a shift about the modes' distance), or one of its
    mode centres lies more than ``centre_tolerance`` of the modes' distance from
    the pooled one."""
    tol = float(mc['centre_tolerance']) * (high - low)
    for name, (vals, own) in builds.items():
        moved = sum((x > cut) != (x > own.cut) for x in vals)
        if moved:
            return (f'the {name}\'s own split puts {moved} of its {len(vals)} runs in the '
                    f'other mode than the split of both builds\' runs does (a shift between '
                    f'the builds about the modes\' distance)')
        for mode, centre, runs in (('low', low, [x for x in vals if x <= cut]),
                                   ('high', high, [x for x in vals if x > cut])):
            off = stats.median(runs) - centre
            if abs(off) > tol:
                return (f'the {name}\'s {mode} mode lies x{math.exp(off):.3f} from that of '
                        f'both builds\' runs, beyond {mc["centre_tolerance"]} of the modes\' '
                        f'distance')
    return None
