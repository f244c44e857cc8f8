"""The coverage map and diff (issue 28), on a real coverage build of the project's
h5paths kernel: two rows run against it, a commit that changes one function one row
executes and one function no row executes."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from h5regress import coverage, coveragerun

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / 'kernels' / 'h5paths'

GCOVR_JSON = json.dumps({'gcovr/format_version': '0.15', 'files': [{
    'file': 'src/demo.c',
    'functions': [{'name': 'square', 'lineno': 3, 'execution_count': 2},
                  {'name': 'cube', 'lineno': 4, 'execution_count': 0}],
    'lines': [{'line_number': 3, 'function_name': 'square', 'count': 2},
              {'line_number': 6, 'function_name': 'cube', 'count': 0},
              {'line_number': 7, 'function_name': 'cube', 'count': 0},
              {'line_number': 8, 'function_name': 'cube', 'count': 0}]}]})


def test_gcovr_report_gives_executed_functions_and_every_extent():
    row = coverage.parse_gcovr_json(GCOVR_JSON)
    assert row.hits == [coverage.FunctionHit('src/demo.c', 'square', 2, 1, 1)]
    assert coverage.FunctionExtent('src/demo.c', 'cube', 4, 8) in row.extents


def _gcov_doc(fn_calls, path='/b/src/src/H5x.h'):
    return json.dumps({'format_version': '1', 'files': [{
        'file': path,
        'functions': [{'name': name, 'start_line': 3, 'end_line': 9, 'execution_count': n}
                      for name, n in fn_calls],
        'lines': [{'line_number': 4 + i, 'function_name': name, 'count': n * (i < 1)}
                  for name, n in fn_calls for i in range(2)]}]})


def test_gcovs_json_gives_executed_functions_and_adds_a_headers_objects():
    """gcov --json-format --stdout: one document per object; a header's function in two
    objects adds up, a source outside the root (the build tree's) is left out."""
    text = '\n'.join([_gcov_doc([('inl', 2), ('cold', 0)]), _gcov_doc([('inl', 3)]),
                      _gcov_doc([('gen', 1)], '/b/build/H5Tinit.c')])
    row = coverage.parse_gcov_json(text, '/b/src')
    assert row.hits == [coverage.FunctionHit('src/H5x.h', 'inl', 5, 1, 2)]
    assert row.extents == [coverage.FunctionExtent('src/H5x.h', 'inl', 3, 9),
                           coverage.FunctionExtent('src/H5x.h', 'cold', 3, 9)]
    with pytest.raises(coverage.CoverageError, match='gcov on x: not gcov JSON'):
        coverage.parse_gcov_json('{"files": [{"file": "/b/src/a.c"}]}', '/b/src', 'gcov on x')


def test_a_report_that_is_not_gcovrs_is_named():
    with pytest.raises(coverage.CoverageError, match='counters.json: not a gcovr JSON'):
        coverage.parse_gcovr_json('{"x": 1}', 'counters.json')


DIFF = """\
diff --git a/src/a.c b/src/a.c
--- a/src/a.c
+++ b/src/a.c
@@ -10,2 +10,3 @@ int f(void)
-x
-y
+x1
+y1
+z1
@@ -40 +41,0 @@ int g(void)
-gone
diff --git a/src/old.c b/src/old.c
--- a/src/old.c
+++ /dev/null
@@ -1,3 +0,0 @@
-a
-b
-c
"""


def test_changed_ranges_are_the_new_sides_lines_and_a_deletion_touches_both_neighbours():
    assert coverage.changed_ranges(DIFF) == {'src/a.c': [(10, 12), (41, 42)]}


def test_a_function_is_changed_when_a_range_meets_its_extent():
    cmap = coverage.CoverageMap(
        'b', {'row1': [coverage.FunctionHit('src/a.c', 'f', 1, 3, 3)], 'row2': []},
        [coverage.FunctionExtent('src/a.c', 'f', 8, 20),
         coverage.FunctionExtent('src/a.c', 'g', 30, 42),
         coverage.FunctionExtent('src/a.c', 'h', 50, 60)])
    changed = coverage.changed_functions(coverage.changed_ranges(DIFF), cmap)
    assert changed == [coverage.ChangedFunction('src/a.c', 'f', ('row1',)),
                       coverage.ChangedFunction('src/a.c', 'g', ())]
    line = coverage.blind_spot_line(changed)
    assert line.startswith('this candidate changes 2 HDF5 function(s) since the baseline; '
                           "tonight's rows execute 1 of them; not exercised: g (src/a.c)")


def _tools_missing():
    return [t for t in ('cmake', 'gcov', 'git', 'h5pcc') if not shutil.which(t)]


def _git(repo, *args):
    subprocess.run(['git', '-C', str(repo), '-c', 'user.name=t', '-c', 'user.email=t@t',
                    *args], check=True, capture_output=True)


def _gcov_logging_cwd(tmp_path, log):
    """A gcov (gcovr's $GCOV) that notes where it runs on counters, then is gcov."""
    wrapper = tmp_path / 'gcov-logging-cwd'
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *.gcda*) pwd >> {log} ;; esac\n'
                       f'exec {shutil.which("gcov")} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.mark.skipif(bool(_tools_missing()), reason=f'needs {_tools_missing()} (ci/setup)')
