"""The night's attempt: its request, its builds, its ReFrame runs in ABBA pairs.

A :class:`NightRequest` says what to run (``ci/nightly``'s options, typed); the bisect
makes one per step without going through argv.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from h5regress import buildid, checkfiles, runrecords, runreport, sideload
from h5regress.cmdline import config_files
from h5regress.gateconfig import GateConfig
from h5regress.nightprocs import full_disk_note, log, run, stop_leftovers

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / 'reframe' / 'config' / 'settings.py'


#: checks of a night (ReFrame's selection options): the rows tagged ``nightly`` (HDF5
#: against MPI-IO through the same pattern, the canary; FLASH-IO; the h5paths rows of the
#: HDF5 code paths where real regressions were)
NIGHT_SELECTION = ('-t', 'nightly')
#: ReFrame variables of every night run (pairs, bisect steps, follow-ups), before the
#: user's ``-S`` (ReFrame keeps the last): IOR without its read phase, since the gate
#: judges IOR's writes only and each cold read is an execution of its own
NIGHT_SETVARS = ('ior_check.read_phase=false', 'ior_build_check.read_phase=false')
#: the stand-in night's checks when its builds have IOR (:func:`standin_ior`): the rows
#: tagged ``standin``, IOR's quietest HDF5 row measured on a workstation VM (2 ranks,
#: independent 1 MiB transfers into one file, fsync; its write bw_mean then had pair
#: log-ratio SD 0.04-0.19 there) and its MPI-IO twin, the canary. FLASH-IO's checkpoint
#: (393 MB with fsync at local's 2000 blocks per rank) varied 0.1-0.3 on the same VM.
STANDIN_IOR_SELECTION = ('-t', 'standin')
#: ... with 1 MiB transfers (IOR's HDF5 writes of 4 MiB transfers fell in two modes on
#: this kind of VM, 1 MiB ones did not): recorded as each record's transfer_size
STANDIN_IOR_SETVARS = ('ior_check.transfer_size=1m',)
#: the stand-in night's checks without IOR: the FLASH-IO kernel, which stand-in
#: builds always have
STANDIN_SELECTION = ('-n', '^flashio_check')


def default_config_files() -> list[str]:
    """ReFrame's configuration of a night without --reframe-config: the project's."""
    return config_files(str(SETTINGS), '--reframe-config')


def today() -> str:
    return datetime.date.today().isoformat()


@dataclass
class NightRequest:
    """What a night (or a bisect step) runs: ``ci/nightly``'s options, typed. The
    defaults are the command line's."""
    candidate: str | None = None
    hdf5_repo: str = 'https://github.com/HDFGroup/hdf5.git'
    baseline_build: str | None = None
    candidate_build: str | None = None
    stand_in: bool = False
    inject_slowdown: float = 0.0
    no_install: bool = False
    #: --checks: a ReFrame name regex (None: the night's tags)
    checks: str | None = None
    pairs: int = 10
    more_pairs: int = 5
    max_pairs: int = 20
    alpha: float | None = None
    margin: float | None = None
    system: str | None = None
    config: str = str(SETTINGS)
    salloc: str | None = None
    bisect: bool = False
    bisect_good: str | None = None
    bisect_bad: str | None = None
    bisect_repo: str | None = None
    mirror: list[str] = field(default_factory=list)
    coverage_map: Path | None = None
    coverage_repo: str | None = None
    setvar: list[str] = field(default_factory=list)
    history: Path | None = field(default_factory=lambda: os.environ.get('H5REGRESS_HISTORY'))
    #: web URL of the HDF5 repository for the reports' commit and compare links
    repo_url: str | None = None
    out: Path = Path('nightly-out')
    night: str = field(default_factory=today)
    quiet: bool = False
    #: ReFrame's configuration files, later ones on top (RFM_CONFIG_FILES)
    config_files: list[str] = field(default_factory=default_config_files)
    #: --time-limit: seconds from the attempt's start within which its pairs and verdict
    #: end (None: no limit; :class:`PairClock`)
    time_limit: float | None = None
    #: the pairs at which --time-limit ended the loop (None: it did not)
    stopped_at: int | None = None
    #: ReFrame's options selecting the checks (None, with --stand-in: chosen once the
    #: builds say whether they have IOR, :func:`standin_checks`)
    select: tuple[str, ...] | None = None
    #: this attempt's id (:func:`new_attempt`)
    attempt: str = ''
    #: pairs of this attempt run so far
    pairs_run: int = 0
    #: the gate's configuration, loaded at the first look (``--margin``/``--alpha`` in it)
    gate_config: GateConfig | None = None
    #: the attempt's records as the verdict read them: every write of the report takes
    #: them, none reads them again (None: not read)
    run_records: runrecords.RunRecords | None = None

    def __post_init__(self) -> None:
        if self.select is None and self.checks:
            self.select = checks_selection(self.checks)
        elif self.select is None and not self.stand_in:
            self.select = NIGHT_SELECTION
        self.out = Path(self.out).resolve()
        self.history = Path(self.history) if self.history else None
        self.attempt = self.attempt or new_attempt(self.night)


