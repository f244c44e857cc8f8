"""The Spack environment's manifest: per HDF5 build, where each tool is.

``spack-env/install`` writes it after installing the environment; the tool
resolver reads it (``load``), so that a check runs a tool built against a
given HDF5 build and every perflog record names that build.

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
         "tools": {"ior": "<abs path>", "mdtest": ..., "macsio": ...,
                   "h5bench_write": ..., "h5bench_read": ...,
                   "h5bench_exerciser": ..., "h5bench_hdf5_iotest": ...,
                   "flash-io": ..., "h5paths": ...},
         "darshan": {"library": "<prefix>/lib/libdarshan.so",   # optional
                     "version": "3.4.7",                        # label of the pin
                     "commit": "<40 hex>" or null,
                     "hash": "<spack dag hash>",
                     "prefix": "<install prefix>"}}}}

A build id is ``hdf5-<label>``: one per HDF5 build of the environment.  A
tool that the environment does not build against an HDF5 build (h5bench
against a 2.x label, for one) is simply absent from that build's ``tools``.

``darshan`` is Darshan's runtime library (``darshan-runtime +hdf5``) built
against that build's HDF5: preloaded (``LD_PRELOAD``) into one extra, untimed
run to show what a regression changed (:func:`darshan_library`).  It is not a
tool of the checks (no benchmark runs it), so it is not in ``tools``; a
manifest of an environment without it, or written before it was added, has no
``darshan`` key (same schema).

This module uses the standard library only: ``spack-env/install`` loads it
by path, before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from h5regress import atomic, catalog

SCHEMA = 1
ENV_VAR = "H5REGRESS_MANIFEST"
REGENERATE_HINT = (
    "regenerate it with `spack-env/install --manifest-only` "
    "(or `h5regress manifest write`)"
)

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_GIT_VERSION = re.compile(r"^git\.(?P<ref>[^=]+)=(?P<label>.+)$")

# Per Spack package: manifest tool name -> candidate paths relative to the
# install prefix (the first that exists wins), and the variant that must be
# on for the tool to be expected (None: always). Derived from the benchmark
# declarations (h5regress/catalog.py), where a tool's package and binaries are said.
TOOL_LAYOUT: dict[str, dict[str, tuple[tuple[str, ...], str | None]]] = catalog.tool_layout()

#: the Spack package of Darshan's runtime, and its library relative to the prefix
DARSHAN_PACKAGE = "darshan-runtime"
DARSHAN_LIBRARY = "lib/libdarshan.so"

_TOP_KEYS = ("schema", "generated", "spack_version", "environment", "lock_sha256", "builds")
_HDF5_KEYS = ("version", "label", "commit", "variants", "hash", "prefix")
_DARSHAN_KEYS = ("library", "version", "hash", "prefix")


class ManifestError(Exception):
    """A manifest that is missing, malformed, stale, or names a missing tool.

    The message names the file and the key or value at fault.
    """


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


# --------------------------------------------------------------------------
# paths


def repo_root() -> pathlib.Path:
    """The project's top directory (the parent of the h5regress package)."""
    return pathlib.Path(__file__).resolve().parent.parent


def default_env_dir() -> pathlib.Path:
    return repo_root() / "spack-env"


#: the value of $H5REGRESS_MANIFEST that says "no manifest: the checks take their
#: tools from PATH" (a path that does not exist is an error, not that)
NO_MANIFEST = "none"


def configured_path() -> pathlib.Path | None:
    """The manifest the checks take their tools from, or None (tools from PATH):
    $H5REGRESS_MANIFEST (``none``: no manifest), else spack-env/manifest.json if present.

    A $H5REGRESS_MANIFEST naming no file is a ManifestError naming the variable and
    the path: falling back to PATH would run other tools (the distribution's HDF5)
    under build ids nobody asked for.
    """
    env = os.environ.get(ENV_VAR)
    if env == NO_MANIFEST:
        return None
    if env:
        if not pathlib.Path(env).is_file():
            raise ManifestError(
                f"{ENV_VAR}={env}: no such file (set it to a manifest, to "
                f"'{NO_MANIFEST}' for the tools on PATH, or unset it for "
                f"spack-env/manifest.json)")
        return pathlib.Path(env)
    path = default_path()
    return path if path.exists() else None


