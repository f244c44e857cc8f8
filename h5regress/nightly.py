"""The nightly: candidate HDF5 against baseline, paired, gated, reported.

``ci/nightly`` runs this. Steps:

1. **Builds.** Either the Spack environment, with that night's candidate commit
   pinned (``spack-env/install --candidate SHA``, which writes the manifest), or,
   with ``--stand-in``, two stand-in builds of this project's FLASH-IO kernel
   built here against the HDF5 on the machine, and of ``ior`` (the one on PATH,
   else the Spack environment's, with that build's HDF5; the same binary on both
   sides; the stand-in manifest says which): ``hdf5-standin-a`` (baseline) and
   ``hdf5-standin-b`` (candidate), the candidate optionally slowed by a known
   fraction (``--inject-slowdown``: an LD_PRELOAD shim that delays the writes of
   its HDF5 runs only, so the MPI-IO canary stays honest). Stand-ins are how CI
   tests the whole chain without Spack: an A/A night must not FAIL, and an A/A
   night with a large injected slowdown must. Without ``--checks``, a stand-in
   night with IOR pairs IOR's HDF5 independent shared-file row at 1 MiB
   transfers (``-S ior_check.transfer_size=1m``) and its MPI-IO twin, the
   quietest HDF5 write measured on a workstation VM (pair log-ratio SD 0.04-0.19
   there, against FLASH-IO's checkpoint's 0.1-0.3; a verdict on an unchanged
   build within 20 pairs needs about 0.08: on that VM idle, an A/A night PASSed at
   20 pairs with SD 0.070 and ``--inject-slowdown 0.1`` FAILed at 15; loaded, an
   A/A night also stayed INCONCLUSIVE); without IOR, the FLASH-IO kernel.
2. **Pairs, ABBA.** Pair *i* runs the selected checks once for the baseline and
   once for the candidate, back to back, each a separate ReFrame run (so a
   separate execution of the tool); odd pairs run A then B, even pairs B then A,
   so drifts of the machine cancel. Every record carries its pair id
   (``H5REGRESS_PAIR_ID``, ``<attempt>-p<i>``). ReFrame runs in this process's allocation: on a
   cluster, take one allocation (``salloc -N2 ci/nightly --system cluster:alloc``)
   with a partition whose scheduler is ``local`` and launcher ``srun``, so both
   builds run on the same nodes. ``--salloc ARGS`` takes that allocation itself
   (``ci/nightly --salloc '-N2 -p compute' --system cluster:alloc``): a failed
   ``salloc`` is then ERROR (4), where ``salloc ... ci/nightly`` would exit 1 (FAIL).
3. **Gate.** ``h5regress gate`` on this attempt's ReFrame run reports; while INCONCLUSIVE, more
   pairs up to ``--max-pairs`` (the gate knows the planned looks, so early
   looks need stronger evidence and the loop keeps the gate's alpha), then
   the final verdict, which is appended to the history. The pairs after a look
   run only the tests of the gated metrics it left undecided (neither PASS nor
   FAIL): each metric stops at the look that decides it, and the others' pairs
   cost what their tests take, not the whole night's.
4. **Publish.** Report (Markdown, HTML, JUnit XML), gate JSON, perflogs and the
   manifest in ``--out``: the CI job's artifacts.

**Attempts.** Each run of this script is an attempt with its own id
(``<night>.<UTC time>.<pid>.<nonce>``): its ReFrame run reports go to
``--out/reports/<attempt>/``, its perflogs (for people) to ``--out/perflogs/<attempt>/``,
its pair ids are ``<attempt>-p<i>``, and the gate reads the reports and keeps only that
attempt's records (``gate --attempt``). A reused ``--out`` (the default
``./nightly-out``) never mixes attempts: an earlier night, an interrupted attempt or a
rerun of the same night is never gated again; the previous attempt's ``gate.json`` and
``report/`` are removed when an attempt starts, and two attempts cannot share one
``--out`` at the same time (a lock; the second is an ERROR).

**Time limit.** ``--time-limit 25m`` fits the attempt (builds included; the bisect
after a FAIL not) into a slot such as a CI job's timeout, which would otherwise kill
the night with no verdict: after the first pair, no pair starts that would end, with
the verdict, beyond it, and the verdict is at the pairs reached, its looks ending
there (``benchmarks/calibrate.py --only-time-limit``: the loop still keeps alpha).

**Signals.** SIGTERM (what ``timeout`` sends) or SIGINT stops the night: the
signal is forwarded to the running child (each child, ReFrame included, runs in
a process group of its own), everything below this process (ReFrame's jobs
too: this process is their subreaper) gets SIGTERM and, 10 s later, SIGKILL;
then the exit code is 4 (ERROR) and no verdict is written. A signal during the final
gate waits for it (seconds), so that its JSON, report and history night agree.

The exit code is the gate's: 0 PASS, 1 FAIL, 2 INCONCLUSIVE, 3 DEGRADED, 4 ERROR,
5 NO-SLOWDOWN-SEEN; a failure of the script itself and a signal are ERROR too; a wrong
command line is 64 (README, "Exit codes").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import io
import json
import os
import shlex
import shutil
import sys
import time
import traceback
from pathlib import Path

from h5regress import (atomic, bisectbuild, bisectruns, bisectsearch, buildid, coverage,
                       coveragerange, darshan, gate, history, manifest, report, runlock)
from h5regress.bisectsearch import format_text
from h5regress.cmdline import (UsageError, UsageExitParser, config_files, deprecated_alias,
                               duration_arg)
from h5regress.nightprocs import (Interrupted, _state, handle_signals, log, run,
                                  stop_descendants, uninterrupted)
from h5regress.nightrun import (NIGHT_SELECTION, tests_regex, SETTINGS, STANDIN_IOR_SELECTION,
                                STANDIN_IOR_SETVARS, STANDIN_SELECTION, NightRequest, NightResult,
                                attempt_perflogs, attempt_reports, checks_selection,
                                choose_builds, install_environment, look_summary, PairClock,
                                read_attempt,
                                resolve_commit, run_once, run_pairs, standin_checks,
                                start_attempt, undecided_selection, undecided_tests,
                                without_baseline_tests)
from h5regress.standins import STANDIN_A, STANDIN_B, build_standins, injected_delay
from h5regress.report.links import REPO_URL_ENV


def looks(args) -> list[int]:
    """Pair counts at which the loop gates: --pairs, +--more-pairs, ..., --max-pairs; once
    --time-limit has ended the loop, the looks made and the pairs reached, last (that
    verdict then spends what is left of alpha at those pairs: earlier looks spent no more
    than the shorter loop lets them count, so the loop keeps its alpha)."""
    planned = bisectsearch.looks(args.pairs, args.more_pairs, args.max_pairs)
    if args.stopped_at is None:
        return planned
    return [n for n in planned if n < args.stopped_at] + [args.stopped_at]


def gate_once(baseline: str, candidate: str, args, final: bool) -> int:
    """One look (or, ``final``, the verdict) of the gate on this attempt's run reports: a
    :class:`h5regress.gate.GateRequest` called in-process, with the gate's configuration
    loaded once per night (``--margin`` and ``--alpha`` in it, as floats)."""
    try:
        if args.gate_config is None:
            args.gate_config = gate.load_config().with_overrides(margin=args.margin,
                                                                 alpha=args.alpha)
    except gate.ConfigError as err:
        log(f'error: {err}')
        return gate.EXIT_ERROR
    if final:
        args.run_records = read_attempt(args)
    request = gate.GateRequest(
        baseline=baseline, candidate=candidate, reports=[str(attempt_reports(args))],
        run_records=args.run_records if final else None,
        attempt=args.attempt, looks=looks(args), night=args.night,
        json=str(args.out / 'gate.json'), gate_config=args.gate_config,
        # none run (records of an earlier step): the gate counts them
        pairs_run=args.pairs_run or None,
        history=str(args.history) if args.history else None,
        injected_slowdown=args.inject_slowdown or 0.0,
        report=str(args.out / 'report') if final else None,
        append_history=bool(final and args.history), quiet=not final)
    if not _state.quiet:
        log(f'gate: {baseline} against {candidate}, looks {request.looks}, pairs run '
            f'{request.pairs_run}, margin {args.gate_config.margin:g}, alpha '
            f'{args.gate_config.alpha:g}' + (', the verdict' if final else ''))
    if final and not args.quiet:
        return gate.gate_request(request)
    # a look, or the verdict under --quiet: the summary below says it in a line or a few
    with contextlib.redirect_stdout(io.StringIO()):
        code = gate.gate_request(request)
    for line in look_summary(args.out / 'gate.json', args.pairs_run, not args.quiet,
                             'verdict' if final else 'look'):
        log(line)
    return code


def build_parser() -> UsageExitParser:
    ap = UsageExitParser(prog='ci/nightly', description=__doc__,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    _build_options(ap)
    _run_options(ap)
    _followup_options(ap)
    return ap


def _build_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('--candidate', help='HDF5 commit, branch or tag of the candidate, '
                    'e.g. develop (its head tonight); default: the commit spack.yaml pins')
    ap.add_argument('--hdf5-repo', default='https://github.com/HDFGroup/hdf5.git',
                    help='where --candidate branches and tags are looked up')
    ap.add_argument('--baseline-build', help='manifest build id of the baseline (default: '
                    'the first build of the manifest that is not the candidate)')
    ap.add_argument('--candidate-build', help='manifest build id of the candidate '
                    '(default: the build of --candidate, else the one spack.yaml marks)')
    ap.add_argument('--stand-in', action='store_true',
                    help='no Spack: two stand-in builds of the FLASH-IO kernel and IOR when '
                    'there is one (see above)')
    ap.add_argument('--inject-slowdown', type=float, default=0.0, metavar='FRACTION',
                    help='stand-in candidate: HDF5 writes take 1+FRACTION of their time')
    ap.add_argument('--no-install', action='store_true',
                    help='use the existing manifest (spack-env/manifest.json)')
    ap.add_argument('--checks', help='ReFrame name regex of the checks to pair (default '
                    f'ReFrame {" ".join(NIGHT_SELECTION)}; with --stand-in '
                    f'{" ".join(STANDIN_IOR_SELECTION)} with -S '
                    f'{" -S ".join(STANDIN_IOR_SETVARS)} when the stand-in builds have '
                    f'IOR, else {" ".join(STANDIN_SELECTION)})')


def _run_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('--pairs', type=int, default=10, help='pairs before the first look (10)')
    ap.add_argument('--more-pairs', type=int, default=5,
                    help='pairs added while INCONCLUSIVE (5)')
    ap.add_argument('--max-pairs', type=int, default=20, help='cap of pairs (20)')
    ap.add_argument('--time-limit', type=duration_arg, metavar='DURATION',
                    help="the attempt's time, builds included (25m, 1h30m, 1500): no pair "
                    'starts that would end, with the verdict, beyond it (default: none)')
    ap.add_argument('--alpha', type=float,
                    help="gate's false discovery rate (default: ci/gate.yaml's)")
    ap.add_argument('--margin', type=float,
                    help="gate's tolerated slowdown (default: ci/gate.yaml's)")
    ap.add_argument('--system', help='ReFrame system:partition to run on')
    ap.add_argument('--reframe-config', dest='config', default=str(SETTINGS),
                    metavar='REFRAME_FILE[:FILE...]',
                    help='ReFrame configuration files, later ones on top (default '
                    "reframe/config/settings.py); not the gate's YAML: the nightly's gate "
                    'reads ci/gate.yaml')
    # --config names the gate YAML in gate, report, refs and publish
    ap.add_argument('--config', dest='config', action=deprecated_alias('--reframe-config'),
                    help=argparse.SUPPRESS)


def _followup_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument('--salloc', metavar='ARGS',
                    help="take the night's allocation: run under salloc ARGS (e.g. "
                    "'-N2 -p compute --exclusive'); a failed salloc is ERROR (4)")
    ap.add_argument('--bisect', action='store_true', help='after a FAIL, find the first '
                    'bad commit (h5regress bisect, --out/bisect) from --bisect-good to '
                    "tonight's candidate commit; a rerun resumes it")
    ap.add_argument('--bisect-good', metavar='SHA', help="bisect's good commit (default: "
                    "the candidate commit of the history's last PASS night)")
    ap.add_argument('--bisect-bad', metavar='SHA',
                    help="bisect's bad commit (default: tonight's candidate commit); "
                    "tonight's FAIL ratio is its --bad-ratio, it is not measured again")
    ap.add_argument('--bisect-repo', metavar='PATH|URL', help='HDF5 repository of the '
                    'bisect (default --hdf5-repo; with --stand-in: a stand-in repository)')
    ap.add_argument('--mirror', action='append', default=[], metavar='URL',
                    help='Spack source mirror of the night\'s and the bisect\'s builds '
                         '(spack-env/install --mirror; repeatable)')
    ap.add_argument('--coverage-map', type=Path, metavar='MAP',
                    help="coverage map of the candidate's commit (h5regress coverage run): "
                    "the report then says which of the candidate's changed HDF5 functions "
                    "the night's rows execute")
    ap.add_argument('--coverage-repo', metavar='PATH', help='local HDF5 clone for that diff '
                    '(default --bisect-repo, else --hdf5-repo, when a local directory)')
    ap.add_argument('-S', '--setvar', action='append', default=[],
                    help='passed to ReFrame as -S (repeatable)')
    ap.add_argument('--history', type=Path, default=os.environ.get('H5REGRESS_HISTORY'),
                    help='persistent history directory (default $H5REGRESS_HISTORY)')
    ap.add_argument('--out', type=Path, default=Path('nightly-out'),
                    help='artifacts directory (default ./nightly-out)')
    ap.add_argument('--repo-url', metavar='URL',
                    help='web URL of the HDF5 repository, for the reports\' commit and compare '
                         f'links (default ${REPO_URL_ENV})')
    ap.add_argument('--night', default=datetime.date.today().isoformat(),
                    type=history.night_id,
                    help="night id (default today; letters, digits, '.', '_', '-'; a night "
                         "id already in the history is kept and this one stored as "
                         "<night>+2, +3...)")
    ap.add_argument('--quiet', action='store_true', help="hide ReFrame's output")


def parse_args(argv) -> NightRequest:
    """The night's request from ``ci/nightly``'s command line (usage errors exit 64)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.pairs < 1 or args.max_pairs < args.pairs:
        ap.error('need 1 <= --pairs <= --max-pairs')
    if args.more_pairs < 1:
        ap.error('--more-pairs must be at least 1')
    if args.inject_slowdown and not args.stand_in:
        ap.error('--inject-slowdown works on stand-in builds only')
    given = [o for o, v in (('--baseline-build', args.baseline_build),
                            ('--candidate-build', args.candidate_build)) if v]
    if args.stand_in and given:
        ap.error(f'--stand-in runs its own two builds (hdf5-standin-a, hdf5-standin-b): '
                 f'{" and ".join(given)} would be ignored; drop {"them" if len(given) > 1 else "it"}'
                 f' or --stand-in')
    try:
        args.config_files = config_files(args.config, '--reframe-config')
    except UsageError as err:
        ap.error(str(err))
    # with --stand-in and no --checks, the selection is chosen once the builds say
    # whether they have IOR (standin_checks)
    return NightRequest(**vars(args))


