"""ci/nightly end to end on `local`, for real, with stand-in builds of the FLASH-IO kernel.

Only what is deterministic is asserted: an A/A night is never FAIL, and an A/A night
whose candidate writes through HDF5 ten times slower is FAIL. The gate runs with a
strict false-discovery rate (0.001) and 10 pairs, so a false FAIL of the A/A night
needs all 10 pairs to agree by chance (p = 1/1024 per gated metric).
"""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys

import pytest

from h5regress import gate, perflog
from h5regress import nightrun, standins
from reframe_run import REPO

PAIRS = '10'


def nightly(out, *extra):
    cmd = [sys.executable, '-m', 'h5regress.nightly', '--stand-in', '--pairs', PAIRS,
           '--max-pairs', PAIRS, '--alpha', '0.001', '--checks', '^flashio_check.*-collective',
           '-S', 'flashio_check.iterations=2', '--out', str(out), '--history',
           str(out / 'history'), '--night', '2026-11-21', '--quiet', *extra]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope='module')
def a_against_a(tmp_path_factory):
    # FLASH's own 80 blocks per rank, as conftest.py's injected night: whether an A/A
    # night FAILs rests on the pairs' signs, not on the size of a run (local's 2000
    # blocks run in test_local_runs.py and in test_spack_tools.py's real night)
    out = tmp_path_factory.mktemp('aa')
    return out, nightly(out, '-S', 'flashio_check.blocks_per_rank=80')


@pytest.mark.slow
def test_a_against_a_is_not_fail(a_against_a):
    out, result = a_against_a
    assert result.returncode not in (gate.EXIT_FAIL, gate.EXIT_ERROR), result.stderr[-3000:]
    verdict = json.loads((out / 'gate.json').read_text())
    assert verdict['overall'] != 'FAIL'
    gated = [m for m in verdict['metrics'] if m['role'] == 'gated']
    assert len(gated) == 1 and gated[0]['n_pairs'] == int(PAIRS)
    for name in ('report.md', 'report.html', 'junit.xml'):
        assert (out / 'report' / name).stat().st_size > 0
    assert list((out / 'history').rglob('*.jsonl')), 'the night was not appended to history'
    # the attempt's own perflogs, and only its records, were gated
    assert verdict['attempt'] and verdict['counts']['other_attempt'] == 0
    assert [p.name for p in (out / 'perflogs').iterdir()] == [verdict['attempt']]


@pytest.mark.slow
def test_pairs_run_abba_back_to_back(a_against_a):
    out, _ = a_against_a
    records, problems = perflog.read([str(out / 'perflogs')])
    assert not problems
    first = {}
    for r in sorted(records, key=lambda r: r.timestamp):
        first.setdefault(r.pair_id, r.hdf5_build)
    assert len(first) == int(PAIRS)
    for pair_id, build in first.items():
        assert gate.of_attempt(pair_id, json.loads((out / 'gate.json').read_text())['attempt'])
        odd = int(pair_id.rsplit('p', 1)[1]) % 2
        assert build == ('hdf5-standin-a' if odd else 'hdf5-standin-b'), pair_id
    # the MPI-IO canary ran in every pair too
    assert {r.params['api'] for r in records} == {'hdf5', 'mpiio'}


@pytest.mark.slow
def test_a_large_injected_slowdown_fails(injected_night):
    # conftest.py's night: this module's options and a tenfold slowdown
    out, result, _, _ = injected_night
    assert result.returncode == gate.EXIT_FAIL, result.stdout[-3000:] + result.stderr[-3000:]
    # the night says what the shim did to the candidate's runs
    assert re.search(r'injected slowdown: the shim delayed \d+ I/O calls in \d+ candidate '
                     r'processes', result.stderr), result.stderr[-3000:]
    verdict = json.loads((out / 'gate.json').read_text())
    failed = [m for m in verdict['metrics'] if m.get('verdict') == 'FAIL']
    assert failed and all(m['params']['api'] == 'hdf5' for m in failed)


