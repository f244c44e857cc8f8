"""IOR parser against real outputs.

- ``tests/fixtures/ior/own-*`` and ``fail-own-*`` (IOR 4.0.0, the Spack build, recorded by
  tests/fixtures/record-tools.sh; each case's README.md has the command line): every
  success parses to the numbers of its files, every failure is a :class:`RunFailed`
  whichever of its files the caller passes, and the exact values below were read off
  the files by hand.
- ``tests/fixtures/ior/csv-*`` (IOR 4.0.0 CSV summaries, tests/fixtures/ior/generate.sh).
- IOR 3.3.0 and 3.0.1 outputs (text and JSON, older formats), embedded at the end
  of this file: verbatim outputs of IOR built by hand from hpc/ior's tags.
- Extra, when present: ``../shared/fixtures/ior/*`` (IOR 4.1.0+dev, the machine's
  fixtures beside the clone): the same every-case tests over them; deselected without.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from h5regress.parsers import RunFailed, parser_for
from h5regress.parsers import ior
from reframe_run import FIXTURES as SHARED_FIXTURES, OWN_FIXTURES

QUOTED = Path(__file__).resolve().parent / 'fixtures' / 'ior' / 'quoted'
OWN_IOR = OWN_FIXTURES / 'ior'
SHARED_IOR = SHARED_FIXTURES / 'ior'


def case_files(case: Path) -> dict[str, str]:
    """The files of a fixture case that the parser wants: the tool's outputs (not the
    README.md nor the recorder's files.txt listing)."""
    return {p.name: p.read_text() for p in sorted(case.iterdir())
            if ior.wanted(p.name) and p.name != 'files.txt'}


def own(name: str) -> dict[str, str]:
    return case_files(OWN_IOR / name)


def command_of(case: Path) -> str:
    return re.search(r'```\n(.*?)\n```', (case / 'README.md').read_text(), re.S).group(1)


def values(run, op: str) -> dict[str, float]:
    return {m.metric: m.value for m in run.measurements if m.operation == op}


def own_cases(failures: bool) -> list:
    return [pytest.param(d, id=d.name) for d in sorted(OWN_IOR.glob('*own-*'))
            if d.name.startswith('fail-') == failures]


def shared_cases(failures: bool) -> list:
    """The extra cases of ../shared/fixtures/ior (deselected when it is absent)."""
    if not SHARED_IOR.is_dir():
        return [pytest.param(None, id='no-shared-fixtures', marks=pytest.mark.shared_fixtures)]
    return [pytest.param(d, id=f'shared-{d.name}', marks=pytest.mark.shared_fixtures)
            for d in sorted(SHARED_IOR.iterdir())
            if d.is_dir() and d.name.startswith('fail-') == failures]


# ------------------------------------------------------------------------------------
# every case: own fixtures, and the extra shared ones

@pytest.mark.parametrize('case', own_cases(failures=False) + shared_cases(failures=False))
def test_every_success_matches_its_files(case):
    files = case_files(case)
    runs = ior.parse(files)
    assert len(runs) == 1
    run = runs[0]
    command = command_of(case) + ' '
    api = command.split(' -a ')[1].split()[0]
    repetitions = int(command.split(' -i ')[1].split()[0])
    assert run.params['api'] == api
    assert run.params['num_ranks'] == run.params['numTasks'] == 2
    assert run.params['filePerProc'] == int(' -F ' in command)
    assert run.params['collective'] == int(' -c ' in command)
    assert run.params['fsync'] == int(' -e ' in command)
    for op in ('write', 'read'):
        got = values(run, op)
        assert set(got) >= {'bw_mean', 'bw_max', 'bw_min', 'bw_std', 'ops_mean',
                            'time_mean'}
        assert got['bw_min'] <= got['bw_mean'] <= got['bw_max']
        bw_mean = run.measurement(op, 'bw_mean')
        assert bw_mean.unit == 'MiB/s' and bw_mean.higher_is_better
        assert len(bw_mean.samples) == run.params['repetitions'] == repetitions
    summary = files.get('summary.json') or files['stdout.txt']
    if summary.lstrip().startswith('{'):
        doc = json.loads(summary)
        for entry in doc['summary']:
            op = entry['operation']
            assert values(run, op)['bw_mean'] == entry['bwMeanMIB']
            assert values(run, op)['bw_std'] == entry['bwStdMIB']
            assert values(run, op)['time_mean'] == entry['MeanTime']
            assert run.measurement(op, 'bw_mean').samples == [
                r['bwMiB'] for r in doc['tests'][0]['Results'] if r['access'] == op]
        assert run.provenance['command_line'] == doc['Command line']


