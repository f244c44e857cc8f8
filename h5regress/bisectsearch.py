"""The bisect's search: which commit next, a step's verdict from the gate, the state
file that makes it resumable, the result.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from h5regress import atomic, followup, runlock
from h5regress.bisectbuild import (BisectError, Builder, BuildFailed, Built, Commit,
                                   first_parent_commits, log, merged_commits, now_iso)
from h5regress.nightrun import lacks_baseline


STATE_FILE = 'bisect-state.json'


STATE_VERSION = 2


# ------------------------------------------------------------------ the search
def next_index(n: int, verdicts: dict[int, str]) -> int | None:
    """Index (0 .. n-1, n-1 known bad) to test next, or None when the search is done.

    ``verdicts``: index -> 'good', 'bad' or 'skip'. Between the last good commit
    below the first bad one and that bad one, the untested commit nearest the
    middle (ties: the older), as ``git bisect`` with skips does."""
    lo, hi = bounds(n, verdicts)
    untested = [i for i in range(lo + 1, hi) if i not in verdicts]
    if not untested:
        return None
    mid = (lo + hi) / 2
    return min(untested, key=lambda i: (abs(i - mid), i))


def bounds(n: int, verdicts: dict[int, str]) -> tuple[int, int]:
    """(last good index or -1 for --good, first bad index, at most n-1 for --bad)."""
    hi = min([i for i, v in verdicts.items() if v == 'bad'] + [n - 1])
    lo = max([i for i, v in verdicts.items() if v == 'good' and i < hi] + [-1])
    return lo, hi


# ------------------------------------------------------------------ runs and verdicts
def looks(pairs: int, more: int, cap: int) -> list[int]:
    out = [pairs]
    while out[-1] < cap:
        out.append(min(cap, out[-1] + more))
    return out


def midpoint_margin(bad_ratio: float) -> float:
    """The gate's margin for a step: 1 - the geometric midpoint of 1 (--good) and
    --bad's performance ratio. FAIL (significantly below the midpoint) = like --bad,
    PASS (above it) = like --good: a 1.6x regression is told from none at pair noise
    where the nightly's 5 % margin leaves every step INCONCLUSIVE."""
    return 1.0 - math.sqrt(bad_ratio)


#: one-sided confidence of the bound that decides a step still INCONCLUSIVE at the cap
CAP_CONFIDENCE = 0.90


def perf(m: dict) -> float:
    """A gate row's performance ratio (below 1 = slower, time metrics included); a row
    without one ranks last."""
    return m['perf_ratio'] if m.get('perf_ratio') is not None else math.inf


def bad_ratio_of(step: dict[str, Any]) -> float:
    """The ratio a step measured as bad stands for: its least slowed FAIL metric's."""
    return max(step['fails'].values())


def judged_rows(result: dict[str, Any], metrics: Sequence[str]) -> list[dict]:
    """The gated rows of a gate result whose key is in ``metrics`` (all when empty)."""
    return [m for m in result['metrics'] if m.get('role') == 'gated'
            and (not metrics or m['key'] in metrics)]


def step_verdict(result: dict[str, Any], metrics: Sequence[str]
                 ) -> tuple[str, dict, list[dict]]:
    """('bad' | 'good' | 'undecided', the deciding metric row, the FAIL rows) from a
    gate result.

    The rows judged (:func:`judged_rows`): bad when one FAILs, good when all PASS.
    Rows are ranked by :func:`perf`."""
    rows = judged_rows(result, metrics)
    if not rows:
        return 'undecided', {'reason': 'no gated metric of --metric in the runs'}, []
    worst = min(rows, key=perf)
    fails = [m for m in rows if m['verdict'] == 'FAIL']
    if fails:
        return 'bad', min(fails, key=perf), fails
    if result.get('overall') != 'DEGRADED' and all(m['verdict'] == 'PASS' for m in rows):
        return 'good', worst, []
    return 'undecided', worst, []


def said_signature(row: dict) -> str:
    """What a row's candidate runs said when they left no samples, numbers masked: the
    same defect says the same words at every commit, its counts and versions vary."""
    return re.sub(r'\d+', '#', (row.get('runs_said') or {}).get('candidate', ''))