def test_the_candidate_is_resolved_and_chosen(tmp_path):
    from types import SimpleNamespace

    from h5regress.manifest import Build

    repo = tmp_path / 'hdf5'
    subprocess.run(['git', 'init', '-q', '-b', 'develop', str(repo)], check=True)
    subprocess.run(['git', '-C', str(repo), '-c', 'user.name=t', '-c', 'user.email=t@t',
                    'commit', '-q', '--allow-empty', '-m', 'x'], check=True)
    head = subprocess.run(['git', '-C', str(repo), 'rev-parse', 'HEAD'], capture_output=True,
                          text=True).stdout.strip()
    assert nightrun.resolve_commit('develop', str(repo)) == head
    assert nightrun.resolve_commit(head, 'unused') == head
    with pytest.raises(RuntimeError, match="cannot resolve 'nope'"):
        nightrun.resolve_commit('nope', str(repo))

    def build(label, commit):
        return Build(f'hdf5-{label}', label, label, commit, '', '', '', {})

    builds = {'hdf5-1.14.1': build('1.14.1', 'a' * 40), 'hdf5-dev': build('dev', head)}
    args = SimpleNamespace(candidate=head, candidate_build=None, baseline_build=None)
    assert nightrun.choose_builds(builds, args) == ('hdf5-1.14.1', 'hdf5-dev')
    # without a commit, the candidate is the build spack.yaml marks
    args = SimpleNamespace(candidate=None, candidate_build=None, baseline_build=None)
    with pytest.raises(RuntimeError, match='no build'):
        nightrun.choose_builds(builds, args)
    assert nightrun.pinned_candidate_build().startswith('hdf5-')


def test_stand_ins_carry_ior_from_path_and_slow_only_its_hdf5_runs(tmp_path, monkeypatch):
    from h5regress import manifest
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    fake_ior = bindir / 'ior'
    fake_ior.write_text('#!/bin/sh\necho "preload=${LD_PRELOAD:-none} '
                        'fraction=${H5REGRESS_DELAY_FRACTION:-none}"\n')
    fake_ior.chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    builds = manifest.load(standins.build_standins(tmp_path / 'out', 0.25),
                           check_stale=False)
    base = builds['hdf5-standin-a'].tools['ior']
    cand = builds['hdf5-standin-b'].tools['ior']
    assert base == str(fake_ior) and cand != base
    # the manifest says the candidate was slowed on purpose (issue 16: not an A/A pair)
    raw = json.loads((tmp_path / 'out' / 'stand-in' / 'manifest.json').read_text())
    assert 'slowed by 25% on purpose' in raw['builds']['hdf5-standin-b']['hdf5']['variants']
    assert 'slowed' not in raw['builds']['hdf5-standin-a']['hdf5']['variants']

    def run(binary, *args):
        return subprocess.run([binary, *args], capture_output=True, text=True,
                              check=True).stdout
    assert 'delay_shim.so fraction=0.25' in run(cand, '-a', 'HDF5', '-w')
    assert run(cand, '-a', 'MPIIO', '-w').strip() == 'preload=none fraction=none'
    assert run(base, '-a', 'HDF5', '-w').strip() == 'preload=none fraction=none'
    assert 'flash-io' in builds['hdf5-standin-a'].tools


def test_an_injected_slowdown_that_slowed_nothing_is_an_error(tmp_path, monkeypatch):
    """A night labelled with an injected slowdown must have had one: the shim logs what
    it delayed, and a candidate no run of which was slowed (here: only an MPI-IO run,
    which the wrapper leaves alone) is an ERROR, not a night of a slowdown it never had
    (a CI night with --inject-slowdown 9 once gated a ratio of 1.016)."""
    from h5regress import manifest
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    fake_ior = bindir / 'ior'
    fake_ior.write_text('#!/bin/sh\ndd if=/dev/zero of="$0.out" bs=64k count=16 2>/dev/null\n')
    fake_ior.chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    out = tmp_path / 'out'
    builds = manifest.load(standins.build_standins(out, 9), check_stale=False)
    cand = builds['hdf5-standin-b'].tools['ior']
    subprocess.run([cand, '-a', 'MPIIO', '-w'], check=True)
    with pytest.raises(RuntimeError, match='no run of the candidate was slowed'):
        standins.injected_delay(out / 'stand-in', 9)
    subprocess.run([cand, '-a', 'HDF5', '-w'], check=True)
    said = standins.injected_delay(out / 'stand-in', 9)
    assert re.match(r'injected slowdown: the shim delayed \d+ I/O calls in 1 candidate '
                    r'processes by [\d.]+ s on their [\d.]+ s \(x[\d.]+; asked x10;', said), said
    # a new attempt in the same --out starts from an empty account
    standins.build_standins(out, 9)
    with pytest.raises(RuntimeError, match='no run of the candidate was slowed'):
        standins.injected_delay(out / 'stand-in', 9)