@contextlib.contextmanager
def out_lock(out: Path):
    """One attempt at a time per --out (a second one is an ERROR, not a mix), and one
    measurement at a time per checkout (a second night waits for the run lock). The
    children hold both locks too (:func:`run`)."""
    try:
        with runlock.held(out / '.nightly.lock', wait=False) as out_fd, \
                runlock.held(runlock.CHECKOUT_LOCK, log=log) as run_fd:
            _state.lock_fds = (out_fd, run_fd)
            try:
                yield
            finally:
                _state.lock_fds = ()
    except runlock.LockBusy as err:
        raise RuntimeError(f'another ci/nightly is running with --out {out}: {err} (it '
                           f'or a child of it; wait for it or give another --out)') \
            from None


def prepare_builds(args) -> tuple[Path, str, str]:
    """(manifest, baseline build, candidate build) of the night."""
    if args.stand_in:
        path = build_standins(args.out, args.inject_slowdown)
        standin_checks(args, manifest.load(path)[buildid.of_label(STANDIN_A)].tools)
        return path, buildid.of_label(STANDIN_A), buildid.of_label(STANDIN_B)
    if args.no_install:
        manifest_path = manifest.default_path()
    else:
        if args.candidate:
            args.candidate = resolve_commit(args.candidate, args.hdf5_repo)
        manifest_path = args.out / 'manifest.json'
        install_environment(args.candidate, manifest_path, args.mirror)
    return (manifest_path, *choose_builds(manifest.load(manifest_path), args))


