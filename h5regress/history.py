"""Nightly history of gate results: compact, append-only, one file per night.

Layout (under the history directory)::

    <history>/nights/<night-id>.jsonl     one night: header, descriptions,
                                          summaries, then its per-run values

The first line of a night file is the night's header (``"kind": "night"``:
night id, time, baseline and candidate builds and commits, overall verdict,
whether the night was degraded, counts of skipped records, and the byte
lengths of the two parts that follow); the second (``"kind": "meta"``)
describes every metric once (label, tool, operation, metric, unit,
direction, test, test class, performance variable, system, parameters); each
further line is one metric's summary (``"kind": "metric"``): key, role
(``gated``, ``canary``, ``control``, ``reported``), pairs, medians of
baseline, candidate and both, ratio and interval, q, verdict, the true ratio
when it is known (A/A nights, controls, injections), and ``lr_n``/``lr_var``:
the number of pairs and the sample variance of their log-ratios, which later
nights pool (the gate's ``history_variance``). Nights written before
``lr_n``/``lr_var`` existed are read as they are; the gate derives the two
from their samples when it needs them. The last line (``"kind": "samples"``)
holds ``{key: [baseline values, candidate values]}``; the first ``n_pairs``
values of both lists are the aligned pairs.

Why this shape: a year of nights at 300 metrics and 20 pairs is 4.4 million
runs. Full records (parameters and provenance on every run, ~1 KiB each) would
be gigabytes and take minutes to parse. The gate, the plots and the change
points need only the nightly summaries (~150 bytes per metric-night); the
descriptions and the samples are parsed only for the nights that need them
(the newest night's descriptions, the refs window's samples): the header's
``summary_bytes`` lets a reader stop before the samples line and come back
for it later (``samples_bytes``; the file must be exactly as long as the
header says, or the night is skipped as truncated).

Atomicity: a night is one file, written to a temporary file in the same
directory, fsynced and renamed into place: a reader sees the whole night
(summaries and samples of the same attempt) or none of it, and a crash never
corrupts earlier nights. Files are never modified afterwards, and a night is
never replaced: a night id is unique, and gating a night id again (more pairs
after INCONCLUSIVE, a rerun the same day) stores a new attempt ``<id>+2``,
``<id>+3``... beside it (``exclusive=True`` refuses instead). Night ids are
checked (:func:`night_id`: no ``/``, no ``+``), so two ids never name one file.
Writers of the same night take a lock (``nights/.<id>.lock``) so that attempt
numbers are unique.

Older histories (format 1) kept the samples apart, in
``<history>/samples/<night-id>.json``, written before the night file: they
are still read.

Bad input never stops a reader: an unreadable or truncated night, a line
that is not UTF-8 or not a valid history line, samples that are not numbers
are skipped, each named with its file (and line) in ``History.problems`` and
on standard error; the other nights are read as they are.

Location: ``--history DIR`` on the command line, else the environment
variable ``H5REGRESS_HISTORY``, else ``history:`` in ``ci/gate.yaml``; the CI
jobs restore it before the gate and publish it after.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from h5regress import atomic

ENV = 'H5REGRESS_HISTORY'
#: 2: one file per night (samples included); 1: samples in ``samples/<id>.json``
FORMAT = 2


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


#: a night id as given (``--night``): letters, digits, ``.``, ``_``, ``-``; not
#: ``/`` or ``+`` (``+`` marks a stored rerun: ``<id>+2``), so ids never collide
NIGHT_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,99}')
#: separates a night id from its attempt number in a stored rerun
ATTEMPT_MARK = '+'


def night_id(text: str) -> str:
    """``text`` if it is a valid night id, else an error saying what is allowed (an
    argparse ``type``: a usage error naming the value, exit 64)."""
    if not NIGHT_ID.fullmatch(text):
        raise argparse.ArgumentTypeError(f'night id {text!r} is not allowed: use 1-100 letters, digits, '
                         f"'.', '_' or '-', starting with a letter or digit (a night id "
                         f'names a file and must not collide with another)')
    return text


def _night_file(root: Path, night: str) -> Path:
    return root / 'nights' / f'{night}.jsonl'


def _free_attempt(root: Path, night: str) -> str:
    """``night`` if it is not stored yet, else its first free ``<night>+<n>``."""
    stored, n = night, 1
    while _night_file(root, stored).exists():
        n += 1
        stored = f'{night}{ATTEMPT_MARK}{n}'
    return stored


def _of_night(stored: str, night: str) -> bool:
    """Whether a stored night id is ``night`` or one of its reruns."""
    return stored == night or stored.startswith(night + ATTEMPT_MARK)


#: fields of a metric that describe it (stored once per night, parsed on demand)
META_FIELDS = ('label', 'tool', 'operation', 'metric', 'unit', 'higher_is_better', 'test',
               'test_class', 'perf_var', 'system', 'params')
#: per-run values (stored apart: only the last nights' are ever read)
SAMPLE_FIELDS = ('base', 'cand')
_META_PREFIX = '{"kind":"meta",'
_SAMPLES_KIND = 'samples'


def _dumps(obj: Any) -> bytes:
    # ASCII JSON: byte lengths are character lengths, any reader can decode it
    return json.dumps(obj, separators=(',', ':'), ensure_ascii=True).encode('ascii')


def write_night(root: str | os.PathLike, header: Mapping[str, Any],
                metrics: Iterable[Mapping[str, Any]], exclusive: bool = False) -> Path:
    """Store one night as one new file, atomically; returns the night file.

    Header, one ``meta`` line describing every metric, one summary line per
    metric (medians, ratio, interval, verdict, true ratio), then one
    ``samples`` line (the per-run values). A stored night is never replaced: a
    night id already stored is a rerun, kept as ``<id>+2``, ``<id>+3``... (its
    header says which), or with ``exclusive`` refused (HistoryError). The file's
    rename is what makes the night exist; the lock makes writers of the same
    night take turns. A failed write is a HistoryError naming the file.
    """
    root = Path(root)
    night = str(header['night'])
    try:
        night_id(night)
    except argparse.ArgumentTypeError as err:
        raise HistoryError(f'{root}: {err}') from None
    metas, samples, lines = {}, {}, []
    for m in metrics:
        key = m['key']
        metas[key] = {k: m.get(k) for k in META_FIELDS}
        samples[key] = [m.get(k) or [] for k in SAMPLE_FIELDS]
        lines.append(_dumps({'kind': 'metric', **{k: v for k, v in m.items()
                                                  if k not in META_FIELDS
                                                  and k not in SAMPLE_FIELDS}}))
    meta = _META_PREFIX.encode() + _dumps({'metas': metas})[1:]
    summary = b''.join(line + b'\n' for line in [meta] + lines)
    tail = _dumps({'kind': _SAMPLES_KIND, 'samples': samples}) + b'\n'
    with _night_lock(root, night):
        stored = _free_attempt(root, night)
        path = _night_file(root, stored)
        if stored != night and exclusive:
            raise HistoryError(f'{_night_file(root, night)}: night {night!r} is already '
                               f'in the history')
        head = json.dumps({'kind': 'night', **header, 'night': stored, 'format': FORMAT,
                           'summary_bytes': len(summary), 'samples_bytes': len(tail)},
                          separators=(',', ':'), sort_keys=True, ensure_ascii=True).encode()
        try:
            atomic.write_bytes(path, head + b'\n' + summary + tail)
        except OSError as err:
            raise HistoryError(f'{path} could not be written: {err.strerror or err}') \
                from None
    return path


@contextlib.contextmanager
def _night_lock(root: Path, night: str) -> Iterator[None]:
    """Exclusive lock of one night and its reruns (a file beside them; writers of
    other nights go on)."""
    ndir = root / 'nights'
    try:
        ndir.mkdir(parents=True, exist_ok=True)
        fd = os.open(ndir / f'.{night}.lock', os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise HistoryError(f'{ndir} cannot take night {night!r}: '
                           f'{err.strerror or err}') from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _legacy_samples_file(night_file: Path) -> Path:
    return night_file.parent.parent / 'samples' / (night_file.stem + '.json')


@dataclasses.dataclass
class _NightFile:
    """Where a loaded night's parts are: its file, and for the current format the
    place of its samples line and the identity of the file it was read from."""
    path: Path
    samples_at: int | None = None      # None: the old layout (samples/<id>.json)
    samples_bytes: int = 0
    ident: tuple = ()


#: summary fields that are numbers (or null); the medians are also positive
_NUMBERS = ('n_pairs', 'base_median', 'cand_median', 'median_all', 'ratio', 'ratio_lo',
            'ratio_hi', 'q', 'true_ratio', 'lr_n', 'lr_var')
_POSITIVE = ('base_median', 'cand_median', 'median_all')
_COUNTS = ('n_pairs', 'lr_n')


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _metric_problem(obj: Mapping[str, Any]) -> str | None:
    """Why a summary line cannot be used, or None."""
    if not isinstance(obj.get('key'), str):
        return 'metric line without a key'
    for name in _NUMBERS:
        x = obj.get(name)
        if x is None:
            continue
        if not _is_number(x):
            return f'{name} is not a number: {x!r}'
        if name in _POSITIVE and not x > 0:
            return f'{name} is not a positive number: {x!r}'
        if name in _COUNTS and (not isinstance(x, int) or x < 0):
            return f'{name} is not a count: {x!r}'
    for name in ('role', 'verdict'):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            return f'{name} is not a string: {obj[name]!r}'
    return None


def _header_problem(obj: Mapping[str, Any]) -> str | None:
    if not isinstance(obj.get('night'), str) or not obj['night']:
        return f'night id is not a string: {obj.get("night")!r}'
    if obj.get('timestamp') is not None and not isinstance(obj['timestamp'], str):
        return f'timestamp is not a string: {obj["timestamp"]!r}'
    return None


def _samples_problem(val: Any) -> bool:
    """Whether one metric's samples are not two lists of positive numbers."""
    return not (isinstance(val, list) and len(val) == 2
                and all(isinstance(side, list) for side in val)
                and all(_is_number(v) and math.isfinite(v) and v > 0
                        for side in val for v in side))


