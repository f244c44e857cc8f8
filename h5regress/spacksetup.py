"""Bring Spack and the suite's Spack environment onto this machine (``ci/setup``).

Spack comes from, in order: ``$SPACK_ROOT``; ``spack`` on ``PATH``; the directory
``--spack-dir`` (``$H5REGRESS_SPACK_DIR``, default ``~/.cache/h5regress/spack``);
a Spack snapshot tarball (``--spack-tarball``, what an air-gapped site keeps),
unpacked there; else ``spack-env/install`` clones it (needs network). Spack's
install tree is inside that directory, outside the checkout: a machine that
installed once reuses every build, each keyed by its spec hash.

Offline Spack cannot bootstrap its concretizer (clingo) from its binary mirror, so
clingo comes from PyPI into a virtualenv beside Spack (``<spack-dir>-python``),
named to Spack by ``SPACK_PYTHON`` (:func:`spack_env_vars`; ``spack-env/install``
uses the same).

The environment installs from the site's reference lock
(``spack-env/locks/<site>.lock``) when there is one: no concretization, the
exact builds the lock names. Without Spack and without network it says what it
skipped and how to get it, and exits 0 -- unless ``--required`` (a bundle,
tarball or mirror was given), when any failure exits 1.

Standard library only: it runs before and outside the virtualenv too.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
INSTALL = REPO / 'spack-env' / 'install'
DEFAULT_SPACK_DIR = pathlib.Path.home() / '.cache' / 'h5regress' / 'spack'
DEFAULT_SITE = 'workstation'
#: where spack-env/install clones Spack from when none is installed
SPACK_GIT = os.environ.get('H5REGRESS_SPACK_GIT', 'https://github.com/spack/spack.git')

SKIPPED = (
    'the Spack environment was not installed: {why}. The checks of IOR, mdtest, MACSio '
    'and h5bench then build their tools with ReFrame fixtures (sources: see README.md, '
    '"Built by fixture") or use those on PATH. To install it: ci/setup --spack-bundle DIR '
    '(a Spack snapshot tarball and a source mirror, see spack-env/README.md), or '
    'SPACK_ROOT=<a Spack> ci/setup [--mirror URL].'
)


class SetupError(Exception):
    """A step failed; the message says which and how to go on."""


def log(msg: str) -> None:
    print(f'ci/setup: {msg}', flush=True)


def spack_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get('H5REGRESS_SPACK_DIR', DEFAULT_SPACK_DIR))


def find_spack(directory: pathlib.Path) -> str | None:
    """An installed Spack: ``$SPACK_ROOT``, ``PATH``, then ``directory``."""
    root = os.environ.get('SPACK_ROOT')
    if root and os.access(os.path.join(root, 'bin', 'spack'), os.X_OK):
        return os.path.join(root, 'bin', 'spack')
    exe = shutil.which('spack') or directory / 'bin' / 'spack'
    return str(exe) if os.access(exe, os.X_OK) else None


def unpack_spack(tarball: pathlib.Path, directory: pathlib.Path) -> str:
    """Unpack a Spack snapshot (one top directory) into ``directory``, whole or not at all."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent, prefix='.unpack-') as tmp:
        try:
            with tarfile.open(tarball) as tar:
                try:
                    tar.extractall(tmp, filter='tar')
                except TypeError:   # a Python without extraction filters
                    tar.extractall(tmp)
        except (OSError, tarfile.TarError) as err:
            raise SetupError(f'{tarball}: not a readable Spack tarball ({err})') from None
        tops = [p for p in pathlib.Path(tmp).iterdir()]
        if len(tops) != 1 or not (tops[0] / 'bin' / 'spack').exists():
            raise SetupError(f'{tarball}: expected one top directory with bin/spack, '
                             f'found {sorted(p.name for p in tops)}')
        os.replace(tops[0], directory)
    return str(directory / 'bin' / 'spack')


