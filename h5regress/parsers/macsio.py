"""MACSio: ``macsio-log.log`` (+ stderr, job script) -> one :class:`ParsedRun` per run directory.

Formats (LLNL/MACSio 7f19af3, ``macsio/macsio_main.c``, ``macsio_log.c``, ``macsio_utils.c``)
--------------------------------------------------------------------------------------------
``macsio-log.log`` is a fixed-size file: one section per rank, headed by
``-----Processor 000001-----``, each line padded to ``--log_line_length`` (128)
characters. A section has ``--log_line_cnt`` lines (64, rank 0 has 64 extra)
and *wraps around* when a rank logs more: with many dumps the oldest
``Dump`` lines are overwritten. A message line is::

    Sev:"file.c":LINE:MESSAGE:ERRNO:MPI_ERROR_STRING:MPI_ERROR_CLASS

``Sev`` is ``Dbg1..3``, ``Info``, ``Warn``, ``Err`` or ``Die``; ``ERRNO`` is
empty or ``2:"No such file or directory"`` (the C ``errno`` when the line was
logged). Lines are cut at 127 characters, so the tail may be missing.

Messages read here (``B`` = bytes, ``T`` = time, ``R`` = bandwidth)::

    Dump 00 BW:  37.9303 Mi/ 15.7877 msecs =   2.3462 Gi/sec       per rank, per dump
    Dump 00 Stat BW:  37.9321 Mi/ 15.7877 msecs = ...              bytes stat()ed on disk
    Overall BW: 151.7211 Mi/181.7016 msecs = 835.0019 Mi/sec       per rank, all dumps
    Summed  BW:   1.5568 Gi/sec                                    rank 0: sum of ranks' BW
    Total Bytes: 303.4423 Mi; Last finisher - First starter = 218.3613 msecs; BW = 1.3571 Gi/sec

Sizes use ``b``, ``Ki Mi Gi Ti Pi`` (powers of 1024) or, with
``--units_prefix_system decimal``, ``Kb Mb Gb Tb Pb`` (powers of 1000); a
bandwidth adds ``/sec``. Times use ``nsecs usecs msecs secs mins hrs days wks``.
Everything is printed with 4 decimals, so sizes are exact to about
``0.00005`` of their unit. The ``Dump`` bytes are the size of MACSio's
in-memory problem object, not the bytes on disk (the ``Stat`` line has those).

MACSio does *not* log its command line; parameters come from the command line
when the caller gives it (``parse(files, command=...)``) or a job script
(``*.sh``, e.g. ReFrame's ``rfm_job.sh``) in the directory holds it. Without
it only ``num_ranks``, ``num_dumps`` and what the timings file reveals
(``interface`` of a plugin with timers, ``parallel_file_mode`` SIF/MIF) are known.

Failure rules (MACSio exits 0 after many failures, so the output decides)
--------------------------------------------------------------------------
A run is :class:`RunFailed` when

- a log line has severity ``Err``/``Die`` or carries an errno (writing into a
  missing directory: the only trace is ``2:"No such file or directory"`` on
  the ``Stat BW`` line, next to a plausible bandwidth);
- a ``Dump NN Stat`` line reports 0 bytes on disk;
- stderr holds an HDF5 error stack (``HDF5-DIAG``), a MACSio ``Die``/``Err``
  message, an MPI abort or a signal;
- there is no log, or rank 0's ``Total Bytes`` line or a rank's ``Overall BW``
  line is missing (crashed or incomplete run);
- the ranks logged different dumps, or fewer dumps than ``--num_dumps``
  (unless the log wrapped, which only warns).

Measurements (operation ``write``)
----------------------------------
``bw``           MACSio's aggregate: total bytes / (last finisher - first starter), MiB/s;
                 ``samples`` are the per-dump aggregate bandwidths (below)
``bw_dump_min``, ``bw_dump_max``
                 per-dump aggregate bandwidth = bytes of all ranks in that dump /
                 the slowest rank's dump time (MiB/s)
``bw_summed``    MACSio's ``Summed BW``: sum of the ranks' own bandwidths (MiB/s)
``size``         total bytes of all dumps (B; the problem size MACSio marshals)
``time``         last finisher - first starter (s)

MACSio never flushes what it writes: ``write_flush`` (:mod:`h5regress.durability`) is
``none`` for each of these figures; ``macsio_check`` times an fsync of the files
after the run and adds ``flush time`` and ``write bw_flushed``.

:func:`check_files` compares the files a run left with what its log claims.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.durability import NONE, WRITE_FLUSH, flush_map
from h5regress.parsers.base import (MIB, Measurement, ParsedRun, ParseError, RunFailed,
                                    basename, by_directory, parse_size, to_mib_per_s)
# the run's dump lines and the files they must have left (check_files: the checks' sanity)
from h5regress.parsers.macsio_files import (DumpLine, MacsioRun, check_files,  # noqa: F401
                                            mif_group)

TOOL = 'macsio'
LOG_NAME = 'macsio-log.log'
TIMINGS_NAME = 'macsio-timings.log'

#: Time unit -> seconds (MACSio's MACSIO_UTILS_PrintSeconds).
_TIME_UNITS = {
    'nsecs': 1e-9, 'usecs': 1e-6, 'msecs': 1e-3, 'secs': 1.0, 'mins': 60.0,
    'hrs': 3600.0, 'days': 86400.0, 'wks': 604800.0,
}

#: MACSio's defaults (macsio_main.c) for the parameters that shape the I/O.
DEFAULTS: dict[str, Any] = {
    'interface': 'miftmpl',
    'parallel_file_mode': 'MIF',
    'file_count': 4,
    'avg_num_parts': 1.0,
    'part_size': 80000,
    'part_dim': 2,
    'part_type': 'rectilinear',
    'vars_per_part': 20,
    'num_dumps': 10,
    'meta_type': 'tabular',
    'meta_size': [10000, 50000],
    'units_prefix_system': 'binary',
}
#: Number of values each main option takes (the rest take one).
_NARGS = {'parallel_file_mode': 2, 'mesh_decomp': 3, 'part_mesh_dims': 3, 'meta_size': 2,
          'log_line_cnt': 2, 'exercise_scr': 0}
#: Options that name paths or logging: provenance, not comparable parameters.
_PROVENANCE_OPTS = {'filebase', 'log_file_name', 'timings_file_name', 'log_line_cnt',
                    'log_line_length', 'debug_level', 'part_map'}
#: HDF5 plugin options that are flags.
_PLUGIN_FLAGS = {'show_errors', 'no_collective', 'no_single_chunk', 'log'}
_PLUGIN_NARGS = {'compression': 2, 'silo_fapl': 2}

_PROC_RE = re.compile(r'^-+Processor (\d+)-+$')
_LINE_RE = re.compile(r'^(?P<sev>Dbg1|Dbg2|Dbg3|Info|Warn|Err|Die):"(?P<src>[^"]*)":'
                      r'(?P<lineno>\d+):(?P<rest>.*)$')
_TAIL_RE = re.compile(r'^(?P<msg>.*?):(?:(?P<errno>-?\d+):"(?P<strerror>[^"]*)")?'
                      r':(?P<mpistr>[^:]*):(?P<mpicls>[^:]*)$')
_NUM = r'\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*'
_DUMP_RE = re.compile(rf'^Dump (\d+) (Stat )?BW:{_NUM}(\S+)\s*/{_NUM}(\S+)\s*={_NUM}(\S+)/sec$')
_OVERALL_RE = re.compile(rf'^Overall BW:{_NUM}(\S+)\s*/{_NUM}(\S+)\s*={_NUM}(\S+)/sec$')
_SUMMED_RE = re.compile(rf'^Summed\s+BW:{_NUM}(\S+)/sec$')
_TOTAL_RE = re.compile(rf'^Total Bytes:{_NUM}(\S+);\s*Last finisher - First starter ={_NUM}(\S+);'
                       rf'\s*BW ={_NUM}(\S+)/sec$')
_STDERR_FAIL_RES = (
    (re.compile(r'HDF5-DIAG: Error detected in HDF5.*'), 'HDF5 error stack'),
    (re.compile(r'^\d{6}: (?:Die|Err):.*$', re.M), 'MACSio error'),
    (re.compile(r'^(?:Die|Err):"[^"]*":\d+:.*$', re.M), 'MACSio error'),
    (re.compile(r'MPI_ABORT was invoked.*'), 'MPI abort'),
    (re.compile(r'.*Process received signal.*|.*exited on signal \d+.*'), 'crash'),
)


# --------------------------------------------------------------------------- units

def size_bytes(value: str, unit: str, source: str = LOG_NAME) -> float:
    """``37.9303``, ``Mi`` -> bytes. MACSio's print_bytes: ``Ki``, ``Mi``.. are powers of
    1024, and with ``--units_prefix_system decimal`` ``Kb``, ``Mb``.. powers of 1000."""
    size = parse_size(value, unit, decimal=True)
    if size is None:
        raise ParseError(f'{source}: unknown size unit {unit!r}')
    return float(size)


def seconds(value: str | float, unit: str, source: str = LOG_NAME) -> float:
    """``15.7877``, ``msecs`` -> seconds."""
    try:
        return float(value) * _TIME_UNITS[unit]
    except KeyError:
        raise ParseError(f'{source}: unknown time unit {unit!r}') from None


def _precision(unit: str) -> float:
    """Half of the last printed digit (4 decimals) in bytes."""
    return 0.00005 * size_bytes(1, unit)


# --------------------------------------------------------------------------- files

def _is_stream(name: str) -> bool:
    return (name in ('stdout', 'stderr', 'stdout.txt', 'stderr.txt')
            or name.endswith(('.out', '.err')))


def wanted(relpath: str) -> bool:
    """The log, the timings file, stdout/stderr (``*.out``, ``*.err``), job scripts (``*.sh``)."""
    name = basename(relpath)
    return name in (LOG_NAME, TIMINGS_NAME) or _is_stream(name) or name.endswith('.sh')


# --------------------------------------------------------------------------- command line

def command_args(command: str | Sequence[str]) -> list[str]:
    """MACSio's own arguments out of a command line (launcher and its options dropped)."""
    tokens = shlex.split(command) if isinstance(command, str) else list(command)
    for i, tok in enumerate(tokens):
        if basename(tok) == 'macsio':
            return tokens[i + 1:]
    return tokens if tokens and tokens[0].startswith('--') else []


