"""``h5regress study NAME``: the questions a site answers once per system, one command each.

Each study runs the suite's own checks through ReFrame (same records, perflogs and
provenance as the nightly) and writes ``study.md``, ``study.html`` (self-contained:
the table and an interactive plot) and ``study.json`` into ``--out``, with how long it
ran. A repetition is one ReFrame execution per variant; repetitions interleave the
variants (A B, B A, ...), so slow drifts of the machine hit every variant alike.

``scaling``
    IOR over the partition's node counts and tasks per node: HDF5 collective, HDF5 with
    each rank's data in one write ("big chunk": ``ior_check.one_transfer``), HDF5
    independent, MPI-IO collective and POSIX, plus HDF5's multi-file variant (the
    subfiling VFD, through h5bench) where the build has it. The sweep is the
    partition's ``extras['scaling_num_nodes']`` and ``extras['scaling_tasks_per_node']``
    (a site lists 10 and 100 nodes there; ``local`` sweeps 1 and 2 ranks, ``ci-slurm`` 1
    and 2 nodes), else its ``num_nodes``/``tasks_per_node``.
``pitfalls``
    fio's write and read over the open flags {default, O_DIRECT, O_SYNC,
    O_DIRECT|O_SYNC} x the file's state {preallocated, append at EOF, overwrite of an
    allocated file}: how much the answer depends on parameters a benchmark report often
    leaves out. "default" is fio's own (buffered, no flush at the end: page cache).
``hdf5-vs-mpiio``
    The same IOR pattern through MPI-IO and through HDF5, each repetition its own
    execution, at least 30 each by default: HDF5's cost with its interval (Hodges-Lehmann
    on the paired log-ratios, exact Wilcoxon interval: :func:`h5regress.stats.signed_rank`)
    against the 15 % allowance, and Welch's test of the means (scipy), as the original
    HDF5 performance write-up asks.

Intervals: per cell the geometric mean of the repetitions with its 95 % t interval on
the log scale (scipy); with fewer than 2 repetitions there is none.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# nightprocs: the nightly's handling of children (process groups, signals, leftovers)
from h5regress import (atomic, checkfiles, nightprocs, nightrun, runrecords, runreport,
                       stats, tools)
from h5regress.cmdline import EXIT_ERROR, EXIT_USAGE, ArgParser, parse_args
from h5regress.record import Record

REPO = Path(__file__).resolve().parents[1]
#: ``checkbase`` reads the node and rank counts from ``extras['<sweep>_num_nodes']``...
SWEEP_ENV = 'H5REGRESS_SWEEP'
#: what HDF5 may lose to MPI-IO through the same layer
HDF5_ALLOWANCE = 0.15


@dataclass(frozen=True)
class Variant:
    """One column of a study: a ReFrame selection and its ``-S`` settings."""

    label: str
    #: ReFrame's options selecting the checks (:func:`row_of`)
    select: tuple[str, ...]
    settings: tuple[str, ...] = ()
    #: the checks have an ``hdf5_build`` parameter (select the study's build)
    per_build: bool = True


@dataclass
class Study:
    name: str
    variants: Callable[[Any], list[Variant]]
    analyse: Callable[[list[Record], Any], dict]
    default_runs: int
    #: extras prefix of the node/rank sweep (``None``: the partition's own counts)
    sweep: str | None = None


# -- running ----------------------------------------------------------------------

#: a study's IOR execution is one sample: no repetitions inside it (on one node each
#: repetition's read is an execution of its own after a cache drop)
ONCE = ('ior_check.repetitions=1', 'ior_build_check.repetitions=1')


def row_of(checks: str, row: str) -> tuple[str, ...]:
    """ReFrame's options selecting one row (``benchmark``, the checks' ``case``) of the
    checks named ``checks`` (their Spack-built and fixture-built twins)."""
    return ('-n', rf'^{checks}_(build_)?check(%|$)', '-E', f'case == {json.dumps(row)}')


def ior_row(row: str) -> tuple[str, ...]:
    return row_of('ior', row)


def reframe_command(variant: Variant, build: str, report: Path, args) -> list[str]:
    cmd = [str(Path(sys.executable).with_name('reframe')), '-c', str(REPO / 'reframe' / 'checks'),
           *(nightrun.build_filter(build, variant.select) if variant.per_build
             else variant.select),
           '-r', '-s', str(args.out / 'stage'), '-o', str(args.out / 'output'),
           '--report-file', str(report)]
    if args.system:
        cmd += ['--system', args.system]
    for setting in list(variant.settings) + list(args.setvar):
        cmd += ['-S', setting]
    return cmd


def slug(label: str) -> str:
    return ''.join(c if c.isalnum() else '-' for c in label)


def pair_id(study: str, rep: int, label: str) -> str:
    """What the records of one execution carry (``pair_id``): the study, the
    repetition and the variant, which the analysis reads back (:func:`variant_of`)."""
    return f'{study}-r{rep:02d}-{slug(label)}'


def variant_of(record: Record, labels: Iterable[str]) -> tuple[str, str] | None:
    """(repetition, variant label) of a record made by a study, else None."""
    for label in labels:
        tail = '-' + slug(label)
        if (record.pair_id or '').endswith(tail):
            return record.pair_id[:-len(tail)], label
    return None


def run_variant(variant: Variant, rep: int, build: str, study: Study, args) -> int:
    """One ReFrame execution of ``variant`` (repetition ``rep``); the number of test
    cases it ran."""
    report = args.out / 'reports' / f'r{rep:02d}-{slug(variant.label)}.json'
    env = {**os.environ, 'H5REGRESS_PERFLOG_DIR': str(args.out / 'perflogs'),
           'H5REGRESS_PAIR_ID': pair_id(study.name, rep, variant.label)}
    env.setdefault('RFM_CONFIG_FILES', str(REPO / 'reframe' / 'config' / 'settings.py'))
    if study.sweep:
        env[SWEEP_ENV] = study.sweep
    # a study's repetitions repeat a selection: after its first run, only its check files
    cmd = checkfiles.narrowed(reframe_command(variant, build, report, args), env)
    if not args.quiet:
        print('h5regress study: $ ' + ' '.join(cmd), file=sys.stderr, flush=True)
    nightprocs._state.quiet = True             # its echo would say ci/nightly
    nightprocs.run(cmd, env=env, stdout=subprocess.DEVNULL if args.quiet else None)
    nightprocs.stop_leftovers(f'the ReFrame run of {variant.label}')
    checkfiles.learn(cmd, env, report)
    try:
        return runreport.num_cases(report)
    except (OSError, ValueError):
        return 0


def run_study(study: Study, args) -> dict[str, int]:
    """Every variant ``args.runs`` times, interleaved; test cases run per variant.
    SIGTERM or SIGINT stops the running ReFrame and its jobs, then the study."""
    nightprocs.handle_signals()
    variants = study.variants(args)
    cases = {v.label: 0 for v in variants}
    for rep in range(1, args.runs + 1):
        order = variants if rep % 2 else variants[::-1]
        for variant in order:
            print(f'h5regress study {study.name}: repetition {rep}/{args.runs}: '
                  f'{variant.label}', file=sys.stderr, flush=True)
            cases[variant.label] += run_variant(variant, rep, args.build, study, args)
    return cases


# -- statistics -------------------------------------------------------------------

def geo_interval(values: Sequence[float], confidence: float = 0.95) -> dict:
    """Geometric mean of positive ``values`` and its t interval on the log scale."""
    from scipy import stats as sps
    logs = [math.log(v) for v in values if v > 0]
    n = len(logs)
    if not n:
        return {'n': 0, 'value': None, 'lo': None, 'hi': None}
    mean = sum(logs) / n
    if n < 2:
        return {'n': 1, 'value': math.exp(mean), 'lo': None, 'hi': None}
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = sps.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {'n': n, 'value': math.exp(mean), 'lo': math.exp(mean - half),
            'hi': math.exp(mean + half)}


# -- hdf5-vs-mpiio ----------------------------------------------------------------

#: the IOR rows compared, by --pattern
PATTERNS = {'collective': ('HDF5-collective-ssf', 'MPIIO-collective-ssf'),
            'independent': ('HDF5-independent-ssf', 'MPIIO-independent-ssf')}


def hdf5_vs_mpiio_variants(args) -> list[Variant]:
    hdf5, mpiio = PATTERNS[args.pattern]
    return [Variant('MPI-IO', ior_row(mpiio), ONCE), Variant('HDF5', ior_row(hdf5), ONCE)]


def hdf5_cost(pairs: Sequence[tuple[float, float]], allowance: float = HDF5_ALLOWANCE) -> dict:
    """HDF5/MPI-IO over paired repetitions ``(hdf5, mpiio)``: the ratio's estimate and
    95 % interval, Welch's test of the means, and the verdict against ``allowance``."""
    from scipy import stats as sps
    d = [math.log(h / m) for h, m in pairs if h > 0 and m > 0]
    cmp = stats.signed_rank(d, 0.95)
    out = {'pairs': len(d), 'ratio': cmp.ratio if d else None,
           'ratio_lo': cmp.ratio_lo if d else None,
           'ratio_hi': cmp.ratio_hi if d and math.isfinite(cmp.ratio_hi) else None,
           'method': 'Hodges-Lehmann on paired log-ratios, Wilcoxon signed-rank interval'}
    hdf5 = [h for h, _ in pairs]
    mpiio = [m for _, m in pairs]
    if len(pairs) >= 2:
        welch = sps.ttest_ind(hdf5, mpiio, equal_var=False)
        out['welch_p'] = float(welch.pvalue)
    floor = 1 - allowance
    if not d or out['ratio_hi'] is None or cmp.ratio_lo == 0.0:
        verdict = f'too few repetitions for an interval ({len(d)})'
    elif cmp.ratio_lo >= floor:
        verdict = f'within the {allowance:.0%} allowance'
    elif cmp.ratio_hi < floor:
        verdict = f'beyond the {allowance:.0%} allowance: investigate'
    else:
        verdict = (f'undecided: the interval straddles {floor:.2f}; more repetitions '
                   'would tell')
    out['verdict'] = verdict
    return out