def spack_python(directory: pathlib.Path) -> pathlib.Path:
    """The interpreter Spack runs with: a virtualenv beside Spack holding clingo."""
    return directory.with_name(directory.name + '-python') / 'bin' / 'python'


def spack_env_vars(directory: pathlib.Path | None = None) -> dict[str, str]:
    """``SPACK_PYTHON`` for the clingo virtualenv when there is one and none is set."""
    if os.environ.get('SPACK_PYTHON'):
        return {}
    python = spack_python(directory or spack_dir())
    return {'SPACK_PYTHON': str(python)} if python.exists() else {}


def ensure_clingo(directory: pathlib.Path) -> None:
    """A virtualenv with clingo from PyPI beside Spack, unless SPACK_PYTHON names one."""
    if os.environ.get('SPACK_PYTHON'):
        return
    python = spack_python(directory)
    if python.exists() and subprocess.run([python, '-c', 'import clingo'],
                                          capture_output=True).returncode == 0:
        return
    log(f'clingo for Spack (from PyPI) into {python.parents[1]}')
    steps = [[sys.executable, '-m', 'venv', str(python.parents[1])],
             [str(python), '-m', 'pip', 'install', '-q', 'clingo']]
    for step in steps:
        if subprocess.run(step).returncode:
            raise SetupError(f'{" ".join(step)} failed: Spack cannot concretize offline '
                             'without clingo (set SPACK_PYTHON to a Python that has it)')


def network_reaches(url: str) -> bool:
    try:
        return subprocess.run(['git', 'ls-remote', '--exit-code', url, 'HEAD'],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def install_command(site: str, mirrors: list[str]) -> list[str]:
    """``spack-env/install``, from the site's reference lock when it has one."""
    cmd = [sys.executable, str(INSTALL), '--site', site]
    lock = REPO / 'spack-env' / 'locks' / f'{site}.lock'
    if lock.exists():
        cmd += ['--lock', str(lock)]
    for mirror in mirrors:
        cmd += ['--mirror', str(pathlib.Path(mirror).resolve()) if '://' not in mirror
                else mirror]
    return cmd


def setup(directory: pathlib.Path, tarball: pathlib.Path | None, mirrors: list[str]) -> str:
    """Spack, clingo, the environment; returns what was done. Raises SetupError."""
    spack = find_spack(directory)
    if spack is None and tarball is not None:
        log(f'unpacking {tarball} into {directory}')
        spack = unpack_spack(tarball, directory)
    if spack is None and not network_reaches(SPACK_GIT):
        raise SetupError(f'no Spack ($SPACK_ROOT unset, none on PATH or in {directory}, '
                         f'no --spack-tarball) and {SPACK_GIT} cannot be reached')
    ensure_clingo(directory)
    site = os.environ.get('H5REGRESS_SITE') or DEFAULT_SITE
    cmd = install_command(site, mirrors)
    env = {**os.environ, **spack_env_vars(directory), 'H5REGRESS_SPACK_DIR': str(directory)}
    log('$ ' + ' '.join(cmd))
    start = time.monotonic()
    if subprocess.run(cmd, env=env).returncode:
        raise SetupError('spack-env/install failed (its output is above)')
    return f'Spack environment installed in {time.monotonic() - start:.0f} s ' \
           f'(manifest: spack-env/manifest.json)'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='python -m h5regress.spacksetup', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--spack-dir', type=pathlib.Path, default=spack_dir())
    ap.add_argument('--spack-tarball', type=pathlib.Path)
    ap.add_argument('--mirror', action='append', default=[])
    ap.add_argument('--required', action='store_true',
                    help='a failure exits 1 (default: say what was skipped, exit 0)')
    args = ap.parse_args(argv)
    try:
        log(setup(args.spack_dir, args.spack_tarball, args.mirror))
    except SetupError as err:
        if args.required:
            print(f'ci/setup: error: {err}', file=sys.stderr)
            return 1
        log('warning: ' + SKIPPED.format(why=err))
    return 0


if __name__ == '__main__':
    sys.exit(main())
