"""The parsers' shared helpers (h5regress.parsers.base)."""

from __future__ import annotations

import pytest

from h5regress.parsers.base import MIB, ParseError, to_mib_per_s


@pytest.mark.parametrize('value, unit, expected', [
    (1137438372, 'B/s', 1137438372 / MIB),      # fio's bw_bytes
    (828.85, 'MiB/s', 828.85),                  # IOR's bwMiB
    (1110779, 'KiB/s', 1110779 / 1024),         # fio's bw
    (1.5, 'GiB/s', 1536.0), (2.0, 'TiB/s', 2.0 * 1024 ** 2)])
def test_to_mib_per_s(value, unit, expected):
    assert to_mib_per_s(value, unit) == pytest.approx(expected)


@pytest.mark.parametrize('unit', ['MiB/sec', 'MiB', 'furlongs/s', ''])
def test_to_mib_per_s_unknown_unit(unit):
    with pytest.raises(ParseError, match='bandwidth unit'):
        to_mib_per_s(1.0, unit)