def analyse_hdf5_vs_mpiio(records: list[Record], args) -> dict:
    rows = []
    for operation in ('write', 'read'):
        by_pair: dict[str, dict[str, float]] = {}
        for r in records:
            made = variant_of(r, ('HDF5', 'MPI-IO'))
            if made and r.tool == 'ior' and r.operation == operation and r.metric == 'bw_mean':
                rep, label = made
                by_pair.setdefault(rep, {})[label] = r.value
        pairs = [(v['HDF5'], v['MPI-IO']) for _, v in sorted(by_pair.items())
                 if 'HDF5' in v and 'MPI-IO' in v]
        cost = hdf5_cost(pairs)
        rows.append({'operation': operation, 'hdf5_mib_s': [h for h, _ in pairs],
                     'mpiio_mib_s': [m for _, m in pairs],
                     'hdf5': geo_interval([h for h, _ in pairs]),
                     'mpiio': geo_interval([m for _, m in pairs]), **cost})
    return {'pattern': args.pattern, 'rows': rows}


# -- scaling ----------------------------------------------------------------------

def scaling_variants(args=None) -> list[Variant]:
    big = ONCE + ('ior_check.one_transfer=true', 'ior_build_check.one_transfer=true')
    return [Variant('HDF5 collective', ior_row('HDF5-collective-ssf'), ONCE),
            Variant('HDF5 big chunk', ior_row('HDF5-collective-ssf'), big),
            Variant('HDF5 independent', ior_row('HDF5-independent-ssf'), ONCE),
            Variant('MPI-IO collective', ior_row('MPIIO-collective-ssf'), ONCE),
            Variant('POSIX', ior_row('POSIX-independent-ssf'), ONCE),
            Variant('HDF5 subfiling (h5bench)',
                    row_of('h5bench_write', '1D-CONTIG-CONTIG-subfiling'))]


