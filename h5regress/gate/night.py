"""The night around the verdicts: envelopes, canaries, change points, history."""

from __future__ import annotations

import datetime
import fnmatch
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from h5regress import creep, stats
from h5regress import history as hist_mod
from h5regress import refs as refs_mod
from h5regress.cmdline import EXIT_CODES
from h5regress.gate.records import rule_matches
from h5regress.gate.comparing import _fmt_ratio
from h5regress.gate.verdicts import NO_SLOWDOWN_SEEN


# ------------------------------------------------------------------ annotate
def annotate(result: dict[str, Any], cfg: Mapping[str, Any], history: hist_mod.History,
             references: refs_mod.References | None) -> None:
    """The night around the verdicts: reference envelopes, HDF5/MPI-IO, the fio
    ceiling, degraded canaries, change points, false alarms; the overall verdict."""
    metrics = result['metrics']
    if references is not None:
        for m in metrics:
            m['envelope'] = _envelope(m, references)
    result['canary'] = _canary_ratios(metrics, cfg)
    result['ceiling'] = _ceiling(metrics, cfg)
    result['degraded'] = _degraded(metrics, history, cfg)
    result['change_points'] = _change_points(metrics, history, cfg, result)
    result['false_alarms'] = false_alarm_rates(history, metrics)
    gated = [m for m in metrics if m['role'] == 'gated']
    result['not_flushed'] = [m['label'] for m in gated if m['flushed'] is False]
    conflicts = [m for m in gated if m['verdict'] == 'ERROR']
    if conflicts:
        overall = 'ERROR'
        result['error'] = '; '.join(f'{m["label"]}: {m["reason"]}' for m in conflicts)
    elif any(d['degraded'] for d in result['degraded']):
        overall = 'DEGRADED'
    elif not gated and (result.get('contention') or {}).get('pairs_excluded'):
        # every pair of the night ran on a contended machine: more pairs may decide
        overall = 'INCONCLUSIVE'
        result['note'] = (f'every pair was excluded as contended '
                          f'({result["contention"]["pairs_excluded"]}): nothing left to gate')
    elif not gated:
        overall = 'ERROR'
        result['error'] = ('nothing to gate: no records of a gated metric for builds '
                           f'{result["baseline"]!r}/{result["candidate"]!r}')
    elif any(m['verdict'] == 'FAIL' for m in gated):
        overall = 'FAIL'
    elif any(m['verdict'] not in ('PASS', NO_SLOWDOWN_SEEN) for m in gated):
        overall = 'INCONCLUSIVE'
    elif any(m['verdict'] == NO_SLOWDOWN_SEEN for m in gated):
        overall = NO_SLOWDOWN_SEEN
    else:
        overall = 'PASS'
    result['overall'] = overall
    result['exit_code'] = EXIT_CODES[overall]


def _envelope(m: Mapping[str, Any], references: refs_mod.References) -> dict[str, Any] | None:
    """The candidate's median against the metric's reference envelope, if it has one."""
    if m['cand_median'] is None:
        return None
    ref = references.lookup(m['test_class'], m['perf_var'], m['system'], m['params'])
    if ref is None:
        return None
    low, high = refs_mod.bounds(ref)
    v = m['cand_median']
    status = 'inside' if low <= v <= high else ('below' if v < low else 'above')
    worse = (status == 'below') == bool(m['higher_is_better']) and status != 'inside'
    return {'ref': ref[0], 'low': low, 'high': high, 'status': status, 'worse': worse}


def _signature(rec_like: Mapping[str, Any], ignore: Sequence[str]) -> str:
    params = {k: v for k, v in (rec_like.get('params') or {}).items()
              if not any(fnmatch.fnmatchcase(str(k).lower(), p.lower()) for p in ignore)}
    return json.dumps([rec_like['tool'], rec_like['operation'], rec_like['metric'],
                       rec_like.get('system') or '', params], sort_keys=True, default=str)


