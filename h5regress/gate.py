"""``h5regress gate``: the nightly verdict on a candidate HDF5 build.

Input: records (JSON lines of :class:`h5regress.record.Record`, ``--records``)
and/or ReFrame perflogs (``--perflogs``, read by :mod:`h5regress.perflog`).
Records of the build named by ``--baseline`` are the baseline, those of
``--candidate`` the candidate; they share ``config_hash`` per test and carry
``pair_id`` (one baseline and one candidate run back to back, ABBA order).

Roles (rules in ``ci/gate.yaml``, the one place of the gate's configuration: see
:mod:`h5regress.gateconfig`):

* ``gated``: the one primary metric per test (IOR HDF5 write ``bw_mean``,
  FLASH-IO checkpoint and MACSio write ``bw``, h5bench ``observed_rate``):
  gets a verdict;
* ``canary``: the same pattern through MPI-IO (``api: MPIIO``): HDF5/MPI-IO
  ratio (WARN below 1 - ``hdf5_overhead``), night DEGRADED when a canary
  falls far below its own history; its A/B comparison is a control;
* ``control``: metrics HDF5 does not touch (POSIX, fio): their true A/B ratio
  is 1, so they are judged like gated metrics only to measure false alarms;
* ``reported``: everything else: ratio and interval, no verdict.

Per gated metric (see :mod:`h5regress.stats`): log performance ratios of the
pairs, Wilcoxon signed-rank p-value (one-sided, slowdown) and Hodges-Lehmann
estimate with its exact 95 % interval; Benjamini-Hochberg across the night's
gated metrics. With 10-14 pairs (``tonight_t_test``) and no usable history,
Student's t test on the pair log-ratios instead (``method: student-t``): the
exact test's p cannot go below 2^-n, so at the loop's first look no slowdown
of a night of several metrics could FAIL.

Two modes (``modes`` in the config): when the baseline's runs and the
candidate's each fall in two modes (runs landing near one of two levels, as
IOR's 4 MiB writes do on a VM: :func:`h5regress.stats.two_modes`) and each
build's own split agrees with the split of both builds' runs, each run is
measured from the centre of its mode before the pairs are compared (signed-rank
test). A slowdown that moves a build's modes against the other's, or a
candidate landing in the slow mode more often than the baseline, is compared
as it is, so that it counts (``modes`` in each metric's result says what was
found and done, ``centred`` whether the runs were measured from their modes).

Variance from history (``history_variance`` in the config): when at least
``min_nights`` (8) of the newest ``window`` (20) past nights of the same
metric key had at least ``min_pairs`` (10) pairs, the variance of their pair
log-ratios is pooled (outlier nights screened out, df = sum(n_i - 1)) and,
if tonight's own variance passes an upper F test against it at
``consistency_level`` (0.2: a night even somewhat noisier than its history
judges itself), tonight is judged by a one-sided t test of the mean
log-ratio with that variance and the pooled df (interval mean +- t * sigma /
sqrt(n)): ``method: pooled-t``. Otherwise, and without history, the
signed-rank method; ``variance`` in each metric's result says which was used
and why (pooled sigma, df, nights, tonight's sigma, F and its p).

Verdicts (:func:`decide`), with m = margin (5 %), alpha the FDR level (1 %):

* FAIL: BH-adjusted p <= alpha (its alpha-spending share at an early look)
  and the one-sided ``margin_confidence`` (95 %) upper bound of the ratio
  below 1 - m: significantly slower, and shown slower than the margin allows;
* PASS: the lower end of the 95 % interval above 1 - m (at an early look the
  lower bound at 1 - its share of 2.5 %: a stricter one);
* INCONCLUSIVE otherwise (the nightly script runs more pairs, up to its last
  look); ``slower: true`` marks "significantly slower, not shown beyond the
  margin". Each metric's result carries ``fail_bound`` (the upper bound FAIL
  compares), ``noise_sigma`` and ``pairs_for_pass``: how many pairs a PASS
  would need on 9 of 10 unchanged nights at that noise.

With ``--looks 10,15,20`` (the pair counts at which the nightly's rerun loop
gates), a FAIL at look k needs q <= the k-th level of an alpha-spending
boundary (:func:`h5regress.stats.sequential_levels`: alpha * (n_k/n_K)^2
spent by look k, exact under the normal approximation), and a PASS the lower
bound at the k-th level of the same spending of 2.5 %: a strong, early
regression (or a clear PASS) stops the reruns, and the whole loop keeps the
error rates of a single look; weaker evidence stays INCONCLUSIVE until more
pairs come.

Write flush (:mod:`h5regress.durability`): each write figure's records say where its
timed phase ends, ``write_flush``: ``fsync``, ``O_SYNC``, ``O_DIRECT`` or ``none`` (the
page cache). A judged metric (gated, canary, control) whose records disagree on it --
baseline ``fsync``, candidate ``none``; a side that mixes values; a side whose records
do not say it against one that does -- compares two different things: its verdict is
ERROR, naming both sides' values, and a gated one makes the night ERROR (exit 4: the
configuration of the two builds' runs differs; fix it and rerun, whatever the other
metrics said). A gated write figure of ``none`` is judged as usual (both sides hand
their data to the page cache alike) but is not called a storage figure: the row says
``flushed: false`` and its reason "not flushed to storage", the night lists it in
``not_flushed`` and the text output in a ``NOT FLUSHED`` line. Each row carries
``write_flush`` (None for reads and records made before the key existed).

No candidate samples: a gated metric whose baseline has samples and whose
candidate has none (each candidate run failed its sanity and left no record, or
measured <= 0) is ERROR, naming the failed runs: the candidate breaks the
benchmark, and no number of pairs would decide it (the night ERRORs, exit 4).

Exit codes (:data:`EXIT_CODES`): 0 PASS, 1 FAIL, 2 INCONCLUSIVE (a possible
slowdown), 3 DEGRADED (a canary far below its history: no verdict, rerun), 5
NO-SLOWDOWN-SEEN (no sign of a slowdown, no PASS: every gated metric carries
``sensitivity``, the smallest slowdown the night would have seen; :func:`decide`),
4 ERROR (bad usage,
unreadable input, nothing to gate, a gated metric without candidate samples). argparse's own exit code 2 is replaced
by 4 so that a usage error never reads as INCONCLUSIVE.

Also: reference envelopes applied to the candidate (reported, not gating),
change points in the history of main (Apache Otava on nightly log medians,
:mod:`h5regress.creep`, with the commit range), the false-alarm rate per metric and per
night where the true ratio is known, and malformed records skipped and counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import atomic, creep, durability
from h5regress import history as hist_mod
from h5regress import perflog
from h5regress import refs as refs_mod
from h5regress import report as report_mod
from h5regress import stats
# the exit codes, the configuration and the argument parser are the gate's API too
# (gate.EXIT_FAIL, gate.load_config, ...): imported from where they live
from h5regress.cmdline import (EXIT_CODES, EXIT_DEGRADED, EXIT_ERROR,  # noqa: F401
                               EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_NO_SLOWDOWN_SEEN,
                               EXIT_PASS, ArgParser,
                               GATE_CONFIG_HELP, UsageError, parse_args)
from h5regress.gateconfig import (CONFIG_FILE, REFERENCES_DIR, ConfigError,  # noqa: F401
                                  load_config, looks_arg)
from h5regress.record import Record, read_jsonl


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
def load_records(record_paths: Sequence[str] = (), perflog_dirs: Sequence[str] = ()
                 ) -> tuple[list[Record], list[str]]:
    """Records from JSONL files and perflog directories; bad lines become problems.

    A missing file is a usage error (``FileNotFoundError``); a malformed line
    is skipped and named in the problems.
    """
    records: list[Record] = []
    problems: list[str] = []
    for p in record_paths:
        path = Path(p)
        files = sorted(path.rglob('*.jsonl')) if path.is_dir() else [path]
        for f in files:
            text = f.read_text(encoding='utf-8', errors='replace')
            recs, probs = read_jsonl(text, str(f))
            records.extend(recs)
            problems.extend(probs)
    for d in perflog_dirs:
        if not Path(d).exists():   # not a malformed line: nothing to read at all
            raise FileNotFoundError(f'--perflogs {d}: no such file or directory')
    if perflog_dirs:
        recs, probs = perflog.read(list(perflog_dirs))
        records.extend(recs)
        problems.extend(str(p) for p in probs)
    return records, problems


def check_builds(records: Sequence[Record], baseline: str, candidate: str,
                 attempt: str | None = None) -> None:
    """A build id no record carries is a usage error naming the ids that are there
    (a mistyped id would otherwise read as INCONCLUSIVE: no samples)."""
    builds = {r.hdf5_build for r in records
              if attempt is None or of_attempt(r.pair_id, attempt)}
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


def _label(test: str, tool: str, operation: str, metric: str, chash: str,
           params: Mapping[str, Any] | None = None) -> str:
    """Short readable name: ``<test> <operation> <metric> [<hash>]``.

    ReFrame's unique names (``ior_check_1a2b3c4d``) say nothing: they become
    the class name and the check's reference row (``case``) when known."""
    # baseline and candidate differ in their build only: leave it out of the label
    name = re.sub(r' %hdf5_build=\S+', '', test or tool)
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


