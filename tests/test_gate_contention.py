"""The gate's contention rule (issue 25): pairs whose side ran on a contended machine
are excluded, judged from the sides' wall time and foreign CPU, never the ratio."""

import dataclasses
import json
import subprocess
import sys
import time

import pytest

from h5regress import gate, nightly, nightrun, runreport, sideload
from h5regress.gate import contention
from h5regress.report import text as report_text

from test_gate import BASE, CAND, gated, paired, rec

NIGHT = '2025-01-10'


def sides(n, walls=None, cand_factor=1.0, foreign=None):
    """Sides of ``n`` pairs: 100 s each (x ``cand_factor`` on the candidate's), except
    ``walls`` {(pair, build): seconds}; ``foreign`` {(pair, build): share}."""
    walls, foreign = walls or {}, foreign or {}
    out = []
    for p in range(n):
        for build, factor in ((BASE, 1.0), (CAND, cand_factor)):
            out.append(contention.Side(f'{NIGHT}-p{p}', build,
                                       walls.get((p, build), (100.0 + p % 3) * factor),
                                       foreign.get((p, build))))
    return out


def contended(n, ratio, slowed_pairs, slow=3.5, **kw):
    """``paired`` records whose baseline runs of ``slowed_pairs`` were slowed ``slow``x
    by other processes (their ratio wrong-signed)."""
    recs = paired(n, ratio, cv=0.03, **kw)
    for r in recs:
        if r.hdf5_build == BASE and int(r.pair_id.rsplit('-p', 1)[1]) in slowed_pairs:
            r.value /= slow
    return recs


def cfg(**rule):
    c = gate.load_config()
    c['contention'] = {**c['contention'], **rule}
    return c


def run(records, config=None, **kw):
    return gate.run_gate(records, BASE, CAND, config or gate.load_config(), **kw)


def test_a_contended_pair_is_excluded_and_the_exclusion_recorded():
    recs = contended(20, 0.8, {2, 3})
    walls = {(2, BASE): 849.0, (3, BASE): 259.0, (2, CAND): 235.0}
    res = run(recs, looks=[10, 15, 20], pairs_run=20, sides=sides(20, walls))
    info = res['contention']
    assert info['enabled'] and info['pairs_excluded'] == 2
    assert [x['pair'] for x in info['excluded']] == [f'{NIGHT}-p2', f'{NIGHT}-p3']
    assert '849 s' in info['excluded'][0]['why'][0]
    assert '(limit 1.5x and 30 s more)' in info['excluded'][0]['why'][0]
    assert info['judged_by'].startswith('wall time only')
    assert res['counts']['contended'] == 4 and info['records_excluded'] == 4
    (m,) = gated(res)
    assert m['n_pairs'] == 18 and m['excluded_pairs'] == 2 and m['verdict'] == 'FAIL'
    assert sum(s['contended'] for s in info['sides']) == 3 and len(info['sides']) == 40
    text = gate.format_text(res)
    assert 'EXCLUDED     pair 2025-01-10-p2' in text and '4 of contended pairs' in text
    assert '2 contended pair(s) excluded (4 records' in report_text._skipped_text(res)


def test_the_rule_is_blind_to_the_ratio():
    """Every candidate side 1.6x slower (a real slowdown of the whole build) or 8.5x
    faster: each build is judged against its own sides, nothing is excluded."""
    for factor in (1.6, 1 / 8.5):
        res = run(contended(20, 0.6, set()), looks=[10, 15, 20], pairs_run=20,
                  sides=sides(20, cand_factor=factor))
        assert res['contention']['pairs_excluded'] == 0
        assert gated(res)[0]['verdict'] == 'FAIL' and gated(res)[0]['n_pairs'] == 20


def test_short_sides_are_judged_by_the_seconds_other_work_took_too():
    """Sides of a few seconds (a test's night) vary by more than 1.5x with no
    contention; 30 s more than the median are needed as well."""
    walls = {(3, BASE): 9.0, (4, CAND): 200.0}
    res = run(paired(10, 1.0), sides=[dataclasses.replace(s, wall_s=walls.get(
        (int(s.pair_id.rsplit('-p', 1)[1]), s.build), 3.0)) for s in sides(10)])
    assert [x['pair'] for x in res['contention']['excluded']] == [f'{NIGHT}-p4']


