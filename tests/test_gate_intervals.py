"""The interval a metric draws is the one its verdict reads, adjusted for the night's
number of gated metrics (issue 25).

With 12 unchanged metrics one marginal 95 % interval lies below 1 on about a
quarter of nights; the gate read those and called the metric "slowdown suspected"
(INCONCLUSIVE), so A/A nights ended PASS or NO-SLOWDOWN-SEEN on 70-82 % of nights.
Run against that gate's code (c3af181): the first test fails on its verdict
(INCONCLUSIVE, night exit 2); the JSON, report, "which interval" and configuration
tests fail on what they check (no ``interval``, no ``drawn_interval``, the key
unknown); the adjusted-interval-below-1 night was INCONCLUSIVE there too (a guard).
"""

import math

import pytest

from h5regress import gate, history, report, stats
from test_gate import BASE, CAND, gated
from test_gate_edges import night_of, shaped

LOOKS = [10, 15, 20]


#: a site's choice since the real night of 2026-11-27 made `marginal` the default
SIMULTANEOUS = {**gate.load_config(), 'intervals': 'simultaneous'}


def twelve_metric_night(slowed_mean, cfg=SIMULTANEOUS):
    """A night of 12 gated metrics at 10 pairs, pair log-ratio SD 0.06 (NO-SLOWDOWN-SEEN
    alone); the first one's mean ``slowed_mean``."""
    tonight = [shaped(10, slowed_mean, 0.06)] + [shaped(10, 0.0, 0.06)] * 11
    return gate.run_gate(night_of(tonight, '2025-05-01'), BASE, CAND, cfg, looks=LOOKS)


def first(res):
    return next(m for m in gated(res) if m['config_hash'] == 'h-0')


# t = -2.4 at 10 pairs: one-sided p 0.02, so the marginal 95 % interval (t 2.262) lies
# just below 1 while the simultaneous one over 12 metrics (t 3.69 at 1 - 0.05/24) holds
# 1; BH q = 12 x 0.02 = 0.24, no sign of a slowdown among 12 metrics
JUST_BELOW = -2.4 * 0.06 / math.sqrt(10)


def test_a_marginal_interval_just_below_one_among_twelve_metrics_is_no_slowdown_seen():
    # c3af181: INCONCLUSIVE, "slowdown suspected (the 95% interval of the ratio lies
    # below 1, upper end 0.997; BH q=0.24 ...)", the night INCONCLUSIVE (exit 2)
    res = twelve_metric_night(JUST_BELOW)
    m = first(res)
    assert m['verdict'] == gate.NO_SLOWDOWN_SEEN, m['reason']
    assert res['overall'] == gate.NO_SLOWDOWN_SEEN and res['exit_code'] == 5
    assert m['q'] > 0.05
    assert m['perf_hi'] < 1.0 < m['interval']['perf_hi']     # marginal below, drawn holds 1


def test_the_json_carries_the_interval_drawn_and_read_for_every_gated_metric():
    res = twelve_metric_night(JUST_BELOW)
    level = 1 - 0.05 / 12
    for m in gated(res):
        iv = m['interval']
        assert iv['kind'] == 'simultaneous' and iv['metrics'] == 12
        assert iv['confidence'] == pytest.approx(level) and iv['family_confidence'] == 0.95
        assert iv['label'] == 'simultaneous 95 % over 12 metrics (each 99.58 %)'
        assert iv['ratio_lo'] < m['ratio_lo'] <= m['ratio_hi'] < iv['ratio_hi']
    # the row's own interval keeps its meaning (the history and old readers use it)
    d = shaped(10, JUST_BELOW, 0.06)
    t = stats.student_t(d, 0.95)
    assert first(res)['perf_hi'] == pytest.approx(math.exp(t.hi), abs=1e-6)
    assert first(res)['interval']['perf_hi'] == pytest.approx(
        math.exp(t.upper(1 - (1 - level) / 2)), abs=1e-6)


def test_the_report_draws_and_labels_the_interval_the_verdict_read():
    res = twelve_metric_night(JUST_BELOW)
    m = first(res)
    shown = f'[{m["interval"]["ratio_lo"]:.3f}, {m["interval"]["ratio_hi"]:.3f}]'
    md = report.markdown(res)
    assert shown in md and 'simultaneous 95 % over 12 metrics' in md
    html = report.to_html(res, history.History())
    assert 'ratio and simultaneous 95 % over 12 metrics (each 99.58 %) interval' in html
    assert f'{m["interval"]["perf_hi"]:.3f}' in html


