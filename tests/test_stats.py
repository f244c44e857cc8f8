"""Statistics of the gate on known cases (h5regress.stats)."""

import itertools
import math
import random

import pytest

from h5regress import stats


def brute_force_t_plus(d):
    """Exact null distribution of T+ by enumerating every sign assignment."""
    ranks = stats._ranks([abs(x) for x in d])[0]
    t_obs = sum(r for r, x in zip(ranks, d) if x > 0)
    le = ge = 0
    for signs in itertools.product((0, 1), repeat=len(d)):
        t = sum(r for r, s in zip(ranks, signs) if s)
        le += t <= t_obs
        ge += t >= t_obs
    total = 2 ** len(d)
    return le / total, ge / total


def test_signed_rank_counts_sum_and_symmetry():
    for n in range(1, 16):
        counts = stats.signed_rank_counts(n)
        assert sum(counts) == 2 ** n
        assert len(counts) == n * (n + 1) // 2 + 1
        assert counts == counts[::-1]


@pytest.mark.parametrize('n,crit', [(6, 0), (7, 2), (8, 3), (9, 5), (10, 8), (11, 10),
                                    (12, 13), (15, 25), (20, 52), (25, 89), (30, 137)])
def test_critical_values_match_published_table(n, crit):
    # two-sided 5 % critical values of Wilcoxon's T (e.g. Hollander & Wolfe, table A.4)
    assert stats.signed_rank_critical(n, 0.95) == crit


def test_too_few_pairs_give_unbounded_interval():
    comp = stats.signed_rank([-0.1, -0.2, -0.15, -0.12, -0.3])
    assert comp.lo == -math.inf and comp.hi == math.inf


def test_exact_p_values_match_enumeration():
    rng = random.Random(3)
    for n in (5, 8, 11):
        d = [rng.gauss(-0.05, 0.1) for _ in range(n)]
        comp = stats.signed_rank(d)
        le, ge = brute_force_t_plus(d)
        assert comp.method == 'exact'
        assert comp.p_worse == pytest.approx(le)
        assert comp.p_better == pytest.approx(ge)


def test_hodges_lehmann_estimate_known_case():
    # Walsh averages of [1, 2, 4]: 1, 1.5, 2.5, 2, 3, 4 -> median 2.25
    assert stats.signed_rank([1.0, 2.0, 4.0]).estimate == pytest.approx(2.25)


def test_identical_samples():
    comp = stats.signed_rank([0.0] * 12)
    assert comp.estimate == 0.0 and comp.lo == 0.0 and comp.hi == 0.0
    assert comp.p_worse == 1.0 and comp.p_two_sided == 1.0


def test_ties_use_normal_approximation():
    comp = stats.signed_rank([-0.1, -0.1, -0.1, -0.2, -0.2, 0.05, -0.3, -0.1, -0.2, -0.1])
    assert comp.method == 'normal'
    assert comp.p_worse < 0.01


def test_interval_coverage_near_nominal():
    rng = random.Random(11)
    hits, reps, true = 0, 1500, -0.07
    for _ in range(reps):
        comp = stats.signed_rank([rng.gauss(true, 0.11) for _ in range(15)])
        hits += comp.lo <= true <= comp.hi
    assert 0.93 <= hits / reps <= 0.975


def test_signed_rank_size_under_null_is_at_most_alpha():
    rng = random.Random(5)
    reps = 3000
    rejections = sum(stats.signed_rank([rng.gauss(0, 0.1) for _ in range(20)]).p_worse <= 0.05
                     for _ in range(reps))
    assert rejections / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_rank_sum_shift():
    base = [0.0, 0.1, 0.2, 0.05, 0.12, 0.08, 0.15]
    cand = [x - 0.3 for x in base]
    comp = stats.rank_sum(base, cand)
    assert comp.estimate == pytest.approx(-0.3)
    assert comp.hi < 0 and comp.p_worse < 0.01


