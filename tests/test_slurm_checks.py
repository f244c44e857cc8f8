"""The checks through ReFrame's SLURM backends, against the real test SLURM (2 nodes).

Partitions of the `ci-slurm` system (reframe/config/settings.py): the `squeue`
scheduler with srun and with mpirun, the `slurm` scheduler (sacct, accounting)
with srun, and `alloc` (ReFrame inside one allocation, as ci/nightly runs).
"""

import re
import shutil
import subprocess
import time

import pytest

from h5regress import perflog
from reframe_run import (ONE_HOST_TWO_NODES_RETRY, REPO, UNDER_LOAD, reframe_command,
                         reframe_env, run_reframe)

# the SLURM tests bring up a real cluster and run jobs through it: minutes, so slow
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.beside]

#: 1 and 2 nodes of FLASH-IO, fio on one node, IOR when it is installed
CHECKS = r'fio_check.*direct|flashio_build_check.*hdf5-collective|ior_check.*HDF5-collective'


def records_of(workdir):
    records, problems = perflog.read([str(workdir / 'perflogs')])
    assert not problems, problems
    return records


def job_scripts(workdir):
    return {p.parent.name: p.read_text() for p in (workdir / 'stage').rglob('rfm_job.sh')}


def no_accounting(slurm_cluster, partition):
    if partition.startswith('slurm') and slurm_cluster.accounting_error:
        pytest.skip(f'no accounting for sacct: {slurm_cluster.accounting_error}')


@pytest.mark.parametrize('partition', ['squeue-srun', 'squeue-mpirun', 'slurm-srun'])
def test_checks_run_through_each_partition_on_1_and_2_nodes(slurm_cluster, partition,
                                                             tmp_path):
    no_accounting(slurm_cluster, partition)
    start = time.monotonic()
    out = run_reframe(['-c', 'reframe/checks', '--system', f'ci-slurm:{partition}',
                       '-n', CHECKS, '-r'] + UNDER_LOAD + ONE_HOST_TWO_NODES_RETRY,
                      tmp_path, env=slurm_cluster.env)
    took = time.monotonic() - start
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    records = records_of(tmp_path)
    flashio = {r.params['num_nodes']: r for r in records
               if r.tool == 'flash-io' and r.operation == 'checkpoint' and r.metric == 'bw'}
    assert set(flashio) == {1, 2}
    assert flashio[2].params['num_ranks'] == 4
    assert flashio[2].system == f'ci-slurm:{partition}'
    # SLURM's node list, not the host name: the job ran on both nodes
    assert re.fullmatch(r'n\[1-2\]', flashio[2].provenance['nodelist'])
    assert {r.tool for r in records} >= {'fio', 'flash-io'}
    if shutil.which('ior'):
        assert {r.params['num_nodes'] for r in records if r.tool == 'ior'} == {1, 2}
    for name, script in job_scripts(tmp_path).items():
        assert '#SBATCH --partition=debug' in script and '#SBATCH --exclusive' in script
        assert '#SBATCH --time=0:10:0' in script
        assert 'export OMPI_MCA_btl_tcp_if_include=lo' in script
        if partition.endswith('srun'):
            assert 'export SLURM_MPI_TYPE=pmix' in script
        if name.startswith('flashio_build_check'):
            launcher = 'srun ' if partition.endswith('srun') else 'mpirun -np '
            assert launcher in script, name
    print(f'{partition}: {len(job_scripts(tmp_path))} jobs in {took:.0f} s')


def test_checks_run_inside_one_allocation(slurm_cluster, tmp_path):
    """What ci/nightly does on a cluster: one allocation, ReFrame inside it."""
    out = subprocess.run(
        ['salloc', '-N', '2', '--exclusive', '-t', '10',
         *reframe_command(['-c', 'reframe/checks', '--system', 'ci-slurm:alloc',
                           '-n', 'flashio_build_check.*hdf5-collective', '-r']
                         + UNDER_LOAD + ONE_HOST_TWO_NODES_RETRY, tmp_path)],
        env=reframe_env(tmp_path, slurm_cluster.env), cwd=REPO,
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    records = records_of(tmp_path)
    nodes = {r.params['num_nodes']: r.provenance['nodelist'] for r in records}
    assert nodes == {1: 'n[1-2]', 2: 'n[1-2]'}         # the allocation's node list
    # srun inside the allocation runs the row's size, not one task per node of it
    scripts = [p.read_text() for p in tmp_path.rglob('rfm_job.sh')
               if p.parent.name.startswith('flashio_build_check')]
    assert any('srun --nodes=2 --ntasks=4 --ntasks-per-node=2 ' in s for s in scripts), \
        scripts


#: the partitions whose job SLURM kills: the squeue scheduler, and sacct's (accounting)
KILLED_ON = ('squeue-srun', 'slurm-srun')


@pytest.fixture(scope='module')
def killed_runs(slurm_cluster, tmp_path_factory):
    """The ReFrame run of each partition of KILLED_ON whose job SLURM kills, started
    together: each job waits one to two minutes for SLURM to enforce its limit, and the
    two jobs (one node each) wait at once. {partition: (its directory, its process)}."""
    runs = {}
    for partition in KILLED_ON:
        if partition.startswith('slurm') and slurm_cluster.accounting_error:
            continue
        workdir = tmp_path_factory.mktemp(f'killed-{partition}')
        # the job sleeps past its time limit of 1 minute before fio starts
        cmd = reframe_command(['-c', 'reframe/checks/fio.py', '--system',
                               f'ci-slurm:{partition}', '-n', 'fio_check.*direct', '-r',
                               '-S', 'fio_check.time_limit=1m',
                               '-S', 'fio_check.prerun_cmds=sleep 200'], workdir)
        with open(workdir / 'stdout', 'w') as stdout, open(workdir / 'stderr', 'w') as err:
            runs[partition] = workdir, subprocess.Popen(
                cmd, cwd=REPO, env=reframe_env(workdir, slurm_cluster.env), stdout=stdout,
                stderr=err)
    yield runs
    for _, proc in runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize('partition', KILLED_ON)
def test_a_job_slurm_kills_fails_with_the_reason_and_leaves_no_record(
        slurm_cluster, killed_runs, partition):
    no_accounting(slurm_cluster, partition)
    workdir, proc = killed_runs[partition]
    assert proc.wait(timeout=900) != 0
    stdout = (workdir / 'stdout').read_text()
    assert 'DUE TO TIME LIMIT' in stdout or 'TIMEOUT' in stdout, stdout[-3000:]
    assert records_of(workdir) == []


def test_with_slurm_down_a_clear_error_and_no_hang(slurm_cluster, tmp_path):
    dead = tmp_path / 'slurm.conf'
    conf = slurm_cluster.slurm_conf.read_text()
    # a controller port nobody listens on
    dead.write_text(re.sub(r'^SlurmctldPort=\d+', 'SlurmctldPort=9', conf, flags=re.M))
    start = time.monotonic()
    out = run_reframe(['-c', 'reframe/checks/fio.py', '--system', 'ci-slurm:squeue-srun',
                       '-n', 'fio_check.*direct', '-r'], tmp_path,
                      env={**slurm_cluster.env, 'SLURM_CONF': str(dead)}, timeout=300)
    took = time.monotonic() - start
    assert out.returncode != 0
    assert 'Unable to contact slurm controller' in out.stdout + out.stderr, out.stdout[-3000:]
    assert took < 120
    assert records_of(tmp_path) == []
