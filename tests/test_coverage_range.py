"""Issue 28: a range's changed functions choose a bisect's rows, by a map that fits the
range (of its bad commit, else another commit's, said), and a replay records which
changed functions its FAILing rows execute. Real git repositories (stand-in commits
that also change a C file), real bisect and replay searches, simulated runs."""

import json
import re

from h5regress import bisect, bisectbuild, bisectsearch, coverage, nightly, nightrun, replay
from test_corpus import STANDIN_CASE

SLOW = 0.25
ROW_A = 'h5paths_check %benchmark=compound-subset-hdf5-collective-contiguous-earliest-warm'
ROW_B = 'h5paths_check %benchmark=many-datasets-hdf5-collective-contiguous-earliest'
ROW_C = 'ior_check %benchmark=HDF5-independent-ssf'
ROW_H = 'h5paths_check %benchmark=vds-hdf5-collective-contiguous-earliest'   # in no map
CODE = ''.join(f'int f{i}(void)\n{{\n    return {i};\n}}\n' for i in range(3))


def _commit(repo, slowdown, code, message):
    (repo / 'slowdown').write_text(f'{slowdown}\n')
    (repo / 'src' / 'H5x.c').write_text(code)
    bisectbuild.git(repo, 'add', 'slowdown', 'src')
    bisectbuild.git(repo, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit',
                    '--quiet', '-m', message)
    return bisectbuild.git(repo, 'rev-parse', 'HEAD').strip()


def range_repo(tmp_path):
    """A stand-in repository: good; bad (slower, changes f1); later (every function 4
    lines further down); rewritten (changes bad's changed line again). f<i> is lines
    1+4i..4+4i at good and bad."""
    repo = tmp_path / 'repo'
    (repo / 'src').mkdir(parents=True)
    bisectbuild.git(repo, 'init', '--quiet', '-b', 'main')
    bad_code = CODE.replace('return 1;', 'return 1 + 0;')
    later_code = ''.join(f'/* header {i} */\n' for i in range(4)) + bad_code
    return {'good': _commit(repo, 0.0, CODE, 'good'),
            'bad': _commit(repo, SLOW, bad_code, 'bad: f1'),
            'later': _commit(repo, SLOW, later_code, 'later: moved'),
            'rewritten': _commit(repo, SLOW, later_code.replace('1 + 0', '1 + 1'), 'again')}


def write_map(path, commit, rows, shift=0):
    """A map of ``commit``: f<i> on lines 1+4i+shift..4+4i+shift; rows {row: [f<i>...]}."""
    extents = [coverage.FunctionExtent('src/H5x.c', f'f{i}', 1 + 4 * i + shift,
                                       4 + 4 * i + shift) for i in range(3)]
    cmap = coverage.CoverageMap('hdf5-x-cov', {r: [coverage.FunctionHit(
        'src/H5x.c', f, 3, 2, 2) for f in fs] for r, fs in rows.items()}, extents, commit)
    path.write_text(cmap.to_json())
    return str(path)


def bisect_cli(tmp_path, shas, *maps):
    out = ['--good', shas['good'], '--bad', shas['bad'], '--repo', str(tmp_path / 'repo'),
           '--builder', 'stand-in', '--simulate-cv', '0.04', '--seed', '1',
           '--work', str(tmp_path / 'work'), '--json', str(tmp_path / 'result.json')]
    for m in maps:
        out += ['--coverage-map', m]
    return out


def state_of(tmp_path):
    return json.loads((tmp_path / 'work' / bisectsearch.STATE_FILE).read_text())


def leaves_out(rows):
    return [*nightrun.NIGHT_SELECTION, '-x', nightrun.tests_regex(rows)]


