"""Issue 14: every job has a time limit, and a job past it dies with its processes.

``reframe/config/settings.py`` gives every partition a ``time_limit`` (``local``
included: its scheduler has none of its own). ReFrame's local scheduler enforces it:
SIGTERM to the job's process group, SIGKILL 2 s later, the test fails with "job timed
out". The tests run a job that outlives a tiny limit (the partition's, from a config
derived from settings.py) and a real FLASH-IO check past its own, and look for every
process they started.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import signal
import threading
import time
from pathlib import Path

import pytest

from reframe_run import REPO, SETTINGS, reframe_bin, reframe_env

SECONDS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}


def seconds(limit: str) -> float:
    """ReFrame's duration syntax (``15m``, ``1h30m``, ``90s``) in seconds."""
    parts = re.findall(r'(\d+(?:\.\d+)?)([smhd])', limit)
    assert parts and ''.join(a + b for a, b in parts) == limit, limit
    return sum(float(n) * SECONDS[u] for n, u in parts)


def partitions():
    cfg = runpy.run_path(str(SETTINGS))['site_configuration']
    return [(f'{s["name"]}:{p["name"]}', p) for s in cfg['systems'] for p in s['partitions']]


@pytest.mark.parametrize('name,part', partitions(), ids=[n for n, _ in partitions()])
def test_every_partition_has_a_sane_time_limit(name, part):
    assert part.get('time_limit'), f'{name} has no time_limit: a hung tool would hang the run'
    assert 60 <= seconds(part['time_limit']) <= 4 * 3600, (name, part['time_limit'])


def alive(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != 'Z'


SLEEPER = '''
import os
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import sanity_function


@rfm.simple_test
class sleep_past_the_limit(rfm.RunOnlyRegressionTest):
    """Sleeps far past its partition's time limit: the job shell, a child in the
    background and two ranks under the partition's launcher, each noting its PID."""
    valid_systems = ['local:default']
    valid_prog_environs = ['*']
    num_tasks = 2
    executable = 'sh'
    # single quotes: each rank's own PID, not the job shell's
    executable_opts = ['-c', "'echo $$ >> $H5R_TEST_PIDS; exec sleep 300'"]
    prerun_cmds = ['echo $$ >> $H5R_TEST_PIDS',
                   'sleep 300 & echo $! >> $H5R_TEST_PIDS']

    @sanity_function
    def validate(self):
        return sn.assert_true(False, msg='should have been killed before')
'''


def test_a_job_past_its_partitions_time_limit_fails_and_leaves_no_process(tmp_path):
    (local,) = [p for n, p in partitions() if n == 'local:default']
    assert local.get('time_limit'), 'local:default has no time_limit'
    config = tmp_path / 'tiny_limit.py'
    # settings.py as it is, with a tiny time limit on local:default
    config.write_text(
        'import copy, runpy\n'
        f'_cfg = runpy.run_path({str(SETTINGS)!r})["site_configuration"]\n'
        'site_configuration = copy.deepcopy(_cfg)\n'
        'for _s in site_configuration["systems"]:\n'
        '    for _p in _s["partitions"]:\n'
        '        if (_s["name"], _p["name"]) == ("local", "default"):\n'
        '            _p["time_limit"] = "3s"\n')
    check = tmp_path / 'sleeper.py'
    check.write_text(SLEEPER)
    pids = tmp_path / 'pids'
    marker = f'H5R_TEST_MARK={tmp_path.name}-{os.getpid()}-{time.time_ns()}'
    import subprocess
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [reframe_bin(), '-C', str(config), '-c', str(check), '-r', '--system',
             'local:default', '-s', str(tmp_path / 'stage'), '-o', str(tmp_path / 'output'),
             '--report-file', str(tmp_path / 'report.json')],
            cwd=REPO, env={**reframe_env(tmp_path), 'H5R_TEST_PIDS': str(pids),
                           marker.split('=')[0]: marker.split('=', 1)[1]},
            capture_output=True, text=True, timeout=240)
        took = time.monotonic() - start
        check_time_limit_run(proc, tmp_path, took, pids, marker)
    finally:
        left = kill_marked(marker)
    assert not left, f'processes of the job outlived it: {left}'


def check_time_limit_run(proc, tmp_path: Path, took: float, pids: Path,
                         marker: str) -> None:
    assert proc.returncode != 0, proc.stdout[-3000:]
    case = json.loads((tmp_path / 'report.json').read_text())['runs'][0]['testcases'][0]
    assert case['result'] == 'fail' and case['fail_phase'] == 'run', case
    reason = f'{case.get("fail_reason")} {case.get("fail_info")}'
    assert 'job timed out' in reason and '> 3.0s' in reason, reason
    assert took < 120, f'ReFrame took {took:.0f} s for a 3 s limit'
    noted = [int(x) for x in pids.read_text().split()]
    # job shell, background child, two ranks: four processes
    assert len(set(noted)) == 4, noted
    deadline = time.monotonic() + 10
    while (any(map(alive, noted)) or processes_marked(marker)) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in noted if alive(p)] + list(processes_marked(marker))
    assert not left, f'processes of the job outlived it: {left}'


