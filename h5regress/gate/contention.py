"""Pairs a contended machine decided: which to leave out, judged blind to the ratio.

A side (one ReFrame run of one build) that ran while other processes took the
machine is slowed by a large random factor that the ABBA order cannot cancel, and
one such pair's wrong-signed ratio can keep the exact signed-rank test of a real
slowdown above its level. The rule reads only what each side recorded about the
machine (:mod:`h5regress.sideload`, and the wall time of its ReFrame run report),
never a measured value:

* ``wall_factor``: the side's wall time (the time its tests ran, from its run report)
  is above ``wall_factor`` times what its tests take on the SAME build's sides of the
  night (each test's median, over at least ``min_sides`` sides that ran it: the pairs
  after a look run only the undecided tests, so sides differ in their tests), and at
  least ``min_excess_s`` seconds above it (the jitter of sides of a few seconds, as a
  test's night, is no contention). Never the other build's: a real slowdown (or
  speed-up) of the candidate changes every candidate side's wall time, and a rule
  across builds would exclude exactly that evidence;
* ``foreign_share``: processes outside the night's tree at normal priority took at
  least this share of the machine's CPU time during the side, and at least
  ``min_excess_s`` CPU seconds (only sides that recorded it; the nightly writes a
  ``.side`` file beside each run report).

A pair is excluded when either of its sides is contended; the gate then judges every
metric on the pairs kept, at the levels of the pairs it reached
(:func:`h5regress.stats.look_level`), and a metric left with fewer pairs than the
loop's first look (``min_pairs`` without looks) is never PASS or NO-SLOWDOWN-SEEN.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from h5regress import runreport, sideload, stats
from h5regress.gate.verdicts import NO_SLOWDOWN_SEEN


@dataclasses.dataclass(frozen=True)
class Side:
    """What the rule knows of one side: its wall time (None: unknown), and the
    share of the machine's CPU taken outside the night at normal priority (None:
    not recorded: the night predates the ``.side`` files)."""
    pair_id: str
    build: str
    wall_s: float | None
    foreign_share: float | None = None
    foreign_s: float | None = None          # ... in CPU seconds
    load_start: float | None = None
    load_end: float | None = None
    source: str = ''
    #: the time each of its tests ran ((test, seconds), from its run report); () when
    #: unknown: the side is then one test of ``wall_s``
    tests: tuple[tuple[str, float], ...] = ()
    #: (test, why) of each of its tests that did not pass: ReFrame's failure reason,
    #: else the check's ``skip_reason`` (ReFrame's report keeps none for a skip)
    not_passed: tuple[tuple[str, str], ...] = ()

    def timed_tests(self) -> tuple[tuple[str, float], ...]:
        if self.tests:
            return self.tests
        return (('', self.wall_s),) if self.wall_s is not None else ()


@dataclasses.dataclass
class Exclusion:
    """The rule's answer for a night: the pairs excluded and why, every side judged."""
    enabled: bool
    judged_by: str
    excluded: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    sides: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    records: int = 0            # the records of the excluded pairs, left out

    def as_dict(self, rule: Mapping[str, Any]) -> dict[str, Any]:
        return {'enabled': self.enabled, 'rule': dict(rule), 'judged_by': self.judged_by,
                'excluded': [{'pair': p, 'why': why} for p, why in sorted(self.excluded.items())],
                'pairs_excluded': len(self.excluded), 'records_excluded': self.records,
                'sides': self.sides}


