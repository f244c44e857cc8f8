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
3. **Gate.** ``h5regress gate`` on this attempt's perflogs; while INCONCLUSIVE, more
   pairs up to ``--max-pairs`` (the gate knows the planned looks, so early
   looks need stronger evidence and the loop keeps the gate's alpha), then
   the final verdict, which is appended to the history.
4. **Publish.** Report (Markdown, HTML, JUnit XML), gate JSON, perflogs and the
   manifest in ``--out``: the CI job's artifacts.

**Attempts.** Each run of this script is an attempt with its own id
(``<night>.<UTC time>.<pid>.<nonce>``): its perflogs go to ``--out/perflogs/<attempt>/``,
its ReFrame reports to ``--out/reports/<attempt>/``, its pair ids are
``<attempt>-p<i>``, and the gate reads that directory and keeps only that
attempt's records (``gate --attempt``). A reused ``--out`` (the default
``./nightly-out``) never mixes attempts: an earlier night, an interrupted attempt or a
rerun of the same night is never gated again; the previous attempt's ``gate.json`` and
``report/`` are removed when an attempt starts, and two attempts cannot share one
``--out`` at the same time (a lock; the second is an ERROR).

**Signals.** SIGTERM (what ``timeout`` sends) or SIGINT stops the night: the
signal is forwarded to the running child (each child, ReFrame included, runs in
a process group of its own), everything below this process (ReFrame's jobs
too: this process is their subreaper) gets SIGTERM and, 10 s later, SIGKILL;
then the exit code is 4 (ERROR) and no verdict is written. A signal during the final
gate waits for it (seconds), so that its JSON, report and history night agree.

The exit code is the gate's: 0 PASS, 1 FAIL, 2 INCONCLUSIVE, 3 DEGRADED, 4 ERROR;
a usage error, a failure of the script itself and a signal are ERROR too.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import hashlib
import io
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from h5regress import atomic, coverage, darshan, gate, history, manifest, report, runlock
from h5regress.cmdline import UsageError, config_files

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / 'reframe' / 'config' / 'settings.py'
KERNEL = REPO / 'kernels' / 'flash-io'
SHIM = REPO / 'benchmarks' / 'delay_shim.c'
#: the shim's account of the delays it added (``H5REGRESS_DELAY_LOG``), in the stand-ins'
#: directory
DELAY_LOG = 'delay.log'
STANDIN_A, STANDIN_B = 'standin-a', 'standin-b'

#: the h5paths rows of a night: the HDF5 code paths where real regressions were
#: (compound and atomic type conversion, read warm so the conversion is not buried
#: under the disk; metadata: many datasets, attributes, open/close); the other rows
#: are there for a site's --checks (a night of all 44 rows x 20 pairs takes hours)
NIGHT_H5PATHS = (r'h5paths_check(?=.*%benchmark=([^%]*-warm|(many-datasets|attributes|'
                 r'open-close)-hdf5-collective-contiguous-earliest)(%|$))')
#: checks of a night: HDF5 against MPI-IO through the same pattern (the canary), and
#: the HDF5 code paths
DEFAULT_CHECKS = rf'^(ior_check|flashio_check|{NIGHT_H5PATHS})'
#: the stand-in night's checks when its builds have IOR (:func:`standin_ior`): IOR's
#: quietest HDF5 row measured on a workstation VM (2 ranks, independent 1 MiB
#: transfers into one file, fsync; the gated write bw_mean: pair log-ratio SD
#: 0.04-0.19 there) and its MPI-IO twin, the canary. FLASH-IO's checkpoint (393 MB
#: with fsync at local's 2000 blocks per rank) varied 0.1-0.3 on the same VM.
STANDIN_IOR_CHECKS = r'^ior_check(?=.*%benchmark=(HDF5|MPIIO)-independent-ssf(%|$))'
#: ... with 1 MiB transfers (IOR's HDF5 writes of 4 MiB transfers fell in two modes on
#: this kind of VM, 1 MiB ones did not): recorded as each record's transfer_size
STANDIN_IOR_SETVARS = ('ior_check.transfer_size=1m',)
#: the stand-in night's checks without IOR: the FLASH-IO kernel, which stand-in
#: builds always have
STANDIN_CHECKS = r'^flashio_check'


