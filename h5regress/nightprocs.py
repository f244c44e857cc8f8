"""The nightly's children: run in process groups of their own, stopped on a signal.

SIGTERM (what ``timeout`` sends) or SIGINT stops the night: the signal is forwarded to
the running child (each child, ReFrame included, runs in a process group of its own),
everything below this process (ReFrame's jobs too: this process is their subreaper)
gets SIGTERM and, :data:`GRACE` seconds later, SIGKILL. A signal during a section that
must not be cut (:func:`uninterrupted`) waits for it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil


def log(msg: str) -> None:
    print(f'ci/nightly: {msg}', file=sys.stderr, flush=True)


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
    """Live processes below ``root`` (this process), zombies left out."""
    try:
        below = psutil.Process(os.getpid() if root is None else root).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for proc in below:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
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