def final_gate(baseline: str, candidate: str, args) -> int:
    """The verdict, its report and its history night: all written, or (a signal before
    it) none; a signal during it waits for it."""
    with uninterrupted():
        return gate_once(baseline, candidate, args, final=True)


def narrow_to_undecided(args: NightRequest) -> bool:
    """The next pairs run only the tests of the gated metrics the last look left
    undecided (:func:`h5regress.nightrun.undecided_selection`). False when more pairs
    cannot decide any of them: every one lacks baseline samples and the baseline's runs
    said why (:func:`h5regress.nightrun.lacks_baseline`)."""
    try:
        result = json.loads((args.out / 'gate.json').read_text())
    except (OSError, ValueError):
        return True     # the look wrote no result: the next pairs run the whole selection
    tests, broken = undecided_tests(result), without_baseline_tests(result)
    if broken and not tests:
        log(f'no more pairs: the {len(broken)} undecided test(s) have no baseline samples '
            f'and the baseline\'s runs said why, which more pairs would only repeat: '
            f'{", ".join(broken)}')
        return False
    select = undecided_selection(args.select or (), tests)
    if select != args.select:
        log(f'the next pairs run only the {len(tests)} test(s) whose gated metric the look '
            f'left undecided')
        args.select = select
    return True


def night(args: NightRequest) -> NightResult:
    """The attempt: builds, pairs, looks, the verdict."""
    start = time.monotonic()    # --time-limit counts the builds too
    start_attempt(args)
    manifest_path, baseline, candidate = prepare_builds(args)
    if manifest_path != args.out / 'manifest.json':
        shutil.copy(manifest_path, args.out / 'manifest.json')
    # the chain goes in RFM_CONFIG_FILES: ReFrame's -C takes a single file
    env = {**os.environ, 'RFM_CONFIG_FILES': ':'.join(args.config_files),
           'H5REGRESS_MANIFEST': str(manifest_path),
           'H5REGRESS_PERFLOG_DIR': str(attempt_perflogs(args))}
    log(f'night {args.night}, attempt {args.attempt}: baseline {baseline}, candidate '
        f'{candidate}, {args.pairs} pairs (up to {args.max_pairs})')
    clock = PairClock(args.time_limit, start)
    done = run_pairs(1, args.pairs, baseline, candidate, args, env, clock)
    injected = args.stand_in and args.inject_slowdown
    if injected:    # before any look writes a verdict: an injection that did not happen
        injected_delay(args.out / 'stand-in', args.inject_slowdown)
    while done < args.max_pairs and args.stopped_at is None:
        look_start = time.monotonic()
        code = gate_once(baseline, candidate, args, final=False)
        clock.longest_look = max(clock.longest_look, time.monotonic() - look_start)
        if code not in (gate.EXIT_INCONCLUSIVE, gate.EXIT_NO_SLOWDOWN_SEEN):
            break
        more = min(args.more_pairs, args.max_pairs - done)
        if not narrow_to_undecided(args):
            break
        done = run_pairs(done + 1, done + more, baseline, candidate, args, env, clock)
    if injected:
        log(injected_delay(args.out / 'stand-in', args.inject_slowdown))
    code = final_gate(baseline, candidate, args)
    if args.coverage_map:
        add_coverage(args)
    if code == gate.EXIT_INCONCLUSIVE:
        log(f'warning: still INCONCLUSIVE after {done} pairs ('
            + ('the time limit)' if args.stopped_at is not None else 'the cap)'))
    if code == gate.EXIT_FAIL:
        after_fail(manifest_path, args, env)
    log(f'verdict: exit {code}; artifacts in {args.out}')
    return NightResult(code, done, args.out, args.attempt)


