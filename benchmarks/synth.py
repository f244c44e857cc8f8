"""Synthetic nightly records for the benchmarks (and the tests): noise models, pairs.

Noise models (per run, multiplicative, mean 1):

* ``lognormal``: iid log-normal with the given coefficient of variation (CV);
* ``shared``: half of the variance is shared by the two runs of a pair (file
  system load that lasts longer than a pair), half is per run;
* ``heavy``: log-normal plus 5 % of runs 30 % slow (a busy file system);
* ``empirical``: resample measured log-residuals (a list passed in), each run
  of a pair on its own;
* ``pairs``: resample measured pair log-ratios ln(B/A) of real A/A pairs (a
  list passed in): whatever the two runs of a real pair share stays shared;
* ``bimodal``: each run lands, on its own, in a low or a high mode a factor 2
  apart (half the runs in each: about 700 or 1400 MiB/s, as IOR's HDF5 writes
  with 4 MiB transfers do on this VM), log-normal with the given CV within a mode;
  ``gap`` sets the factor between the modes and ``high_share`` the share of the
  baseline's and of the candidate's runs in the high mode.

The numbers are what ``h5regress.record.Record`` carries; values are MiB/s.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from h5regress.record import Record, config_hash  # noqa: E402


def sigma_of_cv(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


class Noise:
    def __init__(self, model: str = 'lognormal', cv: float = 0.08,
                 residuals: list[float] | None = None, rng: random.Random | None = None,
                 gap: float = 2.0, high_share: tuple[float, float] = (0.5, 0.5)):
        self.model, self.cv, self.residuals = model, cv, residuals
        self.gap, self.high_share = gap, high_share
        self.rng = rng or random.Random()
        self.sigma = sigma_of_cv(cv)

    def pair(self) -> tuple[float, float]:
        """Multiplicative noise of the two runs of one pair."""
        r, s = self.rng, self.sigma
        if self.model == 'lognormal':
            return (math.exp(r.gauss(-s * s / 2, s)), math.exp(r.gauss(-s * s / 2, s)))
        if self.model == 'shared':
            common = r.gauss(0, s / math.sqrt(2))
            own = s / math.sqrt(2)
            return (math.exp(common + r.gauss(0, own)), math.exp(common + r.gauss(0, own)))
        if self.model == 'heavy':
            def one() -> float:
                x = math.exp(r.gauss(-s * s / 2, s))
                return x * 0.7 if r.random() < 0.05 else x
            return one(), one()
        if self.model == 'empirical':
            return (math.exp(r.choice(self.residuals)), math.exp(r.choice(self.residuals)))
        if self.model == 'bimodal':
            def run(share: float) -> float:
                return math.exp(r.gauss(-s * s / 2, s)) * (self.gap if r.random() < share
                                                           else 1.0)
            return run(self.high_share[0]), run(self.high_share[1])
        if self.model == 'pairs':
            return 1.0, math.exp(r.choice(self.residuals))
        raise ValueError(self.model)


def metric_params(i: int) -> dict:
    return {'api': 'HDF5', 'block_size': f'{1 + i % 7}m', 'transfer_size': f'{1 + i % 5}m',
            'segments': 1 + i // 35, 'collective': bool(i % 2), 'num_ranks': 2}


def night_records(night: str, n_metrics: int, n_pairs: int, noise: Noise,
                  slowdown: dict[int, float] | None = None, *, baseline: str = 'hdf5-1.14.6',
                  candidate: str = 'hdf5-develop', base_commit: str = 'b0',
                  cand_commit: str = 'c0', canary: bool = True, fio: bool = True,
                  system: str = 'local:default', canary_level: float = 1.0,
                  ops: tuple[str, ...] = ('write',)) -> list[Record]:
    """One night: ``n_metrics`` gated IOR HDF5 metrics (``bw_max``, one operation
    each unless ``ops`` has two), paired A/B runs; plus MPI-IO canaries (HDF5 at
    ~90 % of MPI-IO) and a fio ceiling. ``slowdown[i]`` = true candidate ratio."""
    slowdown = slowdown or {}
    rng = noise.rng
    recs: list[Record] = []
    ts = f'{night}T03:00:00+00:00'

    def rec(tool, op, metric, value, params, build, commit, run, pair, hib=True):
        return Record(tool=tool, operation=op, metric=metric, value=value, unit='MiB/s',
                      higher_is_better=hib, params=params,
                      provenance={'hdf5_commit': commit}, hdf5_build=build,
                      config_hash=config_hash({'tool': tool, 'params': params,
                                               'system': system}),
                      run_id=run, timestamp=ts, test=f'IorCheck %api={params.get("api")}',
                      system=system, pair_id=pair)

    for i in range(n_metrics):
        params = metric_params(i)
        level = 500.0 * (1 + (i % 13) / 10)
        op = ops[i % len(ops)]
        for p in range(n_pairs):
            na, nb = noise.pair()
            pid = f'{night}-p{p}'
            recs.append(rec('ior', op, 'bw_max', level * na, params, baseline, base_commit,
                            f'{night}-{i}-{p}-A', pid))
            recs.append(rec('ior', op, 'bw_max', level * nb * slowdown.get(i, 1.0), params,
                            candidate, cand_commit, f'{night}-{i}-{p}-B', pid))
    if canary:
        for i in range(min(n_metrics, 4)):
            params = dict(metric_params(i), api='MPIIO')
            level = 500.0 * (1 + (i % 13) / 10) / 0.9 * canary_level
            op = ops[i % len(ops)]
            for p in range(min(n_pairs, 6)):
                na, nb = noise.pair()
                pid = f'{night}-c{p}'
                recs.append(rec('ior', op, 'bw_max', level * na, params, baseline,
                                base_commit, f'{night}-m{i}-{p}-A', pid))
                recs.append(rec('ior', op, 'bw_max', level * nb, params, candidate,
                                cand_commit, f'{night}-m{i}-{p}-B', pid))
    if fio:
        for op in ops:
            params = {'rw': op, 'direct': 1, 'size': '1g'}
            for p in range(3):
                na, nb = noise.pair()
                recs.append(rec('fio', op, 'bw', 1500.0 * na, params, baseline, base_commit,
                                f'{night}-fio-{op}-{p}-A', f'{night}-f{p}'))
                recs.append(rec('fio', op, 'bw', 1500.0 * nb, params, candidate, cand_commit,
                                f'{night}-fio-{op}-{p}-B', f'{night}-f{p}'))
    rng.shuffle(recs)
    return recs
