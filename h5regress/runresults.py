"""What a check's job leaves beside the tool's output, and the record context made of it.

:class:`h5regress.checkbase.IOBenchmark` runs the tool; this module reads what its job
script wrote in the stage directory (the probe's JSON, the list of files the run left in
its data directory) and assembles the perflog context (``h5r_context``) that
:mod:`h5regress.perflog` turns back into records: parameters, provenance, per-repetition
samples. Plain functions of plain values, without ReFrame.

The "data below node memory" warning is the suite's, said once (:func:`memory_warning`):
where the suite can tell (the bytes written and the nodes' memory known), a tool's own
say on it (the FLASH-IO kernel's, which ``h5regress parse`` keeps for runs made outside
the suite) is left out of the record (:func:`record_warnings`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
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


def record_warnings(run: ParsedRun, data_bytes: int, node_memory: int | None,
                    num_nodes: int) -> list[str]:
    """The run's warnings with the memory warning said once, by the suite."""
    tool = run.warnings
    if data_bytes and node_memory:
        tool = [w for w in tool if not any(p in w for p in TOOL_MEMORY_WARNINGS)]
    return tool + memory_warning(data_bytes, node_memory, num_nodes)


def perfvars(run: ParsedRun, measurements: Mapping[str, tuple[str, str]]) -> dict[str, dict]:
    """Per performance variable: the measurement it reads, its direction and samples."""
    out = {}
    for name, (op, metric) in measurements.items():
        m = run.measurement(op, metric)
        out[name] = {'operation': op, 'metric': metric,
                     'higher_is_better': m.higher_is_better, 'samples': m.samples}
    return out


def context_json(tool: str, params: Mapping[str, Any], provenance: Mapping[str, Any],
                 perf: Mapping[str, dict]) -> str:
    """The perflog context column (``h5r_context``)."""
    return json.dumps({
        'tool': tool,
        'params': dict(params),
        'provenance': dict(provenance),
        'perfvars': dict(perf),
        'pair_id': os.environ.get('H5REGRESS_PAIR_ID') or None,
    }, sort_keys=True, default=str)
