"""The gate at its edges (issue 19): FAIL at the margin, nights noisier than their
history, PASS at an early look, two modes, the pairs a PASS would need.

Each test here failed on the gate before issue 19 (run against that commit's code).
"""

import math
import random

import pytest

from h5regress import gate, history, report, stats
from test_gate import BASE, CAND, aa_history, gated, paired, rec, run


def from_log_ratios(d, level=1000.0):
    recs = []
    for p, x in enumerate(d):
        recs += [rec(level, BASE, p), rec(level * math.exp(x), CAND, p)]
    return recs


def shaped(n, mean, sd):
    """n log-ratios with exactly this mean and sample SD (normal scores, interleaved)."""
    z = [stats.norm_ppf((i + 0.5) / n) for i in range(n)]
    z = z[::2] + z[1::2][::-1]
    m, s = stats.mean(z), math.sqrt(stats.variance(z))
    return [mean + sd * (x - m) / s for x in z]


# ------------------------------------------------------------ FAIL at the margin
def test_fail_needs_the_bound_beyond_the_margin_not_the_estimate():
    # a true 4.5 % slowdown (inside the 5 % margin): the estimate lands beyond the
    # margin and the slowdown is significant -- the rule before issue 19 said FAIL
    (m,) = gated(run(paired(20, 0.955, cv=0.05, seed=3)))
    assert m['ratio'] < 0.95 and m['q'] <= 0.01
    assert m['verdict'] == 'INCONCLUSIVE' and m['slower']
    assert m['reason'].startswith('significantly slower') and 'not shown beyond' in m['reason']
    assert m['fail_bound'] >= 0.95
    # beyond the margin, shown: FAIL, and its bound is the margin_confidence upper bound
    (m,) = gated(run(paired(20, 0.85, cv=0.05, seed=3)))
    assert m['verdict'] == 'FAIL' and not m['slower']
    assert m['ratio'] < m['fail_bound'] < 0.95


def test_fail_bound_is_the_one_sided_signed_rank_bound():
    cfg = gate.load_config()
    d = shaped(20, -0.09, 0.06)
    comp = stats.signed_rank(d)
    conf = cfg['margin_confidence']
    walsh = sorted((d[i] + d[j]) / 2 for i in range(20) for j in range(i, 20))
    c = stats.signed_rank_critical(20, 2 * conf - 1)    # P(T+ <= c) <= 1 - conf
    assert comp.upper(conf) == walsh[len(walsh) - 1 - c]
    assert comp.upper(0.975) == comp.hi and comp.lower(0.975) == comp.lo
    assert comp.upper(0.5) == comp.estimate
    pooled = stats.PooledVariance(0.01, 200, 10, 0, True, '')
    pt = stats.pooled_t(d, pooled)
    assert pt.upper(0.975) == pytest.approx(pt.hi) and pt.lower(0.975) == pytest.approx(pt.lo)


def test_fail_rate_at_a_true_3_percent_slowdown_is_small():
    # CV 5 %, 20 pairs, 300 nights: the estimate rule FAILed about 9 % of them
    cfg = gate.load_config()
    fails = 0
    for seed in range(300):
        rng = random.Random(seed)
        s = math.sqrt(math.log1p(0.05 ** 2))
        base = [math.exp(rng.gauss(0, s)) for _ in range(20)]
        cand = [0.97 * math.exp(rng.gauss(0, s)) for _ in range(20)]
        recs = []
        for p, (b, c) in enumerate(zip(base, cand)):
            recs += [rec(1000 * b, BASE, p), rec(1000 * c, CAND, p)]
        fails += gated(gate.run_gate(recs, BASE, CAND, cfg))[0]['verdict'] == 'FAIL'
    assert fails <= 9          # <= 3 %; measured with many more nights: see calibrate.py


