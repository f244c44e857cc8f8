"""ReFrame's run report (``reframe --report-file``) -> records.

Each test case of the report carries what a record needs: its name, system and
partition, result and failing phase, its performance values with their reference
and thresholds (``perfvalues``: ``[value, ref, lower, upper, unit, result]`` keyed
``<system>:<partition>:<variable>``), its completion time, and the check's variables
(``hdf5_build``, ``config_hash``, ``run_id`` and the ``h5r_context`` JSON of
:class:`h5regress.checkrecord.RecordContext`). The perflog prints the same values
for people; :mod:`h5regress.perflog` reads it back through :func:`to_record`.

A test case that failed before its performance phase gives no record; one that
failed in it (outside its reference envelope) gives samples (``result:
perf_fail``). A report that is not JSON, or a test case without an ``h5r_context``
entry for one of its values, is a problem naming the file; it never stops the
reading.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from h5regress.buildid import NO_BUILD
from h5regress.record import Record, RecordError
from h5regress.runresults import lay_over

#: how ReFrame writes an absent value (JSON null; in a perflog line '', 'None' or 'null')
NO_VALUE = (None, '', 'None', 'null')


@dataclasses.dataclass(frozen=True)
class PerfValue:
    """One performance variable of one test case, as ReFrame reports or logs it."""
    test: str
    system: str             # system:partition
    var: str
    value: Any
    unit: str
    ref: Any
    lower: Any
    upper: Any
    perf_result: str
    result: str             # the test case's: pass or fail
    fail_phase: str | None
    hdf5_build: str
    config_hash: str
    run_id: str
    timestamp: str
    context: str            # the check's h5r_context (JSON)


def number(value: Any) -> float | None:
    """A reference or threshold as a number (None when ReFrame has none; an infinite
    one, which JSON cannot hold, as none)."""
    if value in NO_VALUE:
        return None
    as_float = float(value)
    return as_float if math.isfinite(as_float) else None


def to_record(pv: PerfValue, source: str) -> Record | None:
    """The record of one performance value; None for a test case that failed before
    its performance phase (no sample)."""
    if pv.result == 'fail' and pv.fail_phase != 'performance':
        return None
    try:
        context = json.loads(pv.context)
        info = context['perfvars'][pv.var]
    except (json.JSONDecodeError, TypeError) as err:
        raise RecordError(f'{source}: h5r_context is not JSON: {err}') from None
    except KeyError:
        raise RecordError(f'{source}: h5r_context has no perfvars entry for {pv.var!r}') \
            from None
    # a variable another phase (execution) of the run measured: its own params and
    # provenance laid over the run's (h5regress.runresults.perfvars)
    provenance = lay_over(context.get('provenance', {}), info.get('provenance', {}))
    provenance['perf_var'] = pv.var
    try:
        provenance['reference'] = {'value': number(pv.ref), 'lower': number(pv.lower),
                                   'upper': number(pv.upper), 'result': pv.perf_result}
    except ValueError as err:
        raise RecordError(f'{source}: reference of {pv.var!r} is not a number: {err}') \
            from None
    return Record.from_dict({
        'tool': context.get('tool', ''),
        'operation': info.get('operation'),
        'metric': info.get('metric'),
        'value': pv.value,
        'unit': pv.unit,
        'higher_is_better': info.get('higher_is_better'),
        'params': lay_over(context.get('params', {}), info.get('params', {})),
        'provenance': provenance,
        'hdf5_build': NO_BUILD if pv.hdf5_build in NO_VALUE else pv.hdf5_build,
        'config_hash': pv.config_hash,
        'run_id': pv.run_id,
        'timestamp': pv.timestamp,
        'test': pv.test,
        'system': pv.system,
        'pair_id': context.get('pair_id'),
        'samples': info.get('samples') or [],
        'result': 'pass' if pv.result == 'pass' else 'perf_fail',
    }, source)


def perf_values(case: Mapping[str, Any]) -> list[PerfValue]:
    """The performance values of one test case of a report."""
    system = f'{case.get("system")}:{case.get("partition")}'
    out = []
    for key, (value, ref, lower, upper, unit, result) in (case.get('perfvalues') or {}).items():
        out.append(PerfValue(
            test=case.get('name', ''), system=system, var=key.rsplit(':', 1)[-1],
            value=value, unit=unit, ref=ref, lower=lower, upper=upper,
            perf_result=str(result), result=case.get('result', ''),
            fail_phase=case.get('fail_phase'), hdf5_build=case.get('hdf5_build'),
            config_hash=case.get('config_hash') or '', run_id=case.get('run_id') or '',
            timestamp=case.get('job_completion_time') or '',
            context=case.get('h5r_context') or ''))
    return out


@dataclasses.dataclass(frozen=True)
class RunReport:
    """What h5regress reads of one run report: its test cases (every run's, as ReFrame
    writes them) and of its session, the cases it ran and where their output went."""
    cases: list[Mapping[str, Any]]
    num_cases: int | None
    prefix_output: str
    time_elapsed: float | None = None   # the session's wall time


def load(text: str) -> RunReport:
    """The run report of a ReFrame run report's JSON text; ValueError (with the parser's
    reason) when the text is not one."""
    try:
        data = json.loads(text)
        cases = [case for run in data['runs'] for case in run.get('testcases') or []]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(err) from None
    session = data.get('session_info')
    session = session if isinstance(session, Mapping) else {}
    num = session.get('num_cases')
    elapsed = session.get('time_elapsed')
    return RunReport(cases, num if isinstance(num, int) else None,
                     str(session.get('prefix_output') or ''),
                     float(elapsed) if isinstance(elapsed, (int, float)) else None)


def testcases(text: str) -> list[Mapping[str, Any]]:
    """The test cases of a ReFrame run report's JSON text (:func:`load`)."""
    return load(text).cases


