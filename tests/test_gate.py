"""h5regress gate: verdicts on known cases, exit codes, canaries, history, bad input."""

import dataclasses
import json
import math
import random
import re

import pytest
import yaml

from h5regress import gate, gateconfig, history, refs
from h5regress.record import Record

BASE, CAND = 'hdf5-1.14.6', 'hdf5-develop'


def rec(value, build, pair, *, op='write', metric='bw_max', api='HDF5', tool='ior',
        hib=True, night='2025-01-10', chash=None, run=None, result='pass', unit='MiB/s',
        commit=None, extra=None):
    params = {'api': api, 'preset': 'collective', 'layout': 'ssf', **(extra or {})}
    prov = {'hdf5_commit': commit or ('b' if build == BASE else 'c')}
    return Record(tool=tool, operation=op, metric=metric, value=value, unit=unit,
                  higher_is_better=hib, params=params, provenance=prov, hdf5_build=build,
                  config_hash=chash or f'h-{tool}-{api}-{op}-{metric}',
                  run_id=run or f'{night}-{build}-{pair}-{tool}-{api}-{op}-{metric}',
                  timestamp=f'{night}T03:00:00+00:00', test=f'ior_check_0a1b2c3d', system='local:default',
                  pair_id=f'{night}-p{pair}' if pair is not None else None, result=result)


def paired(n, ratio, *, cv=0.08, seed=1, level=1000.0, **kw):
    """n A/B pairs, candidate = baseline x ratio, log-normal noise."""
    rng = random.Random(seed)
    s = math.sqrt(math.log1p(cv * cv))
    out = []
    for p in range(n):
        out.append(rec(level * math.exp(rng.gauss(0, s)), BASE, p, **kw))
        out.append(rec(level * ratio * math.exp(rng.gauss(0, s)), CAND, p, **kw))
    return out


def gated(result):
    return [m for m in result['metrics'] if m['role'] == 'gated']


def run(records, **kw):
    return gate.run_gate(records, BASE, CAND, gate.load_config(), **kw)


def write_jsonl(path, records, extra_lines=()):
    path.write_text('\n'.join([r.to_json() for r in records] + list(extra_lines)) + '\n')
    return str(path)


# ------------------------------------------------------------------ verdicts
def test_identical_samples_pass_not_fail():
    recs = []
    for p in range(10):
        recs += [rec(1000.0, BASE, p), rec(1000.0, CAND, p)]
    res = run(recs)
    (m,) = gated(res)
    assert m['verdict'] == 'PASS'
    assert res['overall'] == 'PASS' and res['exit_code'] == gate.EXIT_PASS


def test_a_against_a_is_never_fail():
    for seed in range(20):
        res = run(paired(20, 1.0, seed=seed))
        assert gated(res)[0]['verdict'] in ('PASS', 'INCONCLUSIVE', 'NO-SLOWDOWN-SEEN')


def test_thirty_percent_slowdown_with_20_pairs_fails():
    res = run(paired(20, 0.7))
    (m,) = gated(res)
    assert m['verdict'] == 'FAIL'
    assert m['ratio'] == pytest.approx(0.7, abs=0.05)
    assert m['ratio_lo'] < m['ratio'] < m['ratio_hi'] < 0.95
    assert res['exit_code'] == gate.EXIT_FAIL


def test_improvement_passes():
    (m,) = gated(run(paired(20, 1.3)))
    assert m['verdict'] == 'PASS'


def test_few_pairs_are_inconclusive():
    res = run(paired(4, 0.7))
    assert gated(res)[0]['verdict'] == 'INCONCLUSIVE'
    assert res['exit_code'] == gate.EXIT_INCONCLUSIVE


def test_lower_is_better_direction():
    # a time: the candidate takes 30 % longer -> slower -> FAIL; 30 % less -> PASS
    slower = paired(20, 1.3, metric='time', op='write', hib=False)
    res = gate.run_gate(slower, BASE, CAND, dict(gate.load_config(),
                                                  gated=[{'tool': 'ior', 'metric': 'time'}]))
    (m,) = gated(res)
    assert m['verdict'] == 'FAIL'
    assert m['ratio'] == pytest.approx(1.3, abs=0.08)       # value ratio cand/base
    assert m['perf_ratio'] == pytest.approx(1 / 1.3, abs=0.05)
    assert m['ratio_lo'] <= m['ratio'] <= m['ratio_hi']
    faster = paired(20, 0.7, metric='time', op='write', hib=False)
    res = gate.run_gate(faster, BASE, CAND, dict(gate.load_config(),
                                                  gated=[{'tool': 'ior', 'metric': 'time'}]))
    assert gated(res)[0]['verdict'] == 'PASS'


