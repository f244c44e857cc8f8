"""The night in words: verdict sentences, the tables and the rule, shared by every format."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import followup
from h5regress.gate.verdicts import is_speed, is_suspected


#: (title, header, rows, note) of one table
Table = tuple[str, Sequence[str], list[list[str]], str]

#: the gate's verdict without a slowdown shown, told apart from "possible slowdown"
NO_SLOWDOWN_SEEN = 'NO-SLOWDOWN-SEEN'

_COLORS = {'PASS': '#1a7f37', 'FAIL': '#cf222e', 'INCONCLUSIVE': '#9a6700',
           NO_SLOWDOWN_SEEN: '#0969da',
           'DEGRADED': '#8250df', 'ERROR': '#cf222e', 'WARN': '#bc4c00', 'OK': '#1a7f37',
           None: '#57606a'}


# ------------------------------------------------------------------ formatting
def _num(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return '–'
    if isinstance(x, (int, float)):
        return f'{x:.{digits}g}'
    return str(x)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _ratio(x: Any) -> str:
    return '–' if x is None else f'{x:.3f}'


def _interval(lo: Any, hi: Any) -> str:
    if lo is None and hi is None:
        return '–'
    return f'[{_ratio(lo) if lo else "0"}, {_ratio(hi) if hi is not None else "∞"}]'


def _pct(x: Any) -> str:
    return '–' if x is None else f'{x:.0%}'.replace('-0%', '0%')


def _envelope(m: Mapping[str, Any]) -> str:
    e = m.get('envelope')
    if not e:
        return '–'
    return e['status'] + (' (worse)' if e.get('worse') else '')


def _rows(result: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    order = {'FAIL': 0, 'INCONCLUSIVE': 1, NO_SLOWDOWN_SEEN: 2, 'PASS': 3, None: 4}
    rows = [m for m in result['metrics'] if m['role'] == role]
    return sorted(rows, key=lambda m: (order.get(m['verdict'], 4), m['label']))


#: what a reader sees for a verdict code (the code itself for the others)
VERDICT_WORDS = {'INCONCLUSIVE': 'possible slowdown', NO_SLOWDOWN_SEEN: 'no slowdown seen'}

WORD_VERDICTS = {w: v for v, w in VERDICT_WORDS.items()}


def verdict_word(verdict: Any) -> str:
    """A verdict as the report shows it: the two undecided verdicts in words."""
    return VERDICT_WORDS.get(verdict, str(verdict) if verdict else '–')


def sensitivity_pct(m: Mapping[str, Any]) -> str:
    """The smallest slowdown the night could have seen in a metric, as '12 %'."""
    s = m.get('sensitivity')
    return f'{s * 100:.0f} %' if _finite(s) and s > 0 else '–'


def no_slowdown_text(gated: Sequence[Mapping[str, Any]]) -> str:
    """NO-SLOWDOWN-SEEN in words, with the least sensitive metric's smallest visible slowdown."""
    seen = [m for m in gated if _finite(m.get('sensitivity'))]
    text = "no slowdown detected at tonight's sensitivity"
    if not seen:
        return text
    worst = max(seen, key=lambda m: m['sensitivity'])
    text += f': a slowdown of {sensitivity_pct(worst)} or more would have been seen'
    if len(seen) > _LISTED:
        # a real night gates 20 or more: each one's stands in the verdicts' table
        text += (f' in every gated metric ({short_label(worst)} the least sensitive; each '
                 f"metric's in the verdicts' table)")
    elif len(seen) > 1:
        text += (f' in every gated metric ({short_label(worst)} the least sensitive; '
                 + ', '.join(f'{short_label(m)} {sensitivity_pct(m)}' for m in seen) + ')')
    return text


#: at most this many metrics' sensitivities are listed in the verdict's sentence
_LISTED = 3


VERDICT_COLUMNS = ('metric', 'system', 'baseline', 'candidate', 'unit', 'ratio',
                   '95% interval', 'pairs', 'q (BH)', 'envelope', 'smallest slowdown seen',
                   'verdict')