#: the figure each scaling column takes from its records
SCALING_METRIC = {'ior': ('write', 'bw_mean'), 'h5bench': ('write', 'observed_rate')}


def analyse_scaling(records: list[Record], args) -> dict:
    columns = [v.label for v in scaling_variants()]
    cells: dict[tuple[int, int], dict[str, list[float]]] = {}
    for r in records:
        made = variant_of(r, columns)
        if made and SCALING_METRIC.get(r.tool) == (r.operation, r.metric):
            column = made[1]
            key = (int(r.params.get('num_nodes', 1)), int(r.params.get('num_ranks', 1)))
            cells.setdefault(key, {}).setdefault(column, []).append(r.value)
    rows = []
    for (nodes, ranks), values in sorted(cells.items()):
        row = {'num_nodes': nodes, 'tasks_per_node': ranks // max(nodes, 1), 'num_ranks': ranks,
               'columns': {c: geo_interval(v) for c, v in values.items()}}
        hdf5 = row['columns'].get('HDF5 collective', {}).get('value')
        for ref in ('POSIX', 'MPI-IO collective'):
            base = row['columns'].get(ref, {}).get('value')
            row[f'hdf5_over_{ref}'] = hdf5 / base if hdf5 and base else None
        rows.append(row)
    missing = [c for c in columns if not any(c in r['columns'] for r in rows)]
    return {'rows': rows, 'columns': columns, 'unit': 'MiB/s',
            'not_measured': {c: 'no record: the check was skipped (its reason is in '
                                'reports/*.json) or failed' for c in missing}}


