#!/usr/bin/env python3
"""Accuracy of ``h5regress bisect`` with noise. A benchmark, not a test: it prints.

Seeded runs over a stand-in repository of K commits after the good one, a
slowdown planted at a random one (it and every later commit slow the writes by
the fraction: 0.111 = 1.111x the write time, a 10 % bandwidth loss). Each step
is judged by the gate itself (:class:`h5regress.bisectruns.SimulatedRuns`: run
bandwidths log-normal with the given CV, the nightly's looks 10/15/20, skip at
the cap, unless the step's 90 % bound lies on one side of the midpoint), through the
same search, builder interface and state file as a real
bisect. As ``ci/nightly --bisect`` does, each run starts from a FAIL night:
--bad against --good through the same simulated runs and gate (a night that
does not FAIL starts no bisect, and is counted apart); its ratio is the
bisect's ``bad_ratio``, which sets the steps' margin (``--measure-bad``: the
bisect measures --bad itself, one build more). Prints per run the planted and
the found commit, steps, builds and pairs, then how many found the planted
commit, the builds used against ceil(log2 K) + 1 and the pairs per step.

The default CV, 4 %, is the run-to-run noise of IOR HDF5 writes with 1 MiB
transfers on this kind of machine (issue 15; calibrate.py has 8 % for a busier VM:
try --cv 0.08).

Usage: python3 benchmarks/bisect_accuracy.py [--runs 20] [--commits 16] [--cv 0.04]
                                             [--slowdown 0.111] [--seed 0] [--measure-bad]
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

from h5regress import bisectbuild, bisectruns, bisectsearch  # noqa: E402


LOOKS = bisectsearch.looks(10, 5, 20)


def fail_night(builder: bisectbuild.StandInBuilder, runs: bisectruns.SimulatedRuns, good: str,
               bad: str, tmp: Path) -> float | None:
    """The night that starts a bisect: --bad against --good at the nightly's margin;
    its least slowed FAIL metric's ratio, or None when it did not FAIL."""
    step = bisectsearch.run_step(runs, builder.build(good), builder.build(bad), bad, tmp / 'night',
                           LOOKS, [])
    return bisectsearch.bad_ratio_of(step) if step['verdict'] == 'bad' else None


def one_run(tmp: Path, k: int, planted: int, cv: float, slowdown: float, seed: int,
            measure_bad: bool) -> dict | None:
    fractions = [0.0] + [slowdown if i >= planted else 0.0 for i in range(1, k + 1)]
    shas = bisectbuild.make_standin_repo(tmp / 'repo', fractions)
    builder = bisectbuild.StandInBuilder(tmp / 'repo', tmp, tools=False)
    runs = bisectruns.SimulatedRuns(cv, random.Random(seed))
    bad_ratio = None
    if not measure_bad:
        bad_ratio = fail_night(builder, runs, shas[0], shas[-1], tmp)
        if bad_ratio is None:
            return None
    params = {'good': shas[0], 'bad': shas[-1], 'repo': str(tmp / 'repo'),
              'builder': f'stand-in (simulated, CV {cv:g})', 'checks': None, 'metrics': [],
              'looks': LOOKS, 'bad_ratio': bad_ratio}
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            result = bisectsearch.bisect(tmp / 'repo', shas[0], shas[-1], builder, runs,
                                   tmp / 'work', params)
        except bisectbuild.BisectError:          # --bad measured and not FAILed
            return None
    return {'right': result['found'] and result['first_bad']['commit'] == shas[planted],
            'found_index': shas.index(result['first_bad']['commit']),
            'range': not result['found'], 'steps': len(result['steps']),
            'builds': result['builds'], 'bound': result['bound_builds'],
            'pairs': sum(s['pairs'] for s in result['steps']),
            'skips': sum(s['verdict'] == 'skip' for s in result['steps']),
            'at_cap': sum(bool(s.get('decided_at_cap')) for s in result['steps']),
            'margin': result['step_margin']}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=20)
    ap.add_argument('--commits', type=int, default=16, help='K, commits after the good one')
    ap.add_argument('--cv', type=float, default=0.04)
    ap.add_argument('--slowdown', type=float, default=0.111)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--measure-bad', action='store_true',
                    help='no FAIL night first: the bisect measures --bad itself')
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print(f'bisect over K={a.commits} commits, slowdown {a.slowdown:g} (bandwidth x'
          f'{1 / (1 + a.slowdown):.3f}), run CV {a.cv:.0%}, looks 10/15/20, '
          f'{a.runs} seeded runs (seed {a.seed}); --bad\'s ratio '
          + ('measured by the bisect' if a.measure_bad else 'from a FAIL night'))
    print(f'{"run":>4} {"planted":>8} {"found":>6} {"right":>6} {"steps":>6} {"builds":>7} '
          f'{"pairs":>6} {"skips":>6} {"margin":>7}')
    rows, nights, t0 = [], 0, time.perf_counter()
    while len(rows) < a.runs:
        planted = rng.randint(1, a.commits)
        nights += 1
        with tempfile.TemporaryDirectory() as tmp:
            row = one_run(Path(tmp), a.commits, planted, a.cv, a.slowdown, rng.randrange(2**32),
                          a.measure_bad)
        if row is None:
            print(f'   - {planted:>8}  --bad not FAILed against --good: no bisect')
            continue
        rows.append(row)
        found = f'{row["found_index"]}{"?" if row["range"] else ""}'
        print(f'{len(rows) - 1:>4} {planted:>8} {found:>6} {str(row["right"]):>6} '
              f'{row["steps"]:>6} {row["builds"]:>7} {row["pairs"]:>6} {row["skips"]:>6} '
              f'{row["margin"]:>7.1%}')
    print(f'\n{nights} nights, {nights - len(rows)} without a FAIL of --bad (no bisect)')
    bound = math.ceil(math.log2(a.commits)) + 1 + a.measure_bad
    within = sum(r['builds'] <= bound for r in rows)
    steps = sum(r['steps'] for r in rows)
    print(f'\nright commit: {sum(r["right"] for r in rows)} of {a.runs} '
          f'(a range, skipped commits in the way: {sum(r["range"] for r in rows)})')
    print(f'builds (the good one included): mean {sum(r["builds"] for r in rows) / a.runs:.2f}, '
          f'max {max(r["builds"] for r in rows)}; ceil(log2 K)+1'
          f'{" +1 (--bad)" if a.measure_bad else ""} = {bound}; within it: {within} of {a.runs}')
    print(f'pairs per step: mean {sum(r["pairs"] for r in rows) / steps:.1f}; '
          f'decided at the cap (the 90 % bound against the midpoint): '
          f'{sum(r["at_cap"] for r in rows)}; skipped (undecided at 20 pairs): '
          f'{sum(r["skips"] for r in rows)} of {steps}')
    print(f'({time.perf_counter() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
