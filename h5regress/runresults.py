"""What a check's job leaves beside the tool's output, and the record context made of it.

:class:`h5regress.checkbase.IOBenchmark` runs the tool; this module reads what its job
script wrote in the stage directory (the probe's JSON, the list of files the run left in
its data directory) and assembles the perflog context (``h5r_context``) that
:mod:`h5regress.perflog` turns back into records: parameters, provenance, per-repetition
samples. Plain functions of plain values, without ReFrame.

A run of several executions (a write phase, then a read phase run after a page-cache
drop) is a :class:`PhasedRun`: each :class:`Phase` keeps its own execution's parsed run
and command, so that each record names the execution that measured it: the context holds
the first phase's parameters and provenance, and each performance variable another phase
measured carries what differs (:func:`perfvars`; :mod:`h5regress.perflog` lays it over).

The "data below node memory" warning is the suite's, said once (:func:`memory_warning`):
where the suite can tell (the bytes written and the nodes' memory known), a tool's own
say on it (the FLASH-IO kernel's, which ``h5regress parse`` keeps for runs made outside
the suite) is left out of the record (:func:`record_warnings`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.parsers import ParsedRun

PROBE_FILE = 'h5r-probe.json'
FILES_LIST = 'h5r-files.txt'
#: what a tool's own "data below node memory" warnings say (the suite's replaces them)
TOOL_MEMORY_WARNINGS = ('is below the memory of the', 'node memory unknown')


def written_files(stagedir: str) -> dict[str, int]:
    """Files the run left in its data directory (relative path -> bytes), as the job
    listed them."""
    path = os.path.join(stagedir, FILES_LIST)
    written = {}
    if os.path.exists(path):
        with open(path) as fp:
            for line in fp:
                size, _, name = line.rstrip('\n').partition(' ')
                if name:
                    written[name] = int(size)
    return written


def probe(stagedir: str) -> dict:
    """What :mod:`h5regress.probe` recorded on the node, or the reason it cannot be read."""
    path = os.path.join(stagedir, PROBE_FILE)
    try:
        with open(path) as fp:
            return json.load(fp)
    except (OSError, ValueError) as err:
        return {'probe_error': f'{path}: {err}'}


def memory_warning(data_bytes: int, node_memory: int | None, num_nodes: int) -> list[str]:
    """The warning when the data written are below the memory of the nodes used."""
    if not data_bytes or not node_memory:
        return []
    total_mem = node_memory * num_nodes
    if data_bytes < total_mem:
        return [f'data written ({data_bytes} B) is below the memory of the '
                f'nodes used ({total_mem} B): the figures may be mostly page cache']
    return []


#: provenance key of a run (phase) whose figures the page cache cannot have served, and
#: how: e.g. an fsync inside the timed write, a cache drop before each read repetition
CACHE_DEFEATED = 'page_cache_defeated_by'


def record_warnings(run: ParsedRun, data_bytes: int, node_memory: int | None,
                    num_nodes: int) -> list[str]:
    """The run's warnings with the memory warning said once, by the suite, and not at
    all where the run says how it defeated the page cache (:data:`CACHE_DEFEATED`)."""
    tool = run.warnings
    if data_bytes and node_memory:
        tool = [w for w in tool if not any(p in w for p in TOOL_MEMORY_WARNINGS)]
    if run.provenance.get(CACHE_DEFEATED):
        return tool
    return tool + memory_warning(data_bytes, node_memory, num_nodes)


@dataclasses.dataclass
class Phase:
    """One execution of a run (or like executions: one per repetition), as parsed, and
    the command that ran it."""
    run: ParsedRun
    command: str


@dataclasses.dataclass
class PhasedRun(ParsedRun):
    """A run of several executions: the measurements of all, the parameters and
    provenance of the first; each phase's own in :attr:`phases`."""
    phases: list[Phase] = dataclasses.field(default_factory=list)

    def phase_of(self, operation: str, metric: str) -> int:
        """Index of the phase that measured ``operation`` ``metric``."""
        for i, phase in enumerate(self.phases):
            if any(m.operation == operation and m.metric == metric
                   for m in phase.run.measurements):
                return i
        raise KeyError(f'{self.tool}: no phase measured {operation} {metric}')


def merge_phases(tool: str, phases: Sequence[Phase]) -> PhasedRun:
    """One run of the executions ``phases`` (the first gives parameters and provenance)."""
    first = phases[0].run
    return PhasedRun(tool=tool, params=dict(first.params), provenance=dict(first.provenance),
                     measurements=[m for p in phases for m in p.run.measurements],
                     warnings=[w for p in phases for w in p.run.warnings],
                     phases=list(phases))


def phases_of(run: ParsedRun, command: str) -> list[Phase]:
    """The phases of ``run``: its own, or the run itself run by ``command``."""
    return list(getattr(run, 'phases', None) or [Phase(run, command)])


def changes(base: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """What ``own`` changes of ``base``: keys it sets otherwise or adds, and None for
    the keys it lacks (laid over ``base`` by :func:`lay_over`)."""
    out = {k: v for k, v in own.items() if k not in base or base[k] != v}
    out.update({k: None for k in base if k not in own})
    return out


def lay_over(base: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``change`` (from :func:`changes`) applied: None removes a key."""
    out = {**base, **change}
    return {k: v for k, v in out.items() if not (k in change and change[k] is None)}


def perfvars(run: ParsedRun, measurements: Mapping[str, tuple[str, str]],
             contexts: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]] = ()
             ) -> dict[str, dict]:
    """Per performance variable: the measurement it reads, its direction and samples.

    ``contexts``: (params, provenance) of each phase of a :class:`PhasedRun`, the first
    the context's own; a variable another phase measured carries that phase's
    ``params`` and ``provenance`` as changes to the context's (:func:`changes`)."""
    out = {}
    for name, (op, metric) in measurements.items():
        m = run.measurement(op, metric)
        out[name] = {'operation': op, 'metric': metric,
                     'higher_is_better': m.higher_is_better, 'samples': m.samples}
        phase = run.phase_of(op, metric) if isinstance(run, PhasedRun) and contexts else 0
        if phase:
            (params, provenance), (own_params, own_provenance) = contexts[0], contexts[phase]
            out[name]['params'] = changes(params, own_params)
            out[name]['provenance'] = changes(provenance, own_provenance)
    return out


def context_json(tool: str, params: Mapping[str, Any], provenance: Mapping[str, Any],
                 perf: Mapping[str, dict], pair_id: str | None = None) -> str:
    """The perflog context column (``h5r_context``); ``pair_id``: the nightly's pair."""
    return json.dumps({
        'tool': tool,
        'params': dict(params),
        'provenance': dict(provenance),
        'perfvars': dict(perf),
        'pair_id': pair_id or None,
    }, sort_keys=True, default=str)