def add_coverage(args) -> None:
    """The blind-spot line (issue 28) into the gate's JSON and the report: which of the
    candidate's changed HDF5 functions the map's rows execute. The verdict stands
    whatever happens here."""
    gate_json = args.out / 'gate.json'
    result = json.loads(gate_json.read_text())
    repo = args.coverage_repo or args.bisect_repo or args.hdf5_repo
    if not os.path.isdir(repo or ''):
        result['coverage'] = {'available': False, 'reason': (
            f'{repo} is not a local clone (--coverage-repo PATH)')}
    else:
        result['coverage'] = coverage.night_section(
            args.coverage_map, repo, result.get('baseline_commit'),
            result.get('candidate_commit'),
            [m['test'] for m in result.get('metrics', []) if m.get('test')])
    log(report.blind_spot_text(result))
    with uninterrupted():
        atomic.write_text(gate_json, gate.dumps(result))
        report.write_all(result, history.load(args.history, exclude_night=args.night)
                         if args.history else None, args.out / 'report',
                         records=args.run_records and args.run_records.records)


def after_fail(manifest_path: Path, args, env: dict) -> None:
    """What follows a FAIL (issue 15), into the gate's JSON and the report: the Darshan
    counter diff of each FAIL metric and, with --bisect, the first bad commit."""
    gate_json = args.out / 'gate.json'
    result = json.loads(gate_json.read_text())

    def run_check(build, test, pair_id, extra):
        one = dataclasses.replace(args, select=checks_selection(tests_regex([test])))
        # its report beside its logs: never one of the attempt's, which the gate reads;
        # its job files too: ReFrame would replace the FAIL's, which the report links
        run_once(build, pair_id, one, {**env, **extra}, args.out / 'darshan' / 'reports',
                 args.out / 'darshan' / 'output')

    # the verdict stands whatever happens here: a failure is said, never an ERROR night
    try:
        result['darshan'] = darshan.night_diff(result, manifest_path, args.out / 'darshan',
                                               run_check)
    except (RuntimeError, OSError, manifest.ManifestError) as err:
        result['darshan'] = {'available': False, 'reason': f'the Darshan runs failed: {err}'}
    if args.bisect:
        try:
            result['bisect'] = bisect_night(result, args)
        except (bisectbuild.BisectError, manifest.ManifestError, RuntimeError,
                OSError) as err:
            result['bisect'] = {'error': f'h5regress bisect: {err}'}
    with uninterrupted():
        atomic.write_text(gate_json, gate.dumps(result))
        report.write_all(result, history.load(args.history, exclude_night=args.night)
                         if args.history else None, args.out / 'report',
                         records=args.run_records and args.run_records.records)


