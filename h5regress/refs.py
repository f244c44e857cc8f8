"""Reference envelopes: read, apply, derive from history, write.

File format: ReFrame 4.10 external references, one file per tool under
``reframe/config/references/``, the one each tool declares
(:mod:`h5regress.catalog`: ``flash-io`` reads ``flashio.yaml``); the checks'
base sets ``reference = {'$ref': ...}`` from it and :class:`ReferenceFiles`
names files from it, so ``h5regress refs`` writes the file the checks read::

    IorCheck:                      # test class name
      $index: [$partition, api]    # optional; without it the level is system:partition
      'local:default':
        HDF5:
          write_bw_mean: [812.0, -0.35, 0.42, MiB/s]    # [ref, lower, upper, unit]
          read_bw_mean: ['$xfail', 'known issue', [1200, -0.3, 0.3, MiB/s]]

``lower``/``upper`` are fractions of ``ref`` (ReFrame: lower in [-1, 0],
upper >= 0). Index keys that are strings match as anchored regular
expressions when no key is equal (as ReFrame does); without ``$index`` the
keys are scopes tried in the order ``system:partition``, ``system``, ``*``.

How a record maps onto the file (contract with the perflog reader):

* class: ``provenance['test_class']``, else the first word of ``test`` with
  ReFrame's variant suffix (``_<8 hex>``) removed;
* file: the one the record's tool declares (:mod:`h5regress.catalog`, which the
  checks read too), else ``<tool>.yaml`` (a tool nothing declares);
* performance variable: ``provenance['perf_var']``, else
  ``<operation>_<metric>``;
* index values: ``$partition`` -> ``system``; ``$system`` -> its first part;
  ``$environ`` -> ``params['environ']``; any other name -> ``params[name]``
  (record parameters are named like the test's attributes); ``case`` when
  absent is rebuilt from the parameters the tool declares for it
  (:mod:`h5regress.catalog`: IOR ``api-preset-layout``, fio ``mode``).

Validation (``h5regress refs --check``, exit 4 naming the file, the key and the
value): references finite and not negative, thresholds in range (also when any
reader loads a file); every class a check that declares performance variables,
every variable one it declares, every unit the one it reports them in
(:class:`CheckVariables`, read from the checks with ``ast``), every
system or system:partition key (or pattern) one of the ReFrame configuration
(``$RFM_CONFIG_FILES``, else ``reframe/config/settings.py``).

Derivation (:func:`derive`): for every (class, index path, variable) the
samples of the last ``window`` nights of history, degraded nights and
FAILed candidate samples excluded; ref = median, lower/upper = the
``lo``/``hi`` percentiles relative to it, widened by ``slack`` and rounded
outward to two decimals; ref rounded to three significant digits. Entries
with no history are kept as they are; ``$xfail`` entries are never touched.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import re
import runpy
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from h5regress import atomic, catalog, yamlfile
from h5regress import history as hist_mod
from h5regress import stats
from h5regress.cmdline import EXIT_ERROR, GATE_CONFIG_HELP, ArgParser, parse_args
from h5regress.gateconfig import (CHECKS_DIR, REFERENCES_DIR, SETTINGS_FILE, ConfigError,
                                  load_config)


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
            else:
                node = _match_scope(node, system)
            val = node[var]
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


def _match_scope(node: Mapping[str, Any], system: str) -> Any:
    for scope in (system, system.split(':')[0], '*'):
        if scope and scope in node:
            return node[scope]
    raise KeyError(system)


def bounds(ref: tuple) -> tuple[float, float]:
    """Absolute [low, high] of a reference tuple (None threshold: unbounded)."""
    value, lo, hi = ref[0], ref[1], ref[2]
    low = -math.inf if lo is None else (value + abs(value) * lo if value else lo)
    high = math.inf if hi is None else (value + abs(value) * hi if value else hi)
    return low, high


# ------------------------------------------------------------------ which file
@dataclasses.dataclass
class ReferenceFiles:
    """The reference file each check reads: its tool's, as the benchmark declarations
    say (:mod:`h5regress.catalog`; the checks' base sets ``reference`` from it).

    ``by_tool`` maps each declared tool to its file; ``by_class`` maps a check class
    to its tool's file (the class's ``tool``, its own or inherited within its file),
    or to the file its own ``reference = {'$ref': ...}`` names. The checks are read
    with ``ast``: nothing is imported (the checks need ReFrame).
    """
    by_class: dict[str, str]
    by_tool: dict[str, str]

    def name(self, klass: str, tool: str) -> str:
        """File name for a class: its check's, else its tool's checks', else ``<tool>.yaml``
        (a tool no check runs: the gate still reads every file of the directory)."""
        return self.by_class.get(klass) or self.by_tool.get(tool) or f'{tool}.yaml'

    @classmethod
    def from_checks(cls, checks_dir: str | os.PathLike = CHECKS_DIR) -> 'ReferenceFiles':
        by_tool = {b.tool: b.reference_file for b in catalog.BENCHMARKS.values()}
        by_class: dict[str, str] = {}
        for path in sorted(Path(checks_dir).glob('*.py')):
            for klass, (tool, ref) in _check_classes(path.read_text(encoding='utf-8')).items():
                if ref or tool in by_tool:
                    by_class[klass] = ref or by_tool[tool]
        return cls(by_class, by_tool)


def _check_classes(source: str) -> dict[str, tuple[str | None, str | None]]:
    """Class name -> (``tool``, file name of ``reference['$ref']``), inherited in the file."""
    own: dict[str, dict[str, str]] = {}
    bases: dict[str, list[str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
        attrs = own[node.name] = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            if name == 'tool' and isinstance(value, ast.Constant) and isinstance(value.value, str):
                attrs['tool'] = value.value
            elif name == 'reference' and isinstance(value, ast.Dict):
                for k, v in zip(value.keys, value.values):
                    if isinstance(k, ast.Constant) and k.value == '$ref' \
                            and isinstance(v, ast.Constant) and isinstance(v.value, str):
                        attrs['reference'] = PurePosixPath(v.value).name

    def inherited(klass: str, attr: str, seen: frozenset = frozenset()) -> str | None:
        if attr in own.get(klass, {}):
            return own[klass][attr]
        for base in bases.get(klass, ()):
            if base not in seen:
                found = inherited(base, attr, seen | {klass})
                if found:
                    return found
        return None

    return {k: (inherited(k, 'tool'), inherited(k, 'reference')) for k in own}


# ------------------------------------------------------------------ what the checks declare
#: a formatted part of a performance variable's name that cannot be known statically
_ANY_PART = r'[A-Za-z0-9_.+-]+'


@dataclasses.dataclass
class CheckVariables:
    """The performance variables each check class declares, and their units.

    Read from ``reframe/checks`` with ``ast`` (nothing is imported): every
    ``{name: (operation, metric, unit)}`` table in a class's methods (what
    ``set_perf_variables`` takes), inherited within its file. Names are built
    with f-strings over constants, class attributes and loops; what cannot be
    known statically (a parameter) matches any word. ``by_class`` maps a class
    to ``[(name regex, unit or None), ...]``; a class without any table is not
    a check with performance variables.
    """
    by_class: dict[str, list[tuple[str, str | None]]]

    @classmethod
    def from_checks(cls, checks_dir: str | os.PathLike = CHECKS_DIR) -> 'CheckVariables':
        by_class: dict[str, list[tuple[str, str | None]]] = {}
        for path in sorted(Path(checks_dir).glob('*.py')):
            by_class.update(_declared_variables(path.read_text(encoding='utf-8')))
        return cls({k: v for k, v in by_class.items() if v})

    def units(self, klass: str, var: str) -> set[str | None] | None:
        """Units ``klass`` reports ``var`` in (None: unit unknown), or None when it
        does not declare ``var``."""
        found = {unit for pattern, unit in self.by_class.get(klass, ())
                 if re.fullmatch(pattern, var)}
        return found or None

    def problems(self, data: Mapping[str, Any], fname: str) -> list[str]:
        """What a (well formed) reference mapping says that no check declares."""
        out = []
        for klass, path, var, val in _entries(data):
            where = f'{fname}: key {_keypath(path + [var])!r}'
            if klass not in self.by_class:
                out.append(f'{fname}: key {klass!r}: no check of that name declares '
                           f'performance variables (checks: {", ".join(sorted(self.by_class))})')
                continue
            units = self.units(klass, var)
            tup = val[2] if val and val[0] == '$xfail' else val
            unit = tup[3] if len(tup) > 3 else None
            if units is None:
                out.append(f'{where}: {klass} has no performance variable {var!r}')
            elif unit is not None and None not in units and unit not in units:
                out.append(f'{where}: unit {unit!r}, but {klass} reports {var} in '
                           f'{" or ".join(sorted(map(str, units)))}')
        return list(dict.fromkeys(out))


def _entries(data: Mapping[str, Any]) -> Iterable[tuple[str, list, str, list]]:
    """(class, key path, variable, reference) of every entry of a valid mapping."""
    for klass, body in (data or {}).items():
        depth = len(body.get('$index') or ()) or 1
        stack = [([klass, k], v, 1) for k, v in body.items() if k != '$index']
        while stack:
            path, node, level = stack.pop(0)
            if level == depth:
                yield from ((klass, path, var, val) for var, val in node.items())
            else:
                stack += [(path + [k], v, level + 1) for k, v in node.items()]


def _declared_variables(source: str) -> dict[str, list[tuple[str, str | None]]]:
    """Class -> [(name regex, unit)] of one checks file, inherited within it."""
    tree = ast.parse(source)
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def mro(name: str, seen: tuple = ()) -> list[ast.ClassDef]:
        node = classes.get(name)
        if node is None or name in seen:
            return []
        out = [node]
        for base in node.bases:
            if isinstance(base, ast.Name):
                out += [c for c in mro(base.id, seen + (name,)) if c not in out]
        return out

    out = {}
    for name in classes:
        chain = mro(name)
        attrs: dict[str, Any] = {}
        for klass in reversed(chain):          # the class's own attributes win
            attrs.update(_literal_attrs(klass))
        ev = _Eval(consts, attrs)
        out[name] = list(dict.fromkeys(v for klass in chain for v in ev.tables(klass)))
    return out


def _literal_attrs(klass: ast.ClassDef) -> dict[str, Any]:
    attrs = {}
    for stmt in klass.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    try:
                        attrs[target.id] = ast.literal_eval(stmt.value)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        pass
    return attrs


class _Eval:
    """Just enough evaluation of a check's methods to name its performance variables:
    possible values of an expression (a list), or None when they cannot be known."""

    def __init__(self, consts: Mapping[str, Any], attrs: Mapping[str, Any]) -> None:
        self.consts, self.attrs = consts, attrs
        self.local: dict[str, ast.expr] = {}
        self.depth = 0

    def tables(self, klass: ast.ClassDef) -> list[tuple[str, str | None]]:
        out = []
        for fn in klass.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            self.local = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                          for t in n.targets if isinstance(t, ast.Name)}
            for node in ast.walk(fn):
                if isinstance(node, ast.Dict) and node.values and all(map(_is_row, node.values)):
                    out += [(self.pattern(k, {}), u) for k, v in zip(node.keys, node.values)
                            if k is not None for u in self.units(v, {})]
                elif isinstance(node, ast.DictComp) and _is_row(node.value):
                    for env in self.bindings(node.generators, {}):
                        out += [(self.pattern(node.key, env), u)
                                for u in self.units(node.value, env)]
        return out

    def units(self, row: ast.Tuple, env: dict) -> list[str | None]:
        got = self.values(row.elts[2], env)
        return [u if isinstance(u, str) else None for u in got] if got else [None]

    def bindings(self, gens: Sequence[ast.comprehension], env: dict) -> list[dict]:
        if not gens:
            return [env]
        gen, out = gens[0], []
        elems = self.elements(gen.iter, env)
        for elem in (elems if elems is not None else [_UNKNOWN]):
            bound = dict(env)
            _bind(gen.target, elem, bound)
            out += self.bindings(gens[1:], bound)
        return out

    def values(self, expr: ast.expr, env: dict) -> list | None:
        self.depth += 1
        try:
            return None if self.depth > 20 else self._values(expr, env)
        finally:
            self.depth -= 1

    def _values(self, expr: ast.expr, env: dict) -> list | None:
        if isinstance(expr, ast.Constant):
            return [expr.value]
        if isinstance(expr, ast.Name):
            if expr.id in env:
                return None if env[expr.id] is _UNKNOWN else [env[expr.id]]
            if expr.id in self.local:
                return self.values(self.local[expr.id], {})
            return [self.consts[expr.id]] if expr.id in self.consts else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) \
                and expr.value.id == 'self' and expr.attr in self.attrs:
            return [self.attrs[expr.attr]]
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) \
                and isinstance(self.consts.get(expr.value.id), dict):
            return list(self.consts[expr.value.id].values())
        if isinstance(expr, ast.Tuple):
            parts = [self.values(e, env) for e in expr.elts]
            if any(p is None or len(p) != 1 for p in parts):
                return None
            return [tuple(p[0] for p in parts)]
        return None

    def elements(self, expr: ast.expr, env: dict) -> list | None:
        """What iterating over ``expr`` gives."""
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            got = [self.values(e, env) for e in expr.elts]
            return None if any(g is None for g in got) else [v for g in got for v in g]
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            out = []
            for bound in self.bindings(expr.generators, env):
                got = self.values(expr.elt, bound)
                if got is None:
                    return None
                out += got
            return out
        if isinstance(expr, ast.Name) and expr.id not in env and expr.id in self.local:
            return self.elements(self.local[expr.id], {})
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
                and expr.func.attr in ('keys', 'values', 'items') and not expr.args:
            got = self.values(expr.func.value, env)
            if got and len(got) == 1 and isinstance(got[0], dict):
                return list(getattr(got[0], expr.func.attr)())
            return None
        got = self.values(expr, env)
        if got and len(got) == 1 and isinstance(got[0], (tuple, list, set, dict, str)):
            return list(got[0])
        return None

    def pattern(self, expr: ast.expr, env: dict) -> str:
        """A regular expression of the names a key expression can take."""
        if isinstance(expr, ast.JoinedStr):
            return ''.join(self.pattern(part.value if isinstance(part, ast.FormattedValue)
                                        else part, env) for part in expr.values)
        got = self.values(expr, env)
        if got is None:
            return _ANY_PART
        return '(?:' + '|'.join(re.escape(str(v)) for v in got) + ')'


_UNKNOWN = object()


def _is_row(node: ast.expr) -> bool:
    """``(operation, metric, unit)``: a performance variable's table entry."""
    return isinstance(node, ast.Tuple) and len(node.elts) == 3