def test_the_stand_in_night_gates_the_quiet_ior_row_and_its_canary():
    """Issue 13: the default stand-in night gates IOR's HDF5 independent shared-file
    write at 1 MiB transfers (quiet enough for a verdict within 20 pairs on a VM; the
    FLASH-IO checkpoint was not), with its MPI-IO twin as the canary."""
    from h5regress import nightly as nightly_mod
    from test_ior_validity import ior_checks

    args = nightly_mod.parse_args(['--stand-in', '-S', 'ior_check.repetitions=2'])
    nightrun.standin_checks(args, {'flash-io': 'k', 'ior': 'i'})
    # what run_once asks ReFrame for: the rows tagged standin (test_the_night_is_its_tags)
    assert args.select == ('-t', 'standin')
    rows = ior_checks().ior_check.param_space['benchmark']
    assert [row for row in rows if row in ior_checks().STANDIN_ROWS] == [
        ('MPIIO', 'independent', 'ssf'), ('HDF5', 'independent', 'ssf')]
    # 1 MiB transfers, and a user's own -S after (ReFrame keeps the last)
    assert args.setvar == ['ior_check.transfer_size=1m', 'ior_check.repetitions=2']
    cfg = gate.load_config()
    params = {'api': 'HDF5', 'preset': 'independent', 'layout': 'ssf',
              'transfer_size': 1 << 20}
    assert gate.role_of(cfg, 'ior', 'write', 'bw_max', params) == 'gated'
    assert gate.role_of(cfg, 'ior', 'write', 'bw_max', {**params, 'api': 'MPIIO'}) == 'canary'
    # stand-in builds without IOR: the FLASH-IO kernel; a --checks of the user: kept
    args = nightly_mod.parse_args(['--stand-in'])
    nightrun.standin_checks(args, {'flash-io': 'k'})
    assert args.select == nightrun.STANDIN_SELECTION and args.setvar == []
    args = nightly_mod.parse_args(['--stand-in', '--checks', '^flashio_check'])
    nightrun.standin_checks(args, {'flash-io': 'k', 'ior': 'i'})
    assert args.select == ('-n', '^flashio_check') and args.setvar == []


#: the stand-in night's IOR rows as ci/nightly selected them before the tags
OLD_STANDIN_IOR = r'^ior_check(?=.*%benchmark=(HDF5|MPIIO)-independent-ssf(%|$))'


def two_builds_lister(tmp_path):
    """``listed(*reframe options)``: the tests ReFrame lists of a manifest of two builds,
    each with IOR, FLASH-IO and h5paths, h5bench and fio (scripts that are never run)."""
    from reframe_run import run_reframe, two_build_manifest

    path = two_build_manifest(tmp_path, ('ior', 'flash-io', 'h5paths', 'h5bench_write', 'fio'))

    def listed(*select):
        out = run_reframe(['-c', 'reframe/checks', *select, '-l'], tmp_path,
                          env={'H5REGRESS_MANIFEST': str(path)})
        assert out.returncode == 0, out.stdout + out.stderr
        return sorted(re.findall(r'^- (\S+ .*?) /', out.stdout, re.M))
    return listed


def test_the_night_is_the_rows_each_check_marks(tmp_path):
    """Issue 26: the night's rows are ReFrame's -t nightly, one build kept by -E
    hdf5_build==...: every IOR row, FLASH-IO's NIGHT_ROWS and the h5paths rows marked
    ``nightly`` in its table, and no other test, so a row joins the night by its own line
    (the stand-in night's IOR rows -t standin: the regex they replaced)."""
    from reframe_run import night_rows_marked
    from h5regress.replay import row_of
    listed = two_builds_lister(tmp_path)
    keep = nightrun.build_filter('hdf5-1.15.0')
    marked = night_rows_marked()
    assert len(marked) > 20
    assert {row_of(n) for n in listed(*nightrun.NIGHT_SELECTION, *keep)} == marked
    old = listed('-n', f'(?=.*%hdf5_build=hdf5-1.15.0(%|$)){OLD_STANDIN_IOR}')
    assert len(old) == 2 and listed(*nightrun.STANDIN_IOR_SELECTION, *keep) == old


