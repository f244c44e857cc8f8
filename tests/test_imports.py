"""The imports between h5regress's modules: acyclic, and the gate's at module level.

Read with ``ast`` (nothing is imported): an import inside a function counts
too, so a cycle cannot hide behind one.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / 'h5regress'
#: modules whose imports of h5regress are all at module level
TOP_LEVEL_ONLY = ('gate', 'refs', 'report', 'history', 'stats', 'gateconfig', 'cmdline',
                  'gate.records', 'gate.modes', 'gate.comparing', 'gate.verdicts', 'gate.night',
                  'gate.cli', 'stats.core', 'stats.sequential')


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        out['.'.join(parts)] = path
    return out


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The h5regress module an imported name is (or is in)."""
    while name and name not in known:
        name = name.rpartition('.')[0]
    return name or None


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool]]:
    """(imported h5regress module, whether at module level) of one module."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    top = set(map(id, tree.body))
    package = module if path.name == '__init__.py' else module.rpartition('.')[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                anchor = package.split('.')[:len(package.split('.')) - node.level + 1]
                base = '.'.join(anchor + ([base] if base else []))
            names = [f'{base}.{a.name}' for a in node.names]
        else:
            continue
        for name in names:
            target = _target(name, known)
            if target and target != module and target != 'h5regress':
                out.append((target, id(node) in top))
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: {t for t, _ in imports(m, p, known)} for m, p in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_checker_sees_a_cycle_and_nested_imports(tmp_path):
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b'}, 'b': set(), 'c': {'a', 'b'}}) is None
    (tmp_path / 'a.py').write_text('from h5regress import c\n'
                                   'def f():\n    from h5regress import b as b_mod\n')
    known = {f'h5regress.{m}': tmp_path / f'{m}.py' for m in 'abc'}
    assert sorted(imports('h5regress.a', tmp_path / 'a.py', known)) == [
        ('h5regress.b', False), ('h5regress.c', True)]


def test_no_import_cycle_in_h5regress():
    edges = graph()
    assert {'h5regress.gate', 'h5regress.refs', 'h5regress.report'} <= set(edges)
    assert find_cycle(edges) is None, ' -> '.join(find_cycle(edges))


def nested_imports(names) -> list[tuple[str, str]]:
    """(module, imported h5regress module) of the imports inside functions of ``names``."""
    known = modules()
    return [(m, t) for m in names
            for t, at_top in imports(f'h5regress.{m}', known[f'h5regress.{m}'], known)
            if not at_top]


def test_the_gate_modules_import_at_module_level():
    assert nested_imports(TOP_LEVEL_ONLY) == []


def test_gate_refs_report_layering():
    edges = graph()
    for low in ('h5regress.refs', 'h5regress.report', 'h5regress.gateconfig',
                'h5regress.cmdline'):
        assert 'h5regress.gate' not in edges[low]
    assert 'h5regress.report' not in edges['h5regress.refs']


#: the operations layer's modules whose imports of h5regress are all at module level
OPERATIONS = ('nightly', 'nightprocs', 'nightrun', 'standins', 'bisect', 'bisectbuild',
              'bisectsearch', 'bisectruns', 'darshan', 'cmdline')


def test_the_operations_modules_import_at_module_level():
    assert nested_imports(OPERATIONS) == []


def test_the_nightly_calls_the_bisect_and_not_the_reverse():
    """The nightly starts the bisect as a call; the bisect's steps take the nightly's
    gate look as a callable, so nothing below the nightly imports it (issue 26)."""
    edges = graph()
    below = ('bisectbuild', 'bisectsearch', 'bisectruns', 'nightrun', 'nightprocs',
             'standins')
    assert 'h5regress.bisectruns' in edges['h5regress.nightly']
    assert [m for m in below if 'h5regress.nightly' in edges[f'h5regress.{m}']] == []
