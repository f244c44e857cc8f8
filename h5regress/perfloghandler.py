"""ReFrame's ``filelog`` perflog handler, with checked whole-line writes.

ReFrame's own handler writes through a buffered stream and reports a failed write
(a full disk) only as a traceback or a warning: the run still passes, the record is
lost and a cut line can stay behind. This one (registered for the ``filelog`` type by
``reframe/config/settings.py``, so ``--perflogdir`` and site configs keep working):

- writes each line, with the header when the file is new, in one ``write`` on an
  ``O_APPEND`` descriptor, fsyncs it, and on a short or failed write truncates the
  file back to its size before, so no cut line is left;
- notes each failure (file, error, test case) as a JSON line in the file named by
  ``$H5REGRESS_WRITE_FAILURES`` (``ci/run-suite`` sets it and turns a noted failure
  into a failed run) and raises ReFrame's ``LoggingError`` (a warning naming the file).
"""

from __future__ import annotations

import errno
import json
import os

from reframe.core import logging as rfm_logging

#: where failed perflog writes are noted (one JSON line each), when set
FAILURES_ENV = 'H5REGRESS_WRITE_FAILURES'


def append_whole(path: str, data: bytes) -> None:
    """Append ``data`` to ``path`` in one write, fsynced; on failure the file is cut
    back to its size before and the OSError (naming ``path``) raised."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f'{os.strerror(errno.ENOSPC)} (a short write: '
                                            f'{written} of {len(data)} bytes)')
            os.fsync(fd)
        except OSError as err:
            os.ftruncate(fd, size)
            raise OSError(err.errno, err.strerror, path) from None
    finally:
        os.close(fd)


def note_failure(path: str, error: OSError, testcase: str) -> None:
    """One JSON line in ``$H5REGRESS_WRITE_FAILURES`` (if set; best effort)."""
    notes = os.environ.get(FAILURES_ENV)
    if not notes:
        return
    line = json.dumps({'file': path, 'error': error.strerror or str(error),
                       'testcase': testcase}) + '\n'
    try:
        append_whole(notes, line.encode())
    except OSError:
        pass


class CheckedFileLog(rfm_logging.MultiFileHandler):
    """``MultiFileHandler`` (same files, header and format) writing whole checked lines."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._checked_headers: set[str] = set()

    def _header_line(self, path: str, record) -> bytes:
        """The header to write first ('' if the file has it); a file with another
        header is moved aside to ``<file>.h<n>``, as ReFrame does."""
        if path in self._checked_headers:
            return b''
        header = self._MultiFileHandler__generate_header(record)
        try:
            with open(path, encoding='utf-8', errors='replace') as fp:
                first = fp.readline().rstrip('\n')
        except FileNotFoundError:
            return (header + '\n').encode()
        if first == header:
            return b''
        if not first and os.path.getsize(path) == 0:
            return (header + '\n').encode()
        n = 0
        while os.path.exists(f'{path}.h{n}'):
            n += 1
        os.rename(path, f'{path}.h{n}')
        return (header + '\n').encode()

    def emit(self, record) -> None:
        check = record.__rfm_check__
        path = ''
        try:
            dirname = self._prefix % record.__dict__
            path = os.path.join(dirname, f'{type(check).variant_name()}.log')
            os.makedirs(dirname, exist_ok=True)
            data = self._header_line(path, record) + (self.format(record) + '\n').encode()
            append_whole(path, data)
            self._checked_headers.add(path)
        except OSError as err:
            testcase = getattr(check, 'display_name', None) or str(check)
            note_failure(path or str(err.filename), err, testcase)
            raise rfm_logging.LoggingError(
                f'perflog {path or err.filename} not written: {err.strerror or err}'
            ) from None


def install() -> None:
    """Make ``filelog`` perflog handlers :class:`CheckedFileLog` (once: a config read
    twice does not wrap the handler twice)."""
    plain_filelog = rfm_logging._create_handlers['filelog']
    if getattr(plain_filelog, 'h5regress_checked', False):
        return

    def create(site_config, config_prefix):
        plain = plain_filelog(site_config, config_prefix)
        handler = CheckedFileLog(plain._prefix, mode=plain.mode, encoding=plain.encoding)
        handler.__dict__.update({k: v for k, v in plain.__dict__.items()
                                 if k.startswith('_MultiFileHandler__')})
        return handler
    create.h5regress_checked = True
    rfm_logging.register_log_handler('filelog')(create)
