"""What the readers of h5bench's benchmarks share: its units, its configuration files,
which output is which, the failures its stderr shows and the rate nothing can reach."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from h5regress.parsers.base import ParseError, RunFailed, parse_size, to_mib_per_s


TOOL = 'h5bench'


#: Plausibility ceiling for any rate, per rank (MiB/s): 64 GiB/s.
MAX_RATE_PER_RANK = 64 * 1024.0


#: Configuration keys that are paths, not parameters.
_PATH_KEYS = {'csv_file', 'env_metadata_file', 'csv-file', 'hdf5-file'}


def _is_stdout(name: str) -> bool:
    return name in ('stdout', 'stdout.txt') or name.endswith('.out')


def _is_stderr(name: str) -> bool:
    return name in ('stderr', 'stderr.txt') or name.endswith('.err')


def to_bytes(value: float | str, unit: str, source: str = 'h5bench') -> float:
    """h5bench size (``640.000``, ``MB``) -> bytes: the prefixes of its
    ``format_human_readable`` (K, M, G, T) step by 1024, so its "MB" is MiB."""
    size = parse_size(value, unit)
    if size is None:
        raise ParseError(f'{source}: unknown h5bench size unit {unit!r}')
    return float(size)


def to_mib_s(value: float | str, unit: str, source: str = 'h5bench') -> float:
    """h5bench rate (``393.198``, ``MB/s``) -> MiB/s (its "MB" is MiB, as in :func:`to_bytes`)."""
    return to_mib_per_s(value, unit, source=source)


def compute_time_s(text: str) -> float | None:
    """``EMULATED_COMPUTE_TIME_PER_TIMESTEP`` -> seconds, read like h5bench's parse_time.

    ``100 ms`` -> 0.1; no unit means seconds; a unit starting with ``u`` is
    microseconds, ``ms``/``MS`` milliseconds, any other ``m``/``M`` minutes.
    """
    parts = text.split()
    if not parts:
        return None
    try:
        num = int(float(parts[0]))
    except ValueError:
        return None
    unit = parts[1] if len(parts) > 1 else 's'
    if unit in ('ms', 'MS'):
        return num * 1e-3
    first = unit[0].lower()
    scale = {'s': 1.0, 'm': 60.0, 'u': 1e-6}.get(first)
    return None if scale is None else num * scale


def _value(text: str) -> Any:
    text = text.strip()
    if text.upper() in ('YES', 'NO'):
        return text.upper() == 'YES'
    if text.lower() in ('true', 'false'):
        return text.lower() == 'true'
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_cfg(text: str) -> dict[str, Any]:
    """h5bench's key=value configuration -> params (lower-case keys, paths left out)."""
    params: dict[str, Any] = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if '=' not in line:
            continue
        key, val = (s.strip() for s in line.split('=', 1))
        key = key.lower()
        if key in _PATH_KEYS:
            continue
        if key == 'emulated_compute_time_per_timestep':
            params[key] = val
            params[key + '_s'] = compute_time_s(val)
        else:
            params[key] = _value(val)
    return params


def parse_ini(text: str) -> dict[str, Any]:
    """The metadata benchmark's ``hdf5_iotest.ini`` ([DEFAULT] key = value) -> params."""
    params: dict[str, Any] = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].split(';', 1)[0].strip()
        if '=' not in line or line.startswith('['):
            continue
        key, val = (s.strip() for s in line.split('=', 1))
        if key.lower() not in _PATH_KEYS:
            params[key.lower().replace('-', '_')] = _value(val)
    return params


def _ranks_of_command(command: str) -> int | None:
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    for i, tok in enumerate(tokens[:-1]):
        if tok in ('-np', '-n', '--np', '-N') and tokens[i + 1].isdigit():
            return int(tokens[i + 1])
        m = re.fullmatch(r'--ntasks=(\d+)', tok)
        if m:
            return int(m.group(1))
    return None


_STDERR_FAILS = (
    (re.compile(r'Error detected in HDF5'), 'HDF5 error stack'),
    (re.compile(r'MPI_ABORT was invoked|exiting improperly|exited on signal|'
                r'Process received signal|Segmentation fault|Aborted \(core dumped\)'),
     'MPI abort or crash'),
)


def _stderr_problem(text: str, where: str) -> str | None:
    for regex, what in _STDERR_FAILS:
        if regex.search(text):
            detail = re.search(r'#000: .*? in (\w+\(\)): (.*)', text)
            first = f' ({detail.group(1)}: {detail.group(2).strip()})' if detail else ''
            if what != 'HDF5 error stack':
                line = next(ln for ln in text.splitlines() if regex.search(ln))
                first = f' ({line.strip()[:160]})'
            return f'{where}: {what}{first}'
    return None


def _check_rate(name: str, mib_s: float, ranks: int | None, ceiling: float, where: str) -> None:
    if ranks and mib_s / ranks > ceiling:
        raise RunFailed(f'{where}: {name} {mib_s:.6g} MiB/s is {mib_s / ranks:.6g} MiB/s per rank, '
                        f'above the plausibility ceiling of {ceiling:.6g} MiB/s per rank: '
                        'the data cannot have been moved (failed I/O timed as instant)')


#: the warning of a benchmark that reads back, in one execution, what it has just written
SAME_EXECUTION_READ = ('read figures are cached: {what} reads back what it has just written, '
                       'in the same execution (no page-cache drop between them)')


def _pick(group: Mapping[str, str], pred) -> tuple[str, str] | None:
    names = sorted(n for n in group if pred(n))
    return (names[0], group[names[0]]) if names else None
