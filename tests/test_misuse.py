"""Misuse ends in ERROR (exit 4) with a message naming the wrong value and the right
ones, never in a verdict (issue 16): a mistyped build id, a missing perflog folder, an
unset site config, a failed salloc."""

import os
import subprocess
import sys

import pytest

from h5regress import gate, nightly
from h5regress.cmdline import EXIT_USAGE
from reframe_run import REPO, SETTINGS
from test_gate import BASE, CAND, paired, write_jsonl


def test_a_mistyped_build_id_is_error_listing_the_builds(tmp_path, capsys):
    path = write_jsonl(tmp_path / 'r.jsonl', paired(10, 1.0))
    code = gate.main_gate(['--baseline', BASE, '--candidate', 'hdf5-devel0p',
                           '--records', path, '--refs', '--quiet'])
    err = capsys.readouterr().err
    assert code == gate.EXIT_ERROR, err
    assert "--candidate 'hdf5-devel0p'" in err and f'{BASE}, {CAND}' in err


def test_a_build_id_of_another_attempt_only_is_error(tmp_path, capsys):
    path = write_jsonl(tmp_path / 'r.jsonl', paired(10, 1.0))
    code = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                           '--attempt', 'another', '--refs', '--quiet'])
    err = capsys.readouterr().err
    assert code == gate.EXIT_ERROR and 'of attempt another have no build at all' in err


def test_a_missing_perflog_folder_is_error_not_one_malformed_line(tmp_path, capsys):
    missing = tmp_path / 'perflogs' / 'no-such-attempt'
    code = gate.main_gate(['--baseline', BASE, '--candidate', CAND,
                           '--perflogs', str(missing), '--refs', '--quiet'])
    err = capsys.readouterr().err
    assert code == gate.EXIT_ERROR, err
    assert f'--perflogs {missing}: no such file or directory' in err


@pytest.mark.parametrize('chain, message', [
    (f'{SETTINGS}:', 'file 2 of the chain is empty (an unset variable?)'),
    (f'{SETTINGS}:nosuchsite.py', 'nosuchsite.py is not a file'),
])
def test_an_unset_or_missing_site_config_is_error(tmp_path, capsys, chain, message):
    with pytest.raises(SystemExit) as stop:
        nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--reframe-config', chain])
    assert stop.value.code == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_the_config_chain_reaches_reframe_whole(tmp_path):
    """ReFrame's -C takes one file: ``-C a:b`` was read as a file named 'a:b'."""
    site = tmp_path / 'site.py'
    site.write_text(SETTINGS.read_text())
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path),
                               '--reframe-config', f'{SETTINGS}:{site}'])
    assert args.config_files == [str(SETTINGS), str(site)]


