"""The report as self-contained HTML, and the index of all nights."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import history as hist_mod
from h5regress.report.context import (BUILD_COLUMNS, WHERE_COLUMNS, build_rows, collect_context,
                                      where_rows)
from h5regress.report.plots import _fig_html, forest_figure, history_figure, plotly_js
from h5regress.report.text import (MEASURED_RATES, NO_SLOWDOWN_SEEN, WORD_VERDICTS, _COLORS,
                                   _interval, _perf, _ratio, _rows, _rule, _skipped_text, _tables,
                                   _title, blind_spot_text, change_point_text, drawn_interval,
                                   interval_label, short_label, summary, verdict_word)
from h5regress.report.links import anchor, fail_links, links_html, records_href


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
td code.cmd{display:inline-block;white-space:pre-wrap;word-break:break-all;font-size:12px}
#where code.cmd{min-width:32em}#where td:last-child{overflow-wrap:anywhere;min-width:12em}
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
        return (f'<span class="badge" style="background:{_COLORS[v]}" title="{html.escape(v)}">'
                f'{html.escape(verdict_word(v))}</span>')
    return html.escape(str(v))


_NUMERIC = ('baseline', 'candidate', 'ratio', 'pairs', 'q (BH)', 'tonight', 'fraction',
            'history median', 'robust z', 'drop', 'nights')


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], table_id: str = '',
                titles: Mapping[str, str] | None = None) -> str:
    """A table; ``titles`` gives a tooltip to cells of that text (a short label's
    ReFrame name)."""
    e = html.escape
    titles = titles or {}
    tid = f' id="{table_id}"' if table_id else ''
    out = [f'<table{tid}><tr>' + ''.join(f'<th>{e(h)}</th>' for h in header) + '</tr>']
    if any(h in COLUMN_HELP for h in header):
        out.append('<tr class="help">' + ''.join(f'<th>{e(COLUMN_HELP.get(h, ""))}</th>'
                                                 for h in header) + '</tr>')
    for r in rows:
        cells = []
        for h, c in zip(header, r):
            if h in ('verdict', 'state') and WORD_VERDICTS.get(c, c) in _COLORS:
                c = WORD_VERDICTS.get(c, c)
                cells.append(f'<td>{_badge(c)}</td>')
            elif h.startswith('command'):
                cells.append(f'<td><code class="cmd" title="{e(str(c))}">{e(str(c))}</code></td>')
            else:
                cls = ' class="num"' if h in _NUMERIC else ''
                tip = f' title="{e(titles[c])}"' if c in titles else ''
                cells.append(f'<td{cls}{tip}>{e(str(c))}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    out.append('</table>')
    return '\n'.join(out)


def first_screen(result: Mapping[str, Any], ctx: Mapping[str, Any], url: str = '') -> str:
    """Verdict, forest plot of the gated ratios against the margin, and where."""
    e = html.escape
    cfg = result['config']
    out = ['<section id="first-screen">', '<div id="verdict" class="wide">',
           f'<h1>h5regress night {e(str(result["night"]))} {_badge(result["overall"])}</h1>',
           f'<p class="summary">{e(summary(result))}</p>',
           links_html(fail_links(result, ctx, url))]
    if change_point_text(result):
        out.append(f'<p class="summary" id="change-points-summary">'
                   f'<b>⚠</b> {e(change_point_text(result))}</p>')
    if change_point_text(result, 'better'):
        out.append(f'<p class="note" id="change-points-better">'
                   f'{e(change_point_text(result, "better"))}</p>')
    if blind_spot_text(result):
        out.append(f'<p class="summary" id="blind-spots">{e(blind_spot_text(result))}</p>')
    out += ['</div>', '<div class="wide">',
           f'<h3>Tonight per gated metric: ratio and {e(interval_label(result))} interval '
           f'against the margin</h3>']
    if _rows(result, 'gated'):
        out.append(_fig_html(forest_figure(result), 'forest', False))
    else:
        out.append('<div id="forest" class="note">(no gated metric)</div>')
    out.append(f'<p class="note">Each diamond is tonight\'s performance ratio candidate/baseline '
               f'(Hodges-Lehmann estimate over the pairs; time metrics inverted, so below 1 is '
               f'always slower), the bar its {e(interval_label(result))} interval. Red zone: below '
               f'1 − margin ({1 - cfg["margin"]:.2f}). {e(_rule(cfg, rates=False))}.</p>'
               f'<details class="note"><summary>What the verdicts mean in numbers</summary>'
               f'{e(MEASURED_RATES)}</details></div>')
    perf = ''
    href = records_href(ctx)
    if href:
        name = ctx.get('perflogs') or ctx.get('perflogs_dir')
        perf = f'<p class="note">perflogs: <a href="{e(href)}">{e(str(name))}</a></p>'
    out += ['<div><h3>Builds</h3>', _html_table(BUILD_COLUMNS, build_rows(result, ctx), 'builds'),
            perf, f'<p class="note">{e(_skipped_text(result))}</p></div>',
            '<div class="wide"><h3>Where</h3>',
            _html_table(WHERE_COLUMNS, where_rows(result, ctx), 'where',
                        {short_label(m): m['label'] for m in result['metrics']}),
            '</div>', '</section>']
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
                   f'{_interval(*drawn_interval(m))} (tonight)</span></div>')
        out.append(_fig_html(history_figure(m, history, result), f'history-{i}'))
        out.append('</div>')
    return out


def to_html(result: Mapping[str, Any], history: hist_mod.History,
            ctx: Mapping[str, Any] | None = None, url: str = '',
            plotly_src: str | None = None) -> str:
    """The page; ``url``: the HDF5 repository's web URL, for commit links;
    ``plotly_src``: load plotly.js from there (a site's one copy) instead of inlining it."""
    e = html.escape
    ctx = ctx or collect_context(result)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<title>{e(_title(result))}</title><style>{_CSS}</style>',
           f'<script src="{e(plotly_src)}"></script></head><body>' if plotly_src else
           f'<script type="text/javascript">{plotly_js()}</script></head><body>',
           first_screen(result, ctx, url)]
    if result.get('error'):
        out.append(f'<p><b>error:</b> {e(result["error"])}</p>')
    if result['overall'] == 'DEGRADED':
        out.append('<p><b>Degraded night:</b> a canary fell far below its own history; '
                   'no verdict, rerun.</p>')
    for i, (title, header, rows, note) in enumerate(_tables(result)):
        out.append(f'<h2 id="{anchor(title)}">{e(title)}</h2>')
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
                 'gated: FAIL / possible slowdown / no slowdown seen / PASS',
                 'lowest gated ratio [interval]')


def _index_row(night: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    gated = [m for m in metrics if m.get('role') == 'gated']
    counts = ' / '.join(str(sum(m.get('verdict') == v for m in gated))
                        for v in ('FAIL', 'INCONCLUSIVE', NO_SLOWDOWN_SEEN, 'PASS'))
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


