"""Issue 14: a failed run is never a sample, and says why. Real faults on real tools.

- a full file system: an 8 MiB tmpfs the test mounts (root only; skipped with the
  reason otherwise), filled by IOR through MPI-IO (Open MPI's OMPIO prints "No space left
  on device", IOR exits 0 and only warns that the file is short) and by fio;
- ``kill -9`` of one real fio worker (fio exits 0 and reports the group with half the
  bytes);
- a data directory that cannot be made, a scratch path with spaces;
- ``ci/run-suite`` as the README writes it: chained configs, ``--dry-run``, a selection
  that matches nothing, a perflog directory that cannot be written.

Each ends FAIL (or exit 1/2 for ``h5regress parse`` and ``ci/run-suite``) with the cause
named, and leaves no performance record.
"""

from __future__ import annotations

import os
import signal
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from h5regress import perflog, tools
from h5regress.parsers import RunFailed, fio, flashio, ior
from reframe_run import REPO, SETTINGS, run_reframe

#: fio is a Debian package ci/setup installs
needs_fio = pytest.mark.skipif(shutil.which('fio') is None,
                               reason='fio not installed: apt-get install fio')
#: Open MPI as root, two ranks on a two-core machine
MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
           'OMPI_MCA_rmaps_base_oversubscribe': '1'}


def h5regress(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'h5regress.cli', *args],
                          capture_output=True, text=True)


def records_of(workdir: Path) -> list:
    records, problems = perflog.read([str(workdir / 'perflogs')])
    assert not problems, problems
    return records


def chained_config(tmp_path: Path, **extras) -> str:
    """RFM_CONFIG_FILES: settings.py, then a config whose system (found first: ReFrame
    puts a later file's systems before the earlier ones') is ``local`` with ``extras``
    changed in its partition."""
    site = tmp_path / 'site_config.py'
    site.write_text(f'''\
import copy
import runpy

_base = runpy.run_path({str(SETTINGS)!r})['site_configuration']
_system = copy.deepcopy(next(s for s in _base['systems'] if s['name'] == 'local'))
_system['name'] = 'h5r-test'
_system['partitions'][0]['extras'].update({extras!r})
site_configuration = {{'systems': [_system]}}
''')
    return f'{SETTINGS}:{site}'


