"""The manifest's schema: its keys, its error, its builds, and their validation.

Schema (version 1), exactly::

    {"schema": 1,
     "generated": "<ISO-8601 UTC>",
     "spack_version": "...",
     "environment": "<abs path of the Spack environment>",
     "lock_sha256": "<sha256 of the environment's spack.lock>",
     "builds": {
       "hdf5-<label>": {
         "hdf5": {"version": "1.14.1",          # as the installed H5public.h says
                  "label": "1.14.1",            # the Spack version label of the pin
                  "commit": "<40 hex>",
                  "variants": "+hl+mpi+subfiling~cxx... api=default ...",
                  "hash": "<spack dag hash>",
                  "prefix": "<install prefix>"},
         "tools": {"ior": "<abs path>", "mdtest": ..., ...},  # each binary the
                                        # catalog declares (h5regress/catalog.py)
         "darshan": {"library": "<prefix>/lib/libdarshan.so",   # optional
                     "version": "3.4.7",                        # label of the pin
                     "commit": "<40 hex>" or null,
                     "hash": "<spack dag hash>",
                     "prefix": "<install prefix>"},
         "async": {"hdf5": {... as above: the same commit, built +threadsafe},  # optional
                   "connector": {"name": "async",
                                 "version": "1.7", "commit": "<40 hex>" or null,
                                 "hash": ..., "prefix": ...,
                                 "plugin_path": "<prefix>/lib",
                                 "library": "<prefix>/lib/libh5async.so"},
                   "tools": {"h5bench_write": ..., ...}}}}}

A build id is ``hdf5-<label>``: one per HDF5 build of the environment.  A
tool that the environment does not build against an HDF5 build (h5bench
against a 2.x label, for one) is simply absent from that build's ``tools``.

``darshan`` is Darshan's runtime library (``darshan-runtime +hdf5``) built
against that build's HDF5: preloaded (``LD_PRELOAD``) into one extra, untimed
run to show what a regression changed.  It is not a tool of the checks (no
benchmark runs it), so it is not in ``tools``; a manifest of an environment
without it, or written before it was added, has no ``darshan`` key (same
schema).

``async`` is what h5bench's ASYNC rows run: the async VOL connector
(``hdf5-vol-async``), which needs a thread-safe HDF5, so h5bench ``+async`` is
built against a second build of the same HDF5 commit with ``+threadsafe``.
Only the ASYNC rows use it; every other row keeps the build's own HDF5 and
tools.  A manifest without the connector has no ``async`` key (same schema).

Standard library only (``spack-env/install`` loads the manifest modules by
path, before any virtualenv exists).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

from h5regress import buildid

SCHEMA = 1

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_GIT_VERSION = re.compile(r"^git\.(?P<ref>[^=]+)=(?P<label>.+)$")

#: the Spack package of Darshan's runtime, and its library relative to the prefix
DARSHAN_PACKAGE = "darshan-runtime"
DARSHAN_LIBRARY = "lib/libdarshan.so"

#: the Spack package of the async VOL connector, its plugin directory and library
#: relative to the prefix, and the name HDF5 knows it by (HDF5_VOL_CONNECTOR)
ASYNC_PACKAGE = "hdf5-vol-async"
ASYNC_PLUGIN_DIR = "lib"
ASYNC_LIBRARY = "lib/libh5async.so"
ASYNC_CONNECTOR = "async"
#: the variant of h5bench that builds it with the connector (its builds go to ``async``)
ASYNC_VARIANT = "async"

_TOP_KEYS = ("schema", "generated", "spack_version", "environment", "lock_sha256", "builds")
_HDF5_KEYS = ("version", "label", "commit", "variants", "hash", "prefix")
_DARSHAN_KEYS = ("library", "version", "hash", "prefix")
_CONNECTOR_KEYS = ("name", "version", "hash", "prefix", "plugin_path", "library")


class ManifestError(Exception):
    """A manifest that is missing, malformed, stale, or names a missing tool.

    The message names the file and the key or value at fault.
    """


@dataclass(frozen=True)
class AsyncIO:
    """What an ASYNC row of a build runs: the connector, the thread-safe HDF5 build
    of the same commit, and the tools built against both."""

    connector: str
    connector_version: str
    connector_commit: str | None
    connector_prefix: str
    plugin_path: str
    library: str
    hdf5_variants: str
    hdf5_hash: str
    hdf5_prefix: str
    tools: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Build:
    """One HDF5 build of the environment and the tools built against it."""

    id: str
    hdf5_version: str
    hdf5_label: str
    hdf5_commit: str
    variants: str
    spec_hash: str
    prefix: str
    tools: dict[str, str] = field(default_factory=dict, hash=False)
    #: Darshan's runtime library built against this HDF5 build (None: not in the manifest)
    darshan_library: str | None = None
    #: the ASYNC rows' connector and thread-safe build (None: not in the manifest)
    async_io: AsyncIO | None = field(default=None, hash=False)


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def async_io_of(entry: dict) -> AsyncIO:
    """A validated manifest's ``async`` entry as :class:`AsyncIO`."""
    c, h = entry["connector"], entry["hdf5"]
    return AsyncIO(connector=c["name"], connector_version=c["version"],
                   connector_commit=c.get("commit"), connector_prefix=c["prefix"],
                   plugin_path=c["plugin_path"], library=c["library"],
                   hdf5_variants=h["variants"], hdf5_hash=h["hash"], hdf5_prefix=h["prefix"],
                   tools=dict(entry["tools"]))