def _bind(target: ast.expr, value: Any, env: dict) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        ok = isinstance(value, (tuple, list)) and len(value) == len(target.elts)
        for i, t in enumerate(target.elts):
            _bind(t, value[i] if ok else _UNKNOWN, env)


# ------------------------------------------------------------------ deriving
def _round_sig(x: float, digits: int = 3) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    r = round(x, digits - 1 - math.floor(math.log10(abs(x))))
    return int(r) if r == int(r) else r


def envelope(values: Sequence[float], lo_pct: float = 5.0, hi_pct: float = 95.0,
             slack: float = 0.05) -> tuple[float, float, float]:
    """(ref, lower, upper) from samples: median and widened percentiles."""
    ref = _round_sig(stats.median(values))
    if ref == 0:
        return 0.0, -1.0, 1.0
    lower = stats.percentile(values, lo_pct) / ref - 1.0 - slack
    upper = stats.percentile(values, hi_pct) / ref - 1.0 + slack
    lower = max(-1.0, min(0.0, math.floor(lower * 100 + 1e-9) / 100))
    upper = max(0.0, math.ceil(upper * 100 - 1e-9) / 100)
    return ref, lower, upper


def derive(history: 'hist_mod.History', refs_dir: str | os.PathLike,
           index: Mapping[str, Sequence[str]] | None = None, window: int = 30,
           lo_pct: float = 5.0, hi_pct: float = 95.0, slack: float = 0.05,
           min_samples: int = 10, build: str | None = None,
           systems: Sequence[str] | None = None,
           files: ReferenceFiles | None = None) -> tuple[dict[Path, dict], list[str]]:
    """New contents of every reference file touched by the history.

    Returns ``({file: merged mapping}, notes)``. ``index`` maps a class name
    (or a tool) to the ``$index`` to use for classes the file does not have
    yet. A class's file is the one its check reads (``files``, by default
    from the checks in ``reframe/checks``). Existing files are read first (a
    malformed file raises RefsError).
    """
    refs_dir = Path(refs_dir)
    files = files or ReferenceFiles.from_checks()
    index = dict(index or {})
    existing: dict[Path, dict] = {}

    def current(fname: Path) -> dict:
        if fname not in existing:
            existing[fname] = load_file(fname) if fname.exists() else {}
        return existing[fname]

    def entry_of(m: Mapping[str, Any]) -> tuple | None:
        return _entry(m, refs_dir, files, index, current)

    pools, units, skipped = _pool_samples(history, window, build, systems, entry_of)
    notes: list[str] = []
    if skipped:
        notes.append(f'{skipped} metric-night(s) lack an $index attribute or a '
                     f'system:partition and were not used')
    out: dict[Path, dict] = {}
    for k, values in sorted(pools.items(), key=lambda kv: str(kv[0])):
        fname, klass, idx, path, var = k
        data = out.setdefault(fname, _copy(current(fname)))
        note = _set_entry(data, k, values, units.get(k), min_samples,
                          lambda v: envelope(v, lo_pct, hi_pct, slack))
        if note:
            notes.append(f'{klass} {"/".join(map(str, path))} {var}: {note}')
    for fname, data in out.items():
        validate(data, str(fname))
    return out, notes


