"""The shape issue 26 set for every module of the package and every check file: no module
over 600 lines, no class over 200, no function over 60 (benchmarks/function_lengths.py);
spack-env/install and ci/run-suite too."""

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'benchmarks'))

from function_lengths import function_lengths  # noqa: E402

MODULE_LIMIT, CLASS_LIMIT, FUNCTION_LIMIT = 600, 200, 60
#: with the Python scripts without a .py: the Spack installer and the suite's CI runner
MODULES = sorted([*(REPO / 'h5regress').rglob('*.py'), *(REPO / 'reframe' / 'checks').glob('*.py'),
                  REPO / 'spack-env' / 'install', REPO / 'ci' / 'run-suite'])


def test_lengths_are_counted_def_to_last_line():
    src = 'def f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n'
    assert function_lengths(src) == [('f', 4), ('C.m', 2)]


def test_the_gate_and_the_statistics_are_packages_of_stages():
    assert not (REPO / 'h5regress' / 'gate.py').exists()
    assert not (REPO / 'h5regress' / 'stats.py').exists()
    assert len(list((REPO / 'h5regress' / 'gate').glob('*.py'))) >= 5


@pytest.mark.parametrize('path', MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_module_classes_and_functions_are_short(path):
    text = path.read_text(encoding='utf-8')
    assert text.count('\n') <= MODULE_LIMIT
    classes = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(text))
               if isinstance(n, ast.ClassDef)]
    assert [(name, n) for name, n in classes if n > CLASS_LIMIT] == []
    assert [(name, n) for name, n in function_lengths(text) if n > FUNCTION_LIMIT] == []
