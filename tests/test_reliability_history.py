"""Issue 14: the history is never half-written and bad history input never crashes.

- one non-UTF-8 byte (or a value that is no number) in a history file: gate, refs and
  report name the file and the line, skip what is bad and read the other nights;
- a night is one file renamed once: a crash at any point of a write leaves the old
  night whole, two writers of the same night take turns (``exclusive=True`` lets one
  win, else each is kept as its own attempt), and a reader sees the summaries and the
  samples of one attempt, never a mix;
- histories in the old layout (samples in ``samples/<id>.json``) are still read.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from h5regress import atomic, gate, history, refs, report

BASE, CAND = 'hdf5-1.14.6', 'hdf5-develop'
KEY = 'h-ior|ior|write|bw_max'


def night_lines(night: str, n: int, level: float, verdict: str = 'PASS'):
    """A night of one gated metric: n pairs at ``level`` (summaries agree with samples)."""
    header = {'night': night, 'timestamp': f'{night}T03:00:00+00:00', 'baseline': BASE,
              'candidate': CAND, 'overall': verdict, 'degraded': False, 'counts': {}}
    metric = {'key': KEY, 'label': 'ior write bw_max', 'tool': 'ior', 'operation': 'write',
              'metric': 'bw_max', 'unit': 'MiB/s', 'higher_is_better': True,
              'test': 'ior_check_0a1b2c3d', 'test_class': 'ior_check',
              'perf_var': 'write_bw_max', 'system': 'local:default',
              'params': {'api': 'HDF5', 'preset': 'collective', 'layout': 'ssf'},
              'role': 'gated', 'n_pairs': n, 'base': [level] * n, 'cand': [level] * n,
              'base_median': level, 'cand_median': level, 'median_all': level,
              'ratio': 1.0, 'ratio_lo': 0.97, 'ratio_hi': 1.03, 'q': 0.5,
              'verdict': verdict, 'true_ratio': None, 'lr_n': n, 'lr_var': 0.001}
    return header, [metric]


def write_nights(root: Path, count: int = 12, n: int = 10) -> None:
    for k in range(1, count + 1):
        history.write_night(root, *night_lines(f'2025-02-{k:02d}', n, 1000.0 + k))


def assert_whole(hist: history.History) -> None:
    """Every night's samples are those of its summaries (or absent, with a problem)."""
    for row in hist.series[KEY]:
        base, cand = hist.samples(KEY, row['night_index'])
        if not base:
            assert any('replaced' in p for p in hist.problems), hist.problems
            continue
        assert len(base) == len(cand) == row['n_pairs']
        assert base[0] == row['base_median'], (base[0], row)


def corrupt(path: Path, line: int, byte: bytes = b'\xff') -> None:
    """Turn one byte of a line (1-based) into one that is not UTF-8 (the size stays)."""
    lines = path.read_bytes().split(b'\n')
    lines[line - 1] = lines[line - 1][:20] + byte + lines[line - 1][21:]
    path.write_bytes(b'\n'.join(lines))


# ------------------------------------------------------------------ bad bytes
@pytest.mark.parametrize('line,what', [(1, 'file skipped'), (3, 'line skipped')])
def test_a_non_utf8_byte_is_named_and_skipped(tmp_path, capsys, line, what):
    write_nights(tmp_path)
    bad = tmp_path / 'nights' / '2025-02-05.jsonl'
    corrupt(bad, line)
    hist = history.load(tmp_path)          # no UnicodeDecodeError
    assert any(f'{bad}' in p and 'UTF-8' in p for p in hist.problems), hist.problems
    assert f'{bad}:{line}: not UTF-8' in capsys.readouterr().err
    assert any(what in p for p in hist.problems)
    # the other nights are all there
    others = [n for n in hist.night_ids() if n != '2025-02-05']
    assert len(others) == 11
    assert_whole(hist)


def test_a_non_utf8_byte_in_the_samples_leaves_them_out(tmp_path, capsys):
    write_nights(tmp_path)
    bad = tmp_path / 'nights' / '2025-02-05.jsonl'
    corrupt(bad, 4)                                    # the samples line
    hist = history.load(tmp_path)
    assert hist.night_ids()[4] == '2025-02-05'         # the summaries stay
    assert hist.samples(KEY, 4) == ([], [])
    assert f'{bad}: samples unreadable' in capsys.readouterr().err