def _pool_samples(history: 'hist_mod.History', window: int, build: str | None,
                  systems: Sequence[str] | None, entry_of: Any
                  ) -> tuple[dict[tuple, list[float]], dict[tuple, str], int]:
    """Samples per reference entry ``(file, class, $index, index path, variable)`` over
    the last ``window`` nights (degraded ones left out), their units, and how many
    metric-nights had no index values."""
    nights = history.nights
    first = max(0, len(nights) - window)
    bad_nights = {n['index'] for n in nights if n.get('degraded')}
    pools: dict[tuple, list[float]] = {}
    units: dict[tuple, str] = {}
    skipped = 0
    for key, lines in history.series.items():
        for line in lines:
            ni = line['night_index']
            if ni < first or ni in bad_nights:
                continue
            m = history.meta(key, ni)
            if not m or (systems and (m.get('system') or '') not in systems):
                continue
            samples = _night_samples(history, key, line, build)
            if not samples:
                continue
            try:
                k = entry_of(m)
            except KeyError:
                skipped += 1
                continue
            if k is not None:
                pools.setdefault(k, []).extend(samples)
                units[k] = m.get('unit')
    return pools, units, skipped


def _night_samples(history: 'hist_mod.History', key: str, line: Mapping[str, Any],
                   build: str | None) -> list[float]:
    """A metric's samples of one night: baseline's, and candidate's unless it FAILed
    (with ``build``: that build's only)."""
    night = history.nights[line['night_index']]
    base, cand = history.samples(key, line['night_index'])
    samples: list[float] = []
    if build in (None, night.get('baseline')):
        samples += base
    if build in (None, night.get('candidate')) and line.get('verdict') != 'FAIL':
        samples += cand
    return samples


