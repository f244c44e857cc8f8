"""``h5regress report``: the night's report as Markdown, self-contained HTML and JUnit XML.

Input: the gate's result (``h5regress gate --json``), the history (for the
plots) and, when found, tonight's perflogs and the builds manifest (for where
the metrics ran: node list, file system, data size, command; and whether the
builds are stand-ins). Output in one directory:

* ``report.md``: verdict, builds, where, and the other tables, for merge
  requests and mail;
* ``report.html``: its first screen answers the night: the verdict in one
  sentence, a forest plot of each gated metric's ratio and interval against
  1 - margin and 1.0, the builds (HDF5 commits) and where each metric ran;
  then the tables (every column labelled) and one interactive history plot per
  gated metric (nightly medians, 5th-95th percentile band, reference envelope,
  tonight's runs; below it the nightly ratio with its interval against the
  margin; hover gives night, commit and value). Plots by plotly; plotly.js is
  inlined once, so the file opens offline (an artifact store, a mail);
* ``junit.xml``: one test case per gated metric (FAIL -> failure,
  INCONCLUSIVE/DEGRADED -> skipped with the reason), for CI test views.

``h5regress report --index --history DIR --out SITE`` writes ``SITE/index.html``,
every night of the history (verdict, builds and commits, counts, lowest gated
ratio), linking ``SITE/<night>/report.html`` where a night's report was kept.
"""

from __future__ import annotations

import html
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from h5regress import atomic
from h5regress import history as hist_mod
from h5regress import followup, perflog, stats
from h5regress.cmdline import EXIT_ERROR, GATE_CONFIG_HELP, ArgParser, parse_args
from h5regress.gateconfig import ConfigError, load_config
from h5regress.record import Record

# NO-SLOWDOWN-SEEN (issue 29) drawn like INCONCLUSIVE until the report gives it its colour
_COLORS = {'PASS': '#1a7f37', 'FAIL': '#cf222e', 'INCONCLUSIVE': '#9a6700',
           'NO-SLOWDOWN-SEEN': '#9a6700',
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
    order = {'FAIL': 0, 'INCONCLUSIVE': 1, 'NO-SLOWDOWN-SEEN': 1.5, 'PASS': 2, None: 3}
    rows = [m for m in result['metrics'] if m['role'] == role]
    return sorted(rows, key=lambda m: (order.get(m['verdict'], 3), m['label']))


VERDICT_COLUMNS = ('metric', 'system', 'baseline', 'candidate', 'unit', 'ratio',
                   '95% interval', 'pairs', 'q (BH)', 'envelope', 'verdict')


def _verdict_cells(m: Mapping[str, Any], degraded: bool) -> list[str]:
    verdict = m['verdict'] or '–'
    if degraded and m['verdict']:
        verdict = f'({verdict}, not judged: degraded night)'
    arrow = '↑' if m['higher_is_better'] else '↓'
    return [m['label'], m.get('system') or '–', _num(m['base_median']), _num(m['cand_median']),
            f'{m["unit"]} {arrow}', _ratio(m['ratio']), _interval(m['ratio_lo'], m['ratio_hi']),
            str(m['n_pairs']), _num(m['q'], 2), _envelope(m), verdict]


def _tables(result: Mapping[str, Any]) -> list[tuple[str, Sequence[str], list[list[str]], str]]:
    """(title, header, rows, note) of every table, shared by Markdown and HTML."""
    degraded = result['overall'] == 'DEGRADED'
    out = []
    gated = [_verdict_cells(m, degraded) for m in _rows(result, 'gated')]
    out.append(('Verdicts (gated metrics)', VERDICT_COLUMNS, gated,
                'baseline, candidate = medians of each build\'s runs tonight; ratio = '
                'candidate / baseline of the values, the Hodges-Lehmann estimate over the '
                'pairs (a median of per-pair ratios: it need not equal the quotient of the two '
                'medians), with its 95% interval; ↑ higher is better, ↓ lower is better; '
                'q = Benjamini-Hochberg adjusted one-sided p-value of a slowdown; envelope = '
                'candidate median against the reference envelope.'))
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


def _skipped_text(result: Mapping[str, Any]) -> str:
    c = result['counts']
    return (f'{c["records"]} records read; skipped: {c["malformed"]} malformed, '
            f'{c["duplicates"]} duplicate, {c["non_positive"]} non-positive, '
            f'{c["direction_conflicts"]} with a conflicting direction; '
            f'{c["other_build"]} of other builds ignored; {c["perf_fail_samples"]} samples '
            f'outside their reference envelope (perf_fail) kept as samples.')


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
            f'INCONCLUSIVE (more pairs), "significantly slower" when the slowdown is '
            f'significant but not shown beyond the margin'
            + (f'. {MEASURED_RATES}' if rates else ''))


def _undecided(gated: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> str:
    """What INCONCLUSIVE means tonight, and how many pairs a PASS would need."""
    floor = 1 - cfg['margin']
    und = [m for m in gated if m['verdict'] != 'PASS']
    slower = [m['label'] for m in und if m.get('slower')]
    text = f'{len(und)} of {len(gated)} gated metrics undecided'
    if slower:
        text += (f'; significantly slower but not shown beyond the {cfg["margin"]:.0%} margin: '
                 + '; '.join(slower))
    quiet = [m for m in und if not m.get('slower')]
    if quiet:
        need = [m['pairs_for_pass'] for m in quiet if m.get('pairs_for_pass')]
        text += (f'; {len(quiet)} without a significant slowdown, their interval reaching '
                 f'below {floor:.2f}: at tonight\'s noise the pairs are too few to show the '
                 f'ratio above {floor:.2f} even when nothing changed (an A/A night ends so '
                 f'more often than not)')
        if need:
            text += (f'; a PASS on 9 of 10 unchanged nights would need about {max(need)} pairs'
                     + (f' (the noisiest metric; {min(need)} for the quietest)'
                        if len(need) > 1 else ''))
    return text


def _title(result: Mapping[str, Any]) -> str:
    return (f'h5regress night {result["night"]}: {result["overall"]} — '
            f'{result["candidate"]} vs {result["baseline"]}')


# ------------------------------------------------------------------ Markdown
def _md_cell(s: str) -> str:
    return str(s).replace('|', '\\|').replace('\n', ' ')


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ['(none)']
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(_md_cell(c) for c in r) + ' |' for r in rows]
    return out


