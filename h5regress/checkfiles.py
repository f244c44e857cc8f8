"""The files of ``reframe/checks`` a ReFrame run loads, in a process that repeats runs.

ReFrame makes every test of every file it loads (each row, each HDF5 build of the
manifest) before its options choose among them, and making a test is not cheap
(ReFrame's variable injection, each test's reference file): ``-c reframe/checks`` costs
seconds of CPU a run, most of them for tests the run does not select. The nightly's
pairs and a study's repetitions repeat one selection many times. The first run of a
selection loads the whole directory; its report names the file each of its tests was
made from (``filename``, skipped tests included); the next runs of the same selection
in the same environment load those files only, and make the same tests. A test made
from a class of another directory (registered by a check file) keeps the whole one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from h5regress.gateconfig import CHECKS_DIR
from h5regress.runreport import testcases

#: options whose value is a run's own (its stage, output and report), not its selection
PER_RUN_OPTIONS = ('-s', '--stage', '-o', '--output', '--report-file')
#: environment variables that differ between the runs of one selection
PER_RUN_ENV = ('H5REGRESS_PAIR_ID',)

_learnt: dict[tuple, tuple[str, ...]] = {}


def selection_key(cmd: Sequence, env: Mapping[str, str]) -> tuple:
    """What decides the tests a ReFrame command makes: its options but the executable,
    ``-c`` and the per-run paths, and of ``env`` the project's and ReFrame's variables
    and ``PATH`` (a tool on it stands a build check down)."""
    words, skip = [], True                   # the executable
    for word in map(str, cmd):
        if skip:
            skip = False
        elif word in ('-c', '--checkpath') or word in PER_RUN_OPTIONS:
            skip = True
        else:
            words.append(word)
    variables = sorted((k, v) for k, v in env.items()
                       if (k.startswith(('H5REGRESS_', 'RFM_')) or k == 'PATH')
                       and k not in PER_RUN_ENV)
    return tuple(words), tuple(variables)


def narrowed(cmd: Sequence, env: Mapping[str, str]) -> list:
    """``cmd`` with its ``-c reframe/checks`` replaced by the files an earlier run of the
    same selection made its tests from; unchanged before such a run."""
    files = _learnt.get(selection_key(cmd, env))
    cmd = list(cmd)
    whole = [i for i in range(len(cmd) - 1)
             if str(cmd[i]) == '-c' and Path(cmd[i + 1]).resolve() == CHECKS_DIR.resolve()]
    if not files or len(whole) != 1:
        return cmd
    at = whole[0]
    return cmd[:at] + [w for f in files for w in ('-c', f)] + cmd[at + 2:]


def learn(cmd: Sequence, env: Mapping[str, str], report: Path) -> None:
    """Remember the check files of the tests of ``report``, the report of ``cmd``."""
    files = files_of(report)
    if files:
        _learnt.setdefault(selection_key(cmd, env), files)


def files_of(report: Path) -> tuple[str, ...]:
    """The files of ``reframe/checks`` the tests of a ReFrame run report were made from;
    () if the report is unreadable, has no test, or a test (not a fixture) whose class
    is defined elsewhere."""
    try:
        cases = [(case['filename'], case.get('fixture', False))
                 for case in testcases(Path(report).read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    checks = CHECKS_DIR.resolve()
    inside = {name for name, _ in cases if Path(name).resolve().parent == checks}
    elsewhere = [name for name, fixture in cases
                 if Path(name).resolve().parent != checks and not fixture]
    return () if elsewhere or not inside else tuple(sorted(inside))
