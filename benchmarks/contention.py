#!/usr/bin/env python3
"""Calibration of the gate's contention rule (issue 25). A benchmark, not a test.

Simulated nights of ``--metrics`` gated metrics through the nightly's loop 10/15/20,
judged per look as ``run_gate`` judges them (``gate.contention.judge`` on the sides,
the pairs kept through ``gate.compare_pairs``, Benjamini-Hochberg, ``gate.decide`` at
the look's ``pairs_run``, ``contention.too_few_left``); the loop stops at a FAIL or when
every metric PASSes. Each night is judged three ways on the same draws: the rule off,
on with wall time only (a night without ``.side`` files), on with wall time and
foreign CPU.

The machine, per pair: the runs of a metric are log-normal (``--cv``); a side's wall
time is 100 s x log-normal (sd 0.04) x ``--cand-wall`` on the candidate's sides (a real
change of the candidate changes every candidate side's wall time: 0.85 for a row
8.5x faster, 1.3 for a build 30 % slower everywhere). With probability 0.3 the pair
runs beside nice-19 work: both sides' wall times x U(1.17, 1.30), their runs' noise
x1.5, and the foreign CPU at normal priority stays at U(0, 0.04) (niced work is not
counted). Each side is contended with probability ``p``, half of them over the whole
side (its wall time x U(2, 8), every metric of it slowed by an independent factor
exp(U(0, 1.25)), 1-3.5x: pair 2 of the real night 2026-11-27 carried 3.46x; foreign
CPU U(0.3, 0.9)), half in a burst (wall time x U(1.05, 1.4), 1-4 of its metrics slowed
so, foreign CPU U(0.05, 0.35)). Cells: contention p x true ratio of one metric (1.0:
A/A; 0.9; 0.7) x candidate wall factor.

Prints per cell and rule: nights with any FAIL (A/A: the false FAIL), the slowed
metric FAILed / PASSed / PASSed or NO-SLOWDOWN-SEEN, the mean pairs excluded at the
night's last look and the share of nights with a pair excluded that had no contended
side (a wrongful exclusion). Run at nice 19: ``nice -n 19 python
benchmarks/contention.py --nights 200``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from h5regress import gate, stats  # noqa: E402
from h5regress.gate import contention  # noqa: E402

CFG = gate.load_config()
LOOKS = [10, 15, 20]
BUILDS = ('base', 'cand')
RULES = (('off', False, False), ('on, wall', True, False), ('on, wall+CPU', True, True))


def draw_pair(rng: random.Random, metrics: int, ratio: float, cv: float, p: float,
              cand_wall: float) -> dict:
    """One pair: each metric's (base, cand) values, each side's wall time, foreign
    share and whether it was contended."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    loaded = rng.random() < 0.3
    s = sigma * (1.5 if loaded else 1.0)
    sides = {}
    for build in BUILDS:
        wall = 100.0 * math.exp(rng.gauss(0, 0.04)) * (cand_wall if build == 'cand' else 1.0)
        if loaded:
            wall *= rng.uniform(1.17, 1.30)
        hit = rng.random() < p
        side = {'wall': wall, 'hit': hit, 'foreign': rng.uniform(0, 0.04), 'slowed': set()}
        if hit and rng.random() < 0.5:      # the whole side
            side.update(wall=wall * rng.uniform(2, 8), foreign=rng.uniform(0.3, 0.9),
                        slowed=set(range(metrics)))
        elif hit:                           # a burst during a few of its rows
            side.update(wall=wall * rng.uniform(1.05, 1.4), foreign=rng.uniform(0.05, 0.35),
                        slowed=set(rng.sample(range(metrics), rng.randint(1, 4))))
        sides[build] = side
    values = []
    for i in range(metrics):
        pair = []
        for build in BUILDS:
            v = math.exp(rng.gauss(-s * s / 2, s))
            if build == 'cand' and i == 0:
                v *= ratio
            if i in sides[build]['slowed']:
                v /= math.exp(rng.uniform(0, 1.25))
            pair.append(v)
        values.append(pair)
    return {'values': values, 'sides': sides}


def judge_look(pairs: list[dict], rule: dict, with_cpu: bool, k: int
               ) -> tuple[list[str], int, bool]:
    """The verdicts of a look at ``k`` pairs run, the pairs excluded, and whether one
    of them had no contended side."""
    sides = [contention.Side(str(i), b, pr['sides'][b]['wall'],
                             pr['sides'][b]['foreign'] if with_cpu else None,
                             pr['sides'][b]['foreign'] * pr['sides'][b]['wall'] * 2
                             if with_cpu else None)
             for i, pr in enumerate(pairs) for b in BUILDS]
    out = contention.judge(sides, BUILDS, rule)
    kept = [pr for i, pr in enumerate(pairs) if str(i) not in out.excluded]
    metrics = len(pairs[0]['values'])
    comps = [gate.compare_pairs([pr['values'][m][0] for pr in kept],
                                [pr['values'][m][1] for pr in kept], True, CFG, None)[0]
             if len(kept) >= 2 else None for m in range(metrics)]
    ps = [c.p_worse if c is not None else 1.0 for c in comps]
    qs = stats.benjamini_hochberg(ps)
    drawn = gate.drawn_interval(qs, CFG)
    verdicts = []
    for comp, q in zip(comps, qs):
        if comp is None:
            verdicts.append('INCONCLUSIVE')
            continue
        row = {'verdict': gate.decide(comp, q, CFG, LOOKS, k, drawn)[0], 'reason': '',
               'n_pairs': len(kept), 'excluded_pairs': len(out.excluded)}
        contention.too_few_left(row, LOOKS[0])
        verdicts.append(row['verdict'])
    return verdicts, len(out.excluded), any(
        not (pairs[int(i)]['sides']['base']['hit'] or pairs[int(i)]['sides']['cand']['hit'])
        for i in out.excluded)


