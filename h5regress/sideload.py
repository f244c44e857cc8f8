"""What the machine did during one side of a pair: the data the gate's contention rule
reads (issue 25), recorded by the nightly beside each side's ReFrame run report.

A side is one ReFrame run of one build. Other processes that take the CPU while it
runs slow it by a random factor that no ABBA order cancels; the gate excludes such
pairs (:mod:`h5regress.gate.contention`) from what the side recorded here, never
from the ratio it measured. The file ``<pair id>-<build>.side`` (JSON; not ``.json``,
so that no reader of run reports takes it for one) holds:

* ``start_unix``/``end_unix``/``wall_s``: the side's wall time (the nightly's clock
  around the ReFrame run, which the run report's ``session_info`` also gives);
* ``cpu``: the machine's CPU seconds by ``/proc/stat`` column (user, nice, system,
  idle, iowait, irq, softirq, steal) over the side, and ``ncpu``;
* ``own_cpu_s`` (``own_system_s`` of it in the kernel): the CPU seconds of the
  night's process tree over the side (the nightly and every descendant it and they
  waited for), so that ``busy - own`` is the CPU taken by processes outside the
  night; /proc/stat's ``nice`` column is the user time of processes at a lower
  priority (niceness > 0), which barely compete with a night at normal priority;
  ``nice``: the night's own niceness;
* ``load_start``/``load_end``: the 1, 5 and 15 minute load averages;
* ``psi_start``/``psi_end``: ``/proc/pressure/{cpu,io}``'s ``some`` totals (µs), when
  the kernel has them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from h5regress import atomic

#: the suffix of a side's file, beside its run report ``<pair id>-<build>.json``
SUFFIX = '.side'
#: /proc/stat's first columns, in its order
CPU_COLUMNS = ('user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal')
#: the columns that are CPU time used (idle and iowait are not; steal is another guest's)
BUSY_COLUMNS = ('user', 'nice', 'system', 'irq', 'softirq')


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The machine's counters at one instant."""
    unix: float
    mono: float
    cpu: dict[str, float]           # seconds per /proc/stat column
    own_cpu: float                  # this process and its waited-for descendants
    own_system: float               # ... of it in the kernel
    load: tuple[float, ...]
    psi: dict[str, float]


@dataclasses.dataclass(frozen=True)
class SideLoad:
    """One side's record (see the module's doc)."""
    pair_id: str
    build: str
    start_unix: float
    end_unix: float
    wall_s: float
    ncpu: int
    cpu: dict[str, float]
    own_cpu_s: float
    load_start: tuple[float, ...]
    load_end: tuple[float, ...]
    psi_start: dict[str, float] = dataclasses.field(default_factory=dict)
    psi_end: dict[str, float] = dataclasses.field(default_factory=dict)
    own_system_s: float = 0.0
    #: the night's niceness: above 0 its user time is in /proc/stat's nice column
    nice: int = 0

    @property
    def foreign_cpu_s(self) -> float:
        """CPU seconds taken by processes outside the night's tree, at any priority."""
        busy = math.fsum(self.cpu.get(c, 0.0) for c in BUSY_COLUMNS)
        return max(busy - self.own_cpu_s, 0.0)

    @property
    def foreign_share(self) -> float:
        """:attr:`foreign_cpu_s` as a share of the machine's CPU time over the side."""
        return self.foreign_cpu_s / (self.wall_s * self.ncpu) if self.wall_s > 0 else 0.0

    @property
    def foreign_normal_cpu_s(self) -> float:
        """CPU seconds taken outside the night's tree at normal priority (niceness <= 0:
        the user time of niced processes, /proc/stat's ``nice`` column, left out)."""
        normal = math.fsum(self.cpu.get(c, 0.0) for c in BUSY_COLUMNS if c != 'nice')
        # the kernel's time of niced processes is in the system column: a niced night's
        # own system time is there, its user time in the nice column
        own = self.own_cpu_s if self.nice <= 0 else self.own_system_s
        return max(normal - own, 0.0)

    @property
    def foreign_normal_share(self) -> float:
        """:attr:`foreign_normal_cpu_s` as a share of the machine's CPU time."""
        if self.wall_s <= 0:
            return 0.0
        return self.foreign_normal_cpu_s / (self.wall_s * self.ncpu)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _proc_stat() -> dict[str, float]:
    tick = os.sysconf('SC_CLK_TCK')
    with open('/proc/stat', encoding='ascii') as fp:
        fields = fp.readline().split()[1:1 + len(CPU_COLUMNS)]
    return {c: int(v) / tick for c, v in zip(CPU_COLUMNS, fields)}


def _psi() -> dict[str, float]:
    out = {}
    for kind in ('cpu', 'io'):
        try:
            with open(f'/proc/pressure/{kind}', encoding='ascii') as fp:
                some = fp.readline().split()
        except OSError:
            continue
        total = [f for f in some if f.startswith('total=')]
        if total:
            out[kind] = float(total[0].split('=', 1)[1])
    return out


def snapshot() -> Snapshot:
    """The machine's counters now (Linux: /proc/stat, getrusage, getloadavg)."""
    own = os.times()
    return Snapshot(time.time(), time.monotonic(), _proc_stat(),
                    own.user + own.system + own.children_user + own.children_system,
                    own.system + own.children_system, tuple(os.getloadavg()), _psi())


def between(pair_id: str, build: str, before: Snapshot, after: Snapshot) -> SideLoad:
    """The side that ran from ``before`` to ``after``."""
    return SideLoad(pair_id, build, before.unix, after.unix, after.mono - before.mono,
                    os.cpu_count() or 1,
                    {c: after.cpu[c] - before.cpu[c] for c in before.cpu if c in after.cpu},
                    after.own_cpu - before.own_cpu, before.load, after.load,
                    before.psi, after.psi, after.own_system - before.own_system,
                    os.getpriority(os.PRIO_PROCESS, 0))


def side_path(report: Path) -> Path:
    """A side's file beside its run report ``<pair id>-<build>.json``."""
    return report.with_suffix(SUFFIX)


def write(report: Path, side: SideLoad) -> Path:
    return atomic.write_text(side_path(report), json.dumps(side.as_dict(), indent=1))


def parse(text: str, source: str) -> SideLoad:
    """A side's record from its file's text; ValueError naming ``source`` and the key."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ValueError(f'{source}: not JSON ({err})') from None
    if not isinstance(data, Mapping):
        raise ValueError(f'{source}: a side record must be a JSON object')
    fields = {f.name: f for f in dataclasses.fields(SideLoad)}
    missing = [k for k, f in fields.items() if k not in data
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f'{source}: side record lacks key(s) {", ".join(missing)}')
    try:
        side = SideLoad(
            str(data['pair_id']), str(data['build']), float(data['start_unix']),
            float(data['end_unix']), float(data['wall_s']), int(data['ncpu']),
            {str(k): float(v) for k, v in data['cpu'].items()}, float(data['own_cpu_s']),
            tuple(map(float, data['load_start'])), tuple(map(float, data['load_end'])),
            {str(k): float(v) for k, v in (data.get('psi_start') or {}).items()},
            {str(k): float(v) for k, v in (data.get('psi_end') or {}).items()},
            float(data.get('own_system_s', 0.0)), int(data.get('nice', 0)))
    except (TypeError, ValueError, AttributeError) as err:
        raise ValueError(f'{source}: side record has a bad value ({err})') from None
    if side.ncpu < 1 or not side.wall_s >= 0:
        raise ValueError(f'{source}: side record has ncpu {side.ncpu}, wall_s {side.wall_s}')
    return side
