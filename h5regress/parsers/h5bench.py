"""h5bench (hpc-io/h5bench 1.6): runner directories and direct runs -> :class:`ParsedRun` objects.

Inputs
------
A *direct run* directory holds what ReFrame (or a user) kept of one
``h5bench_write``/``h5bench_read``/``h5bench_exerciser``/``h5bench_hdf5_iotest``
execution: stdout (``stdout``, ``stdout.txt`` or ``*.out``), stderr
(``stderr``, ``stderr.txt``, ``*.err``), the key=value configuration
(``*.cfg``; ``*.ini`` for the metadata benchmark) and the CSV it wrote
(``CSV_FILE``; ``hdf5_iotest.csv``).

A *runner* directory is what the Python runner ``h5bench setup.json`` leaves:
its log ``<setup>-h5bench.log`` (or ``h5bench-runner.log``) and one
``storage/<id>/`` directory per benchmark with ``stdout``, ``stderr``,
``h5bench.cfg`` and ``output.csv``. The log names each benchmark's kind and
directory (``h5bench [write] - DIR: .../storage/ab26cf65/``), its command, and
``SUCCESS`` or ``ERROR``/``CRITICAL`` lines. Each directory gives one run.

Output formats
--------------
``h5bench_write``/``h5bench_read`` print, on rank 0::

    =================== Performance Results ==================
    Total number of ranks: 2
    Total emulated compute time: 0.400 s
    Total write size: 640.000 MB
    Raw write time: 1.628 s
    Metadata time: 0.002 s
    H5Fcreate() time: 0.026 s            (write only, also H5Fflush(), H5Fclose())
    Observed completion time: 2.348 s    ("Observed read completion time" for read)
    SYNC Raw write rate: 393.198 MB/s
    SYNC Observed write rate: 328.554 MB/s

and the CSV holds ``metric, value, unit`` rows (operation, ranks, collective
data, collective meta, subfiling, total compute time, total size, raw time,
raw rate, metadata time, observed rate, observed time), possibly after an
environment block (``ENV_METADATA_FILE``). Sizes and rates come from
``format_human_readable`` (commons/h5bench_util.c): the prefix is `` ``, ``K``,
``M``, ``G`` or ``T`` and steps by **1024**, so h5bench's "MB" is MiB.
Times are printed with 3 decimals (a raw time of ``0.000 s`` is possible).
Observed rate = size / (observed time - emulated compute time).

``h5bench_exerciser`` prints per buffer size (``Bufsize``: bytes per rank of
the double dataset) rows ``Min Med Max Avg Std`` over its iterations, with
columns H5DWrite (s), RawWrBDWTH (MiB/s: bytes / 2^20 / time x nprocs, the
slowest rank), H5Dread, RawRdBDWTH, then Dataset, Group, Attribute, H5Fopen,
H5Fclose, H5Fflush, OtherClose times (s, the slowest rank), and ends with
``All done -- Finishing normally.``

The metadata benchmark (``h5bench_hdf5_iotest``) writes one CSV row with
named columns such as ``wall [s]``, ``fsize [B]``, ``write-rate-max [MiB/s]``.

Records
-------
write/read (operation ``write`` or ``read``): ``raw_rate``, ``observed_rate``
(MiB/s), ``raw_time``, ``observed_time``, ``metadata_time`` (s), ``size`` (B,
total over ranks) and, for write, ``h5fcreate_time``, ``h5fflush_time``,
``h5fclose_time`` (s).

exerciser: per buffer size ``<N>`` (bytes per rank) the *median* over its
iterations: ``write``/``read`` ``raw_rate_<N>B`` (MiB/s) and ``time_<N>B`` (s), and
``time_<N>B`` of ``dataset_create``, ``group_create``, ``attribute_write``,
``file_open``, ``file_close``, ``file_flush``, ``other_close``.

metadata: each CSV column: ``total``/``time`` (wall), ``write``/``size``
(file size), ``write``/``phase_time_min|max``, ``create``/``time_min|max``,
``write``/``time_min|max``, ``write``/``rate_min|max`` (MiB/s), and the same for
``read``. Values have only 2 decimals.

``params``: the configuration keys lower-cased (``mem_pattern``,
``file_pattern``, ``num_dims``, ``dim_1``.., ``timesteps``,
``emulated_compute_time_per_timestep`` as written plus
``emulated_compute_time_per_timestep_s``, ``collective_data``,
``collective_metadata``, ``compress``, ``chunk_dim_1``.., ``read_option``,
``subfiling``, ...; YES/NO become booleans, paths such as ``CSV_FILE`` are
left out) plus ``benchmark`` (write, read, exerciser, metadata, ...),
``num_ranks`` and ``mode`` (SYNC or ASYNC, as the run reports it).

Failure rules (h5bench_write exits 0 after failing to create its file)
-----------------------------------------------------------------------
:class:`RunFailed` when

- stderr holds an HDF5 error stack (``Error detected in HDF5``), an MPI abort
  or abnormal exit, or a signal;
- stdout has a failure line (``Configuration file read failed``, ``...
  failed``, ``Failed ...``, ``Benchmark Failed``, ``Unknown Parameter``,
  ``ERROR ...``, ``Error with opening file``);
- the results are missing (no ``Performance Results`` and no CSV rows; no
  ``All done`` line of the exerciser; an empty metadata CSV);
- stdout and CSV disagree (files of different runs);
- **plausibility**: a rate per rank above ``max_rate_per_rank`` (default
  :data:`MAX_RATE_PER_RANK`, 64 GiB/s). No process moves data through HDF5
  faster than one core copies memory (~10-30 GiB/s today); h5bench_write that
  could not create its file reports 1.3 TiB/s per rank (raw time ``0.000 s``).
  In ASYNC mode the raw rate only measures issuing the asynchronous writes, so
  there only the observed rate is bounded;
- the runner log has ``ERROR``/``CRITICAL`` lines for the benchmark, names a
  benchmark directory that is missing, or never reaches ``Finishing h5bench
  Suite``.

:class:`UnsupportedFeature` (a :class:`RunFailed`) when the HDF5 build lacks
what the configuration asks for: ``HDF5 version does not support SUBFILING``
(h5bench refuses the configuration and exits 1: it does *not* fall back), or
the runner's ``Requested ASYNC mode but ran in SYNC mode``. A check may turn
it into a skip.
"""

