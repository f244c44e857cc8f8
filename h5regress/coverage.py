"""Which HDF5 code a row runs: a coverage map per row, and the changed functions
between two commits that no row executes (issue 28).

A coverage build of HDF5 (compiled with ``--coverage``, never used for timing) is
run once per row with ``GCOV_PREFIX`` naming a directory of that row, so each
row's counters (``.gcda``) land in a tree of their own. gcovr reads them (with
the build's ``.gcno`` notes linked beside them) and says, per source file, which
functions ran and which of their lines were hit. A function's extent comes from
the same data: the lines gcov attributes to it (its first to its last line).

The diff of two commits (``git diff -U0``) gives the changed line ranges of each
file on the new side; a function is changed when one of them meets its extent.
The map must be made from a build of the new commit (``--bad``, the candidate),
since the extents are that commit's line numbers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence

SCHEMA = 1


class CoverageError(Exception):
    """Bad input to the coverage map or diff, named."""


@dataclasses.dataclass(frozen=True)
class FunctionExtent:
    """A function of the build's sources and the lines gcov gives it."""
    file: str            # relative to the source root
    name: str
    first_line: int
    last_line: int


@dataclasses.dataclass(frozen=True)
class FunctionHit:
    """What one row executed of one function."""
    file: str
    name: str
    calls: int
    lines_hit: int
    lines_total: int


@dataclasses.dataclass
class RowCoverage:
    """The functions one run of a row executed (calls > 0) and every function
    its counters describe (executed or not: the extents)."""
    hits: list[FunctionHit]
    extents: list[FunctionExtent]


def parse_gcovr_json(text: str, where: str = 'gcovr output') -> RowCoverage:
    """gcovr's JSON report (``gcovr --json``) -> the row's coverage."""
    try:
        data = json.loads(text)
        files = data['files']
    except (ValueError, KeyError, TypeError) as err:
        raise CoverageError(f'{where}: not a gcovr JSON report ({err})') from None
    hits, extents = [], []
    for entry in files:
        name = entry['file']
        lines: dict[str, list[tuple[int, int]]] = {}
        for line in entry.get('lines', ()):
            fn = line.get('function_name')
            if fn:
                lines.setdefault(fn, []).append((int(line['line_number']), int(line['count'])))
        for fn in entry.get('functions', ()):
            own = lines.get(fn['name'], [])
            numbers = [n for n, _ in own] + [int(fn['lineno'])]
            extents.append(FunctionExtent(name, fn['name'], min(numbers), max(numbers)))
            calls = int(fn.get('execution_count') or 0)
            if calls > 0:
                hits.append(FunctionHit(name, fn['name'], calls,
                                        sum(1 for _, c in own if c > 0), len(own)))
    return RowCoverage(hits, extents)


@dataclasses.dataclass
class CoverageMap:
    """Per row, the functions it executed, and the extents of every function seen."""
    build: str
    rows: dict[str, list[FunctionHit]]
    extents: list[FunctionExtent]

    def to_json(self) -> str:
        return json.dumps({'schema': SCHEMA, 'build': self.build,
                           'rows': {r: [dataclasses.asdict(h) for h in hs]
                                    for r, hs in sorted(self.rows.items())},
                           'extents': [dataclasses.asdict(e) for e in self.extents]},
                          indent=1)

    @classmethod
    def from_json(cls, text: str, where: str) -> CoverageMap:
        try:
            data = json.loads(text)
            if data.get('schema') != SCHEMA:
                raise CoverageError(f'{where}: schema {data.get("schema")!r}, '
                                    f'this version reads {SCHEMA}')
            return cls(data['build'],
                       {r: [FunctionHit(**h) for h in hs] for r, hs in data['rows'].items()},
                       [FunctionExtent(**e) for e in data['extents']])
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise CoverageError(f'{where}: not a coverage map ({err})') from None

    def rows_executing(self, file: str, name: str) -> list[str]:
        return sorted(r for r, hs in self.rows.items()
                      if any(h.file == file and h.name == name for h in hs))


