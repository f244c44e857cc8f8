"""The night from its records (run_gate), its text and JSON, the command line."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from h5regress import atomic
from h5regress import history as hist_mod
from h5regress import refs as refs_mod
from h5regress import report as report_mod
from h5regress.cmdline import (EXIT_ERROR, EXIT_USAGE, ArgParser, GATE_CONFIG_HELP, UsageError,
                                parse_args)
from h5regress.gateconfig import (REFERENCES_DIR, ConfigError, GateConfig, load_config,
                                  looks_arg)
from h5regress.record import Record
from h5regress.runrecords import RunRecords
from h5regress.gate import contention
from h5regress.gate.records import (_night_of, check_builds, collect, default_night,
                                     load_records, of_attempt, without_build)
from h5regress.gate.comparing import NOT_FLUSHED, compare
from h5regress.gate.verdicts import NO_SLOWDOWN_SEEN, decide_all
from h5regress.gate.night import annotate, history_lines


# ------------------------------------------------------------------ the night
def run_gate(records: Iterable[Record], baseline: str, candidate: str,
             cfg: GateConfig | Mapping[str, Any] | None = None, *,
             history: hist_mod.History | None = None,
             references: refs_mod.References | None = None,
             problems: Sequence[str] = (), night: str | None = None,
             looks: Sequence[int] | None = None, baseline_commit: str | None = None,
             candidate_commit: str | None = None, attempt: str | None = None,
             injected_slowdown: float = 0.0, pairs_run: int | None = None,
             sides: Sequence[contention.Side] = ()) -> dict[str, Any]:
    """Gate one night; returns the result mapping (JSON-serialisable).

    ``looks``: the pair counts at which the nightly's loop gates (default the
    config's); ``pairs_run``: how many pairs it has run at this look (default:
    the most pairs of any judged metric, with the pairs excluded), so that a
    metric that lost pairs is judged at the look it is in, on the pairs it has.
    ``sides``: what each side of the night recorded of the machine, from which
    :func:`contention.judge` excludes the contended pairs.

    :func:`collect` the samples per metric, :func:`compare` the builds per
    metric, :func:`decide_all` the verdicts, :func:`annotate` the night.
    """
    cfg = GateConfig.of(cfg or load_config())       # a copy: the stages may not change it
    looks = looks if looks is not None else cfg.looks
    history = history or hist_mod.History()
    exclusion = contention.judge(sides, (baseline, candidate), cfg.contention,
                                 lambda p: attempt is None or of_attempt(p, attempt))
    records = list(records)    # read twice when pairs are excluded (_on_every_pair)
    tonight = collect(records, baseline, candidate, problems, attempt, exclusion.excluded)
    base_commit = baseline_commit or tonight.commit('base')
    cand_commit = candidate_commit or tonight.commit('cand')
    # a candidate slowed on purpose (a stand-in night's --inject-slowdown) shares the
    # baseline's commit but is no A/A night: its FAIL is right, never a false alarm
    aa = not injected_slowdown and (
        baseline == candidate or (base_commit is not None and base_commit == cand_commit))
    comparisons = compare(tonight.groups, cfg, history, aa)
    not_judged = say_what_runs_said(comparisons, sides, baseline, candidate, attempt)
    if pairs_run is None:
        pairs_run = _pairs_reached(comparisons, exclusion)
    decide_all(comparisons, cfg, looks, pairs_run)
    contention.mark_rows(comparisons, exclusion, tonight.counts['contended'],
                         looks[0] if looks else cfg.min_pairs)
    if exclusion.excluded:
        contention.never_a_pass_by_exclusion(comparisons, _on_every_pair(
            records, (baseline, candidate, problems, attempt), cfg, history, aa, looks, pairs_run))
    result: dict[str, Any] = {
        'version': 1, 'night': night or _night_of(tonight.last_ts), 'attempt': attempt,
        'timestamp': tonight.last_ts or None,
        'baseline': baseline, 'candidate': candidate,
        'baseline_commit': base_commit, 'candidate_commit': cand_commit, 'a_a': aa,
        'injected_slowdown': injected_slowdown or None,
        'config': {k: cfg[k] for k in ('margin', 'margin_confidence', 'alpha', 'confidence',
                                       'intervals', 'min_pairs', 'hdf5_overhead')}
        | {'looks': looks, 'pairs_run': pairs_run},
        'metrics': [m.row for m in comparisons], 'counts': tonight.counts,
        'contention': exclusion.as_dict(cfg.contention),
        'problems': tonight.problems[:50], 'problem_count': len(tonight.problems),
        'not_judged': not_judged}
    annotate(result, cfg, history, references)
    return result


def _pairs_reached(comparisons, exclusion: contention.Exclusion) -> int | None:
    """The pairs of the night's look: the most of any judged metric, with those excluded."""
    pairs = max((m.comp.n for m in comparisons if m.comp is not None and m.role != 'reported'),
                default=None)
    return pairs and pairs + len(exclusion.excluded)