def of_attempt(pair_id: Any, attempt: str) -> bool:
    """Whether a record's pair id belongs to a nightly attempt (``<attempt>-p<i>``)."""
    return pair_id is not None and str(pair_id).rsplit('-p', 1)[0] == attempt


def collect(records: Iterable[Record], baseline: str, candidate: str,
            problems: Sequence[str] = (), attempt: str | None = None) -> _Night:
    """Samples per metric of the two builds (of one nightly ``attempt`` when given);
    other builds, other attempts and bad records counted."""
    night = _Night({}, {'records': 0, 'malformed': len(problems), 'other_build': 0,
                        'other_attempt': 0, 'duplicates': 0, 'non_positive': 0,
                        'direction_conflicts': 0, 'perf_fail_samples': 0},
                   list(problems), {'base': {}, 'cand': {}})
    seen: set = set()
    for rec in records:
        night.counts['records'] += 1
        if attempt is not None and not of_attempt(rec.pair_id, attempt):
            night.skip('other_attempt')
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


# ------------------------------------------------------------------ compare
@dataclasses.dataclass
class MetricComparison:
    """One metric of the night: the comparison of its builds (None without samples
    of both) and its row of the result (JSON: description, role, samples, ratios,
    then verdict)."""
    comp: stats.Comparison | None
    row: dict[str, Any]

    @property
    def role(self) -> str:
        return self.row['role']


def compare(groups: Mapping[tuple, _Group], cfg: Mapping[str, Any],
            history: hist_mod.History, aa: bool) -> list[MetricComparison]:
    """Candidate against baseline, per metric (pooled variance from history when it may)."""
    hv = cfg['history_variance']
    out = []
    for key, g in groups.items():
        r = g.rec
        role = role_of(cfg, r.tool, r.operation, r.metric, r.params)
        pooled = (pooled_from_history(history, hist_mod.metric_key(*key), hv)
                  if role != 'reported' else None)
        comp, info = _compare_samples(g, cfg, pooled)
        row = _describe(key, g, role, _known_ratio(g, role, aa))
        row['no_candidate'] = _no_candidate_samples(g) if role == 'gated' else None
        row.update(info)
        row['base_median'] = stats.median(info['base']) if info['base'] else None
        row['cand_median'] = stats.median(info['cand']) if info['cand'] else None
        both = info['base'] + info['cand']
        row['median_all'] = stats.median(both) if both else None
        row.update(_comparison_fields(comp, r.higher_is_better))
        out.append(MetricComparison(comp, row))
    return out


def _no_candidate_samples(g: _Group) -> str | None:
    """Why a metric whose baseline has samples and whose candidate has none cannot be
    judged however many pairs come (None: the candidate has samples, or neither has).

    The candidate's runs of the night are those of the pairs whose baseline run has a
    sample, and those whose record measured <= 0: each of them failed -- it left no
    record (its sanity failed, or it did not run) or a value <= 0."""
    n_base = sum(map(len, g.base.values())) + len(g.base_free)
    if g.cand or g.cand_free or not n_base:
        return None
    measured = g.non_positive['cand']
    runs = (f'{len(set(g.base) | measured)} candidate run(s) failed ({len(measured)} '
            f'measured <= 0, {len(set(g.base) - measured)} left no record: failed sanity '
            f'or did not run)' if g.base else
            f'{len(measured)} candidate record(s) measured <= 0 (runs without pair ids: '
            f'those that left no record are not counted)')
    return (f'no candidate samples: {runs}, against {n_base} baseline run(s) with samples'
            + (f' ({len(g.non_positive["base"])} more measured <= 0)'
               if g.non_positive['base'] else '')
            + ': the candidate breaks this benchmark; more pairs will not decide it')


def _known_ratio(g: _Group, role: str, aa: bool) -> float | None:
    """The true candidate/baseline ratio when it is known, else None."""
    if role in ('canary', 'control') or aa:
        return 1.0
    if len(g.tr_cand) == 1 and None not in g.tr_cand:
        tb = next(iter(g.tr_base)) if len(g.tr_base) == 1 else None
        return next(iter(g.tr_cand)) / (tb or 1.0)
    return None


def _describe(key: tuple, g: _Group, role: str, true_ratio: float | None) -> dict[str, Any]:
    r = g.rec
    return {
        'key': hist_mod.metric_key(*key),
        'label': _label(r.test, r.tool, r.operation, r.metric, r.config_hash, r.params),
        'tool': r.tool, 'operation': r.operation, 'metric': r.metric, 'unit': r.unit,
        'higher_is_better': r.higher_is_better, 'test': r.test,
        'test_class': refs_mod.test_class(r.test, r.provenance, r.params),
        'perf_var': refs_mod.perf_var(r.operation, r.metric, r.provenance),
        'system': r.system, 'params': r.params, 'config_hash': r.config_hash,
        'role': role, 'n_base': sum(map(len, g.base.values())) + len(g.base_free),
        'n_cand': sum(map(len, g.cand.values())) + len(g.cand_free),
        'perf_fail': g.perf_fail, 'true_ratio': true_ratio,
        **_flush_fields(g),
    }


#: how a figure that ends in the page cache is flagged (``write_flush: none``)
NOT_FLUSHED = 'not flushed to storage'


def _flush_fields(g: _Group) -> dict[str, Any]:
    """``write_flush`` of a metric (:mod:`h5regress.durability`): its one value, or,
    when its records disagree, ``{baseline: [...], candidate: [...]}`` and
    ``flush_conflict``, the reason the metric cannot be judged; ``flushed``: False
    when the figure ends in the page cache (``none``), None when unknown."""
    values = g.flush_base | g.flush_cand
    if values == {None}:                # no write figure, or records without the key
        return {'write_flush': None, 'flushed': None, 'flush_conflict': None}
    if len(values) == 1:
        value = next(iter(values))
        return {'write_flush': value, 'flushed': value != durability.NONE,
                'flush_conflict': None}
    name = lambda vs: '/'.join(sorted('unrecorded' if v is None else v for v in vs))  # noqa: E731
    return {'write_flush': {'baseline': sorted(map(str, g.flush_base)),
                            'candidate': sorted(map(str, g.flush_cand))},
            'flushed': None,
            'flush_conflict': (f'write_flush differs: baseline {name(g.flush_base)}, '
                               f'candidate {name(g.flush_cand)}: the runs do not end at the '
                               f'same point (to storage or to the page cache), so their '
                               f'ratio is no HDF5 change')}


def _comparison_fields(comp: stats.Comparison | None, higher_is_better: bool
                       ) -> dict[str, Any]:
    """Ratios of the values (candidate/baseline) and of the performance, p-values."""
    if comp is None:
        return {'method': None, 'n': 0, 'ratio': None, 'ratio_lo': None, 'ratio_hi': None,
                'perf_ratio': None, 'perf_lo': None, 'perf_hi': None, 'p_worse': None,
                'p_two_sided': None}
    sign = 1.0 if higher_is_better else -1.0
    return {
        'method': comp.method, 'n': comp.n,
        'perf_ratio': _fmt_ratio(comp.ratio), 'perf_lo': _fmt_ratio(comp.ratio_lo),
        'perf_hi': _fmt_ratio(comp.ratio_hi),
        'ratio': _fmt_ratio(math.exp(sign * comp.estimate)),
        'ratio_lo': _fmt_ratio(math.exp(sign * (comp.lo if sign > 0 else comp.hi))),
        'ratio_hi': _fmt_ratio(math.exp(sign * (comp.hi if sign > 0 else comp.lo))),
        'p_worse': comp.p_worse, 'p_two_sided': comp.p_two_sided,
    }