def test_benjamini_hochberg_textbook_example():
    # Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05 rejects the first 4
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240,
         0.4262, 0.5719, 0.6528, 0.7590, 1.0000]
    adj = stats.benjamini_hochberg(p)
    assert [a <= 0.05 for a in adj] == [True] * 4 + [False] * 11
    assert adj[0] == pytest.approx(0.0015)
    assert adj[3] == pytest.approx(0.0095 * 15 / 4)
    assert all(a <= b + 1e-12 for a, b in zip(adj, adj[1:]))   # monotone in p


def test_benjamini_hochberg_keeps_input_order():
    adj = stats.benjamini_hochberg([0.04, 0.01, 0.03])
    assert adj == pytest.approx([0.04, 0.03, 0.04])
    assert stats.benjamini_hochberg([]) == []


def test_student_t_tail():
    assert stats.t_two_sided_p(2.228, 10) == pytest.approx(0.05, abs=2e-4)
    assert stats.t_two_sided_p(2.0, 10) == pytest.approx(0.0734, abs=2e-4)
    assert stats.t_two_sided_p(1.96, 1e7) == pytest.approx(0.05, abs=1e-4)
    assert stats.t_two_sided_p(0.0, 5) == pytest.approx(1.0)


def test_welch_equal_variances_is_student():
    a = [1.0, 2.0, 3.0, 4.0, 5.0]
    b = [3.0, 4.0, 5.0, 6.0, 7.0]
    t, df, p = stats.welch_t(a, b)
    assert t == pytest.approx(2.0)
    assert df == pytest.approx(8.0)
    assert p == pytest.approx(stats.t_two_sided_p(2.0, 8))


def test_percentile_linear_interpolation():
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile([1, 2, 3, 4], 5) == pytest.approx(1.15)
    assert stats.percentile([7], 95) == 7


# ------------------------------------------------------- variance from history
@pytest.mark.parametrize('p,df,expected', [(0.99, 19, 2.539), (0.975, 10, 2.228),
                                           (0.95, 5, 2.015), (0.99, 120, 2.358)])
def test_t_quantiles_match_tables(p, df, expected):
    assert stats.t_ppf(p, df) == pytest.approx(expected, abs=5e-4)
    assert stats.t_cdf(expected, df) == pytest.approx(p, abs=1e-4)


def test_chi_square_and_f_match_tables():
    assert stats.chi2_ppf(0.95, 19) == pytest.approx(30.144, abs=1e-3)
    assert stats.chi2_ppf(0.05, 10) == pytest.approx(3.940, abs=1e-3)
    assert stats.chi2_sf(30.144, 19) == pytest.approx(0.05, abs=1e-4)
    assert stats.f_sf(3.478, 4, 10) == pytest.approx(0.05, abs=1e-4)     # F(4, 10) 95 %
    assert stats.f_sf(2.168, 19, 19) == pytest.approx(0.05, abs=1e-3)    # F(19, 19) 95 %


def test_pooled_variance_textbook_case():
    # two samples, n1 = 10 with s1^2 = 4 and n2 = 15 with s2^2 = 9:
    # sp^2 = (9 * 4 + 14 * 9) / 23 = 7.043, 23 df
    pv = stats.pool_variance([(10, 4.0), (15, 9.0)], min_nights=2, min_pairs=2,
                             screen=1e-9)
    assert pv.usable and pv.df == 23 and pv.nights == 2
    assert pv.var == pytest.approx(162 / 23)


def test_pooled_variance_needs_enough_nights_and_pairs():
    nights = [(20, 0.01)] * 7 + [(5, 0.01)] * 5
    pv = stats.pool_variance(nights)                 # 7 nights with >= 10 pairs: too few
    assert not pv.usable and 'need 8' in pv.reason
    assert stats.pool_variance(nights + [(20, 0.01)]).usable


