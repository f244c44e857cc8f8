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
