"""MACSio's run as its log states it, per rank and dump (:class:`MacsioRun`), and the
files it must have left (:func:`check_files`): what the parser of its log
(:mod:`h5regress.parsers.macsio`) holds the data directory to."""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from h5regress.parsers.base import ExpectedFile, ParsedRun, basename
from h5regress.parsers.base import check_files as check_expected


@dataclasses.dataclass
class DumpLine:
    """One rank's ``Dump NN BW`` line and the matching ``Stat BW`` line."""
    rank: int
    dump: int
    nbytes: float           # MACSio's problem bytes for this dump
    seconds: float
    stat_bytes: float | None = None   # bytes stat()ed on disk
    stat_tol: float = 0.0             # print precision of stat_bytes


@dataclasses.dataclass
class MacsioRun(ParsedRun):
    """A :class:`ParsedRun` that keeps the per-rank dump lines for :func:`check_files`."""
    dumps: list[DumpLine] = dataclasses.field(default_factory=list)


_FILE_TAIL = r'_(?P<tag>[A-Za-z0-9]+)_(?:(?P<group>\d{5}|root)_)?(?P<dump>\d{3})\.(?P<ext>\w+)$'


_TAGS = {'hdf5': 'hdf5', 'miftmpl': 'json', 'silo': 'silo', 'exodus': 'exoII',
         'typhonio': 'typhonio', 'pdb': 'pdb'}


def check_files(run: ParsedRun, written: Mapping[str, int]) -> list[str]:
    """Problems with the data files a MACSio run left; empty when they match its log.

    ``written`` maps file names (any directory part is ignored) to sizes in
    bytes, as listed in the run's data directory before cleanup. Checked:

    - data files ``<filebase>_<tag>_[<group>_]<dump>.<ext>`` exist for every dump
      (``<tag>`` is ``hdf5`` or ``json`` for miftmpl, whose ``_root_`` files are
      not data), none is empty, and every dump has the same number of files:
      1 (or the SIF file count) in SIF mode, the file count (at most one per
      rank) in MIF mode, one per rank in MIFFPP mode;
    - each rank's ``Dump NN Stat`` size (what MACSio saw on disk) against the
      final size of the file(s) it looked at (:func:`_stat_expectations`);
    - the data files hold at least 90% of the bytes MACSio says it marshalled
      (skipped with compression; HDF5 files are ~0.01% smaller than the
      problem object, miftmpl's JSON text ~3x larger).

    The sizes go through :func:`h5regress.parsers.base.check_files`.
    """
    params = run.params
    base = posixpath.basename(str(run.provenance.get('filebase', 'macsio')))
    interface = params.get('interface')
    tag = _TAGS.get(interface) if interface else None
    by_dump, groups, roots = _data_files(base, tag, written)
    if not by_dump:
        return [f'no data files named {base}_{tag or "*"}_* among the {len(written)} '
                'files written']
    dumps = getattr(run, 'dumps', [])
    per_dump = _files_per_dump(params)
    problems = _count_problems(by_dump, params.get('num_dumps') or len({d.dump for d in dumps}),
                               per_dump)
    names = sorted(n for files in by_dump.values() for n in files)
    expected = [ExpectedFile((name,), min_size=1, missing=None,
                             out_of_range='empty file(s): {name}') for name in names]
    expected += _stat_expectations(dumps, by_dump, groups, roots, params.get('num_ranks'),
                                   per_dump)
    claimed = _claimed_bytes(run)
    if claimed:
        expected.append(ExpectedFile(tuple(names), min_size=0.9 * claimed, missing=None,
                                     out_of_range='data files hold {size} B, MACSio claims '
                                                  '{claimed:.0f} B',
                                     fields={'claimed': claimed}))
    return problems + check_expected(expected, written)


def _data_files(base: str, tag: str | None, written: Mapping[str, int]
                ) -> tuple[dict[int, dict[str, int]], dict[str, int | None],
                           dict[int, dict[str, int]]]:
    """(data files by dump, the MIF group of each (None: SIF), miftmpl's root files by dump)
    among the files written: name -> size."""
    file_re = re.compile('^' + re.escape(base) + _FILE_TAIL)
    by_dump: dict[int, dict[str, int]] = {}
    groups: dict[str, int | None] = {}
    roots: dict[int, dict[str, int]] = {}
    for name, size in written.items():
        m = file_re.match(basename(name))
        if not m or (tag and m.group('tag') != tag):
            continue
        dump = int(m.group('dump'))
        if m.group('group') == 'root':      # miftmpl's per-dump root file: metadata
            roots.setdefault(dump, {})[basename(name)] = int(size)
            continue
        by_dump.setdefault(dump, {})[basename(name)] = int(size)
        groups[basename(name)] = int(m.group('group')) if m.group('group') else None
    return by_dump, groups, roots


def _count_problems(by_dump: Mapping[int, Mapping[str, int]], ndumps: int,
                    expected: int | None) -> list[str]:
    """Dumps without files or not asked for, and dumps with the wrong number of files."""
    problems = []
    if ndumps:
        missing = sorted(set(range(ndumps)) - set(by_dump))
        extra = sorted(set(by_dump) - set(range(ndumps)))
        if missing:
            problems.append(f'no files for dump(s) {", ".join(map(str, missing))} '
                            f'of {ndumps}')
        if extra:
            problems.append(f'files for unexpected dump(s) {", ".join(map(str, extra))}')
    counts = {d: len(f) for d, f in by_dump.items()}
    if expected is not None:
        bad = {d: c for d, c in counts.items() if c != expected}
        if bad:
            problems.append(f'expected {expected} file(s) per dump, found '
                            + ', '.join(f'{c} for dump {d}' for d, c in sorted(bad.items())))
    elif len(set(counts.values())) > 1:
        problems.append('dumps have different file counts: '
                        + ', '.join(f'{c} for dump {d}' for d, c in sorted(counts.items())))
    return problems


