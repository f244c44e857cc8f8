"""``h5regress replay``: a case of the regression corpus (``regressions/``), replayed.

    h5regress replay CASE... | --all | --between GOOD BAD [--fix] [--no-control] [--only MODE]... [--prepare]
                     [--builder spack|stand-in] --repo PATH [--mirror URL]... [--tool TOOL]... [--checks REGEX]
                     [--work DIR] [--results DIR]

For each case it builds the case's good commit (the regressing commit's first
parent, or the range's good end) and bad commit (the regressing commit, or the
range's bad end) with the bisect's builders (:class:`h5regress.bisectbuild.SpackBuilder`,
:class:`h5regress.bisectbuild.StandInBuilder`) and runs the night between them with the
bisect's runs (the nightly's pairs and gate, or simulated noise for the stand-in
builder): pairs to the first look, more while the gate is undecided, up to the cap.
``--fix`` replays the fixing commit against its first parent (the bad code): it must
not FAIL toward slower, and the rows whose interval says faster are its recovery. A
case with a fix but no regressing commit (a defect found as it was fixed) replays
its fix alone. The control is an A/A of the good commit against itself
(``--no-control``: none): a FAIL there is a false alarm. ``--only MODE`` runs only
those replays (``regression``, ``fix``, ``control``): e.g. the A/A of a case whose
regression was replayed before, with other rows, in another work directory.
``--between GOOD BAD`` replays two commits (or tags) of the clone that no case names,
as a range case would: a sweep for slowdowns nobody has reported, whose FAILing rows
``h5regress bisect`` then narrows (the result is ``between-<good>-<bad>.json``).
``--prepare`` builds and runs nothing: each commit's source goes into the mirror and
its environment copy is concretized, so that the replay, run later with the same
options, starts with the builds (what can be done while another measurement holds
the machine).

One result per case (``<results>/<case>.json``): per replay the gate's verdict per
row, ratio and interval, pairs, wall time, builds and how many were reused, and the
rows (``checks``) and tools it ran. Resumable: ``<work>/replay-state.json`` keeps every build (shared by the cases and
replays of that work directory) and every finished replay; the same command goes
on where it stopped.

A clone that lacks some blobs (public snapshots lack test data) cannot ``git
archive`` a commit whole: the Spack builder's source mirror gets each commit's
tarball without the missing files (:func:`bisectbuild.source_tarball`), which a build does
not need.

Exit codes: 0 done, 1 a fix or control replay FAILed (a false alarm), 4 error (a
case without commits to replay, a baseline that does not build or, with
``--prepare``, a commit that does not concretize), 64 bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h5regress import (atomic, bisectbuild, bisectruns, bisectsearch, corpus, coveragerange,
                       nightly)
from h5regress.cmdline import EXIT_ERROR, EXIT_USAGE, ArgParser, parse_args

STATE_FILE = 'replay-state.json'
MODES = ('regression', 'fix', 'control')
#: state keys a second run must agree on (builds and results of others would mix)
SAME = ('builder', 'checks', 'looks', 'tools')
EXIT_FALSE_FAIL = 1


class ReplayError(Exception):
    """A case or state that cannot be replayed; the message names the case or file."""


@dataclass(frozen=True)
class Pair:
    """One replay of a case: ``baseline`` against ``candidate``."""
    case: str
    mode: str
    baseline: str
    candidate: str

    @property
    def key(self) -> str:
        return f'{self.case}/{self.mode}'


def pairs_of(case: corpus.Case, fix: bool, control: bool) -> list[Pair]:
    """The replays of a case: the regression, then the fix (``fix``), then the A/A."""
    reg = case.regressing
    if isinstance(reg, corpus.Commit):
        good, bad = reg.first_parent, reg.sha
    elif isinstance(reg, corpus.CommitRange):
        good, bad = reg.good, reg.bad
    elif fix and case.fix is not None:
        # a defect no commit introduced (found as it was fixed): the fix is what can be
        # replayed; the fix's first parent is the A/A control's commit
        good, bad = case.fix.first_parent, None
    else:
        raise ReplayError(f'{case.path}: regressing_commit: no commit or range to replay '
                          f'(unverified; with a fix_commit, --fix replays the fix alone)')
    out = [] if bad is None else [Pair(case.id, 'regression', good, bad)]
    if fix:
        if case.fix is None:
            raise ReplayError(f'{case.path}: fix_commit: none to replay (--fix)')
        out.append(Pair(case.id, 'fix', case.fix.first_parent, case.fix.sha))
    if control:
        out.append(Pair(case.id, 'control', good, good))
    return out


# ------------------------------------------------------------------ runs
class Recording(bisectsearch.Runs):
    """The bisect's runs, keeping the last gate result (every row's verdict)."""

    def __init__(self, runs: bisectsearch.Runs) -> None:
        self.runs = runs
        self.last: dict[str, Any] = {}

    def start(self, good, cand, commit, step_dir, margin=None) -> None:
        self.runs.start(good, cand, commit, step_dir, margin)

    def pairs(self, first: int, last: int) -> None:
        self.runs.pairs(first, last)

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        self.last = self.runs.gate(looks_)
        return self.last


def row_results(gate_result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each gated row: its verdict, ratio with interval, pairs and sensitivity; an
    ERROR row, and one a build's runs left without samples, also the gate's reason (it
    has no ratio to say why)."""
    rows = []
    for m in bisectsearch.judged_rows(gate_result, []):
        row = {k: m.get(k) for k in ('key', 'label', 'verdict', 'ratio', 'ratio_lo', 'ratio_hi',
                                      'perf_ratio', 'perf_lo', 'perf_hi', 'n_pairs',
                                      'sensitivity')}
        if m.get('verdict') == 'ERROR' or m.get('runs_said'):
            row['reason'] = m.get('reason')
        rows.append(row)
    return rows