def default_path() -> pathlib.Path:
    """$H5REGRESS_MANIFEST if set, else <repo>/spack-env/manifest.json."""
    env = os.environ.get(ENV_VAR)
    if env:
        return pathlib.Path(env)
    return default_env_dir() / "manifest.json"


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------
# generate: `spack find --json` -> manifest dict


def _variants_string(params: dict) -> str:
    """Spack-style variant string: booleans first (+x/~x), then key=value."""
    bools, others = [], []
    for key in sorted(params):
        if key in ("patches", "dev_path", "build_system") or key in (
            "cflags", "cxxflags", "fflags", "cppflags", "ldflags", "ldlibs"
        ):
            continue
        value = params[key]
        if isinstance(value, bool):
            bools.append(("+" if value else "~") + key)
        elif isinstance(value, list):
            others.append(f"{key}={','.join(str(v) for v in value)}")
        else:
            others.append(f"{key}={value}")
    return "".join(bools) + ("" if not others else " " + " ".join(others))


def _split_version(version: str, where: str) -> tuple[str, str]:
    """'git.<sha>=<label>' -> (sha, label).  Anything else is an error: the
    environment pins every HDF5 build by commit."""
    m = _GIT_VERSION.match(str(version))
    if not m:
        raise ManifestError(
            f"{where}: hdf5 version {version!r} is not a commit pin "
            "'git.<40-hex sha>=<label>' (spack-env/spack.yaml pins every HDF5 by commit)"
        )
    ref, label = m.group("ref"), m.group("label")
    if not _HEX40.match(ref):
        raise ManifestError(
            f"{where}: hdf5 version {version!r}: {ref!r} is not a full 40-hex commit"
        )
    return ref, label


def _header_version(prefix: str) -> str | None:
    """HDF5's own version from <prefix>/include/H5public.h, if readable."""
    try:
        text = pathlib.Path(prefix, "include", "H5public.h").read_text(errors="replace")
    except OSError:
        return None
    parts = {}
    for key in ("MAJOR", "MINOR", "RELEASE", "SUBRELEASE"):
        m = re.search(rf"#define\s+H5_VERS_{key}\s+(\S+)", text)
        if not m:
            return None
        parts[key] = m.group(1).strip('"')
    version = f"{parts['MAJOR']}.{parts['MINOR']}.{parts['RELEASE']}"
    return version + (f"-{parts['SUBRELEASE']}" if parts["SUBRELEASE"] else "")


def _records(spack_find_json) -> list[dict]:
    if isinstance(spack_find_json, dict):
        # tolerate {"specs": [...]} and a single record
        if "specs" in spack_find_json and isinstance(spack_find_json["specs"], list):
            return spack_find_json["specs"]
        return [spack_find_json]
    if isinstance(spack_find_json, list):
        return spack_find_json
    raise ManifestError(
        f"spack find --json: expected a list of spec records, got {type(spack_find_json).__name__}"
    )


def _prefix_of(rec: dict, prefixes: dict[str, str]) -> str:
    """A record's install prefix: its own, else the one ``prefixes`` gives its hash."""
    h = rec.get("hash", "")
    p = rec.get("prefix") or prefixes.get(h)
    if not p:
        raise ManifestError(
            f"spack find --json: {rec.get('name')}/{h[:7]}: no install prefix "
            "(not installed, or no prefix given for its hash)"
        )
    return p


