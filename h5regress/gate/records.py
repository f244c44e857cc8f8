"""Rules, input records and their grouping per metric and build."""

from __future__ import annotations

import dataclasses
import datetime
import fnmatch
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from h5regress import durability, runrecords
from h5regress import refs as refs_mod
from h5regress.cmdline import UsageError
from h5regress.record import Record
from h5regress.runrecords import of_attempt


def _match_value(pattern: Any, value: Any) -> bool:
    pats = pattern if isinstance(pattern, list) else [pattern]
    sval = str(value).lower()
    return any(fnmatch.fnmatchcase(sval, str(p).lower()) for p in pats)


def rule_matches(rule: Mapping[str, Any], tool: str, operation: str, metric: str,
                 params: Mapping[str, Any]) -> bool:
    for field, value in (('tool', tool), ('operation', operation), ('metric', metric)):
        if field in rule and not _match_value(rule[field], value):
            return False
    for pkey, pat in (rule.get('params') or {}).items():
        if pkey not in params or not _match_value(pat, params[pkey]):
            return False
    return True


def role_of(cfg: Mapping[str, Any], tool: str, operation: str, metric: str,
            params: Mapping[str, Any]) -> str:
    for role in ('canary', 'control', 'gated'):
        if any(rule_matches(r, tool, operation, metric, params) for r in cfg[role]):
            return role
    return 'reported'


# ------------------------------------------------------------------ input
def load_records(record_paths: Sequence[str] = (), perflog_dirs: Sequence[str] = (),
                 report_dirs: Sequence[str] = ()) -> tuple[list[Record], list[str]]:
    """Records from JSONL files, perflog directories and ReFrame run reports (files or
    directories), read by :func:`h5regress.runrecords.read`; bad lines become problems.

    A missing path is a usage error (``FileNotFoundError``); a malformed line
    is skipped and named in the problems.
    """
    got = runrecords.read(records=record_paths, perflogs=perflog_dirs, reports=report_dirs)
    return got.records, got.problems


def check_builds(records: Sequence[Record], baseline: str, candidate: str,
                 attempt: str | None = None, ran: Sequence[tuple[str, str]] = ()) -> None:
    """A build id no record carries is a usage error naming the ids that are there
    (a mistyped id would otherwise read as INCONCLUSIVE: no samples), unless a run
    report shows that build ran (``ran``: the (pair id, build) of each side read): a
    build whose every run left no record (skipped, failed sanity) is then judged, each
    gated row it broke an ERROR."""
    builds = {r.hdf5_build for r in records
              if attempt is None or of_attempt(r.pair_id, attempt)}
    builds |= {build for pair_id, build in ran if attempt is None or of_attempt(pair_id, attempt)}
    for option, build in (('--baseline', baseline), ('--candidate', candidate)):
        if build not in builds:
            raise UsageError(
                f'{option} {build!r}: no record has this build; the records '
                f'{f"of attempt {attempt} " if attempt else ""}have '
                f'{", ".join(sorted(builds)) or "no build at all"} (a build whose every '
                f'run failed sanity leaves no record)')


def default_night(records: Sequence[Record]) -> str:
    """UTC date of the newest record (today when there is none)."""
    return _night_of(max((str(r.timestamp) for r in records), default=''))


def _night_of(timestamp: str) -> str:
    """The night id of a timestamp: its UTC date (today without one)."""
    return timestamp[:10] if timestamp else \
        datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')


def _commit(rec: Record) -> str | None:
    for src in (rec.provenance, rec.params):
        if isinstance(src, Mapping) and src.get('hdf5_commit'):
            return str(src['hdf5_commit'])
    return None


def _true_ratio(rec: Record) -> float | None:
    v = rec.provenance.get('true_ratio') if isinstance(rec.provenance, Mapping) else None
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def without_build(test: str) -> str:
    """A test's ReFrame name without its ``%hdf5_build=`` parameter: the same test on
    either side of the night."""
    return re.sub(r' %hdf5_build=\S+', '', test or '')


def _label(test: str, tool: str, operation: str, metric: str, chash: str,
           params: Mapping[str, Any] | None = None) -> str:
    """Short readable name: ``<test> <operation> <metric> [<hash>]``.

    ReFrame's unique names (``ior_check_1a2b3c4d``) say nothing: they become
    the class name and the check's reference row (``case``) when known."""
    # baseline and candidate differ in their build only: leave it out of the label
    name = without_build(test) or tool
    if refs_mod._VARIANT.search(name.split()[0] if name.split() else ''):
        name = refs_mod.test_class(name)
        try:
            name += ' ' + str(refs_mod.index_value('case', '', params or {}))
        except KeyError:
            pass
    return f'{name} {operation} {metric} [{chash[:6]}]'