def merge_rows(build: str, rows: Mapping[str, RowCoverage]) -> CoverageMap:
    """One map from each row's coverage; an extent seen by several rows is kept once."""
    extents = {(e.file, e.name): e for rc in rows.values() for e in rc.extents}
    return CoverageMap(build, {r: rc.hits for r, rc in rows.items()},
                       sorted(extents.values(), key=lambda e: (e.file, e.first_line)))


# ------------------------------------------------------------------ collecting
def link_notes(gcda_root: pathlib.Path, build_dir: pathlib.Path) -> int:
    """Link every ``.gcno`` of ``build_dir`` beside where ``GCOV_PREFIX=gcda_root``
    put the counters (``gcda_root/<absolute build path>``); gcov needs both."""
    build_dir = build_dir.resolve()
    mirror = gcda_root / str(build_dir).lstrip('/')
    count = 0
    for note in build_dir.rglob('*.gcno'):
        target = mirror / note.relative_to(build_dir)
        if target.parent.is_dir() and not target.exists():
            target.symlink_to(note)
            count += 1
    return count


def gcovr_command() -> str:
    """gcovr of this Python environment (a dependency of the package), else PATH's."""
    beside = pathlib.Path(sys.executable).with_name('gcovr')
    found = str(beside) if beside.exists() else shutil.which('gcovr')
    if not found:
        raise CoverageError('gcovr not found: pip install gcovr (a dependency of h5regress)')
    return found


