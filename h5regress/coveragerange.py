"""A commit range's changed HDF5 functions put to use (issue 28): which rows a bisect
runs, and which changed functions a replay's FAILing rows execute.

The map used for a range is the one of its bad commit when there is one; else the
map whose commit keeps the most of the range's changed lines (each followed there
through ``git diff``, :func:`h5regress.coverage.changes_between`), labelled as of
that other commit wherever the choice is said. A bisect runs only the rows that
execute a changed function when the map can say so for the whole range; otherwise
(a changed line no map places, no mapped row executing any changed function) it
runs every row of the night, and says why. A row the map does not hold is never
left out: nothing is known of what it executes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import coverage, nightrun
from h5regress.coverage import ChangedFunction, CoverageError, CoverageMap


@dataclasses.dataclass(frozen=True)
class MapChoice:
    """The map read for a range, and the range's changes placed on it."""
    path: str
    cmap: CoverageMap
    changes: coverage.ChangeSet
    good: str
    bad: str

    def label(self, file_name_only: bool = False) -> str:
        """The map, named with its build and commit; 'not of BAD' when it is another's
        (``file_name_only``: the map's file without its directory, for a result that is
        committed)."""
        where = Path(self.path).name if file_name_only else self.path
        own = f'{where} ({self.cmap.build} at {self.cmap.commit[:12]})'
        if not self.changes.followed:
            return own
        return (f'{own}, a map of another commit than the range\'s bad {self.bad[:12]}: its '
                f'changed lines were followed there, {self.changes.lost} of them changed '
                f'again since (not placed)')


def read_maps(paths: Iterable[Path]) -> list[tuple[str, CoverageMap]]:
    """Each map file; one that is missing, unreadable or says no commit is named."""
    out = []
    for path in paths:
        try:
            cmap = CoverageMap.from_json(Path(path).read_text(), str(path))
        except OSError as err:
            raise CoverageError(f'{path}: {err.strerror}') from None
        if not cmap.commit:
            raise CoverageError(f'{path}: the map does not say its HDF5 commit, so it '
                                f'cannot be matched to a range (h5regress coverage map '
                                f'--commit SHA)')
        out.append((str(path), cmap))
    return out


def choose_map(repo: str, good: str, bad: str, maps: Sequence[tuple[str, CoverageMap]],
               paths: Sequence[str] = ('src',)) -> MapChoice:
    """The map of ``bad``'s commit; else, of maps of other commits, the one that places
    the most of the range's changed lines (fewest lost; the first given on a tie)."""
    if not maps:
        raise CoverageError('no coverage map given')
    bad_sha = coverage.resolve(repo, bad)
    for where, cmap in maps:
        if _commit_in(repo, where, cmap) == bad_sha:
            return MapChoice(where, cmap, coverage.changes_between(repo, good, bad, cmap,
                                                                   paths), good, bad_sha)
    placed = [MapChoice(where, cmap, coverage.changes_between(repo, good, bad, cmap, paths),
                        good, bad_sha) for where, cmap in maps]
    return min(placed, key=lambda c: c.changes.lost)


def _commit_in(repo: str, where: str, cmap: CoverageMap) -> str:
    try:
        return coverage.resolve(repo, cmap.commit)
    except CoverageError:
        raise CoverageError(f'{where}: the map\'s commit {cmap.commit} is not in {repo} '
                            f'(a map of another repository?)') from None


@dataclasses.dataclass(frozen=True)
class RowChoice:
    """Which mapped rows execute a function the range changes (``run``) and which
    execute none (``left_out``); ``fallback`` says why every row runs instead."""
    map: MapChoice
    run: tuple[str, ...]
    left_out: tuple[str, ...]
    fallback: str | None

    @property
    def changed(self) -> list[ChangedFunction]:
        return self.map.changes.functions

    def lines(self) -> list[str]:
        """What the choice is, for a person: the map, the changes, the rows."""
        changed = self.changed
        blind = [f'{c.name} ({c.file})' for c in changed if not c.rows]
        out = [f'coverage map {self.map.label()}',
               f'the range {self.map.good[:12]}..{self.map.bad[:12]} changes {len(changed)} HDF5 '
               f'function(s) of the map; its rows execute {len(changed) - len(blind)}'
               + (f'; no mapped row executes {_few(blind)}' if blind else '')]
        if self.fallback:
            out.append(f'{self.fallback}: every row of the night runs')
        else:
            out.append(f'{len(self.run)} mapped row(s) execute a changed function and run; '
                       f'{len(self.left_out)} mapped row(s) execute none and are left out'
                       + (f' ({_few(sorted(map(short_row, self.left_out)))})'
                          if self.left_out else '')
                       + '; rows the map does not hold run')
        return out

    def to_dict(self) -> dict[str, Any]:
        return {'map': self.map.path, 'map_build': self.map.cmap.build,
                'map_commit': self.map.cmap.commit, 'bad': self.map.bad,
                'followed': self.map.changes.followed, 'lost_lines': self.map.changes.lost,
                'changed': len(self.changed),
                'not_exercised': [f'{c.file}:{c.name}' for c in self.changed if not c.rows],
                'rows_run': list(self.run), 'rows_left_out': list(self.left_out),
                'fallback': self.fallback, 'said': self.lines()}