def say_what_runs_said(comparisons, sides: Sequence[contention.Side], baseline: str,
                       candidate: str, attempt: str | None) -> list[dict[str, Any]]:
    """A row one build of which left no samples: what that build's runs of its test
    said (failure or skip reasons, the most frequent first), from the sides' run reports;
    after the ERROR of a gated row without candidate samples, and in ``runs_said`` for the
    INCONCLUSIVE "no baseline samples". Returned: the tests that left no record on either
    build (no row to judge: a night's blind spot), each with what its runs said."""
    tonight = [s for s in sides if attempt is None or of_attempt(s.pair_id, attempt)]

    def said(build: str, test: str) -> str:
        counts = collections.Counter(why for s in tonight if s.build == build
                                     for name, why in s.not_passed
                                     if without_build(name) == test)
        return '; '.join(f'{why} ({n} run(s))' for why, n in counts.most_common(2)) + \
            (f'; {len(counts) - 2} other reason(s)' if len(counts) > 2 else '')
    for m in comparisons:
        for side, build, samples in (('baseline', baseline, 'base'),
                                     ('candidate', candidate, 'cand')):
            text = '' if m.row[samples] else said(build, without_build(m.row['test']))
            if text:
                m.row.setdefault('runs_said', {})[side] = f'; the {side}\'s runs said: {text}'
        if m.row.get('no_candidate'):
            m.row['no_candidate'] += m.row.get('runs_said', {}).get('candidate', '')
    rows = {without_build(m.row['test']) for m in comparisons}
    unjudged = sorted({without_build(name) for s in tonight if s.build in (baseline, candidate)
                       for name, _ in s.not_passed} - rows)
    return [{'test': test, 'baseline': said(baseline, test) or None,
             'candidate': said(candidate, test) or None} for test in unjudged]


def _on_every_pair(records, night, cfg, history, aa, looks, pairs_run) -> list:
    """The night's rows judged on every pair, the contended ones too."""
    whole = compare(collect(records, *night).groups, cfg, history, aa)
    decide_all(whole, cfg, looks, pairs_run)
    return whole


# ------------------------------------------------------------------ output
def format_text(result: Mapping[str, Any]) -> str:
    rows = [m for m in result['metrics'] if m['role'] == 'gated']
    label = next((m['interval']['label'] for m in rows if m.get('interval')), None)
    out = [f'h5regress gate: night {result["night"]}: {result["candidate"]} '
           f'({result.get("candidate_commit") or "?"}) vs {result["baseline"]} '
           f'({result.get("baseline_commit") or "?"})'
           + (f'; intervals: {label}' if label else '')]
    for m in sorted(rows, key=lambda m: (m['verdict'] != 'FAIL', m['label'])):
        ratio = '-' if m['ratio'] is None else f'{m["ratio"]:.3f}'
        drawn = m.get('interval') or m     # the interval the verdict read (issue 25)
        lo, hi = ('-' if drawn.get(k) is None else f'{drawn[k]:.3f}' for k in ('ratio_lo',
                                                                                'ratio_hi'))
        need = (f'; a PASS would need ~{m["pairs_for_pass"]} pairs at this noise'
                if m['verdict'] in ('INCONCLUSIVE', NO_SLOWDOWN_SEEN) and not m.get('slower')
                and m.get('pairs_for_pass') else '')
        out.append(f'  {m["verdict"]:<12} {m["label"]}: ratio {ratio} [{lo}, {hi}] '
                   f'n={m["n_pairs"]} {m.get("method") or ""} ({m["reason"]}{need})')
    for pair in (result.get('contention') or {}).get('excluded', ()):
        out.append(f'  EXCLUDED     pair {pair["pair"]}: {"; ".join(pair["why"])}')
    for t in result.get('not_judged', ()):
        out.append(f'  NOT JUDGED   {t["test"]}: no record of either build; the baseline\'s '
                   f'runs: {t["baseline"] or "passed"}; the candidate\'s: '
                   f'{t["candidate"] or "passed"}')
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
               f'{c["other_build"]} of other builds, '
               + (f'{c["contended"]} of contended pairs, ' if c.get('contended') else '')
               + f'{c["perf_fail_samples"]} perf_fail kept')
    if result.get('error'):
        out.append(f'  ERROR: {result["error"]}')
    if result.get('note'):
        out.append(f'  NOTE: {result["note"]}')
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
    p.add_argument('--reports', nargs='+', default=[], metavar='PATH',
                   help='ReFrame run reports (--report-file), or directories of them')
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