from __future__ import annotations

import csv
import io
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from h5regress.durability import FSYNC, NONE, WRITE_FLUSH, flush_map
from h5regress.parsers.base import (MIB, Measurement, ParsedRun, ParseError, RunFailed,
                                    basename, by_directory)
# shared with the exerciser and metadata readers; the names tests use stay here too
from h5regress.parsers.h5bench_common import (  # noqa: F401
    MAX_RATE_PER_RANK, SAME_EXECUTION_READ, TOOL, _check_rate, _is_stderr, _is_stdout, _pick,
    _stderr_problem, compute_time_s, parse_cfg, parse_ini, to_bytes, to_mib_s)
from h5regress.parsers.h5bench_exerciser_metadata import parse_exerciser, parse_metadata


#: Benchmarks of the pattern family (write/read style output).
_PATTERN_KINDS = {'write', 'read', 'append', 'overwrite', 'write-unlimited',
                  'write_var_normal_dist'}
_KNOWN_KINDS = _PATTERN_KINDS | {'exerciser', 'metadata'}

_RUNNER_LINE_RE = re.compile(r'^\S+ \S+ h5bench - (?P<level>[A-Z]+) - (?P<msg>.*)$')


class UnsupportedFeature(RunFailed):
    """The run did nothing because the HDF5 build lacks a requested feature."""


# --------------------------------------------------------------------------- helpers


def _is_runner_log(name: str) -> bool:
    return name == 'h5bench-runner.log' or name.endswith('-h5bench.log') or name == 'h5bench.log'


def wanted(relpath: str) -> bool:
    """stdout/stderr, ``*.cfg``, ``*.ini``, ``*.csv`` and the runner's log."""
    name = basename(relpath)
    return (_is_stdout(name) or _is_stderr(name) or _is_runner_log(name)
            or name.endswith(('.cfg', '.ini', '.csv')))


# --------------------------------------------------------------------------- failures

_STDOUT_FAIL_RE = re.compile(
    r'^.*(?:\bfailed\b|^Failed|Benchmark Failed|Unknown Parameter|^ERROR|'
    r'Error with opening file|Invalid (?:dimension|hyperslab|sleep|time)|must be >=|'
    r'requires [A-Z_/]+ no less than|does not support).*$', re.M | re.I)