def _compare_samples(g: _Group, cfg: Mapping[str, Any], pooled: stats.PooledVariance | None
                     ) -> tuple[stats.Comparison | None, dict[str, Any]]:
    """The comparison of one metric's builds, and its samples and variance choice."""
    sign = 1.0 if g.rec.higher_is_better else -1.0
    pair_ids = sorted(set(g.base) & set(g.cand))
    gmean = lambda vs: math.exp(math.fsum(math.log(v) for v in vs) / len(vs))  # noqa: E731
    base_p = [gmean(g.base[p]) for p in pair_ids]
    cand_p = [gmean(g.cand[p]) for p in pair_ids]
    base_rest = g.base_free + [v for p, vs in g.base.items() if p not in g.cand for v in vs]
    cand_rest = g.cand_free + [v for p, vs in g.cand.items() if p not in g.base for v in vs]
    info = {
        'n_pairs': len(pair_ids),
        'incomplete_pairs': len(set(g.base) ^ set(g.cand)),
        'base': base_p + base_rest,
        'cand': cand_p + cand_rest,
        'lr_n': None, 'lr_var': None, 'variance': None, 'modes': None,
    }
    if pair_ids:
        comp, pinfo = compare_pairs(base_p, cand_p, g.rec.higher_is_better, cfg, pooled)
        info.update(pinfo)
        return comp, info
    if base_rest and cand_rest:
        return stats.rank_sum([sign * math.log(v) for v in base_rest],
                              [sign * math.log(v) for v in cand_rest], cfg['confidence']), info
    return None, info


def compare_pairs(base: Sequence[float], cand: Sequence[float], higher_is_better: bool,
                  cfg: Mapping[str, Any], pooled: stats.PooledVariance | None
                  ) -> tuple[stats.Comparison, dict[str, Any]]:
    """Candidate against baseline from aligned pairs ``(base[i], cand[i])`` (values,
    > 0): the comparison :func:`decide` judges, and what was done (``lr_n``,
    ``lr_var`` of the pair log-ratios, ``variance``: history or tonight and why,
    ``modes``: the bimodality check). The gate and ``benchmarks/calibrate.py``
    both call this function.

    Two modes (:func:`_modes`): when the baseline's runs and the candidate's each
    fall in two modes, and each build agrees with the modes of both builds' runs,
    each run is measured from the centre of its own mode before the pair's
    log-ratio is taken (a pair of one fast and one slow run says nothing about
    HDF5 until the modes' distance is taken out), and the test of tonight's pairs
    (:func:`_tonight_test`) judges those. Otherwise the pooled-t test with the
    history's variance when tonight's spread agrees with it
    (:func:`_variance_choice`), else, on tonight's pairs alone, Student's t test
    in the range of pairs of ``tonight_t_test`` (:func:`h5regress.stats.student_t`)
    and the signed-rank test outside it.
    """
    sign = 1.0 if higher_is_better else -1.0
    lb = [sign * math.log(v) for v in base]
    lc = [sign * math.log(v) for v in cand]
    d = [c - b for b, c in zip(lb, lc)]
    lr_var = stats.variance(d) if len(d) >= 2 else None
    info: dict[str, Any] = {'lr_n': len(d), 'lr_var': lr_var, 'variance': None, 'modes': None}
    confidence = cfg['confidence']
    modes, centred = _modes(lb, lc, cfg)
    info['modes'] = modes
    if centred is not None:
        var_m = stats.variance(centred) if len(centred) >= 2 else None
        comp, test, pairs = _tonight_test(centred, cfg)
        info['variance'] = {'source': 'tonight', 'tonight_sigma':
                            math.sqrt(var_m) if var_m is not None else None,
                            'note': f'two modes: {test} on the pairs with each run '
                                    f'measured from the centre of its mode{pairs}'}
        return dataclasses.replace(comp, method=comp.method + ', mode-centred'), info
    var = _variance_choice(d, lr_var, pooled,
                           float(cfg['history_variance']['consistency_level']))
    info['variance'] = var
    if var['source'] == 'history':
        return stats.pooled_t(d, pooled, confidence), info
    comp, test, pairs = _tonight_test(d, cfg)
    var['note'] = var['note'].replace('signed-rank test', test) + pairs
    return comp, info


def _tonight_test(d: Sequence[float], cfg: Mapping[str, Any]
                  ) -> tuple[stats.Comparison, str, str]:
    """The test of pair log-ratios judged on tonight's pairs alone (no usable
    history, or two modes), and its name for the note: Student's t in the range
    of pairs of ``tonight_t_test``, the signed-rank test outside it; and the range. An exact test
    of signs cannot FAIL a night of several metrics at a first look (its p >=
    2^-n; see :func:`h5regress.stats.student_t`); the mode-centred pairs need
    the same (issue 25)."""
    tt = cfg['tonight_t_test']
    if int(tt['min_pairs']) <= len(d) < int(tt['below_pairs']):
        return (stats.student_t(d, cfg['confidence']), 'Student t test',
                f' ({tt["min_pairs"]} to {int(tt["below_pairs"]) - 1} pairs)')
    return stats.signed_rank(d, cfg['confidence']), 'signed-rank test', ''


def _modes(lb: Sequence[float], lc: Sequence[float], cfg: Mapping[str, Any]
           ) -> tuple[dict[str, Any] | None, list[float] | None]:
    """The bimodality check of each build's runs (log values), and the pair
    log-ratios of the runs measured from their modes' centres (None: not used).

    The modes are those of *all* the night's runs (both builds): a run above
    the cut of their best two-group split is in the high mode, and each mode's
    centre is the median of its runs. Used when both builds' runs are bimodal
    (a slowdown makes the pooled runs of two unimodal builds look like two
    modes, not each build's) and each build agrees with that split
    (:func:`_modes_disagree`): a slowdown of both modes by one factor then
    stays in the centred log-ratios (a pair within one mode is unchanged; a
    pair across the modes loses the modes' distance, not the slowdown). A
    slowdown about the modes' distance would instead put the cut between the
    builds, each centred on its own runs, and subtract the slowdown out; and
    a candidate landing in the slow mode more often would be hidden by the
    centring: both are compared as they are. The level of the centred test
    is measured, not exact: ``benchmarks/calibrate.py --only-modes``.
    """
    mc = cfg['modes']
    if not mc['enabled']:
        return None, None
    kw = {'min_d': float(mc['min_d']), 'min_share': float(mc['min_share'])}
    per = {side: stats.two_modes(vals, **kw) for side, vals in (('base', lb), ('cand', lc))}
    out: dict[str, Any] = {side: (t.as_dict() if t else None) for side, t in per.items()}
    out['bimodal'] = [side for side, t in per.items() if t and t.bimodal]
    out['same_mode_pairs'] = None
    out['centred'] = False
    if not out['bimodal']:
        out['note'] = 'one mode' if all(per.values()) else 'too few runs to check for two modes'
        return out, None
    which = ' and '.join({'base': 'baseline', 'cand': 'candidate'}[s] for s in out['bimodal'])
    if len(out['bimodal']) < 2:
        out['note'] = (f'the {which} runs fall in two modes, the other build\'s do not: '
                       f'pairs compared as they are')
        return out, None
    both = list(lb) + list(lc)
    cut = stats.two_modes(both, min_d=0.0, min_share=kw['min_share']).cut
    low = stats.median([x for x in both if x <= cut])
    high = stats.median([x for x in both if x > cut])
    slow = sum(b > cut >= c for b, c in zip(lb, lc))     # baseline fast, candidate slow
    fast = sum(c > cut >= b for b, c in zip(lb, lc))
    out.update({'cut': cut, 'low_centre': low, 'high_centre': high,
                'same_mode_pairs': len(lb) - slow - fast,
                'share_shift': {'slow': slow, 'fast': fast,
                                'p': stats.sign_test_p(slow, slow + fast)}})
    apart = f'x{math.exp(high - low):.2f} apart'
    why = _modes_disagree({'baseline': (lb, per['base']), 'candidate': (lc, per['cand'])},
                          cut, low, high, mc) if mc['each_build'] else None
    if why is None and mc['each_build'] and out['share_shift']['p'] <= mc['share_level']:
        why = (f'the candidate\'s runs land in the slow mode more often ({slow} pairs with '
               f'the baseline\'s run fast and the candidate\'s slow, {fast} the other way; '
               f'sign test p={out["share_shift"]["p"]:.2g} <= {mc["share_level"]}): the '
               f'shift of the modes\' shares counts')
    if why is not None:
        out['note'] = f'both builds\' runs fall in two modes ({apart}), but {why}: pairs ' \
                      f'compared as they are'
        return out, None
    centre = lambda x: x - (high if x > cut else low)  # noqa: E731
    out['centred'] = True
    out['note'] = (f'both builds\' runs fall in two modes ({apart}): each run measured from '
                   f'its mode\'s centre; {out["same_mode_pairs"]} of {len(lb)} pairs had both '
                   f'runs in one mode')
    return out, [centre(c) - centre(b) for b, c in zip(lb, lc)]