class History:
    """The loaded history, nights in time order.

    ``nights``: header dicts (``index``: position in time order).
    ``series``: metric key -> summary lines (``night_index`` added), in night
    order: ``role``, ``n_pairs``, ``base_median``, ``cand_median``,
    ``median_all``, ``ratio``, ``ratio_lo``, ``ratio_hi``, ``q``, ``verdict``,
    ``true_ratio``, ``lr_n``, ``lr_var`` (absent in older nights).
    :meth:`meta` describes a metric (label, tool, params, ...),
    :meth:`samples` gives the per-run values of one night; both read lazily.
    ``problems``: unreadable files or lines, skipped (also written to stderr).
    """

    def __init__(self) -> None:
        self.nights: list[dict[str, Any]] = []
        self.series: dict[str, list[dict[str, Any]]] = {}
        self.problems: list[str] = []
        self._raw_meta: list[str | None] = []
        self._meta_cache: dict[int, dict[str, Any]] = {}
        self._files: list[_NightFile] = []
        self._samples_cache: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.nights)

    def problem(self, msg: str) -> None:
        """Record a skipped part of the history, and say so on stderr."""
        self.problems.append(msg)
        print(f'h5regress: history: {msg}', file=sys.stderr)

    def night_ids(self) -> list[str]:
        return [n['night'] for n in self.nights]

    def _metas(self, idx: int) -> dict[str, Any]:
        if idx not in self._meta_cache:
            raw = self._raw_meta[idx]
            try:
                metas = json.loads(raw)['metas'] if raw else {}
                if not isinstance(metas, dict) or not all(isinstance(v, dict)
                                                          for v in metas.values()):
                    raise TypeError('not a mapping of descriptions')
            except (json.JSONDecodeError, KeyError, TypeError):
                self.problem(f'{self._files[idx].path}: unreadable meta line')
                metas = {}
            self._meta_cache[idx] = metas
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
            self._samples_cache[night_index] = self._read_samples(self._files[night_index])
        got = self._samples_cache[night_index].get(key) or [[], []]
        return list(got[0]), list(got[1])

    def _read_samples(self, nf: _NightFile) -> dict[str, Any]:
        """The samples of one loaded night: valid entries only, problems named."""
        try:
            if nf.samples_at is None:
                where = _legacy_samples_file(nf.path)
                data = json.loads(where.read_bytes().decode('utf-8'))
            else:
                where = nf.path
                data = _samples_line(nf)
        except (OSError, ValueError, HistoryError) as err:
            # ValueError: JSONDecodeError and UnicodeDecodeError (not UTF-8)
            self.problem(f'{where}: samples unreadable ({err}); left out')
            return {}
        if not isinstance(data, dict):
            self.problem(f'{where}: samples are not a mapping; left out')
            return {}
        bad = [k for k, v in data.items() if _samples_problem(v)]
        for k in bad[:5]:
            self.problem(f'{where}: samples of {k!r} are not two lists of positive '
                         f'numbers; left out')
        return {k: v for k, v in data.items() if k not in bad}


