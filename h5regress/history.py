"""Nightly history of gate results: compact, append-only, one file per night.

Layout (under the history directory)::

    <history>/nights/<night-id>.jsonl     header, metric descriptions, summaries
    <history>/samples/<night-id>.json     per-run values of that night

The first line of a night file is the night's header (``"kind": "night"``:
night id, time, baseline and candidate builds and commits, overall verdict,
whether the night was degraded, counts of skipped records); the second
(``"kind": "meta"``) describes every metric once (label, tool, operation,
metric, unit, direction, test, test class, performance variable, system,
parameters); each further line is one metric's summary (``"kind":
"metric"``): key, role (``gated``, ``canary``, ``control``, ``reported``),
pairs, medians of baseline, candidate and both, ratio and interval, q,
verdict, the true ratio when it is known (A/A nights, controls,
injections), and ``lr_n``/``lr_var``: the number of pairs and the sample
variance of their log-ratios, which later nights pool (the gate's
``history_variance``). Nights written before ``lr_n``/``lr_var`` existed are
read as they are; the gate derives the two from their samples file when it
needs them. The samples file holds ``{key: [baseline values, candidate
values]}``; the first ``n_pairs`` values of both lists are the aligned pairs.

Why this shape: a year of nights at 300 metrics and 20 pairs is 4.4 million
runs. Full records (parameters and provenance on every run, ~1 KiB each) would
be gigabytes and take minutes to parse. The gate, the plots and the change
points need only the nightly summaries (~150 bytes per metric-night); the
descriptions and the samples are parsed only for the nights that need them
(the newest night's descriptions, the refs window's samples). The full
records of a night stay in the perflogs and records files that CI publishes.

Atomicity: a night is written to a temporary file in the same directory,
fsynced and renamed into place, so a reader never sees half a night and a
crash never corrupts earlier nights. Files are never modified afterwards,
except that gating the same night again (more pairs after INCONCLUSIVE)
replaces that night's file, again by rename.

Location: ``--history DIR`` on the command line, else the environment
variable ``H5REGRESS_HISTORY``, else ``history:`` in ``ci/gate.yaml``; the CI
jobs restore it before the gate and publish it after.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from h5regress import atomic

ENV = 'H5REGRESS_HISTORY'
FORMAT = 1


class HistoryError(RuntimeError):
    pass


def metric_key(config_hash: str, tool: str, operation: str, metric: str) -> str:
    return f'{config_hash}|{tool}|{operation}|{metric}'


def resolve_dir(explicit: str | os.PathLike | None = None,
                config: Mapping[str, Any] | None = None) -> Path | None:
    """History directory: explicit argument, ``$H5REGRESS_HISTORY``, then config."""
    if explicit:
        return Path(explicit)
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    if config and config.get('history'):
        return Path(os.path.expandvars(os.path.expanduser(str(config['history']))))
    return None


_SAFE = re.compile(r'[^A-Za-z0-9._-]+')


def _night_file(root: Path, night: str) -> Path:
    name = _SAFE.sub('_', night).strip('._') or 'night'
    return root / 'nights' / f'{name}.jsonl'


#: fields of a metric that describe it (stored once per night, parsed on demand)
META_FIELDS = ('label', 'tool', 'operation', 'metric', 'unit', 'higher_is_better', 'test',
               'test_class', 'perf_var', 'system', 'params')
#: per-run values (stored apart: only the last nights' are ever read)
SAMPLE_FIELDS = ('base', 'cand')
_META_PREFIX = '{"kind":"meta",'


def write_night(root: str | os.PathLike, header: Mapping[str, Any],
                metrics: Iterable[Mapping[str, Any]], replace: bool = True) -> Path:
    """Store one night atomically; returns the night file.

    Three parts: ``nights/<id>.jsonl`` (header, one ``meta`` line describing
    every metric, one summary line per metric: medians, ratio, interval,
    verdict, true ratio) and ``samples/<id>.json`` (the per-run values). The
    samples file is written first; the night file's rename is what makes the
    night exist.
    """
    root = Path(root)
    night = str(header['night'])
    path = _night_file(root, night)
    if path.exists() and not replace:
        raise HistoryError(f'{path}: night {night!r} is already in the history')
    metas, samples, lines = {}, {}, []
    for m in metrics:
        key = m['key']
        metas[key] = {k: m.get(k) for k in META_FIELDS}
        samples[key] = [m.get(k) or [] for k in SAMPLE_FIELDS]
        lines.append(json.dumps({'kind': 'metric', **{k: v for k, v in m.items()
                                                      if k not in META_FIELDS
                                                      and k not in SAMPLE_FIELDS}},
                                separators=(',', ':')))
    atomic.write_text(_samples_file(path), json.dumps(samples, separators=(',', ':')))
    head = json.dumps({'kind': 'night', 'format': FORMAT, **header},
                      separators=(',', ':'), sort_keys=True)
    meta = _META_PREFIX + json.dumps({'metas': metas}, separators=(',', ':'))[1:]
    atomic.write_text(path, '\n'.join([head, meta] + lines) + '\n')
    return path


def _samples_file(night_file: Path) -> Path:
    return night_file.parent.parent / 'samples' / (night_file.stem + '.json')


class History:
    """The loaded history, nights in time order.

    ``nights``: header dicts (``index``: position in time order).
    ``series``: metric key -> summary lines (``night_index`` added), in night
    order: ``role``, ``n_pairs``, ``base_median``, ``cand_median``,
    ``median_all``, ``ratio``, ``ratio_lo``, ``ratio_hi``, ``q``, ``verdict``,
    ``true_ratio``, ``lr_n``, ``lr_var`` (absent in older nights).
    :meth:`meta` describes a metric (label, tool, params, ...),
    :meth:`samples` gives the per-run values of one night; both read lazily.
    ``problems``: unreadable files or lines, skipped.
    """

    def __init__(self) -> None:
        self.nights: list[dict[str, Any]] = []
        self.series: dict[str, list[dict[str, Any]]] = {}
        self.problems: list[str] = []
        self._raw_meta: list[str | None] = []
        self._meta_cache: dict[int, dict[str, Any]] = {}
        self._files: list[Path] = []
        self._samples_cache: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.nights)

    def night_ids(self) -> list[str]:
        return [n['night'] for n in self.nights]

    def _metas(self, idx: int) -> dict[str, Any]:
        if idx not in self._meta_cache:
            raw = self._raw_meta[idx]
            try:
                self._meta_cache[idx] = json.loads(raw)['metas'] if raw else {}
            except (json.JSONDecodeError, KeyError, TypeError):
                self.problems.append(f'{self._files[idx]}: unreadable meta line')
                self._meta_cache[idx] = {}
        return self._meta_cache[idx]

    def meta(self, key: str, night_index: int | None = None) -> dict[str, Any]:
        """Description of a metric: that night's, else the newest night that has it."""
        if night_index is not None:
            found = self._metas(night_index).get(key)
            if found:
                return found
        for idx in range(len(self.nights) - 1, -1, -1):
            found = self._metas(idx).get(key)
            if found:
                return found
        return {}

    def samples(self, key: str, night_index: int) -> tuple[list[float], list[float]]:
        """(baseline, candidate) per-run values of ``key`` in that night."""
        if night_index not in self._samples_cache:
            path = _samples_file(self._files[night_index])
            try:
                self._samples_cache[night_index] = json.loads(path.read_text(encoding='utf-8'))
            except (OSError, json.JSONDecodeError) as err:
                self.problems.append(f'{path}: {err}')
                self._samples_cache[night_index] = {}
        got = self._samples_cache[night_index].get(key) or [[], []]
        return list(got[0]), list(got[1])