# -- pitfalls ---------------------------------------------------------------------

#: fio open flags: (label, fio_check row, -S settings)
FLAGS = [('default', 'buffered', ('fio_check.end_fsync=false',)),
         ('O_DIRECT', 'direct', ()),
         ('O_SYNC', 'buffered', ('fio_check.sync=true', 'fio_check.end_fsync=false')),
         ('O_DIRECT|O_SYNC', 'direct', ('fio_check.sync=true',))]
#: the file's state before the write: fio_check.file_state
FILE_STATES = ['preallocated', 'append', 'overwrite']


def pitfalls_variants(args) -> list[Variant]:
    return [Variant(f'{flag} {state}', row_of('fio', row),
                    settings + (f'fio_check.file_state={state}',), per_build=False)
            for flag, row, settings in FLAGS for state in FILE_STATES]


def pitfall_flags(r: Record) -> str:
    direct, sync = bool(r.params.get('direct')), bool(r.params.get('sync'))
    if direct:
        return 'O_DIRECT|O_SYNC' if sync else 'O_DIRECT'
    if sync:
        return 'O_SYNC'
    return 'default' if not r.params.get('end_fsync') else 'buffered + fsync'


def analyse_pitfalls(records: list[Record], args) -> dict:
    cells: dict[tuple[str, str, str], list[float]] = {}
    for r in records:
        if r.tool == 'fio' and r.metric == 'bw':
            # the default state is not recorded (the nightly's rows keep their hash)
            key = (r.operation, pitfall_flags(r), r.params.get('file_state') or 'preallocated')
            cells.setdefault(key, []).append(r.value)
    rows = [{'operation': op, 'flags': flags, 'file_state': state, **geo_interval(values),
             'samples': values}
            for (op, flags, state), values in sorted(cells.items())]
    return {'rows': rows, 'unit': 'MiB/s', 'flags': [f for f, _, _ in FLAGS],
            'file_states': FILE_STATES}


STUDIES = {
    'scaling': Study('scaling', scaling_variants, analyse_scaling, 3, sweep='scaling'),
    'pitfalls': Study('pitfalls', pitfalls_variants, analyse_pitfalls, 3),
    'hdf5-vs-mpiio': Study('hdf5-vs-mpiio', hdf5_vs_mpiio_variants, analyse_hdf5_vs_mpiio, 30),
}


# -- output -----------------------------------------------------------------------

def _fmt(x: Any, digits: int = 4) -> str:
    return '–' if x is None else f'{x:.{digits}g}'


def _cell(c: dict | None) -> str:
    if not c or c.get('value') is None:
        return '–'
    if c.get('lo') is None:
        return f'{_fmt(c["value"])} (n={c["n"]})'
    return f'{_fmt(c["value"])} [{_fmt(c["lo"], 3)}, {_fmt(c["hi"], 3)}] (n={c["n"]})'


def markdown(result: dict) -> str:
    head = [f'# h5regress study {result["study"]}', '',
            f'System `{result["system"] or "(ReFrame picks)"}`, HDF5 build `{result["build"]}`, '
            f'{result["runs"]} repetition(s) per variant, interleaved; ran '
            f'{result["seconds"]:.0f} s. Values: geometric mean over repetitions, '
            '[95 % t interval on the log scale], n = repetitions with a record.', '']
    body = MARKDOWN[result['study']](result['analysis'])
    cases = ', '.join(f'{k}: {v}' for k, v in result['cases'].items())
    return '\n'.join(head + body + ['', f'Test cases run per variant: {cases}.', ''])