def last_pass_commit(args) -> str | None:
    """The candidate commit of the history's last PASS night (not an A/A one)."""
    if not args.history:
        return None
    for night in reversed(history.load(args.history, exclude_night=args.night).nights):
        if night.get('overall') == 'PASS' and not night.get('a_a') and \
                night.get('candidate_commit'):
            return night['candidate_commit']
    return None


def bisect_night(result: dict, args: NightRequest) -> dict:
    """The bisect (a call, :func:`bisectruns.run_bisect`) from the good commit to
    tonight's candidate commit, over the FAIL metrics, in --out/bisect (resumable: a
    rerun of the night goes on there)."""
    good = args.bisect_good or last_pass_commit(args)
    bad = args.bisect_bad or result.get('candidate_commit')
    if not good or not bad:
        return {'error': 'no good commit to start from: give --bisect-good (or a --history '
                'with a PASS night)' if not good else 'no candidate commit tonight'}
    fails = [m for m in result['metrics'] if m.get('role') == 'gated'
             and m.get('verdict') == 'FAIL']
    # tonight measured the regression: its least slowed FAIL metric's ratio sets the
    # bisect's step margin, and --bad is not measured again
    ratios = [m['perf_ratio'] for m in fails if m.get('perf_ratio') is not None]
    work = args.out / 'bisect'
    work.mkdir(parents=True, exist_ok=True)
    given = args.bisect_repo or args.hdf5_repo
    repo = bisectbuild.local_repo(given, work)
    good, bad = bisectbuild.resolve(repo, good, '--good'), bisectbuild.resolve(repo, bad,
                                                                               '--bad')
    req = bisectruns.BisectRequest(
        good=good, bad=bad, repo=repo, work=work, repo_name=given,
        builder='stand-in' if args.stand_in else 'spack',
        # only the FAIL metrics' tests run, and only their tools are built per step
        checks=tests_regex(night_tests(sorted({m['test'] for m in fails}), args, repo,
                                       good, bad)),
        tools=[] if args.stand_in else sorted({m['tool'] for m in fails}),
        metrics=[m['key'] for m in fails], mirror=list(args.mirror),
        bad_ratio=round(max(ratios), 6) if ratios else None,
        night=NightRequest(system=args.system, setvar=list(args.setvar)))
    found = bisectruns.run_bisect(req, gate_look)
    log(format_text(found))
    atomic.write_text(work / 'result.json', json.dumps(found, indent=1))
    return found