@pytest.mark.parametrize('case', own_cases(failures=True) + shared_cases(failures=True))
def test_every_failure_is_run_failed(case):
    with pytest.raises(RunFailed):
        ior.parse(case_files(case))


@pytest.mark.parametrize('case', own_cases(failures=True) + shared_cases(failures=True))
def test_every_failure_is_run_failed_from_any_single_file(case):
    for name, text in case_files(case).items():
        if name == 'summary.json' and 'full-disk' in case.name:
            continue        # the summary of a full disk looks fine: see below
        with pytest.raises(RunFailed) as err:
            ior.parse({name: text})
        assert name in str(err.value)


def test_own_fixtures_have_successes_and_failures():
    assert len(own_cases(failures=False)) >= 6 and len(own_cases(failures=True)) >= 4


# ------------------------------------------------------------------------------------
# own fixtures: exact values (read off the files by hand)

def test_hdf5_collective_metadata_nofill_json():
    run, = ior.parse(own('own-hdf5-coll-ssf-b16m-collmeta-nofill'))
    write = run.measurement('write', 'bw_mean')
    # summary.json: "bwMeanMIB": 398.1552; Results' write bwMiB 525.8821, 522.2175, 146.366
    assert write.value == 398.1552
    assert write.samples == [525.8821, 522.2175, 146.366]
    assert values(run, 'write') == {
        'bw_mean': 398.1552, 'bw_max': 525.8821, 'bw_min': 146.366,
        'bw_std': 178.0481, 'ops_mean': 398.1552, 'time_mean': 0.1136}
    assert run.measurement('write', 'time_mean').samples == [0.0609, 0.0613, 0.2186]
    assert values(run, 'read')['bw_max'] == 9595.205
    # IOR 4 keeps HDF5 knobs out of "Parameters": they come from the command line
    assert run.params['hdf5.collectiveMetadata'] == 1
    assert run.params['hdf5.noFill'] == 1
    assert run.params['hdf5.setAlignment'] == 1      # IOR's default, stated
    assert 'hdf5.showHints' not in run.params
    assert run.params['blockSize'] == 16777216 and run.params['transferSize'] == 1048576
    assert run.params['reorderTasks'] == 1 and run.params['fsync'] == 0
    assert run.provenance['hdf5_version'] == '1.14.1'
    assert run.provenance['tool_version'] == '4.0.0'
    assert run.provenance['started'] == '2026-11-24T05:58:49'
    assert run.provenance['finished'] == '2026-11-24T05:58:49'
    assert 'testFileName' not in run.params and run.provenance['test_file'] == 'testfile'
    plain, = ior.parse(own('own-hdf5-coll-ssf-b16m'))
    assert plain.params['hdf5.collectiveMetadata'] == plain.params['hdf5.noFill'] == 0


def test_fsync_parameter():
    run, = ior.parse(own('own-posix-indep-fpp-b16m'))        # -e
    assert run.params['fsync'] == 1
    assert run.params['posix.odirect'] == 0
    # every write figure says it includes the fsync; the reads have none
    assert run.provenance['write_flush'] == {f'write {m}': 'fsync' for m in (
        'bw_mean', 'bw_max', 'bw_min', 'bw_std', 'ops_mean', 'time_mean')}


def test_write_flush_without_fsync_is_none():
    run, = ior.parse(own('own-hdf5-coll-ssf-b16m-collmeta-nofill'))
    assert run.params['fsync'] == 0
    assert set(run.provenance['write_flush'].values()) == {'none'}
    text, = ior.parse(own('own-posix-indep-ssf-b16m-text'))
    assert text.params['fsync'] == 0
    assert set(text.provenance['write_flush'].values()) == {'none'}