def md_scaling(a: dict) -> list[str]:
    cols = a['columns']
    out = ['| nodes | tasks/node | ranks | ' + ' | '.join(f'{c} (MiB/s)' for c in cols) +
           ' | HDF5 coll. / POSIX | HDF5 coll. / MPI-IO |',
           '|' + '---|' * (len(cols) + 5)]
    for r in a['rows']:
        out.append(f'| {r["num_nodes"]} | {r["tasks_per_node"]} | {r["num_ranks"]} | ' +
                   ' | '.join(_cell(r['columns'].get(c)) for c in cols) +
                   f' | {_fmt(r["hdf5_over_POSIX"], 3)} | {_fmt(r["hdf5_over_MPI-IO collective"], 3)} |')
    out += [f'- {c}: not measured ({why})' for c, why in a['not_measured'].items()]
    return out


def md_pitfalls(a: dict) -> list[str]:
    out = []
    for op in ('write', 'read'):
        out += [f'## fio {op} (MiB/s)', '',
                '| flags | ' + ' | '.join(a['file_states']) + ' |',
                '|---|' + '---|' * len(a['file_states'])]
        cells = {(r['flags'], r['file_state']): r for r in a['rows'] if r['operation'] == op}
        for flags in a['flags']:
            out.append(f'| {flags.replace("|", chr(92) + "|")} | ' +
                       ' | '.join(_cell(cells.get((flags, s)))
                                                    for s in a['file_states']) + ' |')
        out.append('')
    out.append('"default" is fio\'s own: buffered, no flush at the end, so the write figure '
               'is the page cache\'s. Reads follow a page-cache drop where permitted (each '
               'record says so: read_page_cache).')
    return out


def md_hdf5_vs_mpiio(a: dict) -> list[str]:
    out = [f'IOR pattern: {a["pattern"]}, shared file.', '',
           '| phase | pairs | MPI-IO (MiB/s) | HDF5 (MiB/s) | HDF5/MPI-IO [95 %] | '
           'HDF5 costs | Welch p (means) | against the 15 % allowance |',
           '|---|---|---|---|---|---|---|---|']
    for r in a['rows']:
        cost = (f'{(1 - r["ratio"]) * 100:.1f} % [{(1 - (r["ratio_hi"] or math.inf)) * 100:.1f}, '
                f'{(1 - r["ratio_lo"]) * 100:.1f}]' if r['ratio'] and r['ratio_hi'] else '–')
        ratio = (f'{r["ratio"]:.3f} [{_fmt(r["ratio_lo"], 3)}, {_fmt(r["ratio_hi"], 3)}]'
                 if r['ratio'] else '–')
        out.append(f'| {r["operation"]} | {r["pairs"]} | {_cell(r["mpiio"])} | '
                   f'{_cell(r["hdf5"])} | {ratio} | {cost} | {_fmt(r.get("welch_p"), 2)} | '
                   f'{r["verdict"]} |')
    return out


MARKDOWN = {'scaling': md_scaling, 'pitfalls': md_pitfalls, 'hdf5-vs-mpiio': md_hdf5_vs_mpiio}


def figure(result: dict):
    """The study's plot (plotly)."""
    import plotly.graph_objects as go
    a, fig = result['analysis'], go.Figure()
    if result['study'] == 'scaling':
        for c in a['columns']:
            pts = [(r['num_ranks'], r['columns'][c]) for r in a['rows'] if c in r['columns']]
            if pts:
                fig.add_scatter(x=[p[0] for p in pts], y=[p[1]['value'] for p in pts],
                                mode='lines+markers', name=c)
        fig.update_layout(xaxis_title='MPI ranks', yaxis_title='write bandwidth (MiB/s)')
    elif result['study'] == 'pitfalls':
        for op in ('write', 'read'):
            rows = [r for r in a['rows'] if r['operation'] == op]
            fig.add_bar(x=[f'{r["flags"]}<br>{r["file_state"]}' for r in rows],
                        y=[r['value'] for r in rows], name=op)
        fig.update_layout(barmode='group', yaxis_title='bandwidth (MiB/s)', yaxis_type='log')
    else:
        for r in a['rows']:
            fig.add_scatter(y=[h / m for h, m in zip(r['hdf5_mib_s'], r['mpiio_mib_s'])],
                            mode='markers', name=f'{r["operation"]}: HDF5/MPI-IO per pair')
        fig.add_hline(y=1 - HDF5_ALLOWANCE, line_dash='dash',
                      annotation_text='15 % allowance')
        fig.update_layout(xaxis_title='repetition', yaxis_title='HDF5 / MPI-IO')
    fig.update_layout(template='none', height=420, title=f'h5regress study {result["study"]}')
    return fig


