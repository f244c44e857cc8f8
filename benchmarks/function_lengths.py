#!/usr/bin/env python3
"""Lengths of the functions of Python files, longest first (``ast``, no import).

A function's length is its ``def`` line to its last line, inclusive (nested
functions count in their parent too; decorators do not count). Methods are
named ``Class.method``, nested functions ``outer.<locals>.inner``.

    benchmarks/function_lengths.py h5regress/gate/*.py h5regress/refs.py
    benchmarks/function_lengths.py --top 1 h5regress/*.py      # longest of each file
    benchmarks/function_lengths.py --max 60 h5regress/gate/*.py # exit 1 when one is longer
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def function_lengths(source: str) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method, longest first."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out.append((name, child.end_lineno - child.lineno + 1))
                visit(child, name + '.<locals>.')
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + '.')
            else:
                visit(child, prefix)

    visit(ast.parse(source), '')
    return sorted(out, key=lambda t: (-t[1], t[0]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('files', nargs='+', type=Path)
    ap.add_argument('--top', type=int, default=0, help='only the N longest of each file')
    ap.add_argument('--max', type=int, default=0,
                    help='exit 1 when a function is longer than this')
    args = ap.parse_args(argv)
    too_long = 0
    for path in args.files:
        lengths = function_lengths(path.read_text(encoding='utf-8'))
        for name, n in lengths[:args.top or None]:
            print(f'{path}: {name}: {n}')
        too_long += sum(1 for _, n in lengths if args.max and n > args.max)
    return 1 if too_long else 0


if __name__ == '__main__':
    sys.exit(main())