def test_a_memory_that_grows_fails_in_the_words_of_memory():
    """A peak memory that grew (lower is better, no speed): FAIL, its reason says
    regression, not slowdown, and which way its ratios go; the report's sentence gives
    the multiple of the baseline's memory, not a time it took."""
    from h5regress.report.text import slowdown_words
    grown = paired(10, 3.0, cv=0.01, op='reopen_read', metric='peak_rss', hib=False,
                   unit='MiB')
    res = gate.run_gate(grown, BASE, CAND, dict(gate.load_config(),
                                                 gated=[{'tool': 'ior', 'metric': 'peak_rss'}]))
    (m,) = gated(res)
    assert m['verdict'] == 'FAIL' and m['ratio'] == pytest.approx(3.0, rel=0.02)
    assert m['reason'].startswith('significant regression (BH q=')
    assert 'slow' not in m['reason']
    assert m['reason'].endswith("[lower is better: the ratios in this reason are the "
                                "baseline's figure over the candidate's]")
    from h5regress.report.text import summary
    assert summary(res).startswith('FAIL: 1 of 1 gated metrics worse than the 5% margin allows')
    # a suspected one is still heard of in the report, in either words
    from h5regress.report.text import _suspected
    assert _suspected({'reason': 'regression suspected (q=0.004): more pairs decide'})
    said = slowdown_words(m)
    assert re.search(r"reopen_read peak_rss: 3\.0\dx the baseline's \(performance", said)
    assert 'as long' not in said


def test_significant_but_within_margin_is_not_fail():
    recs = paired(40, 0.98, cv=0.01)
    (m,) = gated(run(recs))
    assert m['q'] < 0.01
    assert m['verdict'] != 'FAIL'


def from_log_ratios(d):
    recs = []
    for p, x in enumerate(d):
        recs += [rec(1000.0, BASE, p), rec(1000.0 * math.exp(x), CAND, p)]
    return recs


def test_early_looks_need_strong_evidence():
    cfg = gate.load_config()
    cfg['tonight_t_test'] = {'min_pairs': 10, 'below_pairs': 0}   # signed rank at every n
    # 8 of 10 pairs slower, T+ = 1 + 2 = 3: exact one-sided p = 5/1024
    d = [-0.12, -0.13, -0.14, -0.11, -0.15, -0.16, -0.10, -0.17, 0.01, 0.02]
    moderate = gate.run_gate(from_log_ratios(d), BASE, CAND, cfg, looks=[10, 15, 20])
    (m,) = gated(moderate)
    assert m['p_worse'] == pytest.approx(5 / 1024)
    # the first of three looks spends alpha * (10/20)^2 = 0.0025
    assert m['verdict'] == 'INCONCLUSIVE' and 'more pairs' in m['reason']
    assert gated(gate.run_gate(from_log_ratios(d), BASE, CAND, cfg))[0]['verdict'] == 'FAIL'
    strong = gate.run_gate(paired(10, 0.5, cv=0.05), BASE, CAND, cfg, looks=[10, 15, 20])
    assert gated(strong)[0]['verdict'] == 'FAIL'


def test_unpaired_records_fall_back_to_rank_sum():
    recs = paired(15, 0.7)
    for r in recs:
        r.pair_id = None
    (m,) = gated(run(recs))
    assert m['method'] == 'rank-sum' and m['verdict'] == 'FAIL'


def test_bh_across_metrics():
    recs = []
    for i in range(10):
        recs += paired(20, 0.7 if i == 0 else 1.0, seed=i, extra={'block': i},
                       chash=f'h{i}', night='2025-01-10')
    for i, r in enumerate(recs):
        r.run_id = f'r{i}'
    res = run(recs)
    ms = gated(res)
    assert len(ms) == 10
    ps = sorted(m['p_worse'] for m in ms)
    qs = sorted(m['q'] for m in ms)
    assert qs[0] == pytest.approx(min(1.0, ps[0] * 10))
    assert [m['verdict'] for m in ms].count('FAIL') == 1


# ------------------------------------------------------------------ roles, canary, fio
def night_with_canary(ratio=1.0, canary_level=1.0, night='2025-01-10', seed=1):
    recs = paired(20, ratio, seed=seed, level=900.0, night=night)
    recs += paired(6, 1.0, seed=seed + 100, api='MPIIO', level=1000.0 * canary_level,
                   night=night)
    recs += paired(3, 1.0, seed=seed + 200, tool='fio', metric='bw', api='-',
                   level=2000.0, night=night)
    return recs


def test_roles_canary_ratio_and_fio_ceiling():
    res = run(night_with_canary())
    roles = {m['config_hash']: m['role'] for m in res['metrics']}
    assert roles['h-ior-HDF5-write-bw_max'] == 'gated'
    assert roles['h-ior-MPIIO-write-bw_max'] == 'canary'
    assert roles['h-fio---write-bw'] == 'control'
    (c,) = res['canary']
    assert c['cand']['ratio'] == pytest.approx(0.9, abs=0.06)
    assert c['verdict'] == 'OK'
    (f,) = res['ceiling']
    assert f['fraction'] == pytest.approx(0.45, abs=0.05)
    slow = run(night_with_canary(ratio=0.75))
    assert slow['canary'][0]['verdict'] == 'WARN'
    assert 'worth a look' in slow['canary'][0]['reason']


def fill_history(root, nights, canary_level=1.0, ratio=1.0, start=1):
    for k in range(start, start + nights):
        night = f'2025-01-{k:02d}'
        res = run(night_with_canary(ratio=ratio, canary_level=canary_level, night=night,
                                    seed=k),
                  history=history.load(root, exclude_night=night))
        header, lines = gate.history_lines(res)
        history.write_night(root, header, lines)


