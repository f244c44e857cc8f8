"""`h5regress parse` on real outputs made outside ReFrame (the project's own fixtures,
tests/fixtures/, recorded by tests/fixtures/record-tools.sh)."""

import json
import subprocess
import sys

import pytest

from reframe_run import OWN_FIXTURES


def h5regress(*args):
    return subprocess.run([sys.executable, '-m', 'h5regress.cli', *args],
                          capture_output=True, text=True)


def test_parse_an_ior_run_directory():
    out = h5regress('parse', 'ior', str(OWN_FIXTURES / 'ior' / 'own-hdf5-coll-ssf-b16m'))
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    means = {r['operation']: r for r in records if r['metric'] == 'bw_mean'}
    assert set(means) == {'write', 'read'}
    for r in means.values():
        assert r['unit'] == 'MiB/s' and r['higher_is_better'] is True
        assert r['params']['api'] == 'HDF5' and len(r['samples']) == 2
        assert r['config_hash'] and r['run_id'] and r['timestamp']


def test_a_failed_run_exits_1_and_names_it_but_keeps_the_good_ones():
    bad = OWN_FIXTURES / 'ior' / 'fail-own-hdf5-nonexistent-dir'
    good = OWN_FIXTURES / 'ior' / 'own-posix-indep-fpp-b16m'
    out = h5regress('parse', 'ior', str(good), str(bad))
    assert out.returncode == 1
    assert str(bad) in out.stderr and 'failed run' in out.stderr
    assert out.stdout.strip() and all(json.loads(l)['tool'] == 'ior'
                                      for l in out.stdout.splitlines())


@pytest.mark.parametrize('args, message', [
    (['parse', 'nosuchtool', '.'], 'no parser for tool'),
    (['parse', 'ior', '/no/such/path'], '/no/such/path'),
])
def test_bad_input_exits_2_with_a_clear_error(args, message):
    out = h5regress(*args)
    assert out.returncode == 2 and message in out.stderr