@pytest.fixture
def full_fs(tmp_path, request) -> Path:
    """An 8 MiB tmpfs, unmounted after the test: a file system the benchmarks fill."""
    if os.geteuid() != 0:
        pytest.skip('mounting a small tmpfs (a real "No space left on device") needs root')
    mnt = tmp_path / 'small-fs'
    mnt.mkdir()
    out = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', str(mnt)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs: {out.stderr.strip()}')

    def unmount():
        if subprocess.run(['umount', str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(['umount', '-l', str(mnt)], capture_output=True)
    request.addfinalizer(unmount)
    return mnt


def ior_binary() -> str | None:
    """IOR of the Spack manifest (any HDF5 build), else of PATH."""
    for build in tools.builds():
        try:
            return tools.find('ior', build).path
        except tools.ToolNotFound:
            continue
    return None


@pytest.fixture(scope='module')
def ior_path() -> str:
    path = ior_binary()
    if path is None:
        pytest.skip('ior not found (Spack manifest or PATH): install the Spack environment '
                    '(spack-env/README.md) or put a build of hpc/ior on PATH')
    return path


# ------------------------------------------------------------------------------------
# IOR through MPI-IO on a full file system

def run_ior_mpiio(ior_exe: str, rundir: Path, target: Path) -> int:
    """``ior -a MPIIO`` collective, 2 ranks x 8 MiB, 2 repetitions into ``target``; its
    stdout, stderr and JSON summary in ``rundir`` (as a run directory holds them)."""
    command = ['mpirun', '-np', '2', ior_exe, '-a', 'MPIIO', '-c', '-b', '8m', '-t', '1m',
               '-s', '1', '-i', '2', '-e', '-w', '-r', '-k', '-o', str(target / 'ior.dat'),
               '-O', 'summaryFormat=JSON', '-O', f'summaryFile={rundir / "summary.json"}']
    out = subprocess.run(command, env={**os.environ, **MPI_ENV, 'OMPI_MCA_io': 'ompio'},
                         capture_output=True, text=True, timeout=180)
    (rundir / 'stdout.txt').write_text(out.stdout)
    (rundir / 'stderr.txt').write_text(out.stderr)
    return out.returncode


def test_ior_mpiio_on_a_full_file_system_is_a_failed_run(ior_path, full_fs, tmp_path):
    rundir = tmp_path / 'run'
    rundir.mkdir()
    run_ior_mpiio(ior_path, rundir, full_fs)
    files = {p.name: p.read_text() for p in rundir.iterdir()}
    assert 'No space left on device' in files['stderr.txt']
    # IOR counts what it handed to MPI-IO: its summary alone says all was moved ...
    ior.parse({'summary.json': files['summary.json']})
    # ... its stdout says when the file on disk is short, stderr says why: each alone fails
    # the run. The file is sparse: when the last blocks land before the disk fills, stat()
    # finds the full size and IOR prints no size warning (seen once, in CI under
    # load), so only stderr is sure to tell.
    if 'Stat() of aggregate file size' in files['stdout.txt']:
        with pytest.raises(RunFailed, match='did not all reach the file system'):
            ior.parse({'stdout.txt': files['stdout.txt'], 'summary.json': files['summary.json']})
    with pytest.raises(RunFailed, match=r'file system is full \(ENOSPC\).*No space left'):
        ior.parse({'stderr.txt': files['stderr.txt'], 'summary.json': files['summary.json']})
    out = h5regress('parse', 'ior', str(rundir))
    assert out.returncode == 1 and out.stdout == ''
    assert 'failed run' in out.stderr and 'No space left on device' in out.stderr


def test_ior_check_on_a_full_scratch_fails_with_the_cause(ior_path, full_fs, tmp_path):
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path, scratch=str(full_fs)),
           'PATH': f'{Path(ior_path).parent}{os.pathsep}{os.environ["PATH"]}'}
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n', 'ior_check.*MPIIO-collective',
                       '-S', 'ior_check.block_size=8m', '-S', 'ior_check.transfer_size=1m',
                       '-S', 'ior_check.repetitions=2'], tmp_path, env=env, timeout=600)
    assert out.returncode != 0, out.stdout
    assert 'sanity' in out.stdout
    assert 'No space left on device' in out.stdout or 'did not all reach' in out.stdout
    assert records_of(tmp_path) == []
    assert list(full_fs.iterdir()) == []            # the data were removed


# ------------------------------------------------------------------------------------
# fio: ENOSPC, a worker killed