# ------------------------------------------------ nights noisier than history
def test_a_night_somewhat_noisier_than_its_history_does_not_borrow_it(tmp_path):
    aa_history(tmp_path, 12, cv=0.08)
    hist = history.load(tmp_path)
    cfg = gate.load_config()
    pooled = gate.pooled_from_history(hist, next(iter(hist.series)), cfg['history_variance'])
    # tonight's spread 1.2 x the history's: the F test's p lies between 0.05 and 0.2
    sd = 1.2 * pooled.sigma
    recs = [r for r in from_log_ratios(shaped(20, -0.065, sd))]
    recs = [rec(r.value, r.hdf5_build, int(r.pair_id.rsplit('p', 1)[1]), night='2025-04-01')
            for r in recs]
    (m,) = gated(run(recs, history=hist))
    v = m['variance']
    assert v['source'] == 'tonight' and 'noisier than its history' in v['note']
    p_f = stats.f_sf(1.2 ** 2, 19, pooled.df)
    assert 0.05 < p_f < cfg['history_variance']['consistency_level']
    assert v['p_F'] == pytest.approx(p_f, rel=1e-6)
    assert m['method'] == 'exact' and m['verdict'] != 'FAIL'


# ------------------------------------------------------------ early PASS
def test_a_pass_at_an_early_look_needs_the_stricter_bound():
    cfg = gate.load_config()
    d = shaped(10, 0.0, 0.06)
    res = gate.run_gate(from_log_ratios(d), BASE, CAND, cfg, looks=[10, 15, 20])
    (m,) = gated(res)
    assert m['verdict'] == 'NO-SLOWDOWN-SEEN'
    comp = stats.signed_rank(d)
    # the 95 % interval alone would PASS at 10 pairs ...
    assert comp.lo > math.log(0.95)
    # ... but the first of three looks spends only (10/20)^2 of its 2.5 %
    level = stats.sequential_levels((10, 15, 20), 0.025)[0]
    assert level == pytest.approx(0.025 / 4, rel=1e-6)
    assert comp.lower(1 - level) < math.log(0.95)
    assert m['verdict'] == 'NO-SLOWDOWN-SEEN' and 'more pairs' in m['reason']
    # without looks (one fixed look) it is the 95 % interval's lower end, as before
    assert gated(gate.run_gate(from_log_ratios(d), BASE, CAND, cfg))[0]['verdict'] == 'PASS'


def test_a_pair_lost_at_the_cap_is_judged_at_the_last_look():
    """Issue 25, item 3: 19 pairs at the loop's last look (one lost to a failed run)
    spend the whole 2.5 % of a wrong PASS: PASS. The look was picked by the pairs
    alone before, the 15-pair look's stricter 99.08 % bound: INCONCLUSIVE."""
    cfg = gate.load_config()
    d = shaped(19, 0.0, 0.09)
    res = gate.run_gate(from_log_ratios(d), BASE, CAND, cfg, looks=[10, 15, 20],
                        pairs_run=20)
    (m,) = gated(res)
    assert m['verdict'] == 'PASS' and 'early look' not in m['reason']
    assert res['config']['pairs_run'] == 20
    assert stats.signed_rank(d).lower(0.9908) < math.log(0.95)


def twelve_metric_night(ratio_of_first, seed, cv=0.08, pairs=10):
    """A night of 12 gated metrics (IOR HDF5 writes of 12 configurations), ``pairs``
    pairs each, log-normal noise; the first metric's candidate is ``ratio_of_first``
    times its baseline, the others unchanged."""
    rng = random.Random(seed)
    s = math.sqrt(math.log1p(cv * cv))
    recs = []
    for i in range(12):
        ratio = ratio_of_first if i == 0 else 1.0
        for p in range(pairs):
            for build, r in ((BASE, 1.0), (CAND, ratio)):
                recs.append(rec(1000.0 * r * math.exp(rng.gauss(0, s)), build, p,
                                chash=f'h-ior-{i}', extra={'segments': i}))
    return recs


def test_the_first_look_fails_a_large_slowdown_among_twelve_metrics():
    """Issue 25, item 4: at 10 pairs the signed-rank test's smallest p is 2^-10, so
    with BH over 12 metrics q >= 12/1024 > alpha, let alone the first look's level: a 1.5x slowdown
    was INCONCLUSIVE. Student's t on tonight's pairs FAILs it at the first look."""
    cfg = gate.load_config()
    res = gate.run_gate(twelve_metric_night(1 / 1.5, seed=5), BASE, CAND, cfg,
                        looks=[10, 15, 20], pairs_run=10)
    rows = gated(res)
    assert len(rows) == 12 and all(m['n_pairs'] == 10 for m in rows)
    slowed = next(m for m in rows if m['config_hash'] == 'h-ior-0')
    assert slowed['verdict'] == 'FAIL' and slowed['method'] == 'student-t'
    assert slowed['q'] <= stats.look_level(10, [10, 15, 20], 0.01)
    assert res['overall'] == 'FAIL'
    assert [m['verdict'] for m in rows].count('FAIL') == 1