def _few(names: Sequence[str], limit: int = 6) -> str:
    more = len(names) - limit
    return ', '.join(names[:limit]) + (f' and {more} more' if more > 0 else '')


def short_row(row: str) -> str:
    """A row's name for a sentence: its benchmark when it names one."""
    return row.split('%benchmark=')[-1]


def choose_rows(repo: str, good: str, bad: str, map_paths: Iterable[Path]) -> RowChoice:
    """The rows of the range's changed functions, by the best map for the range."""
    choice = choose_map(repo, good, bad, read_maps(map_paths))
    changed = choice.changes.functions
    run = set(coverage.rows_executing_any(choice.cmap, [(c.file, c.name) for c in changed]))
    fallback = None
    if choice.changes.lost:
        fallback = (f'{choice.changes.lost} changed line(s) of the range are no line of the '
                    f'map\'s commit, so which rows run them is not known')
    elif not changed:
        fallback = 'the range changes no HDF5 function of the map'
    elif not run:
        fallback = (f'no mapped row executes any of the {len(changed)} changed HDF5 '
                    f'function(s)')
    if fallback:
        return RowChoice(choice, (), (), fallback)
    left_out = tuple(sorted(set(choice.cmap.rows) - run))
    return RowChoice(choice, tuple(sorted(run)), left_out, None)


def night_selection(choice: RowChoice) -> tuple[str, ...] | None:
    """ReFrame's options of a bisect step: the night's rows but the mapped ones that
    execute no changed function (None: the night's, unchanged)."""
    if choice.fallback or not choice.left_out:
        return None
    return (*nightrun.NIGHT_SELECTION, '-x', nightrun.tests_regex(list(choice.left_out)))


def keep_tests(tests: Sequence[str], choice: RowChoice) -> tuple[list[str], str | None]:
    """Of ``tests`` (a night's names), all but those the choice leaves out (rows meet
    by their names without the HDF5 build, :func:`coverage.row_name`), and why all of
    them are kept when it leaves out every one (the map cannot say which of them saw
    the slowdown)."""
    if choice.fallback:
        return list(tests), None
    out = {coverage.row_name(r) for r in choice.left_out}
    kept = [t for t in tests if coverage.row_name(t) not in out]
    if tests and not kept:
        return list(tests), (f'none of the {len(tests)} row(s) executes a changed function '
                             f'by the map')
    return kept, None


# ------------------------------------------------------------------ a replay's coverage
def failing_tests(rows: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The tests of a replay's gate rows that FAILed."""
    return tuple(sorted({coverage.gate_row_test(r['label'], r['key']) for r in rows
                         if r.get('verdict') == 'FAIL'}))


def replay_coverage(replay: Mapping[str, Any], map_path: Path, repo: str) -> dict[str, Any]:
    """The coverage part of one replay's result (``h5regress replay --coverage-map``):
    the functions its baseline -> candidate changes, by the best of the maps for that
    range, and which of them the rows that FAILed execute; ``available: False`` with
    the reason when that cannot be said (the replay stands)."""
    try:
        choice = choose_map(repo, replay['baseline'], replay['candidate'],
                            read_maps([map_path]))
    except KeyError as err:
        return {'available': False, 'reason': f'the replay has no {err}'}
    except CoverageError as err:
        return {'available': False, 'reason': str(err)}
    changed = choice.changes.functions
    failing = failing_tests(replay.get('rows') or ())
    wanted = {coverage.row_name(t) for t in failing}
    run_by_fail = [c for c in changed if wanted & {coverage.row_name(r) for r in c.rows}]
    return {'available': True, 'map': choice.label(file_name_only=True), 'map_commit': choice.cmap.commit,
            'followed': choice.changes.followed, 'lost_lines': choice.changes.lost,
            'line': coverage.blind_spot_line(changed),
            'failing_line': coverage.failing_rows_line(changed, failing, choice.cmap.rows),
            'changed': len(changed),
            'not_exercised': [f'{c.file}:{c.name}' for c in changed if not c.rows],
            'failing_rows': list(failing),
            'executed_by_failing': [f'{c.file}:{c.name}' for c in run_by_fail]}


def with_coverage(replays: Sequence[Mapping[str, Any]], map_path: Path,
                  repo: str) -> list[dict[str, Any]]:
    """Each replay with its coverage part (:func:`replay_coverage`), its lines printed."""
    out = []
    for replay in replays:
        part = replay_coverage(replay, map_path, repo)
        print(f'  {replay.get("mode")}: coverage: ' + (
            f'{part["line"]}; {part["failing_line"]}' if part['available'] else
            f'not known ({part["reason"]})'))
        out.append({**replay, 'coverage': part})
    return out
