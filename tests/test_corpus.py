"""The regression corpus (regressions/, h5regress/corpus.py): every case file loads, has
the keys a case needs, full shas, a public source, and rows the h5paths check has."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from h5regress import bisectbuild, corpus, replay
from reframe_run import REPO
from test_h5paths_check import check_module

CORPUS = REPO / 'regressions'


def h5paths_row_names() -> set[str]:
    module = check_module()
    return {module.row_name(row) for row in module.rows()}


def test_every_case_loads_with_sources_and_known_rows():
    cases = corpus.load_corpus(CORPUS)
    assert len(cases) >= 12
    known = h5paths_row_names() | {corpus.NO_ROW}
    for case in cases:
        assert set(case.rows) <= known, (case.path, set(case.rows) - known)
        assert case.source_urls, case.path
        commits = [c for c in (case.regressing, case.fix) if c is not None]
        for commit in commits:
            for sha in vars(commit).values():
                assert corpus.SHA.fullmatch(sha), (case.path, sha)


def test_the_corpus_spans_the_code_path_families():
    families = {case.family for case in corpus.load_corpus(CORPUS)}
    assert families == set(corpus.FAMILIES)


GOOD = '''id: x
title: t
code_path_family: conversion
hdf5_issue: null
pr: null
regressing_commit: {range: {good: %s, bad: %s}}
fix_commit: null
api_calls: [H5Dread]
code_path: []
conditions: {}
rows_expected: [{row: none, why: w}]
size_reported: s
sources: [{url: 'https://github.com/HDFGroup/hdf5/issues/1', fact: f}]
evidence: e
status: unreplayed
''' % ('a' * 40, 'b' * 40)


def test_a_good_case_parses():
    case = corpus.parse_case(GOOD, 'regressions/x.yaml')
    assert case.regressing == corpus.CommitRange('a' * 40, 'b' * 40)
    assert case.rows == ('none',) and case.fix is None


@pytest.mark.parametrize('change, message', [
    (('status: unreplayed', 'status: done'), "status: 'done' is not one of"),
    (('evidence: e\n', ''), 'missing key(s) evidence'),
    (("good: " + 'a' * 40, 'good: abc123'), "regressing_commit.range.good: not a full"),
    (("url: 'https://", "url: 'http://"), 'sources[0].url: {url, fact} with an https URL'),
    (('sources: [{url', 'sources: [{link'), 'sources[0].url'),
    (('rows_expected: [{row: none, why: w}]', 'rows_expected: []'), 'rows_expected: a non-empty list'),
    (('fix_commit: null', 'fix_commit: {sha: abc}'), 'fix_commit.sha: not a full'),
    (('id: x', 'id: y'), "id: 'y' is not the file name"),
])
def test_errors_name_the_file_and_key(change, message):
    with pytest.raises(corpus.CorpusError) as err:
        corpus.parse_case(GOOD.replace(*change), 'regressions/x.yaml')
    assert str(err.value).startswith('regressions/x.yaml: ')
    assert message in str(err.value)


def test_unreadable_and_empty(tmp_path):
    with pytest.raises(corpus.CorpusError, match='no case files'):
        corpus.load_corpus(tmp_path)
    (tmp_path / 'x.yaml').write_text('id: [unclosed\n')
    with pytest.raises(corpus.CorpusError, match=r'x\.yaml: not valid YAML'):
        corpus.load_corpus(tmp_path)


# ------------------------------------------------------------------ h5regress replay
STANDIN_CASE = GOOD.replace('id: x', 'id: standin').replace(
    "regressing_commit: {range: {good: %s, bad: %s}}" % ('a' * 40, 'b' * 40),
    'regressing_commit: {sha: %s, first_parent: %s}').replace(
    'fix_commit: null', 'fix_commit: {sha: %s, first_parent: %s}')


def standin_corpus(tmp_path):
    """A stand-in repository good -> regressing (writes 1.25x) -> fixed, and a corpus
    of one case naming its commits, plus a case without commits."""
    good, bad, fixed = bisectbuild.make_standin_repo(tmp_path / 'repo', [0.0, 0.25, 0.0])
    (tmp_path / 'corpus').mkdir()
    (tmp_path / 'corpus' / 'standin.yaml').write_text(STANDIN_CASE % (bad, good, fixed, bad))
    unverified = GOOD.replace('{range: {good: %s, bad: %s}}' % ('a' * 40, 'b' * 40),
                              '{unverified: no commit}')
    (tmp_path / 'corpus' / 'x.yaml').write_text(unverified)
    return good, bad, fixed


def replay_cli(tmp_path, *extra):
    return ['--corpus', str(tmp_path / 'corpus'), '--repo', str(tmp_path / 'repo'),
            '--builder', 'stand-in', '--simulate-cv', '0.04', '--seed', '3',
            '--work', str(tmp_path / 'work'), '--results', str(tmp_path / 'results'), *extra]


def test_replay_catches_the_regression_and_neither_fix_nor_control_fails(tmp_path, capsys):
    good, bad, fixed = standin_corpus(tmp_path)
    assert replay.main(['standin', '--fix', *replay_cli(tmp_path)]) == 0
    out = json.loads((tmp_path / 'results' / 'standin.json').read_text())
    reg, fix, control = (out['replays'][m] for m in ('regression', 'fix', 'control'))
    assert (reg['baseline'], reg['candidate']) == (good, bad)
    assert (fix['baseline'], fix['candidate']) == (bad, fixed)
    assert (control['baseline'], control['candidate']) == (good, good)
    assert reg['verdict'] == 'caught' and reg['rows'][0]['verdict'] == 'FAIL'
    row = reg['rows'][0]
    assert row['ratio_lo'] <= row['ratio'] <= row['ratio_hi'] < 1 and reg['pairs'] >= 10
    assert fix['verdict'] == control['verdict'] == 'no false FAIL'
    assert fix['rows'][0]['perf_ratio'] > 1.1           # the fix shows the recovery
    # the fix reuses the bad build, the control the good one: 4 builds made of 6 needed
    assert [r['builds_reused'] for r in (reg, fix, control)] == [0, 1, 1]
    assert 'standin: regression caught' in capsys.readouterr().out
    table = replay.catch_table(replay.load_results(tmp_path / 'results'), 2)
    assert 'caught 1 of 1 replayed case(s) (2 in the corpus); false FAILs on fix and A/A ' \
           'replays: 0' in table
    assert '| standin | conversion | caught, ' in table


def test_replay_resumes_from_its_state_without_building_or_running_again(tmp_path, capsys):
    standin_corpus(tmp_path)
    assert replay.main(['standin', '--no-control', *replay_cli(tmp_path)]) == 0
    state = json.loads((tmp_path / 'work' / replay.STATE_FILE).read_text())
    assert list(state['replays']) == ['standin/regression'] and len(state['builds']) == 2
    capsys.readouterr()
    assert replay.main(['standin', *replay_cli(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert 'standin/regression: done before (caught), not run again' in err
    state = json.loads((tmp_path / 'work' / replay.STATE_FILE).read_text())
    assert list(state['replays']) == ['standin/regression', 'standin/control']
    assert len(state['builds']) == 2
    out = json.loads((tmp_path / 'results' / 'standin.json').read_text())
    assert set(out['replays']) == {'regression', 'control'}
    assert replay.main(['standin', *replay_cli(tmp_path), '--checks', 'other']) == 4
    assert 'replays with checks = None are in this work directory' in capsys.readouterr().err


def test_only_control_runs_the_a_a_alone_and_each_replay_names_its_rows(tmp_path, capsys):
    """--only control: the A/A of a case whose regression ran before with other rows (in
    another work directory); the result keeps both replays, each with the rows it ran."""
    good, _, _ = standin_corpus(tmp_path)
    assert replay.main(['standin', '--no-control', *replay_cli(tmp_path)]) == 0
    other = replay_cli(tmp_path)
    other[other.index('--work') + 1] = str(tmp_path / 'work-aa')
    assert replay.main(['standin', '--only', 'control', *other, '--checks', 'aa-rows']) == 0
    state = json.loads((tmp_path / 'work-aa' / replay.STATE_FILE).read_text())
    assert list(state['replays']) == ['standin/control'] and list(state['builds']) == [good]
    out = json.loads((tmp_path / 'results' / 'standin.json').read_text())
    assert set(out['replays']) == {'regression', 'control'}
    assert out['replays']['regression']['checks'] is None
    assert out['replays']['control']['checks'] == 'aa-rows'
    assert (out['replays']['control']['baseline'], out['replays']['control']['candidate']) \
        == (good, good)
    capsys.readouterr()
    assert replay.main(['standin', '--only', 'control', '--no-control', *other]) == 64
    assert '--no-control and --only control' in capsys.readouterr().err
    assert replay.main(['standin', '--only', 'everything', *other]) == 64


def test_replay_all_takes_the_cases_with_commits_and_a_case_without_is_an_error(
        tmp_path, capsys):
    standin_corpus(tmp_path)
    assert replay.main(['--all', '--no-control', *replay_cli(tmp_path)]) == 0
    assert [p.name for p in (tmp_path / 'results').iterdir()] == ['standin.json']
    assert replay.main(['x', *replay_cli(tmp_path)]) == 4
    assert 'x.yaml: regressing_commit: no commit or range to replay' in \
        capsys.readouterr().err
    assert replay.main(replay_cli(tmp_path)) == 4


def test_between_replays_two_commits_no_case_names(tmp_path, capsys):
    """A sweep: --between GOOD BAD replays the range as a case would, one result named
    after the two commits; a name the clone lacks, or a CASE beside it, is an error."""
    good, bad, _ = standin_corpus(tmp_path)
    assert replay.main(['--between', good[:10], bad, '--no-control',
                        *replay_cli(tmp_path)]) == 0
    out = json.loads((tmp_path / 'results' / f'between-{good[:12]}-{bad[:12]}.json')
                     .read_text())
    reg = out['replays']['regression']
    assert (reg['baseline'], reg['candidate'], reg['verdict']) == (good, bad, 'caught')
    table = replay.sweep_table(replay.load_results(tmp_path / 'results'))
    fail = reg['rows'][0]
    assert fail['verdict'] == 'FAIL' and table.splitlines()[2].startswith(
        f'| the night between {good[:10]} and {bad} | {good[:8]} | {bad[:8]} | '
        f'{reg["pairs"]} | ')
    assert f'{fail["perf_ratio"]:.3f} [' in table.splitlines()[2]
    assert replay.main(['--between', good, good, '--only', 'control',
                        *replay_cli(tmp_path)]) == 0       # an A/A alone is no sweep line
    assert len(replay.sweep_table(replay.load_results(tmp_path / 'results'))
               .splitlines()) == 3
    assert replay.main(['--between', good, 'nosuchtag', *replay_cli(tmp_path)]) == 4
    assert '--between nosuchtag: not a commit of' in capsys.readouterr().err
    assert replay.main(['standin', '--between', good, bad, *replay_cli(tmp_path)]) == 4
    assert 'give no CASE or --all with it' in capsys.readouterr().err


def test_a_case_with_only_a_fix_replays_the_fix_and_shows_its_recovery(tmp_path, capsys):
    """A defect found as it was fixed (no regressing commit): --fix replays the fix
    against its slow first parent, the A/A control is of that parent."""
    slow, fixed = bisectbuild.make_standin_repo(tmp_path / 'repo', [0.25, 0.0])
    (tmp_path / 'corpus').mkdir()
    case = GOOD.replace('id: x', 'id: fixonly').replace(
        '{range: {good: %s, bad: %s}}' % ('a' * 40, 'b' * 40), '{unverified: no commit}'
    ).replace('fix_commit: null', f'fix_commit: {{sha: {fixed}, first_parent: {slow}}}')
    (tmp_path / 'corpus' / 'fixonly.yaml').write_text(case)
    assert replay.main(['fixonly', *replay_cli(tmp_path)]) == 4
    assert 'with a fix_commit, --fix replays the fix alone' in capsys.readouterr().err
    assert replay.main(['--all', '--fix', *replay_cli(tmp_path)]) == 0
    out = json.loads((tmp_path / 'results' / 'fixonly.json').read_text())
    assert set(out['replays']) == {'fix', 'control'}
    fix, control = out['replays']['fix'], out['replays']['control']
    assert (fix['baseline'], fix['candidate']) == (slow, fixed)
    assert (control['baseline'], control['candidate']) == (slow, slow)
    assert fix['verdict'] == control['verdict'] == 'no false FAIL'
    assert fix['rows'][0]['perf_lo'] > 1 and fix['faster_rows'] == [fix['rows'][0]['label']]
    assert control['faster_rows'] == []
    table = replay.catch_table(replay.load_results(tmp_path / 'results'), 1)
    assert '| fixonly | conversion | - | no false FAIL, ' in table
    assert '; recovery seen: 1 row(s) better, performance ' in table
    assert 'caught 0 of 0 replayed case(s) (1 in the corpus); false FAILs on fix and A/A ' \
           'replays: 0; recovery seen on 1 of 1 fix replay(s)' in table


RECORDING_INSTALL = '''
import pathlib, sys
# spack-env/install that only notes its arguments (and fails for a commit named 'fail')
with open(pathlib.Path(sys.argv[0]).with_name('calls'), 'a') as out:
    out.write(' '.join(sys.argv[1:]) + '\\n')
sys.exit('==> Error: concretization failed' if 'fail' in sys.argv else 0)
'''


def test_prepare_concretizes_each_commit_and_builds_or_runs_nothing(tmp_path, capsys):
    """--prepare, for a machine a measurement holds: the Spack builder puts the commit's
    source into its mirror and runs spack-env/install --concretize-only (no install, no
    manifest); the replay builds and runs nothing, keeps no state and writes no result."""
    good, bad, fixed = standin_corpus(tmp_path)
    install = tmp_path / 'install'
    install.write_text(RECORDING_INSTALL)
    work = tmp_path / 'spack-work'
    builder = bisectbuild.SpackBuilder(work, install=install, repo=tmp_path / 'repo',
                                       packages=['h5paths'])
    assert builder.prepare(bad).startswith('concretized')
    call = (tmp_path / 'calls').read_text()
    assert f'--candidate {bad} ' in call and call.rstrip().endswith('--concretize-only')
    assert (work / 'source-mirror' / bisectbuild.HDF5_MIRROR_PATH / f'{bad}.tar.gz').is_file()
    assert not (work / 'builds' / bad[:12] / 'manifest.json').exists()
    with pytest.raises(bisectbuild.BuildFailed, match='concretization failed'):
        builder.prepare('fail')
    assert replay.main(['standin', '--fix', '--prepare', *replay_cli(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert [line.split(':')[0] for line in out.splitlines()] == [good[:12], bad[:12], fixed[:12]]
    assert f'{good[:12]}: nothing to prepare' in out
    assert not (tmp_path / 'work' / replay.STATE_FILE).exists()
    assert not (tmp_path / 'results').exists()


def test_the_benchmark_prints_the_table_and_names_a_bad_result_file(tmp_path):
    (tmp_path / 'results').mkdir()
    (tmp_path / 'results' / 'bad.json').write_text('{')
    out = subprocess.run([sys.executable, str(REPO / 'benchmarks' / 'replay_corpus.py'),
                          '--results', str(tmp_path / 'results')],
                         capture_output=True, text=True)
    assert out.returncode == 4 and 'bad.json: not JSON' in out.stderr


def test_every_stored_replay_is_of_a_replayed_case_and_its_commits():
    """regressions/replays/<case>.json: the case says `replayed` and lists the replay,
    the regression replay ran the case's good and bad commits, and the table reads it."""
    cases = {case.id: case for case in corpus.load_corpus(CORPUS)}
    results = replay.load_results(CORPUS / 'replays')
    assert results
    for res in results:
        case = cases[res['case']]
        assert case.status == 'replayed' and case.data.get('replays'), case.path
        # the regression, the fix, or both (a range this recipe cannot build, e.g. release
        # tags of 1.8 and 1.10, has its fix replayed alone with --only fix)
        wanted = [p for p in replay.pairs_of(case, fix='fix' in res['replays'], control=False)
                  if p.mode in res['replays']]
        assert wanted, case.path
        for pair in wanted:     # the regression (a fix-only case: the fix) and any fix
            done = res['replays'][pair.mode]
            assert (done['baseline'], done['candidate']) == (pair.baseline, pair.candidate)
            assert done['verdict'] in ('caught', 'ERROR', 'missed', 'no false FAIL', 'false FAIL')
            assert done['pairs'] >= 10
            assert all(r['verdict'] in ('PASS', 'FAIL', 'INCONCLUSIVE', 'DEGRADED', 'ERROR',
                                        'NO-SLOWDOWN-SEEN') for r in done['rows'])
    table = replay.catch_table(results, len(cases))
    # "caught N of M": M the cases whose regression was replayed (a fix-only case's fix
    # replay is counted apart, in "recovery seen on ... fix replay(s)")
    regressions = sum('regression' in res['replays'] for res in results)
    assert f'of {regressions} replayed case(s) ({len(cases)} in the corpus)' in table


