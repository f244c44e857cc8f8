"""The checks end to end on the `local` system, for real: fio always, IOR when installed."""

import shutil
from pathlib import Path

import pytest

from h5regress import perflog
from reframe_run import REPO, UNDER_LOAD, run_reframe


def records_of(workdir):
    records, problems = perflog.read([str(workdir / 'perflogs')])
    assert not problems, problems
    return records


def test_fio_end_to_end(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r'], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    records = records_of(tmp_path)
    assert sorted((r.params['mode'], r.operation) for r in records) == [
        ('buffered', 'read'), ('buffered', 'write'), ('direct', 'read'), ('direct', 'write')]
    for r in records:
        assert r.tool == 'fio' and r.metric == 'bw' and r.unit == 'MiB/s' and r.value > 0
        assert r.higher_is_better and r.result == 'pass'
        assert r.system == 'local:default' and r.hdf5_build == 'none'
        assert r.params['fallocate'] == 'native' and r.params['num_ranks'] == 2
        prov = r.provenance
        assert prov['tool_version'].startswith('fio-')
        assert prov['fs_type'] and prov['mpi_library'].startswith(('Open MPI', 'mpirun'))
        assert prov['nodelist'] and '--rw=' in prov['command_line']
        # the data were removed after the run
        assert not Path(prov['data_dir']).exists()
    # the two phases of one run share its run id and config hash
    by_mode = {}
    for r in records:
        by_mode.setdefault(r.params['mode'], set()).add((r.run_id, r.config_hash))
    assert all(len(ids) == 1 for ids in by_mode.values())
    assert len({r.config_hash for r in records}) == 2
    # the results database is on: ReFrame compares against stored sessions
    assert (tmp_path / 'perflogs' / 'results.db').exists()
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-n', 'fio_check',
                       '--performance-compare=now-1d:now/now-1d:now/mean:+result/'], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count('write_bw') == 2 and out.stdout.count('read_bw') == 2


def fio_beside_references(tmp_path, write_bw: str):
    """fio.py beside a references file of the test's own (found relative to it) whose
    every row's ``write_bw`` entry is ``write_bw``."""
    (tmp_path / 'checks').mkdir()
    (tmp_path / 'config' / 'references').mkdir(parents=True)
    shutil.copy(REPO / 'reframe' / 'checks' / 'fio.py', tmp_path / 'checks' / 'fio.py')
    (tmp_path / 'config' / 'references' / 'fio.yaml').write_text(f"""
fio_check:
  $index: ['$partition', 'case']
  '.*':
    '.*':
      write_bw: {write_bw}
""")
    return tmp_path / 'checks' / 'fio.py'


def test_a_run_outside_its_envelope_is_still_a_sample(tmp_path):
    check = fio_beside_references(tmp_path, "[1000000000, -0.01, 0.01, 'MiB/s']")
    out = run_reframe(['-c', str(check), '-r', '-n', 'fio_check.*direct'], tmp_path)
    assert out.returncode != 0
    assert 'write_bw' in out.stdout and 'performance' in out.stdout
    records = records_of(tmp_path)
    write = [r for r in records if r.operation == 'write']
    read = [r for r in records if r.operation == 'read']
    assert len(write) == 1 and write[0].result == 'perf_fail'
    assert write[0].provenance['reference']['result'] == 'fail'
    # the run failed in the performance phase only: all its variables are samples
    assert len(read) == 1 and read[0].result == 'perf_fail'


