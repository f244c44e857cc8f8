"""Parsers of benchmark outputs: pure functions, text in, :class:`ParsedRun` out.

Each tool module exposes

- ``parse(files: Mapping[str, str]) -> list[ParsedRun]``: ``files`` maps a
  path (relative to what the user named) to its text; one mapping is one run
  directory or one file;
- ``wanted(relpath: str) -> bool``: which files of a directory it reads.

:func:`parser_for` is the registry the CLI and the checks use; which module reads
which tool is declared once, in :mod:`h5regress.catalog`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from h5regress import catalog
from h5regress.parsers.base import Measurement, ParsedRun, ParseError, RunFailed  # noqa: F401

#: tool name -> module under h5regress.parsers, from the benchmark declarations
_MODULES = {b.tool: b.parser_module for b in catalog.BENCHMARKS.values()}


def tools() -> list[str]:
    return sorted(t for t in _MODULES if _available(t))


def _available(tool: str) -> bool:
    try:
        parser_for(tool)
    except ImportError:
        return False
    return True


def parser_for(tool: str) -> ModuleType:
    try:
        name = _MODULES[tool]
    except KeyError:
        raise ParseError(f'no parser for tool {tool!r}; known: {", ".join(sorted(_MODULES))}') \
            from None
    return importlib.import_module(f'h5regress.parsers.{name}')
