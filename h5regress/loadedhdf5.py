"""The HDF5 a run really loaded, against the build its records are labelled with.

A tool of the Spack manifest is labelled with its HDF5 build (version, install prefix),
but ``LD_PRELOAD`` or ``LD_LIBRARY_PATH`` (with ``HDF5_DISABLE_VERSION_CHECK`` to silence
HDF5's own header check) can make it load another libhdf5: its figures are then another
build's. What was loaded is read at run time, from the best source each tool has:

- the project's kernels report it themselves: ``H5get_libversion`` (h5paths, FLASH-IO)
  and, h5paths from kernel 1.2.0, the file of the loaded object holding that function
  (``dladdr``): exact;
- for every tool, the job's probe (:mod:`h5regress.probe`) resolves the binary's libhdf5
  with ``ldd`` in the job's environment (a preloaded libhdf5 first) and asks that library
  its version: what the dynamic loader would pick, not what the process did.

A mismatch is a failed run, not a record (:func:`problems`). Plain values in, plain
problems out.
"""

from __future__ import annotations

import dataclasses
import posixpath


@dataclasses.dataclass(frozen=True)
class Loaded:
    """An HDF5 library a run loaded, as ``source`` says: its ``version`` and file
    (``''`` where the source cannot say)."""
    source: str
    version: str = ''
    library: str = ''


def _inside(path: str, prefix: str) -> bool:
    path, prefix = posixpath.normpath(path), posixpath.normpath(prefix)
    return path == prefix or path.startswith(prefix.rstrip('/') + '/')


def problems(build: str, version: str, prefixes: tuple[str, ...],
             loaded: list[Loaded]) -> list[str]:
    """What each ``loaded`` library says against the manifest's ``build`` of HDF5
    ``version`` installed in one of ``prefixes`` (the prefix as written and resolved);
    empty when every source agrees with the build."""
    found = []
    where = prefixes[0] if prefixes else '(prefix unknown)'
    for lib in loaded:
        # H5get_libversion has no subrelease: a pre-release build (1.10.5-snap1) loads
        # as 1.10.5; its file is still held to the build's prefix below
        wrong_version = bool(lib.version) and \
            lib.version.split('-')[0] != version.split('-')[0]
        wrong_file = bool(lib.library) and bool(prefixes) and \
            not any(_inside(lib.library, p) for p in prefixes)
        if wrong_version or wrong_file:
            found.append(f'{lib.source} loaded HDF5 {lib.version or "(version unknown)"} '
                         f'from {lib.library or "(file unknown)"}, but the records would '
                         f'be labelled {build}: HDF5 {version} of {where}')
    return found
