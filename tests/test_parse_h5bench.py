"""h5bench parser against the project's own real outputs in tests/fixtures/h5bench (own-*,
fail-own-*: recorded by tests/fixtures/record-tools.sh; direct-write-var-normal-dist by its
README), numbers checked by hand. Extra, when present: the every-case tests over
../shared/fixtures/h5bench, and the HDF5 1.10.8 subfiling refusal only it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from h5regress.parsers import h5bench, parser_for
from h5regress.parsers.base import ParseError, RunFailed
from reframe_run import FIXTURES as SHARED_FIXTURES, OWN_FIXTURES

OWN = OWN_FIXTURES / 'h5bench'
SHARED = SHARED_FIXTURES / 'h5bench'
extra = pytest.mark.shared_fixtures      # reads ../shared/fixtures: deselected without it

OWN_CASES = sorted(p.name for p in OWN.iterdir() if p.is_dir())
SHARED_CASES = sorted(p.name for p in SHARED.iterdir() if p.is_dir()) if SHARED.is_dir() else []
#: fail-* cases, and the shared runner cases whose read step fails (their README says so)
SHARED_FAILS = ['runner-write-read-1d-interleaved-coll', 'direct-write-subfiling-hdf5-1.10.8']
MIB_PER_GB = 1024.0          # h5bench's "GB" is GiB
MIB = 1024 * 1024


def case_dir(case: str) -> Path:
    """An own case (tests/fixtures/h5bench) or, for the extras, a shared one."""
    return OWN / case if case in OWN_CASES else SHARED / case


def files_of(case: str) -> dict[str, str]:
    root = case_dir(case)
    return {str(p.relative_to(root)): p.read_text(errors='replace')
            for p in root.rglob('*') if p.is_file() and h5bench.wanted(str(p.relative_to(root)))}


def by_kind(runs, kind):
    return [r for r in runs if r.params['benchmark'] == kind]


def value(run, operation, metric):
    return run.measurement(operation, metric).value


def failing(case: str) -> bool:
    return case.startswith('fail-') or case in SHARED_FAILS


FAIL_CASES = [c for c in OWN_CASES if failing(c)] + [
    pytest.param(c, marks=extra) for c in SHARED_CASES if failing(c)]
OK_CASES = [c for c in OWN_CASES if not failing(c)] + [
    pytest.param(c, marks=extra) for c in SHARED_CASES if not failing(c)]


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


def test_own_cases_cover_direct_runner_and_failures():
    assert {'own-direct-write-1d-contig-coll', 'own-direct-read-1d-contig-coll',
            'own-direct-write-subfiling', 'own-runner-write-read-1d-contig-coll',
            'own-runner-exerciser', 'own-runner-metadata'} <= set(OWN_CASES)
    assert {'fail-own-direct-write-nonexistent-dir', 'fail-own-runner-interleaved-read',
            'fail-own-runner-exerciser-not-on-PATH', 'fail-own-runner-write-bad-path'} <= \
        set(OWN_CASES)


def test_direct_write_numbers_by_hand():
    (run,) = h5bench.parse(files_of('own-direct-write-1d-contig-coll'))
    # SYNC Raw write rate: 68.795 MB/s ; SYNC Observed write rate: 50.154 MB/s
    assert value(run, 'write', 'raw_rate') == pytest.approx(68.795)
    assert value(run, 'write', 'observed_rate') == pytest.approx(50.154)
    # Total write size: 192.000 MB = 2 ranks x 1 Mi particles x 32 B x 3 timesteps
    assert value(run, 'write', 'size') == 192 * MIB == 2 * 2 ** 20 * 32 * 3
    assert value(run, 'write', 'metadata_time') == pytest.approx(0.001)
    assert value(run, 'write', 'raw_time') == pytest.approx(2.791)
    assert value(run, 'write', 'observed_time') == pytest.approx(4.028)
    assert value(run, 'write', 'h5fflush_time') == pytest.approx(0.411)
    p = run.params
    assert p['benchmark'] == 'write' and p['mode'] == 'SYNC'
    assert p['mem_pattern'] == 'CONTIG' and p['file_pattern'] == 'CONTIG'
    assert p['num_dims'] == 1 and p['dim_1'] == 1048576 and p['timesteps'] == 3
    assert p['collective_data'] is True and p['collective_metadata'] is True
    assert p['emulated_compute_time_per_timestep'] == '100 ms'
    assert p['emulated_compute_time_per_timestep_s'] == pytest.approx(0.1)
    assert p['subfiling'] is False
    assert 'csv_file' not in p


def test_direct_read_numbers_by_hand():
    (run,) = h5bench.parse(files_of('own-direct-read-1d-contig-coll'))
    # SYNC Raw read rate: 118.197 MB/s ; SYNC Observed read rate: 112.606 MB/s
    assert value(run, 'read', 'raw_rate') == pytest.approx(118.197)
    assert value(run, 'read', 'observed_rate') == pytest.approx(112.606)
    assert value(run, 'read', 'size') == 192 * MIB
    assert value(run, 'read', 'metadata_time') == pytest.approx(0.060)
    assert run.params['benchmark'] == 'read' and run.params['read_option'] == 'FULL'


def test_csv_alone_gives_the_same_numbers():
    files = {k: v for k, v in files_of('own-direct-write-1d-contig-coll').items()
             if k in ('write.cfg', 'write.csv')}
    (run,) = h5bench.parse(files)
    assert value(run, 'write', 'raw_rate') == pytest.approx(68.795)
    assert value(run, 'write', 'size') == 192 * MIB


def test_stale_csv_is_detected():
    files = files_of('own-direct-write-1d-contig-coll')
    files['write.csv'] = files_of('own-direct-write-subfiling')['write-subfiling.csv']
    with pytest.raises(ParseError, match='not from the same run'):
        h5bench.parse(files)


def test_runner_gives_one_run_per_benchmark():
    runs = h5bench.parse(files_of('own-runner-write-read-1d-contig-coll'))
    (w,) = by_kind(runs, 'write')
    (r,) = by_kind(runs, 'read')
    # storage/ef1a451c/stdout: SYNC Raw write rate: 242.799 MB/s;
    # storage/14fa99ae/stdout: SYNC Raw read rate: 93.066 MB/s, Metadata time: 0.001 s
    assert value(w, 'write', 'raw_rate') == pytest.approx(242.799)
    assert value(r, 'read', 'raw_rate') == pytest.approx(93.066)
    assert value(r, 'read', 'metadata_time') == pytest.approx(0.001)
    assert 'h5bench_write' in w.provenance['command']
    assert all(run.params['collective_data'] is True for run in runs)


def test_absurd_rate_fails_without_stderr():
    """h5bench_write exits 0 after failing to create its file and prints 932.835 GB/s:
    the plausibility ceiling alone catches it."""
    case = 'fail-own-direct-write-nonexistent-dir'
    assert '- Exit code: 0' in (case_dir(case) / 'README.md').read_text()
    files = files_of(case)
    assert 'SYNC Raw write rate: 932.835 GB/s' in files['stdout.txt']
    del files['stderr.txt']
    with pytest.raises(RunFailed, match='plausibility ceiling'):
        h5bench.parse(files)
    runner = files_of('fail-own-runner-write-bad-path')
    storage = {k: v for k, v in runner.items()
               if k.startswith('storage/') and not k.endswith('stderr')}
    with pytest.raises(RunFailed, match='plausibility ceiling'):       # 1019.021 GB/s
        h5bench.parse(storage)
    # the ceiling is configurable
    with pytest.raises(RunFailed, match='plausibility ceiling'):
        h5bench.parse(files_of('own-direct-write-1d-contig-coll'), max_rate_per_rank=30.0)


def test_async_mode_bounds_only_the_observed_rate():
    files = files_of('own-direct-write-1d-contig-coll')
    asynchronous = (files['stdout.txt'].replace('Mode: SYNC', 'Mode: ASYNC')
                    .replace('SYNC Raw write rate: 68.795 MB/s',
                             'ASYNC Raw write rate: 68.795 TB/s')
                    .replace('SYNC Observed', 'ASYNC Observed'))
    assert asynchronous.count('ASYNC') == 3
    files['stdout.txt'] = asynchronous
    del files['write.csv']
    (run,) = h5bench.parse(files)
    assert run.params['mode'] == 'ASYNC'
    assert value(run, 'write', 'raw_rate') == pytest.approx(68.795 * 1024 ** 2)


def test_hdf5_error_stack_named():
    # HDF5 1.14's stack names the asynchronous create (1.10's said "H5Fcreate()")
    with pytest.raises(RunFailed, match=r'H5Fcreate_async\(\): unable to asynchronously '
                                        r'create file'):
        h5bench.parse(files_of('fail-own-direct-write-nonexistent-dir'))


def test_subfiling_write():
    """HDF5 1.14.1 (+subfiling): "Use Subfiling: YES", independent data transfers."""
    (run,) = h5bench.parse(files_of('own-direct-write-subfiling'))
    assert run.params['subfiling'] is True and run.params['collective_data'] is False
    assert value(run, 'write', 'raw_rate') == pytest.approx(265.854)
    (plain,) = h5bench.parse(files_of('own-direct-write-1d-contig-coll'))
    assert plain.params['subfiling'] is False


@extra
def test_subfiling_without_vfd_is_unsupported_not_a_fallback():
    """HDF5 1.10.8: h5bench refuses SUBFILING=YES and exits 1; nothing ran. Both HDF5
    builds of the project have the subfiling VFD: only the shared fixtures have this."""
    with pytest.raises(h5bench.UnsupportedFeature, match='does not support SUBFILING'):
        h5bench.parse(files_of('direct-write-subfiling-hdf5-1.10.8'))


def test_runner_failures_name_the_benchmark():
    with pytest.raises(RunFailed, match=r'h5bench \[exerciser\].*not available'):
        h5bench.parse(files_of('fail-own-runner-exerciser-not-on-PATH'))
    # h5bench_read refuses INTERLEAVED; the runner logs it and exits 0 all the same
    case = 'fail-own-runner-interleaved-read'
    assert '- Exit code: 0' in (case_dir(case) / 'README.md').read_text()
    with pytest.raises(RunFailed, match=r'h5bench \[read\].*unsupported value/patterns'):
        h5bench.parse(files_of(case))
    # the write of that runner directory succeeded and stays available
    outcomes = h5bench.outcomes(files_of(case))
    ok = [r for _, r in outcomes if not isinstance(r, RunFailed)]
    # storage/c826c7c9/stdout: SYNC Raw write rate: 85.520 MB/s
    assert len(ok) == 1 and value(ok[0], 'write', 'raw_rate') == pytest.approx(85.520)
    with pytest.raises(RunFailed, match=r'h5bench \[write\].*Error detected in HDF5'):
        h5bench.parse(files_of('fail-own-runner-write-bad-path'))


def test_runner_mode_fallback_is_unsupported():
    """The runner warns when ASYNC was asked for but the run was SYNC (no async VOL)."""
    files = files_of('own-runner-write-read-1d-contig-coll')
    log = 'config-h5bench.log'
    lines = files[log].splitlines()
    done = next(i for i, ln in enumerate(lines) if '[write] - Complete' in ln)
    lines.insert(done, '2026-11-24 05:59:51,063 h5bench - WARNING - '
                       'Requested ASYNC mode but ran in SYNC mode')
    files[log] = '\n'.join(lines)
    with pytest.raises(h5bench.UnsupportedFeature, match='Requested ASYNC mode'):
        h5bench.parse(files)


def test_exerciser_numbers_by_hand():
    runs = h5bench.parse(files_of('own-runner-exerciser'))
    assert len(runs) == 2
    coll = next(r for r in runs if r.params['independent_io'] is False)
    indep = next(r for r in runs if r.params['independent_io'] is True)
    # storage/8af3f5b7/stdout (collective), Med 512: RawWrBDWTH 8.217659,
    # RawRdBDWTH 19.144274; Med 8192: H5Fopen 0.032951
    assert value(coll, 'write', 'raw_rate_512B') == pytest.approx(8.217659)
    assert value(coll, 'read', 'raw_rate_512B') == pytest.approx(19.144274)
    assert value(coll, 'file_open', 'time_8192B') == pytest.approx(0.032951)
    # storage/7a834f66/stdout (useIndependentIO: 1), Med 2048: RawWrBDWTH 57.046167
    assert value(indep, 'write', 'raw_rate_2048B') == pytest.approx(57.046167)
    assert coll.params['minels'] == [8, 8] and coll.params['num_dims'] == 2
    assert indep.params['indepio'] is True


def test_exerciser_incomplete_fails():
    files = files_of('own-runner-exerciser')
    key = next(k for k in files if k.endswith('7a834f66/stdout'))
    files[key] = files[key].replace('All done -- Finishing normally.\n', '')
    with pytest.raises(RunFailed, match='did not finish'):
        h5bench.parse(files)


def test_metadata_numbers_by_hand():
    (run,) = h5bench.parse(files_of('own-runner-metadata'))
    # Write rate [MiB/s]: _3.71 ^6.57; Read rate _2.01 ^4.47; File size [B]: 66048;
    # Wall clock [s]: 0.26; Write time [s]: _0.00 ^0.01
    assert value(run, 'write', 'rate_max') == pytest.approx(6.57)
    assert value(run, 'read', 'rate_min') == pytest.approx(2.01)
    assert value(run, 'write', 'size') == 66048
    assert value(run, 'total', 'time') == pytest.approx(0.26)
    assert value(run, 'write', 'time_max') == pytest.approx(0.01)
    p = run.params
    assert p['steps'] == 10 and p['arrays'] == 100 and p['layout'] == 'contiguous'
    assert p['mpi_io'] == 'independent' and p['num_ranks'] == 2


def test_truncated_runner_fails():
    files = files_of('own-runner-write-read-1d-contig-coll')
    log = files['config-h5bench.log']
    files['config-h5bench.log'] = log.replace('Finishing h5bench Suite', '')
    with pytest.raises(RunFailed, match='Finishing h5bench Suite'):
        h5bench.parse(files)
    files = files_of('own-runner-write-read-1d-contig-coll')
    files = {k: v for k, v in files.items() if 'ef1a451c' not in k}
    with pytest.raises(RunFailed, match='ef1a451c is missing'):
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
    with pytest.raises(ParseError, match="x.csv: unknown h5bench size unit 'parsecs'"):
        h5bench.parse_csv_results('metric, value, unit\ntotal size, 1.0, parsecs\n', 'x.csv')
    # a rate in a unit h5bench does not print: the unit named, not "not a number"
    with pytest.raises(ParseError) as err:
        h5bench.parse_csv_results('metric, value, unit\nraw rate, 512.000, XB/s\n', 'x.csv')
    assert "x.csv: unknown bandwidth unit 'XB/s' (row 'raw rate', value '512.000' XB/s)" \
        == str(err.value)
    with pytest.raises(ParseError, match="row 'ranks': value 'two' is not a number"):
        h5bench.parse_csv_results('metric, value, unit\nranks, two, \n', 'x.csv')


# -- what the figures include (durability labels), on the own real runs ------------

def test_observed_rate_includes_the_flush_and_raw_rate_does_not():
    from h5regress import durability
    (run,) = h5bench.parse(files_of('own-direct-write-1d-contig-coll'))
    assert durability.write_flush_of(run.provenance, 'write', 'observed_rate') == 'fsync'
    assert durability.write_flush_of(run.provenance, 'write', 'raw_rate') == 'none'


def test_read_has_no_write_flush():
    from h5regress import durability
    (run,) = h5bench.parse(files_of('own-direct-read-1d-contig-coll'))
    assert durability.WRITE_FLUSH not in run.provenance


@pytest.mark.parametrize('case, kind', [('own-runner-exerciser', 'exerciser'),
                                        ('own-runner-metadata', 'metadata')])
def test_reads_back_in_one_execution_are_labelled_cached(case, kind):
    """The exerciser and hdf5_iotest read what they have just written, in the same
    execution: no drop can come between, so their reads say the cache was kept."""
    runs = h5bench.parse(files_of(case))
    run = next(r for r in runs if r.params.get('benchmark') == kind)
    assert run.provenance['read_page_cache'] == 'kept'
    assert any('read figures are cached' in w for w in run.warnings)
    assert set(run.provenance['write_flush'].values()) == {'none'}