def find_command(text: str) -> list[str] | None:
    """The arguments of the first line of a script that runs ``macsio``."""
    for line in text.splitlines():
        if line.lstrip().startswith('#') or 'macsio' not in line:
            continue
        try:
            tokens = shlex.split(line)
        except ValueError:
            continue
        if any(basename(t) == 'macsio' for t in tokens):
            return command_args(tokens)
    return None


def _number(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def params_from_args(args: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(params, provenance) of MACSio's arguments, MACSio's defaults filled in.

    ``params`` keys: ``interface``, ``parallel_file_mode`` (MIF, MIFFPP, MIFOPT,
    SIF), ``file_count`` (int, None when the mode takes none), ``part_size`` (B),
    ``avg_num_parts``, ``vars_per_part``, ``num_dumps``, ``part_dim``,
    ``part_type``, ``meta_type``, ``meta_size``, ``units_prefix_system``, any
    other main option by its name, and the HDF5 plugin's: ``collective``
    (bool; MACSio only honours it in SIF mode), ``compression`` (algorithm or
    None), ``compression_params``, and the other plugin options by name.
    Path and logging options (``--filebase``, ``--log_*``, ...) go to provenance.
    """
    params: dict[str, Any] = dict(DEFAULTS)
    params['meta_size'] = list(DEFAULTS['meta_size'])
    prov: dict[str, Any] = {}
    args = list(args)
    plugin: list[str] = []
    if '--plugin_args' in args:
        i = args.index('--plugin_args')
        args, plugin = args[:i], args[i + 1:]
    i = 0
    raw_part_size = None
    while i < len(args):
        tok = args[i]
        if not tok.startswith('--'):
            raise ParseError(f'command line: unexpected argument {tok!r}')
        name = tok[2:]
        if name == 'parallel_file_mode':
            mode = args[i + 1] if i + 1 < len(args) else ''
            params['parallel_file_mode'] = mode.upper()
            count = args[i + 2] if i + 2 < len(args) and not args[i + 2].startswith('--') else None
            params['file_count'] = int(count) if count is not None and count.isdigit() else None
            i += 2 if count is None else 3
            continue
        n = _NARGS.get(name, 1)
        values = []
        j = i + 1
        while j < len(args) and len(values) < n and not args[j].startswith('--'):
            values.append(args[j])
            j += 1
        i = j
        value: Any = (True if n == 0 else
                      _number(values[0]) if len(values) == 1 else [_number(v) for v in values])
        if name == 'part_size':
            raw_part_size = str(values[0]) if values else ''
            continue
        (prov if name in _PROVENANCE_OPTS else params)[name] = value
    decimal = str(params.get('units_prefix_system', 'binary')).strip('"').lower() == 'decimal'
    params['units_prefix_system'] = 'decimal' if decimal else 'binary'
    if raw_part_size is not None:       # 80000, 2M, 1K, 3G, 10B
        part_size = parse_size(raw_part_size, decimal=decimal)
        if part_size is None:
            raise ParseError(f'command line: part size {raw_part_size!r} is not a size')
        params['part_size'] = int(part_size)
    if params['parallel_file_mode'] in ('MIFFPP', 'MIFOPT'):
        params['file_count'] = None          # MACSio ignores the count there
    for key in ('avg_num_parts',):
        params[key] = float(params[key])
    params.update(_plugin_params(plugin, prov))
    return params, prov


def _plugin_params(args: Sequence[str], prov: dict[str, Any]) -> dict[str, Any]:
    """The HDF5 plugin's ``--plugin_args``: collective (default on), compression, ..."""
    out: dict[str, Any] = {'collective': True, 'compression': None, 'compression_params': None}
    i = 0
    while i < len(args):
        name = args[i].lstrip('-')
        if name in _PLUGIN_FLAGS:
            if name == 'no_collective':
                out['collective'] = False
            elif name == 'show_errors':
                prov['show_errors'] = True
            else:
                out[name] = True
            i += 1
            continue
        n = _PLUGIN_NARGS.get(name, 1)
        values = list(args[i + 1:i + 1 + n])
        i += 1 + len(values)
        if name == 'compression':
            out['compression'] = values[0] if values else None
            out['compression_params'] = values[1] if len(values) > 1 else None
        else:
            out[name] = _number(values[0]) if len(values) == 1 else [_number(v) for v in values]
    return out


# --------------------------------------------------------------------------- log

@dataclasses.dataclass
class _Log:
    ranks: list[int] = dataclasses.field(default_factory=list)
    dumps: dict[tuple[int, int], DumpLine] = dataclasses.field(default_factory=dict)
    order: dict[int, list[int]] = dataclasses.field(default_factory=dict)   # dump order per rank
    overall: dict[int, tuple[float, float]] = dataclasses.field(default_factory=dict)
    summed: float | None = None
    total: tuple[float, float, float] | None = None     # bytes, seconds, MiB/s
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)


def parse_log(text: str, source: str = LOG_NAME) -> _Log:
    """Read ``macsio-log.log``: dump lines per rank, totals, error and warning lines."""
    log = _Log()
    rank = None
    for raw in text.splitlines():
        line = raw.rstrip(' \x00')
        if not line.strip():
            continue
        m = _PROC_RE.match(line.strip())
        if m:
            rank = int(m.group(1))
            log.ranks.append(rank)
            continue
        m = _LINE_RE.match(line)
        if not m:
            continue
        if rank is None:
            raise ParseError(f'{source}: message before the first "Processor" heading')
        sev, rest = m.group('sev'), m.group('rest')
        tail = _TAIL_RE.match(rest)
        msg = tail.group('msg') if tail else rest
        where = f'{source}: rank {rank}'
        if tail and tail.group('errno') and tail.group('errno') != '0':
            log.errors.append(f'{where}: "{msg.strip()}" with errno {tail.group("errno")} '
                              f'({tail.group("strerror")})')
        if tail and tail.group('mpistr'):
            log.errors.append(f'{where}: "{msg.strip()}" with MPI error {tail.group("mpistr")}')
        if sev in ('Err', 'Die'):
            log.errors.append(f'{where}: {sev}: {msg.strip()}')
        elif sev == 'Warn':
            log.warnings.append(f'{where}: {msg.strip()}')
        _read_message(log, rank, msg.strip(), where)
    return log


def _read_message(log: _Log, rank: int, msg: str, where: str) -> None:
    m = _DUMP_RE.match(msg)
    if m:
        dump = int(m.group(1))
        nbytes = size_bytes(m.group(3), m.group(4), where)
        secs = seconds(m.group(5), m.group(6), where)
        if m.group(2):      # Stat line: bytes on disk
            entry = log.dumps.setdefault((rank, dump), DumpLine(rank, dump, float('nan'), secs))
            entry.stat_bytes, entry.stat_tol = nbytes, _precision(m.group(4))
        else:
            old = log.dumps.get((rank, dump))
            log.dumps[(rank, dump)] = DumpLine(rank, dump, nbytes, secs,
                                               old.stat_bytes if old else None,
                                               old.stat_tol if old else 0.0)
            log.order.setdefault(rank, []).append(dump)
        return
    m = _OVERALL_RE.match(msg)
    if m:
        log.overall[rank] = (size_bytes(m.group(1), m.group(2), where),
                             seconds(m.group(3), m.group(4), where))
        return
    m = _SUMMED_RE.match(msg)
    if m and rank == 0:
        log.summed = to_mib_per_s(m.group(1), f'{m.group(2)}/s', decimal=True, source=where)
        return
    m = _TOTAL_RE.match(msg)
    if m and rank == 0:
        log.total = (size_bytes(m.group(1), m.group(2), where),
                     seconds(m.group(3), m.group(4), where),
                     to_mib_per_s(m.group(5), f'{m.group(6)}/s', decimal=True, source=where))


def stream_failure(text: str) -> str | None:
    """The first line of stdout/stderr that shows a failure (HDF5 error, Die, abort, signal)."""
    for regex, what in _STDERR_FAIL_RES:
        m = regex.search(text)
        if m:
            return f'{what}: {m.group(0).strip()[:200]}'
    return None


def _timings_params(text: str) -> dict[str, Any]:
    """What ``macsio-timings.log`` reveals: the plugin of its timers and SIF/MIF."""
    out: dict[str, Any] = {}
    plugins = set(re.findall(r'FILE=macsio_(\w+)\.c', text)) - {'main', 'mif', 'utils'}
    if len(plugins) == 1:
        out['interface'] = plugins.pop()
    if 'LAB=main_dump_sif' in text:
        out['parallel_file_mode'] = 'SIF'
    elif 'LAB=main_dump_mif' in text:
        out['parallel_file_mode'] = 'MIF'
    return out


# --------------------------------------------------------------------------- parse

def parse(files: Mapping[str, str],
          command: str | Sequence[str] | None = None) -> list[ParsedRun]:
    """One :class:`MacsioRun` per directory holding a ``macsio-log.log``.

    ``command`` is MACSio's command line (a string or argv, launcher allowed)
    when the caller knows it; else a job script (``*.sh``) among the files is
    searched for it.
    """
    groups = by_directory(files)       # one MACSio run per directory
    scripts = {d + '/' + n if d else n: t for d, g in groups.items() for n, t in g.items()
               if n.endswith('.sh')}
    args = command_args(command) if command is not None else None
    if args is None:
        for text in scripts.values():
            args = find_command(text)
            if args is not None:
                break
    runs = []
    for directory, group in sorted(groups.items()):
        if LOG_NAME in group:
            runs.append(_parse_run(directory, group, args))
    if runs:
        return runs
    # no log at all: a run that died before logging, or not MACSio output
    for directory, group in sorted(groups.items()):
        for name, text in group.items():
            if _is_stream(name):
                problem = stream_failure(text)
                if problem:
                    where = f'{directory}/{name}' if directory else name
                    raise RunFailed(f'{where}: MACSio failed before writing {LOG_NAME}: {problem}')
    if any(_is_stream(n) for g in groups.values() for n in g):
        raise RunFailed(f'no {LOG_NAME}: MACSio did not run or did not start (no log written)')
    raise ParseError(f'no {LOG_NAME} among {", ".join(sorted(files)) or "no files"}: '
                     'not a MACSio run directory')


def _parse_run(directory: str, group: Mapping[str, str], args: list[str] | None) -> MacsioRun:
    src = f'{directory}/{LOG_NAME}' if directory else LOG_NAME
    log = parse_log(group[LOG_NAME], src)
    if not log.ranks:
        raise ParseError(f'{src}: no "Processor" sections: not a MACSio log')
    _raise_if_unfinished(log, directory, group, src)

    params: dict[str, Any] = {}
    provenance: dict[str, Any] = {}
    if args is not None:
        params, provenance = params_from_args(args)
        provenance['command'] = 'macsio ' + shlex.join(args)
    else:
        timings = group.get(TIMINGS_NAME)
        if timings:
            params.update(_timings_params(timings))
    params['num_ranks'] = len(log.ranks)

    warnings = list(log.warnings)
    dumps, wrapped = _dump_numbers(log, src)
    if wrapped:
        warnings.append(f'{src}: the log wrapped (too few --log_line_cnt lines per rank); '
                        f'per-dump figures cover dumps {dumps[0]}-{dumps[-1]} only')
    elif args is not None and len(dumps) != params['num_dumps']:
        raise RunFailed(f'{src}: {len(dumps)} dumps logged, --num_dumps asked for '
                        f'{params["num_dumps"]}')
    if args is None:
        params['num_dumps'] = len(dumps) if not wrapped else None

    per_dump = [dump_bandwidth(log, d) for d in dumps]
    total_bytes, total_secs, total_bw = log.total
    measurements = [
        Measurement('write', 'bw', total_bw, 'MiB/s', True, per_dump),
        Measurement('write', 'bw_dump_min', min(per_dump), 'MiB/s', True),
        Measurement('write', 'bw_dump_max', max(per_dump), 'MiB/s', True),
    ]
    if log.summed is not None:
        measurements.append(Measurement('write', 'bw_summed', log.summed, 'MiB/s', True))
    measurements += [
        Measurement('write', 'size', float(round(total_bytes)), 'B', True),
        Measurement('write', 'time', total_secs, 's', False),
    ]
    # MACSio never flushes: its figures end in the page cache (the check times a flush)
    provenance[WRITE_FLUSH] = flush_map(measurements, ['write'], NONE)
    return MacsioRun(tool=TOOL, params=params, provenance=provenance,
                     measurements=measurements, warnings=warnings,
                     dumps=sorted(log.dumps.values(), key=lambda d: (d.dump, d.rank)))


def _raise_if_unfinished(log: _Log, directory: str, group: Mapping[str, str],
                         src: str) -> None:
    """RunFailed naming what the log and the streams say went wrong, if anything did."""
    problems = list(log.errors)
    for name, text in sorted(group.items()):
        if _is_stream(name):
            problem = stream_failure(text)
            if problem:
                problems.append(f'{directory + "/" if directory else ""}{name}: {problem}')
    if problems:
        raise RunFailed('; '.join(problems[:5]) + (f' (+{len(problems) - 5} more)'
                                                   if len(problems) > 5 else ''))
    if log.total is None:
        raise RunFailed(f'{src}: rank 0 logged no "Total Bytes" line: the run crashed or '
                        'did not finish')
    unfinished = [r for r in log.ranks if r not in log.overall]
    if unfinished:
        raise RunFailed(f'{src}: rank(s) {", ".join(map(str, unfinished))} logged no '
                        '"Overall BW" line: the run did not finish')
    for d in log.dumps.values():
        if d.stat_bytes is not None and d.stat_bytes == 0:
            raise RunFailed(f'{src}: rank {d.rank} found 0 bytes on disk after dump {d.dump}')


def _dump_numbers(log: _Log, src: str) -> tuple[list[int], bool]:
    """Dumps every rank logged, and whether the log wrapped around."""
    wrapped = any(order != sorted(order) or (order and order[0] != 0)
                  for order in log.order.values())
    sets = {r: set(log.order.get(r, [])) for r in log.ranks}
    common = set.intersection(*sets.values()) if sets else set()
    if not common:
        raise RunFailed(f'{src}: no dump was logged by every rank')
    if not wrapped and any(s != common for s in sets.values()):
        detail = ', '.join(f'rank {r}: {len(s)}' for r, s in sets.items())
        raise RunFailed(f'{src}: the ranks logged different dumps ({detail})')
    return sorted(common), wrapped


def dump_bandwidth(log: _Log, dump: int) -> float:
    """Aggregate bandwidth of one dump: all ranks' bytes / the slowest rank's time (MiB/s)."""
    lines = [log.dumps[(r, dump)] for r in log.ranks]
    slowest = max(d.seconds for d in lines)
    if slowest <= 0:
        raise RunFailed(f'{LOG_NAME}: dump {dump} took no time')
    return sum(d.nbytes for d in lines) / slowest / MIB


# --------------------------------------------------------------------------- files written


