"""``h5regress report``: the night's report as Markdown, self-contained HTML and JUnit XML.

Input: the gate's result (``h5regress gate --json``) and the history (for the
plots, change points and false-alarm rates). Output in one directory:

* ``report.md``: verdict table and the other tables, for merge requests and mail;
* ``report.html``: the same plus one history plot per gated metric (inline
  SVG: nightly medians of candidate and baseline, the reference envelope, the
  5th-95th percentile band of the history, tonight's run and samples marked).
  No scripts, no external assets: it opens from an artifact store or mail;
* ``junit.xml``: one test case per gated metric (FAIL -> failure,
  INCONCLUSIVE/DEGRADED -> skipped with the reason), for CI test views.
"""

from __future__ import annotations

import html
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from h5regress import atomic
from h5regress import history as hist_mod
from h5regress import stats
from h5regress.cmdline import EXIT_ERROR, ArgParser, parse_args
from h5regress.gateconfig import ConfigError, load_config

_COLORS = {'PASS': '#1a7f37', 'FAIL': '#cf222e', 'INCONCLUSIVE': '#9a6700',
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
    order = {'FAIL': 0, 'INCONCLUSIVE': 1, 'PASS': 2, None: 3}
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
                'ratio = candidate / baseline (Hodges-Lehmann estimate over pairs); ↑ higher '
                'is better, ↓ lower is better; q = Benjamini-Hochberg adjusted one-sided '
                'p-value of a slowdown.'))
    canary = [[c['metric'], c['canary'], _ratio((c['cand'] or {}).get('ratio')),
               _interval((c['cand'] or {}).get('lo'), (c['cand'] or {}).get('hi')),
               _ratio((c['base'] or {}).get('ratio')), c['verdict'] or '–']
              for c in result['canary']]
    out.append(('HDF5 as a fraction of MPI-IO',
                ('metric', 'MPI-IO canary', 'candidate', 'interval', 'baseline', 'verdict'),
                canary, f'WARN below {1 - result["config"]["hdf5_overhead"]:.0%}: worth a look.'))
    ceiling = [[c['metric'], c['fio'], _num(c['hdf5_value']), _num(c['fio_value']),
                _pct(c['fraction'])] for c in result['ceiling']]
    out.append(('HDF5 as a fraction of the fio ceiling',
                ('metric', 'fio ceiling', 'HDF5 (candidate)', 'fio', 'fraction'), ceiling, ''))
    deg = [[d['canary'], _num(d['tonight']), _num(d.get('history_median')),
            _num(d.get('z'), 3), _pct(d.get('drop')), str(d['nights']),
            'DEGRADED' if d['degraded'] else (d.get('note') or 'ok')]
           for d in result['degraded']]
    out.append(('Canaries against their own history',
                ('canary', 'tonight', 'history median', 'robust z', 'drop', 'nights', 'state'),
                deg, ''))
    cps = [[c['metric'], f'{c["from_night"]} → {c["to_night"]}',
            f'{c.get("from_commit") or "?"}..{c.get("to_commit") or "?"}',
            _ratio(c['ratio']), c['direction'], c['cause'], _num(c['p'], 2)]
           for c in result['change_points']]
    out.append(('Change points in the history of main',
                ('metric', 'nights', 'commit range', 'step', 'direction', 'cause', 'p'), cps,
                'Windowed Welch t-test on nightly log medians of the candidate.'))
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
    return out


def _skipped_text(result: Mapping[str, Any]) -> str:
    c = result['counts']
    return (f'{c["records"]} records read; skipped: {c["malformed"]} malformed, '
            f'{c["duplicates"]} duplicate, {c["non_positive"]} non-positive, '
            f'{c["direction_conflicts"]} with a conflicting direction; '
            f'{c["other_build"]} of other builds ignored; {c["perf_fail_samples"]} samples '
            f'outside their reference envelope (perf_fail) kept as samples.')