# ------------------------------------------------------------------ the sides' data
def side_of_report(text: str, source: str) -> Side | None:
    """The side a ReFrame run report ran (its records' pair id and build) and its wall
    time (``session_info``); None when the report names no single pair and build."""
    try:
        report = runreport.load(text)
    except ValueError:
        return None
    cases = report.cases
    ids = set()
    for case in cases:
        try:
            pair = json.loads(case.get('h5r_context') or '{}').get('pair_id')
        except (ValueError, AttributeError):
            pair = None
        # a test that failed or skipped before its context was written: its own variable
        pair = pair or case.get('pair_id') or None
        if pair is not None and case.get('hdf5_build'):
            ids.add((str(pair), str(case['hdf5_build'])))
    if len(ids) != 1:
        return None
    (pair_id, build), = ids
    # the time its tests ran: without ReFrame's loading of the checks, which a
    # build's first side of a night does in full and its later sides narrowed
    runs = [(str(case.get('display_name') or case.get('name')), case.get('time_run'))
            for case in cases]
    not_passed = tuple(
        (str(case.get('display_name') or case.get('name')),
         str(case.get('fail_reason') or case.get('skip_reason') or case.get('result')))
        for case in cases if case.get('result') not in ('pass', None))
    if runs and all(isinstance(t, (int, float)) for _, t in runs):
        return Side(pair_id, build, math.fsum(t for _, t in runs), source=source,
                    tests=tuple((name, float(t)) for name, t in runs), not_passed=not_passed)
    wall = report.time_elapsed
    return Side(pair_id, build, float(wall) if wall is not None else None, source=source,
                not_passed=not_passed)


def with_load(side: Side, load: sideload.SideLoad) -> Side:
    """A report's side with what its ``.side`` file recorded."""
    return dataclasses.replace(side, wall_s=side.wall_s if side.wall_s is not None
                               else load.wall_s, foreign_share=load.foreign_normal_share,
                               foreign_s=load.foreign_normal_cpu_s,
                               load_start=load.load_start[0], load_end=load.load_end[0])


def load_sides(report_paths: Iterable[str]) -> tuple[list[Side], list[str]]:
    """The sides of the run reports under ``report_paths`` (files or directories), each
    with its ``.side`` file when there is one; unreadable ones named in the problems."""
    files = []
    for path in report_paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in names if n.endswith('.json')]
        elif str(path).endswith('.json'):
            files.append(str(path))
    sides, problems = [], []
    for path in sorted(files):
        try:
            with open(path, encoding='utf-8', errors='replace') as fp:
                side = side_of_report(fp.read(), path)
        except OSError as err:
            problems.append(f'{path}: {err}')
            continue
        if side is None:
            continue
        load_path = path[:-len('.json')] + sideload.SUFFIX
        try:
            with open(load_path, encoding='utf-8') as fp:
                side = with_load(side, sideload.parse(fp.read(), load_path))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as err:
            problems.append(f'{err}; the contention rule judges that side by its wall time')
        sides.append(side)
    return sides, problems


# ------------------------------------------------------------------ the rule
def judge(sides: Sequence[Side], builds: Sequence[str], rule: Mapping[str, Any],
          pair_ok=lambda pair: True) -> Exclusion:
    """The pairs to exclude among ``sides`` of ``builds`` whose pair ``pair_ok`` keeps
    (the attempt's), under ``rule`` (``contention`` in ``ci/gate.yaml``)."""
    if not rule.get('enabled'):
        return Exclusion(False, 'off')
    mine = [s for s in sides if s.build in builds and pair_ok(s.pair_id)]
    if not mine:
        return Exclusion(True, 'nothing: no run report of the night\'s sides was read')
    foreign = any(s.foreign_share is not None for s in mine)
    out = Exclusion(True, 'wall time and foreign CPU' if foreign else
                    'wall time only (no side recorded its foreign CPU)')
    factor, limit = float(rule['wall_factor']), rule.get('foreign_share')
    excess = float(rule['min_excess_s'])
    for build in builds:
        own = sorted((s for s in mine if s.build == build), key=lambda s: s.pair_id)
        usual = _usual_times(own, int(rule['min_sides']))
        for s in own:
            why = []
            expected = _expected_wall(s, usual)
            if expected and s.wall_s > factor * expected and s.wall_s - expected >= excess:
                why.append(f'{build} side took {s.wall_s:.0f} s, {s.wall_s / expected:.2f}x the '
                           f'{expected:.0f} s its tests take at their median on its build\'s '
                           f'sides (limit {factor:g}x and {excess:g} s more)')
            if limit is not None and s.foreign_share is not None \
                    and s.foreign_share >= float(limit) \
                    and (s.foreign_s is None or s.foreign_s >= excess):
                why.append(f'{build} side: processes outside the night took '
                           f'{s.foreign_share:.0%} of the CPU at normal priority'
                           + (f', {s.foreign_s:.0f} s' if s.foreign_s is not None else '')
                           + f' (limit {float(limit):.0%} and {excess:g} s)')
            out.sides.append({'pair': s.pair_id, 'build': build, 'wall_s': s.wall_s,
                              'wall_to_expected': s.wall_s / expected if expected else None,
                              'foreign_share': s.foreign_share, 'load_start': s.load_start,
                              'load_end': s.load_end, 'contended': bool(why)})
            if why:
                out.excluded.setdefault(s.pair_id, []).extend(why)
    return out


