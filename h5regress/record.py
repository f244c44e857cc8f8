"""The record: one normalised result, the unit that every part of h5regress speaks.

Contract (owned by the foundation issue; parsers, perflogs, the gate and the
report all read and write exactly this):

``tool``             benchmark that produced it: ``ior``, ``fio``, ``macsio``, ``h5bench``,
                     ``flash-io``, ``mdtest``.
``operation``        what was measured: ``write``, ``read``, ``create``, ``stat``, ...
``metric``           which statistic of it: ``bw_mean``, ``bw_max``, ``time``, ...
``value``, ``unit``  the number, normalised: bandwidths in ``MiB/s``, times in ``s``,
                     sizes in ``B``, metadata rates in ``ops/s``.
``higher_is_better`` direction of "better" for this metric (bandwidth: True, time: False).
``params``           the test's parameters, defaults included (api, block size, ranks, ...).
``provenance``       how it was obtained: tool version, HDF5 version as the tool reports it,
                     MPI implementation, MPI-IO layer and hints, node list, file system type,
                     full command line, Spack lock, warnings (e.g. data below node memory).
``hdf5_build``       id of the HDF5 build (a Spack manifest build id, or ``path`` when the
                     tool came from PATH, or ``none``: :mod:`h5regress.buildid`).
``config_hash``      :func:`config_hash` of what makes two runs comparable; the HDF5 build is
                     deliberately left out so that build A and build B of one test share it.
``run_id``           one execution of the tool (all records of one execution share it).
``timestamp``        ISO 8601, UTC, when the run finished.
``test``             the ReFrame test (or file) the record came from; free text.
``system``           ``system:partition`` it ran on ('' when unknown).
``pair_id``          nightly A/B pair it belongs to (None outside the nightly gate).
``samples``          per-repetition values inside one execution (IOR ``-i``); they are not
                     independent samples for the gate, only context.
``result``           ``pass``, or ``perf_fail`` when only the reference envelope failed.
                     (A run whose sanity failed never becomes a record.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from h5regress.buildid import NO_BUILD

#: Keys of ``params`` that identify the HDF5 build, not the configuration. They are
#: removed before hashing so that two builds of the same test share a config hash.
BUILD_KEYS = frozenset({'hdf5_build', 'hdf5_version', 'hdf5_commit', 'hdf5_spec_hash'})

#: Fields whose absence makes a serialised record invalid.
REQUIRED = ('tool', 'operation', 'metric', 'value', 'unit', 'higher_is_better',
            'config_hash', 'run_id', 'timestamp')


class RecordError(ValueError):
    """A serialised record is malformed; the message names the source and the key."""


@dataclasses.dataclass
class Record:
    tool: str
    operation: str
    metric: str
    value: float
    unit: str
    higher_is_better: bool
    params: dict[str, Any]
    provenance: dict[str, Any]
    hdf5_build: str
    config_hash: str
    run_id: str
    timestamp: str
    test: str = ''
    system: str = ''
    pair_id: str | None = None
    samples: list[float] = dataclasses.field(default_factory=list)
    result: str = 'pass'

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the gate compares across builds: one metric of one configuration."""
        return (self.config_hash, self.tool, self.operation, self.metric)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(',', ':'))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = '<record>') -> 'Record':
        if not isinstance(data, Mapping):
            raise RecordError(f'{source}: a record must be a JSON object, '
                              f'got {type(data).__name__}')
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise RecordError(f'{source}: record lacks key(s) {", ".join(missing)}')
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise RecordError(f'{source}: unknown record key(s) {", ".join(unknown)}')
        try:
            value = float(data['value'])
        except (TypeError, ValueError):
            raise RecordError(f'{source}: key "value" is not a number: '
                              f'{data["value"]!r}') from None
        if not math.isfinite(value):
            raise RecordError(f'{source}: key "value" is not finite: {data["value"]!r}')
        if not isinstance(data['higher_is_better'], bool):
            raise RecordError(f'{source}: key "higher_is_better" must be true or false, '
                              f'got {data["higher_is_better"]!r}')
        kwargs = dict(data)
        kwargs['value'] = value
        kwargs.setdefault('params', {})
        kwargs.setdefault('provenance', {})
        kwargs.setdefault('hdf5_build', NO_BUILD)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, line: str, source: str = '<record>') -> 'Record':
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise RecordError(f'{source}: not valid JSON: {err}') from None
        return cls.from_dict(data, source)


def config_hash(comparable: Mapping[str, Any]) -> str:
    """Hash of what makes two runs comparable.

    ``comparable`` holds the test parameters, the tool options, node and rank
    counts, file system, MPI-IO layer and hints (see :func:`comparable_config`).
    HDF5 build keys (:data:`BUILD_KEYS`) are dropped at any depth, so the
    baseline and the candidate build of one test hash alike. The hash is the
    first 16 hex digits of SHA-256 over canonical JSON (sorted keys).
    """
    def strip(obj):
        if isinstance(obj, Mapping):
            return {str(k): strip(v) for k, v in obj.items() if k not in BUILD_KEYS}
        if isinstance(obj, (list, tuple)):
            return [strip(v) for v in obj]
        return obj

    canonical = json.dumps(strip(comparable), sort_keys=True, separators=(',', ':'),
                           default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def comparable_config(*, tool: str, params: Mapping[str, Any], options: Iterable[str] = (),
                      num_nodes: int | None = None, num_ranks: int | None = None,
                      fs_type: str | None = None, mpiio_layer: str | None = None,
                      mpiio_hints: Mapping[str, str] | None = None,
                      system: str | None = None) -> dict[str, Any]:
    """The mapping :func:`config_hash` is taken over; one place defines comparability."""
    return {
        'tool': tool,
        'params': dict(params),
        'options': list(options),
        'num_nodes': num_nodes,
        'num_ranks': num_ranks,
        'fs_type': fs_type,
        'mpiio_layer': mpiio_layer,
        'mpiio_hints': dict(mpiio_hints or {}),
        'system': system,
    }


def read_jsonl(text: str, source: str) -> tuple[list[Record], list[str]]:
    """Records of a JSON-lines text; malformed lines are skipped and reported, not fatal."""
    records, problems = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(Record.from_json(line, f'{source}:{lineno}'))
        except RecordError as err:
            problems.append(str(err))
    return records, problems
