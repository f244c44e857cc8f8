"""The SLURM cluster of tests/slurm_cluster.py works like a real one.

Needs root and Debian's SLURM packages; skipped otherwise (see conftest).
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from slurm_cluster import (ACCOUNTING_PROGRAMS, MESSAGE_TIMEOUT, SlurmCluster,
                           SlurmClusterError, _proc_stat, missing_programs)

# the SLURM tests bring up a real cluster and run jobs through it: minutes, so slow
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.beside]

HELLO_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size,
           getenv("SLURMD_NODENAME"), sum);
    MPI_Finalize();
    return 0;
}
"""
HELLO_OUTPUT = ["rank 0 of 2 on n1 sum 1", "rank 1 of 2 on n2 sum 1"]
FINAL_STATES = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL",
                "OUT_OF_MEMORY"}


def gone(pid):
    stat = _proc_stat(pid)
    return stat is None or stat[0] == "Z"


def need_accounting(cluster):
    if cluster.accounting:
        return
    if missing_programs(ACCOUNTING_PROGRAMS):
        pytest.skip(f"no accounting: {cluster.accounting_error}")
    pytest.fail(f"accounting did not start: {cluster.accounting_error}")


def sbatch(cluster, *args):
    """Submit a batch job (output discarded); return its id."""
    return cluster.run("sbatch", "--parsable", "--output=/dev/null",
                       *args).stdout.strip()


def sacct_final(cluster, jobids, timeout=120):
    """{jobid: (state, exit code)} once sacct shows every job finished."""
    until = time.monotonic() + timeout
    while True:
        out = cluster.run("sacct", "-X", "-n", "-P", "-o",
                          "JobID,State,ExitCode", "-j", ",".join(jobids)
                          ).stdout
        states = {jobid: (state.split()[0], code) for jobid, state, code
                  in (line.split("|") for line in out.splitlines())}
        if all(states.get(j, ("",))[0] in FINAL_STATES for j in jobids):
            return states
        assert time.monotonic() < until, f"jobs not finished: {states}"
        time.sleep(1)


@pytest.fixture(scope="module", autouse=True)
def overrunning_job(request, tmp_path_factory):
    """(job id, stderr file) of a job that overruns its one-minute limit,
    submitted first so that the limit runs out while other tests run."""
    if "slurm_cluster" not in request.fixturenames:
        return None
    cluster = request.getfixturevalue("slurm_cluster")
    stderr = tmp_path_factory.mktemp("overrun") / "job.err"
    jobid = cluster.run("sbatch", "--parsable", "--time=1",
                        "--output=/dev/null", f"--error={stderr}", "--wrap",
                        "sleep 600").stdout.strip()
    return jobid, stderr


@pytest.fixture(scope="module")
def mpi_hello(tmp_path_factory):
    if missing_programs(["mpicc"]):
        pytest.skip("mpicc not installed (Debian: libopenmpi-dev)")
    build = tmp_path_factory.mktemp("mpi")
    (build / "hello.c").write_text(HELLO_C)
    subprocess.run(["mpicc", "-o", "hello", "hello.c"], cwd=build,
                   check=True)
    return build / "hello"


def test_cluster_comes_up(slurm_cluster):
    # Up means idle, or mixed while the overrunning job runs.
    out = slurm_cluster.run("sinfo", "-h", "-N", "--states=idle,mixed",
                            "-o", "%N %P").stdout
    assert sorted(out.splitlines()) == ["n1 debug*", "n2 debug*"]
    assert slurm_cluster.startup_seconds < 60
    print(f"bring-up {slurm_cluster.startup_seconds:.1f} s")


def test_srun_spans_both_nodes(slurm_cluster):
    out = slurm_cluster.run("srun", "-N2", "-n2", "printenv",
                            "SLURMD_NODENAME").stdout
    assert sorted(out.split()) == ["n1", "n2"]


def test_mpi_hello_with_srun_pmix(slurm_cluster, mpi_hello):
    out = slurm_cluster.run("srun", "--mpi=pmix", "-N2", "-n2",
                            str(mpi_hello)).stdout
    assert sorted(out.splitlines()) == HELLO_OUTPUT


def test_mpi_hello_with_mpirun_in_salloc(slurm_cluster, mpi_hello):
    out = slurm_cluster.run("salloc", "-N2", "-n2", "mpirun", "-np", "2",
                            str(mpi_hello)).stdout
    assert sorted(out.splitlines()) == HELLO_OUTPUT


def test_mpi_hello_with_mpirun_in_sbatch(slurm_cluster, mpi_hello, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -N2 -n2\n"
                      f"mpirun -np 2 {mpi_hello}\n")
    output = tmp_path / "job.out"
    slurm_cluster.run("sbatch", "--wait", f"--output={output}", str(script))
    assert sorted(output.read_text().splitlines()) == HELLO_OUTPUT


