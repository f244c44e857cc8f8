"""Creep detection with Apache Otava (issue 16): how many nights a slow drift of the
nightly ratio takes to be flagged, and how many change points a metric's year of A/A
nights raises. Prints both; asserts nothing (speed and power goals are printed, never
timed in tests).

    (ci/setup installs Apache Otava: pip install --no-deps apache-otava)
    .venv/bin/python benchmarks/creep.py [--sd 0.03] [--creep 0.01] [--trials 200]

Model: one gated metric's nightly log-ratio (candidate/baseline, Hodges-Lehmann over
the night's pairs) is normal with standard deviation ``--sd`` around 0 (A/A) and, from
night ``--start`` on, drifts down by ``--creep`` per night (1 %/night: night k after
the start has ratio 0.99^k). Otava (``otava.analysis.compute_change_points``: E-divisive
means with a t-test on each candidate split, ``--pvalue``, ``--window``) is run on the
series as it stands each night, as a nightly job would; a creep is flagged on the first
night whose run reports a change point at or after the start. False flags: the change
points of a 365-night A/A series.

``--sd``: measured here with the stand-in nightly (FLASH-IO kernel, HDF5 collective
checkpoint, 2 ranks, loaded 2-core machine): run-to-run sd(log) 0.055-0.39 per build,
so with 10 pairs per night the nightly log-ratio's sd is about 0.1/sqrt(10) = 0.03.
"""

from __future__ import annotations

import argparse
import math
import random
import time


def series(nights: int, sd: float, creep: float, start: int | None, rng) -> list[float]:
    out = []
    for k in range(nights):
        drift = (k - start + 1) * math.log1p(-creep) if start is not None and k >= start else 0
        out.append(drift + rng.gauss(0.0, sd))
    return out


def change_points(values, window: int, pvalue: float, min_side: int = 2) -> list[int]:
    """The change points the gate reports: :func:`h5regress.creep.change_points` (what
    ``h5regress gate`` calls), each with ``min_side`` nights after it (``ci/gate.yaml``'s
    ``change_points.min_side``)."""
    from h5regress import creep
    return [cp.index for cp in creep.change_points(values, window, pvalue)
            if len(values) - cp.index >= min_side]


def nights_to_flag(args, rng) -> int | None:
    values = series(args.start + 30, args.sd, args.creep, args.start, rng)
    for night in range(args.start + 1, len(values) + 1):
        if any(i >= args.start - 1 for i in change_points(values[:night], args.window,
                                                           args.pvalue)):
            return night - args.start
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sd', type=float, default=0.03, help='nightly log-ratio sd (0.03)')
    ap.add_argument('--creep', type=float, default=0.01, help='slowdown per night (0.01)')
    ap.add_argument('--start', type=int, default=60, help='stable nights before it (60)')
    ap.add_argument('--window', type=int, default=30, help="Otava's window (30)")
    ap.add_argument('--pvalue', type=float, default=0.001, help="Otava's p-value (0.001)")
    ap.add_argument('--trials', type=int, default=100)
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    try:
        import otava.analysis  # noqa: F401
    except ImportError:
        raise SystemExit('benchmarks/creep.py needs Apache Otava: ci/setup installs it')
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    delays = [nights_to_flag(args, rng) for _ in range(args.trials)]
    flagged = sorted(d for d in delays if d is not None)
    within7 = sum(d <= 7 for d in flagged)
    false = [len(change_points(series(365, args.sd, 0.0, None, rng), args.window, args.pvalue))
             for _ in range(args.trials)]
    print(f'Otava compute_change_points, window {args.window}, p {args.pvalue}; nightly '
          f'log-ratio sd {args.sd}, creep {args.creep:.1%}/night from night {args.start}; '
          f'{args.trials} trials, {time.monotonic() - t0:.0f} s')
    if flagged:
        print(f'creep flagged in {len(flagged)}/{args.trials} trials within 30 nights; '
              f'within 7 nights: {within7}/{args.trials}; nights to flag: median '
              f'{flagged[len(flagged) // 2]}, 90th percentile '
              f'{flagged[min(len(flagged) - 1, int(0.9 * len(flagged)))]}')
    else:
        print('creep never flagged within 30 nights')
    print(f'A/A: false change points per metric-year: mean {sum(false) / len(false):.2f}, '
          f'max {max(false)}; years with more than 1: {sum(f > 1 for f in false)}'
          f'/{args.trials}')


if __name__ == '__main__':
    main()