def night_tests(tests: list[str], args: NightRequest, repo: Path, good: str,
                bad: str) -> list[str]:
    """The FAIL tests the bisect runs: with --coverage-map, all but those whose mapped row
    executes no HDF5 function the range changes (issue 28); all of them when the map
    cannot say, said."""
    if not args.coverage_map or args.stand_in:
        return tests
    try:
        choice = coveragerange.choose_rows(str(repo), good, bad, [args.coverage_map])
    except coverage.CoverageError as err:
        log(f'bisect: --coverage-map: {err}; bisecting every FAIL row')
        return tests
    for line in choice.lines():
        log(f'bisect: --coverage-map: {line}')
    kept, why_all = coveragerange.keep_tests(tests, choice)
    if why_all:
        log(f'bisect: --coverage-map: {why_all}: bisecting every FAIL row')
    return kept


def gate_look(baseline: str, candidate: str, args: NightRequest) -> int:
    """A look of the gate at a bisect step's runs (:data:`bisectruns.GateLook`)."""
    return gate_once(baseline, candidate, args, final=False)


#: file the nightly under ``--salloc`` writes its exit code to (set by the outer one)
STATUS_ENV = 'H5REGRESS_NIGHTLY_STATUS'


def under_salloc(argv: list[str], args) -> int:
    """The night run by ``salloc ARGS`` in an allocation of its own; salloc's own
    failure (no allocation: the night never started) is ERROR, not salloc's exit 1."""
    status = args.out / f'.nightly-status-{os.getpid()}'
    status.unlink(missing_ok=True)
    cmd = ['salloc', *shlex.split(args.salloc), sys.executable, '-m', 'h5regress.nightly',
           *argv]
    result = run(cmd, env={**os.environ, STATUS_ENV: str(status)})
    try:
        return int(status.read_text())
    except (OSError, ValueError):
        raise RuntimeError(f'salloc {args.salloc} failed (exit {result.returncode}, its '
                           f'message above): no allocation, no night') from None
    finally:
        status.unlink(missing_ok=True)