def test_sacct_reports_states_and_exit_codes(slurm_cluster):
    need_accounting(slurm_cluster)
    jobs = {
        sbatch(slurm_cluster, "--wrap", "true"): ("COMPLETED", "0:0"),
        sbatch(slurm_cluster, "--wrap", "exit 3"): ("FAILED", "3:0"),
        sbatch(slurm_cluster, "--wrap", "kill -9 $$"): ("FAILED", "0:9"),
        sbatch(slurm_cluster, "-N2", "--wrap", "srun false"):
            ("FAILED", "1:0"),
    }
    assert sacct_final(slurm_cluster, list(jobs)) == jobs


@pytest.fixture
def dead_controller_conf(slurm_cluster, tmp_path):
    """A copy of slurm.conf whose controller port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    text = re.sub(r"^SlurmctldPort=\d+$", f"SlurmctldPort={port}",
                  slurm_cluster.slurm_conf.read_text(), flags=re.M)
    conf = tmp_path / "slurm.conf"
    conf.write_text(text)
    return conf


@pytest.mark.parametrize("command", [
    ["sbatch", "--wrap", "true"],
    ["squeue"],
    ["srun", "true"],
])
def test_clients_fail_fast_without_controller(slurm_cluster,
                                              dead_controller_conf, command):
    env = {**os.environ, **slurm_cluster.env,
           "SLURM_CONF": str(dead_controller_conf)}
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=6 * MESSAGE_TIMEOUT)
    took = time.monotonic() - began
    assert done.returncode != 0
    assert "Unable to contact slurm controller" in done.stderr
    assert took < 2 * MESSAGE_TIMEOUT, f"{command[0]} took {took:.1f} s"


@pytest.fixture
def cluster_dir():
    """A directory for a second cluster; not under pytest's tmp_path,
    whose parents munged refuses (mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="h5regress-slurm-test-"))
    yield path
    shutil.rmtree(path)


def test_stop_ends_exactly_its_daemons(slurm_cluster, cluster_dir):
    """A second cluster, without accounting, next to the session's one."""
    bystander = subprocess.Popen(["sleep", "60"])
    cluster = SlurmCluster(cluster_dir, with_accounting=False)
    try:
        cluster.start(timeout=60)
        pids = [d.pid for d in cluster.daemons]
        assert [d.name for d in cluster.daemons] == [
            "munged", "slurmctld", "slurmd-n1", "slurmd-n2"]
        # A new object on the same directory attaches to the cluster.
        SlurmCluster(cluster_dir).stop()
        assert all(gone(pid) for pid in pids)
        assert not (cluster_dir / "pids.json").exists()
        assert bystander.poll() is None
        # The session's cluster is untouched.
        assert slurm_cluster.run("srun", "-N2", "true").returncode == 0
    finally:
        cluster.stop()
        bystander.kill()
        bystander.wait()


def test_runs_without_accounting_when_mariadb_fails(slurm_cluster,
                                                   cluster_dir):
    class DatabasePortTaken(SlurmCluster):
        def _start_mariadb(self, deadline):
            with socket.create_server(("127.0.0.1", self.db_port)):
                super()._start_mariadb(deadline)

    cluster = DatabasePortTaken(cluster_dir)
    try:
        cluster.start(timeout=60)
        assert not cluster.accounting
        assert "mariadbd exited" in cluster.accounting_error
        assert "Address already in use" in cluster.accounting_error
        assert [d.name for d in cluster.daemons] == [
            "munged", "slurmctld", "slurmd-n1", "slurmd-n2"]
        assert "accounting_storage/none" in cluster.slurm_conf.read_text()
        assert cluster.run("srun", "-N2", "true").returncode == 0
    finally:
        cluster.stop()


def test_failing_daemon_is_named_with_its_log(slurm_cluster, cluster_dir):
    class BrokenConf(SlurmCluster):
        def _write_slurm_conf(self):
            super()._write_slurm_conf()
            with open(self.slurm_conf, "a") as conf:
                conf.write("NoSuchParameter=1\n")

    cluster = BrokenConf(cluster_dir, with_accounting=False)
    with pytest.raises(SlurmClusterError, match="slurmctld exited") as err:
        cluster.start(timeout=30)
    assert "NoSuchParameter" in str(err.value)
    assert not (cluster_dir / "pids.json").exists()
    assert all(gone(d.pid) for d in cluster.daemons)


def test_time_limit_is_reported_as_timeout(slurm_cluster, overrunning_job):
    jobid, stderr = overrunning_job
    # SLURM checks time limits every 30 s: up to 90 s after submission.
    until = time.monotonic() + 150
    while True:
        state = slurm_cluster.run("squeue", "-h", "--states=all", "-j",
                                  jobid, "-o", "%T").stdout.strip()
        if state in FINAL_STATES or time.monotonic() > until:
            break
        time.sleep(1)
    assert state == "TIMEOUT"
    assert re.search(rf"\*\*\* JOB {jobid} ON n[12] CANCELLED AT \S+ DUE TO "
                     rf"TIME LIMIT \*\*\*", stderr.read_text())
    # Without --states, squeue omits finished jobs: ReFrame's squeue
    # scheduler then takes the job for COMPLETED.
    assert slurm_cluster.run("squeue", "-h", "-j", jobid).stdout == ""
    need_accounting(slurm_cluster)
    assert sacct_final(slurm_cluster, [jobid])[jobid] == ("TIMEOUT", "0:0")
