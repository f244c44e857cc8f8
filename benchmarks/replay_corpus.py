#!/usr/bin/env python3
"""The catch rate of the default night over the regression corpus, from stored replay
results (``h5regress replay ... --results regressions/replays``). A benchmark, not a
test: it prints a Markdown table, one line per replayed case (regression, fix and A/A
control: verdict, pairs, the worst row's ratio with its interval, wall time), then
how many regressions were caught and how many fix or control replays FAILed.

Usage: python3 benchmarks/replay_corpus.py [--results regressions/replays]
                                           [--corpus regressions]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from h5regress import corpus, replay  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--results', type=Path, default=root / 'regressions' / 'replays')
    ap.add_argument('--corpus', type=Path, default=root / 'regressions')
    args = ap.parse_args(argv)
    try:
        results = replay.load_results(args.results)
        size = len(corpus.load_corpus(args.corpus))
    except (replay.ReplayError, corpus.CorpusError) as err:
        print(f'replay_corpus: error: {err}', file=sys.stderr)
        return 4
    print(replay.catch_table(results, size))
    return 0


if __name__ == '__main__':
    sys.exit(main())