def test_pooled_variance_screens_out_a_storm_night_and_keeps_the_window():
    rng = random.Random(5)
    nights = [(20, 0.01 * rng.gammavariate(9.5, 2) / 19) for _ in range(25)]
    nights[-3] = (20, 0.2)                           # a storm: 20x the usual variance
    pv = stats.pool_variance(nights, window=20)
    assert pv.outliers == 1 and pv.nights == 19 and pv.df == 19 * 19
    assert pv.var == pytest.approx(0.01, rel=0.2)


def test_pooled_t_known_case():
    # mean -0.0875, n = 4; sigma known from history with 10 df chosen so that
    # t = -3.169, the one-sided 0.5 % point of t(10) in the tables: p = 0.005;
    # 95 % interval mean +- 2.228 se (t(10) 97.5 % point)
    d = [-0.1, -0.05, -0.12, -0.08]
    se = 0.0875 / 3.169
    pv = stats.PooledVariance((se * 2) ** 2, 10, 3, 0, True, '')
    comp = stats.pooled_t(d, pv)
    assert comp.method == 'pooled-t' and comp.n == 4
    assert comp.estimate == pytest.approx(-0.0875)
    assert comp.p_worse == pytest.approx(0.005, abs=2e-5)
    assert comp.p_better == pytest.approx(0.995, abs=2e-5)
    assert comp.lo == pytest.approx(-0.0875 - 2.2281 * se, abs=1e-5)
    assert comp.hi == pytest.approx(-0.0875 + 2.2281 * se, abs=1e-5)
    d = [-0.1, -0.05, -0.12, -0.08]
    # a very long history is the known-variance z test: P(Z <= -3.5) = 2.326e-4
    big = stats.PooledVariance(0.05 ** 2, 10 ** 9, 3, 0, True, '')
    assert stats.pooled_t(d, big).p_worse == pytest.approx(2.326e-4, rel=1e-3)


def test_variance_consistency_check():
    pv = stats.PooledVariance(0.01, 380, 20, 0, True, '')
    ok, f, p = stats.variance_consistent(0.011, 20, pv)
    assert ok and f == pytest.approx(1.1)
    ok, f, p = stats.variance_consistent(0.04, 20, pv)      # CV doubled: variance x4
    assert not ok and p < 1e-6
    ok, _, _ = stats.variance_consistent(0.003, 20, pv)     # quieter: may borrow
    assert ok
    assert not stats.variance_consistent(0.01, 2, pv)[0]    # too few pairs to check


def test_sequential_levels_spend_alpha_by_look():
    assert stats.sequential_levels((20,), 0.01) == (0.01,)
    levels = stats.sequential_levels((10, 15, 20), 0.01)
    # the first look is a plain one-sided test at alpha * (10/20)^2
    assert levels[0] == pytest.approx(0.01 * 0.5 ** 2)
    # correlated looks: the last keeps more than alpha minus what was spent before
    assert 0.01 * (1 - 0.75 ** 2) < levels[2] < 0.01
    assert levels[0] < levels[1] < levels[2]
    with pytest.raises(ValueError, match='increasing'):
        stats.sequential_levels((15, 10), 0.01)


def null_loop_crossing(looks, levels, seed, reps=40000):
    """Share of simulated null loops (z of the running mean at ``looks``) that cross
    the boundary of one-sided ``levels`` at some look."""
    bounds = [stats.norm_ppf(1 - p) for p in levels]
    rng = random.Random(seed)
    hits = 0
    for _ in range(reps):
        total, done = 0.0, 0
        for n, c in zip(looks, bounds):
            total += rng.gauss(0.0, math.sqrt(n - done))
            done = n
            if total / math.sqrt(n) > c:
                hits += 1
                break
    return hits / reps


def test_sequential_loop_false_alarm_rate_is_alpha():
    """Simulated loop (z of the running mean at 10, 15, 20): total crossing = alpha."""
    looks = (10, 15, 20)
    # binomial sd at 5 %: 0.0011
    assert null_loop_crossing(looks, stats.sequential_levels(looks, 0.05), 7) == \
        pytest.approx(0.05, abs=0.004)


