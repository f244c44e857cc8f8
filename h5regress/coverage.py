"""Which HDF5 code a row runs: a coverage map per row, and the changed functions
between two commits that no row executes (issue 28).

A coverage build of HDF5 (compiled with ``--coverage``, never used for timing) is
run once per row with ``GCOV_PREFIX`` naming a directory of that row, so each
row's counters (``.gcda``) land in a tree of their own. gcov (its JSON) or gcovr
reads them (with the build's ``.gcno`` notes linked beside them) and says, per
source file, which functions ran and which of their lines were hit. A function's
extent comes from the same data: its start and end lines in gcov's JSON, the lines
gcov attributes to it in gcovr's (its first to its last line).

The diff of two commits (``git diff -U0``) gives the changed line ranges of each
file on the new side; a function is changed when one of them meets its extent.
The map must be made from a build of the new commit (``--bad``, the candidate),
since the extents are that commit's line numbers.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
from collections.abc import Iterable, Mapping, Sequence

from h5regress import manifest

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


def parse_gcov_json(text: str, source_root: str, where: str = 'gcov output') -> RowCoverage:
    """gcov's JSON intermediate format (``gcov --json-format --stdout``, one document per
    line, one per ``.gcda``) -> the row's coverage, the sources under ``source_root``
    only (paths made relative to it, as gcovr's ``--root``). A function of a header
    appears in each object that includes it: its calls and lines add up."""
    root = source_root.rstrip('/') + '/'
    calls: dict[tuple[str, str], int] = {}
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    lines: dict[tuple[str, str], dict[int, int]] = {}
    try:
        for doc in (json.loads(line) for line in text.splitlines() if line.strip()):
            for entry in doc['files']:
                if not entry['file'].startswith(root):
                    continue
                name = entry['file'][len(root):]
                for fn in entry['functions']:
                    key = (name, fn['name'])
                    calls[key] = calls.get(key, 0) + int(fn['execution_count'])
                    spans[key] = (int(fn['start_line']), int(fn['end_line']))
                for line in entry['lines']:
                    own = lines.setdefault((name, line.get('function_name', '')), {})
                    n = int(line['line_number'])
                    own[n] = own.get(n, 0) + int(line['count'])
    except (ValueError, KeyError, TypeError) as err:
        raise CoverageError(f'{where}: not gcov JSON ({err!r})') from None
    extents = [FunctionExtent(f, n, *spans[(f, n)]) for f, n in spans]
    hits = [FunctionHit(f, n, c, sum(1 for v in lines.get((f, n), {}).values() if v > 0),
                        len(lines.get((f, n), {}))) for (f, n), c in calls.items() if c > 0]
    return RowCoverage(hits, extents)


@dataclasses.dataclass
class CoverageMap:
    """Per row, the functions it executed, and the extents of every function seen."""
    build: str
    rows: dict[str, list[FunctionHit]]
    extents: list[FunctionExtent]
    #: the HDF5 commit the coverage build compiled (None: not known, a kernel's map)
    commit: str | None = None

    def to_json(self) -> str:
        return json.dumps({'schema': SCHEMA, 'build': self.build, 'commit': self.commit,
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
                       [FunctionExtent(**e) for e in data['extents']], data.get('commit'))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise CoverageError(f'{where}: not a coverage map ({err})') from None

    def rows_executing(self, file: str, name: str) -> list[str]:
        return sorted(r for r, hs in self.rows.items()
                      if any(h.file == file and h.name == name for h in hs))


def merge_rows(build: str, rows: Mapping[str, RowCoverage],
               commit: str | None = None) -> CoverageMap:
    """One map from each row's coverage; an extent seen by several rows is kept once."""
    extents = {(e.file, e.name): e for rc in rows.values() for e in rc.extents}
    return CoverageMap(build, {r: rc.hits for r, rc in rows.items()},
                       sorted(extents.values(), key=lambda e: (e.file, e.first_line)), commit)


def merge_maps(maps: Sequence[tuple[str, CoverageMap]]) -> CoverageMap:
    """One map of the rows of several (``(where, map)``) of one coverage build and commit,
    e.g. a night's map and the map of rows added since: a row in several maps keeps the
    last one's functions (a row mapped again)."""
    if not maps:
        raise CoverageError('no map to merge')
    (first_where, first), rows, extents = maps[0], {}, {}
    for where, cmap in maps:
        if (cmap.build, cmap.commit) != (first.build, first.commit):
            raise CoverageError(f'{where}: build {cmap.build} at {cmap.commit}, but '
                                f'{first_where} is {first.build} at {first.commit}: maps of '
                                f'one build and commit only (the extents are its lines)')
        rows.update(cmap.rows)
        extents.update({(e.file, e.name): e for e in cmap.extents})
    return CoverageMap(first.build, rows,
                       sorted(extents.values(), key=lambda e: (e.file, e.first_line)),
                       first.commit)


# ------------------------------------------------------------------ changes
@dataclasses.dataclass(frozen=True)
class ChangedFunction:
    file: str
    name: str
    rows: tuple[str, ...]      # the rows that execute it; () is a blind spot


@dataclasses.dataclass(frozen=True)
class Hunk:
    """One hunk of a ``-U0`` diff: ``count`` lines from ``start`` on each side."""
    old_start: int
    old_count: int
    new_start: int
    new_count: int


def _side(path: str, prefix: str) -> str | None:
    path = path.strip()
    return None if path == '/dev/null' else path[len(prefix):] if path.startswith(prefix) \
        else path


def parse_hunks(diff_text: str) -> dict[tuple[str | None, str | None], list[Hunk]]:
    """The hunks of a unified diff made with ``-U0``, per (old path, new path)."""
    out: dict[tuple[str | None, str | None], list[Hunk]] = {}
    old = key = None
    for line in diff_text.splitlines():
        if line.startswith('--- '):
            old = _side(line[4:], 'a/')
        elif line.startswith('+++ '):
            key = (old, _side(line[4:], 'b/'))
            out.setdefault(key, [])
        elif line.startswith('@@ ') and key is not None:
            sides = line.split(' ')[1:3]            # -start[,count] +start[,count]
            (a, b), (c, d) = ((int(x), int(n) if sep else 1) for x, sep, n in
                              (side[1:].partition(',') for side in sides))
            out[key].append(Hunk(a, b, c, d))
    return out


def changed_ranges(diff_text: str) -> dict[str, list[tuple[int, int]]]:
    """Changed line ranges of each file on the new side of a unified diff made
    with ``-U0``: ``{path: [(first, last), ...]}``. A pure deletion touches the
    lines on both sides of where it was."""
    return {new: [(h.new_start, h.new_start + h.new_count - 1) if h.new_count else
                  (h.new_start, h.new_start + 1) for h in hs]
            for (_, new), hs in parse_hunks(diff_text).items() if new is not None}


def translate_line(hunks: Sequence[Hunk], line: int) -> int | None:
    """Where ``line`` of the old side of a ``-U0`` diff is on its new side; None when the
    diff changed that line. (A hunk of no old lines inserts after ``old_start``; one of
    no new lines deletes after ``new_start``.)"""
    shift = 0
    for h in hunks:
        old_end = h.old_start + h.old_count if h.old_count else h.old_start + 1
        if h.old_count and h.old_start <= line < old_end:
            return None
        if line < old_end:
            break
        shift = (h.new_start + h.new_count if h.new_count else h.new_start + 1) - old_end
    return line + shift


def changed_functions(ranges: Mapping[str, Sequence[tuple[int, int]]],
                      cmap: CoverageMap) -> list[ChangedFunction]:
    """The functions of the map whose extent a changed range meets, with the rows
    that execute each."""
    out = []
    for e in cmap.extents:
        if any(lo <= e.last_line and hi >= e.first_line for lo, hi in ranges.get(e.file, ())):
            out.append(ChangedFunction(e.file, e.name, tuple(cmap.rows_executing(e.file, e.name))))
    return out


def rows_executing_any(cmap: CoverageMap, functions: Iterable[tuple[str, str]]) -> list[str]:
    """The map's rows that execute at least one of ``functions`` ((file, name) pairs)."""
    wanted = set(functions)
    return sorted(r for r, hits in cmap.rows.items()
                  if any((h.file, h.name) in wanted for h in hits))


def git(repo: str, *args: str) -> str:
    out = subprocess.run(['git', '-C', repo, *args], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise CoverageError(f'git {" ".join(args[:3])} in {repo}: {out.stderr.strip()}')
    return out.stdout


def git_diff(repo: str, good: str, bad: str, paths: Iterable[str] = (),
             renames: bool = False) -> str:
    """``git diff -U0`` ignoring whitespace-only changes (a reformatting commit changes
    no code)."""
    return git(repo, 'diff', '-U0', '-w', '--ignore-blank-lines', '--no-color',
               '-M' if renames else '--no-renames', good, bad, '--', *paths)


def resolve(repo: str, ref: str) -> str:
    """The full sha of a commit named by ``ref`` (a short sha, a tag)."""
    return git(repo, 'rev-parse', '--verify', f'{ref}^{{commit}}').strip()


def follow_ranges(repo: str, ranges: Mapping[str, Sequence[tuple[int, int]]], commit: str,
                  target: str, paths: Sequence[str] = ('src',)
                  ) -> tuple[dict[str, list[tuple[int, int]]], int]:
    """Line ranges of ``commit`` followed to the same lines of ``target`` (through
    ``git diff commit target``, renames too), and how many of their lines ``target``
    changed again (those are lost: they are no line of ``target``)."""
    forward = {old: (new, hunks) for (old, new), hunks in
               parse_hunks(git_diff(repo, commit, target, paths, renames=True)).items()}
    out: dict[str, list[tuple[int, int]]] = {}
    lost = 0
    for file, spans in ranges.items():
        new_file, hunks = forward.get(file, (file, []))
        for lo, hi in spans:
            moved = [translate_line(hunks, n) for n in range(lo, hi + 1)]
            lost += moved.count(None)
            if new_file:
                out.setdefault(new_file, []).extend(_runs(n for n in moved if n is not None))
    return out, lost


def _runs(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Ascending line numbers as ranges of consecutive lines."""
    out: list[tuple[int, int]] = []
    for n in lines:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


@dataclasses.dataclass(frozen=True)
class ChangeSet:
    """The map's functions that ``good`` -> ``bad`` changes, and how its changed lines
    were placed on the map's commit: ``followed`` when the map is of a later commit than
    ``bad`` (each line followed there), ``lost`` lines changed again since."""
    functions: list[ChangedFunction]
    followed: bool = False
    lost: int = 0


def changes_between(repo: str, good: str, bad: str, cmap: CoverageMap,
                    paths: Sequence[str] = ('src',)) -> ChangeSet:
    """The functions ``good`` -> ``bad`` changes, by the map's extents: directly when the
    map is of ``bad`` (or says no commit), else with each changed line followed from
    ``bad`` to the map's commit (a map of the pinned candidate serves a range before it;
    a line changed again since is lost, so a function rewritten later counts only
    through its other lines)."""
    ranges = changed_ranges(git_diff(repo, good, bad, paths))
    if not cmap.commit or resolve(repo, bad) == resolve(repo, cmap.commit):
        return ChangeSet(changed_functions(ranges, cmap))
    placed, lost = follow_ranges(repo, ranges, bad, cmap.commit, paths)
    return ChangeSet(changed_functions(placed, cmap), True, lost)


def functions_touched(repo: str, commit: str, cmap: CoverageMap,
                      paths: Sequence[str] = ('src',)) -> set[tuple[str, str]]:
    """The map's functions holding lines that ``commit`` changed (against its first
    parent), each line followed to the map's commit (:func:`changes_between`)."""
    if not cmap.commit:
        raise CoverageError(f'the map of {cmap.build} does not say its commit')
    return {(c.file, c.name) for c in
            changes_between(repo, f'{commit}^1', commit, cmap, paths).functions}


@dataclasses.dataclass(frozen=True)
class ProneRule:
    """Which commits make the regression-prone set: first-parent history of ``head``
    since ``since`` touching ``paths``, whose message matches ``message``."""
    since: str
    paths: tuple[str, ...]
    message: str
    exclude: tuple[str, ...] = ()


def prone_commits(repo: str, head: str, rule: ProneRule) -> list[dict[str, str]]:
    import re
    pattern = re.compile(rule.message)
    log = git(repo, 'log', '--first-parent', f'--since={rule.since}', '--date=short',
              '--format=%H%x1f%ad%x1f%s%x1f%B%x1e', head, '--', *rule.paths)
    out = []
    for entry in log.split('\x1e'):
        fields = entry.strip('\n').split('\x1f')
        if len(fields) == 4 and pattern.search(fields[3]) and \
                not any(fields[0].startswith(x) for x in rule.exclude):
            out.append({'commit': fields[0], 'date': fields[1], 'subject': fields[2]})
    return out


def prone_functions(repo: str, commits: Sequence[Mapping[str, str]],
                    cmap: CoverageMap) -> set[tuple[str, str]]:
    """The regression-prone set: the map's functions that ``commits`` touched."""
    touched: set[tuple[str, str]] = set()
    for c in commits:
        touched |= functions_touched(repo, c['commit'], cmap)
    return touched


def map_summary(cmap: CoverageMap, prone: set[tuple[str, str]], names: bool = True) -> dict:
    """The small form of a map, to commit: per row (its name without the build), the
    number of functions it executes and the regression-prone ones among them
    (``file:function``; their number only without ``names``, for a map of many rows);
    how many of the prone set the rows execute together, and those none executes."""
    rows, executed = {}, set()
    for row, hits in sorted(cmap.rows.items()):
        functions = {(h.file, h.name) for h in hits}
        executed |= functions
        own = sorted(f'{f}:{n}' for f, n in functions & prone)
        rows[row_name(row)] = {'functions': len(functions), 'prone': own if names else len(own)}
    return {'build': cmap.build, 'commit': cmap.commit, 'functions_seen': len(cmap.extents),
            'prone_functions': len(prone), 'prone_executed': len(executed & prone),
            'prone_missed': sorted(f'{f}:{n}' for f, n in prone - executed), 'rows': rows}


def prone_report(repo: str, commits: Sequence[Mapping[str, str]], cmap: CoverageMap
                 ) -> tuple[list[str], float | None]:
    """Lines of the regression-prone functions the map's rows execute and miss, grouped
    by source file, and the fraction executed."""
    touched = prone_functions(repo, commits, cmap)
    executed = {(h.file, h.name) for hs in cmap.rows.values() for h in hs}
    hit = sorted(touched & executed)
    missed: dict[str, list[str]] = {}
    for file, name in sorted(touched - executed):
        missed.setdefault(file, []).append(name)
    fraction = len(hit) / len(touched) if touched else None
    lines = [f'{len(commits)} regression-prone commit(s) touch {len(touched)} function(s) of '
             f'{cmap.build}; its rows execute {len(hit)}'
             + (f' ({fraction:.0%})' if fraction is not None else '')]
    lines += [f'  missed in {file}: {", ".join(names)}' for file, names in missed.items()]
    return lines, fraction


def blind_spot_line(changed: Sequence[ChangedFunction], limit: int = 8) -> str:
    """One line for a report's first screen: the missed functions by name when there are
    few, else the source files with the most of them."""
    executed = [c for c in changed if c.rows]
    missing = [c for c in changed if not c.rows]
    line = (f'this candidate changes {len(changed)} HDF5 function(s) since the baseline; '
            f"tonight's rows execute {len(executed)} of them")
    if len(missing) <= limit:
        names = [f'{c.name} ({c.file})' for c in missing]
    else:
        per_file: dict[str, int] = {}
        for c in missing:
            per_file[c.file] = per_file.get(c.file, 0) + 1
        top = sorted(per_file.items(), key=lambda kv: (-kv[1], kv[0]))
        names = [f'{n} in {f}' for f, n in top[:limit]]
        if len(top) > limit:
            names.append(f'{sum(n for _, n in top[limit:])} in {len(top) - limit} other files')
    return line + (f'; not exercised: {", ".join(names)}' if names else '')


@dataclasses.dataclass(frozen=True)
class ReplayPair:
    """One replay of a corpus case (``h5regress replay``'s result): its two commits and
    the rows its gate found slower (FAIL)."""
    baseline: str
    candidate: str
    failing: tuple[str, ...]


def replay_pair(result: Mapping, mode: str, where: str) -> ReplayPair:
    """A replay result (``regressions/replays/<case>.json``) -> the pair of ``mode``
    (``regression``, ``fix``, ``control``)."""
    replays = result.get('replays') if isinstance(result, Mapping) else None
    if not isinstance(replays, Mapping) or mode not in replays:
        modes = ', '.join(replays) if isinstance(replays, Mapping) and replays else 'none'
        raise CoverageError(f'{where}: no replay {mode!r} (it has: {modes})')
    try:
        failing = {gate_row_test(r['label'], r['key']) for r in replays[mode]['rows']
                   if r['verdict'] == 'FAIL'}
        return ReplayPair(replays[mode]['baseline'], replays[mode]['candidate'],
                          tuple(sorted(failing)))
    except KeyError as err:
        raise CoverageError(f'{where}: the replay {mode!r} has no {err}') from None
    except TypeError as err:
        raise CoverageError(f'{where}: not a replay result ({err})') from None


def gate_row_test(label: str, key: str) -> str:
    """The test of a gate row's label (``<test> <operation> <metric> [<hash>]``, its key
    ``<hash>|<tool>|<operation>|<metric>``); the label itself when it is not of that form."""
    chash, _, operation, metric = (key.split('|') + ['', '', '', ''])[:4]
    suffix = f' {operation} {metric} [{chash[:6]}]'
    return label[:-len(suffix)] if label.endswith(suffix) else label


def failing_rows_line(changed: Sequence[ChangedFunction], failing: Sequence[str],
                      mapped: Iterable[str]) -> str:
    """Which of the changed functions the rows that FAILed execute (rows are matched
    without their build, :func:`row_name`; ``mapped``: the map's rows): the slowdown's
    code when the diff names it."""
    wanted = {row_name(r) for r in failing}
    if not wanted:
        return 'no row FAILed'
    short = lambda names: ', '.join(sorted(r.split('%benchmark=')[-1] for r in names))  # noqa: E731
    unmapped = wanted - {row_name(r) for r in mapped}
    run = [c for c in changed if wanted & {row_name(r) for r in c.rows}]
    line = (f'the FAILing row(s) {short(wanted)} execute {len(run)} of the {len(changed)} '
            f'changed function(s)' + (': ' + ', '.join(f'{c.name} ({c.file})' for c in run)
                                      if run else ''))
    return line + (f'; not in the map: {short(unmapped)}' if unmapped else '')


def row_name(test: str) -> str:
    """A test's name without its HDF5 build: how a night's rows and a map's rows meet."""
    return ' '.join(t for t in test.split() if not t.startswith('%hdf5_build='))


def night_section(cmap_path: pathlib.Path, repo: str, baseline_commit: str | None,
                  candidate_commit: str | None, tests: Iterable[str] = ()) -> dict:
    """The coverage part of a night's result: the functions the candidate changes since
    the baseline, those tonight's rows (``tests``; every row of the map without them)
    execute by the map of a coverage build of the candidate's commit, and the blind
    spots; ``available: False`` with the reason when it cannot be said."""
    try:
        cmap = CoverageMap.from_json(cmap_path.read_text(), str(cmap_path))
    except OSError as err:
        return {'available': False, 'reason': f'coverage map {cmap_path}: {err.strerror}'}
    except CoverageError as err:
        return {'available': False, 'reason': str(err)}
    tonight = {row_name(t) for t in tests}
    if tonight:
        rows = {r: hs for r, hs in cmap.rows.items() if row_name(r) in tonight}
        if not rows:
            return {'available': False, 'reason': f'the coverage map {cmap_path} has none of '
                                                  f"tonight's {len(tonight)} row(s)"}
        cmap = dataclasses.replace(cmap, rows=rows)
    if not (baseline_commit and candidate_commit):
        return {'available': False, 'reason': 'the night has no commit of one build'}
    if cmap.commit and cmap.commit != candidate_commit:
        return {'available': False, 'reason': (
            f'the coverage map {cmap_path} is of HDF5 {cmap.commit[:10]}, the candidate is '
            f'{candidate_commit[:10]}: its line numbers do not fit the diff (h5regress '
            f'coverage build/run of the candidate)')}
    try:
        changed = changed_functions(changed_ranges(
            git_diff(repo, baseline_commit, candidate_commit, ['src'])), cmap)
    except CoverageError as err:
        return {'available': False, 'reason': str(err)}
    return {'available': True, 'map': str(cmap_path), 'line': blind_spot_line(changed),
            'rows': sorted(cmap.rows),
            'changed': len(changed), 'executed': sum(1 for c in changed if c.rows),
            'not_exercised': [f'{c.file}:{c.name}' for c in changed if not c.rows],
            'functions': [dataclasses.asdict(c) for c in changed]}


#: the regression-prone set's rule and commits (data)
PRONE_FILE = manifest.repo_root() / 'ci' / 'regression-prone.yaml'


def load_prone(path: pathlib.Path) -> tuple[ProneRule, list[dict[str, str]]]:
    import yaml
    try:
        data = yaml.safe_load(path.read_text(encoding='utf-8'))
        rule = ProneRule(str(data['rule']['since']), tuple(data['rule']['paths']),
                         data['rule']['message'], tuple(data['rule'].get('exclude') or ()))
        return rule, list(data.get('commits') or [])
    except OSError as err:
        raise CoverageError(f'{path}: {err.strerror}') from None
    except (yaml.YAMLError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise CoverageError(f'{path}: not a regression-prone file ({err})') from None