def test_the_first_look_does_not_fail_unchanged_metrics():
    cfg = gate.load_config()
    for seed in range(6):
        res = gate.run_gate(twelve_metric_night(1.0, seed=seed), BASE, CAND, cfg,
                            looks=[10, 15, 20], pairs_run=10)
        assert not any(m['verdict'] == 'FAIL' for m in gated(res)), seed
    # nor a night of heavy tails: one pair of each metric far off, either way
    recs = twelve_metric_night(1.0, seed=9, cv=0.03)
    for i, r in enumerate(recs):
        if r.pair_id.endswith('-p3') and r.hdf5_build == CAND:
            r.value *= 0.5 if i % 4 else 2.0
    res = gate.run_gate(recs, BASE, CAND, cfg, looks=[10, 15, 20], pairs_run=10)
    assert not any(m['verdict'] == 'FAIL' for m in gated(res))


def test_the_range_of_the_t_test_is_a_checked_config_key(tmp_path):
    site = tmp_path / 'site.yaml'
    site.write_text('tonight_t_test: {below_pairs: 0}\n')
    assert gate.load_config(site)['tonight_t_test'] == {'min_pairs': 10, 'below_pairs': 0}
    site.write_text('tonight_t_test: {min_pairs: -1}\n')
    with pytest.raises(gate.ConfigError, match=r"site.yaml: key 'tonight_t_test.min_pairs'"):
        gate.load_config(site)


# ------------------------------------------------------------ two modes
def bimodal_values(n, ratio, seed, cv=0.05):
    """n pairs of runs each in a mode of 700 or 1400 MiB/s: (baseline, candidate)."""
    rng = random.Random(seed)
    s = math.sqrt(math.log1p(cv * cv))
    base, cand = [], []
    for _ in range(n):
        for out, r in ((base, 1.0), (cand, ratio)):
            mode = 1400.0 if rng.random() < 0.5 else 700.0
            out.append(mode * r * math.exp(rng.gauss(0, s)))
    return base, cand


def bimodal_pairs(n, ratio, seed, cv=0.05):
    base, cand = bimodal_values(n, ratio, seed, cv)
    return [r for p, (b, c) in enumerate(zip(base, cand)) for r in (rec(b, BASE, p),
                                                                    rec(c, CAND, p))]


def test_two_modes_are_found_and_compared_like_with_like():
    (m,) = gated(run(bimodal_pairs(20, 0.90, seed=5)))
    assert m['verdict'] == 'FAIL'
    modes = m['modes']
    assert modes['bimodal'] == ['base', 'cand']
    assert modes['base']['d'] >= 6 and modes['cand']['d'] >= 6
    assert math.exp(modes['gap']) == pytest.approx(2, rel=0.1)
    assert "modes' gap out" in m['method']
    assert m['verdict'] == 'FAIL'
    assert m['ratio'] == pytest.approx(0.90, abs=0.03)


def test_one_mode_is_not_flagged():
    for seed in range(10):
        (m,) = gated(run(paired(20, 1.0, cv=0.08, seed=seed)))
        assert m['modes']['bimodal'] == [] and m['modes']['note'] == 'one mode'


def test_two_modes_a_a_nights_do_not_fail():
    fails = sum(gated(run(bimodal_pairs(20, 1.0, seed=s)))[0]['verdict'] == 'FAIL'
                for s in range(60))
    assert fails == 0


# ------------------------------------------------------------ pairs for a PASS
def test_the_pairs_a_pass_would_need_are_in_the_json_and_the_report():
    res = run(paired(20, 1.0, cv=0.08, seed=11))
    (m,) = gated(res)
    assert m['verdict'] == 'NO-SLOWDOWN-SEEN'
    sigma = m['noise_sigma']
    assert sigma == pytest.approx(math.sqrt(m['lr_var']))
    z = stats.norm_ppf(0.975) + stats.norm_ppf(0.9)
    want = math.ceil((z * sigma / -math.log(0.95)) ** 2 / (3 / math.pi))
    assert m['pairs_for_pass'] == want
    text = report.summary(res)
    assert f'about {want} pairs' in text


