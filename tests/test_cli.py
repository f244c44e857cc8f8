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


@pytest.mark.parametrize('args, code, message', [
    (['parse', 'nosuchtool', '.'], 64, 'no parser for tool'),     # usage
    (['parse', 'ior', '/no/such/path'], 4, '/no/such/path'),      # input
])
def test_bad_input_exits_with_the_documented_code_and_a_clear_error(args, code, message):
    """Never 2, which a night reads as INCONCLUSIVE (README, "Exit codes")."""
    out = h5regress(*args)
    assert out.returncode == code and message in out.stderr


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
    assert out.returncode == 4 and out.stdout == ''
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
    assert '--reframe-config REFRAME_FILE[:FILE...]' in text and "not the gate's YAML" in text


# -- one exit-code convention (issue 29) ----------------------------------------------

def exit_code(argv) -> int:
    """``h5regress ARGV``'s exit code, in this process (a parser that exits counts)."""
    from h5regress import cli
    try:
        return cli.main(argv)
    except SystemExit as stop:
        return stop.code


SUBCOMMANDS = ['parse', 'perflog', 'gate', 'report', 'publish', 'refs', 'manifest',
               'bisect', 'study', 'coverage', 'replay']


def test_every_subcommand_is_listed():
    from h5regress import cli
    assert set(SUBCOMMANDS) == {'parse', 'perflog', *cli.DELEGATED}


@pytest.mark.parametrize('command', SUBCOMMANDS)
def test_a_wrong_command_line_exits_64_in_every_subcommand(command, capsys):
    """argparse's own 2 is the verdict INCONCLUSIVE: a usage error is EX_USAGE (64)."""
    assert exit_code([command, '--no-such-option']) == 64
    assert 'error:' in capsys.readouterr().err


def test_a_wrong_command_line_exits_64_in_h5regress_and_ci_nightly(capsys):
    from h5regress import nightly
    assert exit_code(['--no-such-option']) == 64
    assert exit_code(['no-such-command']) == 64
    with pytest.raises(SystemExit) as stop:
        nightly.parse_args(['--pairs', '0'])
    assert stop.value.code == 64
    assert exit_code(['manifest', 'no-such-action']) == 64
    capsys.readouterr()


def test_input_that_cannot_be_read_is_error_4(tmp_path, capsys):
    missing = str(tmp_path / 'missing')
    assert exit_code(['perflog', missing]) == 4
    assert exit_code(['report', missing + '.json', '--out', str(tmp_path)]) == 4
    assert exit_code(['manifest', 'show', missing]) == 4
    assert missing in capsys.readouterr().err


def test_help_exits_0_everywhere(capsys):
    for command in SUBCOMMANDS:
        assert exit_code([command, '--help']) == 0, command
    capsys.readouterr()


def test_version():
    out = h5regress('--version')
    assert out.returncode == 0 and out.stdout.startswith('h5regress ')
    assert out.stdout.split()[1][0].isdigit(), out.stdout


def test_ci_nightly_takes_the_reframe_chain_as_reframe_config(tmp_path, capsys):
    """--config names the gate YAML in gate, report, refs and publish; ci/nightly's old
    --config still works, with a deprecation message."""
    from h5regress import nightly
    chain = tmp_path / 'site.py'
    chain.write_text('site_configuration = {}\n')
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--reframe-config',
                               str(chain)])
    assert args.config_files == [str(chain.resolve())]
    assert 'deprecated' not in capsys.readouterr().err
    old = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--config', str(chain)])
    assert old.config_files == [str(chain.resolve())]
    assert 'give --reframe-config' in capsys.readouterr().err
    assert '--reframe-config' in nightly.build_parser().format_help()


def test_ci_nightly_passes_repo_url_to_every_report(monkeypatch):
    """The night's reports (gate, coverage line, Darshan diff, bisect) link commits to
    --repo-url; before, only $H5REGRESS_REPO_URL did."""
    from h5regress import nightly
    from h5regress.report import links
    monkeypatch.setenv(links.REPO_URL_ENV, '')     # restored (unset) after the test
    args = nightly.parse_args(['--stand-in', '--repo-url', 'https://github.com/HDFGroup/hdf5/'])
    nightly.use_repo_url(args.repo_url)
    assert links.repo_url() == 'https://github.com/HDFGroup/hdf5'
    urls = dict(links.commit_urls({'baseline_commit': 'a' * 40, 'candidate_commit': 'b' * 40},
                                  links.repo_url()))
    assert urls['candidate commit'] == 'https://github.com/HDFGroup/hdf5/commit/' + 'b' * 40
