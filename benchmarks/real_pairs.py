#!/usr/bin/env python3
"""Real A/B pairs on this machine: the noise the gate sees, and a known slowdown.

A benchmark, not a test: it runs a real tool, measures and prints.

For each pair index it runs, for every ``--fraction`` f, one baseline run
and one candidate run back to back (ABBA order: even pairs A then B, odd
pairs B then A); the candidate is the same binary under ``delay_shim.so``
(LD_PRELOAD) with ``H5REGRESS_DELAY_FRACTION=f``, so ``f = 0`` is an A/A
pair and ``f = 0.111`` a nominal 10 % slowdown. Between runs the data file
is removed, ``sync`` runs and the page cache is dropped (when permitted), as
the suite's checks do: without that, dirty pages of the previous run make
runs differ 2-4x on this VM.

The default run is IOR's HDF5 write through MPI-IO, 2 ranks, 64 MiB per
rank in 4 MiB transfers to one shared file, collective, with fsync (``-e``),
one repetition: the configuration whose run-to-run CV of 8 % the gate was
calibrated against. ``--tool fio`` runs a buffered sequential fio write with
``end_fsync`` instead (no MPI, no HDF5).

Every run becomes a record (``h5regress.record``) with its pair id, the
build label ``base`` or ``cand-<f>``, and the measured write bandwidth; the
file (``--out``, JSONL) is rewritten atomically after every pair, so an
interrupted measurement keeps what it had. ``benchmarks/calibrate.py
--pairs-from FILE`` resamples these pairs. At the end it prints per
fraction: runs, median bandwidth, run-to-run CV of each side, the SD of the
pair log-ratios and what independent runs would give (sqrt(2) x CV), the
correlation of the two runs of a pair, the lag-1 autocorrelation of the
baseline series, and the measured ratio (geometric mean of the pair ratios).

Usage:
  python3 benchmarks/real_pairs.py --pairs 100 --fraction 0 0.111 --out pairs.jsonl
  python3 benchmarks/real_pairs.py --summary pairs.jsonl     # print only
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from h5regress import atomic, stats  # noqa: E402
from h5regress.parsers import fio as fio_parser, ior as ior_parser  # noqa: E402
from h5regress.record import Record, read_jsonl  # noqa: E402

OMPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'}


def build_shim(workdir: Path) -> Path:
    so = workdir / 'delay_shim.so'
    subprocess.run(['gcc', '-shared', '-fPIC', '-O2', '-o', str(so),
                    str(HERE / 'delay_shim.c'), '-ldl'], check=True)
    return so


def clean_up(datadir: Path, args) -> None:
    """Remove the data, sync, drop the page cache (unless told not to), settle."""
    for f in datadir.iterdir():
        f.unlink()
    subprocess.run(['sync'], check=True)
    if args.drop_caches:
        try:
            Path('/proc/sys/vm/drop_caches').write_text('3\n')
        except OSError:
            pass     # not root: the removed files' pages are gone with them anyway
    if args.settle > 0:
        time.sleep(args.settle)


def ior_command(args, datadir: Path, shim: Path | None, fraction: float) -> list[str]:
    preload = ['-x', f'LD_PRELOAD={shim}', '-x', f'H5REGRESS_DELAY_FRACTION={fraction:g}'] \
        if shim and fraction > 0 else []
    return (['mpirun', '-np', str(args.ranks)] + preload
            + [args.ior, '-a', 'HDF5', '-c', '-w', '-e', '-b', args.block, '-t', args.transfer,
               '-i', '1', '-o', str(datadir / 'ior.h5'), '-O', 'summaryFormat=JSON'])


def fio_command(args, datadir: Path) -> list[str]:
    return ['fio', '--name=w', '--rw=write', '--bs=1m', f'--size={args.block}',
            '--ioengine=psync', '--end_fsync=1', f'--directory={datadir}',
            '--output-format=json']


def one_run(args, datadir: Path, shim: Path | None, fraction: float) -> float:
    """Write bandwidth (MiB/s) of one execution of the tool."""
    env = dict(os.environ, **OMPI_ENV)
    if args.tool == 'ior':
        cmd = ior_command(args, datadir, shim, fraction)
    else:
        cmd = fio_command(args, datadir)
        if shim and fraction > 0:
            env.update(LD_PRELOAD=str(shim), H5REGRESS_DELAY_FRACTION=f'{fraction:g}')
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    clean_up(datadir, args)
    files = {'stdout': out.stdout, 'stderr': out.stderr}
    if out.returncode:
        raise SystemExit(f'{" ".join(cmd)}: exit {out.returncode}\n{out.stderr[-2000:]}')
    parser = ior_parser if args.tool == 'ior' else fio_parser
    for run in parser.parse(files):
        for m in run.measurements:
            if m.operation == 'write' and m.metric in ('bw_max', 'bw'):
                return m.value
    raise SystemExit(f'{" ".join(cmd)}: no write bandwidth in its output')


def record(args, value: float, build: str, pair: int, fraction: float, seq: int) -> Record:
    return Record(tool=f'{args.tool}-pairs', operation='write', metric='bw', value=value,
                  unit='MiB/s', higher_is_better=True,
                  params={'tool': args.tool, 'block': args.block, 'transfer': args.transfer,
                          'ranks': args.ranks, 'fraction': fraction,
                          'drop_caches': args.drop_caches, 'settle': args.settle},
                  provenance={'sequence': seq, 'host': os.uname().nodename},
                  hdf5_build=build, config_hash=f'real-pairs-{args.tool}-{fraction:g}',
                  run_id=f'{build}-{pair}-{seq}',
                  timestamp=datetime.datetime.now(datetime.timezone.utc)
                  .isoformat(timespec='seconds'),
                  pair_id=f'{fraction:g}-{pair}')


def measure(args) -> list[Record]:
    work = Path(tempfile.mkdtemp(prefix='h5r-pairs-', dir=args.scratch))
    recs: list[Record] = []
    seq = 0
    try:
        shim = build_shim(work) if any(f > 0 for f in args.fraction) else None
        data = work / 'data'
        data.mkdir()
        t0 = time.perf_counter()
        for p in range(args.pairs):
            for f in args.fraction:
                cand = f'cand-{f:g}'
                order = (('base', 0.0), (cand, f))
                for build, frac in (order if p % 2 == 0 else order[::-1]):
                    seq += 1
                    recs.append(record(args, one_run(args, data, shim, frac), build, p, f, seq))
            atomic.write_text(args.out, ''.join(r.to_json() + '\n' for r in recs))
            if (p + 1) % 10 == 0:
                print(f'  {p + 1} pairs, {time.perf_counter() - t0:.0f} s', flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return recs


def paired_runs(recs: list[Record]) -> dict[float, list[tuple[tuple[int, float], ...]]]:
    """Per delay fraction, the complete pairs as ((seq, base MiB/s), (seq, cand MiB/s))."""
    sides: dict[float, dict[str, dict[str, tuple[int, float]]]] = {}
    for r in recs:
        f = float(r.params['fraction'])
        side = 'base' if r.hdf5_build == 'base' else 'cand'
        sides.setdefault(f, {'base': {}, 'cand': {}})[side][r.pair_id] = (
            int(r.provenance.get('sequence', 0)), r.value)
    return {f: [(s['base'][p], s['cand'][p]) for p in s['base'] if p in s['cand']]
            for f, s in sorted(sides.items())}


def pair_log_ratios(path: str) -> dict[float, list[float]]:
    """Per delay fraction, ln(candidate / baseline) of each pair of a file of pairs."""
    recs, bad = read_jsonl(Path(path).read_text(), path)
    if bad:
        print(f'{path}: {len(bad)} malformed line(s) skipped', file=sys.stderr)
    return {f: [math.log(c[1] / b[1]) for b, c in pairs]
            for f, pairs in paired_runs(recs).items()}


def summary(recs: list[Record]) -> None:
    print(f'{"fraction":>9}{"pairs":>7}{"base MiB/s":>12}{"CV base":>9}{"CV cand":>9}'
          f'{"sd(log-ratio)":>15}{"iid would":>11}{"corr in pair":>14}{"lag-1 base":>12}'
          f'{"ratio":>8}')
    for f, pairs in paired_runs(recs).items():
        if len(pairs) < 3:
            continue
        lb = [math.log(b[1]) for b, _ in pairs]
        lc = [math.log(c[1]) for _, c in pairs]
        d = [c - b for b, c in zip(lb, lc)]
        sb, sc = math.sqrt(stats.variance(lb)), math.sqrt(stats.variance(lc))
        mb, mc = stats.mean(lb), stats.mean(lc)
        corr = (math.fsum((b - mb) * (c - mc) for b, c in zip(lb, lc))
                / ((len(pairs) - 1) * sb * sc)) if sb > 0 and sc > 0 else math.nan
        # baseline runs in the order they ran: drift shows as autocorrelation
        ls = [math.log(v) for _, v in sorted(b for b, _ in pairs)]
        m = stats.mean(ls)
        lag1 = (math.fsum((a - m) * (b - m) for a, b in zip(ls, ls[1:]))
                / math.fsum((a - m) ** 2 for a in ls))
        cv = lambda s: math.sqrt(math.expm1(s * s))  # noqa: E731
        print(f'{f:>9.3f}{len(pairs):>7}{math.exp(stats.median(lb)):>12.0f}{cv(sb):>9.1%}'
              f'{cv(sc):>9.1%}{math.sqrt(stats.variance(d)):>15.3f}'
              f'{math.sqrt(sb * sb + sc * sc):>11.3f}{corr:>14.2f}{lag1:>12.2f}'
              f'{math.exp(stats.mean(d)):>8.3f}')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tool', choices=['ior', 'fio'], default='ior')
    ap.add_argument('--ior', default=shutil.which('ior') or 'ior', help='IOR binary')
    ap.add_argument('--pairs', type=int, default=60)
    ap.add_argument('--fraction', type=float, nargs='+', default=[0.0, 0.111],
                    help='delay fractions of the candidate (0 = A/A)')
    ap.add_argument('--ranks', type=int, default=2)
    ap.add_argument('--block', default='64m', help='IOR block per rank / fio size')
    ap.add_argument('--transfer', default='4m')
    ap.add_argument('--no-drop-caches', dest='drop_caches', action='store_false',
                    help='keep the page cache between runs (only remove and sync)')
    ap.add_argument('--settle', type=float, default=0.0, metavar='SECONDS',
                    help='pause after each clean-up (lets a write-back cache below drain)')
    ap.add_argument('--scratch', default=None, help='where the data files go (default: TMPDIR)')
    ap.add_argument('--out', default='real-pairs.jsonl')
    ap.add_argument('--summary', metavar='FILE', help='only summarise a file of pairs')
    args = ap.parse_args()
    if args.summary:
        recs, bad = read_jsonl(Path(args.summary).read_text(), args.summary)
        if bad:
            print(f'{args.summary}: {len(bad)} malformed line(s) skipped')
    else:
        if args.tool == 'ior' and not shutil.which(args.ior):
            raise SystemExit(f'IOR not found ({args.ior}); pass --ior PATH or put it on PATH')
        print(f'{args.pairs} pairs x fractions {args.fraction}, tool {args.tool}, '
              f'-> {args.out}', flush=True)
        recs = measure(args)
    summary(recs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
