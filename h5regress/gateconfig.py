"""Configuration of ``h5regress gate``, ``report`` and ``refs``: ``ci/gate.yaml``.

One source: the shipped file ``ci/gate.yaml`` holds every key with its value
and says what it does; the code keeps no second copy of the defaults. A
site's file (``--config FILE``) is layered over it: a key it names replaces
the shipped value -- a mapping (``degraded``, ``change_points``,
``history_variance``, ``refs``) key by key, anything else (numbers, the lists
of rules, the ``ceiling`` rule) as a whole -- and every other key keeps the
shipped value. A key the shipped file does not have, or a value of another
kind than the shipped one or out of range, is a :class:`ConfigError` naming
the file and the key; the commands then exit 4 (ERROR).

Where the file is: one path constant, :data:`CONFIG_FILE`, in the checkout
this package runs from. h5regress is not used outside its checkout: ``ci/setup``
installs it editable, the gate applies the reference files of
``reframe/config/references``, ``h5regress refs`` writes them there for the
checks of ``reframe/checks``, the nightly runs those checks, and the presets
and the Spack manifest are read from the tree too. Package data would be a
second copy of ``ci/gate.yaml`` inside ``h5regress/`` (or the file would
leave ``ci/``, where the CI and its readers look for it). The paths of the
checkout the gate's commands use are all here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import yamlfile

#: the checkout the package runs from (see the module docstring)
REPO = Path(__file__).resolve().parents[1]
#: the gate's configuration: every key and its value
CONFIG_FILE = REPO / 'ci' / 'gate.yaml'
#: ReFrame's external reference files: the gate applies them, ``h5regress refs`` writes them
REFERENCES_DIR = REPO / 'reframe' / 'config' / 'references'
#: the ReFrame configuration of the checkout: its systems and partitions
SETTINGS_FILE = REPO / 'reframe' / 'config' / 'settings.py'
#: the checks: ``reference = {'$ref': ...}`` in each names the reference file it reads
CHECKS_DIR = REPO / 'reframe' / 'checks'

#: keys holding a list of rules (``ceiling`` is one rule)
RULE_KEYS = ('gated', 'canary', 'control')
RULE_FIELDS = frozenset({'tool', 'operation', 'metric', 'params'})
#: keys holding a fraction in (0, 1)
#: how each metric's drawn interval is adjusted for the night's metrics
#: (h5regress.gate.verdicts.DrawnInterval)
INTERVAL_KINDS = ('simultaneous', 'fcr', 'marginal')

FRACTION_KEYS = ('margin', 'alpha', 'confidence', 'hdf5_overhead')


class ConfigError(ValueError):
    """A configuration file is unreadable or malformed; the message names the file and key."""


@dataclasses.dataclass(eq=False)      # equal to any mapping of the same keys and values
class GateConfig(MutableMapping):
    """The gate's configuration, typed: every key of ``ci/gate.yaml`` a field (issue
    26: the margin is a float from the file to the verdict, in this one object).
    Loaded once (:func:`load_config`) and handed on (``GateRequest.gate_config``,
    ``NightRequest.gate_config``); the stages read it as a mapping too
    (``cfg['margin']`` is ``cfg.margin``), so a site's layered keys and a
    benchmark's override are one assignment to a known key."""
    margin: float
    margin_confidence: float
    alpha: float
    confidence: float
    intervals: str
    min_pairs: int
    looks: list[int] | None
    tonight_t_test: dict[str, int]
    hdf5_overhead: float
    history: str | None
    gated: list[dict[str, Any]]
    canary: list[dict[str, Any]]
    control: list[dict[str, Any]]
    canary_ignore_params: list[str]
    degraded: dict[str, Any]
    history_variance: dict[str, Any]
    modes: dict[str, Any]
    contention: dict[str, Any]
    change_points: dict[str, Any]
    ceiling: dict[str, Any]
    refs: dict[str, Any]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> GateConfig:
        """A copy of ``data`` (a GateConfig or a mapping of every key) as a GateConfig."""
        missing = sorted(set(_FIELDS) - set(data))
        if missing:
            raise ConfigError(f'gate configuration: missing key(s) {missing}')
        return cls(**{k: data[k] for k in _FIELDS})

    def with_overrides(self, **values: float | None) -> GateConfig:
        """A copy with the fractions given (``margin``, ``alpha``, ``confidence``; None:
        keep), each checked to lie in (0, 1)."""
        given = {k: float(v) for k, v in values.items() if v is not None}
        for key, v in given.items():
            if key not in FRACTION_KEYS or not 0 < v < 1:
                raise ConfigError(f'--{key} must be in (0, 1), got {v}')
        return dataclasses.replace(self, **given)

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _FIELDS:
            raise KeyError(f'no gate configuration key {key!r}')
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        raise TypeError('a gate configuration key cannot be removed')

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)