def test_a_bisect_follows_a_map_of_a_later_commit_and_says_it_is_of_another(tmp_path,
                                                                              capsys):
    """The pinned candidate's map serves an older range: bad's changed line (f1) is
    followed to the map's lines (f1 there is 9-12, where f0 of bad would be read without
    it). Rows the map does not hold still run. Fails on old code: yes (exit 4, 'its line
    numbers do not fit the diff')."""
    shas = range_repo(tmp_path)
    cmap = write_map(tmp_path / 'later.json', shas['later'], {ROW_A: ['f1'], ROW_B: ['f0']},
                     shift=4)
    assert bisect.main(bisect_cli(tmp_path, shas, cmap)) == 0
    assert state_of(tmp_path)['select'] == leaves_out([ROW_B])
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['coverage']['followed'] and result['coverage']['lost_lines'] == 0
    assert result['coverage']['map_commit'] == shas['later']
    assert (result['coverage']['rows_run'], result['coverage']['rows_left_out']) == \
        ([ROW_A], [ROW_B])
    err = capsys.readouterr().err
    assert (f"(hdf5-x-cov at {shas['later'][:12]}), a map of another commit than the "
            f"range's bad {shas['bad'][:12]}: its changed lines were followed there, 0 of "
            f"them changed again since") in err
    assert '1 mapped row(s) execute a changed function and run; 1 mapped row(s) execute ' \
           'none and are left out (many-datasets-hdf5-collective-contiguous-earliest); ' \
           'rows the map does not hold run' in err
    # the step's ReFrame selection: the night's rows, less B; A and a row of no map run
    pattern = re.compile(state_of(tmp_path)['select'][-1])
    names = {r: r.replace(' ', '') for r in (ROW_A, ROW_B, ROW_H)}
    assert [r for r, n in names.items() if pattern.search(n)] == [ROW_B]


def test_of_several_maps_the_one_of_the_bad_commit_is_used(tmp_path, capsys):
    """Fails on old code: yes (one --coverage-map, the last: of another commit, exit 4)."""
    shas = range_repo(tmp_path)
    own = write_map(tmp_path / 'bad.json', shas['bad'], {ROW_A: ['f1'], ROW_B: ['f0']})
    other = write_map(tmp_path / 'later.json', shas['later'], {ROW_A: ['f0'], ROW_B: ['f1']},
                      shift=4)
    assert bisect.main(bisect_cli(tmp_path, shas, own, other)) == 0
    assert state_of(tmp_path)['select'] == leaves_out([ROW_B])
    err = capsys.readouterr().err
    assert f"coverage map {own} (hdf5-x-cov at {shas['bad'][:12]})\n" in err
    assert 'a map of another commit' not in err


def test_changed_lines_no_map_places_make_every_row_run_and_it_is_said(tmp_path, capsys):
    """The map's commit changed the range's changed line again: which rows run it is not
    known, so none is left out. Fails on old code: yes (exit 4)."""
    shas = range_repo(tmp_path)
    cmap = write_map(tmp_path / 'rewritten.json', shas['rewritten'],
                     {ROW_A: ['f1'], ROW_B: ['f0']}, shift=4)
    assert bisect.main(bisect_cli(tmp_path, shas, cmap)) == 0
    state = state_of(tmp_path)
    assert state['select'] is None and state['checks'] is None      # the night's rows
    assert state['coverage']['fallback'] and state['coverage']['lost_lines'] == 1
    assert ("1 changed line(s) of the range are no line of the map's commit, so which rows "
            "run them is not known: every row of the night runs") in capsys.readouterr().err


def test_no_mapped_row_running_a_changed_function_makes_every_row_run(tmp_path, capsys):
    """Fails on old code: yes (exit 4, 'give --checks')."""
    shas = range_repo(tmp_path)
    cmap = write_map(tmp_path / 'bad.json', shas['bad'], {ROW_B: ['f0'], ROW_C: ['f2']})
    assert bisect.main(bisect_cli(tmp_path, shas, cmap)) == 0
    assert state_of(tmp_path)['select'] is None
    err = capsys.readouterr().err
    assert 'no mapped row executes f1 (src/H5x.c)' in err
    assert 'no mapped row executes any of the 1 changed HDF5 function(s): every row of the ' \
           'night runs' in err


def test_a_map_that_does_not_say_its_commit_is_refused_naming_it(tmp_path, capsys):
    """Its line numbers could be any commit's; a commit the repository lacks is named
    with its map. Fails on old code: yes (taken as --bad's)."""
    shas = range_repo(tmp_path)
    cmap = write_map(tmp_path / 'nocommit.json', None, {ROW_A: ['f1']})
    assert bisect.main(bisect_cli(tmp_path, shas, cmap)) == 4
    err = capsys.readouterr().err
    assert 'nocommit.json: the map does not say its HDF5 commit' in err and '--commit' in err
    elsewhere = write_map(tmp_path / 'elsewhere.json', 'f' * 40, {ROW_A: ['f1']})
    assert bisect.main(bisect_cli(tmp_path, shas, elsewhere)) == 4
    assert f"elsewhere.json: the map's commit {'f' * 40} is not in" in capsys.readouterr().err


