"""The h5paths parser against real outputs of the kernel (tests/fixtures/h5paths/, see its
README: how each was produced), and against those outputs edited to show what it must
refuse."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from h5regress.parsers import ParseError, RunFailed, parser_for
from h5regress.parsers import h5paths
from h5regress.parsers.base import MIB

FIXTURES = Path(__file__).resolve().parent / 'fixtures' / 'h5paths'
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
OK = [c for c in CASES if c.endswith('-ok')]


def case_files(case: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / case).iterdir())
            if h5paths.wanted(p.name)}


def edited(case: str, edit) -> dict[str, str]:
    """The case with its JSON summary changed by ``edit(dict)``."""
    files = case_files(case)
    data = json.loads(files['h5paths.json'])
    edit(data)
    files['h5paths.json'] = json.dumps(data)
    return files


def refuses_fewer_objects(case: str, operation: str, iteration: int, objects: int) -> None:
    """``case`` with the first phase of ``iteration`` touching only ``objects``, fewer than
    its ``--objects`` asked: the parser fails the run, naming both counts."""
    run, = h5paths.parse(case_files(case))

    def fewer(d):
        d['iterations'][iteration]['phases'][0]['objects'] = objects
    asked = run.params['objects']
    with pytest.raises(RunFailed, match=f'{operation} touched {objects} objects, {asked} asked'):
        h5paths.parse(edited(case, fewer))


def test_registered_and_wanted():
    assert parser_for('h5paths') is h5paths
    assert h5paths.wanted('h5paths.json') and h5paths.wanted('stdout')
    assert h5paths.wanted('rfm_job.out') and h5paths.wanted('rfm_job.err')
    assert not h5paths.wanted('exit-code') and not h5paths.wanted('h5p_vds.h5')


def test_a_success_of_every_path_family_is_recorded():
    families = {json.loads((FIXTURES / c / 'h5paths.json').read_text())['path'] for c in OK}
    assert families >= {'compound-subset', 'convert-endian', 'compound-same', 'many-datasets',
                        'attributes', 'open-close', 'partial-chunk', 'chunked-deflate', 'vds',
                        'efc', 'multi-dataset', 'compound-superset', 'strided-chunks',
                        'vds-open', 'flush-datasets', 'append', 'point-selections',
                        'multi-chunk', 'storage-kinds', 'vlen-strings', 'chunk-cache',
                        'vlen-reopen'}


@pytest.mark.parametrize('case', OK)
def test_success(case):
    run, = h5paths.parse(case_files(case))
    data = json.loads((FIXTURES / case / 'h5paths.json').read_text())
    assert run.tool == 'h5paths' and run.params['path'] == data['path']
    assert run.params['num_ranks'] == 2 and run.params['iterations'] == 2
    assert 'prefix' not in run.params and 'keep' not in run.params   # run-specific
    ops = [m.operation for m in run.measurements]
    assert sorted(set(ops)) == sorted(h5paths.PHASES[data['path']])
    for m in run.measurements:
        assert m.value > 0 and len(m.samples) == 2
        assert m.value == pytest.approx(sum(m.samples) / 2)
        assert m.unit == {'bw': 'MiB/s', 'ops_per_s': '1/s', 'time': 's',
                          'peak_rss': 'MiB'}[m.metric]
        assert m.higher_is_better == (m.metric not in ('time', 'peak_rss'))
    # bandwidth is what the kernel moved over the phase's time, per iteration
    first = {ph['phase']: ph for ph in data['iterations'][0]['phases']}
    for m in run.measurements:
        ph = first[m.operation]
        if m.metric == 'bw':
            assert m.samples[0] == pytest.approx(ph['bytes'] / MIB / ph['seconds'])
        elif m.metric == 'ops_per_s':
            assert m.samples[0] == pytest.approx(ph['objects'] / ph['seconds'])
    assert run.provenance['hdf5_version'] in ('1.10.8', '1.14.1')
    assert run.provenance['read_cache'] == (
        'not-evicted: --read-cache keep' if data['params'].get('read_cache') == 'keep' else 'evicted')
    assert run.provenance['files'] and all(f['bytes'] > 0 for f in run.provenance['files'])


def test_the_reopen_cycles_peak_memory_is_a_metric_that_shows_the_leak():
    """vlen-reopen's reopen_read carries the largest rank's peak resident memory: on HDF5
    1.14.1, which keeps a conversion path per cycle (issue 1256), it grows from one
    iteration to the next; on 1.10.8 it stays."""
    def peak(case):
        run, = h5paths.parse(case_files(case))
        data = json.loads((FIXTURES / case / 'h5paths.json').read_text())
        m, = [m for m in run.measurements if m.metric == 'peak_rss']
        assert (m.operation, m.unit, m.higher_is_better) == ('reopen_read', 'MiB', False)
        assert m.samples == [ph['peak_rss_kib'] / 1024 for it in data['iterations']
                             for ph in it['phases'] if ph['phase'] == 'reopen_read']
        return m.samples
    leaky, kept = peak('vlen-reopen-1.14-ok'), peak('vlen-reopen-ok')
    assert leaky[1] > leaky[0] + 2 and kept[1] - kept[0] < 1
    # only the memory phases: the other rows' records keep their metrics
    run, = h5paths.parse(case_files('vlen-strings-1.14-ok'))
    assert not [m for m in run.measurements if m.metric == 'peak_rss']


def test_a_memory_phase_without_its_peak_memory_fails_the_run():
    def without(d):
        del d['iterations'][1]['phases'][1]['peak_rss_kib']
    with pytest.raises(RunFailed, match="iteration 1 reopen_read: peak_rss_kib None is not"):
        h5paths.parse(edited('vlen-reopen-ok', without))


def test_metadata_and_data_phases_get_their_metrics():
    run, = h5paths.parse(case_files('attributes-ok'))
    assert {(m.operation, m.metric) for m in run.measurements} == {
        ('create', 'ops_per_s'), ('create', 'time'), ('open_read', 'ops_per_s'),
        ('open_read', 'time')}
    run, = h5paths.parse(case_files('compound-subset-ok'))
    assert {m.operation for m in run.measurements if m.metric == 'bw'} == {
        'write', 'read', 'write_subset'}


def test_a_collective_row_that_hdf5_ran_independently_says_so():
    run, = h5paths.parse(case_files('compound-subset-ok'))
    assert run.provenance['mpio_actual_io_mode']['read'] == 'no-collective'
    assert any('HDF5 did independent I/O in read, write_subset' in w for w in run.warnings)
    run, = h5paths.parse(case_files('compound-same-mpiio-ok'))
    assert not run.warnings


def test_modify_write_buf_applied_is_recorded():
    run, = h5paths.parse(case_files('compound-superset-mwb-1.14-ok'))
    assert run.params['modify_write_buf'] is True
    assert run.params['modify_write_buf_applied'] is True


@pytest.mark.parametrize('case, words', [
    ('compound-same-full-fs', ['H5Fclose failed', 'No space left on device']),
    ('compound-same-full-fs-exit1', ['H5Dwrite(', 'the file system is full',
                                     'No space left on device']),
    # kernel 1.1.1: the metadata path's full disk ends in seconds, exit 1, not a hang
    ('many-datasets-full-fs-1.14-exit1', ['H5Dwrite(', 'the file system is full',
                                          'No space left on device']),
    ('compound-reorder-verify-failure', ['verify read rank 0 index 10922 member z']),
    ('vds-1.10-hdf5-error', ['H5Dread(d, H5T_NATIVE_DOUBLE']),
])
def test_failures_are_refused_naming_the_cause(case, words):
    files = case_files(case)
    with pytest.raises(RunFailed) as err:
        h5paths.parse(files)
    for word in words:
        assert word in str(err.value)
    assert h5paths.unavailable(files) is None
    # whatever the exit code (the full file system's is a crash at MPI_Finalize)
    assert h5paths.error_line({k: v for k, v in files.items() if k != 'h5paths.json'})


def test_a_full_disk_under_the_metadata_path_is_named_without_the_summary():
    """The error line a run without its JSON summary gets names ENOSPC, not the failed call
    or the launcher's words after it."""
    files = case_files('many-datasets-full-fs-1.14-exit1')
    del files['h5paths.json']
    with pytest.raises(RunFailed, match='No space left on device'):
        h5paths.parse(files)
    assert 'No space left on device' in h5paths.error_line(files)