def _stdout_problem(text: str, where: str) -> RunFailed | None:
    if re.search(r'HDF5 version does not support (\w+)', text):
        feature = re.search(r'HDF5 version does not support (\w+)', text).group(1)
        return UnsupportedFeature(
            f'{where}: h5bench refused the configuration: "HDF5 version does not support '
            f'{feature}" (needs HDF5 >= 1.14 with the {feature.lower()} VFD); nothing was run')
    lines = [m.group(0).strip() for m in _STDOUT_FAIL_RE.finditer(text)]
    if lines:
        seen = list(dict.fromkeys(lines))
        return RunFailed(f'{where}: {"; ".join(seen[:3])}')
    return None


# --------------------------------------------------------------------------- write/read

_RESULT_RES = {
    'ranks': re.compile(r'^Total number of ranks:\s*(\d+)', re.M),
    'compute': re.compile(r'^Total emulated compute time:\s*([\d.]+) s', re.M),
    'size': re.compile(r'^Total (\w+) size:\s*([\d.]+)\s*([KMGT ]?B)\s*$', re.M),
    'raw_time': re.compile(r'^Raw \w+ time:\s*([\d.]+) s', re.M),
    'metadata_time': re.compile(r'^Metadata time:\s*([\d.]+) s', re.M),
    'h5fcreate_time': re.compile(r'^H5Fcreate\(\) time:\s*([\d.]+) s', re.M),
    'h5fflush_time': re.compile(r'^H5Fflush\(\) time:\s*([\d.]+) s', re.M),
    'h5fclose_time': re.compile(r'^H5Fclose\(\) time:\s*([\d.]+) s', re.M),
    'observed_time': re.compile(r'^Observed (?:\w+ )?completion time:\s*([\d.]+) s', re.M),
    'raw_rate': re.compile(r'^(SYNC|ASYNC) Raw \w+ rate:\s*([\d.]+)\s*([KMGT ]?B/s)', re.M),
    'observed_rate': re.compile(r'^(SYNC|ASYNC) Observed \w+ rate:\s*([\d.]+)\s*([KMGT ]?B/s)',
                                re.M),
}


def parse_stdout_results(text: str, where: str) -> dict[str, Any]:
    """The ``Performance Results`` block of h5bench_write/read -> normalised values."""
    if 'Performance Results' not in text:
        return {}
    block = text[text.index('Performance Results'):]
    out: dict[str, Any] = {}
    for key, regex in _RESULT_RES.items():
        m = regex.search(block)
        if not m:
            continue
        if key == 'ranks':
            out['ranks'] = int(m.group(1))
        elif key == 'size':
            out['operation'] = m.group(1)
            out['size'] = to_bytes(m.group(2), m.group(3), where)
        elif key in ('raw_rate', 'observed_rate'):
            out['mode'] = m.group(1)
            out[key] = to_mib_s(m.group(2), m.group(3), where)
        else:
            out[key] = float(m.group(1))
    return out


_CSV_KEYS = {'ranks': 'ranks', 'total compute time': 'compute', 'raw time': 'raw_time',
             'metadata time': 'metadata_time', 'observed time': 'observed_time'}


def parse_csv_results(text: str, where: str) -> dict[str, Any]:
    """h5bench_write/read's ``metric, value, unit`` CSV -> normalised values."""
    out: dict[str, Any] = {}
    started = False
    for row in csv.reader(io.StringIO(text)):
        row = [c.strip() for c in row]
        if not started:
            started = row[:1] == ['metric']
            continue
        if len(row) < 2:
            continue
        metric, value, unit = row[0], row[1], row[2] if len(row) > 2 else ''
        try:
            if metric == 'operation':
                out['operation'] = value
            elif metric in ('collective data', 'collective meta', 'subfiling'):
                out[metric.replace(' ', '_')] = value.upper() == 'YES'
            elif metric == 'total size':
                out['size'] = to_bytes(value, unit or 'B', where)
            elif metric in ('raw rate', 'observed rate'):
                out[metric.replace(' ', '_')] = to_mib_s(value, unit, where)
            elif metric in _CSV_KEYS:
                key = _CSV_KEYS[metric]
                out[key] = int(value) if key == 'ranks' else float(value)
        except ParseError as err:   # a ValueError too: an unknown unit, named
            raise ParseError(f'{err} (row {metric!r}, value {value!r} {unit})') from None
        except ValueError:
            raise ParseError(f'{where}: row {metric!r}: value {value!r} is not a number') \
                from None
    return out