def test_text_output_ior4():
    run, = ior.parse(own('own-posix-indep-ssf-b16m-text'))
    # "Summary of all tests": write 4068.68 1044.08 2261.38 1303.36 ... Mean(s) 0.01922
    assert values(run, 'write') == {
        'bw_max': 4068.68, 'bw_min': 1044.08, 'bw_mean': 2261.38, 'bw_std': 1303.36,
        'ops_mean': 2261.38, 'time_mean': 0.01922}
    assert values(run, 'read')['bw_min'] == 2006.54
    # per-iteration rows of "Results:" (printed with fewer digits)
    assert run.measurement('write', 'bw_mean').samples == [4069, 1044.08, 1671.37]
    assert run.measurement('read', 'time_mean').samples == [0.005119, 0.015948, 0.006721]
    assert run.params['blockSize'] == 16777216 and run.params['segmentCount'] == 1
    assert run.params['api'] == 'POSIX' and run.params['collective'] == 0
    assert run.provenance['finished'] == '2026-11-24T05:58:46'
    assert run.provenance['source'] == 'stdout.txt'


def test_json_summary_on_stdout():
    run, = ior.parse(own('own-mpiio-coll-ssf-b16m-json-stdout'))
    assert values(run, 'read')['bw_mean'] == 11829.119
    assert values(run, 'write')['bw_min'] == 366.1079
    assert run.provenance['source'] == 'stdout.txt'


def test_same_parameters_in_another_environment_share_the_config_hash():
    one, = ior.parse(own('own-hdf5-coll-ssf-b16m'))
    other, = ior.parse(own('own-hdf5-coll-ssf-b16m-filelocking-false'))
    mpiio, = ior.parse(own('own-mpiio-coll-ssf-b16m'))
    hashes = [run.to_records()[0].config_hash for run in (one, other, mpiio)]
    assert hashes[0] == hashes[1] != hashes[2]
    record = one.to_records(run_id='r1')[0]
    assert (record.tool, record.operation, record.metric, record.unit) == \
        ('ior', 'write', 'bw_mean', 'MiB/s')
    assert record.timestamp == '2026-11-24T03:04:49'     # IOR's "Finished"