def _canary_ratios(metrics: list[dict], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """HDF5 / MPI-IO ratio per gated metric that has an MPI-IO twin."""
    ignore = cfg['canary_ignore_params']
    twins = {_signature(m, ignore): m for m in metrics if m['role'] == 'canary'}
    floor = math.log(1.0 - cfg['hdf5_overhead'])
    out = []
    for m in metrics:
        if m['role'] != 'gated':
            continue
        c = twins.get(_signature(m, ignore))
        if c is None:
            continue
        sign = 1.0 if m['higher_is_better'] else -1.0
        ref = [sign * math.log(v) for v in c['base'] + c['cand']]
        row = {'metric': m['label'], 'key': m['key'], 'canary': c['label'],
               'canary_key': c['key'], 'operation': m['operation']}
        for side in ('cand', 'base'):
            vals = [sign * math.log(v) for v in m[side]]
            comp = stats.rank_sum(ref, vals) if vals and ref else None
            if comp is None:
                row[side] = None
                continue
            row[side] = {'ratio': _fmt_ratio(comp.ratio), 'lo': _fmt_ratio(comp.ratio_lo),
                         'hi': _fmt_ratio(comp.ratio_hi)}
        cr = row['cand']
        row['verdict'] = ('WARN' if cr and math.log(cr['ratio']) < floor else 'OK') if cr else None
        if row['verdict'] == 'WARN':
            row['reason'] = (f'HDF5 reaches {cr["ratio"]:.0%} of MPI-IO, below the expected '
                             f'{1 - cfg["hdf5_overhead"]:.0%}: worth a look')
        out.append(row)
    return out


def _ceiling(metrics: list[dict], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """HDF5 (candidate median) as a fraction of the fio ceiling of its system and operation."""
    rule = cfg['ceiling']
    best: dict[tuple, tuple[float, str]] = {}
    for m in metrics:
        if m['median_all'] and rule_matches(rule, m['tool'], m['operation'], m['metric'],
                                            m['params']):
            k = (m['system'], m['operation'])
            if k not in best or m['median_all'] > best[k][0]:
                best[k] = (m['median_all'], m['label'])
    out = []
    for m in metrics:
        if m['role'] != 'gated' or not m['cand_median'] or m['unit'] != 'MiB/s':
            continue
        ceil = best.get((m['system'], m['operation']))
        if ceil:
            out.append({'metric': m['label'], 'key': m['key'], 'fio': ceil[1],
                        'fio_value': ceil[0], 'hdf5_value': m['cand_median'],
                        'fraction': m['cand_median'] / ceil[0]})
    return out


def _degraded(metrics: list[dict], history: hist_mod.History,
              cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    dc = cfg['degraded']
    bad = {n['index'] for n in history.nights if n.get('degraded')}
    out = []
    for m in metrics:
        if m['role'] != 'canary' or not m['median_all']:
            continue
        past = [x['median_all'] for x in history.series.get(m['key'], [])
                if x['night_index'] not in bad and x.get('median_all')]
        past = past[-dc['window']:]
        row = {'canary': m['label'], 'key': m['key'], 'tonight': m['median_all'],
               'nights': len(past), 'degraded': False}
        if len(past) < dc['min_nights']:
            row['note'] = f'{len(past)} night(s) of history, need {dc["min_nights"]}'
            out.append(row)
            continue
        logs = [math.log(v) for v in past]
        center = stats.median(logs)
        sigma = max(stats.mad_sigma(logs), 0.01)
        x = math.log(m['median_all'])
        if not m['higher_is_better']:
            x, center = -x, -center
        z = (x - center) / sigma
        drop = 1.0 - math.exp(x - center)
        row.update({'history_median': math.exp(center if m['higher_is_better'] else -center),
                    'z': z, 'drop': drop})
        row['degraded'] = z < -dc['z'] and drop > dc['drop']
        out.append(row)
    return out


def _change_points(metrics: list[dict], history: hist_mod.History, cfg: Mapping[str, Any],
                   result: Mapping[str, Any]) -> list[dict[str, Any]]:
    cc = cfg['change_points']
    min_shift = cc['min_shift'] if cc['min_shift'] is not None else -math.log(1 - cfg['margin'])
    nights = history.nights
    bad = {n['index'] for n in nights if n.get('degraded')}
    out = []
    for m in metrics:
        if m['role'] != 'gated':
            continue
        # the nights' paired ratios, not the candidate's medians: on a shared machine a
        # build's median moved 31-38 % between two nights 18 minutes apart while the
        # ratio moved 1-4 % (benchmarks/creep.py's --sd note), so the medians bury a
        # creep of the candidate under the platform's moves, which the pairs cancel
        rows = [x for x in history.series.get(m['key'], []) if x['night_index'] not in bad]
        pts = [(x['night_index'], x['ratio']) for x in rows if x.get('ratio')]
        names = [nights[i]['night'] for i, _ in pts]
        commits = [nights[i].get('candidate_commit') for i, _ in pts]
        # a night's ratio is of the values (candidate/baseline): a time's goes up when slower
        sign = 1.0 if m['higher_is_better'] else -1.0
        series = [sign * math.log(r) for _, r in pts]
        if m['ratio']:
            series.append(sign * math.log(m['ratio']))
            names.append(result['night'])
            commits.append(result['candidate_commit'])
        if len(series) < 2 * cc['min_side']:
            continue
        try:
            cps = creep.change_points(series, cc['window'], cc['alpha'], min_shift)
        except creep.CreepUnavailable as err:
            print(f'h5regress gate: no change points of the history: {err}', file=sys.stderr)
            return out
        for cp in cps:
            if cp.index < max(cc['min_side'], len(series) - cc['lookback']) \
                    or len(series) - cp.index < cc['min_side']:
                continue
            out.append({'metric': m['label'], 'key': m['key'],
                        'from_night': names[cp.index - 1], 'to_night': names[cp.index],
                        'from_commit': commits[cp.index - 1], 'to_commit': commits[cp.index],
                        'ratio': math.exp(cp.shift), 'p': cp.p,
                        'direction': 'better' if cp.shift > 0 else 'worse'})
    return out


def false_alarm_rates(history: hist_mod.History, tonight: Sequence[Mapping[str, Any]] = ()
                      ) -> dict[str, Any]:
    """FAIL rate on judged metrics whose true ratio is 1, per metric and per night."""
    per_metric: dict[str, list[int]] = {}
    labels: dict[str, str] = {}
    nights: list[bool] = []

    def tally(rows: Iterable[Mapping[str, Any]]) -> None:
        any_known, any_fa = False, False
        for x in rows:
            tr = x.get('true_ratio')
            if x.get('role') not in ('gated', 'canary', 'control') or tr is None \
                    or abs(tr - 1.0) > 1e-9 or x.get('verdict') is None:
                continue
            any_known = True
            fa = x.get('verdict') == 'FAIL'
            any_fa |= fa
            c = per_metric.setdefault(x['key'], [0, 0])
            c[0] += 1
            c[1] += fa
            if x['key'] not in labels:
                labels[x['key']] = x.get('label') or history.meta(x['key']).get('label') \
                    or x['key']
        if any_known:
            nights.append(any_fa)

    by_night: dict[int, list] = {}
    for rows in history.series.values():
        for x in rows:
            by_night.setdefault(x['night_index'], []).append(x)
    for i in sorted(by_night):
        tally(by_night[i])
    tally(tonight)
    rows = [{'key': k, 'label': labels[k], 'nights': n, 'false_alarms': f,
             'rate': f / n} for k, (n, f) in per_metric.items()]
    rows.sort(key=lambda r: (-r['rate'], r['label']))
    return {'per_metric': rows,
            'per_night': {'nights': len(nights), 'with_false_alarm': sum(nights),
                          'rate': (sum(nights) / len(nights)) if nights else None}}


# ------------------------------------------------------------------ history
def history_lines(result: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and metric lines of the history file for this night."""
    header = {k: result.get(k) for k in ('night', 'timestamp', 'baseline', 'candidate',
                                         'baseline_commit', 'candidate_commit', 'overall',
                                         'a_a', 'injected_slowdown')}
    header['timestamp'] = header['timestamp'] or datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds')
    header['degraded'] = result['overall'] == 'DEGRADED'
    header['counts'] = result['counts']
    keep = ('key', 'label', 'tool', 'operation', 'metric', 'unit', 'higher_is_better', 'test',
            'test_class', 'perf_var', 'system', 'params', 'role', 'n_pairs', 'base', 'cand',
            'base_median', 'cand_median', 'median_all', 'ratio', 'ratio_lo', 'ratio_hi',
            'q', 'verdict', 'true_ratio', 'lr_n', 'lr_var')
    lines = [{k: m.get(k) for k in keep} for m in result['metrics']]
    return header, lines