def _usual_times(sides: Sequence[Side], min_sides: int) -> dict[str, float]:
    """Each test's median time over ``sides`` (one build's), for tests that ran on at
    least ``min_sides`` of them."""
    times: dict[str, list[float]] = {}
    for side in sides:
        for name, seconds in side.timed_tests():
            times.setdefault(name, []).append(seconds)
    return {name: stats.median(ts) for name, ts in times.items() if len(ts) >= min_sides}


def _expected_wall(side: Side, usual: Mapping[str, float]) -> float | None:
    """What ``side``'s tests take at their usual times; None when one has no usual time
    (too few sides ran it) or the side's wall time is unknown."""
    tests = side.timed_tests()
    if side.wall_s is None or not tests or any(name not in usual for name, _ in tests):
        return None
    return math.fsum(usual[name] for name, _ in tests)


def mark_rows(metrics: Sequence[Any], exclusion: Exclusion, records: int, needed: int) -> None:
    """Each row of :class:`h5regress.gate.comparing.MetricComparison` ``metrics`` says
    how many of the night's pairs were excluded; a gated one left with fewer than
    ``needed`` pairs is not PASS (:func:`too_few_left`)."""
    exclusion.records = records
    for m in metrics:
        m.row['excluded_pairs'] = len(exclusion.excluded)
        if m.role == 'gated' and m.row.get('verdict'):
            too_few_left(m.row, needed)


def too_few_left(row: dict[str, Any], needed: int) -> None:
    """A gated row that exclusion left with fewer than ``needed`` pairs cannot PASS:
    its PASS or NO-SLOWDOWN-SEEN becomes INCONCLUSIVE, saying why."""
    if row.get('excluded_pairs') and row['verdict'] in ('PASS', NO_SLOWDOWN_SEEN) \
            and row['n_pairs'] < needed:
        row['reason'] = (f'{row["excluded_pairs"]} contended pair(s) excluded leave '
                         f'{row["n_pairs"]}, fewer than the {needed} the first look needs '
                         f'(else {row["verdict"]}: {row["reason"]})')
        row['verdict'] = 'INCONCLUSIVE'


def never_a_pass_by_exclusion(metrics: Sequence[Any], whole: Sequence[Any]) -> None:
    """A gated row of ``metrics`` (judged without the excluded pairs) that is PASS or
    NO-SLOWDOWN-SEEN where the same row of ``whole`` (judged on every pair) is not
    becomes INCONCLUSIVE: the rule cannot see the ratio, and a candidate whose own
    slowdown stretches some of its sides (a lock that sometimes waits, a run that
    sometimes swaps) would otherwise have that evidence excluded and PASS."""
    verdicts = {m.row.get('key'): m.row for m in whole if m.role == 'gated'}
    good = ('PASS', NO_SLOWDOWN_SEEN)
    for m in metrics:
        row = m.row
        other = verdicts.get(row.get('key'))
        if m.role != 'gated' or other is None or row.get('verdict') not in good \
                or other.get('verdict') in good or not other.get('verdict'):
            continue
        row['reason'] = (f'{row["verdict"]} on the pairs kept, but {other["verdict"]} on '
                         f'every pair ({other.get("reason") or "-"}): the excluded pairs '
                         f'hold a slowdown, so leaving them out decides nothing')
        row['verdict'] = 'INCONCLUSIVE'
        row['slower'] = bool(other.get('slower'))