def test_foreign_cpu_excludes_a_side_its_wall_time_does_not():
    foreign = {(p, b): 0.01 for p in range(20) for b in (BASE, CAND)}
    foreign[(5, CAND)] = 0.6
    res = run(paired(20, 1.0), sides=sides(20, foreign=foreign))
    assert res['contention']['judged_by'] == 'wall time and foreign CPU'
    (x,) = res['contention']['excluded']
    assert x['pair'] == f'{NIGHT}-p5' and '60% of the CPU' in x['why'][0]


def test_foreign_cpu_of_a_few_seconds_excludes_nothing():
    """A test's side of 3 s with 60 % foreign CPU: 3.6 CPU seconds, under 30."""
    short = [contention.Side(f'p{p}', b, 3.0, 0.6 if p == 2 else 0.0,
                             3.6 if p == 2 else 0.0) for p in range(6) for b in (BASE, CAND)]
    rule = gate.load_config()['contention']
    assert contention.judge(short, (BASE, CAND), rule).excluded == {}
    long = [dataclasses.replace(x, wall_s=100.0, foreign_s=120.0 * x.foreign_share)
            for x in short]
    assert list(contention.judge(long, (BASE, CAND), rule).excluded) == ['p2']


def test_too_few_pairs_left_is_never_pass():
    """10 pairs run, 2 excluded: 8 left, fewer than the first look's 10; what would
    PASS is INCONCLUSIVE, saying why."""
    recs = [rec(1000.0 * (1 + 0.001 * (p % 3)), b, p) for p in range(10) for b in (BASE, CAND)]
    walls = {(1, BASE): 500.0, (4, CAND): 400.0}
    assert gated(run(recs, cfg(enabled=False), looks=[10, 15, 20], pairs_run=10,
                     sides=sides(10, walls)))[0]['verdict'] == 'PASS'
    res = run(recs, looks=[10, 15, 20], pairs_run=10, sides=sides(10, walls))
    (m,) = gated(res)
    assert m['n_pairs'] == 8 and m['verdict'] == 'INCONCLUSIVE'
    assert 'fewer than the 10 the first look needs' in m['reason']
    assert res['overall'] == 'INCONCLUSIVE'


def test_a_night_whose_every_pair_is_contended_is_inconclusive_not_error():
    walls = {(p, BASE): 1000.0 for p in range(5)}
    walls.update({(p, CAND): 900.0 for p in range(5)})
    res = run(paired(10, 1.0), sides=sides(10, walls, foreign={
        (p, b): 0.5 for p in range(5, 10) for b in (BASE, CAND)}))
    assert res['contention']['pairs_excluded'] == 10 and gated(res) == []
    assert res['overall'] == 'INCONCLUSIVE' and 'every pair was excluded' in res['note']
    assert 'NOTE: every pair was excluded as contended (10)' in gate.format_text(res)


def test_off_gives_the_verdicts_of_the_gate_without_the_rule():
    recs = contended(20, 0.8, {2, 3})
    walls = {(2, BASE): 849.0, (3, BASE): 259.0}
    off = run(recs, cfg(enabled=False), looks=[10, 15, 20], pairs_run=20,
              sides=sides(20, walls))
    plain = run(recs, looks=[10, 15, 20], pairs_run=20)     # no side data: nothing judged
    assert off['contention']['pairs_excluded'] == 0 and off['contention']['judged_by'] == 'off'
    assert plain['contention']['judged_by'].startswith('nothing')
    strip = lambda r: [(m['verdict'], m['reason'], m['n_pairs'], m['q']) for m in gated(r)]  # noqa: E731
    assert strip(off) == strip(plain)
    assert gated(off)[0]['n_pairs'] == 20


def report(path, pair_id, build, elapsed, time_run=()):
    """A run report of one side: a test case per ``time_run`` (one without when empty)."""
    cases = [{'hdf5_build': build, 'h5r_context': json.dumps({'pair_id': pair_id}),
              **({'time_run': t} if t is not None else {})} for t in time_run or [None]]
    path.write_text(json.dumps({'session_info': {'time_elapsed': elapsed,
                                                 'num_cases': len(cases)},
                                'runs': [{'testcases': cases}]}))
    return path


