"""Whether a write figure includes getting the data to storage: one key for every tool.

Every run's provenance carries ``write_flush``: for each of its write figures
(``"<operation> <metric>"``, e.g. ``"write observed_rate"``, ``"checkpoint bw"``) one of

- ``fsync``: the timed phase ends after the data were flushed to storage (fsync,
  fdatasync, or ``MPI_File_sync`` through HDF5's ``H5Fflush``);
- ``O_SYNC``: the files were opened with O_SYNC: each write returns once its data are
  on storage (fio ``sync=1``);
- ``O_DIRECT``: the data bypass the page cache (no flush of the device's own cache);
- ``none``: the timed phase ends with the data in the page cache: the figure is how
  fast the tool hands data to the kernel, not to storage.

Per tool (each parser says so): IOR with ``-e`` and fio with ``end_fsync``/``fsync``
are ``fsync``, fio with ``direct=1`` is ``O_DIRECT``; the FLASH-IO kernel with
``--fsync`` (the checks pass it) is ``fsync``; h5bench's ``observed_rate`` includes its
``H5Fflush`` (``MPI_File_sync``) and is ``fsync``, its ``raw_rate`` times ``H5Dwrite``
only and is ``none``; MACSio never flushes: its own figures are ``none``, and the
check times an fsync of the files after it (``flush time``) to give ``write
bw_flushed``, MACSio's bytes over its time plus that flush, which is ``fsync``.

Reads say whether the page cache was cold in ``read_page_cache``: ``dropped`` (dropped
before the read), ``kept`` (could not be dropped: the figure may be cache), ``O_DIRECT``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: provenance key of the write figures' flush status
WRITE_FLUSH = 'write_flush'
FSYNC, SYNC, DIRECT, NONE = 'fsync', 'O_SYNC', 'O_DIRECT', 'none'
#: provenance key of the read figures' page-cache state
READ_PAGE_CACHE = 'read_page_cache'


def flush_map(measurements: Iterable[Any], operations: Iterable[str], status: str,
              exceptions: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{"<operation> <metric>": status}`` for the measurements of ``operations``;
    ``exceptions`` (``"<operation> <metric>"`` -> status) override single figures."""
    ops = set(operations)
    out = {f'{m.operation} {m.metric}': status for m in measurements if m.operation in ops}
    out.update({k: v for k, v in (exceptions or {}).items() if k in out})
    return out


def write_flush_of(provenance: Mapping[str, Any], operation: str, metric: str) -> str | None:
    """The flush status of one figure of a record's provenance (None: not a write figure,
    or a record made before the key existed)."""
    flush = provenance.get(WRITE_FLUSH)
    return flush.get(f'{operation} {metric}') if isinstance(flush, Mapping) else None
