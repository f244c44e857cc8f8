"""The Spack environment's manifest: per HDF5 build, where each tool is.

``spack-env/install`` writes it after installing the environment; the tool
resolver reads it (``load``), so that a check runs a tool built against a
given HDF5 build and every perflog record names that build.

The schema (builds, tools, Darshan's library, the ASYNC rows' connector) is
described and validated in :mod:`h5regress.manifestschema`; the manifest is
generated from ``spack find --json`` by :mod:`h5regress.manifestgen`.  This
module reads, checks and writes it, and is the command line
(``h5regress manifest write|show``); it re-exports the names of both.

This module uses the standard library only: ``spack-env/install`` loads it
by path, before any virtualenv exists.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shlex
import sys

from h5regress import atomic
from h5regress.cmdline import EXIT_ERROR, EXIT_USAGE, UsageExitParser
from h5regress.manifestgen import TOOL_LAYOUT, from_spack, generate  # noqa: F401 (re-exported)
from h5regress.manifestschema import (  # noqa: F401  (re-exported)
    ASYNC_LIBRARY, ASYNC_PACKAGE, DARSHAN_LIBRARY, DARSHAN_PACKAGE, SCHEMA, Build, ManifestError,
    async_io_of, sha256_file, validate,
)

ENV_VAR = "H5REGRESS_MANIFEST"
REGENERATE_HINT = (
    "regenerate it with `spack-env/install --manifest-only` "
    "(or `h5regress manifest write`)"
)


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



# --------------------------------------------------------------------------
# load / write


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


def _read(path: pathlib.Path) -> dict:
    """The manifest file's JSON, validated (ManifestError naming the file otherwise)."""
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
    validate(data, str(path))
    return data


def _check_lock(path: pathlib.Path, data: dict) -> None:
    """ManifestError when the environment was re-concretized since the manifest."""
    lock = _lock_for(path, data)
    if lock is None:
        return
    actual = sha256_file(lock)
    if actual != data["lock_sha256"]:
        raise ManifestError(
            f"{path}: stale: 'lock_sha256' is {data['lock_sha256'][:12]}..., but "
            f"{lock} now has sha256 {actual[:12]}... (the environment was "
            f"re-concretized since); {REGENERATE_HINT}"
        )


def _check_files(path: pathlib.Path, build_id: str, b: dict) -> None:
    """ManifestError naming the first tool or library of a build that is gone."""
    tools = dict(b["tools"])
    if "async" in b:
        tools.update({f"{t} (async)": p for t, p in b["async"]["tools"].items()})
    for tool, tool_path in tools.items():
        # a tool that is there but cannot be run is not a stale manifest: the
        # checks of that tool say so (h5regress.tools.find), the others run
        if tool_problem(tool_path) == "does not exist":
            raise ManifestError(
                f"{path}: build {build_id!r}: tool {tool!r} does not exist at {tool_path}"
            )
    libraries = {"Darshan's library": b.get("darshan", {}).get("library"),
                 "the async VOL connector": b.get("async", {}).get("connector", {}).get("library")}
    for what, library in libraries.items():
        if library is not None and not os.path.exists(library):
            raise ManifestError(f"{path}: build {build_id!r}: {what} does not exist at {library}")


def _build(build_id: str, b: dict) -> Build:
    h = b["hdf5"]
    return Build(
        id=build_id,
        hdf5_version=h["version"],
        hdf5_label=h["label"],
        hdf5_commit=h["commit"],
        variants=h["variants"],
        spec_hash=h["hash"],
        prefix=h["prefix"],
        tools=dict(b["tools"]),
        darshan_library=b["darshan"]["library"] if "darshan" in b else None,
        async_io=async_io_of(b["async"]) if "async" in b else None,
    )


def load(path=None, *, check_stale: bool = True, check_tools: bool = True) -> dict[str, Build]:
    """Read and validate a manifest; return {build id: Build}.

    Raises ManifestError, naming the file and the key or value at fault, when
    the file is missing or malformed, when it is stale (its lock_sha256 no
    longer matches the environment's spack.lock), or when a tool path does not
    exist.
    """
    path = pathlib.Path(path) if path is not None else default_path()
    data = _read(path)
    if check_stale:
        _check_lock(path, data)
    builds: dict[str, Build] = {}
    for build_id, b in data["builds"].items():
        if check_tools:
            _check_files(path, build_id, b)
        builds[build_id] = _build(build_id, b)
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
    validate(manifest, str(path))
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
# command line (wired as `h5regress manifest write|show`)




def main_write(argv: list[str] | None = None) -> int:
    """h5regress manifest write [--env DIR] [--output PATH]"""
    ap = UsageExitParser(
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
        return EXIT_ERROR
    print(f"wrote {out}: {len(manifest['builds'])} HDF5 builds "
          f"({', '.join(manifest['builds'])})")
    return 0


def main_show(argv: list[str] | None = None) -> int:
    """h5regress manifest show [PATH] [--json]"""
    ap = UsageExitParser(prog="h5regress manifest show",
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
        return EXIT_ERROR
    if args.json:
        json.dump({k: dataclasses.asdict(b) for k, b in builds.items()}, sys.stdout, indent=2)
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
        if b.async_io:
            a = b.async_io
            print(f"  ASYNC rows: VOL connector {a.connector} {a.connector_version} "
                  f"({a.plugin_path}), HDF5 hash {a.hdf5_hash[:7]} {a.hdf5_variants}")
            for tool in sorted(a.tools):
                print(f"    {tool:20s} {a.tools[tool]}")
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
    print(f"{usage}\n\nh5regress manifest: error: give write or show, not {argv[:1]}",
          file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