def test_truncated_summary_is_run_failed_wherever_cut():
    text = own('own-mpiio-coll-ssf-b16m')['summary.json']
    end = text.rstrip().rindex('}')
    for cut in range(50, end, max(1, end // 25)):
        with pytest.raises(RunFailed):
            ior.parse({'summary.json': text[:cut]})


def test_infinite_bandwidth_is_run_failed():
    # IOR 4 prints an infinite value as the string "inf" (zero time measured);
    # derived from a real summary by changing that one value
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['summary'][0]['bwMaxMIB'] = 'inf'
    with pytest.raises(RunFailed, match='inf'):
        ior.parse({'summary.json': json.dumps(doc)})


def test_fewer_results_than_repetitions_is_run_failed():
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['tests'][0]['Results'] = doc['tests'][0]['Results'][:2]
    with pytest.raises(RunFailed, match='repetitions'):
        ior.parse({'summary.json': json.dumps(doc)})


# ------------------------------------------------------------------------------------
# moved against asked (issue 14): derived from real summaries by changing one value

def test_a_negative_sample_is_refused():
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['tests'][0]['Results'][2]['bwMiB'] = -77.7539
    with pytest.raises(RunFailed, match=r'write bwMiB is negative'):
        ior.parse({'summary.json': json.dumps(doc)})
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['summary'][1]['MeanTime'] = -0.1113
    with pytest.raises(RunFailed, match=r'read MeanTime is negative'):
        ior.parse({'summary.json': json.dumps(doc)})


def test_json_aggregate_moved_other_than_asked_is_run_failed():
    # 16 MiB blocks x 1 segment x 2 tasks = 32 MiB a repetition
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['summary'][0]['xsizeMiB'] = 16.0
    with pytest.raises(RunFailed, match=r'write moved 16 MiB in repetition 1, asked for 32 '
                                        r'MiB \(block x segments x tasks = 33554432 B\)'):
        ior.parse({'summary.json': json.dumps(doc)})


def test_json_repetition_that_moved_half_is_run_failed():
    # bwMiB x totalTime is what a repetition moved: half the time at the same bandwidth
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    assert doc['tests'][0]['Results'][2]['totalTime'] == 0.4116
    doc['tests'][0]['Results'][2]['totalTime'] = 0.2058
    with pytest.raises(RunFailed, match=r'write moved .* MiB in repetition 2, asked for 32'):
        ior.parse({'summary.json': json.dumps(doc)})


def test_stonewalling_may_move_less_than_asked():
    doc = json.loads(own('own-mpiio-coll-ssf-b16m')['summary.json'])
    doc['tests'][0]['Parameters']['deadlineForStonewall'] = 1
    doc['summary'][0]['xsizeMiB'] = 16.0
    doc['tests'][0]['Results'][2]['totalTime'] = 0.2058
    run, = ior.parse({'summary.json': json.dumps(doc)})
    assert run.params['deadlineForStonewall'] == 1


def test_text_moved_other_than_asked_is_run_failed():
    text = own('own-posix-indep-ssf-b16m-text')['stdout.txt']
    # the summary's aggs(MiB): 16 MiB x 1 segment x 2 tasks = 32 MiB
    short = text.replace('1048576      32.0 POSIX      0\nread',
                         '1048576      16.0 POSIX      0\nread')
    assert short != text
    # (the text prints aggs to 0.1 MiB: what it moved is known to +-0.05 MiB)
    with pytest.raises(RunFailed, match=r'write moved 15.95 to 16.05 MiB in repetition 1, '
                                        r'asked for 32'):
        ior.parse({'stdout.txt': short})
    # a "Results" row: bw(MiB/s) x total(s) of repetition 3 halved
    short = text.replace('0.015424   0.019146   2', '0.015424   0.009573   2')
    assert short != text
    with pytest.raises(RunFailed, match=r'write moved .* in repetition 3, asked for 32 MiB'):
        ior.parse({'stdout.txt': short})
    # IOR 3.0's aggsize column is in bytes
    with pytest.raises(RunFailed, match=r'write moved 16 MiB in repetition 1, asked for 32'):
        ior.parse({'stdout.txt': IOR301_TEXT.replace('16777216 1048576 33554432 POSIX 0\nread',
                                                     '16777216 1048576 16777216 POSIX 0\nread')})


def test_a_full_disk_through_mpiio_is_run_failed_though_ior_exits_0():
    """IOR through MPI-IO (OMPIO) on a full tmpfs exits 0 and its summary shows a fine
    2343.9 MiB/s write: only its stat warning and OMPIO's errno tell (fail-own-mpiio-full-disk)."""
    case = OWN_IOR / 'fail-own-mpiio-full-disk'
    assert '- Exit code: 0' in (case / 'README.md').read_text()
    files = own('fail-own-mpiio-full-disk')
    run, = ior.parse({'summary.json': files['summary.json']})
    assert values(run, 'write')['bw_mean'] == 2343.9232
    with pytest.raises(RunFailed, match=r'stdout.txt:3: IOR asked for 16777216 B and found '
                                        r'8388608 B on disk \(stat\), moved 16777216 B'):
        ior.parse({'summary.json': files['summary.json'], 'stdout.txt': files['stdout.txt']})
    with pytest.raises(RunFailed, match=r'stderr.txt:1: the file system is full \(ENOSPC\)'):
        ior.parse({'summary.json': files['summary.json'], 'stderr.txt': files['stderr.txt']})
    assert ior.error_line({'stdout': files['stdout.txt']}).startswith('stdout:3: IOR asked')
    # stonewalling may explain a short file: IOR says so, and it is no failure
    stonewalled = files['stdout.txt'] + 'WARNING: Maybe caused by deadlineForStonewalling\n'
    assert ior.error_line({'stdout': stonewalled}) is None


def test_failures_are_named_by_the_tools_words():
    with pytest.raises(RunFailed, match='invalid options: Error invalid argument: '
                                        '--no-such-option'):
        ior.parse(own('fail-own-bad-option'))
    with pytest.raises(RunFailed, match='cannot create file'):
        ior.parse(own('fail-own-hdf5-nonexistent-dir'))


def test_json_preferred_over_text_of_the_same_run():
    files = own('own-posix-indep-ssf-b16m-text')
    runs = ior.parse({'stdout.txt': files['stdout.txt'], 'copy.log': files['stdout.txt']})
    assert len(runs) == 1


# ------------------------------------------------------------------------------------
# older IOR (embedded real outputs below)

def test_ior33_text_summary():
    run, = ior.parse({'stdout.txt': IOR33_TEXT})
    assert run.provenance['tool_version'] == '3.3.0'
    assert values(run, 'write') == {
        'bw_max': 2181.58, 'bw_min': 828.85, 'bw_mean': 1505.21, 'bw_std': 676.36,
        'ops_mean': 1505.21, 'time_mean': 0.02664}
    assert values(run, 'read')['bw_mean'] == 7660.85
    assert run.measurement('write', 'bw_mean').samples == [828.85, 2181.58]
    assert run.params['api'] == 'MPIIO' and run.params['collective'] == 1
    assert run.params['repetitions'] == 2 and run.params['numTasks'] == 2
    assert run.provenance['api_version'] == '(3.1)'
    assert 'mpiio.preallocate' not in run.params     # IOR 3 has no module defaults


def test_ior33_json_nested_results():
    run, = ior.parse({'summary.json': IOR33_JSON, 'stdout.txt': IOR33_JSON_STDOUT})
    assert values(run, 'write')['bw_mean'] == 1357.2558
    assert run.measurement('write', 'bw_mean').samples == [1427.6244, 1286.8872]
    assert run.measurement('read', 'bw_mean').samples == [13697.6216, 15062.7079]
    assert run.params['fsync'] == 1 and run.params['setAlignment'] == 1
    assert run.provenance['tool_version'] == '3.3.0'


def test_ior33_failure_text():
    with pytest.raises(RunFailed, match='ior ERROR'):
        ior.parse({'stdout.txt': IOR33_FAIL_TEXT})


def test_ior301_text_summary_old_columns():
    run, = ior.parse({'stdout.txt': IOR301_TEXT})
    assert values(run, 'write') == {'bw_max': 825.53, 'bw_min': 731.49, 'bw_mean': 778.51,
                                    'bw_std': 47.02, 'time_mean': 0.04125}
    assert run.measurement('read', 'bw_mean').samples == [4930, 3089.87]
    assert run.params['fsync'] == 1 and run.params['api'] == 'POSIX'
    assert run.provenance['command_line'].endswith('-o /tmp/h5r-runs/ior301/testfile')


def test_several_runs_in_one_log():
    runs = ior.parse({'all.log': IOR301_TEXT + '\n' + IOR33_TEXT})
    assert [run.provenance['tool_version'] for run in runs] == ['3.0.1', '3.3.0']


def test_incomplete_text_is_run_failed():
    cut = IOR33_TEXT[:IOR33_TEXT.index('Summary of all tests')]
    with pytest.raises(RunFailed, match='Summary of all tests'):
        ior.parse({'stdout.txt': cut})


# ------------------------------------------------------------------------------------
# CSV summary (-O summaryFormat=CSV): real IOR 4.0.0 outputs in tests/fixtures/ior
# (generate.sh there remakes them)

CSV_DIR = OWN_IOR


def csv_case(name: str) -> dict[str, str]:
    return case_files(CSV_DIR / name)


def csv_rows(text: str) -> dict[str, list[dict[str, str]]]:
    """The rows of a CSV summary by operation, read with the csv module."""
    import csv
    rows = list(csv.DictReader(line for line in text.splitlines()
                               if line.startswith(('access,', 'write,', 'read,'))))
    return {op: [r for r in rows if r['access'] == op] for op in ('write', 'read')}


def test_csv_summary_on_stdout():
    text = csv_case('csv-posix-ssf-stdout')['stdout.txt']
    run, = ior.parse({'stdout.txt': text})
    assert run.provenance['output_format'] == 'CSV'
    # 2 ranks x 2 segments of 16 MiB: the segment count comes from the bytes moved
    assert run.params == {'blockSize': 16 * 2**20, 'transferSize': 2**20, 'numTasks': 2,
                          'num_ranks': 2, 'repetitions': 3, 'writeFile': 1, 'readFile': 1,
                          'segmentCount': 2}
    for op, rows in csv_rows(text).items():
        bw = [float(r['bw(MiB/s)']) for r in rows]
        assert len(bw) == 3
        m = run.measurement(op, 'bw_mean')
        assert m.samples == bw and m.unit == 'MiB/s' and m.higher_is_better
        got = values(run, op)
        # IOR's own statistics: the mean of the rates, the deviation over n (not n - 1)
        mean = sum(bw) / 3
        assert got['bw_mean'] == pytest.approx(mean, rel=1e-12)
        assert got['bw_max'] == max(bw) and got['bw_min'] == min(bw)
        assert got['bw_std'] == pytest.approx(
            (sum((b - mean) ** 2 for b in bw) / 3) ** 0.5, rel=1e-12)
        # ops as IOR's summary has them: bandwidth / transfer (1 MiB), not the IOPS column
        assert got['ops_mean'] == pytest.approx(mean, rel=1e-12)
        assert run.measurement(op, 'time_mean').samples == [float(r['total(s)'])
                                                            for r in rows]
    assert any('CSV' in w for w in run.warnings)
    # the CSV does not say whether the writes were fsynced
    assert 'write_flush' not in run.provenance


def test_csv_summary_file_and_its_stdout():
    files = csv_case('csv-hdf5-collective-summaryfile')
    assert set(files) == {'ior.csv', 'stdout.txt', 'stderr.txt'}
    run, = ior.parse(files)
    assert run.provenance['source'] == 'ior.csv'
    assert run.params['repetitions'] == 2 and run.params['segmentCount'] == 1
    rows = csv_rows(files['ior.csv'])
    assert run.measurement('read', 'bw_mean').samples == [float(r['bw(MiB/s)'])
                                                          for r in rows['read']]
    # the rows' IOPS (over the access time alone) is not the figure
    assert run.measurement('write', 'ops_mean').samples == pytest.approx(
        [float(r['bw(MiB/s)']) for r in rows['write']])


def test_csv_std_matches_ior_summary_of_the_same_run():
    """The CSV statistics are IOR's: computed from a JSON summary's per-repetition
    results, they give its summary's values (to the 4 decimals IOR prints)."""
    run, = ior.parse(own('own-hdf5-coll-ssf-b16m-collmeta-nofill'))
    for op in ('write', 'read'):
        samples = run.measurement(op, 'bw_mean').samples
        assert len(samples) == 3
        again = {m.metric: m.value for m in ior.repetition_measurements(op, samples, [], [])}
        for metric in ('bw_mean', 'bw_max', 'bw_min', 'bw_std'):
            assert again[metric] == pytest.approx(values(run, op)[metric], abs=2e-4)


@pytest.mark.parametrize('case', ['fail-csv-nonexistent-dir', 'fail-csv-killed'])
def test_csv_failures_are_run_failed(case):
    with pytest.raises(RunFailed):
        ior.parse(csv_case(case))


def test_csv_killed_run_names_the_missing_repetition():
    with pytest.raises(RunFailed, match=r'IOR read: repetitions \[0\] of 2 \(incomplete'):
        ior.parse(csv_case('fail-csv-killed'))


def test_csv_a_short_repetition_is_run_failed():
    text = csv_case('csv-posix-ssf-stdout')['stdout.txt']
    second = csv_rows(text)['write'][1]['bw(MiB/s)']
    # the second write moved half its bytes in the same time: not the others' amount
    short = text.replace(f'write,{second},', f'write,{float(second) / 2:.4f},')
    with pytest.raises(RunFailed, match='write repetition 1 moved'):
        ior.parse({'stdout.txt': short})


def test_csv_header_without_rows_is_run_failed():
    with pytest.raises(RunFailed, match='without a result row'):
        ior.parse({'stdout.txt': ior.CSV_HEADER + '\n'})


def test_csv_through_h5regress_parse(capsys):
    from h5regress import cli
    assert cli.main(['parse', 'ior', str(CSV_DIR / 'csv-posix-ssf-stdout')]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r['operation'], r['metric']) for r in records} >= {('write', 'bw_mean'),
                                                                ('read', 'bw_mean')}
    assert cli.main(['parse', 'ior', str(CSV_DIR / 'fail-csv-killed')]) == 1


# ------------------------------------------------------------------------------------
# not IOR, no output, files wanted

def test_empty_summary_file_is_run_failed():
    with pytest.raises(RunFailed, match='empty'):
        ior.parse({'ior-write.json': '', 'stdout': 'Writing output to ior-write.json\n'})


def test_wanted_and_registry():
    assert parser_for('ior') is ior
    assert all(ior.wanted(n) for n in ('summary.json', 'ior-write.json', 'ior.csv', 'stdout',
                                       'stdout.txt', 'rfm_job.out', 'run.log', 'x.err'))
    assert not any(ior.wanted(n) for n in ('README.md', 'testfile', 'rfm_job.sh'))


# ------------------------------------------------------------------------------------
# real outputs of IOR built by hand from hpc/ior (verbatim; paths are the build's)

# IOR 3.3.0 (hpc/ior tag 3.3.0, built by hand), text stdout of
# mpirun -np 2 --oversubscribe ior -a MPIIO -c -b 16m -t 1m -i 2 -w -r -C -o <dir>/testfile
IOR33_TEXT = (QUOTED / 'ior33-text.txt').read_text()

# IOR 3.3.0, summary.json of
# mpirun -np 2 --oversubscribe ior -a POSIX -b 16m -t 1m -i 2 -w -r -C -e -o <dir>/testfile
#     -O summaryFormat=JSON -O summaryFile=<dir>/summary.json
IOR33_JSON = (QUOTED / 'ior33-json.txt').read_text()

# its stdout
IOR33_JSON_STDOUT = """\
Writing output to /tmp/h5r-ior33/runs/json/summary.json
Writing output to /tmp/h5r-ior33/runs/json/summary.json
"""

# IOR 3.3.0 writing into a missing directory (exit 255), stdout of
# mpirun -np 2 --oversubscribe ior -a POSIX -b 16m -t 1m -i 1 -w -r -o /scr/does/not/exist/testfile
IOR33_FAIL_TEXT = (QUOTED / 'ior33-fail-text.txt').read_text()

# IOR 3.0.1 (tag 3.0.1, built by hand with CFLAGS=-fcommon), stdout of
# mpirun -np 2 --oversubscribe ior -a POSIX -b 16m -t 1m -i 2 -w -r -C -e -o <dir>/testfile
IOR301_TEXT = (QUOTED / 'ior301-text.txt').read_text()


@pytest.mark.parametrize('value, expected', [
    ('4096', 4096), ('1m', 1024 ** 2), ('1M', 1024 ** 2), ('4k', 4096), ('1g', 1024 ** 3),
    ('2t', 2 * 1024 ** 4), ('1p', 1024 ** 5), ('1MiB', 1024 ** 2), ('1mb', 1024 ** 2),
    # not an integer before the suffix, or not a size: kept as IOR was given it
    ('1.5m', '1.5m'), ('auto', 'auto')])
def test_module_option_sizes_are_powers_of_1024(value, expected):
    """IOR's string_to_bytes: an integer, then k/m/g/t/p (any case) as powers of 1024."""
    params = ior.module_options(f'ior -a HDF5 --hdf5.chunkSize={value}', 'HDF5', '4.1.0+dev')
    assert params['hdf5.chunkSize'] == expected