def _modes_disagree(builds: Mapping[str, tuple[Sequence[float], stats.TwoModes]],
                    cut: float, low: float, high: float, mc: Mapping[str, Any]) -> str | None:
    """Why a build's own two modes are not those of both builds' runs (None: they
    are): its own split puts a run on the other side of the pooled cut (the cut
    falls between the builds: a shift about the modes' distance), or one of its
    mode centres lies more than ``centre_tolerance`` of the modes' distance from
    the pooled one."""
    tol = float(mc['centre_tolerance']) * (high - low)
    for name, (vals, own) in builds.items():
        moved = sum((x > cut) != (x > own.cut) for x in vals)
        if moved:
            return (f'the {name}\'s own split puts {moved} of its {len(vals)} runs in the '
                    f'other mode than the split of both builds\' runs does (a shift between '
                    f'the builds about the modes\' distance)')
        for mode, centre, runs in (('low', low, [x for x in vals if x <= cut]),
                                   ('high', high, [x for x in vals if x > cut])):
            off = stats.median(runs) - centre
            if abs(off) > tol:
                return (f'the {name}\'s {mode} mode lies x{math.exp(off):.3f} from that of '
                        f'both builds\' runs, beyond {mc["centre_tolerance"]} of the modes\' '
                        f'distance')
    return None


def pooled_from_history(history: hist_mod.History, key: str,
                        hv: Mapping[str, Any]) -> stats.PooledVariance | None:
    """Variance of pair log-ratios of ``key`` pooled from its past nights.

    Per night it takes ``lr_n``/``lr_var`` from the summary line; nights
    written before those fields existed get them from their samples file (the
    first ``n_pairs`` values of both sides are the aligned pairs), read only
    for the newest ``window`` nights. Degraded nights are left out.
    """
    if not hv.get('enabled', True):
        return None
    rows = history.series.get(key)
    if not rows:
        return None
    bad_nights = {n['index'] for n in history.nights if n.get('degraded')}
    window, min_pairs = int(hv['window']), int(hv['min_pairs'])
    picked: list[tuple[int, float]] = []
    for x in reversed(rows):
        if len(picked) >= window:
            break
        if x['night_index'] in bad_nights:
            continue
        n, var = x.get('lr_n'), x.get('lr_var')
        if n is None and (x.get('n_pairs') or 0) >= min_pairs:   # an older night
            n, var = _lr_var_from_samples(history, key, x)
        if isinstance(n, int) and n >= min_pairs and isinstance(var, (int, float)):
            picked.append((n, float(var)))
    picked.reverse()
    return stats.pool_variance(picked, int(hv['min_nights']), min_pairs, window,
                               float(hv['screen_level']))


def _lr_var_from_samples(history: hist_mod.History, key: str, row: Mapping[str, Any]
                         ) -> tuple[int | None, float | None]:
    n = int(row.get('n_pairs') or 0)
    base, cand = history.samples(key, row['night_index'])
    if n < 2 or len(base) < n or len(cand) < n:
        return None, None
    try:
        d = [math.log(c) - math.log(b) for b, c in zip(base[:n], cand[:n])]
    except (ValueError, TypeError):
        return None, None
    return n, stats.variance(d)


def _variance_choice(d: Sequence[float], var_t: float | None,
                     pooled: stats.PooledVariance | None, level: float) -> dict[str, Any]:
    """Whether tonight borrows the history's variance, and why (recorded per metric)."""
    out: dict[str, Any] = {'source': 'tonight', 'tonight_sigma':
                           math.sqrt(var_t) if var_t is not None else None}
    if pooled is None:
        out['note'] = 'no history of this metric: signed-rank test'
        return out
    out.update({'pooled_sigma': pooled.sigma if pooled.usable else None,
                'pooled_df': pooled.df if pooled.usable else None,
                'pooled_nights': pooled.nights, 'outlier_nights': pooled.outliers})
    if not pooled.usable:
        out['note'] = f'history too short ({pooled.reason}): signed-rank test'
        return out
    if len(d) < 3 or var_t is None:
        out['note'] = f'{len(d)} pair(s): too few to check against history; signed-rank test'
        return out
    ok, f, p = stats.variance_consistent(var_t, len(d), pooled, level)
    out.update({'F': f, 'p_F': p})
    if not ok:
        out['note'] = (f"tonight's spread {math.sqrt(var_t):.3g} is {math.sqrt(f):.2f}x the "
                       f"history's {pooled.sigma:.3g} (F={f:.2f}, p={p:.2g} <= {level}): "
                       f'noisier than its history, signed-rank test on its own pairs')
        return out
    out['source'] = 'history'
    out['note'] = (f'pooled-t: sigma {pooled.sigma:.3g} from {pooled.nights} past night(s) '
                   f'({pooled.df} df); tonight {math.sqrt(var_t):.3g} consistent '
                   f'(F={f:.2f}, p={p:.2g})')
    return out


def _value_ratio(log_perf: float, higher_is_better: bool) -> float:
    """A log performance ratio as the ratio of the values (candidate/baseline)."""
    return math.exp(log_perf if higher_is_better else -log_perf)


def _fmt_ratio(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 6)