def _claimed_bytes(run: ParsedRun) -> float:
    """The bytes MACSio says it marshalled; 0 when unknown or compressed."""
    if run.params.get('compression'):
        return 0.0
    try:
        return run.measurement('write', 'size').value
    except KeyError:
        return 0.0


def mif_group(rank: int, num_ranks: int, num_files: int) -> int:
    """The file (MIF group) ``rank`` writes: MACSio's ``MACSIO_MIF_RankOfGroup``.

    Groups are runs of consecutive ranks; the first ``num_ranks % num_files`` groups
    have one rank more. Within a group the ranks write in turn, in rank order.
    """
    size, extra = divmod(num_ranks, num_files)
    split = extra * (size + 1)
    return rank // (size + 1) if rank < split else extra + (rank - split) // size


#: MACSio sums ``st_size`` into an ``int`` (macsio_utils.c, MACSIO_UTILS_StatFiles): its
#: Stat sizes of files from 2 GiB on are wrapped, and not compared.
_STAT_INT_LIMIT = 2 ** 31


def _stat_expectations(dumps: Sequence[DumpLine], by_dump: Mapping[int, Mapping[str, int]],
                       groups: Mapping[str, int | None], roots: Mapping[int, Mapping[str, int]],
                       num_ranks: int | None, num_files: int | None) -> list[ExpectedFile]:
    """What each rank's ``Dump NN Stat`` size says about the final size of what it looked at.

    After its dump every rank stat()s the files it wrote that dump (macsio_main.c,
    ``MACSIO_UTILS_StatFiles``), without waiting for the other ranks, so:

    - the ranks sharing a file (MIF with fewer files than ranks: they take turns
      through MACSio's baton, and look as soon as they hand it on; SIF) may see it
      partly written: none saw more than its final size, and the largest size they
      saw is its final size (the last writer looks at the complete file);
    - miftmpl ranks also stat the dump's root file, which all ranks then write in
      turn, in rank order (a second baton): each rank saw at most its data file and
      the root file, and the last rank, last in its data file's group and in the
      root file, saw both complete.
    """
    out = []
    for dump, files in sorted(by_dump.items()):
        lines = [d for d in dumps if d.dump == dump and d.stat_bytes is not None]
        if not lines:
            continue
        ranks = num_ranks or max(d.rank for d in lines) + 1
        root = roots.get(dump, {})
        root_names = tuple(root) if sum(root.values()) else ()
        sharers = _sharers(lines, files, groups, ranks, num_files or len(files))
        for name, seen in sorted(sharers.items()):
            if max(files[name], sum(root.values())) < _STAT_INT_LIMIT:
                out += _stat_bounds((name, *root_names), seen, dump, ranks)
    return out


def _sharers(lines: Sequence[DumpLine], files: Mapping[str, int],
             groups: Mapping[str, int | None], ranks: int,
             count: int) -> dict[str, list[DumpLine]]:
    """The ranks' Stat lines of one dump by the data file each rank wrote."""
    by_group = {groups.get(name): name for name in files}
    sharers: dict[str, list[DumpLine]] = {}
    for line in lines:
        if None in by_group and len(files) == 1:        # SIF: every rank's file
            name = by_group[None]
        else:
            name = by_group.get(mif_group(line.rank, ranks, count))
        if name is not None:     # a missing file is reported with the file counts
            sharers.setdefault(name, []).append(line)
    return sharers


def _stat_bounds(names: tuple[str, ...], seen: Sequence[DumpLine], dump: int,
                 ranks: int) -> list[ExpectedFile]:
    """The sizes the ranks in ``seen`` allow for a data file (and its dump's root file)."""
    what = (f'{names[0]} and the root file of dump {dump} have' if len(names) > 1
            else f'{names[0]} has')
    fields = {'what': what, 'dump': dump}
    out = [ExpectedFile(names, min_size=line.stat_bytes - line.stat_tol - 1, missing=None,
                        out_of_range='rank {rank} saw {seen:.0f} B on disk after dump {dump}, '
                                     'more than {what} ({size} B)',
                        fields={**fields, 'rank': line.rank, 'seen': line.stat_bytes})
           for line in seen]
    if len(names) > 1:
        ref = next((line for line in seen if line.rank == ranks - 1), None)
        text = '{what} {size} B, but rank {rank}, the last to write, saw {seen:.0f} B after ' \
               'dump {dump}'
    else:
        ref = max(seen, key=lambda line: line.stat_bytes)
        text = '{what} {size} B, but the rank(s) writing it saw at most {seen:.0f} B after ' \
               'dump {dump}'
    if ref is not None:
        out.append(ExpectedFile(names, min_size=ref.stat_bytes - ref.stat_tol - 1,
                                max_size=ref.stat_bytes + ref.stat_tol + 1, missing=None,
                                out_of_range=text,
                                fields={**fields, 'rank': ref.rank, 'seen': ref.stat_bytes}))
    return out


def _files_per_dump(params: Mapping[str, Any]) -> int | None:
    if 'file_count' not in params:      # mode not from a command line: count unknown
        return None
    mode, count = params.get('parallel_file_mode'), params.get('file_count')
    ranks = params.get('num_ranks')
    if mode == 'SIF':
        return count or 1
    if mode == 'MIF' and count and ranks:
        return min(count, ranks)
    if mode == 'MIFFPP' and ranks:
        return ranks
    return None
