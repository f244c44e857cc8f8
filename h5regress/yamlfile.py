"""The one loader of the project's YAML data files: the reference files
(``reframe/config/references/*.yaml``), ``ci/gate.yaml`` and a site's gate
config, ``reframe/config/presets.yaml``.

``yaml.safe_load`` alone lets through what these files must not hold: a byte
that is not UTF-8 (a traceback, which the commands' callers read as a FAIL),
a key given twice in one mapping (the last silently wins: a floor of 300 MiB/s
became 1 MiB/s), and aliases that expand without bound (a "billion laughs"
document of a few hundred bytes). Each is a :class:`YamlFileError` (or the
caller's error class) naming the file and the line. Anchors and aliases stay
allowed (the reference files share one class's entries with its build twin),
up to :data:`MAX_NODES` nodes once every alias is expanded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

#: a data file larger than this is refused before it is parsed
MAX_BYTES = 8 * 1024 * 1024
#: nodes of a document with every alias expanded (what any reader that walks it visits)
MAX_NODES = 1_000_000


class YamlFileError(ValueError):
    """A data file is unreadable or not the YAML it should be; names the file and line."""


class _Problem(Exception):
    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message, self.mark = message, mark


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
                seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:        # an unhashable key: the constructor says so
                continue
            if first is not None:
                raise _Problem(f'duplicate key {key!r} (first given at line {first}; '
                               f'a key appears once in a mapping)', key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _expanded_nodes(root: yaml.Node) -> int:
    """Nodes of the document with aliases expanded, at most ``MAX_NODES + 1`` (an alias
    is its anchor's node again: a memo by identity counts it without expanding it; a
    node that contains itself counts as too many)."""
    weight: dict[int, int] = {}
    pending: set[int] = set()
    stack = [(root, False)]
    while stack:                  # children before their parents, without recursion
        node, children_done = stack.pop()
        if children_done:
            total = 1 + sum(weight.get(id(c), MAX_NODES + 1) for c in _children(node))
            weight[id(node)] = min(total, MAX_NODES + 1)
        elif id(node) not in weight and id(node) not in pending:
            pending.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))
    return weight[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode('utf-8')
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b'\n') + 1
        column = err.start - (raw.rfind(b'\n', 0, err.start) + 1) + 1
        raise YamlFileError(f'{path}: line {line}, column {column} (byte {err.start}): '
                            f'byte 0x{raw[err.start]:02x} is not UTF-8 (the file must be '
                            f'UTF-8 text)') from None


def _parse(text: str, path: Path) -> Any:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_nodes(node) > MAX_NODES:
            raise YamlFileError(f'{path}: more than {MAX_NODES} nodes once its aliases are '
                                f'expanded (aliases nested into a "YAML bomb", or an alias inside its own anchor?)')
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(path: str | os.PathLike, error: type[Exception] = YamlFileError) -> Any:
    """The document of one YAML data file; ``error`` (a message naming the file, and
    the line where there is one) when it cannot be read or is not acceptable."""
    path = Path(path)
    try:
        with open(path, 'rb') as fp:
            raw = fp.read(MAX_BYTES + 1)
    except OSError as err:
        raise error(f'{path}: cannot read: {err.strerror or err}') from None
    try:
        if len(raw) > MAX_BYTES:
            raise YamlFileError(f'{path}: larger than {MAX_BYTES} bytes: not a data file '
                                f'of this project')
        return _parse(_decode(raw, path), path)
    except YamlFileError as err:
        raise error(str(err)) from None
    except _Problem as err:
        raise error(f'{path}: line {err.mark.line + 1}: {err.message}') from None
    except RecursionError:
        raise error(f'{path}: nested too deeply') from None
    except yaml.YAMLError as err:
        raise error(f'{path}: not valid YAML{_where(err)}: '
                    f'{getattr(err, "problem", None) or err}') from None


def _where(err: yaml.YAMLError) -> str:
    mark = getattr(err, 'problem_mark', None)
    if mark is not None:
        return f' (line {mark.line + 1}, column {mark.column + 1})'
    if isinstance(err, yaml.reader.ReaderError):
        return f' (character {err.position})'
    return ''
