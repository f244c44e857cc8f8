"""The check files a repeated ReFrame run loads (h5regress/checkfiles.py): only those
its selection's first run made its tests from, and the same tests. conftest.py gives
every test a fresh memory of what runs taught."""

import json
import subprocess

from h5regress import checkfiles, nightly, nightrun
from h5regress.gateconfig import CHECKS_DIR
from reframe_run import reframe_bin, reframe_env

FLASHIO, IOR = str(CHECKS_DIR / 'flashio.py'), str(CHECKS_DIR / 'ior.py')


def report_of(path, *cases):
    """A ReFrame run report whose test cases are (file, fixture?) pairs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({'session_info': {'num_cases': len(cases)}, 'runs': [
        {'testcases': [{'filename': name, 'fixture': fixture} for name, fixture in cases]}]}))
    return path


def command(report, *selection):
    return ['reframe', '-c', CHECKS_DIR, *selection, '-r', '-s', 'stage', '-o', 'output',
            '--report-file', report]


def fake_run(tmp_path, check_file):
    """A stand-in of ReFrame's run: the ``-c`` of each command in ``loaded``, a report
    whose one test was made from ``check_file``."""
    loaded = []

    def run(cmd, env, stdout=None):
        cmd = [str(w) for w in cmd]
        loaded.append([cmd[i + 1] for i, w in enumerate(cmd) if w == '-c'])
        report_of(tmp_path / cmd[cmd.index('--report-file') + 1], (check_file, False))
        return subprocess.CompletedProcess(cmd, 0)
    return run, loaded


def test_the_files_of_a_report_and_a_test_made_elsewhere(tmp_path):
    elsewhere = str(tmp_path / 'builds.py')
    assert checkfiles.files_of(report_of(tmp_path / 'a.json', (IOR, False), (FLASHIO, False),
                                         (elsewhere, True))) == (FLASHIO, IOR)
    # a test (not a fixture) whose class lives elsewhere: its check file is unknown
    assert checkfiles.files_of(report_of(tmp_path / 'b.json', (IOR, False),
                                         (elsewhere, False))) == ()
    assert checkfiles.files_of(report_of(tmp_path / 'c.json')) == ()
    assert checkfiles.files_of(tmp_path / 'missing.json') == ()
    (tmp_path / 'bad.json').write_text('{"runs": [{}]}')
    assert checkfiles.files_of(tmp_path / 'bad.json') == ()


def test_only_the_same_selection_in_the_same_environment_is_narrowed(tmp_path):
    env = {'H5REGRESS_MANIFEST': 'none', 'H5REGRESS_PAIR_ID': 'p01', 'HOME': '/x'}
    first = command('r1.json', '-n', '^flashio_check', '-S', 'flashio_check.iterations=2')
    assert checkfiles.narrowed(first, env) == first
    checkfiles.learn(first, env, report_of(tmp_path / 'r1.json', (FLASHIO, False)))
    # another run of it: another report, stage, pair id, and other variables elsewhere
    again = command('r2.json', '-n', '^flashio_check', '-S', 'flashio_check.iterations=2')
    narrowed = checkfiles.narrowed(again, {**env, 'H5REGRESS_PAIR_ID': 'p02', 'HOME': '/y'})
    assert narrowed == ['reframe', '-c', FLASHIO] + again[3:]
    # learnt from a narrowed run, the same
    checkfiles.learn(narrowed, env, report_of(tmp_path / 'r2.json', (FLASHIO, False)))
    assert checkfiles.narrowed(again, env) == narrowed
    # another setting, another manifest, another selection: the whole directory
    for cmd, other in ((command('r', '-n', '^flashio_check', '-S', 'x=1'), env),
                       (again, {**env, 'H5REGRESS_MANIFEST': 'm.json'}),
                       (again, {**env, 'PATH': '/tools/bin'}),
                       (command('r', '-n', '^ior_check'), env)):
        assert checkfiles.narrowed(cmd, other) == cmd


def test_the_nightlys_later_pairs_load_only_the_files_of_their_tests(tmp_path, monkeypatch):
    """nightrun.run_once: each build's first run loads reframe/checks, its next runs
    the files its report named."""
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--quiet', '--no-install',
                               '--checks', '^flashio_check.*-collective'])
    nightrun.start_attempt(args)
    run, loaded = fake_run(tmp_path, FLASHIO)
    monkeypatch.setattr(nightrun, 'run', run)
    monkeypatch.setattr(nightrun, 'stop_leftovers', lambda what: None)
    for pair in ('p01', 'p02'):
        for build in ('hdf5-standin-a', 'hdf5-standin-b'):
            assert nightrun.run_once(build, pair, args, {'H5REGRESS_MANIFEST': 'm'}) == 0
    assert loaded == [[str(CHECKS_DIR)]] * 2 + [[FLASHIO]] * 2


def test_a_narrowed_run_makes_the_same_tests(tmp_path):
    """Real ReFrame (dry runs): the short real night's selection (IOR and FLASH-IO rows)
    makes the same test cases from the files its first run named as from the whole
    directory."""
    env = reframe_env(tmp_path, {'RFM_COLORIZE': 'n'})
    selection = ('-n', r'^(ior_check.*(HDF5|MPIIO)-collective-ssf|flashio_check.*-collective)',
                 '--dry-run')
    made = []
    for run in ('whole', 'narrowed'):
        report = tmp_path / f'{run}.json'
        cmd = checkfiles.narrowed(
            [reframe_bin(), '-c', str(CHECKS_DIR), *selection, '-s', str(tmp_path / 'stage'),
             '-o', str(tmp_path / 'output'), '--report-file', str(report)], env)
        subprocess.run(cmd, cwd=CHECKS_DIR.parents[1], env=env, capture_output=True,
                       text=True, timeout=600)
        checkfiles.learn(cmd, env, report)
        cases = json.loads(report.read_text())['runs'][0]['testcases']
        made.append(sorted((c['name'], c['filename'], c['result']) for c in cases))
        if run == 'narrowed':
            assert cmd.count('-c') == 2 and str(CHECKS_DIR) not in cmd, cmd
    assert made[0] == made[1] and made[0], made
    assert {name for _, name, _ in made[0]} == {FLASHIO, IOR}


def test_a_studys_later_repetitions_load_only_the_files_of_their_tests(tmp_path, monkeypatch):
    """study.run_study: each variant's first run loads reframe/checks, its next
    repetitions the files its report named."""
    from h5regress import nightprocs, study
    args, _ = study.parse(['hdf5-vs-mpiio', '--runs', '2', '--out', str(tmp_path), '--quiet'])
    args.build = 'path'
    run, loaded = fake_run(tmp_path, IOR)
    monkeypatch.setattr(nightprocs, 'run', run)
    monkeypatch.setattr(nightprocs, 'stop_leftovers', lambda what: None)
    monkeypatch.setattr(nightprocs, 'handle_signals', lambda: None)
    assert study.run_study(study.STUDIES['hdf5-vs-mpiio'], args) == {'MPI-IO': 2, 'HDF5': 2}
    assert loaded == [[str(CHECKS_DIR)]] * 2 + [[IOR]] * 2