def faster_rows(rows: list[dict[str, Any]]) -> list[str]:
    """Labels of the rows whose performance interval lies above 1: faster (a fix's
    recovery), time metrics included."""
    return [r['label'] for r in rows if r.get('perf_lo') is not None and r['perf_lo'] > 1]


def verdict_of(mode: str, rows: list[dict[str, Any]]) -> str:
    """``caught`` (a row FAILed), ``ERROR`` (none FAILed, a row ERRORed: the night exits
    4 naming the row the candidate broke, e.g. its runs skipped or failed their sanity)
    or ``missed`` for a regression; ``false FAIL``/``no false FAIL`` else (an ERROR
    there shows in the table's cell)."""
    failed = any(r['verdict'] == 'FAIL' for r in rows)
    if mode == 'regression':
        return 'caught' if failed else \
            'ERROR' if any(r['verdict'] == 'ERROR' for r in rows) else 'missed'
    return 'false FAIL' if failed else 'no false FAIL'


def load_now() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def replay_pair(state: bisectsearch.State, builder: bisectbuild.Builder, runs: bisectsearch.Runs, pair: Pair,
                work: Path) -> dict[str, Any]:
    """One replay, or its stored result; kept in the state file once done."""
    done = state.data['replays'].get(pair.key)
    if done is not None:
        bisectbuild.log(f'{pair.key}: done before ({done["verdict"]}), not run again')
        return done
    t0, load0 = time.monotonic(), load_now()
    needed = sorted({pair.baseline, pair.candidate})
    reused = [sha for sha in needed if sha in state.data['builds']]
    good = bisectsearch.get_build(state, builder, pair.baseline)
    cand = bisectsearch.get_build(state, builder, pair.candidate)
    if good is None or cand is None:
        sha = pair.baseline if good is None else pair.candidate
        raise ReplayError(f'{pair.key}: {sha} cannot be built '
                          f'({state.data["builds"][sha]["error"]})')
    recorded = Recording(runs)
    step = bisectsearch.run_step(recorded, good, cand, pair.candidate,
                           work / 'runs' / pair.case / pair.mode, state.data['looks'], [])
    rows = row_results(recorded.last)
    result = {'mode': pair.mode, 'baseline': pair.baseline, 'candidate': pair.candidate,
              'checks': state.data['checks'], 'tools': state.data['tools'],
              'verdict': verdict_of(pair.mode, rows), 'gate': recorded.last.get('overall'),
              'pairs': step['pairs'], 'rows': rows, 'faster_rows': faster_rows(rows),
              'builds': len(needed), 'builds_reused': len(reused),
              'build_seconds': round(sum(state.data['builds'][s].get('seconds', 0)
                                         for s in needed if s not in reused), 1),
              'run_seconds': step['seconds'],
              'wall_seconds': round(time.monotonic() - t0, 1),
              'load': {'start': load0, 'end': load_now()},
              'finished': bisectbuild.now_iso()}
    state.data['replays'][pair.key] = result
    state.save()
    bisectbuild.log(f'{pair.key}: {result["verdict"]} ({result["gate"]}, {step["pairs"]} pairs)')
    return result