def html_page(result: dict, md: str) -> str:
    import html as h

    from h5regress.report import plotly_js
    plot = figure(result).to_html(full_html=False, include_plotlyjs=False,
                                  config={'displaylogo': False})
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>h5regress study '
            f'{h.escape(result["study"])}</title><script>{plotly_js()}</script></head><body>'
            f'{plot}<pre>{h.escape(md)}</pre></body></html>')


def write_outputs(result: dict, out: Path) -> None:
    md = markdown(result)
    atomic.write_text(out / 'study.json', json.dumps(result, indent=1, default=str))
    atomic.write_text(out / 'study.md', md)
    atomic.write_text(out / 'study.html', html_page(result, md))


# -- command line -----------------------------------------------------------------

def parse(argv: Sequence[str]):
    ap = ArgParser(prog='h5regress study', description=__doc__)
    ap.add_argument('study', choices=sorted(STUDIES))
    ap.add_argument('--runs', type=int, help='repetitions per variant (default: scaling 3, '
                    'pitfalls 3, hdf5-vs-mpiio 30)')
    ap.add_argument('--system', help='system:partition (default: ReFrame picks by host)')
    ap.add_argument('--build', help='HDF5 build id of the manifest (default: its first; '
                    '"path" without a manifest)')
    ap.add_argument('--out', type=Path, default=Path('study-out'),
                    help='output directory (default: ./study-out/)')
    ap.add_argument('--pattern', choices=sorted(PATTERNS), default='collective',
                    help='hdf5-vs-mpiio: the IOR rows compared (default: collective)')
    ap.add_argument('--analyse-only', action='store_true',
                    help='no runs: read the ReFrame run reports already under --out')
    ap.add_argument('-S', dest='setvar', action='append', default=[], metavar='VAR=VALUE',
                    help='a ReFrame -S setting for every run (repeatable)')
    ap.add_argument('--quiet', action='store_true', help="no ReFrame output")
    return parse_args(ap, argv)


def main(argv: Sequence[str] | None = None) -> int:
    args, code = parse(sys.argv[1:] if argv is None else argv)
    if args is None:
        return code
    study = STUDIES[args.study]
    args.runs = args.runs or study.default_runs
    if args.runs < 1:
        print(f'h5regress study: --runs must be >= 1, got {args.runs}', file=sys.stderr)
        return EXIT_USAGE
    builds = tools.builds()
    args.build = args.build or builds[0]
    if args.build not in builds:
        print(f'h5regress study: no HDF5 build {args.build!r}; the builds are: '
              f'{", ".join(builds)}', file=sys.stderr)
        return EXIT_ERROR
    args.out = args.out.resolve()
    start = time.monotonic()
    try:
        cases = {} if args.analyse_only else run_study(study, args)
    except nightprocs.Interrupted as stop:
        print(f'h5regress study: {stop}: stopped; the records of the finished runs stay '
              f'under {args.out / "reports"} (--analyse-only reads them)', file=sys.stderr)
        return EXIT_ERROR
    # ReFrame's run reports carry the records (the perflogs beside them are for people)
    got = runrecords.read(reports=[str(args.out / 'reports')]) \
        if (args.out / 'reports').exists() else runrecords.RunRecords()
    records, problems = got.records, got.problems
    for problem in problems:
        print(f'h5regress study: skipped: {problem}', file=sys.stderr)
    if args.analyse_only and not records:
        print(f'h5regress study: --analyse-only: no record under {args.out / "reports"}: '
              f'nothing to analyse (give the --out of a study that ran); nothing written',
              file=sys.stderr)
        return EXIT_ERROR
    result = {'study': study.name, 'system': args.system, 'build': args.build,
              'runs': args.runs, 'seconds': time.monotonic() - start, 'cases': cases,
              'analysis': study.analyse(records, args)}
    write_outputs(result, args.out)
    print((args.out / 'study.md').read_text())
    if not records:
        print(f'h5regress study: no record under {args.out / "reports"}: every run was '
              'skipped or failed (see the ReFrame reports in reports/)', file=sys.stderr)
        return EXIT_ERROR
    return 0


if __name__ == '__main__':
    sys.exit(main())