# ------------------------------------------------ two modes that each build must agree on
def alternating(n, level_low, level_high, build, ratio=1.0, high=None):
    """n runs of one build, pair i in the high mode when ``high(i)`` (alternating)."""
    high = high or (lambda i: i % 2 == 1)
    return [rec((level_high if high(i) else level_low) * ratio * (1 + 0.001 * (i % 3)),
                build, i) for i in range(n)]


def test_a_slowdown_about_the_modes_distance_is_not_centred_away():
    # issue 25: baseline runs of 1000 and 1150 MiB/s, every candidate run x0.80: the
    # cut of both builds' runs fell between the builds, each was centred on its own
    # runs and the night PASSed at ratio 1.000 [1.000, 1.000]
    recs = alternating(20, 1000.0, 1150.0, BASE) + alternating(20, 1000.0, 1150.0, CAND, 0.80)
    res = run(recs)
    (m,) = gated(res)
    assert m['verdict'] == 'FAIL' and res['exit_code'] == gate.EXIT_FAIL
    # each build's own modes (1000 and 1150, 800 and 920): the gap taken out of each
    # high-mode run, each build's level kept, so the slowdown stays whole
    assert m['modes']['bimodal'] == ['base', 'cand'] and m['modes']['centred']
    assert math.exp(m['modes']['gap']) == pytest.approx(1.15, abs=0.005)
    assert m['ratio'] == pytest.approx(0.80, abs=0.01)
    assert m['ratio_hi'] < 0.81


def test_a_shift_of_the_mode_shares_is_not_hidden():
    # the candidate lands in the slow mode on 14 of 20 runs, the baseline on 6: each
    # run measured from its mode's centre, the pairs said ratio 1 and PASS
    recs = (alternating(20, 700.0, 1400.0, BASE, high=lambda i: i < 14)
            + alternating(20, 700.0, 1400.0, CAND, high=lambda i: 6 <= i < 12))
    (m,) = gated(run(recs))
    assert m['verdict'] != 'PASS'
    shift = m['modes']['share_shift']
    assert (shift['slow'], shift['fast']) == (8, 0) and shift['p'] == pytest.approx(1 / 256)
    assert 'shares moved' in m['method']
    assert m['verdict'] == 'FAIL' or m['slower']
    assert m['ratio'] < 0.95


def test_an_a_a_night_in_two_modes_still_passes():
    # both builds in the high mode on alternate pairs, each pair's runs in one mode but
    # for four pairs, two each way: centred, and the centred pairs show ratio 1
    def high(shift):
        return lambda i: (i % 2 == 1) != (i in shift)
    recs = (alternating(20, 700.0, 1400.0, BASE, high=high({2, 3}))
            + alternating(20, 700.0, 1400.0, CAND, high=high({4, 5})))
    (m,) = gated(run(recs))
    assert m['modes']['centred'] and "modes' gap out" in m['method']
    assert m['modes']['share_shift']['slow'] == m['modes']['share_shift']['fast'] == 2
    assert m['verdict'] == 'PASS'


def test_a_chance_shift_of_the_mode_shares_does_not_fail_an_a_a_night():
    # issue 25: unchanged builds whose candidate runs landed in the slow mode more
    # often by chance (seeds found among 3000 A/A nights of 20 pairs): the pairs were
    # compared as they are *because* the shares moved, and the test of those pairs
    # (the modes' gap as if it were a slowdown) FAILed them; the sign test of the
    # shares alone is far from alpha
    for seed in (975, 1001, 1045, 1238, 1459):
        (m,) = gated(run(bimodal_pairs(20, 1.0, seed=seed)))
        assert m['verdict'] != 'FAIL', (seed, m['reason'])
        assert m['verdict'] != 'PASS' or m['modes']['share_shift']['slow'] <= \
            m['modes']['share_shift']['fast'], seed
        assert m['modes']['centred'] and "modes' gap out" in m['method'], seed


def test_two_modes_fail_a_large_slowdown_at_the_first_look_of_twelve_metrics():
    # issue 25: with modes 2x apart a 1.5x slowdown moves each build's modes against
    # the other's by about half their distance; the split of both builds' runs then
    # matched neither build, the pairs were compared as they are and the first look
    # FAILed 5 % of such nights. Each build's level kept, the gap taken out: FAIL
    cfg = gate.load_config()
    fails = 0
    for seed in range(20):
        comp, info = gate.compare_pairs(*bimodal_values(10, 1 / 1.5, seed), True, cfg, None)
        verdict, _ = gate.decide(comp, min(1.0, 12 * comp.p_worse), cfg, [10, 15, 20], 10)
        fails += verdict == 'FAIL'
    assert fails >= 18