def prepare_pairs(state: bisectsearch.State, builder: bisectbuild.Builder,
                  pairs: Sequence[Pair]) -> None:
    """Each commit the pairs need and the state has not built, prepared (no build)."""
    for sha in dict.fromkeys(s for p in pairs for s in (p.baseline, p.candidate)):
        if sha in state.data['builds']:
            print(f'{sha[:12]}: built before ({state.data["builds"][sha]["status"]})')
            continue
        try:
            print(f'{sha[:12]}: {builder.prepare(sha)}')
        except bisectbuild.BuildFailed as err:
            raise ReplayError(f'{sha}: cannot be prepared ({err})') from None


def open_state(work: Path, params: dict[str, Any]) -> bisectsearch.State:
    path = work / STATE_FILE
    if not path.is_file():
        return bisectsearch.State(path, {**params, 'version': 1, 'started': bisectbuild.now_iso(),
                                   'builds': {}, 'replays': {}, 'wall_seconds': 0.0})
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise ReplayError(f'{path}: not JSON ({err}); remove it to start over') from None
    for k in SAME:
        if data.get(k) != params[k]:
            raise ReplayError(f'{path}: replays with {k} = {data.get(k)!r} are in this work '
                              f'directory, not {params[k]!r}: give another --work')
    return bisectsearch.State(path, data)


def write_result(results: Path, case: corpus.Case, replays: list[dict[str, Any]],
                 state: bisectsearch.State) -> Path:
    """``<results>/<case>.json``: this run's replays over the file's earlier ones."""
    path = results / f'{case.id}.json'
    old = json.loads(path.read_text()) if path.is_file() else {}
    # a replay stored before results named their rows ran the file's rows
    earlier = {mode: {'checks': old.get('checks'), **r}
               for mode, r in old.get('replays', {}).items()}
    merged = {**earlier, **{r['mode']: r for r in replays}}
    data = {'case': case.id, 'family': case.family, 'title': case.title,
            'rows_expected': list(case.rows), 'builder': state.data['builder'],
            'looks': state.data['looks'],
            'machine': {'cpus': os.cpu_count(), 'arch': platform.machine()},
            'replays': merged}
    results.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(data, indent=1) + '\n')
    return path


# ------------------------------------------------------------------ the table
def worst_row(replay: dict[str, Any]) -> dict[str, Any] | None:
    """The row with the lowest performance ratio (the FAIL one when one FAILed)."""
    rows = [r for r in replay['rows'] if r.get('perf_ratio') is not None]
    fails = [r for r in rows if r['verdict'] == 'FAIL']
    return min(fails or rows, key=lambda r: r['perf_ratio'], default=None)


