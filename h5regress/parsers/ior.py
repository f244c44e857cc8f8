"""IOR: JSON summary or text stdout -> one :class:`ParsedRun` per IOR test.

Formats (hpc/ior, ``src/ior-output.c``; checked against tags 3.0.1 .. 3.3.0, 4.0.0
and 5fcf0ba "4.1.0+dev")
-----------------------------------------------------------------------------------
**JSON summary** (``-O summaryFormat=JSON``, in ``-O summaryFile=`` or on stdout)::

    {"Version": "4.1.0+dev", "Began": "Sat Nov 21 19:48:40 2026",
     "Command line": "ior -a HDF5 ...", "Machine": "Linux vm",
     "tests": [{"TestID": 0, "StartTime": ..., "Path": ..., "Capacity": ...,
                "Parameters": {"api": "HDF5", "blockSize": 134217728, ...},
                "Options": {"apiVersion": "1.10.8 (Parallel)", "tasks": 2, ...},
                "Results": [{"access": "write", "bwMiB": ..., "totalTime": ...}, ...]}],
     "summary": [{"operation": "write", "TestID": 0, "numTasks": 2,
                  "bwMaxMIB": ..., "bwMinMIB": ..., "bwMeanMIB": ..., "bwStdMIB": ...,
                  "OPsMax": ..., "OPsMean": ..., "MeanTime": ..., "xsizeMiB": ...}, ...],
     "Finished": "Sat Nov 21 19:48:41 2026"}

IOR writes it as it goes, so a failed run leaves it truncated (invalid JSON).
Quirks: IOR 3.3 nests ``Results`` per repetition (``[[write, read, remove], ...]``)
and repeats ``segmentCount``/``blockSize``/``transferSize`` in each summary entry;
IOR 4 lists ``Results`` flat. IOR 4 prints an infinite value as the *string*
``"inf"``, IOR 3.3 as a bare ``inf`` (invalid JSON). IOR 4 moved the HDF5, MPI-IO
and POSIX knobs (``--hdf5.collectiveMetadata``, ``--hdf5.noFill``, ...) out of
``Parameters`` into module options that only the command line shows.
"MiB" columns are MiB/s (IOR divides bytes/s by 2^20); ``OPs`` are transfers/s
(bytes/s / transfer size); ``MeanTime`` is the mean ``totalTime`` (open to close).

**Text stdout** (default output)::

    IOR-3.3.0: MPI Coordinated Test of Parallel I/O
    Began               : ...
    Command line        : ...
    TestID              : 0
    Options:
    api                 : MPIIO
    type                : collective
    ...
    Results:
    access  bw(MiB/s) IOPS  Latency(s)  block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s) iter
    write   828.85     ...                                                               0
    ...
    Summary of all tests:
    Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs) ... RefNum
    write        2181.58     828.85    1505.21     676.36    2181.58 ...      0
    Finished            : ...

**CSV summary** (``-O summaryFormat=CSV``, IOR 4.0 and later; in ``summaryFile`` or on
stdout): per test a header, then one row per repetition and operation, nothing else::

    access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter
    write,632.1721,635.0947,0.0031,16384.0000,1024.0000,0.0002,0.0504,0.0002,0.0506,2,0
    read,24961.4521,25219.4153,0.0001,16384.0000,1024.0000,0.0000,0.0013,0.0001,0.0013,2,0

No version, command line, API, segment count or summary: the figures are IOR's
statistics computed from the rows (:func:`repetition_measurements`), the segment count
the one the bytes moved imply, and a warning says what the CSV does not state. The rows'
``IOPS`` divide by the access time only; the records' ``ops_mean`` is, as in IOR's
summary, bandwidth / transfer size. (IOR 3's CSV printed no usable table.)

The "Summary of all tests" columns changed over time, so they are read by header:
3.0/3.1 ``Max(MiB) Min(MiB) Mean(MiB) StdDev Mean(s) Test# ... aggsize API RefNum``;
3.2 adds ``Max(OPs) Min(OPs) Mean(OPs) StdDev`` and renames ``aggsize`` to
``aggs(MiB)``; 3.3 and 4.x add ``Stonewall(s) Stonewall(MiB)`` (``NA`` unless
stonewalling wear-out is on). 3.x also prints ``Max Write:``/``Max Read:`` lines and
``remove`` rows (``-`` in every column but the time). One file may hold several
runs (concatenated logs): each ``IOR-...: MPI Coordinated Test`` header starts one.

Failure rules
-------------
:class:`RunFailed` when any file shows ``ERROR`` lines (``ERROR:``, ``ERROR in``,
``ior ERROR:``, ``** error **``), bad options (``Invalid options``), an HDF5 error
stack, an MPI abort or launcher failure, incorrect data on verification; when a
JSON summary is truncated or invalid, lacks its ``summary``, has fewer results than
repetitions or an infinite bandwidth; when text output has no "Summary of all
tests"; when a CSV summary has a header without rows or misses a repetition; when
there is no output at all. :class:`ParseError` when the text is not IOR's.

Moved against asked (a failed run IOR itself may not see: through Open MPI's OMPIO on a
full file system IOR exits 0): :class:`RunFailed` when any file shows an error of the
operating system (``No space left on device``, ...; :data:`~h5regress.parsers.base.
SYSTEM_ERRORS`), when IOR's own size check warns that the file on disk (``Stat()``) or
the bytes moved are below ``Expected aggregate file size`` (block x segments x tasks)
and stonewalling does not explain it, when a repetition moved other than block x
segments x tasks bytes (JSON ``xsizeMiB``, text ``aggs(MiB)``/``aggsize``, and each
repetition's bandwidth x ``totalTime``, within the rounding IOR printed them with;
not checked with a stonewall deadline ``-D`` or ``-T``), when a value is negative.
:func:`error_line` is the part that reads any text (a job's stdout and stderr).

Records
-------
Operations ``write`` and ``read``; metrics ``bw_mean`` (``samples``: per-repetition
MiB/s), ``bw_max``, ``bw_min``, ``bw_std`` (MiB/s), ``ops_mean`` (ops/s; samples),
``time_mean`` (s; samples), and with stonewall wear-out ``stonewall_time_mean`` (s)
and ``stonewall_bw_mean`` (MiB/s).

``provenance['write_flush']`` (:mod:`h5regress.durability`): each write figure
``fsync`` with ``-e`` or ``-Y``, ``O_DIRECT`` with ``--posix.odirect``, else ``none``; a
CSV summary states none of these, and its records carry no ``write_flush``.

``params`` use IOR's own names (``api``, ``blockSize``, ``transferSize``,
``segmentCount``, ``repetitions``, ``filePerProc``, ``collective``, ``fsync``,
``reorderTasks``, ``numTasks``, ``nodes``, ``tasksPerNode``, ``deadlineForStonewall``,
...; everything the JSON ``Parameters`` state), module options as ``hdf5.noFill``
etc. (IOR 4 defaults of the API's module filled in), and ``num_ranks``. Paths, host
and times go to ``provenance`` (``tool_version``, ``command_line``, ``machine``,
``started``, ``finished``, ``test_file``, ``api_version``, ``hdf5_version``, ...), so
that the same test run in two directories is comparable.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from h5regress.durability import DIRECT, FSYNC, NONE, WRITE_FLUSH, flush_map
from h5regress.parsers.base import MIB, SYSTEM_ERRORS, Measurement, ParsedRun, ParseError, \
    RunFailed, basename, find_error_line, is_stderr_name, parse_size, to_mib_per_s

TOOL = 'ior'

# ---------------------------------------------------------------------------------------
# which files

_WANTED_SUFFIXES = ('.json', '.csv', '.txt', '.log', '.out', '.err')

#: IOR writes a full summary file (``-O summaryFile``) after failed writes (ENOSPC under
#: MPI-IO): only its stdout and stderr show the failure, so a summary file alone proves
#: nothing (``h5regress parse`` wants them beside it)
SUMMARY_SHOWS_FAILURE = False


def wanted(relpath: str) -> bool:
    """JSON and CSV summaries, stdout/stderr captures and logs (``*.json *.csv *.txt
    *.log *.out *.err``, ``stdout*``, ``stderr*``)."""
    name = basename(relpath)
    return name.endswith(_WANTED_SUFFIXES) or name.startswith(('stdout', 'stderr'))


# ---------------------------------------------------------------------------------------
# failure evidence shared with mdtest (IOR ships mdtest; both print through the same
# error macros and run under mpirun/srun)

#: Lines that show a failed run, anywhere in any file: (pattern, what it means).
FAILURE_PATTERNS: list[tuple[re.Pattern, str]] = [
    (re.compile(r'^\s*(?:ior\s+|mdtest\s+)?ERROR\b'), 'an ERROR line'),
    (re.compile(r'^\s*(?:Error invalid argument|Invalid options)\b'), 'invalid options'),
    (re.compile(r'HDF5-DIAG: Error detected'), 'an HDF5 error stack'),
    (re.compile(r'incorrect data on (?:read|write)'), 'incorrect data on verification'),
    (re.compile(r'MPI_ABORT was invoked'), 'an MPI abort'),
    (re.compile(r'mpirun detected that one or more processes exited with non-zero status'),
     'a rank exited non-zero'),
    (re.compile(r'mpirun noticed that process rank \d+'), 'a rank died'),
    (re.compile(r'There are not enough slots available'), 'the launcher could not start it'),
    (re.compile(r'^srun: error:'), 'an srun error'),
    (re.compile(r'\*\*\* Process received signal \*\*\*'), 'a rank crashed'),
]


#: IOR's frame around an error (``** error **`` ... ``** exiting **``): the line inside
#: (``ERROR in aiori-HDF5.c ...``) says more, so this one is the last resort.
FRAMING_ERRORS: list[tuple[re.Pattern, str]] = [
    (re.compile(r'^\s*\*\* error \*\*'), 'an error'),
]


def find_failure(files: Mapping[str, str],
                 extra: Iterable[tuple[re.Pattern, str]] = ()) -> str | None:
    """First failure line of ``files`` as ``"name:line: meaning: text"``, or None: the
    operating system's (:data:`~h5regress.parsers.base.SYSTEM_ERRORS`: the cause, where
    there is one), else the tool's and the launcher's (:data:`FAILURE_PATTERNS`), else
    IOR's error frame."""
    return find_error_line(files, SYSTEM_ERRORS) or \
        find_error_line(files, list(FAILURE_PATTERNS) + list(extra)) or \
        find_error_line(files, FRAMING_ERRORS)