_FIELDS = tuple(f.name for f in dataclasses.fields(GateConfig))


def load_config(path: str | os.PathLike | None = None) -> GateConfig:
    """``ci/gate.yaml``, with the file ``path`` (a site's) layered over it."""
    cfg = _read(CONFIG_FILE)
    _check(cfg, CONFIG_FILE)
    if path is not None:
        path = Path(path)
        _layer(cfg, _read(path), path)
        _check(cfg, path)
    for key in FRACTION_KEYS + ('margin_confidence',):
        cfg[key] = float(cfg[key])
    return GateConfig.of(cfg)


def looks_arg(value: str | Sequence[int]) -> list[int]:
    """``'10,15,20'`` or ``[10, 15, 20]`` -> increasing positive pair counts."""
    items = value.split(',') if isinstance(value, str) else list(value)
    try:
        looks = [int(x) for x in items]
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f'looks must be pair counts like 10,15,20, got '
                                         f'{value!r}') from None
    if not looks or looks[0] < 1 or any(b <= a for a, b in zip(looks, looks[1:])):
        raise argparse.ArgumentTypeError(f'looks must be increasing positive pair counts, '
                                         f'got {value!r}')
    return looks


def _read(path: Path) -> dict[str, Any]:
    data = yamlfile.load(path, ConfigError) or {}
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: top level must be a mapping')
    return data


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    for typ, name in ((str, 'a string'), (list, 'a list'), (dict, 'a mapping')):
        if isinstance(value, typ):
            return name
    return type(value).__name__


def _check_kind(path: Path, key: str, shipped: Any, value: Any) -> None:
    """A value must be of the shipped value's kind (anything where that is null)."""
    if shipped is not None and _kind(value) != _kind(shipped):
        raise ConfigError(f'{path}: key {key!r} must be {_kind(shipped)}, got {value!r}')


def _layer(cfg: dict[str, Any], data: Mapping[str, Any], path: Path) -> None:
    """Put the keys of a site's file over the shipped configuration ``cfg``."""
    for key, value in data.items():
        if key not in cfg:
            raise ConfigError(f'{path}: unknown key {key!r}')
        shipped = cfg[key]
        _check_kind(path, key, shipped, value)
        if isinstance(shipped, dict) and key != 'ceiling':
            for sub, v in value.items():
                if sub not in shipped:
                    raise ConfigError(f"{path}: unknown key '{key}.{sub}'")
                _check_kind(path, f'{key}.{sub}', shipped[sub], v)
            cfg[key] = {**shipped, **value}
        else:
            cfg[key] = value


def _check_rule(path: Path, where: str, rule: Any) -> None:
    if not isinstance(rule, dict):
        raise ConfigError(f'{path}: key {where}: a rule is a mapping, got {rule!r}')
    bad = set(rule) - RULE_FIELDS
    if bad:
        raise ConfigError(f'{path}: key {where}: unknown field(s) {sorted(bad)}')
    if not isinstance(rule.get('params') or {}, dict):
        raise ConfigError(f'{path}: key {where}.params: must be a mapping')


def _check(cfg: dict[str, Any], path: Path) -> None:
    """Values the gate relies on; normalises ``looks``."""
    for key in RULE_KEYS:
        if not isinstance(cfg.get(key), list) or not all(isinstance(r, dict) for r in cfg[key]):
            raise ConfigError(f'{path}: key {key!r} must be a list of rules (mappings)')
        for i, rule in enumerate(cfg[key]):
            _check_rule(path, f'{key}[{i}]', rule)
    _check_rule(path, 'ceiling', cfg.get('ceiling'))
    for key in FRACTION_KEYS:
        if not isinstance(cfg.get(key), (int, float)) or not 0 < cfg[key] < 1:
            raise ConfigError(f'{path}: key {key!r} must be a number in (0, 1)')
    mc = cfg.get('margin_confidence')
    if isinstance(mc, bool) or not isinstance(mc, (int, float)) or not 0.5 <= mc < 1:
        raise ConfigError(f"{path}: key 'margin_confidence' must be a number in [0.5, 1), "
                          f'got {mc!r}')
    if cfg.get('intervals') not in INTERVAL_KINDS:
        raise ConfigError(f"{path}: key 'intervals' must be one of {', '.join(INTERVAL_KINDS)}, "
                          f"got {cfg.get('intervals')!r}")
    if cfg.get('looks') is not None:
        try:
            cfg['looks'] = looks_arg(cfg['looks'])
        except (argparse.ArgumentTypeError, TypeError) as err:
            raise ConfigError(f"{path}: key 'looks': {err}") from None
    for sub, count in (cfg.get('tonight_t_test') or {}).items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"{path}: key 'tonight_t_test.{sub}' must be a pair count "
                              f'>= 0, got {count!r}')
