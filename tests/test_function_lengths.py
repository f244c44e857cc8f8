"""No function of the gate's modules is longer than 80 lines (benchmarks/function_lengths.py)."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'benchmarks'))

from function_lengths import function_lengths  # noqa: E402

LIMIT = 80


def test_lengths_are_counted_def_to_last_line():
    src = 'def f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n'
    assert function_lengths(src) == [('f', 4), ('C.m', 2)]


@pytest.mark.parametrize('module', ['gate', 'refs', 'history', 'stats', 'gateconfig', 'cmdline']
                         + [f'report/{p.stem}' for p in (REPO / 'h5regress' / 'report').glob('*.py')])
def test_no_function_longer_than_the_limit(module):
    lengths = function_lengths((REPO / 'h5regress' / f'{module}.py').read_text())
    assert [(name, n) for name, n in lengths if n > LIMIT] == []


#: the operations layer (nightly, bisect, study): modules of at most 600 lines,
#: functions of at most 60 (issue 26)
OPERATIONS = ['nightly', 'nightprocs', 'nightrun', 'standins', 'bisect', 'bisectbuild',
              'bisectsearch', 'bisectruns', 'study', 'darshan', 'cmdline', 'cli']


@pytest.mark.parametrize('module', OPERATIONS)
def test_operations_modules_and_functions_are_short(module):
    src = (REPO / 'h5regress' / f'{module}.py').read_text()
    assert len(src.splitlines()) <= 600
    assert [(name, n) for name, n in function_lengths(src) if n > 60] == []