def test_the_error_lines_without_the_summary_fail_the_run():
    files = case_files('compound-reorder-verify-failure')
    del files['h5paths.json']
    with pytest.raises(RunFailed, match='verify read'):
        h5paths.parse(files)
    line = h5paths.error_line(files)
    assert line.startswith('stderr:1: the kernel failed: h5paths: ERROR verify read')


def test_hdf5_stack_shown_before_the_launchers_words():
    line = h5paths.error_line({'stdout': '', 'stderr': (
        FIXTURES / 'vds-1.10-hdf5-error' / 'stderr').read_text()})
    assert 'h5paths: ERROR H5Dread' in line


@pytest.mark.parametrize('case, words', [
    ('multi-dataset-1.10-unavailable', 'multi-dataset: not available in HDF5 1.10.8'),
    ('mwb-1.10-not-applied', 'HDF5 1.10.8 has no H5Pset_modify_write_buf'),
    ('many-datasets-cmd-1.10-not-done', '--coll-metadata not done: HDF5 1.10.8 did metadata '
     'I/O independently: open_read: the ranks other than 0 made 134 independent MPI-IO reads '
     '(rank 0 137)'),
])
def test_what_the_build_cannot_run(case, words):
    files = case_files(case)
    assert words in h5paths.unavailable(files)
    with pytest.raises(RunFailed, match=re.escape(words)):
        h5paths.parse(files)


