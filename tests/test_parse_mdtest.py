"""mdtest parser against real outputs: the project's own ``tests/fixtures/mdtest``
(mdtest 4.0.0, the Spack build, recorded by tests/fixtures/record-tools.sh), outputs of
mdtest 3.3.0 / 4.1.0+dev built by hand, embedded at the end of this file, and, as an
extra when present, ``../shared/fixtures/mdtest`` (mdtest 4.1.0+dev)."""

from __future__ import annotations

from pathlib import Path

import pytest

from h5regress.parsers import RunFailed, parser_for
from h5regress.parsers import mdtest
from reframe_run import FIXTURES as SHARED_FIXTURES, OWN_FIXTURES

QUOTED = Path(__file__).resolve().parent / 'fixtures' / 'mdtest' / 'quoted'
OWN = OWN_FIXTURES / 'mdtest'
SHARED = SHARED_FIXTURES / 'mdtest'


def fixture(name: str, root: Path = OWN) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / name).iterdir())
            if mdtest.wanted(p.name)}


def values(run, op: str) -> dict[str, float]:
    return {m.metric: m.value for m in run.measurements if m.operation == op}


def test_files_only_fixture():
    run, = mdtest.parse(fixture('own-posix-files-only-w4k-n200'))
    # SUMMARY rate / SUMMARY time, "File creation" rows
    assert values(run, 'file_create') == {
        'rate_max': 1300.069, 'rate_min': 660.673, 'rate_mean': 980.371,
        'rate_std': 452.121, 'time_max': 0.605, 'time_min': 0.308, 'time_mean': 0.457,
        'time_std': 0.211}
    assert values(run, 'file_stat')['rate_mean'] == 5693.061
    assert values(run, 'tree_remove')['rate_max'] == 22.905
    assert {m.operation for m in run.measurements} == {
        'file_create', 'file_stat', 'file_read', 'file_remove', 'tree_create',
        'tree_remove'}
    rate = run.measurement('file_create', 'rate_mean')
    assert (rate.unit, rate.higher_is_better) == ('ops/s', True)
    time = run.measurement('file_create', 'time_mean')
    assert (time.unit, time.higher_is_better) == ('s', False)
    assert run.params['num_ranks'] == 2 and run.params['nodes'] == 1
    assert run.params['items'] == 200 and run.params['items_total'] == 400
    assert run.params['files_only'] == 1 and run.params['dirs_only'] == 0
    assert run.params['write_bytes'] == run.params['read_bytes'] == 4096
    assert run.params['iterations'] == 2 and run.params['api'] == 'POSIX'
    assert run.provenance['tool_version'] == '4.0.0'
    assert run.provenance['started'] == '2026-11-24T03:05:33'
    assert run.provenance['finished'] == '2026-11-24T03:05:37'
    assert run.provenance['test_dir'] == 'out'
    assert 'rank_details.csv' not in fixture('own-posix-files-only-w4k-n200')


def test_time_table_is_seconds_per_phase():
    # labelled "ms/op" by mdtest 4 but it is the phase time: items / rate, so the
    # slowest phase is the one at the lowest rate (400 files / 660.673 per s = 0.605 s)
    run, = mdtest.parse(fixture('own-posix-files-only-w4k-n200'))
    create = values(run, 'file_create')
    assert create['time_max'] == pytest.approx(400 / create['rate_min'], rel=0.01)
    assert create['time_min'] == pytest.approx(400 / create['rate_max'], rel=0.01)


def test_full_disk_is_run_failed():
    with pytest.raises(RunFailed, match='No space left on device'):
        mdtest.parse(fixture('fail-own-full-disk'))


@pytest.mark.shared_fixtures
@pytest.mark.parametrize('case', sorted(p.name for p in SHARED.iterdir())
                         if SHARED.is_dir() else ['no-shared-fixtures'])
def test_shared_fixtures_parse(case):
    """Extra: every ../shared/fixtures/mdtest case parses (or fails, if fail-*)."""
    files = fixture(case, SHARED)
    if case.startswith('fail-'):
        with pytest.raises(RunFailed):
            mdtest.parse(files)
        return
    run, = mdtest.parse(files)
    create = values(run, 'file_create')
    assert create['rate_min'] <= create['rate_mean'] <= create['rate_max']
    assert run.params['num_ranks'] == 2