def use_repo_url(url: str | None) -> None:
    """Every report of the night links commits to ``url``: the gate, the coverage line,
    the Darshan diff and the bisect write theirs in this process or its children, which
    all read ${REPO_URL_ENV}."""
    if url:
        os.environ[REPO_URL_ENV] = url


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    use_repo_url(args.repo_url)
    _state.quiet = args.quiet
    handle_signals()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        if args.salloc and not os.environ.get('SLURM_JOB_ID'):
            return under_salloc(argv, args)
        with out_lock(args.out):
            code = night(args).code
        if os.environ.get(STATUS_ENV):
            Path(os.environ[STATUS_ENV]).write_text(str(code))
        return code
    except Interrupted as sig:
        left = stop_descendants()
        log(f'stopped by {sig}: attempt {args.attempt} has no verdict, its children are '
            f'gone{f" (but for PIDs {left})" if left else ""}; exit {gate.EXIT_ERROR}')
    except (RuntimeError, manifest.ManifestError, OSError) as err:
        stop_descendants()
        log(f'error: {err}')
    except Exception as err:    # a bug must read as ERROR, never as FAIL (exit 1)
        stop_descendants()
        where = traceback.extract_tb(err.__traceback__)[-1]
        log(f'error: {type(err).__name__}: {err} (at {Path(where.filename).name}:'
            f'{where.lineno}); exit {gate.EXIT_ERROR}')
    return gate.EXIT_ERROR


if __name__ == '__main__':
    sys.exit(main())
