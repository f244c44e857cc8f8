"""The regression corpus (``regressions/``, issue 27): one YAML file per real HDF5
performance regression, loaded into :class:`Case` records and checked for the keys
every case must have. ``regressions/README.md`` describes the schema.

Parsing is a pure function (:func:`parse_case`: text and its file name in, a case
out); :func:`load_case` and :func:`load_corpus` read files. Every error names the
file and the key.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: keys every case file has
REQUIRED = ('id', 'title', 'code_path_family', 'hdf5_issue', 'pr', 'regressing_commit',
            'fix_commit', 'api_calls', 'code_path', 'conditions', 'rows_expected',
            'size_reported', 'sources', 'evidence', 'status')
#: the code-path families of the corpus (issue 27's list)
FAMILIES = ('conversion', 'selection-io-drivers', 'metadata-cache-flush',
            'chunk-cache-filters', 'collective-metadata', 'vds', 'objects-free-space',
            'file-create-open', 'hyperslab')
STATUSES = ('unreplayed', 'bisect incomplete', 'replayed')
#: the ``rows_expected`` entry for "no row of the suite fits today"
NO_ROW = 'none'
SHA = re.compile(r'[0-9a-f]{40}')


class CorpusError(ValueError):
    """A case file that cannot be read or lacks what a case needs (file and key named)."""


@dataclass(frozen=True)
class Commit:
    """A commit and its first parent (``regressing_commit``/``fix_commit`` with ``sha``)."""
    sha: str
    first_parent: str


@dataclass(frozen=True)
class CommitRange:
    """The narrowest known range: ``good`` is not slow, ``bad`` is."""
    good: str
    bad: str


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    family: str
    status: str
    regressing: Commit | CommitRange | None
    fix: Commit | None
    rows: tuple[str, ...]
    source_urls: tuple[str, ...]
    path: str
    data: dict[str, Any]


def _commit(value: Any, where: str) -> Commit | CommitRange | None:
    """``{sha, first_parent}``, ``{range: {good, bad}}`` or a mapping with only
    ``unverified`` (no commit known); shas are full (40 hex digits)."""
    if not isinstance(value, dict):
        raise CorpusError(f'{where}: a mapping (sha/first_parent, range or unverified)')
    if 'range' in value:
        rng = value['range']
        shas = [_sha(rng, k, f'{where}.range') for k in ('good', 'bad')] \
            if isinstance(rng, dict) else None
        if shas is None:
            raise CorpusError(f'{where}.range: a mapping with good and bad')
        return CommitRange(*shas)
    if 'sha' in value:
        return Commit(_sha(value, 'sha', where), _sha(value, 'first_parent', where))
    if 'unverified' in value:
        return None
    raise CorpusError(f'{where}: needs sha and first_parent, range, or unverified')


def _sha(mapping: dict, key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not SHA.fullmatch(value):
        raise CorpusError(f'{where}.{key}: not a full commit sha (40 hex digits): {value!r}')
    return value


def _listed(value: Any, where: str, key: str, valid, need: str) -> tuple[str, ...]:
    """The ``key`` of each entry of a non-empty list of mappings, each checked by ``valid``."""
    if not isinstance(value, list) or not value:
        raise CorpusError(f'{where}: a non-empty list of {need}')
    out = []
    for i, entry in enumerate(value):
        item = entry.get(key) if isinstance(entry, dict) else None
        if not valid(item, entry):
            raise CorpusError(f'{where}[{i}].{key}: {need}, not {item!r}')
        out.append(item)
    return tuple(out)


def _rows(value: Any, where: str) -> tuple[str, ...]:
    return _listed(value, where, 'row', lambda row, entry: isinstance(row, str) and
                   isinstance(entry.get('why'), str), f'{{row, why}} (a row name or {NO_ROW!r})')


def _urls(value: Any, where: str) -> tuple[str, ...]:
    return _listed(value, where, 'url', lambda url, _: isinstance(url, str) and
                   url.startswith('https://'), '{url, fact} with an https URL')


def parse_case(text: str, name: str) -> Case:
    """One case from its file's text; ``name`` (the file) is in every error."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CorpusError(f'{name}: not valid YAML: {err}') from None
    if not isinstance(data, dict):
        raise CorpusError(f'{name}: a case is a mapping of keys')
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CorpusError(f'{name}: missing key(s) {", ".join(missing)}')
    for key, allowed in (('code_path_family', FAMILIES), ('status', STATUSES)):
        if data[key] not in allowed:
            raise CorpusError(f'{name}: {key}: {data[key]!r} is not one of {", ".join(allowed)}')
    if f'{data["id"]}.yaml' != Path(name).name:
        raise CorpusError(f'{name}: id: {data["id"]!r} is not the file name without .yaml')
    fix = data['fix_commit']
    fixed = None if fix is None else _commit(fix, f'{name}: fix_commit')
    if isinstance(fixed, CommitRange):
        raise CorpusError(f'{name}: fix_commit: a commit (sha, first_parent), not a range')
    return Case(id=data['id'], title=str(data['title']), family=data['code_path_family'],
                status=data['status'],
                regressing=_commit(data['regressing_commit'], f'{name}: regressing_commit'),
                fix=fixed, rows=_rows(data['rows_expected'], f'{name}: rows_expected'),
                source_urls=_urls(data['sources'], f'{name}: sources'), path=name, data=data)


def load_case(path: str | os.PathLike) -> Case:
    try:
        return parse_case(Path(path).read_text(encoding='utf-8'), str(path))
    except OSError as err:
        raise CorpusError(f'{path}: cannot read: {err}') from None


def load_corpus(directory: str | os.PathLike) -> list[Case]:
    """Every ``*.yaml`` case of a directory, by file name; ids are unique."""
    cases = [load_case(p) for p in sorted(Path(directory).glob('*.yaml'))]
    if not cases:
        raise CorpusError(f'{directory}: no case files (*.yaml)')
    return cases