def _agree(a: dict[str, Any], b: dict[str, Any], where: str) -> None:
    """stdout and CSV of one run print the same numbers (3 decimals of their unit)."""
    for key in ('raw_rate', 'observed_rate', 'size', 'raw_time', 'observed_time'):
        if key in a and key in b:
            x, y = a[key], b[key]
            if abs(x - y) > 0.0011 * max(1.0, _unit_step(max(abs(x), abs(y)), key)):
                raise ParseError(f'{where}: stdout and CSV disagree on {key} ({x:.6g} vs '
                                 f'{y:.6g}): they are not from the same run')


def _unit_step(value: float, key: str) -> float:
    """Size of the printed unit of ``value`` (MiB/s or B scaled as h5bench prints it)."""
    if key.endswith('time'):
        return 1.0
    v = value * (MIB if key.endswith('rate') else 1.0)
    step = 1.0
    while v >= 1024 and step < 1024.0 ** 4:
        v /= 1024
        step *= 1024
    return step / (MIB if key.endswith('rate') else 1.0)


def write_flush(ms: list[Measurement], operation: str, mode: str,
                params: Mapping[str, Any]) -> dict[str, str]:
    """What each write figure includes (:mod:`h5regress.durability`): h5bench times
    ``H5Fflush`` into the observed time, and HDF5's MPI-IO driver turns it into
    ``MPI_File_sync`` (an fsync of the file: seen with strace); the raw time is
    ``H5Dwrite`` only, which ends in the page cache. In ASYNC mode the flush goes
    through the connector and is not known to reach storage: ``none`` throughout."""
    flushed = FSYNC if mode != 'ASYNC' else NONE
    return flush_map(ms, [operation], NONE, {f'{operation} {m}': flushed for m in (
        'observed_rate', 'observed_time', 'h5fflush_time')})


_RANK_PARTICLES = re.compile(r'Number of particles in rank (\d+) = (\d+)')


