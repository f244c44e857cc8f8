"""ci/setup's Spack step (h5regress.spacksetup): where Spack comes from, what is
skipped offline, and that a failure is fatal only when a bundle was asked for."""

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from h5regress import spacksetup
from reframe_run import REPO


def fake_spack_tarball(path: Path, top: str = 'spack') -> Path:
    """A tarball shaped like a Spack snapshot: one top directory with bin/spack."""
    with tarfile.open(path, 'w:gz') as tar:
        data = b'#!/bin/sh\necho 0.23.0\n'
        info = tarfile.TarInfo(f'{top}/bin/spack')
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def no_spack(monkeypatch, tmp_path):
    """No Spack anywhere, no network to clone one."""
    monkeypatch.delenv('SPACK_ROOT', raising=False)
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    monkeypatch.setattr(spacksetup, 'network_reaches', lambda url: False)
    return tmp_path / 'spack'


def test_offline_without_spack_says_what_it_skipped_and_goes_on(no_spack, capsys):
    assert spacksetup.main(['--spack-dir', str(no_spack)]) == 0
    out = capsys.readouterr().out
    assert 'the Spack environment was not installed' in out
    assert 'cannot be reached' in out and '--spack-bundle' in out
    assert not no_spack.exists()


def test_offline_without_spack_is_an_error_when_a_bundle_was_asked_for(no_spack, capsys):
    assert spacksetup.main(['--spack-dir', str(no_spack), '--required']) == 1
    assert 'ci/setup: error: no Spack' in capsys.readouterr().err


def test_a_tarball_is_unpacked_whole(tmp_path):
    spack = spacksetup.unpack_spack(fake_spack_tarball(tmp_path / 's.tar.gz'),
                                    tmp_path / 'cache' / 'spack')
    assert Path(spack) == tmp_path / 'cache' / 'spack' / 'bin' / 'spack'
    assert subprocess.run([spack], capture_output=True, text=True).stdout == '0.23.0\n'
    # nothing half-unpacked is left beside it
    assert [p.name for p in (tmp_path / 'cache').iterdir()] == ['spack']


def test_a_tarball_that_is_not_spack_is_refused_and_leaves_nothing(tmp_path):
    bad = fake_spack_tarball(tmp_path / 'bad.tar.gz', top='notspack/x')
    with pytest.raises(spacksetup.SetupError, match='bad.tar.gz: expected one top directory'):
        spacksetup.unpack_spack(bad, tmp_path / 'cache' / 'spack')
    assert list((tmp_path / 'cache').iterdir()) == []


def test_an_installed_spack_comes_first(monkeypatch, tmp_path):
    root = tmp_path / 'site-spack'
    (root / 'bin').mkdir(parents=True)
    (root / 'bin' / 'spack').write_text('#!/bin/sh\n')
    (root / 'bin' / 'spack').chmod(0o755)
    monkeypatch.setenv('SPACK_ROOT', str(root))
    assert spacksetup.find_spack(tmp_path / 'cache') == str(root / 'bin' / 'spack')


def test_the_environment_installs_from_the_sites_reference_lock(tmp_path):
    cmd = spacksetup.install_command('workstation', [str(tmp_path / 'mirror'),
                                                     'file:///srv/m'])
    assert cmd[:2] == [sys.executable, str(REPO / 'spack-env' / 'install')]
    assert cmd[cmd.index('--lock') + 1] == str(REPO / 'spack-env' / 'locks' /
                                               'workstation.lock')
    mirrors = [cmd[i + 1] for i, word in enumerate(cmd) if word == '--mirror']
    assert mirrors == [str(tmp_path / 'mirror'), 'file:///srv/m']
    # a site without a reference lock concretizes
    assert '--lock' not in spacksetup.install_command('cluster-example', [])


def test_ci_setup_refuses_a_bundle_without_a_mirror(tmp_path):
    fake_spack_tarball(tmp_path / 'spack-0.23.tar.gz')
    out = subprocess.run([str(REPO / 'ci' / 'setup'), '--no-run', '--spack-bundle',
                          str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 4      # bad input (README, "Exit codes")
    assert f'--spack-bundle {tmp_path}: no mirror/ in it' in out.stderr
