"""The regression corpus (regressions/, h5regress/corpus.py): every case file loads, has
the keys a case needs, full shas, a public source, and rows the h5paths check has."""

from __future__ import annotations

import pytest

from h5regress import corpus
from reframe_run import REPO
from test_h5paths_check import check_module

CORPUS = REPO / 'regressions'


def h5paths_row_names() -> set[str]:
    module = check_module()
    return {module.row_name(row) for row in module.rows()}


def test_every_case_loads_with_sources_and_known_rows():
    cases = corpus.load_corpus(CORPUS)
    assert len(cases) >= 12
    known = h5paths_row_names() | {corpus.NO_ROW}
    for case in cases:
        assert set(case.rows) <= known, (case.path, set(case.rows) - known)
        assert case.source_urls, case.path
        commits = [c for c in (case.regressing, case.fix) if c is not None]
        for commit in commits:
            for sha in vars(commit).values():
                assert corpus.SHA.fullmatch(sha), (case.path, sha)


def test_the_corpus_spans_the_code_path_families():
    families = {case.family for case in corpus.load_corpus(CORPUS)}
    assert families == set(corpus.FAMILIES)


GOOD = '''id: x
title: t
code_path_family: conversion
hdf5_issue: null
pr: null
regressing_commit: {range: {good: %s, bad: %s}}
fix_commit: null
api_calls: [H5Dread]
code_path: []
conditions: {}
rows_expected: [{row: none, why: w}]
size_reported: s
sources: [{url: 'https://github.com/HDFGroup/hdf5/issues/1', fact: f}]
evidence: e
status: unreplayed
''' % ('a' * 40, 'b' * 40)


def test_a_good_case_parses():
    case = corpus.parse_case(GOOD, 'regressions/x.yaml')
    assert case.regressing == corpus.CommitRange('a' * 40, 'b' * 40)
    assert case.rows == ('none',) and case.fix is None


@pytest.mark.parametrize('change, message', [
    (('status: unreplayed', 'status: done'), "status: 'done' is not one of"),
    (('evidence: e\n', ''), 'missing key(s) evidence'),
    (("good: " + 'a' * 40, 'good: abc123'), "regressing_commit.range.good: not a full"),
    (("url: 'https://", "url: 'http://"), 'sources[0].url: {url, fact} with an https URL'),
    (('sources: [{url', 'sources: [{link'), 'sources[0].url'),
    (('rows_expected: [{row: none, why: w}]', 'rows_expected: []'), 'rows_expected: a non-empty list'),
    (('fix_commit: null', 'fix_commit: {sha: abc}'), 'fix_commit.sha: not a full'),
    (('id: x', 'id: y'), "id: 'y' is not the file name"),
])
def test_errors_name_the_file_and_key(change, message):
    with pytest.raises(corpus.CorpusError) as err:
        corpus.parse_case(GOOD.replace(*change), 'regressions/x.yaml')
    assert str(err.value).startswith('regressions/x.yaml: ')
    assert message in str(err.value)


def test_unreadable_and_empty(tmp_path):
    with pytest.raises(corpus.CorpusError, match='no case files'):
        corpus.load_corpus(tmp_path)
    (tmp_path / 'x.yaml').write_text('id: [unclosed\n')
    with pytest.raises(corpus.CorpusError, match=r'x\.yaml: not valid YAML'):
        corpus.load_corpus(tmp_path)