def test_the_nightly_bisect_keeps_the_fail_rows_the_map_does_not_hold(tmp_path, capsys):
    """ci/nightly --bisect: a FAIL row of no map is bisected (nothing is known of what it
    runs); only a mapped row that executes no changed function is left out, said. Fails
    on old code: yes (ROW_H dropped silently)."""
    shas = range_repo(tmp_path)
    cmap = write_map(tmp_path / 'bad.json', shas['bad'], {ROW_A: ['f1'], ROW_B: ['f0']})
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--coverage-map', cmap])
    tests = [f'{r} %hdf5_build=hdf5-1.15.0' for r in (ROW_A, ROW_B, ROW_H)]
    kept = nightly.night_tests(tests, args, tmp_path / 'repo', shas['good'], shas['bad'])
    assert kept == [tests[0], tests[2]]
    assert 'execute none and are left out (many-datasets' in capsys.readouterr().err
    # a map of a later commit: followed, the same rows
    later = write_map(tmp_path / 'later.json', shas['later'], {ROW_A: ['f1'], ROW_B: ['f0']},
                      shift=4)
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--coverage-map', later])
    assert nightly.night_tests(tests, args, tmp_path / 'repo', shas['good'],
                               shas['bad']) == kept
    assert 'a map of another commit than the range' in capsys.readouterr().err


def test_a_replay_records_which_changed_functions_its_failing_row_executes(tmp_path,
                                                                         capsys):
    """h5regress replay --coverage-map: the result of each replay holds the changed
    functions, the blind-spot line and those the FAIL row executes (the simulated row,
    by a map of the pinned later commit: followed). Fails on old code: yes (no
    --coverage-map, exit 64)."""
    shas = range_repo(tmp_path)
    (tmp_path / 'corpus').mkdir()
    (tmp_path / 'corpus' / 'standin.yaml').write_text(
        STANDIN_CASE % (shas['bad'], shas['good'], shas['later'], shas['bad']))  # fix: unused
    row = 'simulated IOR 1 MiB'       # the simulated runs' test
    cmap = write_map(tmp_path / 'later.json', shas['later'], {row: ['f1'], ROW_B: ['f0']},
                     shift=4)
    assert replay.main(['standin', '--corpus', str(tmp_path / 'corpus'),
                        '--repo', str(tmp_path / 'repo'), '--builder', 'stand-in',
                        '--simulate-cv', '0.04', '--seed', '3', '--work',
                        str(tmp_path / 'work'), '--results', str(tmp_path / 'results'),
                        '--coverage-map', cmap]) == 0
    out = json.loads((tmp_path / 'results' / 'standin.json').read_text())
    reg, control = out['replays']['regression'], out['replays']['control']
    assert reg['verdict'] == 'caught'
    cov = reg['coverage']
    assert cov['available'] and cov['followed'] and cov['map_commit'] == shas['later']
    assert cov['map'].startswith(f"later.json (hdf5-x-cov at {shas['later'][:12]}), a map of "
                                 'another commit')        # no directory of this machine
    assert cov['failing_rows'] == [row] and cov['executed_by_failing'] == ['src/H5x.c:f1']
    assert cov['failing_line'] == ('the FAILing row(s) simulated IOR 1 MiB execute 1 of the '
                                   '1 changed function(s): f1 (src/H5x.c)')
    assert control['coverage']['changed'] == 0 and control['coverage']['failing_rows'] == []
    assert '  regression: coverage: this candidate changes 1 HDF5 function(s)' in \
        capsys.readouterr().out


def test_a_replay_whose_map_cannot_be_read_keeps_its_result_and_says_why(tmp_path):
    from h5regress import coveragerange
    shas = range_repo(tmp_path)
    part = coveragerange.replay_coverage(
        {'baseline': shas['good'], 'candidate': shas['bad'], 'rows': []},
        tmp_path / 'none.json', str(tmp_path / 'repo'))
    assert part == {'available': False, 'reason': f'{tmp_path / "none.json"}: '
                                                  'No such file or directory'}
