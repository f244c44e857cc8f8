#!/usr/bin/env python3
"""The figures of issue 26, measured the same way each time (run from the checkout root).

- duplicate pairs: the first line of ``duplicates --repo . --most 1`` (a command on PATH);
- h5regress lines without its parsers;
- the longest module, class and function of the files ``tests/test_function_lengths.py``
  measures;
- build ids put together or taken apart by hand outside ``h5regress/buildid.py``
  (the pattern ``tests/test_buildid.py`` refuses);
- the places a new tool joins: the tracked files, outside tests, fixtures and prose, that
  name every declared tool (lists a new tool must join), beside its own check, parser and
  references;
- the places a new h5paths row joins: the files outside the kernel that name every row;
- the modules that read raw run records themselves (a perflog, run report or JSON-lines
  parser called outside ``h5regress/runrecords.py`` and the parsers' own modules).

    benchmarks/redesign_figures.py
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / 'tests'))

from h5regress import catalog  # noqa: E402

PROSE = ('.md', '.lock', '.txt')
#: a call of a run-record parser (perflog, run report, JSON lines)
READS_RECORDS = re.compile(r'\b(perflog|runreport)\.(read|parse_text|parse_bytes)\b'
                           r'|\bread_jsonl\(')
READERS = {'perflog.py', 'runreport.py', 'record.py', 'runrecords.py'}
HAND_MADE_ID = re.compile(r'''f["']hdf5-\{|["']hdf5-["']\s*\+|(removeprefix|startswith)\(["']hdf5-["']''')


def tracked() -> list[Path]:
    out = subprocess.run(['git', 'ls-files'], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    return [REPO / f for f in out if (REPO / f).is_file()]


def names_all(text: str, names: set[str]) -> bool:
    return all(re.search(rf'(?<![\w-]){re.escape(n)}(?![\w-])', text) for n in names)


def record_readers() -> list[str]:
    """The modules of h5regress that parse raw run records themselves."""
    return sorted(str(p.relative_to(REPO)) for p in (REPO / 'h5regress').rglob('*.py')
                  if not (p.parent.name == 'h5regress' and p.name in READERS)
                  and READS_RECORDS.search(p.read_text(encoding='utf-8')))


def measured_files() -> list[Path]:
    return sorted([*(REPO / 'h5regress').rglob('*.py'), *(REPO / 'reframe' / 'checks').glob('*.py'),
                   REPO / 'spack-env' / 'install', REPO / 'ci' / 'run-suite'])


def longest() -> tuple[tuple[int, str], tuple[int, str], tuple[int, str]]:
    module, klass, function = (0, ''), (0, ''), (0, '')
    for path in measured_files():
        text = path.read_text(encoding='utf-8')
        name = str(path.relative_to(REPO))
        module = max(module, (text.count('\n'), name))
        for node in ast.walk(ast.parse(text)):
            n = getattr(node, 'end_lineno', 0) - getattr(node, 'lineno', 0) + 1
            if isinstance(node, ast.ClassDef):
                klass = max(klass, (n, f'{name}:{node.name}'))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function = max(function, (n, f'{name}:{node.name}'))
    return module, klass, function


def central_lists(names: set[str], skip: tuple[str, ...] = ()) -> list[str]:
    """Tracked files outside tests, fixtures and prose that name every one of ``names``."""
    out = []
    for path in tracked():
        rel = str(path.relative_to(REPO))
        if rel.startswith(('tests/', 'regressions/', 'docs/', *skip)) or rel.endswith(PROSE):
            continue
        try:
            text = path.read_text(encoding='utf-8')
        except UnicodeDecodeError:
            continue
        if names_all(text, names):
            out.append(rel)
    return out


def main() -> int:
    dup = subprocess.run(['duplicates', '--repo', '.', '--most', '1', '--seconds', '120'],
                         cwd=REPO, capture_output=True, text=True).stdout.splitlines()
    print('duplicate pairs:', dup[0].split()[0] if dup else '?')
    lines = sum(p.read_text(encoding='utf-8').count('\n') for p in (REPO / 'h5regress').rglob('*.py')
                if 'parsers' not in p.parts)
    print('h5regress lines without parsers:', lines)
    for what, (n, where) in zip(('module', 'class', 'function'), longest()):
        print(f'longest {what}: {n} ({where})')
    hand = [f'{p.relative_to(REPO)}:{i}' for p in [*(REPO / 'h5regress').rglob('*.py'),
                                                    *(REPO / 'reframe' / 'checks').glob('*.py')]
            if p.name != 'buildid.py'
            for i, line in enumerate(p.read_text(encoding='utf-8').splitlines(), 1)
            if HAND_MADE_ID.search(line)]
    print('build ids made by hand:', len(hand), ' '.join(hand))
    tools = central_lists(set(catalog.BENCHMARKS))
    packaged = central_lists({b.package for b in catalog.BENCHMARKS.values() if b.package})
    print(f'lists of every tool: {len(tools)} ({" ".join(tools)})')
    print(f'lists of every Spack-installed tool: {len(packaged)} ({" ".join(packaged)})')
    from test_h5paths_check import check_module
    rows = {check_module().row_name(r) for r in check_module().rows()}
    row_lists = central_lists(rows, skip=('kernels/',))
    print(f'lists of every h5paths row: {len(row_lists)} ({" ".join(row_lists)})')
    readers = record_readers()
    print(f'modules reading raw run records beside runrecords: {len(readers)} '
          f'({" ".join(readers)})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
