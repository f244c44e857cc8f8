#!/usr/bin/env python3
"""h5paths rows in real pairs: their noise, a planted regression, an A/B of two builds.

A benchmark, not a test: it runs the h5paths kernel, measures and prints.

For each pair index and each row of the check's table (``reframe/checks/h5paths.py``,
its ``rows()`` and ``row_options``; ``--rows`` selects by the row's name), it runs side
A and side B back to back (ABBA order: even pairs A first, odd pairs B first), 2 ranks
by default, and reads each run with the suite's parser. The value of a run is the
row's gated metric (or its canary metric, for an MPI-IO twin) as ``ci/gate.yaml``'s
rules pick it (:func:`h5regress.gate.role_of`).

Sides:

- A/A (default): B is the same binary as A;
- ``--binary-b``/``--build-b``: B is another build's kernel (an A/B of two HDF5s);
- ``--shim``: B is A under ``benchmarks/hdf5_delay_shim.c`` (built here with gcc,
  ``--shim-symbol`` the delayed HDF5 function, default ``H5T_convert``), each call
  delayed by ``--shim-fraction`` of its own time: a planted regression on one path.

``--pairing sides`` runs every row on one side, then every row on the other, as
``ci/nightly`` does (a pair's two runs of a row are a whole side apart); ``--pairing
both`` runs both designs pair by pair, alternating which goes first, and prints a table
row per row and design: whether the time between a pair's runs carries the noise.

Printed per row: the gated phase's median time (s) on side A, the SD of the pair
log-ratios ln(B/A), the measured ratio B/A (geometric mean of the pairs), the gate's
verdict on those pairs (:func:`h5regress.stats.signed_rank` and
:func:`h5regress.gate.decide`, one metric, one look), and -- from the pairs' spread
-- how many pairs the gate needs to FAIL a 10 % slowdown in 80 % of nights (the
pairs' log-ratios, centred, resampled and shifted by ln 0.9, judged by the same
functions at n = 3..60).

Every run is appended to ``--out`` (JSONL, one line per run) as it ends; ``--summary
FILE`` prints from such a file without running anything. ``--night-gate GATE_JSON``
prints the same table, without running anything, for every gated metric of a real
night (any tool): the pairs are the night's own, read from its ``gate.json``.

Usage:
  python3 benchmarks/h5paths_noise.py --build hdf5-1.14.1 --pairs 8 --out aa.jsonl
  python3 benchmarks/h5paths_noise.py --build hdf5-1.14.1 --shim --shim-fraction 1 \\
      --pairs 5 --out shim.jsonl
  python3 benchmarks/h5paths_noise.py --build hdf5-1.14.1 --build-b hdf5-1.15.0 --pairs 5
  python3 benchmarks/h5paths_noise.py --night-gate nightly-out/gate.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from h5regress import gate, gateconfig, stats, tools  # noqa: E402
from h5regress.parsers import ParseError, h5paths as parser  # noqa: E402

CFG = gateconfig.load_config()
MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
           'OMPI_MCA_rmaps_base_oversubscribe': '1', 'OMPI_MCA_io': 'ompio'}


def load_check_module():
    """The check file as a module (its row table and options), without a ReFrame run."""
    spec = importlib.util.spec_from_file_location('h5paths_checks',
                                                  REPO / 'reframe' / 'checks' / 'h5paths.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def kernel(binary: str | None, build: str | None) -> str:
    if binary:
        return binary
    if build:
        return tools.find('h5paths', build).path
    raise SystemExit('name the kernel: --binary PATH or --build ID (a Spack manifest build)')


def build_shim(workdir: Path, symbol: str) -> Path:
    so = workdir / f'hdf5_delay_shim_{symbol}.so'
    subprocess.run(['gcc', '-shared', '-fPIC', '-O2', f'-DDELAYED={symbol}', '-o', str(so),
                    str(HERE / 'hdf5_delay_shim.c'), '-ldl'], check=True)
    return so


def one_run(args, exe: str, opts: list[str], scratch: Path, preload: dict[str, str]
            ) -> dict:
    """One execution of the kernel: the gated (or canary) metric's value and its phase time,
    or the failure."""
    summary = scratch / 'summary.json'
    data = scratch / 'data'
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    cmd = ['mpirun', '-np', str(args.ranks)]
    for key in preload:
        cmd += ['-x', key]
    cmd += [exe] + opts + ['--json', str(summary), str(data / 'h5p_')]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                       env={**os.environ, **MPI_ENV, **preload})
    files = {'stdout': p.stdout, 'stderr': p.stderr}
    if summary.exists():
        files['summary.json'] = summary.read_text()
        summary.unlink()
    shutil.rmtree(data, ignore_errors=True)
    if parser.unavailable(files):
        return {'skip': parser.unavailable(files)}
    try:
        run = parser.parse(files)[0]
    except ParseError as err:
        return {'error': str(err), 'exit': p.returncode}
    for m in run.measurements:
        role = gate.role_of(CFG, 'h5paths', m.operation, m.metric, run.params)
        if role in ('gated', 'canary'):
            seconds = run.measurement(m.operation, 'time').value
            return {'value': m.value, 'operation': m.operation, 'metric': m.metric,
                    'role': role, 'seconds': seconds, 'hdf5_version':
                        run.provenance.get('hdf5_version')}
    return {'error': 'no gated or canary metric in the run (ci/gate.yaml rules)'}


def run_pair(args, pair: int, design: str, rows, checks, sides, workdir: Path, out) -> None:
    """Pair ``pair`` of every row: ``rows``, each row's A and B back to back (seconds
    apart); ``sides``, every row on one side, then every row on the other, as
    ``ci/nightly`` pairs its sides (a pair's two runs of a row a side's time apart)."""
    a, b, preload_b, label_b = sides
    order = [('A', a, {}), ('B', b, preload_b)]
    order = order if pair % 2 == 0 else order[::-1]
    runs = ([(row, side) for row in rows for side in order] if design == 'rows' else
            [(row, side) for side in order for row in rows])
    for row, (side, exe, preload) in runs:
        name = checks.row_name(row)
        params = checks.row_params(row, size_factor=args.size_factor,
                                   chunk_elements=args.chunk_elements,
                                   iterations=args.iterations)
        # the row's file driver, as the check asks for it: a driver row run through sec2
        # would be measured under its name
        vfd = checks.row_driver(row)
        driver = ({'HDF5_DRIVER': vfd} if vfd else {}) | (
            {'HDF5_PLUGIN_PATH': checks.plugin_dir(exe)} if vfd == checks.VECTOR_VFD else {})
        t0 = time.time()
        res = one_run(args, exe, checks.row_options(params), workdir, {**preload, **driver})
        res.update(row=name, pair=pair, side=side, wall=time.time() - t0,
                   load=os.getloadavg()[0], label_b=label_b, design=design)
        if out:
            out.write(json.dumps(res) + '\n')
            out.flush()
        if 'error' in res:
            print(f'{name} pair {pair} {side}: {res["error"]}', flush=True)
    print(f'pair {pair} ({design}) done (load {os.getloadavg()[0]:.2f})', file=sys.stderr,
          flush=True)


def measure(args) -> None:
    checks = load_check_module()
    a = kernel(args.binary, args.build)
    b = kernel(args.binary_b, args.build_b) if (args.binary_b or args.build_b) else a
    workdir = Path(tempfile.mkdtemp(prefix='h5paths-noise-', dir=args.scratch))
    preload_b: dict[str, str] = {}
    label_b = 'A' if b == a else 'B'
    if args.shim:
        so = build_shim(workdir, args.shim_symbol)
        preload_b = {'LD_PRELOAD': str(so),
                     'H5REGRESS_DELAY_FRACTION': f'{args.shim_fraction:g}'}
        label_b = f'A+{args.shim_symbol} x{1 + args.shim_fraction:g}'
    rows = [r for r in checks.rows() if re.search(args.rows, checks.row_name(r))]
    out = open(args.out, 'a') if args.out else None
    print(f'# A: {a}\n# B: {b}{" under " + label_b if args.shim else ""}\n'
          f'# {len(rows)} row(s) x {args.pairs} pair(s), {args.ranks} ranks; '
          f'load before: {os.getloadavg()}', flush=True)
    designs = {'rows': ['rows'], 'sides': ['sides'], 'both': ['rows', 'sides']}[args.pairing]
    try:
        for pair in range(args.pairs):
            # --pairing both: the designs alternate which goes first, pair by pair
            for design in (designs if pair % 2 == 0 else designs[::-1]):
                run_pair(args, pair, design, rows, checks, (a, b, preload_b, label_b),
                         workdir, out)
    finally:
        if out:
            out.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.out:
        summary(args.out, args.reps)


def pairs_to_fail(d: list[float], reps: int, slow: float = 0.10, power: float = 0.8,
                  seed: int = 1) -> int | None:
    """Fewest pairs at which the gate FAILs ``slow`` in ``power`` of nights, with pair
    log-ratios resampled from ``d`` (centred) and shifted by ln(1 - slow)."""
    if len(d) < 3:
        return None
    rng = random.Random(seed)
    mu = sum(d) / len(d)
    centred = [x - mu for x in d]
    shift = math.log(1 - slow)
    for n in list(range(3, 21)) + list(range(22, 61, 2)):
        fails = 0
        for _ in range(reps):
            sample = [rng.choice(centred) + shift for _ in range(n)]
            comp = stats.signed_rank(sample, CFG['confidence'])
            fails += gate.decide(comp, comp.p_worse, CFG, None)[0] == 'FAIL'
        if fails >= power * reps:
            return n
    return None


def summary(path: str, reps: int = 300) -> None:
    runs = [json.loads(line) for line in open(path) if line.strip()]
    both = len({r.get('design') for r in runs}) > 1
    by_row: dict[str, dict[int, dict[str, dict]]] = {}
    for r in runs:
        # runs of --pairing both: one table row per row and design
        name = r['row'] + (f' [{r["design"]}]' if r.get('design') and both else '')
        by_row.setdefault(name, {}).setdefault(r['pair'], {})[r['side']] = r
    loads = [r['load'] for r in runs if 'load' in r]
    print(f'\n{len(runs)} runs from {path}; 1-min load during the runs: '
          f'{min(loads):.2f}..{max(loads):.2f} (median {stats.median(loads):.2f})'
          if loads else '')
    print(f'{"row":58} {"metric":22} {"pairs":>5} {"A time s":>9} {"sd lr":>7} '
          f'{"B/A":>6} {"verdict":>12} {"pairs@10%":>9}')
    for name, pairs in by_row.items():
        skipped = [s['skip'] for p in pairs.values() for s in p.values() if 'skip' in s]
        if skipped:
            print(f'{name:58} skipped: {skipped[0]}')
            continue
        good = [(p['A'], p['B']) for p in pairs.values()
                if 'A' in p and 'B' in p and 'value' in p['A'] and 'value' in p['B']]
        bad = sum(1 for p in pairs.values() for s in p.values() if 'error' in s)
        if not good:
            print(f'{name:58} no complete pair ({bad} failed run(s))')
            continue
        d = [math.log(b['value'] / a['value']) for a, b in good]
        metric = f'{good[0][0]["operation"]} {good[0][0]["metric"]}'
        sd = stats.variance(d) ** 0.5 if len(d) > 1 else float('nan')
        ratio = math.exp(sum(d) / len(d))
        if len(d) >= CFG['min_pairs']:
            comp = stats.signed_rank(d, CFG['confidence'])
            verdict = gate.decide(comp, comp.p_worse, CFG, None)[0]
        else:
            verdict = '-'
        need = pairs_to_fail(d, reps) if len(d) >= 3 else 'n/a'
        print(f'{name:58} {metric:22} {len(d):5d} '
              f'{stats.median([a["seconds"] for a, _ in good]):9.3f} {sd:7.4f} {ratio:6.3f} '
              f'{verdict:>12} {need or ">60":>9}'
              + (f'  ({bad} failed run(s))' if bad else ''))


def night_log_ratios(metric: dict) -> list[float]:
    """A gated metric's pair log-ratios from a night's ``gate.json`` (candidate over
    baseline, oriented so that below 0 is slower); [] when not gated or under 3 pairs."""
    n = metric.get('n_pairs') or 0
    if metric.get('role') != 'gated' or n < 3:
        return []
    sign = 1.0 if metric['higher_is_better'] else -1.0
    return [sign * math.log(c / b) for b, c in zip(metric['base'][:n], metric['cand'][:n])
            if b > 0 and c > 0]


def night_summary(path: str, reps: int = 300) -> None:
    """The noise table of a real night: per gated metric of its ``gate.json``, the SD
    of the night's pair log-ratios (candidate over baseline, oriented so that below 0
    is slower), the night's ratio and verdict, and the pairs@10 % of that spread."""
    night = json.loads(Path(path).read_text())
    print(f'{night["baseline"]} -> {night["candidate"]}, night {night["night"]}, '
          f'overall {night["overall"]}')
    print(f'{"metric":100} {"pairs":>5} {"sd lr":>7} {"ratio":>6} {"verdict":>16} '
          f'{"pairs@10%":>9}')
    for m in night['metrics']:
        d = night_log_ratios(m)
        if not d:
            continue
        sd = stats.variance(d) ** 0.5
        need = pairs_to_fail(d, reps)
        print(f'{m["label"][:100]:100} {len(d):5d} {sd:7.4f} {m["ratio"]:6.3f} '
              f'{m["verdict"]:>16} {need or ">60":>9}')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--binary', help='kernel of side A')
    ap.add_argument('--build', help='side A: the kernel of this Spack manifest build')
    ap.add_argument('--binary-b', help='kernel of side B (default: A\'s)')
    ap.add_argument('--build-b', help='side B: the kernel of this Spack manifest build')
    ap.add_argument('--shim', action='store_true', help='side B runs under the delay shim')
    ap.add_argument('--shim-symbol', default='H5T_convert')
    ap.add_argument('--shim-fraction', type=float, default=1.0)
    ap.add_argument('--rows', default='.', help='regex over the rows\' names')
    ap.add_argument('--pairs', type=int, default=5)
    ap.add_argument('--pairing', choices=('rows', 'sides', 'both'), default='rows',
                    help="rows: each row's A and B back to back (default); sides: every row "
                    "on A, then every row on B, as ci/nightly pairs; both: the two, "
                    "alternating, in one run")
    ap.add_argument('--ranks', type=int, default=2)
    ap.add_argument('--iterations', type=int, default=3)
    ap.add_argument('--chunk-elements', type=int, default=65536)
    ap.add_argument('--size-factor', type=float, default=1.0,
                    help='the check\'s size_factor (1: its sizes, about 1 s per phase)')
    ap.add_argument('--reps', type=int, default=300,
                    help='resamples per pair count for pairs@10%%')
    ap.add_argument('--timeout', type=int, default=600)
    ap.add_argument('--scratch', default=None, help='directory of the data files')
    ap.add_argument('--out', help='JSONL of every run (appended)')
    ap.add_argument('--summary', metavar='FILE', help='print from FILE, run nothing')
    ap.add_argument('--night-gate', metavar='GATE_JSON',
                    help='print the table of a real night\'s gate.json, run nothing')
    args = ap.parse_args()
    if args.night_gate:
        night_summary(args.night_gate, args.reps)
        return 0
    if args.summary:
        summary(args.summary, args.reps)
        return 0
    measure(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