def _entry(m: Mapping[str, Any], refs_dir: Path, files: ReferenceFiles,
           index: Mapping[str, Sequence[str]], current: Any) -> tuple | None:
    """``(file, class, $index, index path, variable)`` of a metric; None without a
    class; KeyError when the record lacks an index value or a system:partition."""
    system = m.get('system') or ''
    tool = m.get('tool') or 'unknown'
    klass = m.get('test_class') or test_class(m.get('test', ''))
    if not klass:
        return None
    fname = refs_dir / files.name(klass, tool)
    body = current(fname).get(klass)
    idx = (body or {}).get('$index') or index.get(klass) or index.get(tool)
    if not idx and not system:
        raise KeyError('$partition')
    params = m.get('params') or {}
    path = tuple(index_value(a, system, params) for a in idx) if idx else (system,)
    var = m.get('perf_var') or perf_var(m['operation'], m['metric'])
    return (fname, klass, tuple(idx or ()), path, var)


def _set_entry(data: dict, k: tuple, values: Sequence[float], unit: str | None,
               min_samples: int, make_envelope: Any) -> str | None:
    """Put the envelope of ``values`` into a file's mapping; a note when it is not put."""
    _fname, klass, idx, path, var = k
    if len(values) < min_samples:
        return f'only {len(values)} samples (< {min_samples}), entry left as it was'
    if klass not in data:
        data[klass] = {'$index': list(idx)} if idx else {}
    node = data[klass]
    for p in path:
        node = node.setdefault(p, {})
    old = node.get(var)
    if isinstance(old, list) and old and old[0] == '$xfail':
        return '$xfail entry kept'
    ref, lo, hi = make_envelope(values)
    node[var] = [ref, lo, hi, unit or None]
    return None


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