def _hdf5_builds(records: list[dict], prefixes: dict[str, str]) -> tuple[dict, dict]:
    """The HDF5 builds of the records: ({build id: manifest entry}, {dag hash: build id})."""
    builds: dict[str, dict] = {}
    by_hash: dict[str, str] = {}
    for rec in records:
        if rec.get("name") != "hdf5":
            continue
        h = rec.get("hash")
        if not h or h in by_hash:
            continue
        where = f"spack find --json: hdf5/{h[:7]}"
        commit, label = _split_version(rec.get("version", ""), where)
        build_id = f"hdf5-{label}"
        if build_id in builds:
            raise ManifestError(
                f"{where}: label {label!r} is used by two HDF5 builds "
                f"({builds[build_id]['hdf5']['hash'][:7]} and {h[:7]}): labels in "
                "spack-env/spack.yaml must be unique"
            )
        prefix = _prefix_of(rec, prefixes)
        builds[build_id] = {
            "hdf5": {
                "version": _header_version(prefix) or label,
                "label": label,
                "commit": commit,
                "variants": _variants_string(rec.get("parameters", {})),
                "hash": h,
                "prefix": prefix,
            },
            "tools": {},
        }
        by_hash[h] = build_id
    if not builds:
        raise ManifestError(
            "spack find --json: no installed hdf5 in the environment: install it first"
        )
    return builds, by_hash


def _tool_build(rec: dict, builds: dict, by_hash: dict[str, str]) -> str:
    """The HDF5 build id a tool's record is built against."""
    name, h = rec.get("name"), rec.get("hash", "")
    deps = [d for d in rec.get("dependencies", []) if d.get("name") == "hdf5"]
    if not deps:
        raise ManifestError(f"spack find --json: {name}/{h[:7]} has no hdf5 dependency")
    build_id = by_hash.get(deps[0].get("hash"))
    if build_id is None:
        raise ManifestError(
            f"spack find --json: {name}/{h[:7]} is built against hdf5/"
            f"{str(deps[0].get('hash'))[:7]}, which is none of the environment's "
            f"HDF5 builds ({', '.join(sorted(builds))}): re-concretize the environment"
        )
    return build_id


def _add_tools(rec: dict, build_id: str, tools: dict[str, str], prefix: str,
               check_tools: bool) -> None:
    """The binaries ``TOOL_LAYOUT`` expects of a tool's record, into ``tools``."""
    name, h = rec.get("name"), rec.get("hash", "")
    params = rec.get("parameters", {})
    for tool, (candidates, variant) in TOOL_LAYOUT[name].items():
        if variant is not None and params.get(variant) is not True:
            continue
        if tool in tools:
            raise ManifestError(
                f"spack find --json: two {name} installs for build {build_id} "
                f"({tool}: {tools[tool]} and {prefix})"
            )
        paths = [os.path.join(prefix, c) for c in candidates]
        found = next((p for p in paths if os.path.exists(p)), None)
        if found is None:
            if check_tools:
                raise ManifestError(
                    f"build {build_id}: tool {tool!r} of {name}/{h[:7]} is missing from "
                    f"its install prefix: none of {', '.join(paths)} exists"
                )
            found = paths[0]
        tools[tool] = found


def _add_darshan(rec: dict, builds: dict, by_hash: dict[str, str],
                 prefixes: dict[str, str], check_tools: bool) -> None:
    """The ``darshan`` entry of the build a darshan-runtime record is built against."""
    h = rec.get("hash", "")
    build_id = _tool_build(rec, builds, by_hash)
    prefix = _prefix_of(rec, prefixes)
    old = builds[build_id].get("darshan")
    if old is not None:
        if old["hash"] == h:
            return
        raise ManifestError(
            f"spack find --json: two {DARSHAN_PACKAGE} installs for build {build_id} "
            f"({old['prefix']} and {prefix})"
        )
    library = os.path.join(prefix, DARSHAN_LIBRARY)
    if check_tools and not os.path.exists(library):
        raise ManifestError(
            f"build {build_id}: {DARSHAN_PACKAGE}/{h[:7]} has no {DARSHAN_LIBRARY} "
            f"in its install prefix ({library})"
        )
    version = str(rec.get("version", ""))
    m = _GIT_VERSION.match(version)
    builds[build_id]["darshan"] = {
        "library": library,
        "version": m.group("label") if m else version,
        "commit": m.group("ref") if m and _HEX40.match(m.group("ref")) else None,
        "hash": h,
        "prefix": prefix,
    }


