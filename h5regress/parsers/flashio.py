"""FLASH-IO: this project's kernel (``kernels/flash-io``) and the original benchmark.

Measurements, one set per file kind (``operation``):

=============  ==========  =====  ================  ===================================
operation      metric      unit   higher is better  value
=============  ==========  =====  ================  ===================================
checkpoint     ``bw``      MiB/s  yes               mean over iterations; ``samples``
plotfile                                            holds each iteration's value
corner         ``time``    s      no                mean file open-to-close time
               ``size``    B      no                size of the file (stat after close)
=============  ==========  =====  ================  ===================================

``checkpoint`` is the double-precision checkpoint (all 24 unknowns),
``plotfile`` the single-precision cell-centred plotfile, ``corner`` the
single-precision corner plotfile. Bandwidth is size / 2^20 / time.

Inputs, in order of preference:

1. the kernel's JSON summary (``flash-io --json FILE``; any ``*.json`` whose
   ``tool`` is ``flash-io``);
2. the kernel's text output (the table it prints on stdout);
3. the original FLASH-IO's stdout (``*** Wrote output to NAME`` then ``time to
   output = T`` per file) with the sizes from an ``ls -l`` of the files
   (``files.txt``): the original prints times only, so bandwidth = size / time.
   Without sizes only ``time`` is reported, with a warning.

Failures (:class:`RunFailed`): HDF5 error stacks or ``flash-io: ERROR`` lines in
stderr, a JSON summary whose status is not ``ok``, a text output without
``flash-io: finished OK``, an original run without its ``TOTAL time to output``
line, or files smaller than the data they must hold (the unported original
exits 0 after every HDF5 call failed and leaves 4 KiB files).

Provenance: ``tool_version`` (the kernel's own, ``tool_version_source`` tool output),
``write_flush`` per figure: ``fsync`` when the kernel ran with ``--fsync`` (each rank
fsyncs the file before the clock stops; the checks pass it), else ``none`` (the figure
ends in the page cache; the original FLASH-IO never flushes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from h5regress.parsers.base import MIB, ExpectedFile, Measurement, ParsedRun, ParseError, \
    RunFailed, check_files as check_expected, kernel_summary
from h5regress.durability import FSYNC, NONE, WRITE_FLUSH, flush_map
from h5regress.toolversion import FROM_OUTPUT

TOOL = 'flash-io'
KINDS = ('checkpoint', 'plotfile', 'corner')

_TEXT_SUFFIXES = ('.txt', '.out', '.err', '.log', '.json')

# original: which file is which
_ORIG_KIND = (('_chk_', 'checkpoint'), ('_plt_cnt_', 'plotfile'), ('_plt_crn_', 'corner'))

_HDF5_ERROR = re.compile(r'HDF5-DIAG: Error detected|^\s*#\d{3}: .* line \d+ in ', re.M)
_KERNEL_ERROR = re.compile(r'^flash-io: (ERROR|FAILED)\b.*$', re.M)
_MPI_ABORT = re.compile(r'MPI_ABORT was invoked|mpirun noticed that process rank \d+ .* exited '
                        r'on signal|mpirun detected that one or more processes exited with '
                        r'non-zero status', re.M)


def wanted(relpath: str) -> bool:
    """Files of a run directory that can hold FLASH-IO output."""
    name = PurePosixPath(relpath).name
    return name.endswith(_TEXT_SUFFIXES)


def parse(files: Mapping[str, str]) -> list[ParsedRun]:
    if not files:
        raise ParseError('flash-io: nothing to parse')
    stderr = '\n'.join(t for p, t in files.items() if _is_stderr(p))
    _check_stderr(stderr, files)

    runs = []
    for path, text in files.items():
        if path.endswith('.json'):
            data = kernel_summary(TOOL, path, text)
            if data is not None:
                runs.append(_from_json(path, data))
    if runs:
        return runs

    for path, text in files.items():
        if 'h5regress FLASH I/O kernel' in text and not _is_stderr(path):
            return [_from_kernel_text(path, text)]

    for path, text in files.items():
        if not _is_stderr(path) and ('*** Wrote output to' in text
                                     or 'HDF 5 v 1.4 test' in text
                                     or 'TOTAL time to output' in text):
            sizes = {}
            for p, t in files.items():
                if PurePosixPath(p).name.startswith('files') or _looks_like_ls(t):
                    sizes.update(_parse_ls(t))
            return [_from_original(path, text, sizes)]

    raise ParseError(f'flash-io: no FLASH-IO output among {", ".join(sorted(files))} '
                     '(expected the kernel\'s JSON summary or text output, or the original\'s '
                     'stdout)')


# ------------------------------------------------------------------ helpers

def _is_stderr(path: str) -> bool:
    name = PurePosixPath(path).name
    return 'stderr' in name or name.endswith('.err')


def _check_stderr(stderr: str, files: Mapping[str, str]) -> None:
    if not stderr:
        return
    where = ', '.join(sorted(p for p in files if _is_stderr(p)))
    m = _HDF5_ERROR.search(stderr)
    if m:
        first = stderr[m.start():].splitlines()[:3]
        raise RunFailed(f'flash-io: HDF5 errors in {where}: ' + ' | '.join(
            s.strip() for s in first))
    m = _KERNEL_ERROR.search(stderr)
    if m:
        raise RunFailed(f'flash-io: {where}: {m.group(0).strip()}')
    m = _MPI_ABORT.search(stderr)
    if m:
        raise RunFailed(f'flash-io: {where}: {m.group(0).strip()}')


def _measurements(per_kind: dict[str, dict[str, list[float]]]) -> list[Measurement]:
    out = []
    for kind in KINDS:
        d = per_kind.get(kind)
        if not d or not d.get('time'):
            continue
        if d.get('bw'):
            bws = d['bw']
            out.append(Measurement(kind, 'bw', sum(bws) / len(bws), 'MiB/s', True, list(bws)))
        times = d['time']
        out.append(Measurement(kind, 'time', sum(times) / len(times), 's', False, list(times)))
        if d.get('size'):
            out.append(Measurement(kind, 'size', float(d['size'][-1]), 'B', False))
    return out


def _check_values(source: str, kind: str, size: float | None, time: float) -> None:
    if not time > 0:
        raise RunFailed(f'flash-io: {source}: {kind} file time {time} s is not positive')
    if size is not None and not size > 0:
        raise RunFailed(f'flash-io: {source}: {kind} file has no size ({size} B)')


# ------------------------------------------------------------------ kernel, JSON

def _from_json(path: str, d: dict[str, Any]) -> ParsedRun:
    status = d.get('status')
    if status != 'ok' or d.get('errors', 0):
        raise RunFailed(f'flash-io: {path}: run status {status!r}, {d.get("errors")} error(s)')
    results = d.get('results')
    if not isinstance(results, list) or not results:
        raise RunFailed(f'flash-io: {path}: no results in the JSON summary')
    per_kind: dict[str, dict[str, list[float]]] = {}
    try:
        for r in results:
            kind = r['file']
            if kind not in KINDS:
                raise ParseError(f'flash-io: {path}: unknown file kind {kind!r}')
            size, time = float(r['size_bytes']), float(r['time_s'])
            _check_values(path, kind, size, time)
            k = per_kind.setdefault(kind, {'bw': [], 'time': [], 'size': []})
            k['bw'].append(size / MIB / time)
            k['time'].append(time)
            k['size'].append(size)
        opts = d['options']
        mesh = d.get('mesh', {})
        params = {
            'implementation': 'h5regress',
            'num_ranks': int(d['ranks']),
            'num_nodes': int(d.get('nodes', 1)),
            'api': opts['api'],
            'transfer': opts['transfer'],
            'layout': opts['layout'],
            'chunk_blocks': opts.get('chunk_blocks'),
            'alignment': opts.get('alignment'),
            'alignment_threshold': opts.get('alignment_threshold'),
            'collective_metadata': opts.get('collective_metadata'),
            'blocks_per_rank': opts.get('blocks_per_rank'),
            'nxb': opts['nxb'], 'nyb': opts['nyb'], 'nzb': opts['nzb'],
            'files': ','.join(opts['files']),
            'iterations': opts['iterations'],
            'fsync': opts.get('fsync'),
            'total_blocks': mesh.get('total_blocks'),
        }
    except ParseError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise ParseError(f'flash-io: {path}: malformed JSON summary ({e!r})') from None
    _check_written_as_asked(path, results, opts)
    prov = {k: d[k] for k in ('hdf5_version', 'mpi_library_version', 'started',
                              'finished', 'node_memory_bytes') if k in d}
    if 'version' in d:
        prov.update(tool_version=d['version'], tool_version_source=FROM_OUTPUT)
    if 'command' in d:
        prov['command'] = ' '.join(d['command'])
    if 'io_share' in d:
        prov['io_share'] = d['io_share']
    # what each file should be, for check_files against what is on disk
    prov['files'] = [{'name': PurePosixPath(r.get('name', '')).name, 'kind': r['file'],
                      'size_bytes': int(r['size_bytes']),
                      'data_bytes': int(r.get('data_bytes', 0))} for r in results]
    return _with_flush(ParsedRun(TOOL, params, prov, _measurements(per_kind),
                                 warnings=list(d.get('warnings', []))))


def _check_written_as_asked(path: str, results: list[Mapping[str, Any]],
                            opts: Mapping[str, Any]) -> None:
    """What the kernel wrote against what it was asked: every file kind of ``--files``
    once per iteration, each file at least its data bytes (the kernel's own figure)."""
    iterations = opts.get('iterations')
    for kind in opts.get('files') or []:
        count = sum(1 for r in results if r.get('file') == kind)
        if isinstance(iterations, int) and count != iterations:
            raise RunFailed(f'flash-io: {path}: {count} {kind} file(s) written, '
                            f'{iterations} iteration(s) asked')
    for r in results:
        data = r.get('data_bytes')
        if isinstance(data, int) and data > 0 and int(r['size_bytes']) < data:
            raise RunFailed(f'flash-io: {path}: {r.get("name") or r["file"]} is '
                            f'{r["size_bytes"]} B, less than the {data} B of data it must '
                            f'hold: the data did not all reach the file system')


# ------------------------------------------------------------------ kernel, text

_ROW = re.compile(r'^\s*(\d+)\s+(checkpoint|plotfile|corner)\s+(-?\d+)\s+(\d+)\s+'
                  r'([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+(\S.*)$', re.M)


def _from_kernel_text(path: str, text: str) -> ParsedRun:
    if 'flash-io: finished OK' not in text:
        m = re.search(r'^flash-io: FAILED.*$', text, re.M)
        raise RunFailed(f'flash-io: {path}: ' + (m.group(0) if m else
                                                  'incomplete output (no "finished OK")'))
    per_kind: dict[str, dict[str, list[float]]] = {}
    for m in _ROW.finditer(text):
        kind, size, time = m.group(2), float(m.group(3)), float(m.group(5))
        _check_values(path, kind, size, time)
        k = per_kind.setdefault(kind, {'bw': [], 'time': [], 'size': []})
        k['bw'].append(size / MIB / time)
        k['time'].append(time)
        k['size'].append(size)
    if not per_kind:
        raise RunFailed(f'flash-io: {path}: no per-file results')
    params: dict[str, Any] = {'implementation': 'h5regress'}
    prov: dict[str, Any] = {}
    if m := re.search(r'^flash-io (\S+):', text, re.M):
        prov.update(tool_version=m.group(1), tool_version_source=FROM_OUTPUT)
    if m := re.search(r'^HDF5 library: (\S+)', text, re.M):
        prov['hdf5_version'] = m.group(1)
    if m := re.search(r'^MPI library: (.+)$', text, re.M):
        prov['mpi_library_version'] = m.group(1).strip()
    if m := re.search(r'^ranks: (\d+)\s+nodes: (\d+)', text, re.M):
        params['num_ranks'], params['num_nodes'] = int(m.group(1)), int(m.group(2))
    if m := re.search(r'^api: (\S+)\s+transfer: (\S+)\s+layout: (\S+)', text, re.M):
        params['api'], params['transfer'], params['layout'] = m.groups()
    if m := re.search(r'alignment: (\d+) \(threshold (\d+)\)', text):
        params['alignment'], params['alignment_threshold'] = int(m.group(1)), int(m.group(2))
    if m := re.search(r'^mesh: (\d)-d, (\d+) x (\d+) x (\d+) zones per block.*?(\d+) blocks',
                      text, re.M):
        params['nxb'], params['nyb'], params['nzb'] = (int(m.group(i)) for i in (2, 3, 4))
        params['total_blocks'] = int(m.group(5))
    if m := re.search(r'iterations: (\d+)', text):
        params['iterations'] = int(m.group(1))
    if m := re.search(r'\bfsync: (yes|no)\b', text):
        params['fsync'] = m.group(1) == 'yes'
    warnings = re.findall(r'^WARNING: (.+)$', text, re.M)
    return _with_flush(ParsedRun(TOOL, params, prov, _measurements(per_kind),
                                 warnings=warnings))


def _with_flush(run: ParsedRun) -> ParsedRun:
    """``write_flush`` of every figure (:mod:`h5regress.durability`): with ``--fsync`` each
    rank fsyncs the file before the kernel's clock stops, else the figures end in the
    page cache (the original FLASH-IO never flushes)."""
    status = FSYNC if run.params.get('fsync') else NONE
    run.provenance[WRITE_FLUSH] = flush_map(run.measurements, KINDS, status)
    return run


# ------------------------------------------------------------------ the original

_LS_LINE = re.compile(r'^[-l][rwxsStT-]{9}\S*\s+\d+\s+\S+\s+\S+\s+(\d+)\s+.*?(\S+)\s*$', re.M)


def _looks_like_ls(text: str) -> bool:
    return bool(_LS_LINE.search(text)) and '*** Wrote output' not in text


def _parse_ls(text: str) -> dict[str, int]:
    return {PurePosixPath(m.group(2)).name: int(m.group(1)) for m in _LS_LINE.finditer(text)}


_WROTE = re.compile(r'\*\*\* Wrote output to (\S+) \(\s*(\d+)\s+blocks \) \*\*\*\s*\n'
                    r'\s*time to output =\s*([0-9.EeDd+-]+)')


def _fortran_float(s: str) -> float:
    return float(s.replace('D', 'E').replace('d', 'e'))


def _from_original(path: str, text: str, sizes: dict[str, int]) -> ParsedRun:
    if 'TOTAL time to output' not in text:
        raise RunFailed(f'flash-io: {path}: incomplete run (no "TOTAL time to output" line)')
    params: dict[str, Any] = {'implementation': 'original'}
    prov: dict[str, Any] = {}
    if m := re.search(r'^\s*(\d+)\s+processors', text, re.M):
        params['num_ranks'] = int(m.group(1))
    if m := re.search(r'nxb, nyb, nzb =\s*(\d+)\s+(\d+)\s+(\d+)', text):
        params['nxb'], params['nyb'], params['nzb'] = (int(g) for g in m.groups())
    if m := re.search(r'nguard =\s*(\d+)', text):
        params['nguard'] = int(m.group(1))
    if m := re.search(r'number of blocks =\s*(\d+)', text):
        params['blocks_per_rank'] = int(m.group(1))
    if m := re.search(r'nvar =\s*(\d+)', text):
        params['nvar'] = int(m.group(1))
    if m := re.search(r'^\s*args\s+(\S+)', text, re.M):
        prov['command'] = m.group(1)
        params['program'] = PurePosixPath(m.group(1)).name

    warnings: list[str] = []
    per_kind: dict[str, dict[str, list[float]]] = {}
    nfiles = 0
    for m in _WROTE.finditer(text):
        name, blocks, time = m.group(1), int(m.group(2)), _fortran_float(m.group(3))
        kind = next((k for tag, k in _ORIG_KIND if tag in PurePosixPath(name).name), None)
        if kind is None:
            raise ParseError(f'flash-io: {path}: cannot tell the kind of file {name}')
        params['total_blocks'] = blocks
        size = sizes.get(PurePosixPath(name).name)
        _check_values(path, kind, size, time)
        if size is not None:
            _check_holds_data(path, name, kind, blocks, params, sizes)
        k = per_kind.setdefault(kind, {'bw': [], 'time': [], 'size': []})
        k['time'].append(time)
        if size is not None:
            k['bw'].append(size / MIB / time)
            k['size'].append(size)
        nfiles += 1
    if not nfiles:
        raise RunFailed(f'flash-io: {path}: no "Wrote output" / "time to output" pairs')
    if not sizes:
        warnings.append('no file sizes (an ls -l of the files, files.txt): bandwidth not '
                        'computed, times only')
    else:
        for kind, d in per_kind.items():
            if len(d['size']) != len(d['time']):
                raise ParseError(f'flash-io: {path}: sizes of some {kind} files are missing '
                                 'from the file listing')
    params['iterations'] = len(per_kind.get('checkpoint', {}).get('time', [])) or None
    params['transfer'] = 'unknown'   # the original does not print it (a compile-time choice)
    return _with_flush(ParsedRun(TOOL, params, prov, _measurements(per_kind), warnings=warnings))


def _check_holds_data(path: str, name: str, kind: str, blocks: int,
                      params: Mapping[str, Any], sizes: Mapping[str, int]) -> None:
    """A file smaller than its own unknowns means the writes failed (never a sample).
    ``sizes``: the files listed (``files.txt``), name -> bytes."""
    nxb, nyb, nzb = params.get('nxb', 8), params.get('nyb', 8), params.get('nzb', 8)
    nvar = params.get('nvar', 24)
    if kind == 'checkpoint':
        need = blocks * nxb * nyb * nzb * nvar * 8
    elif kind == 'plotfile':
        need = blocks * nxb * nyb * nzb * 4 * 4
    else:
        k2d, k3d = int(nyb > 1), int(nzb > 1)
        need = blocks * (nxb + 1) * (nyb + k2d) * (nzb + k3d) * 4 * 4
    problems = check_expected([ExpectedFile(
        (PurePosixPath(name).name,), min_size=need,
        out_of_range='flash-io: {path}: {printed} is {size} B, smaller than the {min_size} B of '
                     'data a {kind} of {blocks} blocks holds: the writes failed',
        fields={'path': path, 'printed': name, 'kind': kind, 'blocks': blocks})], sizes)
    if problems:
        raise RunFailed(problems[0])


#: HDF5 metadata a FLASH-IO file may carry beyond its data: headers, tree metadata,
#: object headers; 2 % + 64 KiB bounds it for the default and larger meshes
_OVERHEAD_FRACTION, _OVERHEAD_BYTES = 0.02, 64 * 1024


def check_files(run: ParsedRun, written: Mapping[str, int]) -> list[str]:
    """Problems of the files on disk (``{relative path: bytes}``) against the run's claims.

    Each file the kernel reports must be on disk with the size it reports, and that
    size must hold the file's data: exactly its data bytes through MPI-IO, at most
    2 % + 64 KiB more through HDF5 (never padding). Only the kernel's JSON says
    what to expect; other inputs give no problems here.
    """
    mpiio = run.params.get('api') == 'mpiio'
    expected = []
    for f in run.provenance.get('files', []):
        data = f['data_bytes']
        upper = data if mpiio else data * (1 + _OVERHEAD_FRACTION) + _OVERHEAD_BYTES
        expected.append(ExpectedFile(
            (f['name'],), size=f['size_bytes'], min_size=data, max_size=upper,
            out_of_range='{name}: {size} B, expected {min_size} B of data'
                         + ('' if mpiio else ' up to {upper} B'),
            fields={'upper': int(upper)}))
    return check_expected(expected, written)