# --------------------------------------------------------------------------
# validation (structure only, no file-system checks)


def _strings(obj: dict, keys: tuple[str, ...], at: str) -> None:
    for key in keys:
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise ManifestError(f"{at}: {key!r} must be a non-empty string, got {obj.get(key)!r}")


def _objects(obj: dict, keys: tuple[str, ...], at: str) -> None:
    for key in keys:
        if not isinstance(obj.get(key), dict):
            raise ManifestError(f"{at}: missing or non-object {key!r}")


def _absolute(path, at: str) -> None:
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ManifestError(f"{at}: not an absolute path: {path!r}")


def _validate_top(data, where: str) -> None:
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: top level must be a JSON object")
    for key in _TOP_KEYS:
        if key not in data:
            raise ManifestError(f"{where}: missing key {key!r}")
    if data["schema"] != SCHEMA:
        raise ManifestError(
            f"{where}: 'schema' is {data['schema']!r}, this h5regress reads schema {SCHEMA}"
        )
    _strings(data, ("generated", "spack_version", "environment", "lock_sha256"), where)
    if not re.match(r"^[0-9a-f]{64}$", data["lock_sha256"]):
        raise ManifestError(f"{where}: 'lock_sha256' is not a sha256: {data['lock_sha256']!r}")
    if not isinstance(data["builds"], dict) or not data["builds"]:
        raise ManifestError(f"{where}: 'builds' must be a non-empty object")


def _validate_darshan(darshan, at: str) -> None:
    if not isinstance(darshan, dict):
        raise ManifestError(f"{at}: 'darshan' must be an object, got {darshan!r}")
    _strings(darshan, _DARSHAN_KEYS, f"{at}.darshan")
    _absolute(darshan["library"], f"{at}.darshan: 'library'")


def _validate_async(entry, build: dict, at: str) -> None:
    at = f"{at}.async"
    if not isinstance(entry, dict):
        raise ManifestError(f"{at} must be an object, got {entry!r}")
    _objects(entry, ("hdf5", "connector", "tools"), at)
    _strings(entry["hdf5"], _HDF5_KEYS, f"{at}.hdf5")
    if entry["hdf5"]["commit"] != build["hdf5"]["commit"]:
        raise ManifestError(
            f"{at}.hdf5: 'commit' {entry['hdf5']['commit']!r} is not the build's "
            f"{build['hdf5']['commit']!r} (the ASYNC rows must run the same HDF5 commit)")
    _strings(entry["connector"], _CONNECTOR_KEYS, f"{at}.connector")
    for key in ("plugin_path", "library"):
        _absolute(entry["connector"][key], f"{at}.connector: {key!r}")
    for tool, path in entry["tools"].items():
        _absolute(path, f"{at}.tools[{tool!r}]")


def _validate_build(build_id: str, build, where: str) -> None:
    at = f"{where}: builds[{build_id!r}]"
    if not isinstance(build, dict):
        raise ManifestError(f"{at} must be an object")
    _objects(build, ("hdf5", "tools"), at)
    hdf5 = build["hdf5"]
    _strings(hdf5, _HDF5_KEYS, f"{at}.hdf5")
    if not _HEX40.match(hdf5["commit"]):
        raise ManifestError(f"{at}.hdf5: 'commit' is not a 40-hex commit: {hdf5['commit']!r}")
    if build_id != buildid.of_label(hdf5['label']):
        raise ManifestError(
            f"{at}: build id does not match its label {hdf5['label']!r} "
            f"(expected '{buildid.of_label(hdf5['label'])}')"
        )
    for tool, path in build["tools"].items():
        _absolute(path, f"{at}.tools[{tool!r}]")
    if "darshan" in build:
        _validate_darshan(build["darshan"], at)
    if "async" in build:
        _validate_async(build["async"], build, at)


def validate(data, where: str) -> None:
    """Structure of a manifest dict (no file-system checks): ManifestError naming
    ``where`` and the key or value at fault."""
    _validate_top(data, where)
    for build_id, build in data["builds"].items():
        _validate_build(build_id, build, where)