class _Dumper(yaml.SafeDumper):
    pass


def _repr_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(v, (dict, list)) for v in data) or (data and data[0] == '$xfail')
    return dumper.represent_sequence('tag:yaml.org,2002:seq', data, flow_style=bool(flow))


_Dumper.add_representer(list, _repr_list)


def dump(data: Mapping[str, Any]) -> str:
    header = ('# Reference envelopes (ReFrame 4.10 external references).\n'
              '# Written by `h5regress refs` from the nightly history; edit by hand freely:\n'
              '# entries without history and $xfail entries are kept as they are.\n')
    return header + yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False,
                              default_flow_style=False, allow_unicode=True, width=100)


def write(path: str | os.PathLike, data: Mapping[str, Any]) -> None:
    atomic.write_text(Path(path), dump(data))


# ------------------------------------------------------------------ which systems
def configured_partitions(files: Sequence[str | os.PathLike] | None = None) -> set[str]:
    """``system:partition`` of every partition the ReFrame configuration defines: the
    files of ``$RFM_CONFIG_FILES`` (the chain ``ci/run-suite`` and the nightly pass),
    else ``reframe/config/settings.py``; each is run as ReFrame runs it. A file that
    cannot be run is a :class:`RefsError` naming it."""
    chain = files if files is not None else \
        [f for f in os.environ.get('RFM_CONFIG_FILES', '').split(':') if f] or [SETTINGS_FILE]
    out = set()
    for path in chain:
        try:
            site = runpy.run_path(str(path)).get('site_configuration') or {}
        except Exception as err:      # a site's file may fail in any way; say which
            raise RefsError(f'{path}: cannot read the ReFrame configuration: {err}') from None
        for system in site.get('systems') or ():
            out.update(f"{system.get('name')}:{p.get('name')}"
                       for p in system.get('partitions') or ())
    return out


