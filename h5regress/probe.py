"""Provenance probe, run inside the job (on the compute node) before the benchmark.

``python -m h5regress.probe OUT.json --data-dir DIR --binary EXE`` writes what no
benchmark reports by itself: the node list, the file system type of the data
directory, the MPI library, the HDF5 library the binary is linked with (as that
library reports its own version), the node memory and the kernel. Each probe
that fails records why instead of failing the job.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import posixpath
import re
import socket
import subprocess
import sys

import psutil


def fs_type(path: str) -> str:
    """File system type of the mount holding ``path`` (the longest mount point above it)."""
    path = os.path.realpath(path)
    try:
        mounts = psutil.disk_partitions(all=True)
    except OSError as err:
        return f'unknown ({err})'
    above = [m for m in mounts
             if path == m.mountpoint or path.startswith(m.mountpoint.rstrip('/') + '/')]
    return max(above, key=lambda m: len(m.mountpoint)).fstype if above else 'unknown'


def node_memory_bytes() -> int | None:
    try:
        return psutil.virtual_memory().total
    except (OSError, RuntimeError):
        return None


def _run(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f'unknown ({cmd[0]}: {err})'
    return (out.stdout or out.stderr).strip()


def ldd(binary: str) -> str:
    """``ldd``'s output for ``binary`` in this environment (what the loader would give it)."""
    return _run(['ldd', binary])


def mpi_library(ldd_output: str) -> tuple[str, str]:
    """(path, version) of the MPI library: the one the binary loads, as that library
    reports itself (``MPI_Get_library_version``, callable before ``MPI_Init``); without
    one, what the ``mpirun`` on ``PATH`` says, with no path."""
    lib = loaded_library(ldd_output, r'lib(mpi|mpich)\.so')
    if not lib:
        first = _run(['mpirun', '--version']).splitlines()
        return '', first[0] if first else 'unknown'
    try:
        # MPI_MAX_LIBRARY_VERSION_STRING: 256 in Open MPI, 8192 in MPICH
        text, length = ctypes.create_string_buffer(8192), ctypes.c_int()
        if ctypes.CDLL(lib).MPI_Get_library_version(text, ctypes.byref(length)) != 0:
            return lib, 'unknown (MPI_Get_library_version failed)'
    except (OSError, AttributeError) as err:
        return lib, f'unknown ({err})'
    return lib, (text.value.decode(errors='replace').strip().splitlines() or ['unknown'])[0]


def linked_hdf5(ldd_output: str) -> tuple[str, str]:
    """(path, version) of the libhdf5 the binary loads, asking the library itself."""
    lib = loaded_libhdf5(ldd_output)
    if not lib:
        return '', 'not linked'
    try:
        h5 = ctypes.CDLL(lib)
        major, minor, release = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        if h5.H5get_libversion(ctypes.byref(major), ctypes.byref(minor),
                               ctypes.byref(release)) < 0:
            return lib, 'unknown (H5get_libversion failed)'
        return lib, f'{major.value}.{minor.value}.{release.value}'
    except OSError as err:
        return lib, f'unknown ({err})'


def loaded_library(ldd_output: str, name_pattern: str) -> str:
    """The library whose file name matches ``name_pattern`` that the loader would give
    the binary, from ``ldd``'s output in this environment: a preloaded one
    (``LD_PRELOAD``: listed first, without ``=>``) wins over the one the binary links."""
    for line in ldd_output.splitlines():
        m = re.match(r'\s*(?:(\S+)\s+=>\s+)?(/\S+|\S+/\S+)\s', line + ' ')
        if not m:
            continue
        if re.match(name_pattern, posixpath.basename(m.group(1) or m.group(2))):
            return m.group(2)
    return ''


def loaded_libhdf5(ldd_output: str) -> str:
    """The libhdf5 the loader would give the binary (``libhdf5_hl`` is not the library)."""
    return loaded_library(ldd_output, r'libhdf5(?!_hl)[^/\s]*\.so')


def nodelist() -> str:
    return (os.environ.get('SLURM_JOB_NODELIST') or os.environ.get('SLURM_NODELIST')
            or socket.gethostname())


def probe(data_dir: str, binary: str | None) -> dict:
    result = {
        'nodelist': nodelist(),
        'fs_type': fs_type(data_dir),
        'data_dir': data_dir,
        'node_memory_bytes': node_memory_bytes(),
        'kernel': platform.release(),
        'ompi_mca_io': os.environ.get('OMPI_MCA_io', ''),
        'romio_hints': os.environ.get('ROMIO_HINTS', ''),
    }
    libraries = ldd(binary) if binary else ''
    result['mpi_library_path'], result['mpi_library'] = mpi_library(libraries)
    if binary:
        result['hdf5_library'], result['hdf5_library_version'] = linked_hdf5(libraries)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='python -m h5regress.probe', description=__doc__)
    ap.add_argument('out')
    ap.add_argument('--data-dir', required=True)
    ap.add_argument('--binary')
    args = ap.parse_args(argv)
    data = probe(args.data_dir, args.binary)
    tmp = f'{args.out}.tmp'
    with open(tmp, 'w') as fp:
        json.dump(data, fp, indent=1, sort_keys=True)
    os.replace(tmp, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