#: IOR's check of the file size after each phase (non-HDF5 APIs; ``ior.c`` CheckFileSize):
#: three WARNING lines, a fourth when stonewalling may explain a short file.
_SIZE_LINES = {key: re.compile(rf'WARNING:?\s+{text}\s*=\s*(\d+)') for key, text in (
    ('expected', r'Expected aggregate file size'), ('stat', r'Stat\(\) of aggregate file size'),
    ('moved', r'Using actual aggregate bytes moved'))}


def size_warning(files: Mapping[str, str]) -> str | None:
    """IOR's own "Expected aggregate file size" warning when the file on disk (stat) or
    the bytes moved fall short of what was asked (block x segments x tasks), and
    stonewalling does not explain it: the data did not all reach the file system (a full
    file system under MPI-IO, whose errors IOR does not see). IOR only warns; this fails."""
    for name, text in sorted(files.items()):
        lines = text.splitlines()
        for i, line in enumerate(lines):
            match = _SIZE_LINES['expected'].search(line)
            if not match:
                continue
            expected = int(match.group(1))
            near = lines[i + 1:i + 6]
            sizes = {key: int(m.group(1)) for key in ('stat', 'moved') for m in
                     [next(filter(None, map(_SIZE_LINES[key].search, near)), None)] if m}
            if any('Maybe caused by deadlineForStonewall' in n for n in near):
                continue
            short = {key: size for key, size in sizes.items() if size < expected}
            if short:
                found = ', '.join(f'{"found" if key == "stat" else "moved"} {size} B'
                                  + (' on disk (stat)' if key == 'stat' else '')
                                  for key, size in sizes.items())
                return (f'{name}:{i + 1}: IOR asked for {expected} B and {found}: the '
                        f'data did not all reach the file system')
    return None