def _verdict_cells(m: Mapping[str, Any], degraded: bool) -> list[str]:
    verdict = verdict_word(m['verdict'])
    if degraded and m['verdict']:
        verdict = f'({verdict}, not judged: degraded night)'
    arrow = '↑' if m['higher_is_better'] else '↓'
    return [m['label'], m.get('system') or '–', _num(m['base_median']), _num(m['cand_median']),
            f'{m["unit"]} {arrow}', _ratio(m['ratio']), _interval(*drawn_interval(m)),
            str(m['n_pairs']), _num(m['q'], 2), _envelope(m), sensitivity_pct(m), verdict]


def _tables(result: Mapping[str, Any]) -> list[Table]:
    """(title, header, rows, note) of every table, shared by Markdown and HTML."""
    degraded = result['overall'] == 'DEGRADED'
    out = []
    gated = [_verdict_cells(m, degraded) for m in _rows(result, 'gated')]
    out.append(('Verdicts (gated metrics)', VERDICT_COLUMNS, gated,
                'baseline, candidate = medians of each build\'s runs tonight; ratio = '
                'candidate / baseline of the values, the Hodges-Lehmann estimate over the '
                'pairs (a median of per-pair ratios: it need not equal the quotient of the two '
                f'medians), with its {interval_label(result)} interval; ↑ higher is better, '
                '↓ lower is better; '
                'pairs = the metric\'s own: the nightly adds pairs only for the metrics a '
                'look left undecided, so one PASS or FAIL at 10 pairs keeps 10; '
                'q = Benjamini-Hochberg adjusted one-sided p-value of a slowdown; envelope = '
                'candidate median against the reference envelope.'))
    out += _machine_tables(result)
    cps = [[c['metric'], f'{c["from_night"]} → {c["to_night"]}',
            f'{c.get("from_commit") or "?"}..{c.get("to_commit") or "?"}',
            _ratio(c['ratio']), c['direction'], _num(c['p'], 2)]
           for c in result['change_points']]
    out.append(('Change points in the history of main',
                ('metric', 'nights', 'commit range', 'step', 'direction', 'p'), cps,
                'Apache Otava (E-divisive means, t-test per split) on the nightly log '
                'ratios candidate/baseline (paired, so a move of the machine cancels): '
                'steps and slow creep of the candidate alike.'))
    ctrl = [_verdict_cells(m, degraded) for m in _rows(result, 'canary') + _rows(result, 'control')]
    out.append(('Controls (true ratio 1: HDF5 not involved)', VERDICT_COLUMNS, ctrl,
                'Judged like gated metrics only to measure false alarms; never gate the night.'))
    fa = result['false_alarms']
    pn = fa['per_night']
    fa_rows = [[r['label'], str(r['nights']), str(r['false_alarms']), _pct(r['rate'])]
               for r in fa['per_metric'] if r['false_alarms']] or []
    note = (f'Per night: {pn["with_false_alarm"]} of {pn["nights"]} nights with a known true '
            f'ratio had a false alarm ({_pct(pn["rate"])}). Per metric ('
            f'{len(fa["per_metric"])} metrics with a known true ratio; only those with a '
            f'false alarm are listed).') if pn['nights'] else 'No night with a known true ratio yet.'
    out.append(('False alarms (FAIL where the true ratio is 1)',
                ('metric', 'nights known', 'false alarms', 'rate'), fa_rows, note))
    rep = [_verdict_cells(m, degraded)[:8] for m in _rows(result, 'reported')]
    out.append(('Reported, not gated', VERDICT_COLUMNS[:8], rep, ''))
    out[1:1] = followup.tables(result)     # after a FAIL: bisect and Darshan, below the verdicts
    return out


