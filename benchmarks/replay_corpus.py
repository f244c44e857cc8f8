#!/usr/bin/env python3
"""The catch rate over the regression corpus, from stored replay results (``h5regress
replay ... --results regressions/replays``). A benchmark, not a test: it prints a
Markdown table, one line per replayed case (regression, fix and A/A control: verdict,
pairs, the worst row's ratio with its interval, wall time; whether the row that caught
it is one of the default night's), then how many regressions the replayed rows caught,
how many of them the default night's rows catch, and how many fix or control replays
FAILed. A replay runs the rows its case names, night or not; the night's rows are
the tests ReFrame's ``--describe`` tags ``nightly`` (about 10 s). ``--sweeps DIR`` prints
the sweeps instead (``h5regress replay --between`` results, ``regressions/sweeps``): per
span the rows that FAILed and those left undecided.

Usage: python3 benchmarks/replay_corpus.py [--results regressions/replays]
                                           [--corpus regressions] [--sweeps DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from h5regress import corpus, nightrun, refs, replay  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--results', type=Path, default=root / 'regressions' / 'replays')
    ap.add_argument('--corpus', type=Path, default=root / 'regressions')
    ap.add_argument('--sweeps', type=Path, metavar='DIR')
    args = ap.parse_args(argv)
    try:
        if args.sweeps:
            print(replay.sweep_table(replay.load_results(args.sweeps)))
            return 0
        results = replay.load_results(args.results)
        size = len(corpus.load_corpus(args.corpus))
        night = replay.night_rows(refs.described_checks(), nightrun.NIGHT_SELECTION[-1])
    except (replay.ReplayError, corpus.CorpusError, refs.RefsError) as err:
        print(f'replay_corpus: error: {err}', file=sys.stderr)
        return 4
    print(replay.catch_table(results, size, night))
    return 0


if __name__ == '__main__':
    sys.exit(main())