def test_follow_ups_and_studies_select_what_their_lookaheads_did(tmp_path):
    """Issue 26: a FAIL row's test in another build (Darshan, bisect) and a study's row
    are ReFrame's -n of whole names and -E (case, hdf5_build), the same tests as the
    lookahead regexes they replace; the build's -E joins a selection's own (ReFrame
    keeps the last -E). Fails on the code before (no tests_regex of names, study rows
    as one regex)."""
    from h5regress import study
    listed = two_builds_lister(tmp_path)
    build = 'hdf5-1.15.0'
    fails = [f'ior_check %num_nodes=1 %tasks_per_node=2 %hdf5_build=hdf5-1.14.1 '
             f'%benchmark={row}' for row in ('HDF5-independent-ssf', 'POSIX-independent-ssf')]
    old = listed('-n', f'(?=.*%hdf5_build={build}(%|$))^ior_check(?=%|$)'
                 '(?=.*%benchmark=(HDF5|POSIX)-independent-ssf(%|$))')
    assert len(old) == 2 and listed(*nightrun.build_filter(
        build, nightrun.checks_selection(nightrun.tests_regex(fails)))) == old
    rows = {'ior': 'HDF5-collective-ssf', 'h5bench_write': '1D-CONTIG-CONTIG-subfiling'}
    for checks, row in rows.items():
        old = listed('-n', rf'(?=.*%hdf5_build={build}(%|$))^{checks}_(build_)?check'
                     rf'(?=.*%benchmark={row}(%|$))')
        assert old and listed(*nightrun.build_filter(build, study.row_of(checks, row))) == old
    old = listed('-n', '^fio_check(?=.*%benchmark=direct(%|$))')
    assert old and listed(*study.row_of('fio', 'direct')) == old


def test_stand_ins_take_ior_from_the_spack_manifest_without_one_on_path(tmp_path,
                                                                       monkeypatch):
    from h5regress import manifest
    spack_ior = tmp_path / 'spack' / 'bin' / 'ior'
    spack_ior.parent.mkdir(parents=True)
    spack_ior.write_text('#!/bin/sh\n')
    spack_ior.chmod(0o755)
    path = tmp_path / 'manifest.json'
    hdf5 = {'version': '1.14.1', 'label': '1.14.1', 'commit': 'a' * 40, 'variants': '+mpi',
            'hash': 'h', 'prefix': str(tmp_path)}
    manifest.write(path, {'schema': manifest.SCHEMA, 'generated': '2026-11-24T00:00:00+00:00',
                          'spack_version': '0.23', 'environment': str(tmp_path),
                          'lock_sha256': '0' * 64,
                          'builds': {'hdf5-1.14.1': {'hdf5': hdf5,
                                                     'tools': {'ior': str(spack_ior)}}}})
    monkeypatch.setenv('H5REGRESS_MANIFEST', str(path))
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    assert standins.shutil.which('ior') is None
    builds = manifest.load(standins.build_standins(tmp_path / 'out', 0.0),
                           check_stale=False)
    assert {b.tools['ior'] for b in builds.values()} == {str(spack_ior)}
    variants = builds['hdf5-standin-a'].variants
    assert "the Spack environment's, build hdf5-1.14.1: HDF5 1.14.1" in variants


def test_the_loop_tells_the_gate_its_looks():
    from h5regress import nightly as nightly_mod
    args = nightly_mod.parse_args(['--stand-in'])
    assert nightly_mod.looks(args) == [10, 15, 20]
    args = nightly_mod.parse_args(['--stand-in', '--pairs', '8', '--more-pairs', '5',
                                   '--max-pairs', '20'])
    assert nightly_mod.looks(args) == [8, 13, 18, 20]
    with pytest.raises(SystemExit):
        nightly_mod.parse_args(['--stand-in', '--more-pairs', '0'])


def test_a_look_names_a_grown_memory_as_the_least_favourable_metric(tmp_path):
    """A look's line names the metric with the lowest performance bound: a peak memory
    that grew (value ratio above 1, lower is better) before a bandwidth a little below
    1, never the bandwidth because its value ratio is the lowest number."""
    from h5regress import nightly as nightly_mod
    result = {'overall': 'FAIL', 'config': {'margin': 0.05}, 'metrics': [
        {'role': 'gated', 'verdict': 'PASS', 'label': 'read bw', 'ratio': 0.99,
         'ratio_lo': 0.97, 'ratio_hi': 1.01, 'perf_lo': 0.97, 'higher_is_better': True},
        {'role': 'gated', 'verdict': 'FAIL', 'label': 'reopen_read peak_rss', 'ratio': 2.711,
         'ratio_lo': 2.704, 'ratio_hi': 2.717, 'perf_lo': 0.368, 'higher_is_better': False}]}
    path = tmp_path / 'gate.json'
    path.write_text(json.dumps(result))
    line, = nightrun.look_summary(path, 10, every_metric=False)
    assert line.endswith('least favourable reopen_read peak_rss: ratio 2.711 [2.704, 2.717] '
                         '(lower is better)'), line