def test_mdtest33_rate_and_time():
    run, = mdtest.parse({'stdout.txt': MDTEST33_P})
    assert run.provenance['tool_version'] == '3.3.0'
    assert values(run, 'dir_create') == {
        'rate_max': 10238.286, 'rate_min': 6308.037, 'rate_mean': 8272.962,
        'rate_std': 1964.925, 'time_max': 0.032, 'time_min': 0.020, 'time_mean': 0.026,
        'time_std': 0.006}
    assert values(run, 'file_remove')['rate_mean'] == 378500.163
    assert run.params['items'] == 100 and run.params['iterations'] == 2


def test_mdtest41_directories_and_files():
    run, = mdtest.parse({'stdout.txt': MDTEST41_DIRS})
    assert values(run, 'dir_rename')['rate_mean'] == 112553.442
    assert values(run, 'dir_stat')['rate_std'] == 0.0
    assert len({m.operation for m in run.measurements}) == 10
    assert run.warnings == ['WARNING: Read bytes is 0, thus, a read test will actually '
                            'just open/close']


def test_failures_are_run_failed():
    with pytest.raises(RunFailed, match='FAILED in mdtest_run'):
        mdtest.parse({'stdout.txt': MDTEST33_FAIL})
    with pytest.raises(RunFailed, match='ERROR'):
        mdtest.parse({'stdout.txt': MDTEST41_FAIL, 'stderr.txt': MDTEST41_FAIL_STDERR})
    with pytest.raises(RunFailed, match='MPI abort'):
        mdtest.parse({'stderr.txt': MDTEST41_FAIL_STDERR})


def test_incomplete_output_is_run_failed():
    text = fixture('own-posix-files-only-w4k-n200')['stdout.txt']
    with pytest.raises(RunFailed, match='SUMMARY rate'):
        mdtest.parse({'stdout.txt': text[:text.index('SUMMARY rate')]})
    with pytest.raises(RunFailed, match='finished'):
        mdtest.parse({'stdout.txt': text[:text.index('-- finished')]})


def test_several_executions_in_one_log():
    runs = mdtest.parse({'all.log': MDTEST33_P + MDTEST41_DIRS})
    assert [r.provenance['tool_version'] for r in runs] == ['3.3.0', '4.1.0+dev']
    assert runs[1].provenance['started'] == '2026-11-21T20:12:13'


def test_command_line_forms():
    params = mdtest.command_params("mdtest '-n' '10' -F -u -z2 -b 3 --random-seed=5")
    assert (params['items'], params['files_only'], params['unique_dir'],
            params['depth'], params['branch_factor']) == (10, 1, 1, 2, 3)


def test_wanted_and_registry():
    assert parser_for('mdtest') is mdtest
    assert mdtest.wanted('stdout.txt') and mdtest.wanted('rfm_job.out')
    assert not mdtest.wanted('rank_details.csv') and not mdtest.wanted('README.md')


# ------------------------------------------------------------------------------------
# real outputs of mdtest built by hand from hpc/ior (verbatim; paths are the build's)

# mdtest 3.3.0 (hpc/ior tag 3.3.0, built by hand), stdout of
# mpirun -np 2 --oversubscribe mdtest -n 100 -i 2 -P -d <dir>/out
MDTEST33_P = (QUOTED / 'mdtest33-p.txt').read_text()

# mdtest 3.3.0 into a missing directory (exit 1), stdout of
# mpirun -np 2 --oversubscribe mdtest -F -n 10 -d /scr/does/not/exist/out
MDTEST33_FAIL = """\
-- started at 11/21/2026 20:12:12 --

mdtest-3.3.0 was launched with 2 total task(s) on 1 node(s)
Command line used: /tmp/h5r-ior33/inst/bin/mdtest '-F' '-n' '10' '-d' '/scr/does/not/exist/out'
11/21/2026 20:12:12: Process 0: FAILED in mdtest_run, Unable to create test directory path /scr/does/not/exist/out: No such file or directory
"""

# mdtest 4.1.0+dev (hpc/ior 5fcf0ba, as the shared fixtures), files and directories, stdout of
# mpirun -np 2 --oversubscribe mdtest -n 100 -i 1 -d <dir>/out
MDTEST41_DIRS = (QUOTED / 'mdtest41-dirs.txt').read_text()

# mdtest 4.1.0+dev into a missing directory (exit 255), stdout of
# mpirun -np 2 --oversubscribe mdtest -F -n 10 -d /scr/does/not/exist/out
MDTEST41_FAIL = (QUOTED / 'mdtest41-fail.txt').read_text()

# its stderr
MDTEST41_FAIL_STDERR = (QUOTED / 'mdtest41-fail-stderr.txt').read_text()