def generate(
    spack_find_json,
    env_dir,
    lock_path,
    *,
    prefixes: dict[str, str] | None = None,
    spack_version: str = "unknown",
    check_tools: bool = True,
    now: _dt.datetime | None = None,
) -> dict:
    """Build the manifest dict from ``spack -e ENV find --json`` output.

    ``prefixes`` maps dag hash -> install prefix for records that carry no
    ``prefix`` key (Spack 0.23's ``find --json`` has none; ``spack-env/install``
    gets them from ``spack find --format '{hash} {prefix}'``).  With
    ``check_tools`` (the default) every expected tool must exist in its
    install prefix, else ManifestError names the package, build and path.
    """
    records = _records(spack_find_json)
    prefixes = dict(prefixes or {})
    env_dir = os.path.abspath(os.fspath(env_dir))
    lock_path = os.fspath(lock_path)
    if not os.path.exists(lock_path):
        raise ManifestError(f"{lock_path}: no spack.lock: concretize the environment first")

    builds, by_hash = _hdf5_builds(records, prefixes)
    seen: set[str] = set()
    for rec in records:
        h = rec.get("hash", "")
        if rec.get("name") not in TOOL_LAYOUT or h in seen:
            continue
        seen.add(h)
        build_id = _tool_build(rec, builds, by_hash)
        _add_tools(rec, build_id, builds[build_id]["tools"], _prefix_of(rec, prefixes),
                   check_tools)
    for rec in records:
        if rec.get("name") == DARSHAN_PACKAGE:
            _add_darshan(rec, builds, by_hash, prefixes, check_tools)

    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc)
    return {
        "schema": SCHEMA,
        "generated": stamp.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "spack_version": spack_version,
        "environment": env_dir,
        "lock_sha256": sha256_file(lock_path),
        "builds": {k: builds[k] for k in sorted(builds)},
    }


# --------------------------------------------------------------------------
# validate / load / write


def _validate(data, where: str) -> None:
    """Structure of a manifest dict (no file-system checks)."""
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: top level must be a JSON object")
    for key in _TOP_KEYS:
        if key not in data:
            raise ManifestError(f"{where}: missing key {key!r}")
    if data["schema"] != SCHEMA:
        raise ManifestError(
            f"{where}: 'schema' is {data['schema']!r}, this h5regress reads schema {SCHEMA}"
        )
    for key in ("generated", "spack_version", "environment", "lock_sha256"):
        if not isinstance(data[key], str) or not data[key]:
            raise ManifestError(f"{where}: {key!r} must be a non-empty string, got {data[key]!r}")
    if not re.match(r"^[0-9a-f]{64}$", data["lock_sha256"]):
        raise ManifestError(f"{where}: 'lock_sha256' is not a sha256: {data['lock_sha256']!r}")
    builds = data["builds"]
    if not isinstance(builds, dict) or not builds:
        raise ManifestError(f"{where}: 'builds' must be a non-empty object")
    for build_id, build in builds.items():
        at = f"{where}: builds[{build_id!r}]"
        if not isinstance(build, dict):
            raise ManifestError(f"{at} must be an object")
        for key in ("hdf5", "tools"):
            if not isinstance(build.get(key), dict):
                raise ManifestError(f"{at}: missing or non-object {key!r}")
        hdf5 = build["hdf5"]
        for key in _HDF5_KEYS:
            if not isinstance(hdf5.get(key), str) or not hdf5[key]:
                raise ManifestError(
                    f"{at}.hdf5: {key!r} must be a non-empty string, got {hdf5.get(key)!r}"
                )
        if not _HEX40.match(hdf5["commit"]):
            raise ManifestError(f"{at}.hdf5: 'commit' is not a 40-hex commit: {hdf5['commit']!r}")
        if build_id != f"hdf5-{hdf5['label']}":
            raise ManifestError(
                f"{at}: build id does not match its label {hdf5['label']!r} "
                f"(expected 'hdf5-{hdf5['label']}')"
            )
        for tool, path in build["tools"].items():
            if not isinstance(path, str) or not os.path.isabs(path):
                raise ManifestError(f"{at}.tools[{tool!r}]: not an absolute path: {path!r}")
        if "darshan" in build:
            darshan = build["darshan"]
            if not isinstance(darshan, dict):
                raise ManifestError(f"{at}: 'darshan' must be an object, got {darshan!r}")
            for key in _DARSHAN_KEYS:
                if not isinstance(darshan.get(key), str) or not darshan[key]:
                    raise ManifestError(
                        f"{at}.darshan: {key!r} must be a non-empty string, "
                        f"got {darshan.get(key)!r}"
                    )
            if not os.path.isabs(darshan["library"]):
                raise ManifestError(
                    f"{at}.darshan: 'library' is not an absolute path: {darshan['library']!r}")