def test_gate_refs_and_report_go_on_past_a_bad_byte(tmp_path, capsys):
    hdir = tmp_path / 'hist'
    write_nights(hdir)
    bad = hdir / 'nights' / '2025-02-05.jsonl'
    corrupt(bad, 3)
    records = tmp_path / 'n.jsonl'
    from test_gate import paired, write_jsonl
    write_jsonl(records, paired(10, 1.0, night='2025-03-01'))
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', str(records),
                         '--history', str(hdir), '--json', str(tmp_path / 'gate.json'),
                         '--refs', '--quiet', '--append-history'])
    assert rc in (gate.EXIT_PASS, gate.EXIT_INCONCLUSIVE)
    err = capsys.readouterr().err
    assert f'{bad}:3: not UTF-8' in err
    result = json.loads((tmp_path / 'gate.json').read_text())
    assert any(str(bad) in p for p in result['problems'])
    rdir = tmp_path / 'refs'
    rdir.mkdir()
    assert refs.main_refs(['--history', str(hdir), '--out', str(rdir), '--dry-run']) == 0
    assert f'{bad}:3: not UTF-8' in capsys.readouterr().err
    assert report.main_report([str(tmp_path / 'gate.json'), '--history', str(hdir),
                               '--out', str(tmp_path / 'report')]) == 0
    assert f'{bad}:3' in capsys.readouterr().err


@pytest.mark.parametrize('field,value,why', [
    ('cand_median', -5, 'not a positive number'),
    ('base_median', 'fast', 'not a number'),
    ('n_pairs', 2.5, 'not a count'),
    ('verdict', 3, 'not a string'),
])
def test_a_summary_value_that_is_no_number_is_named_and_skipped(tmp_path, capsys, field,
                                                                 value, why):
    write_nights(tmp_path)
    header, (metric,) = night_lines('2025-02-05', 10, 1005.0)
    history.write_night(tmp_path, header, [dict(metric, **{field: value})])
    bad = tmp_path / 'nights' / '2025-02-05+2.jsonl'         # a rerun, kept beside
    hist = history.load(tmp_path)
    assert f'{bad}:3: {field} is {why}' in capsys.readouterr().err
    assert len(hist.series[KEY]) == 12
    # and the gate, which takes logs of medians, runs over it
    from test_gate import paired
    gate.run_gate(paired(10, 1.0, night='2025-03-01'), BASE, CAND, gate.load_config(),
                  history=hist)


def test_samples_that_are_no_numbers_are_left_out(tmp_path, capsys):
    write_nights(tmp_path, count=1)
    for path in tmp_path.rglob('*.json*'):       # wherever the samples are
        path.write_text(path.read_text().replace('[[1001.0,', '[["x001",'))
    hist = history.load(tmp_path)
    assert hist.samples(KEY, 0) == ([], [])
    assert f'samples of {KEY!r} are not two lists of positive numbers' in \
        capsys.readouterr().err


def test_a_truncated_night_is_skipped_and_the_others_read(tmp_path, capsys):
    write_nights(tmp_path)
    bad = tmp_path / 'nights' / '2025-02-05.jsonl'
    bad.write_bytes(bad.read_bytes()[:-40])
    hist = history.load(tmp_path)
    assert '2025-02-05' not in hist.night_ids() and len(hist) == 11
    assert f'{bad}: ' in capsys.readouterr().err and 'truncated' in hist.problems[0]


# ------------------------------------------------------------------ one unit
def test_a_crash_at_any_step_of_a_write_leaves_a_whole_night(tmp_path, monkeypatch):
    history.write_night(tmp_path, *night_lines('2025-02-01', 5, 100.0))
    replaces = []
    real = os.replace

    def counting(src, dst):
        replaces.append(dst)
        return real(src, dst)
    monkeypatch.setattr(atomic.os, 'replace', counting)
    history.write_night(tmp_path, *night_lines('2025-02-01', 5, 100.0))
    steps = len(replaces)
    assert steps >= 1
    for crash_at in range(steps):
        calls = []

        def crashing(src, dst):
            calls.append(dst)
            if len(calls) == crash_at + 1:
                raise OSError('simulated crash')
            return real(src, dst)
        monkeypatch.setattr(atomic.os, 'replace', crashing)
        with pytest.raises(history.HistoryError, match='simulated crash'):
            history.write_night(tmp_path, *night_lines('2025-02-01', 7, 200.0, 'FAIL'))
        monkeypatch.setattr(atomic.os, 'replace', real)
        hist = history.load(tmp_path)
        assert hist.night_ids() == ['2025-02-01', '2025-02-01+2']
        assert hist.nights[0]['overall'] == 'PASS'        # the old night, whole
        assert hist.samples(KEY, 0) == ([100.0] * 5, [100.0] * 5)
        assert not list((tmp_path / 'nights').glob('.*.tmp'))


def _write_many(root, night, tag, exclusive, start, out):
    start.wait()
    results = []
    for i in range(out):
        n = 3 + tag                                        # each writer: its own n
        try:
            history.write_night(root, *night_lines(night, n, 100.0 * (tag + 1)),
                                exclusive=exclusive)
            results.append('ok')
        except history.HistoryError:
            results.append('exists')
    return results


def _writer(args):
    root, night, tag, exclusive, count = args
    return _write_many(root, night, tag, exclusive, _BARRIER, count)


_BARRIER = None


def _init(barrier):
    global _BARRIER
    _BARRIER = barrier


