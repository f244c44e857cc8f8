"""h5paths: this project's kernel of the HDF5 code paths where regressions happened
(``kernels/h5paths``; its README says what each path does).

Input: the kernel's JSON summary (``h5paths --json FILE``; any ``*.json`` whose
``tool`` is ``h5paths``), and the job's stdout and stderr for the failure lines.

Measurements, one set per timed phase (``operation``, the kernel's phase name):

=====================================  ============  ======  ========  ======================
operation                              metric        unit    higher    value
=====================================  ============  ======  ========  ======================
data phases: ``write``, ``read``,      ``bw``        MiB/s   yes       bytes / 2^20 / seconds,
``write_subset``, ``write_sources``,                                   mean over iterations;
``read_vds``                                                           ``samples`` per iteration
metadata phases: ``create``,           ``ops_per_s`` 1/s     yes       objects / seconds, mean
``open_read``, ``open_close``                                          over iterations
every phase                            ``time``      s       no        mean seconds
``reopen_read`` (``MEMORY_PHASES``)    ``peak_rss``  MiB     no        the largest rank's peak
                                                                       resident memory at the
                                                                       phase's end (getrusage),
                                                                       mean over iterations
=====================================  ============  ======  ========  ======================

Failures (:class:`RunFailed`), never a sample: ``h5paths: ERROR`` lines or HDF5
error stacks on stdout or stderr (whatever the exit code), a summary whose status
is not ``ok`` or that lists errors, files that went through another VOL connector
than ``HDF5_VOL_CONNECTOR`` asked (or one the kernel could not name), a serial run
whose files went through another file driver than ``HDF5_DRIVER`` asked, a stdout
without ``h5paths: finished OK``, fewer iterations than asked, an iteration without
a phase of its path, a phase that moved other than the bytes asked (elements x
ranks x bytes per element of the path, x ``read_repeats`` for the read of a warm
compound-*/convert-*/strided-contiguous row), or a metadata phase that touched fewer
objects than asked.

A path the HDF5 build cannot run (``multi-dataset`` before 1.14) is not a failure:
the kernel exits 2 with ``h5paths: ERROR <path>: not available in HDF5 <version>``,
and :func:`unavailable` returns that line for the check to skip the row with it. So
does a row the build ran other than its name says: ``--modify-write-buf`` not applied,
or ``--coll-metadata`` asked and metadata read or written independently (the kernel's
per-phase counts of MPI-IO calls, :func:`coll_metadata_not_done`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from h5regress.parsers.base import MIB, SYSTEM_ERRORS, ExpectedFile, Measurement, ParsedRun, \
    ParseError, RunFailed, check_files as check_expected, find_error_line, is_stderr_name, \
    kernel_summary
# the paths and their phases: one table, which the check reads too
from h5regress.parsers.h5paths_table import COUNTED_DATA_PHASES, DATA_PHASES, \
    DATASETS_PER_OBJECT, MEMORY_PHASES, PHASES, WRITES_FILE_RECORDS

TOOL = 'h5paths'

#: the record parameters, as the kernel's JSON ``params`` names them
PARAMS = ('path', 'api', 'transfer', 'layout', 'chunk_elements', 'modify_write_buf',
          'modify_write_buf_applied', 'coll_metadata', 'libver', 'elements', 'objects',
          'efc_size', 'iterations', 'read_repeats', 'record_bytes_file', 'record_bytes_memory',
          'read_cache')

_HDF5_ERROR = re.compile(r'HDF5-DIAG: Error detected|^\s*#\d{3}: .* line \d+ in ')
_KERNEL_ERROR = re.compile(r'^h5paths: (ERROR|FAILED)\b')
_MPI_ABORT = re.compile(r'MPI_ABORT was invoked|mpirun noticed that process rank \d+ .* exited '
                        r'on signal')
#: the kernel's word that the build lacks what the path needs (exit 2): a skip, not a failure
_UNAVAILABLE = re.compile(r'^h5paths: ERROR (\S+): not available in HDF5 (\S+)\s*$', re.M)

#: error lines of any output (a job's stdout and stderr), in order of what explains most:
#: the kernel's own (naming the call), HDF5's stack, the system's, the MPI launcher's
#: the kernel's own line naming a system error first (a full disk: its statvfs line comes
#: after the failed call's), then its first error line
FAILURE_LINES = [(re.compile(r'^h5paths: ERROR .*(?:' + '|'.join(
                     p.pattern for p, _ in SYSTEM_ERRORS) + ')'), 'the kernel failed'),
                 (re.compile(r'^h5paths: ERROR '), 'the kernel failed'),
                 (_HDF5_ERROR, 'HDF5 reported an error'),
                 *SYSTEM_ERRORS,
                 (_KERNEL_ERROR, 'the kernel failed'),
                 (_MPI_ABORT, 'an MPI rank died')]


def wanted(relpath: str) -> bool:
    """Files of a run directory that can hold h5paths output: its JSON summary, and
    the job's streams."""
    name = PurePosixPath(relpath).name
    return name.endswith(('.json', '.txt', '.out', '.err', '.log')) or \
        name in ('stdout', 'stderr')


