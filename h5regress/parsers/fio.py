"""fio: JSON output (``--output-format=json`` or ``json+``) -> one :class:`ParsedRun` per job.

Format (fio 3.x, ``stat.c``: ``show_run_stats``/``show_thread_status_json``)
-----------------------------------------------------------------------------
::

    {"fio version": "fio-3.33", "timestamp": 1795291950, "time": "Sat Nov 21 ...",
     "global options": {"ioengine": "psync", ...},            # job files only
     "jobs": [{"jobname": "seqwrite", "groupid": 0, "error": 0,
               "job options": {"rw": "write", "bs": "1m", "direct": "1", ...},
               "read":  {"io_bytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0,
                         "runtime": 0, "clat_ns": {...}, "lat_ns": {...}, ...},
               "write": {"io_bytes": 67108864, "bw_bytes": 1137438372,
                         "bw": 1110779, "iops": 1084.7, "runtime": 59,
                         "clat_ns": {"mean": ..., "percentile": {"50.000000": ...}}},
               "trim": {...}, "sync": {...}, "job_runtime": 59, ...}],
     "disk_util": [...]}

Units: ``bw`` is KiB/s, ``bw_bytes`` B/s (used here), ``runtime`` ms, latencies
ns (``*_ns``; fio 2.x wrote ``clat``/``lat`` in us). Option values are strings,
exactly as given (``"1m"``, ``"1"``). ``json+`` adds ``bins`` to ``clat_ns``.

Quirks seen with fio 3.33 (``tests/fixtures/fio``):

- fio prints ``fio: ...`` lines on stdout *before* the JSON when a job fails
  (``fio: first direct IO errored ...``); the JSON is found after them.
- A job that could not open its file (parent is a regular file) reports
  ``"error": 0`` with no I/O at all; fio exits 1 and says why only on stderr.
  So a job that did no I/O in a direction its ``rw`` asks for is a failure.
- ``--directory`` naming a missing directory fails before any JSON is printed.
- ``end_fsync=1`` is inside the job's runtime (the bandwidth includes the flush)
  but not counted in ``sync``.
- fio preallocates by default: ``fallocate=native`` since fio 3.0 (``posix`` before);
  the mode changes the answer, so it is always recorded.

Failure rules
-------------
:class:`RunFailed` when a job has ``error`` != 0 (named with its errno: ``No space
left on device (errno 28)``), or did no I/O in a direction its ``rw`` asks for, or fio
printed error lines (``fio: ...``) and no JSON; when a JSON document is truncated; when
there is no output at all or a ``*.json`` file is empty.

fio exits 0 and reports a group with the bytes of its living workers only when one of
them is killed (``kill -9``): :class:`RunFailed` when any file holds fio's failure lines
(:data:`FAILURE_LINES`: ``got signal=9``, ``err=28``, ``io_u error``, the operating
system's errors), wherever fio printed them, and when a job (or the group
``group_reporting`` makes of ``numjobs`` jobs) moved other than ``size`` (in whole
blocks) x ``loops`` x jobs bytes; not checked under options that rightly change the
amount (:data:`AMOUNT_OPTIONS`: a time or I/O limit, offsets, zones, verification...).
:func:`error_line` is the part that reads any text (a job's stdout and stderr).

:class:`ParseError` when the text holds no fio JSON and no fio messages, and when a value
the records are made of is not a number (fio prints C's ``nan``/``-nan``/``inf``:
invalid JSON).

Records
-------
One :class:`ParsedRun` per job (jobs of the same name and group, from
``numjobs`` without ``group_reporting``, are aggregated: bytes summed over the
longest runtime, fio's own "aggrb"). Operations ``read``, ``write``, ``trim``
(those the job did); metrics ``bw`` (MiB/s), ``iops`` (ops/s), ``runtime`` (s),
``lat_mean``, ``clat_mean``, ``clat_p50``, ``clat_p99`` (s; when measured).

``params``: every global and job option (job overrides global) but the paths
(``filename``, ``directory``, ``name``...), with fio's defaults filled in for
``rw bs ioengine iodepth direct end_fsync fsync numjobs fallocate invalidate``;
``bs`` and ``size`` as bytes when they are plain sizes. ``provenance``:
``tool_version`` (``tool_version_source``: tool output), ``write_flush`` (per write
figure: ``fsync`` with ``end_fsync``/``fsync_on_close``/``fsync``/``fdatasync``, else
``O_DIRECT`` with ``direct=1``, else ``none``; :mod:`h5regress.durability`),
``finished`` (ISO, UTC), ``time``, ``job``, ``group``, paths,
``io_bytes`` per direction, ``defaulted`` (which params came from defaults).
"""

