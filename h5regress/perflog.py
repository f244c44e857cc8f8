"""ReFrame perflogs (as ``reframe/config/settings.py`` formats them) -> records.

A perflog file starts with a header line naming its ``|``-separated columns;
each further line is one performance variable of one run. The last column,
``h5r_context``, is JSON and may contain ``|``, so a line is split at most
``len(header) - 1`` times.

A line whose run failed sanity never exists (ReFrame logs no performance
values then). A line whose run only fell outside its reference envelope
(``result == fail`` in the ``performance`` phase) is a sample: it becomes a
record with ``result: perf_fail``. Malformed lines (a line that is not UTF-8
included) are skipped and reported with their file and line number; they never
stop the reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from h5regress.buildid import NO_BUILD
from h5regress.record import Record, RecordError
from h5regress.runresults import lay_over

#: columns every h5regress perflog carries (header names as ReFrame writes them)
COLUMNS = ('job_completion_time', 'name', 'system:partition', 'environ', 'perf_var',
           'perf_value', 'perf_unit', 'perf_ref', 'perf_lower_thres', 'perf_upper_thres',
           'perf_result', 'result', 'fail_phase', 'hdf5_build', 'config_hash', 'run_id',
           'h5r_context')


#: how ReFrame writes an absent value
NO_VALUE = ('', 'None', 'null')


def parse_line(line: str, ncols: int, source: str) -> Record | None:
    """The record of one perflog line; None for a line that is no performance sample."""
    fields = line.rstrip('\n').split('|', ncols - 1)
    if len(fields) != ncols:
        raise RecordError(f'{source}: {len(fields)} columns, the header has {ncols}')
    row = dict(zip(COLUMNS, fields))
    if row['perf_var'] in NO_VALUE:
        return None     # a test without performance variables (e.g. a build fixture)
    if row['result'] == 'fail' and row['fail_phase'] != 'performance':
        return None
    try:
        context = json.loads(row['h5r_context'])
    except json.JSONDecodeError as err:
        raise RecordError(f'{source}: column h5r_context is not JSON: {err}') from None
    var = row['perf_var']
    try:
        info = context['perfvars'][var]
    except (KeyError, TypeError):
        raise RecordError(f'{source}: h5r_context has no perfvars entry for {var!r}') \
            from None
    # a variable another phase (execution) of the run measured: its own params and
    # provenance laid over the run's (h5regress.runresults.perfvars)
    provenance = lay_over(context.get('provenance', {}), info.get('provenance', {}))
    provenance['perf_var'] = var
    provenance['reference'] = {
        'value': row['perf_ref'], 'lower': row['perf_lower_thres'],
        'upper': row['perf_upper_thres'], 'result': row['perf_result'],
    }
    hdf5_build = NO_BUILD if row['hdf5_build'] in NO_VALUE else row['hdf5_build']
    return Record.from_dict({
        'tool': context.get('tool', ''),
        'operation': info.get('operation'),
        'metric': info.get('metric'),
        'value': row['perf_value'],
        'unit': row['perf_unit'],
        'higher_is_better': info.get('higher_is_better'),
        'params': lay_over(context.get('params', {}), info.get('params', {})),
        'provenance': provenance,
        'hdf5_build': hdf5_build,
        'config_hash': row['config_hash'],
        'run_id': row['run_id'],
        'timestamp': row['job_completion_time'],
        'test': row['name'],
        'system': row['system:partition'],
        'pair_id': context.get('pair_id'),
        'samples': info.get('samples') or [],
        'result': 'pass' if row['result'] == 'pass' else 'perf_fail',
    }, source)


def parse_text(text: str, source: str) -> tuple[list[Record], list[str]]:
    """Records of one perflog file's text, and the problems of the lines skipped."""
    return _parse_lines(list(enumerate(text.splitlines(), 1)), source)


def parse_bytes(data: bytes, source: str) -> tuple[list[Record], list[str]]:
    """Records of one perflog file's bytes: a line that is not UTF-8 is skipped and
    named (file, line, the byte) like any malformed line, never silently replaced."""
    lines, problems = [], []
    for lineno, raw in enumerate(data.splitlines(), 1):
        try:
            lines.append((lineno, raw.decode('utf-8')))
        except UnicodeDecodeError as err:
            problems.append(f'{source}:{lineno}: not UTF-8 (byte 0x{raw[err.start]:02x} at '
                            f'column {err.start + 1}), line skipped')
            if lineno == 1:
                return [], problems + [f'{source}: no readable header, file not read']
    records, bad = _parse_lines(lines, source)
    return records, problems + bad


def _parse_lines(lines: list[tuple[int, str]], source: str) -> tuple[list[Record], list[str]]:
    if not lines:
        return [], []
    header = lines[0][1].split('|')
    if header[-1] != 'h5r_context':
        return [], [f'{source}: not an h5regress perflog (last header column is '
                    f'{header[-1]!r}, expected h5r_context)']
    records, problems = [], []
    for lineno, line in lines[1:]:
        if not line.strip():
            continue
        try:
            record = parse_line(line, len(header), f'{source}:{lineno}')
        except RecordError as err:
            problems.append(str(err))
            continue
        if record is not None:
            records.append(record)
    return records, problems


def perflog_files(paths: Iterable[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                found += [os.path.join(root, n) for n in sorted(names) if n.endswith('.log')]
        else:
            found.append(path)
    return sorted(found)


def read(paths: Iterable[str]) -> tuple[list[Record], list[str]]:
    """Records of every perflog under ``paths`` (files or directories)."""
    records, problems = [], []
    for path in perflog_files(paths):
        try:
            with open(path, 'rb') as fp:
                data = fp.read()
        except OSError as err:
            problems.append(f'{path}: {err}')
            continue
        got, bad = parse_bytes(data, path)
        records += got
        problems += bad
    return records, problems
