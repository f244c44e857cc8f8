"""Change points in a metric's nightly history, steps and slow creep alike, found by
Apache Otava (``otava.analysis.compute_change_points``: E-divisive means, each split
confirmed by a t-test), the change-point detector the field runs on performance
history.

A creep of 1 % per night is never one FAIL at first (each night is within the margin of
the one before), but its history has a change point where the drift began: Otava reports
it once the drift has moved the mean far enough from the nights before. At the shipped
``ci/gate.yaml`` setting and a nightly sd of 0.03 that takes a median of 7-8 nights (90 %:
9-11), with 0.5 false change points per metric-year of A/A nights; ``benchmarks/creep.py``
prints these figures, run nightly as the gate runs, and the trade-off of other settings.
The gate (:func:`h5regress.gate.run_gate`) keeps the change points within its look-back,
and the report's first screen says from which night.

Why Otava is installed without its dependencies (``ci/setup``: ``pip install
--no-deps apache-otava``): its package pins ``numpy==2.2.0`` and ``scipy==1.16.3``
and pulls in the clients of its command line (BigQuery, PostgreSQL, Slack, gRPC:
about 30 packages), which would downgrade the suite's scipy; the analysis module
needs only numpy and scipy, which the suite already has.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence


class CreepUnavailable(RuntimeError):
    """Otava is not installed: the history gets no change points, and says why."""


@dataclasses.dataclass
class ChangePoint:
    index: int          # first point of the new regime
    shift: float        # mean(after) - mean(before), in the series' units
    p: float


def change_points(series: Sequence[float], window: int = 30, pvalue: float = 0.001,
                  min_shift: float = 0.0) -> list[ChangePoint]:
    """Otava's change points of ``series`` (e.g. the log nightly ratios candidate/baseline) with a shift of at
    least ``min_shift``; ``window``: Otava's window length, ``pvalue``: its largest
    p-value of a split."""
    try:
        from otava.analysis import compute_change_points
    except ImportError as err:
        raise CreepUnavailable(f'Apache Otava is not installed ({err}): ci/setup installs '
                               'it (pip install --no-deps apache-otava)') from err
    if len(series) < 3:
        return []
    found, _ = compute_change_points(list(series), window_len=window, max_pvalue=pvalue)
    out = []
    for cp in found:
        shift = float(cp.stats.mean_2 - cp.stats.mean_1)
        if abs(shift) >= min_shift and math.isfinite(shift):
            out.append(ChangePoint(int(cp.index), shift, float(cp.stats.pvalue)))
    return out