def processes_marked(marker: str) -> dict[int, str]:
    """PID -> command line of every live process with ``marker`` (``NAME=VALUE``) in
    its environment (the ranks under the launcher included)."""
    found, needle = {}, marker.encode()
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / 'environ').read_bytes().split(b'\0'):
                continue
            cmd = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if alive(int(entry.name)):
            found[int(entry.name)] = cmd
    return found


def kill_marked(marker: str) -> dict[int, str]:
    """SIGKILL every process with ``marker`` in its environment; those that were left."""
    left = processes_marked(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def processes_under(path: str) -> dict[int, str]:
    """PID -> command line of every process whose command line or directory is under
    ``path``."""
    found = {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
            cwd = os.readlink(entry / 'cwd')
        except OSError:
            continue
        if path in cmd or cwd.startswith(path):
            found[int(entry.name)] = cmd
    return found


@pytest.mark.slow
@pytest.mark.beside
def test_a_real_check_past_its_time_limit_fails_and_leaves_nothing(tmp_path):
    """FLASH-IO (built by its fixture) writing far more than its limit allows."""
    import subprocess
    seen: dict[int, str] = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen.update(processes_under(str(tmp_path / 'stage')))
            time.sleep(0.2)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        proc = subprocess.run(
            [reframe_bin(), '-C', str(SETTINGS), '-c', str(REPO / 'reframe' / 'checks'),
             '-n', r'^flashio_build_check.*hdf5-collective', '-r', '--system', 'local:default',
             '-S', 'flashio_build_check.iterations=500', '-S', 'flashio_build_check.time_limit=20s',
             '-s', str(tmp_path / 'stage'), '-o', str(tmp_path / 'output'),
             '--report-file', str(tmp_path / 'report.json')],
            cwd=REPO, env=reframe_env(tmp_path), capture_output=True, text=True, timeout=1500)
    finally:
        done.set()
        watcher.join()
    report = json.loads((tmp_path / 'report.json').read_text())
    cases = [c for run in report['runs'] for c in run['testcases']
             if c['name'].startswith('flashio_build_check')]
    assert cases and all(c['result'] == 'fail' for c in cases), proc.stdout[-3000:]
    reason = ' '.join(f'{c.get("fail_reason")} {c.get("fail_info")}' for c in cases)
    assert 'job timed out' in reason and '> 20.0s' in reason, reason
    assert any('flash-io' in cmd for cmd in seen.values()), 'the kernel never ran'
    deadline = time.monotonic() + 10
    while any(map(alive, seen)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not {p: c for p, c in seen.items() if alive(p)}
    # no record of the killed run, and its data are gone
    logs = list((tmp_path / 'perflogs').rglob('*.log'))
    assert not any('flashio_build_check' in line and '|pass|' in line
                   for log in logs for line in log.read_text().splitlines()[1:])
    left = [p for d in (tmp_path / 'stage').rglob('scratch') for p in d.rglob('*')]
    assert not left, left


#: A stand-in ``fio`` that writes into its ``--directory`` and then outlives SIGTERM,
#: as mpirun does while its ranks finish a write: the job shell cannot run its EXIT
#: trap before the tool ends, and ReFrame's SIGKILL comes 2 s after its SIGTERM.
STUBBORN_FIO = r'''#!/bin/sh
for a in "$@"; do case "$a" in --directory=*) dir="${a#--directory=}";; esac; done
echo $$ >> "$H5R_TEST_PIDS"
head -c 1048576 /dev/zero > "$dir/left-behind.dat"
trap '' TERM
sleep 60
'''


@pytest.mark.slow
@pytest.mark.beside
def test_data_of_a_job_killed_past_its_time_limit_are_removed(tmp_path):
    """A tool that outlives the SIGTERM of a time limit: the job shell is SIGKILLed
    before its EXIT trap can run, and the data must go all the same."""
    import subprocess
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'fio').write_text(STUBBORN_FIO)
    (bindir / 'fio').chmod(0o755)
    pids = tmp_path / 'pids'
    env = {**reframe_env(tmp_path), 'H5R_TEST_PIDS': str(pids),
           'PATH': f'{bindir}{os.pathsep}{os.environ["PATH"]}'}
    proc = subprocess.run(
        [reframe_bin(), '-C', str(SETTINGS), '-c', str(REPO / 'reframe' / 'checks' / 'fio.py'),
         '-n', 'fio_check', '-r', '--system', 'local:default', '-S', 'time_limit=4s',
         '-s', str(tmp_path / 'stage'), '-o', str(tmp_path / 'output'),
         '--report-file', str(tmp_path / 'report.json')],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    cases = json.loads((tmp_path / 'report.json').read_text())['runs'][0]['testcases']
    assert cases and all(c['result'] == 'fail' for c in cases), proc.stdout[-3000:]
    assert all('job timed out' in f'{c.get("fail_reason")}' for c in cases), cases
    assert pids.exists(), 'the stand-in fio never ran'
    deadline = time.monotonic() + 10
    left = []
    while time.monotonic() < deadline:
        left = [p for d in (tmp_path / 'stage').rglob('scratch') for p in d.rglob('*.dat')]
        if not left:
            break
        time.sleep(0.2)
    assert not left, left
    assert not [p for p in map(int, pids.read_text().split()) if alive(p)]