def test_look_level_maps_pairs_to_the_planned_look():
    levels = stats.sequential_levels((10, 15, 20), 0.01)
    assert stats.look_level(10, [10, 15, 20], 0.01) == pytest.approx(levels[0])
    assert stats.look_level(15, [10, 15, 20], 0.01) == pytest.approx(levels[1])
    assert stats.look_level(20, [10, 15, 20], 0.01) == pytest.approx(levels[2])
    # fewer pairs at an early look: the spending of the pairs reached, a stricter level
    assert stats.look_level(8, [10, 15, 20], 0.01) == pytest.approx(0.01 * 0.4 ** 2)
    assert stats.look_level(14, [10, 15, 20], 0.01, pairs_run=15) < levels[1]
    # beyond the last planned look: the final look, which spends what is left
    assert stats.look_level(23, [10, 15, 20], 0.01) == pytest.approx(levels[2], rel=0.1)
    assert stats.look_level(7, None, 0.01) == 0.01


def test_a_pair_lost_at_the_cap_keeps_the_last_looks_level():
    """Issue 25, item 3: 19 pairs at the loop's last look (20 planned, one lost to a
    failed run) spend all that is left of alpha, nearly the 20-pair level -- not the
    15-pair look's, as when the look was picked by the pairs alone."""
    levels = stats.sequential_levels((10, 15, 20), 0.01)
    last = stats.look_level(19, [10, 15, 20], 0.01, pairs_run=20)
    assert last == pytest.approx(levels[2], rel=0.05)
    assert last > 1.5 * levels[1]
    assert stats.looks_made(19, [10, 15, 20], 20) == ((10, 15, 19), True)
    # the same 19 pairs at a look that is not the last (a loop up to 25) spend less
    assert stats.look_level(19, [10, 15, 20, 25], 0.01, pairs_run=20) < last


def test_looks_made_on_the_pairs_reached_keep_the_loops_alpha():
    """The levels of looks at 10, 15 and 19 pairs (the last final) cross, in all,
    alpha of simulated null loops, as the planned 10, 15, 20 do."""
    looks = (10, 15, 19)
    levels = stats.sequential_levels(looks, 0.05, cap=20, final=True)
    assert null_loop_crossing(looks, levels, 11) == pytest.approx(0.05, abs=0.004)


# ------------------------------------------------------- agreement with scipy
def test_exact_law_is_scipys_and_matches_the_integer_counts():
    for n in (1, 2, 7, 20, 45, 60):
        cdf = stats._signed_rank_cdf(n)
        acc, total = 0, 2 ** n
        for t, c in enumerate(stats.signed_rank_counts(n)):
            acc += c
            assert cdf[t] == pytest.approx(acc / total, rel=1e-13, abs=1e-300)


def test_signed_rank_p_values_are_scipys_wilcoxon():
    scipy_stats = pytest.importorskip('scipy.stats')
    rng = random.Random(8)
    for n in (3, 9, 20, 33, 60):
        d = [rng.gauss(-0.04, 0.1) for _ in range(n)]
        comp = stats.signed_rank(d)
        assert comp.method == 'exact'
        for alt, p in (('less', comp.p_worse), ('greater', comp.p_better)):
            ref = scipy_stats.wilcoxon(d, method='exact', alternative=alt).pvalue
            assert p == pytest.approx(ref, rel=1e-12, abs=1e-15)
    d = [-0.1, -0.1, -0.1, -0.2, -0.2, 0.05, -0.3, -0.1, -0.2, -0.1, 0.0, 0.1]
    comp = stats.signed_rank(d)                      # ties and a zero: normal approximation
    for alt, p in (('less', comp.p_worse), ('greater', comp.p_better)):
        ref = scipy_stats.wilcoxon(d, method='asymptotic', correction=True, alternative=alt)
        assert p == pytest.approx(ref.pvalue, rel=1e-12)


