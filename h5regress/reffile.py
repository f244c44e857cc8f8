"""ReFrame external reference files: their format, how a record finds its entry.

The format and the mapping of a record onto a file are described in
:mod:`h5regress.refs`, which derives, writes and checks the files; this module reads
them (:func:`load_file`, validating as it goes) and looks entries up
(:class:`References`), for the gate as for ``h5regress refs``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reframe.utility import ScopedDict

from h5regress import catalog, yamlfile


class RefsError(ValueError):
    """A reference file is malformed; the message names the file and the key."""


_VARIANT = re.compile(r'_[0-9a-f]{8}$')


# ------------------------------------------------------------------ naming
def test_class(test: str, provenance: Mapping[str, Any] | None = None,
               params: Mapping[str, Any] | None = None) -> str:
    for src in (provenance or {}, params or {}):
        if src.get('test_class'):
            return str(src['test_class'])
    word = (test or '').split()[0] if (test or '').split() else ''
    return _VARIANT.sub('', word)


def perf_var(operation: str, metric: str, provenance: Mapping[str, Any] | None = None) -> str:
    if provenance and provenance.get('perf_var'):
        return str(provenance['perf_var'])
    return f'{operation}_{metric}'


def index_value(attr: str, system: str, params: Mapping[str, Any]) -> Any:
    """Value of one ``$index`` attribute for a record; KeyError when unknown."""
    if attr == '$partition':
        if not system:
            raise KeyError(attr)
        return system
    if attr == '$system':
        if not system:
            raise KeyError(attr)
        return system.split(':')[0]
    if attr == '$environ':
        for k in ('environ', 'prgenv'):
            if k in params:
                return params[k]
        raise KeyError(attr)
    if attr.startswith('$'):
        raise KeyError(attr)
    if attr in params:
        return params[attr]
    if attr == 'case':
        # the checks' reference row when the record does not carry it: the parameters
        # a benchmark declares for it (h5regress.catalog: ior `api-preset-layout`, fio `mode`)
        for bench in catalog.BENCHMARKS.values():
            if bench.case_params and all(k in params for k in bench.case_params):
                return '-'.join(str(params[k]) for k in bench.case_params)
    raise KeyError(attr)


# ------------------------------------------------------------------ reading
def _keypath(path: Sequence[Any]) -> str:
    return '.'.join(str(p) for p in path)


def _check_tuple(fname: str, path: list, val: Any) -> None:
    where = f'{fname}: key {_keypath(path)!r}'
    if isinstance(val, list) and val and val[0] == '$xfail':
        if len(val) != 3 or not isinstance(val[2], list):
            raise RefsError(f"{where}: an expected failure is ['$xfail', message, "
                            f'[ref, lower, upper, unit]], got {val!r}')
        _check_tuple(fname, path, val[2])
        return
    if not isinstance(val, list) or len(val) not in (3, 4):
        raise RefsError(f'{where}: a reference is [ref, lower, upper, unit], got {val!r}')
    ref, lo, hi = val[:3]
    for name, x in (('ref', ref), ('lower', lo), ('upper', hi)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise RefsError(f'{where}: {name} is not a number: {x!r}')
        if x is not None and not math.isfinite(x):
            raise RefsError(f'{where}: {name} is not a finite number: {x!r} (an unbounded '
                            f'threshold is null)')
    if ref is not None and ref < 0:
        raise RefsError(f'{where}: reference {ref!r} is negative (performance values are '
                        f'not)')
    if lo is not None and not -1 <= lo <= 0:
        raise RefsError(f'{where}: lower threshold {lo!r} not in [-1, 0]')
    if hi is not None and hi < 0:
        raise RefsError(f'{where}: upper threshold {hi!r} is negative')
    if len(val) == 4 and val[3] is not None and not isinstance(val[3], str):
        raise RefsError(f'{where}: unit is not a string: {val[3]!r}')


def validate(data: Any, fname: str) -> dict:
    """Check a loaded references mapping; raise :class:`RefsError` naming the key."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RefsError(f'{fname}: top level must be a mapping of test class names, '
                        f'got {type(data).__name__}')
    for cls, body in data.items():
        if not isinstance(body, dict):
            raise RefsError(f'{fname}: key {cls!r}: must be a mapping, got {body!r}')
        index = body.get('$index')
        if index is not None and (not isinstance(index, list) or not index
                                  or not all(isinstance(i, str) for i in index)):
            raise RefsError(f'{fname}: key {cls}.$index: must be a list of attribute '
                            f'names, got {index!r}')
        depth = len(index) if index else 1

        def walk(node: Any, path: list, level: int) -> None:
            if level == depth:
                if not isinstance(node, dict):
                    raise RefsError(f'{fname}: key {_keypath(path)!r}: must map performance '
                                    f'variables to references, got {node!r}')
                for var, val in node.items():
                    _check_tuple(fname, path + [var], val)
                return
            if not isinstance(node, dict):
                raise RefsError(f'{fname}: key {_keypath(path)!r}: expected a mapping for '
                                f'index level {level + 1}, got {node!r}')
            for k, v in node.items():
                walk(v, path + [k], level + 1)

        for k, v in body.items():
            if k == '$index':
                continue
            walk(v, [cls, k], 1)
    return data


def load_file(path: str | os.PathLike) -> dict:
    return validate(yamlfile.load(path, RefsError), str(path))


def reference_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    out = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(p.glob('*.yaml')) + sorted(p.glob('*.yml')))
        elif p.exists():
            out.append(p)
    return out


class References:
    """All reference files, merged (class names are unique across files)."""

    def __init__(self, data: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.data: dict[str, Any] = dict(data or {})

    @classmethod
    def load(cls, paths: Iterable[str | os.PathLike]) -> 'References':
        merged: dict[str, Any] = {}
        for f in reference_files(paths):
            merged.update(load_file(f))
        return cls(merged)

    def lookup(self, klass: str, var: str, system: str,
               params: Mapping[str, Any]) -> tuple[float, float | None, float | None, str | None] | None:
        """The reference tuple ReFrame would use, or None (xfail entries unwrap)."""
        body = self.data.get(klass)
        if not isinstance(body, Mapping):
            return None
        index = body.get('$index')
        node: Any = {k: v for k, v in body.items() if k != '$index'}
        try:
            if index:
                for attr in index:
                    node = _match_key(node, index_value(attr, system, params))
                val = node[var]
            else:
                # ReFrame's own scope lookup: system:partition, system, then '*'
                val = ScopedDict(node)[f'{system}:{var}']
        except (KeyError, TypeError):
            return None
        if isinstance(val, list) and val and val[0] == '$xfail':
            val = val[2]
        unit = val[3] if len(val) > 3 else None
        return (val[0], val[1], val[2], unit)


def _match_key(node: Mapping[Any, Any], key: Any) -> Any:
    if key in node:
        return node[key]
    for k in node:   # YAML may say 1 where params say '1', or the reverse
        if str(k) == str(key):
            return node[k]
    if isinstance(key, str):
        for k in node:
            if isinstance(k, str):
                try:
                    if re.fullmatch(k, key):
                        return node[k]
                except re.error:
                    continue
    raise KeyError(key)


def bounds(ref: tuple) -> tuple[float, float]:
    """Absolute [low, high] of a reference tuple (None threshold: unbounded)."""
    value, lo, hi = ref[0], ref[1], ref[2]
    low = -math.inf if lo is None else (value + abs(value) * lo if value else lo)
    high = math.inf if hi is None else (value + abs(value) * hi if value else hi)
    return low, high