def error_line(files: Mapping[str, str]) -> str | None:
    """What in ``files`` (any IOR output: the job's stdout and stderr too) shows a failed
    run, whatever IOR's exit code: an error line or a short file."""
    return find_failure(files) or size_warning(files)


def raise_if_no_output(files: Mapping[str, str], tool: str) -> None:
    """:class:`RunFailed` when every file is empty, or only stderr has text."""
    texts = {name: text for name, text in files.items() if text.strip()}
    if not texts:
        raise RunFailed(f'{", ".join(sorted(files)) or "no files"}: {tool} produced no '
                        f'output (crashed before starting, or never ran)')
    if all(is_stderr_name(name) for name in texts):
        name = sorted(texts)[0]
        first = texts[name].strip().splitlines()[0]
        raise RunFailed(f'{name}: {tool} printed nothing on stdout; stderr says: {first}')


def raise_if_empty_json(files: Mapping[str, str], tool: str) -> None:
    """:class:`RunFailed` for an empty ``*.json`` result file (the run died before
    writing it)."""
    for name, text in sorted(files.items()):
        if name.endswith('.json') and not text.strip():
            raise RunFailed(f'{name}: {tool} result file is empty (the run died before '
                            f'writing it)')


def warning_lines(text: str) -> list[str]:
    """``WARNING:`` lines (IOR 4 ``WARNING: ...``, IOR 3 ``ior WARNING: ...``)."""
    return [line.strip() for line in text.splitlines()
            if re.match(r'^\s*(?:ior\s+|mdtest\s+)?WARNING\b', line)]


