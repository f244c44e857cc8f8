"""h5bench parser against the real outputs in ../shared/fixtures/h5bench (checked by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from h5regress.parsers import h5bench, parser_for
from h5regress.parsers.base import ParseError, RunFailed

FIXTURES = Path(__file__).resolve().parents[1].parent / 'shared' / 'fixtures' / 'h5bench'
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(),
                                reason=f'h5bench fixtures not found at {FIXTURES}')

CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []
#: fail-* cases, and the runner case whose read step fails (its README says so)
FAIL_CASES = [c for c in CASES if c.startswith('fail-')] + \
    ['runner-write-read-1d-interleaved-coll', 'direct-write-subfiling-hdf5-1.10.8']
OK_CASES = [c for c in CASES if c not in FAIL_CASES]
MIB_PER_GB = 1024.0          # h5bench's "GB" is GiB
MIB = 1024 * 1024


def files_of(case: str) -> dict[str, str]:
    root = FIXTURES / case
    return {str(p.relative_to(root)): p.read_text(errors='replace')
            for p in root.rglob('*') if p.is_file() and h5bench.wanted(str(p.relative_to(root)))}


def by_kind(runs, kind):
    return [r for r in runs if r.params['benchmark'] == kind]


def value(run, operation, metric):
    return run.measurement(operation, metric).value


def test_registry_finds_module():
    assert parser_for('h5bench') is h5bench


def test_wanted():
    for name in ('stdout', 'storage/ab/stderr', 'stdout.txt', 'rfm_job.out', 'write.cfg',
                 'storage/x/output.csv', 'hdf5_iotest.ini', 'h5bench-runner.log',
                 'setup-h5bench.log'):
        assert h5bench.wanted(name), name
    assert not h5bench.wanted('storage/test.h5') and not h5bench.wanted('config.json')


def test_units_are_1024_based():
    assert h5bench.to_mib_s('393.198', 'MB/s') == pytest.approx(393.198)
    assert h5bench.to_mib_s('3.357', 'GB/s') == pytest.approx(3.357 * 1024)
    assert h5bench.to_mib_s('2.630', 'TB/s') == pytest.approx(2.630 * 1024 ** 2)
    assert h5bench.to_mib_s('512.000', ' B/s') == pytest.approx(512 / MIB)
    assert h5bench.to_bytes('640.000', 'MB') == 640 * MIB
    assert h5bench.to_bytes('1.5', 'KB') == 1536
    with pytest.raises(ParseError):
        h5bench.to_mib_s('1', 'MiB/sec')


def test_compute_time_units():
    assert h5bench.compute_time_s('100 ms') == pytest.approx(0.1)
    assert h5bench.compute_time_s('2') == 2.0
    assert h5bench.compute_time_s('5 s') == 5.0
    assert h5bench.compute_time_s('250 us') == pytest.approx(250e-6)
    assert h5bench.compute_time_s('1 min') == 60.0


@pytest.mark.parametrize('case', FAIL_CASES)
def test_every_failure_fixture_is_run_failed(case):
    with pytest.raises(RunFailed):
        h5bench.parse(files_of(case))


@pytest.mark.parametrize('case', OK_CASES)
def test_every_success_fixture_parses(case):
    runs = h5bench.parse(files_of(case))
    assert runs
    for run in runs:
        assert run.tool == 'h5bench' and run.params['num_ranks'] == 2
        assert run.measurements
        records = run.to_records(run_id='r', timestamp='2026-11-21T00:00:00+00:00')
        assert all(r.unit in ('MiB/s', 's', 'B') for r in records)


def test_direct_write_numbers_by_hand():
    (run,) = h5bench.parse(files_of('direct-write-1d-contig-coll'))
    # SYNC Raw write rate: 393.198 MB/s ; SYNC Observed write rate: 328.554 MB/s
    assert value(run, 'write', 'raw_rate') == pytest.approx(393.198)
    assert value(run, 'write', 'observed_rate') == pytest.approx(328.554)
    assert value(run, 'write', 'size') == 640 * MIB
    assert value(run, 'write', 'metadata_time') == pytest.approx(0.002)
    assert value(run, 'write', 'raw_time') == pytest.approx(1.628)
    assert value(run, 'write', 'observed_time') == pytest.approx(2.348)
    assert value(run, 'write', 'h5fflush_time') == pytest.approx(0.283)
    p = run.params
    assert p['benchmark'] == 'write' and p['mode'] == 'SYNC'
    assert p['mem_pattern'] == 'CONTIG' and p['file_pattern'] == 'CONTIG'
    assert p['num_dims'] == 1 and p['dim_1'] == 2097152 and p['timesteps'] == 5
    assert p['collective_data'] is True and p['collective_metadata'] is True
    assert p['emulated_compute_time_per_timestep'] == '100 ms'
    assert p['emulated_compute_time_per_timestep_s'] == pytest.approx(0.1)
    assert p['subfiling'] is False
    assert 'csv_file' not in p


def test_direct_read_numbers_by_hand():
    (run,) = h5bench.parse(files_of('direct-read-1d-contig-coll'))
    # SYNC Raw read rate: 3.357 GB/s ; SYNC Observed read rate: 3.267 GB/s
    assert value(run, 'read', 'raw_rate') == pytest.approx(3.357 * MIB_PER_GB)
    assert value(run, 'read', 'observed_rate') == pytest.approx(3.267 * MIB_PER_GB)
    assert value(run, 'read', 'size') == 640 * MIB
    assert run.params['benchmark'] == 'read' and run.params['read_option'] == 'FULL'


def test_csv_alone_gives_the_same_numbers():
    files = {k: v for k, v in files_of('direct-write-1d-contig-coll').items()
             if k in ('write.cfg', 'write.csv')}
    (run,) = h5bench.parse(files)
    assert value(run, 'write', 'raw_rate') == pytest.approx(393.198)
    assert value(run, 'write', 'size') == 640 * MIB


def test_stale_csv_is_detected():
    files = files_of('direct-write-1d-contig-coll')
    files['write.csv'] = files_of('direct-write-subfiling-hdf5-1.14.6')['write-subfiling.csv']
    with pytest.raises(ParseError, match='not from the same run'):
        h5bench.parse(files)


def test_runner_gives_one_run_per_benchmark():
    runs = h5bench.parse(files_of('runner-write-read-1d-contig-coll'))
    (w,) = by_kind(runs, 'write')
    (r,) = by_kind(runs, 'read')
    assert value(w, 'write', 'raw_rate') == pytest.approx(382.724)
    assert value(r, 'read', 'raw_rate') == pytest.approx(5.547 * MIB_PER_GB)
    assert value(r, 'read', 'metadata_time') == pytest.approx(0.007)
    assert 'h5bench_write' in w.provenance['command']
    indep = h5bench.parse(files_of('runner-write-read-1d-contig-indep'))
    assert all(run.params['collective_data'] is False for run in indep)


def test_absurd_rate_fails_without_stderr():
    """The plausibility ceiling alone catches h5bench_write's 2.63 TB/s."""
    files = files_of('fail-direct-write-nonexistent-dir')
    del files['stderr.txt']
    with pytest.raises(RunFailed, match='plausibility ceiling'):
        h5bench.parse(files)
    runner = files_of('fail-runner-write-bad-path')
    storage = {k: v for k, v in runner.items()
               if k.startswith('storage/') and not k.endswith('stderr')}
    with pytest.raises(RunFailed, match='plausibility ceiling'):       # 715.103 GB/s
        h5bench.parse(storage)
    # the ceiling is configurable
    with pytest.raises(RunFailed, match='plausibility ceiling'):
        h5bench.parse(files_of('direct-write-1d-contig-coll'), max_rate_per_rank=100.0)