def collect_row(gcda_root: pathlib.Path, build_dir: pathlib.Path,
                source_root: pathlib.Path) -> RowCoverage:
    """A row's coverage from the counters one run left under ``gcda_root``."""
    if not any(gcda_root.rglob('*.gcda')):
        raise CoverageError(f'{gcda_root}: no .gcda counters (was the run made with '
                            f'GCOV_PREFIX={gcda_root} against a --coverage build?)')
    link_notes(gcda_root, build_dir)
    out = subprocess.run([gcovr_command(), '--root', str(source_root), '--json', '-',
                          str(gcda_root)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CoverageError(f'gcovr on {gcda_root} exited {out.returncode}: '
                            f'{out.stderr.strip()[-500:]}')
    return parse_gcovr_json(out.stdout, f'gcovr on {gcda_root}')


# ------------------------------------------------------------------ changes
@dataclasses.dataclass(frozen=True)
class ChangedFunction:
    file: str
    name: str
    rows: tuple[str, ...]      # the rows that execute it; () is a blind spot


def changed_ranges(diff_text: str) -> dict[str, list[tuple[int, int]]]:
    """Changed line ranges of each file on the new side of a unified diff made
    with ``-U0``: ``{path: [(first, last), ...]}``. A pure deletion touches the
    lines on both sides of where it was."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    path = None
    for line in diff_text.splitlines():
        if line.startswith('+++ '):
            target = line[4:].strip()
            path = None if target == '/dev/null' else target.split('/', 1)[-1] \
                if target.startswith('b/') else target
        elif line.startswith('@@ ') and path is not None:
            new = line.split(' ')[2]            # +start[,count]
            start, _, count = new[1:].partition(',')
            first, n = int(start), int(count) if count else 1
            ranges.setdefault(path, []).append((first, first + n - 1) if n else
                                               (first, first + 1))
    return ranges


def changed_functions(ranges: Mapping[str, Sequence[tuple[int, int]]],
                      cmap: CoverageMap) -> list[ChangedFunction]:
    """The functions of the map whose extent a changed range meets, with the rows
    that execute each."""
    out = []
    for e in cmap.extents:
        if any(lo <= e.last_line and hi >= e.first_line for lo, hi in ranges.get(e.file, ())):
            out.append(ChangedFunction(e.file, e.name, tuple(cmap.rows_executing(e.file, e.name))))
    return out


def git_diff(repo: str, good: str, bad: str, paths: Iterable[str] = ()) -> str:
    out = subprocess.run(['git', '-C', repo, 'diff', '-U0', '--no-color', '--no-renames',
                          good, bad, '--', *paths], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise CoverageError(f'git diff {good} {bad} in {repo}: {out.stderr.strip()}')
    return out.stdout


def blind_spot_line(changed: Sequence[ChangedFunction], limit: int = 8) -> str:
    """One line for a report's first screen."""
    executed = [c for c in changed if c.rows]
    missing = [f'{c.name} ({c.file})' for c in changed if not c.rows]
    line = (f'this candidate changes {len(changed)} HDF5 function(s) since the baseline; '
            f"tonight's rows execute {len(executed)} of them")
    if missing:
        more = f', and {len(missing) - limit} more' if len(missing) > limit else ''
        line += f'; not exercised: {", ".join(missing[:limit])}{more}'
    return line


# ------------------------------------------------------------------ command line
def _row_arg(text: str) -> tuple[str, pathlib.Path]:
    name, sep, path = text.partition('=')
    if not sep or not name or not path:
        raise CoverageError(f'--row {text!r}: give NAME=DIR (the GCOV_PREFIX of that row\'s run)')
    return name, pathlib.Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    from h5regress.cmdline import ArgParser, parse_args
    ap = ArgParser(prog='h5regress coverage', description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='action', required=True)
    m = sub.add_parser('map', help='per-row coverage map from the rows\' counters')
    m.add_argument('--build', required=True, help='the coverage build\'s id (recorded)')
    m.add_argument('--build-dir', required=True, type=pathlib.Path,
                   help='the coverage build\'s build tree (its .gcno notes)')
    m.add_argument('--source', required=True, type=pathlib.Path,
                   help='the source tree the build compiled (paths are relative to it)')
    m.add_argument('--row', action='append', required=True, metavar='NAME=DIR',
                   help='a row and the GCOV_PREFIX directory of its run (repeat)')
    m.add_argument('-o', '--output', required=True, type=pathlib.Path, help='map file (JSON)')
    d = sub.add_parser('diff', help='changed functions between two commits and the rows '
                                    'that execute them')
    d.add_argument('--map', required=True, type=pathlib.Path,
                   help='coverage map of a build of --bad')
    d.add_argument('--repo', required=True, help='git repository of the sources')
    d.add_argument('--good', required=True)
    d.add_argument('--bad', required=True)
    d.add_argument('--json', action='store_true', help='JSON lines instead of text')
    args, code = parse_args(ap, argv)
    if args is None:
        return code
    try:
        if args.action == 'map':
            rows = {name: collect_row(path, args.build_dir, args.source)
                    for name, path in map(_row_arg, args.row)}
            cmap = merge_rows(args.build, rows)
            tmp = args.output.with_name(args.output.name + '.tmp')
            tmp.write_text(cmap.to_json())
            os.replace(tmp, args.output)
            print(f'{args.output}: {len(rows)} row(s), {len(cmap.extents)} function(s) seen')
            return 0
        try:
            cmap = CoverageMap.from_json(args.map.read_text(), str(args.map))
        except OSError as err:
            raise CoverageError(f'--map {args.map}: {err.strerror}') from None
        changed = changed_functions(changed_ranges(git_diff(args.repo, args.good, args.bad)),
                                    cmap)
        for c in changed:
            print(json.dumps(dataclasses.asdict(c)) if args.json else
                  f'{c.file}:{c.name}: {", ".join(c.rows) or "NOT EXERCISED"}')
        print(blind_spot_line(changed), file=sys.stderr if args.json else sys.stdout)
        return 0
    except CoverageError as err:
        print(f'h5regress coverage: error: {err}', file=sys.stderr)
        return 4
