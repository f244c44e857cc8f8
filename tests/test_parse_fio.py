"""fio parser against real fio 3.33 outputs in ``tests/fixtures/fio`` (made by its
``generate.sh``; each case's README.md has the exact command line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from h5regress.parsers import ParseError, RunFailed, parser_for
from h5regress.parsers import fio
from h5regress.parsers.base import MIB

FIO_DIR = Path(__file__).resolve().parent / 'fixtures' / 'fio'
CASES = sorted(d for d in FIO_DIR.iterdir() if d.is_dir())


def case_files(name: str) -> dict[str, str]:
    case = FIO_DIR / name
    return {p.name: p.read_text() for p in sorted(case.iterdir()) if fio.wanted(p.name)}


def values(run, op: str) -> dict[str, float]:
    return {m.metric: m.value for m in run.measurements if m.operation == op}


@pytest.mark.parametrize('case', [c for c in CASES if not c.name.startswith('fail-')],
                         ids=lambda c: c.name)
def test_every_success_matches_its_json(case):
    files = case_files(case.name)
    runs = fio.parse(files)
    doc = json.loads(files.get('fio-write.json') or files['stdout.txt'])
    jobs = doc['jobs']
    assert len(runs) == len({(j['jobname'], j['groupid']) for j in jobs})
    for run in runs:
        job = next(j for j in jobs if j['jobname'] == run.provenance['job'])
        rw = job['job options'].get('rw') or doc['global options']['rw']
        assert run.params['rw'] == rw
        assert run.params['bs'] == MIB
        assert run.params['fallocate'] in ('native', 'none')
        assert run.provenance['tool_version'] == 'fio-3.33'
        stats = job[rw]
        if run.provenance['jobs_aggregated'] == 1:
            assert values(run, rw)['bw'] == stats['bw_bytes'] / MIB
            assert values(run, rw)['iops'] == stats['iops']
        assert values(run, rw)['runtime'] == stats['runtime'] / 1000
        assert run.measurement(rw, 'bw').unit == 'MiB/s'
        assert run.measurement(rw, 'runtime').unit == 's'


@pytest.mark.parametrize('case', [c for c in CASES if c.name.startswith('fail-')],
                         ids=lambda c: c.name)
def test_every_failure_is_run_failed(case):
    with pytest.raises(RunFailed):
        fio.parse(case_files(case.name))


def test_direct_write_exact():
    run, = fio.parse(case_files('seq-write-direct'))
    assert values(run, 'write')['bw'] == 1398101333 / MIB
    assert values(run, 'write')['iops'] == 1333.333333
    assert values(run, 'write')['runtime'] == 0.048
    assert values(run, 'write')['clat_mean'] == pytest.approx(694208.65625e-9)
    assert values(run, 'write')['clat_p99'] == pytest.approx(1499136e-9)
    assert not values(run, 'read')
    assert run.params['direct'] == '1' and run.params['size'] == 64 * MIB
    assert run.params['ioengine'] == 'psync' and run.params['end_fsync'] == '0'
    # fio preallocates by default: the mode is recorded, and that it was the default
    assert run.params['fallocate'] == 'native'
    assert 'fallocate' in run.provenance['defaulted']
    assert run.provenance['filename'] == '/var/tmp/h5r-fio-scratch/fio-direct.dat'
    assert 'filename' not in run.params and 'name' not in run.params
    assert run.provenance['finished'] == '2026-11-21T20:15:58+00:00'


def test_buffered_end_fsync_and_read():
    write, = fio.parse(case_files('seq-write-buffered-end-fsync'))
    assert write.params['direct'] == '0' and write.params['end_fsync'] == '1'
    read, = fio.parse(case_files('seq-read-buffered'))
    assert values(read, 'read')['bw'] == 1220161163 / MIB
    assert read.params['invalidate'] == '1'


def test_explicit_fallocate_none_json_plus():
    run, = fio.parse(case_files('seq-write-direct-fallocate-none-jsonplus'))
    assert run.params['fallocate'] == 'none'
    assert 'fallocate' not in run.provenance['defaulted']


def test_job_file_gives_one_run_per_job():
    write, read = fio.parse(case_files('write-read-jobfile'))
    assert (write.params['rw'], read.params['rw']) == ('write', 'read')
    assert values(write, 'write')['bw'] == 1427848170 / MIB
    assert values(read, 'read')['bw'] == 1177348491 / MIB
    assert read.params['direct'] == '1'            # from "global options"
    assert read.params['ioengine'] == 'psync'


def test_same_named_jobs_are_aggregated():
    run, = fio.parse(case_files('seq-write-direct-numjobs2'))
    doc = json.loads(case_files('seq-write-direct-numjobs2')['stdout.txt'])
    stats = [job['write'] for job in doc['jobs']]
    longest = max(s['runtime'] for s in stats) / 1000
    assert run.provenance['jobs_aggregated'] == 2
    assert values(run, 'write')['bw'] == pytest.approx(
        sum(s['io_bytes'] for s in stats) / longest / MIB)
    assert run.params['numjobs'] == '2'


def test_output_file_as_the_check_writes_it():
    files = case_files('seq-write-direct-group-reporting-output-file')
    assert files['stdout.txt'] == ''
    run, = fio.parse(files)
    assert run.provenance['source'] == 'fio-write.json'
    # group_reporting merges the two jobs into one entry (fio does not list the option)
    assert run.params['numjobs'] == '2' and run.provenance['jobs_aggregated'] == 1
    assert run.provenance['io_bytes'] == {'write': 2 * 32 * MIB}
    assert fio.parse({'fio-write.json': files['fio-write.json']})[0].params == run.params


def test_failures_name_the_cause():
    with pytest.raises(RunFailed, match=r'failed: Invalid argument \(errno 22\)'):
        fio.parse(case_files('fail-unaligned-direct'))
    # the JSON says error 0 but nothing was written; only stderr says why
    with pytest.raises(RunFailed, match='did no write I/O.*Not a directory'):
        fio.parse(case_files('fail-parent-is-a-file'))
    with pytest.raises(RunFailed, match='is not a directory'):
        fio.parse(case_files('fail-nonexistent-dir'))
    # without stderr, the JSON alone still shows the failure
    with pytest.raises(RunFailed, match='did no write I/O'):
        fio.parse({'stdout.txt': case_files('fail-parent-is-a-file')['stdout.txt']})


def test_messages_before_the_json_are_skipped():
    stdout = case_files('fail-unaligned-direct')['stdout.txt']
    assert stdout.startswith('fio: first direct IO errored')
    doc, outside = fio.find_json(stdout, 'stdout.txt')
    assert doc['jobs'][0]['error'] == 22
    assert outside[0].startswith('fio: first direct IO errored')
    # a warning before a good JSON becomes a warning of the run
    good = case_files('seq-write-direct')['stdout.txt']
    run, = fio.parse({'stdout.txt': 'fio: native_fallocate call failed\n' + good})
    assert run.warnings == ['stdout.txt: fio: native_fallocate call failed']


def test_truncated_json_is_run_failed():
    text = case_files('seq-write-direct')['stdout.txt']
    for cut in (200, len(text) // 2, len(text) - 10):
        with pytest.raises(RunFailed, match='truncated'):
            fio.parse({'stdout.txt': text[:cut]})


def test_records():
    run, = fio.parse(case_files('seq-read-direct'))
    records = run.to_records(run_id='r')
    assert {(r.operation, r.metric) for r in records} >= {('read', 'bw'), ('read', 'iops')}
    assert all(r.tool == 'fio' and r.timestamp == run.provenance['finished']
               for r in records)


def test_wanted_and_registry():
    assert parser_for('fio') is fio
    assert all(fio.wanted(n) for n in ('fio-write.json', 'stdout', 'stdout.txt', 'x.log'))
    assert not any(fio.wanted(n) for n in ('README.md', 'write-read.fio', 'generate.sh'))


def test_empty_output_file_is_run_failed():
    with pytest.raises(RunFailed, match='empty'):
        fio.parse({'fio-write.json': '', 'stdout': 'h5regress-exit-code: 1\n'})


@pytest.mark.parametrize('value, expected', [
    ('1m', MIB), ('64M', 64 * MIB), ('32m', 32 * MIB), ('33554432', 32 * MIB), ('1000', 1000),
    ('4k', 4096), ('1g', 1024 * MIB), ('1mb', MIB), (4096, 4096),
    # not a plain size: kept as given
    ('4k:64k', '4k:64k'), ('1.5m', '1.5m'), ('50%', '50%')])
def test_bs_and_size_spellings(value, expected):
    """fio's plain sizes as the JSON repeats them (``"1m"``, ``"64m"``): powers of 1024."""
    params, _, _ = fio.job_params({}, {'bs': value, 'size': value}, 'fio-3.33')
    assert params['bs'] == expected and params['size'] == expected


