"""Perflog lines -> records: samples kept, failures and malformed lines skipped and named."""

import json

from h5regress import perflog

HEADER = '|'.join(perflog.COLUMNS)
CONTEXT = json.dumps({'tool': 'ior', 'params': {'api': 'HDF5'}, 'provenance': {'cmd': 'a|b'},
                      'perfvars': {'write_bw_mean': {'operation': 'write', 'metric': 'bw_mean',
                                                     'higher_is_better': True,
                                                     'samples': [1.0, 2.0]}}})


def line(result='pass', fail_phase='null', var='write_bw_mean', value='1.5', context=CONTEXT):
    return '|'.join(['2026-11-21T00:00:00+00:00', 'ior_check %api=HDF5', 'local:default',
                     'gnu-openmpi', var, value, 'MiB/s', '300', '-0.95', '30.0', 'pass',
                     result, fail_phase, 'hdf5-1.14.6', 'c0ffee', 'run1', context])


def test_pass_and_out_of_envelope_lines_are_samples_other_failures_are_not():
    text = '\n'.join([HEADER, line(), line(result='fail', fail_phase='performance'),
                      line(result='fail', fail_phase='sanity'), line(var='null')])
    records, problems = perflog.parse_text(text, 'ior_check.log')
    assert problems == []
    assert [r.result for r in records] == ['pass', 'perf_fail']
    r = records[0]
    assert (r.tool, r.operation, r.metric, r.value, r.samples) == \
        ('ior', 'write', 'bw_mean', 1.5, [1.0, 2.0])
    assert r.hdf5_build == 'hdf5-1.14.6' and r.config_hash == 'c0ffee'
    # a '|' inside the JSON context survives the split
    assert r.provenance['cmd'] == 'a|b'


def test_malformed_lines_are_skipped_and_named():
    text = '\n'.join([HEADER, line(value='fast'), line(context='{oops'), 'too|few', line()])
    records, problems = perflog.parse_text(text, 'p.log')
    assert len(records) == 1
    assert [p.split(':')[1] for p in problems] == ['2', '3', '4']
    assert 'value' in problems[0] and 'h5r_context' in problems[1]


def test_a_foreign_perflog_is_reported_not_read(tmp_path):
    (tmp_path / 'other.log').write_text('a|b|c\n1|2|3\n')
    records, problems = perflog.read([str(tmp_path)])
    assert records == [] and 'not an h5regress perflog' in problems[0]


def test_a_line_that_is_not_utf8_is_skipped_and_named(tmp_path):
    # issue 14: one bad byte used to be replaced silently and the line kept as a sample
    good = line().encode()
    bad = line(value='2.5').encode().replace(b'ior_check', b'ior_\xffcheck', 1)
    (tmp_path / 'p.log').write_bytes(b'\n'.join([HEADER.encode(), good, bad, good]) + b'\n')
    records, problems = perflog.read([str(tmp_path)])
    assert [r.value for r in records] == [1.5, 1.5]
    assert problems == [f'{tmp_path / "p.log"}:3: not UTF-8 (byte 0xff at column 31), '
                        'line skipped']


def test_the_gate_counts_a_line_that_is_not_utf8_as_malformed(tmp_path):
    from h5regress import gate
    body = [line().replace('run1', f'run{i}').replace('hdf5-1.14.6', b) for i, b in
            enumerate(['hdf5-a', 'hdf5-b'])]
    data = b'\n'.join([HEADER.encode()] + [x.encode() for x in body]
                      + [body[0].encode().replace(b'local', b'loc\xe9l')]) + b'\n'
    (tmp_path / 'p.log').write_bytes(data)
    records, problems = gate.load_records(perflog_dirs=[str(tmp_path)])
    night = gate.collect(records, 'hdf5-a', 'hdf5-b', problems)
    assert night.counts['records'] == 2 and night.counts['malformed'] == 1
    assert 'p.log:4: not UTF-8' in night.problems[0]