def test_collective_metadata_done_is_shown_by_who_read():
    """HDF5 1.14.1 did what --coll-metadata asks: rank 0 alone read metadata
    (broadcast to the others), every metadata write was collective; the counts are
    the run's provenance. Debian's 1.10.8, the same run, read it on both ranks."""
    run, = h5paths.parse(case_files('many-datasets-cmd-1.14-ok'))
    calls = run.provenance['mpi_file_calls']
    assert calls['open_read']['read_independent'] == [137, 0]
    assert calls['open_read']['read_collective'] == [100, 100]     # the raw data
    assert calls['create']['write_independent'] == [0, 0]
    assert calls['create']['write_collective'] == [102, 102]


def test_a_row_through_a_vol_connector_names_it_and_is_keyed_by_it():
    """HDF5_VOL_CONNECTOR asked HDF5 1.14.1's pass-through connector (kernel 1.9.0): the
    kernel names the connector its files went through, a parameter of the record (a
    native row's parameters stay as they were). On HDF5 1.10.8, which has no VOL layer,
    the same variable left the files native: a failure, not a native sample labelled
    with the plugin. Fails on the old parser: yes (no such parameter or check)."""
    run, = h5paths.parse(case_files('open-close-pass-through-1.14-ok'))
    assert run.params['vol_connector'] == 'pass_through'
    assert run.provenance['vol_connector_asked'] == 'pass_through under_vol=0;under_info={}'
    native, = h5paths.parse(case_files('open-close-ok'))
    assert 'vol_connector' not in native.params
    with pytest.raises(RunFailed, match=re.escape(
            "HDF5_VOL_CONNECTOR 'pass_through under_vol=0;under_info={}' asked, the files "
            "went through the 'native' connector (HDF5 1.10.8)")):
        h5paths.parse(case_files('open-close-pass-through-1.10-native'))
    with pytest.raises(RunFailed, match='VOL connector of the files is unknown: no file'):
        h5paths.parse(edited('open-close-pass-through-1.14-ok', lambda d: d.update(
            vol_connector='unknown: no file could be made to ask')))