def fio_processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every fio process."""
    procs = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as fp:
                stat = fp.read()
            with open(f'/proc/{entry}/cmdline', 'rb') as fp:
                cmdline = fp.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        comm = stat[stat.index('(') + 1:stat.rindex(')')]
        if comm == 'fio':
            procs[int(entry)] = (int(stat[stat.rindex(')') + 2:].split()[1]), cmdline)
    return procs


def fio_workers(marker: str) -> list[int]:
    """fio workers (forked by fio: ``--thread`` is off by default) whose command line
    holds ``marker``."""
    procs = fio_processes()
    return sorted(pid for pid, (ppid, cmd) in procs.items()
                  if ppid in procs and marker in cmd)


@needs_fio
def test_fio_worker_killed_is_a_failed_run(tmp_path):
    data = tmp_path / 'data'
    data.mkdir()
    output = tmp_path / 'fio-write.json'
    # 2 jobs x 32 MiB at 8 MiB/s: four seconds to find and kill one worker
    proc = subprocess.Popen(['fio', '--rw=write', '--bs=1M', '--size=32M', '--numjobs=2',
                             '--rate=8M', '--ioengine=psync', '--group_reporting',
                             '--output-format=json', '--name=seqwrite',
                             f'--directory={data}', f'--output={output}'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while len(fio_workers(str(data))) < 2 and time.time() < deadline:
            time.sleep(0.05)
        workers = fio_workers(str(data))
        assert len(workers) == 2, 'fio did not start its two workers'
        time.sleep(0.5)
        os.kill(workers[-1], signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = output.read_text()
    assert 'got signal=9' in text
    with pytest.raises(RunFailed, match=r'died of a signal.*got signal=9'):
        fio.parse({'fio-write.json': text})
    # without fio's line, the bytes tell: the group has one worker's bytes
    json_only = '\n'.join(line for line in text.splitlines() if not line.startswith('fio:'))
    with pytest.raises(RunFailed, match=r'moved \d+ B, asked for 67108864 B'):
        fio.parse({'fio-write.json': json_only})
    out = h5regress('parse', 'fio', str(output))
    assert out.returncode == 1 and out.stdout == '' and 'got signal=9' in out.stderr


@needs_fio
def test_fio_on_a_full_file_system_names_the_errno(full_fs, tmp_path):
    output = tmp_path / 'fio-write.json'
    subprocess.run(['fio', '--rw=write', '--bs=1M', '--size=8M', '--numjobs=2',
                    '--group_reporting', '--output-format=json', '--name=seqwrite',
                    f'--directory={full_fs}', f'--output={output}'],
                   capture_output=True, text=True, timeout=120)
    with pytest.raises(RunFailed, match=r'No space left on device \(errno 28\)'):
        fio.parse({'fio-write.json': output.read_text()})


@needs_fio
def test_fio_check_on_a_full_scratch_names_enospc(full_fs, tmp_path):
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path, scratch=str(full_fs))}
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*buffered'],
                      tmp_path, env=env)
    assert out.returncode != 0
    assert 'No space left on device (errno 28)' in out.stdout, out.stdout
    assert records_of(tmp_path) == []
    assert list(full_fs.iterdir()) == []


@needs_fio
def test_fio_check_with_a_worker_killed_fails_without_records(tmp_path):
    """``kill -9`` of one of the check's real fio workers, in the middle of its writes
    (killed during its set-up, fio 3.33's main process may wait forever on a lock the
    worker held: the time limit ends that job)."""
    marker = str(tmp_path)
    stop, killed = threading.Event(), []

    def written(pid: int) -> int:
        try:
            with open(f'/proc/{pid}/io') as fp:
                return next(int(line.split()[1]) for line in fp if line.startswith('wchar'))
        except (OSError, StopIteration):
            return 0

    def kill_one_writer():
        while not stop.is_set():
            procs = fio_processes()
            for pid, (ppid, cmd) in procs.items():
                if ppid in procs and marker in cmd and '--rw=write' in cmd and \
                        written(pid) > 16 * 1024 * 1024:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.002)

    watcher = threading.Thread(target=kill_one_writer, daemon=True)
    watcher.start()
    try:
        out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*buffered',
                           '-S', 'fio_check.block_size=4k', '-S', 'fio_check.time_limit=2m'],
                          tmp_path, timeout=300)
    finally:
        stop.set()
        watcher.join()
    assert killed, 'no fio worker was found to kill'
    assert out.returncode != 0
    # fio names the worker's death; or, where fio's main process hangs on a lock the dead
    # worker held (fio 3.33, rarely this late in the writes), the time limit ends the job
    assert 'got signal=9' in out.stdout or 'timed out' in out.stdout, out.stdout
    assert records_of(tmp_path) == []


# ------------------------------------------------------------------------------------
# the data directory: cannot be made; has spaces

@needs_fio
def test_a_data_directory_that_cannot_be_made_stops_the_job(tmp_path):
    (tmp_path / 'a-file').write_text('not a directory\n')
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path,
                                              scratch=str(tmp_path / 'a-file' / 'scratch'))}
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*direct'],
                      tmp_path, env=env)
    assert out.returncode != 0
    assert 'fio never ran: cannot create the data directory' in out.stdout, out.stdout
    assert 'Not a directory' in out.stdout
    assert records_of(tmp_path) == []


@needs_fio
def test_fio_check_with_spaces_in_the_scratch_path(tmp_path):
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path,
                                              scratch='{stagedir}/scratch with spaces',
                                              fio_size='32M')}
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r'], tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    records = records_of(tmp_path)
    assert len(records) == 4 and all(r.value > 0 for r in records)
    for r in records:
        assert 'scratch with spaces' in r.provenance['data_dir']
        # each phase's own provenance: both jobs wrote, then read, their 32 MiB
        assert r.provenance['io_bytes'] == {r.operation: 2 * 32 * 1024 * 1024}
        assert not Path(r.provenance['data_dir']).exists()


def test_flashio_with_spaces_in_the_scratch_path(tmp_path):
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path,
                                              scratch='{stagedir}/scratch with spaces')}
    out = run_reframe(['-c', 'reframe/checks/flashio.py', '-r',
                       '-n', 'flashio_build_check.*hdf5-independent',
                       '-S', 'iterations=1', '-S', 'blocks_per_rank=8'], tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    records = records_of(tmp_path)
    assert {r.operation for r in records if r.metric == 'bw'} == {
        'checkpoint', 'plotfile', 'corner'}
    assert all('scratch with spaces' in r.provenance['data_dir'] for r in records)


# ------------------------------------------------------------------------------------
# FLASH-IO: what was written against what was asked

def kernel_summary() -> dict:
    from test_parse_flashio import _summary
    return _summary()


def test_flashio_summary_with_a_missing_file_or_a_short_file_fails():
    import json
    summary = kernel_summary()
    summary['results'] = summary['results'][:-1]          # the last corner file
    with pytest.raises(RunFailed, match=r'1 corner file\(s\) written, 2 iteration\(s\)'):
        flashio.parse({'flashio.json': json.dumps(summary)})
    summary = kernel_summary()
    summary['results'][0]['size_bytes'] = summary['results'][0]['data_bytes'] - 1
    with pytest.raises(RunFailed, match='less than the .* B of data it must hold'):
        flashio.parse({'flashio.json': json.dumps(summary)})


# ------------------------------------------------------------------------------------
# ci/run-suite as the README writes it

RUN_SUITE = REPO / 'ci' / 'run-suite'


def run_suite(args: list[str], workdir: Path, env: dict | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, 'H5REGRESS_PERFLOG_DIR': str(workdir / 'perflogs'),
                'H5REGRESS_MANIFEST': 'none',
                **(env or {})}
    full_env.pop('RFM_CONFIG_FILES', None)
    return subprocess.run([str(RUN_SUITE)] + args + [
        '-s', str(workdir / 'stage'), '-o', str(workdir / 'output'),
        '--report-file', str(workdir / 'report.json')],
        cwd=cwd or REPO, env=full_env, capture_output=True, text=True, timeout=600)


def test_run_suite_chains_site_configs_and_dry_runs(tmp_path):
    site = tmp_path / 'mysite.py'
    site.write_text('''\
site_configuration = {'systems': [{
    'name': 'mysite', 'descr': 'a site', 'hostnames': ['.*'], 'modules_system': 'nomod',
    'partitions': [{'name': 'compute', 'scheduler': 'local', 'launcher': 'local',
                    'environs': ['gnu-openmpi'], 'max_jobs': 1,
                    'extras': {'scratch': '/site/scratch', 'num_nodes': [1],
                               'tasks_per_node': 2}}]}]}
''')
    # as the README writes it: -C settings.py:mysite.py, from the checkout
    out = run_suite(['-C', f'reframe/config/settings.py:{site}', '-n', 'fio_check.*direct',
                     '--dry-run'], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    scripts = list((tmp_path / 'stage').rglob('rfm_job.sh'))
    assert len(scripts) == 1 and '/mysite/compute/' in str(scripts[0])
    assert '"/site/scratch/fio_check' in scripts[0].read_text()
    assert 'Ran 1/1 test case(s)' in out.stdout
    # nothing ran: no record (ReFrame's dry run logs its variables as null, which the
    # perflog reader skips)
    assert perflog.read([str(tmp_path / 'perflogs')])[0] == []


def test_run_suite_a_selection_matching_nothing_is_an_error(tmp_path):
    out = run_suite(['-n', 'nosuchcheck'], tmp_path)
    assert out.returncode == 64       # usage (README, "Exit codes")
    assert 'no check matches the selection -n nosuchcheck' in out.stderr
    assert not (tmp_path / 'stage').exists()


def test_run_suite_checks_the_perflog_directory_before_running(tmp_path):
    (tmp_path / 'a-file').write_text('')
    out = run_suite(['-n', 'fio_check.*direct'], tmp_path,
                    env={'H5REGRESS_PERFLOG_DIR': str(tmp_path / 'a-file' / 'perflogs')})
    assert out.returncode == 4
    assert f'perflog directory {tmp_path / "a-file" / "perflogs"} cannot be written' \
        in out.stderr
    assert not (tmp_path / 'stage').exists()          # no benchmark ran


# ------------------------------------------------------------------------------------
# h5regress parse: an input too large to be an output

def test_parse_refuses_an_input_above_the_size_limit(tmp_path):
    big = tmp_path / 'huge.json'
    with open(big, 'wb') as fp:           # sparse: 3 GiB without writing them
        fp.truncate(3 * 1024 ** 3)
    out = h5regress('parse', 'fio', str(big))
    assert out.returncode == 4 and 'Traceback' not in out.stderr
    assert str(big) in out.stderr and 'larger than' in out.stderr