# ------------------------------------------------------------------------------------
# issue 14: moved against asked, fio's error lines, non-numbers. Derived from the real
# outputs by changing one value; tests/test_reliability.py makes the real faults.

def test_a_job_that_moved_less_than_asked_is_run_failed():
    text = case_files('seq-write-direct-numjobs2')['stdout.txt']
    doc = json.loads(text)
    doc['jobs'][1]['write']['io_bytes'] //= 2                # 2 jobs x 32 MiB asked
    with pytest.raises(RunFailed, match=r"job 2 of 2 of 'seqwrite' moved 16777216 B, asked "
                                        r"for 33554432 B"):
        fio.parse({'stdout.txt': json.dumps(doc, indent=2)})
    # group_reporting: one entry for both jobs, the bytes of both asked
    files = case_files('seq-write-direct-group-reporting-output-file')
    doc = json.loads(files['fio-write.json'])
    doc['jobs'][0]['write']['io_bytes'] = 32 * MIB
    with pytest.raises(RunFailed, match=r"the 2 jobs of 'seqwrite' moved 33554432 B, asked "
                                        r"for 67108864 B"):
        fio.parse({'fio-write.json': json.dumps(doc, indent=2)})


def test_a_time_limit_may_move_less_than_asked():
    doc = json.loads(case_files('seq-write-direct-numjobs2')['stdout.txt'])
    doc['jobs'][1]['write']['io_bytes'] //= 2
    doc['jobs'][0]['job options']['runtime'] = '1'
    run, = fio.parse({'stdout.txt': json.dumps(doc, indent=2)})
    assert run.params['runtime'] == '1'