def _samples_line(nf: _NightFile) -> Any:
    """The samples of a night of the current format, from the file that was loaded."""
    with open(nf.path, 'rb') as fp:
        st = os.fstat(fp.fileno())
        if _ident(st) != nf.ident:
            raise HistoryError('the night was replaced after the history was loaded '
                               '(another attempt of it): its samples are not the ones of '
                               'the summaries read')
        fp.seek(nf.samples_at)
        obj = json.loads(fp.read(nf.samples_bytes).decode('utf-8'))
    if not isinstance(obj, dict) or obj.get('kind') != _SAMPLES_KIND:
        raise HistoryError('no samples line where the header says')
    return obj.get('samples')


def _ident(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _decode(raw: bytes, where: str, hist: History) -> str | None:
    try:
        return raw.decode('utf-8')
    except UnicodeDecodeError as err:
        hist.problem(f'{where}: not UTF-8 (byte 0x{raw[err.start]:02x} at column '
                     f'{err.start + 1}); line skipped')
        return None


def _parse_lines(lines: list[bytes], first_lineno: int, path: Path, hist: History,
                 header: dict | None = None) -> tuple[dict | None, str | None, list]:
    """Header (unless given), raw meta line and valid summary lines of a night file."""
    raw_meta, metrics = None, []
    for lineno, raw in enumerate(lines, first_lineno):
        if not raw.strip():
            continue
        line = _decode(raw, f'{path}:{lineno}', hist)
        if line is None:
            continue
        if line.startswith(_META_PREFIX):
            raw_meta = line
            continue
        try:
            obj = json.loads(line)
            kind = obj['kind']
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            hist.problem(f'{path}:{lineno}: not a history line ({err})')
            continue
        if kind == 'metric':
            why = _metric_problem(obj)
            if why:
                hist.problem(f'{path}:{lineno}: {why}; line skipped')
            else:
                metrics.append(obj)
        elif kind == 'night' and header is None:
            header = obj
        elif kind != _SAMPLES_KIND:
            hist.problem(f'{path}:{lineno}: unexpected line')
    return header, raw_meta, metrics


def _first_header(first: bytes) -> dict | None:
    """The header of a night file of the current format (its first line), else None."""
    try:
        obj = json.loads(first.decode('utf-8'))
    except ValueError:
        return None
    if isinstance(obj, dict) and obj.get('kind') == 'night' \
            and isinstance(obj.get('format'), int) and obj['format'] >= 2:
        return obj
    return None


def _read_night(path: Path, hist: History) -> tuple | None:
    """(header, raw meta, summary lines, _NightFile) of one night file; None: skipped."""
    try:
        with open(path, 'rb') as fp:
            st = os.fstat(fp.fileno())
            first = fp.readline()
            header = _first_header(first)
            if header is None:                      # the old layout
                lines = (first + fp.read()).split(b'\n')
                header, raw_meta, metrics = _parse_lines(lines, 1, path, hist)
                nf = _NightFile(path)
            else:
                n, m = header.get('summary_bytes'), header.get('samples_bytes')
                if not (isinstance(n, int) and isinstance(m, int)
                        and len(first) + n + m == st.st_size):
                    hist.problem(f'{path}: {st.st_size} bytes, not the {n} + {m} its header '
                                 f'announces (truncated?); file skipped')
                    return None
                _, raw_meta, metrics = _parse_lines(fp.read(n).split(b'\n'), 2, path,
                                                    hist, header)
                nf = _NightFile(path, len(first) + n, m, _ident(st))
    except OSError as err:
        hist.problem(f'{path}: {err}; file skipped')
        return None
    if header is None or 'night' not in header:
        hist.problem(f'{path}: no night header, file skipped')
        return None
    why = _header_problem(header)
    if why:
        hist.problem(f'{path}: {why}; file skipped')
        return None
    return header, raw_meta, metrics, nf


def load(root: str | os.PathLike | None, exclude_night: str | None = None) -> History:
    """Read the summaries of every night under ``root`` (missing directory: empty).

    ``exclude_night`` leaves out that night and its reruns (the gate of a rerun
    night must not see its own earlier attempts as history). Meta lines and samples are read
    only when asked for. A night that cannot be read is skipped and named in
    ``problems``; the others are read.
    """
    hist = History()
    if root is None:
        return hist
    ndir = Path(root) / 'nights'
    if not ndir.is_dir():
        return hist
    loaded = []
    for path in sorted(ndir.glob('*.jsonl')):
        got = _read_night(path, hist)
        if got is None:
            continue
        header, raw_meta, metrics, nf = got
        if exclude_night is not None and _of_night(header['night'], exclude_night):
            continue
        loaded.append((str(header.get('timestamp') or ''), header['night'], header,
                       raw_meta, metrics, nf))
    loaded.sort(key=lambda t: (t[0], t[1]))
    for idx, (_ts, _night, header, raw_meta, metrics, nf) in enumerate(loaded):
        header['index'] = idx
        hist.nights.append(header)
        hist._raw_meta.append(raw_meta)
        hist._files.append(nf)
        series = hist.series
        for m in metrics:
            m['night_index'] = idx
            lst = series.get(m['key'])
            if lst is None:
                series[m['key']] = [m]
            else:
                lst.append(m)
    return hist