def _machine_tables(result: Mapping[str, Any]) -> list[Table]:
    """The canary, fio ceiling and canary-history tables."""
    out = []
    canary = [[c['metric'], c['canary'], _ratio((c['cand'] or {}).get('ratio')),
               _interval((c['cand'] or {}).get('lo'), (c['cand'] or {}).get('hi')),
               _ratio((c['base'] or {}).get('ratio')), c['verdict'] or '–']
              for c in result['canary']]
    out.append(('HDF5 as a fraction of MPI-IO',
                ('metric', 'MPI-IO canary (same pattern)', 'HDF5/MPI-IO ratio, candidate',
                 '95% interval', 'HDF5/MPI-IO ratio, baseline', 'verdict'),
                canary, 'HDF5/MPI-IO ratio = performance of the pattern through HDF5 / the same '
                'pattern through MPI-IO (1: HDF5 costs nothing; 0.9: HDF5 loses 10 %). WARN '
                f'below {1 - result["config"]["hdf5_overhead"]:.0%}: worth a look.'))
    ceiling = [[c['metric'], c['fio'], _num(c['hdf5_value']), _num(c['fio_value']),
                _pct(c['fraction'])] for c in result['ceiling']]
    out.append(('HDF5 as a fraction of the fio ceiling',
                ('metric', 'fio ceiling (test)', 'HDF5 (candidate median)', 'fio (median)',
                 'fraction'), ceiling, 'fraction = HDF5 candidate median / fio median of the '
                'same system and operation.'))
    deg = [[d['canary'], _num(d['tonight']), _num(d.get('history_median')),
            _num(d.get('z'), 3), _pct(d.get('drop')), str(d['nights']),
            'DEGRADED' if d['degraded'] else (d.get('note') or 'ok')]
           for d in result['degraded']]
    out.append(('Canaries against their own history',
                ('canary', 'tonight', 'history median', 'robust z', 'drop', 'nights', 'state'),
                deg, 'tonight = median of both builds\' MPI-IO runs; drop = 1 − tonight / '
                'history median of its performance: positive = the machine is slower than '
                'usual tonight, negative = faster (no concern). DEGRADED when it is far below '
                'its history (robust z and drop both beyond their limits).'))
    return out


#: metrics a tool is mostly read for; other metrics are named in the short label
_MAIN_METRICS = ('bw', 'bw_mean', 'time', 'elapsed', 'rate', 'throughput')
#: parameters Where shows (nodes x ranks), left out of the short label
_SIZE_PARAMS = ('num_nodes', 'num_ranks', 'num_tasks', 'tasks_per_node')


def short_label(m: Mapping[str, Any]) -> str:
    """A metric as tool, row and phase (the ReFrame name stays in ``label``)."""
    params = m.get('params') or {}
    # a check's record names its row (``case``, its benchmark parameter); its other
    # parameters (sizes, flags, counts) would print as bare values, unlabelled
    vals = [str(params['case'])] if params.get('case') else [
        str(v) for k, v in params.items() if v not in (None, '', '-') and k not in _SIZE_PARAMS]
    # 'hdf5', 'hdf5-collective', 'collective' say one thing: keep the longest
    row = '-'.join(v for i, v in enumerate(vals) if vals.index(v) == i and not any(
        v.lower() in w.lower() and v != w for w in vals))
    metric = '' if m.get('metric') in _MAIN_METRICS else f' {m.get("metric")}'
    parts = [m.get('tool') or '', row, str(m.get('operation') or '') + metric]
    text = ' '.join(p for p in parts if p.strip())
    return text or str(m['label'])


_BOUND = re.compile(r'([\d.]+)% (upper|lower) bound of the ratio,? ([\d.]+)')


def verdict_bound(m: Mapping[str, Any]) -> str:
    """The bound the verdict compared with 1 - margin: the gate's ``verdict_bound``
    (an early look uses a stricter one than the 95 % interval); a gate.json written
    before that field existed gives it in its reason only."""
    bound = m.get('verdict_bound')
    if isinstance(bound, Mapping):
        conf, side, value = bound['confidence'] * 100, bound['side'], bound['perf_ratio']
    else:
        got = _BOUND.search(str(m.get('reason') or ''))
        if not got:
            return ''
        conf, side, value = got.groups()
    return f'{side} bound {float(value):.3f} at {float(conf):g} %'


def _suspected(m: Mapping[str, Any]) -> bool:
    return is_suspected(str(m.get('reason') or ''))