def test_a_row_through_a_file_driver_names_it_and_is_keyed_by_it():
    """HDF5_DRIVER asked the kernel's h5r_vector plugin (kernel 1.10.0, HDF5 1.14.1): the
    kernel names the driver its serial files went through, measured (H5FDopen of a probe
    file), a parameter of the record off sec2. On HDF5 1.10.8 HDF5_DRIVER=stdio left the
    files on sec2: a failure, not a sec2 sample labelled stdio. A driver HDF5 cannot load
    stops the library at its start: no summary. Fails on the old parser: yes (it took
    any run whose summary said sec2, and knew no other driver)."""
    run, = h5paths.parse(case_files('strided-contiguous-vfd-vector-1.14-ok'))
    assert run.params['serial_driver'] == 'h5r_vector'
    assert run.params['path'] == 'strided-contiguous'
    assert run.provenance['serial_driver_asked'] == 'h5r_vector'
    assert {(m.operation, m.metric) for m in run.measurements} >= {('write', 'bw'), ('read', 'bw')}
    sec2, = h5paths.parse(case_files('open-close-serial-ok'))
    assert 'serial_driver' not in sec2.params
    with pytest.raises(RunFailed, match=re.escape(
            "file driver 'stdio' asked (HDF5_DRIVER), the files went through 'sec2'")):
        h5paths.parse(case_files('open-close-serial-vfd-stdio-1.10-ignored'))
    with pytest.raises((RunFailed, ParseError)):
        h5paths.parse(case_files('open-close-serial-vfd-unknown-1.14-exit1'))
    with pytest.raises(RunFailed, match='summary names no serial driver'):
        h5paths.parse(edited('strided-contiguous-vfd-vector-1.14-ok', lambda d: d.update(
            serial_driver='unknown: no file could be made')))


@pytest.mark.parametrize('edit, words', [
    (lambda d: d['iterations'][1]['phases'][0]['mpi_file_calls'].update(
        write_independent=[3, 0]), 'create: 3 independent MPI-IO writes (rank 0 3)'),
    (lambda d: d['iterations'][0]['phases'][1]['mpi_file_calls'].update(
        read_independent=[137, 1]), 'open_read: the ranks other than 0 made 1 independent'),
])
def test_any_independent_metadata_io_under_coll_metadata_is_not_done(edit, words):
    with pytest.raises(RunFailed, match=re.escape(words)):
        h5paths.parse(edited('many-datasets-cmd-1.14-ok', edit))


@pytest.mark.parametrize('edit', [
    # a kernel before 1.6.0, or one whose MPI-IO calls did not reach its counters
    lambda d: d.pop('mpi_file_calls_counted'),
    lambda d: d.update(mpi_file_calls_counted=False),
    # raw data read independently (a fallback): the reads cannot be told apart
    lambda d: [ph.update(mpio_actual_io_mode='no-collective') for it in d['iterations']
               for ph in it['phases']],
    # without --coll-metadata every rank reads its metadata, as it should
    lambda d: d['params'].update(coll_metadata=False),
])
def test_coll_metadata_not_judged_without_the_counts_to_judge_it(edit):
    run, = h5paths.parse(edited('many-datasets-cmd-1.10-not-done', edit))
    assert run.params['path'] == 'many-datasets'


def test_chunk_cache_reads_every_ranks_rows_of_every_column():
    """HDFFV-10601's path: each rank writes and reads its own 2-D dataset of --elements
    rows of 3250 doubles (a record is a row), chunks of 100 x 100, column by column;
    the summary names the cache it read through."""
    run, = h5paths.parse(case_files('chunk-cache-ok'))
    assert run.params['transfer'] == 'serial' and run.params['chunk_elements'] == 10000
    assert run.params['record_bytes_memory'] == 3250 * 8
    data = json.loads((FIXTURES / 'chunk-cache-ok' / 'h5paths.json').read_text())
    assert data['chunk_cache'] == {'columns': 3250, 'chunk': [100, 100], 'slots': 31,
                                   'bytes': 4 << 20}
    with pytest.raises(RunFailed, match='iteration 1 read moved 6500000 B, 13000000 B asked'):
        h5paths.parse(edited('chunk-cache-ok', lambda d: d['iterations'][1]['phases'][1]
                             .update(bytes=6500000)))


def test_a_serial_row_is_one_file_per_rank_and_no_mpi_io():
    """--transfer serial (kernel 1.7.0): every rank opens and closes the datasets of a
    file of its own with the sec2 driver; the summary says so, and the MPI-IO counts
    are zero. Fails on the old parser: yes (no such check)."""
    run, = h5paths.parse(case_files('open-close-serial-ok'))
    assert run.params['transfer'] == 'serial'
    assert [f['name'] for f in run.provenance['files']] == [
        'h5p_open-close-r0000.h5', 'h5p_open-close-r0001.h5']
    with pytest.raises(RunFailed, match='serial asked, the summary names no serial driver'):
        h5paths.parse(edited('open-close-serial-ok', lambda d: d.pop('serial_driver')))
    with pytest.raises(RunFailed, match=r'serial asked, the kernel counted 5 MPI-IO call'):
        h5paths.parse(edited('open-close-serial-ok', lambda d: d['iterations'][1]['phases'][0][
            'mpi_file_calls'].update(read_independent=[4, 1])))