def test_under_load_a_missed_reference_is_printed_and_sanity_still_judged(tmp_path):
    """The `beside` tests' runs (UNDER_LOAD): a reference no run can meet is printed
    beside its value and passes; a run that did not do its work still fails. Without
    it, h5bench's collective write under the fast tests (4.1 MiB/s, floor 10) failed
    `.ci/run` of stop 38."""
    check = fio_beside_references(tmp_path, "[1000000000, -0.01, 0.01, 'MiB/s']")
    out = run_reframe(['-c', str(check), '-r', '-n', 'fio_check.*direct'] + UNDER_LOAD,
                      tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'r:1000000000' in out.stdout
    failed = run_reframe(['-c', str(check), '-r', '-n', 'fio_check.*direct',
                          '-S', 'fio_check.ioengine=no-such-engine'] + UNDER_LOAD,
                         tmp_path / 'failed')
    assert failed.returncode != 0 and 'sanity' in failed.stdout


def test_a_malformed_reference_file_names_the_file_and_key(tmp_path):
    check = fio_beside_references(tmp_path, 'fast')
    out = run_reframe(['-c', str(check), '-r', '-n', 'fio_check.*direct'], tmp_path)
    # ReFrame itself only warns and drops the test: it names the file and the entry
    text = out.stdout + out.stderr
    assert 'reference parse error' in text and 'fio.yaml' in text and 'write_bw' in text


def test_a_failed_run_leaves_no_performance_record(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/fio.py', '-r', '-n', 'fio_check.*direct',
                       '-S', 'fio_check.ioengine=no-such-engine'], tmp_path)
    assert out.returncode != 0
    assert 'sanity' in out.stdout
    assert records_of(tmp_path) == []


def test_a_missing_tool_is_skipped_with_how_to_get_it(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n', 'ior_check.*POSIX'],
                      tmp_path, env={'PATH': '/usr/bin:/bin'})
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'ior not found on PATH' in out.stdout and 'spack-env' in out.stdout
    assert '2 skipped' in out.stdout


@pytest.mark.slow
def test_ior_end_to_end(ior_on_local):
    out, workdir = ior_on_local     # conftest.py: every IOR row, one run
    assert out.returncode == 0, out.stdout + out.stderr
    records = records_of(workdir)
    means = {(r.params['api'], r.params['preset'], r.params['layout'], r.operation): r
             for r in records if r.metric == 'bw_mean'}
    assert len(means) == 16
    for (api, _, _, op), r in means.items():
        assert r.value > 0 and len(r.samples) == 3
        if op == 'read':   # each read repetition after a drop (when permitted)
            assert r.provenance['read_page_cache'] in ('dropped', 'kept')
            assert len(r.provenance['read_page_cache_repetitions']) == 3
        if api == 'HDF5':
            assert r.provenance['api_version'].startswith('1.')
            assert r.provenance['hdf5_library_version'].startswith('1.')


def test_flashio_built_from_this_tree_end_to_end(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/flashio.py', '-r', '-n', 'flashio_build_check',
                       '-S', 'iterations=2'], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    records = records_of(tmp_path)
    rows = {(r.params['api'], r.params['transfer']) for r in records}
    assert rows == {('hdf5', 'collective'), ('hdf5', 'independent'),
                    ('mpiio', 'collective'), ('mpiio', 'independent')}
    bw = [r for r in records if r.metric == 'bw']
    assert {r.operation for r in bw} == {'checkpoint', 'plotfile', 'corner'}
    for r in bw:
        assert r.unit == 'MiB/s' and r.value > 0 and len(r.samples) == 2
        assert r.provenance['tool_source'] == 'built from kernels/flash-io'
        assert r.provenance['hdf5_version'].startswith('1.')
    # HDF5 and MPI-IO runs of one transfer mode differ only in the API
    assert len({r.config_hash for r in records}) == 4


def test_a_missing_tool_fails_where_every_tool_is_required(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r', '-n', 'ior_check.*POSIX'],
                      tmp_path, env={'PATH': '/usr/bin:/bin', 'H5REGRESS_REQUIRE_TOOLS': '1'})
    assert out.returncode != 0
    assert 'ior not found on PATH' in out.stdout and 'H5REGRESS_REQUIRE_TOOLS' in out.stdout
    assert 'skipped' not in out.stdout.split('SUMMARY')[-1]
