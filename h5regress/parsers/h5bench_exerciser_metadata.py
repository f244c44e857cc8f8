"""h5bench's exerciser (``h5bench_exerciser``: a buffer-size sweep) and metadata
benchmark (``h5bench_hdf5_iotest``), read into runs; the write and read patterns are
read by :mod:`h5regress.parsers.h5bench`."""

from __future__ import annotations

import csv
import io
import re
import shlex
from collections.abc import Mapping
from typing import Any

from h5regress.durability import NONE, READ_PAGE_CACHE, WRITE_FLUSH, flush_map
from h5regress.parsers.base import Measurement, ParsedRun, ParseError, RunFailed, basename
from h5regress.parsers.h5bench_common import (MAX_RATE_PER_RANK, SAME_EXECUTION_READ, TOOL,  # noqa: F401
                                              _check_rate, _is_stderr, _is_stdout, _pick,
                                              _ranks_of_command, _stderr_problem, _value,
                                              parse_ini)


_EXERCISER_COLS = ('write_time', 'write_rate', 'read_time', 'read_rate', 'dataset_create',
                   'group_create', 'attribute_write', 'file_open', 'file_close', 'file_flush',
                   'other_close')


_EXER_ROW_RE = re.compile(r'^(Min|Med|Max|Avg|Std)\s+(\d+)((?:\s+[-\d.eE+]+){11})\s*$', re.M)


_EXER_FLAGS_RE = re.compile(r'^useMetaDataCollectives:.*$', re.M)


_EXER_FLAG_NAMES = {'useMetaDataCollectives': 'metadata_collectives',
                    'addDerivedTypeDataset': 'derived_type_dataset',
                    'addAttributes': 'attributes', 'useIndependentIO': 'independent_io',
                    'numDims': 'num_dims', 'useChunked': 'chunked', 'rankShift': 'rank_shift'}


def exerciser_args(command: str) -> dict[str, Any]:
    """``--numdims 2 --minels 8 8 --indepio`` -> ``{"numdims": 2, "minels": [8, 8], ...}``."""
    tokens = shlex.split(command)
    start = next((i + 1 for i, t in enumerate(tokens) if basename(t) == 'h5bench_exerciser'), 0)
    out: dict[str, Any] = {}
    key = None
    for tok in tokens[start:]:
        if tok.startswith('--'):
            key = tok[2:]
            out[key] = True
        elif key is not None:
            val = _value(tok)
            cur = out[key]
            if cur is True:
                out[key] = val
            else:
                out[key] = cur + [val] if isinstance(cur, list) else [cur, val]
    return out


def parse_exerciser(group: Mapping[str, str], where: str, command: str | None = None,
                    max_rate_per_rank: float = MAX_RATE_PER_RANK) -> ParsedRun:
    """One h5bench_exerciser run: median rates and times per buffer size."""
    stdout = _pick(group, _is_stdout)
    stderr = _pick(group, _is_stderr)
    if stderr:
        problem = _stderr_problem(stderr[1], f'{where}{stderr[0]}')
        if problem:
            raise RunFailed(problem)
    if not stdout:
        raise RunFailed(f'{where}: no stdout: the exerciser left no results')
    src = f'{where}{stdout[0]}'
    text = stdout[1]
    errors = [ln.strip() for ln in text.splitlines()
              if re.match(r'\s*(?:Rank \d+ - )?ERROR', ln)
              or re.search(r'failed with rc|error -', ln)]
    if errors:
        raise RunFailed(f'{src}: {"; ".join(errors[:3])}')
    if 'All done -- Finishing normally.' not in text:
        raise RunFailed(f'{src}: no "All done -- Finishing normally." line: the run did not finish')
    params: dict[str, Any] = {'benchmark': 'exerciser'}
    if command:
        params.update(exerciser_args(command))
    flags = _EXER_FLAGS_RE.search(text)
    if flags:
        for name, val in re.findall(r'(\w+):\s*(-?\d+)', flags.group(0)):
            params[_EXER_FLAG_NAMES.get(name, name)] = (
                int(val) if name in ('numDims', 'rankShift') else val != '0')
    ranks = _ranks_of_command(command) if command else None
    params['num_ranks'] = ranks
    rows = [(m.group(1), int(m.group(2)), [float(x) for x in m.group(3).split()])
            for m in _EXER_ROW_RE.finditer(text)]
    med = [(size, vals) for stat, size, vals in rows if stat == 'Med']
    if not med:
        raise RunFailed(f'{src}: no result rows')
    ms = []
    for size, vals in med:
        col = dict(zip(_EXERCISER_COLS, vals))
        for op in ('write', 'read'):
            _check_rate(f'{op} rate at {size} B', col[f'{op}_rate'], ranks, max_rate_per_rank, src)
            ms.append(Measurement(op, f'raw_rate_{size}B', col[f'{op}_rate'], 'MiB/s', True))
            ms.append(Measurement(op, f'time_{size}B', col[f'{op}_time'], 's', False))
        for op in _EXERCISER_COLS[4:]:
            ms.append(Measurement(op, f'time_{size}B', col[op], 's', False))
    prov: dict[str, Any] = {'command': command} if command else {}
    # the exerciser times H5Dwrite alone (its H5Fflush is a column of its own), and
    # reads back what it has just written, in the same execution: from the page cache
    prov[WRITE_FLUSH] = flush_map(ms, ['write'], NONE)
    prov[READ_PAGE_CACHE] = 'kept'
    return ParsedRun(tool=TOOL, params=params, provenance=prov, measurements=ms,
                     warnings=[SAME_EXECUTION_READ.format(what='the exerciser')])


