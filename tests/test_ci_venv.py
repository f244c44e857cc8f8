"""ci/venv, the venv part of ci/setup (issue 31, item 9): a venv whose pip does not run
(ci/setup interrupted during ensurepip) is made again, saying so; a working one is kept.
Run against a venv in a temporary directory, never the checkout's .venv."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def ci_venv(venv: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / 'ci' / 'venv'), str(venv)], capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, 'PYTHON': sys._base_executable})


def pip_runs(venv: Path) -> bool:
    return subprocess.run([str(venv / 'bin' / 'python'), '-m', 'pip', '--version'],
                          capture_output=True).returncode == 0


def test_a_venv_without_pip_is_made_again(tmp_path):
    venv = tmp_path / '.venv'
    subprocess.run([sys._base_executable, '-m', 'venv', '--without-pip', str(venv)],
                   check=True)
    assert not pip_runs(venv)               # what an interrupted ensurepip leaves
    out = ci_venv(venv)
    assert out.returncode == 0, out.stderr
    assert f'{venv} has no working python or pip' in out.stderr
    assert 'making it again' in out.stderr
    assert pip_runs(venv)
    marker = venv / 'kept'
    marker.write_text('')
    out = ci_venv(venv)                      # a working venv is kept as it is
    assert out.returncode == 0 and out.stderr == '' and marker.exists()


def test_a_venv_whose_python_is_gone_is_made_again(tmp_path):
    venv = tmp_path / '.venv'
    (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'python').symlink_to(tmp_path / 'no-such-python')
    out = ci_venv(venv)
    assert out.returncode == 0, out.stderr
    assert 'making it again' in out.stderr and pip_runs(venv)
