"""Flush a tool's files to storage after it ran, and time it: ``python -m h5regress.flush DIR``.

For a tool that never flushes what it writes (MACSio): every regular file under ``DIR``
is fsynced, then the directories, and one line goes to stdout::

    h5regress-flush: seconds=0.412 bytes=335544320 files=4

``seconds`` is the wall time of all the fsyncs. The check adds it to the tool's own
write time for a figure that includes getting the data to storage. A file that cannot
be fsynced prints ``h5regress-flush-failed: <path>: <reason>`` and exits 1.
"""

from __future__ import annotations

import os
import re
import sys
import time

from h5regress.cmdline import EXIT_USAGE

MARK = 'h5regress-flush:'
FAILED_MARK = 'h5regress-flush-failed:'
_LINE = re.compile(rf'^{MARK} seconds=(\S+) bytes=(\d+) files=(\d+)$', re.M)


def flush_tree(directory: str) -> tuple[float, int, int]:
    """(seconds, bytes, files): fsync every file under ``directory``, then its directories."""
    paths, dirs, size = [], [], 0
    for root, _, names in os.walk(directory):
        dirs.append(root)
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                paths.append(path)
                size += os.path.getsize(path)
    start = time.perf_counter()
    for path in paths + dirs:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return time.perf_counter() - start, size, len(paths)


def parse_line(text: str) -> tuple[float, int, int] | None:
    """(seconds, bytes, files) of the flush line in ``text``, or None."""
    match = _LINE.search(text)
    return (float(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print('usage: python -m h5regress.flush DIR', file=sys.stderr)
        return EXIT_USAGE
    try:
        seconds, size, files = flush_tree(args[0])
    except OSError as err:
        print(f'{FAILED_MARK} {err.filename}: {err.strerror}', flush=True)
        return 1
    print(f'{MARK} seconds={seconds:.6f} bytes={size} files={files}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