def _rule(cfg: Mapping[str, Any]) -> str:
    """The verdict rule in words, the same in every format."""
    return (f'FAIL when the slowdown is significant (Benjamini-Hochberg q ≤ {cfg["alpha"]}) '
            f'and its estimate exceeds {cfg["margin"]:.0%}; PASS when the '
            f'{cfg["confidence"]:.0%} interval of the ratio stays above '
            f'{1 - cfg["margin"]:.2f}; otherwise INCONCLUSIVE (more pairs)')


def _title(result: Mapping[str, Any]) -> str:
    return (f'h5regress night {result["night"]}: {result["overall"]} — '
            f'{result["candidate"]} vs {result["baseline"]}')


# ------------------------------------------------------------------ Markdown
def _md_cell(s: str) -> str:
    return str(s).replace('|', '\\|').replace('\n', ' ')


def markdown(result: Mapping[str, Any]) -> str:
    cfg = result['config']
    lines = [f'# {_title(result)}', '',
             f'- candidate: `{result["candidate"]}` at `{result.get("candidate_commit") or "?"}`',
             f'- baseline: `{result["baseline"]}` at `{result.get("baseline_commit") or "?"}`',
             f'- rule: {_rule(cfg)}',
             f'- records: {_skipped_text(result)}']
    if result.get('error'):
        lines.append(f'- **error**: {result["error"]}')
    if result['overall'] == 'DEGRADED':
        lines.append('- **degraded night**: a canary fell far below its history; '
                     'no verdict, rerun.')
    for title, header, rows, note in _tables(result):
        lines += ['', f'## {title}', '']
        if note:
            lines += [note, '']
        if not rows:
            lines.append('(none)')
            continue
        lines.append('| ' + ' | '.join(header) + ' |')
        lines.append('|' + '---|' * len(header))
        for r in rows:
            lines.append('| ' + ' | '.join(_md_cell(c) for c in r) + ' |')
    if result.get('problems'):
        lines += ['', '## Problems (first of them)', '']
        lines += [f'- {_md_cell(p)}' for p in result['problems'][:20]]
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------ SVG
def _series(history: hist_mod.History, m: Mapping[str, Any]) -> dict[str, Any]:
    rows = history.series.get(m['key'], [])
    nights = history.nights
    xs, cand, base = [], [], []
    for x in rows:
        if nights[x['night_index']].get('degraded'):
            continue
        xs.append(nights[x['night_index']]['night'])
        cand.append(x.get('cand_median'))
        base.append(x.get('base_median'))
    return {'nights': xs, 'cand': cand, 'base': base}


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


