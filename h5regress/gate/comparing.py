"""The comparison of each metric's builds: samples, variance, test."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import durability, stats
from h5regress import history as hist_mod
from h5regress import refs as refs_mod
from h5regress.gate.records import _Group, _label, role_of
from h5regress.gate.modes import _modes, two_mode_comparison


# ------------------------------------------------------------------ compare
@dataclasses.dataclass
class MetricComparison:
    """One metric of the night: the comparison of its builds (None without samples
    of both) and its row of the result (JSON: description, role, samples, ratios,
    then verdict)."""
    comp: stats.Comparison | None
    row: dict[str, Any]

    @property
    def role(self) -> str:
        return self.row['role']


def compare(groups: Mapping[tuple, _Group], cfg: Mapping[str, Any],
            history: hist_mod.History, aa: bool) -> list[MetricComparison]:
    """Candidate against baseline, per metric (pooled variance from history when it
    may, scaled for the night when tonight's metrics are noisier than their
    histories: :func:`night_pools`)."""
    hv = cfg['history_variance']
    roles = {key: role_of(cfg, g.rec.tool, g.rec.operation, g.rec.metric, g.rec.params)
             for key, g in groups.items()}
    pools = [(pair_log_ratios(g), pooled_from_history(history, hist_mod.metric_key(*key), hv)
              if roles[key] != 'reported' else None) for key, g in groups.items()]
    scaled, night = night_pools(pools, hv)
    out = []
    for (key, g), pooled in zip(groups.items(), scaled):
        r, role = g.rec, roles[key]
        comp, info = _compare_samples(g, cfg, pooled)
        row = _describe(key, g, role, _known_ratio(g, role, aa))
        row['no_candidate'] = _no_candidate_samples(g) if role == 'gated' else None
        if pooled is not None and isinstance(info.get('variance'), dict):
            info['variance']['night_noise'] = night.as_dict() if night else None
        row.update(info)
        row['base_median'] = stats.median(info['base']) if info['base'] else None
        row['cand_median'] = stats.median(info['cand']) if info['cand'] else None
        both = info['base'] + info['cand']
        row['median_all'] = stats.median(both) if both else None
        row.update(_comparison_fields(comp, r.higher_is_better))
        out.append(MetricComparison(comp, row))
    return out


def night_pools(metrics: Sequence[tuple[Sequence[float], stats.PooledVariance | None]],
                hv: Mapping[str, Any]
                ) -> tuple[list[stats.PooledVariance | None], stats.NightNoise | None]:
    """Each metric's pooled variance for tonight from ``(pair log-ratios, pooled
    variance or None)`` of the night's metrics: scaled by the night's variance
    ratio when the night as a whole is noisier than its histories
    (:func:`h5regress.stats.night_noise`); and that ratio (None: too few metrics
    with history). The gate and ``benchmarks/calibrate.py`` both call this."""
    night = stats.night_noise([(len(d), stats.variance(d), pv) for d, pv in metrics
                               if pv is not None and len(d) >= 3],
                              float(hv['consistency_level']), float(hv['screen_level']),
                              int(hv['night_min_metrics']))
    return [stats.scaled_pool(pv, night) if pv is not None else None
            for _, pv in metrics], night


def _pairs(g: _Group) -> tuple[list[float], list[float]]:
    """The aligned pairs of one metric: per pair id in both builds, each build's
    geometric mean of its values (a run may give several)."""
    pair_ids = sorted(set(g.base) & set(g.cand))
    gmean = lambda vs: math.exp(math.fsum(math.log(v) for v in vs) / len(vs))  # noqa: E731
    return [gmean(g.base[p]) for p in pair_ids], [gmean(g.cand[p]) for p in pair_ids]


def pair_log_ratios(g: _Group) -> list[float]:
    """Log performance ratios of one metric's aligned pairs (> 0: candidate better)."""
    sign = 1.0 if g.rec.higher_is_better else -1.0
    return [sign * (math.log(c) - math.log(b)) for b, c in zip(*_pairs(g))]