def log(msg: str) -> None:
    print(f'ci/nightly: {msg}', file=sys.stderr, flush=True)


# -- children and signals -------------------------------------------------------

#: seconds the children have to stop after a signal, before SIGKILL
GRACE = 10.0
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived: the night stops, and its children with it (a
    BaseException, like KeyboardInterrupt: no ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    """What the signal handler needs: the running child, the signal, whether the
    main flow is in a section that must not be cut (the final gate's writes)."""
    child: subprocess.Popen | None = None
    #: the night's lock descriptors: every child holds them too, so that a rerun
    #: finds --out busy until the last child of a killed night is gone
    lock_fds: tuple[int, ...] = ()
    quiet = False                           # --quiet: children's command lines not echoed
    signum: int | None = None
    since = 0.0
    critical = False


_state = _State()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _on_signal(signum: int, frame) -> None:
    if _state.signum is not None:
        return                              # already stopping
    _state.signum, _state.since = signum, time.monotonic()
    log(f'{signal.Signals(signum).name}: stopping the night and its children')
    if _state.child is not None:
        _signal_group(_state.child.pid, signum)   # its wait returns, then we stop
    elif not _state.critical:
        raise Interrupted(signum)


def handle_signals() -> None:
    """Forward SIGTERM/SIGINT to the children; adopt every orphan below this process
    (a subreaper: ReFrame's jobs, in sessions of their own, stay findable)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_signal)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@contextlib.contextmanager
def uninterrupted():
    """A signal waits until the block is done, then stops the night."""
    _state.critical = True
    try:
        yield
    finally:
        _state.critical = False
    if _state.signum is not None:
        raise Interrupted(_state.signum)


def full_disk_note(out: Path) -> str:
    """': the file system of --out (DIR) is full' when it is, else ''."""
    try:
        st = os.statvfs(out)
    except OSError:
        return ''
    if st.f_bavail * st.f_frsize < 1 << 20:
        return f': the file system of --out ({out}) is full'
    return ''


def descendants(root: int | None = None) -> list[int]:
    """Live processes below ``root`` (this process), from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.scandir('/proc'):
        if not entry.name.isdigit():
            continue
        try:
            with open(f'/proc/{entry.name}/stat', 'rb') as fp:
                fields = fp.read().rsplit(b')', 1)[1].split()
        except OSError:
            continue
        if fields[0] != b'Z':
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            out.append(pid)
            todo.append(pid)
    return out


def _reap() -> None:
    """Collect the exit status of adopted orphans (no zombies left behind)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def stop_descendants(grace: float = GRACE) -> list[int]:
    """SIGTERM every process below this one, SIGKILL what is left after ``grace``;
    returns the PIDs that would not die (uninterruptible sleep)."""
    start, termed = time.monotonic(), set()
    while True:
        _reap()
        pids = descendants()
        late = time.monotonic() - start > grace
        if not pids or time.monotonic() - start > grace + 10:
            return pids
        for pid in pids:
            if late or pid not in termed:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                termed.add(pid)
        time.sleep(0.1)


def _die_with_parent(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when this (single-threaded) process
    dies, ``kill -9`` included (ReFrame then cancels its jobs)."""
    def preexec() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:          # died before the prctl
            os.kill(os.getpid(), signal.SIGTERM)
    return preexec


def run(cmd: list, *, capture: bool = False, timeout: float | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    """Run a child in a process group of its own (a signal to this process is
    forwarded to the group); ``capture``: its output as text."""
    cmd = [str(c) for c in cmd]
    if not _state.quiet:
        log('$ ' + ' '.join(cmd))
    if capture:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = subprocess.Popen(cmd, start_new_session=True, pass_fds=_state.lock_fds,
                            preexec_fn=_die_with_parent(os.getpid()), **kwargs)
    _state.child = proc
    deadline = time.monotonic() + timeout if timeout else None
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if (_state.signum is not None and now - _state.since > GRACE) or \
                        (deadline and now > deadline):
                    _signal_group(proc.pid, signal.SIGKILL)
    finally:
        _state.child = None
    if _state.signum is not None:
        raise Interrupted(_state.signum)
    if deadline and time.monotonic() > deadline:
        raise RuntimeError(f'{cmd[0]} did not finish in {timeout:g} s')
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop_leftovers(what: str) -> None:
    """Processes a finished child left behind would disturb the next measurement."""
    left = descendants()
    if left:
        log(f'warning: {what} left {len(left)} process(es) running (PIDs '
            f'{", ".join(map(str, left))}): stopped')
        stop_descendants(grace=2.0)


# -- builds -------------------------------------------------------------------

def build_standins(out: Path, slowdown: float) -> Path:
    """Build the kernel and write a manifest of two stand-in builds; return its path.

    Both builds have this project's FLASH-IO kernel and, when there is one
    (:func:`standin_ior`), the same ``ior`` binary, so an A/A night of
    ``ior_check`` runs too. With ``slowdown``, the candidate's tools are wrapped
    so that their HDF5 runs only are slowed by the shim.
    """
    work = out / 'stand-in'
    build = work / 'build'
    if run(['cmake', '-S', KERNEL, '-B', build, '-DCMAKE_BUILD_TYPE=Release'],
           stdout=subprocess.DEVNULL).returncode or \
            run(['cmake', '--build', build, '-j', '2'], stdout=subprocess.DEVNULL).returncode:
        raise RuntimeError(f'building the FLASH-IO kernel from {KERNEL} failed')
    # tool -> (binary, shell pattern of its arguments when it writes through HDF5)
    tools = {'flash-io': (build / 'flash-io', '*" --api=hdf5 "*')}
    ior, ior_origin = standin_ior()
    if ior:
        tools['ior'] = (ior, '*" -a HDF5 "*')
    base_tools = {name: str(binary) for name, (binary, _) in tools.items()}
    cand_tools = dict(base_tools)
    delay_log = work / DELAY_LOG
    delay_log.unlink(missing_ok=True)       # an earlier attempt's, in a reused --out
    if slowdown > 0:
        shim = work / 'delay_shim.so'
        if run(['gcc', '-shared', '-fPIC', '-O2', '-o', shim, SHIM, '-ldl']).returncode:
            raise RuntimeError(f'building {SHIM} failed')
        # the delay applies to the HDF5 runs only: MPI-IO is the canary, and an HDF5
        # regression does not slow MPI-IO down
        for name, (binary, hdf5_args) in tools.items():
            wrapper = work / f'{name}-slowed'
            wrapper.write_text(
                '#!/bin/sh\n'
                f'# stand-in candidate: writes through HDF5 take {1 + slowdown:g}x their time\n'
                f'case " $* " in {hdf5_args})\n'
                f'  export LD_PRELOAD={shim}${{LD_PRELOAD:+:$LD_PRELOAD}} '
                f'H5REGRESS_DELAY_FRACTION={slowdown:g} H5REGRESS_DELAY_LOG={delay_log} ;;\n'
                'esac\n'
                f'exec {binary} "$@"\n')
            wrapper.chmod(0o755)
            cand_tools[name] = str(wrapper)
    commit = run(['git', '-C', REPO, 'rev-parse', 'HEAD'], capture=True).stdout.strip() \
        or '0' * 40
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')

    def standin(label, tool_paths, slowed=0.0):
        return {'hdf5': {'version': 'system', 'label': label, 'commit': commit,
                         'variants': 'stand-in: the HDF5 on this machine' + (
                             f'; ior: {ior_origin}, the same binary in both builds'
                             if ior else '') + (
                             f'; writes through HDF5 slowed by {slowed:.0%} on purpose '
                             f'(injected slowdown: not an A/A pair)' if slowed else ''),
                         'hash': label, 'prefix': str(work)},
                'tools': tool_paths}

    path = work / 'manifest.json'
    manifest.write(path, {
        'schema': manifest.SCHEMA, 'generated': now, 'spack_version': 'none (stand-in)',
        'environment': str(work), 'lock_sha256': hashlib.sha256(b'').hexdigest(),
        'builds': {f'hdf5-{STANDIN_A}': standin(STANDIN_A, base_tools),
                   f'hdf5-{STANDIN_B}': standin(STANDIN_B, cand_tools, slowdown)},
    })
    return path


def injected_delay(work: Path, slowdown: float) -> str:
    """What the shim says it did to the candidate's runs (its log, one line per
    process): a sentence for the night's log. Raises RuntimeError when no run was
    slowed: a night labelled with an injected slowdown must have had one."""
    path = work / DELAY_LOG
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        lines = []
    totals = {'calls': 0, 'io_s': 0.0, 'delay_s': 0.0}
    for line in lines:
        fields = dict(f.split('=', 1) for f in line.split()[1:] if '=' in f)
        for key, kind in (('calls', int), ('io_s', float), ('delay_s', float)):
            totals[key] += kind(fields.get(key, 0))
    if not totals['delay_s']:
        raise RuntimeError(
            f'--inject-slowdown {slowdown:g}: no run of the candidate was slowed (the delay '
            f'shim logged no delayed call in {path}), so the night would be labelled '
            'with a slowdown it did not have; do the checks run any HDF5 row?')
    return (f'injected slowdown: the shim delayed {totals["calls"]} I/O calls in '
            f'{len(lines)} candidate processes by {totals["delay_s"]:.1f} s on their '
            f'{totals["io_s"]:.1f} s (x{1 + totals["delay_s"] / totals["io_s"]:.2f}; '
            f'asked x{1 + slowdown:g}; the time between calls is not slowed)'
            if totals['io_s'] else f'injected slowdown: {totals["delay_s"]:.1f} s')


def standin_ior() -> tuple[Path | None, str]:
    """The ``ior`` of both stand-in builds and where it comes from: the one on PATH,
    else the Spack environment's (the manifest's first build that has one: IOR with
    that build's HDF5, named in the stand-in manifest), else none (no IOR rows)."""
    on_path = shutil.which('ior')
    if on_path:
        return Path(on_path), f'{on_path} (PATH)'
    try:
        builds = manifest.load(manifest.default_path())
    except (OSError, manifest.ManifestError):
        return None, ''
    for build_id, b in sorted(builds.items()):
        if 'ior' in b.tools and os.access(b.tools['ior'], os.X_OK):
            return Path(b.tools['ior']), (f"{b.tools['ior']} (the Spack environment's, "
                                          f'build {build_id}: HDF5 {b.hdf5_version})')
    return None, ''


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
            return f'hdf5-{m.group(1)}'
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


# -- pairs --------------------------------------------------------------------

def run_once(build: str, pair_id: str, args, env: dict) -> int:
    """One ReFrame run of the selected checks for one build."""
    # ReFrame matches -n against the display name with its spaces removed; the build
    # is a lookahead, as its place among the parameters is not the checks' business
    name = f'(?=.*%hdf5_build={build}(%|$)){args.checks}'
    report = args.out / 'reports' / args.attempt / f'{pair_id}-{build}.json'
    cmd = [Path(sys.executable).with_name('reframe'), '-c', REPO / 'reframe' / 'checks',
           '-n', name, '-r',
           '-s', args.out / 'stage', '-o', args.out / 'output', '--report-file', report]
    if args.system:
        cmd += ['--system', args.system]
    for setting in args.setvar:
        cmd += ['-S', setting]
    result = run(cmd, env={**env, 'H5REGRESS_PAIR_ID': pair_id},
                 stdout=subprocess.DEVNULL if args.quiet else None)
    stop_leftovers(f'the ReFrame run of {pair_id} {build}')
    try:
        cases = json.loads(report.read_text())['session_info']['num_cases']
    except (OSError, ValueError, KeyError) as err:
        raise RuntimeError(f'ReFrame left no readable report {report} (exit '
                           f'{result.returncode}; {getattr(err, "strerror", None) or err})'
                           f'{full_disk_note(args.out)}') from None
    if not cases:
        raise RuntimeError(f'no test of build {build} matched --checks {args.checks!r} '
                           f'(ReFrame exit {result.returncode})')
    # a non-zero exit is a failed test: its sanity failures leave no record, its
    # envelope failures are samples; the gate sees what is there
    return result.returncode


def run_pairs(first: int, last: int, baseline: str, candidate: str, args, env) -> None:
    for i in range(first, last + 1):
        pair_id = f'{args.attempt}-p{i:02d}'
        order = (baseline, candidate) if i % 2 else (candidate, baseline)
        start, args.pairs_run = time.monotonic(), i
        codes = [run_once(build, pair_id, args, env) for build in order]
        failed = [b for b, c in zip(order, codes) if c]
        log(f'pair {i}/{last}{f" (up to {args.max_pairs})" if last < args.max_pairs else ""}: '
            f'{order[0]} then {order[1]}, {time.monotonic() - start:.0f} s'
            + (f'; ReFrame reported failed tests for {", ".join(failed)}' if failed else ''))


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
        return f'{m["label"]}: ratio {m["ratio"]:.3f} [{lo}, {hi}]'

    head = (f'{what} at {pairs} pairs: {result["overall"]}, '
            f'{sum(m["verdict"] == "PASS" for m in gated)} of {len(gated)} gated metrics '
            f'PASS (interval above {floor:.2f})')
    if every_metric:
        return [head] + [f'  {m["verdict"]:<12} {describe(m)}' for m in gated]
    known = [m for m in gated if m.get('ratio_lo') is not None]
    if not known:
        return [head]
    return [f'{head}; lowest {describe(min(known, key=lambda m: m["ratio_lo"]))}']


def looks(args) -> list[int]:
    """Pair counts at which the loop gates: --pairs, +--more-pairs, ..., --max-pairs."""
    out = [args.pairs]
    while out[-1] < args.max_pairs:
        out.append(min(args.max_pairs, out[-1] + args.more_pairs))
    return out


def gate_once(baseline: str, candidate: str, args, final: bool) -> int:
    cmd = ['--perflogs', str(attempt_perflogs(args)), '--attempt', args.attempt,
           '--baseline', baseline,
           '--candidate', candidate, '--looks', ','.join(map(str, looks(args))),
           '--night', args.night,
           '--json', str(args.out / 'gate.json')]
    if args.pairs_run:      # none run (records of an earlier step): the gate counts them
        cmd += ['--pairs-run', str(args.pairs_run)]
    if args.history:
        cmd += ['--history', str(args.history)]
    for option in ('alpha', 'margin'):
        if getattr(args, option) is not None:
            cmd += [f'--{option}', str(getattr(args, option))]
    if args.inject_slowdown:
        cmd += ['--injected-slowdown', str(args.inject_slowdown)]
    if final:
        cmd += ['--report', str(args.out / 'report')]
        if args.history:
            cmd += ['--append-history']
    else:
        cmd += ['--quiet']
    if not _state.quiet:
        log('$ h5regress gate ' + ' '.join(cmd))
    if final and not args.quiet:
        return gate.main_gate(cmd)
    # a look, or the verdict under --quiet: the summary below says it in a line or a few
    with contextlib.redirect_stdout(io.StringIO()):
        code = gate.main_gate(cmd)
    for line in look_summary(args.out / 'gate.json', args.pairs_run, not args.quiet,
                             'verdict' if final else 'look'):
        log(line)
    return code


# -- main ---------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit 4 (ERROR): its own 2 reads as INCONCLUSIVE."""

    def error(self, message: str):   # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(gate.EXIT_ERROR, f'{self.prog}: error: {message}\n')


def parse_args(argv):
    ap = _Parser(prog='ci/nightly', description=__doc__,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
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
                    # argparse %-formats help: the regexes hold '%benchmark='
                    f'{DEFAULT_CHECKS}; with --stand-in {STANDIN_IOR_CHECKS} with '
                    f'-S {" -S ".join(STANDIN_IOR_SETVARS)} when the stand-in builds have '
                    f'IOR, else {STANDIN_CHECKS})'.replace('%', '%%'))
    ap.add_argument('--pairs', type=int, default=10, help='pairs before the first look (10)')
    ap.add_argument('--more-pairs', type=int, default=5,
                    help='pairs added while INCONCLUSIVE (5)')
    ap.add_argument('--max-pairs', type=int, default=20, help='cap of pairs (20)')
    ap.add_argument('--alpha', type=float,
                    help="gate's false discovery rate (default: ci/gate.yaml's)")
    ap.add_argument('--margin', type=float,
                    help="gate's tolerated slowdown (default: ci/gate.yaml's)")
    ap.add_argument('--system', help='ReFrame system:partition to run on')
    ap.add_argument('--config', default=str(SETTINGS),
                    metavar='REFRAME_FILE[:FILE...]',
                    help='ReFrame configuration files, later ones on top (default '
                    "reframe/config/settings.py); not the gate's YAML: the nightly's gate "
                    'reads ci/gate.yaml')
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
    ap.add_argument('--night', default=datetime.date.today().isoformat(),
                    type=history.night_id,
                    help="night id (default today; letters, digits, '.', '_', '-'; a night "
                         "id already in the history is kept and this one stored as "
                         "<night>+2, +3...)")
    ap.add_argument('--quiet', action='store_true', help="hide ReFrame's output")
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
        args.config_files = config_files(args.config, '--config')
    except UsageError as err:
        ap.error(str(err))
    if not args.stand_in:
        args.checks = args.checks or DEFAULT_CHECKS
    # with --stand-in and no --checks: chosen once the builds say whether they have
    # IOR (standin_checks)
    args.out = args.out.resolve()
    args.attempt = new_attempt(args.night)
    args.pairs_run = 0          # pairs of this attempt run so far
    return args


def new_attempt(night: str) -> str:
    """An id no other attempt has: the night, the UTC time, this process, a nonce (48
    bits: 20 attempts in one second of one process collided 1 time in ~300 with 16)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    return (f'{re.sub(r"[^A-Za-z0-9._-]+", "_", night)}.{stamp}.{os.getpid()}.'
            f'{secrets.token_hex(6)}')


def attempt_perflogs(args) -> Path:
    """This attempt's perflogs: the only ones its gate reads."""
    return args.out / 'perflogs' / args.attempt


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
    (args.out / 'reports' / args.attempt).mkdir(parents=True)


def prepare_builds(args) -> tuple[Path, str, str]:
    """(manifest, baseline build, candidate build) of the night."""
    if args.stand_in:
        path = build_standins(args.out, args.inject_slowdown)
        standin_checks(args, manifest.load(path)[f'hdf5-{STANDIN_A}'].tools)
        return path, f'hdf5-{STANDIN_A}', f'hdf5-{STANDIN_B}'
    if args.no_install:
        manifest_path = manifest.default_path()
    else:
        if args.candidate:
            args.candidate = resolve_commit(args.candidate, args.hdf5_repo)
        manifest_path = args.out / 'manifest.json'
        install_environment(args.candidate, manifest_path, args.mirror)
    return (manifest_path, *choose_builds(manifest.load(manifest_path), args))


def standin_checks(args, tools: dict) -> None:
    """The stand-in night's checks, unless --checks named them: IOR's quiet HDF5 row
    and its canary, at 1 MiB transfers, when the builds have IOR; else FLASH-IO."""
    if args.checks:
        return
    if 'ior' in tools:
        args.checks = STANDIN_IOR_CHECKS
        # the user's -S come after: ReFrame keeps the last of a variable
        args.setvar = [*STANDIN_IOR_SETVARS, *args.setvar]
    else:
        args.checks = STANDIN_CHECKS
    log(f'stand-in checks: {args.checks}'
        + (f' with -S {" -S ".join(STANDIN_IOR_SETVARS)}' if 'ior' in tools else ''))


def final_gate(baseline: str, candidate: str, args) -> int:
    """The verdict, its report and its history night: all written, or (a signal before
    it) none; a signal during it waits for it."""
    with uninterrupted():
        return gate_once(baseline, candidate, args, final=True)


def night(args) -> int:
    """The attempt: builds, pairs, looks, the verdict."""
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
    done = args.pairs
    run_pairs(1, done, baseline, candidate, args, env)
    injected = args.stand_in and args.inject_slowdown
    if injected:    # before any look writes a verdict: an injection that did not happen
        injected_delay(args.out / 'stand-in', args.inject_slowdown)
    while done < args.max_pairs:
        code = gate_once(baseline, candidate, args, final=False)
        if code not in (gate.EXIT_INCONCLUSIVE, gate.EXIT_NO_SLOWDOWN_SEEN):
            break
        more = min(args.more_pairs, args.max_pairs - done)

        run_pairs(done + 1, done + more, baseline, candidate, args, env)
        done += more
    if injected:
        log(injected_delay(args.out / 'stand-in', args.inject_slowdown))
    code = final_gate(baseline, candidate, args)
    if args.coverage_map:
        add_coverage(args)
    if code == gate.EXIT_INCONCLUSIVE:
        log(f'warning: still INCONCLUSIVE after {done} pairs (the cap)')
    if code == gate.EXIT_FAIL:
        after_fail(manifest_path, args, env)
    log(f'verdict: exit {code}; artifacts in {args.out}')
    return code


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
                         if args.history else None, args.out / 'report')


def after_fail(manifest_path: Path, args, env: dict) -> None:
    """What follows a FAIL (issue 15), into the gate's JSON and the report: the Darshan
    counter diff of each FAIL metric and, with --bisect, the first bad commit."""
    gate_json = args.out / 'gate.json'
    result = json.loads(gate_json.read_text())

    def run_check(build, checks, pair_id, extra):
        one = argparse.Namespace(**{**vars(args), 'checks': checks})
        run_once(build, pair_id, one, {**env, **extra})

    # the verdict stands whatever happens here: a failure is said, never an ERROR night
    try:
        result['darshan'] = darshan.night_diff(result, manifest_path, args.out / 'darshan',
                                               run_check)
    except (RuntimeError, OSError, manifest.ManifestError) as err:
        result['darshan'] = {'available': False, 'reason': f'the Darshan runs failed: {err}'}
    if args.bisect:
        try:
            result['bisect'] = bisect_night(result, args)
        except (RuntimeError, OSError) as err:
            result['bisect'] = {'error': f'h5regress bisect did not run: {err}'}
    with uninterrupted():
        atomic.write_text(gate_json, gate.dumps(result))
        report.write_all(result, history.load(args.history, exclude_night=args.night)
                         if args.history else None, args.out / 'report')


def last_pass_commit(args) -> str | None:
    """The candidate commit of the history's last PASS night (not an A/A one)."""
    if not args.history:
        return None
    for night in reversed(history.load(args.history, exclude_night=args.night).nights):
        if night.get('overall') == 'PASS' and not night.get('a_a') and \
                night.get('candidate_commit'):
            return night['candidate_commit']
    return None


def bisect_night(result: dict, args) -> dict:
    """``h5regress bisect`` from the good commit to tonight's candidate commit, over the
    FAIL metrics, in --out/bisect (resumable: a rerun of the night goes on there)."""
    good = args.bisect_good or last_pass_commit(args)
    bad = args.bisect_bad or result.get('candidate_commit')
    if not good or not bad:
        return {'error': 'no good commit to start from: give --bisect-good (or a --history '
                'with a PASS night)' if not good else 'no candidate commit tonight'}
    fails = [m for m in result['metrics'] if m.get('role') == 'gated'
             and m.get('verdict') == 'FAIL']
    # only the FAIL metrics' tests run, and only their tools are built per step
    tests = sorted({m['test'] for m in fails})
    cmd = [sys.executable, '-m', 'h5regress.bisect', '--good', good, '--bad', bad,
           '--repo', args.bisect_repo or args.hdf5_repo, '--builder',
           'stand-in' if args.stand_in else 'spack',
           '--checks', '(' + '|'.join(map(darshan.name_regex, tests)) + ')',
           '--work', args.out / 'bisect', '--json', args.out / 'bisect' / 'result.json',
           *[f'--metric={m["key"]}' for m in fails], *[f'--mirror={u}' for u in args.mirror]]
    # tonight measured the regression: its least slowed FAIL metric's ratio sets the
    # bisect's step margin, and --bad is not measured again
    ratios = [m['perf_ratio'] for m in fails if m.get('perf_ratio') is not None]
    if ratios:
        cmd += [f'--bad-ratio={max(ratios):.6f}']
    if not args.stand_in:
        cmd += [f'--tool={t}' for t in sorted({m['tool'] for m in fails})]
    cmd += [f'--nightly-arg={a}' for a in (['--system', args.system] if args.system else [])
            + [f'-S{s}' for s in args.setvar]]
    proc = run(cmd)
    out = args.out / 'bisect' / 'result.json'
    if proc.returncode not in (0, 1) or not out.is_file():
        return {'error': f'h5regress bisect exit {proc.returncode} (its output above)'}
    return json.loads(out.read_text())


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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    _state.quiet = args.quiet
    handle_signals()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        if args.salloc and not os.environ.get('SLURM_JOB_ID'):
            return under_salloc(argv, args)
        with out_lock(args.out):
            code = night(args)
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
