"""Plain ``reframe`` of the project's venv takes the project's configuration (issue 16):
ReFrame 4 reads only RFM_CONFIG_FILES, RFM_CONFIG_PATH and -C, and without them runs
on its builtin ``generic`` system (no perflogs of ours, results database off, checks
concurrent). ci/setup leaves a .pth line in the venv that sets RFM_CONFIG_FILES when
it is unset."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reframe_run import REPO

REFRAME = Path(sys.executable).with_name('reframe')


def show(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    out = subprocess.run([str(REFRAME), *args], cwd=REPO, env={**env, **(env_extra or {})},
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or out.stderr


@pytest.mark.skipif(not REFRAME.exists(), reason='no reframe beside this Python (ci/setup)')
def test_plain_reframe_uses_the_project_configuration():
    assert f'"{REPO / "reframe" / "checks"}"' in show('--show-config=general/0/check_search_path')
    assert show('--show-config=systems/0/name') != '"generic"'


@pytest.mark.skipif(not REFRAME.exists(), reason='no reframe beside this Python (ci/setup)')
def test_a_configuration_of_the_users_own_wins(tmp_path):
    mine = tmp_path / 'mine.py'
    mine.write_text("site_configuration = {'systems': [{'name': 'mine', 'hostnames': ['.*'], "
                    "'partitions': [{'name': 'p', 'scheduler': 'local', 'launcher': 'local', "
                    "'environs': ['builtin']}]}]}\n")
    assert show('--show-config=systems/0/name',
                env_extra={'RFM_CONFIG_FILES': str(mine)}) == '"mine"'
    assert show('-C', str(mine), '--show-config=systems/0/name') == '"mine"'
