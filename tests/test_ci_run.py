""".ci/run, the CI entry point, with stub `ci/setup` and `ci/test`: its exit code is the
tests' verdict and nothing else. Stop 35's CI passed every test and still exited 2,
because the EXIT trap's `kill` of no PIDs failed under `set -e`."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def checkout_with_stub_tests(root: Path, test_exit: int) -> Path:
    """A copy of .ci/run in `root/project`, whose ci/setup succeeds and whose ci/test
    exits `test_exit`; no ../shared beside it, so .ci/run takes its no-bundle branch."""
    project = root / 'project'
    (project / '.ci').mkdir(parents=True)
    (project / 'ci').mkdir()
    shutil.copy(REPO / '.ci' / 'run', project / '.ci' / 'run')
    for name, body in (('setup', 'exit 0'), ('test', f'exit {test_exit}')):
        stub = project / 'ci' / name
        stub.write_text(f'#!/usr/bin/env bash\n{body}\n')
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return project


@pytest.mark.parametrize('test_exit, expected', [(0, 0), (1, 1)])
def test_ci_run_exits_with_the_tests_verdict(tmp_path, test_exit, expected):
    project = checkout_with_stub_tests(tmp_path, test_exit)
    done = subprocess.run(['bash', str(project / '.ci' / 'run')], capture_output=True,
                          text=True, timeout=60, env={**os.environ, 'CI': 'true'})
    assert done.returncode == expected, done.stdout + done.stderr
