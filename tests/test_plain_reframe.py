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


@pytest.mark.parametrize('system, decay', [
    ('local', 0.0), ('ci-slurm:alloc', 0.0), ('example-lustre:alloc', 0.0),
    ('ci-slurm:slurm-srun', 0.1), ('example-lustre:compute', 0.1)])
def test_local_jobs_are_polled_at_a_constant_rate(system, decay):
    """Issue 25: ReFrame's poll rate decays from 10 Hz, so a short local job was seen up
    to half a second after it ended, and a night's side runs 29 of them. Local
    schedulers keep polling at 10 Hz; sbatch partitions keep ReFrame's decay (each poll
    is a squeue or sacct call). Fails on the old code: yes (0.1 everywhere)."""
    from reframe.core import config
    site = config.load_config(str(REPO / 'reframe' / 'config' / 'settings.py'))
    site.select_subconfig(system)
    assert site.get('general/0/poll_rate_decay') == decay
    assert site.get('general/0/check_search_path') == [str(REPO / 'reframe' / 'checks')]