def _usage_problem(args: GateRequest) -> str | None:
    """What is wrong with the command line beyond argparse's checks (None: nothing)."""
    if args.run_records is None and not (args.records or args.perflogs or args.reports):
        return 'give --records, --perflogs and/or --reports'
    if args.pairs_run is not None and args.pairs_run < 1:
        return f'--pairs-run must be a positive pair count, got {args.pairs_run}'
    if args.baseline == args.candidate:
        return (f'--baseline and --candidate both name {args.baseline!r}; an A/A comparison '
                f'needs two build ids (the same commit under two names: it is then known to '
                f'have ratio 1)')
    return None


@dataclasses.dataclass(frozen=True)
class GateRequest:
    """One gate of a night, as ``h5regress gate``'s options say it (issue 26): the
    nightly builds one and calls :func:`gate_request`, no argv list. ``gate_config``:
    the configuration, loaded once by the caller (None: ``config``'s file layered
    over ``ci/gate.yaml``); ``margin``, ``alpha`` and ``confidence`` override its
    values (None: keep them), floats from here to the verdict (:meth:`configured`).
    ``run_records``: the records, read once by the caller for the gate and its report
    (None: read ``records``, ``perflogs`` and ``reports``; each side's load comes from
    ``reports`` either way)."""
    baseline: str
    candidate: str
    records: Sequence[str] = ()
    perflogs: Sequence[str] = ()
    reports: Sequence[str] = ()
    run_records: RunRecords | None = None
    config: str | None = None
    gate_config: GateConfig | None = None
    margin: float | None = None
    alpha: float | None = None
    confidence: float | None = None
    looks: Sequence[int] | None = None
    pairs_run: int | None = None
    history: str | None = None
    append_history: bool = False
    night: str | None = None
    attempt: str | None = None
    refs: Sequence[str] | None = None
    baseline_commit: str | None = None
    candidate_commit: str | None = None
    injected_slowdown: float = 0.0
    json: str | None = None
    report: str | None = None
    quiet: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GateRequest:
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
                      if f.name not in ('gate_config', 'run_records')})

    def read_records(self) -> tuple[list[Record], list[str]]:
        """(records, problems) to judge: ``run_records`` when given, else read."""
        if self.run_records is not None:
            return list(self.run_records.records), list(self.run_records.problems)
        return load_records(self.records, self.perflogs, self.reports)

    def configured(self) -> GateConfig:
        """The configuration this gate judges with (:class:`ConfigError` when a file or
        an override is bad)."""
        cfg = self.gate_config if self.gate_config is not None else load_config(self.config)
        return cfg.with_overrides(margin=self.margin, alpha=self.alpha,
                                  confidence=self.confidence)


def main_gate(argv: Sequence[str] | None = None) -> int:
    """``h5regress gate``; returns the exit code (see :data:`EXIT_CODES`)."""
    args, code = parse_args(build_parser(), argv)
    if args is None:
        return code
    return gate_request(GateRequest.from_args(args))


def gate_request(args: GateRequest) -> int:
    """Gate one night as ``args`` says, print and write what it asks; the exit code."""
    problem = _usage_problem(args)
    if problem:
        print(f'h5regress gate: error: {problem}', file=sys.stderr)
        return EXIT_USAGE
    try:
        cfg = args.configured()
        records, problems = args.read_records()
        sides, side_problems = contention.load_sides(args.reports)
        problems += side_problems
        check_builds(records, args.baseline, args.candidate, args.attempt,
                     ran=[(side.pair_id, side.build) for side in sides])
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
                          injected_slowdown=args.injected_slowdown, sides=sides)
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
            # the records the gate judged: the report reads none again
            report_mod.write_all(result, history, Path(args.report), records=records)
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