def test_sides_are_read_from_the_run_reports_and_their_side_files(tmp_path):
    # the tests' run time, not ReFrame's loading of the checks
    report(tmp_path / f'{NIGHT}-p1-{BASE}.json', f'{NIGHT}-p1', BASE, 98.0, (40.0, 50.5))
    rep = report(tmp_path / f'{NIGHT}-p1-{CAND}.json', f'{NIGHT}-p1', CAND, 99.0)
    load = sideload.SideLoad(f'{NIGHT}-p1', CAND, 1.0, 101.0, 100.0, 2,
                             {'user': 150.0, 'nice': 20.0, 'system': 10.0, 'idle': 20.0},
                             100.0, (1.0, 1.0, 1.0), (2.0, 1.0, 1.0))
    sideload.write(rep, load)
    got, problems = contention.load_sides([str(tmp_path)])
    assert problems == []
    assert [(s.build, s.wall_s, s.foreign_share) for s in got] == [
        (BASE, 90.5, None), (CAND, 99.0, pytest.approx(0.3))]
    assert load.foreign_share == pytest.approx(0.4)
    # a night run at nice 19: its user time is in the nice column, its system time not
    niced = dataclasses.replace(load, cpu={'user': 50.0, 'nice': 100.0, 'system': 10.0},
                                own_system_s=5.0, nice=19)
    assert niced.foreign_normal_share == pytest.approx((60.0 - 5.0) / 200.0)
    # the side file is no run report to the gate's reader
    assert runreport.read([str(tmp_path)])[1] == []
    (tmp_path / f'{NIGHT}-p1-{CAND}.side').write_text('{"pair_id": "x"}')
    got, problems = contention.load_sides([str(tmp_path)])
    assert 'lacks key(s)' in problems[0] and f'{NIGHT}-p1-{CAND}.side' in problems[0]
    assert got[1].foreign_share is None and got[1].wall_s == 99.0


def test_the_nightly_records_each_side_beside_its_report(tmp_path, monkeypatch):
    """run_once: the .side file, with the CPU of the side's own children counted as the
    night's, not as foreign."""
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--quiet', '--no-install',
                               '--checks', '^flashio_check'])
    nightrun.start_attempt(args)

    def fake_reframe(cmd, env, stdout=None):
        cmd = [str(w) for w in cmd]
        spin = 'import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass'
        subprocess.run([sys.executable, '-c', spin], check=True)
        time.sleep(0.1)
        report(tmp_path / cmd[cmd.index('--report-file') + 1], 'p01', 'b', 0.5)
        return subprocess.CompletedProcess(cmd, 0)
    monkeypatch.setattr(nightrun, 'run', fake_reframe)
    monkeypatch.setattr(nightrun, 'stop_leftovers', lambda what: None)
    monkeypatch.setattr(nightrun.checkfiles, 'learn', lambda *a: None)
    assert nightrun.run_once('b', 'p01', args, {}) == 0
    path = nightrun.attempt_reports(args) / 'p01-b.side'
    side = sideload.parse(path.read_text(), str(path))
    assert side.pair_id == 'p01' and side.build == 'b' and side.wall_s >= 0.5
    assert side.own_cpu_s >= 0.35 and len(side.load_start) == 3
    assert side.end_unix - side.start_unix == pytest.approx(side.wall_s, abs=0.05)


def test_a_side_file_that_cannot_be_written_costs_the_night_nothing(tmp_path, monkeypatch,
                                                                    capsys):
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--quiet', '--no-install',
                               '--checks', '^flashio_check'])
    nightrun.start_attempt(args)

    def fake_reframe(cmd, env, stdout=None):
        cmd = [str(w) for w in cmd]
        report(tmp_path / cmd[cmd.index('--report-file') + 1], 'p01', 'b', 0.5)
        return subprocess.CompletedProcess(cmd, 0)

    def full(*_):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(nightrun, 'run', fake_reframe)
    monkeypatch.setattr(nightrun, 'stop_leftovers', lambda what: None)
    monkeypatch.setattr(nightrun.checkfiles, 'learn', lambda *a: None)
    monkeypatch.setattr(sideload, 'write', full)
    assert nightrun.run_once('b', 'p01', args, {}) == 0
    assert 'p01-b.side not written (No space left on device)' in capsys.readouterr().err