# ------------------------------------------------------------------ decide
def decide(comp: stats.Comparison, q: float, cfg: Mapping[str, Any],
           looks: Sequence[int] | None, pairs_run: int | None = None) -> tuple[str, str]:
    """Verdict and reason for one judged metric; m = margin, ``q`` its BH-adjusted
    p-value of a slowdown.

    * FAIL: ``q`` <= the look's level (alpha, or its alpha-spending share at an
      early look) *and* the one-sided ``margin_confidence`` upper bound of the
      ratio below 1 - m: significantly slower, and the data make a slowdown
      within the margin unlikely (margin_confidence 0.5 would be the estimate
      alone, the rule before issue 19). At an early look the bound's error
      ``1 - margin_confidence`` is spent like alpha (a higher confidence), so
      the loop's rate of a FAIL inside the margin stays that of one look;
    * PASS: the one-sided lower bound of the ratio above 1 - m, at 1 - the look's
      share of (1 - confidence) / 2 (the lower end of the two-sided
      ``confidence`` interval at a single or the last look; stricter at an early
      look, so a loop of looks keeps the error of a wrong PASS);
    * INCONCLUSIVE otherwise; "significantly slower, not shown beyond the margin"
      is one (``slower`` in the row), and more pairs decide.
    """
    margin, alpha = cfg['margin'], cfg['alpha']
    log_floor = math.log(1.0 - margin)
    if comp.n < cfg['min_pairs']:
        return 'INCONCLUSIVE', f'{comp.n} pair(s), fewer than {cfg["min_pairs"]}'
    level = stats.look_level(comp.n, looks, alpha, pairs_run=pairs_run)
    mconf = fail_confidence(comp.n, looks, cfg, pairs_run)
    upper = comp.upper(mconf)
    if q <= level and upper < log_floor:
        return 'FAIL', (f'significant slowdown (BH q={q:.2g} <= {level:.2g}) beyond the '
                        f'{margin:.0%} margin: the {mconf:.1%} upper bound of the ratio, '
                        f'{math.exp(upper):.3f}, is below {1 - margin:.2f}')
    pass_level = stats.look_level(comp.n, looks, (1.0 - cfg['confidence']) / 2.0,
                                  pairs_run=pairs_run)
    lower = comp.lower(1.0 - pass_level)
    if lower > log_floor:
        early = '' if not looks or max(comp.n, pairs_run or 0) >= looks[-1] else \
            f' (the stricter bound of an early look at {comp.n} of up to {looks[-1]} pairs)'
        return 'PASS', (f'{1 - pass_level:.2%} lower bound of the ratio {math.exp(lower):.3f} '
                        f'> {1 - margin:.2f}{early}')
    more = ('more pairs decide' if looks and max(comp.n, pairs_run or 0) < looks[-1] else
            'undecided at the last look' if looks else 'more pairs decide')
    if q <= level:
        return 'INCONCLUSIVE', (f'{SLOWER} (BH q={q:.2g}), not shown beyond the '
                                f'{margin:.0%} margin (the {mconf:.1%} upper bound '
                                f'{math.exp(upper):.3f} >= {1 - margin:.2f}): {more}')
    if q <= alpha:
        return 'INCONCLUSIVE', (f'slowdown suspected (q={q:.2g} > {level:.2g}, the level of a '
                                f'look at {comp.n} of up to {looks[-1]} pairs): {more}')
    if lower == -math.inf:
        return 'INCONCLUSIVE', f'too few pairs ({comp.n}) for a {1 - pass_level:.1%} bound'
    # NO-SLOWDOWN-SEEN: no FAIL, no PASS, q > alpha (no sign of a slowdown at the
    # night's level, not even a suspected one), and a finite lower bound: at the PASS
    # bound's confidence (1 - pass_level) the night excludes every slowdown of
    # sensitivity = 1 - exp(lower) or more. The bounds and levels are those of PASS
    # and FAIL: this names what INCONCLUSIVE meant here, it changes no error rate.
    return NO_SLOWDOWN_SEEN, (f'no slowdown detected at tonight\'s sensitivity: a slowdown '
                              f'of {-math.expm1(lower):.0%} or more would have been seen '
                              f'(the {1 - pass_level:.2%} lower bound {math.exp(lower):.3f} '
                              f'< {1 - margin:.2f}, so no PASS): {more}')


def sensitivity(comp: stats.Comparison, cfg: Mapping[str, Any], looks: Sequence[int] | None,
                pairs_run: int | None = None) -> float | None:
    """The smallest slowdown the night would have seen: 1 - the PASS bound of the
    performance ratio at this look (:func:`decide`), 0 when that bound is above 1;
    None without a finite bound."""
    if comp.n < cfg['min_pairs']:
        return None
    pass_level = stats.look_level(comp.n, looks, (1.0 - cfg['confidence']) / 2.0,
                                  pairs_run=pairs_run)
    lower = comp.lower(1.0 - pass_level)
    if not math.isfinite(lower):
        return None
    return round(max(0.0, -math.expm1(lower)), 6)


def fail_confidence(n: int, looks: Sequence[int] | None, cfg: Mapping[str, Any],
                    pairs_run: int | None = None) -> float:
    """Confidence of the upper bound a FAIL at ``n`` pairs compares with 1 - margin:
    ``margin_confidence``, its error spent over the looks like alpha."""
    return 1.0 - stats.look_level(n, looks, 1.0 - float(cfg['margin_confidence']),
                                  pairs_run=pairs_run)


#: the verdict of a metric with no sign of a slowdown and no PASS (:func:`decide`)
NO_SLOWDOWN_SEEN = 'NO-SLOWDOWN-SEEN'

#: how :func:`decide` begins the reason of "significantly slower, not shown beyond the margin"
SLOWER = 'significantly slower'


def is_slower(verdict: str, reason: str) -> bool:
    """Whether an INCONCLUSIVE verdict is a significant slowdown not shown beyond the margin."""
    return verdict == 'INCONCLUSIVE' and reason.startswith(SLOWER)


def pairs_for_pass(sigma: float | None, cfg: Mapping[str, Any], looks: Sequence[int] | None,
                   rank: bool, power: float = 0.9) -> int | None:
    """Pairs a PASS would need on ``power`` of nights when nothing changed, at the
    noise ``sigma`` (SD of the pair log-ratios): the lower bound (level of the
    last look) clears ln(1 - m) when ``sqrt(n) >= (z_level + z_power) sigma /
    -ln(1 - m)`` (normal approximation; the signed-rank test needs 1/0.955 times
    as many pairs, its efficiency relative to the mean under normal noise)."""
    if sigma is None or not math.isfinite(sigma) or sigma <= 0:
        return None
    level = stats.look_level(looks[-1] if looks else 1, looks,
                             (1.0 - cfg['confidence']) / 2.0)
    z = stats.norm_ppf(1.0 - level) + stats.norm_ppf(power)
    n = (z * sigma / -math.log(1.0 - cfg['margin'])) ** 2 / (3.0 / math.pi if rank else 1.0)
    return max(int(cfg['min_pairs']), math.ceil(n))


def decide_all(metrics: Sequence[MetricComparison], cfg: Mapping[str, Any],
               looks: Sequence[int] | None, pairs_run: int | None = None) -> None:
    """Verdicts into the rows: BH within the gated family and, apart, the controls;
    ``pairs_run``: the pairs the nightly's loop has run at this look (see
    :func:`h5regress.stats.look_level`)."""
    for m in metrics:
        if m.role != 'reported' and m.row['flush_conflict']:
            m.row['verdict'], m.row['reason'] = 'ERROR', m.row['flush_conflict']
        elif m.row['no_candidate']:
            m.row['verdict'], m.row['reason'] = 'ERROR', m.row['no_candidate']
    for family in (('gated',), ('canary', 'control')):
        judged = [m for m in metrics if m.role in family and m.comp is not None
                  and not m.row['flush_conflict']]
        qs = stats.benjamini_hochberg([m.comp.p_worse for m in judged])
        for m, q in zip(judged, qs):
            m.row['q'] = q
            m.row['verdict'], m.row['reason'] = decide(m.comp, q, cfg, looks, pairs_run)
            m.row['slower'] = is_slower(m.row['verdict'], m.row['reason'])
            m.row['sensitivity'] = sensitivity(m.comp, cfg, looks, pairs_run)
            m.row['fail_bound'] = _fmt_ratio(_value_ratio(
                m.comp.upper(fail_confidence(m.comp.n, looks, cfg, pairs_run)),
                m.row['higher_is_better']))
            var = m.row.get('variance') or {}
            sigma = var.get('pooled_sigma') if var.get('source') == 'history' \
                else var.get('tonight_sigma')
            m.row['noise_sigma'] = sigma
            m.row['pairs_for_pass'] = pairs_for_pass(sigma, cfg, looks,
                                                     m.comp.method != 'pooled-t')
            if m.row['flushed'] is False:
                m.row['reason'] += (f' [{NOT_FLUSHED}: write_flush none, the figure ends '
                                    f'in the page cache]')
    for m in metrics:
        row = m.row
        row.setdefault('q', None)
        for k in ('fail_bound', 'noise_sigma', 'pairs_for_pass', 'sensitivity'):
            row.setdefault(k, None)
        row.setdefault('slower', False)
        if 'verdict' not in row:
            if m.role == 'reported':
                row['verdict'], row['reason'] = None, 'reported, not gated'
            else:
                side = 'candidate' if not row['cand'] else 'baseline'
                row['verdict'], row['reason'] = 'INCONCLUSIVE', f'no {side} samples'
        row['false_alarm'] = (row['verdict'] == 'FAIL' and row['true_ratio'] is not None
                              and abs(row['true_ratio'] - 1.0) < 1e-9)