def test_a_failed_salloc_is_error_not_fail(tmp_path):
    """A real salloc that gets no allocation (no such partition, or no SLURM here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('SLURM_')}
    out = subprocess.run(
        [sys.executable, '-m', 'h5regress.nightly', '--stand-in', '--out', str(tmp_path),
         '--salloc', '-N1 -p h5regress-no-such-partition -t 1'],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == gate.EXIT_ERROR, out.stderr
    assert 'salloc -N1 -p h5regress-no-such-partition -t 1 failed' in out.stderr
    assert 'no allocation, no night' in out.stderr
    assert not (tmp_path / 'stand-in').exists(), 'the night started without an allocation'


def test_the_night_under_salloc_returns_its_own_exit_code(tmp_path, monkeypatch):
    """Inside the allocation the nightly writes its code where the outer one reads it."""
    args = nightly.parse_args(['--stand-in', '--out', str(tmp_path), '--salloc=-N2'])
    seen = {}

    def fake_salloc(cmd, env):
        seen['cmd'] = cmd
        with open(env[nightly.STATUS_ENV], 'w') as fp:
            fp.write(str(gate.EXIT_FAIL))
        return subprocess.CompletedProcess(cmd, gate.EXIT_FAIL)

    monkeypatch.setattr(nightly, 'run', fake_salloc)
    assert nightly.under_salloc(['--stand-in'], args) == gate.EXIT_FAIL
    assert seen['cmd'][:2] == ['salloc', '-N2'] and seen['cmd'][-1] == '--stand-in'
    status = tmp_path / 'status'
    monkeypatch.setenv(nightly.STATUS_ENV, str(status))
    monkeypatch.setenv('SLURM_JOB_ID', '7')
    monkeypatch.setattr(nightly, 'night', lambda args: nightly.NightResult(
        gate.EXIT_INCONCLUSIVE, 0, args.out, args.attempt))
    assert nightly.main(['--stand-in', '--out', str(tmp_path), '--salloc=-N2']) == 2
    assert status.read_text() == '2'


def test_run_suite_names_an_empty_member_of_its_config_chain():
    out = subprocess.run([str(REPO / 'ci' / 'run-suite'), '-C', 'reframe/config/settings.py:',
                          '-l'], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == EXIT_USAGE, out.stdout[-2000:]
    assert "'reframe/config/settings.py:': file 2 of the chain is empty" in out.stderr


# -- an injected slowdown is not an A/A night (issue 16) ------------------------------

def test_an_injected_slowdown_night_is_not_a_a_and_its_fail_no_false_alarm(tmp_path):
    """Stand-in builds carry one commit; a candidate slowed on purpose is not A/A: its
    FAIL is right, and neither the night nor the history counts it as a false alarm."""
    from h5regress import history, report
    records = paired(20, 0.6, commit='same')
    result = gate.run_gate(records, BASE, CAND, gate.load_config(), injected_slowdown=0.5,
                           night='2026-11-20')
    assert result['overall'] == 'FAIL' and not result['a_a']
    assert result['injected_slowdown'] == 0.5
    assert not any(m['false_alarm'] for m in result['metrics'])
    assert 'Injected slowdown' in report.summary(result) \
        and 'A/A night' not in report.summary(result)
    hdir = tmp_path / 'history'
    history.write_night(hdir, *gate.history_lines(result))
    past = history.load(hdir)
    assert gate.false_alarm_rates(past)['per_night']['nights'] == 0
    assert '50% slowdown injected' in report.index_html(past)
    # without the label the same night is A/A and its FAIL a false alarm
    plain = gate.run_gate(records, BASE, CAND, gate.load_config(), night='2026-11-20')
    assert plain['a_a'] and any(m['false_alarm'] for m in plain['metrics'])


def test_the_stand_in_nightly_tells_the_gate_and_the_manifest(tmp_path, monkeypatch):
    args = nightly.parse_args(['--stand-in', '--inject-slowdown', '0.5', '--out', str(tmp_path)])
    seen = {}
    monkeypatch.setattr(nightly.gate, 'gate_request',
                        lambda request: seen.setdefault('request', request) and gate.EXIT_FAIL)
    nightly.gate_once('a', 'b', args, final=True)
    assert seen['request'].injected_slowdown == 0.5


# -- console output (issue 16) -----------------------------------------------------------

def run_suite_module():
    import importlib.util
    from importlib.machinery import SourceFileLoader
    loader = SourceFileLoader('run_suite', str(REPO / 'ci' / 'run-suite'))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_run_suite_summary_is_a_line_per_test_case():
    """ci/run-suite's default summary: no wide comparison table with '<no data>' columns
    on a first run, but a line per test case with its values (and why it failed)."""
    report = {'runs': [{'testcases': [
        {'display_name': 'flashio_check %num_nodes=1 %benchmark=hdf5-collective',
         'result': 'pass', 'perfvalues': {
             'local:default:checkpoint_bw': [92.75, 15, -0.95, None, 'MiB/s', 'pass'],
             'local:default:checkpoint_time': [4.147, None, None, None, 's', 'pass']}},
        {'display_name': 'ior_check %api=HDF5', 'result': 'fail', 'fail_phase': 'sanity',
         'fail_reason': 'IOR: No space left on device (errno 28)\nmore', 'perfvalues': {
             'local:default:write_bw': [None, 300, -0.95, None, 'MiB/s', None]}},
    ]}]}
    lines = run_suite_module().summary_lines(report)
    assert lines == [
        'pass    flashio_check num_nodes=1 benchmark=hdf5-collective: checkpoint_bw 92.75 '
        'MiB/s, checkpoint_time 4.147 s',
        'fail    ior_check api=HDF5 -- sanity: IOR: No space left on device (errno 28)']


def test_run_suite_keeps_reframes_table_when_asked(monkeypatch):
    module = run_suite_module()
    chosen = {}
    monkeypatch.setattr(module.subprocess, 'run',
                        lambda *a, **k: subprocess.CompletedProcess(a, 0))
    monkeypatch.setattr(module, 'check_writable', lambda dirs: None)
    monkeypatch.setattr(module, 'result_dirs', lambda args, env: [])
    monkeypatch.setattr(module, 'run_with_summary',
                        lambda command, env, report: chosen.setdefault('summary', report) and 0)
    monkeypatch.setattr(module.os, 'execve', lambda exe, command, env: chosen.setdefault(
        'execve', command))
    monkeypatch.delenv('RFM_REPORT_FILE', raising=False)
    with pytest.raises(SystemExit):
        module.main([])
    assert chosen['summary'].endswith('.json') and 'execve' not in chosen
    chosen.clear()
    module.main(['--performance-report'])
    assert '--performance-report' in chosen['execve'] and 'summary' not in chosen


# -- a path that does not exist is an error naming it (issue 29) -----------------------

def h5regress(*args):
    return subprocess.run([sys.executable, '-m', 'h5regress.cli', *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_perflog_of_a_missing_path_is_an_error_naming_it(tmp_path):
    missing = tmp_path / 'no-such-perflogs'
    out = h5regress('perflog', str(missing))
    assert out.returncode == gate.EXIT_ERROR and out.stdout == ''
    assert f'{missing}: no such file or directory' in out.stderr


def test_report_index_of_a_missing_history_is_an_error_naming_it(tmp_path):
    missing = tmp_path / 'no-such-history'
    out = h5regress('report', '--index', '--history', str(missing),
                    '--out', str(tmp_path / 'site'))
    assert out.returncode == gate.EXIT_ERROR
    assert f'history {missing}: no such directory' in out.stderr
    assert not (tmp_path / 'site').exists()


@pytest.mark.parametrize('option', ['--perflogs', '--manifest'])
def test_report_with_a_missing_perflogs_or_manifest_is_an_error_naming_it(tmp_path, option):
    result = tmp_path / 'gate.json'
    result.write_text('{}')
    missing = tmp_path / 'no-such-input'
    out = h5regress('report', str(result), option, str(missing),
                    '--out', str(tmp_path / 'report'))
    assert out.returncode == gate.EXIT_ERROR
    assert f'{option} {missing}: no such file or directory' in out.stderr


def test_run_suite_with_a_manifest_variable_naming_no_file_stops_before_running(tmp_path):
    missing = tmp_path / 'no-such-manifest.json'
    out = subprocess.run([str(REPO / 'ci' / 'run-suite'), '-n', 'fio_check', '-l'], cwd=REPO,
                         env={**os.environ, 'H5REGRESS_MANIFEST': str(missing)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == gate.EXIT_ERROR, out.stdout[-2000:]
    assert f'H5REGRESS_MANIFEST={missing}: no such file' in out.stderr
    assert 'Found' not in out.stdout          # ReFrame never started


# -- a -S variable no selected check has (issue 29) --------------------------------------

@pytest.mark.parametrize('setting, named', [
    ('fio_check.nonexistent=3', 'fio_check.nonexistent'),
    ('nosuchvariable=1', 'nosuchvariable'),
])
def test_run_suite_refuses_a_setvar_no_selected_check_has(tmp_path, setting, named):
    """ReFrame 4.10 only warns ("the following variables were not set") and runs."""
    out = subprocess.run([str(REPO / 'ci' / 'run-suite'), '-n', 'fio_check.*direct',
                          '-S', setting, '--dry-run', '-s', str(tmp_path / 'stage'),
                          '-o', str(tmp_path / 'output')], cwd=REPO,
                         env={**os.environ, 'H5REGRESS_MANIFEST': 'none'},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == EXIT_USAGE, out.stdout[-2000:]
    assert f'-S {named}: no such variable in the selected checks' in out.stderr
    assert not (tmp_path / 'stage').exists()


def test_an_unprefixed_setvar_one_selected_check_has_is_kept():
    listing = ("WARNING: test 'fio_check': the following variables were not set: "
               "'repetitions', 'nosuch'\n- ior_check %api=HDF5 /1\n- fio_check %x=1 /2\n"
               "WARNING: test 'ior_check': the following variables were not set: 'nosuch'")
    module = run_suite_module()
    assert module.unknown_setvars(listing, ['repetitions=5', 'nosuch=1',
                                            'fio_check.repetitions=2',
                                            'ior_check.repetitions=2']) == \
        ['nosuch', 'fio_check.repetitions']


def test_study_analyse_only_of_an_empty_folder_is_an_error_writing_nothing(tmp_path,
                                                                         monkeypatch, capsys):
    from h5regress import study
    monkeypatch.setenv('H5REGRESS_MANIFEST', 'none')
    code = study.main(['scaling', '--analyse-only', '--out', str(tmp_path)])
    err = capsys.readouterr().err
    assert code == gate.EXIT_ERROR
    assert f'--analyse-only: no record under {tmp_path / "reports"}' in err
    assert list(tmp_path.iterdir()) == []


def test_run_suite_exits_4_on_an_invalid_reference_file(monkeypatch, capsys):
    """README: before anything runs ci/run-suite exits 4 (bad input) when a reference
    file is invalid."""
    module = run_suite_module()
    monkeypatch.setattr(module.subprocess, 'run',
                        lambda *a, **k: subprocess.CompletedProcess(a, 4))
    monkeypatch.setattr(module.os, 'execve', lambda *a: pytest.fail('ReFrame started'))
    with pytest.raises(SystemExit) as stop:
        module.main(['-l'])
    assert stop.value.code == gate.EXIT_ERROR
    assert 'reference files in reframe/config/references are invalid' in \
        capsys.readouterr().err


def test_run_suite_says_why_the_build_checks_select_nothing(tmp_path):
    """With a Spack manifest every *_build_check stands down as it loads: the selection
    `-n _build_check` is empty, and ci/run-suite says why instead of only that."""
    from test_build_fixtures import one_build_manifest
    from test_reliability import run_suite
    out = run_suite(['-n', 'ior_build_check'], tmp_path,
                    env={'H5REGRESS_MANIFEST': str(one_build_manifest(tmp_path))})
    assert out.returncode == EXIT_USAGE, out.stdout[-2000:]
    assert 'no check matches the selection -n ior_build_check' in out.stderr
    assert 'ior_build_check: the Spack manifest has HDF5 builds: ior_check runs its ior' \
        in out.stderr
    assert not (tmp_path / 'stage').exists()


def test_run_suite_summary_gives_each_skip_its_reason(tmp_path):
    """ReFrame's run report has no reason for a skipped test case (fail_reason null):
    the summary line of a check skipped for a missing tool used to end at its name."""
    from reframe_run import reframe_env
    from test_build_fixtures import path_without_tools
    env = {**reframe_env(tmp_path), 'PATH': path_without_tools(), 'RFM_COLORIZE': 'y'}
    env.pop('RFM_REPORT_FILE', None)
    out = subprocess.run([str(REPO / 'ci' / 'run-suite'), '-n',
                          'macsio_check.*hdf5-SIF-collective$', '-s', str(tmp_path / 'stage'),
                          '-o', str(tmp_path / 'output')], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    summary = out.stdout.split('\nSUMMARY (', 1)[1].splitlines()[1:]
    skips = [line for line in summary if line.startswith('skip')]
    assert len(skips) == 1, summary
    assert '-- skipped: macsio not found on PATH' in skips[0]
    assert 'Ran 0/1 test case(s)' in out.stdout        # ReFrame's own output still shown
