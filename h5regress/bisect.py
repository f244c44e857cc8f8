"""``h5regress bisect``: the first HDF5 commit behind a FAIL, found with the gate.

    h5regress bisect --good SHA --bad SHA --repo PATH|URL [--builder spack|stand-in]
                     [--checks REGEX] [--tool TOOL]... [--metric KEY]... [--bad-ratio R]
                     [--work DIR]

The commits between ``--good`` (excluded) and ``--bad`` (included) are the
first-parent chain ``git rev-list --first-parent good..bad``, as ``git bisect
--first-parent`` walks it. Each step builds the commit nearest the
middle of what is still unknown (a :class:`Builder`), runs the failing metrics'
checks in ABBA pairs against the good commit's build on the same machine, and
lets the gate decide with the nightly's looks (10, 15, 20 pairs): FAIL = bad,
PASS = good, undecided at the cap = the commit is skipped (as ``git bisect
skip``; the report says so). A commit its builder cannot build is skipped too.

A step asks "is this commit like --good or like --bad?", not "is it within the
nightly's margin?": the gate judges it with the margin at the geometric midpoint
of 1 and --bad's performance ratio r (``1 - sqrt(r)``; r = 0.625, a 1.6x slower
read, gives 21 %; r = 0.9 gives 5.1 %). r is --bad measured first against
--good, in the steps' pairs and looks (its FAIL metrics become the steps'
metrics; a --bad the gate does not FAIL ends the bisect in an error: nothing it
could find), or ``--bad-ratio`` (the FAIL night's ratio, as ``ci/nightly
--bisect`` passes it), when --bad is not measured again. A step still
INCONCLUSIVE at the cap is decided when the one-sided 90 % bound of its ratio
lies on one side of the midpoint (:func:`at_cap`), else skipped.

It stops when no unknown commit is left between the last good and the first bad
one; with skipped commits in between, the answer is a range and says so.

Builders: :class:`SpackBuilder` (``spack-env/install --candidate SHA``, the
install tree reused; with ``--tool``, ``--only`` the packages of those tools: a
step builds HDF5 and the checks' tools, not the whole environment) and :class:`StandInBuilder` (a small git repository whose
commits each set a known slowdown in a file ``slowdown``: the build is the
stand-in nightly's tools with the LD_PRELOAD shim at that fraction; a commit
whose file reads ``build fails`` cannot be built). Runs: :class:`NightlyRuns`
(the nightly's ReFrame pairs and gate) or, for the accuracy benchmark and the
fast tests, :class:`SimulatedRuns` (log-normal noise at a given CV around the
stand-in commit's known slowdown, judged by the same gate, ``run_gate``).

Resumable: ``<work>/bisect-state.json`` (written atomically after every build
and every step) keeps the commit list, each build and each step's verdict keyed
by commit; a second run with the same arguments and work directory goes on
where the first stopped, without building or running a finished step again.

Exit codes: 0 the first bad commit found, 1 only a range (skipped commits in the
way), 2 stopped by ``--steps`` before the end (run it again to go on), 4 ERROR
(bad usage, no good build, unreadable state, a --bad the gate does not FAIL).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h5regress import atomic, catalog, followup, gate, manifest, nightly, runlock
from h5regress.cmdline import EXIT_ERROR, ArgParser, parse_args
from h5regress.record import Record, config_hash

STATE_FILE = 'bisect-state.json'
STATE_VERSION = 2
#: the nightly's looks: pairs before the first look, added while INCONCLUSIVE, cap
DEFAULT_PAIRS, DEFAULT_MORE, DEFAULT_MAX = 10, 5, 20
BASE_ID = 'hdf5-bisect-good'
#: what a stand-in commit's ``slowdown`` file says when its build must fail
BUILD_FAILS = 'build fails'


#: exit code of a run stopped by --steps before the search ended
EXIT_STOPPED = 2


class BisectError(Exception):
    """Bad input or state; the message names the file, commit or option (exit 4)."""


class Stopped(Exception):
    """--steps N steps done, the search not finished (exit 2; the state file resumes)."""


class BuildFailed(Exception):
    """A builder could not build a commit: the commit is skipped, with this reason."""


def log(msg: str) -> None:
    print(f'h5regress bisect: {msg}', file=sys.stderr, flush=True)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


# ------------------------------------------------------------------ commits
@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str       # committer date, ISO 8601


def git(repo: str | Path, *args: str) -> str:
    out = subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True)
    if out.returncode:
        raise BisectError(f'git -C {repo} {" ".join(args)}: {out.stderr.strip()}')
    return out.stdout


def local_repo(repo: str, work: Path) -> Path:
    """``repo`` itself when it is a local clone, else a bare clone of the URL in ``work``."""
    if Path(repo).is_dir():
        return Path(repo).resolve()
    dest = work / 'repo.git'
    if not dest.is_dir():
        log(f'cloning {repo} into {dest}')
        out = subprocess.run(['git', 'clone', '--bare', '--quiet', repo, str(dest)],
                             capture_output=True, text=True)
        if out.returncode:
            raise BisectError(f'cannot clone --repo {repo}: {out.stderr.strip()}')
    return dest


def resolve(repo: Path, ref: str, option: str) -> str:
    try:
        return git(repo, 'rev-parse', '--verify', '--quiet', f'{ref}^{{commit}}').strip()
    except BisectError:
        raise BisectError(f'{option} {ref}: no such commit in {repo}') from None


def first_parent_commits(repo: Path, good: str, bad: str) -> list[Commit]:
    """Commits after ``good`` up to ``bad`` (included), oldest first, first parents only."""
    if subprocess.run(['git', '-C', str(repo), 'merge-base', '--is-ancestor', good, bad]
                      ).returncode:
        raise BisectError(f'--good {good} is not an ancestor of --bad {bad} in {repo}')
    out = git(repo, 'log', '--first-parent', '--reverse', '--format=%H%x1f%s%x1f%cI',
              f'{good}..{bad}')
    commits = [Commit(*line.split('\x1f', 2)) for line in out.splitlines() if line]
    if not commits or commits[-1].sha != bad:
        raise BisectError(f'--bad {bad} is not on the first-parent chain above --good {good}')
    return commits


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


# ------------------------------------------------------------------ builders
@dataclass
class Built:
    """A commit's build: its manifest entry (``hdf5`` and ``tools``), the manifest's
    top-level fields it came with, and what the builder knows (stand-in: slowdown)."""
    entry: dict[str, Any]
    top: dict[str, Any]
    info: dict[str, Any]


class Builder:
    """Builds one commit; :meth:`build` raises :class:`BuildFailed` when it cannot."""
    name = 'builder'

    def build(self, commit: str) -> Built:
        raise NotImplementedError


#: where Spack looks for a git commit's source in a mirror: ``_source-cache/`` + the git
#: fetcher's ``mirror_id`` (``git/<path of the recipe's git URL>/<commit>``) + ``.tar.gz``,
#: a tarball of the tree under ``hdf5/`` (the layout of ``spack mirror create`` and of
#: the offline bundle's mirror); the path is the one of HDF5's recipe,
#: https://github.com/HDFGroup/hdf5.git
HDF5_MIRROR_PATH = '_source-cache/git/HDFGroup/hdf5.git'


class SpackBuilder(Builder):
    """``spack-env/install --candidate SHA`` in a copy of the environment
    (``spack-env/.candidates/<sha12>``), reusing Spack's install tree; the commit's
    build is the manifest's build of that commit.

    With ``repo`` (the bisect's HDF5 clone), each commit's source goes into a source
    mirror of the bisect's own (``<work>/source-mirror``, passed after the given ones)
    from that clone, so an air-gapped site bisects without network: its offline mirror
    holds the pinned commits only."""
    name = 'spack'

    def __init__(self, work: Path, mirrors: Sequence[str] = (),
                 install: Path | None = None, packages: Sequence[str] = (),
                 repo: Path | None = None) -> None:
        self.work, self.mirrors, self.repo = work, list(mirrors), repo
        self.install = install or manifest.repo_root() / 'spack-env' / 'install'
        #: Spack packages built with each commit (``--only``: the failing metrics'
        #: tools); none: the whole environment (every tool, Darshan, the baseline)
        self.packages = sorted(set(packages))

    def source_mirror(self) -> Path:
        return self.work / 'source-mirror'

    def command(self, commit: str, path: Path) -> list[str]:
        cmd = [sys.executable, str(self.install), '--candidate', commit, '--manifest', str(path)]
        if self.packages:
            cmd += ['--only', *self.packages]
        for mirror in self.mirrors + ([str(self.source_mirror())] if self.repo else []):
            cmd += ['--mirror', mirror]
        return cmd

    def archive_source(self, commit: str) -> None:
        """The commit's tree from the clone into the bisect's source mirror (once; whole
        or not at all). A clone that cannot archive it (objects missing) is said, and the
        build goes on with the other mirrors."""
        tarball = self.source_mirror() / HDF5_MIRROR_PATH / f'{commit}.tar.gz'
        if tarball.exists():
            return
        tarball.parent.mkdir(parents=True, exist_ok=True)
        part = tarball.with_name(tarball.name + '.part')
        out = subprocess.run(['git', '-C', str(self.repo), 'archive', '--format=tar.gz',
                              '--prefix=hdf5/', '-o', str(part), commit],
                             capture_output=True, text=True)
        if out.returncode:
            part.unlink(missing_ok=True)
            log(f'warning: no source of {commit[:12]} from {self.repo} (git archive: '
                f'{out.stderr.strip()[:300]}); Spack tries the other mirrors')
            return
        part.rename(tarball)

    def build(self, commit: str) -> Built:
        path = self.work / 'builds' / commit[:12] / 'manifest.json'
        if self.repo:
            self.archive_source(commit)
        cmd = self.command(commit, path)
        install_log = self.work / 'builds' / commit[:12] / 'install.log'
        install_log.parent.mkdir(parents=True, exist_ok=True)
        log('$ ' + ' '.join(cmd) + f' > {install_log}')
        with open(install_log, 'w') as fp:
            code = subprocess.run(cmd, stdout=fp, stderr=subprocess.STDOUT).returncode
        if code:
            tail = ' | '.join(install_log.read_text().strip().splitlines()[-3:])
            raise BuildFailed(f'spack-env/install exit {code}: {tail}')
        data = json.loads(path.read_text())
        for build in data['builds'].values():
            if build['hdf5']['commit'] == commit:
                top = {k: v for k, v in data.items() if k != 'builds'}
                return Built(build, top, {'manifest': str(path)})
        raise BuildFailed(f'{path} has no build of HDF5 commit {commit}')


class StandInBuilder(Builder):
    """A stand-in repository: each commit's file ``slowdown`` holds the fraction by
    which its "HDF5" writes are slowed (0 = as fast as the good commit), or
    ``build fails``. With ``tools``, the build is the stand-in nightly's tools
    (FLASH-IO kernel, ior when on PATH) behind the shim at that fraction;
    without, only the fraction (what :class:`SimulatedRuns` needs)."""
    name = 'stand-in'

    def __init__(self, repo: Path, work: Path, tools: bool = True) -> None:
        self.repo, self.work, self.tools = repo, work, tools

    def slowdown(self, commit: str) -> float:
        try:
            text = git(self.repo, 'show', f'{commit}:slowdown').strip()
        except BisectError as err:
            raise BuildFailed(f'no file "slowdown" in the stand-in commit: {err}') from None
        if text == BUILD_FAILS:
            raise BuildFailed(f'the stand-in commit says "{BUILD_FAILS}"')
        try:
            return float(text)
        except ValueError:
            raise BuildFailed(f'its file "slowdown" reads {text!r}, not a fraction') from None

    def build(self, commit: str) -> Built:
        fraction = self.slowdown(commit)
        hdf5 = {'version': 'system', 'label': f'bisect-{commit[:12]}', 'commit': commit,
                'variants': f'stand-in: the HDF5 on this machine, writes slowed by '
                            f'{fraction:g}', 'hash': commit[:12], 'prefix': str(self.work)}
        top = {'schema': manifest.SCHEMA, 'generated': now_iso(),
               'spack_version': 'none (stand-in)', 'environment': str(self.work),
               'lock_sha256': '0' * 64}
        tools: dict[str, str] = {}
        if self.tools:
            standins = manifest.load(nightly.build_standins(self.work, fraction),
                                     check_stale=False)
            which = f'hdf5-{nightly.STANDIN_B if fraction > 0 else nightly.STANDIN_A}'
            own = self.work / 'builds' / commit[:12]
            own.mkdir(parents=True, exist_ok=True)
            for name, path in standins[which].tools.items():
                # the slowed wrappers are rewritten by the next build: keep this commit's
                if fraction > 0:
                    shutil.copy(path, own / name)
                    path = str(own / name)
                tools[name] = path
        return Built({'hdf5': hdf5, 'tools': tools}, top, {'slowdown': fraction})


def make_standin_repo(path: Path, fractions: Sequence[float | str]) -> list[str]:
    """A stand-in repository: one commit per fraction (the first is --good); returns
    the shas, oldest first. For the tests and the benchmark."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, 'init', '--quiet', '-b', 'main')
    shas = []
    for i, f in enumerate(fractions):
        (path / 'slowdown').write_text(f'{f}\n')
        git(path, 'add', 'slowdown')
        git(path, '-c', 'user.name=h5regress', '-c', 'user.email=h5regress@localhost',
            'commit', '--quiet', '--allow-empty', '-m', f'stand-in commit {i}: slowdown {f}')
        shas.append(git(path, 'rev-parse', 'HEAD').strip())
    return shas


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


class NightlyRuns(Runs):
    """The nightly's machinery: ReFrame runs of ``checks`` per build, pair ids, ABBA
    order, ``h5regress gate`` on the step's own perflogs (h5regress.nightly)."""

    def __init__(self, nightly_argv: Sequence[str]) -> None:
        self.argv = list(nightly_argv)

    def start(self, good: Built, cand: Built, commit: str, step_dir: Path,
              margin: float | None = None) -> None:
        self.cand_id = f'hdf5-bisect-{commit[:12]}'
        path = step_dir / 'manifest.json'
        manifest.write(path, {**cand.top, 'builds': {BASE_ID: relabel(good.entry, BASE_ID),
                                                     self.cand_id: relabel(cand.entry,
                                                                           self.cand_id)}})
        self.args = nightly.parse_args(self.argv + ['--out', str(step_dir)] + (
            [] if margin is None else ['--margin', f'{margin:.6f}']))
        if self.args.select is None:   # --stand-in without --checks: the night's choice
            nightly.standin_checks(self.args, cand.entry.get('tools', {}))
        nightly.start_attempt(self.args)
        self.env = {**os.environ, 'H5REGRESS_MANIFEST': str(path),
                    'H5REGRESS_PERFLOG_DIR': str(nightly.attempt_perflogs(self.args))}
        if getattr(self.args, 'config_files', None):   # the nightly's chain of configs
            self.env['RFM_CONFIG_FILES'] = ':'.join(self.args.config_files)

    def pairs(self, first: int, last: int) -> None:
        nightly.run_pairs(first, last, BASE_ID, self.cand_id, self.args, self.env)

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        nightly.gate_once(BASE_ID, self.cand_id, self.args, final=False)
        path = self.args.out / 'gate.json'
        if not path.is_file():
            raise BisectError(f'the gate wrote no {path} (see its error above)')
        return json.loads(path.read_text())


def relabel(entry: dict[str, Any], build_id: str) -> dict[str, Any]:
    """A manifest build entry under another id (a manifest's ids are hdf5-<label>: two
    Spack builds of develop commits share the version label)."""
    return {**entry, 'hdf5': {**entry['hdf5'], 'label': build_id.removeprefix('hdf5-')}}


class SimulatedRuns(Runs):
    """No tool runs: each run's bandwidth is log-normal with coefficient of variation
    ``cv`` around 1 GiB/s, slowed by the stand-in commit's known fraction (the shim
    makes each write take 1 + f of its time: bandwidth / (1 + f)); the records are
    judged by the gate itself (:func:`h5regress.gate.run_gate`)."""

    PARAMS = {'api': 'HDF5', 'transfer_size': '1m', 'block_size': '16m', 'simulated': True}

    def __init__(self, cv: float, rng: random.Random) -> None:
        self.sigma, self.rng = math.sqrt(math.log1p(cv * cv)), rng

    def start(self, good: Built, cand: Built, commit: str, step_dir: Path,
              margin: float | None = None) -> None:
        self.ratio = (1 + good.info['slowdown']) / (1 + cand.info['slowdown'])
        self.cfg = {**gate.load_config(), **({} if margin is None else {'margin': margin})}
        self.cand_id, self.commit = f'hdf5-bisect-{commit[:12]}', commit
        self.records: list[Record] = []

    def _record(self, build: str, value: float, pair: int) -> Record:
        chash = config_hash({'tool': 'ior', 'params': self.PARAMS, 'system': 'simulated'})
        return Record(tool='ior', operation='write', metric='bw_mean', value=value,
                      unit='MiB/s', higher_is_better=True, params=self.PARAMS,
                      provenance={'hdf5_commit': self.commit if build != BASE_ID else 'good'},
                      hdf5_build=build, config_hash=chash, run_id=f'{build}-{pair}',
                      timestamp='2026-01-01T00:00:00+00:00', test='simulated IOR 1 MiB',
                      system='simulated', pair_id=f'p{pair}')

    def pairs(self, first: int, last: int) -> None:
        s = self.sigma
        for i in range(first, last + 1):
            a = 1024 * math.exp(self.rng.gauss(-s * s / 2, s))
            b = 1024 * self.ratio * math.exp(self.rng.gauss(-s * s / 2, s))
            self.records += [self._record(BASE_ID, a, i), self._record(self.cand_id, b, i)]

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        return gate.run_gate(self.records, BASE_ID, self.cand_id, self.cfg, looks=looks_,
                             night='bisect')


def run_step(runs: Runs, good: Built, cand: Built, commit: str, step_dir: Path,
             looks_: list[int], metrics: Sequence[str], margin: float | None = None
             ) -> dict[str, Any]:
    """The nightly's loop for one commit: pairs to the first look, gate (at ``margin``;
    None: the gate config's), more pairs while undecided, up to the cap; the step's
    record for the state file."""
    t0 = time.monotonic()
    runs.start(good, cand, commit, step_dir, margin)
    done = 0
    for n in looks_:
        runs.pairs(done + 1, n)
        done = n
        result = runs.gate(looks_)
        verdict, row, fails = step_verdict(result, metrics)
        if verdict != 'undecided':
            break
    decided_at_cap = False
    if verdict == 'undecided' and margin is not None:
        verdict, row, reason = at_cap(judged_rows(result, metrics), margin, done)
        decided_at_cap = verdict != 'skip'
    elif verdict == 'undecided':
        verdict = 'skip'
        reason = f'INCONCLUSIVE after {done} pairs (the cap): skipped, as git bisect skip'
    else:
        reason = row.get('reason', '')
    return {'verdict': verdict, 'gate': row.get('verdict'), 'metric': row.get('label'),
            'ratio': row.get('ratio'), 'ratio_lo': row.get('ratio_lo'),
            'ratio_hi': row.get('ratio_hi'), 'pairs': done, 'reason': reason,
            'margin': margin, 'decided_at_cap': decided_at_cap,
            # the FAIL metrics and their performance ratios: --bad's set the steps'
            'fails': {m['key']: m['perf_ratio'] for m in fails},
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

    KEYS = ('good', 'bad', 'repo', 'builder', 'tools', 'checks', 'metrics', 'looks',
            'bad_ratio')
    #: a key a state file of an older version lacks, and what it meant there
    OLD_DEFAULTS = {'tools': [], 'bad_ratio': None}

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
    bad_ratio, metrics = reference(state, builder, runs, good_build, bad, work, params, lock)
    margin = midpoint_margin(bad_ratio)
    log(f'--bad\'s performance ratio {bad_ratio:.3f}: each step is judged at the margin '
        f'{margin:.1%} (the midpoint of 1 and {bad_ratio:.3f})')
    while True:
        verdicts = {index[sha]: s['verdict'] for sha, s in state.data['steps'].items()}
        i = next_index(len(commits), verdicts)
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
                                params['looks'], metrics, margin)
        state.data['steps'][sha] = step
        state.data['order'].append(sha)
        state.save()
        log(f'{sha[:12]}: {step["verdict"]} ({step["reason"]})')
    state.data['result'] = summarize(state.data, commits)
    state.save()
    return state.data['result']


def reference(state: State, builder: Builder, runs: Runs, good_build: Built, bad: str,
              work: Path, params: dict[str, Any], lock: Path | None
              ) -> tuple[float, list[str]]:
    """--bad's performance ratio against --good, and the metrics the steps judge.

    Given (``--bad-ratio``, the FAIL night's): that, and --metric. Else --bad is
    measured first, as a step at the gate config's margin (kept in the state file);
    its FAIL metrics are the steps', its least slowed one sets the ratio. A --bad the
    gate does not FAIL is an error: steps would be judged against noise."""
    if params.get('bad_ratio') is not None:
        return params['bad_ratio'], params['metrics']
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
        step['reason'] = f'--bad, measured first: {step["reason"]}'
        state.data['steps'][bad] = step
        state.data['order'].append(bad)
        state.save()
        log(f'{bad[:12]} (--bad): {step["verdict"]} ({step["reason"]})')
    if step['verdict'] != 'bad':
        shown = ('' if step.get('ratio') is None else
                 f', ratio {step["ratio"]:.3f} [{step["ratio_lo"]:.3f}, {step["ratio_hi"]:.3f}]')
        raise BisectError(
            f'--bad {bad[:12]} is not shown slower than --good: the gate said '
            f'{step.get("gate") or "nothing"} after {step["pairs"]} pairs{shown} '
            f'({step["reason"]}); a bisect would follow noise. Bisect a metric that FAILs, '
            f'with more pairs (--max-pairs), or give --bad-ratio; the measurement is kept in '
            f'{state.path} (remove it to measure again)')
    return bad_ratio_of(step), sorted(step['fails'])


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
    bad_ratio = data.get('bad_ratio') or bad_ratio_of(data['steps'][data['bad']])
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
        # the good build, a halving's, and --bad's when it was measured first
        'bound_builds': (math.ceil(math.log2(max(len(commits), 1))) + 1
                         + (data['bad'] in data['steps'])),
        'looks': data['looks'], 'metrics': data['metrics'],
        'bad_ratio': bad_ratio, 'bad_measured': data['bad'] in data['steps'],
        'step_margin': round(midpoint_margin(bad_ratio), 6),
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


# ------------------------------------------------------------------ CLI
def build_parser() -> ArgParser:
    p = ArgParser(prog='h5regress bisect', description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--good', required=True, help='a commit without the regression')
    p.add_argument('--bad', required=True, help='a commit with it (the FAIL night\'s)')
    p.add_argument('--repo', required=True, help='the HDF5 repository: a local clone or a URL '
                   '(stand-in builder: the stand-in repository)')
    p.add_argument('--builder', choices=('spack', 'stand-in'), default='spack')
    p.add_argument('--mirror', action='append', default=[], metavar='URL',
                   help='Spack builder: a source mirror for spack-env/install (repeatable)')
    p.add_argument('--checks', help='ReFrame name regex of the failing metrics\' checks '
                   '(default: the nightly\'s)')
    p.add_argument('--tool', action='append', default=[], metavar='TOOL',
                   help='Spack builder: a tool the checks run (repeatable; e.g. h5paths, ior, '
                        'mdtest): each step builds HDF5 and these tools\' packages only '
                        '(spack-env/install --only); default: the whole environment')
    p.add_argument('--metric', action='append', default=[], metavar='KEY',
                   help='gate metric key (gate.json "key") that failed; repeatable '
                        '(default: every gated metric of the checks)')
    p.add_argument('--bad-ratio', type=float, metavar='R',
                   help='--bad\'s performance ratio to --good, below 1 (the FAIL night\'s '
                        'gated ratio; ci/nightly --bisect passes it): --bad is then not '
                        'measured again; each step is judged at the margin 1 - sqrt(R). '
                        'Default: --bad measured first')
    p.add_argument('--work', type=Path, default=Path('bisect-work'),
                   help='work directory: state file, builds, steps (default ./bisect-work)')
    p.add_argument('--pairs', type=int, default=DEFAULT_PAIRS)
    p.add_argument('--more-pairs', type=int, default=DEFAULT_MORE)
    p.add_argument('--max-pairs', type=int, default=DEFAULT_MAX)
    p.add_argument('--simulate-cv', type=float, metavar='CV',
                   help='stand-in builder only: no tool runs, log-normal noise of this CV '
                        'around each commit\'s slowdown, judged by the gate')
    p.add_argument('--seed', type=int, default=0, help='of --simulate-cv')
    p.add_argument('--json', type=Path, help='write the result as JSON')
    p.add_argument('--lock', type=Path, metavar='FILE',
                   help='hold an exclusive flock on FILE during each step\'s runs (not its '
                        'build), so that timed runs of others sharing the machine wait, as '
                        'flock(1) FILE does')
    p.add_argument('--steps', type=int, metavar='N',
                   help='stop after N steps of this run (exit 2), e.g. to hold a measurement '
                        'lock one step at a time; the same command goes on from the state file')
    p.add_argument('--nightly-arg', action='append', default=[], metavar='ARG',
                   help='passed to the nightly\'s runs (e.g. --nightly-arg=--system=x:y)')
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args, code = parse_args(build_parser(), argv)
    if args is None:
        return code
    # SIGTERM/SIGINT: forwarded to the running child (ReFrame and its jobs run in
    # sessions of their own, so a signal to this process alone would leave them
    # running), then every descendant is stopped; the state file keeps what was done
    nightly.handle_signals()
    try:
        if args.simulate_cv is not None and args.builder != 'stand-in':
            raise BisectError('--simulate-cv needs --builder stand-in (known slowdowns)')
        if not 1 <= args.pairs <= args.max_pairs or args.more_pairs < 1:
            raise BisectError('need 1 <= --pairs <= --max-pairs and --more-pairs >= 1')
        if args.bad_ratio is not None and not 0 < args.bad_ratio < 1:
            raise BisectError(f'--bad-ratio {args.bad_ratio:g}: a performance ratio of a '
                              f'slower --bad, between 0 and 1 (0.8 = 20 % slower)')
        work = args.work.resolve()
        work.mkdir(parents=True, exist_ok=True)
        repo = local_repo(args.repo, work)
        good, bad = resolve(repo, args.good, '--good'), resolve(repo, args.bad, '--bad')
        result = run(repo, good, bad, args, work)
    except Stopped as stop:
        print(f'h5regress bisect: {stop}; the same command goes on from '
              f'{work / STATE_FILE}')
        return EXIT_STOPPED
    except (BisectError, manifest.ManifestError, OSError, RuntimeError) as err:
        nightly.stop_descendants()
        print(f'h5regress bisect: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    except nightly.Interrupted as sig:
        left = nightly.stop_descendants()
        print(f'h5regress bisect: stopped by {sig}, its children gone'
              f'{f" (but for PIDs {left})" if left else ""}; the same command goes on from '
              f'{args.work.resolve() / STATE_FILE}', file=sys.stderr)
        return EXIT_ERROR
    print(format_text(result))
    if args.json:
        atomic.write_text(args.json, json.dumps(result, indent=1))
    return 0 if result['found'] else 1


def tool_packages(tools: Sequence[str]) -> list[str]:
    """The Spack packages that install these tools (h5regress.catalog: mdtest -> ior)."""
    packages = set()
    for tool in tools:
        try:
            bench = catalog.get(tool)
        except KeyError as err:
            raise BisectError(f'--tool {tool!r}: {err.args[0]}') from None
        if not bench.package:
            raise BisectError(f'--tool {tool!r}: not built by the Spack environment')
        packages.add(bench.package)
    return sorted(packages)


def run(repo: Path, good: str, bad: str, args, work: Path) -> dict[str, Any]:
    """Builder and runs from the options; the search."""
    simulate = args.simulate_cv is not None
    if args.builder == 'stand-in':
        builder: Builder = StandInBuilder(repo, work, tools=not simulate)
    else:
        builder = SpackBuilder(work, args.mirror, packages=tool_packages(args.tool), repo=repo)
    checks = args.checks
    if simulate:
        runs: Runs = SimulatedRuns(args.simulate_cv, random.Random(args.seed))
    else:
        nightly_argv = ['--pairs', str(args.pairs), '--more-pairs', str(args.more_pairs),
                        '--max-pairs', str(args.max_pairs), '--quiet', *args.nightly_arg]
        if checks:
            nightly_argv += ['--checks', checks]
        elif args.builder == 'stand-in':
            nightly_argv += ['--stand-in']     # its default checks (nightly.standin_checks)
        runs = NightlyRuns(nightly_argv)
    params = {'good': good, 'bad': bad, 'repo': str(args.repo),
              'builder': builder.name + (f' (simulated, CV {args.simulate_cv:g})'
                                         if simulate else ''),
              'tools': sorted(args.tool), 'checks': checks, 'metrics': sorted(args.metric),
              'bad_ratio': args.bad_ratio,
              'looks': looks(args.pairs, args.more_pairs, args.max_pairs)}
    done: list[int] = []

    def stop_after(n_steps: int) -> None:      # called before each step after the first
        done.append(n_steps)
        if args.steps is not None and len(done) >= args.steps:
            raise Stopped(f'stopped after {len(done)} step(s) of this run (--steps), '
                          f'{n_steps} in all, more to go')

    return bisect(repo, good, bad, builder, runs, work, params, on_step=stop_after,
                  lock=args.lock)


if __name__ == '__main__':
    sys.exit(main())