def _no_candidate_samples(g: _Group) -> str | None:
    """Why a metric whose baseline has samples and whose candidate has none cannot be
    judged however many pairs come (None: the candidate has samples, or neither has).

    The candidate's runs of the night are those of the pairs whose baseline run has a
    sample, and those whose record measured <= 0: each of them failed -- it left no
    record (its sanity failed, or it did not run) or a value <= 0."""
    n_base = sum(map(len, g.base.values())) + len(g.base_free)
    if g.cand or g.cand_free or not n_base:
        return None
    measured = g.non_positive['cand']
    runs = (f'{len(set(g.base) | measured)} candidate run(s) failed ({len(measured)} '
            f'measured <= 0, {len(set(g.base) - measured)} left no record: failed sanity '
            f'or did not run)' if g.base else
            f'{len(measured)} candidate record(s) measured <= 0 (runs without pair ids: '
            f'those that left no record are not counted)')
    return (f'no candidate samples: {runs}, against {n_base} baseline run(s) with samples'
            + (f' ({len(g.non_positive["base"])} more measured <= 0)'
               if g.non_positive['base'] else '')
            + ': the candidate breaks this benchmark; more pairs will not decide it')


def _known_ratio(g: _Group, role: str, aa: bool) -> float | None:
    """The true candidate/baseline ratio when it is known, else None."""
    if role in ('canary', 'control') or aa:
        return 1.0
    if len(g.tr_cand) == 1 and None not in g.tr_cand:
        tb = next(iter(g.tr_base)) if len(g.tr_base) == 1 else None
        return next(iter(g.tr_cand)) / (tb or 1.0)
    return None


def _describe(key: tuple, g: _Group, role: str, true_ratio: float | None) -> dict[str, Any]:
    r = g.rec
    return {
        'key': hist_mod.metric_key(*key),
        'label': _label(r.test, r.tool, r.operation, r.metric, r.config_hash, r.params),
        'tool': r.tool, 'operation': r.operation, 'metric': r.metric, 'unit': r.unit,
        'higher_is_better': r.higher_is_better, 'test': r.test,
        'test_class': refs_mod.test_class(r.test, r.provenance, r.params),
        'perf_var': refs_mod.perf_var(r.operation, r.metric, r.provenance),
        'system': r.system, 'params': r.params, 'config_hash': r.config_hash,
        'role': role, 'n_base': sum(map(len, g.base.values())) + len(g.base_free),
        'n_cand': sum(map(len, g.cand.values())) + len(g.cand_free),
        'perf_fail': g.perf_fail, 'true_ratio': true_ratio,
        **_flush_fields(g),
    }


#: how a figure that ends in the page cache is flagged (``write_flush: none``)
NOT_FLUSHED = 'not flushed to storage'


def _flush_fields(g: _Group) -> dict[str, Any]:
    """``write_flush`` of a metric (:mod:`h5regress.durability`): its one value, or,
    when its records disagree, ``{baseline: [...], candidate: [...]}`` and
    ``flush_conflict``, the reason the metric cannot be judged; ``flushed``: False
    when the figure ends in the page cache (``none``), None when unknown."""
    values = g.flush_base | g.flush_cand
    if values == {None}:                # no write figure, or records without the key
        return {'write_flush': None, 'flushed': None, 'flush_conflict': None}
    if len(values) == 1:
        value = next(iter(values))
        return {'write_flush': value, 'flushed': value != durability.NONE,
                'flush_conflict': None}
    name = lambda vs: '/'.join(sorted('unrecorded' if v is None else v for v in vs))  # noqa: E731
    return {'write_flush': {'baseline': sorted(map(str, g.flush_base)),
                            'candidate': sorted(map(str, g.flush_cand))},
            'flushed': None,
            'flush_conflict': (f'write_flush differs: baseline {name(g.flush_base)}, '
                               f'candidate {name(g.flush_cand)}: the runs do not end at the '
                               f'same point (to storage or to the page cache), so their '
                               f'ratio is no HDF5 change')}


def _comparison_fields(comp: stats.Comparison | None, higher_is_better: bool
                       ) -> dict[str, Any]:
    """Ratios of the values (candidate/baseline) and of the performance, p-values."""
    if comp is None:
        return {'method': None, 'n': 0, 'ratio': None, 'ratio_lo': None, 'ratio_hi': None,
                'perf_ratio': None, 'perf_lo': None, 'perf_hi': None, 'p_worse': None,
                'p_two_sided': None}
    sign = 1.0 if higher_is_better else -1.0
    return {
        'method': comp.method, 'n': comp.n,
        'perf_ratio': _fmt_ratio(comp.ratio), 'perf_lo': _fmt_ratio(comp.ratio_lo),
        'perf_hi': _fmt_ratio(comp.ratio_hi),
        'ratio': _fmt_ratio(math.exp(sign * comp.estimate)),
        'ratio_lo': _fmt_ratio(math.exp(sign * (comp.lo if sign > 0 else comp.hi))),
        'ratio_hi': _fmt_ratio(math.exp(sign * (comp.hi if sign > 0 else comp.lo))),
        'p_worse': comp.p_worse, 'p_two_sided': comp.p_two_sided,
    }