def test_async_mode_bounds_only_the_observed_rate():
    files = files_of('direct-write-1d-contig-coll')
    files['stdout.txt'] = (files['stdout.txt'].replace('Mode: SYNC', 'Mode: ASYNC')
                           .replace('SYNC Raw write rate: 393.198 MB/s',
                                    'ASYNC Raw write rate: 393.198 TB/s')
                           .replace('SYNC Observed', 'ASYNC Observed'))
    del files['write.csv']
    (run,) = h5bench.parse(files)
    assert run.params['mode'] == 'ASYNC'
    assert value(run, 'write', 'raw_rate') == pytest.approx(393.198 * 1024 ** 2)


def test_hdf5_error_stack_named():
    with pytest.raises(RunFailed, match=r'H5Fcreate\(\): unable to create file'):
        h5bench.parse(files_of('fail-direct-write-nonexistent-dir'))


def test_subfiling_without_vfd_is_unsupported_not_a_fallback():
    """HDF5 1.10.8: h5bench refuses SUBFILING=YES and exits 1; nothing ran."""
    with pytest.raises(h5bench.UnsupportedFeature, match='does not support SUBFILING'):
        h5bench.parse(files_of('direct-write-subfiling-hdf5-1.10.8'))
    (run,) = h5bench.parse(files_of('direct-write-subfiling-hdf5-1.14.6'))
    assert run.params['subfiling'] is True and run.params['collective_data'] is False
    assert value(run, 'write', 'raw_rate') == pytest.approx(294.675)


