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
(:class:`CheckVariables`, what ``reframe --describe`` says of the checks), every
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

import copy
import dataclasses
import functools
import json
import math
import os
import re
import runpy
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from h5regress import atomic, catalog
from h5regress import history as hist_mod
from h5regress import stats
from h5regress.cmdline import EXIT_ERROR, GATE_CONFIG_HELP, ArgParser, parse_args
from h5regress.gateconfig import (CHECKS_DIR, REFERENCES_DIR, SETTINGS_FILE, ConfigError,
                                  load_config)
# the files' format and lookup, for the gate as for this module (names kept here)
from h5regress.reffile import (_VARIANT, References, RefsError, _keypath, bounds,  # noqa: F401
                               index_value, load_file, perf_var, reference_files, test_class,
                               validate)


# ------------------------------------------------------------------ which file
@dataclasses.dataclass
class ReferenceFiles:
    """The reference file each check reads: its tool's, as the benchmark declarations
    say (:mod:`h5regress.catalog`; the checks' base sets ``reference`` from it).

    ``by_tool`` maps each declared tool to its file; ``by_class`` maps a check class
    to the file it reads (its ``reference_file``, as ``reframe --describe`` shows it).
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
        by_class = {t['@class']: t['reference_file'] for t in described_checks(checks_dir)
                    if t.get('reference_file')}
        return cls(by_class, by_tool)


# ------------------------------------------------------------------ what the checks declare
@functools.lru_cache(maxsize=4)
def _describe(checks_dir: str) -> tuple[dict, ...]:
    env = {**os.environ, 'H5REGRESS_MANIFEST': 'none'}   # builds do not change the names
    env.setdefault('RFM_CONFIG_FILES', str(SETTINGS_FILE))
    exe = Path(sys.executable).with_name('reframe')
    cmd = [str(exe) if exe.exists() else (shutil.which('reframe') or 'reframe'),
           '-c', checks_dir, '--describe']
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        described = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as err:
        raise RefsError(f'{checks_dir}: cannot describe the checks: {err}') from None
    if not isinstance(described, list):
        tail = ' '.join(done.stderr.split()[-40:])
        raise RefsError(f'{checks_dir}: `reframe --describe` failed '
                        f'(exit {done.returncode}): {tail}')
    return tuple(described)


def described_checks(checks_dir: str | os.PathLike = CHECKS_DIR) -> list[dict]:
    """What ``reframe -c checks_dir --describe`` says of every test (its variables,
    the performance variables declared at init among them), read once per process."""
    return list(_describe(str(checks_dir)))


@dataclasses.dataclass
class CheckVariables:
    """The performance variables each check class declares, and their units.

    From ReFrame (:func:`described_checks`): the checks declare them at init, every
    parameter's variant lists its own. ``by_class`` maps a class to
    ``[(name regex, unit or None), ...]``; a class without any is not a check with
    performance variables.
    """
    by_class: dict[str, list[tuple[str, str | None]]]

    @classmethod
    def from_checks(cls, checks_dir: str | os.PathLike = CHECKS_DIR) -> 'CheckVariables':
        by_class: dict[str, dict[tuple[str, str | None], None]] = {}
        for test in described_checks(checks_dir):
            units = test.get('perf_units') or {}
            found = by_class.setdefault(test['@class'], {})
            found.update(((re.escape(name), units.get(name)), None)
                         for name in test.get('perf_variables') or ())
        return cls({k: list(v) for k, v in by_class.items() if v})

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
        data = out.setdefault(fname, copy.deepcopy(current(fname)))
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


def _refs_parser() -> ArgParser:
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
    return parser


def main_refs(argv: Sequence[str] | None = None) -> int:
    """``h5regress refs``: derive reference envelopes from history and write them.

    Exit codes: 0 written (or --dry-run, or --check found nothing wrong), 4 error
    (malformed file, a class, variable or unit no check declares, no history, a
    directory that cannot be written).
    """
    args, code = parse_args(_refs_parser(), argv)
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