def test_a_candidate_that_sometimes_stretches_its_own_sides_never_passes():
    """The rule cannot see the ratio: a candidate whose own slowdown sometimes makes
    its whole side 3x as long (pairs 1, 4, 7, 12, 15) has exactly those pairs
    excluded, and the 15 clean ones alone would PASS. The row judged on every pair
    is not PASS, so the night may not be either."""
    stretched = {1, 4, 7, 12, 15}
    recs = paired(20, 1.0, cv=0.02)
    for r in recs:
        if r.hdf5_build == CAND and int(r.pair_id.rsplit('-p', 1)[1]) in stretched:
            r.value /= 3.0
    walls = {(p, CAND): 300.0 for p in stretched}
    res = run(recs, looks=[10, 15, 20], pairs_run=20, sides=sides(20, walls))
    assert res['contention']['pairs_excluded'] == 5
    (m,) = gated(res)
    assert m['n_pairs'] == 15 and m['verdict'] == 'INCONCLUSIVE', m['reason']
    assert 'the excluded pairs hold a slowdown' in m['reason']
    assert res['overall'] != 'PASS'


def test_sides_that_ran_fewer_tests_are_judged_by_what_their_tests_take():
    """Issue 25: after the first look the pairs run only the undecided tests, so their
    sides are short. A full side is not contended for being longer than the median
    side (the rule before: 100 s against a median of 30 s excluded the first 10 pairs);
    a short side whose one test took 4x its usual time still is."""
    def side(p, build, tests):
        return contention.Side(f'{NIGHT}-p{p}', build, sum(t for _, t in tests),
                               tests=tuple(tests))
    full = [('a', 35.0), ('b', 35.0), ('c', 30.0)]
    out = [side(p, b, full) for p in range(10) for b in (BASE, CAND)]
    out += [side(p, b, [('c', 120.0 if (p, b) == (14, CAND) else 30.0 + p % 2)])
            for p in range(10, 20) for b in (BASE, CAND)]
    judged = contention.judge(out, (BASE, CAND), gate.load_config()['contention'])
    assert list(judged.excluded) == [f'{NIGHT}-p14']
    assert '120 s, 4.00x the 30 s its tests take' in judged.excluded[f'{NIGHT}-p14'][0]


def test_a_side_read_from_its_run_report_knows_its_tests_times():
    cases = [{'display_name': f'h5paths_check %benchmark={row}', 'time_run': t,
              'hdf5_build': BASE, 'h5r_context': json.dumps({'pair_id': f'{NIGHT}-p3'})}
             for row, t in (('x', 2.5), ('y', 4.0))]
    report = json.dumps({'session_info': {'time_elapsed': 9.0},
                         'runs': [{'testcases': cases}]})
    s = contention.side_of_report(report, 'r.json')
    assert s.pair_id == f'{NIGHT}-p3' and s.wall_s == 6.5
    assert s.tests == (('h5paths_check %benchmark=x', 2.5), ('h5paths_check %benchmark=y', 4.0))


def test_a_side_keeps_why_its_tests_did_not_pass():
    """A failed test's ReFrame reason, a skipped one's skip_reason (ReFrame's report keeps
    no reason for a skip), the result alone without either; passed tests are not kept.
    A test that failed or skipped before its context was written names its pair in its
    own variable: a side whose every test did so is still a side."""
    cases = [{'display_name': f't{i} %hdf5_build={CAND}', 'hdf5_build': CAND,
              'h5r_context': '{}', 'pair_id': f'{NIGHT}-p1', 'time_run': 1.0, **case}
             for i, case in enumerate([
                 {'result': 'fail', 'fail_reason': 'sanity error: h5paths: ERROR verify'},
                 {'result': 'skip', 'fail_reason': None, 'skip_reason': 'not done'},
                 {'result': 'abort'}])]
    side = contention.side_of_report(json.dumps({'session_info': {'num_cases': 3},
                                                 'runs': [{'testcases': cases}]}), 'r.json')
    assert (side.pair_id, side.build) == (f'{NIGHT}-p1', CAND)
    passed = {'display_name': f't9 %hdf5_build={CAND}', 'hdf5_build': CAND, 'time_run': 1.0,
              'h5r_context': json.dumps({'pair_id': f'{NIGHT}-p1'}), 'result': 'pass'}
    assert contention.side_of_report(json.dumps({
        'session_info': {'num_cases': 4}, 'runs': [{'testcases': cases + [passed]}]}),
        'r.json').not_passed == side.not_passed
    assert side.not_passed == ((f't0 %hdf5_build={CAND}', 'sanity error: h5paths: ERROR verify'),
                               (f't1 %hdf5_build={CAND}', 'not done'),
                               (f't2 %hdf5_build={CAND}', 'abort'))