def _metadata_measurement(column: str, value: str, where: str) -> Measurement | None:
    m = re.fullmatch(r'\s*([\w-]+)\s*\[([^\]]+)\]\s*', column)
    if not m:
        return None
    name, unit = m.group(1), m.group(2)
    try:
        val = float(value)
    except ValueError:
        raise ParseError(f'{where}: column {column!r}: {value!r} is not a number') from None
    if name == 'wall':
        return Measurement('total', 'time', val, 's', False)
    if name == 'fsize':
        return Measurement('write', 'size', val, 'B', True)
    parts = name.split('-')           # write-phase-min, creat-max, read-rate-min
    op = {'creat': 'create'}.get(parts[0], parts[0])
    stat = parts[-1]
    what = '_'.join(parts[1:-1]) or 'time'
    if what == 'rate':
        if unit != 'MiB/s':
            raise ParseError(f'{where}: column {column!r}: unexpected unit {unit!r}')
        return Measurement(op, f'rate_{stat}', val, 'MiB/s', True)
    metric = 'time' if what == 'time' else f'{what}_time'
    return Measurement(op, f'{metric}_{stat}', val, 's', False)


def parse_metadata(group: Mapping[str, str], where: str, command: str | None = None) -> ParsedRun:
    """One h5bench_hdf5_iotest run: its CSV row, parameters from its ``.ini``."""
    stderr = _pick(group, _is_stderr)
    if stderr:
        problem = _stderr_problem(stderr[1], f'{where}{stderr[0]}')
        if problem:
            raise RunFailed(problem)
    csv_item = _pick(group, lambda n: n.endswith('.csv'))
    if not csv_item:
        raise RunFailed(f'{where}: no CSV: the metadata benchmark left no results')
    rows = [r for r in csv.reader(io.StringIO(csv_item[1])) if r]
    src = f'{where}{csv_item[0]}'
    if len(rows) < 2:
        raise RunFailed(f'{src}: no data row: the run did not finish')
    header, row = rows[0], rows[1]
    if len(row) != len(header):
        raise RunFailed(f'{src}: data row has {len(row)} fields, header {len(header)}: truncated')
    ini = _pick(group, lambda n: n.endswith('.ini'))
    params: dict[str, Any] = {'benchmark': 'metadata'}
    if ini:
        params.update(parse_ini(ini[1]))
    ms = []
    for col, val in zip(header, row):
        meas = _metadata_measurement(col, val, src)
        if meas is not None:
            ms.append(meas)
        elif not ini:
            params[col.strip().lower().replace('-', '_')] = _value(val)
    if not ms:
        raise ParseError(f'{src}: no measurement columns: not an hdf5_iotest CSV')
    rows_, cols_ = params.get('process_rows'), params.get('process_columns')
    params['num_ranks'] = (rows_ * cols_ if isinstance(rows_, int) and isinstance(cols_, int)
                           else _ranks_of_command(command) if command else None)
    prov: dict[str, Any] = {'command': command} if command else {}
    # hdf5_iotest never flushes (H5Fclose through MPI-IO does not sync), and its read
    # phase reads the file its write phase has just made, in the same execution
    prov[WRITE_FLUSH] = flush_map(ms, ['write'], NONE)
    prov[READ_PAGE_CACHE] = 'kept'
    return ParsedRun(tool=TOOL, params=params, provenance=prov, measurements=ms,
                     warnings=[SAME_EXECUTION_READ.format(what='hdf5_iotest')])
