"""``h5regress publish``: one static site across nights, from the history and the nights.

``SITE/index.html`` lists every gated metric with a sparkline of its nightly
ratio and links to ``SITE/metric/<id>.html`` (the ratio on a commit axis, its
change points, commit links) and to ``SITE/regressions.html`` (every FAIL and
every change point toward slower, with its triage state read from a YAML
file: acknowledged or ignored, who, why). Nights given with ``--night`` (a
nightly's ``--out``: ``gate.json`` and its perflogs) are rendered to
``SITE/nights/<night>/report.html``. plotly.js is written once, as
``SITE/plotly.min.js``, and every page loads it from there.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from h5regress import atomic, creep
from h5regress import history as hist_mod
from h5regress.report.context import find_context
from h5regress.report.links import anchor
from h5regress.report.page import _CSS, _badge, index_html, to_html
from h5regress.report.plots import _fig_html, plotly_js
from h5regress.report.text import _COLORS, _interval, _perf, _ratio, short_label

#: the triage states a regression can be given in the triage file
TRIAGE_STATES = ('acknowledged', 'ignored')


class SiteError(ValueError):
    """Bad input of ``publish``: names the file, key or value."""


def load_triage(path: str | Path | None) -> list[dict[str, Any]]:
    """Entries of the triage YAML: a list of {metric, night, state, who, why}."""
    if path is None or not Path(path).exists():
        return []
    try:
        data = yaml.safe_load(Path(path).read_text(encoding='utf-8')) or []
    except yaml.YAMLError as err:
        raise SiteError(f'{path}: not YAML ({err})') from err
    if not isinstance(data, list):
        raise SiteError(f'{path}: a list of entries expected, got {type(data).__name__}')
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or not {'metric', 'night', 'state'} <= set(entry):
            raise SiteError(f'{path}: entry {i + 1} needs metric, night and state')
        if entry['state'] not in TRIAGE_STATES:
            raise SiteError(f'{path}: entry {i + 1}: state {entry["state"]!r} is not one of '
                            f'{", ".join(TRIAGE_STATES)}')
    return data


def _page(title: str, body: Sequence[str], depth: int = 0) -> str:
    up = '../' * depth
    return '\n'.join(['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
                      f'<title>{html.escape(title)}</title><style>{_CSS}</style>',
                      f'<script src="{up}plotly.min.js"></script></head><body>',
                      f'<p class="note"><a href="{up}index.html">h5regress dashboard</a> · '
                      f'<a href="{up}regressions.html">regressions</a> · '
                      f'<a href="{up}nights.html">all nights</a></p>', *body,
                      '</body></html>'])


def metric_points(history: hist_mod.History, key: str) -> list[dict[str, Any]]:
    """One point per night of a gated metric (degraded nights left out)."""
    out = []
    for x in history.series.get(key, []):
        night = history.nights[x['night_index']]
        if night.get('degraded') or not x.get('ratio'):
            continue
        meta = history.meta(key)
        r, lo, hi = _perf({**x, 'higher_is_better': meta.get('higher_is_better', True)})
        out.append({'night': str(night['night']), 'commit': night.get('candidate_commit') or '?',
                    'r': r, 'lo': lo, 'hi': hi, 'verdict': x.get('verdict')})
    return out


def change_points(points: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> list[dict]:
    """Change points of a metric's nightly performance ratio (Apache Otava)."""
    cc = cfg.get('change_points') or {}
    series = [math.log(p['r']) for p in points]
    if len(series) < 2 * cc.get('min_side', 2):
        return []
    try:
        found = creep.change_points(series, cc.get('window', 30), cc.get('alpha', 0.0003),
                                    -math.log(1 - cfg.get('margin', 0.05)))
    except creep.CreepUnavailable:
        return []
    return [{'index': cp.index, 'night': points[cp.index]['night'],
             'from_commit': points[cp.index - 1]['commit'],
             'to_commit': points[cp.index]['commit'],
             'ratio': math.exp(cp.shift), 'direction': 'better' if cp.shift > 0 else 'worse'}
            for cp in found if 0 < cp.index < len(points)]


def _commit_link(commit: str, url: str) -> str:
    short = html.escape(str(commit)[:12])
    return f'<a href="{html.escape(url)}/commit/{html.escape(commit)}">{short}</a>' \
        if url and commit and commit != '?' else short