def slowdown_words(m: Mapping[str, Any]) -> str:
    """A slower metric in words: 'writes take 1.47x as long (30-37 % lower), 20 pairs';
    a worse figure that is no speed, a peak memory: '2.95x the baseline's (...)'."""
    r, lo, hi = _perf(m)
    if not (_finite(r) and r > 0):
        return f'{short_label(m)}: no ratio'
    op = str(m.get('operation') or 'run')
    phase = op if op.endswith('s') else f'{op}s'
    span = ''
    if _finite(lo) and _finite(hi):
        span = f' (performance {(1 - hi) * 100:.0f}-{(1 - lo) * 100:.0f} % lower)'
    bound = verdict_bound(m)
    # the figure the candidate reached, as a multiple of the baseline's
    change = (f'{phase} take {1 / r:.2f}x as long' if is_speed(m.get('unit')) else
              f'{(1 / r if not m.get("higher_is_better", True) else r):.2f}x the baseline\'s')
    return (f'{short_label(m)}: {change}{span}, '
            f'{m.get("n_pairs")} pairs' + (f'; the verdict used the {bound}' if bound else ''))


def _skipped_text(result: Mapping[str, Any]) -> str:
    c = result['counts']
    return (f'{c["records"]} records read; skipped: {c["malformed"]} malformed, '
            f'{c["duplicates"]} duplicate, {c["non_positive"]} non-positive, '
            f'{c["direction_conflicts"]} with a conflicting direction; '
            f'{c["other_build"]} of other builds ignored; {c["perf_fail_samples"]} samples '
            f'outside their reference envelope (perf_fail) kept as samples.'
            + _excluded_text(result.get('contention') or {}) + _not_judged_text(result))


def _not_judged_text(result: Mapping[str, Any]) -> str:
    """The tests that left no record on either build (skipped or failed on both: no row
    to judge), and what their runs said."""
    tests = result.get('not_judged') or []
    if not tests:
        return ''
    return (f' Not judged, no record of either build ({len(tests)}): ' + '; '.join(
        f'{t["test"]} (baseline: {t["baseline"] or "passed"}; candidate: '
        f'{t["candidate"] or "passed"})' for t in tests) + '.')


def _excluded_text(contention: Mapping[str, Any]) -> str:
    """The pairs the gate left out as contended (issue 25), and why."""
    if not contention.get('excluded'):
        return ''
    return (f' {contention["pairs_excluded"]} contended pair(s) excluded '
            f'({contention["records_excluded"]} records; judged by '
            f'{contention["judged_by"]}): '
            + '; '.join(f'{x["pair"]}: {", ".join(x["why"])}' for x in contention['excluded'])
            + '.')


#: what the verdicts mean in numbers, measured by benchmarks/calibrate.py (issue 19) at
#: the shipped configuration (margin 5 %, margin_confidence 0.95, alpha 1 %)
MEASURED_RATES = (
    'Measured (benchmarks/calibrate.py: 1000 simulated nights per cell, one metric, 20 pairs '
    'or the 10/15/20 loop, with or without history): a true slowdown of 2, 3 and 4 % FAILs '
    '0-0.1, 0-0.3 and 0.7-1.2 % of nights at run-to-run CV 5 %, 0-0.2, 0.4-1.3 and 1.3-2.9 % '
    'at CV 8 %; one of 5 (the margin), 10 and 20 % FAILs 4-6, 92-95 and 100 % at CV 5 %, '
    '4-5, 62-67 and 100 % at CV 8 %, where the 10 % slowdowns that do not FAIL are mostly '
    '"significantly slower" (FAIL or that: 92-100 %). When nothing changed: FAIL 0-0.4 %, '
    '"significantly slower" 0.2-1.5 % (also on heavy-tailed, shared, bimodal and noisier-'
    'than-history nights).')


def _rule(cfg: Mapping[str, Any], rates: bool = True) -> str:
    """The verdict rule in words, the same in every format."""
    mconf = cfg.get('margin_confidence', 0.5)
    bound = 'its estimate' if mconf == 0.5 else f'its {mconf:.0%} upper confidence bound'
    return (f'FAIL when the slowdown is significant (Benjamini-Hochberg q ≤ {cfg["alpha"]}) '
            f'and {bound} is below {1 - cfg["margin"]:.2f}; PASS when the '
            f'{cfg["confidence"]:.0%} interval of the ratio stays above '
            f'{1 - cfg["margin"]:.2f}; at an early look of the rerun loop all three are '
            f'stricter, so the loop keeps the error rates of one look; otherwise '
            f'more pairs, then "no slowdown seen" (NO-SLOWDOWN-SEEN) when the slowdown is '
            f'not significant: the interval\'s low end gives the smallest slowdown the night '
            f'would have seen; "possible slowdown" (INCONCLUSIVE) when it is significant but '
            f'not shown beyond the margin, or the pairs are too few'
            + (f'. {MEASURED_RATES}' if rates else ''))


