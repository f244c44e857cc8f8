"""The stand-in builds of a night without Spack: this project's FLASH-IO kernel and
``ior`` against the HDF5 on the machine, the candidate optionally slowed by a known
fraction (an LD_PRELOAD shim that delays the writes of its HDF5 runs only).
"""

from __future__ import annotations

import datetime
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from h5regress import buildid, manifest
from h5regress.nightprocs import run

REPO = Path(__file__).resolve().parents[1]
KERNEL = REPO / 'kernels' / 'flash-io'
SHIM = REPO / 'benchmarks' / 'delay_shim.c'
#: the shim's account of the delays it added (``H5REGRESS_DELAY_LOG``), in the stand-ins'
#: directory
DELAY_LOG = 'delay.log'
STANDIN_A, STANDIN_B = 'standin-a', 'standin-b'


def build_standins(out: Path, slowdown: float) -> Path:
    """Build the kernel and write a manifest of two stand-in builds; return its path.

    Both builds have this project's FLASH-IO kernel and, when there is one
    (:func:`standin_ior`), the same ``ior`` binary, so an A/A night of
    ``ior_check`` runs too. With ``slowdown``, the candidate's tools are wrapped
    so that their HDF5 runs only are slowed by the shim.
    """
    work = out / 'stand-in'
    # tool -> (binary, shell pattern of its arguments when it writes through HDF5)
    tools = {'flash-io': (build_kernel(work / 'build'), '*" --api=hdf5 "*')}
    ior, ior_origin = standin_ior()
    if ior:
        tools['ior'] = (ior, '*" -a HDF5 "*')
    base_tools = {name: str(binary) for name, (binary, _) in tools.items()}
    (work / DELAY_LOG).unlink(missing_ok=True)      # an earlier attempt's, in a reused --out
    cand_tools = {**base_tools, **slowed_tools(work, tools, slowdown)} if slowdown > 0 \
        else dict(base_tools)
    commit = run(['git', '-C', REPO, 'rev-parse', 'HEAD'], capture=True).stdout.strip() \
        or '0' * 40
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')

    def standin(label, tool_paths, slowed=0.0):
        return {'hdf5': {'version': 'system', 'label': label, 'commit': commit,
                         'variants': 'stand-in: the HDF5 on this machine' + (
                             f'; ior: {ior_origin}, the same binary in both builds'
                             if ior else '') + (
                             f'; writes through HDF5 slowed by {slowed:.0%} on purpose '
                             f'(injected slowdown: not an A/A pair)' if slowed else ''),
                         'hash': label, 'prefix': str(work)},
                'tools': tool_paths}

    path = work / 'manifest.json'
    manifest.write(path, {
        'schema': manifest.SCHEMA, 'generated': now, 'spack_version': 'none (stand-in)',
        'environment': str(work), 'lock_sha256': hashlib.sha256(b'').hexdigest(),
        'builds': {buildid.of_label(STANDIN_A): standin(STANDIN_A, base_tools),
                   buildid.of_label(STANDIN_B): standin(STANDIN_B, cand_tools, slowdown)},
    })
    return path


def build_kernel(build: Path) -> Path:
    """This project's FLASH-IO kernel, built with CMake in ``build``; its binary."""
    if run(['cmake', '-S', KERNEL, '-B', build, '-DCMAKE_BUILD_TYPE=Release'],
           stdout=subprocess.DEVNULL).returncode or \
            run(['cmake', '--build', build, '-j', '2'], stdout=subprocess.DEVNULL).returncode:
        raise RuntimeError(f'building the FLASH-IO kernel from {KERNEL} failed')
    return build / 'flash-io'


def slowed_tools(work: Path, tools: dict[str, tuple[Path, str]], slowdown: float
                 ) -> dict[str, str]:
    """A wrapper per tool (name -> (binary, shell pattern of its HDF5 arguments)) that
    runs its HDF5 runs behind the delay shim at ``slowdown``; name -> wrapper."""
    shim = work / 'delay_shim.so'
    if run(['gcc', '-shared', '-fPIC', '-O2', '-o', shim, SHIM, '-ldl']).returncode:
        raise RuntimeError(f'building {SHIM} failed')
    # the delay applies to the HDF5 runs only: MPI-IO is the canary, and an HDF5
    # regression does not slow MPI-IO down
    wrappers = {}
    for name, (binary, hdf5_args) in tools.items():
        wrapper = work / f'{name}-slowed'
        wrapper.write_text(
            '#!/bin/sh\n'
            f'# stand-in candidate: writes through HDF5 take {1 + slowdown:g}x their time\n'
            f'case " $* " in {hdf5_args})\n'
            f'  export LD_PRELOAD={shim}${{LD_PRELOAD:+:$LD_PRELOAD}} '
            f'H5REGRESS_DELAY_FRACTION={slowdown:g} H5REGRESS_DELAY_LOG={work / DELAY_LOG} ;;\n'
            'esac\n'
            f'exec {binary} "$@"\n')
        wrapper.chmod(0o755)
        wrappers[name] = str(wrapper)
    return wrappers


def injected_delay(work: Path, slowdown: float) -> str:
    """What the shim says it did to the candidate's runs (its log, one line per
    process): a sentence for the night's log. Raises RuntimeError when no run was
    slowed: a night labelled with an injected slowdown must have had one."""
    path = work / DELAY_LOG
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        lines = []
    totals = {'calls': 0, 'io_s': 0.0, 'delay_s': 0.0}
    for line in lines:
        fields = dict(f.split('=', 1) for f in line.split()[1:] if '=' in f)
        for key, kind in (('calls', int), ('io_s', float), ('delay_s', float)):
            totals[key] += kind(fields.get(key, 0))
    if not totals['delay_s']:
        raise RuntimeError(
            f'--inject-slowdown {slowdown:g}: no run of the candidate was slowed (the delay '
            f'shim logged no delayed call in {path}), so the night would be labelled '
            'with a slowdown it did not have; do the checks run any HDF5 row?')
    return (f'injected slowdown: the shim delayed {totals["calls"]} I/O calls in '
            f'{len(lines)} candidate processes by {totals["delay_s"]:.1f} s on their '
            f'{totals["io_s"]:.1f} s (x{1 + totals["delay_s"] / totals["io_s"]:.2f}; '
            f'asked x{1 + slowdown:g}; the time between calls is not slowed)'
            if totals['io_s'] else f'injected slowdown: {totals["delay_s"]:.1f} s')


def standin_ior() -> tuple[Path | None, str]:
    """The ``ior`` of both stand-in builds and where it comes from: the one on PATH,
    else the Spack environment's (the manifest's first build that has one: IOR with
    that build's HDF5, named in the stand-in manifest), else none (no IOR rows)."""
    on_path = shutil.which('ior')
    if on_path:
        return Path(on_path), f'{on_path} (PATH)'
    try:
        builds = manifest.load(manifest.default_path())
    except (OSError, manifest.ManifestError):
        return None, ''
    for build_id, b in sorted(builds.items()):
        if 'ior' in b.tools and os.access(b.tools['ior'], os.X_OK):
            return Path(b.tools['ior']), (f"{b.tools['ior']} (the Spack environment's, "
                                          f'build {build_id}: HDF5 {b.hdf5_version})')
    return None, ''