def parse_ior_time(text: str | None) -> str | None:
    """IOR's ``ctime`` style ``Sat Nov 21 19:48:41 2026`` -> ISO 8601 (machine local
    time: IOR does not say which zone)."""
    if not text:
        return None
    try:
        return datetime.datetime.strptime(text.strip(), '%a %b %d %H:%M:%S %Y').isoformat()
    except ValueError:
        return text.strip()


# ---------------------------------------------------------------------------------------
# entry point

def parse(files: Mapping[str, str]) -> list[ParsedRun]:
    """Runs of one run directory (or one file): JSON summaries first, then CSV
    summaries, text otherwise.

    A run seen both as JSON and as text (same ``Began`` and command line) is taken
    from the JSON.
    """
    failure = error_line(files)
    if failure:
        raise RunFailed(f'IOR run failed: {failure}')
    raise_if_no_output(files, 'IOR')
    raise_if_empty_json(files, 'IOR')

    runs: dict[tuple[str, str], list[ParsedRun]] = {}
    text_runs: list[tuple[tuple[str, str], list[ParsedRun]]] = []
    warnings = sorted({w for text in files.values() for w in warning_lines(text)})
    for name, text in sorted(files.items()):
        doc = find_json_summary(text, name)
        if doc is not None:
            key = (doc.get('Began', ''), doc.get('Command line', ''))
            runs[key] = runs_from_json(doc, name)
            continue
        csv_runs = runs_from_csv(text, name)
        if csv_runs:
            runs[('csv', name)] = csv_runs
            continue
        text_runs.extend(runs_from_text_file(text, name))
    for key, parsed in text_runs:
        runs.setdefault(key, parsed)
    if not runs:
        raise ParseError(f'{", ".join(sorted(files))}: not IOR output (no JSON or CSV '
                         f'summary, no "IOR-<version>: MPI Coordinated Test" header)')
    result = [run for parsed in runs.values() for run in parsed]
    for run in result:
        run.warnings.extend(warnings)
    return result


# ---------------------------------------------------------------------------------------
# JSON summary

_JSON_START = re.compile(r'^\{\s*$|^\{\s*"(?:Version|Began)"', re.M)


def find_json_summary(text: str, source: str) -> dict[str, Any] | None:
    """The IOR JSON document in ``text`` (alone, or after other lines on stdout).

    None when ``text`` holds no IOR JSON at all; :class:`RunFailed` when it starts
    one that does not parse (IOR left it truncated).
    """
    for match in _JSON_START.finditer(text):
        head = text[match.start():match.start() + 400]
        if '"Version"' not in head and '"Began"' not in head:
            continue
        try:
            doc, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except json.JSONDecodeError as err:
            raise RunFailed(f'{source}: IOR JSON summary is truncated or invalid '
                            f'({err.msg} at line {err.lineno}); IOR leaves it so when '
                            f'the run fails') from None
        if not isinstance(doc, dict):
            raise ParseError(f'{source}: IOR JSON summary is not an object')
        return doc
    return None