def test_quiet_night_prints_at_most_three_lines_per_pair(tmp_path, monkeypatch, capfd):
    """Under --quiet: a line per pair ("pair i/N"), a line per look (the verdict so far and
    the lowest ratio with its interval), the final verdict; no command lines (issue 16).
    ReFrame and the gate are stand-ins here; the real night's count is in the note."""
    from h5regress import nightly as nightly_mod
    from test_gate import BASE, CAND, paired

    monkeypatch.setattr(nightly_mod, 'prepare_builds',
                        lambda args: (tmp_path / 'manifest.json', BASE, CAND))
    (tmp_path / 'manifest.json').write_text('{}')
    monkeypatch.setattr(nightrun, 'run_once', lambda build, pair_id, args, env: 0)
    pairs = {'n': 0}

    def fake_gate(args):
        # issue 26: the gate reads the attempt's ReFrame run reports, not its perflogs
        assert list(args.reports) == [str(tmp_path / 'out' / 'reports' / args.attempt)]
        assert not args.perflogs
        result = gate.run_gate(paired(10, 0.98, cv=0.1, seed=3), BASE, CAND,
                               gate.load_config(), night='2026-11-22')
        pairs['n'] += 1
        pairs.setdefault('run', []).append(args.pairs_run)
        with open(args.json, 'w') as fp:
            fp.write(gate.dumps(result))
        print(gate.format_text(result) if not args.quiet else 'overall: x')
        return gate.EXIT_INCONCLUSIVE

    monkeypatch.setattr(nightly_mod.gate, 'gate_request', fake_gate)
    code = nightly_mod.main(['--stand-in', '--pairs', '10', '--max-pairs', '20', '--quiet',
                             '--out', str(tmp_path / 'out'), '--night', '2026-11-22'])
    assert code == gate.EXIT_INCONCLUSIVE and pairs['n'] == 3     # looks: 10, 15; final
    # each look tells the gate the pairs run (issue 25: a pair lost at the cap is
    # judged at the last look's level, not at the look its count would say)
    assert pairs['run'] == [10, 15, 20]
    out, err = capfd.readouterr()
    lines = (out + err).splitlines()
    assert len(lines) <= 3 * 20, '\n'.join(lines)
    assert sum(line.startswith('ci/nightly: pair ') for line in lines) == 20
    assert 'ci/nightly: pair 3/10 (up to 20): ' in err and 'pair 20/20: ' in err
    looks = [line for line in lines if 'look at ' in line]
    assert len(looks) == 2 and 'look at 10 pairs: NO-SLOWDOWN-SEEN' in looks[0]
    # the verdict in a line too, not the gate's table
    assert sum('verdict at 20 pairs: NO-SLOWDOWN-SEEN' in line for line in lines) == 1
    assert not any(line.startswith('overall: ') for line in lines)
    assert re.search(r'least favourable .*: ratio \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]',
                     looks[0])
    assert not any(' $ ' in line for line in lines), 'command lines under --quiet'


