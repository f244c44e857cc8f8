#!/usr/bin/env python3
"""Speed benchmark: gate + report over a year of nightly history. Measures and prints.

Builds (untimed) a history of ``--nights`` nights x ``--metrics`` gated metrics x
``--pairs`` pairs in the on-disk format of :mod:`h5regress.history` (plus MPI-IO
canaries and a fio ceiling), and tonight's records as JSONL; then times, as the
nightly calls them, ``h5regress gate`` (reading records and the whole history,
change points over every gated series, canaries, false-alarm rates, appending
tonight) and ``h5regress report`` (Markdown, HTML with one SVG history plot
per gated metric, JUnit).

Usage: python3 benchmarks/speed.py [--nights 365] [--metrics 300] [--pairs 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import io
import math
import os
import random
import shutil
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from h5regress import gate, history, report, stats  # noqa: E402
from synth import Noise, night_records  # noqa: E402


def build_history(root: Path, nights: int, n_metrics: int, n_pairs: int, seed: int) -> str:
    """Write the history straight from tonight-like records, one night at a time.

    Running the real gate for every past night would take minutes of setup; the
    lines are made from the gate's own per-metric summary of synthetic records
    instead (same fields, same sizes)."""
    rng = random.Random(seed)
    noise = Noise('lognormal', 0.08, rng=rng)
    start = datetime.date(2024, 1, 1)
    template = night_records('2024-01-01', n_metrics, 2, noise)   # labels, params, hashes
    metas = {}
    for r in template:
        metas.setdefault(r.key, r)
    cfg = gate.load_config()
    last = ''
    for k in range(nights):
        night = (start + datetime.timedelta(days=k)).isoformat()
        lines = []
        drift = 0.9 if k > nights * 0.9 else 1.0     # a step on main: a change point
        for key, r in metas.items():
            role = gate.role_of(cfg, r.tool, r.operation, r.metric, r.params)
            level = r.value
            base, cand = [], []
            n = n_pairs if role == 'gated' else 6
            step = drift if (role == 'gated' and hash(key) % 10 == 0) else 1.0
            for _ in range(n):
                a, b = noise.pair()
                base.append(round(level * a, 3))
                cand.append(round(level * b * step, 3))
            lines.append({
                'key': history.metric_key(*key), 'label': f'{r.test} {r.operation} {r.metric}',
                'tool': r.tool, 'operation': r.operation, 'metric': r.metric, 'unit': r.unit,
                'higher_is_better': True, 'test': r.test, 'test_class': 'ior_check',
                'perf_var': f'{r.operation}_{r.metric}', 'system': r.system,
                'params': r.params, 'role': role, 'n_pairs': n, 'base': base, 'cand': cand,
                'base_median': stats.median(base), 'cand_median': stats.median(cand),
                'median_all': stats.median(base + cand), 'ratio': 1.0, 'ratio_lo': 0.95,
                'ratio_hi': 1.05, 'q': 0.5, 'verdict': 'PASS' if role == 'gated' else None,
                'true_ratio': 1.0 if role != 'gated' else None})
        header = {'night': night, 'timestamp': f'{night}T03:00:00+00:00',
                  'baseline': 'hdf5-1.14.6', 'candidate': 'hdf5-develop',
                  'baseline_commit': 'b0', 'candidate_commit': f'c{k:04d}', 'overall': 'PASS',
                  'a_a': False, 'degraded': False, 'counts': {}}
        history.write_night(root, header, lines)
        last = night
    return last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--nights', type=int, default=365)
    ap.add_argument('--metrics', type=int, default=300)
    ap.add_argument('--pairs', type=int, default=20)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--keep', help='work in this directory and keep it')
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix='h5r-speed-'))
    work.mkdir(parents=True, exist_ok=True)
    hdir = work / 'history'
    try:
        t0 = time.perf_counter()
        if not (hdir / 'nights').is_dir():
            last = build_history(hdir, args.nights, args.metrics, args.pairs, args.seed)
        else:
            last = sorted(p.stem for p in (hdir / 'nights').glob('*.jsonl'))[-1]
        tonight = (datetime.date.fromisoformat(last) + datetime.timedelta(days=1)).isoformat()
        recs = night_records(tonight, args.metrics, args.pairs,
                             Noise('lognormal', 0.08, rng=random.Random(args.seed + 1)),
                             {3: 0.8}, cand_commit='tonight')
        rfile = work / 'tonight.jsonl'
        rfile.write_text('\n'.join(r.to_json() for r in recs) + '\n')
        setup = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (hdir / 'nights').glob('*.jsonl'))
        nfiles = len(list((hdir / 'nights').glob('*.jsonl')))
        print(f'history: {nfiles} nights, {size / 2**20:.0f} MiB on disk '
              f'({args.metrics} gated metrics x {args.pairs} pairs per night, + canaries, fio); '
              f"tonight: {len(recs)} records ({rfile.stat().st_size / 2**20:.1f} MiB); "
              f'setup {setup:.1f} s (not timed)')

        t = time.perf_counter()
        hist = history.load(hdir, exclude_night=tonight)
        t_load = time.perf_counter() - t

        out = io.StringIO()
        t = time.perf_counter()
        with redirect_stdout(out):
            rc = gate.main_gate(['--baseline', 'hdf5-1.14.6', '--candidate', 'hdf5-develop',
                                 '--records', str(rfile), '--history', str(hdir),
                                 '--night', tonight, '--json', str(work / 'gate.json'),
                                 '--refs', '--quiet'])
        t_gate = time.perf_counter() - t
        t = time.perf_counter()
        with redirect_stdout(out):
            rc2 = report.main_report([str(work / 'gate.json'), '--history', str(hdir),
                                      '--out', str(work / 'report')])
        t_report = time.perf_counter() - t
        html_size = (work / 'report' / 'report.html').stat().st_size
        print(f'history load alone:  {t_load:6.2f} s ({len(hist.series)} series)')
        print(f'h5regress gate:      {t_gate:6.2f} s  (exit {rc}: '
              f'{out.getvalue().splitlines()[0] if out.getvalue() else ""})')
        print(f'h5regress report:    {t_report:6.2f} s  (exit {rc2}; report.html '
              f'{html_size / 2**20:.1f} MiB, {args.metrics} plots x {args.nights + 1} nights)')
        print(f'gate + report:       {t_gate + t_report:6.2f} s')
        import json
        res = json.loads((work / 'gate.json').read_text())
        print(f'tonight: {res["overall"]}; change points reported: '
              f'{len(res["change_points"])}; canaries degraded: '
              f'{sum(d["degraded"] for d in res["degraded"])}')
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