def error_line(files: Mapping[str, str]) -> str | None:
    """The line of ``files`` that shows best why the run failed: the first of the first
    pattern of :data:`FAILURE_LINES` found anywhere."""
    for pattern in FAILURE_LINES:
        line = find_error_line(files, [pattern])
        if line:
            return line
    return None


def unavailable(files: Mapping[str, str]) -> str | None:
    """Why the HDF5 build cannot run the row as labelled, or None: the kernel's exit-2
    line (a path or ``--libver`` the build lacks), ``--modify-write-buf`` asked of a
    build without ``H5Pset_modify_write_buf`` (the kernel runs without it and says so),
    or ``--coll-metadata`` asked of a build that did metadata I/O independently anyway
    (:func:`coll_metadata_not_done`): its figures would not be what the row's name says."""
    for name, text in files.items():
        m = _UNAVAILABLE.search(text)
        if m:
            return m.group(0).strip()
    for name, text in files.items():
        if name.endswith('.json'):
            try:
                d = json.loads(text)
            except json.JSONDecodeError:
                continue
            opts = d.get('params') if isinstance(d, dict) and d.get('tool') == TOOL else None
            if not isinstance(opts, dict) or opts.get('api') != 'hdf5':
                continue
            if opts.get('modify_write_buf') and opts.get('modify_write_buf_applied') is False:
                return (f'h5paths: --modify-write-buf not applied: HDF5 '
                        f'{d.get("hdf5_version")} has no H5Pset_modify_write_buf')
            if opts.get('coll_metadata'):
                why = coll_metadata_not_done(d)
                if why:
                    return f'h5paths: --coll-metadata not done: HDF5 {d.get("hdf5_version")} {why}'
    return None


def coll_metadata_not_done(summary: Mapping[str, Any]) -> str | None:
    """How a run asked for collective metadata I/O did otherwise, from the MPI-IO calls
    the kernel counted in each phase (``mpi_file_calls``: [rank 0's, the other ranks'
    sum] per kind), or None.

    Collective metadata reads mean rank 0 reads and broadcasts: another rank's
    independent read is a metadata read of its own (the rows that ask for it transfer
    raw data collectively; a phase whose transfers fell back to independent is not
    judged). Collective metadata writes leave no independent write on any rank.
    A summary without counts (a kernel before 1.6.0, or one whose MPI-IO calls did not
    reach its counters) is not judged."""
    if summary.get('mpi_file_calls_counted') is not True:
        return None
    seen: dict[str, list[str]] = {}
    for it in summary.get('iterations') or []:
        for ph in it.get('phases') or []:
            calls = ph.get('mpi_file_calls') or {}
            if ph.get('mpio_actual_io_mode') == 'no-collective' or ph['phase'] in seen:
                continue
            reads, writes = calls.get('read_independent', [0, 0]), \
                calls.get('write_independent', [0, 0])
            said = []
            if reads[1]:
                said.append(f'the ranks other than 0 made {reads[1]} independent MPI-IO '
                            f'reads (rank 0 {reads[0]})')
            if sum(writes):
                said.append(f'{sum(writes)} independent MPI-IO writes (rank 0 {writes[0]})')
            if said:
                seen[ph['phase']] = said
    if not seen:
        return None
    return ('did metadata I/O independently: ' + '; '.join(
        f'{phase}: {" and ".join(said)}' for phase, said in seen.items()))


