"""Issue 14: a night is gated on its own attempt only, and a signal stops all of it.

- every attempt of ``ci/nightly`` has an id: its own perflog directory, pair ids
  ``<attempt>-p<i>``, and the gate keeps that attempt's records only; a reused
  ``--out`` (an A/A night after a slowed one, same night id) never mixes them;
- SIGTERM (what ``timeout`` sends) to the nightly stops ReFrame and its jobs (every
  process below the nightly), exits 4 (ERROR), writes no verdict and no history,
  and no perflog line appears afterwards;
- a usage error and a failure of the script itself are ERROR (4), never 1 or 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from h5regress import gate, history, nightly
from h5regress import nightrun
from conftest import SHARED_NIGHT
from reframe_run import REPO
from test_gate import BASE, CAND, rec, write_jsonl

#: the night id of conftest.py's shared nights (a reused --out reruns it)
NIGHT = SHARED_NIGHT


# ------------------------------------------------------------------ attempts
def two_attempts(first: str, second: str, n_first: int = 6, n_second: int = 4):
    """Records of two attempts of one night: the first slowed by half, the second A/A."""
    out = []
    for attempt, n, ratio in ((first, n_first, 0.5), (second, n_second, 1.0)):
        for p in range(1, n + 1):
            pair = f'{attempt}-p{p:02d}'
            for build, value in ((BASE, 1000.0 + p), (CAND, (1000.0 + p) * ratio)):
                r = rec(value, build, None, night=NIGHT, run=f'{pair}-{build}')
                r.pair_id = pair
                out.append(r)
    return out


def test_the_gate_keeps_only_the_records_of_its_attempt(tmp_path):
    first, second = nightrun.new_attempt(NIGHT), f'{NIGHT}.20261121T030000Z.99.ab12'
    assert first != second and first.startswith(NIGHT + '.')
    path = write_jsonl(tmp_path / 'both.jsonl', two_attempts(first, second))
    out = tmp_path / 'gate.json'
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                         '--attempt', second, '--json', str(out), '--refs', '--quiet',
                         '--night', NIGHT])
    result = json.loads(out.read_text())
    (m,) = [x for x in result['metrics'] if x['role'] == 'gated']
    assert (m['n_pairs'], m['n_base'], m['n_cand']) == (4, 4, 4)
    assert m['verdict'] != 'FAIL' and rc != gate.EXIT_FAIL
    assert result['attempt'] == second and result['counts']['other_attempt'] == 12
    # without --attempt both attempts' pairs are gated (what ci/nightly used to do)
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                         '--json', str(out), '--refs', '--quiet', '--night', NIGHT])
    (m,) = [x for x in json.loads(out.read_text())['metrics'] if x['role'] == 'gated']
    assert m['n_pairs'] == 10


def test_nightly_gates_its_attempts_directory_with_its_attempt(tmp_path, monkeypatch):
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--night', NIGHT])
    seen = {}
    monkeypatch.setattr(nightly.gate, 'gate_request',
                        lambda request: seen.setdefault('request', request) and gate.EXIT_PASS)
    nightly.gate_once('a', 'b', args, final=False)
    request = seen['request']
    assert list(request.reports) == [str(tmp_path / 'reports' / args.attempt)]
    assert not request.perflogs
    assert request.attempt == args.attempt
    assert len({nightrun.new_attempt(NIGHT) for _ in range(20)}) == 20


def test_a_new_attempt_drops_the_old_verdict_but_keeps_its_perflogs(tmp_path):
    old = tmp_path / 'perflogs' / 'old-attempt'
    old.mkdir(parents=True)
    (old / 'x.log').write_text('kept')
    (tmp_path / 'gate.json').write_text('{"overall": "FAIL"}')
    (tmp_path / 'report').mkdir()
    (tmp_path / 'report' / 'report.md').write_text('FAIL')
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--night', NIGHT])
    nightrun.start_attempt(args)
    assert not (tmp_path / 'gate.json').exists() and not (tmp_path / 'report').exists()
    assert (old / 'x.log').read_text() == 'kept'
    assert nightrun.attempt_perflogs(args).is_dir()


def test_two_nightlies_cannot_share_an_out_directory(tmp_path):
    with nightly.out_lock(tmp_path):
        proc = subprocess.run([sys.executable, '-m', 'h5regress.nightly', '--stand-in',
                               '--out', str(tmp_path), '--history', str(tmp_path / 'h')],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == gate.EXIT_ERROR, proc.stderr
    assert f'another ci/nightly is running with --out {tmp_path}' in proc.stderr
    assert not (tmp_path / 'stand-in').exists()        # it built nothing


def test_a_usage_error_is_error_not_inconclusive(capsys):
    with pytest.raises(SystemExit) as ex:
        nightly.parse_args(['--stand-in', '--pairs', '5', '--max-pairs', '3'])
    assert ex.value.code == 64      # EX_USAGE: neither INCONCLUSIVE (2) nor ERROR (4)
    assert 'need 1 <= --pairs <= --max-pairs' in capsys.readouterr().err


def test_a_failure_of_the_script_itself_is_error_without_a_traceback(tmp_path, monkeypatch,
                                                                      capsys):
    def broken(args):
        raise KeyError('oops')
    monkeypatch.setattr(nightly, 'night', broken)
    monkeypatch.setattr(nightly, 'handle_signals', lambda: None)
    assert nightly.main(['--stand-in', '--out', str(tmp_path)]) == gate.EXIT_ERROR
    err = capsys.readouterr().err
    assert "error: KeyError: 'oops'" in err and 'Traceback' not in err


def test_bad_history_makes_the_nightly_gate_go_on_not_crash(tmp_path, capsys):
    """Issue 14, item 4, through the nightly's own gate call."""
    hdir = tmp_path / 'history'
    for k in range(1, 4):
        from test_reliability_history import night_lines
        history.write_night(hdir, *night_lines(f'2026-11-0{k}', 10, 1000.0))
    bad = hdir / 'nights' / '2026-11-02.jsonl'
    data = bytearray(bad.read_bytes())
    data[30] = 0xff
    bad.write_bytes(bytes(data))
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--night', NIGHT,
                               '--history', str(hdir)])
    attempt_dir = nightrun.attempt_reports(args)
    attempt_dir.mkdir(parents=True)
    cases = []
    for p in range(1, 11):
        for build in ('hdf5-standin-a', 'hdf5-standin-b'):
            ctx = json.dumps({'tool': 'flash-io', 'params': {'api': 'hdf5'},
                              'pair_id': f'{args.attempt}-p{p:02d}',
                              'perfvars': {'checkpoint_bw': {
                                  'operation': 'checkpoint', 'metric': 'bw',
                                  'higher_is_better': True}}})
            cases.append({'name': 'flashio_check', 'system': 'local', 'partition': 'default',
                          'result': 'pass', 'fail_phase': None, 'hdf5_build': build,
                          'job_completion_time': f'{NIGHT}T03:00:{p:02d}+00:00',
                          'config_hash': 'h-flash', 'run_id': f'r{p}{build}',
                          'h5r_context': ctx, 'perfvalues': {'local:default:checkpoint_bw': [
                              300 + p, 300, -0.95, None, 'MiB/s', 'pass']}})
    (attempt_dir / 'pairs.json').write_text(json.dumps({'runs': [{'testcases': cases}]}))
    code = nightly.gate_once('hdf5-standin-a', 'hdf5-standin-b', args, final=True)
    assert code in (gate.EXIT_PASS, gate.EXIT_INCONCLUSIVE)
    assert f'{bad}:1: not UTF-8' in capsys.readouterr().err
    assert NIGHT in history.load(hdir).night_ids()


