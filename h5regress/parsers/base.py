"""What every parser returns, and how a parsed run becomes records.

Parsers are pure functions: text in (one text, or a mapping of file name to
text for tools that leave several files), :class:`ParsedRun` objects out. They
never touch the file system, so the ReFrame checks and ``h5regress parse``
share them unchanged.

A parser raises :class:`RunFailed` when the output shows a failed or
incomplete run (error lines, a truncated summary, an absurd rate, less data
moved than asked), and :class:`ParseError` when the text is not what it claims
to be. Both name the source and the problem.

Each tool module may also expose ``error_line(files) -> str | None``: the first
line of any text (a job's stdout and stderr, whatever the tool's exit code)
that shows the run failed. The checks read the job's streams with it even
where the results come from a summary file; tools without their own use
:func:`error_line` here (:data:`SYSTEM_ERRORS`).

The helpers every parser shares live here too: one size parser
(:func:`parse_size`), one bandwidth converter (:func:`to_mib_per_s`), one check
of the files a run left against what its output says (:func:`check_files`
with :class:`ExpectedFile`), file names (:func:`basename`,
:func:`by_directory`).
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
import json
import math
import os
import posixpath
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from h5regress import buildid
from h5regress.record import Record, comparable_config, config_hash

MIB = 1024 * 1024

#: A size: a number, then an optional prefix K M G T P (any case), ``i``, ``B``/``b``.
_SIZE = re.compile(r'\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([kmgtp]?)(i?)b?\s*', re.I)
_POWERS = {'': 0, 'k': 1, 'm': 2, 'g': 3, 't': 4, 'p': 5}


#: Errors of the operating system that a tool, or the MPI library under it, may only
#: print and then exit 0 (Open MPI's OMPIO on a full file system): such a line in any
#: output of any tool means the data did not all reach the file system.
SYSTEM_ERRORS: list[tuple[re.Pattern, str]] = [
    (re.compile(r'No space left on device'), 'the file system is full (ENOSPC)'),
    (re.compile(r'Disk quota exceeded'), 'the quota is exceeded (EDQUOT)'),
    (re.compile(r'Input/output error'), 'an I/O error (EIO)'),
    (re.compile(r'Read-only file system'), 'the file system is read-only (EROFS)'),
    (re.compile(r'Stale file handle'), 'a stale file handle (ESTALE)'),
    (re.compile(r'File too large'), 'a file beyond the size limit (EFBIG)'),
]


class ParseError(ValueError):
    """The text is not a readable output of the tool (names source and problem)."""


class RunFailed(ParseError):
    """The output shows a failed or incomplete run: never a performance sample."""


@dataclasses.dataclass
class Measurement:
    operation: str
    metric: str
    value: float
    unit: str
    higher_is_better: bool
    samples: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ParsedRun:
    """One execution of a tool as its output describes it."""
    tool: str
    #: parameters the output states (defaults included where the tool prints them)
    params: dict[str, Any]
    #: version, command line, start/finish time, ... as the output states them
    provenance: dict[str, Any]
    measurements: list[Measurement]
    #: things that do not fail the run but qualify its numbers
    warnings: list[str] = dataclasses.field(default_factory=list)

    def measurement(self, operation: str, metric: str) -> Measurement:
        for m in self.measurements:
            if m.operation == operation and m.metric == metric:
                return m
        raise KeyError(f'{self.tool}: no {operation} {metric} in this run')

    def to_records(self, *, hdf5_build: str = buildid.NO_BUILD, run_id: str | None = None,
                   timestamp: str | None = None, comparable: Mapping[str, Any] | None = None,
                   params: Mapping[str, Any] | None = None,
                   provenance: Mapping[str, Any] | None = None,
                   test: str = '', system: str = '', pair_id: str | None = None,
                   result: str = 'pass') -> list[Record]:
        """Records of this run; ``params``/``provenance`` extend what the output said.

        ``comparable`` is what the config hash is taken over; by default the
        run's parameters (outside ReFrame that is all we know).
        """
        all_params = {**self.params, **(params or {})}
        prov = {**self.provenance, **(provenance or {})}
        if self.warnings:
            prov['warnings'] = list(prov.get('warnings', [])) + self.warnings
        if comparable is None:
            comparable = comparable_config(tool=self.tool, params=all_params,
                                           num_ranks=all_params.get('num_ranks'))
        chash = config_hash(comparable)
        run_id = run_id or uuid.uuid4().hex[:12]
        timestamp = timestamp or prov.get('finished') or utcnow()
        return [Record(tool=self.tool, operation=m.operation, metric=m.metric,
                       value=m.value, unit=m.unit, higher_is_better=m.higher_is_better,
                       params=all_params, provenance=prov, hdf5_build=hdf5_build,
                       config_hash=chash, run_id=run_id, timestamp=timestamp, test=test,
                       system=system, pair_id=pair_id, samples=list(m.samples),
                       result=result)
                for m in self.measurements]


def parse_size(text: Any, unit: str = '', *, decimal: bool = False,
               whole: bool = False) -> int | float | None:
    """Bytes of a size, or None when it is not one; the one size parser of h5regress.

    ``text`` holds the number and its unit (``4096``, ``1m``, ``64M``, ``1 MiB``,
    ``10KiB``, ``2.5g``, ``10B``), or ``unit`` comes apart (``'37.9303', 'Mi'``;
    ``'640.000', 'MB'``). Units: ``B``/``b`` or nothing (bytes), a prefix ``K M G
    T P`` in any case, with ``i`` and ``B`` or ``b`` optional. The prefix steps by
    1024, the meaning IOR, fio, h5bench and MACSio give it by default; with
    ``decimal`` a prefix without ``i`` steps by 1000 (MACSio's ``Kb``/``Mb`` and
    ``--units_prefix_system decimal``), ``Ki``/``Mi`` staying 1024. ``whole``
    refuses a fraction (IOR and fio read an integer before the suffix). An int
    when the number is whole, else a float.
    """
    m = _SIZE.fullmatch(f'{text} {unit}' if unit else str(text))
    if not m:
        return None
    number, prefix, binary = m.groups()
    if whole and not number.isdigit():
        return None
    scale = (1000 if decimal and not binary else 1024) ** _POWERS[prefix.lower()]
    return int(number) * scale if number.isdigit() else float(number) * scale


def to_mib_per_s(value: float | str, unit: str, *, decimal: bool = False,
                 source: str = '') -> float:
    """A bandwidth in MiB/s; ``unit`` is a size unit of :func:`parse_size` per second
    (``B/s``, ``KiB/s``, ``MiB/s``, h5bench's ``MB/s``, MACSio's ``Gi/s``), with the
    same meaning of its prefix (``decimal``). The one bandwidth converter."""
    size_unit, per = unit.strip()[:-2], unit.strip()[-2:]
    scale = parse_size(1, size_unit, decimal=decimal) if per == '/s' else None
    if scale is None:
        raise ParseError(f'{source + ": " if source else ""}unknown bandwidth unit {unit!r}')
    return float(value) * scale / MIB


def is_stderr_name(name: str) -> bool:
    """``stderr*`` and ``*.err`` files: the launcher's and the MPI library's words."""
    base = basename(name)
    return base.startswith('stderr') or base.endswith('.err')


def find_error_line(files: Mapping[str, str],
                    patterns: Iterable[tuple[re.Pattern, str]]) -> str | None:
    """First line of ``files`` matching one of ``patterns``, as ``"name:line: meaning:
    text"``; stdout and logs before stderr (the tool's own words explain more than the
    launcher's)."""
    patterns = list(patterns)
    for name, text in sorted(files.items(), key=lambda item: (is_stderr_name(item[0]),
                                                               item[0])):
        for lineno, line in enumerate(text.splitlines(), 1):
            for pattern, meaning in patterns:
                if pattern.search(line):
                    return f'{name}:{lineno}: {meaning}: {line.strip()[:300]}'
    return None