def test_degraded_canary_stops_the_verdict(tmp_path):
    fill_history(tmp_path, 8)
    hist = history.load(tmp_path)
    assert len(hist) == 8
    res = run(night_with_canary(ratio=0.6, canary_level=0.5, night='2025-01-20'),
              history=hist)
    assert res['overall'] == 'DEGRADED' and res['exit_code'] == gate.EXIT_DEGRADED
    assert any(d['degraded'] for d in res['degraded'])
    ok = run(night_with_canary(night='2025-01-20'), history=hist)
    assert ok['overall'] != 'DEGRADED'


def test_change_point_reported_with_commit_range(tmp_path):
    for k in range(1, 21):
        night = f'2025-02-{k:02d}'
        ratio = 1.0 if k <= 12 else 0.85
        recs = paired(20, ratio, seed=k, night=night, commit=f'c{k}')
        for r in recs:
            if r.hdf5_build == BASE:
                r.provenance['hdf5_commit'] = 'b0'
        res = run(recs, history=history.load(tmp_path))
        history.write_night(tmp_path, *gate.history_lines(res))
    cps = res['change_points']
    assert len(cps) == 1
    assert (cps[0]['from_commit'], cps[0]['to_commit']) == ('c12', 'c13')
    assert cps[0]['direction'] == 'worse'
    assert cps[0]['ratio'] == pytest.approx(0.85, abs=0.04)


def test_a_time_that_grows_is_a_change_point_toward_slower(tmp_path):
    """A lower-is-better metric (a time) 1/0.85 as long from night 13 on: the night's
    ratio of the values goes up, and the change point says slower (worse), not better."""
    for k in range(1, 21):
        night = f'2025-02-{k:02d}'
        recs = paired(20, 1.0 if k <= 12 else 1 / 0.85, seed=k, night=night,
                      commit=f'c{k}', hib=False, unit='s', level=10.0)
        res = run(recs, history=history.load(tmp_path))
        history.write_night(tmp_path, *gate.history_lines(res))
    (cp,) = res['change_points']
    assert cp['direction'] == 'worse' and (cp['from_commit'], cp['to_commit']) == ('c12', 'c13')


def test_a_move_of_the_machine_is_no_change_point_of_the_candidate(tmp_path):
    """Both builds 1/3 slower from night 13 on (the file system, not HDF5): the pairs
    cancel it, so the history of the candidate against the baseline has no change point
    (Otava on the candidate's medians reported one here)."""
    for k in range(1, 21):
        night = f'2025-02-{k:02d}'
        recs = paired(20, 1.0, seed=k, night=night, commit=f'c{k}',
                      level=900.0 if k <= 12 else 600.0)
        res = run(recs, history=history.load(tmp_path))
        history.write_night(tmp_path, *gate.history_lines(res))
    assert res['change_points'] == []


def test_creep_no_night_fails_is_reported_as_a_change_point(tmp_path):
    """1 %/night from night 31 on: each night is within the margin of the last (no
    FAIL for it), but the history view names the drift (Otava, h5regress.creep)."""
    flagged = None
    for k in range(1, 46):
        night = f'2025-{1 + (k - 1) // 28:02d}-{1 + (k - 1) % 28:02d}'
        ratio = 1.0 if k <= 30 else 0.99 ** (k - 30)
        recs = paired(20, 1.0, cv=0.03, seed=k, night=night, commit=f'c{k}')
        for r in recs:           # the candidate's level creeps; the baseline stays
            if r.hdf5_build == CAND:
                r.value *= ratio
        res = run(recs, history=history.load(tmp_path))
        history.write_night(tmp_path, *gate.history_lines(res))
        worse = [c for c in res['change_points'] if c['direction'] == 'worse']
        if worse and flagged is None:
            flagged = k
            assert int(worse[0]['to_commit'][1:]) > 30, worse
    # within 7 nights of creep (the windowed Welch test of before took 8 here)
    assert flagged is not None and flagged <= 30 + 7, flagged


def test_false_alarms_counted_on_a_a_nights(tmp_path):
    recs = paired(20, 0.7, commit='same')
    res = run(recs)
    assert res['a_a']
    (m,) = gated(res)
    assert m['verdict'] == 'FAIL' and m['false_alarm']
    assert res['false_alarms']['per_night'] == {'nights': 1, 'with_false_alarm': 1, 'rate': 1.0}
    history.write_night(tmp_path, *gate.history_lines(res))
    res2 = run(paired(20, 1.0, commit='same', night='2025-01-11', seed=9),
               history=history.load(tmp_path))
    pn = res2['false_alarms']['per_night']
    assert pn['nights'] == 2 and pn['with_false_alarm'] == 1


def test_reference_envelope_applied(tmp_path):
    (tmp_path / 'ior.yaml').write_text(
        "ior_check:\n  $index: ['$partition', 'case']\n  'local:default':\n"
        "    'HDF5-collective-ssf':\n      write_bw_max: [1000, -0.1, 0.1, 'MiB/s']\n")
    R = refs.References.load([tmp_path])
    res = run(paired(20, 0.7), references=R)
    (m,) = gated(res)
    assert m['envelope']['status'] == 'below' and m['envelope']['worse']
    (m,) = gated(run(paired(20, 1.0), references=R))
    assert m['envelope']['status'] == 'inside'


