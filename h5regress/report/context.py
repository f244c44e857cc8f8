"""Where the metrics ran and which builds: from tonight's records and the manifest."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import history as hist_mod
from h5regress import runrecords
from h5regress.record import Record
from h5regress.report.jobs import JobFiles, launchers, read_job_files
from h5regress.report.text import _finite, _rows, short_label


# ------------------------------------------------------------------ where
def collect_context(result: Mapping[str, Any], records: Sequence[Record] = (),
                    manifest: Mapping[str, Any] | None = None,
                    perflogs: str | None = None,
                    jobs: Mapping[str, JobFiles] | None = None,
                    launched: Mapping[tuple[str, str], str | None] | None = None
                    ) -> dict[str, Any]:
    """What the gate result does not carry, from tonight's records and the manifest:
    the records of each metric (provenance: node list, file system, data, command),
    each run's job files by run id (``jobs``), the launcher of each (run id, command)
    as its job script ran it (``launched``) and
    whether the builds are stand-ins (their commit is this repository's)."""
    by_key: dict[str, list[Record]] = {}
    builds = (result.get('baseline'), result.get('candidate'))
    for r in records:
        if r.hdf5_build not in builds:
            continue
        if result.get('attempt') and not runrecords.of_attempt(r.pair_id, result['attempt']):
            continue
        by_key.setdefault(hist_mod.metric_key(*r.key), []).append(r)
    mbuilds = (manifest or {}).get('builds') or {}
    standin = 'stand-in' in str((manifest or {}).get('spack_version', '')) or any(
        str(((mbuilds.get(b) or {}).get('hdf5') or {}).get('variants', '')).startswith('stand-in')
        for b in builds) or all('standin' in str(b) for b in builds)
    return {'records': by_key, 'manifest': manifest or {}, 'standin': standin,
            'perflogs': perflogs, 'jobs': dict(jobs or {}), 'launched': dict(launched or {})}


def _command(rec: Record) -> Any:
    prov = rec.provenance or {}
    return prov.get('command_line') or prov.get('command')


def find_jobs(result: Mapping[str, Any], night_dir: Path | None, records: Sequence[Record]
              ) -> tuple[dict[str, JobFiles], dict[tuple[str, str], str | None]]:
    """Each run's job files, from the run reports the nightly leaves in
    ``<night_dir>/reports/<attempt>/`` (its ReFrame output in ``<night_dir>/output``),
    and the launcher of each record's command in its job script."""
    if night_dir is None or not result.get('attempt'):
        return {}, {}
    jobs = read_job_files(night_dir / runrecords.REPORTS / str(result['attempt']),
                          night_dir / 'output')
    return jobs, launchers(jobs, ((r.run_id, str(_command(r))) for r in records
                                  if r.run_id in jobs and _command(r)))


def find_context(result: Mapping[str, Any], night_dir: Path | None,
                 perflogs: str | None = None, manifest: str | None = None,
                 records: Sequence[Record] | None = None) -> dict[str, Any]:
    """:func:`collect_context` from files: ``records`` when the caller has read them
    (the gate's: a night reads its run records once), else those of ``perflogs`` when
    given, else of the attempt's run reports where the nightly leaves them (those its
    gate read: :func:`h5regress.runrecords.of_night`); ``manifest`` when given, else
    ``<night_dir>/manifest.json``. The perflogs (``<night_dir>/perflogs/<attempt>``
    unless given) are linked for people. Missing files leave the fields unknown."""
    attempt = str(result.get('attempt') or '')
    if records is None and perflogs:
        records = runrecords.read(perflogs=[perflogs]).records
    elif records is None and night_dir is not None and attempt:
        records = runrecords.of_night(night_dir, attempt).records
    records = list(records or ())
    if not perflogs and night_dir is not None and attempt:
        cand = night_dir / runrecords.PERFLOGS / attempt
        perflogs = str(cand) if cand.is_dir() else None
    if manifest is None and night_dir is not None and (night_dir / 'manifest.json').is_file():
        manifest = str(night_dir / 'manifest.json')
    man = None
    if manifest:
        try:
            man = json.loads(Path(manifest).read_text(encoding='utf-8'))
        except (OSError, ValueError):
            man = None
    rel = None
    if perflogs and night_dir is not None:
        try:
            rel = str(Path(perflogs).resolve().relative_to(night_dir.resolve()))
        except ValueError:
            rel = None
    ctx = collect_context(result, records, man if isinstance(man, dict) else None, rel,
                          *find_jobs(result, night_dir, records))
    # where they are, for a link from wherever the page is written
    ctx['perflogs_dir'] = str(Path(perflogs).resolve()) if perflogs else None
    return ctx


def _bytes(n: Any) -> str:
    if not _finite(n) or n <= 0:
        return '–'
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if n < 1024 or unit == 'TiB':
            return f'{n:.0f} {unit}' if unit == 'B' else f'{n:.1f} {unit}'
        n /= 1024
    return '–'


def _num(*values: Any) -> float | None:
    """The first finite value of ``values`` (None if none)."""
    return next((float(v) for v in values if _finite(v)), None)


def _ior_bytes(params: Mapping[str, Any], command: Any = None) -> float | None:
    """IOR: block x segments x tasks (its aggregate file size), once per repetition of
    this execution: its command's ``-i`` when it says (the check reads with one
    execution of ``-i 1`` per repetition), else the check's repetitions."""
    block, segments = _num(params.get('blockSize')), _num(params.get('segmentCount'))
    tasks = _num(params.get('numTasks'), params.get('num_ranks'))
    if block is None or segments is None or tasks is None:
        return None
    said = re.search(r'(?:^|\s)-i\s+(\d+)(?=\s|$)', str(command or ''))
    reps = float(said.group(1)) if said else _num(params.get('repetitions'))
    return block * segments * tasks * (reps or 1)


def _files_bytes(files: Any, operation: str) -> float | None:
    """The bytes of the files a run left (FLASH-IO: ``size_bytes``, h5paths: ``bytes``);
    of the record's kind of file where they say theirs (FLASH-IO's checkpoint, plot
    files, corner)."""
    if not isinstance(files, list) or not files:
        return None
    own = [f for f in files if isinstance(f, dict) and f.get('kind') == operation]
    files = own or files
    sizes = [_num(f.get('size_bytes'), f.get('data_bytes'), f.get('bytes'))
             for f in files if isinstance(f, dict)]
    return float(sum(sizes)) if sizes and None not in sizes else None


def _mdtest_bytes(params: Mapping[str, Any]) -> float | None:
    """mdtest: items x bytes written into each, per iteration; None when it writes no
    data (metadata only)."""
    items, each = _num(params.get('items_total')), _num(params.get('write_bytes'))
    if items is None or not each:
        return None
    return items * each * (_num(params.get('iterations')) or 1)


def _data_bytes(rec: Record, sizes: Mapping[tuple[str, str, str], float] | None = None
                ) -> float | None:
    """Data one run of the tool wrote or read, from what the record says: a size the
    tool reported (fio's ``io_bytes`` of the record's direction; the ``size`` record of
    the same run and operation, in ``sizes`` by (run id, build, operation): MACSio,
    h5bench, FLASH-IO), the files it left (h5paths), or its options (IOR, mdtest)."""
    prov, params = rec.provenance or {}, rec.params or {}
    for src in (prov, params):
        for k in ('data_bytes', 'aggregate_bytes', 'bytes_written', 'total_bytes'):
            if _finite(src.get(k)):
                return float(src[k])
    moved = prov.get('io_bytes')
    moved = moved.get(rec.operation) if isinstance(moved, dict) else moved
    if _finite(moved) and moved > 0:
        return float(moved)
    reported = (sizes or {}).get((rec.run_id, rec.hdf5_build, rec.operation))
    if reported:
        return reported
    for found in (_files_bytes(prov.get('files'), rec.operation),
                  _ior_bytes(params, _command(rec)), _mdtest_bytes(params)):
        if found:
            return found
    for w in prov.get('warnings') or []:
        got = re.search(r'data written \((\d+) B\)', str(w))
        if got:
            return float(got.group(1))
    return None


def reported_sizes(ctx: Mapping[str, Any]) -> dict[tuple[str, str, str], float]:
    """The ``size`` records (B) of tonight's runs by (run id, build, operation): MACSio,
    h5bench and FLASH-IO report the bytes of a run's phase as a record of their own."""
    return {(r.run_id, r.hdf5_build, r.operation): float(r.value)
            for recs in ctx['records'].values() for r in recs
            if r.metric == 'size' and r.unit == 'B' and _finite(r.value) and r.value > 0}


def _nodes(m: Mapping[str, Any], rec: Record | None) -> tuple[str, str]:
    """('nodes × ranks', node list) of a metric."""
    params = (rec.params if rec else None) or m.get('params') or {}
    nn, nr = params.get('num_nodes'), params.get('num_ranks')
    count = f'{nn or "?"} × {nr or "?"}' if nn or nr else '–'
    nl = (rec.provenance or {}).get('nodelist') if rec else None
    if isinstance(nl, (list, tuple)):
        nl = ','.join(map(str, nl))
    return count, str(nl) if nl else '–'


WHERE_COLUMNS = ('metric', 'system:partition', 'nodes × ranks', 'node list', 'file system',
                 'data per run', 'command (one candidate run, with its launcher)',
                 'Spack spec (candidate HDF5)')


def launched_command(rec: Record, ctx: Mapping[str, Any]) -> str:
    """A run's command line as its job ran it: the launcher from its job script (when
    the night's run reports and output are at hand) before the tool's command."""
    command = str(_command(rec) or '–')
    launcher = (ctx.get('launched') or {}).get((rec.run_id, command))
    return f'{launcher} {command}' if launcher else command


def spack_spec(result: Mapping[str, Any], ctx: Mapping[str, Any], side: str = 'candidate') -> str:
    """The Spack spec of a build's HDF5 from the manifest: version, variants, hash."""
    hdf5 = ((ctx['manifest'].get('builds') or {}).get(result[side]) or {}).get('hdf5') or {}
    if not hdf5:
        return '–'
    spec = f'hdf5@{hdf5.get("version") or "?"} {hdf5.get("variants") or ""}'.strip()
    return spec + (f' /{str(hdf5["hash"])[:7]}' if hdf5.get('hash') else '')


def where_rows(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> list[list[str]]:
    """Where each gated metric ran: system, nodes, file system, data size, command."""
    rows = []
    sizes = reported_sizes(ctx)
    for m in _rows(result, 'gated'):
        recs = ctx['records'].get(m['key']) or []
        cand = [r for r in recs if r.hdf5_build == result['candidate']] or recs
        # a run whose job script is at hand (ReFrame empties a case's output while
        # it runs again), for the launcher
        launched = ctx.get('launched') or {}
        rec = next((r for r in cand if launched.get((r.run_id, str(_command(r))))),
                   cand[0] if cand else None)
        prov = (rec.provenance or {}) if rec else {}
        count, nodelist = _nodes(m, rec)
        rows.append([short_label(m), m.get('system') or '–', count, nodelist,
                     str(prov.get('fs_type') or '–'),
                     _bytes(_data_bytes(rec, sizes)) if rec else '–',
                     launched_command(rec, ctx) if rec else '–', spack_spec(result, ctx)])
    return rows


def _commit_label(result: Mapping[str, Any], side: str, ctx: Mapping[str, Any]) -> str:
    build = result[side]
    commit = result.get(f'{side}_commit') or (
        ((ctx['manifest'].get('builds') or {}).get(build) or {}).get('hdf5') or {}).get('commit')
    if ctx.get('standin'):
        return f"stand-in (this repository's commit){' ' + str(commit)[:12] if commit else ''}"
    return str(commit)[:12] if commit else '?'


def _hdf5_version(result: Mapping[str, Any], side: str, ctx: Mapping[str, Any]) -> str:
    for recs in ctx['records'].values():
        for r in recs:
            if r.hdf5_build == result[side] and (r.provenance or {}).get('hdf5_version'):
                return str(r.provenance['hdf5_version'])
    return '–'


BUILD_COLUMNS = ('build', 'build id', 'HDF5 commit', 'HDF5 library version (as the tool saw it)',
                 'Spack spec (HDF5)')


def build_rows(result: Mapping[str, Any], ctx: Mapping[str, Any]) -> list[list[str]]:
    return [[name, str(result[side]), _commit_label(result, side, ctx),
             _hdf5_version(result, side, ctx), spack_spec(result, ctx, side)]
            for name, side in (('baseline', 'baseline'), ('candidate (tonight)', 'candidate'))]

