"""What a regression changed: Darshan counters of baseline and candidate, diffed.

For each FAIL metric of a night, its check runs once more per build under Darshan
(its runtime library, ``darshan-runtime +hdf5`` from the Spack environment, put in
``LD_PRELOAD`` of the tool only, by a wrapper in a copy of the manifest; logs to
``DARSHAN_LOGPATH``, a directory of the night). These runs are never samples: their
records go to a perflog directory of their own, which no gate reads, and
instrumentation perturbs timing anyway. The logs are read with PyDarshan (the
``darshan`` package), never by a parser of ours, and the counters of both builds
are compared: POSIX and MPI-IO operation counts and bytes, access-size
histograms, collective vs independent MPI-IO, metadata operations, the HDF5
module's H5F/H5D counters, and the time counters (labelled as such); the largest
changes first, each as candidate/baseline.

Without a Darshan library for both builds (no Spack manifest, an environment
without darshan-runtime), :func:`night_diff` says why there is no diff.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import manifest

#: the modules diffed (PyDarshan's names) and the category of a counter by its name
MODULES = ('POSIX', 'MPI-IO', 'H5F', 'H5D')
#: counters that are not sums over records (ranks, sizes of one access, offsets,
#: timestamps, variances, modes): left out of the diff
NOT_ADDITIVE = re.compile(
    r'_(MAX_BYTE_(READ|WRITTEN)|ACCESS\d_(ACCESS|COUNT)|STRIDE\d_(STRIDE|COUNT)|'
    r'(FASTEST|SLOWEST)_RANK(_BYTES)?|MODE|(MEM|FILE)_ALIGNMENT|RENAMED_FROM|'
    r'ACCESS\d_(LENGTH|STRIDE)_D\d|DATASPACE_NDIMS|DATASPACE_NPOINTS|DATATYPE_SIZE|CHUNK_SIZE_D\d|'
    r'F_.*TIMESTAMP|F_VARIANCE_.*|F_(FASTEST|SLOWEST)_RANK_TIME|F_MAX_(READ|WRITE)_TIME.*|'
    r'MAX_(READ|WRITE)_TIME_SIZE|USE_MPIIO)$|^(rank|id)$')
#: the changes shown first in the report
TOP = 25
#: relative change below which a counter is "unchanged"
MIN_CHANGE = 0.01


def category(name: str) -> str:
    """What a counter measures, for the report's column."""
    if '_F_' in name and name.endswith('TIME'):
        return 'time (instrumented run)'
    if name.startswith(('H5F_', 'H5D_')):
        return 'HDF5 ' + name[:3]
    if '_SIZE_' in name:
        return 'access-size histogram'
    if name.startswith('MPIIO_') and ('_COLL_' in name or '_INDEP_' in name):
        return 'collective vs independent'
    if 'BYTES' in name:
        return 'bytes'
    if any(op in name for op in ('OPENS', 'STATS', 'SEEKS', 'FSYNCS', 'FDSYNCS', 'MMAPS',
                                 'RENAME', 'DUPS', 'FILENOS', 'VIEWS', 'HINTS', 'SYNCS',
                                 'FLUSHES')):
        return 'metadata operations'
    return 'operations'


def counters(logs: Iterable[str | Path]) -> dict[str, float]:
    """Sum of every additive counter over the records (files, ranks) of the logs,
    by counter name, read with PyDarshan."""
    import darshan   # PyDarshan: imported where used, the gate and the report need it not
    total: dict[str, float] = {}
    for path in logs:
        with darshan.DarshanReport(str(path), read_all=True) as report:
            for module in MODULES:
                if module not in report.records:
                    continue
                frames = report.records[module].to_df()
                for kind in ('counters', 'fcounters'):
                    df = frames.get(kind)
                    if df is None:
                        continue
                    for column in df.columns:
                        if NOT_ADDITIVE.search(column):
                            continue
                        value = float(df[column].clip(lower=0).sum())
                        total[column] = total.get(column, 0.0) + value
    return total


def diff(base: Mapping[str, float], cand: Mapping[str, float], top: int = TOP
         ) -> list[dict[str, Any]]:
    """Changed counters, the largest change first: name, category, baseline,
    candidate, ratio candidate/baseline (None when the baseline is 0)."""
    rows = []
    for name in sorted(set(base) | set(cand)):
        b, c = base.get(name, 0.0), cand.get(name, 0.0)
        if b == c or max(abs(b), abs(c)) == 0:
            continue
        if b and c and abs(math.log(c / b)) < math.log1p(MIN_CHANGE):
            continue
        ratio = c / b if b else None
        # new or vanished counters first, then by |log ratio|; time counters after counts
        size = math.inf if not b or not c else abs(math.log(c / b))
        timed = category(name).startswith('time')
        rows.append({'counter': name, 'category': category(name), 'baseline': b,
                     'candidate': c, 'ratio': ratio, '_order': (timed, -size, name)})
    rows.sort(key=lambda r: r.pop('_order'))
    return rows[:top]