def svg_plot(m: Mapping[str, Any], history: hist_mod.History, night: str,
             width: int = 640, height: int = 200) -> str:
    s = _series(history, m)
    past = [v for v in s['cand'] if v]
    nights = s['nights'] + [night]
    cand = s['cand'] + [m['cand_median']]
    base = s['base'] + [m['base_median']]
    samples = list(m.get('cand') or [])
    bsamples = list(m.get('base') or [])
    data = [v for v in cand + base + samples + bsamples if v]
    if not data:
        return '<p>(no data)</p>'
    env = m.get('envelope')
    band = (stats.percentile(past, 5), stats.percentile(past, 95)) if len(past) >= 5 else None
    ymin, ymax, pad = _y_range(data, band, env)
    left, right, top, bottom = 64, 12, 22, 30
    pw, ph = width - left - right, height - top - bottom
    n = len(nights)

    inner = pw - 24   # room right of tonight for its samples

    def X(i: float) -> float:
        return left + 8 + (inner * i / (n - 1) if n > 1 else inner / 2)

    def Y(v: float) -> float:
        v = min(max(v, ymin), ymax)
        return top + ph * (1 - (v - ymin) / (ymax - ymin))

    def poly(vals: Sequence[Any], color: str, w: float, dash: str = '') -> str:
        pts = ' '.join(f'{X(i):.1f},{Y(v):.1f}' for i, v in enumerate(vals) if v)
        extra = f' stroke-dasharray="{dash}"' if dash else ''
        return (f'<polyline fill="none" stroke="{color}" stroke-width="{w}"{extra} '
                f'points="{pts}"/>')

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(m["label"])}">',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" '
             f'stroke="#d0d7de"/>']
    if band:
        y1, y2 = Y(band[1]), Y(band[0])
        parts.append(f'<rect x="{left}" y="{y1:.1f}" width="{pw}" height="{max(y2 - y1, 1):.1f}" '
                     f'fill="#54aeff" fill-opacity="0.18"><title>5th-95th percentile of '
                     f'history: {band[0]:.4g} - {band[1]:.4g}</title></rect>')
    if env:
        for v, dash in ((env['low'], '6,4'), (env['high'], '6,4'), (env['ref'], '2,3')):
            if _finite(v) and ymin <= v <= ymax:
                parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(v):.1f}" '
                             f'y2="{Y(v):.1f}" stroke="#8250df" stroke-width="1" '
                             f'stroke-dasharray="{dash}"/>')
    parts.append(poly(base, '#8c959f', 1.2, '3,2'))
    parts.append(poly(cand, '#0969da', 1.6))
    xl = X(n - 1)
    for v in bsamples:
        parts.append(f'<circle cx="{xl - 4:.1f}" cy="{Y(v):.1f}" r="1.6" fill="#8c959f"/>')
    for v in samples:
        parts.append(f'<circle cx="{xl + 4:.1f}" cy="{Y(v):.1f}" r="1.6" fill="#0969da" '
                     f'fill-opacity="0.6"/>')
    color = _COLORS.get(m['verdict'], '#57606a')
    if m['cand_median']:
        parts.append(f'<circle cx="{xl:.1f}" cy="{Y(m["cand_median"]):.1f}" r="5" fill="none" '
                     f'stroke="{color}" stroke-width="2.5"><title>tonight: '
                     f'{m["cand_median"]:.4g}</title></circle>')
    for v in (ymin + pad, (ymin + ymax) / 2, ymax - pad):
        parts.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" font-size="11" '
                     f'text-anchor="end" fill="#57606a">{v:.4g}</text>')
    parts.append(f'<text x="{left}" y="{height - 10}" font-size="11" fill="#57606a">'
                 f'{html.escape(nights[0])}</text>')
    parts.append(f'<text x="{left + pw}" y="{height - 10}" font-size="11" fill="#57606a" '
                 f'text-anchor="end">{html.escape(nights[-1])} (tonight)</text>')
    parts.append(f'<text x="{left}" y="15" font-size="12" fill="#24292f">'
                 f'{html.escape(m["unit"])} — {n} nights</text>')
    parts.append('</svg>')
    return ''.join(parts)


