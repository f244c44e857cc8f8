"""Run ReFrame on this repository's checks from the tests, into a temporary directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / 'reframe' / 'config' / 'settings.py'
#: the project's own fixtures: real outputs of the tools, recorded on a machine running
#: the suite (tests/fixtures/record-tools.sh and the other generators there)
OWN_FIXTURES = REPO / 'tests' / 'fixtures'
#: more real outputs, shared beside the checkout when present: an extra, never required
FIXTURES = REPO.parent / 'shared' / 'fixtures'
#: ReFrame options of a real run beside the fast tests (`.ci/run`'s `beside` sessions):
#: on two cores shared with them a rate is noise (h5bench's collective write fell from
#: hundreds of MiB/s to 4), so a missed reference is printed, not a failure (ReFrame's
#: `strict_check`); sanity and every other phase still fail the run.
UNDER_LOAD = ['-S', 'strict_check=0']
#: ReFrame's retry of a failed case, for the checks run across the test SLURM's two
#: "nodes", which are one host: a rank of such a step has, rarely, died at its start (a
#: SIGSEGV in MPI_Init, then a peer's TCP connect to it refused): in a CI rehearsal of
#: 594350e and in the CI run of a045a25, and in none of 70 runs of the same two FLASH-IO
#: steps in a loop (40 of them beside two busy processes). An artefact of the harness,
#: not of a site; a defect of the suite fails the retry too.
ONE_HOST_TWO_NODES_RETRY = ['--max-retries', '1']


def reframe_bin() -> str:
    exe = Path(sys.executable).with_name('reframe')
    return str(exe) if exe.exists() else (shutil.which('reframe') or 'reframe')


def reframe_env(workdir: Path, env: dict | None = None) -> dict:
    """This process's environment, with the repository's config and perflogs in ``workdir``.

    No Spack manifest unless ``env`` names one: a Spack environment installed in this
    checkout must not change what the tests run. Likewise a missing tool is skipped
    unless ``env`` sets ``H5REGRESS_REQUIRE_TOOLS``.
    """
    return {**os.environ, 'RFM_CONFIG_FILES': str(SETTINGS),
            'H5REGRESS_PERFLOG_DIR': str(workdir / 'perflogs'),
            'H5REGRESS_MANIFEST': 'none',
            'H5REGRESS_REQUIRE_TOOLS': '', **(env or {})}


def reframe_command(args: list[str], workdir: Path) -> list[str]:
    """``reframe ARGS`` with stage, output and report under ``workdir``."""
    return [reframe_bin(), '-s', str(workdir / 'stage'), '-o', str(workdir / 'output'),
            '--report-file', str(workdir / 'report.json')] + args


def run_reframe(args: list[str], workdir: Path, env: dict | None = None,
                timeout: int = 900) -> subprocess.CompletedProcess:
    """``reframe -C settings.py ARGS`` with stage, output and perflogs under ``workdir``."""
    return subprocess.run(reframe_command(args, workdir), cwd=REPO,
                          env=reframe_env(workdir, env), capture_output=True, text=True,
                          timeout=timeout)


def path_with_tools(*names: str, how: str = '') -> str:
    """A ``PATH`` on which every tool of ``names`` is found: this one, else this one with
    the directories of the Spack environment's binaries (its first HDF5 build) ahead.

    Without either the test is skipped, saying how to get the tools; where the Spack
    environment must be there (``$H5REGRESS_EXPECT_SPACK``, set by ``.ci/run`` with the
    offline bundle) it fails instead.
    """
    from h5regress import manifest

    path = os.environ.get('PATH', '/usr/bin:/bin')
    missing = [n for n in names if shutil.which(n, path=path) is None]
    installed = REPO / 'spack-env' / 'manifest.json'
    if missing and installed.exists():
        build = manifest.load(installed)[sorted(manifest.load(installed))[0]]
        dirs = {os.path.dirname(build.tools[n]) for n in missing if n in build.tools}
        path = ':'.join(sorted(dirs) + [path])
        missing = [n for n in names if shutil.which(n, path=path) is None]
    if missing:
        why = (f'{", ".join(missing)} neither on PATH nor in the Spack environment: '
               f'{how or "install the Spack environment (ci/setup --spack-bundle DIR)"}')
        skip_without_spack(why)
    return path


def stub_path(tmp_path: Path, *tools: str) -> dict:
    """PATH with do-nothing stand-ins for ``tools``: a dry run needs a binary to name."""
    bindir = tmp_path / 'stub-bin'
    bindir.mkdir()
    for tool in tools:
        (bindir / tool).write_text('#!/bin/sh\nexit 0\n')
        (bindir / tool).chmod(0o755)
    return {'PATH': f'{bindir}:{os.environ["PATH"]}'}


def load_check_file(name: str, module_name: str):
    """``reframe/checks/<name>`` as a module (its check classes, not run by ReFrame),
    loaded without a Spack manifest: the PATH build only, so that a Spack environment
    installed in this checkout changes nothing."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(module_name, REPO / 'reframe' / 'checks' / name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # ReFrame reads the classes' source
    saved = os.environ.get('H5REGRESS_MANIFEST')
    os.environ['H5REGRESS_MANIFEST'] = 'none'
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del os.environ['H5REGRESS_MANIFEST']
        else:
            os.environ['H5REGRESS_MANIFEST'] = saved
    return module