# ------------------------------------------------------------------ bad input
def test_malformed_and_partial_records_are_skipped_and_counted(tmp_path):
    recs = paired(20, 0.7)
    recs.append(rec(-5.0, CAND, 99))                      # non-positive
    recs.append(recs[0])                                   # duplicate run
    recs.append(rec(800.0, CAND, 50))                      # pair without a baseline
    bad = ['{not json', '{"tool": "ior"}', '[1, 2]',
           json.dumps({**recs[1].to_dict(), 'value': 'fast'})]
    path = write_jsonl(tmp_path / 'r.jsonl', recs, bad)
    records, problems = gate.load_records([path])
    assert len(problems) == 4
    res = gate.run_gate(records, BASE, CAND, gate.load_config(), problems=problems)
    c = res['counts']
    assert (c['malformed'], c['non_positive'], c['duplicates']) == (4, 1, 1)
    (m,) = gated(res)
    assert m['incomplete_pairs'] == 1 and m['n_pairs'] == 20
    assert m['verdict'] == 'FAIL'


def test_perf_fail_records_are_samples():
    recs = paired(20, 0.7)
    for r in recs:
        if r.hdf5_build == CAND:
            r.result = 'perf_fail'
    res = run(recs)
    assert res['counts']['perf_fail_samples'] == 20
    assert gated(res)[0]['verdict'] == 'FAIL'


def test_a_gated_row_without_candidate_samples_is_an_error():
    # issue 25: every candidate run of a gated row failed sanity (no record) or measured
    # <= 0 while the baseline has samples: the row was INCONCLUSIVE ("no candidate
    # samples"), so the nightly ran to its cap and a broken benchmark never FAILed
    broken = [r for r in paired(10, 1.0) if r.hdf5_build == BASE]
    broken += [rec(0.0, CAND, p) for p in (2, 5, 7)]
    fine = paired(10, 1.0, seed=4, tool='h5bench', metric='observed_rate',
                  extra={'benchmark': 'write'})
    res = run(broken + fine)
    assert res['overall'] == 'ERROR' and res['exit_code'] == gate.EXIT_ERROR
    rows = {m['tool']: m for m in gated(res)}
    assert rows['h5bench']['verdict'] != 'ERROR'
    m = rows['ior']
    assert m['verdict'] == 'ERROR' and m['n_base'] == 10 and m['n_cand'] == 0
    assert m['reason'].startswith('no candidate samples: 10 candidate run(s) failed '
                                  '(3 measured <= 0, 7 left no record')
    assert 'against 10 baseline run(s)' in m['reason']
    # the night's error names the row and the count
    assert f'{m["label"]}: no candidate samples: 10 candidate run(s) failed' in res['error']
    assert res['counts']['non_positive'] == 3
    # a baseline without samples is no build breaking a benchmark: more pairs may come
    (m,) = gated(run([r for r in paired(10, 1.0) if r.hdf5_build == CAND]))
    assert m['verdict'] == 'INCONCLUSIVE' and m['reason'] == 'no baseline samples'


def test_a_test_that_left_no_record_on_either_build_is_named_not_judged():
    """A row skipped on both builds (the -cmd- rows on an HDF5 that reads metadata on
    every rank) left no record: it vanished from the night without a word. The result
    names it and what each build's runs said; the text says NOT JUDGED."""
    recs = paired(10, 1.0)
    cmd = 'h5paths_check %benchmark=open-close-cmd'
    why = 'h5paths: --coll-metadata not done: HDF5 1.10.8 did metadata I/O independently'
    sides = [gate.contention.Side(f'2025-01-10-p{p}', build, 10.0, not_passed=(
        (f'{cmd} %hdf5_build={build}', why),)) for p in range(10) for build in (BASE, CAND)]
    res = run(recs, sides=sides)
    assert res['not_judged'] == [{'test': cmd, 'baseline': f'{why} (10 run(s))',
                                  'candidate': f'{why} (10 run(s))'}]
    assert f'NOT JUDGED   {cmd}: no record of either build' in gate.format_text(res)
    from h5regress.report.text import _skipped_text
    assert f'Not judged, no record of either build (1): {cmd} (baseline: {why}' in \
        _skipped_text(res)
    assert run(recs)['not_judged'] == []


def test_a_candidate_that_ran_and_left_no_record_at_all_is_judged_not_refused():
    """Every run of the candidate left no record (the one row of a replay skipped on
    it): a usage error "no record has this build" ended the night without a verdict.
    The run reports show it ran (their sides): the gate judges, the row is an ERROR."""
    base_only = [r for r in paired(10, 1.0) if r.hdf5_build == BASE]
    attempt = base_only[0].pair_id.rsplit('-p', 1)[0]
    with pytest.raises(gate.UsageError, match=f"--candidate '{CAND}': no record has"):
        gate.check_builds(base_only, BASE, CAND, attempt)
    # a side of another attempt is not tonight's
    with pytest.raises(gate.UsageError, match='no record has this build'):
        gate.check_builds(base_only, BASE, CAND, attempt, ran=[('other-p01', CAND)])
    gate.check_builds(base_only, BASE, CAND, attempt,
                      ran=[(f'{attempt}-p{i:02d}', b) for i in (1, 2) for b in (BASE, CAND)])
    (m,) = gated(run(base_only))
    assert m['verdict'] == 'ERROR' and m['reason'].startswith('no candidate samples')