def markdown(result: Mapping[str, Any], ctx: Mapping[str, Any] | None = None) -> str:
    cfg = result['config']
    ctx = ctx or collect_context(result)
    lines = [f'# {_title(result)}', '', f'**{summary(result).split(": ", 1)[1]}**', '']
    lines += [f'{text}\n' for text in (change_point_text(result),
                                       change_point_text(result, 'better'),
                                       blind_spot_text(result)) if text]
    lines += [f'- candidate: `{result["candidate"]}` at '
              f'`{_commit_label(result, "candidate", ctx)}`',
              f'- baseline: `{result["baseline"]}` at `{_commit_label(result, "baseline", ctx)}`',
              f'- rule: {_rule(cfg)}',
              f'- records: {_skipped_text(result)}']
    if ctx.get('perflogs'):
        lines.append(f'- perflogs: `{ctx["perflogs"]}`')
    if result.get('error'):
        lines.append(f'- **error**: {result["error"]}')
    if result['overall'] == 'DEGRADED':
        lines.append('- **degraded night**: a canary fell far below its history; '
                     'no verdict, rerun.')
    lines += ['', '## Where', ''] + _md_table(WHERE_COLUMNS, where_rows(result, ctx))
    for title, header, rows, note in _tables(result):
        lines += ['', f'## {title}', '']
        if note:
            lines += [note, '']
        lines += _md_table(header, rows)
    if result.get('problems'):
        lines += ['', '## Problems (first of them)', '']
        lines += [f'- {_md_cell(p)}' for p in result['problems'][:20]]
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------ where
def _of_attempt(pair_id: Any, attempt: str) -> bool:
    """Whether a record's pair id belongs to a nightly attempt (``<attempt>-p<i>``)."""
    return pair_id is not None and str(pair_id).rsplit('-p', 1)[0] == attempt


def collect_context(result: Mapping[str, Any], records: Sequence[Record] = (),
                    manifest: Mapping[str, Any] | None = None,
                    perflogs: str | None = None) -> dict[str, Any]:
    """What the gate result does not carry, from tonight's records and the manifest:
    the records of each metric (provenance: node list, file system, data, command)
    and whether the builds are stand-ins (their commit is this repository's)."""
    by_key: dict[str, list[Record]] = {}
    builds = (result.get('baseline'), result.get('candidate'))
    for r in records:
        if r.hdf5_build not in builds:
            continue
        if result.get('attempt') and not _of_attempt(r.pair_id, result['attempt']):
            continue
        by_key.setdefault(hist_mod.metric_key(*r.key), []).append(r)
    mbuilds = (manifest or {}).get('builds') or {}
    standin = 'stand-in' in str((manifest or {}).get('spack_version', '')) or any(
        str(((mbuilds.get(b) or {}).get('hdf5') or {}).get('variants', '')).startswith('stand-in')
        for b in builds) or all('standin' in str(b) for b in builds)
    return {'records': by_key, 'manifest': manifest or {}, 'standin': standin,
            'perflogs': perflogs}


def find_context(result: Mapping[str, Any], night_dir: Path | None,
                 perflogs: str | None = None, manifest: str | None = None) -> dict[str, Any]:
    """:func:`collect_context` from files: ``perflogs``/``manifest`` when given, else
    where the nightly leaves them (``<night_dir>/perflogs/<attempt>``,
    ``<night_dir>/manifest.json``); missing files leave the fields unknown."""
    if perflogs is None and night_dir is not None and result.get('attempt'):
        cand = night_dir / 'perflogs' / str(result['attempt'])
        perflogs = str(cand) if cand.is_dir() else None
    if manifest is None and night_dir is not None and (night_dir / 'manifest.json').is_file():
        manifest = str(night_dir / 'manifest.json')
    records: list[Record] = []
    if perflogs:
        records, _problems = perflog.read([perflogs])
    man = None
    if manifest:
        try:
            man = json.loads(Path(manifest).read_text(encoding='utf-8'))
        except (OSError, ValueError):
            man = None
    rel = None
    if perflogs and night_dir is not None:
        try:
            rel = str(Path(perflogs).resolve().relative_to(night_dir.resolve()))
        except ValueError:
            rel = None
    return collect_context(result, records, man if isinstance(man, dict) else None, rel)


def _bytes(n: Any) -> str:
    if not _finite(n) or n <= 0:
        return '–'
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if n < 1024 or unit == 'TiB':
            return f'{n:.0f} {unit}' if unit == 'B' else f'{n:.1f} {unit}'
        n /= 1024
    return '–'


def _data_bytes(rec: Record) -> float | None:
    """Data one run of the tool wrote or read, from what the record says."""
    prov, params = rec.provenance or {}, rec.params or {}
    for src in (prov, params):
        for k in ('data_bytes', 'aggregate_bytes', 'bytes_written', 'total_bytes'):
            if _finite(src.get(k)):
                return float(src[k])
    files = prov.get('files')
    if isinstance(files, list):
        sizes = [f.get('size_bytes') or f.get('data_bytes') for f in files if isinstance(f, dict)]
        if sizes and all(_finite(s) for s in sizes):
            return float(sum(sizes))
    for w in prov.get('warnings') or []:
        got = re.search(r'data written \((\d+) B\)', str(w))
        if got:
            return float(got.group(1))
    return None


def _nodes(m: Mapping[str, Any], rec: Record | None) -> tuple[str, str]:
    """('nodes × ranks', node list) of a metric."""
    params = (rec.params if rec else None) or m.get('params') or {}
    nn, nr = params.get('num_nodes'), params.get('num_ranks')
    count = f'{nn or "?"} × {nr or "?"}' if nn or nr else '–'
    nl = (rec.provenance or {}).get('nodelist') if rec else None
    if isinstance(nl, (list, tuple)):
        nl = ','.join(map(str, nl))
    return count, str(nl) if nl else '–'


WHERE_COLUMNS = ('metric', 'system:partition', 'nodes × ranks', 'node list', 'file system',
                 'data per run', 'command (one candidate run)')