@dataclass(frozen=True)
class NightResult:
    """What a night ended with: the gate's exit code, the pairs run, where it wrote."""
    code: int
    pairs: int
    out: Path
    attempt: str


def checks_selection(regex: str) -> tuple[str, ...]:
    """ReFrame's options selecting the checks whose name matches ``regex`` (--checks)."""
    return ('-n', regex)


def tests_regex(tests: list[str]) -> str:
    """ReFrame -n regex of these tests (gate rows' ``test``) in any HDF5 build: each
    one's whole name, spaces removed as ReFrame matches it, its ``%hdf5_build`` left
    open for :func:`build_filter` to choose."""
    def one(test: str) -> str:
        return ''.join('%hdf5_build=[^%]+' if p.startswith('%hdf5_build=') else re.escape(p)
                       for p in test.split())
    return '^(' + '|'.join(map(one, tests)) + ')$'


def lacks_baseline(row: dict) -> bool:
    """A gated row more pairs cannot decide: INCONCLUSIVE without baseline samples, the
    baseline's runs having said why (the gate's ``runs_said``): the baseline build breaks
    the row, and it broke it on every pair so far."""
    return row.get('verdict') == 'INCONCLUSIVE' and 'baseline' in (row.get('runs_said') or {})


def undecided_tests(gate_result: dict) -> list[str]:
    """The tests whose gated metric a look (the gate's result) left undecided: neither
    PASS nor FAIL, and not :func:`lacks_baseline` (more pairs would only repeat its
    failures)."""
    return sorted({m['test'] for m in gate_result.get('metrics', ())
                   if m.get('role') == 'gated' and m.get('test')
                   and m.get('verdict') not in ('PASS', 'FAIL') and not lacks_baseline(m)})


def without_baseline_tests(gate_result: dict) -> list[str]:
    """The tests of the gated rows :func:`lacks_baseline` of a look."""
    return sorted({m['test'] for m in gate_result.get('metrics', ())
                   if m.get('role') == 'gated' and m.get('test') and lacks_baseline(m)})


def undecided_selection(select: tuple[str, ...], tests: list[str]) -> tuple[str, ...]:
    """``select`` narrowed to ``tests`` (:func:`undecided_tests`): the pairs after a look
    run only those, as a group-sequential design stops each metric at the look that
    decides it. A decided metric keeps its pairs, and the gate judges it on them at every
    later look: a PASS or FAIL it had cannot change (each later look spends at least as
    much of alpha on the same pairs). Unchanged without tests (nothing to narrow to)."""
    if not tests:
        return select
    kept, words = [], iter(select)
    for word in words:      # ReFrame ORs its -n options: the look's replaces --checks'
        if word in ('-n', '--name'):
            next(words)
        else:
            kept.append(word)
    return (*kept, *checks_selection(tests_regex(tests)))