def unknown_partitions(data: Mapping[str, Any], fname: str, partitions: set[str]) -> list[str]:
    """Keys of a (well formed) reference mapping that stand for a system or a
    system:partition and match none the configuration defines (a typo there leaves
    every entry under it unused: ReFrame finds no reference for the partition)."""
    systems = {p.split(':')[0] for p in partitions}
    out = []
    for klass, body in data.items():
        levels = body.get('$index') or ['$scope']
        nodes = [([klass], {k: v for k, v in body.items() if k != '$index'})]
        for attr in levels:
            known = {'$partition': partitions, '$system': systems,
                     '$scope': partitions | systems | {'*'}}.get(attr)
            for path, node in nodes:
                out += [f'{fname}: key {_keypath(path + [k])!r}: no configured system:'
                        f'partition {k!r} (configured: {", ".join(sorted(partitions))})'
                        for k in node if known is not None and not _matches_any(k, known)]
            nodes = [(path + [k], v) for path, node in nodes for k, v in node.items()
                     if isinstance(v, dict)]
    return out


def _matches_any(key: Any, names: set[str]) -> bool:
    if key in names:
        return True
    try:
        return any(re.fullmatch(str(key), n) for n in names)
    except re.error:
        return False


# ------------------------------------------------------------------ CLI
def check_files(paths: Sequence[str], variables: CheckVariables | None = None,
                partitions: set[str] | None = None) -> int:
    """Validate reference files: well formed (finite, non-negative references,
    thresholds in range), every class, performance variable and unit one that the
    checks declare (``variables``, by default from ``reframe/checks``), and every
    system:partition key one the configuration defines (``partitions``, by default
    :func:`configured_partitions`). 0 when
    all are, else 4, naming the file, the key and the value of each problem."""
    files = reference_files(paths)
    if not files:
        print(f'h5regress refs: error: no reference files in {", ".join(paths)}',
              file=sys.stderr)
        return EXIT_ERROR
    variables = variables or CheckVariables.from_checks()
    bad = 0
    for path in files:
        try:
            data = load_file(path)
            problems = variables.problems(data, str(path)) + unknown_partitions(
                data, str(path), configured_partitions() if partitions is None else partitions)
        except RefsError as err:
            problems = [str(err)]
        for problem in problems:
            print(f'h5regress refs: error: {problem}', file=sys.stderr)
        bad += bool(problems)
    return EXIT_ERROR if bad else 0


