#!/usr/bin/env python3
"""ReFrame's poll rate on a local night: a constant 10 Hz against its decay, interleaved.

A benchmark, not a test: it runs real A/A pairs of the default night and prints.

Two real nights disagreed with a measurement of the ReFrame process's own CPU (issue 25):
the night polling at a constant 10 Hz ran its pairs faster and 20 of 22 gated metrics
were quieter than on the night with ReFrame's decay, but the two nights ran at different
times. Here both settings share one run: pairs alternate between them in blocks of two
(so each setting runs both orders of the ABBA pairs), every pair runs every night row
(`nightrun.run_once`, the night's own command line), and the setting reaches ReFrame
as ``RFM_POLL_RATE_DECAY`` (0 = constant; ReFrame's default 0.1 = decay).

Each setting's run reports form an attempt of their own under ``OUT/reports/<setting>``,
gated by the suite's gate at its last pair; printed: each setting's side wall times and,
per gated metric, the SD of the pair log-ratios (from each setting's ``gate.json``).

Usage:
  H5REGRESS_MANIFEST=M python3 benchmarks/poll_rate_interleave.py \\
      --baseline hdf5-1.15.0 --candidate hdf5-1.15.0-b --pairs 16 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / 'benchmarks'))

import h5paths_noise  # noqa: E402
from h5regress import nightrun  # noqa: E402
from h5regress.gate.cli import GateRequest, gate_request  # noqa: E402

#: ``RFM_POLL_RATE_DECAY`` of each setting
SETTINGS = {'const': '0', 'decay': '0.1'}


def setting_of(pair: int) -> str:
    """Blocks of two: pairs 1-2 constant, 3-4 decay, ... so that each setting runs its
    pairs in both orders."""
    return list(SETTINGS)[((pair - 1) // 2) % 2]


def run(args) -> dict:
    env = {**os.environ, 'RFM_CONFIG_FILES': ':'.join(nightrun.default_config_files()),
           'H5REGRESS_PERFLOG_DIR': str(args.out / 'perflogs')}
    night = argparse.Namespace(select=nightrun.NIGHT_SELECTION, out=args.out, system=None,
                               setvar=[], quiet=True)
    counts, walls = dict.fromkeys(SETTINGS, 0), {s: [] for s in SETTINGS}
    for pair in range(1, args.pairs + 1):
        setting = setting_of(pair)
        counts[setting] += 1
        k = counts[setting]
        order = (args.baseline, args.candidate) if k % 2 else (args.candidate, args.baseline)
        for build in order:
            start = time.monotonic()
            nightrun.run_once(build, f'{setting}-p{k:02d}', night,
                              {**env, 'RFM_POLL_RATE_DECAY': SETTINGS[setting]},
                              reports=args.out / 'reports' / setting)
            walls[setting].append(time.monotonic() - start)
        print(f'pair {pair}/{args.pairs} ({setting} {k}): '
              f'{walls[setting][-2]:.1f} + {walls[setting][-1]:.1f} s', flush=True)
    (args.out / 'walls.json').write_text(json.dumps(walls))
    return counts


def gate(args, setting: str, pairs: int) -> dict:
    out = args.out / f'gate-{setting}.json'
    gate_request(GateRequest(baseline=args.baseline, candidate=args.candidate,
                             reports=[str(args.out / 'reports' / setting)],
                             attempt=setting, looks=[pairs], pairs_run=pairs,
                             json=str(out)))
    return json.loads(out.read_text())


def log_ratio_sds(gate_json: dict) -> dict[str, float]:
    """Per gated metric, the SD of its pair log-ratios."""
    ratios = {m['label']: h5paths_noise.night_log_ratios(m) for m in gate_json['metrics']}
    return {label: statistics.stdev(d) for label, d in ratios.items() if len(d) >= 2}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--baseline', required=True)
    ap.add_argument('--candidate', required=True)
    ap.add_argument('--pairs', type=int, default=16)
    ap.add_argument('--out', type=Path, required=True)
    ap.add_argument('--summary', action='store_true',
                    help="print from OUT's reports without running")
    args = ap.parse_args(argv)
    if args.summary:
        counts = {s: len(list((args.out / 'reports' / s).glob('*.json'))) // 2
                  for s in SETTINGS}
    else:
        counts = run(args)
    walls = json.loads((args.out / 'walls.json').read_text())
    sds = {s: log_ratio_sds(gate(args, s, counts[s])) for s in SETTINGS}
    print('\nside wall time (s): ' + '; '.join(
        f'{s} median {statistics.median(w):.1f} (min {min(w):.1f}, max {max(w):.1f}, '
        f'{len(w)} sides)' for s, w in walls.items()))
    print(f'\n{"gated metric":60} {"SD const":>9} {"SD decay":>9}')
    quieter = 0
    for name in sorted(sds['const']):
        if name in sds['decay']:
            c, d = sds['const'][name], sds['decay'][name]
            quieter += c < d
            # the row and metric, not the label's head: every label of a check starts alike
            row = name.split('benchmark=', 1)[-1]
            print(f'{row[:60]:60} {c:9.3f} {d:9.3f}')
    print(f'\nconstant poll quieter in {quieter} of '
          f'{len(set(sds["const"]) & set(sds["decay"]))} metrics')
    return 0


if __name__ == '__main__':
    sys.exit(main())
