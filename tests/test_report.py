"""h5regress report: content of the Markdown, HTML and JUnit; the HTML in headless Chromium."""

import copy
import json
import math
import random
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
import re
from html import escape as html_escape
from html import unescape as html_unescape
from html.parser import HTMLParser

import pytest

from h5regress import gate, history, refs, report
from h5regress.record import Record
from h5regress.report import text as report_text

BASE, CAND = 'hdf5-1.14.6', 'hdf5-develop'


def night(n_night, ratio_slow=1.0, seed=0):
    rng = random.Random(seed)
    s = math.sqrt(math.log1p(0.08 ** 2))
    recs = []

    def add(tool, api, metric, level, ratio, pairs, op='write', layout='ssf'):
        params = {'api': api, 'preset': 'collective', 'layout': layout}
        for p in range(pairs):
            for build, r in ((BASE, 1.0), (CAND, ratio)):
                recs.append(Record(
                    tool=tool, operation=op, metric=metric,
                    value=level * r * math.exp(rng.gauss(0, s)), unit='MiB/s',
                    higher_is_better=True, params=params,
                    provenance={'hdf5_commit': 'b0' if build == BASE else f'c{n_night}'},
                    hdf5_build=build, config_hash=f'{tool}-{api}-{op}-{layout}', run_id=f'{p}-{build}',
                    timestamp=f'2025-03-{n_night:02d}T03:00:00+00:00',
                    test='ior_check_0a1b2c3d', system='local:default',
                    pair_id=f'{n_night}-{p}'))

    add('ior', 'HDF5', 'bw_max', 900.0, ratio_slow, 20)
    add('ior', 'HDF5', 'bw_max', 1200.0, 1.0, 20, layout='fpp')
    add('ior', 'MPIIO', 'bw_max', 1000.0, 1.0, 6)
    add('ior', 'HDF5', 'bw_mean', 1100.0, 1.0, 20)
    add('fio', '-', 'bw', 2000.0, 1.0, 3)
    return recs


@pytest.fixture(scope='module')
def gated_night(tmp_path_factory):
    root = tmp_path_factory.mktemp('report')
    hdir = root / 'hist'
    cfg = gate.load_config()
    for k in range(1, 15):
        res = gate.run_gate(night(k, seed=k), BASE, CAND, cfg, history=history.load(hdir))
        history.write_night(hdir, *gate.history_lines(res))
    (root / 'refs').mkdir()
    (root / 'refs' / 'ior.yaml').write_text(
        "ior_check:\n  $index: ['$partition', 'case']\n  'local:default':\n"
        "    '.*':\n      write_bw_max: [900, -0.2, 0.2, 'MiB/s']\n")
    hist = history.load(hdir)
    res = gate.run_gate(night(15, ratio_slow=0.7, seed=15), BASE, CAND, cfg, history=hist,
                        references=refs.References.load([root / 'refs']))
    res = json.loads(gate.dumps(res))     # what the report reads: the JSON file
    files = report.write_all(res, hist, root / 'out')
    return res, files, root


def test_markdown_has_verdict_table_and_sections(gated_night):
    res, files, _ = gated_night
    md = files['md'].read_text()
    assert md.startswith('# h5regress night 2025-03-15: FAIL')
    assert '| metric | system | baseline | candidate | unit | ratio | 95% interval |' in md
    fail_row = next(line for line in md.splitlines() if 'write bw_max' in line
                    and 'FAIL' in line)
    assert '0.7' in fail_row and 'below (worse)' in fail_row
    for section in ('HDF5 as a fraction of MPI-IO', 'HDF5 as a fraction of the fio ceiling',
                    'Canaries against their own history', 'Change points in the history of main',
                    'False alarms', 'Reported, not gated'):
        assert f'## {section}' in md
    assert 'bw_mean' in md.split('## Reported, not gated')[1]