def test_a_row_the_candidate_broke_keeps_the_gates_reason_and_shows_in_the_table():
    """A row whose candidate runs all fail their sanity (the gate's ERROR, no ratio): the
    replay's result keeps the gate's reason and the table's cell counts the row, instead
    of showing only the other rows' ratio under "missed"."""
    broke = 'no candidate samples: 20 candidate run(s) failed: the candidate breaks this benchmark'
    gate = {'metrics': [
        {'key': 'w', 'label': 'mwb write bw', 'role': 'gated', 'verdict': 'ERROR',
         'reason': broke, 'n_pairs': 0},
        {'key': 'r', 'label': 'warm read bw', 'role': 'gated', 'verdict': 'NO-SLOWDOWN-SEEN',
         'reason': 'undecided', 'ratio': 0.92, 'ratio_lo': 0.80, 'ratio_hi': 1.07,
         'perf_ratio': 0.92, 'n_pairs': 20}]}
    rows = replay.row_results(gate)
    assert rows[0]['reason'] == broke and 'reason' not in rows[1]
    # a row a build's runs left without samples keeps the gate's words too
    said = {**gate['metrics'][1], 'verdict': 'INCONCLUSIVE', 'ratio': None,
            'reason': "no baseline samples; the baseline's runs said: x (9 run(s))",
            'runs_said': {'baseline': "; the baseline's runs said: x (9 run(s))"}}
    assert replay.row_results({'metrics': [said]})[0]['reason'].startswith('no baseline')
    done = {'mode': 'regression', 'verdict': 'missed', 'pairs': 20, 'rows': rows,
            'wall_seconds': 600.0}
    assert replay.cell(done) == 'missed, 20 pairs 0.920 [0.800, 1.070]; 1 row(s) ERROR, 600 s'