def test_map_and_diff_on_a_real_coverage_build_of_the_kernel(tmp_path, monkeypatch):
    # "bad" is the kernel as it is (what the coverage build compiles); "good" differs in
    # prepare_subset (compound.c, run by the compound-subset row only) and in vds.c's
    # first function (run by neither row).
    repo = tmp_path / 'repo'
    shutil.copytree(KERNEL, repo, ignore=shutil.ignore_patterns('build*'))
    shutil.copytree(KERNEL.parent / 'common', tmp_path / 'common')   # the kernel's ../common
    compound, vds = repo / 'src' / 'compound.c', repo / 'src' / 'vds.c'
    bad_compound, bad_vds = compound.read_text(), vds.read_text()
    assert 'static int prepare_subset(run_t *r) { return prepare(' in bad_compound
    compound.write_text(bad_compound.replace(
        'static int prepare_subset(run_t *r) { return prepare(',
        'static int prepare_subset(run_t *r) { (void)0; return prepare('))
    vds.write_text(bad_vds.replace('{', '{ (void)0;', 1))
    _git(tmp_path, 'init', '-q', str(repo))
    _git(repo, 'add', '-A')
    _git(repo, 'commit', '-q', '-m', 'good')
    compound.write_text(bad_compound)
    vds.write_text(bad_vds)
    _git(repo, 'commit', '-q', '-am', 'bad')

    build = tmp_path / 'build'
    env = dict(os.environ, HDF5_C_COMPILER_EXECUTABLE=shutil.which('h5pcc'))
    subprocess.run(['cmake', '-S', str(repo), '-B', str(build), '-DCMAKE_BUILD_TYPE=Debug',
                    '-DCMAKE_C_FLAGS=--coverage'], check=True, capture_output=True, env=env)
    subprocess.run(['cmake', '--build', str(build)], check=True, capture_output=True)
    rows = []
    for row in ('compound-subset', 'many-datasets'):
        prefix = tmp_path / f'gcda-{row}'
        run = subprocess.run([str(build / 'h5paths'), '--path', row, '--elements', '1000',
                              '--objects', '20', '--iterations', '1',
                              f'{tmp_path}/data-'],
                             env=dict(env, GCOV_PREFIX=str(prefix),
                                      OMPI_ALLOW_RUN_AS_ROOT='1',
                                      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1'),
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        rows.append(f'{row}={prefix}')
    out = tmp_path / 'map.json'
    argv = ['map', '--build', 'h5paths-cov', '--build-dir', str(build), '--source', str(repo),
            '-o', str(out)]
    for row in rows:
        argv += ['--row', row]
    assert coveragerun.main(argv) == 0          # gcov's JSON
    by_gcovr = tmp_path / 'gcovr.json'
    cwds = tmp_path / 'gcov-cwds'
    monkeypatch.setenv('GCOV', _gcov_logging_cwd(tmp_path, cwds))
    assert coveragerun.main([*argv, '-o', str(by_gcovr), '--reader', 'gcovr']) == 0
    # gcov writes its .gcov files where it runs: never in the source root two mappings of
    # the build share (one's clean-up removed the other's), but in a directory of each
    # row's own, removed after
    ran_in = {Path(line) for line in cwds.read_text().split()}
    assert len(ran_in) == len(rows)
    assert not any(d == repo or repo in d.parents or d.exists() for d in ran_in)
    # the two readers agree on what each row executed
    executed = lambda path: {r: sorted((h.file, h.name, h.calls) for h in hs)  # noqa: E731
                             for r, hs in coverage.CoverageMap.from_json(
                                 path.read_text(), str(path)).rows.items()}
    assert executed(out) == executed(by_gcovr)
    cmap = coverage.CoverageMap.from_json(out.read_text(), str(out))
    assert cmap.rows_executing('src/compound.c', 'prepare_subset') == ['compound-subset']
    assert 'many-datasets' in cmap.rows_executing('src/metadata.c', 'create_datasets')

    ranges = coverage.changed_ranges(coverage.git_diff(str(repo), 'HEAD~1', 'HEAD'))
    changed = {(c.file, c.name): c.rows for c in coverage.changed_functions(ranges, cmap)}
    assert changed[('src/compound.c', 'prepare_subset')] == ('compound-subset',)
    vds_changed = [rows for (file, _), rows in changed.items() if file == 'src/vds.c']
    assert vds_changed == [()]


def test_a_map_that_is_missing_is_named(tmp_path, capsys):
    code = coveragerun.main(['diff', '--map', str(tmp_path / 'none.json'), '--repo', '.',
                          '--good', 'a', '--bad', 'b'])
    assert code == 4
    assert 'none.json' in capsys.readouterr().err


def _small_map(rows, commit='c0ffee', build='hdf5-x-cov'):
    hit, ext = coverage.FunctionHit, coverage.FunctionExtent
    return coverage.CoverageMap(build, {r: [hit('src/H5x.c', f, 1, 1, 1) for f in fs]
                                        for r, fs in rows.items()},
                                [ext('src/H5x.c', f, 1, 2) for fs in rows.values() for f in fs],
                                commit)


def test_maps_of_one_build_and_commit_merge_and_a_row_mapped_again_keeps_the_last(
        tmp_path, capsys):
    """A night's map and the map of rows added since become one map (the committed
    summary and the night read one file); a map of another commit is refused, naming it."""
    night = tmp_path / 'night.json'
    new = tmp_path / 'new.json'
    night.write_text(_small_map({'t %benchmark=a': ['f0'], 't %benchmark=b': ['f1']}).to_json())
    new.write_text(_small_map({'t %benchmark=b': ['f2'], 't %benchmark=c': ['f3']}).to_json())
    out = tmp_path / 'all.json'
    assert coveragerun.main(['merge', str(night), str(new), '-o', str(out)]) == 0
    merged = coverage.CoverageMap.from_json(out.read_text(), 'all')
    assert merged.commit == 'c0ffee' and merged.build == 'hdf5-x-cov'
    assert {r: [h.name for h in hs] for r, hs in merged.rows.items()} == {
        't %benchmark=a': ['f0'], 't %benchmark=b': ['f2'], 't %benchmark=c': ['f3']}
    assert sorted(e.name for e in merged.extents) == ['f0', 'f1', 'f2', 'f3']
    assert '3 row(s) of 2 map(s)' in capsys.readouterr().out
    other = tmp_path / 'other.json'
    other.write_text(_small_map({'t %benchmark=d': ['f0']}, commit='deadbeef').to_json())
    assert coveragerun.main(['merge', str(night), str(other), '-o', str(out)]) == 4
    err = capsys.readouterr().err
    assert 'other.json' in err and 'deadbeef' in err and 'one build and commit' in err


def _two_commit_repo(tmp_path):
    repo = tmp_path / 'hdf5'
    (repo / 'src').mkdir(parents=True)
    code = ''.join(f'int f{i}(void)\n{{\n    return {i};\n}}\n' for i in range(3))
    (repo / 'src' / 'H5x.c').write_text(code)
    _git(tmp_path, 'init', '-q', str(repo))
    _git(repo, 'add', '-A')
    _git(repo, 'commit', '-q', '-m', 'good')
    (repo / 'src' / 'H5x.c').write_text(code.replace('return 1;', 'return 1 + 0;')
                                        .replace('return 2;', 'return 2 + 0;'))
    _git(repo, 'commit', '-q', '-am', 'bad')
    sha = lambda ref: subprocess.run(['git', '-C', str(repo), 'rev-parse', ref],  # noqa: E731
                                     capture_output=True, text=True).stdout.strip()
    return repo, sha('HEAD~1'), sha('HEAD')


def test_a_nights_coverage_section_names_the_changed_functions_no_row_runs(tmp_path):
    from h5regress import report
    repo, good, bad = _two_commit_repo(tmp_path)
    extents = [coverage.FunctionExtent('src/H5x.c', f'f{i}', 1 + 4 * i, 4 + 4 * i)
               for i in range(3)]
    cmap = coverage.CoverageMap('hdf5-x-cov', {'row-a': [
        coverage.FunctionHit('src/H5x.c', 'f1', 3, 2, 2)]}, extents, bad)
    path = tmp_path / 'map.json'
    path.write_text(cmap.to_json())
    section = coverage.night_section(path, str(repo), good, bad)
    assert section['available'] and (section['changed'], section['executed']) == (2, 1)
    assert section['not_exercised'] == ['src/H5x.c:f2']
    text = report.blind_spot_text({'coverage': section})
    assert text == ('Coverage: this candidate changes 2 HDF5 function(s) since the baseline; '
                    "tonight's rows execute 1 of them; not exercised: f2 (src/H5x.c).")

    other = coverage.night_section(path, str(repo), good, good)
    assert not other['available'] and 'its line numbers do not fit' in other['reason']
    assert report.blind_spot_text({'coverage': other}).startswith('Coverage: not known (')
    assert report.blind_spot_text({}) == ''


def test_a_line_is_followed_through_a_diff_and_lost_where_the_diff_changed_it():
    old = [f'l{i}' for i in range(1, 21)]
    new = old[:2] + ['ins1', 'ins2'] + old[2:5] + old[7:12] + ['x', 'y', 'z'] + old[13:]
    with_text = {i + 1: text for i, text in enumerate(new)}
    hunks = [coverage.Hunk(2, 0, 3, 2), coverage.Hunk(6, 2, 7, 0), coverage.Hunk(13, 1, 13, 3)]
    for n, text in enumerate(old, 1):
        moved = coverage.translate_line(hunks, n)
        if text in ('l6', 'l7', 'l13'):
            assert moved is None, text
        else:
            assert with_text[moved] == text, (text, moved)


def test_the_regression_prone_set_follows_a_performance_commits_lines_to_the_map(tmp_path):
    repo, _, _ = _two_commit_repo(tmp_path)
    src = repo / 'src' / 'H5x.c'
    src.write_text(src.read_text().replace('return 0;', 'return 0 - 0;'))
    _git(repo, 'commit', '-q', '-am', 'Improve performance of f0 (#1)')
    src.write_text('/* a header */\n/* moved */\n' + src.read_text())
    _git(repo, 'commit', '-q', '-am', 'Comments')
    head = subprocess.run(['git', '-C', str(repo), 'rev-parse', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()
    rule = coverage.ProneRule('2000-01-01', ('src',), r'(?i)improve.{0,20}performance')
    commits = coverage.prone_commits(str(repo), head, rule)
    assert [c['subject'] for c in commits] == ['Improve performance of f0 (#1)']
    # the map's commit has two lines more at the top: f0 is lines 3-6 there
    extents = [coverage.FunctionExtent('src/H5x.c', f'f{i}', 3 + 4 * i, 6 + 4 * i)
               for i in range(3)]
    cmap = coverage.CoverageMap('hdf5-x-cov', {'row-a': [
        coverage.FunctionHit('src/H5x.c', 'f1', 3, 2, 2)]}, extents, head)
    assert coverage.functions_touched(str(repo), commits[0]['commit'], cmap) == \
        {('src/H5x.c', 'f0')}
    lines, fraction = coverage.prone_report(str(repo), commits, cmap)
    assert fraction == 0.0
    assert lines == ['1 regression-prone commit(s) touch 1 function(s) of hdf5-x-cov; its rows '
                     'execute 0 (0%)', '  missed in src/H5x.c: f0']


def test_the_committed_summary_counts_each_rows_functions_and_its_prone_ones():
    hit = coverage.FunctionHit
    cmap = coverage.CoverageMap('hdf5-x-cov', {
        'h5paths_check %hdf5_build=hdf5-x-cov %benchmark=a': [
            hit('src/H5x.c', 'f0', 1, 1, 1), hit('src/H5x.c', 'f1', 1, 1, 1)],
        'h5paths_check %hdf5_build=hdf5-x-cov %benchmark=b': [hit('src/H5y.c', 'g', 1, 1, 1)]},
        [], 'c0ffee')
    prone = {('src/H5x.c', 'f1'), ('src/H5y.c', 'g'), ('src/H5z.c', 'h')}
    assert coverage.map_summary(cmap, prone) == {
        'build': 'hdf5-x-cov', 'commit': 'c0ffee', 'functions_seen': 0,
        'prone_functions': 3, 'prone_executed': 2, 'prone_missed': ['src/H5z.c:h'],
        'rows': {'h5paths_check %benchmark=a': {'functions': 2, 'prone': ['src/H5x.c:f1']},
                 'h5paths_check %benchmark=b': {'functions': 1, 'prone': ['src/H5y.c:g']}}}
    counted = coverage.map_summary(cmap, prone, names=False)['rows']
    assert counted == {'h5paths_check %benchmark=a': {'functions': 2, 'prone': 1},
                       'h5paths_check %benchmark=b': {'functions': 1, 'prone': 1}}


def test_the_committed_summary_is_the_default_nights_rows_and_reaches_the_target():
    """ci/coverage-summary.yaml maps exactly the default night's rows, as the check files
    mark them (a night row added without a map, or a map of rows the night does not run,
    is caught), and they execute at least 80 % of the regression-prone functions
    (issue 28)."""
    import yaml
    from reframe_run import night_rows_marked
    from h5regress.replay import row_of
    summary = yaml.safe_load((coverage.PRONE_FILE.parent / 'coverage-summary.yaml')
                             .read_text())
    assert {row_of(row) for row in summary['rows']} == night_rows_marked()
    assert summary['prone_executed'] / summary['prone_functions'] >= 0.8


def test_the_map_of_every_row_holds_the_nights_rows_and_what_they_execute():
    """ci/coverage-summary-all.yaml (every row of every check against the same coverage
    build, ``prone --summary --counts``) holds the night's rows, each with the night's
    number of regression-prone functions, and misses none the night executes. IOR's
    rows run without their read phase in the night (``nightrun.NIGHT_SETVARS``), so
    they execute fewer there."""
    import yaml
    ci = coverage.PRONE_FILE.parent
    night = yaml.safe_load((ci / 'coverage-summary.yaml').read_text())
    every = yaml.safe_load((ci / 'coverage-summary-all.yaml').read_text())
    assert (every['build'], every['commit'], every['prone_functions']) == \
        (night['build'], night['commit'], night['prone_functions'])
    as_run = [r for r in night['rows'] if not r.startswith('ior_check ')]
    assert {r: len(night['rows'][r]['prone']) for r in as_run} == \
        {r: every['rows'][r]['prone'] for r in as_run}
    assert all(len(night['rows'][r]['prone']) <= every['rows'][r]['prone']
               for r in night['rows'])
    assert set(every['prone_missed']) <= set(night['prone_missed'])
    assert every['prone_executed'] == every['prone_functions'] - len(every['prone_missed'])


def test_the_shipped_regression_prone_file_loads():
    rule, commits = coverage.load_prone(coverage.PRONE_FILE)
    assert rule.paths == ('src',) and len(commits) >= 9
    assert all(len(c['commit']) == 40 for c in commits)


def test_a_wrapper_keeps_the_tools_file_name_and_says_what_it_runs(tmp_path):
    from h5regress import manifest
    tools = {'macsio': '/opt/macsio/macsio', 'h5bench_write': '/opt/h5b/bin/h5bench_write'}
    manifest.wrap_tools(tools, tmp_path, ['export X=1'], 'a test')
    assert tools['macsio'] == str(tmp_path / 'macsio' / 'macsio')
    assert manifest.wrapped_tool(tools['h5bench_write']) == '/opt/h5b/bin/h5bench_write'
    assert manifest.wrapped_tool('/bin/sh') == '/bin/sh'
    text = Path(tools['macsio']).read_text()
    assert text.startswith('#!/bin/sh\n') and 'export X=1\nexec /opt/macsio/macsio "$@"' in text


def test_the_nightly_puts_the_blind_spot_line_into_its_result_and_report(tmp_path,
                                                                         monkeypatch):
    import argparse
    from h5regress import nightly, report
    repo, good, bad = _two_commit_repo(tmp_path)
    cmap = coverage.CoverageMap('hdf5-x-cov', {'row-a': []}, [
        coverage.FunctionExtent('src/H5x.c', 'f1', 5, 8)], bad)
    (tmp_path / 'map.json').write_text(cmap.to_json())
    out = tmp_path / 'night'
    out.mkdir()
    (out / 'gate.json').write_text(json.dumps({'baseline_commit': good,
                                               'candidate_commit': bad}))
    written = []
    monkeypatch.setattr(report, 'write_all', lambda result, *a, **kw: written.append(result))
    args = argparse.Namespace(out=out, coverage_map=tmp_path / 'map.json',
                              coverage_repo=str(repo), bisect_repo=None, hdf5_repo='x',
                              history=None, night='n', run_records=None)
    nightly.add_coverage(args)
    section = json.loads((out / 'gate.json').read_text())['coverage']
    assert section['not_exercised'] == ['src/H5x.c:f1']
    assert written[0]['coverage']['line'] == section['line']
    args.coverage_repo = 'https://example.invalid/hdf5.git'
    nightly.add_coverage(args)
    assert 'is not a local clone' in written[1]['coverage']['reason']


def test_the_night_counts_only_its_own_rows_of_the_map(tmp_path):
    repo, good, bad = _two_commit_repo(tmp_path)
    hit = [coverage.FunctionHit('src/H5x.c', 'f1', 1, 1, 1)]
    cmap = coverage.CoverageMap('hdf5-x-cov', {
        'c %hdf5_build=hdf5-x-cov %benchmark=a': hit,
        'c %hdf5_build=hdf5-x-cov %benchmark=b': []},
        [coverage.FunctionExtent('src/H5x.c', 'f1', 5, 8)], bad)
    path = tmp_path / 'map.json'
    path.write_text(cmap.to_json())
    on_a = coverage.night_section(path, str(repo), good, bad, ['c %hdf5_build=hdf5-x %benchmark=a'])
    on_b = coverage.night_section(path, str(repo), good, bad, ['c %hdf5_build=hdf5-x %benchmark=b'])
    assert (on_a['executed'], on_b['executed']) == (1, 0)
    none = coverage.night_section(path, str(repo), good, bad, ['d %benchmark=a'])
    assert not none['available'] and "none of tonight's 1 row(s)" in none['reason']


def test_many_blind_spots_are_counted_by_source_file():
    changed = [coverage.ChangedFunction(f'src/H5{f}.c', f'g{i}', ()) for f, n in
               (('D', 5), ('T', 3), ('S', 2)) for i in range(n)]
    line = coverage.blind_spot_line(changed, limit=2)
    assert line.endswith('not exercised: 5 in src/H5D.c, 3 in src/H5T.c, 2 in 1 other files')


def test_the_coverage_run_keeps_its_build_as_the_night_does(tmp_path, monkeypatch):
    """run_rows selects the coverage build by its hdf5_build parameter
    (nightrun.build_filter), the night's way, not by a lookahead in the name regex."""
    from h5regress import nightrun
    seen = []
    monkeypatch.setattr(coveragerun.subprocess, 'run', lambda cmd, **kw: seen.append(cmd))
    with pytest.raises(coverage.CoverageError, match='report.json'):
        coveragerun.run_rows(tmp_path / 'm.json', 'hdf5-1.15.0+x-cov', 'h5paths_check', tmp_path)
    cmd, = seen
    keep = list(nightrun.build_filter('hdf5-1.15.0+x-cov'))
    assert cmd[cmd.index('-E'):cmd.index('-E') + 2] == keep
    assert cmd[cmd.index('-n') + 1] == 'h5paths_check'
    # untimed: the coverage build's rows are never held to their reference envelopes
    assert '--skip-performance-check' in cmd


def _later_commit(repo, lines=4):
    """A commit after ``bad`` that moves every function down by one function's length."""
    src = repo / 'src' / 'H5x.c'
    src.write_text(''.join(f'/* header {i} */\n' for i in range(lines)) + src.read_text())
    _git(repo, 'commit', '-q', '-am', 'later')
    return subprocess.run(['git', '-C', str(repo), 'rev-parse', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()


def _map_of(path, commit, rows):
    """A map of the later commit: f<i> on lines 5 + 4i .. 8 + 4i."""
    extents = [coverage.FunctionExtent('src/H5x.c', f'f{i}', 5 + 4 * i, 8 + 4 * i)
               for i in range(3)]
    cmap = coverage.CoverageMap('hdf5-x-cov', {row: [
        coverage.FunctionHit('src/H5x.c', f, 3, 2, 2) for f in fs] for row, fs in rows.items()},
        extents, commit)
    path.write_text(cmap.to_json())
    return path


def test_a_diff_against_a_map_of_a_later_commit_follows_the_changed_lines(tmp_path, capsys):
    """The corpus's regressing commits are older than the pinned candidate the map is of:
    the changed lines of --bad are followed to the map's commit, never read as its line
    numbers (f0 and f1 there, but the change is to f1 and f2)."""
    repo, good, bad = _two_commit_repo(tmp_path)
    later = _later_commit(repo)
    path = _map_of(tmp_path / 'map.json', later, {'t %hdf5_build=x-cov %benchmark=a': ['f1']})
    assert coveragerun.main(['diff', '--map', str(path), '--repo', str(repo),
                             '--good', good, '--bad', bad]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ['src/H5x.c:f1: t %hdf5_build=x-cov %benchmark=a',
                       'src/H5x.c:f2: NOT EXERCISED']
    assert out[2] == (f'the map is of {later[:12]}, not of {bad[:12]}: the changed lines were '
                      'followed to it; 0 of them changed again since (not placed)')
    assert out[3].startswith('this candidate changes 2 HDF5 function(s) since the baseline; '
                             "tonight's rows execute 1 of them; not exercised: f2")


def test_a_replay_result_says_which_changed_functions_its_failing_rows_run(tmp_path, capsys):
    repo, good, bad = _two_commit_repo(tmp_path)
    later = _later_commit(repo)
    path = _map_of(tmp_path / 'map.json', later, {
        't %hdf5_build=x-cov %benchmark=a': ['f1'], 't %hdf5_build=x-cov %benchmark=b': ['f0']})
    row = lambda bench, verdict: {  # noqa: E731
        'key': 'abcdef0123|h5paths|read|bw', 'verdict': verdict,
        'label': f't %benchmark={bench} read bw [abcdef]'}
    result = tmp_path / 'case.json'
    result.write_text(json.dumps({'replays': {'regression': {
        'baseline': good, 'candidate': bad,
        'rows': [row('a', 'FAIL'), row('b', 'INCONCLUSIVE'), row('c', 'FAIL')]}}}))
    assert coveragerun.main(['diff', '--map', str(path), '--repo', str(repo),
                             '--replay', str(result)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        'the FAILing row(s) a, c execute 1 of the 2 changed function(s): f1 (src/H5x.c); '
        'not in the map: c')
    assert coveragerun.main(['diff', '--map', str(path), '--repo', str(repo),
                             '--replay', str(result), '--mode', 'fix']) == 4
    assert "case.json: no replay 'fix' (it has: regression)" in capsys.readouterr().err


@pytest.mark.parametrize('commits', [[], ['--good', 'a'], ['--good', 'a', '--bad', 'b',
                                                           '--replay', 'r.json']])
def test_a_diff_needs_both_commits_or_a_replay_result(commits, capsys):
    assert coveragerun.main(['diff', '--map', 'm.json', '--repo', '.', *commits]) == 64
    assert 'give --good and --bad, or --replay RESULT' in capsys.readouterr().err


def test_a_rows_counters_are_found_where_its_tool_ran(tmp_path, monkeypatch):
    """The wrappers name a row's counters after the directory the tool runs in: the stage
    directory, or for h5bench's exerciser and metadata checks the data directory
    ``<stage>-<run id>``; both rows are mapped, a row without counters is left out."""
    gcda = tmp_path / 'gcda'
    for name in ('ior_check_2e8fc264', 'h5bench_metadata_check_9c4ea6e1-91f43c6db314',
                 'h5bench_metadata_check_9c4ea6e10-0'):
        (gcda / name).mkdir(parents=True)
    names = {'ior_check_2e8fc264': 'ior', 'h5bench_metadata_check_9c4ea6e1': 'metadata',
             'flashio_check_30d77567': 'flashio'}
    report = {'runs': [{'testcases': [
        {'stagedir': f'/stage/{stage}', 'display_name': row, 'result': 'pass'}
        for stage, row in names.items()]}]}
    monkeypatch.setattr(coveragerun.subprocess, 'run', lambda cmd, **kw: (
        tmp_path / 'report.json').write_text(json.dumps(report)))
    assert coveragerun.run_rows(tmp_path / 'm.json', 'hdf5-x-cov', '.', tmp_path) == {
        'ior': gcda / 'ior_check_2e8fc264',
        'metadata': gcda / 'h5bench_metadata_check_9c4ea6e1-91f43c6db314'}
    (gcda / 'ior_check_2e8fc264-0a1b').mkdir()
    with pytest.raises(coverage.CoverageError, match=r'ior: counters in 2 directories'):
        coveragerun.row_counters(names, gcda)


def test_a_row_named_as_reframe_names_it_keeps_its_parameters(tmp_path, capsys):
    """``map --row NAME=DIR`` with the night's name of a row (``%param=value`` words):
    the directory is after the last '='."""
    row = 'h5paths_check %num_nodes=1 %benchmark=append-hdf5-collective-chunked-earliest'
    assert coveragerun.main(['map', '--build', 'x-cov', '--build-dir', str(tmp_path),
                             '--source', str(tmp_path), '-o', str(tmp_path / 'm.json'),
                             '--row', f'{row}={tmp_path}/none']) == 4
    assert f'error: {tmp_path}/none: no .gcda counters' in capsys.readouterr().err


def test_the_coverage_manifest_runs_no_tool_against_a_build_without_counters(tmp_path,
                                                                             monkeypatch):
    """The ASYNC rows' h5bench links the thread-safe HDF5 build (the manifest's
    ``async`` entry), which has no coverage twin: the coverage manifest leaves it out
    (those rows are skipped, saying why) instead of running them uncovered."""
    (tmp_path / 'install' / 'lib').mkdir(parents=True)
    (tmp_path / 'install' / 'lib' / 'libhdf5.so.1000').write_text('')
    src = tmp_path / 'manifest.json'
    src.write_text(json.dumps({'builds': {'hdf5-1.15.0': {
        'hdf5': {'label': '1.15.0', 'variants': '+mpi', 'prefix': '/timed', 'commit': 'c0'},
        'tools': {'h5bench_write': '/opt/h5bench/bin/h5bench_write'},
        'darshan': {'prefix': '/opt/darshan'},
        'async': {'tools': {'h5bench_write': '/opt/h5bench-async/bin/h5bench_write'}}}}}))
    written = {}
    monkeypatch.setattr(coveragerun.manifest, 'write',   # the schema's checks are not ours
                        lambda path, data: written.setdefault(path, data) and path)
    path, build = coveragerun.coverage_manifest(src, 'hdf5-1.15.0', tmp_path / 'install',
                                                tmp_path / 'out')
    entry = written[path]['builds'][build]
    assert 'async' not in entry and 'darshan' not in entry
    assert entry['tools']['h5bench_write'].startswith(str(tmp_path / 'out' / 'wrappers'))


def test_a_coverage_run_makes_one_pass_of_each_h5paths_row(tmp_path, monkeypatch):
    """A map needs each code path once: the night's three iterations of an h5paths or
    FLASH-IO row, or repetitions of an IOR row, execute the same functions (measured:
    each row's functions at one equal those at three). -S adds to it, after it.
    Fails on old code: yes (no -S at all, no --night)."""
    seen = []
    monkeypatch.setattr(coveragerun.subprocess, 'run', lambda cmd, **kw: seen.append(cmd))
    for setvars in ((), ('h5paths_check.iterations=3',)):
        with pytest.raises(coverage.CoverageError, match='report.json'):
            coveragerun.run_rows(tmp_path / 'm.json', 'hdf5-x-cov', 'h5paths_check', tmp_path,
                                 setvars=[*coveragerun.RUN_SETVARS, *setvars])
    once = ['h5paths_check.iterations=1', 'flashio_check.iterations=1',
            'ior_check.repetitions=1']
    assert [[c[i + 1] for i, w in enumerate(c) if w == '-S'] for c in seen] == [
        once, [*once, 'h5paths_check.iterations=3']]
    # --night: the default night's rows of the checks
    with pytest.raises(coverage.CoverageError, match='report.json'):
        coveragerun.run_rows(tmp_path / 'm.json', 'hdf5-x-cov', '.', tmp_path, night=True)
    assert seen[-1][seen[-1].index('-t') + 1] == 'nightly' and '-t' not in seen[0]
    # ... run as the night runs them: IOR without its read phase
    assert [seen[-1][i + 1] for i, w in enumerate(seen[-1]) if w == '-S'][:2] == [
        'ior_check.read_phase=false', 'ior_build_check.read_phase=false']


def test_rows_counters_are_read_at_once_and_the_notes_listed_once(tmp_path, monkeypatch):
    """collect_rows: with jobs=2 two rows' readers run at the same time (a gcov that notes
    when it starts and ends, and sleeps), each row gets its own counters' functions,
    and each row's notes are linked from one listing of the build. Fails on old code:
    yes (no collect_rows: one row after the other, the build listed per row)."""
    build, source, log = tmp_path / 'build', tmp_path / 'src', tmp_path / 'gcov.log'
    (build / 'd').mkdir(parents=True)
    source.mkdir()
    (build / 'd' / 'H5x.c.gcno').write_text('')
    rows = {}
    for name in ('r1', 'r2'):
        counters = tmp_path / name / str(build).lstrip('/') / 'd'
        counters.mkdir(parents=True)
        (counters / 'H5x.c.gcda').write_text(name)
        rows[name] = tmp_path / name
    gcov = tmp_path / 'bin' / 'gcov'
    gcov.parent.mkdir()
    doc = ('{"files": [{"file": "%s/H5x.c", "functions": [{"name": "f_$row", "start_line": 1, '
           '"end_line": 3, "execution_count": 1}], "lines": []}]}' % source)
    before, after = doc.split('$row')
    gcov.write_text(f'#!/bin/sh\nrow=$(cat "$3"); echo "start $row" >> {log}\nsleep 2\n'
                    f'echo "end $row" >> {log}\necho \'{before}\'"$row"\'{after}\'\n')
    gcov.chmod(0o755)
    monkeypatch.setenv('PATH', f'{gcov.parent}:{os.environ["PATH"]}')
    listed = []
    real_rglob = Path.rglob
    monkeypatch.setattr(Path, 'rglob', lambda self, pat: (
        listed.append((self, pat)) if pat == '*.gcno' else None) or real_rglob(self, pat))
    got = coveragerun.collect_rows(rows, build, source, jobs=2)
    assert {r: [h.name for h in rc.hits] for r, rc in got.items()} == {'r1': ['f_r1'],
                                                                       'r2': ['f_r2']}
    assert [line.split()[0] for line in log.read_text().splitlines()] == [
        'start', 'start', 'end', 'end']
    assert listed == [(build.resolve(), '*.gcno')]
    for row in rows.values():
        assert (row / str(build).lstrip('/') / 'd' / 'H5x.c.gcno').is_symlink()
