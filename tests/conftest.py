"""Shared pytest fixtures."""

# ---------------------------------------------------------------------------
# SLURM cluster (issue 6): a real two-node SLURM on this host, see
# tests/slurm_cluster.py and tests/SLURM.md.
# ---------------------------------------------------------------------------

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import (REQUIRED_PROGRAMS, SlurmCluster,  # noqa: E402
                           SlurmClusterError, missing_programs)

SLURM_PACKAGES = "munge slurmctld slurmd slurm-client slurmdbd mariadb-server"

# ---------------------------------------------------------------------------
# Fixtures of real outputs (issue 16): the project's own in tests/fixtures/ cover
# every tool; ../shared/fixtures, beside the checkout, is an extra set.
# ---------------------------------------------------------------------------
SHARED_FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
_EXTRA = pytest.StashKey[int]()


def _needs_shared_fixtures(item) -> bool:
    """A test that would be skipped because ../shared/fixtures is absent."""
    for mark in item.iter_markers():
        reason = str(mark.kwargs.get("reason", ""))
        if mark.name == "skipif" and mark.args and not mark.args[0]:
            continue
        if mark.name in ("skip", "skipif") and "shared/fixtures" in reason \
                or mark.name == "shared_fixtures":
            return True
    return False


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "shared_fixtures: reads ../shared/fixtures (deselected without it)")


def pytest_collection_modifyitems(config, items):
    """Without ../shared/fixtures its tests are deselected, not skipped: they are an
    extra over the project's own fixtures, and a skip would read as a gap."""
    extra = [item for item in items if _needs_shared_fixtures(item)]
    config.stash[_EXTRA] = len(extra)
    if SHARED_FIXTURES.is_dir():
        return
    if extra:
        config.hook.pytest_deselected(items=extra)
        dropped = set(map(id, extra))
        items[:] = [item for item in items if id(item) not in dropped]


def pytest_terminal_summary(terminalreporter, config):
    """Say how many selected tests are the extras over ../shared/fixtures."""
    count = config.stash.get(_EXTRA, 0)
    if count:
        state = 'run' if SHARED_FIXTURES.is_dir() else 'deselected: ../shared/fixtures is absent'
        terminalreporter.write_line(f'extra fixtures: {count} tests over ../shared/fixtures '
                                    f'({state})')


def slurm_skip_reason():
    """Why SLURM tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "a SLURM cluster needs root (munged, slurmctld, slurmd)"
    missing = missing_programs(REQUIRED_PROGRAMS)
    if missing:
        return (f"SLURM not installed (missing {', '.join(missing)}); "
                f"apt-get install {SLURM_PACKAGES}")
    return None


@pytest.fixture(scope="session")
def slurm_cluster(request):
    """A running SLURM cluster (nodes n1, n2, partition debug, accounting
    when MariaDB and slurmdbd work) for the whole session.

    Its daemons are stopped by PID at the end of the session, also when
    tests fail.  Its directory (configs, logs) is removed unless a test
    failed, then its path is printed.
    """
    reason = slurm_skip_reason()
    if reason:
        pytest.skip(reason)
    workdir = Path(tempfile.mkdtemp(prefix="h5regress-slurm-"))
    cluster = SlurmCluster(workdir)

    def finish():
        cluster.stop()
        if request.session.testsfailed:
            print(f"\nSLURM cluster logs kept in {workdir}/log")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    request.addfinalizer(finish)
    try:
        cluster.start(timeout=60)
    except SlurmClusterError as err:
        pytest.fail(f"SLURM cluster did not start: {err}", pytrace=False)
    return cluster


@pytest.fixture(autouse=True)
def checkfiles_learnt_per_test(monkeypatch):
    """What a ReFrame run of a test taught h5regress.checkfiles (the check files of a
    selection) stays in that test: a fake run's report teaches nothing to another."""
    from h5regress import checkfiles
    monkeypatch.setattr(checkfiles, '_learnt', {})


# ---------------------------------------------------------------------------
# Real runs that several slow tests assert on (one run each per session; a test
# that changes a run's output works on a copy).
# ---------------------------------------------------------------------------
#: the night id of the shared nights (test_reliability_nightly.py reruns it)
SHARED_NIGHT = '2026-11-21'


@pytest.fixture(scope="session")
def injected_night(tmp_path_factory):
    """``ci/nightly --stand-in`` whose candidate writes through HDF5 ten times slower:
    10 pairs at the strict false-discovery rate (0.001) of test_nightly.py, FLASH's own
    80 blocks per rank (a tenfold slowdown needs no 393 MB checkpoint), with --history
    and --bisect over a stand-in repository of two commits, the second as slow.

    Returns (a copy of its verdict: gate.json and report/, the finished process, the
    repository's commits, its --out): tests read the copy; the one that reruns the
    night in its --out (test_reliability_nightly.py) leaves the copy as it was."""
    import shutil
    import subprocess

    from h5regress import bisectbuild
    from reframe_run import REPO

    tmp = tmp_path_factory.mktemp('injected-night')
    shas = bisectbuild.make_standin_repo(tmp / 'repo', [0.0, 9.0])
    out = tmp / 'out'
    cmd = [sys.executable, '-m', 'h5regress.nightly', '--stand-in', '--inject-slowdown', '9',
           '--pairs', '10', '--max-pairs', '10', '--alpha', '0.001',
           '--checks', '^flashio_check.*-collective', '-S', 'flashio_check.iterations=2',
           '-S', 'flashio_check.blocks_per_rank=80', '--out', str(out),
           '--history', str(out / 'history'), '--night', SHARED_NIGHT, '--quiet',
           '--bisect', '--bisect-repo', str(tmp / 'repo'), '--bisect-good', shas[0],
           '--bisect-bad', shas[1]]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    verdict = tmp / 'verdict'
    verdict.mkdir()
    if (out / 'gate.json').exists():
        shutil.copy(out / 'gate.json', verdict)
    if (out / 'report').is_dir():
        shutil.copytree(out / 'report', verdict / 'report')
    return verdict, proc, shas, out


@pytest.fixture(scope="session")
def ior_on_local(tmp_path_factory):
    """Every IOR row on ``local`` at its default sizes (3 repetitions), the ``ior`` of
    PATH or of the Spack environment's first build: one ReFrame run that
    test_local_runs.py and test_ior_validity.py read. Returns (process, its directory)."""
    from reframe_run import path_with_tools, run_reframe

    workdir = tmp_path_factory.mktemp('ior-on-local')
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n', '^ior_check'], workdir,
                      env={'PATH': path_with_tools('ior')})
    return out, workdir
