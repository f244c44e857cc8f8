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


# -- a summary file named alone (issue 29) ---------------------------------------------

FULL_DISK = OWN_FIXTURES / 'ior' / 'fail-own-mpiio-full-disk'


def test_a_summary_file_of_a_failed_run_is_refused_by_its_captures_beside_it():
    """IOR wrote a complete summary after ENOSPC under MPI-IO: only stderr.txt beside it
    shows the failure, as the directory form sees."""
    out = h5regress('parse', 'ior', str(FULL_DISK / 'summary.json'))
    assert out.returncode == 1 and out.stdout == ''
    assert 'failed run' in out.stderr and 'ENOSPC' in out.stderr
    assert str(FULL_DISK / 'summary.json') in out.stderr


def test_a_summary_file_without_its_captures_is_refused_unless_trusted(tmp_path):
    alone = tmp_path / 'summary.json'
    alone.write_text((FULL_DISK / 'summary.json').read_text())
    out = h5regress('parse', 'ior', str(alone))
    assert out.returncode == 2 and out.stdout == ''
    assert str(alone) in out.stderr and 'alone cannot show the run succeeded' in out.stderr
    assert '--trust-summary' in out.stderr
    trusted = h5regress('parse', 'ior', '--trust-summary', str(alone))
    assert trusted.returncode == 0 and trusted.stdout.strip()


def test_a_summary_file_of_a_good_run_with_its_captures_parses():
    good = OWN_FIXTURES / 'ior' / 'own-hdf5-coll-ssf-b16m' / 'summary.json'
    out = h5regress('parse', 'ior', str(good))
    assert out.returncode == 0, out.stderr
    assert {json.loads(line)['operation'] for line in out.stdout.splitlines()} == \
        {'write', 'read'}


# -- help and version (issue 29) --------------------------------------------------------

def test_version_is_the_package_version():
    from importlib.metadata import version
    out = h5regress('--version')
    assert out.returncode == 0 and out.stdout.strip() == f'h5regress {version("h5regress")}'


def test_manifest_help_exits_0_and_names_its_subcommands():
    out = h5regress('manifest', '--help')
    assert out.returncode == 0, out.stderr
    assert 'write' in out.stdout and 'show' in out.stdout


@pytest.mark.parametrize('command', ['gate', 'report', 'refs'])
def test_each_config_help_says_it_is_the_gate_yaml(command):
    out = h5regress(command, '--help')
    assert out.returncode == 0
    text = ' '.join(out.stdout.split())
    assert '--config GATE_YAML' in text and 'not a ReFrame configuration' in text


def test_the_nightly_config_help_says_it_is_reframes_chain():
    out = subprocess.run([sys.executable, '-m', 'h5regress.nightly', '--help'],
                         capture_output=True, text=True)
    text = ' '.join(out.stdout.split())
    assert out.returncode == 0
    assert '--config REFRAME_FILE[:FILE...]' in text and "not the gate's YAML" in text
