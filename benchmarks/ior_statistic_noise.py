"""How noisy each statistic of IOR's write repetitions is between a night's pairs.

An IOR row writes its file ``-i`` times in one execution; the gate judges one
statistic of those repetitions (``ci/gate.yaml``). For each night directory given
(``ci/nightly --out``), this prints, per IOR write row, the standard deviation of the
pair log-ratios (candidate over baseline) of the mean, best, median and worst
repetition, and then how often each statistic was the quietest::

    benchmarks/ior_statistic_noise.py NIGHT_DIR [NIGHT_DIR ...]

It reads each night's newest attempt through :mod:`h5regress.runrecords`.
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from h5regress import runrecords  # noqa: E402

STATISTICS = {'mean': statistics.mean, 'best': max, 'median': statistics.median,
              'worst': min}


def pair_sds(night: Path) -> dict[str, dict[str, float]]:
    """{row: {statistic: SD of its pair log-ratios}} of a night's IOR write rows."""
    attempt = sorted(p.name for p in (night / 'reports').iterdir())[-1]
    runs: dict[str, dict[tuple, list[float]]] = collections.defaultdict(dict)
    for r in runrecords.of_night(night, attempt).records:
        if r.tool == 'ior' and r.operation == 'write' and r.metric == 'bw_mean':
            runs[r.params['case']][(r.pair_id, r.hdf5_build)] = r.samples
    out = {}
    for row, by_side in sorted(runs.items()):
        builds = sorted({b for _, b in by_side})
        pairs = sorted({p for p, _ in by_side if all((p, b) in by_side for b in builds)})
        if len(builds) != 2 or len(pairs) < 3:
            continue
        out[row] = {name: statistics.stdev(
            math.log(f(by_side[(p, builds[1])]) / f(by_side[(p, builds[0])])) for p in pairs)
            for name, f in STATISTICS.items()}
        out[row]['pairs'] = len(pairs)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('nights', nargs='+', type=Path, help='ci/nightly --out directories')
    args = ap.parse_args(argv)
    quietest = collections.Counter()
    print('| night | row | pairs | ' + ' | '.join(STATISTICS) + ' |')
    print('|---|---|---|' + '---|' * len(STATISTICS))
    for night in args.nights:
        for row, sds in pair_sds(night).items():
            cells = [sds[name] for name in STATISTICS]
            best = min(cells)
            quietest.update(name for name in STATISTICS if sds[name] == best)
            print(f'| {night.name} | {row} | {sds["pairs"]} | '
                  + ' | '.join(f'{v:.3f}' for v in cells) + ' |')
    print('\nquietest statistic (rows x nights): '
          + ', '.join(f'{name} {quietest[name]}' for name in STATISTICS))
    return 0


if __name__ == '__main__':
    sys.exit(main())