def test_an_adjusted_interval_below_one_stays_slowdown_suspected():
    # the real night of 7 metrics (docs/report-nights.md): compound-subset read 0.832
    # [0.705, 0.956] at 95 %, BH q=0.067; had its simultaneous interval over the 7
    # metrics lain below 1 too, it is "slowdown suspected", and says which interval
    cfg = SIMULTANEOUS
    walsh = tuple(sorted(math.log(0.832) + 0.05 * (i - 105) / 105 for i in range(210)))
    comp = stats.Comparison(n=20, estimate=math.log(0.832), lo=math.log(0.705),
                            hi=math.log(0.956), p_worse=0.01, p_better=0.99,
                            p_two_sided=0.02, method='signed-rank', walsh=walsh)
    drawn = gate.drawn_interval([0.067] + [0.5] * 6, cfg)
    assert comp.upper((1 + drawn.confidence) / 2) < 0
    verdict, reason, _ = gate.judge(comp, 0.067, cfg, LOOKS, None, drawn)
    assert verdict == 'INCONCLUSIVE' and 'slowdown suspected' in reason
    assert 'the simultaneous 95 % over 7 metrics (each 99.29 %) interval' in reason


def test_a_night_whose_adjusted_interval_lies_below_one_is_not_no_slowdown_seen():
    # t = -4.2: the simultaneous interval over 12 metrics lies below 1 (q 0.02 too)
    res = twelve_metric_night(-4.2 * 0.06 / math.sqrt(10))
    m = first(res)
    assert m['verdict'] == 'INCONCLUSIVE' and res['overall'] == 'INCONCLUSIVE'
    assert m['interval']['perf_hi'] < 1.0


def test_false_coverage_rate_intervals_widen_with_fewer_metrics_suspected():
    cfg = {**gate.load_config(), 'intervals': 'fcr'}
    none = gate.drawn_interval([0.5] * 12, cfg)
    three = gate.drawn_interval([0.001, 0.01, 0.04] + [0.5] * 9, cfg)
    assert none.confidence == pytest.approx(1 - 0.05 / 12) and none.selected == 0
    assert three.confidence == pytest.approx(1 - 0.05 * 3 / 12) and three.selected == 3
    assert 'false-coverage-rate over 12 metrics' in three.label
    marginal = gate.drawn_interval([0.5] * 12, {**cfg, 'intervals': 'marginal'})
    assert marginal.confidence == 0.95 and marginal.label == '95 %'


def test_a_wrong_intervals_key_is_an_error_naming_it(tmp_path):
    site = tmp_path / 'site.yaml'
    site.write_text('intervals: bonferoni\n')
    with pytest.raises(gate.ConfigError, match="'intervals' must be one of simultaneous"):
        gate.load_config(site)


def test_the_gate_text_prints_the_interval_the_verdict_read():
    res = twelve_metric_night(JUST_BELOW)
    m = first(res)
    text = gate.format_text(res)
    assert 'intervals: simultaneous 95 % over 12 metrics (each 99.58 %)' in text
    assert (f'ratio {m["ratio"]:.3f} [{m["interval"]["ratio_lo"]:.3f}, '
            f'{m["interval"]["ratio_hi"]:.3f}]') in text
    assert res['config']['intervals'] == 'simultaneous'


def test_by_default_a_measured_slowdown_with_its_95_interval_below_one_is_suspected():
    # The real night of 2026-11-27 (docs/report-nights.md), 1.14.1 -> 1.15.0, 22 gated
    # metrics, 20 pairs: compound-superset read 0.830, 95 % interval [0.772, 0.948], BH
    # q 0.088, a slowdown the bisect and the A/B measurements show is real. With the
    # simultaneous interval over 22 metrics ([0.729, 1.083]) the gate called it
    # NO-SLOWDOWN-SEEN; the default (marginal) keeps it INCONCLUSIVE.
    assert gate.load_config()['intervals'] == 'marginal'
    res = twelve_metric_night(JUST_BELOW, gate.load_config())
    m = first(res)
    assert m['verdict'] == 'INCONCLUSIVE' and 'slowdown suspected' in m['reason']
    assert m['interval']['kind'] == 'marginal' and m['interval']['perf_hi'] < 1.0
    assert res['overall'] == 'INCONCLUSIVE' and res['exit_code'] == 2


def test_the_first_screen_names_a_suspected_slowdown_in_words():
    # The real night of 2026-11-27: compound-subset read 0.697 [0.674, 0.728] and
    # compound-superset 0.830 [0.772, 0.948], undecided after 22 metrics; the first
    # screen said "3 without a significant slowdown ... even when nothing changed".
    res = twelve_metric_night(JUST_BELOW, gate.load_config())
    text = report.summary(res)
    assert '1 measured slower, not yet significant over the night\'s 12 metrics' in text
    assert 'take 1.05x as long' in text
    assert 'even when nothing changed' not in text