def parse(files: Mapping[str, str]) -> list[ParsedRun]:
    if not files:
        raise ParseError('h5paths: nothing to parse')
    streams = {p: t for p, t in files.items() if not p.endswith('.json')}
    summaries = [(p, d) for p, t in files.items() if p.endswith('.json')
                 for d in [kernel_summary(TOOL, p, t)] if d is not None]
    line = unavailable(files)
    if line:
        raise RunFailed(line)
    try:
        for path, data in summaries:
            _check_status(path, data)
    except RunFailed as failed:
        # the system's word says why more plainly than the call that failed
        cause = find_error_line(streams, SYSTEM_ERRORS)
        raise RunFailed(f'{failed}{"; " + cause if cause else ""}') from None
    line = error_line(streams)
    if line:
        raise RunFailed(f'h5paths: {line}')
    if not summaries:
        raise ParseError(f'h5paths: no JSON summary of h5paths among '
                         f'{", ".join(sorted(files))} (run it with --json FILE)')
    stdout = [p for p in streams if not is_stderr_name(p) and 'h5paths' in streams[p]]
    for p in stdout:
        if 'h5paths: finished OK' not in streams[p]:
            raise RunFailed(f'h5paths: {p}: incomplete output (no "h5paths: finished OK")')
    return [_from_json(path, data) for path, data in summaries]


# ------------------------------------------------------------------ helpers

def _check_status(path: str, d: Mapping[str, Any]) -> None:
    status, errors = d.get('status'), d.get('errors') or []
    if status != 'ok' or errors:
        raise RunFailed(f'h5paths: {path}: run status {status!r}'
                        + (': ' + '; '.join(map(str, errors)) if errors else ''))
    _check_serial(path, d)
    _check_vol_connector(path, d)


def _check_vol_connector(path: str, d: Mapping[str, Any]) -> None:
    """The connector the kernel's files went through (kernel 1.9.0) is known, and it is
    the one ``HDF5_VOL_CONNECTOR`` asked for (its first word, the connector's name): HDF5
    1.10 has no VOL layer and ignores the variable, and a connector that does not load
    can leave the library on the native one."""
    used, asked = d.get('vol_connector'), d.get('vol_connector_asked')
    if used is None:
        return
    if used.startswith('unknown'):
        raise RunFailed(f'h5paths: {path}: the VOL connector of the files is {used}')
    if asked and asked.split()[0] != used:
        raise RunFailed(f'h5paths: {path}: HDF5_VOL_CONNECTOR {asked!r} asked, the files '
                        f'went through the {used!r} connector (HDF5 {d.get("hdf5_version")})')


def _check_serial(path: str, d: Mapping[str, Any]) -> None:
    """A ``--transfer serial`` run (a file per rank) is one only if the kernel names the
    file driver its files went through, the one ``HDF5_DRIVER`` asked for (sec2 when
    unset; measured since kernel 1.10.0), and, where it counted them,
    made no MPI-IO call."""
    if (d.get('params') or {}).get('transfer') != 'serial':
        return
    used, asked = d.get('serial_driver'), (d.get('serial_driver_asked') or '').strip() or 'sec2'
    if not used or used.startswith('unknown'):
        raise RunFailed(f'h5paths: {path}: --transfer serial asked, the summary names no '
                        f'serial driver (serial_driver {used!r})')
    if used != asked:
        raise RunFailed(f'h5paths: {path}: file driver {asked!r} asked (HDF5_DRIVER), the '
                        f'files went through {used!r}')
    made = sum(sum(calls) for it in d.get('iterations') or () for ph in it.get('phases') or ()
               for calls in (ph.get('mpi_file_calls') or {}).values())
    if made:
        raise RunFailed(f'h5paths: {path}: --transfer serial asked, the kernel counted '
                        f'{made} MPI-IO call(s)')