def cell_ratio(row: dict[str, Any]) -> str:
    """A gated row's performance ratio (below 1: worse) with its interval."""
    # results stored before the performance interval was kept have the ratio's, the
    # same where higher is better (every row of theirs)
    lo, hi = (row['ratio_lo'], row['ratio_hi']) if row.get('perf_lo') is None else \
        (row['perf_lo'], row['perf_hi'])
    out = f'{row["perf_ratio"]:.3f} [{lo:.3f}, {hi:.3f}]'
    if not math.isclose(row['ratio'], row['perf_ratio'], rel_tol=1e-6):
        # lower is better (a peak memory): the performance ratio is the baseline's
        # figure over the candidate's; say the candidate's figure too
        metric = row['label'].split(' [')[0].split()[-1]
        out += f' ({metric} {row["ratio"]:.2f}x the baseline\'s)'
    return out


def cell(replay: dict[str, Any] | None) -> str:
    """One replay in a table cell: verdict, pairs, worst row's performance ratio (below 1:
    worse) and interval, time."""
    if replay is None:
        return '-'
    row = worst_row(replay)
    ratio = ''
    if row is not None and row.get('ratio') is not None:
        ratio = ' ' + cell_ratio(row)
    faster = replay.get('faster_rows') if replay['mode'] == 'fix' else None
    if faster:
        row = next(r for r in replay['rows'] if r['label'] == faster[0])
        ratio += (f'; recovery seen: {len(faster)} row(s) better, performance '
                  f'{row["perf_ratio"]:.3f} [{row["perf_lo"]:.3f}, {row["perf_hi"]:.3f}]')
    # a row the candidate broke has no ratio: the cell says so instead of hiding it
    errors = sum(r['verdict'] == 'ERROR' for r in replay['rows'])
    if errors:
        ratio += f'; {errors} row(s) ERROR'
    return f'{replay["verdict"]}, {replay["pairs"]} pairs{ratio}, {replay["wall_seconds"]:.0f} s'


#: a row of a gate label or of a ReFrame test's name: the check's name, its benchmark
_ROW = re.compile(r'^(\w+)\s.*?%benchmark=(\S+)')


def row_of(label: str) -> tuple[str, str] | None:
    """(check, benchmark) of a gate row's label (``h5paths_check %num_nodes=1 ...
    %benchmark=NAME read bw [key]``) or of a ReFrame test's display name; None when it
    names no benchmark."""
    match = _ROW.match(label)
    return (match.group(1), match.group(2)) if match else None


def night_rows(described: Sequence[dict[str, Any]], tag: str) -> frozenset[tuple[str, str]]:
    """The rows of the tests tagged ``tag`` (the default night's) among ReFrame's
    ``--describe`` of the checks (:func:`h5regress.refs.described_checks`)."""
    return frozenset(row for test in described if tag in (test.get('tags') or ())
                     and (row := row_of(test['display_name'])) is not None)


def by_the_night(replay: dict[str, Any], night: frozenset[tuple[str, str]]) -> bool:
    """Whether a row of the default night gave the regression replay's verdict (FAIL when
    caught, ERROR when the night ended naming a broken row): a replay runs the rows its
    case names, and a row outside the night catches nothing on a night."""
    decisive = 'FAIL' if replay['verdict'] == 'caught' else 'ERROR'
    return any(row_of(r['label']) in night for r in replay['rows']
               if r['verdict'] == decisive)


