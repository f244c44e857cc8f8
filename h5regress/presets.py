"""Named benchmark presets (``reframe/config/presets.yaml``), scaled per partition."""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

PRESETS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            'reframe', 'config', 'presets.yaml')

_SIZE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$', re.IGNORECASE)
_SCALE = {'': 1, 'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3, 't': 1024 ** 4}
MIB = 1024 ** 2


class PresetError(ValueError):
    """A preset file or value is malformed; the message names the file and key."""


def parse_size(value: Any, where: str) -> int:
    """``1g``, ``10MiB``, ``4096`` -> bytes (binary units, as IOR reads them)."""
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise PresetError(f'{where}: not a size: {value!r}')
    return int(float(m.group(1)) * _SCALE[m.group(2).lower()])


def load(tool: str, path: str = PRESETS_FILE) -> dict[str, dict[str, Any]]:
    try:
        with open(path) as fp:
            data = yaml.safe_load(fp)
    except (OSError, yaml.YAMLError) as err:
        raise PresetError(f'{path}: {err}') from None
    if not isinstance(data, dict) or not isinstance(data.get(tool), dict):
        raise PresetError(f'{path}: no presets for {tool!r} (top-level key {tool!r})')
    return data[tool]


def scaled_sizes(block: int, transfer: int, factor: float) -> tuple[int, int]:
    """Block and transfer size scaled by ``factor``, whole MiB, block a multiple of transfer."""
    transfer_s = max(MIB, round(transfer * factor / MIB) * MIB)
    block_s = max(transfer_s, round(block * factor / transfer_s) * transfer_s)
    return block_s, transfer_s