# ------------------------------------------------------------------ collect
@dataclasses.dataclass
class _Group:
    """The samples of one metric (one record key) tonight, by side."""
    rec: Record                 # its first record: what describes the metric
    base: dict[str, list[float]] = dataclasses.field(default_factory=dict)   # pair id -> values
    cand: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    base_free: list[float] = dataclasses.field(default_factory=list)        # runs without a pair
    cand_free: list[float] = dataclasses.field(default_factory=list)
    perf_fail: int = 0          # samples outside their reference envelope (kept)
    tr_base: set = dataclasses.field(default_factory=set)   # true ratios the records state
    tr_cand: set = dataclasses.field(default_factory=set)
    flush_base: set = dataclasses.field(default_factory=set)   # write_flush the records state
    flush_cand: set = dataclasses.field(default_factory=set)
    # pair (or run) ids of the runs whose value was <= 0 (skipped, not samples), by side
    non_positive: dict[str, set] = dataclasses.field(
        default_factory=lambda: {'base': set(), 'cand': set()})

    def add(self, side: str, rec: Record) -> None:
        (self.tr_base if side == 'base' else self.tr_cand).add(_true_ratio(rec))
        (self.flush_base if side == 'base' else self.flush_cand).add(
            durability.write_flush_of(rec.provenance, rec.operation, rec.metric))
        if rec.pair_id is None:
            (self.base_free if side == 'base' else self.cand_free).append(rec.value)
        else:
            pairs = self.base if side == 'base' else self.cand
            pairs.setdefault(str(rec.pair_id), []).append(rec.value)


@dataclasses.dataclass
class _Night:
    """What :func:`collect` keeps of the night's records."""
    groups: dict[tuple, _Group]
    counts: dict[str, int]
    problems: list[str]
    commits: dict[str, dict[str, int]]       # side -> HDF5 commit -> records
    last_ts: str = ''
    # metric key -> side -> pair (or run) ids of the records skipped for a value <= 0
    non_positive: dict[tuple, dict[str, set]] = dataclasses.field(default_factory=dict)

    def skip(self, count: str, problem: str | None = None) -> bool:
        self.counts[count] += 1
        if problem:
            self.problems.append(problem)
        return False

    def commit(self, side: str) -> str | None:
        """The commit most records of one side name."""
        seen = self.commits[side]
        return max(seen, key=seen.get) if seen else None


def collect(records: Iterable[Record], baseline: str, candidate: str,
            problems: Sequence[str] = (), attempt: str | None = None,
            excluded_pairs: Collection[str] = ()) -> _Night:
    """Samples per metric of the two builds (of one nightly ``attempt`` when given);
    other builds, other attempts, the records of ``excluded_pairs`` (contended:
    :mod:`h5regress.gate.contention`) and bad records counted."""
    night = _Night({}, {'records': 0, 'malformed': len(problems), 'other_build': 0,
                        'other_attempt': 0, 'contended': 0, 'duplicates': 0,
                        'non_positive': 0, 'direction_conflicts': 0, 'perf_fail_samples': 0},
                   list(problems), {'base': {}, 'cand': {}})
    seen: set = set()
    for rec in records:
        night.counts['records'] += 1
        if attempt is not None and not of_attempt(rec.pair_id, attempt):
            night.skip('other_attempt')
            continue
        if rec.pair_id is not None and str(rec.pair_id) in excluded_pairs:
            night.skip('contended')
            continue
        if rec.hdf5_build == baseline:
            side = 'base'
        elif rec.hdf5_build == candidate:
            side = 'cand'
        else:
            night.skip('other_build')
            continue
        if not _admit(night, rec, seen, side):
            continue
        g = night.groups[rec.key]
        if rec.result == 'perf_fail':
            g.perf_fail += 1
            night.counts['perf_fail_samples'] += 1
        night.last_ts = max(night.last_ts, str(rec.timestamp))
        c = _commit(rec)
        if c:
            night.commits[side][c] = night.commits[side].get(c, 0) + 1
        g.add(side, rec)
    for key, ids in night.non_positive.items():
        if key in night.groups:
            night.groups[key].non_positive = ids
    return night


def _admit(night: _Night, rec: Record, seen: set, side: str) -> bool:
    """Whether a record of the two builds is a sample; counts and names those that are not."""
    if not isinstance(rec.params, Mapping) or not isinstance(rec.provenance, Mapping):
        return night.skip('malformed', f'run {rec.run_id}: params/provenance not mappings, '
                                       f'skipped')
    if rec.value <= 0:
        night.non_positive.setdefault(rec.key, {'base': set(), 'cand': set()})[side].add(
            str(rec.pair_id if rec.pair_id is not None else rec.run_id))
        return night.skip('non_positive', f'run {rec.run_id} {rec.operation} {rec.metric}: '
                                          f'value {rec.value} <= 0, skipped')
    ident = (rec.run_id, rec.hdf5_build, rec.key)
    if ident in seen:
        return night.skip('duplicates')
    seen.add(ident)
    g = night.groups.get(rec.key)
    if g is None:
        g = night.groups[rec.key] = _Group(rec)
    if rec.higher_is_better != g.rec.higher_is_better:
        return night.skip('direction_conflicts',
                          f'run {rec.run_id} {rec.operation} {rec.metric}: '
                          f'higher_is_better disagrees with other runs, skipped')
    return True