def normal_dist_sizes(res: Mapping[str, Any], stdout: str,
                      src: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results, provenance) of h5bench_write_var_normal_dist with the bytes all ranks
    wrote. Each rank draws its own particle count (normal law, mean DIM_1, STDEV_DIM_1)
    and prints it, but h5bench 1.6 prints the total size as rank 0's bytes x ranks and
    its rates from that (rank 0 with 1061884 particles, rank 1 with 977620: 4 % too
    high); size and rates are scaled to the sum of the counts."""
    counts = {int(r): int(n) for r, n in _RANK_PARTICLES.findall(stdout)}
    ranks = res.get('ranks')
    if not ranks or sorted(counts) != list(range(ranks)):
        raise RunFailed(f'{src}: h5bench_write_var_normal_dist printed the particle counts '
                        f'of ranks {sorted(counts)} of {ranks}: the bytes written cannot be '
                        'told (h5bench prints rank 0\'s bytes x ranks)')
    factor = sum(counts.values()) / (counts[0] * ranks)
    out = {**res, **{k: res[k] * factor for k in ('size', 'raw_rate', 'observed_rate')}}
    return out, {'particles_per_rank': [counts[r] for r in range(ranks)],
                 'size_as_printed': res['size'],
                 'size_corrected_by': factor}


def parse_pattern(group: Mapping[str, str], where: str, kind: str | None = None,
                  max_rate_per_rank: float = MAX_RATE_PER_RANK,
                  command: str | None = None) -> ParsedRun:
    """One h5bench_write/read (or append/overwrite/...) run directory."""
    stdout = _pick(group, _is_stdout)
    stderr = _pick(group, _is_stderr)
    problem = _stdout_problem(stdout[1], f'{where}{stdout[0]}') if stdout else None
    if problem:                 # h5bench's own words first: stderr then often only
        raise problem           # holds mpirun's abnormal-exit notice
    if stderr:
        err = _stderr_problem(stderr[1], f'{where}{stderr[0]}')
        if err:
            raise RunFailed(err)
    cfg = _pick_cfg(group, stdout[1] if stdout else '')
    params = parse_cfg(cfg[1]) if cfg else {}
    csv_item = _pick_csv(group, cfg[1] if cfg else '')
    res_out = parse_stdout_results(stdout[1], f'{where}{stdout[0]}') if stdout else {}
    res_csv = parse_csv_results(csv_item[1], f'{where}{csv_item[0]}') if csv_item else {}
    if not res_out and not res_csv:
        names = ', '.join(n for n in (stdout and stdout[0], csv_item and csv_item[0]) if n)
        raise RunFailed(f'{where}{names or "(no stdout or CSV)"}: no results: the benchmark '
                        'did not finish')
    if res_out and res_csv:
        _agree(res_out, res_csv, where.rstrip('/') or '.')
    res = {**res_csv, **res_out}
    operation = res.get('operation') or kind or ('read' if 'read_option' in params else 'write')
    ranks = res.get('ranks')
    mode = res.get('mode') or _stdout_field(stdout[1] if stdout else '', 'Mode') or 'SYNC'
    params.update({'benchmark': kind or operation, 'num_ranks': ranks, 'mode': mode})
    # what the CSV states and the configuration file did not
    for key, csv_key in (('collective_data', 'collective_data'), ('subfiling', 'subfiling'),
                         ('collective_metadata', 'collective_meta')):
        if key not in params and csv_key in res_csv:
            params[key] = res_csv[csv_key]

    missing = [k for k in ('raw_rate', 'observed_rate', 'size') if k not in res]
    if missing:
        raise RunFailed(f'{where}: results lack {", ".join(missing)}: incomplete output')
    src = where.rstrip('/') or '.'
    corrected: dict[str, Any] = {}
    if res_csv.get('operation') == 'write_var_normal_dist' or \
            'Given standard deviation' in (stdout[1] if stdout else ''):
        res, corrected = normal_dist_sizes(res, stdout[1] if stdout else '', src)
    if mode != 'ASYNC':
        _check_rate('raw rate', res['raw_rate'], ranks, max_rate_per_rank, src)
    _check_rate('observed rate', res['observed_rate'], ranks, max_rate_per_rank, src)

    ms, warnings = _pattern_figures(res, params, operation, src)
    prov: dict[str, Any] = dict(corrected)
    if operation != 'read':
        prov[WRITE_FLUSH] = write_flush(ms, operation, mode, params)
    if command:
        prov['command'] = command
    if 'compute' in res:
        prov['total_compute_time_s'] = res['compute']
    data = re.search(r'^(?:Output|Read) data file:\s*(\S+)', stdout[1] if stdout else '', re.M)
    if data:
        prov['data_file'] = data.group(1)
    return ParsedRun(tool=TOOL, params=params, provenance=prov, measurements=ms,
                     warnings=warnings)


def _pattern_figures(res: Mapping[str, Any], params: Mapping[str, Any], operation: str,
                     src: str) -> tuple[list[Measurement], list[str]]:
    """The measurements of a write/read run's results, and what makes them imprecise."""
    warnings = []
    if res.get('raw_time') == 0.0 and res['size'] > 0:
        warnings.append(f'{src}: raw time printed as 0.000 s: the raw rate is imprecise')
    unit = str(params.get('emulated_compute_time_per_timestep', '')).split()[1:]
    if unit and unit[0][0] in 'mM' and unit[0] not in ('ms', 'MS'):
        warnings.append(f'{src}: compute time in minutes: h5bench 1.6 counts a minute as '
                        '60000 s when it subtracts compute time, so the observed rate is wrong')
    ms = [Measurement(operation, 'raw_rate', res['raw_rate'], 'MiB/s', True),
          Measurement(operation, 'observed_rate', res['observed_rate'], 'MiB/s', True)]
    for key in ('raw_time', 'observed_time', 'metadata_time', 'h5fcreate_time',
                'h5fflush_time', 'h5fclose_time'):
        if key in res:
            ms.append(Measurement(operation, key, res[key], 's', False))
    ms.append(Measurement(operation, 'size', res['size'], 'B', True))
    return ms, warnings


def _stdout_field(text: str, name: str) -> str | None:
    m = re.search(rf'^{re.escape(name)}:\s*(\S+)', text, re.M)
    return m.group(1) if m else None


def _named_file(group: Mapping[str, str], suffix: str, naming: str,
                text: str) -> tuple[list[str], tuple[str, str] | None]:
    """The ``*<suffix>`` files of ``group``, and the one ``text`` names (``naming``'s
    group 1), when it names one of them."""
    files = sorted(n for n in group if n.endswith(suffix))
    named = re.search(naming, text, re.M)
    name = basename(named.group(1)) if named else None
    return files, ((name, group[name]) if name in files else None)