def build_filter(build: str, select: tuple[str, ...] = ()) -> tuple[str, ...]:
    """ReFrame's options keeping the tests of one HDF5 build (its ``hdf5_build``), and
    with ``select`` those it selects: ReFrame keeps only the last ``-E``, so an ``-E`` of
    ``select`` joins the build's."""
    exprs, rest, words = [], [], iter(select)
    for word in words:
        if word in ('-E', '--filter-expr'):
            exprs.append(f'({next(words)})')
        else:
            rest.append(word)
    return (*rest, '-E', ' and '.join([*exprs, f'hdf5_build == {json.dumps(build)}']))


def new_attempt(night: str) -> str:
    """An id no other attempt has: the night, the UTC time, this process, a nonce (48
    bits: 20 attempts in one second of one process collided 1 time in ~300 with 16)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    return (f'{re.sub(r"[^A-Za-z0-9._-]+", "_", night)}.{stamp}.{os.getpid()}.'
            f'{secrets.token_hex(6)}')


def attempt_perflogs(args) -> Path:
    """This attempt's perflogs, for people (the gate reads :func:`attempt_reports`)."""
    return args.out / runrecords.PERFLOGS / args.attempt


def attempt_reports(args) -> Path:
    """This attempt's ReFrame run reports: the records its gate reads."""
    return args.out / runrecords.REPORTS / args.attempt


def read_attempt(args) -> runrecords.RunRecords | None:
    """This attempt's records, read once for the verdict and its report (None when
    they cannot be read: the gate then reads them itself and says why)."""
    try:
        return runrecords.read(reports=[str(attempt_reports(args))])
    except OSError:
        return None


def start_attempt(args) -> None:
    """This attempt's directories; an earlier attempt's verdict goes (its perflogs and
    ReFrame reports stay, in directories of their own)."""
    stale = [p for p in (args.out / 'gate.json', args.out / 'report') if p.exists()]
    if stale:
        log(f'removing the previous attempt\'s {" and ".join(p.name for p in stale)}')
    with contextlib.suppress(FileNotFoundError):
        (args.out / 'gate.json').unlink()
    shutil.rmtree(args.out / 'report', ignore_errors=True)
    attempt_perflogs(args).mkdir(parents=True)
    attempt_reports(args).mkdir(parents=True)


def standin_checks(args, tools: dict) -> None:
    """The stand-in night's checks, unless --checks named them: IOR's quiet HDF5 row
    and its canary, at 1 MiB transfers, when the builds have IOR; else FLASH-IO."""
    if args.select:
        return
    if 'ior' in tools:
        args.select = STANDIN_IOR_SELECTION
        # the user's -S come after: ReFrame keeps the last of a variable
        args.setvar = [*STANDIN_IOR_SETVARS, *args.setvar]
    else:
        args.select = STANDIN_SELECTION
    log(f'stand-in checks: {" ".join(args.select)}'
        + (f' with -S {" -S ".join(STANDIN_IOR_SETVARS)}' if 'ior' in tools else ''))


def resolve_commit(ref: str, repo: str) -> str:
    """A full commit for ``ref``: itself when it is one, else the branch or tag's head."""
    if re.fullmatch(r'[0-9a-f]{40}', ref):
        return ref
    out = run(['git', 'ls-remote', repo, ref], capture=True, timeout=120)
    heads = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    if out.returncode or not heads:
        raise RuntimeError(f'cannot resolve {ref!r} in {repo}: '
                           f'{out.stderr.strip() or "no such branch or tag"}')
    return heads[0]


def install_environment(candidate: str | None, manifest_path: Path,
                        mirrors: list[str] = ()) -> None:
    """Install the Spack environment with the night's candidate pinned; write its manifest."""
    cmd = [REPO / 'spack-env' / 'install', '--manifest', manifest_path,
           *[f'--mirror={m}' for m in mirrors]]
    if candidate:
        cmd += ['--candidate', candidate]
    if run(cmd).returncode:
        raise RuntimeError('spack-env/install failed (see its output above)')


