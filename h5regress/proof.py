"""Proof of the work: what a run left in its data directory against what its row asked.

A tool's output says what it did; a tool that prints a plausible summary and exits 0
without writing anything would pass on that alone. So every check declares, from its
row's parameters only (never from what the tool printed), what its run must leave in
the data directory (:class:`Expectation`: file sets by glob, their count and least
sizes; nothing left for tools that remove their files; the directory changed during the
run), the job lists the data directory on the node after the tool (before its trap
removes it), and :func:`check` compares the listing with the expectation. Plain
functions of plain values: the listing's text in, the problems out.

The listing (``h5r-files.txt``) has a line ``<bytes> <path relative to the data
directory>`` per regular file; the change mark (``h5r-data-dir-changed.txt``) holds the
data directory's path when it was modified after the tool started, else nothing.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping

from h5regress.runresults import FILES_LIST

#: the data directory's path when it changed after the tool started (else empty)
CHANGED_MARK = 'h5r-data-dir-changed.txt'


@dataclasses.dataclass(frozen=True)
class FileSet:
    """Files of the run matching ``pattern`` (a glob on the path relative to the data
    directory): ``count`` of them (``None``: at least one), each of at least
    ``min_each`` bytes, together at least ``min_total`` bytes. ``what`` names them in
    the problems (``IOR's shared file``)."""
    what: str
    pattern: str
    count: int | None = None
    min_each: int = 1
    min_total: int = 0


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What a row's run must leave: ``files``; with ``nothing_else`` no other file
    (a tool that removes what it made, like mdtest, must leave nothing); with
    ``changed`` the data directory modified after the tool started (entries made or
    removed in it: the one trace a tool that removes its files leaves)."""
    files: tuple[FileSet, ...] = ()
    nothing_else: bool = False
    changed: bool = False


def parse_listing(text: str) -> dict[str, int]:
    """``{relative path: bytes}`` of a listing (``<bytes> <path>`` per line)."""
    listed = {}
    for line in text.splitlines():
        size, _, name = line.partition(' ')
        if name and size.isdigit():
            listed[name] = int(size)
    return listed


def _file_set_problems(files: FileSet, listed: Mapping[str, int]) -> list[str]:
    found = {name: size for name, size in listed.items()
             if fnmatch.fnmatchcase(name, files.pattern)}
    total = sum(found.values())
    count = 'at least 1' if files.count is None else str(files.count)
    seen = (', '.join(f'{name} {size} B' for name, size in sorted(found.items())[:4]) +
            (f' and {len(found) - 4} more' if len(found) > 4 else '')) or 'none'
    problems = []
    if (files.count is None and not found) or (files.count is not None and
                                                 len(found) != files.count):
        problems.append(f'{files.what} ({files.pattern}): {count} file(s) expected, '
                        f'{len(found)} found ({seen})')
    short = sorted(name for name, size in found.items() if size < files.min_each)
    if short:
        problems.append(f'{files.what}: {", ".join(short[:4])} below the {files.min_each} B '
                        f'each file must hold ({seen})')
    if total < files.min_total:
        problems.append(f'{files.what}: {total} B in all, at least {files.min_total} B '
                        'expected')
    return problems


def check(expectation: Expectation, listing: str | None, changed: str | None = None,
          where: str = 'the data directory') -> list[str]:
    """Problems of a run's listing (``None``: the job wrote none) against
    ``expectation``; ``changed`` is the change mark's text (``None``: none written).
    Empty when the run left what was asked."""
    if listing is None:
        return [f'no listing of {where} ({FILES_LIST}): the job did not list what the '
                'run left']
    listed = parse_listing(listing)
    problems = [p for files in expectation.files for p in _file_set_problems(files, listed)]
    if expectation.nothing_else:
        extra = sorted(name for name in listed
                       if not any(fnmatch.fnmatchcase(name, f.pattern)
                                  for f in expectation.files))
        if extra:
            problems.append(f'{len(extra)} file(s) left that the run should have removed: '
                            f'{", ".join(extra[:4])}')
    if expectation.changed and not (changed or '').strip():
        problems.append(f'{where} was not modified after the tool started '
                        f'({CHANGED_MARK} is {"missing" if changed is None else "empty"}): '
                        'nothing was made or removed in it')
    return problems