def catch_table(results: list[dict[str, Any]], corpus_size: int,
                night: frozenset[tuple[str, str]] | None = None) -> str:
    """The catch-rate table of stored replay results (one per case). With ``night`` (the
    default night's rows, :func:`night_rows`), a column says whether a row of the night
    caught each regression, and the last line counts what the night catches."""
    head = '| case | family | regression (worst row) | fix | A/A control | builds reused |'
    if night is not None:
        head += ' by the default night |'
    lines = [head, '|---' * head.count(' | ') + '|---|']
    caught = errors = replayed = false_fails = fixes = recovered = 0
    night_caught = night_errors = 0
    for res in sorted(results, key=lambda r: r['case']):
        # the verdicts from the rows: results stored before a verdict was added say
        # what the rows say now
        modes = {mode: {**done, 'verdict': verdict_of(mode, done['rows'])}
                 for mode, done in res['replays'].items()}
        reg = modes.get('regression')
        replayed += reg is not None
        caught += reg is not None and reg['verdict'] == 'caught'
        errors += reg is not None and reg['verdict'] == 'ERROR'
        false_fails += sum(modes[m]['verdict'] == 'false FAIL' for m in ('fix', 'control')
                           if m in modes)
        fixes += 'fix' in modes
        recovered += bool(modes.get('fix', {}).get('faster_rows'))
        reused = sum(r['builds_reused'] for r in modes.values())
        builds = sum(r['builds'] for r in modes.values())
        line = (f'| {res["case"]} | {res["family"]} | {cell(reg)} | '
                f'{cell(modes.get("fix"))} | {cell(modes.get("control"))} | '
                f'{reused} of {builds} |')
        if night is not None:
            seen = reg is not None and reg['verdict'] != 'missed' and by_the_night(reg, night)
            night_caught += seen and reg['verdict'] == 'caught'
            night_errors += seen and reg['verdict'] == 'ERROR'
            line += (' - |' if reg is None or reg['verdict'] == 'missed' else
                     ' yes |' if seen else ' no: its row is not in the night |')
        lines.append(line)
    lines.append(f'\ncaught {caught} of {replayed} replayed case(s) ({corpus_size} in the '
                 f'corpus)'
                 + (f'; {errors} more ended ERROR (no row FAILed; the night failed naming '
                    f'a row the candidate broke)' if errors else '')
                 + f'; false FAILs on fix and A/A replays: {false_fails}; '
                 f'recovery seen on {recovered} of {fixes} fix replay(s)')
    if night is not None:
        lines.append(f'by the rows of the default night: caught {night_caught} of '
                     f'{replayed}, {night_errors} more ended ERROR')
    return '\n'.join(lines)


def sweep_table(results: list[dict[str, Any]]) -> str:
    """The sweeps (``--between`` results), one line each: the rows that FAILed and those
    left undecided with their performance ratio and interval, how many rows had no
    ratio (a build without samples) and how many PASSed or saw no slowdown."""
    def rows(found: list[dict[str, Any]]) -> str:
        return '; '.join(f'{(row_of(r["label"]) or ("", r["label"]))[1]} {cell_ratio(r)}'
                         for r in found) or '-'
    lines = ['| span | baseline | candidate | pairs | FAIL | undecided | no ratio | '
             'PASS or no slowdown seen | wall |', '|---' * 9 + '|']
    # a sweep run with --only control has no regression replay to show
    swept = [r for r in results if 'regression' in r['replays']]
    for res in sorted(swept, key=lambda r: r['replays']['regression']['finished']):
        reg = res['replays']['regression']
        judged = [r for r in reg['rows'] if r.get('ratio') is not None]
        fail = [r for r in judged if r['verdict'] == 'FAIL']
        undecided = [r for r in judged if r['verdict'] == 'INCONCLUSIVE']
        lines.append(f'| {res["title"]} | {reg["baseline"][:8]} | {reg["candidate"][:8]} | '
                     f'{reg["pairs"]} | {rows(fail)} | {rows(undecided)} | '
                     f'{len(reg["rows"]) - len(judged)} | '
                     f'{len(judged) - len(fail) - len(undecided)} | '
                     f'{reg["wall_seconds"]:.0f} s |')
    return '\n'.join(lines)