def test_a_row_without_samples_of_a_build_says_what_that_builds_runs_said():
    """The gate's ERROR names what the candidate's runs of the row's test said (their
    run reports: a failure reason, or the check's skip_reason), the most frequent
    first; another test's words and the baseline's are not the row's. A row without
    baseline samples says what the baseline's runs said."""
    base_only = [r for r in paired(10, 1.0) if r.hdf5_build == BASE]
    test = base_only[0].test
    skip = 'h5paths: --coll-metadata not done: HDF5 1.10.5 did metadata I/O independently'
    sides = [gate.contention.Side(f'2025-01-10-p{p}', CAND, 10.0, not_passed=(
        (f'{test} %hdf5_build={CAND}', skip if p < 9 else 'sanity: exit 1'),
        ('other_check %hdf5_build=x', 'not this row'))) for p in range(10)]
    sides.append(gate.contention.Side('2025-01-10-p0', BASE, 10.0,
                                      not_passed=((test, 'the baseline\'s'),)))
    (m,) = gated(run(base_only, sides=sides, attempt='2025-01-10'))
    assert m['verdict'] == 'ERROR'
    assert m['reason'].endswith(f"; the candidate's runs said: {skip} (9 run(s)); "
                                'sanity: exit 1 (1 run(s))')
    (m,) = gated(run(base_only))     # no sides: the gate's words alone
    assert m['reason'].endswith('more pairs will not decide it')
    # a fix's replay: the baseline (the broken parent) left no samples, the candidate did
    cand_only = [r for r in paired(10, 1.0) if r.hdf5_build == CAND]
    sides = [gate.contention.Side(f'2025-01-10-p{p}', BASE, 10.0, not_passed=(
        (f'{test} %hdf5_build={BASE}', skip),)) for p in range(10)]
    (m,) = gated(run(cand_only, sides=sides))
    assert (m['verdict'], m['reason']) == (
        'INCONCLUSIVE', f"no baseline samples; the baseline's runs said: {skip} (10 run(s))")


# ------------------------------------------------------------------ CLI and exit codes
def cli(tmp_path, records, *extra):
    path = write_jsonl(tmp_path / 'night.jsonl', records)
    return gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                           '--refs', '--quiet', *extra])


def test_exit_codes(tmp_path, capsys):
    assert cli(tmp_path, paired(20, 1.3)) == 0
    assert cli(tmp_path, paired(20, 0.7)) == 1
    assert cli(tmp_path, paired(4, 1.0)) == 2
    # nothing gated (only fio): ERROR
    assert cli(tmp_path, paired(5, 1.0, tool='fio', metric='bw')) == 4
    # usage errors are 64 (EX_USAGE), never argparse's 2 (= INCONCLUSIVE); input is 4
    assert gate.main_gate(['--baseline', BASE]) == 64
    assert gate.main_gate(['--bogus']) == 64
    assert gate.main_gate(['--baseline', BASE, '--candidate', CAND,
                           '--records', str(tmp_path / 'missing.jsonl')]) == 4
    assert gate.main_gate(['--baseline', BASE, '--candidate', BASE, '--records', 'x']) == 64
    assert gate.main_gate(['--help']) == 0
    assert 'exit codes' in capsys.readouterr().out


def test_looks_are_validated_on_the_command_line_and_in_the_config(tmp_path, capsys):
    assert gate.looks_arg('10,15,20') == [10, 15, 20]
    assert cli(tmp_path, paired(20, 0.7), '--looks', '10,15,20') == 1
    assert cli(tmp_path, paired(20, 0.7), '--looks', '20,10') == 64
    assert 'increasing' in capsys.readouterr().err
    cfg = tmp_path / 'gate.yaml'
    cfg.write_text('looks: [10, ten]\n')
    with pytest.raises(gate.ConfigError, match=r"gate.yaml: key 'looks'.*ten"):
        gate.load_config(cfg)
    cfg.write_text('looks: [10, 15, 20]\n')
    assert gate.load_config(cfg)['looks'] == [10, 15, 20]


def test_exit_code_degraded_via_cli(tmp_path):
    hdir = tmp_path / 'hist'
    fill_history(hdir, 8)
    path = write_jsonl(tmp_path / 'n.jsonl',
                       night_with_canary(canary_level=0.5, night='2025-01-20'))
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                         '--history', str(hdir), '--refs', '--quiet'])
    assert rc == 3


def test_cli_appends_history_and_writes_json(tmp_path, monkeypatch):
    hdir = tmp_path / 'hist'
    monkeypatch.setenv('H5REGRESS_HISTORY', str(hdir))
    path = write_jsonl(tmp_path / 'n.jsonl', paired(20, 1.0))
    out = tmp_path / 'gate.json'
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                         '--append-history', '--json', str(out), '--refs', '--quiet'])
    assert rc in (0, 2)
    assert json.loads(out.read_text())['night'] == '2025-01-10'
    hist = history.load(hdir)
    assert hist.night_ids() == ['2025-01-10']
    key = gated(json.loads(out.read_text()))[0]['key']
    base, cand = hist.samples(key, 0)
    assert len(base) == len(cand) == 20
    assert hist.meta(key)['tool'] == 'ior'
    # gating the same night again keeps both, and does not see itself as history
    rc = gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                         '--append-history', '--refs', '--quiet'])
    assert history.load(hdir).night_ids() == ['2025-01-10', '2025-01-10+2']
    assert not list((hdir / 'nights').glob('.*.tmp'))