def broken_verdict(rows: list[dict], broke: dict[str, str]) -> tuple[str, dict, str]:
    """('bad' | 'good' | 'skip', the deciding row, why) of a step of a bisect for the
    commit that broke rows (``broke``: --bad's ERROR rows, key -> :func:`said_signature`).
    Bad when each of those rows is ERROR and its runs said what --bad's said; good when
    each has candidate samples; else (broken otherwise, or the baseline broke) skipped."""
    mine = [m for m in rows if m['key'] in broke]
    if len(mine) != len(broke):
        return 'skip', (mine or [{}])[0], 'not every row --bad broke was judged: skipped'
    if all(m['verdict'] == 'ERROR' and said_signature(m) == broke[m['key']] for m in mine):
        return 'bad', mine[0], f'broken like --bad: {mine[0].get("reason")}'
    if all(m['verdict'] != 'ERROR' and not lacks_baseline(m) for m in mine):
        return 'good', mine[0], (f'not broken, like --good: the candidate\'s runs left '
                                 f'samples ({mine[0]["verdict"]}, {mine[0].get("reason")})')
    odd = next(m for m in mine if m['verdict'] == 'ERROR' or lacks_baseline(m))
    return 'skip', odd, (f'{odd["verdict"]}, not as --bad broke it, skipped as git bisect '
                         f'skip: {odd.get("reason")}')