from __future__ import annotations

import datetime
import json
import math
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from h5regress.parsers.base import SYSTEM_ERRORS, Measurement, ParsedRun, ParseError, \
    RunFailed, basename, errno_text, find_error_line, parse_size, to_mib_per_s
from h5regress.parsers.ior import raise_if_empty_json
from h5regress.durability import DIRECT, FSYNC, NONE, SYNC, WRITE_FLUSH, flush_map
from h5regress.toolversion import FROM_OUTPUT

TOOL = 'fio'

#: fio 3.x defaults (``fio --cmdhelp=<option>`` of fio 3.33) of the options that
#: change a sequential-bandwidth answer. ``fallocate`` was ``posix`` before fio 3.0.
DEFAULTS = {'rw': 'read', 'bs': 4096, 'ioengine': 'psync', 'iodepth': '1', 'direct': '0',
            'end_fsync': '0', 'fsync': '0', 'numjobs': '1', 'fallocate': 'native',
            'invalidate': '1'}
#: Options that name places, not the test: kept out of ``params``.
PATH_OPTIONS = ('name', 'filename', 'directory', 'filename_format', 'write_bw_log',
                'write_lat_log', 'write_iops_log', 'write_hist_log', 'output',
                'per_job_logs')
#: Directions each ``rw`` value reads or writes.
_DIRECTIONS = {'read': ('read',), 'randread': ('read',), 'write': ('write',),
               'randwrite': ('write',), 'trim': ('trim',), 'randtrim': ('trim',),
               'rw': ('read', 'write'), 'readwrite': ('read', 'write'),
               'randrw': ('read', 'write'), 'trimwrite': ('trim', 'write'),
               'randtrimwrite': ('trim', 'write')}


def wanted(relpath: str) -> bool:
    """fio outputs: ``*.json``, ``stdout*``/``stderr*``, ``*.txt *.log *.out *.err``."""
    name = basename(relpath)
    return name.endswith(('.json', '.txt', '.log', '.out', '.err')) or \
        name.startswith(('stdout', 'stderr'))


def parse(files: Mapping[str, str]) -> list[ParsedRun]:
    """Runs of every fio JSON document among ``files``; messages of the others.

    Failures are named in this order: a job's own ``error`` (an errno), then fio's error
    lines anywhere (:func:`error_line`: a worker killed by a signal, an I/O error), then
    a job that moved fewer bytes than asked.
    """
    raise_if_empty_json(files, 'fio')
    docs: list[tuple[str, Mapping[str, Any]]] = []
    messages: list[str] = []
    for name, text in sorted(files.items()):
        doc, before = find_json(text, name)
        messages += [f'{name}: {line}' for line in fio_messages(before)]
        if doc is not None:
            docs.append((name, doc))
    for name, doc in docs:
        check_jobs(doc.get('jobs') if isinstance(doc.get('jobs'), list) else [], name, files)
    failure = error_line(files) if docs else None
    if failure:
        raise RunFailed(f'fio run failed: {failure}')
    runs = [run for name, doc in docs for run in runs_from_doc(doc, name, files)]
    if runs:
        for run in runs:
            run.warnings += messages
        return runs
    if not any(text.strip() for text in files.values()):
        raise RunFailed(f'{", ".join(sorted(files)) or "no files"}: fio produced no output')
    if messages:
        raise RunFailed(f'fio failed before reporting: {"; ".join(messages[:5])}')
    raise ParseError(f'{", ".join(sorted(files))}: no fio JSON output '
                     f'(expected --output-format=json)')


#: fio's lines that show a failed run, wherever they are (its output file, stdout,
#: stderr), whatever its exit code: fio exits 0 when one of its workers was killed.
FAILURE_LINES: list[tuple[re.Pattern, str]] = [
    (re.compile(r'\bgot signal=\d+'),
     'a fio worker died of a signal (its I/O is missing from the report)'),
    (re.compile(r'\berr=\s*[1-9]\d*'), 'a fio job failed'),
    (re.compile(r'^fio: io_u error\b'), 'an I/O error'),
] + SYSTEM_ERRORS


def error_line(files: Mapping[str, str]) -> str | None:
    """The first line of ``files`` (fio's output, or a job's stdout and stderr) that shows
    a failed fio run, as ``"name:line: meaning: text"``, or None."""
    return find_error_line(files, FAILURE_LINES)


