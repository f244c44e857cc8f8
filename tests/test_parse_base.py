"""The parsers' shared helpers (h5regress.parsers.base): the one size parser, the one
bandwidth converter, the one check of the files a run left, file names."""

from __future__ import annotations

import pytest

from h5regress.parsers.base import MIB, ExpectedFile, ParseError, basename, by_directory, \
    check_files, parse_size, to_mib_per_s


@pytest.mark.parametrize('text, expected', [
    ('4096', 4096), ('1m', MIB), ('1M', MIB), ('64M', 64 * MIB), ('1 MiB', MIB),
    ('10KiB', 10240), ('1mb', MIB), ('1MB', MIB), ('1g', 1024 ** 3), ('2t', 2 * 1024 ** 4),
    ('1p', 1024 ** 5), ('10B', 10), ('10b', 10), ('1.5K', 1536.0), ('2.5g', 2.5 * 1024 ** 3),
    (4096, 4096), (' 16m ', 16 * MIB)])
def test_parse_size_binary(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize('text', ['', 'big', '1x', '-1m', '1 m b', '1mm', 'm', '1.5.2m'])
def test_parse_size_not_a_size(text):
    assert parse_size(text) is None


def test_parse_size_whole_refuses_fractions():
    assert parse_size('1.5m', whole=True) is None and parse_size('1e3', whole=True) is None
    assert parse_size('4k', whole=True) == 4096


def test_parse_size_decimal_prefixes_without_i():
    assert parse_size('2M', decimal=True) == 2_000_000
    assert parse_size('37.9303', 'Mb', decimal=True) == pytest.approx(37.9303e6)
    assert parse_size('37.9303', 'Mi', decimal=True) == pytest.approx(37.9303 * MIB)
    assert parse_size('12.0000', 'b', decimal=True) == 12.0


def test_parse_size_number_and_unit_apart():
    assert parse_size('640.000', 'MB') == 640 * MIB
    assert parse_size('512.000', ' B') == 512.0
    assert parse_size('1', '1') is None           # the unit is no part of the number
    assert parse_size('1m', 'b') is None


def test_whole_numbers_stay_exact_integers():
    assert parse_size('12345678901234567') == 12345678901234567
    assert isinstance(parse_size('1g'), int) and isinstance(parse_size('1.0g'), float)


@pytest.mark.parametrize('value, unit, expected', [
    (1137438372, 'B/s', 1137438372 / MIB),      # fio's bw_bytes
    (828.85, 'MiB/s', 828.85),                  # IOR's bwMiB
    (1110779, 'KiB/s', 1110779 / 1024),         # fio's bw
    (1.5, 'GiB/s', 1536.0), (2.0, 'TiB/s', 2.0 * 1024 ** 2),
    ('393.198', 'MB/s', 393.198),               # h5bench: its MB is MiB
    ('512.000', ' B/s', 512 / MIB)])
def test_to_mib_per_s(value, unit, expected):
    assert to_mib_per_s(value, unit) == pytest.approx(expected)


def test_to_mib_per_s_decimal():
    assert to_mib_per_s('1.5568', 'Gb/s', decimal=True) == pytest.approx(1.5568e9 / MIB)
    assert to_mib_per_s('1.3571', 'Gi/s', decimal=True) == pytest.approx(1.3571 * 1024)


@pytest.mark.parametrize('unit', ['MiB/sec', 'MiB', 'furlongs/s', '', '1/s'])
def test_to_mib_per_s_unknown_unit(unit):
    with pytest.raises(ParseError, match='bandwidth unit'):
        to_mib_per_s(1.0, unit)
    with pytest.raises(ParseError, match='^here: unknown bandwidth unit'):
        to_mib_per_s(1.0, unit, source='here')


def test_check_files_exact_size_and_range():
    written = {'run/a.h5': 100, 'run/sub/b.h5': 50, 'c.h5': 7}
    assert check_files([ExpectedFile(('a.h5',), size=100, min_size=90, max_size=110),
                        ExpectedFile(('b.h5',), min_size=1)], written) == []
    assert check_files([ExpectedFile(('a.h5',), size=99, min_size=101),
                        ExpectedFile(('x.h5',), size=1)], written) == [
        'a.h5: 100 B on disk, 99 B reported',
        'a.h5: 100 B, expected 101 to inf B',
        'x.h5: reported but not on disk']


def test_check_files_sizes_of_several_names_add_up():
    written = {'d.json': 10, 'root.json': 5}
    exp = ExpectedFile(('d.json', 'root.json'), max_size=12, out_of_range='{name}+: {size} B')
    assert check_files([exp], written) == ['d.json+: 15 B']


def test_check_files_own_texts_and_fields():
    exp = ExpectedFile(('gone',), min_size=3, missing=None)
    assert check_files([exp], {}) == []
    exp = ExpectedFile(('f',), min_size=3, fields={'rank': 2, 'name': 'ignored'},
                       out_of_range='rank {rank}: {name} has {size} of {min_size} B',
                       missing='{name} of rank {rank} is gone')
    assert check_files([exp], {'f': 1}) == ['rank 2: f has 1 of 3 B']
    assert check_files([exp], {}) == ['f of rank 2 is gone']


def test_file_names():
    assert basename('a/b/stdout.txt') == 'stdout.txt' and basename('a\\b\\x.log') == 'x.log'
    assert by_directory({'s/1/stdout': 'x', 's/1/stderr': 'y', 'log': 'z'}) == {
        's/1': {'stdout': 'x', 'stderr': 'y'}, '': {'log': 'z'}}


@pytest.mark.parametrize('tool', ['ior', 'fio', 'mdtest'])
def test_another_tools_output_is_a_parse_error_no_output_a_failed_run(tool):
    """Text of another tool is no run of this one (ParseError, not RunFailed); an empty
    stdout is a run that failed (RunFailed: no output)."""
    from h5regress.parsers import RunFailed, parser_for
    with pytest.raises(ParseError) as err:
        parser_for(tool).parse({'stdout.txt': 'some other tool\nhello\n'})
    assert not isinstance(err.value, RunFailed)
    with pytest.raises(RunFailed, match='no output'):
        parser_for(tool).parse({'stdout.txt': '', 'stderr.txt': ''})