def test_a_memory_row_shows_its_performance_ratio_and_the_memory_grown():
    """A gated peak memory (lower is better): the table's cell gives the performance ratio
    (below 1: worse) as every other row's, and the candidate's memory as a multiple of the
    baseline's, never the bare value ratio above 1 beside the slowdowns' below 1."""
    row = {'key': 'm', 'label': 'h5paths_check %benchmark=vlen-reopen-hdf5-serial-contiguous-'
                                'earliest reopen_read peak_rss [36b7f7]', 'verdict': 'FAIL',
           'ratio': 2.710781, 'ratio_lo': 2.704442, 'ratio_hi': 2.717134,
           'perf_ratio': 0.368897, 'perf_lo': 0.368035, 'perf_hi': 0.369762, 'n_pairs': 10}
    done = {'mode': 'regression', 'verdict': 'caught', 'pairs': 10, 'rows': [row],
            'wall_seconds': 663.9}
    assert replay.cell(done) == ("caught, 10 pairs 0.369 [0.368, 0.370] (peak_rss 2.71x the "
                                 "baseline's), 664 s")


def test_a_regression_no_row_failed_but_one_errored_is_counted_apart_from_caught():
    """The candidate broke a row (its runs skipped, e.g. a --coll-metadata row whose HDF5
    read metadata on every rank) and no row FAILed: the night exits 4 naming the row.
    The replay says ERROR, not missed, and the table counts it apart from "caught";
    a stored result says what its rows say now."""
    broke = {'key': 'c', 'label': 'cmd create', 'verdict': 'ERROR', 'reason': 'no candidate '
             'samples: 10 candidate run(s) failed', 'n_pairs': 0}
    calm = {'key': 'o', 'label': 'cmd open_read', 'verdict': 'PASS', 'ratio': 1.0,
            'ratio_lo': 0.98, 'ratio_hi': 1.02, 'perf_ratio': 1.0, 'n_pairs': 10}
    assert replay.verdict_of('regression', [broke, calm]) == 'ERROR'
    assert replay.verdict_of('regression', [calm]) == 'missed'
    assert replay.verdict_of('control', [broke, calm]) == 'no false FAIL'
    stored = {'case': 'cmd', 'family': 'collective-metadata', 'replays': {'regression': {
        'mode': 'regression', 'verdict': 'missed', 'pairs': 10, 'rows': [broke, calm],
        'wall_seconds': 60.0, 'builds': 2, 'builds_reused': 0}}}
    table = replay.catch_table([stored], 17)
    assert '| cmd | collective-metadata | ERROR, 10 pairs 1.000 [0.980, 1.020]; 1 row(s) ' \
        'ERROR, 60 s |' in table
    assert 'caught 0 of 1 replayed case(s) (17 in the corpus); 1 more ended ERROR' in table


