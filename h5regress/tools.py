"""The one tool resolver: where a benchmark binary is, and which HDF5 build it uses.

Contract (owned by the foundation issue): checks never search for binaries
themselves. They ask :func:`find` for a tool of an HDF5 build. The Spack
environment's manifest (``spack-env/manifest.json``, or ``$H5REGRESS_MANIFEST``, which
must exist; see :mod:`h5regress.manifest`) answers when there is one; otherwise the tool
is looked up on ``PATH`` and the record says so (``tool_source: PATH``,
build ``path``).
"""

from __future__ import annotations

import dataclasses
import os
import shutil

from h5regress.buildid import PATH_BUILD  # noqa: F401  (the checks' hdf5_build of PATH tools)


#: how to get each tool, for the message of a check skipped for lack of it
HOW_TO_GET = ('install it with the Spack environment (spack-env/README.md: '
              '`spack-env/install`) or put it on PATH')


class ToolNotFound(LookupError):
    """The tool is in neither the manifest nor PATH; the message says how to get it."""


@dataclasses.dataclass(frozen=True)
class Tool:
    name: str
    path: str
    #: HDF5 build id (manifest build id, or ``path``)
    build: str
    #: ``spack-manifest`` or ``PATH``
    source: str
    #: HDF5 commit/version/spec hash from the manifest ('' from PATH)
    hdf5_commit: str = ''
    hdf5_version: str = ''
    spec_hash: str = ''
    #: HDF5 install prefix of the build ('' from PATH): where its libhdf5 must come from
    hdf5_prefix: str = ''


def _runnable(tool: Tool) -> Tool:
    """The tool, or :class:`ToolNotFound` saying why its file cannot be run (only the
    checks of that tool are skipped)."""
    from h5regress import manifest
    problem = manifest.tool_problem(tool.path)
    if problem:
        raise ToolNotFound(f'{tool.name} of HDF5 build {tool.build!r} at {tool.path} '
                           f'{problem}: fix its permissions or reinstall it')
    return tool


def _manifest_builds():
    from h5regress import manifest
    path = manifest.configured_path()
    return None if path is None else manifest.load(path)


def builds() -> list[str]:
    """HDF5 build ids the checks are parameterised over: the manifest's, or ``path``."""
    found = _manifest_builds()
    return sorted(found) if found else [PATH_BUILD]


def find(name: str, build: str = PATH_BUILD, any_build: bool = False) -> Tool:
    """The tool ``name`` of HDF5 build ``build``.

    ``any_build``: the tool does not depend on the HDF5 build (mdtest comes with IOR),
    so from ``PATH`` failing that any build's copy will do. Never for an HDF5 tool: a
    record labelled ``path`` must not come from a build of the manifest.

    Raises :class:`ToolNotFound` naming the tool, the build and how to get it.
    """
    if build != PATH_BUILD:
        found = _manifest_builds() or {}
        if build not in found:
            raise ToolNotFound(f'HDF5 build {build!r} is not in the Spack manifest '
                               f'({", ".join(sorted(found)) or "no manifest"})')
        b = found[build]
        if name not in b.tools:
            raise ToolNotFound(f'{name} is not installed for HDF5 build {build!r}: '
                               f'{HOW_TO_GET}')
        return _runnable(Tool(name, b.tools[name], build, 'spack-manifest', b.hdf5_commit,
                              b.hdf5_version, b.spec_hash, b.prefix))

    path = shutil.which(name, path=os.environ.get('PATH'))
    if path is not None:
        return Tool(name, path, PATH_BUILD, 'PATH')
    # a tool that does not depend on the HDF5 build may still be in the Spack
    # environment: any build's copy will do
    for build_id, b in sorted(((_manifest_builds() or {}) if any_build else {}).items()):
        if name in b.tools:
            return _runnable(Tool(name, b.tools[name], build_id, 'spack-manifest',
                                  b.hdf5_commit, b.hdf5_version, b.spec_hash, b.prefix))
    raise ToolNotFound(f'{name} not found on PATH: {HOW_TO_GET}')
