#!/usr/bin/env python3
"""Accuracy of ``h5regress bisect`` with noise. A benchmark, not a test: it prints.

Seeded runs over a stand-in repository of K commits after the good one, a
slowdown planted at a random one (it and every later commit slow the writes by
the fraction: 0.111 = 1.111x the write time, a 10 % bandwidth loss). Each step
is judged by the gate itself (:class:`h5regress.bisect.SimulatedRuns`: run
bandwidths log-normal with the given CV, the nightly's looks 10/15/20, skip at
the cap), through the same search, builder interface and state file as a real
bisect. Prints per run the planted and the found commit, steps, builds and
pairs, then how many found the planted commit, the builds used against
ceil(log2 K) + 1 and the pairs per step.

The default CV, 4 %, is the run-to-run noise of IOR HDF5 writes with 1 MiB
transfers on this kind of machine (issue 15; calibrate.py has 8 % for a busier VM:
try --cv 0.08).

Usage: python3 benchmarks/bisect_accuracy.py [--runs 20] [--commits 16] [--cv 0.04]
                                             [--slowdown 0.111] [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from h5regress import bisect  # noqa: E402


def one_run(tmp: Path, k: int, planted: int, cv: float, slowdown: float, seed: int) -> dict:
    fractions = [0.0] + [slowdown if i >= planted else 0.0 for i in range(1, k + 1)]
    shas = bisect.make_standin_repo(tmp / 'repo', fractions)
    params = {'good': shas[0], 'bad': shas[-1], 'repo': str(tmp / 'repo'),
              'builder': f'stand-in (simulated, CV {cv:g})', 'checks': None, 'metrics': [],
              'looks': bisect.looks(10, 5, 20)}
    with contextlib.redirect_stderr(io.StringIO()):
        result = bisect.bisect(tmp / 'repo', shas[0], shas[-1],
                               bisect.StandInBuilder(tmp / 'repo', tmp, tools=False),
                               bisect.SimulatedRuns(cv, random.Random(seed)), tmp / 'work', params)
    return {'right': result['found'] and result['first_bad']['commit'] == shas[planted],
            'found_index': shas.index(result['first_bad']['commit']),
            'range': not result['found'], 'steps': len(result['steps']),
            'builds': result['builds'], 'bound': result['bound_builds'],
            'pairs': sum(s['pairs'] for s in result['steps']),
            'skips': sum(s['verdict'] == 'skip' for s in result['steps'])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=20)
    ap.add_argument('--commits', type=int, default=16, help='K, commits after the good one')
    ap.add_argument('--cv', type=float, default=0.04)
    ap.add_argument('--slowdown', type=float, default=0.111)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print(f'bisect over K={a.commits} commits, slowdown {a.slowdown:g} (bandwidth x'
          f'{1 / (1 + a.slowdown):.3f}), run CV {a.cv:.0%}, looks 10/15/20, '
          f'{a.runs} seeded runs (seed {a.seed})')
    print(f'{"run":>4} {"planted":>8} {"found":>6} {"right":>6} {"steps":>6} {"builds":>7} '
          f'{"pairs":>6} {"skips":>6}')
    rows, t0 = [], time.perf_counter()
    for r in range(a.runs):
        planted = rng.randint(1, a.commits)
        with tempfile.TemporaryDirectory() as tmp:
            row = one_run(Path(tmp), a.commits, planted, a.cv, a.slowdown, rng.randrange(2**32))
        rows.append(row)
        found = f'{row["found_index"]}{"?" if row["range"] else ""}'
        print(f'{r:>4} {planted:>8} {found:>6} {str(row["right"]):>6} {row["steps"]:>6} '
              f'{row["builds"]:>7} {row["pairs"]:>6} {row["skips"]:>6}')
    bound = math.ceil(math.log2(a.commits)) + 1
    within = sum(r['builds'] <= bound for r in rows)
    steps = sum(r['steps'] for r in rows)
    print(f'\nright commit: {sum(r["right"] for r in rows)} of {a.runs} '
          f'(a range, skipped commits in the way: {sum(r["range"] for r in rows)})')
    print(f'builds (the good one included): mean {sum(r["builds"] for r in rows) / a.runs:.2f}, '
          f'max {max(r["builds"] for r in rows)}; ceil(log2 K)+1 = {bound}; '
          f'within it: {within} of {a.runs}')
    print(f'pairs per step: mean {sum(r["pairs"] for r in rows) / steps:.1f}; '
          f'steps skipped (INCONCLUSIVE at 20 pairs): {sum(r["skips"] for r in rows)} of {steps}')
    print(f'({time.perf_counter() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