class _Tags(HTMLParser):
    """Start tags with their attributes, and the text of inline scripts."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == 'script'
        if self._in_script:
            self.scripts.append('')

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != 'script'

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def _tags(html):
    parser = _Tags()
    parser.feed(html)
    return parser


def test_html_is_self_contained_with_plots(gated_night):
    res, files, _ = gated_night
    html = files['html'].read_text()
    assert html.startswith('<!DOCTYPE html>')
    # plotly: scripts, all inline, plotly.js once (was: no <script> at all, no
    # 'http://'/'src=' anywhere; plotly.js has those strings in its code)
    parsed = _tags(html)
    for tag, attrs in parsed.tags:
        assert tag != 'link' and 'src' not in attrs, (tag, attrs)
        assert not str(attrs.get('href', '')).startswith(('http:', 'https:', '//')), attrs
    assert sum('Plotly.newPlot' not in s and 'plotly.js v' in s for s in parsed.scripts) == 1
    assert len(html) < 6_000_000
    n_gated = sum(m['role'] == 'gated' for m in res['metrics'])
    # was: one <svg> per gated metric
    assert sum(attrs.get('id', '').startswith('history-') for _, attrs in parsed.tags) \
        == n_gated == 2
    assert '(tonight)' in html and '5th-95th percentile' in html
    # the reference envelope (was: its SVG dash pattern)
    assert '"name":"reference envelope"' in html


def _section(html, tag_id):
    """The HTML of the element with that id (up to its closing tag at the same depth)."""
    start = html.index(f'id="{tag_id}"')
    start = html.rindex('<', 0, start)
    name = html[start + 1:].split()[0]
    depth, pos = 0, start
    while True:
        nxt = re.compile(rf'<(/?){name}[\s>]').search(html, pos)
        depth += -1 if nxt.group(1) else 1
        pos = nxt.end()
        if depth == 0:
            return html[start:pos]


def test_first_screen_holds_verdict_forest_and_where(gated_night):
    res, files, _ = gated_night
    html = files['html'].read_text()
    first = _section(html, 'first-screen')
    assert html.index('id="first-screen"') < html.index('<h2')   # before every table
    assert 'class="badge"' in first and '>FAIL</span>' in first.split('</h1>')[0]
    assert '1 of 2 gated metrics slower' in first
    assert 'id="forest"' in first and 'Plotly.newPlot' in first
    where = _section(html, 'where')
    for col in report.WHERE_COLUMNS:
        assert f'<th>{col}</th>' in where
    assert where.count('<tr>') == 1 + 2        # header and the two gated metrics
    builds = _section(html, 'builds')
    assert 'hdf5-1.14.6' in builds and '>b0<' in builds and '>c15<' in builds
    assert '<th>median of its runs</th>' in html     # the columns say what they are
    # the forest plot: tonight's ratio and interval per gated metric, 1 - margin and 1.0
    fig = report.forest_figure(res)
    xs = sorted(x for t in fig.data for x in t.x)
    gated = [m for m in res['metrics'] if m['role'] == 'gated']
    assert xs == sorted(m['ratio'] for m in gated)
    lines = sorted(s.x0 for s in fig.layout.shapes if s.type == 'line')
    assert lines == [pytest.approx(0.95), 1.0]
    fail = next(t for t in fig.data if t.name == 'FAIL')
    m = next(m for m in gated if m['verdict'] == 'FAIL')
    # the interval the verdict read: adjusted for the night's 2 gated metrics (issue 25)
    assert fail.x[0] - fail.error_x.arrayminus[0] == pytest.approx(m['interval']['ratio_lo'])
    assert fail.x[0] + fail.error_x.array[0] == pytest.approx(m['interval']['ratio_hi'])


def _with_provenance(recs):
    for r in recs:
        r.provenance.update({'nodelist': 'n01,n02', 'fs_type': 'lustre',
                             'command_line': f'ior -a HDF5 -o /scratch/{r.run_id}',
                             'files': [{'size_bytes': 3 * 2 ** 30}]})
        r.params['num_nodes'], r.params['num_ranks'] = 2, 64
    return recs


def test_where_reads_the_records_and_standin_builds_are_labelled(gated_night, tmp_path):
    res, _, root = gated_night
    ctx = report.collect_context(res, _with_provenance(night(15, ratio_slow=0.7, seed=15)))
    rows = report.where_rows(res, ctx)
    assert len(rows) == 2
    assert all(r[1:6] == ['local:default', '2 × 64', 'n01,n02', 'lustre', '3.0 GiB']
               for r in rows)
    assert rows[0][6].startswith('ior -a HDF5')
    assert not ctx['standin'] and report.build_rows(res, ctx)[1][2] == 'c15'
    # a stand-in night: the commit is this repository's, and says so
    man = {'spack_version': 'none (stand-in)', 'builds': {
        b: {'hdf5': {'commit': 'abc123', 'variants': 'stand-in: the HDF5 on this machine'}}
        for b in ('hdf5-standin-a', 'hdf5-standin-b')}}
    sres = {**res, 'baseline': 'hdf5-standin-a', 'candidate': 'hdf5-standin-b',
            'baseline_commit': 'abc123', 'candidate_commit': 'abc123'}
    (tmp_path / 'manifest.json').write_text(json.dumps(man))
    sctx = report.find_context(sres, tmp_path)
    assert sctx['standin']
    label = "stand-in (this repository's commit) abc123"
    assert [r[2] for r in report.build_rows(sres, sctx)] == [label, label]
    files = report.write_all(sres, history.load(root / 'hist'), tmp_path / 'report')
    md, html = files['md'].read_text(), files['html'].read_text()
    assert f'at `{label}`' in md and '`abc123`' not in md
    assert label.replace("'", '&#x27;') in _section(html, 'builds')


def test_index_lists_every_night(gated_night, tmp_path):
    _, files, root = gated_night
    hist = history.load(root / 'hist')
    (tmp_path / '2025-03-03').mkdir()
    (tmp_path / '2025-03-03' / 'report.html').write_text(files['html'].read_text())
    rc = report.main_report(['--index', '--history', str(root / 'hist'), '--out', str(tmp_path)])
    assert rc == 0
    page = (tmp_path / 'index.html').read_text()
    table = _section(page, 'nights')
    assert table.count('<tr>') == 1 + len(hist) == 15
    for n in hist.night_ids():
        assert f'>{n}<' in table
    assert table.count('<a href=') == 1 and 'href="2025-03-03/report.html"' in table
    assert table.index('2025-03-14') < table.index('2025-03-01')      # newest first
    assert '<script' not in page
    assert report.main_report(['--index', '--out', str(tmp_path)]) == 4   # no history




def test_junit(gated_night):
    res, files, _ = gated_night
    root = ET.parse(files['junit']).getroot()
    suite = root.find('testsuite')
    cases = suite.findall('testcase')
    assert len([c for c in cases if c.get('classname') == 'h5regress.gate.ior']) == 2
    failures = [c for c in cases if c.find('failure') is not None]
    assert len(failures) == 1 and 'write bw_max' in failures[0].get('name')
    assert suite.get('failures') == '1'


def test_junit_degraded_and_error():
    res = {'night': 'n', 'overall': 'DEGRADED', 'metrics': [
        {'role': 'gated', 'label': 'x', 'tool': 'ior', 'verdict': 'FAIL', 'ratio': 0.5,
         'ratio_lo': 0.4, 'ratio_hi': 0.6, 'n_pairs': 20, 'q': 0.001, 'reason': 'r'}],
        'canary': []}
    suite = ET.fromstring(report.junit(res)).find('testsuite')
    assert suite.get('failures') == '0' and suite.get('skipped') == '1'
    res['overall'], res['metrics'], res['error'] = 'ERROR', [], 'nothing to gate'
    suite = ET.fromstring(report.junit(res)).find('testsuite')
    assert suite.get('errors') == '1'


def test_report_cli(gated_night, tmp_path):
    res, _, root = gated_night
    (tmp_path / 'g.json').write_text(json.dumps(res))
    rc = report.main_report([str(tmp_path / 'g.json'), '--history', str(root / 'hist'),
                             '--out', str(tmp_path / 'rep')])
    assert rc == 0
    assert {p.name for p in (tmp_path / 'rep').iterdir()} == {'report.md', 'report.html',
                                                              'junit.xml', 'summary.md'}
    (tmp_path / 'bad.json').write_text('{"x": 1}')
    assert report.main_report([str(tmp_path / 'bad.json'), '--out', str(tmp_path)]) == 4
    assert report.main_report([str(tmp_path / 'none.json')]) == 4


def _png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of a non-interlaced 8-bit PNG."""
    data = path.read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat, width = 8, b'', None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, color = struct.unpack('>IIBB', chunk[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b'IDAT':
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def test_html_renders_in_headless_chromium(gated_night, tmp_path):
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    if not browser:
        pytest.skip('chromium not installed (apt-get install -y chromium)')
    _, files, _ = gated_night
    shot = tmp_path / 'report.png'
    proc = subprocess.run(
        [browser, '--headless', '--no-sandbox', '--disable-gpu',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--no-first-run', f'--screenshot={shot}', '--window-size=1200,2000',
         f'file://{files["html"]}'], capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    width, height, bpp, rows = _png_pixels(shot)
    assert (width, height) == (1200, 2000)

    def count(pred):
        n = 0
        for row in rows[::4]:
            for x in range(0, width * bpp, bpp * 4):
                n += pred(row[x], row[x + 1], row[x + 2])
        return n

    # the FAIL badge (#cf222e), the NO-SLOWDOWN-SEEN badges and the plot's candidate line
    # (#0969da) are drawn; dark text on white
    assert count(lambda r, g, b: r > 190 and g < 60 and b < 70) > 5
    assert count(lambda r, g, b: r < 40 and 80 < g < 130 and b > 190) > 5
    assert count(lambda r, g, b: r < 80 and g < 80 and b < 80) > 200


def test_report_cli_bad_config_is_an_error(gated_night, tmp_path, capsys):
    res, _, root = gated_night
    (tmp_path / 'g.json').write_text(json.dumps(res))
    (tmp_path / 'site.yaml').write_text('histroy: /somewhere\n')
    assert report.main_report([str(tmp_path / 'g.json'), '--config',
                               str(tmp_path / 'site.yaml'), '--out', str(tmp_path)]) == 4
    assert "site.yaml: unknown key 'histroy'" in capsys.readouterr().err


def _with_change_point(res):
    """The gate's result with a change point of the FAIL metric (as gate._change_points
    writes it) between the history's nights 2025-03-10 and 2025-03-11."""
    m = next(m for m in res['metrics'] if m['role'] == 'gated' and m['verdict'] == 'FAIL')
    cp = {'metric': m['label'], 'key': m['key'], 'from_night': '2025-03-10',
          'to_night': '2025-03-11', 'from_commit': 'c10', 'to_commit': 'c11',
          'ratio': 0.94, 'p': 1e-4, 'direction': 'worse', 'cause': 'candidate'}
    return {**res, 'change_points': [cp]}, m


def _night_names(hist, res):
    return [str(n['night']) for n in hist.nights] + [str(res['night'])]


def test_a_change_point_is_in_the_first_screen_and_on_its_history_plot(gated_night):
    """A creep fails no single night: the first screen says where the history moved
    (was: only in a table below the plots), and its metric's plot marks the night."""
    res, _, root = gated_night
    res, m = _with_change_point(res)
    hist = history.load(root / 'hist')
    page = report.to_html(res, hist)
    verdict = _section(page, 'verdict')
    assert 'id="change-points-summary"' in verdict
    text = report.change_point_text(res)
    assert '6.0% slower from night 2025-03-10 → 2025-03-11' in text
    assert 'candidate commits c10..c11' in text and m['label'] in text
    assert text in report.markdown(res)
    assert report.change_point_text({**res, 'change_points': []}) == ''
    assert report.change_point_text(res, 'better') == ''
    # toward faster: news, not a warning (an A/A history raises both about equally often)
    better = {**res, 'change_points': [{**res['change_points'][0], 'direction': 'better',
                                        'ratio': 1.06}]}
    assert report.change_point_text(better) == ''
    assert '6.0% faster from night 2025-03-10' in report.change_point_text(better, 'better')
    page_b = report.to_html(better, hist)
    assert 'id="change-points-summary"' not in page_b
    assert 'id="change-points-better"' in _section(page_b, 'verdict')
    fig = report.history_figure(m, hist, res)
    marks = [s for s in fig.layout.shapes if s.name and s.name.startswith('change point')]
    nights = _night_names(hist, res)
    assert [s.x0 for s in marks] == [nights.index('2025-03-11') - 0.5]
    assert any('change point: worse 6.0% from 2025-03-11' in a.text
               for a in fig.layout.annotations)
    other = next(x for x in res['metrics'] if x['role'] == 'gated' and x is not m)
    assert not [s for s in report.history_figure(other, hist, res).layout.shapes
                if s.name and s.name.startswith('change point')]


def test_fail_sentence_says_the_slowdown_in_words(gated_night):
    res, _, _ = gated_night
    m = next(m for m in res['metrics'] if m['role'] == 'gated' and m['verdict'] == 'FAIL')
    text = report.summary(res)
    # was: 'ior_check HDF5-collective-ssf write bw_max [ior-HD] (ratio 0.682 [0.628, 0.722])'
    iv = m['interval']      # the interval the verdict read (issue 25)
    assert (f'ior HDF5-collective-ssf write bw_max: writes take {1 / m["ratio"]:.2f}x as long '
            f'(performance {(1 - iv["ratio_hi"]) * 100:.0f}-{(1 - iv["ratio_lo"]) * 100:.0f} % '
            f'lower), 20 pairs; the verdict used the upper bound {m["fail_bound"]:.3f} at 95 %'
            ) in text
    assert m['label'] not in text


def test_first_screen_uses_short_labels_wide_forest_and_full_where(gated_night):
    res, files, _ = gated_night
    html = files['html'].read_text()
    first = _section(html, 'first-screen')
    fig = report.forest_figure(res)
    assert set(fig.layout.yaxis.categoryarray) == {'ior HDF5-collective-ssf write<br>bw_max',
                                                   'ior HDF5-collective-fpp write<br>bw_max'}
    assert '<div class="wide">\n<h3>Tonight per gated metric' in first
    where = _section(html, 'where')
    assert '<th>Spack spec (candidate HDF5)</th>' in where
    label = next(m['label'] for m in res['metrics'] if m['role'] == 'gated')
    assert f'title="{html_escape(label)}"' in where
    assert 'text-overflow:ellipsis' not in html


def test_forest_numbers_stand_beside_the_plot(gated_night):
    """Ratio, interval and verdict of each row in a column right of the plot (was: text
    beside the diamond, crossed by the margin's line when the ratio was near it)."""
    res, _, _ = gated_night
    fig = report.forest_figure(res)
    assert all(t.mode == 'markers' for t in fig.data)
    right = [a.text for a in fig.layout.annotations if a.xref == 'paper' and a.x == 1.0]
    for m in (m for m in res['metrics'] if m['role'] == 'gated'):
        assert any(t.startswith(f'{m["ratio"]:.3f} [{m["interval"]["ratio_lo"]:.3f}, ') and
                   f'<b>{report.verdict_word(m["verdict"])}</b>' in t for t in right), \
            (m['label'], right)


def test_forest_keeps_room_for_the_no_change_label_on_a_night_far_below_one(gated_night,
                                                                             monkeypatch):
    """A real injected night (ratio 0.077 [0.062, 0.098]) ended the x axis at 1.15: the
    label "1.0 = no change", written right of 1.0, ran into the column header
    "ratio [interval]". The axis now keeps FOREST_RIGHT_OF_ONE of its width right of 1
    (a log axis since 2026-11-27: its range is in log10 units, 1.0 at 0)."""
    res, _, _ = gated_night
    far = copy.deepcopy(res)
    for m in far['metrics']:
        if m['role'] == 'gated':
            m.update(ratio=0.077, ratio_lo=0.062, ratio_hi=0.098, perf_ratio=0.077,
                     perf_lo=0.062, perf_hi=0.098, interval=None)
    near = copy.deepcopy(res)
    for m in near['metrics']:
        if m['role'] == 'gated':
            m.update(ratio=1.0, ratio_lo=0.96, ratio_hi=1.04, perf_ratio=1.0, perf_lo=0.96,
                     perf_hi=1.04, interval=None)
    for night in (far, res, near):
        xmin, xmax = report.forest_figure(night).layout.xaxis.range
        # a quarter of the width holds the label (the simulated FAIL night's 0.31 did)
        assert xmax / (xmax - xmin) >= 0.25, (xmin, xmax)
    # a night near 1 keeps the range its data give
    kept = report.forest_figure(near).layout.xaxis.range
    monkeypatch.setattr(report.plots, 'FOREST_RIGHT_OF_ONE', 0.0)
    assert report.forest_figure(near).layout.xaxis.range == kept
    assert report.forest_figure(far).layout.xaxis.range[1] < math.log10(1.3)


def test_forest_keeps_a_slowdown_apart_from_one_beside_a_metric_8x_faster(gated_night):
    """The real night of 2026-11-27: flush-datasets ran 8.5x faster on the candidate, and
    on a linear axis compound-subset's 0.697 [0.674, 0.728] sat a few pixels from 1."""
    res, _, _ = gated_night
    night = copy.deepcopy(res)
    gated = [m for m in night['metrics'] if m['role'] == 'gated']
    gated[0].update(ratio=8.5, ratio_lo=6.8, ratio_hi=10.2, perf_ratio=8.5, perf_lo=6.8,
                    perf_hi=10.2, interval=None)
    xmin, xmax = report.forest_figure(night).layout.xaxis.range
    assert (0 - math.log10(0.697)) / (xmax - xmin) > 0.08   # of the axis's width
    # a log axis places annotations in log10 units: "1.0 = no change" at 0, not at 1 (10x)
    fig = report.forest_figure(night)
    at = {a.text.strip(): a.x for a in fig.layout.annotations if a.xref in (None, 'x')}
    assert at['1.0 = no change'] == 0 and at['1 − margin = 0.95'] == math.log10(0.95)


def test_first_screen_keeps_the_measured_rates_folded(gated_night):
    """The rule in one paragraph; its measured rates behind a <details> (were a
    ten-line block of grey text in the first screen)."""
    _, files, _ = gated_night
    first = _section(files['html'].read_text(), 'first-screen')
    rates = html_escape(report.MEASURED_RATES)
    assert first.count(rates) == 1
    details = first[first.index('<details'):first.index('</details>')]
    assert rates in details


def _quiet_night(res, verdict, sensitivities=(0.12, 0.08)):
    """The FAIL night turned into an unchanged night the gate judged ``verdict``."""
    quiet = copy.deepcopy(res)
    quiet['overall'] = verdict
    gated = [m for m in quiet['metrics'] if m['role'] == 'gated']
    for m, s in zip(gated, sensitivities):
        m.update(verdict=verdict, sensitivity=s, ratio=1.01, ratio_lo=0.97, ratio_hi=1.05,
                 perf_ratio=None, slower=False)
    return quiet


def test_no_slowdown_seen_is_told_apart_from_a_possible_slowdown(gated_night):
    res, _, _ = gated_night
    quiet = _quiet_night(res, 'NO-SLOWDOWN-SEEN')
    text = report.summary(quiet)
    assert text.startswith("no slowdown seen: no slowdown detected at tonight's sensitivity: "
                           'a slowdown of 12 % or more would have been seen')
    for m in (m for m in quiet['metrics'] if m['role'] == 'gated'):
        assert m['label'] not in text and report_text.short_label(m) in text, 'short labels only'
    page = report.to_html(quiet, history.History())
    head = _section(page, 'first-screen').split('</h1>')[0]
    assert 'background:#0969da' in head and '>no slowdown seen</span>' in head
    assert '| 12 % | no slowdown seen |' in report.markdown(quiet)
    suite = ET.fromstring(report.junit(quiet)).find('testsuite')
    assert suite.get('skipped') == '0' and suite.get('failures') == '0'
    maybe = _quiet_night(res, 'INCONCLUSIVE')
    assert report.summary(maybe).startswith('possible slowdown: ')
    head = _section(report.to_html(maybe, history.History()), 'first-screen').split('</h1>')[0]
    assert 'background:#9a6700' in head and '>possible slowdown</span>' in head
    suite = ET.fromstring(report.junit(maybe)).find('testsuite')
    assert suite.get('skipped') == '2'


def test_every_fail_links_to_what_explains_it(gated_night, tmp_path):
    res, _, root = gated_night
    res = copy.deepcopy(res)
    fail = next(m for m in res['metrics'] if m['verdict'] == 'FAIL')
    res['darshan'] = {'available': True, 'metrics': [
        {'metric': fail['key'], 'counters': 3, 'changes': []}]}
    recs = _with_provenance(night(15, ratio_slow=0.7, seed=15))
    for r in recs:
        r.provenance['job_script'] = f'/stage/{r.run_id}/rfm_job.sh'
    ctx = report.collect_context(res, recs, perflogs='perflogs/a1')
    files = report.write_all(res, history.load(root / 'hist'), tmp_path / 'rep', ctx,
                             'https://github.com/HDFGroup/hdf5')
    page = files['html'].read_text()
    links = _section(page, 'fail-links')
    hrefs = re.findall(r'href="([^"]+)"', links)
    assert hrefs[0] == '#history-0' and 'id="history-0"' in page
    darshan = next(h for h in hrefs if 'darshan' in h)
    assert f'id="{darshan[1:]}"' in page
    assert '../perflogs/a1/' in hrefs
    assert any(h.endswith('/rfm_job.sh') for h in hrefs)
    assert any(h.endswith('/rfm_job.out') for h in hrefs)
    assert 'https://github.com/HDFGroup/hdf5/commit/c15' in hrefs
    assert 'https://github.com/HDFGroup/hdf5/compare/b0...c15' in hrefs
    assert "ci/run-suite -n '^ior_check' -E" in html_unescape(links) and 'h5regress bisect --good b0 --bad c15' \
        in links
    md = files['md'].read_text()
    assert '[compare](https://github.com/HDFGroup/hdf5/compare/b0...c15)' in md
    rc = report.main_report([str(root / 'none.json'), '--repo-url', 'x'])
    assert rc == 4


def test_merge_request_summary_fits_sixty_columns(gated_night, tmp_path):
    res, files, _ = gated_night
    text = (files['md'].parent / 'summary.md').read_text()
    assert max(len(line) for line in text.splitlines()) < 60
    assert text.startswith('### h5regress 2025-03-15: FAIL')
    assert '- FAIL: ior HDF5-collective-ssf write bw_max: writes take' in text
    assert 'no slowdown seen: ior HDF5-collective-fpp write' in ' '.join(text.split())
    quiet = report.summary_markdown(_quiet_night(res, 'NO-SLOWDOWN-SEEN'))
    assert max(len(line) for line in quiet.splitlines()) < 60
    assert 'a slowdown of 12 % or more' in ' '.join(quiet.split())


def test_publish_writes_one_site_with_triage_and_plotly_once(gated_night, tmp_path):
    res, _, root = gated_night
    hdir = tmp_path / 'hist'
    shutil.copytree(root / 'hist', hdir)
    history.write_night(hdir, *gate.history_lines(res))       # the FAIL night, 15th
    nightdir = tmp_path / 'night15'
    nightdir.mkdir()
    (nightdir / 'gate.json').write_text(json.dumps(res))
    fail = next(m for m in res['metrics'] if m['verdict'] == 'FAIL')
    (tmp_path / 'triage.yaml').write_text(
        f"- {{metric: '{fail['key']}', night: '2025-03-15', state: acknowledged, who: ana,\n"
        "   why: known HDF5 change}\n")
    site = tmp_path / 'site'
    rc = report.main_publish(['--history', str(hdir), '--out', str(site), '--night',
                              str(nightdir), '--triage', str(tmp_path / 'triage.yaml'),
                              '--repo-url', 'https://github.com/HDFGroup/hdf5'])
    assert rc == 0
    pages = list(site.rglob('*.html'))
    assert sum('plotly.js v' in p.read_text() for p in pages) == 0
    assert 'plotly.js v' in (site / 'plotly.min.js').read_text()
    night_page = (site / 'nights' / '2025-03-15' / 'report.html').read_text()
    assert '<script src="../../plotly.min.js">' in night_page and len(night_page) < 400_000
    index = (site / 'index.html').read_text()
    assert index.count('<svg class="spark"') == 2 and 'metric/' in index
    regs = _section((site / 'regressions.html').read_text(), 'regressions')
    row = next(r for r in regs.split('<tr') if '2025-03-15' in r and 'FAIL' in r)
    assert 'acknowledged' in row and 'ana' in row and 'known HDF5 change' in row
    metric = next((site / 'metric').glob('*.html')).read_text()
    assert 'candidate commit, night' in metric
    assert 'https://github.com/HDFGroup/hdf5/commit/c15' in metric + regs
    (tmp_path / 'bad.yaml').write_text('- {metric: x, night: y, state: maybe}\n')
    assert report.main_publish(['--history', str(hdir), '--out', str(site),
                                '--triage', str(tmp_path / 'bad.yaml')]) == 4
    assert report.main_publish(['--history', str(tmp_path / 'none'), '--out', str(site)]) == 4
    assert report.main_publish(['--out', str(site)]) == 64     # no --history: usage


def _shoot(html_path, png, size='1200,1400'):
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    if not browser:
        pytest.skip('chromium not installed (apt-get install -y chromium)')
    proc = subprocess.run(
        [browser, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--no-first-run', '--virtual-time-budget=5000', f'--screenshot={png}',
         f'--window-size={size}', html_path.resolve().as_uri()],
        capture_output=True, text=True, timeout=180)
    assert png.exists(), proc.stderr[-2000:]
    width, _, bpp, rows = _png_pixels(png)

    def count(pred):
        return sum(pred(row[x], row[x + 1], row[x + 2])
                   for row in rows[::4] for x in range(0, width * bpp, bpp * 4))
    return count


def test_fail_unchanged_and_dashboard_in_headless_chromium(gated_night, tmp_path):
    """Screenshots of a FAIL night, an unchanged night and the dashboard."""
    res, files, root = gated_night
    red = lambda r, g, b: r > 190 and g < 60 and b < 70             # noqa: E731 FAIL
    blue = lambda r, g, b: r < 30 and 90 < g < 120 and 200 < b < 230  # noqa: E731
    fail = _shoot(files['html'], tmp_path / 'fail-night.png')
    assert fail(red) > 5
    quiet = report.write_all(_quiet_night(res, 'NO-SLOWDOWN-SEEN'), history.load(root / 'hist'),
                             tmp_path / 'quiet')
    unchanged = _shoot(quiet['html'], tmp_path / 'unchanged-night.png')
    assert unchanged(blue) > 20 and unchanged(red) < fail(red)
    report.publish(str(root / 'hist'), tmp_path / 'site')
    dash = _shoot(tmp_path / 'site' / 'index.html', tmp_path / 'dashboard.png', '1200,700')
    assert dash(blue) > 5                                          # the sparklines
    metric = next((tmp_path / 'site' / 'metric').glob('*.html'))
    plot = _shoot(metric, tmp_path / 'metric.png', '1200,700')
    assert plot(lambda r, g, b: r < 80 and g < 80 and b < 80) > 50


def test_short_label_of_a_checks_record_is_its_row_not_its_parameter_values():
    """A real night's h5paths metric: its params carry the row (``case``) and a dozen
    sizes, flags and counts, which printed as
    'append-hdf5-collective-chunked-earliest-65536-False-256-1048576-evict-1.0'."""
    params = {'api': 'hdf5', 'case': 'append-hdf5-collective-chunked-earliest',
              'chunk_elements': 65536, 'coll_metadata': False, 'elements': 256,
              'iterations': 3, 'layout': 'chunked', 'libver': 'earliest', 'num_nodes': 1,
              'num_ranks': 2, 'objects': 1048576, 'path': 'append', 'read_cache': 'evict',
              'size_factor': 1.0, 'transfer': 'collective'}
    m = {'tool': 'h5paths', 'operation': 'append', 'metric': 'bw', 'params': params,
         'label': 'h5paths_check %benchmark=append-hdf5-collective-chunked-earliest'}
    assert report_text.short_label(m) == 'h5paths append-hdf5-collective-chunked-earliest append'


def test_real_night_shots_are_of_the_report_ci_nightly_published(gated_night, tmp_path):
    """benchmarks/report_screenshots.py --night DIR shoots DIR/report/report.html, which
    ci/nightly wrote with the night's history and --repo-url (the FAILs' history plots and
    commit links): a report made again from gate.json alone has neither."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / 'benchmarks' / 'report_screenshots.py'
    spec = importlib.util.spec_from_file_location('report_screenshots_under_test', path)
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    _, files, _ = gated_night
    night = tmp_path / 'night'
    shutil.copytree(files['html'].parent, night / 'report')
    assert shots.real_night(tmp_path / 'shots', night) == night / 'report' / 'report.html'


# -- "data per run" of every tool whose record says it (issue 29) ----------------------

def _first_run_records(tool: str, run_dir: str):
    from h5regress.cli import read_outputs
    from h5regress.parsers import parser_for
    from reframe_run import OWN_FIXTURES
    parser = parser_for(tool)
    path = OWN_FIXTURES / tool / run_dir
    run = parser.parse(read_outputs(str(path), parser.wanted))[0]
    return run.to_records(hdf5_build='b', test=str(path))


@pytest.mark.parametrize('tool, run_dir, operation, expected', [
    ('ior', 'csv-hdf5-collective-summaryfile', 'write', 16 * 2 ** 20 * 2 * 2),  # b x tasks x reps
    ('fio', 'seq-read-buffered', 'read', 64 * 2 ** 20),                        # io_bytes
    ('mdtest', 'own-posix-files-only-w4k-n200', 'file_create', 400 * 4096 * 2),
    ('macsio', 'own-hdf5-mif2-p1M-d3', 'write', None),      # its own size record
    ('h5bench', 'direct-write-var-normal-dist', 'write', None),
    ('flash-io', 'own-hdf5-collective-iter2', 'checkpoint', None),   # its size record
    ('h5paths', 'attributes-ok', 'create', None),
])
def test_data_per_run_of_every_tool(tool, run_dir, operation, expected):
    from h5regress.report.context import _data_bytes, reported_sizes
    records = _first_run_records(tool, run_dir)
    sizes = reported_sizes({'records': {'all': records}})
    rec = next(r for r in records if r.operation == operation and r.metric != 'size')
    got = _data_bytes(rec, sizes)
    assert got and got > 0, (tool, rec.params, rec.provenance)
    if expected is not None:
        assert got == expected
    size = next((r.value for r in records if r.metric == 'size' and r.unit == 'B'
                 and r.operation == operation), None)
    if tool in ('macsio', 'h5bench', 'flash-io'):
        assert got == size


def test_mdtest_without_file_data_has_no_data_per_run():
    """Metadata only (no -w): no bytes to show; the Where table says '–'."""
    from h5regress.report.context import _data_bytes
    rec = _first_run_records('mdtest', 'own-posix-files-only-w4k-n200')[0]
    rec.params = {**rec.params, 'write_bytes': 0}
    assert _data_bytes(rec) is None


def test_forest_ticks_read_as_the_ratios_they_mark(gated_night):
    """A real FAIL night (2026-11-27, compound-subset 0.663, flush-datasets 9.1x) showed
    "6 7 8 9 1 2 3 ..." under the log axis: plotly labels minor ticks by their first
    digit, so 0.6 read 6. Every tick is now labelled by its own value."""
    res, _, _ = gated_night
    night = copy.deepcopy(res)
    gated = [m for m in night['metrics'] if m['role'] == 'gated']
    gated[0].update(ratio=9.1, ratio_lo=8.8, ratio_hi=9.5, perf_ratio=9.1, perf_lo=8.8,
                    perf_hi=9.5, interval=None)
    gated[1].update(ratio=0.663, ratio_lo=0.608, ratio_hi=0.723, perf_ratio=0.663,
                    perf_lo=0.608, perf_hi=0.723, interval=None)
    axis = report.forest_figure(night).layout.xaxis
    assert axis.tickvals and len(axis.tickvals) == len(axis.ticktext) <= 8
    assert [float(t) for t in axis.ticktext] == list(axis.tickvals)
    assert 1.0 in axis.tickvals and 0.7 in axis.tickvals and 10.0 in axis.tickvals
    assert all(axis.range[0] <= math.log10(v) <= axis.range[1] for v in axis.tickvals)


def test_a_fail_night_names_its_undecided_slowdowns_too(gated_night):
    """The loop stops at a FAIL: on the real FAIL night of 2026-11-27 vlen-strings read
    0.925 [0.873, 0.979], "slowdown suspected", and the first screen named only the two
    FAILs."""
    res, _, _ = gated_night
    night = copy.deepcopy(res)
    assert night['overall'] == 'FAIL'
    other = next(m for m in night['metrics'] if m['role'] == 'gated' and m['verdict'] != 'FAIL')
    other.update(verdict='INCONCLUSIVE', slower=False, ratio=0.925, ratio_lo=0.873,
                 ratio_hi=0.979, perf_ratio=0.925, perf_lo=0.873, perf_hi=0.979,
                 reason='slowdown suspected (q=0.046 <= 0.05): more pairs decide')
    text = report.summary(night)
    also = text[text.index('Also measured slower, undecided when the night stopped at its '
                           'FAIL: '):]
    assert report.text.short_label(other) in also and 'take 1.08x as long' in also
