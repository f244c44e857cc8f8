#!/usr/bin/env python3
"""A real night's pairs, resampled through the nightly's loop: verdicts and wall time.

A benchmark, not a test: it reads a night's ``gate.json`` (and the per-test times of its
ReFrame run reports), simulates nights and prints.

Each simulated night draws whole pairs of the real night with replacement: every gated
metric's log-ratio of one real pair goes together, so what one slow side did to all
rows of a pair stays together. Each metric's log-ratios are centred on their median and
each drawn pair is negated with probability 1/2 (its two sides swapped: in an A/A night
the builds are exchangeable, so a pair's log-ratio is as likely negated; centring on the
mean instead turns one pair far on one side into a consistent shift of the others, which
FAILed 3.5 % of nights resampled from a real A/A night), then shifted by
``ln(1 - slowdown)``
(``--slowdown``, every metric at once, or ``--slow-metric`` only). The records go
through the real gate (:func:`h5regress.gate.run_gate`) at the loop's looks
(``--pairs``/``--more-pairs``/``--max-pairs``, the nightly's 10/15/20); after a look
that leaves the night INCONCLUSIVE or NO-SLOWDOWN-SEEN, only the metrics it left
undecided get more pairs, as ``ci/nightly`` runs only their tests.

Wall time: a pair of the first look costs what the real night's pairs cost (its log's
``pair i/N: ..., S s`` lines); a later pair costs twice what its tests took at their
median on the real night's sides, plus the fixed cost of two ReFrame runs (a real
pair's time less its tests'). Metrics whose test the reports do not name cost nothing
extra (a warning says so). A night whose pairs are fewer than the looks need stops at
the pairs it has; a night that ran only undecided rows after a look is resampled on
the pairs every metric has (its first look's).

Usage:
  python3 benchmarks/night_resample.py NIGHT_DIR [--nights 300] [--slowdown 0.10]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from h5regress import gate, stats  # noqa: E402
from h5regress.gate import contention  # noqa: E402
from h5regress.record import Record  # noqa: E402

BASE, CAND = 'hdf5-a', 'hdf5-b'
UNDECIDED = ('INCONCLUSIVE', 'NO-SLOWDOWN-SEEN')


def real_night(night_dir: Path) -> tuple[list[dict], list[list[float]]]:
    """The night's gated metrics and, per metric, its pairs' log-ratios (below 0:
    slower), the pairs in the order gate.json lists their values."""
    result = json.loads((night_dir / 'gate.json').read_text())
    metrics = [m for m in result['metrics'] if m.get('role') == 'gated' and m.get('n_pairs')]
    ratios = []
    for m in metrics:
        sign = 1.0 if m['higher_is_better'] else -1.0
        n = m['n_pairs']
        ratios.append([sign * math.log(c / b) for b, c in zip(m['base'][:n], m['cand'][:n])])
    return metrics, ratios


def _plain(name: str) -> str:
    return re.sub(r'\s*%hdf5_build=\S+', '', name)


def test_times(night_dir: Path) -> dict[str, float]:
    """Each test's median time (over both builds' sides), by its name without the build."""
    sides, _ = contention.load_sides([str(night_dir / 'reports')])
    times: dict[str, list[float]] = collections.defaultdict(list)
    for side in sides:
        for name, seconds in side.tests:
            times[_plain(name)].append(seconds)
    return {name: stats.median(ts) for name, ts in times.items()}


def pair_seconds(night_dir: Path) -> list[float]:
    """The real pairs' wall times, from the nightly's log beside the night (NIGHT.log)."""
    log = night_dir.parent / f'{night_dir.name}.log'
    text = log.read_text(errors='replace') if log.exists() else ''
    return [float(s) for s in re.findall(r'pair \d+/\d+[^:]*: .*?, (\d+) s', text)]


def records(metrics: list[dict], ratios: list[list[float]],
            pair_draws: list[tuple[int, int]], pairs_of: list[int],
            shifts: list[float]) -> list[Record]:
    """Records of the simulated night: metric i has pairs 0..pairs_of[i]-1, pair p
    being the real pair and sign pair_draws[p], its log-ratio centred, signed and
    shifted."""
    out = []
    for i, m in enumerate(metrics):
        d = ratios[i]
        centre = stats.median(d)
        params = {'api': 'HDF5', 'case': f'm{i}'}
        for p in range(pairs_of[i]):
            real, sign = pair_draws[p]
            lr = sign * (d[real] - centre) + shifts[i]
            for build, value in ((BASE, 1000.0), (CAND, 1000.0 * math.exp(lr))):
                out.append(Record(tool='ior', operation='write', metric='bw_max',
                                  value=value, unit='MiB/s', higher_is_better=True,
                                  params=params, provenance={'hdf5_commit': build},
                                  hdf5_build=build, config_hash=f'c{i}',
                                  run_id=f'{build}-{i}-{p}', timestamp='2026-01-01T03:00:00',
                                  test=f'm{i}', system='local:default', pair_id=f'n-p{p}'))
    return out


def one_night(metrics, ratios, looks, shifts, rng, cfg):
    """(overall, verdict per metric, pairs per metric, later pairs' metric sets)."""
    n_real = len(ratios[0])
    draws = [(rng.randrange(n_real), rng.choice((-1, 1))) for _ in range(looks[-1])]
    pairs_of = [looks[0]] * len(metrics)
    later: list[list[int]] = []
    while True:
        run = max(pairs_of)
        result = gate.run_gate(records(metrics, ratios, draws, pairs_of, shifts), BASE, CAND,
                               cfg, looks=looks, pairs_run=run)
        rows = {m['config_hash']: m for m in result['metrics'] if m.get('role') == 'gated'}
        verdicts = [rows[f'c{i}']['verdict'] for i in range(len(metrics))]
        if result['overall'] not in UNDECIDED or run >= looks[-1]:
            return result['overall'], verdicts, pairs_of, later
        nxt = min(x for x in looks if x > run)
        undecided = [i for i, v in enumerate(verdicts) if v not in ('PASS', 'FAIL')]
        for i in undecided:
            pairs_of[i] = nxt
        later += [undecided] * (nxt - run)


def simulate(args) -> None:
    night_dir = Path(args.night)
    metrics, ratios = real_night(night_dir)
    # a night that ran only undecided rows after a look: the pairs every metric has
    # (those of the first look), whole pairs as the draws need
    shared = min(len(d) for d in ratios)
    if len({len(d) for d in ratios}) != 1:
        print(f'{night_dir}/gate.json: its gated metrics have {shared}-'
              f'{max(len(d) for d in ratios)} pairs: resampling the first {shared}, which '
              f'every metric has')
        ratios = [d[:shared] for d in ratios]
    times, real_pairs = test_times(night_dir), pair_seconds(night_dir)[:shared]
    cost = [times.get(_plain(m.get('test', '')), 0.0) for m in metrics]
    if not all(cost):
        print(f'warning: {cost.count(0.0)} metric(s) with no test time in the reports')
    full_pair = stats.median(real_pairs) if real_pairs else 2 * sum(cost)
    tests_per_side = sum(times.values())
    fixed = max(0.0, full_pair - 2 * tests_per_side)
    looks = list(range(args.pairs, args.max_pairs, args.more_pairs)) + [args.max_pairs]
    shifts = [math.log(1 - args.slowdown) if args.slow_metric is None or i == args.slow_metric
              else 0.0 for i in range(len(metrics))]
    cfg = gate.load_config()
    if args.intervals:
        cfg['intervals'] = args.intervals
    rng = random.Random(args.seed)
    overall, walls, pairs_run = collections.Counter(), [], []
    verdicts = [collections.Counter() for _ in metrics]
    t0 = time.perf_counter()
    for _ in range(args.nights):
        verdict, per_metric, pairs_of, later = one_night(metrics, ratios, looks, shifts, rng,
                                                         cfg)
        overall[verdict] += 1
        for i, v in enumerate(per_metric):
            verdicts[i][v] += 1
        walls.append(looks[0] * full_pair
                     + sum(fixed + 2 * sum(cost[i] for i in undecided) for undecided in later))
        pairs_run.append(max(pairs_of))
    n = args.nights
    print(f'{night_dir.name}: {len(metrics)} gated metrics, {len(ratios[0])} real pairs; '
          f'a real pair {full_pair:.0f} s (median of {len(real_pairs)}), its tests '
          f'{tests_per_side:.0f} s a side, the rest {fixed:.0f} s a pair')
    print(f'{n} simulated nights, looks {looks}, slowdown {args.slowdown:g}'
          + (f' of metric {args.slow_metric}' if args.slow_metric is not None else
             ' of every metric') + f', intervals {cfg["intervals"]} '
          f'({time.perf_counter() - t0:.0f} s)')
    for verdict, count in overall.most_common():
        print(f'  {verdict:<17} {count / n:6.1%}')
    good = (overall['PASS'] + overall['NO-SLOWDOWN-SEEN']) / n
    print(f'  PASS or NO-SLOWDOWN-SEEN: {good:.1%}')
    at_cap = [w for w, p in zip(walls, pairs_run) if p == looks[-1]]
    walls.sort()
    print(f'wall time, minutes: median {stats.median(walls) / 60:.1f}, 90th percentile '
          f'{walls[int(0.9 * (n - 1))] / 60:.1f}, longest {walls[-1] / 60:.1f}; nights that '
          f'reached {looks[-1]} pairs: {sum(p == looks[-1] for p in pairs_run) / n:.0%}'
          + (f' (median {stats.median(at_cap) / 60:.1f} min)' if at_cap else '')
          + f'; every test every pair: {looks[-1] * full_pair / 60:.1f} min at '
          f'{looks[-1]} pairs')
    if args.slowdown:
        print('the slowed metrics\' verdicts: FAIL, INCONCLUSIVE (possible slowdown), '
              'NO-SLOWDOWN-SEEN, PASS')
        for i, m in enumerate(metrics):
            if args.slow_metric is None or i == args.slow_metric:
                print('  ' + ' '.join(f'{verdicts[i][v] / n:6.1%}' for v in
                                      ('FAIL', 'INCONCLUSIVE', 'NO-SLOWDOWN-SEEN', 'PASS'))
                      + f'  {m["label"][:90]}')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('night', help='a night\'s --out directory (gate.json, reports/); its '
                    'log, if any, is NIGHT.log beside it')
    ap.add_argument('--nights', type=int, default=300)
    ap.add_argument('--slowdown', type=float, default=0.0,
                    help='true slowdown of the candidate (0.10: 10 %% slower)')
    ap.add_argument('--slow-metric', type=int, help='only this gated metric (0-based) slowed')
    ap.add_argument('--pairs', type=int, default=10)
    ap.add_argument('--more-pairs', type=int, default=5)
    ap.add_argument('--max-pairs', type=int, default=20)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--intervals', choices=gate.INTERVAL_KINDS,
                    help="the rows' intervals (default: ci/gate.yaml's)")
    simulate(ap.parse_args())
    return 0


if __name__ == '__main__':
    sys.exit(main())