def test_bad_config_is_an_error(tmp_path):
    cfgfile = tmp_path / 'gate.yaml'
    cfgfile.write_text('margin: 2\n')
    path = write_jsonl(tmp_path / 'n.jsonl', paired(10, 1.0))
    assert gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                           '--config', str(cfgfile)]) == 4
    cfgfile.write_text('gated: [{tool: ior, metrc: bw}]\n')
    with pytest.raises(gate.ConfigError, match=r'gated\[0\]'):
        gate.load_config(cfgfile)


def test_repo_gate_config_loads():
    cfg = gate.load_config()
    assert cfg['margin'] == 0.05
    assert gate.role_of(cfg, 'ior', 'write', 'bw_max', {'api': 'HDF5'}) == 'gated'
    assert gate.role_of(cfg, 'ior', 'write', 'bw_max', {'api': 'MPIIO'}) == 'canary'
    # one primary metric per test: IOR's read bandwidth and its other write statistics
    # are reported, not gated (the best repetition is the quietest: ci/gate.yaml)
    assert gate.role_of(cfg, 'ior', 'read', 'bw_max', {'api': 'HDF5'}) == 'reported'
    assert gate.role_of(cfg, 'ior', 'write', 'bw_mean', {'api': 'HDF5'}) == 'reported'
    assert gate.role_of(cfg, 'flash-io', 'checkpoint', 'bw', {'api': 'hdf5'}) == 'gated'



def test_the_shipped_file_is_the_one_source_of_the_config():
    shipped = yaml.safe_load(gateconfig.CONFIG_FILE.read_text())
    assert gate.load_config() == shipped
    assert not hasattr(gate, 'DEFAULTS')
    assert len(gate.load_config()["gated"]) == len(shipped["gated"]) == 19


def test_a_site_config_is_layered_over_the_shipped_one(tmp_path):
    shipped = gate.load_config()
    site = tmp_path / 'site.yaml'
    site.write_text('margin: 0.1\ndegraded: {drop: 0.3}\nceiling: {tool: fio, metric: bw}\n'
                    'refs: {index: {ior_check: [$partition]}}\n')
    cfg = gate.load_config(site)
    assert cfg['margin'] == 0.1
    assert cfg['degraded'] == dict(shipped['degraded'], drop=0.3)     # key by key
    assert cfg['ceiling'] == {'tool': 'fio', 'metric': 'bw'}          # a rule: replaced
    assert cfg['refs'] == {'index': {'ior_check': ['$partition']}}
    for key in set(shipped) - {'margin', 'degraded', 'ceiling', 'refs'}:
        assert cfg[key] == shipped[key], key                          # from the shipped file
    site.write_text('')
    assert gate.load_config(site) == shipped


@pytest.mark.parametrize('text,where', [
    ('marign: 0.1\n', "unknown key 'marign'"),
    ('degraded: {dorp: 0.3}\n', "unknown key 'degraded.dorp'"),
    ('degraded: {drop: lots}\n', "key 'degraded.drop' must be a number"),
    ('history_variance: {enabled: maybe}\n', "key 'history_variance.enabled' must be a boolean"),
    ('degraded: 0.3\n', "key 'degraded' must be a mapping"),
    ('gated: {tool: ior}\n', "key 'gated' must be a list"),
    ('ceiling: {tool: fio, metrc: bw}\n', 'key ceiling: unknown field'),
    ('canary: [{tool: ior, params: [api]}]\n', r'key canary\[0\]\.params'),
    ('- margin\n', 'top level must be a mapping'),
    ('margin: [0.1\n', 'not valid YAML'),
])
def test_a_bad_site_config_names_the_file_and_the_key(tmp_path, capsys, text, where):
    site = tmp_path / 'site.yaml'
    site.write_text(text)
    with pytest.raises(gate.ConfigError, match=f'site.yaml: .*{where}'):
        gate.load_config(site)
    path = write_jsonl(tmp_path / 'n.jsonl', paired(10, 1.0))
    assert gate.main_gate(['--baseline', BASE, '--candidate', CAND, '--records', path,
                           '--config', str(site), '--refs', '--quiet']) == gate.EXIT_ERROR
    assert 'site.yaml' in capsys.readouterr().err


# ------------------------------------------------------- variance from history
def aa_history(root, nights, cv=0.08, n=20, start=1, strip_lr=False):
    """``nights`` A/A-like nights of one gated metric written as the gate writes them."""
    for k in range(start, start + nights):
        night = f'2025-03-{k:02d}'
        res = run(paired(n, 1.0, cv=cv, seed=100 + k, night=night), history=history.load(root))
        header, lines = gate.history_lines(res)
        if strip_lr:                       # a night written before lr_n / lr_var existed
            lines = [{k2: v for k2, v in m.items() if k2 not in ('lr_n', 'lr_var')}
                     for m in lines]
        history.write_night(root, header, lines)


def test_history_stores_pair_log_ratio_variance(tmp_path):
    aa_history(tmp_path, 1)
    (row,) = history.load(tmp_path).series.values()
    assert row[0]['lr_n'] == 20 and 0.002 < row[0]['lr_var'] < 0.03


def test_without_enough_history_signed_rank_is_used(tmp_path):
    aa_history(tmp_path, 3)
    res = run(paired(20, 0.9, seed=77, night='2025-04-01'), history=history.load(tmp_path))
    (m,) = gated(res)
    assert m['method'] == 'exact'
    assert m['variance']['source'] == 'tonight' and 'history too short' in m['variance']['note']
    (m,) = gated(run(paired(20, 0.9, seed=77, night='2025-04-01')))
    assert m['variance']['note'].startswith('no history')