def _lock_for(path: pathlib.Path, data: dict) -> pathlib.Path | None:
    """The spack.lock this manifest must match: next to the manifest, else in
    the environment it names; None when neither exists (a manifest copied
    elsewhere as an artifact, say)."""
    for candidate in (path.parent / "spack.lock", pathlib.Path(data["environment"]) / "spack.lock"):
        if candidate.is_file():
            return candidate
    return None


def tool_problem(tool_path: str) -> str | None:
    """Why a tool's file cannot be run, or None: "does not exist", or "is not
    readable/executable (...)" (a permission, on the file or a directory above it)."""
    try:
        os.stat(tool_path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"is not readable/executable ({err.strerror or err})"
    if not os.access(tool_path, os.X_OK):
        return "is not readable/executable (no execute permission for this user)"
    return None


def load(path=None, *, check_stale: bool = True, check_tools: bool = True) -> dict[str, Build]:
    """Read and validate a manifest; return {build id: Build}.

    Raises ManifestError, naming the file and the key or value at fault, when
    the file is missing or malformed, when it is stale (its lock_sha256 no
    longer matches the environment's spack.lock), or when a tool path does not
    exist.
    """
    path = pathlib.Path(path) if path is not None else default_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ManifestError(
            f"{path}: no manifest: install the Spack environment with `spack-env/install` "
            f"(or point {ENV_VAR} at a manifest)"
        ) from None
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}; "
            + REGENERATE_HINT
        ) from None
    _validate(data, str(path))

    if check_stale:
        lock = _lock_for(path, data)
        if lock is not None:
            actual = sha256_file(lock)
            if actual != data["lock_sha256"]:
                raise ManifestError(
                    f"{path}: stale: 'lock_sha256' is {data['lock_sha256'][:12]}..., but "
                    f"{lock} now has sha256 {actual[:12]}... (the environment was "
                    f"re-concretized since); {REGENERATE_HINT}"
                )

    builds: dict[str, Build] = {}
    for build_id, b in data["builds"].items():
        if check_tools:
            for tool, tool_path in b["tools"].items():
                # a tool that is there but cannot be run is not a stale manifest: the
                # checks of that tool say so (h5regress.tools.find), the others run
                if tool_problem(tool_path) == "does not exist":
                    raise ManifestError(
                        f"{path}: build {build_id!r}: tool {tool!r} does not exist at {tool_path}"
                    )
        library = b["darshan"]["library"] if "darshan" in b else None
        if check_tools and library is not None and not os.path.exists(library):
            raise ManifestError(
                f"{path}: build {build_id!r}: Darshan's library does not exist at {library}"
            )
        h = b["hdf5"]
        builds[build_id] = Build(
            id=build_id,
            hdf5_version=h["version"],
            hdf5_label=h["label"],
            hdf5_commit=h["commit"],
            variants=h["variants"],
            spec_hash=h["hash"],
            prefix=h["prefix"],
            tools=dict(b["tools"]),
            darshan_library=library,
        )
    return builds


