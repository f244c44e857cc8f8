"""IOR's figures and options as the parsers of its outputs (JSON, CSV, text) all read
them: measurements, their spans and checks, the command line's parameters."""

from __future__ import annotations

import datetime
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any

from h5regress.durability import DIRECT, FSYNC, NONE, flush_map
from h5regress.parsers.base import (MIB, Measurement, ParsedRun, ParseError, RunFailed,
                                    parse_size, to_mib_per_s)

TOOL = 'ior'


def parse_ior_time(text: str | None) -> str | None:
    """IOR's ``ctime`` style ``Sat Nov 21 19:48:41 2026`` -> ISO 8601 (machine local
    time: IOR does not say which zone)."""
    if not text:
        return None
    try:
        return datetime.datetime.strptime(text.strip(), '%a %b %d %H:%M:%S %Y').isoformat()
    except ValueError:
        return text.strip()


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