def test_runner_failures_name_the_benchmark():
    with pytest.raises(RunFailed, match=r'h5bench \[exerciser\].*not available'):
        h5bench.parse(files_of('fail-runner-exerciser-not-on-PATH'))
    with pytest.raises(RunFailed, match=r'h5bench \[read\].*unsupported value/patterns'):
        h5bench.parse(files_of('runner-write-read-1d-interleaved-coll'))
    # the write of that runner directory succeeded and stays available
    outcomes = h5bench.outcomes(files_of('runner-write-read-1d-interleaved-coll'))
    ok = [r for _, r in outcomes if not isinstance(r, RunFailed)]
    assert len(ok) == 1 and value(ok[0], 'write', 'raw_rate') == pytest.approx(268.636)


def test_runner_mode_fallback_is_unsupported():
    """The runner warns when ASYNC was asked for but the run was SYNC (no async VOL)."""
    files = files_of('runner-write-read-1d-contig-coll')
    log = 'h5bench-runner.log'
    lines = files[log].splitlines()
    done = next(i for i, ln in enumerate(lines) if '[write] - Complete' in ln)
    lines.insert(done, '2026-11-21 19:51:12,195 h5bench - WARNING - '
                       'Requested ASYNC mode but ran in SYNC mode')
    files[log] = '\n'.join(lines)
    with pytest.raises(h5bench.UnsupportedFeature, match='Requested ASYNC mode'):
        h5bench.parse(files)


def test_exerciser_numbers_by_hand():
    runs = h5bench.parse(files_of('runner-exerciser'))
    assert len(runs) == 2
    coll = next(r for r in runs if r.params['independent_io'] is False)
    indep = next(r for r in runs if r.params['independent_io'] is True)
    # Med 512: RawWrBDWTH 15.964267, RawRdBDWTH 29.189755; Med 8192: H5Fopen 0.002109
    assert value(coll, 'write', 'raw_rate_512B') == pytest.approx(15.964267)
    assert value(coll, 'read', 'raw_rate_512B') == pytest.approx(29.189755)
    assert value(coll, 'file_open', 'time_8192B') == pytest.approx(0.002109)
    assert value(indep, 'write', 'raw_rate_2048B') == pytest.approx(95.387028)
    assert coll.params['minels'] == [8, 8] and coll.params['num_dims'] == 2
    assert indep.params['indepio'] is True


def test_exerciser_incomplete_fails():
    files = files_of('runner-exerciser')
    key = next(k for k in files if k.endswith('e7fd0850/stdout'))
    files[key] = files[key].replace('All done -- Finishing normally.\n', '')
    with pytest.raises(RunFailed, match='did not finish'):
        h5bench.parse(files)


def test_metadata_numbers_by_hand():
    (run,) = h5bench.parse(files_of('runner-metadata'))
    assert value(run, 'write', 'rate_max') == pytest.approx(5.70)
    assert value(run, 'read', 'rate_min') == pytest.approx(2.67)
    assert value(run, 'write', 'size') == 66048
    assert value(run, 'total', 'time') == pytest.approx(0.04)
    assert value(run, 'create', 'time_max') == pytest.approx(0.01)
    p = run.params
    assert p['steps'] == 10 and p['arrays'] == 100 and p['layout'] == 'contiguous'
    assert p['mpi_io'] == 'independent' and p['num_ranks'] == 2


def test_truncated_runner_fails():
    files = files_of('runner-write-read-1d-contig-coll')
    log = files['h5bench-runner.log']
    files['h5bench-runner.log'] = log.replace('Finishing h5bench Suite', '')
    with pytest.raises(RunFailed, match='Finishing h5bench Suite'):
        h5bench.parse(files)
    files = files_of('runner-write-read-1d-contig-coll')
    files = {k: v for k, v in files.items() if '4849a5ca' not in k}
    with pytest.raises(RunFailed, match='4849a5ca is missing'):
        h5bench.parse(files)


def test_empty_csv_and_no_stdout_is_incomplete():
    with pytest.raises(RunFailed, match='no results'):
        h5bench.parse({'write.cfg': 'MEM_PATTERN=CONTIG\nCSV_FILE=write.csv\n', 'write.csv': ''})


def test_not_h5bench_output():
    with pytest.raises(ParseError):
        h5bench.parse({'notes.txt': 'hello'})


def test_csv_units_are_1024_based_too():
    text = ('metric, value, unit\noperation, write, \nranks, 2, \ntotal size, 1.500, GB\n'
            'raw rate, 512.000, KB/s\nobserved rate, 2.000, MB/s\n')
    res = h5bench.parse_csv_results(text, 'output.csv')
    assert res['size'] == 1.5 * 1024 ** 3
    assert res['raw_rate'] == pytest.approx(0.5) and res['observed_rate'] == pytest.approx(2.0)
    with pytest.raises(ParseError, match='not a number'):
        h5bench.parse_csv_results('metric, value, unit\ntotal size, 1.0, parsecs\n', 'x.csv')