# ------------------------------------------------------------------ the night
def run_gate(records: Iterable[Record], baseline: str, candidate: str,
             cfg: Mapping[str, Any] | None = None, *,
             history: hist_mod.History | None = None,
             references: refs_mod.References | None = None,
             problems: Sequence[str] = (), night: str | None = None,
             looks: Sequence[int] | None = None, baseline_commit: str | None = None,
             candidate_commit: str | None = None, attempt: str | None = None,
             injected_slowdown: float = 0.0, pairs_run: int | None = None) -> dict[str, Any]:
    """Gate one night; returns the result mapping (JSON-serialisable).

    ``looks``: the pair counts at which the nightly's loop gates (default the
    config's); ``pairs_run``: how many pairs it has run at this look (default:
    the most pairs of any judged metric), so that a metric that lost pairs is
    judged at the look it is in, on the pairs it has.

    :func:`collect` the samples per metric, :func:`compare` the builds per
    metric, :func:`decide_all` the verdicts, :func:`annotate` the night.
    """
    cfg = dict(cfg or load_config())
    looks = looks if looks is not None else cfg.get('looks')
    history = history or hist_mod.History()
    tonight = collect(records, baseline, candidate, problems, attempt)
    base_commit = baseline_commit or tonight.commit('base')
    cand_commit = candidate_commit or tonight.commit('cand')
    # a candidate slowed on purpose (a stand-in night's --inject-slowdown) shares the
    # baseline's commit but is no A/A night: its FAIL is right, never a false alarm
    aa = not injected_slowdown and (
        baseline == candidate or (base_commit is not None and base_commit == cand_commit))
    comparisons = compare(tonight.groups, cfg, history, aa)
    if pairs_run is None:
        pairs_run = max((m.comp.n for m in comparisons
                         if m.comp is not None and m.role != 'reported'), default=None)
    decide_all(comparisons, cfg, looks, pairs_run)
    result: dict[str, Any] = {
        'version': 1, 'night': night or _night_of(tonight.last_ts), 'attempt': attempt,
        'timestamp': tonight.last_ts or None,
        'baseline': baseline, 'candidate': candidate,
        'baseline_commit': base_commit, 'candidate_commit': cand_commit, 'a_a': aa,
        'injected_slowdown': injected_slowdown or None,
        'config': {k: cfg[k] for k in ('margin', 'margin_confidence', 'alpha', 'confidence',
                                       'min_pairs', 'hdf5_overhead')}
        | {'looks': looks, 'pairs_run': pairs_run},
        'metrics': [m.row for m in comparisons], 'counts': tonight.counts,
        'problems': tonight.problems[:50], 'problem_count': len(tonight.problems),
    }
    annotate(result, cfg, history, references)
    return result


# ------------------------------------------------------------------ annotate
def annotate(result: dict[str, Any], cfg: Mapping[str, Any], history: hist_mod.History,
             references: refs_mod.References | None) -> None:
    """The night around the verdicts: reference envelopes, HDF5/MPI-IO, the fio
    ceiling, degraded canaries, change points, false alarms; the overall verdict."""
    metrics = result['metrics']
    if references is not None:
        for m in metrics:
            m['envelope'] = _envelope(m, references)
    result['canary'] = _canary_ratios(metrics, cfg)
    result['ceiling'] = _ceiling(metrics, cfg)
    result['degraded'] = _degraded(metrics, history, cfg)
    result['change_points'] = _change_points(metrics, history, cfg, result)
    result['false_alarms'] = false_alarm_rates(history, metrics)
    gated = [m for m in metrics if m['role'] == 'gated']
    result['not_flushed'] = [m['label'] for m in gated if m['flushed'] is False]
    conflicts = [m for m in gated if m['verdict'] == 'ERROR']
    if conflicts:
        overall = 'ERROR'
        result['error'] = '; '.join(f'{m["label"]}: {m["reason"]}' for m in conflicts)
    elif any(d['degraded'] for d in result['degraded']):
        overall = 'DEGRADED'
    elif not gated:
        overall = 'ERROR'
        result['error'] = ('nothing to gate: no records of a gated metric for builds '
                           f'{result["baseline"]!r}/{result["candidate"]!r}')
    elif any(m['verdict'] == 'FAIL' for m in gated):
        overall = 'FAIL'
    elif any(m['verdict'] not in ('PASS', NO_SLOWDOWN_SEEN) for m in gated):
        overall = 'INCONCLUSIVE'
    elif any(m['verdict'] == NO_SLOWDOWN_SEEN for m in gated):
        overall = NO_SLOWDOWN_SEEN
    else:
        overall = 'PASS'
    result['overall'] = overall
    result['exit_code'] = EXIT_CODES[overall]


def _envelope(m: Mapping[str, Any], references: refs_mod.References) -> dict[str, Any] | None:
    """The candidate's median against the metric's reference envelope, if it has one."""
    if m['cand_median'] is None:
        return None
    ref = references.lookup(m['test_class'], m['perf_var'], m['system'], m['params'])
    if ref is None:
        return None
    low, high = refs_mod.bounds(ref)
    v = m['cand_median']
    status = 'inside' if low <= v <= high else ('below' if v < low else 'above')
    worse = (status == 'below') == bool(m['higher_is_better']) and status != 'inside'
    return {'ref': ref[0], 'low': low, 'high': high, 'status': status, 'worse': worse}


def _signature(rec_like: Mapping[str, Any], ignore: Sequence[str]) -> str:
    params = {k: v for k, v in (rec_like.get('params') or {}).items()
              if not any(fnmatch.fnmatchcase(str(k).lower(), p.lower()) for p in ignore)}
    return json.dumps([rec_like['tool'], rec_like['operation'], rec_like['metric'],
                       rec_like.get('system') or '', params], sort_keys=True, default=str)