def _pick_cfg(group: Mapping[str, str], stdout: str) -> tuple[str, str] | None:
    """The ``*.cfg`` stdout names (``Configuration file: ...``), else the only one."""
    cfgs, named = _named_file(group, '.cfg', r'^Configuration file:\s*(\S+)', stdout)
    if named:
        return named
    if len(cfgs) > 1:
        raise ParseError(f'several configuration files ({", ".join(cfgs)}) and stdout names '
                         'none of them')
    return (cfgs[0], group[cfgs[0]]) if cfgs else None


def _pick_csv(group: Mapping[str, str], cfg: str) -> tuple[str, str] | None:
    """The CSV the configuration's ``CSV_FILE`` names, else the only ``*.csv``."""
    csvs, named = _named_file(group, '.csv', r'^\s*CSV_FILE\s*=\s*(\S+)', cfg)
    return named or ((csvs[0], group[csvs[0]]) if len(csvs) == 1 else None)


# --------------------------------------------------------------------------- exerciser


# --------------------------------------------------------------------------- metadata


# --------------------------------------------------------------------------- runner & parse

def detect_kind(group: Mapping[str, str]) -> str | None:
    """write, read, exerciser or metadata, from what a directory holds."""
    stdout = (_pick(group, _is_stdout) or ('', ''))[1]
    if 'useIndependentIO' in stdout or 'RawWrBDWTH' in stdout:
        return 'exerciser'
    if any(n.endswith('.ini') for n in group) or 'Config loaded from' in stdout:
        return 'metadata'
    if re.search(r'^Read data file:', stdout, re.M) or 'Total read size' in stdout:
        return 'read'
    if re.search(r'^Output data file:|Start benchmark: h5bench_write', stdout, re.M):
        return 'write'
    for name, text in group.items():
        if name.endswith('.csv'):
            m = re.search(r'^operation,\s*(\w+)', text, re.M)
            if m:
                return m.group(1)
        if name.endswith('.cfg'):
            return 'read' if re.search(r'^\s*READ_OPTION\s*=', text, re.M) else 'write'
    return None


def parse_benchmark(group: Mapping[str, str], where: str = '', kind: str | None = None,
                    command: str | None = None,
                    max_rate_per_rank: float = MAX_RATE_PER_RANK) -> ParsedRun:
    """One benchmark directory (``where`` prefixes messages, e.g. ``storage/ab26cf65/``)."""
    kind = kind or detect_kind(group)
    if kind is None:
        raise ParseError(f'{where or "."}: no h5bench output (stdout, cfg or CSV) found')
    if kind not in _KNOWN_KINDS:
        raise ParseError(f'{where or "."}: h5bench benchmark {kind!r} is not supported by this '
                         f'parser (known: {", ".join(sorted(_KNOWN_KINDS))})')
    if kind == 'exerciser':
        return parse_exerciser(group, where, command, max_rate_per_rank)
    if kind == 'metadata':
        return parse_metadata(group, where, command)
    return parse_pattern(group, where, kind, max_rate_per_rank, command)


def parse_runner_log(text: str, source: str) -> tuple[list[dict[str, Any]], list[str], bool]:
    """(benchmarks in order, suite-level problems, whether the suite finished).

    Each benchmark: ``kind``, ``id`` (its storage directory), ``command``,
    ``errors`` (ERROR/CRITICAL lines), ``unsupported`` (mode fallbacks), ``success``.
    """
    benches: list[dict[str, Any]] = []
    suite: list[str] = []
    finished = False
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _RUNNER_LINE_RE.match(line)
        if not m:
            continue
        level, msg = m.group('level'), m.group('msg')
        start = re.match(r'h5bench \[(.+?)\] - Starting', msg)
        if start:
            cur = {'kind': start.group(1), 'id': None, 'command': None, 'errors': [],
                   'unsupported': [], 'success': False}
            benches.append(cur)
            continue
        d = re.match(r'h5bench \[.+?\] - DIR: (.*?)/?$', msg)
        if d and cur is not None:
            cur['id'] = posixpath.basename(d.group(1).rstrip('/'))
            continue
        if msg == 'Finishing h5bench Suite':
            finished = True
            continue
        if cur is not None and level == 'INFO' and re.search(r'/h5bench_\w+', msg):
            cur['command'] = msg
            continue
        if cur is not None and msg.startswith('SUCCESS'):
            cur['success'] = True
            continue
        if 'Requested' in msg and 'but ran in' in msg:
            (cur['unsupported'] if cur is not None else suite).append(msg)
            continue
        if level in ('ERROR', 'CRITICAL'):
            (cur['errors'] if cur is not None else suite).append(f'{level}: {msg}')
    return benches, suite, finished