def _from_json(path: str, d: dict[str, Any]) -> ParsedRun:
    _check_status(path, d)
    try:
        opts = d['params']
        name = d['path']
        ranks = int(d['mpi_ranks'])
        params = {key: opts[key] for key in PARAMS if key in opts}
        params.update(path=name, api=d['api'], num_ranks=ranks)
        if d.get('vol_connector', 'native') != 'native':
            # a parameter only off the native format: every native row keeps its key
            params['vol_connector'] = d['vol_connector']
        if d.get('serial_driver', 'sec2') != 'sec2':
            # likewise: a parameter only off sec2
            params['serial_driver'] = d['serial_driver']
        phases = PHASES.get(name)
        if phases is None:
            raise ParseError(f'h5paths: {path}: unknown path {name!r} (known: '
                             f'{", ".join(sorted(PHASES))})')
        per_phase = _per_phase(path, d['iterations'], phases, int(opts['iterations']))
        expected = _expected(name, opts, ranks)
    except ParseError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise ParseError(f'h5paths: {path}: malformed JSON summary ({e!r})') from None
    _check_moved_as_asked(path, per_phase, expected)
    measurements = _measurements(phases, per_phase)
    prov = _provenance(d)
    modes = {ph['phase']: ph['mpio_actual_io_mode'] for it in d['iterations'][-1:]
             for ph in it['phases'] if ph.get('mpio_actual_io_mode')}
    causes = {ph['phase']: ph['mpio_no_collective_cause'] for it in d['iterations'][-1:]
              for ph in it['phases'] if ph.get('mpio_no_collective_cause')}
    calls = {ph['phase']: ph['mpi_file_calls'] for it in d['iterations'][-1:]
             for ph in it['phases'] if ph.get('mpi_file_calls')}
    if modes:
        prov['mpio_actual_io_mode'] = modes
    if calls:
        # [rank 0's, the other ranks' sum] per kind: who read and wrote, and how
        prov['mpi_file_calls'] = calls
    if causes:
        prov['mpio_no_collective_cause'] = causes
    warnings = list(d.get('warnings') or [])
    if opts.get('read_cache') == 'keep':
        warnings.append('warm reads by design (--read-cache keep): the read figures come '
                        'from the page cache and time the CPU side of the path')
    elif d.get('read_cache') != 'evicted' and \
            any(p.startswith(('read', 'open')) for p in phases):
        warnings.append(f'read figures may come from the page cache: the kernel says '
                        f'read_cache {d.get("read_cache")!r}')
    if params.get('transfer') == 'collective':
        fallen = sorted(p for p, mode in modes.items() if mode == 'no-collective')
        if fallen:
            warnings.append(f'collective transfers asked, HDF5 did independent I/O in '
                            f'{", ".join(fallen)} (H5Pget_mpio_no_collective_cause: '
                            f'{", ".join(str(causes.get(p)) for p in fallen)})')
    if params.get('api') == 'hdf5' and params.get('modify_write_buf') and \
            not params.get('modify_write_buf_applied'):
        warnings.append('--modify-write-buf asked, not applied: this HDF5 has no '
                        'H5Pset_modify_write_buf')
    return ParsedRun(TOOL, params, prov, measurements, warnings=warnings)


def _provenance(d: Mapping[str, Any]) -> dict[str, Any]:
    """What the kernel says of the run's software, files and read cache."""
    prov = {k: d[k] for k in ('kernel_version', 'hdf5_version', 'hdf5_version_source',
                              'hdf5_library', 'hdf5_library_source', 'read_cache',
                              'vol_connector', 'vol_connector_asked', 'serial_driver',
                              'serial_driver_asked') if k in d}
    prov['files'] = [{'name': PurePosixPath(f['name']).name, 'bytes': int(f['bytes'])}
                     for f in d.get('files') or []]
    prov['read_cache_check'] = d.get('read_cache_check')
    return prov


class _Phase(NamedTuple):
    """One phase of one iteration, as the kernel's summary gives it."""

    seconds: float
    bytes: int
    objects: int
    #: the largest rank's peak resident memory at the phase's end (0: a kernel before 1.11.0)
    peak_rss_kib: int