def test_help_prints_the_default_checks():
    """The help names the default checks (argparse %-formats help texts)."""
    out = subprocess.run([sys.executable, '-m', 'h5regress.nightly', '--help'], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '-t nightly' in out.stdout


def test_a_candidate_that_breaks_a_row_stops_the_loop_with_an_error(tmp_path, monkeypatch,
                                                                    capfd):
    """Issue 25: every candidate run of a gated row fails its sanity (no record) while
    its other rows and the baseline have samples: the first look is ERROR (exit 4), no
    pair is added, and the night's error names the row and the failed runs. ReFrame is
    a stand-in writing records; the gate is the real one, on those records."""
    from h5regress import nightly as nightly_mod
    from test_gate import BASE, CAND, rec

    monkeypatch.setattr(nightly_mod, 'prepare_builds',
                        lambda args: (tmp_path / 'manifest.json', BASE, CAND))
    (tmp_path / 'manifest.json').write_text('{}')
    records = tmp_path / 'records.jsonl'
    runs = []

    def run_once(build, pair_id, args, env):
        runs.append((build, pair_id))
        # two gated IOR rows; the candidate's 4 MiB row fails its sanity: no record
        sizes = ['1m'] + ([] if build == CAND else ['4m'])
        with open(records, 'a') as fp:
            for size in sizes:
                r = rec(1000.0 * (1 + 0.01 * (len(runs) % 5)), build, None,
                        chash=f'h-ior-{size}', run=f'{pair_id}-{build}-{size}',
                        night='2026-11-22', extra={'transfer_size': size})
                r.pair_id = pair_id
                fp.write(r.to_json() + '\n')
        return 1 if build == CAND else 0

    monkeypatch.setattr(nightrun, 'run_once', run_once)
    real_gate = nightly_mod.gate.gate_request

    def gate_on_records(request):
        return real_gate(dataclasses.replace(request, reports=(), records=[str(records)],
                                             run_records=None))

    monkeypatch.setattr(nightly_mod.gate, 'gate_request', gate_on_records)
    code = nightly_mod.main(['--stand-in', '--pairs', '10', '--max-pairs', '20', '--quiet',
                             '--out', str(tmp_path / 'out'), '--night', '2026-11-22'])
    assert code == gate.EXIT_ERROR
    assert len(runs) == 20, 'pairs were added after the look said ERROR'
    result = json.loads((tmp_path / 'out' / 'gate.json').read_text())
    assert result['overall'] == 'ERROR'
    (broken,) = [m for m in result['metrics'] if m['verdict'] == 'ERROR']
    assert broken['config_hash'] == 'h-ior-4m' and broken['label'] in result['error']
    assert 'no candidate samples: 10 candidate run(s) failed' in result['error']
    err = capfd.readouterr().err
    assert re.search(r'look at 10 pairs: ERROR: .*no candidate samples: 10 candidate run', err)


@pytest.mark.parametrize('extra, named', [
    (['--baseline-build', 'hdf5-1.14.1'], '--baseline-build would be ignored'),
    (['--candidate-build', 'hdf5-1.15.0', '--baseline-build', 'hdf5-1.14.1'],
     '--baseline-build and --candidate-build would be ignored'),
])
def test_stand_in_refuses_the_builds_it_would_ignore(capsys, extra, named):
    """--stand-in runs its own builds: a --baseline-build/--candidate-build beside it was
    silently ignored (issue 31); a usage error now, exit 64 as the nightly's others."""
    from h5regress import nightly as nightly_mod
    with pytest.raises(SystemExit) as err:
        nightly_mod.parse_args(['--stand-in', *extra])
    assert err.value.code == 64
    assert named in capsys.readouterr().err


def test_pairs_after_a_look_run_only_the_undecided_rows(tmp_path, monkeypatch, capfd):
    """Issue 25: a row the first look decided (PASS) is not run again; the row it left
    undecided runs pairs 11-20; the verdict judges the decided row on its 10 pairs.
    ReFrame is a stand-in that runs the rows its -n selects; the gate is the real one."""
    import random
    from h5regress import nightly as nightly_mod
    from test_gate import BASE, CAND, rec

    monkeypatch.setattr(nightly_mod, 'prepare_builds',
                        lambda args: (tmp_path / 'manifest.json', BASE, CAND))
    (tmp_path / 'manifest.json').write_text('{}')
    records, ran, rng = tmp_path / 'records.jsonl', [], random.Random(5)

    def run_once(build, pair_id, args, env):
        words = list(args.select)
        regex = words[words.index('-n') + 1]
        for row, cv in (('quiet', 0.0), ('noisy', 0.4)):
            test = f'ior_check %num_nodes=1 %hdf5_build={build} %benchmark={row}'
            if not re.search(regex, test.replace(' ', '')):
                continue
            ran.append((int(pair_id.rsplit('-p', 1)[1]), row))
            r = rec(1000.0 * math.exp(rng.gauss(0.0, cv)), build, None, chash=f'h-{row}',
                    run=f'{pair_id}-{build}-{row}', night='2026-11-22',
                    extra={'case': row})
            r.pair_id, r.test = pair_id, test
            with open(records, 'a') as fp:
                fp.write(r.to_json() + '\n')
        return 0

    monkeypatch.setattr(nightrun, 'run_once', run_once)
    real_gate = nightly_mod.gate.gate_request
    monkeypatch.setattr(nightly_mod.gate, 'gate_request', lambda request: real_gate(
        dataclasses.replace(request, reports=(), records=[str(records)], run_records=None)))
    code = nightly_mod.main(['--stand-in', '--checks', '^ior_check', '--pairs', '10',
                             '--max-pairs', '20', '--quiet', '--out', str(tmp_path / 'out'),
                             '--night', '2026-11-22'])
    assert code in (gate.EXIT_INCONCLUSIVE, gate.EXIT_NO_SLOWDOWN_SEEN, gate.EXIT_PASS)
    assert sorted({p for p, row in ran if row == 'quiet'}) == list(range(1, 11))
    assert sorted({p for p, row in ran if row == 'noisy'}) == list(range(1, 21))
    rows = {m['params']['case']: m for m in json.loads(
        (tmp_path / 'out' / 'gate.json').read_text())['metrics']}
    assert rows['quiet']['verdict'] == 'PASS' and rows['quiet']['n_pairs'] == 10
    assert rows['noisy']['n_pairs'] == 20
    assert 'the next pairs run only the 1 test(s) whose gated metric the look left ' \
        'undecided' in capfd.readouterr().err


def test_a_night_whose_undecided_rows_lack_baseline_samples_stops_at_the_look(
        tmp_path, monkeypatch, capfd):
    """Issue 25: a row the baseline build breaks (no baseline samples, its runs said why)
    is INCONCLUSIVE at every look, and the night ran it, and every other undecided row, to
    the cap. Now the pairs after a look leave it out, and when it is all the look left
    undecided the night ends there, still INCONCLUSIVE. Fails on the old code: yes (pairs
    11-20 ran the broken row)."""
    from h5regress import nightly as nightly_mod
    monkeypatch.setattr(nightly_mod, 'prepare_builds',
                        lambda args: (tmp_path / 'manifest.json', 'hdf5-a', 'hdf5-b'))
    (tmp_path / 'manifest.json').write_text('{}')
    ran, looks = [], []
    said = {'baseline': "; the baseline's runs said: not done (10 run(s))"}
    undecided = {'role': 'gated', 'test': 'h5paths_check%benchmark=noisy',
                 'verdict': 'INCONCLUSIVE'}

    def run_once(build, pair_id, args, env):
        ran.append((int(pair_id.rsplit('-p', 1)[1]), ' '.join(args.select)))
        return 0

    def gate_once(baseline, candidate, args, final):
        looks.append(final)
        rows = [{'role': 'gated', 'test': 'h5paths_check%benchmark=broken',
                 'verdict': 'INCONCLUSIVE', 'runs_said': said}]
        if len(looks) == 1:     # the first look: one more row undecided, with samples
            rows.append(undecided)
        (args.out / 'gate.json').write_text(json.dumps({'metrics': rows}))
        return gate.EXIT_INCONCLUSIVE

    monkeypatch.setattr(nightrun, 'run_once', run_once)
    monkeypatch.setattr(nightly_mod, 'gate_once', gate_once)
    code = nightly_mod.main(['--stand-in', '--checks', '^h5paths_check', '--pairs', '10',
                             '--max-pairs', '20', '--quiet', '--out', str(tmp_path / 'out'),
                             '--night', '2026-11-28'])
    assert code == gate.EXIT_INCONCLUSIVE
    pairs = sorted({p for p, _ in ran})
    assert pairs == list(range(1, 16)), pairs       # 11-15 for the noisy row, then stop
    assert all('noisy' in select and 'broken' not in select for p, select in ran if p > 10)
    assert looks == [False, False, True]
    assert 'no more pairs: the 1 undecided test(s) have no baseline samples' in \
        capfd.readouterr().err


def test_the_night_runs_ior_without_its_ungated_read_phase(tmp_path, monkeypatch):
    """Issue 25: the gate judges IOR's writes only, so every ReFrame run of a night asks
    IOR's rows for no read phase (-S read_phase=false), before the user's own -S
    (ReFrame keeps the last). Fails on the old code: yes (no such -S)."""
    seen = []

    def fake_run(cmd, **kw):
        seen.append([str(word) for word in cmd])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(nightrun, 'run', fake_run)
    args = nightrun.NightRequest(out=tmp_path / 'out', setvar=['ior_check.read_phase=true'])
    with pytest.raises(RuntimeError, match='no readable report'):
        nightrun.run_once('hdf5-1.15.0', 'p01', args, {})
    settings = [seen[0][i + 1] for i, word in enumerate(seen[0]) if word == '-S']
    assert settings == ['ior_check.read_phase=false', 'ior_build_check.read_phase=false',
                        'ior_check.read_phase=true']


def test_a_time_limit_ends_the_night_in_time_with_a_verdict_at_the_pairs_reached(
        tmp_path, monkeypatch, capfd):
    """Issue 25: a night has a slot (a CI job's timeout, an allocation); a night killed
    by it leaves no verdict, whatever its pairs had shown. --time-limit stops starting
    pairs that would end, with the verdict, beyond it, and the verdict's looks end at the
    pairs reached so that it spends what is left of alpha there. Time is simulated: a
    side takes 60 s. Fails on the old code: yes (no --time-limit: usage error)."""
    from h5regress import nightly as nightly_mod
    now = {'t': 1000.0}
    monkeypatch.setattr(nightrun.time, 'monotonic', lambda: now['t'])
    monkeypatch.setattr(nightly_mod, 'prepare_builds',
                        lambda args: (tmp_path / 'manifest.json', 'hdf5-a', 'hdf5-b'))
    (tmp_path / 'manifest.json').write_text('{}')
    ran, calls = [], []

    def run_once(build, pair_id, args, env):
        now['t'] += 60.0
        ran.append(int(pair_id.rsplit('-p', 1)[1]))
        return 0

    def gate_once(baseline, candidate, args, final):
        calls.append((final, nightly_mod.looks(args), args.pairs_run))
        (args.out / 'gate.json').write_text(json.dumps({'metrics': [
            {'role': 'gated', 'test': 'h5paths_check%benchmark=noisy',
             'verdict': 'INCONCLUSIVE'}]}))
        return gate.EXIT_INCONCLUSIVE

    monkeypatch.setattr(nightrun, 'run_once', run_once)
    monkeypatch.setattr(nightly_mod, 'gate_once', gate_once)
    argv = ['--stand-in', '--checks', '^h5paths_check', '--quiet', '--night', '2026-11-28']
    code = nightly_mod.main(argv + ['--time-limit', '25m', '--out', str(tmp_path / 'a')])
    assert code == gate.EXIT_INCONCLUSIVE
    # pair i starts at 120 (i - 1) s and needs 1.15 x 120 s, then 30 s for the verdict:
    # pair 12 ends at 1440 s, pair 13 would end past 1500 s
    assert sorted(set(ran)) == list(range(1, 13)) and now['t'] - 1000.0 == 12 * 120
    assert calls == [(False, [10, 15, 20], 10), (True, [10, 12], 12)]
    err = capfd.readouterr().err
    assert 'time limit: pair 13 would end after 1500 s' in err
    assert 'still INCONCLUSIVE after 12 pairs (the time limit)' in err
    # a limit short of the first look: the verdict at the pairs reached, and the time
    # that would reach the look (7 x 120 s gone, 3 pairs of 1.15 x 120 s, 30 s: 21 min)
    ran.clear(), calls.clear()
    assert nightly_mod.main(argv + ['--time-limit', '15m', '--out', str(tmp_path / 'c')]) \
        == gate.EXIT_INCONCLUSIVE
    assert sorted(set(ran)) == list(range(1, 8)) and calls == [(True, [7], 7)]
    assert 'before the first look at 10 pairs, and fewer pairs say less (see the verdict); ' \
        'a time limit of about 21 min would reach it' in capfd.readouterr().err
    # no limit: the loop's looks, to the cap
    ran.clear(), calls.clear()
    assert nightly_mod.main(argv + ['--out', str(tmp_path / 'b')]) == gate.EXIT_INCONCLUSIVE
    assert sorted(set(ran)) == list(range(1, 21))
    assert [c[1:] for c in calls] == [([10, 15, 20], 10), ([10, 15, 20], 15),
                                      ([10, 15, 20], 20)]


@pytest.mark.parametrize('value', ['soon', '0', '-5m'])
def test_a_time_limit_that_is_not_a_duration_is_a_usage_error(value, capsys):
    from h5regress import nightly as nightly_mod
    with pytest.raises(SystemExit) as stop:
        nightly_mod.parse_args(['--stand-in', '--time-limit', value])
    assert stop.value.code == 64 and '--time-limit' in capsys.readouterr().err