def error_line(files: Mapping[str, str]) -> str | None:
    """The first :data:`SYSTEM_ERRORS` line of ``files``: the default ``error_line`` of
    a tool module."""
    return find_error_line(files, SYSTEM_ERRORS)


def errno_text(code: Any) -> str:
    """``No space left on device (errno 28)`` for 28; ``error <code>`` when it is not an
    errno."""
    if isinstance(code, int) and code in errno.errorcode:
        return f'{os.strerror(code)} (errno {code})'
    return f'error {code}'


def utcnow() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


def basename(relpath: str) -> str:
    """The file name of a relative path (``/`` or ``\\`` separated)."""
    return posixpath.basename(relpath.replace('\\', '/'))


def by_directory(files: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``files`` (relative path -> text) by directory, then by file name."""
    groups: dict[str, dict[str, str]] = {}
    for rel, text in files.items():
        rel = rel.replace('\\', '/')
        groups.setdefault(posixpath.dirname(rel), {})[basename(rel)] = text
    return groups


# --------------------------------------------------------------------------- files on disk

@dataclasses.dataclass
class ExpectedFile:
    """What a tool's output says about a file it left (or a few whose sizes add up).

    ``names`` are file names (no directory); the sizes of those on disk add up,
    as a MACSio data file and the root file its ranks stat together. The total
    must be ``size`` when given, and within ``min_size`` .. ``max_size``. The
    problem texts are ``str.format`` templates with the fields ``name`` (the
    first of ``names``), ``size`` (the total on disk), ``expected``,
    ``min_size``, ``max_size`` and those of ``fields``. With ``missing`` None a
    file not on disk is no problem here (the tool counts its files itself).
    """
    names: tuple[str, ...]
    size: int | None = None
    min_size: float = 0
    max_size: float = math.inf
    missing: str | None = '{name}: reported but not on disk'
    wrong_size: str = '{name}: {size} B on disk, {expected} B reported'
    out_of_range: str = '{name}: {size} B, expected {min_size} to {max_size} B'
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def kernel_summary(tool: str, path: str, text: str) -> dict[str, Any] | None:
    """The JSON summary one of this project's kernels wrote (``--json``), or None when
    ``text`` is not one; RunFailed when it is one, cut short or malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if f'"{tool}"' in text:
            raise RunFailed(f'{tool}: {path}: truncated or invalid JSON summary ({e})') from None
        return None
    if not isinstance(data, dict) or data.get('tool') != tool:
        return None
    return data


def check_files(expected: Iterable[ExpectedFile], written: Mapping[str, int]) -> list[str]:
    """Problems of the files a run left against what its output says; empty when none.

    ``written`` maps the files in the run's data directory (relative paths; only
    the file name counts) to their sizes in bytes, as listed after the run. The
    one file check: each tool's parser turns its output into the expectations.
    """
    on_disk = {basename(name): int(size) for name, size in written.items()}
    problems = []
    for exp in expected:
        absent = [name for name in exp.names if name not in on_disk]
        if absent:
            if exp.missing is not None:
                problems.append(exp.missing.format(**{**exp.fields, 'name': absent[0]}))
            continue
        total = sum(on_disk[name] for name in exp.names)
        values = {**exp.fields, 'name': exp.names[0] if exp.names else '', 'size': total,
                  'expected': exp.size, 'min_size': exp.min_size, 'max_size': exp.max_size}
        if exp.size is not None and total != exp.size:
            problems.append(exp.wrong_size.format(**values))
        if not exp.min_size <= total <= exp.max_size:
            problems.append(exp.out_of_range.format(**values))
    return problems