def test_a_serial_warm_conversion_read_is_a_file_per_rank_and_no_mpi_io():
    """--transfer serial of a compound path (kernel 1.8.0): each rank writes and reads the
    records of a file of its own through sec2, so the warm read times HDF5's conversion
    without MPI-IO. Fails on the old kernel (usage error, exit 2: no fixture)."""
    run, = h5paths.parse(case_files('compound-subset-serial-warm-ok'))
    assert (run.params['transfer'], run.params['path']) == ('serial', 'compound-subset')
    assert [f['name'] for f in run.provenance['files']] == [
        'h5p_compound-subset-r0000.h5', 'h5p_compound-subset-r0001.h5']
    read = next(m for m in run.measurements if m.operation == 'read' and m.metric == 'bw')
    assert len(read.samples) == 2 and read.value > 0
    with pytest.raises(RunFailed, match='serial asked, the summary names no serial driver'):
        h5paths.parse(edited('compound-subset-serial-warm-ok',
                             lambda d: d.pop('serial_driver')))


@pytest.mark.parametrize('edit, words', [
    (lambda d: d['iterations'].pop(), '1 iteration(s) in the summary, 2 asked'),
    (lambda d: d['iterations'][1]['phases'].pop(), 'iteration 1 has no write_subset phase'),
    (lambda d: d['iterations'][0]['phases'][1].update(bytes=1000),
     'iteration 0 read moved 1000 B, 3145728 B asked'),
    (lambda d: d['iterations'][0]['phases'][0].update(seconds=0),
     'write: time 0.0 s is not positive'),
    (lambda d: d.update(status='failed'), "run status 'failed'"),
    (lambda d: d.update(errors=['something']), 'something'),
])
def test_less_than_asked_is_a_failure(edit, words):
    with pytest.raises(RunFailed, match=re.escape(words)):
        h5paths.parse(edited('compound-subset-ok', edit))


def test_metadata_phase_with_fewer_objects_than_asked():
    def fewer(d):
        d['iterations'][0]['phases'][0]['objects'] = 10
    with pytest.raises(RunFailed, match='create touched 10 objects, 200 asked'):
        h5paths.parse(edited('attributes-ok', fewer))


def test_strided_chunks_writes_doubles_and_reads_floats():
    """The kernel's own bytes: the write moved every rank's elements as doubles (the
    file record: no conversion on a parallel filtered write), the read as floats; a
    read that moved fewer (a lost tail block of the irregular selection) fails."""
    run, = h5paths.parse(case_files('strided-chunks-1.14-ok'))
    assert (run.params['record_bytes_file'], run.params['record_bytes_memory']) == (8, 4)
    data = json.loads((FIXTURES / 'strided-chunks-1.14-ok' / 'h5paths.json').read_text())
    moved = {ph['phase']: ph['bytes'] for ph in data['iterations'][0]['phases']}
    assert moved == {'write': 65536 * 2 * 8, 'read': 65536 * 2 * 4}
    assert any('HDF5 did independent I/O in read' in w for w in run.warnings)

    def tail_lost(d):
        d['iterations'][1]['phases'][1]['bytes'] -= 4096 * 2 * 4
    with pytest.raises(RunFailed, match='iteration 1 read moved 491520 B, 524288 B asked'):
        h5paths.parse(edited('strided-chunks-1.14-ok', tail_lost))


@pytest.mark.parametrize('case, operation, iteration, fewer', [
    # open_vds's objects: the mappings HDF5 found when it opened the dataset
    ('vds-open-1.14-ok', 'open_vds', 0, 299),
    # create_flush's: the datasets H5Dflush flushed (the least over the ranks, each in
    # its own sec2 file)
    ('flush-datasets-1.14-ok', 'create_flush', 1, 120)])