def _undecided(gated: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> str:
    """What INCONCLUSIVE means tonight, and how many pairs a PASS would need."""
    floor = 1 - cfg['margin']
    und = [m for m in gated if m['verdict'] not in ('PASS', NO_SLOWDOWN_SEEN)]
    slower = [m['label'] for m in und if m.get('slower')]
    text = f'{len(und)} of {len(gated)} gated metrics undecided'
    if slower:
        text += (f'; significantly slower but not shown beyond the {cfg["margin"]:.0%} margin: '
                 + '; '.join(slower))
    # measured slower (q or the interval the verdict read says so), not significant over
    # the night's metrics: a slowdown in words, never "even when nothing changed"
    suspected = [m for m in und if not m.get('slower') and _suspected(m)]
    if suspected:
        text += (f'; {len(suspected)} measured slower, not yet significant over the '
                 f'night\'s {len(gated)} metrics: '
                 + '; '.join(slowdown_words(m) for m in suspected))
    quiet = [m for m in und if not m.get('slower') and m not in suspected]
    if quiet:
        text += (f'; {len(quiet)} without a significant slowdown, their interval reaching '
                 f'below {floor:.2f}: at tonight\'s noise the pairs are too few to show the '
                 f'ratio above {floor:.2f} even when nothing changed (an A/A night ends so '
                 f'more often than not)')
        text += pairs_for_pass_text(quiet)
    return text


def pairs_for_pass_text(metrics: Sequence[Mapping[str, Any]]) -> str:
    """'; a PASS on 9 of 10 unchanged nights would need about N pairs', '' when unknown."""
    need = [m['pairs_for_pass'] for m in metrics if m.get('pairs_for_pass')]
    if not need:
        return ''
    return (f'; a PASS on 9 of 10 unchanged nights would need about {max(need)} pairs'
            + (f' (the noisiest metric; {min(need)} for the quietest)' if len(need) > 1 else ''))


def _title(result: Mapping[str, Any]) -> str:
    return (f'h5regress night {result["night"]}: {result["overall"]} — '
            f'{result["candidate"]} vs {result["baseline"]}')


def summary(result: Mapping[str, Any]) -> str:
    """Tonight's verdict in one sentence."""
    cfg = result['config']
    gated = _rows(result, 'gated')
    floor = 1 - cfg['margin']
    overall = result['overall']
    if overall == 'ERROR':
        text = f'no verdict: {result.get("error") or "error"}'
    elif overall == 'DEGRADED':
        text = 'no verdict: an MPI-IO canary fell far below its own history (the machine, ' \
               'not HDF5); rerun'
    elif overall == 'FAIL':
        failed = [m for m in gated if m['verdict'] == 'FAIL']
        bad = [slowdown_words(m) for m in failed]
        # a peak memory gets worse, not slower
        worse = 'slower' if all(is_speed(m.get('unit')) for m in failed) else 'worse'
        text = (f'{len(bad)} of {len(gated)} gated metrics {worse} than the '
                f'{cfg["margin"]:.0%} margin allows, significantly: ' + '; '.join(bad))
        # the loop stops at a FAIL: a metric measured slower but undecided gets no more
        # pairs, and a reader of the first screen should still hear of it
        also = [slowdown_words(m) for m in gated if m['verdict'] == 'INCONCLUSIVE'
                and (m.get('slower') or _suspected(m))]
        if also:
            text += (f'. Also measured slower, undecided when the night stopped at its FAIL: '
                     + '; '.join(also))
    elif overall == NO_SLOWDOWN_SEEN:
        text = no_slowdown_text(gated) + pairs_for_pass_text(
            [m for m in gated if m['verdict'] == NO_SLOWDOWN_SEEN])
    elif overall == 'PASS':
        text = (f'all {len(gated)} gated metrics within the margin: every interval lies '
                f'above {floor:.2f}')
    else:
        text = _undecided(gated, cfg)
    if result.get('a_a'):
        text += ('. A/A night: both builds carry one commit, so a FAIL here would be a '
                 'false alarm')
    elif result.get('injected_slowdown'):
        text += (f'. Injected slowdown: the candidate is the baseline\'s commit with its '
                 f'HDF5 writes slowed by {result["injected_slowdown"]:.0%} on purpose (a '
                 f'test of the gate), so a FAIL here is right')
    return f'{verdict_word(overall)}: {text}.'


def change_point_text(result: Mapping[str, Any], direction: str = 'worse') -> str:
    """The history's change points toward slower (``direction`` 'worse') or faster
    ('better') in one sentence, '' when none. A slow creep fails no single night, so the
    first screen warns of the slower ones; the faster ones are news, not a warning (an
    A/A history raises both about equally often: benchmarks/creep.py)."""
    cps = [c for c in result.get('change_points') or [] if c['direction'] == direction]
    if not cps:
        return ''
    parts = []
    word = 'slower' if direction == 'worse' else 'faster'
    for c in cps:
        ratio = c.get('ratio')
        step = '' if not _finite(ratio) else f' {abs(1 - ratio):.1%} {word}'
        parts.append(f'{c["metric"]}{step} from night {c["from_night"]} → {c["to_night"]} '
                     f'(candidate commits {str(c.get("from_commit") or "?")[:12]}..'
                     f'{str(c.get("to_commit") or "?")[:12]})')
    why = '; a creep no single night fails shows here' if direction == 'worse' else ''
    return (f'Change point{"s" if len(cps) > 1 else ""} toward {word} in the history of main '
            f'(Apache Otava on the nightly ratios{why}): ' + '; '.join(parts) + '.')


# ------------------------------------------------------------------ plots
def blind_spot_text(result: Mapping[str, Any]) -> str:
    """Which of the candidate's changed HDF5 functions tonight's rows run (issue 28): a
    blind spot is not a PASS."""
    cov = result.get('coverage') or {}
    if cov.get('available'):
        return f'Coverage: {cov["line"]}.'
    return f'Coverage: not known ({cov["reason"]}).' if cov.get('reason') else ''


def drawn_interval(m: Mapping[str, Any]) -> tuple[Any, Any]:
    """(lo, hi) of the ratio of the values a metric's row draws: the interval its
    verdict read (the gate's ``interval``, adjusted for the night's number of
    metrics), else the row's own (a gate.json written before, a history line)."""
    iv = m.get('interval')
    if isinstance(iv, Mapping):
        return iv.get('ratio_lo'), iv.get('ratio_hi')
    return m.get('ratio_lo'), m.get('ratio_hi')


def interval_label(result: Mapping[str, Any]) -> str:
    """What the drawn intervals are: the gate's words ("simultaneous 95 % over 12
    metrics ..."), or the confidence alone for a gate.json written before."""
    for m in result.get('metrics') or ():
        if m.get('role') == 'gated' and isinstance(m.get('interval'), Mapping):
            return str(m['interval'].get('label'))
    return f'{(result.get("config") or {}).get("confidence", 0.95):.0%}'


def _perf(m: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(ratio, lo, hi) of the performance, candidate/baseline (< 1: slower); the
    drawn interval (:func:`drawn_interval`)."""
    iv = m.get('interval')
    if m.get('perf_ratio') is not None and isinstance(iv, Mapping):
        return m['perf_ratio'], iv.get('perf_lo'), iv.get('perf_hi')
    if m.get('perf_ratio') is not None:
        return m['perf_ratio'], m.get('perf_lo'), m.get('perf_hi')
    r, lo, hi = m.get('ratio'), m.get('ratio_lo'), m.get('ratio_hi')
    if m.get('higher_is_better', True) or r is None:
        return r, lo, hi
    return 1 / r, (1 / hi if hi else None), (1 / lo if lo else None)
