"""What every parser returns, and how a parsed run becomes records.

Parsers are pure functions: text in (one text, or a mapping of file name to
text for tools that leave several files), :class:`ParsedRun` objects out. They
never touch the file system, so the ReFrame checks and ``h5regress parse``
share them unchanged.

A parser raises :class:`RunFailed` when the output shows a failed or
incomplete run (error lines, a truncated summary, an absurd rate), and
:class:`ParseError` when the text is not what it claims to be. Both name the
source and the problem.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from h5regress.record import Record, comparable_config, config_hash

MIB = 1024 * 1024

#: Bandwidth unit scale factors to MiB/s. Decimal units (MB = 10^6) and binary
#: units (MiB = 2^20) are kept apart; tools that print "MB" but mean MiB
#: (h5bench) map their unit before calling :func:`to_mib_per_s`.
_BW_SCALE = {
    'B/s': 1 / MIB, 'KiB/s': 1 / 1024, 'MiB/s': 1.0, 'GiB/s': 1024.0, 'TiB/s': 1024.0 ** 2,
    'KB/s': 1e3 / MIB, 'MB/s': 1e6 / MIB, 'GB/s': 1e9 / MIB, 'TB/s': 1e12 / MIB,
}


class ParseError(ValueError):
    """The text is not a readable output of the tool (names source and problem)."""


class RunFailed(ParseError):
    """The output shows a failed or incomplete run: never a performance sample."""


@dataclasses.dataclass
class Measurement:
    operation: str
    metric: str
    value: float
    unit: str
    higher_is_better: bool
    samples: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ParsedRun:
    """One execution of a tool as its output describes it."""
    tool: str
    #: parameters the output states (defaults included where the tool prints them)
    params: dict[str, Any]
    #: version, command line, start/finish time, ... as the output states them
    provenance: dict[str, Any]
    measurements: list[Measurement]
    #: things that do not fail the run but qualify its numbers
    warnings: list[str] = dataclasses.field(default_factory=list)

    def measurement(self, operation: str, metric: str) -> Measurement:
        for m in self.measurements:
            if m.operation == operation and m.metric == metric:
                return m
        raise KeyError(f'{self.tool}: no {operation} {metric} in this run')

    def to_records(self, *, hdf5_build: str = 'unknown', run_id: str | None = None,
                   timestamp: str | None = None, comparable: Mapping[str, Any] | None = None,
                   params: Mapping[str, Any] | None = None,
                   provenance: Mapping[str, Any] | None = None,
                   test: str = '', system: str = '', pair_id: str | None = None,
                   result: str = 'pass') -> list[Record]:
        """Records of this run; ``params``/``provenance`` extend what the output said.

        ``comparable`` is what the config hash is taken over; by default the
        run's parameters (outside ReFrame that is all we know).
        """
        all_params = {**self.params, **(params or {})}
        prov = {**self.provenance, **(provenance or {})}
        if self.warnings:
            prov['warnings'] = list(prov.get('warnings', [])) + self.warnings
        if comparable is None:
            comparable = comparable_config(tool=self.tool, params=all_params,
                                           num_ranks=all_params.get('num_ranks'))
        chash = config_hash(comparable)
        run_id = run_id or uuid.uuid4().hex[:12]
        timestamp = timestamp or prov.get('finished') or utcnow()
        return [Record(tool=self.tool, operation=m.operation, metric=m.metric,
                       value=m.value, unit=m.unit, higher_is_better=m.higher_is_better,
                       params=all_params, provenance=prov, hdf5_build=hdf5_build,
                       config_hash=chash, run_id=run_id, timestamp=timestamp, test=test,
                       system=system, pair_id=pair_id, samples=list(m.samples),
                       result=result)
                for m in self.measurements]


def to_mib_per_s(value: float, unit: str) -> float:
    try:
        return value * _BW_SCALE[unit]
    except KeyError:
        raise ParseError(f'unknown bandwidth unit {unit!r}') from None


def utcnow() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


def bandwidth_stats(operation: str, samples_mib: list[float]) -> list[Measurement]:
    """Mean, max, min and standard deviation of per-repetition bandwidths (MiB/s)."""
    n = len(samples_mib)
    mean = sum(samples_mib) / n
    std = (sum((x - mean) ** 2 for x in samples_mib) / n) ** 0.5
    return [
        Measurement(operation, 'bw_mean', mean, 'MiB/s', True, list(samples_mib)),
        Measurement(operation, 'bw_max', max(samples_mib), 'MiB/s', True),
        Measurement(operation, 'bw_min', min(samples_mib), 'MiB/s', True),
        # spread: lower is better (a steadier file system)
        Measurement(operation, 'bw_std', std, 'MiB/s', False),
    ]