def test_mode_centred_pairs_can_fail_a_large_slowdown_at_the_first_look():
    # issue 25: the mode-centred pairs went to the signed-rank test, whose p >= 2^-10 at
    # 10 pairs: with BH over 12 metrics (q = 12 p for the one slowed) a 1.5x slowdown in
    # both modes could not FAIL at the first look of the loop 10/15/20
    cfg = gate.load_config()
    rng = random.Random(7)
    s = math.sqrt(math.log1p(0.05 ** 2))
    base, cand = [], []
    for p in range(10):
        for out, r in ((base, 1.0), (cand, 1 / 1.5)):
            mode = 1400.0 if p % 2 == (out is cand and p in (2, 5)) else 700.0
            out.append(mode * r * math.exp(rng.gauss(0, s)))
    comp, info = gate.compare_pairs(base, cand, True, cfg, None)
    assert info['modes']['centred'] and 'Student t test' in info['variance']['note']
    verdict, reason = gate.decide(comp, min(1.0, 12 * comp.p_worse), cfg, [10, 15, 20], 10)
    assert verdict == 'FAIL', reason


# ------------------------------------------------ no slowdown seen (issue 29, first bullet)
def test_an_unchanged_noisy_night_is_no_slowdown_seen_with_its_sensitivity():
    # no sign of a slowdown, too noisy for a PASS: INCONCLUSIVE (exit 2, "possible
    # slowdown") before; now NO-SLOWDOWN-SEEN (exit 5) with the smallest slowdown the
    # night would have seen, the PASS bound's distance below 1
    cfg = gate.load_config()
    d = shaped(10, 0.0, 0.06)
    res = gate.run_gate(from_log_ratios(d), BASE, CAND, cfg, looks=[10, 15, 20])
    (m,) = gated(res)
    assert m['verdict'] == 'NO-SLOWDOWN-SEEN' and m['q'] > cfg['alpha']
    assert res['overall'] == 'NO-SLOWDOWN-SEEN' and res['exit_code'] == 5
    assert gate.EXIT_NO_SLOWDOWN_SEEN == gate.EXIT_CODES['NO-SLOWDOWN-SEEN'] == 5
    level = stats.sequential_levels((10, 15, 20), 0.025)[0]
    lower = stats.student_t(d).lower(1 - level)     # 10 pairs: tonight_t_test
    assert m['sensitivity'] == pytest.approx(1 - math.exp(lower), abs=1e-6)
    assert 0.05 < m['sensitivity'] < 0.2
    assert f'a slowdown of {m["sensitivity"]:.0%} or more would have been seen' in m['reason']
    assert 'NO-SLOWDOWN-SEEN' in gate.format_text(res)


def test_a_possible_slowdown_stays_inconclusive_and_every_metric_has_a_sensitivity():
    # significant but not beyond the margin: a possible slowdown, exit 2
    (m,) = gated(res := run(paired(20, 0.955, cv=0.05, seed=3)))
    assert m['verdict'] == 'INCONCLUSIVE' and m['slower'] and res['exit_code'] == 2
    assert m['sensitivity'] is not None
    for ratio, verdict in ((1.0, 'PASS'), (0.7, 'FAIL')):
        (m,) = gated(run(paired(20, ratio, cv=0.02, seed=1)))
        assert m['verdict'] == verdict and isinstance(m['sensitivity'], float)
    assert gated(run(paired(20, 1.0, cv=0.02, seed=1)))[0]['sensitivity'] < 0.05


# ------------------------------------------ a whole night noisier than its history
def night_of(log_ratios_per_metric, night):
    """One night of several gated metrics (one config per metric) from their pair log-ratios."""
    recs = []
    for i, d in enumerate(log_ratios_per_metric):
        for p, x in enumerate(d):
            kw = dict(night=night, chash=f'h-{i}', extra={'block_size': f'{i + 1}m'})
            recs += [rec(1000.0, BASE, p, **kw), rec(1000.0 * math.exp(x), CAND, p, **kw)]
    return recs


SIGMA_8 = math.sqrt(2) * 0.08      # pair log-ratio SD at CV 8 %