# ------------------------------------------------------------------ HTML
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#24292f;
max-width:1180px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
.note{color:#57606a;font-size:12px}.plot{margin:14px 0}
.legend span{margin-right:14px;font-size:12px;color:#57606a}
"""


def _badge(v: Any) -> str:
    if v in _COLORS and v:
        return f'<span class="badge" style="background:{_COLORS[v]}">{html.escape(v)}</span>'
    return html.escape(str(v))


def to_html(result: Mapping[str, Any], history: hist_mod.History) -> str:
    cfg = result['config']
    e = html.escape
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<title>{e(_title(result))}</title><style>{_CSS}</style></head><body>',
           f'<h1>h5regress night {e(result["night"])} {_badge(result["overall"])}</h1>',
           f'<p>candidate <code>{e(result["candidate"])}</code> at '
           f'<code>{e(str(result.get("candidate_commit") or "?"))}</code> vs baseline '
           f'<code>{e(result["baseline"])}</code> at '
           f'<code>{e(str(result.get("baseline_commit") or "?"))}</code></p>',
           f'<p class="note">{e(_rule(cfg))}. {e(_skipped_text(result))}</p>']
    if result.get('error'):
        out.append(f'<p><b>error:</b> {e(result["error"])}</p>')
    if result['overall'] == 'DEGRADED':
        out.append('<p><b>Degraded night:</b> a canary fell far below its own history; '
                   'no verdict, rerun.</p>')
    for title, header, rows, note in _tables(result):
        out.append(f'<h2>{e(title)}</h2>')
        if note:
            out.append(f'<p class="note">{e(note)}</p>')
        if not rows:
            out.append('<p class="note">(none)</p>')
            continue
        out.append('<table><tr>' + ''.join(f'<th>{e(h)}</th>' for h in header) + '</tr>')
        for r in rows:
            cells = []
            for h, c in zip(header, r):
                if h in ('verdict', 'state') and c in _COLORS:
                    cells.append(f'<td>{_badge(c)}</td>')
                else:
                    cls = ' class="num"' if h in ('baseline', 'candidate', 'ratio', 'pairs',
                                                  'q (BH)', 'tonight', 'fraction') else ''
                    cells.append(f'<td{cls}>{e(str(c))}</td>')
            out.append('<tr>' + ''.join(cells) + '</tr>')
        out.append('</table>')
    gated = _rows(result, 'gated')
    if gated:
        out.append('<h2 id="plots">History of the gated metrics</h2>')
        out.append('<p class="legend"><span style="color:#0969da">━ candidate (main), nightly '
                   'median</span><span style="color:#8c959f">┅ baseline</span>'
                   '<span style="color:#54aeff">▇ 5th–95th percentile of history</span>'
                   '<span style="color:#8250df">╌ reference envelope</span>'
                   '<span>◯ tonight (colour = verdict), dots = tonight\'s samples</span></p>')
        for m in gated:
            out.append(f'<div class="plot"><div><b>{e(m["label"])}</b> {_badge(m["verdict"])} '
                       f'<span class="note">ratio {_ratio(m["ratio"])} '
                       f'{_interval(m["ratio_lo"], m["ratio_hi"])}</span></div>')
            out.append(svg_plot(m, history, result['night']))
            out.append('</div>')
    if result.get('problems'):
        out.append('<h2>Problems</h2><ul>')
        out += [f'<li><code>{e(p)}</code></li>' for p in result['problems'][:20]]
        out.append('</ul>')
    out.append('</body></html>')
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
    if result['overall'] == 'ERROR':
        errors += 1
        cases.append(f'  <testcase classname="h5regress.gate" name="gate"><error message='
                     f'{quoteattr(result.get("error") or "error")}/></testcase>')
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
            f'<testsuite name={quoteattr("h5regress gate " + str(result["night"]))} '
            f'tests="{len(cases)}" failures="{fails}" errors="{errors}" skipped="{skips}">')
    return head + '\n' + '\n'.join(cases) + '\n</testsuite>\n</testsuites>\n'


def write_all(result: Mapping[str, Any], history: hist_mod.History | None,
              outdir: str | Path) -> dict[str, Path]:
    outdir = Path(outdir)
    history = history or hist_mod.History()
    files = {'md': outdir / 'report.md', 'html': outdir / 'report.html',
             'junit': outdir / 'junit.xml'}
    atomic.write_text(files['md'], markdown(result))
    atomic.write_text(files['html'], to_html(result, history))
    atomic.write_text(files['junit'], junit(result))
    return files


# ------------------------------------------------------------------ CLI
def main_report(argv: Sequence[str] | None = None) -> int:
    """``h5regress report``: 0 written, 4 error."""
    parser = ArgParser(
        prog='h5regress report',
        description="Write the night's report (report.md, report.html, junit.xml) from "
                    "the gate's JSON result and the history.")
    parser.add_argument('result', help='gate result JSON (h5regress gate --json)')
    parser.add_argument('--history', help=f'history directory (default ${hist_mod.ENV})')
    parser.add_argument('--config', help="a site's gate config YAML, layered over "
                        'ci/gate.yaml (for "history:")')
    parser.add_argument('--out', default='report', help='output directory (./report)')
    args, code = parse_args(parser, argv)
    if args is None:
        return code
    try:
        result = json.loads(Path(args.result).read_text(encoding='utf-8'))
        if not isinstance(result, dict) or 'metrics' not in result or 'overall' not in result:
            raise ValueError('not a gate result (no "metrics"/"overall")')
        cfg = load_config(args.config)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        history = hist_mod.load(hdir, exclude_night=result['night'])
        files = write_all(result, history, args.out)
    except (OSError, ValueError, KeyError, ConfigError) as err:
        print(f'h5regress report: error: {args.result}: {err}', file=sys.stderr)
        return EXIT_ERROR
    for f in files.values():
        print(f'wrote {f}')
    return 0
