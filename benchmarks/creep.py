"""Creep detection with Apache Otava (issue 16): how many nights a slow drift takes to be
flagged, and how many false change points a metric's year of A/A nights raises -- both
as the gate reports them. Prints both; asserts nothing (speed and power goals are
printed, never timed in tests).

    (ci/setup installs Apache Otava: pip install --no-deps apache-otava)
    nice -n 19 .venv/bin/python benchmarks/creep.py                 # ci/gate.yaml's setting
    nice -n 19 .venv/bin/python benchmarks/creep.py --sd 0.03,0.06 --window 20,30 \\
        --alpha 0.001,0.0001 --min-shift 0,0.02                     # a trade-off table

Model: the per-night value the gate gives Otava for one gated metric (its log nightly
level, see :func:`h5regress.gate._change_points`) is normal with standard deviation
``--sd`` around 0 on A/A nights and, from night ``--start`` on, drifts down by
``--creep`` per night (1 %/night: night k after the start is 0.99^k).

Each night the gate runs Otava (:func:`h5regress.creep.change_points`, Otava's
``compute_change_points``: E-divisive means with a t-test on each split, window
``--window``, p-value ``--alpha``) on the whole history so far, and keeps the change
points with at least ``--min-side`` nights on either side, within the last
``--lookback`` nights and with a shift of at least ``--min-shift`` -- exactly what the
gate keeps (``ci/gate.yaml``'s ``change_points`` gives the defaults). Reported figures:

* creep: the first night whose run reports a change point toward slower at or after
  the night before the creep began, counted in nights since the creep began
  (median, 90th percentile, share flagged within 7 nights; not flagged within 30
  nights counts as never);
* A/A: over 365 nights, run night by night as the gate does, the distinct change
  points any night reported (one change point seen on several nights, its index
  moving by up to 3 nights as nights arrive, is one flag), per metric-year: either
  direction (a report line "change point" is what a reader acts on), and toward
  slower only;
* ``years >1``: A/A metric-years with more than one flag.

``--sd``: what is this machine's noise? Two stand-in nights measured here (FLASH-IO
kernel, HDF5 checkpoint collective and independent, 2 ranks, 20 pairs, loaded 2-core
machine) have per-pair log-ratio variances (the gate's ``lr_var``) 0.025-0.075, so a
night's log ratio has sd 0.036-0.061 (about 0.045): ``--sd 0.045``. The default 0.03 is
a quieter machine's. Otava's false flags do not depend on ``--sd`` (its t-test is
scale-free); the nights to flag do. The gate gives Otava each night's log ratio (the
Hodges-Lehmann estimate over the pairs), which is what this simulates: a build's medians
would be far noisier here (one build's moved 31-38 % between two nights 18 minutes apart
while the ratio moved 1-4 %).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import time


def series(nights: int, sd: float, creep: float, start: int | None, rng) -> list[float]:
    out = []
    for k in range(nights):
        drift = (k - start + 1) * math.log1p(-creep) if start is not None and k >= start else 0
        out.append(drift + rng.gauss(0.0, sd))
    return out


def reported(values, cc) -> list:
    """The change points the gate reports on a night whose history is ``values``
    (the same filters as ``h5regress.gate._change_points``)."""
    from h5regress import creep
    n = len(values)
    if n < 2 * cc['min_side']:
        return []
    return [cp for cp in creep.change_points(values, cc['window'], cc['alpha'], cc['min_shift'])
            if cp.index >= max(cc['min_side'], n - cc['lookback'])
            and n - cp.index >= cc['min_side']]


def nights_to_flag(cc, sd, creep_rate, start, rng) -> int | None:
    values = series(start + 30, sd, creep_rate, start, rng)
    for night in range(start + 1, len(values) + 1):
        if any(cp.index >= start - 1 and cp.shift < 0 for cp in reported(values[:night], cc)):
            return night - start
    return None


def false_flags_per_year(cc, sd, rng, nights: int = 365) -> tuple[int, int]:
    """(distinct change points reported over a year of A/A nights, those toward slower)."""
    values = series(nights, sd, 0.0, None, rng)
    flags: list = []
    for night in range(2 * cc['min_side'], nights + 1):
        for cp in reported(values[:night], cc):
            if all(abs(cp.index - f.index) > 3 for f in flags):
                flags.append(cp)
    return len(flags), sum(f.shift < 0 for f in flags)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(',')]


def main() -> None:
    from h5regress.gateconfig import load_config
    shipped = load_config()['change_points']
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sd', default='0.03', help='per-night sd of the log value, comma list (0.03)')
    ap.add_argument('--creep', type=float, default=0.01, help='slowdown per night (0.01)')
    ap.add_argument('--start', type=int, default=60, help='stable nights before it (60)')
    ap.add_argument('--window', default=str(shipped['window']),
                    help=f"Otava's window, comma list ({shipped['window']}, ci/gate.yaml)")
    ap.add_argument('--alpha', default=str(shipped['alpha']),
                    help=f"Otava's p-value, comma list ({shipped['alpha']}, ci/gate.yaml)")
    ap.add_argument('--min-shift', default=str(shipped['min_shift'] or 0.0),
                    help=f"smallest |log shift| reported, comma list ({shipped['min_shift']})")
    ap.add_argument('--min-side', default=str(shipped['min_side']),
                    help=f"nights needed on each side, comma list ({shipped['min_side']})")
    ap.add_argument('--lookback', type=int, default=shipped['lookback'])
    ap.add_argument('--trials', type=int, default=60, help='creep histories per row (60)')
    ap.add_argument('--years', type=int, default=20, help='A/A metric-years per row (20)')
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    try:
        import otava.analysis  # noqa: F401
    except ImportError:
        raise SystemExit('benchmarks/creep.py needs Apache Otava: ci/setup installs it')
    print(f'Otava compute_change_points run nightly on the history, as the gate does; '
          f'creep {args.creep:.1%}/night from night {args.start}; {args.trials} creep '
          f'histories and {args.years} A/A metric-years per row; lookback {args.lookback}; '
          f'seed {args.seed}')
    head = ('sd', 'window', 'alpha', 'min_shift', 'min_side', 'flagged', 'within 7', 'median', 'p90',
            'A/A flags/yr', 'slower/yr', 'years >1', 's')
    print(' '.join(f'{h:>12}' for h in head))
    for sd, window, alpha, min_shift, min_side in itertools.product(
            _floats(args.sd), _floats(args.window), _floats(args.alpha), _floats(args.min_shift),
            _floats(args.min_side)):
        cc = {'window': int(window), 'alpha': alpha, 'min_shift': min_shift,
              'min_side': int(min_side), 'lookback': args.lookback}
        rng = random.Random(args.seed)
        t0 = time.monotonic()
        delays = [nights_to_flag(cc, sd, args.creep, args.start, rng) for _ in range(args.trials)]
        flagged = sorted(d for d in delays if d is not None)
        false = [false_flags_per_year(cc, sd, rng) for _ in range(args.years)]
        never = 99   # not flagged within 30 nights counts as later than any flagged
        ranked = sorted(d if d is not None else never for d in delays)
        p90 = ranked[min(len(ranked) - 1, math.ceil(0.9 * len(ranked)) - 1)]
        row = (f'{sd:g}', f'{int(window)}', f'{alpha:g}', f'{min_shift:g}', f'{int(min_side)}',
               f'{len(flagged)}/{args.trials}', f'{sum(d <= 7 for d in flagged)}/{args.trials}',
               f'{statistics.median(ranked):g}' if flagged else 'never',
               'never' if p90 == never else f'{p90}',
               f'{statistics.mean(f for f, _ in false):.2f}',
               f'{statistics.mean(w for _, w in false):.2f}',
               f'{sum(f > 1 for f, _ in false)}/{args.years}',
               f'{time.monotonic() - t0:.0f}')
        print(' '.join(f'{c:>12}' for c in row), flush=True)


if __name__ == '__main__':
    main()