def runs_from_json(doc: Mapping[str, Any], source: str) -> list[ParsedRun]:
    """One run per entry of ``tests``, its measurements from ``summary``."""
    for key in ('tests', 'summary'):
        if not isinstance(doc.get(key), list):
            raise RunFailed(f'{source}: IOR JSON summary has no "{key}" list '
                            f'(incomplete run)')
    if 'Finished' not in doc:
        raise RunFailed(f'{source}: IOR JSON summary has no "Finished" time '
                        f'(incomplete run)')
    command = doc.get('Command line', '')
    runs = []
    for test in doc['tests']:
        test_id = test.get('TestID')
        entries = [s for s in doc['summary'] if s.get('TestID') == test_id]
        if not entries:
            raise RunFailed(f'{source}: IOR test {test_id} has no summary entry '
                            f'(incomplete run)')
        params = json_params(test, entries, command, doc.get('Version'))
        provenance = json_provenance(doc, test, source)
        results = list(flatten_results(test.get('Results', [])))
        measurements = []
        for entry in entries:
            measurements += summary_measurements(entry, results, params, source)
        provenance[WRITE_FLUSH] = write_flush(params, measurements)
        runs.append(ParsedRun(tool=TOOL, params=params, provenance=provenance,
                              measurements=measurements))
    if not runs:
        raise RunFailed(f'{source}: IOR JSON summary lists no tests')
    return runs


#: ``Parameters`` keys that describe where/how it ran, not what: they go to provenance.
_PROVENANCE_PARAMETERS = {'testFileName': 'test_file', 'platform': 'platform',
                          'hintsFileName': 'hints_file', 'options': 'options'}
#: Summary entry keys that are parameters (the rest are results).
_SUMMARY_PARAMETERS = ('numTasks', 'tasksPerNode', 'taskPerNodeOffset', 'segmentCount',
                       'blockSize', 'transferSize', 'repetitions', 'filePerProc',
                       'reorderTasks', 'reorderTasksRandom', 'reorderTasksRandomSeed')


def json_params(test: Mapping[str, Any], entries: list[Mapping[str, Any]],
                command: str, version: str | None) -> dict[str, Any]:
    """Every parameter of the test: ``Parameters``, the summary's, the module options."""
    params = {k: v for k, v in test.get('Parameters', {}).items()
              if k not in _PROVENANCE_PARAMETERS}
    for key in _SUMMARY_PARAMETERS:
        if key in entries[0]:
            params.setdefault(key, entries[0][key])
    options = test.get('Options', {})
    if 'numTasks' not in params and 'tasks' in options:
        params['numTasks'] = options['tasks']
    params.setdefault('nodes', options.get('nodes'))
    params.update(module_options(command, params.get('api', ''), version))
    params['num_ranks'] = params.get('numTasks')
    return params


def json_provenance(doc: Mapping[str, Any], test: Mapping[str, Any],
                    source: str) -> dict[str, Any]:
    parameters = test.get('Parameters', {})
    options = test.get('Options', {})
    prov: dict[str, Any] = {
        'source': source,
        'tool_version': doc.get('Version'),
        'command_line': doc.get('Command line'),
        'machine': doc.get('Machine'),
        'started': parse_ior_time(doc.get('Began')),
        'finished': parse_ior_time(doc.get('Finished')),
        'test_started': parse_ior_time(test.get('StartTime')),
    }
    for key, name in _PROVENANCE_PARAMETERS.items():
        if parameters.get(key) not in (None, '(null)'):
            prov[name] = parameters[key]
    for key in ('Path', 'Capacity', 'Used Capacity', 'Inodes', 'Used Inodes'):
        if key in test:
            prov['fs_' + key.lower().replace(' ', '_')] = test[key]
    prov.update(api_versions(parameters.get('api') or options.get('api'),
                             options.get('apiVersion')))
    if 'aggregate filesize' in options:
        prov['aggregate_file_size'] = options['aggregate filesize']
    return {k: v for k, v in prov.items() if v is not None}


def flatten_results(results: Any) -> Iterable[Mapping[str, Any]]:
    """Per-repetition results in order, flat (IOR 3.3 nests a list per repetition)."""
    if isinstance(results, Mapping):
        yield results
    elif isinstance(results, list):
        for item in results:
            yield from flatten_results(item)


