"""Named benchmark presets (``reframe/config/presets.yaml``), scaled per partition."""

from __future__ import annotations

import os
from typing import Any

from h5regress import yamlfile
from h5regress.parsers import base

PRESETS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            'reframe', 'config', 'presets.yaml')


class PresetError(ValueError):
    """A preset file or value is malformed; the message names the file and key."""


def parse_size(value: Any, where: str) -> int:
    """``1g``, ``10MiB``, ``4096`` -> bytes (binary units, as IOR reads them)."""
    if isinstance(value, int):
        return value
    size = base.parse_size(value)
    if size is None:
        raise PresetError(f'{where}: not a size: {value!r}')
    return int(size)


def load(tool: str, path: str = PRESETS_FILE) -> dict[str, dict[str, Any]]:
    data = yamlfile.load(path, PresetError)
    if not isinstance(data, dict) or not isinstance(data.get(tool), dict):
        raise PresetError(f'{path}: no presets for {tool!r} (top-level key {tool!r})')
    return data[tool]


def scaled_sizes(block: int, transfer: int, factor: float) -> tuple[int, int]:
    """Block and transfer size scaled by ``factor``, whole MiB, block a multiple of transfer."""
    transfer_s = max(base.MIB, round(transfer * factor / base.MIB) * base.MIB)
    block_s = max(transfer_s, round(block * factor / transfer_s) * transfer_s)
    return block_s, transfer_s