def test_pooled_variance_used_and_recorded(tmp_path):
    aa_history(tmp_path, 12)
    hist = history.load(tmp_path)
    res = run(paired(20, 0.88, seed=78, night='2025-04-01'), history=hist)
    (m,) = gated(res)
    v = m['variance']
    assert m['method'] == 'pooled-t' and v['source'] == 'history'
    assert v['pooled_nights'] == 12 and v['pooled_df'] == 12 * 19
    assert v['pooled_sigma'] == pytest.approx(math.sqrt(2) * 0.08, rel=0.2)
    assert v['p_F'] > 0.05 and 'pooled-t' in v['note']
    assert m['verdict'] == 'FAIL'
    # the JSON result carries it
    assert json.loads(gate.dumps(res))['metrics'][0]['variance']['source'] == 'history'
    # the mean log-ratio, with the history's sigma: a t interval of half-width t*sigma/sqrt(n)
    half = math.log(m['ratio_hi'] / m['ratio_lo']) / 2
    assert half == pytest.approx(2 * 0.0 + gate.stats.t_ppf(0.975, v['pooled_df'])
                                 * v['pooled_sigma'] / math.sqrt(20), rel=1e-4)


def test_night_noisier_than_history_falls_back(tmp_path):
    aa_history(tmp_path, 12, cv=0.04)
    res = run(paired(20, 1.0, cv=0.12, seed=79, night='2025-04-01'),
              history=history.load(tmp_path))
    (m,) = gated(res)
    v = m['variance']
    assert m['method'] == 'exact' and v['source'] == 'tonight'
    assert v['F'] > 4 and v['p_F'] < 0.05
    assert 'noisier than its history' in v['note']
    assert v['pooled_sigma'] == pytest.approx(math.sqrt(2) * 0.04, rel=0.25)


def test_old_history_nights_still_read_and_pooled_from_samples(tmp_path):
    aa_history(tmp_path, 10, strip_lr=True)
    hist = history.load(tmp_path)
    assert not hist.problems
    assert all('lr_var' not in x for rows in hist.series.values() for x in rows)
    res = run(paired(20, 1.0, seed=80, night='2025-04-01'), history=hist)
    (m,) = gated(res)
    assert m['method'] == 'pooled-t' and m['variance']['pooled_nights'] == 10
    # same pool as from nights that carry lr_n / lr_var
    new = tmp_path / 'new'
    aa_history(new, 10)
    (m2,) = gated(run(paired(20, 1.0, seed=80, night='2025-04-01'),
                      history=history.load(new)))
    assert m2['variance']['pooled_sigma'] == pytest.approx(m['variance']['pooled_sigma'])


def test_history_variance_can_be_disabled(tmp_path):
    aa_history(tmp_path, 10)
    cfg = gate.load_config()
    cfg['history_variance'] = dict(cfg['history_variance'], enabled=False)
    res = gate.run_gate(paired(20, 1.0, seed=81, night='2025-04-01'), BASE, CAND, cfg,
                        history=history.load(tmp_path))
    assert gated(res)[0]['method'] == 'exact'


def test_a_against_a_with_history_is_not_fail(tmp_path):
    aa_history(tmp_path, 10)
    hist = history.load(tmp_path)
    for seed in range(20):
        (m,) = gated(run(paired(20, 1.0, seed=200 + seed, night='2025-04-01'), history=hist))
        assert m['verdict'] != 'FAIL'


def with_flush(records, base_flush, cand_flush):
    """The records with ``write_flush`` of their figure set per side (None: no key)."""
    for r in records:
        flush = base_flush if r.hdf5_build == BASE else cand_flush
        if flush is not None:
            r.provenance['write_flush'] = {f'{r.operation} {r.metric}': flush}
    return records


def test_a_gated_metric_whose_sides_disagree_on_write_flush_is_error(tmp_path, capsys):
    # the candidate's figures end in the page cache, the baseline's after an fsync: the
    # candidate looks 2x faster, which is no HDF5 change at all
    records = with_flush(paired(20, 2.0, seed=3), 'fsync', 'none')
    result = run(records)
    [m] = gated(result)
    assert m['verdict'] == 'ERROR'
    assert 'baseline fsync' in m['reason'] and 'candidate none' in m['reason']
    assert m['write_flush'] == {'baseline': ['fsync'], 'candidate': ['none']}
    assert result['overall'] == 'ERROR' and result['exit_code'] == gate.EXIT_ERROR
    assert 'baseline fsync, candidate none' in result['error']
    assert cli(tmp_path, records) == gate.EXIT_ERROR
    assert 'write_flush differs' in capsys.readouterr().out


def test_a_side_without_write_flush_against_one_with_it_is_error():
    result = run(with_flush(paired(20, 1.0), None, 'fsync'))
    [m] = gated(result)
    assert m['verdict'] == 'ERROR' and 'baseline unrecorded, candidate fsync' in m['reason']


def test_a_gated_write_figure_in_the_page_cache_is_said_to_be_not_flushed():
    result = run(with_flush(paired(20, 1.0, cv=0.02), 'none', 'none'))
    [m] = gated(result)
    assert m['verdict'] == 'PASS' and m['write_flush'] == 'none' and m['flushed'] is False
    assert gate.NOT_FLUSHED in m['reason']
    assert result['not_flushed'] == [m['label']] and result['overall'] == 'PASS'
    assert 'NOT FLUSHED' in gate.format_text(result)