def load_results(directory: Path) -> list[dict[str, Any]]:
    """Every ``<case>.json`` of a results directory; an unreadable one names its file."""
    out = []
    for path in sorted(directory.glob('*.json')):
        try:
            out.append(json.loads(path.read_text()))
        except ValueError as err:
            raise ReplayError(f'{path}: not JSON ({err})') from None
    return out


# ------------------------------------------------------------------ CLI
def build_parser() -> ArgParser:
    p = ArgParser(prog='h5regress replay', description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('cases', nargs='*', metavar='CASE', help='a case id or case file')
    p.add_argument('--all', action='store_true', help='every case with commits to replay')
    p.add_argument('--between', nargs=2, metavar=('GOOD', 'BAD'),
                   help='two commits or tags of --repo instead of a case (a sweep)')
    p.add_argument('--corpus', type=Path, default=Path('regressions'))
    p.add_argument('--fix', action='store_true', help='replay the fix against its parent too')
    p.add_argument('--no-control', action='store_true', help='no A/A of the good commit')
    p.add_argument('--only', action='append', choices=MODES, default=[], metavar='MODE',
                   help=f'run only these replays of each case ({", ".join(MODES)}); '
                        '--only fix needs no --fix, --only control no --no-control')
    p.add_argument('--prepare', action='store_true',
                   help='build and run nothing: sources and concretization only')
    p.add_argument('--repo', required=True, help='HDF5 clone (stand-in: stand-in repository)')
    p.add_argument('--builder', choices=('spack', 'stand-in'), default='spack')
    p.add_argument('--mirror', action='append', default=[], metavar='URL')
    p.add_argument('--tool', action='append', default=[], metavar='TOOL',
                   help='Spack builder: build only these tools with each commit')
    p.add_argument('--checks', help='ReFrame name regex (default: the night\'s)')
    p.add_argument('--work', type=Path, default=Path('replay-work'))
    p.add_argument('--results', type=Path, help='one JSON per case (default <work>/results)')
    p.add_argument('--pairs', type=int, default=bisectruns.DEFAULT_PAIRS)
    p.add_argument('--more-pairs', type=int, default=bisectruns.DEFAULT_MORE)
    p.add_argument('--max-pairs', type=int, default=bisectruns.DEFAULT_MAX)
    p.add_argument('--simulate-cv', type=float, metavar='CV',
                   help='stand-in builder only: simulated runs at this CV (the tests)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--nightly-arg', action='append', default=[], metavar='ARG')
    p.add_argument('--coverage-map', type=Path, metavar='MAP',
                   help='coverage map (h5regress coverage run): each replay\'s result says '
                        'which of its changed HDF5 functions the FAILing rows execute')
    return p


def between_case(repo: Path, good: str, bad: str) -> corpus.Case:
    """A range case of two commits of ``repo`` that no case file names (``--between``)."""
    shas = []
    for name in (good, bad):
        try:
            shas.append(bisectbuild.resolve(repo, name, '--between'))
        except bisectbuild.BisectError:
            raise ReplayError(f'--between {name}: not a commit of {repo}') from None
    return corpus.Case(id=f'between-{shas[0][:12]}-{shas[1][:12]}',
                       title=f'the night between {good} and {bad}', family='sweep',
                       status='unreplayed', regressing=corpus.CommitRange(*shas), fix=None,
                       rows=(), source_urls=(), path='--between', data={})


def chosen_cases(args) -> list[corpus.Case]:
    """The cases named, or every case with commits (``--all``); none with ``--between``
    (its case needs the clone: :func:`between_case`)."""
    if args.between:
        if args.all or args.cases:
            raise ReplayError('--between replays two commits: give no CASE or --all with it')
        return []
    if args.all:
        return [c for c in corpus.load_corpus(args.corpus)
                if c.regressing is not None or (args.fix and c.fix is not None)]
    if not args.cases:
        raise ReplayError('name a CASE (id or file), or give --all or --between')
    return [corpus.load_case(c if c.endswith('.yaml') else args.corpus / f'{c}.yaml')
            for c in args.cases]


def chosen_pairs(cases: list[corpus.Case], args) -> list[Pair]:
    """The cases' replays, only the ``--only`` modes when it is given."""
    fix = args.fix or 'fix' in args.only
    pairs = [p for c in cases for p in pairs_of(c, fix, not args.no_control)]
    return [p for p in pairs if not args.only or p.mode in args.only]


def make_runs(args, simulate: bool) -> bisectsearch.Runs:
    if simulate:
        return bisectruns.SimulatedRuns(args.simulate_cv, random.Random(args.seed))
    night = dataclasses.replace(
        nightly.parse_args(args.nightly_arg), pairs=args.pairs, more_pairs=args.more_pairs,
        max_pairs=args.max_pairs, quiet=True, checks=args.checks, select=None,
        stand_in=args.builder == 'stand-in' and not args.checks)
    return bisectruns.NightlyRuns(night, nightly.gate_look)


def run(args) -> int:
    simulate = args.simulate_cv is not None
    if simulate and args.builder != 'stand-in':
        raise ReplayError('--simulate-cv needs --builder stand-in (known slowdowns)')
    cases = chosen_cases(args)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    repo = bisectbuild.local_repo(args.repo, work)
    if args.between:
        cases = [between_case(repo, *args.between)]
    pairs = chosen_pairs(cases, args)
    if args.builder == 'stand-in':
        builder: bisectbuild.Builder = bisectbuild.StandInBuilder(repo, work, tools=not simulate)
    else:
        builder = bisectbuild.SpackBuilder(work, args.mirror, repo=repo,
                                      packages=bisectruns.tool_packages(args.tool))
        for commit in sorted({s for p in pairs for s in (p.baseline, p.candidate)}):
            builder.archive_source(commit)
    params = {'builder': builder.name + (f' (simulated, CV {args.simulate_cv:g})'
                                         if simulate else ''),
              'checks': args.checks, 'tools': sorted(args.tool),
              'looks': bisectsearch.looks(args.pairs, args.more_pairs, args.max_pairs)}
    state = open_state(work, params)
    if args.prepare:
        prepare_pairs(state, builder, pairs)
        return 0
    results = args.results or work / 'results'
    false_fail = False
    for case in cases:
        done = [replay_pair(state, builder, make_runs(args, simulate), p, work)
                for p in pairs if p.case == case.id]
        if args.coverage_map:   # issue 28: which changed functions the FAIL rows execute
            done = coveragerange.with_coverage(done, args.coverage_map, str(repo))
        print(f'{case.id}: ' + '; '.join(f'{r["mode"]} {r["verdict"]} ({r["pairs"]} pairs, '
                                          f'{r["wall_seconds"]:.0f} s)' for r in done))
        print(f'  -> {write_result(results, case, done, state)}')
        false_fail |= any(r['verdict'] == 'false FAIL' for r in done)
    return EXIT_FALSE_FAIL if false_fail else 0


def main(argv: Sequence[str] | None = None) -> int:
    args, code = parse_args(build_parser(), argv)
    if args is None:
        return code
    if args.no_control and 'control' in args.only:
        print('h5regress replay: error: --no-control and --only control: give one of them',
              file=sys.stderr)
        return EXIT_USAGE
    nightly.handle_signals()    # a signal stops the runs' children too; the state keeps the rest
    try:
        return run(args)
    except nightly.Interrupted as sig:
        problem = (f'stopped by {sig}; the same command goes on from '
                   f'{args.work.resolve() / STATE_FILE}')
    except (ReplayError, corpus.CorpusError, bisectbuild.BisectError, OSError) as err:
        problem = f'error: {err}'
    nightly.stop_descendants()
    print(f'h5regress replay: {problem}', file=sys.stderr)
    return EXIT_ERROR

if __name__ == '__main__':
    sys.exit(main())