def num_cases(path: str | os.PathLike) -> int:
    """How many test cases the session of the run report at ``path`` ran; OSError when
    it cannot be read, ValueError (with the reason) when it is not a run report."""
    with open(path, encoding='utf-8') as fp:
        num = load(fp.read()).num_cases
    if num is None:
        raise ValueError('no session_info.num_cases')
    return num


def parse_text(text: str, source: str) -> tuple[list[Record], list[str]]:
    """Records of one report's text, and the problems of what was skipped."""
    try:
        cases = testcases(text)
    except ValueError as err:
        return [], [f'{source}: not a ReFrame run report ({err})']
    return collect((lambda pv=pv: to_record(pv, f'{source}: {pv.test} {pv.var}'))
                   for case in cases for pv in perf_values(case))


def collect(makers: Iterable[Callable[[], Record | None]]) -> tuple[list[Record], list[str]]:
    """The records the calls make (None: no sample), and the errors of those that
    fail (:class:`RecordError`, naming the file and the line or test case)."""
    records, problems = [], []
    for make in makers:
        try:
            record = make()
        except RecordError as err:
            problems.append(str(err))
            continue
        if record is not None:
            records.append(record)
    return records, problems


def parse_bytes(data: bytes, source: str) -> tuple[list[Record], list[str]]:
    """Records of one report file's bytes (UTF-8 JSON)."""
    try:
        return parse_text(data.decode('utf-8'), source)
    except UnicodeDecodeError as err:
        return [], [f'{source}: not UTF-8 ({err}), not read']


def read_files(paths: Iterable[str], suffix: str,
               parse: Callable[[bytes, str], tuple[list[Record], list[str]]]
               ) -> tuple[list[Record], list[str]]:
    """Records of the files ``paths`` name, and of those ending in ``suffix`` below the
    directories they name, each parsed by ``parse(bytes, path)``; an unreadable file is
    a problem naming it."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(suffix)]
        else:
            files.append(path)
    records, problems = [], []
    for path in sorted(files):
        try:
            with open(path, 'rb') as fp:
                data = fp.read()
        except OSError as err:
            problems.append(f'{path}: {err}')
            continue
        got, bad = parse(data, path)
        records += got
        problems += bad
    return records, problems


def read(paths: Iterable[str]) -> tuple[list[Record], list[str]]:
    """Records of every run report under ``paths`` (files or directories)."""
    return read_files(paths, '.json', parse_bytes)