def pinned_candidate_build() -> str:
    """Build id of the candidate that spack-env/spack.yaml pins (its marked line)."""
    spack_yaml = REPO / 'spack-env' / 'spack.yaml'
    for line in spack_yaml.read_text().splitlines():
        m = re.search(r'hdf5@git\.[0-9a-f]{40}=(\S+).*# h5regress:candidate', line)
        if m:
            return buildid.of_label(m.group(1))
    raise RuntimeError(f'{spack_yaml}: no line marked "# h5regress:candidate"')


def choose_builds(builds: dict, args) -> tuple[str, str]:
    """(baseline, candidate) build ids of a manifest."""
    by_commit = [b for b, build in builds.items() if build.hdf5_commit == args.candidate]
    candidate = args.candidate_build or (by_commit[0] if by_commit else pinned_candidate_build())
    baseline = args.baseline_build or next((b for b in sorted(builds) if b != candidate), '')
    for build in (baseline, candidate):
        if build not in builds:
            raise RuntimeError(f'the manifest has no build {build!r} '
                               f'(builds: {", ".join(sorted(builds))})')
    return baseline, candidate


def run_once(build: str, pair_id: str, args, env: dict, reports: Path | None = None,
             output: Path | None = None) -> int:
    """One ReFrame run of the selected checks for one build; its run report goes to
    ``reports`` (default: the attempt's, which its gate reads), ReFrame's output
    (job scripts, stdout, stderr) to ``output`` (default: the night's ``output/``,
    which the report links)."""
    report = (reports or attempt_reports(args)) / f'{pair_id}-{build}.json'
    report.parent.mkdir(parents=True, exist_ok=True)
    cmd = [Path(sys.executable).with_name('reframe'), '-c', REPO / 'reframe' / 'checks',
           *build_filter(build, args.select), '-r', '-s', args.out / 'stage',
           '-o', output or args.out / 'output', '--report-file', report]
    if args.system:
        cmd += ['--system', args.system]
    for setting in (*NIGHT_SETVARS, *args.setvar):
        cmd += ['-S', setting]
    # the pairs repeat this selection: after its first run, only its tests' check files
    cmd = checkfiles.narrowed(cmd, env)
    before = sideload.snapshot()
    result = run(cmd, env={**env, 'H5REGRESS_PAIR_ID': pair_id},
                 stdout=subprocess.DEVNULL if args.quiet else None)
    side = sideload.between(pair_id, build, before, sideload.snapshot())
    stop_leftovers(f'the ReFrame run of {pair_id} {build}')
    try:
        cases = runreport.num_cases(report)
    except (OSError, ValueError) as err:
        raise RuntimeError(f'ReFrame left no readable report {report} (exit '
                           f'{result.returncode}; {getattr(err, "strerror", None) or err})'
                           f'{full_disk_note(args.out)}') from None
    try:    # what the machine did meanwhile, for the gate's contention rule (issue 25)
        sideload.write(report, side)
    except OSError as err:
        log(f'{sideload.side_path(report)} not written ({err.strerror or err}): the gate '
            f'judges this side by its wall time alone')
    checkfiles.learn(cmd, env, report)
    if not cases:
        raise RuntimeError(f'no test of build {build} matched {" ".join(args.select)!r} '
                           f'(ReFrame exit {result.returncode})')
    # a non-zero exit is a failed test: its sanity failures leave no record, its
    # envelope failures are samples; the gate sees what is there
    return result.returncode


@dataclass
class PairClock:
    """A night's --time-limit (``limit`` seconds from ``start``; None: none): whether
    one more pair, then the verdict, end within it. The next pair is taken to last
    ``PAIR_SLACK`` times the last pair (the pair after a look runs fewer tests than the
    one before it, so that estimate errs long); the verdict ``VERDICT_FACTOR`` times the
    longest look, at least ``VERDICT_MIN_S``: the verdict also writes the report."""
    limit: float | None
    start: float = field(default_factory=time.monotonic)
    last_pair: float = 0.0
    longest_look: float = 0.0

    #: the first 10 pairs of the A/A night of 2026-11-28 took 184-206 s: a pair lasted
    #: up to 1.12x the one before it
    PAIR_SLACK = 1.15
    #: that night's gate: a look 2.0 s, the verdict with its report 4.0 s
    VERDICT_FACTOR = 3.0
    VERDICT_MIN_S = 30.0

    def ends_after(self, pairs: int) -> float:
        """Seconds from the start at which ``pairs`` more pairs and the verdict end."""
        verdict = max(self.VERDICT_MIN_S, self.VERDICT_FACTOR * self.longest_look)
        return time.monotonic() - self.start + pairs * self.PAIR_SLACK * self.last_pair + verdict

    def fits_another_pair(self) -> bool:
        return self.limit is None or not self.last_pair or self.ends_after(1) <= self.limit


