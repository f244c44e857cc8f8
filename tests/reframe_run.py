"""Run ReFrame on this repository's checks from the tests, into a temporary directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = REPO / 'reframe' / 'config' / 'settings.py'
#: the fixtures shared by the project (outputs of real runs), beside the checkout
FIXTURES = REPO.parent / 'shared' / 'fixtures'


def reframe_bin() -> str:
    exe = Path(sys.executable).with_name('reframe')
    return str(exe) if exe.exists() else (shutil.which('reframe') or 'reframe')


def run_reframe(args: list[str], workdir: Path, env: dict | None = None,
                timeout: int = 900) -> subprocess.CompletedProcess:
    """``reframe -C settings.py ARGS`` with stage, output and perflogs under ``workdir``."""
    full_env = {**os.environ, 'RFM_CONFIG_FILES': str(SETTINGS),
                'H5REGRESS_PERFLOG_DIR': str(workdir / 'perflogs'), **(env or {})}
    cmd = [reframe_bin(), '-s', str(workdir / 'stage'), '-o', str(workdir / 'output'),
           '--report-file', str(workdir / 'report.json')] + args
    return subprocess.run(cmd, cwd=REPO, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