# ------------------------------------------------------------------ signals
def alive(pid: int, start: str | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie), and is the process that started at ``start``."""
    try:
        fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != 'Z' and (start is None or fields[19] == start)


def tree(root: int) -> dict[int, tuple[str, str]]:
    """PID -> (start time, command line) of ``root`` and every process below it."""
    parent, info = {}, {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
            cmd = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        parent[int(entry.name)] = int(fields[1])
        info[int(entry.name)] = (fields[19], cmd)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            out[pid] = info[pid]
        todo += [c for c, p in parent.items() if p == pid]
    return out


def test_run_forwards_a_signal_and_nothing_below_survives(tmp_path):
    """The mechanism, fast: a child in its own group and a grandchild in its own
    session (as ReFrame starts its jobs), SIGTERM to the parent."""
    pids = tmp_path / 'pids'
    script = (
        'import sys\n'
        'from h5regress import nightprocs\n'
        'nightprocs.handle_signals()\n'
        'try:\n'
        f'    nightprocs.run(["sh", "-c", "setsid sleep 300 & echo $! >> {pids}; '
        f'echo $$ >> {pids}; trap \'\' TERM; sleep 300"])\n'
        'except nightprocs.Interrupted:\n'
        '    sys.exit(4 if not nightprocs.stop_descendants(grace=2) else 5)\n'
        'sys.exit(3)\n')
    proc = subprocess.Popen([sys.executable, '-c', script], cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while (not pids.exists() or len(pids.read_text().split()) < 2) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        noted = [int(x) for x in pids.read_text().split()]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 4
        assert not [p for p in noted if alive(p)]
    finally:
        for p in noted if 'noted' in locals() else []:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def nightly_cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, '-m', 'h5regress.nightly', '--stand-in', '--alpha', '0.001',
            '--checks', '^flashio_check.*-collective', '-S', 'flashio_check.iterations=2',
            '--out', str(out), '--history', str(out / 'history'), '--night', NIGHT,
            '--quiet', *extra]


def perflog_lines(out: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (out / 'perflogs').rglob('*.log'))


@pytest.mark.slow
def test_sigterm_stops_the_nightly_and_everything_it_started(tmp_path):
    out = tmp_path / 'out'
    err = open(tmp_path / 'stderr', 'w')
    proc = subprocess.Popen(nightly_cmd(out, '--pairs', '10', '--max-pairs', '10'),
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    seen: dict[int, tuple[str, str]] = {}
    try:
        deadline = time.monotonic() + 900
        job_running = False
        while not job_running and time.monotonic() < deadline and proc.poll() is None:
            now = tree(proc.pid)
            seen.update(now)
            # ReFrame runs and has started a job (a process below it that is not it)
            rfm = [p for p, (_, cmd) in now.items() if '/reframe ' in cmd]
            job_running = bool(rfm) and any(set(tree(r)) - {r} for r in rfm)
            time.sleep(0.2)
        assert job_running, (tmp_path / 'stderr').read_text()[-3000:]
        time.sleep(1)
        seen.update(tree(proc.pid))
        assert any('rfm_job' in cmd or 'flash-io' in cmd for _, cmd in seen.values()), seen
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
        survivors = {p: c for p, (s, c) in seen.items() if p != proc.pid and alive(p, s)}
        assert not survivors
        assert code == gate.EXIT_ERROR, (tmp_path / 'stderr').read_text()[-3000:]
        lines = perflog_lines(out)
        time.sleep(8)
        assert perflog_lines(out) == lines, 'perflog lines appeared after the nightly ended'
        assert not (out / 'gate.json').exists() and not (out / 'report').exists()
        assert not list((out / 'history').rglob('*.jsonl'))
        stderr = (tmp_path / 'stderr').read_text()
        assert 'stopped by SIGTERM' in stderr and 'Traceback' not in stderr
    finally:
        err.close()
        for pid, (start, _) in seen.items():
            if pid != proc.pid and alive(pid, start):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_a_reused_out_gates_only_the_new_attempt(injected_night):
    """Issue 14, item 3: an A/A night after a slowed one, same --out and night id (the
    --out of conftest.py's slowed 10-pair night, whose exit code test_nightly.py asserts;
    its stand-in builds and wrappers name that directory: a copy would not run)."""
    out = injected_night[3]
    first = json.loads((out / 'gate.json').read_text()).get('attempt')
    # the first attempt's rows (its 80 blocks per rank), so that its records would join
    # the new attempt's metrics if the gate took them
    aa = subprocess.run(nightly_cmd(out, '--pairs', '3', '--max-pairs', '3', '-S',
                                    'flashio_check.blocks_per_rank=80'),
                        cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert aa.returncode != gate.EXIT_ERROR, aa.stderr[-3000:]
    result = json.loads((out / 'gate.json').read_text())
    for m in result['metrics']:
        assert (m['n_pairs'], m['n_base'], m['n_cand']) == (3, 3, 3), m['label']
    assert result['overall'] != 'FAIL'
    assert first and result['attempt'] != first
    hist = history.load(out / 'history')
    # a rerun of a night id never replaces it (issue 31): kept beside it as <id>+2
    assert hist.night_ids() == [NIGHT, f'{NIGHT}+2']
    assert hist.nights[1]['overall'] == result['overall']
    # both attempts' perflogs are kept, each in its own directory
    assert {p.name for p in (out / 'perflogs').iterdir()} == {first, result['attempt']}
