"""No function of the gate's modules is longer than 80 lines, none of the gate's and the
statistics' stages longer than 60 or such a module over 600 (benchmarks/function_lengths.py)."""

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


@pytest.mark.parametrize('module', ['refs', 'report', 'history', 'gateconfig', 'cmdline'])
def test_no_function_longer_than_the_limit(module):
    lengths = function_lengths((REPO / 'h5regress' / f'{module}.py').read_text())
    assert [(name, n) for name, n in lengths if n > LIMIT] == []


#: the gate and the statistics, a module per stage (issue 26)
STAGE_LIMIT, MODULE_LIMIT = 60, 600
STAGE_MODULES = sorted(str(p.relative_to(REPO / 'h5regress'))
                       for package in ('gate', 'stats')
                       for p in (REPO / 'h5regress' / package).glob('*.py'))


def test_the_gate_and_the_statistics_are_packages_of_stages():
    assert not (REPO / 'h5regress' / 'gate.py').exists()
    assert not (REPO / 'h5regress' / 'stats.py').exists()
    assert len(STAGE_MODULES) >= 5


@pytest.mark.parametrize('module', STAGE_MODULES)
def test_no_stage_function_over_60_lines_or_module_over_600(module):
    text = (REPO / 'h5regress' / module).read_text()
    assert len(text.splitlines()) <= MODULE_LIMIT
    assert [(name, n) for name, n in function_lengths(text) if n > STAGE_LIMIT] == []