def night_rows_marked() -> set[tuple[str, str]]:
    """The default night as the check files declare it, ``(check, benchmark)``: every IOR
    row (``ior_check`` is tagged ``nightly`` whole), FLASH-IO's ``NIGHT_ROWS`` and the
    h5paths rows marked ``nightly`` in its table."""
    ior = load_check_file('ior.py', 'ior_check_file')
    flashio = load_check_file('flashio.py', 'flashio_check_file')
    h5paths = load_check_file('h5paths.py', 'h5paths_check_file')
    return ({('ior_check', '-'.join(row)) for row in ior.ior_check.param_space['benchmark']} |
            {('flashio_check', '-'.join(row)) for row in flashio.NIGHT_ROWS} |
            {('h5paths_check', h5paths.row_name(r)) for r in h5paths.rows() if r.nightly})


def skip_without_spack(why: str):
    """Skip the test, saying ``why``; fail it instead where the Spack environment must be
    there (``$H5REGRESS_EXPECT_SPACK``, set by ``.ci/run`` with the offline bundle)."""
    import pytest
    if os.environ.get('H5REGRESS_EXPECT_SPACK'):
        pytest.fail(f'H5REGRESS_EXPECT_SPACK is set: {why}', pytrace=False)
    pytest.skip(why)


def two_build_manifest(root: Path, tools: tuple[str, ...]) -> Path:
    """``root/manifest.json``: a Spack manifest of two HDF5 builds, hdf5-1.14.1 and
    hdf5-1.15.0, each with do-nothing ``tools`` under ``root/<version>/bin``."""
    import hashlib

    from h5regress import manifest

    def build(label: str, commit: str) -> dict:
        bindir = root / label / 'bin'
        bindir.mkdir(parents=True)
        for tool in tools:
            (bindir / tool).write_text('#!/bin/sh\n')
            (bindir / tool).chmod(0o755)
        return {'hdf5': {'version': label, 'label': label, 'commit': commit,
                         'variants': '+mpi+hl', 'hash': label, 'prefix': str(root)},
                'tools': {t: str(bindir / t) for t in tools}}

    path = root / 'manifest.json'
    manifest.write(path, {
        'schema': 1, 'generated': '2026-11-21T00:00:00Z', 'spack_version': 'test',
        'environment': str(root), 'lock_sha256': hashlib.sha256(b'').hexdigest(),
        'builds': {'hdf5-1.14.1': build('1.14.1', 'a' * 40),
                   'hdf5-1.15.0': build('1.15.0', 'b' * 40)}})
    return path
