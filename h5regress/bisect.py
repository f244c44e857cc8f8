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
metrics; a --bad the gate neither FAILs nor finds broken ends the bisect in an
error: nothing it could find), or ``--bad-ratio`` (the FAIL night's ratio, as ``ci/nightly
--bisect`` passes it), when --bad is not measured again. A step still
INCONCLUSIVE at the cap is decided when the one-sided 90 % bound of its ratio
lies on one side of the midpoint (:func:`at_cap`), else skipped.

It stops when no unknown commit is left between the last good and the first bad
one; with skipped commits in between, the answer is a range and says so. When that
first bad commit is a merge whose first parent tested good, the search goes on into
the commits the merge brought in (its second parent's first-parent chain), as ``git
bisect`` without ``--first-parent`` would: HDF5's branches of 2019 and before merged
pull requests, and the answer is then the pull request's commit, not its merge.

A --bad whose build breaks rows rather than slowing them (the gate's ERROR: its
runs left no samples and said why, e.g. a ``--coll-metadata`` row whose other ranks
read metadata themselves) and FAILs none makes the bisect look for the commit that
broke them: a step is bad when those rows break and their runs say what --bad's said
(numbers aside), good when they leave samples, skipped when broken otherwise; the
first look decides it.

``--speedup`` looks for the commit that made the checks faster (which commit
fixed a slowdown): --good is the older, slower end and --bad the newer, faster
one; each step runs --good's build as the candidate against the step's commit,
so "bad" (a FAIL) means "has the speed-up", as ``git bisect --term-new``.

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
way), 4 ERROR (no good build, unreadable state, a --bad the gate does not FAIL),
64 bad usage, 75 stopped by ``--steps`` before the end (run it again to go on).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from h5regress import atomic, manifest, nightly
from h5regress.bisectbuild import BisectError, local_repo, resolve
from h5regress.bisectsearch import STATE_FILE, format_text
from h5regress.bisectruns import (DEFAULT_MAX, DEFAULT_MORE, DEFAULT_PAIRS, BisectRequest,
                                  run_bisect)
from h5regress.cmdline import EXIT_ERROR, EXIT_RESUMABLE, ArgParser, parse_args
from h5regress.nightprocs import Interrupted, handle_signals, stop_descendants


#: exit code of a run stopped by --steps before the search ended (not 2, INCONCLUSIVE)
EXIT_STOPPED = EXIT_RESUMABLE


class Stopped(Exception):
    """--steps N steps done, the search not finished (exit 75; the state file resumes)."""


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
                   '(default: the nightly\'s, less the rows --coverage-map says execute '
                   'none of the range\'s changed functions)')
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
    p.add_argument('--speedup', action='store_true',
                   help='find the commit that made the checks faster (a fix), as git bisect '
                        '--term-old=slow --term-new=fast: --good is then the older, slower '
                        'commit, --bad the newer, faster one; each step runs --good\'s build '
                        'as the candidate against the step\'s commit, so the gate FAILs a '
                        'step that has the speed-up (reported as bad: like --bad)')
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
                   help='stop after N steps of this run (exit 75), e.g. to hold a measurement '
                        'lock one step at a time; the same command goes on from the state file')
    p.add_argument('--coverage-map', type=Path, metavar='MAP', action='append', default=[],
                   help='coverage map (h5regress coverage run; repeatable: the one of --bad\'s '
                        'commit, else the one that places most of the range\'s changed lines, '
                        'said): without --checks, the steps leave out the mapped rows that '
                        'execute no HDF5 function changed between --good and --bad; every '
                        'row runs when the map cannot say, said')
    p.add_argument('--nightly-arg', action='append', default=[], metavar='ARG',
                   help='passed to the nightly\'s runs (e.g. --nightly-arg=--system=x:y)')
    return p


def request_of(args: argparse.Namespace) -> BisectRequest:
    """The bisect's request from its command line (commits and repository as given)."""
    return BisectRequest(
        good=args.good, bad=args.bad, repo=Path(args.repo), work=args.work.resolve(),
        repo_name=str(args.repo), builder=args.builder, checks=args.checks,
        tools=list(args.tool), metrics=list(args.metric), bad_ratio=args.bad_ratio,
        speedup=args.speedup,
        pairs=args.pairs, more_pairs=args.more_pairs, max_pairs=args.max_pairs,
        mirror=list(args.mirror), simulate_cv=args.simulate_cv, seed=args.seed,
        lock=args.lock, coverage_maps=list(args.coverage_map),
        night=nightly.parse_args(args.nightly_arg))


def stop_after(steps: int | None) -> Callable[[int], None]:
    """``on_step`` of the search: :class:`Stopped` once ``steps`` steps of this run are done."""
    done: list[int] = []

    def on_step(n_steps: int) -> None:      # called before each step after the first
        done.append(n_steps)
        if steps is not None and len(done) >= steps:
            raise Stopped(f'stopped after {len(done)} step(s) of this run (--steps), '
                          f'{n_steps} in all, more to go')
    return on_step


def main(argv: Sequence[str] | None = None) -> int:
    args, code = parse_args(build_parser(), argv)
    if args is None:
        return code
    # SIGTERM/SIGINT: forwarded to the running child (ReFrame and its jobs run in
    # sessions of their own, so a signal to this process alone would leave them
    # running), then every descendant is stopped; the state file keeps what was done
    handle_signals()
    work = args.work.resolve()
    try:
        req = request_of(args)
        req.check()
        work.mkdir(parents=True, exist_ok=True)
        repo = local_repo(args.repo, work)
        req = dataclasses.replace(req, repo=repo, good=resolve(repo, args.good, '--good'),
                                  bad=resolve(repo, args.bad, '--bad'))
        result = run_bisect(req, nightly.gate_look, on_step=stop_after(args.steps))
    except Stopped as stop:
        print(f'h5regress bisect: {stop}; the same command goes on from '
              f'{work / STATE_FILE}')
        return EXIT_STOPPED
    except (BisectError, manifest.ManifestError, OSError, RuntimeError) as err:
        stop_descendants()
        print(f'h5regress bisect: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    except Interrupted as sig:
        left = stop_descendants()
        print(f'h5regress bisect: stopped by {sig}, its children gone'
              f'{f" (but for PIDs {left})" if left else ""}; the same command goes on from '
              f'{work / STATE_FILE}', file=sys.stderr)
        return EXIT_ERROR
    print(format_text(result))
    if args.json:
        atomic.write_text(args.json, json.dumps(result, indent=1))
    return 0 if result['found'] else 1


if __name__ == '__main__':
    sys.exit(main())