def _compare_samples(g: _Group, cfg: Mapping[str, Any], pooled: stats.PooledVariance | None
                     ) -> tuple[stats.Comparison | None, dict[str, Any]]:
    """The comparison of one metric's builds, and its samples and variance choice."""
    sign = 1.0 if g.rec.higher_is_better else -1.0
    pair_ids = sorted(set(g.base) & set(g.cand))
    base_p, cand_p = _pairs(g)
    base_rest = g.base_free + [v for p, vs in g.base.items() if p not in g.cand for v in vs]
    cand_rest = g.cand_free + [v for p, vs in g.cand.items() if p not in g.base for v in vs]
    info = {
        'n_pairs': len(pair_ids),
        'incomplete_pairs': len(set(g.base) ^ set(g.cand)),
        'base': base_p + base_rest,
        'cand': cand_p + cand_rest,
        'lr_n': None, 'lr_var': None, 'variance': None, 'modes': None,
    }
    if pair_ids:
        comp, pinfo = compare_pairs(base_p, cand_p, g.rec.higher_is_better, cfg, pooled)
        info.update(pinfo)
        return comp, info
    if base_rest and cand_rest:
        return stats.rank_sum([sign * math.log(v) for v in base_rest],
                              [sign * math.log(v) for v in cand_rest], cfg['confidence']), info
    return None, info


def compare_pairs(base: Sequence[float], cand: Sequence[float], higher_is_better: bool,
                  cfg: Mapping[str, Any], pooled: stats.PooledVariance | None
                  ) -> tuple[stats.Comparison, dict[str, Any]]:
    """Candidate against baseline from aligned pairs ``(base[i], cand[i])`` (values,
    > 0): the comparison :func:`decide` judges, and what was done (``lr_n``,
    ``lr_var`` of the pair log-ratios, ``variance``: history or tonight and why,
    ``modes``: the bimodality check). The gate and ``benchmarks/calibrate.py``
    both call this function.

    Two modes (:func:`_modes`): when the night's runs fall in two modes that both
    builds share, the modes' gap is taken out of each high-mode run (each build's
    level kept) and the test of tonight's pairs (:func:`_tonight_test`) judges
    those, beside the sign test of the modes' shares
    (:func:`two_mode_comparison`). Otherwise the pooled-t test with the
    history's variance when tonight's spread agrees with it
    (:func:`_variance_choice`), else, on tonight's pairs alone, Student's t test
    in the range of pairs of ``tonight_t_test`` (:func:`h5regress.stats.student_t`)
    and the signed-rank test outside it.
    """
    sign = 1.0 if higher_is_better else -1.0
    lb = [sign * math.log(v) for v in base]
    lc = [sign * math.log(v) for v in cand]
    d = [c - b for b, c in zip(lb, lc)]
    lr_var = stats.variance(d) if len(d) >= 2 else None
    info: dict[str, Any] = {'lr_n': len(d), 'lr_var': lr_var, 'variance': None, 'modes': None}
    confidence = cfg['confidence']
    modes, gap_free = _modes(lb, lc, cfg)
    info['modes'] = modes
    if gap_free is not None:
        var_m = stats.variance(gap_free) if len(gap_free) >= 2 else None
        comp, test, pairs = _tonight_test(gap_free, cfg)
        info['variance'] = {'source': 'tonight', 'tonight_sigma':
                            math.sqrt(var_m) if var_m is not None else None,
                            'note': f'two modes: {test} on the pairs with the modes\' gap '
                                    f'taken out of each high-mode run{pairs}, and the sign '
                                    f'test of the modes\' shares'}
        if not cfg['modes']['each_build']:      # the rule before issue 25, to measure it
            return dataclasses.replace(comp, method=comp.method + ', mode-centred'), info
        return two_mode_comparison(comp, _tonight_test(d, cfg)[0], modes,
                                   float(cfg['modes']['share_level'])), info
    var = _variance_choice(d, lr_var, pooled,
                           float(cfg['history_variance']['consistency_level']))
    info['variance'] = var
    if var['source'] == 'history':
        return stats.pooled_t(d, pooled, confidence), info
    comp, test, pairs = _tonight_test(d, cfg)
    var['note'] = var['note'].replace('signed-rank test', test) + pairs
    return comp, info