# ------------------------------------------------------------------ running under Darshan
def wrapped_manifest(src: Path, dst_dir: Path, libraries: Mapping[str, str]) -> Path:
    """A copy of the manifest whose builds' tools run under Darshan: a wrapper per
    tool puts the build's library in front of LD_PRELOAD (the stand-in shim's,
    when there is one, is kept: it adds itself after) and sets DARSHAN_LOGPATH
    to ``dst_dir/<build>/``."""
    data = json.loads(Path(src).read_text())
    for build, library in libraries.items():
        logs = dst_dir / build / 'logs'
        logs.mkdir(parents=True, exist_ok=True)
        manifest.wrap_tools(data['builds'][build]['tools'], dst_dir / build / 'tools', [
            f'export DARSHAN_LOGPATH={shlex.quote(str(logs))}',
            f'export LD_PRELOAD={shlex.quote(library)}${{LD_PRELOAD:+:$LD_PRELOAD}}'],
            'the tool under Darshan (not a timed run)')
    out = dst_dir / 'manifest.json'
    manifest.write(out, data)
    return out


def make_log_dirs(logdir: Path) -> None:
    """The log directory and, for a library built with a log path (Spack's
    darshan-runtime), the <year>/<month>/<day> directories it writes into (what
    darshan-mk-log-dirs makes; today's and tomorrow's, unpadded, local time, as
    darshan-core names them)."""
    logdir.mkdir(parents=True, exist_ok=True)
    today = datetime.date.today()
    for day in (today, today + datetime.timedelta(days=1)):
        (logdir / str(day.year) / str(day.month) / str(day.day)).mkdir(parents=True,
                                                                      exist_ok=True)


def libraries_for(builds: Sequence[str], manifest_path: Path) -> tuple[dict[str, str], str]:
    """({build: libdarshan.so}, '') or ({}, why there is none)."""
    libs = {}
    for build in builds:
        try:
            lib = manifest.darshan_library(build, manifest_path)
        except manifest.ManifestError as err:
            return {}, str(err)
        if not lib:
            return {}, (f'the manifest {manifest_path} has no darshan-runtime '
                        f'for build {build} (the Spack environment builds it; stand-in and '
                        f'embedded builds have none)')
        libs[build] = lib
    return libs, ''


def failing_rows(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for m in result.get('metrics', []) if m.get('role') == 'gated'
            and m.get('verdict') == 'FAIL']


def night_diff(result: Mapping[str, Any], manifest_path: Path, out: Path,
               run_check) -> dict[str, Any]:
    """The Darshan section of a night: for each FAIL metric one run per build under
    Darshan (``run_check(build, test, pair_id, env_extra) -> None``, the
    nightly's ReFrame run of the gate row's test in that build), the counters read and diffed."""
    fails = failing_rows(result)
    base, cand = result['baseline'], result['candidate']
    section: dict[str, Any] = {'available': False, 'metrics': []}
    if not fails:
        section['reason'] = 'no FAIL metric'
        return section
    libs, why = libraries_for([base, cand], manifest_path)
    if not libs:
        section['reason'] = why
        return section
    section.update(available=True, library={b: libs[b] for b in (base, cand)})
    shutil.rmtree(out, ignore_errors=True)
    wrapped = wrapped_manifest(manifest_path, out, libs)
    env = {'H5REGRESS_MANIFEST': str(wrapped),
           'H5REGRESS_PERFLOG_DIR': str(out / 'perflogs')}   # never the gate's samples
    for i, row in enumerate(fails):
        entry: dict[str, Any] = {'metric': row['label'], 'key': row['key'],
                                 'test': row.get('test'), 'ratio': row.get('ratio')}
        sums = {}
        for side, build in (('baseline', base), ('candidate', cand)):
            logdir = out / build / 'logs'
            shutil.rmtree(logdir, ignore_errors=True)
            make_log_dirs(logdir)
            try:
                run_check(build, row['test'], f'darshan-m{i}', env)
            except RuntimeError as err:
                entry['error'] = f'{side} run under Darshan: {err}'
                break
            logs = sorted(logdir.rglob('*.darshan'))
            keep = out / f'm{i}' / side
            keep.mkdir(parents=True, exist_ok=True)
            for log in logs:
                shutil.move(str(log), keep / log.name)
            entry[f'{side}_logs'] = [str(keep / log.name) for log in logs]
            if not logs:
                entry['error'] = f'the {side} run under Darshan left no log in {logdir}'
                break
            try:
                sums[side] = counters(keep / log.name for log in logs)
            except Exception as err:    # PyDarshan's errors have no common base
                entry['error'] = f'PyDarshan cannot read the {side} logs: {err}'
                break
        if 'error' not in entry:
            entry['changes'] = diff(sums['baseline'], sums['candidate'])
            entry['counters'] = len(set(sums['baseline']) | set(sums['candidate']))
        section['metrics'].append(entry)
    return section