def metric_figure(label: str, points: Sequence[Mapping[str, Any]],
                  cps: Sequence[Mapping[str, Any]], margin: float) -> Any:
    """The nightly ratio on a commit axis (one category per night: commit and night)."""
    import plotly.graph_objects as go
    xs = [f'{str(p["commit"])[:8]} {p["night"][5:]}' for p in points]
    fig = go.Figure(go.Scatter(
        x=xs, y=[p['r'] for p in points], mode='lines+markers', name='performance ratio',
        line={'color': '#8c959f', 'width': 1},
        marker={'size': 8, 'color': [_COLORS.get(p['verdict'], '#57606a') for p in points]},
        error_y={'type': 'data', 'symmetric': False, 'color': '#8c959f',
                 'array': [(p['hi'] or p['r']) - p['r'] for p in points],
                 'arrayminus': [p['r'] - (p['lo'] or p['r']) for p in points]},
        customdata=[[p['commit'], p['night'], p['verdict'] or '–'] for p in points],
        hovertemplate='commit %{customdata[0]}<br>night %{customdata[1]}<br>ratio %{y:.3f}'
                      '<br>%{customdata[2]}<extra></extra>'))
    fig.add_hline(y=1.0, line={'color': '#57606a', 'width': 1})
    fig.add_hline(y=1 - margin, line={'color': _COLORS['FAIL'], 'dash': 'dash'},
                  annotation_text=f'1 − margin = {1 - margin:.2f}')
    for c in cps:
        color = _COLORS['FAIL'] if c['direction'] == 'worse' else _COLORS['PASS']
        fig.add_vline(x=c['index'] - 0.5, line={'color': color, 'dash': 'dot', 'width': 2})
        fig.add_annotation(x=c['index'] - 0.5, y=1.0, yref='paper', showarrow=False,
                           xanchor='right', font={'color': color},
                           text=f'change point: {c["direction"]} {abs(1 - c["ratio"]):.1%}')
    fig.update_layout(template='none', height=420, title=label, hovermode='closest',
                      margin={'l': 60, 'r': 20, 't': 50, 'b': 80},
                      yaxis={'title': 'performance ratio cand/base (< 1 slower)'},
                      xaxis={'type': 'category', 'title': 'candidate commit, night',
                             'nticks': 16, 'tickangle': -45})
    return fig


def sparkline(values: Sequence[float], width: int = 160, height: int = 28) -> str:
    """An inline SVG of a series (no script: the index stays light)."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return ''
    lo, hi = min(vals + [0.95]), max(vals + [1.05])
    step = width / (len(vals) - 1)
    pts = ' '.join(f'{i * step:.1f},{height - (v - lo) / (hi - lo) * height:.1f}'
                   for i, v in enumerate(vals))
    one = height - (1 - lo) / (hi - lo) * height
    return (f'<svg class="spark" width="{width}" height="{height}" role="img">'
            f'<line x1="0" x2="{width}" y1="{one:.1f}" y2="{one:.1f}" stroke="#d0d7de"/>'
            f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{pts}"/></svg>')


def metric_page(history: hist_mod.History, key: str, cfg: Mapping[str, Any],
                url: str) -> tuple[str, list[dict[str, Any]], list[dict]]:
    """(HTML, points, change points) of one metric's page."""
    meta = history.meta(key)
    label = short_label({**meta, 'label': meta.get('label') or key})
    points = metric_points(history, key)
    cps = change_points(points, cfg)
    rows = ''.join(f'<tr><td>{html.escape(p["night"])}</td><td>{_commit_link(p["commit"], url)}'
                   f'</td><td class="num">{_ratio(p["r"])} {_interval(p["lo"], p["hi"])}</td>'
                   f'<td>{_badge(p["verdict"])}</td></tr>' for p in reversed(points))
    cp_text = [f'<li>{c["direction"]} {abs(1 - c["ratio"]):.1%} from night {c["night"]}: '
               f'{_commit_link(c["from_commit"], url)}..{_commit_link(c["to_commit"], url)}'
               + (f' (<a href="{html.escape(url)}/compare/{html.escape(c["from_commit"])}...'
                  f'{html.escape(c["to_commit"])}">compare</a>)' if url else '') + '</li>'
               for c in cps]
    body = [f'<h1 title="{html.escape(str(meta.get("label") or key))}">{html.escape(label)}</h1>',
            _fig_html(metric_figure(label, points, cps, cfg.get('margin', 0.05)), 'metric'),
            '<h2>Change points</h2>', '<ul id="change-points">' + ''.join(cp_text) + '</ul>'
            if cps else '<p class="note">none</p>',
            '<h2>Nights</h2><table id="metric-nights"><tr><th>night</th><th>commit</th>'
            f'<th>ratio [interval]</th><th>verdict</th></tr>{rows}</table>']
    return _page(label, body, depth=1), points, cps


