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

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from h5regress.durability import WRITE_FLUSH
from h5regress.parsers.base import (MIB, SYSTEM_ERRORS, Measurement, ParsedRun, ParseError,
                                    RunFailed, basename, find_error_line, is_stderr_name,
                                    to_mib_per_s)
from h5regress.parsers.ior_values import (TOOL, api_versions, asked_bytes,  # noqa: F401
                                          bandwidth_measurements, check_moved, finite,
                                          module_options, moved_over_time, parse_ior_time,
                                          repetition_measurements, samples_of, span,
                                          split_command, write_flush)
from h5regress.parsers.ior_text import CSV_HEADER, runs_from_csv, runs_from_text_file  # noqa: F401


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


# ---------------------------------------------------------------------------------------
# statistics over repetitions (IOR's own: ior-output.c bw_ops_values)


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


# ---------------------------------------------------------------------------------------
# bytes moved against bytes asked


# ---------------------------------------------------------------------------------------
# parameters from the command line (module options) and the API version


# ---------------------------------------------------------------------------------------
# text output