def _canary_ratios(metrics: list[dict], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """HDF5 / MPI-IO ratio per gated metric that has an MPI-IO twin."""
    ignore = cfg['canary_ignore_params']
    twins = {_signature(m, ignore): m for m in metrics if m['role'] == 'canary'}
    floor = math.log(1.0 - cfg['hdf5_overhead'])
    out = []
    for m in metrics:
        if m['role'] != 'gated':
            continue
        c = twins.get(_signature(m, ignore))
        if c is None:
            continue
        sign = 1.0 if m['higher_is_better'] else -1.0
        ref = [sign * math.log(v) for v in c['base'] + c['cand']]
        row = {'metric': m['label'], 'key': m['key'], 'canary': c['label'],
               'canary_key': c['key'], 'operation': m['operation']}
        for side in ('cand', 'base'):
            vals = [sign * math.log(v) for v in m[side]]
            comp = stats.rank_sum(ref, vals) if vals and ref else None
            if comp is None:
                row[side] = None
                continue
            row[side] = {'ratio': _fmt_ratio(comp.ratio), 'lo': _fmt_ratio(comp.ratio_lo),
                         'hi': _fmt_ratio(comp.ratio_hi)}
        cr = row['cand']
        row['verdict'] = ('WARN' if cr and math.log(cr['ratio']) < floor else 'OK') if cr else None
        if row['verdict'] == 'WARN':
            row['reason'] = (f'HDF5 reaches {cr["ratio"]:.0%} of MPI-IO, below the expected '
                             f'{1 - cfg["hdf5_overhead"]:.0%}: worth a look')
        out.append(row)
    return out


def _ceiling(metrics: list[dict], cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """HDF5 (candidate median) as a fraction of the fio ceiling of its system and operation."""
    rule = cfg['ceiling']
    best: dict[tuple, tuple[float, str]] = {}
    for m in metrics:
        if m['median_all'] and rule_matches(rule, m['tool'], m['operation'], m['metric'],
                                            m['params']):
            k = (m['system'], m['operation'])
            if k not in best or m['median_all'] > best[k][0]:
                best[k] = (m['median_all'], m['label'])
    out = []
    for m in metrics:
        if m['role'] != 'gated' or not m['cand_median'] or m['unit'] != 'MiB/s':
            continue
        ceil = best.get((m['system'], m['operation']))
        if ceil:
            out.append({'metric': m['label'], 'key': m['key'], 'fio': ceil[1],
                        'fio_value': ceil[0], 'hdf5_value': m['cand_median'],
                        'fraction': m['cand_median'] / ceil[0]})
    return out


def _degraded(metrics: list[dict], history: hist_mod.History,
              cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    dc = cfg['degraded']
    bad = {n['index'] for n in history.nights if n.get('degraded')}
    out = []
    for m in metrics:
        if m['role'] != 'canary' or not m['median_all']:
            continue
        past = [x['median_all'] for x in history.series.get(m['key'], [])
                if x['night_index'] not in bad and x.get('median_all')]
        past = past[-dc['window']:]
        row = {'canary': m['label'], 'key': m['key'], 'tonight': m['median_all'],
               'nights': len(past), 'degraded': False}
        if len(past) < dc['min_nights']:
            row['note'] = f'{len(past)} night(s) of history, need {dc["min_nights"]}'
            out.append(row)
            continue
        logs = [math.log(v) for v in past]
        center = stats.median(logs)
        sigma = max(stats.mad_sigma(logs), 0.01)
        x = math.log(m['median_all'])
        if not m['higher_is_better']:
            x, center = -x, -center
        z = (x - center) / sigma
        drop = 1.0 - math.exp(x - center)
        row.update({'history_median': math.exp(center if m['higher_is_better'] else -center),
                    'z': z, 'drop': drop})
        row['degraded'] = z < -dc['z'] and drop > dc['drop']
        out.append(row)
    return out


def _change_points(metrics: list[dict], history: hist_mod.History, cfg: Mapping[str, Any],
                   result: Mapping[str, Any]) -> list[dict[str, Any]]:
    cc = cfg['change_points']
    min_shift = cc['min_shift'] if cc['min_shift'] is not None else -math.log(1 - cfg['margin'])
    nights = history.nights
    bad = {n['index'] for n in nights if n.get('degraded')}
    out = []
    for m in metrics:
        if m['role'] != 'gated':
            continue
        # the nights' paired ratios, not the candidate's medians: on a shared machine a
        # build's median moved 31-38 % between two nights 18 minutes apart while the
        # ratio moved 1-4 % (benchmarks/creep.py's --sd note), so the medians bury a
        # creep of the candidate under the platform's moves, which the pairs cancel
        rows = [x for x in history.series.get(m['key'], []) if x['night_index'] not in bad]
        pts = [(x['night_index'], x['ratio']) for x in rows if x.get('ratio')]
        names = [nights[i]['night'] for i, _ in pts]
        commits = [nights[i].get('candidate_commit') for i, _ in pts]
        # a night's ratio is of the values (candidate/baseline): a time's goes up when slower
        sign = 1.0 if m['higher_is_better'] else -1.0
        series = [sign * math.log(r) for _, r in pts]
        if m['ratio']:
            series.append(sign * math.log(m['ratio']))
            names.append(result['night'])
            commits.append(result['candidate_commit'])
        if len(series) < 2 * cc['min_side']:
            continue
        try:
            cps = creep.change_points(series, cc['window'], cc['alpha'], min_shift)
        except creep.CreepUnavailable as err:
            print(f'h5regress gate: no change points of the history: {err}', file=sys.stderr)
            return out
        for cp in cps:
            if cp.index < max(cc['min_side'], len(series) - cc['lookback']) \
                    or len(series) - cp.index < cc['min_side']:
                continue
            out.append({'metric': m['label'], 'key': m['key'],
                        'from_night': names[cp.index - 1], 'to_night': names[cp.index],
                        'from_commit': commits[cp.index - 1], 'to_commit': commits[cp.index],
                        'ratio': math.exp(cp.shift), 'p': cp.p,
                        'direction': 'better' if cp.shift > 0 else 'worse'})
    return out


def false_alarm_rates(history: hist_mod.History, tonight: Sequence[Mapping[str, Any]] = ()
                      ) -> dict[str, Any]:
    """FAIL rate on judged metrics whose true ratio is 1, per metric and per night."""
    per_metric: dict[str, list[int]] = {}
    labels: dict[str, str] = {}
    nights: list[bool] = []

    def tally(rows: Iterable[Mapping[str, Any]]) -> None:
        any_known, any_fa = False, False
        for x in rows:
            tr = x.get('true_ratio')
            if x.get('role') not in ('gated', 'canary', 'control') or tr is None \
                    or abs(tr - 1.0) > 1e-9 or x.get('verdict') is None:
                continue
            any_known = True
            fa = x.get('verdict') == 'FAIL'
            any_fa |= fa
            c = per_metric.setdefault(x['key'], [0, 0])
            c[0] += 1
            c[1] += fa
            if x['key'] not in labels:
                labels[x['key']] = x.get('label') or history.meta(x['key']).get('label') \
                    or x['key']
        if any_known:
            nights.append(any_fa)

    by_night: dict[int, list] = {}
    for rows in history.series.values():
        for x in rows:
            by_night.setdefault(x['night_index'], []).append(x)
    for i in sorted(by_night):
        tally(by_night[i])
    tally(tonight)
    rows = [{'key': k, 'label': labels[k], 'nights': n, 'false_alarms': f,
             'rate': f / n} for k, (n, f) in per_metric.items()]
    rows.sort(key=lambda r: (-r['rate'], r['label']))
    return {'per_metric': rows,
            'per_night': {'nights': len(nights), 'with_false_alarm': sum(nights),
                          'rate': (sum(nights) / len(nights)) if nights else None}}


# ------------------------------------------------------------------ history
def history_lines(result: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and metric lines of the history file for this night."""
    header = {k: result.get(k) for k in ('night', 'timestamp', 'baseline', 'candidate',
                                         'baseline_commit', 'candidate_commit', 'overall',
                                         'a_a', 'injected_slowdown')}
    header['timestamp'] = header['timestamp'] or datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds')
    header['degraded'] = result['overall'] == 'DEGRADED'
    header['counts'] = result['counts']
    keep = ('key', 'label', 'tool', 'operation', 'metric', 'unit', 'higher_is_better', 'test',
            'test_class', 'perf_var', 'system', 'params', 'role', 'n_pairs', 'base', 'cand',
            'base_median', 'cand_median', 'median_all', 'ratio', 'ratio_lo', 'ratio_hi',
            'q', 'verdict', 'true_ratio', 'lr_n', 'lr_var')
    lines = [{k: m.get(k) for k in keep} for m in result['metrics']]
    return header, lines


# ------------------------------------------------------------------ output
def format_text(result: Mapping[str, Any]) -> str:
    out = [f'h5regress gate: night {result["night"]}: {result["candidate"]} '
           f'({result.get("candidate_commit") or "?"}) vs {result["baseline"]} '
           f'({result.get("baseline_commit") or "?"})']
    rows = [m for m in result['metrics'] if m['role'] == 'gated']
    for m in sorted(rows, key=lambda m: (m['verdict'] != 'FAIL', m['label'])):
        ratio = '-' if m['ratio'] is None else f'{m["ratio"]:.3f}'
        lo = '-' if m['ratio_lo'] is None else f'{m["ratio_lo"]:.3f}'
        hi = '-' if m['ratio_hi'] is None else f'{m["ratio_hi"]:.3f}'
        need = (f'; a PASS would need ~{m["pairs_for_pass"]} pairs at this noise'
                if m['verdict'] in ('INCONCLUSIVE', NO_SLOWDOWN_SEEN) and not m.get('slower')
                and m.get('pairs_for_pass') else '')
        out.append(f'  {m["verdict"]:<12} {m["label"]}: ratio {ratio} [{lo}, {hi}] '
                   f'n={m["n_pairs"]} {m.get("method") or ""} ({m["reason"]}{need})')
    for label in result.get('not_flushed', ()):
        out.append(f'  NOT FLUSHED  {label}: write_flush none, {NOT_FLUSHED} (the verdict '
                   f'is on page-cache speed)')
    for c in result['canary']:
        if c['verdict'] == 'WARN':
            out.append(f'  WARN         {c["metric"]}: {c["reason"]}')
    for d in result['degraded']:
        if d['degraded']:
            out.append(f'  DEGRADED     canary {d["canary"]}: {d["tonight"]:.4g} is '
                       f'{d["drop"]:.0%} below its history median {d["history_median"]:.4g}')
    for cp in result['change_points']:
        out.append(f'  CHANGE       {cp["metric"]}: x{cp["ratio"]:.3f} ({cp["direction"]}) '
                   f'between {cp["from_night"]} ({cp["from_commit"]}) and '
                   f'{cp["to_night"]} ({cp["to_commit"]})')
    env = [m for m in result['metrics'] if (m.get('envelope') or {}).get('worse')]
    for m in env:
        out.append(f'  ENVELOPE     {m["label"]}: candidate {m["cand_median"]:.4g} outside '
                   f'[{m["envelope"]["low"]:.4g}, {m["envelope"]["high"]:.4g}]')
    c = result['counts']
    skipped = c['malformed'] + c['duplicates'] + c['non_positive'] + c['direction_conflicts']
    out.append(f'  records: {c["records"]} read, {skipped} skipped ({c["malformed"]} malformed, '
               f'{c["duplicates"]} duplicate, {c["non_positive"]} non-positive), '
               f'{c["other_build"]} of other builds, {c["perf_fail_samples"]} perf_fail kept')
    if result.get('error'):
        out.append(f'  ERROR: {result["error"]}')
    out.append(f'overall: {result["overall"]} (exit {result["exit_code"]})')
    return '\n'.join(out)


def dumps(result: Mapping[str, Any]) -> str:
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o
    return json.dumps(clean(result), indent=1, default=str)


# ------------------------------------------------------------------ CLI
def build_parser() -> ArgParser:
    p = ArgParser(
        prog='h5regress gate',
        description='Nightly performance verdict of a candidate HDF5 build against a '
                    'baseline, from paired A/B runs.',
        epilog='exit codes: 0 PASS, 1 FAIL, 2 INCONCLUSIVE (run more pairs), '
               '3 DEGRADED (canary far below its history: no verdict, rerun), 4 ERROR',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--baseline', required=True, help='hdf5_build of the baseline records')
    p.add_argument('--candidate', required=True, help='hdf5_build of the candidate records')
    p.add_argument('--records', nargs='+', default=[], metavar='FILE',
                   help='JSON-lines record files (or directories of *.jsonl)')
    p.add_argument('--perflogs', nargs='+', default=[], metavar='DIR',
                   help='ReFrame perflog directories')
    p.add_argument('--config', metavar='GATE_YAML', help=GATE_CONFIG_HELP)
    p.add_argument('--margin', type=float, help='tolerated slowdown (default 0.05)')
    p.add_argument('--alpha', type=float, help='Benjamini-Hochberg FDR level (default 0.01)')
    p.add_argument('--confidence', type=float, help='interval confidence (default 0.95)')
    p.add_argument('--looks', type=looks_arg, metavar='N1,N2,...',
                   help="pair counts at which the nightly's rerun loop gates (e.g. 10,15,20); "
                        'a FAIL at each needs q below its alpha-spending level')
    p.add_argument('--pairs-run', type=int, metavar='N',
                   help="pairs the nightly's loop has run at this look (default: the most "
                        'pairs of any judged metric); at the last of --looks the look spends '
                        'what is left of alpha on the pairs each metric has')
    p.add_argument('--history', help=f'history directory (default ${hist_mod.ENV}, then '
                   '"history:" in the config)')
    p.add_argument('--append-history', action='store_true',
                   help="store tonight's results in the history (a night id already "
                        "stored is kept and tonight stored as <night>+2, +3...)")
    p.add_argument('--night', type=hist_mod.night_id,
                   help="night id (default: date of the newest record; letters, digits, "
                        "'.', '_', '-')")
    p.add_argument('--attempt', help="only the records of this nightly attempt (pair ids "
                   "'<attempt>-p<i>'): earlier attempts in the same perflogs are left out")
    p.add_argument('--refs', nargs='*', default=None, metavar='PATH',
                   help='reference files or directories (default reframe/config/references; '
                        '--refs alone: apply none)')
    p.add_argument('--baseline-commit', help='HDF5 commit of the baseline (else from records)')
    p.add_argument('--candidate-commit', help='HDF5 commit of the candidate (else from records)')
    p.add_argument('--injected-slowdown', type=float, default=0.0, metavar='FRACTION',
                   help='the candidate is the baseline slowed on purpose by FRACTION (a '
                   'stand-in night): not A/A, whatever the commits')
    p.add_argument('--json', metavar='FILE', help='write the full result as JSON')
    p.add_argument('--report', metavar='DIR',
                   help='also write the report (Markdown, HTML, JUnit XML) into DIR')
    p.add_argument('--quiet', action='store_true', help='print only the overall line')
    return p


def main_gate(argv: Sequence[str] | None = None) -> int:
    """``h5regress gate``; returns the exit code (see :data:`EXIT_CODES`)."""
    args, code = parse_args(build_parser(), argv)
    if args is None:
        return code
    if not args.records and not args.perflogs:
        print('h5regress gate: error: give --records and/or --perflogs', file=sys.stderr)
        return EXIT_ERROR
    if args.pairs_run is not None and args.pairs_run < 1:
        print(f'h5regress gate: error: --pairs-run must be a positive pair count, got '
              f'{args.pairs_run}', file=sys.stderr)
        return EXIT_ERROR
    if args.baseline == args.candidate:
        print(f'h5regress gate: error: --baseline and --candidate both name '
              f'{args.baseline!r}; an A/A comparison needs two build ids (the same commit '
              f'under two names: it is then known to have ratio 1)', file=sys.stderr)
        return EXIT_ERROR
    try:
        cfg = load_config(args.config)
        for k in ('margin', 'alpha', 'confidence'):
            v = getattr(args, k)
            if v is not None:
                if not 0 < v < 1:
                    raise ConfigError(f'--{k} must be in (0, 1), got {v}')
                cfg[k] = v
        records, problems = load_records(args.records, args.perflogs)
        check_builds(records, args.baseline, args.candidate, args.attempt)
        hdir = hist_mod.resolve_dir(args.history, cfg)
        night = args.night or default_night(records)
        # tonight is left out: a rerun of the night must not see its own first attempt
        history = hist_mod.load(hdir, exclude_night=night) if hdir \
            else hist_mod.History()
        ref_paths = args.refs if args.refs is not None else [REFERENCES_DIR]
        references = refs_mod.References.load(ref_paths)
        result = run_gate(records, args.baseline, args.candidate, cfg, history=history,
                          references=references, problems=problems, night=night,
                          looks=args.looks, pairs_run=args.pairs_run,
                          baseline_commit=args.baseline_commit,
                          candidate_commit=args.candidate_commit, attempt=args.attempt,
                          injected_slowdown=args.injected_slowdown)
        if history.problems:
            result['problems'].extend(history.problems[:10])
            result['problem_count'] += len(history.problems)
    except (ConfigError, UsageError, refs_mod.RefsError, OSError) as err:
        print(f'h5regress gate: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    if args.quiet:
        # an ERROR says why even then: a rerun will not fix it
        why = f': {result["error"]}' if result.get('error') else ''
        print(f'overall: {result["overall"]} (exit {result["exit_code"]}){why}')
    else:
        print(format_text(result))
    try:
        if args.append_history:
            append_history(result, hdir)
        if args.json:
            atomic.write_text(Path(args.json), dumps(result))
        if args.report:
            report_mod.write_all(result, history, Path(args.report))
    except (UsageError, OSError) as err:
        print(f'h5regress gate: error: {err}', file=sys.stderr)
        return EXIT_ERROR
    return result['exit_code']


def append_history(result: dict[str, Any], hdir: Path | None) -> None:
    """Store the night in the history; a failed write makes ``result`` an ERROR naming
    the path (its gate.json says so too), not the verdict of a night that is lost."""
    if not hdir:
        raise UsageError(f'--append-history needs --history or ${hist_mod.ENV}')
    header, lines = history_lines(result)
    try:
        hist_mod.write_night(hdir, header, lines)
    except hist_mod.HistoryError as err:
        result.update(overall='ERROR', exit_code=EXIT_ERROR,
                      error=f'the history was not written: {err}')
        print(f'h5regress gate: error: {result["error"]}', file=sys.stderr)