def outcomes(files: Mapping[str, str], max_rate_per_rank: float = MAX_RATE_PER_RANK
             ) -> list[tuple[str, ParsedRun | RunFailed]]:
    """Each benchmark's result or failure: (directory, ParsedRun or RunFailed).

    For callers that keep the successful benchmarks of a runner directory
    where another failed; :func:`parse` raises on any failure.
    """
    groups = by_directory(files)
    logs = [(d, n) for d, g in groups.items() for n in g if _is_runner_log(n)]
    if len(logs) > 1:
        raise ParseError(f'several h5bench runner logs: {", ".join(d + "/" + n for d, n in logs)}')
    if not logs:
        return _directory_outcomes(files, groups, max_rate_per_rank)

    root, logname = logs[0]
    src = f'{root}/{logname}' if root else logname
    benches, suite, finished = parse_runner_log(groups[root][logname], src)
    if not benches and not suite:
        raise ParseError(f'{src}: no h5bench runner lines: not an h5bench runner log')
    by_id = {posixpath.basename(d): (d, g) for d, g in groups.items() if d != root}
    results: list[tuple[str, ParsedRun | RunFailed]] = []
    for problem in suite:
        results.append((src, RunFailed(f'{src}: {problem}')))
    for b in benches:
        label = f'{b["kind"]} {b["id"] or "?"}'
        if b['errors']:
            message = f'{src}: h5bench [{b["kind"]}] ({b["id"]}): ' + '; '.join(b['errors'][:2])
            detail = None
            if b['id'] in by_id:
                directory, group = by_id[b['id']]
                detail = _attempt(group, f'{directory}/', b['kind'], b['command'],
                                  max_rate_per_rank)
            if isinstance(detail, RunFailed):
                message += f'; {detail}'
            kind = UnsupportedFeature if isinstance(detail, UnsupportedFeature) else RunFailed
            results.append((label, kind(message)))
            continue
        if b['unsupported']:
            results.append((label, UnsupportedFeature(f'{src}: h5bench [{b["kind"]}] '
                                                      f'({b["id"]}): {b["unsupported"][0]}')))
            continue
        if b['id'] not in by_id:
            results.append((label, RunFailed(f'{src}: h5bench [{b["kind"]}]: its directory '
                                             f'{b["id"]} is missing')))
            continue
        directory, group = by_id[b['id']]
        results.append((directory, _attempt(group, f'{directory}/', b['kind'], b['command'],
                                            max_rate_per_rank)))
    if not finished:
        results.append((src, RunFailed(f'{src}: no "Finishing h5bench Suite" line: the runner '
                                       'stopped before the end')))
    return results


def _directory_outcomes(files: Mapping[str, str], groups: Mapping[str, Mapping[str, str]],
                        max_rate_per_rank: float) -> list[tuple[str, ParsedRun | RunFailed]]:
    """Each benchmark directory's result or failure, without a runner log."""
    results = []
    for directory, group in sorted(groups.items()):
        if detect_kind(group) is None:
            continue
        where = f'{directory}/' if directory else ''
        results.append((directory or '.', _attempt(group, where, None, None,
                                                    max_rate_per_rank)))
    if not results:
        raise ParseError(f'no h5bench output among {", ".join(sorted(files)) or "no files"}')
    return results


def _attempt(group, where, kind, command, ceiling) -> ParsedRun | RunFailed:
    try:
        return parse_benchmark(group, where, kind, command, ceiling)
    except RunFailed as err:
        return err


def parse(files: Mapping[str, str],
          max_rate_per_rank: float = MAX_RATE_PER_RANK) -> list[ParsedRun]:
    """All benchmarks of a runner or direct-run directory; :class:`RunFailed` if any failed.

    The message names every failed benchmark; when all failures are
    :class:`UnsupportedFeature`, that is what is raised.
    """
    results = outcomes(files, max_rate_per_rank)
    failures = [r for _, r in results if isinstance(r, RunFailed)]
    if failures:
        message = '; '.join(str(f) for f in failures)
        if all(isinstance(f, UnsupportedFeature) for f in failures):
            raise UnsupportedFeature(message)
        raise RunFailed(message)
    return [r for _, r in results]