def night(rng: random.Random, metrics: int, ratio: float, cv: float, p: float,
          cand_wall: float) -> list[tuple[list[str], int, bool]]:
    """One night through the loop, per rule: (last verdicts, pairs excluded, wrongful)."""
    pairs = [draw_pair(rng, metrics, ratio, cv, p, cand_wall) for _ in range(LOOKS[-1])]
    out = []
    for _, enabled, with_cpu in RULES:
        rule = dict(CFG['contention'], enabled=enabled)
        for k in LOOKS:
            verdicts, excluded, wrong = judge_look(pairs[:k], rule, with_cpu, k)
            if 'FAIL' in verdicts or all(v == 'PASS' for v in verdicts):
                break
        out.append((verdicts, excluded, wrong))
    return out


def cell(nights: int, seed: int, metrics: int, ratio: float, cv: float, p: float,
         cand_wall: float) -> list[dict]:
    rng = random.Random(seed)
    tallies = [{'any_fail': 0, 'slowed_fail': 0, 'slowed_pass': 0, 'slowed_nss': 0,
                'excluded': 0, 'wrong': 0} for _ in RULES]
    for _ in range(nights):
        for t, (verdicts, excluded, wrong) in zip(tallies, night(rng, metrics, ratio, cv, p,
                                                                 cand_wall)):
            t['any_fail'] += 'FAIL' in verdicts
            t['slowed_fail'] += verdicts[0] == 'FAIL'
            t['slowed_pass'] += verdicts[0] == 'PASS'
            t['slowed_nss'] += verdicts[0] in ('PASS', gate.NO_SLOWDOWN_SEEN)
            t['excluded'] += excluded
            t['wrong'] += wrong
    return [{k: v / nights for k, v in t.items()} for t in tallies]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--nights', type=int, default=200, help='nights per cell')
    ap.add_argument('--aa-nights', type=int, default=0,
                    help='nights per A/A cell (0: --nights)')
    ap.add_argument('--jobs', type=int, default=1, help='cells run at once')
    ap.add_argument('--metrics', type=int, default=12)
    ap.add_argument('--cv', type=float, default=0.08)
    ap.add_argument('--seed', type=int, default=20261127)
    ap.add_argument('--p', type=lambda v: [float(x) for x in v.split(',')],
                    default=[0.0, 0.05, 0.15], help='contention probability per side')
    ap.add_argument('--ratios', type=lambda v: [float(x) for x in v.split(',')],
                    default=[1.0, 0.9, 0.7])
    ap.add_argument('--cand-wall', type=lambda v: [float(x) for x in v.split(',')],
                    default=[1.0], help="candidate sides' wall time factor(s)")
    args = ap.parse_args()
    rule = CFG['contention']
    print(f'contention rule: wall_factor {rule["wall_factor"]}, min_sides {rule["min_sides"]}, '
          f'foreign_share {rule["foreign_share"]}; {args.metrics} gated metrics (the first '
          f'slowed), CV {args.cv:.0%}, loop {LOOKS}, {args.nights} nights per cell '
          f'({args.aa_nights or args.nights} A/A), '
          f'seed {args.seed}')
    print(f'{"p":>5} {"ratio":>6} {"cand wall":>9} {"rule":<13} {"any FAIL":>9} '
          f'{"slowed FAIL":>11} {"slowed PASS":>11} {"PASS or NSS":>11} {"excl. pairs":>11} '
          f'{"wrongful":>9} {"nights":>7}')
    started = time.monotonic()
    specs = [(args.aa_nights if ratio == 1.0 and args.aa_nights else args.nights, args.seed,
              args.metrics, ratio, args.cv, p, cw)
             for p in args.p for ratio in args.ratios for cw in args.cand_wall]
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for (nights, _, _, ratio, _, p, cw), rows in zip(specs, pool.map(cell, *zip(*specs))):
            for (label, _, _), r in zip(RULES, rows):
                fail, passed, nss = (f'{r[k]:.1%}' if ratio != 1.0 else '-'
                                     for k in ('slowed_fail', 'slowed_pass', 'slowed_nss'))
                print(f'{p:>5.2f} {ratio:>6.2f} {cw:>9.2f} {label:<13} '
                      f'{r["any_fail"]:>9.1%} {fail:>11} {passed:>11} {nss:>11} '
                      f'{r["excluded"]:>11.2f} {r["wrong"]:>9.1%} {nights:>7}', flush=True)
    print(f'({time.monotonic() - started:.0f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