def where_rows(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> list[list[str]]:
    """Where each gated metric ran: system, nodes, file system, data size, command."""
    rows = []
    for m in _rows(result, 'gated'):
        recs = ctx['records'].get(m['key']) or []
        cand = [r for r in recs if r.hdf5_build == result['candidate']] or recs
        rec = cand[0] if cand else None
        prov = (rec.provenance or {}) if rec else {}
        count, nodelist = _nodes(m, rec)
        command = prov.get('command_line') or prov.get('command') or '–'
        rows.append([m['label'], m.get('system') or '–', count, nodelist,
                     str(prov.get('fs_type') or '–'), _bytes(_data_bytes(rec)) if rec else '–',
                     str(command)])
    return rows


def _commit_label(result: Mapping[str, Any], side: str, ctx: Mapping[str, Any]) -> str:
    build = result[side]
    commit = result.get(f'{side}_commit') or (
        ((ctx['manifest'].get('builds') or {}).get(build) or {}).get('hdf5') or {}).get('commit')
    if ctx.get('standin'):
        return f"stand-in (this repository's commit){' ' + str(commit)[:12] if commit else ''}"
    return str(commit)[:12] if commit else '?'


def _hdf5_version(result: Mapping[str, Any], side: str, ctx: Mapping[str, Any]) -> str:
    for recs in ctx['records'].values():
        for r in recs:
            if r.hdf5_build == result[side] and (r.provenance or {}).get('hdf5_version'):
                return str(r.provenance['hdf5_version'])
    return '–'


BUILD_COLUMNS = ('build', 'build id', 'HDF5 commit', 'HDF5 library version (as the tool saw it)')


def build_rows(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> list[list[str]]:
    return [[name, str(result[side]), _commit_label(result, side, ctx),
             _hdf5_version(result, side, ctx)]
            for name, side in (('baseline', 'baseline'), ('candidate (tonight)', 'candidate'))]


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
        bad = [f'{m["label"]} (ratio {_ratio(_perf(m)[0])} {_interval(*_perf(m)[1:])})'
               for m in gated if m['verdict'] == 'FAIL']
        text = (f'{len(bad)} of {len(gated)} gated metrics slower than the {cfg["margin"]:.0%} '
                f'margin allows, significantly: ' + '; '.join(bad))
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
    return f'{overall}: {text}.'


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
_TEMPLATE = 'none'      # plotly's default template would add ~10 KiB per figure


def blind_spot_text(result: Mapping[str, Any]) -> str:
    """Which of the candidate's changed HDF5 functions tonight's rows run (issue 28): a
    blind spot is not a PASS."""
    cov = result.get('coverage') or {}
    if cov.get('available'):
        return f'Coverage: {cov["line"]}.'
    return f'Coverage: not known ({cov["reason"]}).' if cov.get('reason') else ''


def _perf(m: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(ratio, lo, hi) of the performance, candidate/baseline (< 1: slower)."""
    if m.get('perf_ratio') is not None:
        return m['perf_ratio'], m.get('perf_lo'), m.get('perf_hi')
    r, lo, hi = m.get('ratio'), m.get('ratio_lo'), m.get('ratio_hi')
    if m.get('higher_is_better', True) or r is None:
        return r, lo, hi
    return 1 / r, (1 / hi if hi else None), (1 / lo if lo else None)


def _fig_html(fig: Any, div_id: str, modebar: bool | str = 'hover') -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={'displaylogo': False, 'responsive': True,
                               'displayModeBar': modebar})


def _wrap(label: str, width: int = 34) -> str:
    """A long metric label on several lines (plotly breaks at ``<br>``)."""
    lines, cur = [], ''
    for word in str(label).split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f'{cur} {word}' if cur else word
    return '<br>'.join(html.escape(x) for x in lines + [cur])


#: share of the forest plot's width kept right of 1.0 for its label "1.0 = no change"
#: (a night far below 1 squeezed it into the column header "ratio [interval]")
FOREST_RIGHT_OF_ONE = 0.27


def _forest_range(gated: Sequence[Mapping[str, Any]], floor: float) -> tuple[float, float]:
    vals = [v for m in gated for v in _perf(m) if _finite(v) and v > 0]
    lo, hi = min([floor - 0.03] + vals), max([1.1] + vals)
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    # (hi - 1) / (hi - lo) >= FOREST_RIGHT_OF_ONE
    return lo, max(hi, (1 - FOREST_RIGHT_OF_ONE * lo) / (1 - FOREST_RIGHT_OF_ONE))


def _forest_hover(m: Mapping[str, Any]) -> str:
    r, lo, hi = _perf(m)
    return (f'<b>{html.escape(m["label"])}</b><br>performance ratio {_ratio(r)} '
            f'{_interval(lo, hi)}<br>medians: baseline {_num(m["base_median"])}, '
            f'candidate {_num(m["cand_median"])} {html.escape(m["unit"])}<br>'
            f'{m["n_pairs"]} pairs, q (BH) {_num(m["q"], 2)}<br>{m["verdict"] or "–"}')


def forest_figure(result: Mapping[str, Any]) -> Any:
    """Tonight's ratio and interval per gated metric against 1 - margin and 1."""
    import plotly.graph_objects as go
    gated = _rows(result, 'gated')
    floor = 1 - result['config']['margin']
    xmin, xmax = _forest_range(gated, floor)
    fig = go.Figure()
    for verdict in ('FAIL', 'INCONCLUSIVE', 'NO-SLOWDOWN-SEEN', 'PASS', None):
        ms = [m for m in gated if m['verdict'] == verdict and _perf(m)[0] is not None]
        if not ms:
            continue
        xs = [_perf(m)[0] for m in ms]
        plus = [(_perf(m)[2] if _perf(m)[2] is not None else xmax) - x for m, x in zip(ms, xs)]
        minus = [x - (_perf(m)[1] or xmin) for m, x in zip(ms, xs)]
        fig.add_trace(go.Scatter(
            x=xs, y=[_wrap(m['label']) for m in ms], mode='markers', name=verdict or 'no verdict',
            marker={'size': 12, 'symbol': 'diamond', 'color': _COLORS.get(verdict)},
            error_x={'type': 'data', 'symmetric': False, 'array': plus, 'arrayminus': minus,
                     'thickness': 2.5, 'width': 7, 'color': _COLORS.get(verdict)},
            hovertext=[_forest_hover(m) for m in ms], hoverinfo='text'))
    fig.add_vrect(x0=xmin, x1=floor, fillcolor=_COLORS['FAIL'], opacity=0.07, line_width=0)
    fig.add_vline(x=floor, line={'color': _COLORS['FAIL'], 'dash': 'dash', 'width': 2})
    fig.add_vline(x=1.0, line={'color': '#57606a', 'width': 1.5})
    for x, text, anchor, color in ((floor, f'1 − margin = {floor:.2f} ', 'right', _COLORS['FAIL']),
                                   (1.0, ' 1.0 = no change', 'left', '#57606a')):
        fig.add_annotation(x=x, y=1.0, yref='paper', yanchor='bottom', xanchor=anchor,
                           text=text, showarrow=False, font={'color': color, 'size': 12})
    # the numbers in a column right of the plot: beside the diamond they crossed the
    # margin's line whenever the ratio was near it
    for m in gated:
        r, lo, hi = _perf(m)
        fig.add_annotation(
            x=1.0, xref='paper', xanchor='left', xshift=8, y=_wrap(m['label']), yref='y',
            showarrow=False, align='left', font={'color': _COLORS.get(m['verdict']), 'size': 12},
            text=f'{_ratio(r)} {_interval(lo, hi)}<br><b>{m["verdict"] or "no verdict"}</b>')
    fig.add_annotation(x=1.0, xref='paper', xanchor='left', xshift=8, y=1.0, yref='paper',
                       yanchor='bottom', showarrow=False, align='left',
                       text='ratio [interval]', font={'color': '#57606a', 'size': 12})
    fig.update_layout(
        template=_TEMPLATE, height=130 + 62 * len(gated), showlegend=False,
        margin={'l': 10, 'r': 150, 't': 28, 'b': 50}, font={'size': 13}, hovermode='closest',
        xaxis={'range': [xmin, xmax], 'title': {'text': 'performance ratio cand/base, 95% '
               'interval', 'standoff': 8}, 'showgrid': True, 'gridcolor': '#eaeef2'},
        yaxis={'automargin': True, 'categoryorder': 'array',
               'categoryarray': [_wrap(m['label']) for m in gated],
               'range': [len(gated) - 0.5, -0.8]})
    return fig


def _points(m: Mapping[str, Any], history: hist_mod.History,
            result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One point per night of a metric (degraded nights left out), tonight last."""
    out = []
    for x in history.series.get(m['key'], []):
        n = history.nights[x['night_index']]
        if n.get('degraded'):
            continue
        r, lo, hi = _perf({**x, 'higher_is_better': m['higher_is_better']})
        out.append({'night': str(n['night']), 'commit': n.get('candidate_commit') or '?',
                    'base_commit': n.get('baseline_commit') or '?',
                    'cand': x.get('cand_median'), 'base': x.get('base_median'),
                    'r': r, 'lo': lo, 'hi': hi, 'verdict': x.get('verdict'),
                    'pairs': x.get('n_pairs')})
    r, lo, hi = _perf(m)
    out.append({'night': str(result['night']), 'commit': result.get('candidate_commit') or '?',
                'base_commit': result.get('baseline_commit') or '?',
                'cand': m['cand_median'], 'base': m['base_median'], 'r': r, 'lo': lo, 'hi': hi,
                'verdict': m['verdict'], 'pairs': m['n_pairs']})
    return out


def _y_range(data: Sequence[float], band: tuple[float, float] | None,
             env: Mapping[str, Any] | None) -> tuple[float, float, float]:
    """(ymin, ymax, pad) of a plot: the data, and the band and envelope lines near it."""
    lo, hi = min(data), max(data)
    span = (hi - lo) or abs(hi) * 0.1 or 1.0
    extra = [band[0], band[1]] if band else []
    if env:
        extra += [v for v in (env['low'], env['high'], env['ref']) if _finite(v)]
    for v in extra:   # include what is near the data; clip the rest
        if lo - span <= v <= hi + span:
            lo, hi = min(lo, v), max(hi, v)
    pad = (hi - lo) * 0.08 or 1.0
    return lo - pad, hi + pad, pad


def _level_traces(go: Any, m: Mapping[str, Any], pts: Sequence[Mapping[str, Any]],
                  nights: list[str]) -> list[Any]:
    """Nightly medians of both builds, with night, commit and value on hover."""
    unit = html.escape(m['unit'])
    out = []
    for side, name, color, dash in (('base', 'baseline, nightly median', '#8c959f', 'dot'),
                                    ('cand', 'candidate, nightly median', '#0969da', 'solid')):
        commit = 'base_commit' if side == 'base' else 'commit'
        out.append(go.Scatter(
            x=nights, y=[p[side] for p in pts], name=name, mode='lines+markers',
            line={'color': color, 'dash': dash, 'width': 2.2 if side == 'cand' else 1.5},
            marker={'size': 5}, customdata=[[p[commit], p['pairs'], p['verdict'] or '–']
                                            for p in pts],
            hovertemplate=f'night %{{x}}<br>{name.split(",")[0]} commit %{{customdata[0]}}<br>'
                          f'median %{{y:.4g}} {unit}<br>%{{customdata[1]}} pairs, '
                          f'%{{customdata[2]}}<extra></extra>'))
    return out


def _tonight_traces(go: Any, m: Mapping[str, Any], night: str) -> list[Any]:
    """Tonight's runs of both builds (pair by pair) and its median, coloured by verdict."""
    out = []
    for side, name, color in (('base', "tonight's baseline runs", '#8c959f'),
                              ('cand', "tonight's candidate runs", '#0969da')):
        vals = list(m.get(side) or [])
        if vals:
            out.append(go.Box(
                x=[night] * len(vals), y=vals, name=name, boxpoints='all', jitter=0.6,
                pointpos=0, marker={'color': color, 'size': 4, 'opacity': 0.7},
                line={'width': 1}, fillcolor='rgba(0,0,0,0)', offsetgroup=side,
                text=[f'pair {i + 1}' if i < (m.get('n_pairs') or 0) else 'unpaired run'
                      for i in range(len(vals))],
                hovertemplate=f'{name}<br>%{{text}}: %{{y:.4g}}<extra></extra>'))
    if m['cand_median']:
        out.append(go.Scatter(
            x=[night], y=[m['cand_median']], mode='markers', name='tonight (median; colour = '
            'verdict)', marker={'size': 16, 'symbol': 'circle-open',
                                'color': _COLORS.get(m['verdict'], '#57606a'),
                                'line': {'width': 3}},
            hovertemplate=f'tonight: candidate median %{{y:.4g}}, {m["verdict"] or "–"}'
                          '<extra></extra>'))
    return out


def _band_env_traces(go: Any, m: Mapping[str, Any], nights: list[str],
                     band: tuple[float, float] | None, yr: tuple[float, float]) -> list[Any]:
    out = []
    if band:
        for i, v in enumerate(band):
            out.append(go.Scatter(
                x=nights, y=[v] * len(nights), mode='lines', line={'width': 0},
                fill='tonexty' if i else None, fillcolor='rgba(84,174,255,0.18)',
                name='5th-95th percentile of history', showlegend=bool(i),
                legendgroup='band', hoverinfo='skip'))
    env = m.get('envelope')
    if env:
        for key, name, dash in (('low', 'reference envelope', 'dash'),
                                ('high', 'reference envelope', 'dash'),
                                ('ref', 'reference value', 'dot')):
            v = env.get(key)
            if _finite(v) and yr[0] <= v <= yr[1]:
                out.append(go.Scatter(
                    x=nights, y=[v] * len(nights), mode='lines', name=name,
                    legendgroup=name, showlegend=key != 'high',
                    line={'color': '#8250df', 'dash': dash, 'width': 1.2},
                    hovertemplate=f'{name} ({key}) {v:.4g}<extra></extra>'))
    return out


def _ratio_traces(go: Any, m: Mapping[str, Any], pts: Sequence[Mapping[str, Any]],
                  nights: list[str]) -> list[Any]:
    """Nightly performance ratio with its interval, and tonight's per-pair ratios."""
    ok = [p for p in pts if p['r'] is not None]
    out = [go.Scatter(
        x=[p['night'] for p in ok], y=[p['r'] for p in ok], mode='markers',
        name='ratio of the night, 95% interval',
        marker={'size': 7, 'color': [_COLORS.get(p['verdict'], '#57606a') for p in ok]},
        error_y={'type': 'data', 'symmetric': False, 'color': '#8c959f', 'thickness': 1.2,
                 'array': [(p['hi'] - p['r']) if p['hi'] is not None else 0 for p in ok],
                 'arrayminus': [(p['r'] - p['lo']) if p['lo'] else 0 for p in ok]},
        customdata=[[p['commit'], _interval(p['lo'], p['hi']), p['verdict'] or '–']
                    for p in ok],
        hovertemplate='night %{x}<br>candidate commit %{customdata[0]}<br>ratio %{y:.3f} '
                      '%{customdata[1]}<br>%{customdata[2]}<extra></extra>')]
    n = m.get('n_pairs') or 0
    base, cand = list(m.get('base') or [])[:n], list(m.get('cand') or [])[:n]
    pairs = [(c / b if m['higher_is_better'] else b / c) for b, c in zip(base, cand) if b and c]
    if pairs:
        out.append(go.Scatter(
            x=[nights[-1]] * len(pairs), y=pairs, mode='markers', name="tonight's pairs "
            '(ratio per pair)', marker={'size': 5, 'color': '#0969da', 'opacity': 0.5},
            text=[f'pair {i + 1}' for i in range(len(pairs))],
            hovertemplate='%{text}: ratio %{y:.3f}<extra></extra>'))
    return out


def history_figure(m: Mapping[str, Any], history: hist_mod.History,
                   result: Mapping[str, Any]) -> Any:
    """Nightly medians (envelope, band, tonight's runs) over the nightly ratio."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    pts = _points(m, history, result)
    nights = [p['night'] for p in pts]
    past = [p['cand'] for p in pts[:-1] if p['cand']]
    band = (stats.percentile(past, 5), stats.percentile(past, 95)) if len(past) >= 5 else None
    data = [v for p in pts for v in (p['cand'], p['base']) if v] + \
        [v for v in list(m.get('cand') or []) + list(m.get('base') or []) if v]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.66, 0.34],
                        vertical_spacing=0.05)
    if not data:
        return fig
    ymin, ymax, _ = _y_range(data, band, m.get('envelope'))
    traces = _band_env_traces(go, m, nights, band, (ymin, ymax)) + \
        _level_traces(go, m, pts, nights) + _tonight_traces(go, m, nights[-1])
    for t in traces:
        fig.add_trace(t, row=1, col=1)
    for t in _ratio_traces(go, m, pts, nights):
        fig.add_trace(t, row=2, col=1)
    floor = 1 - result['config']['margin']
    fig.add_hline(y=1.0, line={'color': '#57606a', 'width': 1}, row=2, col=1)
    fig.add_hline(y=floor, line={'color': _COLORS['FAIL'], 'dash': 'dash', 'width': 1.5},
                  annotation_text=f'1 − margin = {floor:.2f}', annotation_position='bottom left',
                  row=2, col=1)
    arrow = '↑ higher is better' if m['higher_is_better'] else '↓ lower is better'
    fig.update_layout(
        template=_TEMPLATE, height=540, margin={'l': 70, 'r': 20, 't': 60, 'b': 40},
        boxmode='group', hovermode='closest', font={'size': 12},
        legend={'orientation': 'h', 'y': 1.02, 'yanchor': 'bottom', 'x': 0, 'font': {'size': 11}})
    fig.update_xaxes(type='category', categoryorder='array', categoryarray=nights,
                     showgrid=True, gridcolor='#eaeef2', nticks=12)
    fig.update_yaxes(title_text=f'{m["unit"]} ({arrow})', range=[ymin, ymax], row=1, col=1,
                     showgrid=True, gridcolor='#eaeef2')
    fig.update_yaxes(title_text='ratio cand/base', row=2, col=1, showgrid=True,
                     gridcolor='#eaeef2')
    for c in result.get('change_points') or []:
        if c.get('key') == m['key'] and c.get('to_night') in nights:
            _mark_change_point(fig, c, nights)
    return fig


def _mark_change_point(fig: Any, c: Mapping[str, Any], nights: list[str]) -> None:
    """A vertical line through both panels between the two nights of a change point
    (x is categorical: the line sits half a night before its first night)."""
    x = nights.index(c['to_night']) - 0.5
    color = _COLORS['FAIL'] if c['direction'] == 'worse' else _COLORS['PASS']
    fig.add_shape(type='line', xref='x', yref='paper', x0=x, x1=x, y0=0, y1=1,
                  line={'color': color, 'width': 2, 'dash': 'dot'},
                  name=f'change point {c["to_night"]}')
    step = f' {abs(1 - c["ratio"]):.1%}' if _finite(c.get('ratio')) else ''
    fig.add_annotation(x=x, xref='x', y=1.0, yref='paper', yanchor='top', xanchor='right',
                       text=f'change point: {c["direction"]}{step} from {c["to_night"]} ',
                       showarrow=False, font={'color': color, 'size': 11},
                       bgcolor='rgba(255,255,255,0.8)')


def plotly_js() -> str:
    """plotly.js, once per page: the file opens offline (a CI artifact, a mail)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


# ------------------------------------------------------------------ HTML
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:16px 24px;
color:#24292f;max-width:1360px}
h1{font-size:22px;margin:4px 0 6px}h2{font-size:17px;margin-top:26px;border-bottom:1px solid #d0d7de}
h3{font-size:14px;margin:4px 0}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa}tr.help th{font-weight:normal;color:#57606a;font-size:11px;background:#fff}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
h1 .badge{font-size:20px;padding:3px 14px}
.summary{font-size:15px;margin:4px 0 8px}
.note{color:#57606a;font-size:12px}.plot{margin:14px 0 26px}
#first-screen{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:8px 24px}
#first-screen .wide{grid-column:1 / span 2}
td code.cmd{display:inline-block;max-width:420px;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap;vertical-align:bottom}
"""

#: what a column holds, shown under its name (HTML) and under the table (Markdown)
COLUMN_HELP = {
    'baseline': 'median of its runs', 'candidate': 'median of its runs',
    'unit': '↑ higher / ↓ lower is better', 'ratio': 'candidate / baseline (HL over pairs)',
    '95% interval': 'of the ratio', 'pairs': 'ABBA pairs tonight',
    'q (BH)': 'adjusted p of a slowdown', 'envelope': 'candidate median vs reference',
    'nodes × ranks': 'nodes × MPI ranks', 'data per run': 'one execution of the tool',
    'drop': '1 − tonight / history median', 'robust z': '(tonight − median) / MAD σ',
}


def _badge(v: Any) -> str:
    if v in _COLORS and v:
        return f'<span class="badge" style="background:{_COLORS[v]}">{html.escape(v)}</span>'
    return html.escape(str(v))


_NUMERIC = ('baseline', 'candidate', 'ratio', 'pairs', 'q (BH)', 'tonight', 'fraction',
            'history median', 'robust z', 'drop', 'nights')


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], table_id: str = '') -> str:
    e = html.escape
    tid = f' id="{table_id}"' if table_id else ''
    out = [f'<table{tid}><tr>' + ''.join(f'<th>{e(h)}</th>' for h in header) + '</tr>']
    if any(h in COLUMN_HELP for h in header):
        out.append('<tr class="help">' + ''.join(f'<th>{e(COLUMN_HELP.get(h, ""))}</th>'
                                                 for h in header) + '</tr>')
    for r in rows:
        cells = []
        for h, c in zip(header, r):
            if h in ('verdict', 'state') and c in _COLORS:
                cells.append(f'<td>{_badge(c)}</td>')
            elif h.startswith('command'):
                cells.append(f'<td><code class="cmd" title="{e(str(c))}">{e(str(c))}</code></td>')
            else:
                cls = ' class="num"' if h in _NUMERIC else ''
                cells.append(f'<td{cls}>{e(str(c))}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    out.append('</table>')
    return '\n'.join(out)


def first_screen(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> str:
    """Verdict, forest plot of the gated ratios against the margin, and where."""
    e = html.escape
    cfg = result['config']
    out = ['<section id="first-screen">', '<div id="verdict" class="wide">',
           f'<h1>h5regress night {e(str(result["night"]))} {_badge(result["overall"])}</h1>',
           f'<p class="summary">{e(summary(result))}</p>']
    if change_point_text(result):
        out.append(f'<p class="summary" id="change-points-summary">'
                   f'<b>⚠</b> {e(change_point_text(result))}</p>')
    if change_point_text(result, 'better'):
        out.append(f'<p class="note" id="change-points-better">'
                   f'{e(change_point_text(result, "better"))}</p>')
    if blind_spot_text(result):
        out.append(f'<p class="summary" id="blind-spots">{e(blind_spot_text(result))}</p>')
    out += ['</div>', '<div>',
           '<h3>Tonight per gated metric: ratio and 95% interval against the margin</h3>']
    if _rows(result, 'gated'):
        out.append(_fig_html(forest_figure(result), 'forest', False))
    else:
        out.append('<div id="forest" class="note">(no gated metric)</div>')
    out.append(f'<p class="note">Each diamond is tonight\'s performance ratio candidate/baseline '
               f'(Hodges-Lehmann estimate over the pairs; time metrics inverted, so below 1 is '
               f'always slower), the bar its {cfg["confidence"]:.0%} interval. Red zone: below '
               f'1 − margin ({1 - cfg["margin"]:.2f}). {e(_rule(cfg, rates=False))}.</p>'
               f'<details class="note"><summary>What the verdicts mean in numbers</summary>'
               f'{e(MEASURED_RATES)}</details></div>')
    perf = ''
    if ctx.get('perflogs'):
        href = ctx['perflogs'].replace('\\', '/')
        perf = f'<p class="note">perflogs: <a href="../{e(href)}/">{e(href)}</a></p>'
    out += ['<div><h3>Builds</h3>', _html_table(BUILD_COLUMNS, build_rows(result, ctx), 'builds'),
            perf, f'<p class="note">{e(_skipped_text(result))}</p></div>',
            '<div class="wide"><h3>Where</h3>',
            _html_table(WHERE_COLUMNS, where_rows(result, ctx), 'where'), '</div>', '</section>']
    return '\n'.join(out)


def _history_section(result: Mapping[str, Any], history: hist_mod.History) -> list[str]:
    gated = _rows(result, 'gated')
    if not gated:
        return []
    e = html.escape
    out = ['<h2 id="plots">History of the gated metrics</h2>',
           '<p class="note">Top: nightly medians of the candidate (blue) and the baseline '
           '(grey dots), the 5th-95th percentile band of the candidate\'s history, the '
           'reference envelope (purple, when near the data), tonight\'s runs (boxes) and '
           'tonight\'s median (circle, colour = verdict). Bottom: the nightly ratio with its '
           'interval against 1 and 1 − margin, and tonight\'s per-pair ratios. Hover for '
           'night, commit and value; drag to zoom, double-click to reset.</p>']
    for i, m in enumerate(gated):
        out.append(f'<div class="plot"><div><b>{e(m["label"])}</b> {_badge(m["verdict"])} '
                   f'<span class="note">ratio {_ratio(m["ratio"])} '
                   f'{_interval(m["ratio_lo"], m["ratio_hi"])} (tonight)</span></div>')
        out.append(_fig_html(history_figure(m, history, result), f'history-{i}'))
        out.append('</div>')
    return out


def to_html(result: Mapping[str, Any], history: hist_mod.History,
            ctx: Mapping[str, Any] | None = None) -> str:
    e = html.escape
    ctx = ctx or collect_context(result)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<title>{e(_title(result))}</title><style>{_CSS}</style>',
           f'<script type="text/javascript">{plotly_js()}</script></head><body>',
           first_screen(result, ctx)]
    if result.get('error'):
        out.append(f'<p><b>error:</b> {e(result["error"])}</p>')
    if result['overall'] == 'DEGRADED':
        out.append('<p><b>Degraded night:</b> a canary fell far below its own history; '
                   'no verdict, rerun.</p>')
    for i, (title, header, rows, note) in enumerate(_tables(result)):
        out.append(f'<h2>{e(title)}</h2>')
        if note:
            out.append(f'<p class="note">{e(note)}</p>')
        out.append(_html_table(header, rows) if rows else '<p class="note">(none)</p>')
        if i == 0:   # the verdicts, then their history, then the rest
            out += _history_section(result, history)
    if result.get('problems'):
        out.append('<h2>Problems</h2><ul>')
        out += [f'<li><code>{e(p)}</code></li>' for p in result['problems'][:20]]
        out.append('</ul>')
    out.append('</body></html>')
    return '\n'.join(out)


# ------------------------------------------------------------------ index of nights
INDEX_COLUMNS = ('night', 'verdict', 'baseline (commit)', 'candidate (commit)', 'A/A',
                 'gated: FAIL / INCONCLUSIVE / PASS', 'lowest gated ratio [interval]')


def _index_row(night: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    gated = [m for m in metrics if m.get('role') == 'gated']
    counts = ' / '.join(str(sum(m.get('verdict') == v for m in gated))
                        for v in ('FAIL', 'INCONCLUSIVE', 'PASS'))
    worst = min(gated, key=lambda m: _perf(m)[0] if _perf(m)[0] is not None else math.inf,
                default=None)
    low = f'{_ratio(_perf(worst)[0])} {_interval(*_perf(worst)[1:])}' if worst else '–'
    verdict = 'DEGRADED' if night.get('degraded') else (night.get('overall') or '–')
    return [str(night['night']), verdict,
            f'{night.get("baseline") or "?"} ({str(night.get("baseline_commit") or "?")[:12]})',
            f'{night.get("candidate") or "?"} ({str(night.get("candidate_commit") or "?")[:12]})',
            'yes' if night.get('a_a') else
            (f'no: {night["injected_slowdown"]:.0%} slowdown injected'
             if night.get('injected_slowdown') else 'no'), counts, low]


def index_html(history: hist_mod.History, link: str | None = '{night}/report.html',
               base: Path | None = None) -> str:
    """Every night of the history, newest first, with a link to its report when
    ``base / link.format(night=...)`` exists."""
    e = html.escape
    per_night: dict[int, list[Mapping[str, Any]]] = {}
    for rows in history.series.values():
        for x in rows:
            per_night.setdefault(x['night_index'], []).append(x)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<title>h5regress: {len(history.nights)} nights</title><style>{_CSS}</style>'
           '</head><body>', f'<h1>h5regress: all nights ({len(history.nights)})</h1>',
           '<p class="note">Newest first. Lowest gated ratio: the gated metric with the lowest '
           'performance ratio candidate/baseline that night (&lt; 1: slower), with its 95% '
           'interval. A/A: both builds carry one commit (true ratio 1).</p>',
           '<table id="nights"><tr>' + ''.join(f'<th>{e(h)}</th>' for h in INDEX_COLUMNS)
           + '</tr>']
    for idx in range(len(history.nights) - 1, -1, -1):
        night = history.nights[idx]
        cells = _index_row(night, per_night.get(idx, []))
        target = link.format(night=night['night']) if link else None
        first = e(cells[0])
        if target and (base is None or (base / target).is_file()):
            first = f'<a href="{e(target)}">{first}</a>'
        out.append(f'<tr><td>{first}</td><td>{_badge(cells[1])}</td>'
                   + ''.join(f'<td>{e(c)}</td>' for c in cells[2:]) + '</tr>')
    out.append('</table></body></html>')
    return '\n'.join(out)


# ------------------------------------------------------------------ JUnit
def junit(result: Mapping[str, Any]) -> str:
    cases = []
    fails = skips = errors = 0
    degraded = result['overall'] == 'DEGRADED'
    for m in _rows(result, 'gated'):
        name = quoteattr(m['label'])
        cls = quoteattr(f'h5regress.gate.{m["tool"]}')
        detail = (f'ratio {_ratio(m["ratio"])} {_interval(m["ratio_lo"], m["ratio_hi"])}, '
                  f'{m["n_pairs"]} pairs, q={_num(m["q"], 2)}: {m["reason"]}')
        body = ''
        if degraded:
            skips += 1
            body = f'<skipped message={quoteattr("degraded night, no verdict: " + detail)}/>'
        elif m['verdict'] == 'FAIL':
            fails += 1
            body = (f'<failure message={quoteattr(detail)} type="performance-regression">'
                    f'{html.escape(detail)}</failure>')
        elif m['verdict'] != 'PASS':
            skips += 1
            body = f'<skipped message={quoteattr("INCONCLUSIVE: " + detail)}/>'
        else:
            body = f'<system-out>{html.escape(detail)}</system-out>'
        cases.append(f'  <testcase classname={cls} name={name}>{body}</testcase>')
    for c in result['canary']:
        if c['verdict'] == 'WARN':
            cases.append(f'  <testcase classname="h5regress.canary" name={quoteattr(c["metric"])}>'
                         f'<system-out>{html.escape(c["reason"])}</system-out></testcase>')
    cases += followup.junit_cases(result)
    if result['overall'] == 'ERROR':
        errors += 1
        cases.append(f'  <testcase classname="h5regress.gate" name="gate"><error message='
                     f'{quoteattr(result.get("error") or "error")}/></testcase>')
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
            f'<testsuite name={quoteattr("h5regress gate " + str(result["night"]))} '
            f'tests="{len(cases)}" failures="{fails}" errors="{errors}" skipped="{skips}">')
    return head + '\n' + '\n'.join(cases) + '\n</testsuite>\n</testsuites>\n'


def write_all(result: Mapping[str, Any], history: hist_mod.History | None,
              outdir: str | Path, ctx: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """report.md, report.html and junit.xml in ``outdir``. Without ``ctx``, tonight's
    records and manifest are looked for where the nightly leaves them, beside
    ``outdir`` (``../perflogs/<attempt>/``, ``../manifest.json``)."""
    outdir = Path(outdir)
    history = history or hist_mod.History()
    ctx = ctx or find_context(result, outdir.parent)
    files = {'md': outdir / 'report.md', 'html': outdir / 'report.html',
             'junit': outdir / 'junit.xml'}
    atomic.write_text(files['md'], markdown(result, ctx))
    atomic.write_text(files['html'], to_html(result, history, ctx))
    atomic.write_text(files['junit'], junit(result))
    return files


def write_index(history: hist_mod.History, outdir: str | Path,
                link: str | None = '{night}/report.html') -> Path:
    """``outdir/index.html``: every night, linked to ``outdir/<night>/report.html`` when
    that report is there."""
    outdir = Path(outdir)
    path = outdir / 'index.html'
    atomic.write_text(path, index_html(history, link, outdir))
    return path


# ------------------------------------------------------------------ CLI
def _parser() -> ArgParser:
    parser = ArgParser(
        prog='h5regress report',
        description="Write the night's report (report.md, report.html, junit.xml) from "
                    "the gate's JSON result and the history; or, with --index, a page "
                    'listing every night of the history (OUT/index.html).')
    parser.add_argument('result', nargs='?', help='gate result JSON (h5regress gate --json)')
    parser.add_argument('--history', help=f'history directory (default ${hist_mod.ENV})')
    parser.add_argument('--config', metavar='GATE_YAML',
                        help=GATE_CONFIG_HELP + ' (read for "history:")')
    parser.add_argument('--out', default='report', help='output directory (./report)')
    parser.add_argument('--perflogs', help="tonight's perflog directory, for where the "
                        'metrics ran (default: perflogs/<attempt> beside the result)')
    parser.add_argument('--manifest', help='the builds manifest (default: manifest.json '
                        'beside the result)')
    parser.add_argument('--index', action='store_true',
                        help='write OUT/index.html of all nights of the history instead; '
                             'each night links to OUT/<night>/report.html when present')
    return parser


def missing_inputs(args: Any) -> list[str]:
    """``--perflogs`` and ``--manifest`` given on the command line that do not exist
    (the report would only lack the "Where" it was asked for)."""
    given = [('--perflogs', args.perflogs), ('--manifest', args.manifest)]
    return [f'{option} {path}: no such file or directory' for option, path in given
            if path is not None and not Path(path).exists()]


def _main_index(args: Any) -> int:
    try:
        hdir = hist_mod.resolve_dir(args.history, load_config(args.config))
        if not hdir:
            raise ValueError(f'--index needs --history or ${hist_mod.ENV}')
        if not Path(hdir).is_dir():
            raise ValueError(f'history {hdir}: no such directory (an index of no night '
                             f'would be an empty page)')
        path = write_index(hist_mod.load(hdir), args.out)
    except (OSError, ValueError, ConfigError) as err:
        print(f'h5regress report: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    print(f'wrote {path}')
    return 0


def main_report(argv: Sequence[str] | None = None) -> int:
    """``h5regress report``: 0 written, 4 error."""
    args, code = parse_args(_parser(), argv)
    if args is None:
        return code
    for problem in missing_inputs(args):
        print(f'h5regress report: error: {problem}', file=sys.stderr)
    if missing_inputs(args):
        return EXIT_ERROR
    if args.index:
        return _main_index(args)
    if not args.result:
        print('h5regress report: error: give the gate result JSON (or --index)',
              file=sys.stderr)
        return EXIT_ERROR
    try:
        result = json.loads(Path(args.result).read_text(encoding='utf-8'))
        if not isinstance(result, dict) or 'metrics' not in result or 'overall' not in result:
            raise ValueError('not a gate result (no "metrics"/"overall")')
        cfg = load_config(args.config)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        history = hist_mod.load(hdir, exclude_night=result['night'])
        ctx = find_context(result, Path(args.result).resolve().parent, args.perflogs,
                           args.manifest)
        files = write_all(result, history, args.out, ctx)
    except (OSError, ValueError, KeyError, ConfigError) as err:
        print(f'h5regress report: error: {args.result}: {err}', file=sys.stderr)
        return EXIT_ERROR
    for f in files.values():
        print(f'wrote {f}')
    return 0