def test_two_writers_of_the_same_night_take_turns(tmp_path):
    # spawn, not fork: a fork of the test process copies whatever lock another thread
    # of it held (one worker hung 8 minutes in a loaded run of the whole suite), and a
    # time limit makes any hang a failure
    ctx = multiprocessing.get_context('spawn')
    workers = 6
    barrier = ctx.Barrier(workers)
    with ctx.Pool(workers, initializer=_init, initargs=(barrier,)) as pool:
        got = pool.map_async(_writer, [(tmp_path, '2025-02-01', t, True, 1)
                                       for t in range(workers)]).get(timeout=300)
    outcomes = [r for rs in got for r in rs]
    assert outcomes.count('ok') == 1, outcomes          # one wins, the others are told
    barrier = ctx.Barrier(workers)
    with ctx.Pool(workers, initializer=_init, initargs=(barrier,)) as pool:
        pool.map_async(_writer, [(tmp_path, '2025-02-02', t, False, 5)
                                 for t in range(workers)]).get(timeout=300)
    hist = history.load(tmp_path)
    assert not hist.problems
    assert_whole(hist)
    # every write kept: 2025-02-01, then 2025-02-02 and its 29 reruns, each once
    assert sorted(hist.night_ids()) == sorted(
        ['2025-02-01', '2025-02-02'] + [f'2025-02-02+{k}' for k in range(2, 31)])


def _rewrite_loop(root, stop):
    k = 0
    while not stop.is_set() and k < 60:       # each write a rerun kept beside the others
        k += 1
        history.write_night(root, *night_lines('2025-02-01', 3 + k % 2, 100.0 + k % 2))


def test_a_reader_never_pairs_one_attempts_summaries_with_anothers_samples(tmp_path):
    history.write_night(tmp_path, *night_lines('2025-02-01', 3, 100.0))
    ctx = multiprocessing.get_context('fork')
    stop = ctx.Event()
    writer = ctx.Process(target=_rewrite_loop, args=(tmp_path, stop))
    writer.start()
    try:
        for _ in range(150):
            assert_whole(history.load(tmp_path))
    finally:
        stop.set()
        writer.join(30)


# ------------------------------------------------------------------ old layout
def write_legacy_night(root: Path, night: str, n: int, level: float) -> None:
    """A night as format 1 wrote it: samples/<id>.json, then nights/<id>.jsonl."""
    header, (metric,) = night_lines(night, n, level)
    meta = {k: metric.get(k) for k in history.META_FIELDS}
    summary = {k: v for k, v in metric.items()
               if k not in history.META_FIELDS and k not in ('base', 'cand')}
    (root / 'samples').mkdir(parents=True, exist_ok=True)
    (root / 'nights').mkdir(parents=True, exist_ok=True)
    (root / 'samples' / f'{night}.json').write_text(
        json.dumps({KEY: [metric['base'], metric['cand']]}))
    (root / 'nights' / f'{night}.jsonl').write_text('\n'.join([
        json.dumps({'kind': 'night', 'format': 1, **header}, sort_keys=True),
        '{"kind":"meta",' + json.dumps({'metas': {KEY: meta}})[1:],
        json.dumps({'kind': 'metric', **summary})]) + '\n')


def test_old_layout_nights_are_read_and_rewritten_as_one_file(tmp_path):
    for k in range(1, 4):
        write_legacy_night(tmp_path, f'2025-01-{k:02d}', 4, 50.0 + k)
    history.write_night(tmp_path, *night_lines('2025-01-10', 6, 70.0))
    hist = history.load(tmp_path)
    assert hist.night_ids() == ['2025-01-01', '2025-01-02', '2025-01-03', '2025-01-10']
    assert not hist.problems
    assert hist.samples(KEY, 0) == ([51.0] * 4, [51.0] * 4)
    assert hist.meta(KEY, 0)['tool'] == 'ior'
    assert_whole(hist)
    # the same night written again: a rerun beside it, the old night kept whole
    history.write_night(tmp_path, *night_lines('2025-01-02', 8, 60.0))
    hist = history.load(tmp_path)
    assert hist.night_ids()[1:3] == ['2025-01-02', '2025-01-02+2']
    assert hist.samples(KEY, 1) == ([52.0] * 4, [52.0] * 4)
    assert hist.samples(KEY, 2) == ([60.0] * 8, [60.0] * 8)
    assert_whole(hist)


def test_a_non_utf8_byte_in_an_old_samples_file_is_named(tmp_path, capsys):
    write_legacy_night(tmp_path, '2025-01-01', 4, 50.0)
    samples = tmp_path / 'samples' / '2025-01-01.json'
    samples.write_bytes(samples.read_bytes().replace(b'50.0', b'5\xe90.0', 1))
    hist = history.load(tmp_path)
    assert hist.samples(KEY, 0) == ([], [])
    assert f'{samples}: samples unreadable' in capsys.readouterr().err
