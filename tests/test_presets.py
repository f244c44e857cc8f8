"""Presets: the sizes the checks and presets.yaml give (IOR's spellings, binary units)."""

from __future__ import annotations

import pytest

from h5regress import presets

MIB = 1024 ** 2


@pytest.mark.parametrize('value, expected', [
    (4096, 4096), ('4096', 4096), ('1g', 1024 ** 3), ('1G', 1024 ** 3), ('10MiB', 10 * MIB),
    ('1 MiB', MIB), ('16m', 16 * MIB), ('10mb', 10 * MIB), ('4k', 4096), ('1t', 1024 ** 4),
    ('1.5g', 3 * 512 * MIB), ('128M', 128 * MIB)])
def test_parse_size_spellings(value, expected):
    assert presets.parse_size(value, 'here') == expected


@pytest.mark.parametrize('value', ['big', '', '1x', '-1m', '1 m b s'])
def test_parse_size_names_the_place(value):
    with pytest.raises(presets.PresetError, match='^here: not a size'):
        presets.parse_size(value, 'here')


def test_the_shipped_presets_are_sizes():
    for name, preset in presets.load('ior').items():
        block = presets.parse_size(preset['block_size'], name)
        transfer = presets.parse_size(preset['transfer_size'], name)
        assert block >= transfer > 0


def test_scaled_sizes_whole_mib_block_a_multiple_of_transfer():
    assert presets.scaled_sizes(1024 ** 3, 1024 ** 3, 1.0) == (1024 ** 3, 1024 ** 3)
    block, transfer = presets.scaled_sizes(10 * 1024 ** 3, 1024 ** 3, 0.01)
    assert transfer % MIB == 0 and block % transfer == 0