def summary_measurements(entry: Mapping[str, Any], results: list[Mapping[str, Any]],
                         params: Mapping[str, Any], source: str) -> list[Measurement]:
    """Measurements of one summary entry (one operation of one test)."""
    op = entry.get('operation')
    if op not in ('write', 'read'):
        raise ParseError(f'{source}: IOR summary entry with operation {op!r}')
    reps = [r for r in results if r.get('access') == op]
    repetitions = int(entry.get('repetitions') or params.get('repetitions') or 0)
    if results and len(reps) < repetitions:
        raise RunFailed(f'{source}: IOR {op}: {len(reps)} results for {repetitions} '
                        f'repetitions (incomplete run)')

    def num_of(value: Any, what: str) -> float:
        return finite(value, f'{op} {what}', source)

    def num(key: str) -> float:
        return finite(entry.get(key), f'{op} {key}', source)

    bw_samples = [finite(r.get('bwMiB'), f'{op} bwMiB', source) for r in reps]
    asked = asked_bytes({**params, **{k: entry[k] for k in ('blockSize', 'segmentCount',
                                                           'numTasks') if k in entry}})
    if 'xsizeMiB' in entry:
        check_moved(op, 'repetition 1', span(num_of(entry['xsizeMiB'], 'xsizeMiB'), 4, MIB),
                    asked, source)
    for i, rep in enumerate(reps, 1):
        if 'totalTime' in rep:
            check_moved(op, f'repetition {i}', moved_over_time(
                (num_of(rep.get('bwMiB'), 'bwMiB'), 4), (num_of(rep['totalTime'], 'totalTime'), 4)),
                asked, source)
    transfer = float(entry.get('transferSize') or params.get('transferSize') or 0)
    ops_samples = [bw * MIB / transfer for bw in bw_samples] if transfer else []
    time_samples = [finite(r.get('totalTime'), f'{op} totalTime', source) for r in reps
                    if 'totalTime' in r]
    out = bandwidth_measurements(op, num('bwMaxMIB'), num('bwMinMIB'), num('bwMeanMIB'),
                                 num('bwStdMIB'), bw_samples)
    if 'OPsMean' in entry:
        out.append(Measurement(op, 'ops_mean', num('OPsMean'), 'ops/s', True, ops_samples))
    if 'MeanTime' in entry:
        out.append(Measurement(op, 'time_mean', num('MeanTime'), 's', False, time_samples))
    if 'StoneWallTime' in entry:
        out.append(Measurement(op, 'stonewall_time_mean', num('StoneWallTime'), 's', False))
    if 'StoneWallbwMeanMIB' in entry:
        out.append(Measurement(op, 'stonewall_bw_mean',
                               to_mib_per_s(num('StoneWallbwMeanMIB'), 'MiB/s'), 'MiB/s',
                               True))
    return out


def write_flush(params: Mapping[str, Any], measurements: list[Measurement]) -> dict[str, str]:
    """Whether each write figure includes getting the data to storage
    (:mod:`h5regress.durability`): ``fsync`` with ``-e`` (an fsync -- through MPI-IO
    ``MPI_File_sync``, through HDF5 ``H5Fflush`` -- before close, inside the timed phase)
    or ``-Y`` (after each write), ``O_DIRECT`` with ``--posix.odirect``, else ``none``."""
    status = FSYNC if params.get('fsync') or params.get('fsyncperwrite') else \
        DIRECT if params.get('posix.odirect') else NONE
    return flush_map(measurements, ['write'], status)


def bandwidth_measurements(op: str, bw_max: float, bw_min: float, bw_mean: float,
                           bw_std: float, samples: list[float]) -> list[Measurement]:
    """IOR's four bandwidth statistics (its "MiB" columns are MiB/s)."""
    return [
        Measurement(op, 'bw_mean', to_mib_per_s(bw_mean, 'MiB/s'), 'MiB/s', True,
                    list(samples)),
        Measurement(op, 'bw_max', to_mib_per_s(bw_max, 'MiB/s'), 'MiB/s', True),
        Measurement(op, 'bw_min', to_mib_per_s(bw_min, 'MiB/s'), 'MiB/s', True),
        Measurement(op, 'bw_std', to_mib_per_s(bw_std, 'MiB/s'), 'MiB/s', False),
    ]