def load(root: str | os.PathLike | None, exclude_night: str | None = None) -> History:
    """Read the summaries of every night under ``root`` (missing directory: empty).

    ``exclude_night`` leaves out that night (the gate of a rerun night must not
    see its own earlier attempt as history). Meta lines and samples are read
    only when asked for.
    """
    hist = History()
    if root is None:
        return hist
    ndir = Path(root) / 'nights'
    if not ndir.is_dir():
        return hist
    loaded = []
    loads = json.loads
    for path in ndir.glob('*.jsonl'):
        try:
            text = path.read_text(encoding='utf-8')
        except OSError as err:
            hist.problems.append(f'{path}: {err}')
            continue
        header, raw_meta, metrics = None, None, []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            if line.startswith(_META_PREFIX):
                raw_meta = line
                continue
            try:
                obj = loads(line)
                kind = obj['kind']
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                hist.problems.append(f'{path}:{lineno}: not a history line ({err})')
                continue
            if kind == 'metric' and isinstance(obj.get('key'), str):
                metrics.append(obj)
            elif kind == 'night' and header is None:
                header = obj
            else:
                hist.problems.append(f'{path}:{lineno}: unexpected line')
        if header is None or 'night' not in header:
            hist.problems.append(f'{path}: no night header, file skipped')
            continue
        if exclude_night is not None and header['night'] == exclude_night:
            continue
        loaded.append((str(header.get('timestamp', '')), str(header['night']), header,
                       raw_meta, metrics, path))
    loaded.sort(key=lambda t: (t[0], t[1]))
    for idx, (_ts, _night, header, raw_meta, metrics, path) in enumerate(loaded):
        header['index'] = idx
        hist.nights.append(header)
        hist._raw_meta.append(raw_meta)
        hist._files.append(path)
        series = hist.series
        for m in metrics:
            m['night_index'] = idx
            lst = series.get(m['key'])
            if lst is None:
                series[m['key']] = [m]
            else:
                lst.append(m)
    return hist