def test_flushed_figures_are_judged_as_before():
    result = run(with_flush(paired(20, 1.0, cv=0.02), 'fsync', 'fsync'))
    [m] = gated(result)
    assert m['verdict'] == 'PASS' and m['write_flush'] == 'fsync' and m['flushed'] is True
    assert gate.NOT_FLUSHED not in m['reason'] and result['not_flushed'] == []


def test_a_gate_request_carries_the_margin_as_a_float_to_the_verdict(tmp_path, capsys):
    # issue 26: the nightly and the bisect call the gate with a typed request, not argv;
    # the margin stays a float from the request to the verdict and gate.json
    path = write_jsonl(tmp_path / 'n.jsonl', paired(20, 0.90, cv=0.02, seed=2))
    out = tmp_path / 'gate.json'
    request = gate.GateRequest(baseline=BASE, candidate=CAND, records=[path], refs=[],
                               json=str(out), quiet=True, looks=(10, 15, 20), pairs_run=20)
    assert gate.gate_request(request) == gate.EXIT_FAIL
    wide = dataclasses.replace(request, margin=0.2)
    assert gate.gate_request(wide) == gate.EXIT_PASS
    result = json.loads(out.read_text())
    assert result['config']['margin'] == 0.2 and isinstance(result['config']['margin'], float)
    assert result['config']['looks'] == [10, 15, 20]
    assert gate.gate_request(dataclasses.replace(request, candidate=BASE)) == gate.EXIT_USAGE
    assert 'both name' in capsys.readouterr().err


# ------------------------------------------- the margin in one typed object (issue 26)
def test_the_margin_is_a_float_of_one_typed_config_from_file_to_verdict(tmp_path, monkeypatch):
    cfg = gate.load_config()
    assert isinstance(cfg, gate.GateConfig) and isinstance(cfg.margin, float)
    assert cfg['margin'] is cfg.margin and dict(cfg)['margin'] == 0.05
    with pytest.raises(gate.ConfigError, match='--margin must be in'):
        cfg.with_overrides(margin=1.5)
    # a request carries the loaded configuration; its margin reaches the verdict as given
    path = write_jsonl(tmp_path / 'r.jsonl', paired(20, 0.85, cv=0.02, seed=4))
    out = tmp_path / 'gate.json'
    request = gate.GateRequest(baseline=BASE, candidate=CAND, records=[path], json=str(out),
                               quiet=True, gate_config=cfg.with_overrides(margin=0.2))
    assert gate.gate_request(request) == gate.EXIT_PASS
    result = json.loads(out.read_text())
    assert result['config']['margin'] == 0.2
    (m,) = gated(result)
    assert m['verdict_bound']['side'] == 'lower' and m['verdict_bound']['perf_ratio'] > 0.8
    # the nightly calls the gate in-process with the configuration it loaded once
    from h5regress import nightly
    args = nightly.parse_args(['--stand-in', '--margin', '0.1', '--out', str(tmp_path / 'n')])
    seen = []
    monkeypatch.setattr(nightly.gate, 'gate_request',
                        lambda request: seen.append(request) or gate.EXIT_FAIL)
    nightly.gate_once('a', 'b', args, final=True)
    nightly.gate_once('a', 'b', args, final=True)
    assert [r.gate_config.margin for r in seen] == [0.1, 0.1]
    assert seen[0].gate_config is seen[1].gate_config and seen[0].margin is None


def test_each_verdict_carries_the_bound_it_compared_and_the_report_reads_it():
    from h5regress.report import text
    (fail,) = gated(run(paired(20, 0.7)))
    assert fail['verdict'] == 'FAIL' and fail['verdict_bound']['side'] == 'upper'
    assert fail['verdict_bound']['ratio'] == fail['fail_bound']
    assert f'{fail["verdict_bound"]["perf_ratio"]:.3f}' in fail['reason']
    (lower,) = gated(run(paired(20, 1 / 0.7, hib=False)))     # a time: lower is better
    assert lower['verdict_bound']['ratio'] == pytest.approx(
        1 / lower['verdict_bound']['perf_ratio'], rel=1e-5)
    # the report takes the field, not the reason's words
    reworded = dict(fail, reason='FAIL', verdict_bound=dict(fail['verdict_bound'],
                                                            perf_ratio=0.5, confidence=0.99))
    assert text.verdict_bound(reworded) == 'upper bound 0.500 at 99 %'


def test_the_simulated_bisect_step_judges_at_its_margin_in_the_typed_config():
    # issue 26: no dict between gate.yaml and a bisect step's verdict either
    from h5regress import bisectbuild, bisectruns
    built = bisectbuild.Built(entry={}, top={}, info={'slowdown': 0.0})
    runs = bisectruns.SimulatedRuns(0.02, random.Random(1))
    runs.start(built, built, 'c' * 40, None, margin=0.125)
    assert isinstance(runs.cfg, gate.GateConfig) and runs.cfg.margin == 0.125
    runs.start(built, built, 'c' * 40, None)
    assert isinstance(runs.cfg, gate.GateConfig) and runs.cfg.margin == gate.load_config().margin