def darshan_library(build_id: str, path=None) -> str | None:
    """Darshan's runtime library (``libdarshan.so``, for ``LD_PRELOAD``) built
    against HDF5 build ``build_id`` of the manifest at ``path`` (default:
    :func:`default_path`); None when the manifest has no Darshan for that build.

    Raises ManifestError, whose message says why (no manifest, malformed or
    stale, the library gone), also when ``build_id`` is none of its builds.
    """
    builds = load(path)
    if build_id not in builds:
        raise ManifestError(
            f"{pathlib.Path(path) if path is not None else default_path()}: no build "
            f"{build_id!r} (builds: {', '.join(sorted(builds))})"
        )
    return builds[build_id].darshan_library


def write(path, manifest: dict) -> pathlib.Path:
    """Write the manifest atomically: a temporary file in the same directory,
    flushed and fsynced, then os.replace.  A reader sees the old manifest or
    the new one, never half of one."""
    path = pathlib.Path(path)
    _validate(manifest, str(path))
    return atomic.write_text(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n")


#: the line of a wrapper (:func:`wrap_tools`) that names the tool it runs
WRAPS = "# h5regress-wraps: "


def wrapped_tool(path: str) -> str:
    """The tool a wrapper of :func:`wrap_tools` runs, else ``path`` itself: what to
    inspect (``ldd``, its strings) for what a tool was built with."""
    try:
        with open(path, "rb") as fp:
            head = fp.read(4096).decode("utf-8", "replace")
    except OSError:
        return path
    if not head.startswith("#!"):
        return path
    for line in head.splitlines():
        if line.startswith(WRAPS):
            return line[len(WRAPS):].strip()
    return path


def wrap_tools(tools: dict, dst_dir: pathlib.Path, exports: list[str], comment: str) -> None:
    """Replace each tool of a build's ``tools`` (a manifest's, in place) by a wrapper
    script ``dst_dir/<tool>/<the tool's file name>`` that runs ``exports`` (shell
    lines, e.g. ``export LD_PRELOAD=...``) and then execs the tool: how an untimed run
    under Darshan or against a coverage build puts its library and settings in front
    of the tool only. The wrapper keeps the tool's file name: parsers find a tool's
    command line in the job script by it."""
    for tool, path in list(tools.items()):
        wrapper = dst_dir / tool / pathlib.Path(path).name
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(f"#!/bin/sh\n# h5regress: {comment}\n{WRAPS}{path}\n" + "".join(
            line + "\n" for line in exports) + f'exec {shlex.quote(path)} "$@"\n')
        wrapper.chmod(0o755)
        tools[tool] = str(wrapper)


# --------------------------------------------------------------------------
# running Spack


def find_spack() -> str:
    """$SPACK_ROOT/bin/spack, else `spack` on PATH."""
    root = os.environ.get("SPACK_ROOT")
    if root:
        exe = os.path.join(root, "bin", "spack")
        if os.access(exe, os.X_OK):
            return exe
    exe = shutil.which("spack")
    if exe:
        return exe
    raise ManifestError(
        "spack not found: set SPACK_ROOT or put spack on PATH (spack-env/install clones one)"
    )


def _run_spack(spack: str, args: list[str]) -> str:
    cmd = [spack, *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise ManifestError(
            f"`{' '.join(cmd)}` failed (exit {p.returncode}): {p.stderr.strip()[-2000:]}"
        )
    return p.stdout


def from_spack(env_dir, *, spack: str | None = None, spack_args: list[str] | None = None) -> dict:
    """Run Spack on an installed environment and return the manifest dict."""
    spack = spack or find_spack()
    env_dir = os.path.abspath(os.fspath(env_dir))
    base = [*(spack_args or []), "-e", env_dir]
    records = json.loads(_run_spack(spack, [*base, "find", "--json"]) or "[]")
    prefixes = {}
    for line in _run_spack(spack, [*base, "find", "--format", "{hash} {prefix}"]).splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and re.match(r"^[a-z0-9]{32}$", parts[0]):
            prefixes[parts[0]] = parts[1].strip()
    version = _run_spack(spack, ["--version"]).strip()
    return generate(
        records,
        env_dir,
        os.path.join(env_dir, "spack.lock"),
        prefixes=prefixes,
        spack_version=version,
    )


# --------------------------------------------------------------------------
# command line (wired as `h5regress manifest write|show`)


def main_write(argv: list[str] | None = None) -> int:
    """h5regress manifest write [--env DIR] [--output PATH]"""
    ap = argparse.ArgumentParser(
        prog="h5regress manifest write",
        description="Generate the manifest from an installed Spack environment "
        "(spack -e ENV find --json) and write it atomically.",
    )
    ap.add_argument("--env", default=None, help="Spack environment dir (default: <repo>/spack-env)")
    ap.add_argument("--output", default=None,
                    help="manifest path (default: $H5REGRESS_MANIFEST, else ENV/manifest.json)")
    ap.add_argument("--spack", default=None, help="spack executable (default: $SPACK_ROOT, PATH)")
    args = ap.parse_args(argv)
    env_dir = pathlib.Path(args.env) if args.env else default_env_dir()
    if args.output:
        out = pathlib.Path(args.output)
    elif args.env:
        out = env_dir / "manifest.json"
    else:
        out = default_path()
    try:
        manifest = from_spack(env_dir, spack=args.spack)
        write(out, manifest)
    except ManifestError as e:
        print(f"h5regress manifest write: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}: {len(manifest['builds'])} HDF5 builds "
          f"({', '.join(manifest['builds'])})")
    return 0


def main_show(argv: list[str] | None = None) -> int:
    """h5regress manifest show [PATH] [--json]"""
    ap = argparse.ArgumentParser(prog="h5regress manifest show",
                                 description="Validate the manifest and list its builds and tools.")
    ap.add_argument("path", nargs="?", default=None,
                    help="manifest (default: $H5REGRESS_MANIFEST, else spack-env/manifest.json)")
    ap.add_argument("--json", action="store_true", help="print the builds as JSON")
    args = ap.parse_args(argv)
    path = pathlib.Path(args.path) if args.path else default_path()
    try:
        builds = load(path)
    except ManifestError as e:
        print(f"h5regress manifest show: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        json.dump({k: b.__dict__ for k, b in builds.items()}, sys.stdout, indent=2)
        print()
        return 0
    print(f"{path}")
    for b in builds.values():
        print(f"{b.id}: HDF5 {b.hdf5_version} (label {b.hdf5_label}) commit {b.hdf5_commit} "
              f"hash {b.spec_hash[:7]}\n  variants {b.variants}\n  prefix {b.prefix}")
        for tool in sorted(b.tools):
            print(f"  {tool:22s} {b.tools[tool]}")
        if b.darshan_library:
            print(f"  {'(darshan library)':22s} {b.darshan_library}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "write":
        return main_write(argv[1:])
    if argv and argv[0] == "show":
        return main_show(argv[1:])
    usage = ("usage: h5regress manifest write|show [options]\n\n"
             "  write  generate the manifest from the installed Spack environment\n"
             "  show   validate the manifest and list its builds and tools\n\n"
             "h5regress manifest write --help, h5regress manifest show --help: their options")
    if argv in (["-h"], ["--help"]):
        print(usage)
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