def _measurements(phases: tuple[str, ...], per_phase: dict[str, list[_Phase]]
                  ) -> list[Measurement]:
    """Bandwidth (data phases) or rate (object phases) and time of each phase, and the
    peak resident memory of the phases of ``MEMORY_PHASES``; per iteration the samples."""
    measurements = []
    for phase in phases:
        figures = per_phase[phase]
        seconds = [f.seconds for f in figures]
        if phase in DATA_PHASES:
            bws = [f.bytes / MIB / f.seconds for f in figures]
            measurements.append(Measurement(phase, 'bw', _mean(bws), 'MiB/s', True, bws))
        else:
            rates = [f.objects / f.seconds for f in figures]
            measurements.append(Measurement(phase, 'ops_per_s', _mean(rates), '1/s', True,
                                            rates))
        measurements.append(Measurement(phase, 'time', _mean(seconds), 's', False, seconds))
        if phase in MEMORY_PHASES:
            rss = [f.peak_rss_kib / 1024 for f in figures]
            measurements.append(Measurement(phase, 'peak_rss', _mean(rss), 'MiB', False, rss))
    return measurements


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _per_phase(path: str, iterations: list[Mapping[str, Any]], phases: tuple[str, ...],
               asked: int) -> dict[str, list[_Phase]]:
    """phase -> its figures per iteration; every iteration asked, every phase of the path
    in each, each time positive, each memory phase's peak memory positive."""
    if len(iterations) != asked:
        raise RunFailed(f'h5paths: {path}: {len(iterations)} iteration(s) in the summary, '
                        f'{asked} asked')
    out: dict[str, list[_Phase]] = {p: [] for p in phases}
    for it in iterations:
        seen = {ph['phase']: ph for ph in it['phases']}
        for phase in phases:
            ph = seen.get(phase)
            if ph is None:
                raise RunFailed(f'h5paths: {path}: iteration {it.get("iteration")} has no '
                                f'{phase} phase')
            figures = _Phase(float(ph['seconds']), int(ph.get('bytes') or 0),
                             int(ph.get('objects') or 0), int(ph.get('peak_rss_kib') or 0))
            if not figures.seconds > 0:
                raise RunFailed(f'h5paths: {path}: iteration {it.get("iteration")} {phase}: '
                                f'time {figures.seconds} s is not positive')
            if phase in MEMORY_PHASES and not figures.peak_rss_kib > 0:
                raise RunFailed(f'h5paths: {path}: iteration {it.get("iteration")} {phase}: '
                                f'peak_rss_kib {ph.get("peak_rss_kib")!r} is not positive')
            out[phase].append(figures)
    return out


def _expected(name: str, opts: Mapping[str, Any], ranks: int) -> dict[str, tuple[int, int]]:
    """phase -> (bytes, objects) the options ask of one iteration (0: not checked).

    Data phases move ``elements`` records per rank (per dataset of the paths of
    ``DATASETS_PER_OBJECT``)
    in memory-type bytes (kernels/h5paths/README.md): the read's memory record
    (``record_bytes_memory``), except the writes of ``WRITES_FILE_RECORDS`` and the
    MPI-IO twins (the file record). Metadata phases touch at least ``objects`` objects
    in all (vds-open: the mappings HDF5 decoded), as ``COUNTED_DATA_PHASES`` do (append:
    the extents HDF5 grew). The ``read`` phase reads ``read_repeats`` times (a
    summary of a kernel before the option: once)."""
    elements, objects = int(opts['elements']), int(opts['objects'])
    repeats = int(opts.get('read_repeats', 1))
    file_bytes, memory_bytes = int(opts['record_bytes_file']), int(opts['record_bytes_memory'])
    datasets = objects * DATASETS_PER_OBJECT[name] if name in DATASETS_PER_OBJECT else 1
    out = {}
    for phase in PHASES[name]:
        if phase in DATA_PHASES:
            size = file_bytes if opts.get('api') == 'mpiio' or \
                (name in WRITES_FILE_RECORDS and phase == 'write') else memory_bytes
            out[phase] = (elements * ranks * size * datasets
                          * (repeats if phase == 'read' else 1),
                          objects if phase in COUNTED_DATA_PHASES else 0)
        else:
            out[phase] = (0, objects)
    return out


def _check_moved_as_asked(path: str, per_phase: Mapping[str, list[_Phase]],
                          expected: Mapping[str, tuple[int, int]]) -> None:
    for phase, values in per_phase.items():
        want_bytes, want_objects = expected[phase]
        for i, figures in enumerate(values):
            if want_bytes and figures.bytes != want_bytes:
                raise RunFailed(f'h5paths: {path}: iteration {i} {phase} moved '
                                f'{figures.bytes} B, {want_bytes} B asked')
            if want_objects and figures.objects < want_objects:
                raise RunFailed(f'h5paths: {path}: iteration {i} {phase} touched '
                                f'{figures.objects} objects, {want_objects} asked')


def check_files(run: ParsedRun, written: Mapping[str, int]) -> list[str]:
    """Problems of the files on disk (``{relative path: bytes}``) against the summary's
    list: each file it names there with the size it names."""
    return check_expected([ExpectedFile((f['name'],), size=f['bytes'])
                           for f in run.provenance.get('files', [])], written)