def test_object_rates_count_what_hdf5_did(case, operation, iteration, fewer):
    """A rate of objects HDF5 reported handling: fewer than --objects asked fails the run."""
    run, = h5paths.parse(case_files(case))
    assert run.params['objects'] == 300
    assert {(m.operation, m.metric) for m in run.measurements} == {
        (operation, 'ops_per_s'), (operation, 'time')}
    refuses_fewer_objects(case, operation, iteration=iteration, objects=fewer)


def test_append_counts_the_extents_hdf5_grew_and_the_bytes_written():
    """append's objects are the steps whose extent HDF5 reported grown, its bytes every
    rank's doubles: fewer steps, or fewer bytes, than asked fail the run."""
    run, = h5paths.parse(case_files('append-1.14-ok'))
    assert (run.params['objects'], run.params['elements']) == (16, 65536)
    refuses_fewer_objects('append-1.14-ok', 'append', iteration=0, objects=15)

    def fewer_bytes(d):
        d['iterations'][0]['phases'][0]['bytes'] -= 4096 * 2 * 8
    with pytest.raises(RunFailed, match='append moved 983040 B, 1048576 B asked'):
        h5paths.parse(edited('append-1.14-ok', fewer_bytes))


def test_multi_dataset_moves_elements_per_dataset():
    run, = h5paths.parse(case_files('multi-dataset-1.14-ok'))
    assert run.params['objects'] == 4

    def one_dataset(d):
        for it in d['iterations']:
            for ph in it['phases']:
                ph['bytes'] //= 4
    with pytest.raises(RunFailed, match='moved'):
        h5paths.parse(edited('multi-dataset-1.14-ok', one_dataset))


def test_point_selections_time_the_selection_calls_as_a_rate():
    """point-selections: the point write and read are bandwidths of every rank's doubles,
    select_ops a rate of the selection calls (pointlists, encodes, the projection)."""
    run, = h5paths.parse(case_files('point-selections-1.14-ok'))
    metrics = {(m.operation, m.metric) for m in run.measurements}
    assert {('write', 'bw'), ('read', 'bw'), ('select_ops', 'ops_per_s')} <= metrics

    def fewer_points(d):
        d['iterations'][1]['phases'][1]['bytes'] //= 2
    with pytest.raises(RunFailed, match='read moved 65536 B, 131072 B asked'):
        h5paths.parse(edited('point-selections-1.14-ok', fewer_points))


def test_multi_chunk_moves_both_datasets_in_each_of_its_four_phases():
    run, = h5paths.parse(case_files('multi-chunk-1.14-ok'))
    assert {m.operation for m in run.measurements} == {'write', 'read', 'write_mc', 'read_mc'}
    assert all(m.metric in ('bw', 'time') for m in run.measurements)

    def one_dataset(d):
        d['iterations'][0]['phases'][3]['bytes'] //= 2
    with pytest.raises(RunFailed, match='read_mc moved 524288 B, 1048576 B asked'):
        h5paths.parse(edited('multi-chunk-1.14-ok', one_dataset))


@pytest.mark.parametrize('case, kinds', [('storage-kinds-1.14-ok', 5),
                                         ('vlen-strings-1.14-ok', 1)])
def test_serial_rows_move_each_ranks_records_of_every_dataset(case, kinds):
    """storage-kinds moves --elements doubles per dataset, five kinds of --objects
    datasets per rank; vlen-strings one memory record (a pointer and an hvl_t) per
    element."""
    run, = h5paths.parse(case_files(case))
    data = json.loads((FIXTURES / case / 'h5paths.json').read_text())
    p = data['params']
    assert data['serial_driver'] == 'sec2'
    want = p['elements'] * 2 * p['record_bytes_memory'] * (p['objects'] * kinds
                                                            if kinds > 1 else 1)
    assert all(ph['bytes'] == want for it in data['iterations'] for ph in it['phases'])

    def less(d):
        d['iterations'][0]['phases'][0]['bytes'] -= 8
    with pytest.raises(RunFailed, match=f'write moved {want - 8} B, {want} B asked'):
        h5paths.parse(edited(case, less))


