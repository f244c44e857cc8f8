"""Change points of the nightly history, steps and creep, by Apache Otava
(:mod:`h5regress.creep`)."""

from __future__ import annotations

import math
import random

from h5regress import creep
from h5regress.gateconfig import load_config


def test_a_step_is_found_where_it_is():
    rng = random.Random(2)
    series = [rng.gauss(0, 0.02) for _ in range(40)] + [rng.gauss(-0.1, 0.02) for _ in range(20)]
    cps = creep.change_points(series, window=30, pvalue=0.001, min_shift=0.05)
    assert len(cps) == 1
    assert abs(cps[0].index - 40) <= 1
    assert cps[0].shift < -0.05


def test_no_change_point_in_noise():
    rng = random.Random(4)
    series = [rng.gauss(0, 0.03) for _ in range(120)]
    assert creep.change_points(series, window=30, pvalue=0.001) == []


def test_a_creep_of_one_percent_a_night_is_flagged_within_ten_nights():
    """No night is 5 % below the one before, yet the history has a change point (at the
    shipped setting of ci/gate.yaml)."""
    cc = load_config()['change_points']
    rng = random.Random(7)
    series = [rng.gauss(0, 0.03) for _ in range(60)]
    for night in range(1, 11):
        series.append(night * math.log(0.99) + rng.gauss(0, 0.03))
        cps = [cp for cp in creep.change_points(series, cc['window'], cc['alpha'],
                                                cc['min_shift'] or 0.0)
               if cp.index >= 59 and len(series) - cp.index >= cc['min_side']]
        if cps:
            assert cps[0].shift < 0
            break
    else:
        raise AssertionError('1 %/night for 10 nights not flagged')
