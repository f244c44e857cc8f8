#!/usr/bin/env python3
"""Calibration of the gate: power and false-alarm rate. A benchmark, not a test.

It measures and prints; it asserts nothing. Sections:

0. The table (issue 19): noise model x true ratio x design (20 pairs; the
   nightly's loop 10/15/20; each without and with 30 nights of history) ->
   FAIL, PASS, INCONCLUSIVE, "significantly slower, not shown beyond the
   margin" (part of INCONCLUSIVE) and mean pairs, one gated metric per night
   judged by ``gate.compare_pairs`` and ``gate.decide`` -- the functions
   ``run_gate`` calls for each metric. Noise: log-normal CV 5 and 8 %, nights
   1.2/1.5/2 times noisier than their history, heavy tail, shared-pair, and
   bimodal nights (each run in one of two modes a factor 2 apart).
   ``--table-nights`` (1000) nights per row; ``--full``: 4000.
   ``--margin-confidence``, ``--consistency-level``, ``--no-modes`` override
   ``ci/gate.yaml`` to measure the alternatives.
1. Single gated metric, fixed number of pairs: false alarms (FAIL at true
   ratio 1), PASS rate at ratio 1, detection (FAIL) of 5/10/15/20 %
   slowdowns, the smallest slowdown detected with 80 % power; per noise model.
2. The nightly's rerun loop: 10 pairs, then +5 up to 20 while INCONCLUSIVE
   (``--looks 10,15,20``: a FAIL at each look needs q below its
   alpha-spending level, so the loop keeps alpha).
3. Whole nights through :func:`h5regress.gate.run_gate` (300 gated metrics,
   BH across them): per-night false-alarm rate, detection of one 10 %
   regression among 299 unchanged metrics.
4. Normal-theory bound: the best any test can do at that noise (an oracle
   z-test with known variance), to judge how far the gate is from it.
5. With history: the variance of the pair log-ratios pooled from past nights
   of the same metric (30 A/A nights of 20 pairs at the history's CV), then
   tonight (fixed n = 10/15/20 and the rerun loop) at 0/5/10/15/20 %
   slowdown: false alarms, detection, how often the pooled t test was used;
   and nights noisier than their history (CV x1.1 .. x2), where the
   consistency check must keep the false alarms down. Section 1 and 2 are
   the same gate without history.
6. ``--real``: real runs on this machine: fio (buffered sequential write), A/B
   pairs back to back, the candidate slowed by ``delay_shim.so`` (LD_PRELOAD,
   built here with gcc), gated like a night: A/A, 10 % and 30 % nominal.
7. ``--pairs-from FILE``: real pairs measured by ``benchmarks/real_pairs.py``
   (A/A, and the candidate slowed by the shim): the file's pairs cut into
   consecutive nights of 20 (real nights, as they ran) and nights resampled
   from its pairs, gated at 20 pairs and through the rerun loop. Its A/A pair
   log-ratios are also a noise model (``pairs``) of sections 1 and 2.
8. Two modes (issue 25; ``--only-modes``, ``--modes-nights`` (1000)): nights whose
   runs land in one of two modes (15 % or 2x apart, a slowdown of both modes, or
   the candidate landing in the slow mode more often), judged by the rule before
   issue 25 (the modes of both builds' runs used whenever both are bimodal) and by
   the gate's (only when each build agrees with them): FAIL, PASS, "slower", how
   often the runs were measured from their modes. ``--share-level`` and
   ``--centre-tolerance`` override ``modes`` in ``ci/gate.yaml``.
9. ``--only-lost-pair``: the loop 10/15/20 whose last look lost one pair to a
   failed run, judged at the level of the planned look below its pairs (the
   rule before issue 25) and on the pairs reached: FAIL and PASS rates.
10. ``--only-first-look``: nights of 12 gated metrics without history (and one
   row noisier than its history), the loop 10/15/20, per design of the test of
   tonight's pairs and the spending: the loop's A/A false FAIL per night, the A/A
   nights ending PASS or NO-SLOWDOWN-SEEN ("PASS|NSS", issue 29), a
   1.5x and a 1.25x slowdown FAILed at the first look, a 10 % one within 20
   pairs, over normal, t(3), outlier-run, two-mode and shared-pair noise, and
   nights as noisy as their history or 1.2 and 1.5 times noisier (the night's
   metrics through ``gate.night_pools``, as ``run_gate`` judges them).
9b. ``--only-time-limit``: the loop ended by ``ci/nightly --time-limit`` at 10, 12,
   17 or 20 pairs: FAIL and PASS of one metric, unchanged and 10 % slower.
11. ``--only-first-look-options``: the first look's test of tonight's pairs,
   options: Student's t (the gate's), Yuen's trimmed t (10 and 20 %) and, for
   two-mode runs, the t test with the modes' gap taken out of each high-mode run:
   the first look's false FAIL (margin left aside) and 1.5x FAILs at 10 pairs;
   and, with outlier runs, the t test's FAILs by the number of outlier pairs
   against an oracle that drops them.
``--issue-25``: every simulated figure of issue 25's "Figures to reach" in one run:
   section 8 and section 10 (the gate's design, 1.25x also within the loop), then
   each figure beside its target.

Noise models: log-normal with the CV measured for IOR HDF5 writes on this VM
(8 %) and on a parallel file system (10 %); ``shared`` (half the variance
common to both runs of a pair); ``heavy`` (5 % of runs 30 % slow); and
``--noise-from FILE`` (records JSONL: log-residuals of real runs around their
per-configuration median, resampled); ``--pairs-from FILE`` (real A/A pair
log-ratios, resampled: what the two runs of a pair share stays shared).

Usage: python3 benchmarks/calibrate.py [--reps 4000] [--quick] [--real]
                                      [--pairs-from FILE] [--only-history]
                                      [--only-table | --no-table] [--table-nights N]
                                      [--full] [--margin-confidence C]
                                      [--consistency-level L] [--no-modes]
                                      [--only-modes] [--modes-nights N]
                                      [--share-level P] [--centre-tolerance T]
                                      [--only-lost-pair] [--only-time-limit]
                                      [--only-first-look]
                                      [--only-first-look-options] [--issue-25]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from statistics import NormalDist

from scipy import special

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from h5regress import gate, stats  # noqa: E402
from h5regress.record import Record, read_jsonl  # noqa: E402
from real_pairs import build_shim, pair_log_ratios  # noqa: E402
from synth import Noise, metric_params, night_records  # noqa: E402

CFG = gate.load_config()


LOOKS = [10, 15, 20]
#: the verdicts after which the nightly adds pairs (NO-SLOWDOWN-SEEN is INCONCLUSIVE named)
UNDECIDED = ('INCONCLUSIVE', gate.NO_SLOWDOWN_SEEN)


def log_ratios(noise: Noise, ratio: float) -> Iterator[float]:
    """Endless pair log-ratios ln(B/A) of ``noise`` with true candidate ratio ``ratio``."""
    lr = math.log(ratio)
    while True:
        a, b = noise.pair()
        yield math.log(b) - math.log(a) + lr


def judge_log_ratios(d: list[float], pooled: stats.PooledVariance | None,
                     looks: list[int] | None) -> tuple[str, bool]:
    """Verdict of one metric from its pair log-ratios ``d``, and whether the history's
    variance was used: :func:`h5regress.gate.compare_pairs` and
    :func:`h5regress.gate.decide`, as ``run_gate`` calls them (pairs of baseline 1
    and candidate exp(d): the ratios carry no levels, so no check for two modes)."""
    comp, info = gate.compare_pairs([1.0] * len(d), [math.exp(x) for x in d], True, CFG,
                                    pooled)
    return gate.decide(comp, comp.p_worse, CFG, looks)[0], info['variance']['source'] == 'history'


def judge_signed_rank(d: list[float], looks: list[int] | None) -> tuple[str]:
    return (judge_log_ratios(d, None, looks)[0],)


def through_looks(pairs: Iterator[float], judge) -> tuple:
    """The nightly loop: ``judge(d, LOOKS)`` at each of LOOKS while INCONCLUSIVE.

    Returns (verdict, pairs used, whatever else ``judge`` returned).
    """
    d: list[float] = []
    for n in LOOKS:
        d += itertools.islice(pairs, n - len(d))
        verdict, *extra = judge(d, LOOKS)
        if verdict not in UNDECIDED:
            break
    return (verdict, n, *extra)


def one_gate(noise: Noise, n: int, ratio: float) -> tuple[str, int]:
    """Verdict of one metric with ``n`` pairs whose true candidate ratio is ``ratio``."""
    d = list(itertools.islice(log_ratios(noise, ratio), n))
    return judge_signed_rank(d, None)[0], n


def sequential(noise: Noise, ratio: float) -> tuple[str, int]:
    return through_looks(log_ratios(noise, ratio), judge_signed_rank)


def rates(fn, noise, reps, *args) -> dict[str, float]:
    out = {'FAIL': 0, 'PASS': 0, 'INCONCLUSIVE': 0, gate.NO_SLOWDOWN_SEEN: 0, 'pairs': 0,
           'pooled': 0}
    for _ in range(reps):
        v, n, *used = fn(noise, *args)
        out[v] += 1
        out['pairs'] += n
        out['pooled'] += bool(used and used[0])
    return {k: v / reps for k, v in out.items()}


# ------------------------------------------------------------ the table
TABLE_RATIOS = (1.0, 0.98, 0.97, 0.96, 0.95, 0.90, 0.80)


def gate_night(noise: Noise, ratio: float, cfg: dict, pooled: stats.PooledVariance | None,
               n: int, looks: list[int] | None) -> tuple[str, int, bool]:
    """One night of one gated metric whose true candidate/baseline ratio is ``ratio``,
    judged as ``run_gate`` judges each metric -- :func:`h5regress.gate.compare_pairs`
    then :func:`h5regress.gate.decide` (one metric: Benjamini-Hochberg's q is its p)
    -- at ``n`` pairs, or at each of ``looks`` while INCONCLUSIVE (the nightly's
    loop). Returns (verdict, pairs used, whether it was "significantly slower, not
    shown beyond the margin", whether the runs were measured from their modes)."""
    base: list[float] = []
    cand: list[float] = []
    for k in looks or [n]:
        while len(base) < k:
            a, b = noise.pair()
            base.append(a)
            cand.append(b * ratio)
        comp, info = gate.compare_pairs(base, cand, True, cfg, pooled)
        verdict, reason = gate.decide(comp, comp.p_worse, cfg, looks)
        if verdict not in UNDECIDED:
            break
    return (verdict, len(base), gate.is_slower(verdict, reason),
            bool(info['modes'] and info['modes']['centred']))


def table_cell(tonight: Noise, history: Noise | None, ratio: float, cfg: dict, nights: int,
               looks: list[int] | None, n: int = 20) -> dict[str, float]:
    """Rates over ``nights`` nights (a fresh history of 30 A/A nights each when given)."""
    out = {'FAIL': 0, 'PASS': 0, 'INCONCLUSIVE': 0, gate.NO_SLOWDOWN_SEEN: 0, 'slower': 0,
           'pairs': 0, 'centred': 0}
    for _ in range(nights):
        pooled = past_nights(history, cfg=cfg) if history is not None else None
        verdict, used, slower, centred = gate_night(tonight, ratio, cfg, pooled, n, looks)
        out[verdict] += 1
        out['slower'] += slower
        out['pairs'] += used
        out['centred'] += centred
    return {k: v / nights for k, v in out.items()}


def section_table(cfg: dict, nights: int, seed: int, quick_models: bool = False) -> None:
    """Noise model x true ratio x design: FAIL, PASS, INCONCLUSIVE, mean pairs."""
    rng = random.Random(seed)
    hv = cfg['history_variance']
    print(f'\n== 0. The table: one gated metric, {nights} nights per row; designs: 20 pairs, '
          f'the loop {LOOKS} (gate, +5 pairs while INCONCLUSIVE), each without history and '
          f'with 30 past A/A nights of 20 pairs (pooled-t when tonight passes the F test at '
          f'{hv["consistency_level"]}). FAIL: q <= alpha {cfg["alpha"]} (its spending share '
          f'at an early look) and the {cfg["margin_confidence"]:.0%} upper bound below '
          f'{1 - cfg["margin"]:.2f}; PASS: lower bound above it. "slower": INCONCLUSIVE '
          f'because significantly slower but not shown beyond the margin (in INC).')
    print(f'{"noise (tonight / history)":<34}{"ratio":>6}  {"design":<16}{"FAIL":>8}'
          f'{"PASS":>8}{"INC":>8}{"slower":>8}{"pairs":>7}')
    ln = lambda cv: Noise('lognormal', cv, rng=rng)  # noqa: E731
    rows: list[tuple[str, Noise, Noise | None, tuple[float, ...], bool]] = []
    for cv in (0.05, 0.08):
        rows.append((f'lognormal CV {cv:.0%}', ln(cv), None, TABLE_RATIOS, True))
        rows.append((f'lognormal CV {cv:.0%} / same', ln(cv), ln(cv), TABLE_RATIOS, True))
    for k in (1.2, 1.5, 2.0):
        rows.append((f'lognormal CV {0.08 * k:.1%} / CV 8 %', ln(0.08 * k), ln(0.08), (1.0,),
                     True))
    if not quick_models:
        rows.append(('heavy tail CV 8%', Noise('heavy', 0.08, rng=rng), None, (1.0, 0.9), True))
        rows.append(('shared-pair CV 10%', Noise('shared', 0.10, rng=rng), None, (1.0, 0.9),
                     True))
    rows.append(('bimodal 1:2, CV 5% in a mode', Noise('bimodal', 0.05, rng=rng), None,
                 TABLE_RATIOS, False))
    rows.append(('bimodal 1:2, CV 8% in a mode', Noise('bimodal', 0.08, rng=rng), None,
                 (1.0, 0.97, 0.95, 0.90, 0.80), False))
    for label, tonight, history, ratios, _ in rows:
        for ratio in ratios:
            for design, looks in (('20 pairs', None), (f'loop {LOOKS[0]}-{LOOKS[-1]}', LOOKS)):
                r = table_cell(tonight, history, ratio, cfg, nights, looks)
                print(f'{label:<34}{ratio:>6.2f}  {design:<16}{r["FAIL"]:>8.2%}'
                      f'{r["PASS"]:>8.1%}{r["INCONCLUSIVE"]:>8.1%}{r["slower"]:>8.1%}'
                      f'{r["pairs"]:>7.1f}', flush=True)


# ------------------------------------------------------------ two modes
#: the two-mode models of issue 25: (label, factor between the modes, CV within a
#: mode, shares of the high mode (baseline, candidate), true within-mode ratios)
MODE_MODELS = (
    ('modes 15 % apart, CV 2 %', 1.15, 0.02, (0.5, 0.5), (1.0, 0.90, 0.80, 0.70)),
    ('modes 15 % apart, CV 1 %', 1.15, 0.01, (0.5, 0.5), (1.0, 0.80)),
    ('modes 15 %, high 30 %', 1.15, 0.02, (0.3, 0.3), (1.0, 0.80)),
    ('modes 2x apart, CV 5 %', 2.0, 0.05, (0.5, 0.5), (1.0, 0.90, 0.80)),
    ('modes 2x apart, CV 8 %', 2.0, 0.08, (0.5, 0.5), (1.0, 0.80)),
    ('15 %, shares 0.7 -> 0.3', 1.15, 0.02, (0.7, 0.3), (1.0,)),
    ('2x, shares 0.7 -> 0.3', 2.0, 0.05, (0.7, 0.3), (1.0,)),
    ('2x, shares 0.6 -> 0.4', 2.0, 0.05, (0.6, 0.4), (1.0,)),
)


def section_modes(cfg: dict, nights: int, seed: int) -> list[dict]:
    """Two-mode nights judged by the rule before issue 25 (the modes of both builds'
    runs whenever both are bimodal) and by the rule of ``cfg`` (each build agrees);
    returns the rows (model, true ratio, design, the rates after)."""
    mc = cfg['modes']
    before = dict(cfg, modes=dict(mc, each_build=False))
    print(f'\n== 8. Two modes (issue 25): one gated metric, {nights} nights per row, each run '
          f'in the high mode with its build\'s share; "true" is the candidate\'s geometric '
          f'mean over the baseline\'s (a shift of the shares included). Before: the modes of '
          f'both builds\' runs whenever both are bimodal. After: only when each build agrees '
          f'(centre_tolerance {mc["centre_tolerance"]}, share_level {mc["share_level"]}); '
          f'"centred": nights whose last look measured the runs from their modes')
    print(f'{"model":<26}{"true":>6}  {"design":<12}{"before: FAIL":>13}{"PASS":>7}'
          f'{"slower":>7}{"centred":>8} |{"after: FAIL":>12}{"PASS":>7}{"slower":>7}'
          f'{"centred":>8}{"pairs":>6}')
    rows = []
    for label, gap, cv, shares, ratios in MODE_MODELS:
        for ratio in ratios:
            true = ratio * gap ** (shares[1] - shares[0])
            for design, looks in (('20 pairs', None), (f'loop {LOOKS[0]}-{LOOKS[-1]}', LOOKS)):
                cells = []
                for rule in (before, cfg):
                    noise = Noise('bimodal', cv, rng=random.Random(seed), gap=gap,
                                  high_share=shares)
                    cells.append(table_cell(noise, None, ratio, rule, nights, looks))
                (b, a) = cells
                rows.append({'model': label, 'ratio': ratio, 'design': design, **a})
                print(f'{label:<26}{true:>6.3f}  {design:<12}{b["FAIL"]:>13.1%}{b["PASS"]:>7.1%}'
                      f'{b["slower"]:>7.1%}{b["centred"]:>8.0%} |{a["FAIL"]:>12.1%}'
                      f'{a["PASS"]:>7.1%}{a["slower"]:>7.1%}{a["centred"]:>8.0%}'
                      f'{a["pairs"]:>6.1f}', flush=True)
    return rows
# ------------------------------------------------- a pair lost at the cap (issue 25)
def _planned_look_level(n, looks, alpha, rho=stats.SPENDING_RHO, pairs_run=None):
    """The rule before issue 25: the level of the last planned look at or below ``n``
    (a metric with 19 of 20 pairs was judged at the 15-pair look's level)."""
    if not looks:
        return alpha
    levels = stats.sequential_levels(tuple(looks), alpha, rho)
    return levels[max([0] + [i for i, planned in enumerate(looks) if n >= planned])]


def loop_night(noise: Noise, ratio: float, lost_at_cap: int = 0,
               stop: int | None = None) -> tuple[str, int]:
    """The loop 10/15/20 of one metric, judged by ``compare_pairs`` and ``decide`` with
    the pairs the loop has run: its last look with ``lost_at_cap`` pairs fewer than the
    loop ran (failed runs); or, ``stop``, ended there by ``ci/nightly --time-limit``: the
    looks before it at their planned levels, the verdict at ``stop`` with the looks
    ``ci/nightly`` then gives the gate (those made, then ``stop``)."""
    ended = LOOKS if stop is None else [k for k in LOOKS if k < stop] + [stop]
    base: list[float] = []
    cand: list[float] = []
    for k in ended:
        final = k == ended[-1]
        while len(base) < k - (lost_at_cap if final else 0):
            a, b = noise.pair()
            base.append(a)
            cand.append(b * ratio)
        comp, _ = gate.compare_pairs(base, cand, True, CFG, None)
        verdict, _ = gate.decide(comp, comp.p_worse, CFG, ended if final else LOOKS,
                                 pairs_run=k)
        if verdict != 'INCONCLUSIVE':
            break
    return verdict, len(base)


def section_lost_pair(nights: int, seed: int) -> None:
    """Issue 25, item 3: a loop whose last look lost one pair, judged at the level of
    the last planned look below its pairs (before) and on the pairs reached (now)."""
    print(f'\n== 9. One pair lost at the cap: the loop {LOOKS}, the last look with '
          f'{LOOKS[-1] - 1} pairs; one gated metric, {nights} nights per cell')
    print(f'{"noise":<20}{"ratio":>6}{"pairs at cap":>14}{"rule":>18}{"FAIL":>8}{"PASS":>8}')
    rng = random.Random(seed)
    cells = (('lognormal CV 8%', Noise('lognormal', 0.08, rng=rng), (1.0, 0.90)),
             ('lognormal CV 5%', Noise('lognormal', 0.05, rng=rng), (1.0,)),
             ('heavy tail CV 8%', Noise('heavy', 0.08, rng=rng), (1.0,)))
    rules = (('before (planned)', _planned_look_level), ('pairs reached', stats.look_level))
    for label, noise, ratios in cells:
        for ratio in ratios:
            for lost in (0, 1):
                for rule, fn in rules:
                    if lost == 0 and fn is _planned_look_level:
                        continue                     # the same levels without a lost pair
                    saved, stats.look_level = stats.look_level, fn
                    try:
                        got = [loop_night(noise, ratio, lost)[0] for _ in range(nights)]
                    finally:
                        stats.look_level = saved
                    print(f'{label:<20}{ratio:>6.2f}{LOOKS[-1] - lost:>14}{rule:>18}'
                          f'{got.count("FAIL") / nights:>8.2%}'
                          f'{got.count("PASS") / nights:>8.1%}', flush=True)


def section_time_limit(nights: int, seed: int) -> None:
    """A loop ended by ``--time-limit`` between its looks: its FAIL rate on an unchanged
    build stays at most alpha, and what it gives up against the whole loop."""
    print(f'\n== 9b. The loop {LOOKS} ended by a time limit; one gated metric, {nights} '
          f'nights per cell (alpha {CFG["alpha"]})')
    print(f'{"noise":<20}{"ratio":>6}{"ended at":>10}{"FAIL":>8}{"PASS":>8}')
    rng = random.Random(seed)
    for label, noise in (('lognormal CV 8%', Noise('lognormal', 0.08, rng=rng)),
                         ('heavy tail CV 8%', Noise('heavy', 0.08, rng=rng))):
        for ratio in (1.0, 0.90):
            for stop in (10, 12, 17, LOOKS[-1]):
                got = [loop_night(noise, ratio, stop=stop)[0] for _ in range(nights)]
                print(f'{label:<20}{ratio:>6.2f}{stop:>10}{got.count("FAIL") / nights:>8.2%}'
                      f'{got.count("PASS") / nights:>8.1%}', flush=True)


# ------------------------------------------------- the first look (issue 25)
class StudentNoise(Noise):
    """Runs with heavy-tailed log noise: Student t(3), scaled to the CV's log-sd."""

    def pair(self) -> tuple[float, float]:
        def run() -> float:
            t3 = self.rng.gauss(0, 1) / math.sqrt(self.rng.gammavariate(1.5, 2.0) / 3.0)
            return math.exp(self.sigma * t3 / math.sqrt(3.0))
        return run(), run()


#: noise models of the first-look section: tonight's noise, and the history's
#: (None: no history; the history's pooled variance when tonight passes its F test)
FIRST_LOOK_MODELS = (
    ('normal CV 8%', lambda rng: Noise('lognormal', 0.08, rng=rng), None),
    ('normal CV 5%', lambda rng: Noise('lognormal', 0.05, rng=rng), None),
    ('t(3) CV 8%', lambda rng: StudentNoise('t3', 0.08, rng=rng), None),
    ('outlier runs CV 8%', lambda rng: Noise('heavy', 0.08, rng=rng), None),
    ('two modes 1:2 CV 5%', lambda rng: Noise('bimodal', 0.05, rng=rng), None),
    ('shared-pair CV 10%', lambda rng: Noise('shared', 0.10, rng=rng), None),
    ('CV 12% / history 8%', lambda rng: Noise('lognormal', 0.12, rng=rng),
     lambda rng: Noise('lognormal', 0.08, rng=rng)),
    ('CV 9.6% / history 8%', lambda rng: Noise('lognormal', 0.096, rng=rng),
     lambda rng: Noise('lognormal', 0.08, rng=rng)),
    ('CV 8% / history 8%', lambda rng: Noise('lognormal', 0.08, rng=rng),
     lambda rng: Noise('lognormal', 0.08, rng=rng)),
)

#: designs weighed: (label, tonight_t_below, spending rho)
FIRST_LOOK_DESIGNS = (('signed rank, rho 3', 0, 3.0), ('t < 15 pairs, rho 3', 15, 3.0),
                      ('t < 15 pairs, rho 2', 15, 2.0), ('t < 15 pairs, rho 1', 15, 1.0),
                      ('t always, rho 2', 10 ** 6, 2.0))


def many_metric_night(noise: Noise, ratios: list[float], cfg: dict,
                      pooled: stats.PooledVariance | None, looks: list[int],
                      first_only: bool = False) -> tuple[list[str], int, list[bool]]:
    """One night of ``len(ratios)`` gated metrics (true ratios), the loop at ``looks``:
    per look the night's pooled variances (``gate.night_pools``: scaled when the night
    is noisier than its history), each metric through ``gate.compare_pairs``, Benjamini-Hochberg across
    them, ``gate.decide`` with the night's drawn interval (what ``decide_all`` does);
    the night stops at the first look that is not INCONCLUSIVE (any FAIL, or all
    PASS). Returns the verdicts of the last look, its pairs (``first_only``: the
    first look's) and whether each metric's drawn interval lies below 1."""
    base: list[list[float]] = [[] for _ in ratios]
    cand: list[list[float]] = [[] for _ in ratios]
    for k in looks:
        for b, c, ratio in zip(base, cand, ratios):
            while len(b) < k:
                x, y = noise.pair()
                b.append(x)
                c.append(y * ratio)
        pools, _ = gate.night_pools(
            [([math.log(y / x) for x, y in zip(b, c)], pooled) for b, c in zip(base, cand)],
            cfg['history_variance'])
        comps = [gate.compare_pairs(b, c, True, cfg, pool)[0]
                 for b, c, pool in zip(base, cand, pools)]
        qs = stats.benjamini_hochberg([comp.p_worse for comp in comps])
        drawn = gate.drawn_interval(qs, cfg)
        verdicts = [gate.decide(comp, q, cfg, looks, k, drawn)[0] for comp, q in zip(comps, qs)]
        if first_only or 'FAIL' in verdicts or all(v == 'PASS' for v in verdicts):
            break
    below = [comp.upper((1 + drawn.confidence) / 2) < 0 for comp in comps]
    return verdicts, k, below


def first_look_cell(model, ratio: float, cfg: dict, nights: int, metrics: int,
                    first_only: bool, rng: random.Random) -> dict[str, float]:
    """Rates over nights: any FAIL (the loop's false FAIL when ``ratio`` is 1), the
    slowed metric (the first) FAILed, and at the first look; the slowed metric's
    drawn interval below 1 (``shown``); nights with a PASS beside a drawn interval
    below 1 (``pass_below``)."""
    _, tonight, history = model
    noise = tonight(rng)
    past = history(rng) if history else None
    out = {'night_fail': 0, 'slowed_fail': 0, 'at_first': 0, 'all_pass': 0, 'no_slowdown': 0,
           'shown': 0, 'pass_below': 0}
    for _ in range(nights):
        pooled = past_nights(past, cfg=cfg) if past else None
        verdicts, k, below = many_metric_night(noise, [ratio] + [1.0] * (metrics - 1), cfg,
                                               pooled, LOOKS, first_only)
        out['shown'] += below[0]
        out['pass_below'] += any(v == 'PASS' and b for v, b in zip(verdicts, below))
        out['night_fail'] += 'FAIL' in verdicts
        out['slowed_fail'] += verdicts[0] == 'FAIL'
        out['at_first'] += verdicts[0] == 'FAIL' and k == LOOKS[0]
        out['all_pass'] += all(v == 'PASS' for v in verdicts)
        out['no_slowdown'] += all(v in ('PASS', gate.NO_SLOWDOWN_SEEN) for v in verdicts)
    return {key: v / nights for key, v in out.items()}


def first_look_ceiling(metrics: int = 12, n: int = 10, cvs: tuple[float, ...] = (0.05, 0.08),
                       slowdowns: tuple[float, ...] = (1.25, 1.5)) -> None:
    """The most any spending can give the Student t test at the first look: the
    power (noncentral t, df n - 1) of the one slowed metric among ``metrics`` when
    a fraction of alpha is spent there (BH makes its q about ``metrics`` times its
    p when the others are unchanged), under log-normal noise of each CV."""
    from scipy import stats as sps
    alpha = CFG['alpha']
    fractions = ((f'rho 3 ({LOOKS[0] / LOOKS[-1]:.2f}^3)', (LOOKS[0] / LOOKS[-1]) ** 3),
                 (f'rho 2 ({LOOKS[0] / LOOKS[-1]:.2f}^2)', (LOOKS[0] / LOOKS[-1]) ** 2),
                 ('rho 1', LOOKS[0] / LOOKS[-1]), ('all of alpha', 1.0))
    print(f'\nCeiling of the first look ({n} pairs, {metrics} metrics, alpha {alpha}): '
          f'power of Student\'s t at the share of alpha spent there (normal noise)')
    print(f'{"spent at the first look":<26}' + ''.join(
        f'{f"x{r} CV {cv:.0%}":>14}' for cv in cvs for r in slowdowns))
    for label, frac in fractions:
        crit = sps.t.ppf(1 - alpha * frac / metrics, n - 1)
        cells = []
        for cv in cvs:
            se = math.sqrt(2 * math.log1p(cv * cv)) / math.sqrt(n)
            cells += [sps.nct.sf(crit, n - 1, math.log(r) / se) for r in slowdowns]
        print(f'{label:<26}' + ''.join(f'{c:>14.1%}' for c in cells))


def section_first_look(nights: int, seed: int, metrics: int = 12,
                       designs: tuple[int, ...] | None = None,
                       aa_nights: int | None = None) -> list[dict]:
    """Issue 25, item 4: can the first look FAIL a large slowdown in a night of
    ``metrics`` gated metrics, and at what cost in false FAILs of the loop? A/A
    cells run ``aa_nights`` (default twice ``nights``); returns the rows."""
    aa_nights = aa_nights or 2 * nights
    print(f'\n== 10. The first look: {metrics} gated metrics, BH across them, the loop '
          f'{LOOKS}, {nights} nights per cell ({aa_nights} for A/A); one metric slowed '
          f'(x1.5: ratio 0.667; x1.25: 0.8; 10 %: 0.9), the others unchanged. "A/A FAIL": '
          f'nights with any FAIL when nothing changed; "x1.5 @10": the slowed metric FAILs '
          f'at the first look; "10 % @<=20": within the loop.')
    print(f'{"design":<22}{"noise":<22}{"A/A FAIL":>9}{"A/A PASS":>9}{"PASS|NSS":>9}'
          f'{"x1.5 @10":>9}{"x1.25 @10":>10}{"x1.25 @<=20":>12}{"10% @<=20":>10}'
          f'{"A/A PASS<1":>11}{"10% <1":>8}')
    print(f'(intervals drawn: {CFG.get("intervals")}; "A/A PASS<1": A/A nights with a PASS '
          f'beside a drawn interval below 1; "10% <1": the 10 % slowed metric\'s drawn '
          f'interval below 1 at the loop\'s end)')
    first_look_ceiling(metrics)
    rows = []
    saved = stats.look_level.__defaults__
    for i, (label, below, rho) in enumerate(FIRST_LOOK_DESIGNS):
        if designs is not None and i not in designs:
            continue
        cfg = {**CFG, 'tonight_t_test': {**CFG['tonight_t_test'], 'below_pairs': below}}
        stats.look_level.__defaults__ = (rho, None)
        try:
            for model in FIRST_LOOK_MODELS:
                rng = random.Random(seed)
                cells = {'aa': (1.0, aa_nights, False), 'big': (1 / 1.5, nights, True),
                         'mid': (1 / 1.25, nights, False), 'ten': (0.9, nights, False)}
                r = {key: first_look_cell(model, ratio, cfg, n, metrics, first, rng)
                     for key, (ratio, n, first) in cells.items()}
                rows.append({'design': label, 'model': model[0], **r})
                print(f'{label:<22}{model[0]:<22}{r["aa"]["night_fail"]:>9.2%}'
                      f'{r["aa"]["all_pass"]:>9.1%}{r["aa"]["no_slowdown"]:>9.1%}'
                      f'{r["big"]["at_first"]:>9.1%}{r["mid"]["at_first"]:>10.1%}'
                      f'{r["mid"]["slowed_fail"]:>12.1%}{r["ten"]["slowed_fail"]:>10.1%}'
                      f'{r["aa"]["pass_below"]:>11.2%}{r["ten"]["shown"]:>8.1%}', flush=True)
        finally:
            stats.look_level.__defaults__ = saved
    return rows


def section_issue_25(nights: int, aa_nights: int, modes_nights: int, seed: int) -> None:
    """Every simulated figure of issue 25's "Figures to reach", from one command
    (``--issue-25``): section 8 (two modes) and section 10 with the gate's design,
    then each figure against its target."""
    t0 = time.perf_counter()
    modes = section_modes(CFG, modes_nights, seed)
    first = section_first_look(nights, seed, designs=(2,), aa_nights=aa_nights)
    slowed = [r for r in modes if r['ratio'] <= 0.8 and 'shares' not in r['model']]
    aa_modes = [r for r in modes if r['ratio'] == 1.0 and 'shares' not in r['model']]
    worst = lambda rows, key, fn: fn(rows, key=key)  # noqa: E731
    w_aa = worst(first, lambda r: r['aa']['night_fail'], max)
    w_big = worst(first, lambda r: r['big']['at_first'], min)
    w_nss = worst(first, lambda r: r['aa']['no_slowdown'], min)
    cv8 = next(r for r in first if r['model'] == 'normal CV 8%')
    print(f'\n== Issue 25, figures to reach ({modes_nights} nights per mode cell; 12 metrics: '
          f'{nights} nights per cell, {aa_nights} A/A)')
    print(f'modes: a slowdown of 20 % or more PASSes on at most '
          f'{max(r["PASS"] for r in slowed):.1%} of nights (target 0 %); A/A false FAIL at '
          f'most {max(r["FAIL"] for r in aa_modes):.2%} (one metric)')
    print(f'A/A nights of 12 metrics with a FAIL: at most {w_aa["aa"]["night_fail"]:.2%} '
          f'({w_aa["model"]}; target <= 1 %)')
    print(f'1.5x FAILs at 10 pairs: at least {w_big["big"]["at_first"]:.1%} '
          f'({w_big["model"]}; target >= 95 %)')
    print(f'1.25x at CV 8 %: FAILs at 10 pairs {cv8["mid"]["at_first"]:.1%}, within 20 pairs '
          f'{cv8["mid"]["slowed_fail"]:.1%}')
    print(f'A/A nights ending PASS or NO-SLOWDOWN-SEEN: at least '
          f'{w_nss["aa"]["no_slowdown"]:.1%} ({w_nss["model"]}; target >= 80 %)')
    print(f'(issue 25 figures: {time.perf_counter() - t0:.0f} s)')


# ------------------------------------------- the first look's test: options (issue 25)
def _yuen_p(d, trim: float):
    """One-sided p (slowdown) of Yuen's trimmed-mean t test per row of ``d`` (nights x
    pairs): trimmed mean over the winsorized SD, df n - 2g - 1."""
    import numpy as np
    n = d.shape[-1]
    g = int(trim * n)
    s = np.sort(d, axis=-1)
    tm = s[..., g:n - g].mean(axis=-1)
    w = np.clip(s, s[..., g:g + 1], s[..., n - g - 1:n - g])
    se = w.std(axis=-1, ddof=1) / ((1 - 2 * g / n) * math.sqrt(n))
    return special.stdtr(n - 2 * g - 1, tm / se)


def _huber_t(d, k: float = 1.345):
    """Huber's M-estimate of the mean of each row of ``d`` (MAD scale, 30 reweighting
    steps) over its sandwich standard error."""
    import numpy as np
    d = np.atleast_2d(np.asarray(d, dtype=float))
    mu = np.median(d, axis=-1, keepdims=True)
    s = np.maximum(1.4826 * np.median(np.abs(d - mu), axis=-1, keepdims=True), 1e-12)
    for _ in range(30):
        r = np.abs(d - mu) / s
        w = np.where(r <= k, 1.0, k / np.maximum(r, 1e-12))
        mu = (w * d).sum(-1, keepdims=True) / w.sum(-1, keepdims=True)
    r = (d - mu) / s
    slope = np.maximum((np.abs(r) <= k).mean(-1), 1e-3)
    se = s[..., 0] * np.sqrt((np.clip(r, -k, k) ** 2).mean(-1) / slope ** 2 / d.shape[-1])
    return mu[..., 0] / se


@functools.lru_cache(maxsize=4)
def _huber_null(n: int, draws: int = 2_000_000, seed: int = 1):
    """The sorted null law of :func:`_huber_t` at ``n`` pairs, from normal samples (the
    statistic does not depend on the location or scale of the noise)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([_huber_t(rng.normal(size=(draws // 10, n)))
                                   for _ in range(10)]))


def _huber_p(d) -> float:
    """One-sided p (slowdown) of the Huber t of ``d``, from its simulated null law."""
    import numpy as np
    null = _huber_null(len(d))
    return float(np.searchsorted(null, _huber_t(d)[0], side='right') / len(null))


def _gap_removed(lb, lc, cfg):
    """Pair log-ratios with each run's high mode moved down by the modes' gap (each
    build's own split, the gap the mean of both builds' gaps), the level of each
    build's low mode kept: None unless both builds are bimodal."""
    kw = {'min_d': float(cfg['modes']['min_d']), 'min_share': float(cfg['modes']['min_share'])}
    tb, tc = stats.two_modes(lb, **kw), stats.two_modes(lc, **kw)
    if not (tb and tc and tb.bimodal and tc.bimodal):
        return None
    gap = ((tb.high_mean - tb.low_mean) + (tc.high_mean - tc.low_mean)) / 2
    drop = lambda x, t: x - gap * (x > t.cut)  # noqa: E731
    return [drop(c, tc) - drop(b, tb) for b, c in zip(lb, lc)]


def section_first_look_options(nights: int, seed: int, metrics: int = 12, n: int = 10) -> None:
    """The first look's test of tonight's pairs, options with numbers: Student's t
    (today), Yuen's trimmed t (10 and 20 %), and for two-mode runs the t test on the
    pairs with the modes' gap taken out of each high-mode run; Huber's M-estimate
    (MAD scale) over its standard error, its null law simulated. Per noise model: nights
    with any metric at BH q <= the first look's level (A/A: the first look's false
    FAIL, the margin left aside, so an upper bound), and the 1.5x-slowed metric's."""
    import numpy as np
    level = stats.look_level(LOOKS[0], LOOKS, CFG['alpha'])
    print(f'\n== 11. The first look\'s test, options: {metrics} metrics, {n} pairs, level '
          f'{level:.4g}, {nights} nights per cell (margin not applied)')
    print(f'{"noise":<22}{"test":<22}{"A/A q<=level":>13}{"x1.5 q<=level":>14}')
    rng = random.Random(seed)
    for label, make, _ in FIRST_LOOK_MODELS[:6]:
        noise = make(rng)
        runs = {ratio: [[[noise.pair() for _ in range(n)] for _ in range(metrics)]
                        for _ in range(nights)] for ratio in (1.0, 1 / 1.5)}
        tests = {'Student t': lambda lb, lc: stats.student_t(
                     [c - b for b, c in zip(lb, lc)]).p_worse,
                 'Yuen 10 %': lambda lb, lc: float(_yuen_p(np.array(
                     [c - b for b, c in zip(lb, lc)]), 0.1)),
                 'Yuen 20 %': lambda lb, lc: float(_yuen_p(np.array(
                     [c - b for b, c in zip(lb, lc)]), 0.2)),
                 'Huber t, MAD': lambda lb, lc: _huber_p([c - b for b, c in zip(lb, lc)])}
        if 'modes' in label:
            tests['t, gap removed'] = lambda lb, lc: stats.student_t(
                _gap_removed(lb, lc, CFG) or [c - b for b, c in zip(lb, lc)]).p_worse
        for name, test in tests.items():
            got = {}
            for ratio, per_night in runs.items():
                hit = 0
                for night in per_night:
                    ps = [test([math.log(a) for a, _ in m],
                               [math.log(b * (ratio if i == 0 else 1.0)) for _, b in m])
                          for i, m in enumerate(night)]
                    qs = stats.benjamini_hochberg(ps)
                    hit += (any(q <= level for q in qs) if ratio == 1.0 else qs[0] <= level)
                got[ratio] = hit / nights
            print(f'{label:<22}{name:<22}{got[1.0]:>13.2%}{got[1 / 1.5]:>14.1%}', flush=True)



def outlier_oracle(nights: int, seed: int, metrics: int = 12, n: int = 10) -> None:
    """Why the outlier-run model stays below 95 % at the first look: the t test's 1.5x
    FAILs by the number of pairs of the slowed metric holding an outlier run (5 % of
    runs 30 % slow, CV 8 %), and an oracle t test that drops exactly those pairs."""
    import numpy as np
    rng = np.random.default_rng(seed)
    s = Noise('heavy', 0.08).sigma
    level = stats.look_level(LOOKS[0], LOOKS, CFG['alpha'])

    def runs():
        slow = rng.random((nights, metrics, n)) < 0.05
        return rng.normal(-s * s / 2, s, (nights, metrics, n)) + slow * math.log(0.7), slow
    (lb, ob), (lc, oc) = runs(), runs()
    lc[:, 0, :] += math.log(1 / 1.5)
    d, out = lc - lb, ob | oc

    def t_p(x):
        return special.stdtr(len(x) - 1, x.mean() / (x.std(ddof=1) / math.sqrt(len(x))))
    plain, oracle, k = [], [], out[:, 0, :].sum(axis=-1)
    for i in range(nights):
        ps = [t_p(d[i, j]) for j in range(metrics)]
        plain.append(stats.benjamini_hochberg(ps)[0] <= level)
        oracle.append(stats.benjamini_hochberg([t_p(d[i, 0, ~out[i, 0]])] + ps[1:])[0] <= level)
    plain = np.array(plain)
    print(f'outlier runs CV 8 %, 1.5x, {nights} nights: the t test FAILs '
          + ', '.join(f'{plain[k == j].mean():.1%} of the {np.mean(k == j):.1%} of nights with '
                      f'{j} outlier pair(s)' for j in range(4))
          + f'; all {plain.mean():.1%}; an oracle dropping those pairs {np.mean(oracle):.1%}')


# ------------------------------------------------------------ with history
HV = CFG['history_variance']


def past_nights(noise: Noise, nights: int = 30, n: int = 20,
                cfg: dict | None = None) -> stats.PooledVariance:
    """Pool of ``nights`` simulated A/A nights of ``n`` pairs (as the gate pools them)."""
    hv = (cfg or CFG)['history_variance']
    per_night = []
    for _ in range(nights):
        d = []
        for _ in range(n):
            a, b = noise.pair()
            d.append(math.log(b) - math.log(a))
        per_night.append((n, stats.variance(d)))
    return stats.pool_variance(per_night, hv['min_nights'], hv['min_pairs'], hv['window'],
                               hv['screen_level'])


def judge_with_history(d: list[float], pooled: stats.PooledVariance,
                       looks: list[int] | None) -> tuple[str, bool]:
    """The gate's choice of variance and verdict for one metric."""
    return judge_log_ratios(d, pooled, looks)


def one_gate_hist(noises: tuple[Noise, Noise], n: int, ratio: float,
                  hist_nights: int = 30) -> tuple[str, int, bool]:
    """``noises``: (history's noise, tonight's noise); a fresh history per replication."""
    past, tonight = noises
    pooled = past_nights(past, hist_nights)
    d = list(itertools.islice(log_ratios(tonight, ratio), n))
    verdict, used = judge_with_history(d, pooled, None)
    return verdict, n, used


def sequential_hist(noises: tuple[Noise, Noise], ratio: float) -> tuple[str, int, bool]:
    past, tonight = noises
    pooled = past_nights(past)
    return through_looks(log_ratios(tonight, ratio),
                         lambda d, looks: judge_with_history(d, pooled, looks))


def min_detectable(fail_rate, power: float = 0.8) -> float:
    """Smallest slowdown with ``fail_rate(ratio) >= power`` (bisection, 0.25 % resolution)."""
    lo, hi = 0.0, 0.40
    while hi - lo > 0.0025:
        mid = (lo + hi) / 2
        if fail_rate(1 - mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def pairs_needed(noise: Noise, reps: int, slow: float = 0.10, power: float = 0.95) -> int:
    """Fewest pairs (fixed design) detecting ``slow`` with ``power``."""
    for n in range(10, 61, 2):
        if rates(one_gate, noise, reps, n, 1 - slow)['FAIL'] >= power:
            return n
    return 999


def oracle(cv: float, n: int, alpha: float, margin: float, slow: float) -> float:
    """Power of a one-sided z-test with known variance and the same margin rule."""
    s = math.sqrt(2) * math.sqrt(math.log1p(cv * cv))
    se = s / math.sqrt(n)
    thr = max(NormalDist().inv_cdf(1 - alpha) * se, -math.log(1 - margin))
    return NormalDist().cdf((-math.log(1 - slow) - thr) / se)


def residuals_from(path: str) -> list[float]:
    recs, _ = read_jsonl(Path(path).read_text(), path)
    groups: dict[tuple, list[float]] = {}
    for r in recs:
        if r.value > 0:
            groups.setdefault((r.key, r.hdf5_build), []).append(math.log(r.value))
    res = []
    for vals in groups.values():
        if len(vals) >= 5:
            m = stats.median(vals)
            res += [v - m for v in vals]
    if len(res) < 20:
        raise SystemExit(f'{path}: fewer than 20 residuals (need 5+ runs per configuration)')
    return res


# ------------------------------------------------------------------ sections
def section_single(models, pairs, reps, slowdowns, rng) -> None:
    print('\n== 1. One gated metric, fixed pairs (FAIL: q <= %.2g and the %.0f%% upper bound '
          '< %.2f; PASS: 95%% CI lower bound > %.2f)' % (
              CFG['alpha'], 100 * CFG['margin_confidence'], 1 - CFG['margin'],
              1 - CFG['margin']))
    head = (f'{"noise":<22}{"pairs":>6}{"false alarm":>13}{"PASS@1.0":>10}'
            + ''.join(f'{"det " + format(s, ".0%"):>9}' for s in slowdowns)
            + f'{"80% power at":>14}')
    print(head)
    for name, noise in models:
        for n in pairs:
            null = rates(one_gate, noise, reps, n, 1.0)
            det = [rates(one_gate, noise, max(reps // 2, 500), n, 1 - s)['FAIL']
                   for s in slowdowns]
            mdd = min_detectable(lambda r: rates(one_gate, noise, max(reps // 4, 500), n,
                                                 r)['FAIL'])
            print(f'{name:<22}{n:>6}{null["FAIL"]:>13.2%}{null["PASS"]:>10.1%}'
                  + ''.join(f'{x:>9.1%}' for x in det) + f'{mdd:>14.1%}')
        print(f'{"":<22}pairs for 95 % detection of a 10 % slowdown: '
              f'{pairs_needed(noise, max(reps // 2, 500))}')


def section_sequential(models, reps, slowdowns) -> None:
    levels = ', '.join(f'{x:.4f}' for x in stats.sequential_levels(tuple(LOOKS), CFG['alpha']))
    print(f'\n== 2. Rerun loop: gate at {LOOKS} pairs while INCONCLUSIVE (FAIL at each look '
          f'needs q <= {levels}: alpha spent as alpha*(n/{LOOKS[-1]})^'
          f'{stats.SPENDING_RHO:g})')
    print(f'{"noise":<22}{"false alarm":>13}{"PASS@1.0":>10}{"mean pairs@1.0":>16}'
          + ''.join(f'{"det " + format(s, ".0%"):>9}' for s in slowdowns)
          + f'{"80% power at":>14}')
    for name, noise in models:
        null = rates(sequential, noise, reps, 1.0)
        det = [rates(sequential, noise, max(reps // 2, 500), 1 - s)['FAIL'] for s in slowdowns]
        mdd = min_detectable(lambda r: rates(sequential, noise, max(reps // 4, 500), r)['FAIL'])
        print(f'{name:<22}{null["FAIL"]:>13.2%}{null["PASS"]:>10.1%}{null["pairs"]:>16.1f}'
              + ''.join(f'{x:>9.1%}' for x in det) + f'{mdd:>14.1%}')


def section_history(cvs, pairs, reps, slowdowns, rng, model: str = 'lognormal',
                    mismatch: bool = True) -> None:
    print(f'\n== 5. With history: 30 past A/A nights x 20 pairs, variance pooled from the '
          f'newest {HV["window"]} (needs >= {HV["min_nights"]} nights of >= '
          f'{HV["min_pairs"]} pairs; t with '
          f'sum(n_i - 1) df), used when tonight passes the upper F test at '
          f'{HV["consistency_level"]:.0%}; else signed-rank. Noise: {model}')
    print(f'{"noise":<22}{"pairs":>7}{"false alarm":>13}{"PASS@1.0":>10}{"pooled@1.0":>12}'
          + ''.join(f'{"det " + format(s, ".0%"):>9}' for s in slowdowns)
          + f'{"80% power at":>14}')
    for cv in cvs:
        name = f'{model} CV {cv:.0%}'
        noises = (Noise(model, cv, rng=rng), Noise(model, cv, rng=rng))
        for n in pairs:
            null = rates(one_gate_hist, noises, reps, n, 1.0)
            det = [rates(one_gate_hist, noises, max(reps // 2, 500), n, 1 - s)['FAIL']
                   for s in slowdowns]
            mdd = min_detectable(lambda r: rates(one_gate_hist, noises, max(reps // 4, 500),
                                                 n, r)['FAIL'])
            print(f'{name:<22}{n:>7}{null["FAIL"]:>13.2%}{null["PASS"]:>10.1%}'
                  f'{null["pooled"]:>12.1%}' + ''.join(f'{x:>9.1%}' for x in det)
                  + f'{mdd:>14.1%}')
        null = rates(sequential_hist, noises, reps, 1.0)
        det = [rates(sequential_hist, noises, max(reps // 2, 500), 1 - s)['FAIL']
               for s in slowdowns]
        mdd = min_detectable(lambda r: rates(sequential_hist, noises, max(reps // 4, 500),
                                             r)['FAIL'])
        print(f'{name:<22}{"10-20":>7}{null["FAIL"]:>13.2%}{null["PASS"]:>10.1%}'
              f'{null["pooled"]:>12.1%}' + ''.join(f'{x:>9.1%}' for x in det)
              + f'{mdd:>14.1%}   (rerun loop, mean pairs@1.0 {null["pairs"]:.1f})')
    if not mismatch:
        return
    print(f'\n   Nights noisier than their history (history CV 8 %, A/A, 20 pairs and the '
          f'rerun loop): false alarms and how often the pooled variance was still used')
    print(f'{"tonight CV":>12}{"x hist":>8}{"FA n=20":>10}{"pooled":>9}{"FA loop":>10}'
          f'{"pooled":>9}')
    base_cv = 0.08
    for k in (1.0, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0):
        noises = (Noise(model, base_cv, rng=rng), Noise(model, base_cv * k, rng=rng))
        fixed = rates(one_gate_hist, noises, reps, 20, 1.0)
        loop = rates(sequential_hist, noises, reps, 1.0)
        print(f'{base_cv * k:>12.1%}{k:>8.1f}{fixed["FAIL"]:>10.2%}{fixed["pooled"]:>9.1%}'
              f'{loop["FAIL"]:>10.2%}{loop["pooled"]:>9.1%}')


def section_nights(nights: int, n_metrics: int, n_pairs: int, cv: float, seed: int) -> None:
    print(f'\n== 3. Whole nights through run_gate: {n_metrics} gated metrics x {n_pairs} '
          f'pairs, CV {cv:.0%}, BH across the night, {nights} nights per row')
    rng = random.Random(seed)
    noise = Noise('lognormal', cv, rng=rng)
    scenarios = (('all unchanged', {}),
                 ('1 metric 10 % slower', {0: 0.90}),
                 ('30 metrics 10 % slower', {i: 0.90 for i in range(0, n_metrics, 10)}))
    for label, slow in scenarios:
        fa_nights = fa_metrics = 0
        found = 0
        t0 = time.perf_counter()
        for k in range(nights):
            recs = night_records(f'2025-03-{k % 28 + 1:02d}', n_metrics, n_pairs, noise, slow,
                                 canary=False, fio=False)
            slow_params = [metric_params(i) for i in slow]
            slow_hashes = {r.config_hash for r in recs if r.params in slow_params}
            res = gate.run_gate(recs, 'hdf5-1.14.6', 'hdf5-develop', CFG)
            fails = [m for m in res['metrics'] if m['verdict'] == 'FAIL']
            false = [m for m in fails if m['config_hash'] not in slow_hashes]
            fa_metrics += len(false)
            fa_nights += bool(false)
            found += len(fails) - len(false)
        dt = time.perf_counter() - t0
        line = (f'  {label:<24} nights with a false alarm {fa_nights / nights:6.2%}  '
                f'false alarms per metric-night {fa_metrics / (nights * n_metrics):.4%}')
        if slow:
            line += f'  slowed metrics detected {found / (nights * len(slow)):6.1%}'
        print(line + f'  ({dt / nights:.2f} s per night)')


def section_oracle(pairs, slowdowns, cvs) -> None:
    print('\n== 4. Normal-theory bound (known-variance z-test, same alpha and margin, '
          'iid log-normal)')
    print(f'{"CV":>6}{"pairs":>6}' + ''.join(f'{"det " + format(s, ".0%"):>9}' for s in slowdowns)
          + f'{"80% power at":>14}')
    for cv in cvs:
        for n in pairs:
            det = [oracle(cv, n, CFG['alpha'], CFG['margin'], s) for s in slowdowns]
            lo, hi = 0.0, 0.5
            while hi - lo > 1e-4:
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if oracle(cv, n, CFG['alpha'], CFG['margin'], mid) >= 0.8 \
                    else (mid, hi)
            print(f'{cv:>6.0%}{n:>6}' + ''.join(f'{x:>9.1%}' for x in det) + f'{hi:>14.1%}')


# ------------------------------------------------------------------ real runs
def gate_log_ratios(d: list[float]) -> tuple[str, str]:
    """(verdict at len(d) pairs, verdict of the rerun loop over d's first LOOKS pairs)."""
    return judge_signed_rank(d, None)[0], through_looks(iter(d), judge_signed_rank)[0]


def section_real_pairs(path: str, reps: int, rng: random.Random, night: int = 20) -> None:
    by_fraction = pair_log_ratios(path)
    print(f'\n== 7. Real pairs from {Path(path).name} (benchmarks/real_pairs.py): consecutive '
          f'nights of {night} pairs as they ran, and {reps} nights resampled from the pairs; '
          f'FAIL / PASS / INCONCLUSIVE at {night} pairs and in the rerun loop {LOOKS}')
    print(f'{"fraction":>9}{"pairs":>7}{"ratio":>8}{"sd(d)":>7}  {"real nights, fixed":<24}'
          f'{"real nights, loop":<24}{"resampled FAIL/PASS fixed":>27}{"loop":>14}')
    for f, d in by_fraction.items():
        if len(d) < night:
            continue
        real = [gate_log_ratios(d[i:i + night]) for i in range(0, len(d) - night + 1, night)]
        fixed = {v: sum(r[0] == v for r in real) for v in ('FAIL', 'PASS', 'INCONCLUSIVE')}
        loop = {v: sum(r[1] == v for r in real) for v in ('FAIL', 'PASS', 'INCONCLUSIVE')}
        res = [gate_log_ratios([rng.choice(d) for _ in range(night)]) for _ in range(reps)]
        rate = lambda k, v: sum(r[k] == v for r in res) / reps  # noqa: E731
        fmt = lambda c: '/'.join(str(c[v]) for v in ('FAIL', 'PASS', 'INCONCLUSIVE'))  # noqa
        print(f'{f:>9.3f}{len(d):>7}{math.exp(stats.mean(d)):>8.3f}'
              f'{math.sqrt(stats.variance(d)):>7.3f}  {fmt(fixed):<24}{fmt(loop):<24}'
              f'{rate(0, "FAIL"):>17.2%} / {rate(0, "PASS"):<7.1%}'
              f'{rate(1, "FAIL"):>7.2%} / {rate(1, "PASS"):.1%}')


def fio_run(datadir: Path, size: str, shim: Path | None, fraction: float) -> float:
    env = dict(os.environ)
    if shim and fraction > 0:
        env['LD_PRELOAD'] = str(shim)
        env['H5REGRESS_DELAY_FRACTION'] = str(fraction)
    out = subprocess.run(['fio', '--name=w', '--rw=write', '--bs=1m', f'--size={size}',
                          '--ioengine=psync', f'--directory={datadir}', '--output-format=json'],
                         env=env, capture_output=True, text=True, check=True)
    for f in datadir.iterdir():
        f.unlink()
    return json.loads(out.stdout[out.stdout.index('{'):])['jobs'][0]['write']['bw'] / 1024.0


def section_real(nights: int, pairs: int, size: str, fractions: list[float]) -> None:
    if not shutil.which('fio') or not shutil.which('gcc'):
        print('\n== 6. real runs skipped: needs fio and gcc')
        return
    work = Path(tempfile.mkdtemp(prefix='h5r-calib-'))
    try:
        shim = build_shim(work)
        data = work / 'data'
        data.mkdir()
        print(f'\n== 6. Real runs: fio sequential buffered write of {size} (1 MiB blocks), '
              f'{pairs} ABBA pairs per night, {nights} nights per row; candidate slowed by '
              f'delay_shim.so (LD_PRELOAD)')
        print(f'  build: gcc -shared -fPIC -O2 -o delay_shim.so benchmarks/delay_shim.c -ldl')
        allres: list[float] = []
        for frac in fractions:
            verdicts: dict[str, int] = {}
            ratios, cvs = [], []
            t0 = time.perf_counter()
            for night in range(nights):
                recs, base_vals = [], []
                for p in range(pairs):
                    order = ('A', 'B') if p % 2 == 0 else ('B', 'A')
                    vals = {}
                    for who in order:
                        vals[who] = fio_run(data, size, shim, frac if who == 'B' else 0.0)
                    base_vals.append(vals['A'])
                    for who, build in (('A', 'base'), ('B', 'cand')):
                        recs.append(Record(
                            tool='fio-shim', operation='write', metric='bw', value=vals[who],
                            unit='MiB/s', higher_is_better=True, params={'size': size},
                            provenance={}, hdf5_build=build, config_hash='calib',
                            run_id=f'{night}-{p}-{who}', timestamp='2025-01-01T00:00:00',
                            pair_id=f'{night}-{p}'))
                cfg = dict(CFG, gated=[{'tool': 'fio-shim'}])
                res = gate.run_gate(recs, 'base', 'cand', cfg)
                m = res['metrics'][0]
                verdicts[m['verdict']] = verdicts.get(m['verdict'], 0) + 1
                ratios.append(m['ratio'])
                logs = [math.log(v) for v in base_vals]
                cvs.append(math.sqrt(stats.variance(logs)))
                med = stats.median(logs)
                allres += [x - med for x in logs]
            dt = time.perf_counter() - t0
            print(f'  injected fraction {frac:5.3f} (nominal ratio {1 / (1 + frac):.3f}): '
                  f'verdicts {dict(sorted(verdicts.items()))}; median measured ratio '
                  f'{stats.median(ratios):.3f}; run-to-run CV {stats.median(cvs):.1%} '
                  f'({dt:.0f} s)')
        (work / 'residuals.json').write_text(json.dumps(allres))
        print(f'  measured baseline log-residuals: n={len(allres)}, robust sd '
              f'{stats.mad_sigma(allres):.3f}, sd {math.sqrt(stats.variance(allres)):.3f}')
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--reps', type=int, default=4000, help='replications per null cell')
    ap.add_argument('--quick', action='store_true', help='fewer replications (rough numbers)')
    ap.add_argument('--pairs', type=int, nargs='+', default=[10, 15, 20])
    ap.add_argument('--seed', type=int, default=20250101)
    ap.add_argument('--noise-from', help='records JSONL of repeated real runs (resampled)')
    ap.add_argument('--pairs-from', help='real pairs of benchmarks/real_pairs.py (section 7)')
    ap.add_argument('--nights', type=int, default=100, help='nights for section 3')
    ap.add_argument('--real', action='store_true', help='also run section 6 (fio + shim)')
    ap.add_argument('--only-history', action='store_true',
                    help='run only section 5 (with history)')
    ap.add_argument('--real-nights', type=int, default=5)
    ap.add_argument('--real-pairs', type=int, default=20)
    ap.add_argument('--real-size', default='256m')
    ap.add_argument('--table-nights', type=int, default=1000,
                    help='nights per row of the table (section 0); --full: 4000')
    ap.add_argument('--only-table', action='store_true', help='run only the table (section 0)')
    ap.add_argument('--no-table', action='store_true', help='leave the table out')
    ap.add_argument('--full', action='store_true',
                    help='full size: 4000 nights per row of the table (about 40 min on 1 core)')
    ap.add_argument('--margin-confidence', type=float,
                    help=f'override margin_confidence ({CFG["margin_confidence"]} in ci/gate.yaml)')
    ap.add_argument('--consistency-level', type=float,
                    help='override history_variance.consistency_level '
                         f'({CFG["history_variance"]["consistency_level"]})')
    ap.add_argument('--no-modes', action='store_true', help='turn the two-mode check off')
    ap.add_argument('--intervals', choices=gate.INTERVAL_KINDS,
                    help=f'override intervals ({CFG["intervals"]} in ci/gate.yaml): how each '
                         f'metric\'s drawn interval is adjusted for the night\'s metrics')
    ap.add_argument('--only-modes', action='store_true',
                    help='run only the two-mode nights (section 8)')
    ap.add_argument('--modes-nights', type=int, default=1000,
                    help='nights per row of section 8 (1000)')
    ap.add_argument('--share-level', type=float,
                    help=f'override modes.share_level ({CFG["modes"]["share_level"]})')
    ap.add_argument('--centre-tolerance', type=float,
                    help=f'override modes.centre_tolerance ({CFG["modes"]["centre_tolerance"]})')
    ap.add_argument('--only-first-look', action='store_true',
                    help='run only section 10 (the first look of a night of 12 metrics)')
    ap.add_argument('--first-look-designs', type=lambda v: tuple(map(int, v.split(','))),
                    help='indices of FIRST_LOOK_DESIGNS to run (default: all), e.g. 0,2')
    ap.add_argument('--only-first-look-options', action='store_true',
                    help='run only section 11 (options for the first look\'s test)')
    ap.add_argument('--issue-25', action='store_true',
                    help='every simulated figure of issue 25 (sections 8 and 10, the gate\'s '
                         'design): --table-nights A/A nights, a quarter per other cell, '
                         'half of --modes-nights per mode cell')
    ap.add_argument('--only-lost-pair', action='store_true',
                    help='run only section 9 (one pair lost at the cap, issue 25)')
    ap.add_argument('--only-time-limit', action='store_true',
                    help='run only section 9b (the loop ended by ci/nightly --time-limit)')
    args = ap.parse_args()
    if args.margin_confidence is not None:
        CFG['margin_confidence'] = args.margin_confidence
    if args.consistency_level is not None:
        CFG['history_variance']['consistency_level'] = args.consistency_level
    if args.no_modes:
        CFG['modes']['enabled'] = False
    if args.intervals is not None:
        CFG['intervals'] = args.intervals
    for key in ('share_level', 'centre_tolerance'):
        if getattr(args, key) is not None:
            CFG['modes'][key] = getattr(args, key)
    if args.issue_25:
        section_issue_25(args.table_nights // 4, args.table_nights, args.modes_nights // 2,
                         args.seed)
        return 0
    if args.only_modes:
        t0 = time.perf_counter()
        section_modes(CFG, args.modes_nights, args.seed)
        print(f'(two modes: {time.perf_counter() - t0:.0f} s)')
        return 0
    reps = 600 if args.quick else args.reps
    rng = random.Random(args.seed)
    if args.only_first_look:
        section_first_look(150 if args.quick else args.table_nights // 2, args.seed,
                           designs=args.first_look_designs)
        return 0
    if args.only_first_look_options:
        section_first_look_options(300 if args.quick else args.table_nights, args.seed)
        outlier_oracle(1000 if args.quick else 4 * args.table_nights, args.seed)
        return 0
    if args.only_lost_pair:
        section_lost_pair(600 if args.quick else args.table_nights, args.seed)
        return 0
    if args.only_time_limit:
        section_time_limit(600 if args.quick else args.table_nights, args.seed)
        return 0
    if not args.no_table:
        t0 = time.perf_counter()
        section_table(CFG, 4000 if args.full else args.table_nights, args.seed, args.quick)
        print(f'(table: {time.perf_counter() - t0:.0f} s)')
        if args.only_table:
            return 0
    models = [('lognormal CV 8%', Noise('lognormal', 0.08, rng=rng)),
              ('lognormal CV 10%', Noise('lognormal', 0.10, rng=rng)),
              ('shared-pair CV 10%', Noise('shared', 0.10, rng=rng)),
              ('heavy-tail CV 8%', Noise('heavy', 0.08, rng=rng))]
    if args.noise_from:
        models.append((f'measured {Path(args.noise_from).name}',
                       Noise('empirical', residuals=residuals_from(args.noise_from), rng=rng)))
    if args.pairs_from:
        aa = pair_log_ratios(args.pairs_from).get(0.0)
        if not aa or len(aa) < 20:
            raise SystemExit(f'{args.pairs_from}: fewer than 20 A/A pairs (fraction 0)')
        models.append((f'real A/A pairs ({len(aa)})', Noise('pairs', residuals=aa, rng=rng)))
    slowdowns = [0.05, 0.10, 0.15, 0.20]
    t0 = time.perf_counter()
    print(f'gate config: margin {CFG["margin"]}, alpha (BH) {CFG["alpha"]}, confidence '
          f'{CFG["confidence"]}; {reps} replications per null cell')
    if not args.only_history:
        section_single(models, args.pairs, reps, slowdowns, rng)
        section_sequential(models, reps, slowdowns)
        section_nights(20 if args.quick else args.nights, 300, 20, 0.08, args.seed)
    section_history([0.08, 0.10], args.pairs, reps, slowdowns, rng)
    if not args.only_history:
        section_history([0.08], [20], reps, slowdowns, rng, model='heavy', mismatch=False)
        section_oracle(args.pairs, slowdowns, [0.08, 0.10])
    if not args.only_history:
        section_modes(CFG, args.modes_nights, args.seed)
    if args.pairs_from:
        section_real_pairs(args.pairs_from, reps, rng)
    if args.real:
        section_real(args.real_nights, args.real_pairs, args.real_size, [0.0, 0.111, 0.4286])
    print(f'\n(total {time.perf_counter() - t0:.0f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