def finite(value: Any, what: str, source: str) -> float:
    """A finite number, or :class:`RunFailed` (IOR prints ``inf`` for a zero time)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParseError(f'{source}: IOR {what} is not a number: {value!r}') from None
    if not math.isfinite(number):
        raise RunFailed(f'{source}: IOR {what} is {value!r} (a zero or broken timing)')
    if number < 0:
        raise RunFailed(f'{source}: IOR {what} is negative ({value!r}): a broken timing '
                        f'(a clock that went back), never a sample')
    return number


# ---------------------------------------------------------------------------------------
# statistics over repetitions (IOR's own: ior-output.c bw_ops_values)

def repetition_measurements(op: str, bw: list[float], ops: list[float],
                            times: list[float]) -> list[Measurement]:
    """``bw_*``, ``ops_mean`` and ``time_mean`` of one operation from its per-repetition
    bandwidths (MiB/s), operation rates (transfers/s) and ``totalTime`` (s), as IOR
    computes its summary: the mean of the repetitions' rates, and their standard
    deviation over the repetitions (divided by their count, not count - 1)."""
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    bw_mean = mean(bw)
    bw_std = math.sqrt(sum((b - bw_mean) ** 2 for b in bw) / len(bw))
    out = bandwidth_measurements(op, max(bw), min(bw), bw_mean, bw_std, bw)
    if ops:
        out.append(Measurement(op, 'ops_mean', mean(ops), 'ops/s', True, list(ops)))
    if times:
        out.append(Measurement(op, 'time_mean', mean(times), 's', False, list(times)))
    return out


def samples_of(run: ParsedRun, op: str, metric: str) -> list[float]:
    try:
        return list(run.measurement(op, metric).samples)
    except KeyError:
        return []


def combine_executions(runs: list[ParsedRun], counted: list[bool],
                       why_not: str = '') -> ParsedRun:
    """One run of several executions of the same IOR test (a phase run as one
    repetition per execution, each after a page-cache drop): its figures over the
    repetitions of the executions ``counted`` marks (IOR's statistics,
    :func:`repetition_measurements`), the others' samples named in ``provenance``
    (``uncounted_samples``, with ``why_not``) and never in a figure.

    ``params`` are the executions' (:class:`ParseError` when they differ) with
    ``repetitions`` the number of executions; ``provenance`` the first's, with every
    execution's ``source``, the first start and the last finish. With no execution
    counted, every one is (the caller labels them)."""
    if not runs or len(counted) != len(runs):
        raise ParseError(f'IOR: {len(runs)} executions and {len(counted)} labels')
    first = runs[0]
    for run in runs[1:]:
        differ = sorted(k for k in set(first.params) | set(run.params)
                        if first.params.get(k) != run.params.get(k))
        if differ:
            raise ParseError(f'{run.provenance.get("source")}: not the same IOR test as '
                             f'{first.provenance.get("source")} (differ: {", ".join(differ)})')
    keep = [run for run, c in zip(runs, counted) if c] or list(runs)
    measurements = []
    for op in dict.fromkeys(m.operation for m in first.measurements):
        bw = [s for run in keep for s in samples_of(run, op, 'bw_mean')]
        if not bw:
            raise ParseError(f'{first.provenance.get("source")}: IOR {op} without '
                             f'per-repetition results')
        measurements += repetition_measurements(
            op, bw, [s for run in keep for s in samples_of(run, op, 'ops_mean')],
            [s for run in keep for s in samples_of(run, op, 'time_mean')])
    provenance = {**first.provenance, 'executions': len(runs),
                  'source': ', '.join(str(run.provenance.get('source')) for run in runs)}
    if 'finished' in runs[-1].provenance:
        provenance['finished'] = runs[-1].provenance['finished']
    left_out = [run for run in runs if run not in keep]
    if left_out:
        provenance['uncounted_samples'] = {
            'reason': why_not, 'source': [run.provenance.get('source') for run in left_out],
            'bw_mean': [s for run in left_out for op in ('write', 'read')
                        for s in samples_of(run, op, 'bw_mean')]}
    return ParsedRun(tool=TOOL, params={**first.params, 'repetitions': len(runs)},
                     provenance=provenance, measurements=measurements,
                     warnings=sorted({w for run in runs for w in run.warnings}))


# ---------------------------------------------------------------------------------------
# CSV summary (-O summaryFormat=CSV; IOR 4.0 and later)

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


# ---------------------------------------------------------------------------------------
# bytes moved against bytes asked

def asked_bytes(params: Mapping[str, Any]) -> int | None:
    """Bytes each repetition of a phase must move: block x segments x tasks (IOR's
    ``expectedAggFileSize``, shared file or file per process alike). None when a deadline
    may end a phase early (stonewalling ``-D``, ``-T``) or a size is not stated."""
    if any(int(params.get(key) or 0) for key in ('deadlineForStonewall', 'maxTimeDuration')):
        return None
    try:
        block, segments, tasks = (int(params[key]) for key in ('blockSize', 'segmentCount',
                                                               'numTasks'))
    except (KeyError, TypeError, ValueError):
        return None
    return block * segments * tasks


def span(value: float, decimals: int, scale: float = 1.0) -> tuple[float, float]:
    """The values that print as ``value`` with ``decimals`` decimals, times ``scale``."""
    half = 0.5 * 10.0 ** -decimals
    return max(value - half, 0.0) * scale, (value + half) * scale


def decimals_of(token: str) -> int:
    """Decimals of a printed number (``828.85`` -> 2, ``0.019234`` -> 6, ``12`` -> 0)."""
    return len(token.partition('.')[2]) if '.' in token else 0


def moved_over_time(bw: tuple[float, int], seconds: tuple[float, int]) -> tuple[float, float]:
    """Bytes a repetition moved, from its bandwidth (MiB/s) and the time IOR divided by
    (``totalTime``: IOR's ``bw`` is bytes moved / ``totalTime``), each as printed
    (value, decimals): the range of bytes consistent with the rounding."""
    bw_lo, bw_hi = span(*bw, MIB)
    t_lo, t_hi = span(*seconds)
    return bw_lo * t_lo, bw_hi * t_hi


def check_moved(op: str, which: str, moved: tuple[float, float], asked: int | None,
                source: str) -> None:
    """:class:`RunFailed` when the bytes IOR says it moved (a range: the rounding of what
    it printed) cannot be the bytes asked."""
    if asked is None:
        return
    lo, hi = moved
    if not lo * (1 - 1e-9) <= asked <= hi * (1 + 1e-9):
        said = f'{(lo + hi) / 2 / MIB:.6g} MiB' if hi - lo < 1e-3 * asked else \
            f'{lo / MIB:.6g} to {hi / MIB:.6g} MiB'
        raise RunFailed(f'{source}: IOR {op} moved {said} in {which}, asked for '
                        f'{asked / MIB:.6g} MiB (block x segments x tasks = {asked} B): '
                        f'the data did not all reach the file system')


# ---------------------------------------------------------------------------------------
# parameters from the command line (module options) and the API version

#: IOR 4 module options and their defaults (hpc/ior src/aiori-{HDF5,MPIIO,POSIX}.c).
#: ``showHints`` and ``hintsFileName`` are left out: they do not change the test.
MODULE_DEFAULTS: dict[str, dict[str, int]] = {
    'HDF5': {'hdf5.collectiveMetadata': 0, 'hdf5.noFill': 0, 'hdf5.setAlignment': 1,
             'hdf5.chunkSize': 0, 'hdf5.individualDataSets': 0},
    'MPIIO': {'mpiio.preallocate': 0, 'mpiio.useStridedDatatype': 0,
              'mpiio.useFileView': 0},
    'POSIX': {'posix.odirect': 0, 'posix.rangelocks': 0},
}
_NOT_PARAMETERS = {'showHints', 'hintsFileName'}


def split_command(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def module_options(command: str, api: str, version: str | None) -> dict[str, Any]:
    """``--<module>.<option>[=value]`` of the command line, with IOR 4's defaults for
    the API's module (IOR 3 had no such modules; then only what is stated)."""
    params: dict[str, Any] = {}
    if version is None or not version.startswith('3'):
        params.update(MODULE_DEFAULTS.get(api.upper(), {}))
    args = split_command(command)
    for i, arg in enumerate(args):
        match = re.fullmatch(r'--((?:hdf5|mpiio|posix|mmap|dummy|ncmpi|aio)\.([\w.-]+))'
                             r'(?:=(.*))?', arg)
        if not match or match.group(2) in _NOT_PARAMETERS:
            continue
        key, value = match.group(1), match.group(3)
        if value is None and key in params and isinstance(params[key], int) \
                and key not in ('hdf5.setAlignment',):
            params[key] += 1          # a flag: IOR counts its occurrences
            continue
        if value is None and i + 1 < len(args) and not args[i + 1].startswith('-'):
            value = args[i + 1]
        # IOR's string_to_bytes: an integer, k/m/g/t/p as powers of 1024
        size = parse_size(value, whole=True) if value is not None else 1
        params[key] = value if size is None else size
    return params


def api_versions(api: str | None, api_version: str | None) -> dict[str, str]:
    """``apiVersion`` is the HDF5 library version for HDF5 (``1.10.8 (Parallel)``),
    the MPI standard version for MPIIO (``(3.1)``), empty for POSIX."""
    if not api_version or not api_version.strip():
        return {}
    out = {'api_version': api_version.strip()}
    if (api or '').upper() == 'HDF5':
        match = re.match(r'\s*(\d+\.\d+\.\d+\S*)', api_version)
        if match:
            out['hdf5_version'] = match.group(1)
    return out


# ---------------------------------------------------------------------------------------
# text output

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
