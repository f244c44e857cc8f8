"""Exclusive run locks: flock(1)-compatible, naming their holder.

One measurement at a time, one run per stage directory: ``ci/run-suite`` and
``ci/nightly`` hold the checkout's run lock (:data:`CHECKOUT_LOCK`) while ReFrame
runs, the nightly also its ``--out`` (``<out>/.nightly.lock``), the bisect a lock
file of the user's (``--lock``). The holder writes its PID and command into the
lock file, so a run that waits or refuses says who holds it. flock is released by
the kernel when its holder dies, ``kill -9`` included: no stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

#: the run lock of a checkout (git-ignored), beside its default stage directory
CHECKOUT_LOCK = Path(__file__).resolve().parents[1] / '.run.lock'


class LockBusy(RuntimeError):
    """A lock another process holds (its message names the file and the holder)."""


def holder(path: str | os.PathLike) -> str:
    """Who holds ``path`` as its holder wrote it ('PID <n>: <command>'), or 'unknown'."""
    try:
        text = Path(path).read_text(encoding='utf-8', errors='replace').strip()
    except OSError:
        text = ''
    return text or 'unknown'


@contextlib.contextmanager
def held(path: str | os.PathLike, *, wait: bool = True,
         log: Callable[[str], None] | None = None) -> Iterator[int]:
    """An exclusive flock on ``path`` for the block (its descriptor: a child given it
    holds the lock too). Held elsewhere: wait for it (``log`` says who holds it and
    how long the wait took), or with ``wait=False`` raise :class:`LockBusy` naming
    the holder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        t0 = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise LockBusy(f'{path} is held by {holder(path)}') from None
            if log:
                log(f'waiting for {path}, held by {holder(path)}')
            fcntl.flock(fd, fcntl.LOCK_EX)
            if log:
                log(f'{path} held (waited {time.monotonic() - t0:.0f} s)')
        os.ftruncate(fd, 0)
        os.pwrite(fd, f'PID {os.getpid()}: {" ".join(sys.argv)}\n'.encode(), 0)
        try:
            yield fd
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
