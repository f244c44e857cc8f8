"""The Darshan diff of a FAIL (issue 15): counters read by PyDarshan, diffed.

The fast tests check the diff's rules and the "why no diff" path; the slow one
runs a real IOR check (ReFrame, the nightly's run_once) of each build under the
Spack environment's Darshan, with a planted change: the candidate's transfers are
half the baseline's (a check option), so it makes twice the writes."""

import dataclasses
import json
import os

import pytest

from h5regress import darshan, followup, manifest, nightly, nightrun
from reframe_run import REPO, skip_without_spack

BUILD = 'hdf5-1.14.1'
#: one small IOR test of `local` (single shared file, independent HDF5 writes)
IOR_TEST = (f'ior_check %num_nodes=1 %tasks_per_node=2 %hdf5_build={BUILD} '
            '%benchmark=HDF5-independent-ssf')


def fail_result(baseline, candidate, test=IOR_TEST):
    return {'baseline': baseline, 'candidate': candidate, 'metrics': [
        {'role': 'gated', 'verdict': 'FAIL', 'label': 'ior HDF5-independent-ssf write bw_mean',
         'key': 'k|ior|write|bw_mean', 'test': test, 'ratio': 0.6}]}


def test_the_diff_puts_new_and_large_changes_first_and_time_last():
    base = {'POSIX_WRITES': 100, 'H5D_WRITES': 10, 'POSIX_F_WRITE_TIME': 1.0,
            'POSIX_OPENS': 4, 'MPIIO_COLL_WRITES': 0, 'POSIX_READS': 50}
    cand = {'POSIX_WRITES': 200, 'H5D_WRITES': 30, 'POSIX_F_WRITE_TIME': 9.0,
            'POSIX_OPENS': 4, 'MPIIO_COLL_WRITES': 8, 'POSIX_READS': 50.2}
    rows = darshan.diff(base, cand)
    assert [r['counter'] for r in rows] == ['MPIIO_COLL_WRITES', 'H5D_WRITES', 'POSIX_WRITES',
                                            'POSIX_F_WRITE_TIME']
    assert rows[0]['ratio'] is None and rows[1]['ratio'] == 3.0
    assert [r['category'] for r in rows] == ['collective vs independent', 'HDF5 H5D',
                                             'operations', 'time (instrumented run)']


def test_counters_that_are_no_sums_are_left_out():
    for name in ('POSIX_MAX_BYTE_WRITTEN', 'POSIX_ACCESS1_ACCESS', 'POSIX_FASTEST_RANK',
                 'POSIX_F_OPEN_START_TIMESTAMP', 'H5D_ACCESS1_LENGTH_D5', 'rank', 'id',
                 'POSIX_F_VARIANCE_RANK_TIME', 'MPIIO_MODE'):
        assert darshan.NOT_ADDITIVE.search(name), name
    for name in ('POSIX_WRITES', 'POSIX_SIZE_WRITE_100K_1M', 'MPIIO_COLL_WRITES',
                 'H5D_BYTES_WRITTEN', 'H5F_OPENS', 'POSIX_F_WRITE_TIME'):
        assert not darshan.NOT_ADDITIVE.search(name), name


def test_a_test_of_a_gate_row_is_selected_whatever_its_build():
    import re
    regex = nightrun.tests_regex([IOR_TEST])
    other = IOR_TEST.replace(BUILD, 'hdf5-develop').replace(' ', '')
    assert re.search(regex, other)
    assert not re.search(regex, other.replace('independent', 'collective'))
    assert not re.search(regex, other.replace('ior_check', 'ior_check_x'))


def test_without_a_darshan_library_the_report_says_why(tmp_path):
    data = {'schema': manifest.SCHEMA, 'generated': 'now', 'spack_version': 'none',
            'environment': str(tmp_path), 'lock_sha256': '0' * 64, 'builds': {
                f'hdf5-{x}': {'hdf5': {'version': 'system', 'label': x, 'commit': '0' * 40,
                                       'variants': 'stand-in', 'hash': x, 'prefix': str(tmp_path)},
                              'tools': {}} for x in ('a', 'b')}}
    path = manifest.write(tmp_path / 'manifest.json', data)
    section = darshan.night_diff(fail_result('hdf5-a', 'hdf5-b'), path, tmp_path / 'd',
                                 lambda *a: pytest.fail('nothing may run'))
    assert not section['available'] and 'has no darshan-runtime for build hdf5-a' \
        in section['reason']
    gone = darshan.night_diff(fail_result('hdf5-a', 'hdf5-b'), tmp_path / 'none.json',
                              tmp_path / 'd', lambda *a: pytest.fail('nothing may run'))
    assert 'none.json' in gone['reason'] and not gone['available']
    (title, _, rows, note), = followup.tables({'darshan': section})
    assert rows == [] and note.startswith('no Darshan counter diff: ')
    assert 'no Darshan counter diff' in followup.junit_cases({'darshan': section})[0]


def darshan_or_skip():
    why = None
    try:
        lib = manifest.darshan_library(BUILD)
        if not lib:
            why = f'the Spack manifest has no darshan-runtime for {BUILD}'
    except manifest.ManifestError as err:
        why = f'no Spack manifest with Darshan: {err}'
    if why:
        skip_without_spack(why)


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_a_real_darshan_shows_a_planted_doubling_of_the_writes(tmp_path):
    darshan_or_skip()
    src = manifest.default_path()
    data = json.loads(src.read_text())
    entry = data['builds'][BUILD]
    # the candidate: the same build under another id; its runs take half the transfer size
    data['builds'] = {BUILD: entry,
                      'hdf5-halved': {**entry, 'hdf5': {**entry['hdf5'], 'label': 'halved'}}}
    path = manifest.write(tmp_path / 'manifest.json', data)
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--quiet', '--no-install'])
    nightrun.start_attempt(args)

    def run_check(build, test, pair_id, extra):
        size = '512k' if build == 'hdf5-halved' else '1m'
        one = dataclasses.replace(args, select=nightrun.checks_selection(
            nightrun.tests_regex([test])), setvar=[
            f'ior_check.transfer_size={size}', 'ior_check.block_size=8m'])
        env = {**os.environ, 'RFM_CONFIG_FILES': ':'.join(args.config_files), **extra}
        nightrun.run_once(build, pair_id, one, env)

    result = fail_result(BUILD, 'hdf5-halved')
    section = darshan.night_diff(result, path, tmp_path / 'out' / 'darshan', run_check)
    assert section['available'], section
    (m,) = section['metrics']
    assert 'error' not in m, m
    assert m['baseline_logs'] and m['candidate_logs']
    by = {r['counter']: r for r in m['changes']}
    assert by['H5D_WRITES']['ratio'] == pytest.approx(2.0)
    assert 1.5 < by['POSIX_WRITES']['ratio'] < 2.5
    assert 'POSIX_BYTES_WRITTEN' not in by or abs(by['POSIX_BYTES_WRITTEN']['ratio'] - 1) < 0.05
    # never samples: the gate's perflogs have nothing of these runs
    assert not list(nightrun.attempt_perflogs(args).rglob('*.log'))
    (title, header, rows, note), = followup.tables({'darshan': section})
    assert 'H5D_WRITES' in [r[0] for r in rows] and 'PyDarshan' in note
    print('\n'.join(' | '.join(r) for r in rows))