def test_rank_sum_p_values_are_scipys_mann_whitney():
    scipy_stats = pytest.importorskip('scipy.stats')
    base = [0.0, 0.1, 0.2, 0.05, 0.1, 0.08, 0.15]
    cand = [-0.1, 0.02, 0.1, -0.05, 0.0, 0.03]
    comp = stats.rank_sum(base, cand)
    for alt, p in (('less', comp.p_worse), ('greater', comp.p_better)):
        ref = scipy_stats.mannwhitneyu(cand, base, method='asymptotic', use_continuity=True,
                                       alternative=alt)
        assert p == pytest.approx(ref.pvalue, rel=1e-12)


def test_distribution_wrappers_are_scipy_stats():
    scipy_stats = pytest.importorskip('scipy.stats')
    for df in (3, 19, 380):
        assert stats.t_cdf(-2.1, df) == pytest.approx(scipy_stats.t.cdf(-2.1, df), rel=1e-12)
        assert stats.t_ppf(0.99, df) == pytest.approx(scipy_stats.t.ppf(0.99, df), rel=1e-12)
        assert stats.chi2_sf(1.3 * df, df) == pytest.approx(scipy_stats.chi2.sf(1.3 * df, df),
                                                            rel=1e-12)
        assert stats.chi2_ppf(1e-4, df) == pytest.approx(scipy_stats.chi2.ppf(1e-4, df), rel=1e-12)
        assert stats.f_sf(1.7, 19, df) == pytest.approx(scipy_stats.f.sf(1.7, 19, df), rel=1e-12)
    assert stats.f_sf(1.7, 19, math.inf) == pytest.approx(scipy_stats.chi2.sf(1.7 * 19, 19))
    assert stats.norm_ppf(0.975) == pytest.approx(scipy_stats.norm.ppf(0.975), rel=1e-14)
    t, df, p = stats.welch_t([1.0, 2.0, 3.5, 4.0], [3.0, 4.5, 5.0, 6.0, 9.0])
    ref = scipy_stats.ttest_ind([3.0, 4.5, 5.0, 6.0, 9.0], [1.0, 2.0, 3.5, 4.0], equal_var=False)
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-12)


def test_two_modes_finds_a_split_sample_and_leaves_one_mode_alone():
    rng = random.Random(4)
    low = [rng.gauss(math.log(700), 0.05) for _ in range(10)]
    high = [rng.gauss(math.log(1400), 0.05) for _ in range(10)]
    t = stats.two_modes(low + high)
    assert t.bimodal and t.low_n == 10 and t.high_n == 10
    assert max(low) < t.cut < min(high) and t.d > 6
    one = stats.two_modes([rng.gauss(0, 0.08) for _ in range(20)])
    assert not one.bimodal and one.d < 6
    assert stats.two_modes([1.0, 2.0, 3.0, 4.0, 5.0]) is None          # too few to tell
    # a single outlier is not a mode: each group needs >= 20 % of the values
    assert not stats.two_modes([0.0] * 9 + [0.001 * i for i in range(10)] + [1.0]).bimodal


def test_one_sided_bounds_of_the_rank_sum_are_its_interval_at_97_5():
    rng = random.Random(5)
    base = [rng.gauss(0, 0.1) for _ in range(15)]
    cand = [rng.gauss(-0.1, 0.1) for _ in range(15)]
    comp = stats.rank_sum(base, cand)
    assert comp.upper(0.975) == comp.hi and comp.lower(0.975) == comp.lo
    assert comp.lower(0.9) > comp.lo and comp.upper(0.9) < comp.hi


def test_sign_test_p_is_scipys_one_sided_binomial_test():
    from scipy.stats import binomtest
    for n in range(0, 16):
        for k in range(0, n + 1):
            want = binomtest(k, n, 0.5, alternative='greater').pvalue if n else 1.0
            assert stats.sign_test_p(k, n) == pytest.approx(want, rel=1e-12)
