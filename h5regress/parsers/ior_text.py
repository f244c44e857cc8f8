"""IOR's CSV (``-O summaryFormat=CSV``) and text outputs, read into runs (the JSON
summary is read by :mod:`h5regress.parsers.ior`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from h5regress.durability import WRITE_FLUSH
from h5regress.parsers.base import MIB, Measurement, ParsedRun, ParseError, RunFailed
from h5regress.parsers.ior_values import (TOOL, api_versions, asked_bytes,
                                          bandwidth_measurements, check_moved, decimals_of,
                                          finite, module_options, moved_over_time,
                                          parse_ior_time, repetition_measurements, span,
                                          split_command, write_flush)


#: the header IOR 4 prints before each test's rows (``ior-output.c`` PrintTableHeader)
CSV_HEADER = ('access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),'
              'close(s),total(s),numTasks,iter')


_CSV_ROW = re.compile(r'^(write|read)(,[-+0-9.einfa]+){10},\d+$', re.I)


def runs_from_csv(text: str, source: str) -> list[ParsedRun]:
    """One run per test of an IOR CSV summary (``[]`` when ``text`` has none).

    Each test is its header line, then one ``write``/``read`` row per repetition;
    IOR prints nothing else in CSV (no version, command line, parameters or summary),
    so the figures are IOR's statistics computed from the rows, and the parameters
    only what the rows state."""
    lines = [line.strip() for line in text.splitlines()]
    starts = [i for i, line in enumerate(lines) if line == CSV_HEADER]
    runs = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        rows = [line.split(',') for line in lines[start + 1:end] if _CSV_ROW.match(line)]
        where = f'{source}:{start + 1}'
        if not rows:
            raise RunFailed(f'{where}: IOR CSV summary without a result row (the run ended '
                            f'before its first repetition)')
        runs.append(csv_run(rows, where, source))
    return runs


def csv_run(rows: list[list[str]], where: str, source: str) -> ParsedRun:
    """One test of a CSV summary from its rows (checked like the JSON: every repetition
    of every operation there, finite, the bytes moved the same whole number of
    block x tasks in each)."""
    by_op: dict[str, list[list[str]]] = {}
    for row in rows:
        by_op.setdefault(row[0].lower(), []).append(row)
    counts = {op: len(op_rows) for op, op_rows in by_op.items()}
    reps = max(counts.values())
    for op, op_rows in by_op.items():
        iters = [int(row[11]) for row in op_rows]
        if iters != list(range(reps)):
            raise RunFailed(f'{where}: IOR {op}: repetitions {iters} of {reps} (incomplete '
                            f'run)')
    block, transfer, tasks = ({round(finite(row[i], name, where) * scale) for row in rows}
                              for i, name, scale in ((4, 'block(KiB)', 1024),
                                                     (5, 'xfer(KiB)', 1024),
                                                     (10, 'numTasks', 1)))
    if len(block) != 1 or len(transfer) != 1 or len(tasks) != 1:
        raise ParseError(f'{where}: IOR CSV rows of one test with different block, '
                         f'transfer or task counts')
    params = {'blockSize': block.pop(), 'transferSize': transfer.pop(),
              'numTasks': tasks.pop(), 'repetitions': reps,
              'writeFile': int('write' in by_op), 'readFile': int('read' in by_op)}
    params['num_ranks'] = params['numTasks']
    segments = csv_segments(by_op, params, where)
    if segments:
        params['segmentCount'] = segments
    measurements = []
    for op, op_rows in by_op.items():
        bw, times = ([finite(row[i], f'{op} {name}', where) for row in op_rows]
                     for i, name in ((1, 'bw(MiB/s)'), (9, 'total(s)')))
        # the summary's OPs are bandwidth / transfer (over totalTime); the rows' IOPS
        # column divides by the access time alone (ior.c ProcessIterResults)
        measurements += repetition_measurements(
            op, bw, [b * MIB / params['transferSize'] for b in bw], times)
    return ParsedRun(tool=TOOL, params=params, measurements=measurements,
                     provenance={'source': source, 'output_format': 'CSV'},
                     warnings=['IOR CSV summary: it states no version, API or options (IOR '
                               'prints none in CSV): params are what its rows state, '
                               'segmentCount what the bytes moved imply; whether the '
                               'writes were fsynced (-e) it does not say'])


def csv_segments(by_op: Mapping[str, list[list[str]]], params: Mapping[str, Any],
                 where: str) -> int | None:
    """The segment count the bytes moved imply (bandwidth x ``total(s)``, within their
    printed rounding, over block x tasks), the same for every repetition of every
    operation; None when the rounding allows several. :class:`RunFailed` when no
    whole count fits every repetition: some moved other than the rest."""
    unit = params['blockSize'] * params['numTasks']
    lo, hi = 1.0, math.inf
    for op, op_rows in by_op.items():
        for row in op_rows:
            moved = moved_over_time((float(row[1]), decimals_of(row[1])),
                                    (float(row[9]), decimals_of(row[9])))
            lo, hi = max(lo, moved[0] / unit), min(hi, moved[1] / unit)
            if math.ceil(lo * (1 - 1e-9)) > hi * (1 + 1e-9):
                raise RunFailed(f'{where}: IOR {op} repetition {row[11]} moved '
                                f'{(moved[0] + moved[1]) / 2 / MIB:.6g} MiB: not the '
                                f'whole number of blocks x tasks ({unit} B) the other '
                                f'repetitions moved: the data did not all reach the '
                                f'file system')
    first = math.ceil(lo * (1 - 1e-9))
    return first if first + 1 > hi * (1 + 1e-9) else None


_TEXT_HEADER = re.compile(r'^IOR-(\S+): MPI Coordinated Test of Parallel I/O', re.M)


#: ``Key : value`` (IOR >= 3.2) and IOR 3.0/3.1's indented ``key = value`` lines
_KEY_VALUE = re.compile(r'^([A-Za-z][\w #/().-]*?)\s*:\s?(.*)$'
                        r'|^\s+([a-z][\w ]*?)\s*=\s*(.*)$')


#: where one test's section starts: ``TestID : 0`` (>= 3.2), ``Test 0 started:`` (3.0)
_TEST_START = re.compile(r'^(?:TestID\s*:\s*|Test )(\d+)', re.M)


#: "Summary of all tests" header token -> (kind, name). Kinds: ``m`` measurement,
#: ``p`` parameter, ``x`` ignored. Duplicate "StdDev" is told apart by position.
_SUMMARY_COLUMNS = {
    'Max(MiB)': ('m', 'bw_max'), 'Min(MiB)': ('m', 'bw_min'), 'Mean(MiB)': ('m', 'bw_mean'),
    'StdDev': ('m', 'bw_std'), 'Max(OPs)': ('m', 'ops_max'), 'Min(OPs)': ('m', 'ops_min'),
    'Mean(OPs)': ('m', 'ops_mean'), 'StdDev(OPs)': ('m', 'ops_std'),
    'Mean(s)': ('m', 'time_mean'), 'Stonewall(s)': ('m', 'stonewall_time_mean'),
    'Stonewall(MiB)': ('m', 'stonewall_bw_mean'),
    'Test#': ('p', 'testID'), '#Tasks': ('p', 'numTasks'), 'tPN': ('p', 'tasksPerNode'),
    'reps': ('p', 'repetitions'), 'fPP': ('p', 'filePerProc'), 'reord': ('p', 'reorderTasks'),
    'reordoff': ('p', 'taskPerNodeOffset'), 'reordrand': ('p', 'reorderTasksRandom'),
    'seed': ('p', 'reorderTasksRandomSeed'), 'segcnt': ('p', 'segmentCount'),
    'blksiz': ('p', 'blockSize'), 'xsize': ('p', 'transferSize'), 'API': ('p', 'api'),
    'RefNum': ('p', 'refnum'), 'aggs(MiB)': ('x', 'aggregate_mib'),
    'aggsize': ('x', 'aggregate_bytes'), 'Operation': ('x', 'operation'),
}


def runs_from_text_file(text: str, source: str) -> list[tuple[tuple[str, str],
                                                                list[ParsedRun]]]:
    """Each IOR run of a text file, keyed by (Began, command line)."""
    starts = [m.start() for m in _TEXT_HEADER.finditer(text)]
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        segment = text[start:end]
        header = header_values(segment)
        key = (header.get('Began', ''), command_of(header))
        out.append((key, runs_from_text(segment, source)))
    return out


def command_of(header: Mapping[str, str]) -> str:
    """The command line (``Command line used:`` in IOR 3.0/3.1)."""
    return header.get('Command line') or header.get('Command line used') or ''


def header_values(segment: str) -> dict[str, str]:
    """``Key : value`` lines of a run (first occurrence of each key)."""
    values: dict[str, str] = {}
    for line in segment.splitlines():
        match = _KEY_VALUE.match(line)
        if match:
            key, value = (match.group(1), match.group(2)) if match.group(1) \
                else (match.group(3), match.group(4))
            values.setdefault(key.strip(), value.strip())
    return values


def runs_from_text(segment: str, source: str) -> list[ParsedRun]:
    """One run per test of one IOR text output (``segment`` starts at its header)."""
    version = _TEXT_HEADER.match(segment).group(1)
    header = header_values(segment)
    rows = summary_rows(segment, source)
    if not rows:
        raise RunFailed(f'{source}: IOR {version} output has no "Summary of all tests" '
                        f'(incomplete run)')
    if 'Finished' not in header:
        raise RunFailed(f'{source}: IOR {version} output has no "Finished" line '
                        f'(incomplete run)')
    tests = test_sections(segment)
    command = command_of(header)
    runs = []
    for test_id in sorted({row['params']['testID'] for row in rows}):
        test_rows = [row for row in rows if row['params']['testID'] == test_id]
        section = tests.get(test_id, '')
        options = header_values(section) if section else header
        params = text_params(test_rows[0]['params'], options, command, version)
        samples = result_rows(section or segment)
        measurements = []
        for row in test_rows:
            measurements += text_measurements(row, samples.get(row['operation'], {}),
                                              params, source)
        provenance = {
            'source': source, 'tool_version': version, 'command_line': command or None,
            'machine': header.get('Machine'), 'started': parse_ior_time(header.get('Began')),
            'finished': parse_ior_time(header.get('Finished')),
            'test_started': parse_ior_time(options.get('StartTime')),
            'test_file': options.get('test filename'), 'fs_path': options.get('Path'),
            'aggregate_file_size': options.get('aggregate filesize'),
            **api_versions(params.get('api'), options.get('apiVersion')),
        }
        provenance[WRITE_FLUSH] = write_flush(params, measurements)
        runs.append(ParsedRun(tool=TOOL, params=params, measurements=measurements,
                              provenance={k: v for k, v in provenance.items()
                                          if v is not None}))
    return runs


def test_sections(segment: str) -> dict[int, str]:
    """Text of each test (from its ``TestID`` line to the next), by test id."""
    matches = list(_TEST_START.finditer(segment))
    sections = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(segment)
        sections[int(match.group(1))] = segment[match.start():end]
    return sections


def summary_columns(header_line: str) -> list[str]:
    """Header tokens, the second ``StdDev`` (after ``Mean(OPs)``) renamed ``StdDev(OPs)``."""
    tokens = header_line.split()
    return ['StdDev(OPs)' if tok == 'StdDev' and 'Mean(OPs)' in tokens[:i] else tok
            for i, tok in enumerate(tokens)]


def summary_rows(segment: str, source: str) -> list[dict[str, Any]]:
    """Rows of "Summary of all tests" as ``{'operation', 'values', 'params'}``."""
    lines = segment.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('Summary of all tests:'):
            break
    else:
        return []
    rest = [line[len('Summary of all tests:'):]] + lines[i + 1:]
    rest = [line for line in rest if line.strip()]
    if not rest or not rest[0].split() or rest[0].split()[0] != 'Operation':
        raise ParseError(f'{source}: "Summary of all tests" without its header line')
    columns = summary_columns(rest[0])
    unknown = [c for c in columns if c not in _SUMMARY_COLUMNS]
    if unknown:
        raise ParseError(f'{source}: unknown IOR summary column(s) {", ".join(unknown)}')
    rows = []
    for line in rest[1:]:
        tokens = line.split()
        if not tokens or tokens[0] not in ('write', 'read'):
            break
        if len(tokens) != len(columns):
            raise ParseError(f'{source}: IOR summary row has {len(tokens)} values for '
                             f'{len(columns)} columns: {line.strip()}')
        row = {'operation': tokens[0], 'values': {}, 'params': {}}
        for column, token in zip(columns, tokens):
            kind, name = _SUMMARY_COLUMNS[column]
            if kind == 'm' or name in ('aggregate_mib', 'aggregate_bytes'):
                row['values'][name] = token
            elif kind == 'p':
                row['params'][name] = token if name == 'api' else int(token)
        rows.append(row)
    return rows


def result_rows(section: str) -> dict[str, dict[str, list[float]]]:
    """Per-repetition ``bw`` (MiB/s) and ``time`` (``total(s)``) of the "Results"
    table, by operation (IOR prints them with 2-6 significant digits)."""
    samples: dict[str, dict[str, list[float]]] = {}
    lines = section.splitlines()
    for i, line in enumerate(lines):
        columns = line.split()
        if columns[:2] != ['access', 'bw(MiB/s)']:
            continue
        # IOR 3.0/3.1 print "Commencing write performance test: ..." between rows
        total = columns.index('total(s)') if 'total(s)' in columns else None
        for row in lines[i + 1:]:
            values = row.split()
            if not values or set(values[0]) == {'-'} or values[0] == 'Commencing':
                continue
            if values[0] not in ('write', 'read', 'remove'):
                break
            if values[0] == 'remove' or len(values) != len(columns):
                continue
            op = samples.setdefault(values[0], {'bw': [], 'time': [], 'moved': []})
            op['bw'].append(float(values[1]))
            if total is not None:
                op['time'].append(float(values[total]))
                op['moved'].append(moved_over_time((float(values[1]), decimals_of(values[1])),
                                                   (float(values[total]),
                                                    decimals_of(values[total]))))
        break
    return samples


def text_params(row_params: Mapping[str, Any], options: Mapping[str, str], command: str,
                version: str) -> dict[str, Any]:
    """Parameters a text output states: the summary row, "Options", the command line."""
    params = dict(row_params)
    params.update(short_flags(command))
    if 'type' in options:
        params['collective'] = int(options['type'] == 'collective')
    if 'ordering in a file' in options:
        params['randomOffset'] = int(options['ordering in a file'].startswith('random'))
    if options.get('nodes', '').isdigit():
        params['nodes'] = int(options['nodes'])
    params['deadlineForStonewall'] = int(options.get('stonewallingTime', 0) or 0)
    if 'stoneWallingWearOut' in options:
        params['stoneWallingWearOut'] = int(options['stoneWallingWearOut'])
    params.update(module_options(command, params.get('api', ''), version))
    params['num_ranks'] = params.get('numTasks')
    return params


#: Short flags whose parameter the text output does not show otherwise (``-c`` only
#: in IOR 3.0/3.1, whose "Summary:" omits the access type).
_TEXT_FLAGS = {'e': 'fsync', 'Y': 'fsyncperwrite', 'c': 'collective'}


def short_flags(command: str) -> dict[str, int]:
    """``-e``, ``-Y``, ``-c`` as 0/1, alone or in a cluster like ``-wre``."""
    params = {name: 0 for name in _TEXT_FLAGS.values()}
    for arg in split_command(command)[1:]:
        if re.fullmatch(r'-[A-Za-z]+', arg) and all(c in 'cCeEFgkmrRuvwWxYzZ' for c in arg[1:]):
            for letter, name in _TEXT_FLAGS.items():
                if letter in arg[1:]:
                    params[name] = 1
    return params


def text_measurements(row: Mapping[str, Any], samples: Mapping[str, list[float]],
                      params: Mapping[str, Any], source: str) -> list[Measurement]:
    """Measurements of one "Summary of all tests" row; ``samples`` from "Results"."""
    op = row['operation']
    values = row['values']
    bw_samples = samples.get('bw', [])

    def num(name: str) -> float:
        return finite(values[name], f'{op} {name}', source)

    asked = asked_bytes(params)
    if 'aggregate_mib' in values:
        token = values['aggregate_mib']
        check_moved(op, 'repetition 1', span(num('aggregate_mib'), decimals_of(token), MIB),
                    asked, source)
    elif 'aggregate_bytes' in values:
        check_moved(op, 'repetition 1', span(num('aggregate_bytes'), 0), asked, source)
    for i, moved in enumerate(samples.get('moved', []), 1):
        check_moved(op, f'repetition {i}', moved, asked, source)
    out = bandwidth_measurements(op, num('bw_max'), num('bw_min'), num('bw_mean'),
                                 num('bw_std'), bw_samples)
    transfer = float(params.get('transferSize') or 0)
    if 'ops_mean' in values:
        out.append(Measurement(op, 'ops_mean', num('ops_mean'), 'ops/s', True,
                               [bw * MIB / transfer for bw in bw_samples] if transfer
                               else []))
    if 'time_mean' in values:
        out.append(Measurement(op, 'time_mean', num('time_mean'), 's', False,
                               samples.get('time', [])))
    if values.get('stonewall_time_mean', 'NA') != 'NA':
        out.append(Measurement(op, 'stonewall_time_mean', num('stonewall_time_mean'), 's',
                               False))
    if values.get('stonewall_bw_mean', 'NA') != 'NA':
        out.append(Measurement(op, 'stonewall_bw_mean', num('stonewall_bw_mean'), 'MiB/s',
                               True))
    return out
