"""The forest plot of tonight and the history plot of each gated metric (plotly)."""

from __future__ import annotations

import math

import html
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress import history as hist_mod
from h5regress import stats
from h5regress.report.text import (NO_SLOWDOWN_SEEN, _COLORS, _finite, _interval, _num, _perf,
                                   _ratio, _rows, interval_label, short_label, verdict_word)


_TEMPLATE = 'none'      # plotly's default template would add ~10 KiB per figure


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
    """The forest's x range in log10 units: ratios multiply, and a log axis keeps 0.7 and
    1.0 apart on a night whose other metric runs 8x faster (a real night, 2026-11-27)."""
    vals = [v for m in gated for v in _perf(m) if _finite(v) and v > 0]
    lo = math.log10(min([floor - 0.03] + vals))
    hi = math.log10(max([1.1] + vals))
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    # 1.0 is at 0: hi / (hi - lo) >= FOREST_RIGHT_OF_ONE
    return lo, max(hi, -FOREST_RIGHT_OF_ONE * lo / (1 - FOREST_RIGHT_OF_ONE))


#: the forest's tick values: on a log axis plotly labels the minor ticks by their first
#: digit, so 0.6 read "6" on a real FAIL night's page (2026-11-27)
_FOREST_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05,
                 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def forest_ticks(xmin: float, xmax: float) -> list[float]:
    """The ticks of a forest whose range is ``[xmin, xmax]`` in log10 units, each
    labelled by its own value; the finest ones dropped first when there are many."""
    ticks = [v for v in _FOREST_TICKS if xmin <= math.log10(v) <= xmax]
    for finest in ((0.95, 1.05), (0.4, 0.6, 0.8, 0.9, 1.1, 1.25)):
        if len(ticks) > 8:
            ticks = [v for v in ticks if v not in finest]
    return ticks


def _forest_hover(m: Mapping[str, Any]) -> str:
    r, lo, hi = _perf(m)
    return (f'<b>{html.escape(short_label(m))}</b><br>{html.escape(m["label"])}<br>'
            f'performance ratio {_ratio(r)} '
            f'{_interval(lo, hi)}<br>medians: baseline {_num(m["base_median"])}, '
            f'candidate {_num(m["cand_median"])} {html.escape(m["unit"])}<br>'
            f'{m["n_pairs"]} pairs, q (BH) {_num(m["q"], 2)}<br>{verdict_word(m["verdict"])}')


def forest_figure(result: Mapping[str, Any]) -> Any:
    """Tonight's ratio and interval per gated metric against 1 - margin and 1."""
    import plotly.graph_objects as go
    gated = _rows(result, 'gated')
    floor = 1 - result['config']['margin']
    xmin, xmax = _forest_range(gated, floor)
    fig = go.Figure()
    for verdict in ('FAIL', 'INCONCLUSIVE', NO_SLOWDOWN_SEEN, 'PASS', None):
        ms = [m for m in gated if m['verdict'] == verdict and _perf(m)[0] is not None]
        if not ms:
            continue
        xs = [_perf(m)[0] for m in ms]
        plus = [(_perf(m)[2] if _perf(m)[2] is not None else 10 ** xmax) - x
                for m, x in zip(ms, xs)]
        minus = [x - (_perf(m)[1] or 10 ** xmin) for m, x in zip(ms, xs)]
        fig.add_trace(go.Scatter(
            x=xs, y=[_wrap(short_label(m)) for m in ms], mode='markers',
            name=verdict_word(verdict),
            marker={'size': 12, 'symbol': 'diamond', 'color': _COLORS.get(verdict)},
            error_x={'type': 'data', 'symmetric': False, 'array': plus, 'arrayminus': minus,
                     'thickness': 2.5, 'width': 7, 'color': _COLORS.get(verdict)},
            hovertext=[_forest_hover(m) for m in ms], hoverinfo='text'))
    fig.add_vrect(x0=10 ** xmin, x1=floor, fillcolor=_COLORS['FAIL'], opacity=0.07, line_width=0)
    fig.add_vline(x=floor, line={'color': _COLORS['FAIL'], 'dash': 'dash', 'width': 2})
    fig.add_vline(x=1.0, line={'color': '#57606a', 'width': 1.5})
    for x, text, anchor, color in ((floor, f'1 − margin = {floor:.2f} ', 'right', _COLORS['FAIL']),
                                   (1.0, ' 1.0 = no change', 'left', '#57606a')):
        # an annotation on a log axis is placed in log10 units (a shape in data units)
        fig.add_annotation(x=math.log10(x), y=1.0, yref='paper', yanchor='bottom',
                           xanchor=anchor,
                           text=text, showarrow=False, font={'color': color, 'size': 12})
    # the numbers in a column right of the plot: beside the diamond they crossed the
    # margin's line whenever the ratio was near it
    for m in gated:
        r, lo, hi = _perf(m)
        fig.add_annotation(
            x=1.0, xref='paper', xanchor='left', xshift=8, y=_wrap(short_label(m)), yref='y',
            showarrow=False, align='left', font={'color': _COLORS.get(m['verdict']), 'size': 12},
            text=f'{_ratio(r)} {_interval(lo, hi)}<br><b>{verdict_word(m["verdict"])}</b>')
    fig.add_annotation(x=1.0, xref='paper', xanchor='left', xshift=8, y=1.0, yref='paper',
                       yanchor='bottom', showarrow=False, align='left',
                       text='ratio [interval]', font={'color': '#57606a', 'size': 12})
    fig.update_layout(
        template=_TEMPLATE, height=130 + 62 * len(gated), showlegend=False,
        margin={'l': 10, 'r': 150, 't': 28, 'b': 50}, font={'size': 13}, hovermode='closest',
        xaxis={'type': 'log', 'range': [xmin, xmax], 'title': {'text': f'performance ratio cand/base, '
               f'{interval_label(result)} interval (an early look decides on a stricter '
               'bound: see hover)',
               'standoff': 8}, 'showgrid': True, 'gridcolor': '#eaeef2',
               'tickvals': forest_ticks(xmin, xmax),
               'ticktext': [f'{v:g}' for v in forest_ticks(xmin, xmax)]},
        yaxis={'automargin': True, 'categoryorder': 'array',
               'categoryarray': [_wrap(short_label(m)) for m in gated],
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
            hovertemplate=f'tonight: candidate median %{{y:.4g}}, {verdict_word(m["verdict"])}'
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