def test_a_worker_killed_is_run_failed():
    # fio writes this line into its output when a worker dies, then reports and exits 0
    text = 'fio: pid=25380, got signal=9\n' + case_files('seq-write-direct')['stdout.txt']
    with pytest.raises(RunFailed, match=r'stdout.txt:1: a fio worker died of a signal'):
        fio.parse({'stdout.txt': text})
    assert fio.error_line({'stderr': 'fio: pid=25380, got signal=9\n'}).startswith('stderr:1:')
    assert fio.error_line({'stderr': 'fio: native_fallocate call failed\n'}) is None


@pytest.mark.parametrize('spelling', ['-nan', 'nan', 'NaN', 'inf'])
def test_a_non_number_is_a_parse_error(spelling, tmp_path):
    text = case_files('seq-write-direct')['stdout.txt'].replace(
        '"bw" : 1365333,', f'"bw" : {spelling},')
    with pytest.raises(ParseError, match=r'jobs\[0\].write.bw: not a number') as err:
        fio.parse({'stdout.txt': text})
    assert not isinstance(err.value, RunFailed)
    (tmp_path / 'fio.json').write_text(text)
    out = subprocess.run([sys.executable, '-m', 'h5regress.cli', 'parse', 'fio',
                          str(tmp_path / 'fio.json')], capture_output=True, text=True)
    assert out.returncode == 4 and 'not a number' in out.stderr and out.stdout == ''
    # where no record reads it, fio's non-number is no failure
    fine = case_files('seq-write-direct')['stdout.txt'].replace(
        '"bw_dev" : 0.000000,', f'"bw_dev" : {spelling},', 1)
    assert fio.parse({'stdout.txt': fine})
