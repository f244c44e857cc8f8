"""The checks layer stays readable: no module over 600 lines, no function over 60, and
IOBenchmark's parts (its mixins and itself) at most 200 lines each."""

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'benchmarks'))

from function_lengths import function_lengths  # noqa: E402

#: the checks layer: the checks' plumbing, the records, the parsers, the check files
LAYER = sorted(
    [REPO / 'h5regress' / f'{name}.py' for name in (
        'checkbase', 'checkjob', 'checktool', 'checksanity', 'checkrecord', 'h5benchbase',
        'refs', 'reffile', 'catalog', 'record', 'perflog', 'perfloghandler')] +
    list((REPO / 'h5regress' / 'parsers').glob('*.py')) +
    list((REPO / 'reframe' / 'checks').glob('*.py')))
MIXINS = {'checkbase': 'IOBenchmark', 'checkjob': 'JobLayout', 'checktool': 'ToolResolution',
          'checksanity': 'SanityProof', 'checkrecord': 'RecordContext'}


@pytest.mark.parametrize('path', LAYER, ids=lambda p: str(p.relative_to(REPO)))
def test_module_and_functions_are_short(path):
    text = path.read_text(encoding='utf-8')
    assert text.count('\n') <= 600
    assert [(name, n) for name, n in function_lengths(text) if n > 60] == []


@pytest.mark.parametrize('module,klass', sorted(MIXINS.items()))
def test_iobenchmark_parts_are_at_most_200_lines(module, klass):
    tree = ast.parse((REPO / 'h5regress' / f'{module}.py').read_text(encoding='utf-8'))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass)
    assert node.end_lineno - node.lineno + 1 <= 200
