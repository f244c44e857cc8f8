"""The README's quick start: at the top, short, and its commands run."""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TERMS = ('A/A', 'ABBA', 'canary', 'stand-in', 'margin', 'pair', 'look', 'sensitivity')


def quickstart() -> str:
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    assert text.startswith('<!-- quickstart -->\n')
    return text[:text.index('<!-- /quickstart -->')]


def commands() -> list[str]:
    """The shell block's commands, each under its '# N.' comment."""
    block = quickstart().split('```sh\n', 1)[1].split('```', 1)[0]
    parts = re.split(r'^# \d\. .*\n', block, flags=re.M)
    return [p.strip() for p in parts if p.strip()]


def test_quickstart_is_short_with_five_commands_a_screenshot_and_the_glossary():
    qs = quickstart()
    assert len(qs.splitlines()) <= 80
    assert len(commands()) == 5
    shot = re.search(r'!\[[^]]*\]\(([^)]+)\)', qs).group(1)
    assert (REPO / shot).is_file()
    glossary = (REPO / 'docs' / 'glossary.md').read_text(encoding='utf-8')
    for term in TERMS:
        assert f'**{term}' in glossary, term
    assert 'docs/glossary.md' in qs


def _run(command: str, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, 'PYTHONPATH': str(REPO)}
    return subprocess.run(['bash', '-euo', 'pipefail', '-c', command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_quickstart_bisect_runs(tmp_path):
    """Command 5 (no ReFrame: simulated noise) in a fresh directory."""
    (tmp_path / '.venv').symlink_to(REPO / '.venv')
    proc = _run(commands()[4], tmp_path, 600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert 'first bad commit' in proc.stdout and 'slowdown 0.1' in proc.stdout


#: each command's exit codes: the stand-in night (3) ends with its verdict's code, 1
#: (FAIL) when it finds the injected slowdown, or 2 or 5 when the pairs do not show it
EXIT_CODES = [(0,), (0,), (0, 1, 2, 5), (0,), (0,)]
#: options appended to a command on the clone (later options win in both commands'
#: parsers): the test proves that the README's commands run and chain into the report,
#: whatever the sizes and the pair count, so IOR runs small blocks and the night 3 pairs
#: (a 10-pair stand-in night runs in test_nightly.py)
SHORTER = {0: ' -S ior_check.block_size=8m -S ior_check.transfer_size=1m',
           2: ' --pairs 3 --max-pairs 3'}


@pytest.mark.slow
def test_quickstart_runs_on_a_set_up_clone(tmp_path):
    """Commands 1-4, in order, from the clone's root (real ReFrame runs); qs-* removed
    after. Command 5 needs nothing of them: test_quickstart_bisect_runs runs it."""
    made = []
    try:
        for index, (command, codes) in enumerate(zip(commands()[:4], EXIT_CODES)):
            before = set(REPO.glob('qs-*'))
            proc = _run(command + SHORTER.get(index, ''), REPO, 3600)
            made += sorted(set(REPO.glob('qs-*')) - before)
            assert proc.returncode in codes, (command, proc.returncode, proc.stdout[-2000:],
                                              proc.stderr[-2000:])
        assert (REPO / 'qs-report' / 'report.html').is_file()
        assert (REPO / 'qs-report' / 'summary.md').is_file()
    finally:
        for path in made:
            subprocess.run(['rm', '-rf', str(path)], check=False)
