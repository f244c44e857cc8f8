import json

import pytest

from h5regress.record import Record, RecordError, comparable_config, config_hash, read_jsonl


def make(**over):
    data = dict(tool='ior', operation='write', metric='bw_mean', value=100.0, unit='MiB/s',
                higher_is_better=True, params={'api': 'HDF5'}, provenance={},
                hdf5_build='hdf5-1.14.6', config_hash='abc', run_id='r1',
                timestamp='2026-11-21T00:00:00+00:00')
    data.update(over)
    return data


def test_round_trip():
    rec = Record.from_dict(make())
    assert Record.from_json(rec.to_json()) == rec


def test_config_hash_ignores_the_hdf5_build_only():
    a = comparable_config(tool='ior', params={'api': 'HDF5', 'hdf5_build': 'A'},
                          num_nodes=1, num_ranks=2, fs_type='ext4', mpiio_layer='ompio')
    b = comparable_config(tool='ior', params={'api': 'HDF5', 'hdf5_build': 'B'},
                          num_nodes=1, num_ranks=2, fs_type='ext4', mpiio_layer='ompio')
    assert config_hash(a) == config_hash(b)
    for change in ({'num_ranks': 4}, {'fs_type': 'lustre'}, {'mpiio_layer': 'romio321'},
                   {'mpiio_hints': {'cb_nodes': '2'}}, {'params': {'api': 'MPIIO'}}):
        assert config_hash({**a, **change}) != config_hash(a), change


@pytest.mark.parametrize('bad, key', [
    ({'value': 'fast'}, 'value'),
    ({'value': float('nan')}, 'value'),
    ({'higher_is_better': 'yes'}, 'higher_is_better'),
    ({'colour': 'red'}, 'colour'),
])
def test_malformed_records_name_the_key(bad, key):
    with pytest.raises(RecordError, match=key):
        Record.from_dict(make(**bad), 'history.jsonl:3')


def test_missing_key_is_named():
    data = make()
    del data['run_id']
    with pytest.raises(RecordError, match='history.jsonl:7.*run_id'):
        Record.from_dict(data, 'history.jsonl:7')


def test_read_jsonl_skips_and_reports_bad_lines():
    good = json.dumps(make())
    records, problems = read_jsonl('\n'.join([good, '{not json', good, '']), 'h.jsonl')
    assert len(records) == 2
    assert len(problems) == 1 and problems[0].startswith('h.jsonl:2')


def test_no_build_has_one_spelling(tmp_path):
    """Issue 26: a record that names no HDF5 build (``h5regress parse`` without
    --hdf5-build, a record without the key, a perflog's empty column) says
    buildid.NO_BUILD, never 'unknown'. Fails on the old code (it said 'unknown')."""
    import subprocess
    import sys

    from h5regress import buildid, perflog
    from reframe_run import OWN_FIXTURES
    data = {'tool': 'ior', 'operation': 'write', 'metric': 'bw', 'value': 1, 'unit': 'MiB/s',
            'higher_is_better': True, 'config_hash': 'h', 'run_id': 'r', 'timestamp': 't'}
    assert Record.from_dict(data).hdf5_build == buildid.NO_BUILD
    out = subprocess.run([sys.executable, '-m', 'h5regress.cli', 'parse', 'ior',
                          str(OWN_FIXTURES / 'ior' / 'own-hdf5-coll-ssf-b16m')],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert {json.loads(line)['hdf5_build'] for line in out.stdout.splitlines()} == \
        {buildid.NO_BUILD}
    row = dict.fromkeys(perflog.COLUMNS, '')
    row.update(perf_var='bw', perf_value='1', perf_unit='MiB/s', result='pass',
               config_hash='h', run_id='r', job_completion_time='t',
               h5r_context=json.dumps({'tool': 'ior', 'perfvars': {'bw': {
                   'operation': 'write', 'metric': 'bw', 'higher_is_better': True}}}))
    line = '|'.join(row[c] for c in perflog.COLUMNS)
    assert perflog.parse_line(line, len(perflog.COLUMNS), 'x').hdf5_build == buildid.NO_BUILD
