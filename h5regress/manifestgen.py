"""The manifest generated from an installed Spack environment (``spack find --json``).

``spack-env/install`` runs :func:`from_spack` after installing; :func:`generate`
is the pure part (records in, manifest dict out).  The schema is in
:mod:`h5regress.manifestschema`.

Standard library only (``spack-env/install`` loads it by path, before any
virtualenv exists).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import re
import shutil
import subprocess

from h5regress import buildid, catalog
from h5regress.manifestschema import (
    _GIT_VERSION, _HEX40, ASYNC_CONNECTOR, ASYNC_LIBRARY, ASYNC_PACKAGE, ASYNC_PLUGIN_DIR,
    ASYNC_VARIANT, DARSHAN_LIBRARY, DARSHAN_PACKAGE, SCHEMA, ManifestError, sha256_file,
)

# Per Spack package: manifest tool name -> candidate paths relative to the
# install prefix (the first that exists wins), and the variant that must be
# on for the tool to be expected (None: always). Derived from the benchmark
# declarations (h5regress/catalog.py), where a tool's package and binaries are said.
TOOL_LAYOUT: dict[str, dict[str, tuple[tuple[str, ...], str | None]]] = catalog.tool_layout()


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


def _hdf5_entry(rec: dict, prefixes: dict[str, str]) -> dict:
    """The manifest's ``hdf5`` object of an hdf5 record."""
    h = rec.get("hash", "")
    commit, label = _split_version(rec.get("version", ""), f"spack find --json: hdf5/{h[:7]}")
    prefix = _prefix_of(rec, prefixes)
    return {
        "version": _header_version(prefix) or label,
        "label": label,
        "commit": commit,
        "variants": _variants_string(rec.get("parameters", {})),
        "hash": h,
        "prefix": prefix,
    }


def _hdf5_builds(records: list[dict], prefixes: dict[str, str],
                 skip: frozenset[str] = frozenset()) -> tuple[dict, dict]:
    """The HDF5 builds of the records but those whose hash is in ``skip`` (the
    thread-safe builds only the ASYNC rows use): ({build id: manifest entry},
    {dag hash: build id})."""
    builds: dict[str, dict] = {}
    by_hash: dict[str, str] = {}
    for rec in records:
        h = rec.get("hash")
        if rec.get("name") != "hdf5" or not h or h in by_hash or h in skip:
            continue
        hdf5 = _hdf5_entry(rec, prefixes)
        build_id = buildid.of_label(hdf5['label'])
        if build_id in builds:
            raise ManifestError(
                f"spack find --json: hdf5/{h[:7]}: label {hdf5['label']!r} is used by two "
                f"HDF5 builds ({builds[build_id]['hdf5']['hash'][:7]} and {h[:7]}): labels "
                "in spack-env/spack.yaml must be unique"
            )
        builds[build_id] = {"hdf5": hdf5, "tools": {}}
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


def _is_async(rec: dict) -> bool:
    """An h5bench built with the async VOL connector (its builds go to ``async``)."""
    return rec.get("parameters", {}).get(ASYNC_VARIANT) is True and \
        ASYNC_PACKAGE in _dependency_hashes(rec)


def _dependency_hashes(rec: dict) -> dict[str, str]:
    return {d.get("name"): d.get("hash") for d in rec.get("dependencies", [])}


def _async_hdf5_hashes(records: list[dict]) -> frozenset[str]:
    """The HDF5 builds only async tools depend on: the thread-safe builds of the
    ASYNC rows (a build that other tools use too stays a build of its own)."""
    used_by_async, used_by_others = set(), set()
    for rec in records:
        h = _dependency_hashes(rec).get("hdf5")
        if h and (_is_async(rec) or rec.get("name") == ASYNC_PACKAGE):
            used_by_async.add(h)
        elif h:
            used_by_others.add(h)
    return frozenset(used_by_async - used_by_others)


def _connector_entry(rec: dict, prefixes: dict[str, str], check_tools: bool) -> dict:
    """The manifest's ``async.connector`` object of an hdf5-vol-async record."""
    h, prefix = rec.get("hash", ""), _prefix_of(rec, prefixes)
    library = os.path.join(prefix, ASYNC_LIBRARY)
    if check_tools and not os.path.exists(library):
        raise ManifestError(f"{ASYNC_PACKAGE}/{h[:7]} has no {ASYNC_LIBRARY} in its "
                            f"install prefix ({library})")
    version = str(rec.get("version", ""))
    m = _GIT_VERSION.match(version)
    return {
        "name": ASYNC_CONNECTOR,
        "version": m.group("label") if m else version,
        "commit": m.group("ref") if m and _HEX40.match(m.group("ref")) else None,
        "hash": h,
        "prefix": prefix,
        "plugin_path": os.path.join(prefix, ASYNC_PLUGIN_DIR),
        "library": library,
    }


def _add_async(rec: dict, builds: dict, records: list[dict], prefixes: dict[str, str],
               check_tools: bool) -> None:
    """An async h5bench record: the ``async`` entry of the build of its HDF5 commit."""
    name, h = rec.get("name"), rec.get("hash", "")
    by_hash = {r.get("hash"): r for r in records}
    deps = _dependency_hashes(rec)
    hdf5_rec, connector_rec = by_hash.get(deps.get("hdf5")), by_hash.get(deps[ASYNC_PACKAGE])
    if hdf5_rec is None or connector_rec is None:
        raise ManifestError(f"spack find --json: {name}/{h[:7]} (+{ASYNC_VARIANT}): its hdf5 "
                            f"or {ASYNC_PACKAGE} is not among the installed specs")
    hdf5 = _hdf5_entry(hdf5_rec, prefixes)
    build_id = buildid.of_label(hdf5['label'])
    if build_id not in builds:
        raise ManifestError(f"spack find --json: {name}/{h[:7]} (+{ASYNC_VARIANT}) is built "
                            f"against HDF5 label {hdf5['label']!r}, none of the environment's "
                            f"builds ({', '.join(sorted(builds))})")
    entry = builds[build_id].setdefault("async", {
        "hdf5": hdf5, "connector": _connector_entry(connector_rec, prefixes, check_tools),
        "tools": {}})
    if entry["hdf5"]["hash"] != hdf5["hash"]:
        raise ManifestError(f"spack find --json: two HDF5 builds for the ASYNC rows of "
                            f"{build_id} ({entry['hdf5']['prefix']} and {hdf5['prefix']})")
    _add_tools(rec, f"{build_id} (async)", entry["tools"], _prefix_of(rec, prefixes),
               check_tools)


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

    builds, by_hash = _hdf5_builds(records, prefixes, _async_hdf5_hashes(records))
    seen: set[str] = set()
    for rec in records:
        h = rec.get("hash", "")
        if rec.get("name") not in TOOL_LAYOUT or h in seen:
            continue
        seen.add(h)
        if _is_async(rec):
            _add_async(rec, builds, records, prefixes, check_tools)
            continue
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
