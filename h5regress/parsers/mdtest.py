"""mdtest (ships with IOR): text stdout -> one :class:`ParsedRun` per task count.

Format (hpc/ior ``src/mdtest.c``, 3.3.0 and 4.1.0+dev)
-------------------------------------------------------
::

    -- started at 11/21/2026 19:49:12 --

    mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)
    Command line used: /apps/iotool/ior/bin/mdtest '-a' 'POSIX' '-F' '-n' '500' ...
    Path                : /scr/iotest/mdtest/out
    FS                  : 252.0 GiB   Used FS: 5.5%   Inodes: 16.0 Mi   Used Inodes: 2.7%
    2 tasks, 1000 files

    SUMMARY rate (in ops/sec): (of 3 iterations)          3.3: "SUMMARY rate: (of 3 iterations)"
       Operation                     Max            Min           Mean        Std Dev
       ---------                     ---            ---           ----        -------
       File creation                1204.943       1178.416       1193.477         13.624
       ...                                            3.3: "File creation     :  1204.943 ..."
    SUMMARY time (in ms/op): (of 3 iterations)            with -P (rate and time) or -Z
       File creation                   0.849          0.830          0.838          0.010
    -- finished at 11/21/2026 19:49:15 --

Quirks: the "time" table is labelled ``ms/op`` in mdtest 4 but holds the
duration of each phase in *seconds* (``mdtest.c`` prints ``res->time[i]``, the
phase time; 1000 files created at 1193 ops/s take 0.838 s). ``Std Dev`` is the
sample standard deviation over iterations (0 for one iteration). With
``--showRankStatistics`` each row has three per-rank columns first; the last four
are the per-iteration statistics read here. ``-f/-l/-s`` run several task counts:
each ``N tasks, M files`` line starts a new set of tables. ``rank_details.csv``
(``--saveRankPerformanceDetails``) is not read: it holds per-rank rates only.

Failure rules
-------------
:class:`RunFailed` on ``ERROR`` lines (including ``ERROR: verifying the data on
read``), ``FAILED in`` (mdtest 3.3), MPI aborts and launcher failures (see
:data:`h5regress.parsers.ior.FAILURE_PATTERNS`), a missing ``SUMMARY rate`` table
or ``-- finished at`` line, no output at all. :class:`ParseError` when the text is
not mdtest's.

Records
-------
Operations ``dir_create dir_stat dir_read dir_rename dir_remove file_create
file_stat file_read file_remove tree_create tree_remove``; metrics ``rate_mean``,
``rate_max``, ``rate_min`` (ops/s, higher is better), ``rate_std`` (ops/s, lower is
better) and, when printed, ``time_mean``, ``time_max``, ``time_min``, ``time_std``
(s, lower is better).

``params``: ``num_ranks``, ``nodes``, ``iterations``, ``items_total`` and the
command line's options by name with mdtest's defaults (``api``, ``items``,
``items_per_dir``, ``branch_factor``, ``depth``, ``write_bytes``, ``read_bytes``,
``files_only``, ``dirs_only``, ``unique_dir``, ``shared_file``, ``leaf_only``,
``nstride``, ``sync_file``, ``call_sync``, ``collective_creates``, ``random_stat``,
``create_only``, ``stat_only``, ``read_only``, ``remove_only``, ``rename_dirs``,
``stonewall_seconds``). ``provenance``: ``tool_version``, ``command_line``,
``started``, ``finished`` (ISO, machine local time), ``test_dir``, ``fs``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from h5regress.parsers.base import Measurement, ParsedRun, ParseError, RunFailed, basename
from h5regress.parsers.ior import find_failure, raise_if_no_output, split_command, \
    warning_lines

TOOL = 'mdtest'

#: mdtest 3.3 aborts with "<date>: Process 0: FAILED in mdtest_run, ..."
_MDTEST_FAILURES = [(re.compile(r'\bFAILED in\b'), 'mdtest failed')]

#: Operation names in the summary tables -> record operation.
OPERATIONS = {
    'Directory creation': 'dir_create', 'Directory stat': 'dir_stat',
    'Directory read': 'dir_read', 'Directory rename': 'dir_rename',
    'Directory removal': 'dir_remove', 'File creation': 'file_create',
    'File stat': 'file_stat', 'File read': 'file_read', 'File removal': 'file_remove',
    'Tree creation': 'tree_create', 'Tree removal': 'tree_remove',
}

#: Short options taking a value: letter -> (param name, default).
VALUE_OPTIONS = {
    'a': ('api', 'POSIX'), 'b': ('branch_factor', 1), 'e': ('read_bytes', 0),
    'I': ('items_per_dir', 0), 'n': ('items', 0), 'N': ('nstride', 0),
    'w': ('write_bytes', 0), 'W': ('stonewall_seconds', 0), 'z': ('depth', 0),
    'i': ('iterations', 1), 'B': ('no_barriers', 0), 'p': ('pre_delay', 0),
    'd': (None, None), 'f': (None, None), 'l': (None, None), 's': (None, None),
    'x': (None, None), 'G': (None, None), 'V': (None, None),
}
#: Flags: letter -> param name (default 0).
FLAG_OPTIONS = {
    'C': 'create_only', 'T': 'stat_only', 'E': 'read_only', 'r': 'remove_only',
    'U': 'rename_dirs', 'D': 'dirs_only', 'F': 'files_only', 'k': 'make_node',
    'L': 'leaf_only', 'R': 'random_stat', 'S': 'shared_file', 'c': 'collective_creates',
    'u': 'unique_dir', 'y': 'sync_file', 'Y': 'call_sync', 't': None, 'v': None,
    'P': None, 'Z': None, 'X': 'verify_read',
}

_LAUNCH = re.compile(r'^mdtest-(\S+) was launched with (\d+) total task\(s\) on (\d+) '
                     r'node\(s\)', re.M)
_TASKS = re.compile(r'^(\d+) tasks, (\d+) (files|directories|files/directories)', re.M)
_TABLE = re.compile(r'^SUMMARY (rate|time)\b.*?\(of (\d+) iterations\)', re.M)
_NUMBER = r'(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|-?nan|-?inf)'
_ROW = re.compile(r'^\s+([A-Z][A-Za-z ]*?)\s*:?((?:\s+' + _NUMBER + r'){4,7})\s*$')


def wanted(relpath: str) -> bool:
    """stdout/stderr captures and logs (``stdout* stderr* *.txt *.log *.out *.err``)."""
    name = basename(relpath)
    return name.endswith(('.txt', '.log', '.out', '.err')) or \
        name.startswith(('stdout', 'stderr'))


def error_line(files: Mapping[str, str]) -> str | None:
    """The first line of ``files`` (mdtest's output, a job's stdout and stderr) showing a
    failed run: IOR's failure lines (shared macros), ``FAILED in``, the system's errors."""
    return find_failure(files, _MDTEST_FAILURES)


def parse(files: Mapping[str, str]) -> list[ParsedRun]:
    """Runs of every mdtest output among ``files``."""
    failure = error_line(files)
    if failure:
        raise RunFailed(f'mdtest run failed: {failure}')
    raise_if_no_output(files, 'mdtest')
    runs = []
    for name, text in sorted(files.items()):
        for execution in executions(text):
            runs += runs_of_output(execution, name)
    if not runs:
        raise ParseError(f'{", ".join(sorted(files))}: not mdtest output (no "mdtest-<version> '
                         f'was launched with" line)')
    return runs


def executions(text: str) -> list[str]:
    """Text of each mdtest execution in ``text`` (logs may hold several): from its
    ``-- started at`` line, or from its launch line when that is missing."""
    launches = [m.start() for m in _LAUNCH.finditer(text)]
    starts = []
    for launch in launches:
        started = text.rfind('-- started at', starts[-1] if starts else 0, launch)
        starts.append(started if started >= 0 else launch)
    return [text[start:(starts[i + 1] if i + 1 < len(starts) else len(text))]
            for i, start in enumerate(starts)]


def runs_of_output(text: str, source: str) -> list[ParsedRun]:
    """Runs of one mdtest execution: one per ``N tasks, M files`` block."""
    launch = _LAUNCH.search(text)
    version = launch.group(1)
    if not _TABLE.search(text):
        raise RunFailed(f'{source}: mdtest {version} output has no "SUMMARY rate" table '
                        f'(incomplete run)')
    finished = re.search(r'^-- finished at (.+?) --', text, re.M)
    if not finished:
        raise RunFailed(f'{source}: mdtest {version} output has no "-- finished at" line '
                        f'(incomplete run)')
    command = command_line(text)
    provenance = {
        'source': source, 'tool_version': version, 'command_line': command,
        'started': mdtest_time(re.search(r'^-- started at (.+?) --', text, re.M)),
        'finished': mdtest_time(finished),
        'test_dir': first_value(text, 'Path'), 'fs': first_value(text, 'FS'),
    }
    base_params = {'nodes': int(launch.group(3)), **command_params(command)}
    blocks = list(_TASKS.finditer(text))
    runs = []
    for i, block in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
        measurements = table_measurements(text[block.end():end], source)
        if not measurements:
            raise RunFailed(f'{source}: mdtest {version}: no summary rows for '
                            f'{block.group(1)} tasks (incomplete run)')
        iterations = _TABLE.search(text[block.end():end])
        params = {**base_params, 'num_ranks': int(block.group(1)),
                  'items_total': int(block.group(2)),
                  'iterations': int(iterations.group(2)) if iterations
                  else base_params.get('iterations')}
        runs.append(ParsedRun(tool=TOOL, params=params, measurements=measurements,
                              provenance={k: v for k, v in provenance.items() if v},
                              warnings=warning_lines(text)))
    if not runs:
        raise RunFailed(f'{source}: mdtest {version} output has no "N tasks, M files" line')
    return runs


def table_measurements(text: str, source: str) -> list[Measurement]:
    """Measurements of the ``SUMMARY rate`` and ``SUMMARY time`` tables in ``text``."""
    out = []
    tables = list(_TABLE.finditer(text))
    for i, table in enumerate(tables):
        end = tables[i + 1].start() if i + 1 < len(tables) else len(text)
        kind = table.group(1)
        for line in text[table.end():end].splitlines():
            row = _ROW.match(line)
            if not row:
                continue
            name = row.group(1).strip()
            op = OPERATIONS.get(name) or re.sub(r'\W+', '_', name.lower())
            values = [float(v) for v in row.group(2).split()][-4:]
            out += row_measurements(op, kind, values, source)
    return out


def row_measurements(op: str, kind: str, values: list[float],
                     source: str) -> list[Measurement]:
    """Max, min, mean, std of one row: rates in ops/s, times in s."""
    if any(v != v or v in (float('inf'), float('-inf')) for v in values):
        raise RunFailed(f'{source}: mdtest {op} {kind} is not a number: {values}')
    maximum, minimum, mean, std = values
    unit, better = ('ops/s', True) if kind == 'rate' else ('s', False)
    return [
        Measurement(op, f'{kind}_mean', mean, unit, better),
        Measurement(op, f'{kind}_max', maximum, unit, better),
        Measurement(op, f'{kind}_min', minimum, unit, better),
        Measurement(op, f'{kind}_std', std, unit, False),
    ]


def command_line(text: str) -> str:
    match = re.search(r'^Command line used: (.*)$', text, re.M)
    return match.group(1).strip() if match else ''


def command_params(command: str) -> dict[str, Any]:
    """Options of mdtest's command line by name, defaults filled in.

    mdtest quotes each argument (``'-n' '500'``); values may also be attached
    (``-n500``) or given as ``--name=value``.
    """
    params: dict[str, Any] = {name: default for name, default in VALUE_OPTIONS.values()
                              if name}
    params.update({name: 0 for name in FLAG_OPTIONS.values() if name})
    args = split_command(command)[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not re.match(r'^-[A-Za-z]', arg):
            continue
        letter, attached = arg[1], arg[2:]
        if letter in VALUE_OPTIONS:
            value = attached.lstrip('=') if attached else (args[i] if i < len(args) else '')
            i += 0 if attached else 1
            name = VALUE_OPTIONS[letter][0]
            if name:
                params[name] = int(value) if re.fullmatch(r'-?\d+', value) else value
        else:
            for flag in arg[1:]:
                if FLAG_OPTIONS.get(flag):
                    params[FLAG_OPTIONS[flag]] += 1
    return params


def first_value(text: str, key: str) -> str | None:
    match = re.search(rf'^{key}\s*:\s*(.*)$', text, re.M)
    return match.group(1).strip() if match else None


def mdtest_time(match: re.Match | None) -> str | None:
    """``11/21/2026 19:49:12`` (machine local time) -> ISO 8601."""
    if not match:
        return None
    try:
        return datetime.datetime.strptime(match.group(1).strip(), '%m/%d/%Y %H:%M:%S') \
            .isoformat()
    except ValueError:
        return match.group(1).strip()