def test_the_table_says_which_caught_cases_a_row_of_the_default_night_caught():
    """A replay runs the rows its case names, in the night or not: the table says for
    each regression whether a row of the default night (the tests ReFrame's
    ``--describe`` tags ``nightly``) gave its verdict, and counts what the night catches apart."""
    described = [
        {'display_name': 'h5paths_check %num_nodes=1 %tasks_per_node=2 %hdf5_build=hdf5-1.15.0 '
                         '%benchmark=compound-subset-hdf5-collective-contiguous-earliest-warm',
         'tags': ['io', 'nightly']},
        {'display_name': 'h5paths_check %num_nodes=1 %tasks_per_node=2 %hdf5_build=hdf5-1.15.0 '
                         '%benchmark=strided-contiguous-hdf5-serial-contiguous-earliest-warm-'
                         'vfd-h5r_vector', 'tags': ['io']},
        {'display_name': 'build_h5paths ~generic:default+builtin', 'tags': ['nightly']},
        {'display_name': 'flashio_check %num_nodes=1 %tasks_per_node=2 %hdf5_build=hdf5-1.15.0 '
                         '%benchmark=hdf5-collective', 'tags': ['nightly']}]
    night = replay.night_rows(described, 'nightly')
    assert night == {('h5paths_check', 'compound-subset-hdf5-collective-contiguous-earliest-warm'),
                     ('flashio_check', 'hdf5-collective')}

    def result(case, benchmark, verdict):
        row = {'key': case, 'verdict': verdict, 'ratio': 0.5, 'ratio_lo': 0.4,
               'ratio_hi': 0.6, 'perf_ratio': 0.5, 'n_pairs': 10,
               'label': f'h5paths_check %num_nodes=1 %tasks_per_node=2 %benchmark={benchmark} '
                        f'read bw [{case}]'}
        return {'case': case, 'family': 'conversion', 'replays': {'regression': {
            'mode': 'regression', 'verdict': 'caught', 'pairs': 10, 'rows': [row],
            'wall_seconds': 60.0, 'builds': 2, 'builds_reused': 0}}}

    results = [result('in', 'compound-subset-hdf5-collective-contiguous-earliest-warm', 'FAIL'),
               result('out', 'strided-contiguous-hdf5-serial-contiguous-earliest-warm-vfd-'
                             'h5r_vector', 'FAIL'),
               result('calm', 'compound-subset-hdf5-collective-contiguous-earliest-warm', 'PASS')]
    table = replay.catch_table(results, 17, night)
    lines = {line.split(' | ')[0][2:]: line for line in table.splitlines()
             if line.startswith('| ') and ' | conversion | ' in line}
    assert lines['in'].endswith(' | yes |')
    assert lines['out'].endswith(' | no: its row is not in the night |')
    assert lines['calm'].endswith(' | - |')
    assert 'caught 2 of 3 replayed case(s) (17 in the corpus)' in table
    assert 'by the rows of the default night: caught 1 of 3, 0 more ended ERROR' in table