@pytest.fixture(scope='module')
def twelve_metric_history(tmp_path_factory):
    """8 past nights (the fewest pooled) of 12 metrics, pair log-ratio SD exactly SIGMA_8."""
    root = tmp_path_factory.mktemp('history')
    for k in range(1, 9):
        res = run(night_of([shaped(20, 0.0, SIGMA_8)] * 12, f'2025-03-{k:02d}'),
                  history=history.load(root))
        history.write_night(root, *gate.history_lines(res))
    return root


def test_a_night_whose_metrics_are_all_noisier_than_their_history_scales_it(
        twelve_metric_history):
    # tonight each metric's SD is 1.12 x its history's: each alone passes its F test
    # (p 0.22 > 0.2) and borrowed the history's sigma, so the metric 9.5 % slower -- its
    # pooled-t bound 0.948, below the margin -- FAILed. Together the 12 metrics are
    # noisier than their histories (p 0.07): tonight's variance is the history's x 1.25,
    # and that bound, 0.953, is not below the margin.
    tonight = [shaped(20, -0.095, 1.12 * SIGMA_8)] + [shaped(20, 0.0, 1.12 * SIGMA_8)] * 11
    res = run(night_of(tonight, '2025-04-01'), history=history.load(twelve_metric_history))
    slowed = next(m for m in gated(res) if m['config_hash'] == 'h-0')
    assert slowed['verdict'] != 'FAIL' and res['overall'] != 'FAIL'
    v = slowed['variance']
    assert v['source'] == 'history' and v['p_F'] > 0.2
    night = v['night_noise']
    assert night['scaled'] and night['metrics'] == 12 and night['df'] == 12 * 19
    assert night['ratio'] == pytest.approx(1.12 ** 2, rel=1e-6) and night['p'] < 0.2
    assert v['pooled_sigma'] == pytest.approx(1.12 * SIGMA_8, rel=1e-6)
    assert slowed['fail_bound'] == pytest.approx(0.953, abs=0.001)


def test_a_night_as_noisy_as_its_history_is_not_scaled(twelve_metric_history):
    tonight = [shaped(20, -0.1, SIGMA_8)] + [shaped(20, 0.0, SIGMA_8)] * 11
    res = run(night_of(tonight, '2025-04-01'), history=history.load(twelve_metric_history))
    slowed = next(m for m in gated(res) if m['config_hash'] == 'h-0')
    assert not slowed['variance']['night_noise']['scaled']
    assert slowed['variance']['pooled_sigma'] == pytest.approx(SIGMA_8, rel=1e-6)
    assert slowed['verdict'] == 'FAIL'


def test_an_interval_below_one_is_never_no_slowdown_seen():
    # a real night (1.14.1 -> 1.15.0, compound-subset read, 10 pairs): 0.781 [0.614, 0.994]
    # at 95 %, q above alpha, was NO-SLOWDOWN-SEEN beside an interval that says slower
    cfg = gate.load_config()
    d = shaped(10, math.log(0.781), 0.337)
    res = gate.run_gate(from_log_ratios(d), BASE, CAND, cfg, looks=[10, 15, 20])
    (m,) = gated(res)
    assert cfg['alpha'] < m['q'] <= 1 - cfg['confidence']
    assert m['verdict'] == 'INCONCLUSIVE' and 'slowdown suspected' in m['reason']
    assert res['exit_code'] == 2


def test_an_interval_below_one_is_never_no_slowdown_seen_after_bh():
    # a real night (1.14.1 -> 1.15.0, 7 rows, 20 pairs, load 3-21): compound-subset read
    # 0.832 [0.705, 0.956] at 95 %, BH q=0.067 over 7 metrics, was NO-SLOWDOWN-SEEN
    cfg = gate.load_config()
    comp = stats.Comparison(n=20, estimate=math.log(0.832), lo=math.log(0.705),
                            hi=math.log(0.956), p_worse=0.01, p_better=0.99,
                            p_two_sided=0.02, method='signed-rank',
                            walsh=tuple(sorted(math.log(0.832) + 0.05 * (i - 105) / 105
                                               for i in range(210))))
    verdict, reason, _ = gate.verdicts.judge(comp, 0.067, cfg, [10, 15, 20])
    assert verdict == 'INCONCLUSIVE' and 'slowdown suspected' in reason
    assert "interval of the ratio lies below 1" in reason