def fio_messages(lines: Iterable[str]) -> list[str]:
    """fio's own messages (``fio: ...``) and job error lines (``... err=``)."""
    return [line.strip() for line in lines
            if line.startswith('fio:') or re.search(r'\berr=\s*\d+', line)]


def find_json(text: str, source: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(fio JSON document, lines outside it) of one text.

    The document starts at a line ``{`` followed by ``"fio version"``; lines fio
    printed before it are returned for the messages. A document broken by
    interleaved ``fio:`` lines (stderr merged into stdout) is read without them.
    """
    lines = _NON_NUMBER.sub(r'\1NaN', text).splitlines()
    for i, line in enumerate(lines):
        if line.strip() != '{' or '"fio version"' not in ''.join(lines[i + 1:i + 3]):
            continue
        body = '\n'.join(lines[i:])
        try:
            doc, end = json.JSONDecoder().raw_decode(body)
        except json.JSONDecodeError:
            interleaved = [ln for ln in lines[i:] if ln.startswith('fio:')]
            clean = '\n'.join(ln for ln in lines[i:] if not ln.startswith('fio:'))
            try:
                doc, end = json.JSONDecoder().raw_decode(clean)
            except json.JSONDecodeError as err:
                raise RunFailed(f'{source}: fio JSON is truncated or invalid ({err.msg} '
                                f'at line {i + err.lineno}): fio did not finish') from None
            refuse_non_numbers(doc, source)
            return doc, lines[:i] + interleaved + clean[end:].splitlines()
        refuse_non_numbers(doc, source)
        return doc, lines[:i] + body[end:].splitlines()
    return None, lines


#: C's spelling of a float that is not a number, as fio prints it (``nan``, ``-nan``,
#: ``inf``): not JSON. Read as NaN, then refused where it matters.
_NON_NUMBER = re.compile(r'(:\s*)-?(?:nan|inf)\b')
#: what the records are made of: a non-number here makes the output unreadable
_USED_KEYS = {'io_bytes', 'bw_bytes', 'bw', 'iops', 'runtime', 'total_ios', 'mean',
              'percentile', 'error'}


def refuse_non_numbers(doc: Any, source: str, path: str = '') -> None:
    """:class:`ParseError` naming the first NaN or infinity among the values the records
    are made of (fio printed invalid JSON: its statistics are broken)."""
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            refuse_non_numbers(value, source, f'{path}.{key}' if path else str(key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            refuse_non_numbers(value, source, f'{path}[{i}]')
    elif isinstance(doc, float) and not math.isfinite(doc) and \
            _USED_KEYS & set(re.split(r'[.\[]', path)):
        raise ParseError(f'{source}: fio JSON holds {doc} for {path}: not a number '
                         f'(invalid JSON: fio\'s statistics are broken)')


def runs_from_doc(doc: Mapping[str, Any], source: str,
                  files: Mapping[str, str]) -> list[ParsedRun]:
    """One run per job (or per group of same-named jobs) of one fio document."""
    jobs = doc.get('jobs')
    if not isinstance(jobs, list) or not jobs:
        raise RunFailed(f'{source}: fio JSON lists no jobs')
    version = doc.get('fio version', '')
    groups: dict[tuple[str, Any], list[Mapping[str, Any]]] = {}
    for job in jobs:
        groups.setdefault((job.get('jobname', ''), job.get('groupid')), []).append(job)
    runs = []
    for (jobname, groupid), members in groups.items():
        check_jobs(members, source, files)
        params, defaulted, paths = job_params(doc.get('global options', {}),
                                              members[0].get('job options', {}), version)
        directions = directions_of(params['rw'])
        io_bytes = {d: sum(int(j.get(d, {}).get('io_bytes', 0)) for j in members)
                    for d in ('read', 'write', 'trim')}
        idle = [d for d in directions if io_bytes[d] == 0]
        if idle:
            raise RunFailed(f'{source}: fio job {jobname!r} did no {"/".join(idle)} I/O '
                            f'although rw={params["rw"]} (error 0; fio says why on '
                            f'stderr{stderr_hint(files)})')
        check_moved(jobname, params, directions, members, source)
        measurements = []
        for direction in ('read', 'write', 'trim'):
            if io_bytes[direction]:
                measurements += direction_measurements(direction, members, source)
        provenance = {
            'source': source, 'tool_version': version,
            'tool_version_source': FROM_OUTPUT if version else None,
            WRITE_FLUSH: flush_map(measurements, ['write'], write_flush(params)) or None,
            'job': jobname, 'group': groupid,
            'time': doc.get('time'), 'finished': epoch_to_iso(doc.get('timestamp')),
            'io_bytes': {d: n for d, n in io_bytes.items() if n},
            'defaulted': defaulted, 'jobs_aggregated': len(members), **paths,
        }
        runs.append(ParsedRun(tool=TOOL, params=params, measurements=measurements,
                              provenance={k: v for k, v in provenance.items()
                                          if v not in (None, '', [])}))
    return runs


def check_jobs(jobs: list[Mapping[str, Any]], source: str, files: Mapping[str, str]) -> None:
    """:class:`RunFailed` for a job whose ``error`` is not 0."""
    for job in jobs:
        error = job.get('error', 0)
        if error:
            raise RunFailed(f'{source}: fio job {job.get("jobname")!r} failed: '
                            f'{errno_text(error)}{stderr_hint(files)}')


#: Options under which a job may rightly move other than ``size`` per direction (a time
#: limit, an I/O limit, offsets, zones, fill-the-device, verification, ramp time...):
#: then the bytes moved are not checked against the bytes asked.
AMOUNT_OPTIONS = ('time_based', 'runtime', 'io_size', 'io_limit', 'number_ios', 'offset',
                  'offset_increment', 'filesize', 'nrfiles', 'fill_device', 'fill_fs',
                  'zonemode', 'zonesize', 'zonerange', 'zoneskip', 'verify', 'exitall',
                  'exitall_on_error', 'ramp_time', 'create_only', 'io_submit_mode')


def asked_per_job(params: Mapping[str, Any], directions: tuple[str, ...]) -> int | None:
    """Bytes each job must move in its direction: ``size`` rounded down to whole blocks,
    times ``loops`` (fio 3.33: ``size=10M bs=3M`` moves 9 MiB). None when fio may rightly
    move another amount (:data:`AMOUNT_OPTIONS`, a mixed or holed ``rw``, a size or block
    size that is not one plain number)."""
    size, bs = params.get('size'), params.get('bs')
    if len(directions) != 1 or ':' in str(params.get('rw', '')) or \
            any(str(params.get(key, '0')) not in ('0', '') for key in AMOUNT_OPTIONS) or \
            not isinstance(size, int) or not isinstance(bs, int) or bs <= 0:
        return None
    loops = str(params.get('loops', '1'))
    if not loops.isdigit():
        return None
    return size // bs * bs * int(loops) or None


def check_moved(jobname: str, params: Mapping[str, Any], directions: tuple[str, ...],
                members: list[Mapping[str, Any]], source: str) -> None:
    """:class:`RunFailed` when a job (or the group fio reports for ``numjobs`` jobs) moved
    other than the bytes asked: fio reports a group whose worker was killed with that
    worker's bytes missing, exits 0 and keeps ``error`` 0."""
    per_job = asked_per_job(params, directions)
    numjobs = str(params.get('numjobs', '1'))
    if per_job is None or not numjobs.isdigit():
        return
    numjobs = int(numjobs)
    direction = directions[0]
    if len(members) == 1 and numjobs > 1:       # group_reporting: one entry for all jobs
        reported = [(f'the {numjobs} jobs of {jobname!r}', members[0], per_job * numjobs)]
    elif len(members) == numjobs:
        reported = [(f'job {i} of {numjobs} of {jobname!r}' if numjobs > 1
                     else f'job {jobname!r}', job, per_job)
                    for i, job in enumerate(members, 1)]
    else:
        raise RunFailed(f'{source}: fio reported {len(members)} jobs of {jobname!r}, '
                        f'numjobs={numjobs}: a worker is missing')
    for who, job, asked in reported:
        moved = int(job.get(direction, {}).get('io_bytes', 0))
        if moved != asked:
            raise RunFailed(f'{source}: fio {direction}: {who} moved {moved} B, asked for '
                            f'{asked} B (size x loops x jobs): a worker died or stopped '
                            f'early')


def stderr_hint(files: Mapping[str, str]) -> str:
    """``: <first fio line of stderr>`` when a stderr file is among ``files``."""
    for name, text in sorted(files.items()):
        base = posixpath.basename(name)
        if base.startswith('stderr') or base.endswith('.err'):
            lines = fio_messages(text.splitlines())
            if lines:
                return f'; {name}: {lines[0]}'
    return ''


def directions_of(rw: str) -> tuple[str, ...]:
    """Directions an ``rw`` value asks for (``write:4k`` -> write)."""
    return _DIRECTIONS.get(str(rw).split(':')[0], ())


def job_params(global_options: Mapping[str, Any], job_options: Mapping[str, Any],
               version: str) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """(params, names taken from defaults, path options) of one job."""
    options = {**global_options, **job_options}
    paths = {k: options.pop(k) for k in PATH_OPTIONS if k in options}
    defaults = dict(DEFAULTS)
    if fio_major(version) is not None and fio_major(version) < 3:
        defaults['fallocate'] = 'posix'
    defaulted = sorted(k for k in defaults if k not in options)
    params = {**defaults, **options}
    for key in ('bs', 'size'):      # plain sizes (1m, 64M, 4096; base 1024) as bytes
        size = parse_size(params[key], whole=True) if key in params else None
        if size is not None:
            params[key] = size
    return params, defaulted, paths


def write_flush(params: Mapping[str, Any]) -> str:
    """What a job's write figures include (:mod:`h5regress.durability`): fio counts
    ``end_fsync``, ``fsync_on_close`` and every ``fsync``/``fdatasync`` in the job's
    runtime, so they are in its bandwidth; ``sync=1`` (O_SYNC) puts every write on storage
    before it returns; ``direct=1`` bypasses the page cache."""
    def on(key):
        return str(params.get(key, '0')).strip().lower() not in ('0', '', 'false', 'none')
    if any(on(k) for k in ('end_fsync', 'fsync_on_close', 'fsync', 'fdatasync')):
        return FSYNC
    if on('sync'):
        return SYNC
    return DIRECT if on('direct') else NONE


def fio_major(version: str) -> int | None:
    match = re.match(r'fio-(\d+)', version or '')
    return int(match.group(1)) if match else None


def direction_measurements(direction: str, jobs: list[Mapping[str, Any]],
                           source: str) -> list[Measurement]:
    """Bandwidth, IOPS, runtime and latencies of one direction of a job (group)."""
    stats = [job[direction] for job in jobs]
    runtime_ms = max(float(s.get('runtime', 0)) for s in stats)
    if len(stats) == 1:
        bw_bytes = float(stats[0]['bw_bytes'])
        iops = float(stats[0]['iops'])
    else:
        # fio's aggregate ("aggrb"): all bytes over the longest runtime
        bw_bytes = sum(float(s['io_bytes']) for s in stats) * 1000 / runtime_ms \
            if runtime_ms else 0.0
        iops = sum(float(s.get('total_ios', 0)) for s in stats) * 1000 / runtime_ms \
            if runtime_ms else 0.0
    if bw_bytes <= 0 or runtime_ms <= 0:
        raise RunFailed(f'{source}: fio {direction}: zero bandwidth or runtime '
                        f'(bw_bytes={bw_bytes}, runtime={runtime_ms} ms)')
    out = [
        Measurement(direction, 'bw', to_mib_per_s(bw_bytes, 'B/s'), 'MiB/s', True),
        Measurement(direction, 'iops', iops, 'ops/s', True),
        Measurement(direction, 'runtime', runtime_ms / 1000, 's', False),
    ]
    out += latency_measurements(direction, stats[0])
    return out


def latency_measurements(direction: str, stats: Mapping[str, Any]) -> list[Measurement]:
    """Mean total and completion latency, completion latency p50/p99, in seconds
    (fio 3: ``*_ns``; fio 2: ``lat``/``clat`` in microseconds)."""
    out = []
    for key, scale, name in (('lat_ns', 1e-9, 'lat'), ('lat', 1e-6, 'lat'),
                             ('clat_ns', 1e-9, 'clat'), ('clat', 1e-6, 'clat')):
        block = stats.get(key)
        if not isinstance(block, Mapping) or not block.get('N', 1) or \
                any(m.metric == f'{name}_mean' for m in out):
            continue
        out.append(Measurement(direction, f'{name}_mean', float(block['mean']) * scale,
                               's', False))
        percentiles = block.get('percentile', {})
        for label, wanted_pct in (('p50', 50.0), ('p99', 99.0)):
            value = next((v for k, v in percentiles.items()
                          if abs(float(k) - wanted_pct) < 1e-9), None)
            if value is not None:
                out.append(Measurement(direction, f'{name}_{label}', float(value) * scale,
                                       's', False))
    return out


def epoch_to_iso(timestamp: Any) -> str | None:
    """fio's ``timestamp`` (seconds since the epoch, when the run ended) in ISO, UTC."""
    if not isinstance(timestamp, (int, float)):
        return None
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc) \
        .isoformat(timespec='seconds')
