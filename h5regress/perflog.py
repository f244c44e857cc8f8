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
stop the reading. The perflog is for people: the nightly's gate reads the same values
from ReFrame's run report (:mod:`h5regress.runreport`, whose :func:`to_record` makes
the records of both).
"""

from __future__ import annotations

from collections.abc import Iterable

from h5regress import runreport
from h5regress.record import Record, RecordError

#: columns every h5regress perflog carries (header names as ReFrame writes them)
COLUMNS = ('job_completion_time', 'name', 'system:partition', 'environ', 'perf_var',
           'perf_value', 'perf_unit', 'perf_ref', 'perf_lower_thres', 'perf_upper_thres',
           'perf_result', 'result', 'fail_phase', 'hdf5_build', 'config_hash', 'run_id',
           'h5r_context')


def parse_line(line: str, ncols: int, source: str) -> Record | None:
    """The record of one perflog line; None for a line that is no performance sample."""
    fields = line.rstrip('\n').split('|', ncols - 1)
    if len(fields) != ncols:
        raise RecordError(f'{source}: {len(fields)} columns, the header has {ncols}')
    row = dict(zip(COLUMNS, fields))
    if row['perf_var'] in runreport.NO_VALUE:
        return None     # a test without performance variables (e.g. a build fixture)
    return runreport.to_record(runreport.PerfValue(
        test=row['name'], system=row['system:partition'], var=row['perf_var'],
        value=row['perf_value'], unit=row['perf_unit'], ref=row['perf_ref'],
        lower=row['perf_lower_thres'], upper=row['perf_upper_thres'],
        perf_result=row['perf_result'], result=row['result'], fail_phase=row['fail_phase'],
        hdf5_build=row['hdf5_build'], config_hash=row['config_hash'], run_id=row['run_id'],
        timestamp=row['job_completion_time'], context=row['h5r_context']), source)


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
    return runreport.collect(
        (lambda line=line, n=lineno: parse_line(line, len(header), f'{source}:{n}'))
        for lineno, line in lines[1:] if line.strip())


def read(paths: Iterable[str]) -> tuple[list[Record], list[str]]:
    """Records of every perflog under ``paths`` (files or directories)."""
    return runreport.read_files(paths, '.log', parse_bytes)