def stuck_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Rows more pairs will not decide: those ERROR (the candidate's runs left no
    samples), and, when every undecided row is one, those INCONCLUSIVE without baseline
    samples whose baseline runs said why (the gate's ``runs_said``)."""
    broken = [m for m in rows if m['verdict'] == 'ERROR']
    undecided = [m for m in rows if m['verdict'] not in ('PASS', 'FAIL')]
    no_base = [m for m in undecided if lacks_baseline(m)]
    return broken, no_base if undecided and len(no_base) == len(undecided) else []


class Runs:
    """Pairs of runs of the good build (baseline) and a commit's build, gated."""

    def start(self, good: Built, cand: Built, commit: str, step_dir: Path,
              margin: float | None = None) -> None:
        """``margin``: the gate's for this step (None: the gate config's)."""
        raise NotImplementedError

    def pairs(self, first: int, last: int) -> None:
        raise NotImplementedError

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        raise NotImplementedError


def run_step(runs: Runs, good: Built, cand: Built, commit: str, step_dir: Path,
             looks_: list[int], metrics: Sequence[str], margin: float | None = None,
             broke: dict[str, str] | None = None) -> dict[str, Any]:
    """The nightly's loop for one commit: pairs to the first look, gate (at ``margin``;
    None: the gate config's), more pairs while undecided, up to the cap; the step's
    record for the state file. With ``broke`` (a bisect for the commit that broke rows)
    the first look decides (:func:`broken_verdict`)."""
    t0 = time.monotonic()
    runs.start(good, cand, commit, step_dir, margin)
    done = 0
    for n in looks_:
        runs.pairs(done + 1, n)
        done = n
        result = runs.gate(looks_)
        verdict, row, fails = step_verdict(result, metrics)
        broken, unjudgeable = stuck_rows(judged_rows(result, metrics))
        if verdict != 'undecided' or broken or unjudgeable or broke:
            break
    decided_at_cap = False
    if broke:
        verdict, row, reason = broken_verdict(judged_rows(result, metrics), broke)
        fails = []
    elif verdict == 'undecided' and (broken or unjudgeable):
        # the commit broke a row, or the baseline did (their runs left no samples, and
        # said why): more pairs will not decide it, and no slowdown can be judged on it
        verdict, row = 'skip', (broken or unjudgeable)[0]
        reason = (f'{row["verdict"]} after {done} pairs, skipped as git bisect skip: '
                  f'{row.get("reason")}')
    elif verdict == 'undecided' and margin is not None:
        verdict, row, reason = at_cap(judged_rows(result, metrics), margin, done)
        decided_at_cap = verdict != 'skip'
    elif verdict == 'undecided':
        verdict = 'skip'
        reason = f'INCONCLUSIVE after {done} pairs (the cap): skipped, as git bisect skip'
    else:
        reason = row.get('reason', '')
    return {'verdict': verdict, 'gate': row.get('verdict'), 'metric': row.get('label'),
            'gate_reason': row.get('reason'),
            'ratio': row.get('ratio'), 'ratio_lo': row.get('ratio_lo'),
            'ratio_hi': row.get('ratio_hi'), 'pairs': done, 'reason': reason,
            'margin': margin, 'decided_at_cap': decided_at_cap,
            # the FAIL metrics and their performance ratios: --bad's set the steps'
            'fails': {m['key']: m['perf_ratio'] for m in fails},
            # the rows its build broke and what their runs said: --bad's set a bisect
            # for the commit that broke them
            'broken': {m['key']: said_signature(m) for m in broken},
            'seconds': round(time.monotonic() - t0, 1)}


def at_cap(rows: list[dict], margin: float, pairs: int) -> tuple[str, dict, str]:
    """A step still INCONCLUSIVE at the cap, decided against the two answers a bisect
    expects: the commit is like --good (ratio 1) or like --bad (ratio (1 - margin)^2).
    Bad when a row's one-sided ``CAP_CONFIDENCE`` upper bound of the ratio lies below
    the midpoint 1 - margin, good when every row's lower bound lies above it, else
    skipped. The bounds are normal ones around the row's log ratio, from its pairs'
    spread (``lr_var``, ``lr_n``): with the two answers 2 ln(1/(1 - margin)) apart, a
    commit that is either one is misjudged far less often than 1 - CAP_CONFIDENCE
    (that is the error at the midpoint itself, where neither answer is right)."""
    z = statistics.NormalDist().inv_cdf(CAP_CONFIDENCE)
    mid = math.log(1.0 - margin)
    sides = []
    for m in rows:
        if m.get('perf_ratio') is None or not m.get('lr_var') or not m.get('lr_n'):
            sides.append((m, None, None, None))
            continue
        est, se = math.log(m['perf_ratio']), math.sqrt(m['lr_var'] / m['lr_n'])
        lo, hi = est - z * se, est + z * se
        sides.append((m, 'bad' if hi < mid else 'good' if lo > mid else None,
                      math.exp(lo), math.exp(hi)))
    head = (f'INCONCLUSIVE after {pairs} pairs (the cap); against the midpoint '
            f'{1 - margin:.3f} of 1 and --bad\'s ratio, ')
    for m, side, lo, hi in sides:
        if side == 'bad':
            return 'bad', m, (f'{head}like --bad: the {CAP_CONFIDENCE:.0%} upper bound of the '
                              f'ratio, {hi:.3f}, is below it')
    if rows and all(side == 'good' for _, side, _, _ in sides):
        m, _, lo, _ = min(sides, key=lambda x: x[2])
        return 'good', m, (f'{head}like --good: the {CAP_CONFIDENCE:.0%} lower bound of the '
                           f'ratio, {lo:.3f}, is above it')
    worst = min(rows, key=perf) if rows else {}
    return 'skip', worst, (f'{head}the {CAP_CONFIDENCE:.0%} bounds straddle it: skipped, as '
                           f'git bisect skip')


# ------------------------------------------------------------------ state and the loop
class State:
    """The bisect's state file: written atomically after every build and step."""

    KEYS = ('good', 'bad', 'repo', 'builder', 'tools', 'checks', 'select', 'metrics',
            'looks', 'bad_ratio', 'speedup')
    #: a key a state file of an older version lacks, and what it meant there
    OLD_DEFAULTS = {'tools': [], 'bad_ratio': None, 'select': None, 'speedup': False}

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data
        self.t0 = time.monotonic()
        self.before = data.get('wall_seconds', 0.0)

    @classmethod
    def open(cls, work: Path, params: dict[str, Any]) -> 'State':
        path = work / STATE_FILE
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except ValueError as err:
                raise BisectError(f'{path}: not JSON ({err}); remove it to start over') from None
            for k in cls.KEYS:
                want = params.get(k, cls.OLD_DEFAULTS.get(k))
                if data.get(k, cls.OLD_DEFAULTS.get(k)) != want:
                    raise BisectError(f'{path}: a bisect with {k} = {data.get(k)!r} is in '
                                      f'this work directory, not {want!r}: give another '
                                      f'--work, or remove it to start over')
            log(f'resuming {path}: {len(data["steps"])} step(s), '
                f'{len(data["builds"])} build(s) done')
            return cls(path, data)
        return cls(path, {**params, 'version': STATE_VERSION, 'started': now_iso(),
                          'commits': [], 'builds': {}, 'steps': {}, 'order': [],
                          'wall_seconds': 0.0, 'result': None})

    def save(self) -> None:
        self.data['wall_seconds'] = round(self.before + time.monotonic() - self.t0, 1)
        atomic.write_text(self.path, json.dumps(self.data, indent=1))


def get_build(state: State, builder: Builder, sha: str) -> Built | None:
    """The commit's build: from the state when built before, else built now (None
    when the builder failed, then or before)."""
    known = state.data['builds'].get(sha)
    if known is None:
        t0 = time.monotonic()
        try:
            built = builder.build(sha)
            known = {'status': 'built', 'entry': built.entry, 'top': built.top,
                     'info': built.info}
        except BuildFailed as err:
            known = {'status': 'failed', 'error': str(err)}
            log(f'cannot build {sha[:12]}: {err}: skipped')
        known['seconds'] = round(time.monotonic() - t0, 1)
        state.data['builds'][sha] = known
        state.save()
    if known['status'] != 'built':
        return None
    return Built(known['entry'], known['top'], known['info'])


@contextlib.contextmanager
def held(lock: Path | None):
    """The measurement lock ``lock`` (none: nothing), waited for, its holder named."""
    if lock is None:
        yield
        return
    with runlock.held(lock, log=log):
        yield


def bisect(repo: Path, good: str, bad: str, builder: Builder, runs: Runs, work: Path,
           params: dict[str, Any], on_step: Callable[[int], None] | None = None,
           lock: Path | None = None) -> dict[str, Any]:
    """The search; returns (and keeps in the state file) its result.  ``on_step(n)``
    is called before each further step of this call (n: steps done in all); an
    exception it raises stops the search there (the state file keeps the steps).
    ``lock``: a file locked (flock) around each step's runs, never around builds."""
    state = State.open(work, params)
    if not state.data['commits']:
        state.data['commits'] = [c.__dict__ for c in first_parent_commits(repo, good, bad)]
        state.save()
    commits = [Commit(**c) for c in state.data['commits']]
    index = {c.sha: i for i, c in enumerate(commits)}
    log(f'{len(commits)} first-parent commit(s) after {good[:12]} up to {bad[:12]}')
    good_build = get_build(state, builder, good)
    if good_build is None:
        failed = state.data['builds'].pop(good)    # a rerun tries the baseline again
        state.save()
        raise BisectError(f'the good commit {good} cannot be built '
                          f'({failed["error"]}): no baseline')
    steps_before = len(state.data['steps'])
    bad_ratio, metrics, broke = reference(state, builder, runs, good_build, bad, work, params,
                                          lock)
    margin = None if broke else midpoint_margin(bad_ratio)
    if broke:
        log(f'--bad broke {state.data["steps"][bad]["metric"]}'
            f'{f" and {len(broke) - 1} more row(s)" if len(broke) > 1 else ""}: each step is '
            f'judged by whether its build breaks them as --bad\'s does')
    else:
        log(f'--bad\'s performance ratio {bad_ratio:.3f}: each step is judged at the margin '
            f'{margin:.1%} (the midpoint of 1 and {bad_ratio:.3f})')
    while True:
        verdicts = {index[sha]: s['verdict'] for sha, s in state.data['steps'].items()}
        i = next_index(len(commits), verdicts)
        if i is None and descend(state, repo, commits, verdicts):
            commits = [Commit(**c) for c in state.data['commits']]
            index = {c.sha: i for i, c in enumerate(commits)}
            continue
        if i is None:
            break
        # before another step of this call (--bad's measurement is one): the caller may stop
        if on_step and len(state.data['steps']) > steps_before:
            on_step(len(state.data['steps']))
        sha = commits[i].sha
        log(f'step {len(verdicts) + 1}: {sha[:12]} {commits[i].subject!r}')
        cand = get_build(state, builder, sha)
        if cand is None:
            step = {'verdict': 'skip', 'gate': None, 'pairs': 0, 'seconds': 0.0,
                    'reason': f'not built ({state.data["builds"][sha]["error"]}): skipped'}
        else:
            with held(lock):
                step = run_step(runs, good_build, cand, sha, work / 'steps' / sha[:12],
                                params['looks'], metrics, margin, broke)
        state.data['steps'][sha] = step
        state.data['order'].append(sha)
        state.save()
        log(f'{sha[:12]}: {step["verdict"]} ({step["reason"]})')
    state.data['result'] = summarize(state.data, commits)
    state.save()
    return state.data['result']


def descend(state: State, repo: Path, commits: list[Commit], verdicts: dict[int, str]
            ) -> bool:
    """When the search ended on a merge (its first parent good, nothing skipped between),
    put the commits the merge brought in before it, as ``git bisect`` without
    ``--first-parent`` would test them: the answer is then the branch's commit, or the
    merge itself when the whole branch tests good. True when commits were added."""
    lo, hi = bounds(len(commits), verdicts)
    merge = commits[hi]
    done = state.data.setdefault('descended', [])
    if hi != lo + 1 or merge.sha in [d['merge'] for d in done]:
        return False
    known = {c.sha for c in commits}
    branch = [c for c in merged_commits(repo, merge.sha) if c.sha not in known]
    if not branch:
        return False
    log(f'{merge.sha[:12]} is a merge: bisecting the {len(branch)} commit(s) it brought in')
    state.data['commits'][hi:hi] = [c.__dict__ for c in branch]
    done.append({'merge': merge.sha, 'subject': merge.subject, 'commits': len(branch)})
    state.save()
    return True


def reference(state: State, builder: Builder, runs: Runs, good_build: Built, bad: str,
              work: Path, params: dict[str, Any], lock: Path | None
              ) -> tuple[float | None, list[str], dict[str, str] | None]:
    """--bad's performance ratio against --good, the metrics the steps judge, and the
    rows --bad broke when that is what the bisect looks for (else None).

    Given (``--bad-ratio``, the FAIL night's): that, and --metric. Else --bad is
    measured first, as a step at the gate config's margin (kept in the state file);
    its FAIL metrics are the steps', its least slowed one sets the ratio. A --bad
    whose build broke rows (ERROR: its runs left no samples, and said why) and FAILs
    none makes this a bisect for the commit that broke them: the ratio is None, the
    steps judge those rows by :func:`broken_verdict`. Any other --bad the gate does not
    FAIL is an error: steps would be judged against noise."""
    if params.get('bad_ratio') is not None:
        return params['bad_ratio'], params['metrics'], None
    step = state.data['steps'].get(bad)
    if step is None:
        log(f'--bad {bad[:12]}: measured first against --good (its ratio sets the steps\' '
            f'margin)')
        cand = get_build(state, builder, bad)
        if cand is None:
            raise BisectError(f'the --bad commit {bad} cannot be built '
                              f'({state.data["builds"][bad]["error"]}): nothing to measure '
                              f'the steps against (give --bad-ratio to take it as bad)')
        with held(lock):
            step = run_step(runs, good_build, cand, bad, work / 'steps' / bad[:12],
                            params['looks'], params['metrics'])
        if step['verdict'] != 'bad' and step.get('broken') and not params.get('speedup'):
            step.update(verdict='bad', broke=step['broken'],
                        reason=f'ERROR after {step["pairs"]} pairs: {step["gate_reason"]}; the '
                               f'bisect looks for the commit that broke '
                               f'{len(step["broken"])} row(s) so')
        step['reason'] = f'--bad, measured first: {step["reason"]}'
        state.data['steps'][bad] = step
        state.data['order'].append(bad)
        state.save()
        log(f'{bad[:12]} (--bad): {step["verdict"]} ({step["reason"]})')
    if step.get('broke'):
        return None, sorted(step['broke']), step['broke']
    if step['verdict'] != 'bad':
        shown = ('' if step.get('ratio') is None else
                 f', ratio {step["ratio"]:.3f} [{step["ratio_lo"]:.3f}, {step["ratio_hi"]:.3f}]')
        raise BisectError(
            f'--bad {bad[:12]} is not shown {"faster" if params.get("speedup") else "slower"} '
            f'than --good: the gate said '
            f'{step.get("gate") or "nothing"} after {step["pairs"]} pairs{shown} '
            f'({step["reason"]}); a bisect would follow noise. Bisect a metric that FAILs, '
            f'with more pairs (--max-pairs), or give --bad-ratio; the measurement is kept in '
            f'{state.path} (remove it to measure again)')
    return bad_ratio_of(step), sorted(step['fails']), None


def summarize(data: dict[str, Any], commits: list[Commit]) -> dict[str, Any]:
    """The bisect's result: the first bad commit (or the range), every step, cost."""
    index = {c.sha: i for i, c in enumerate(commits)}
    verdicts = {index[sha]: s['verdict'] for sha, s in data['steps'].items()}
    lo, hi = bounds(len(commits), verdicts)
    skipped = [commits[i].sha for i in range(lo + 1, hi) if verdicts.get(i) == 'skip']
    steps = []
    for sha in data['order']:
        c, s = commits[index[sha]], data['steps'][sha]
        b = data['builds'].get(sha, {})
        steps.append({'commit': sha, 'subject': c.subject, 'date': c.date, **s,
                      'build': b.get('status'), 'build_seconds': b.get('seconds')})
    first_bad = commits[hi]
    descended = data.get('descended', [])
    broke = data['steps'].get(data['bad'], {}).get('broke')
    bad_ratio = None if broke else (data.get('bad_ratio')
                                    or bad_ratio_of(data['steps'][data['bad']]))
    built = [b for b in data['builds'].values() if b['status'] == 'built']
    return {
        'good': data['good'], 'bad': data['bad'], 'repo': data['repo'],
        'builder': data['builder'], 'commits': len(commits),
        'first_bad': {'commit': first_bad.sha, 'subject': first_bad.subject,
                      'date': first_bad.date, 'tested': first_bad.sha in data['steps']},
        'found': not skipped, 'candidates': skipped + [first_bad.sha],
        'skipped': [s['commit'] for s in steps if s['verdict'] == 'skip'],
        'steps': steps, 'builds': len(data['builds']), 'builds_ok': len(built),
        'build_seconds': round(sum(b.get('seconds', 0) for b in data['builds'].values()), 1),
        'wall_seconds': data['wall_seconds'],
        # the good build, a halving's of the first-parent chain, --bad's when it was
        # measured first, and a halving's of each merge's k commits gone into
        'bound_builds': (math.ceil(math.log2(max(len(commits) - sum(d['commits'] for d in
                                                                    descended), 1))) + 1
                         + (data['bad'] in data['steps'])
                         + sum(math.ceil(math.log2(d['commits'] + 1)) for d in descended)),
        'looks': data['looks'], 'metrics': data['metrics'],
        'bad_ratio': bad_ratio, 'bad_measured': data['bad'] in data['steps'],
        'step_margin': None if broke else round(midpoint_margin(bad_ratio), 6),
        # the rows --bad broke and what their runs said (a bisect for what broke them)
        'broke': broke,
        # merges the search ended on, whose branches it went on into
        'descended': descended,
        'speedup': data.get('speedup', False),
    }


def format_text(result: dict[str, Any]) -> str:
    lines = []
    for s in result['steps']:
        ratio = '' if s.get('ratio') is None else \
            f' ratio {s["ratio"]:.3f} [{s["ratio_lo"]:.3f}, {s["ratio_hi"]:.3f}]'
        lines.append(f'  {s["commit"][:12]} {s["verdict"]:<4} {s["pairs"]:>2} pairs{ratio}'
                     f'  {s["subject"]}  ({s["reason"]})')
    lines.append(followup.answer(result))
    lines.append(f'{len(result["steps"])} step(s) over {result["commits"]} commit(s), '
                 f'{result["builds"]} build(s) ({followup.bound_words(result)} = '
                 f'{result["bound_builds"]}), '
                 f'{result["wall_seconds"]:.0f} s' + followup.margin_clause(result))
    return '\n'.join(lines)