def run_pairs(first: int, last: int, baseline: str, candidate: str, args, env,
              clock: PairClock | None = None) -> int:
    """Pairs ``first``..``last`` (ABBA); under a ``clock`` only those that end in its
    time: returns the last pair run (``first - 1``: none), and sets ``args.stopped_at``
    when the clock stopped the loop."""
    for i in range(first, last + 1):
        if clock is not None and not clock.fits_another_pair():
            log(f'time limit: pair {i} would end after {clock.limit:.0f} s from the '
                f'attempt\'s start (the last pair took {clock.last_pair:.0f} s, '
                f'{time.monotonic() - clock.start:.0f} s gone): no more pairs')
            if i - 1 < args.pairs:
                log(f'warning: that is before the first look at {args.pairs} pairs, and fewer '
                    f'pairs say less (see the verdict); a time limit of about '
                    f'{clock.ends_after(args.pairs - i + 1) / 60:.0f} min would reach it')
            args.stopped_at = i - 1
            return i - 1
        pair_id = f'{args.attempt}-p{i:02d}'
        order = (baseline, candidate) if i % 2 else (candidate, baseline)
        start, args.pairs_run = time.monotonic(), i
        codes = [run_once(build, pair_id, args, env) for build in order]
        failed = [b for b, c in zip(order, codes) if c]
        took = time.monotonic() - start
        if clock is not None:
            clock.last_pair = took
        log(f'pair {i}/{last}{f" (up to {args.max_pairs})" if last < args.max_pairs else ""}: '
            f'{order[0]} then {order[1]}, {took:.0f} s'
            + (f'; ReFrame reported failed tests for {", ".join(failed)}' if failed else ''))
    return last


def look_summary(gate_json: Path, pairs: int, every_metric: bool,
                 what: str = 'look') -> list[str]:
    """What a look says: each gated metric's ratio and interval against the margin
    (``every_metric``), else the night's verdict and its least favourable metric."""
    try:
        result = json.loads(gate_json.read_text())
    except (OSError, ValueError):
        return [f'{what} at {pairs} pairs: the gate wrote no {gate_json.name}']
    if result.get('error'):     # why, not the ratios: more pairs will not change it
        return [f'{what} at {pairs} pairs: {result["overall"]}: {result["error"]}']
    floor = 1 - result['config']['margin']
    gated = [m for m in result['metrics'] if m.get('role') == 'gated']

    def describe(m):
        if m.get('ratio') is None:
            return f'{m["label"]}: no ratio ({m.get("reason")})'
        lo, hi = (f'{m[k]:.3f}' if m.get(k) is not None else '-' for k in ('ratio_lo', 'ratio_hi'))
        lower = '' if m.get('higher_is_better', True) else ' (lower is better)'
        return f'{m["label"]}: ratio {m["ratio"]:.3f} [{lo}, {hi}]{lower}'

    head = (f'{what} at {pairs} pairs: {result["overall"]}, '
            f'{sum(m["verdict"] == "PASS" for m in gated)} of {len(gated)} gated metrics '
            f'PASS (interval above {floor:.2f})')
    if every_metric:
        return [head] + [f'  {m["verdict"]:<12} {describe(m)}' for m in gated]
    known = [m for m in gated if m.get('ratio_lo') is not None]
    if not known:
        return [head]
    # by performance: a peak memory's value ratio grows as it gets worse
    worst = min(known, key=lambda m: m.get('perf_lo') or m['ratio_lo'])
    return [f'{head}; least favourable {describe(worst)}']