def main_refs(argv: Sequence[str] | None = None) -> int:
    """``h5regress refs``: derive reference envelopes from history and write them.

    Exit codes: 0 written (or --dry-run, or --check found nothing wrong), 4 error
    (malformed file, a class, variable or unit no check declares, no history, a
    directory that cannot be written).
    """
    parser = ArgParser(
        prog='h5regress refs',
        description='Derive reference envelopes per system:partition from the nightly '
                    'history (percentiles over a window of nights) and write the ReFrame '
                    'external reference files the checks read.')
    parser.add_argument('--history', help=f'history directory (default ${hist_mod.ENV}, '
                        'then "history:" in the gate config)')
    parser.add_argument('--out', default=None,
                        help='references directory (default reframe/config/references '
                             'of this checkout)')
    parser.add_argument('--config', metavar='GATE_YAML', help=GATE_CONFIG_HELP)
    parser.add_argument('--window', type=int, default=30, help='nights of history (30)')
    parser.add_argument('--percentiles', type=float, nargs=2, default=(5.0, 95.0),
                        metavar=('LO', 'HI'), help='envelope percentiles (5 95)')
    parser.add_argument('--slack', type=float, default=0.05,
                        help='added to each side, as a fraction of ref (0.05)')
    parser.add_argument('--min-samples', type=int, default=10,
                        help='fewer samples leave the entry unchanged (10)')
    parser.add_argument('--build', help='only samples of this HDF5 build')
    parser.add_argument('--system', action='append',
                        help='only this system:partition (repeatable)')
    parser.add_argument('--dry-run', action='store_true', help='print, do not write')
    parser.add_argument('--check', nargs='+', metavar='PATH',
                        help='only validate these reference files or directories: well '
                             'formed, finite non-negative references, only classes, '
                             'performance variables and units the checks declare, only '
                             'configured system:partitions (ReFrame '
                             'itself only warns and drops the test of a malformed file)')
    args, code = parse_args(parser, argv)
    if args is None:
        return code
    if args.check:
        return check_files(args.check)
    try:
        cfg = load_config(args.config)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        if hdir is None or not (hdir / 'nights').is_dir():
            print(f'h5regress refs: error: {_no_history(hdir)}', file=sys.stderr)
            return EXIT_ERROR
        history = hist_mod.load(hdir)
        out_dir = Path(args.out) if args.out else REFERENCES_DIR
        files, notes = derive(history, out_dir, index=(cfg.get('refs') or {}).get('index'),
                              window=args.window, lo_pct=args.percentiles[0],
                              hi_pct=args.percentiles[1], slack=args.slack,
                              min_samples=args.min_samples, build=args.build,
                              systems=args.system)
    except (RefsError, ConfigError) as err:
        print(f'h5regress refs: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    for note in notes:
        print(f'note: {note}', file=sys.stderr)
    if not files:
        print('no reference entries derived (no usable history)', file=sys.stderr)
    return _output(files, args.dry_run)


def _no_history(hdir: Path | None) -> str:
    """What is missing, and how to give it: the envelopes come from stored nights."""
    how = ('the nights `h5regress gate --append-history` (and ci/nightly) stored; to '
           'check the reference files without history: h5regress refs --check DIR')
    if hdir is None:
        return (f'no history directory given: pass --history DIR, set ${hist_mod.ENV} or '
                f'"history:" in the gate config (--config), naming {how}')
    return f'no history at {hdir} (no nights/ in it): --history names {how}'


def _output(files: Mapping[Path, dict], dry_run: bool) -> int:
    """Print or write the derived files; 4 naming the directory when one cannot be written
    (the files written before it are whole, the others untouched)."""
    for fname, data in sorted(files.items()):
        if dry_run:
            print(f'--- {fname}')
            print(dump(data))
            continue
        try:
            write(fname, data)
        except OSError as err:
            print(f'h5regress refs: error: cannot write {fname.name} in {fname.parent}: '
                  f'{err.strerror or err} (--out names the references directory)',
                  file=sys.stderr)
            return EXIT_ERROR
        print(f'wrote {fname}')
    return 0