def _tonight_test(d: Sequence[float], cfg: Mapping[str, Any]
                  ) -> tuple[stats.Comparison, str, str]:
    """The test of pair log-ratios judged on tonight's pairs alone (no usable
    history, or two modes), and its name for the note: Student's t in the range
    of pairs of ``tonight_t_test``, the signed-rank test outside it; and the range. An exact test
    of signs cannot FAIL a night of several metrics at a first look (its p >=
    2^-n; see :func:`h5regress.stats.student_t`); the gap-free pairs of two modes need
    the same (issue 25)."""
    tt = cfg['tonight_t_test']
    if int(tt['min_pairs']) <= len(d) < int(tt['below_pairs']):
        return (stats.student_t(d, cfg['confidence']), 'Student t test',
                f' ({tt["min_pairs"]} to {int(tt["below_pairs"]) - 1} pairs)')
    return stats.signed_rank(d, cfg['confidence']), 'signed-rank test', ''


def pooled_from_history(history: hist_mod.History, key: str,
                        hv: Mapping[str, Any]) -> stats.PooledVariance | None:
    """Variance of pair log-ratios of ``key`` pooled from its past nights.

    Per night it takes ``lr_n``/``lr_var`` from the summary line; nights
    written before those fields existed get them from their samples file (the
    first ``n_pairs`` values of both sides are the aligned pairs), read only
    for the newest ``window`` nights. Degraded nights are left out.
    """
    if not hv.get('enabled', True):
        return None
    rows = history.series.get(key)
    if not rows:
        return None
    bad_nights = {n['index'] for n in history.nights if n.get('degraded')}
    window, min_pairs = int(hv['window']), int(hv['min_pairs'])
    picked: list[tuple[int, float]] = []
    for x in reversed(rows):
        if len(picked) >= window:
            break
        if x['night_index'] in bad_nights:
            continue
        n, var = x.get('lr_n'), x.get('lr_var')
        if n is None and (x.get('n_pairs') or 0) >= min_pairs:   # an older night
            n, var = _lr_var_from_samples(history, key, x)
        if isinstance(n, int) and n >= min_pairs and isinstance(var, (int, float)):
            picked.append((n, float(var)))
    picked.reverse()
    return stats.pool_variance(picked, int(hv['min_nights']), min_pairs, window,
                               float(hv['screen_level']))


def _lr_var_from_samples(history: hist_mod.History, key: str, row: Mapping[str, Any]
                         ) -> tuple[int | None, float | None]:
    n = int(row.get('n_pairs') or 0)
    base, cand = history.samples(key, row['night_index'])
    if n < 2 or len(base) < n or len(cand) < n:
        return None, None
    try:
        d = [math.log(c) - math.log(b) for b, c in zip(base[:n], cand[:n])]
    except (ValueError, TypeError):
        return None, None
    return n, stats.variance(d)


def _variance_choice(d: Sequence[float], var_t: float | None,
                     pooled: stats.PooledVariance | None, level: float) -> dict[str, Any]:
    """Whether tonight borrows the history's variance, and why (recorded per metric)."""
    out: dict[str, Any] = {'source': 'tonight', 'tonight_sigma':
                           math.sqrt(var_t) if var_t is not None else None}
    if pooled is None:
        out['note'] = 'no history of this metric: signed-rank test'
        return out
    out.update({'pooled_sigma': pooled.sigma if pooled.usable else None,
                'pooled_df': pooled.df if pooled.usable else None,
                'pooled_nights': pooled.nights, 'outlier_nights': pooled.outliers})
    if not pooled.usable:
        out['note'] = f'history too short ({pooled.reason}): signed-rank test'
        return out
    if len(d) < 3 or var_t is None:
        out['note'] = f'{len(d)} pair(s): too few to check against history; signed-rank test'
        return out
    ok, f, p = stats.variance_consistent(var_t, len(d), pooled, level)
    out.update({'F': f, 'p_F': p})
    if not ok:
        out['note'] = (f"tonight's spread {math.sqrt(var_t):.3g} is {math.sqrt(f):.2f}x the "
                       f"history's {pooled.sigma:.3g} (F={f:.2f}, p={p:.2g} <= {level}): "
                       f'noisier than its history, signed-rank test on its own pairs')
        return out
    out['source'] = 'history'
    out['note'] = (f'pooled-t: sigma {pooled.sigma:.3g} from {pooled.nights} past night(s) '
                   f'({pooled.df} df); tonight {math.sqrt(var_t):.3g} consistent '
                   f'(F={f:.2f}, p={p:.2g})')
    return out


def _value_ratio(log_perf: float, higher_is_better: bool) -> float:
    """A log performance ratio as the ratio of the values (candidate/baseline)."""
    return math.exp(log_perf if higher_is_better else -log_perf)


def _fmt_ratio(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 6)