def regressions(history: hist_mod.History, cps: Mapping[str, list[dict]],
                triage: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every FAIL of a gated metric and every change point toward slower, with triage."""
    found = []
    for key, rows in history.series.items():
        for x in rows:
            night = history.nights[x['night_index']]
            if x.get('role') == 'gated' and x.get('verdict') == 'FAIL':
                found.append({'key': key, 'night': str(night['night']), 'what': 'FAIL',
                              'commit': night.get('candidate_commit') or '?',
                              'ratio': _perf({**x, 'higher_is_better': history.meta(key).get(
                                  'higher_is_better', True)})[0]})
        for c in cps.get(key, []):
            if c['direction'] == 'worse':
                found.append({'key': key, 'night': c['night'], 'what': 'change point',
                              'commit': c['to_commit'], 'ratio': c['ratio']})
    for r in found:
        meta = history.meta(r['key'])
        r['label'] = short_label({**meta, 'label': meta.get('label') or r['key']})
        r['triage'] = next((t for t in triage if str(t['night']) == r['night'] and
                            t['metric'] in (r['key'], r['label'], meta.get('label'))), None)
    return sorted(found, key=lambda r: (r['night'], r['label']), reverse=True)


def regressions_html(found: Sequence[Mapping[str, Any]], url: str) -> str:
    e = html.escape
    rows = []
    for r in found:
        t = r['triage'] or {}
        state = t.get('state') or 'open'
        rows.append(f'<tr class="triage-{e(state)}"><td>{e(r["night"])}</td>'
                    f'<td><a href="metric/{anchor(r["key"])}.html">{e(r["label"])}</a></td>'
                    f'<td>{e(r["what"])}</td><td class="num">{_ratio(r["ratio"])}</td>'
                    f'<td>{_commit_link(r["commit"], url)}</td><td>{e(state)}</td>'
                    f'<td>{e(str(t.get("who") or ""))}</td><td>{e(str(t.get("why") or ""))}'
                    '</td></tr>')
    head = ''.join(f'<th>{h}</th>' for h in ('night', 'metric', 'what', 'ratio', 'commit',
                                             'triage', 'who', 'why'))
    return _page('h5regress: regressions', [
        '<h1>Regressions</h1>', '<p class="note">Every FAIL of a gated metric and every change '
        'point toward slower. Triage (acknowledged, ignored: who, why) is kept in the triage '
        'YAML file given to <code>h5regress publish --triage</code>.</p>',
        f'<table id="regressions"><tr>{head}</tr>{"".join(rows)}</table>'])


def index_page(history: hist_mod.History, pages: Mapping[str, list[dict[str, Any]]],
               found: Sequence[Mapping[str, Any]]) -> str:
    e = html.escape
    rows = []
    for key, points in sorted(pages.items(), key=lambda kv: short_label(
            {**history.meta(kv[0]), 'label': kv[0]})):
        meta = history.meta(key)
        last = points[-1] if points else {}
        rows.append(f'<tr><td><a href="metric/{anchor(key)}.html" '
                    f'title="{e(str(meta.get("label")))}">'
                    f'{e(short_label({**meta, "label": key}))}</a></td>'
                    f'<td>{sparkline([p["r"] for p in points[-60:]])}</td>'
                    f'<td class="num">{_ratio(last.get("r"))}</td>'
                    f'<td>{_badge(last.get("verdict"))}</td></tr>')
    open_ = sum(1 for r in found if not r['triage'])
    return _page('h5regress dashboard', [
        f'<h1>h5regress: {len(pages)} gated metrics, {len(history.nights)} nights</h1>',
        f'<p class="summary"><a href="regressions.html">{open_} regression(s) not triaged</a>'
        f' of {len(found)}.</p>',
        '<table id="metrics"><tr><th>metric</th><th>performance ratio, last 60 nights</th>'
        f'<th>last ratio</th><th>last verdict</th></tr>{"".join(rows)}</table>'])


def render_night(night_dir: Path, history_dir: str, out: Path, url: str) -> Path:
    """A nightly's ``--out`` (its gate.json) as ``out/nights/<night>/report.html``."""
    gate_json = night_dir / 'gate.json'
    try:
        result = json.loads(gate_json.read_text(encoding='utf-8'))
    except (OSError, ValueError) as err:
        raise SiteError(f'--night {night_dir}: no readable gate.json ({err})') from err
    if not isinstance(result, dict) or 'metrics' not in result or 'night' not in result:
        raise SiteError(f'{gate_json}: not a gate result (no "metrics"/"night")')
    history = hist_mod.load(history_dir, exclude_night=result['night'])
    path = out / 'nights' / str(result['night']) / 'report.html'
    ctx = {**find_context(result, night_dir), 'link_base': str(path.parent.resolve())}
    page = to_html(result, history, ctx, url, plotly_src='../../plotly.min.js')
    atomic.write_text(path, page)
    return path


def publish(history_dir: str, out: str | Path, nights: Sequence[str | Path] = (),
            triage_file: str | Path | None = None, cfg: Mapping[str, Any] | None = None,
            url: str = '') -> list[Path]:
    """Write the site; returns the files written."""
    out = Path(out)
    if not Path(history_dir).is_dir():
        raise SiteError(f'history {history_dir}: no such directory')
    cfg = cfg or {}
    triage = load_triage(triage_file)
    history = hist_mod.load(history_dir)
    written = [out / 'plotly.min.js']
    atomic.write_text(written[0], plotly_js())
    written += [render_night(Path(n), history_dir, out, url) for n in nights]
    pages, cps = {}, {}
    gated = [k for k, rows in history.series.items() if any(x.get('role') == 'gated'
                                                          for x in rows)]
    for key in gated:
        page, pages[key], cps[key] = metric_page(history, key, cfg, url)
        written.append(out / 'metric' / f'{anchor(key)}.html')
        atomic.write_text(written[-1], page)
    found = regressions(history, cps, triage)
    for name, text in (('regressions.html', regressions_html(found, url)),
                       ('index.html', index_page(history, pages, found)),
                       ('nights.html', index_html(history, 'nights/{night}/report.html', out))):
        written.append(out / name)
        atomic.write_text(written[-1], text)
    return written