def test_a_stdout_without_finished_ok_is_incomplete():
    files = case_files('convert-endian-ok')
    files['stdout'] = files['stdout'].replace('h5paths: finished OK', '')
    with pytest.raises(RunFailed, match='no "h5paths: finished OK"'):
        h5paths.parse(files)


def test_cache_not_evicted_is_a_warning():
    run, = h5paths.parse(edited('convert-endian-ok', lambda d: d.update(
        read_cache='not-evicted: posix_fadvise failed')))
    assert any('page cache' in w for w in run.warnings)


def test_bad_input():
    with pytest.raises(ParseError, match='nothing to parse'):
        h5paths.parse({})
    with pytest.raises(ParseError, match='no JSON summary'):
        h5paths.parse({'stdout': 'hello'})
    with pytest.raises(RunFailed, match='truncated or invalid JSON'):
        h5paths.parse({'h5paths.json': '{"tool": "h5paths", "status": '})
    with pytest.raises(ParseError, match="unknown path 'nope'"):
        h5paths.parse(edited('convert-endian-ok', lambda d: d.update(path='nope')))
    with pytest.raises(ParseError, match='malformed JSON summary'):
        h5paths.parse(edited('convert-endian-ok', lambda d: d.pop('params')))


def test_files_on_disk_against_the_summary():
    run, = h5paths.parse(case_files('vds-ok'))
    listed = {f['name']: f['bytes'] for f in run.provenance['files']}
    assert h5paths.check_files(run, listed) == []
    name = sorted(listed)[0]
    short = {**listed, name: listed[name] - 1}
    assert h5paths.check_files(run, short) == [
        f'{name}: {listed[name] - 1} B on disk, {listed[name]} B reported']
    del short[name]
    assert h5paths.check_files(run, short) == [f'{name}: reported but not on disk']


def test_the_mpiio_twin_never_applies_modify_write_buf_and_is_not_skipped_for_it():
    def asked(d):
        d['params'].update(modify_write_buf=True, modify_write_buf_applied=False)
    files = edited('compound-same-mpiio-ok', asked)
    assert h5paths.unavailable(files) is None
    run, = h5paths.parse(files)
    assert not run.warnings


def test_warm_reads_are_labelled_as_such():
    def warm(d):
        d['params']['read_cache'] = 'keep'
        d['read_cache'] = 'not-evicted: --read-cache keep'
    run, = h5paths.parse(edited('convert-endian-ok', warm))
    assert run.params['read_cache'] == 'keep'
    assert [w for w in run.warnings if 'cache' in w] == [
        'warm reads by design (--read-cache keep): the read figures come from the page cache '
        'and time the CPU side of the path']


def test_a_read_phase_of_repeated_warm_reads_moved_each_reads_bytes():
    """--read-repeats N (kernel 1.1.0): the warm read phase reads the dataset N times;
    its bytes are N reads' (a real run), and one read's worth is less than asked."""
    run, = h5paths.parse(case_files('compound-subset-warm-repeats-1.14-ok'))
    assert run.params['read_repeats'] == 4 and run.params['read_cache'] == 'keep'
    one_read = 65536 * 2 * 24
    read = [m for m in run.measurements if m.operation == 'read' and m.metric == 'bw']
    assert read and all(s > 0 for s in read[0].samples)

    def once(d):
        for it in d['iterations']:
            for ph in it['phases']:
                if ph['phase'] == 'read':
                    ph['bytes'] = one_read
    with pytest.raises(RunFailed, match=re.escape(
            f'iteration 0 read moved {one_read} B, {4 * one_read} B asked')):
        h5paths.parse(edited('compound-subset-warm-repeats-1.14-ok', once))


def test_the_library_the_kernel_loaded_is_kept():
    """Kernel 1.2.0 names the libhdf5 it loaded (``dladdr``), here another build's,
    preloaded: the parser keeps it and the version beside it, as the kernel says them
    (the check, not the parser, holds them to the build)."""
    run, = h5paths.parse(case_files('compound-same-preloaded-1.15.0'))
    assert run.provenance['kernel_version'] == '1.2.0'
    assert run.provenance['hdf5_version'] == '1.15.0'
    assert run.provenance['hdf5_library'] == 'hdf5-1.15.0/lib/libhdf5.so'
    assert run.provenance['hdf5_library_source'] == 'dladdr(H5get_libversion)'
