"""The bisect's runs of a step (the nightly's ReFrame pairs, or simulated ones) and its
typed entry point, :func:`run_bisect` (``h5regress bisect`` and ``ci/nightly --bisect``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h5regress import buildid, catalog, coverage, coveragerange, gate, manifest, nightrun
from h5regress.bisectbuild import BASE_ID, BisectError, Builder, Built, SpackBuilder, \
    StandInBuilder, log
from h5regress.bisectsearch import Runs, bisect, looks
from h5regress.nightrun import NightRequest
from h5regress.record import Record, config_hash

#: the nightly's looks: pairs before the first look, added while INCONCLUSIVE, cap
DEFAULT_PAIRS, DEFAULT_MORE, DEFAULT_MAX = 10, 5, 20


#: a look of the nightly's gate at a step's runs: (baseline, candidate, the step's
#: request) -> the gate's exit code; it writes ``<out>/gate.json``
GateLook = Callable[[str, str, NightRequest], int]


def step_sides(cand_id: str, speedup: bool) -> tuple[str, str]:
    """A step's (baseline, candidate) build ids. A speed-up's search runs the older,
    slower end as the candidate, so the gate FAILs a step that has the speed-up (git
    bisect's "new")."""
    return (cand_id, BASE_ID) if speedup else (BASE_ID, cand_id)


class NightlyRuns(Runs):
    """The nightly's machinery: ReFrame runs of the request's checks per build, pair ids,
    ABBA order, the nightly's gate look on the step's own perflogs."""

    def __init__(self, template: NightRequest, gate_look: GateLook,
                 speedup: bool = False) -> None:
        self.template, self.gate_look, self.speedup = template, gate_look, speedup

    def start(self, good: Built, cand: Built, commit: str, step_dir: Path,
              margin: float | None = None) -> None:
        self.cand_id = f'hdf5-bisect-{commit[:12]}'
        self.sides = step_sides(self.cand_id, self.speedup)
        path = step_dir / 'manifest.json'
        manifest.write(path, {**cand.top, 'builds': {BASE_ID: relabel(good.entry, BASE_ID),
                                                     self.cand_id: relabel(cand.entry,
                                                                           self.cand_id)}})
        self.args = dataclasses.replace(
            self.template, out=step_dir, attempt='', pairs_run=0,
            margin=self.template.margin if margin is None else round(margin, 6),
            # loaded at the step's first look with the step's margin, never a template's
            gate_config=None)
        if self.args.select is None:   # --stand-in without --checks: the night's choice
            nightrun.standin_checks(self.args, cand.entry.get('tools', {}))
        nightrun.start_attempt(self.args)
        self.env = {**os.environ, 'H5REGRESS_MANIFEST': str(path),
                    'H5REGRESS_PERFLOG_DIR': str(nightrun.attempt_perflogs(self.args)),
                    # the nightly's chain of configs
                    'RFM_CONFIG_FILES': ':'.join(self.args.config_files)}

    def pairs(self, first: int, last: int) -> None:
        nightrun.run_pairs(first, last, *self.sides, self.args, self.env)

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        self.gate_look(*self.sides, self.args)
        path = self.args.out / 'gate.json'
        if not path.is_file():
            raise BisectError(f'the gate wrote no {path} (see its error above)')
        return json.loads(path.read_text())


def relabel(entry: dict[str, Any], build_id: str) -> dict[str, Any]:
    """A manifest build entry under another id (a manifest's ids are hdf5-<label>: two
    Spack builds of develop commits share the version label)."""
    return {**entry, 'hdf5': {**entry['hdf5'], 'label': buildid.label_of(build_id)}}


class SimulatedRuns(Runs):
    """No tool runs: each run's bandwidth is log-normal with coefficient of variation
    ``cv`` around 1 GiB/s, slowed by the stand-in commit's known fraction (the shim
    makes each write take 1 + f of its time: bandwidth / (1 + f)); the records are
    judged by the gate itself (:func:`h5regress.gate.run_gate`)."""

    PARAMS = {'api': 'HDF5', 'transfer_size': '1m', 'block_size': '16m', 'simulated': True}

    def __init__(self, cv: float, rng: random.Random, speedup: bool = False) -> None:
        self.sigma, self.rng = math.sqrt(math.log1p(cv * cv)), rng
        self.speedup = speedup

    def start(self, good: Built, cand: Built, commit: str, step_dir: Path,
              margin: float | None = None) -> None:
        # the candidate's bandwidth over the baseline's, the builds in step_sides' order
        base, other = (cand, good) if self.speedup else (good, cand)
        self.ratio = (1 + base.info['slowdown']) / (1 + other.info['slowdown'])
        # the step's margin, a float in the one typed configuration (no dict on the way)
        self.cfg = gate.load_config().with_overrides(margin=margin)
        self.cand_id, self.commit = f'hdf5-bisect-{commit[:12]}', commit
        self.sides = step_sides(self.cand_id, self.speedup)
        self.records: list[Record] = []

    def _record(self, build: str, value: float, pair: int) -> Record:
        chash = config_hash({'tool': 'ior', 'params': self.PARAMS, 'system': 'simulated'})
        return Record(tool='ior', operation='write', metric='bw_max', value=value,
                      unit='MiB/s', higher_is_better=True, params=self.PARAMS,
                      provenance={'hdf5_commit': self.commit if build != BASE_ID else 'good'},
                      hdf5_build=build, config_hash=chash, run_id=f'{build}-{pair}',
                      timestamp='2026-01-01T00:00:00+00:00', test='simulated IOR 1 MiB',
                      system='simulated', pair_id=f'p{pair}')

    def pairs(self, first: int, last: int) -> None:
        s = self.sigma
        for i in range(first, last + 1):
            a = 1024 * math.exp(self.rng.gauss(-s * s / 2, s))
            b = 1024 * self.ratio * math.exp(self.rng.gauss(-s * s / 2, s))
            self.records += [self._record(self.sides[0], a, i),
                             self._record(self.sides[1], b, i)]

    def gate(self, looks_: list[int]) -> dict[str, Any]:
        return gate.run_gate(self.records, *self.sides, self.cfg, looks=looks_,
                             night='bisect')


def tool_packages(tools: Sequence[str]) -> list[str]:
    """The Spack packages that install these tools (h5regress.catalog: mdtest -> ior)."""
    packages = set()
    for tool in tools:
        try:
            bench = catalog.get(tool)
        except KeyError as err:
            raise BisectError(f'--tool {tool!r}: {err.args[0]}') from None
        if not bench.package:
            raise BisectError(f'--tool {tool!r}: not built by the Spack environment')
        packages.add(bench.package)
    return sorted(packages)


@dataclass
class BisectRequest:
    """A bisect: ``h5regress bisect``'s options, typed (``ci/nightly --bisect`` makes one)."""
    good: str                       # full commits, resolved in ``repo``
    bad: str
    repo: Path                      # the local clone (or the stand-in repository)
    work: Path
    #: the repository as given (URL or path): kept in the state file
    repo_name: str = ''
    builder: str = 'spack'          # or 'stand-in'
    #: ReFrame name regex of the checks (None: the night's, or the stand-in night's)
    checks: str | None = None
    tools: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    bad_ratio: float | None = None
    #: search the commit that made the checks faster (a fix): ``good`` is then the
    #: older, slower end, ``bad`` the newer, faster one
    speedup: bool = False
    pairs: int = DEFAULT_PAIRS
    more_pairs: int = DEFAULT_MORE
    max_pairs: int = DEFAULT_MAX
    mirror: list[str] = field(default_factory=list)
    simulate_cv: float | None = None
    seed: int = 0
    lock: Path | None = None
    #: coverage maps (of --bad's commit, or of others, said): without --checks, the steps
    #: leave out the mapped rows that execute no HDF5 function the range changes (issue 28)
    coverage_maps: list[Path] = field(default_factory=list)
    #: ReFrame's options selecting the steps' checks (None: from ``checks``)
    select: tuple[str, ...] | None = None
    #: the coverage choice of the rows (:meth:`coveragerange.RowChoice.to_dict`)
    coverage: dict[str, Any] | None = None
    #: the steps' night (system, -S, configuration...; None: the command line's defaults)
    night: NightRequest | None = None

    def check(self) -> None:
        """Bad combinations, named (:class:`BisectError`)."""
        if self.simulate_cv is not None and self.builder != 'stand-in':
            raise BisectError('--simulate-cv needs --builder stand-in (known slowdowns)')
        if not 1 <= self.pairs <= self.max_pairs or self.more_pairs < 1:
            raise BisectError('need 1 <= --pairs <= --max-pairs and --more-pairs >= 1')
        if self.bad_ratio is not None and not 0 < self.bad_ratio < 1:
            raise BisectError(f'--bad-ratio {self.bad_ratio:g}: a performance ratio of a '
                              f'slower --bad, between 0 and 1 (0.8 = 20 % slower)')


def step_request(req: BisectRequest) -> NightRequest:
    """The night each step runs: the request's pairs and checks (a stand-in bisect
    without checks: the stand-in night's), quiet."""
    return dataclasses.replace(
        req.night or NightRequest(), pairs=req.pairs, more_pairs=req.more_pairs,
        max_pairs=req.max_pairs, quiet=True, checks=req.checks, select=req.select,
        stand_in=req.builder == 'stand-in' and not req.checks)


def coverage_rows(req: BisectRequest) -> BisectRequest:
    """The request with the steps' rows chosen by the coverage maps: the night's, but the
    mapped rows that execute no HDF5 function the range changes; all of them when the
    maps cannot say (:func:`coveragerange.choose_rows`). Said in the log and kept in the
    result."""
    try:
        choice = coveragerange.choose_rows(str(req.repo), req.good, req.bad, req.coverage_maps)
    except coverage.CoverageError as err:
        raise BisectError(f'--coverage-map: {err}') from None
    for line in choice.lines():
        log(f'--coverage-map: {line}')
    return dataclasses.replace(req, select=coveragerange.night_selection(choice),
                               coverage=choice.to_dict())


def run_bisect(req: BisectRequest, gate_look: GateLook,
               on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Builder and runs from the request; the search (:func:`bisectsearch.bisect`)."""
    req.check()
    if req.coverage_maps and not req.checks:
        req = coverage_rows(req)
    simulate = req.simulate_cv is not None
    if req.builder == 'stand-in':
        builder: Builder = StandInBuilder(req.repo, req.work, tools=not simulate)
    else:
        builder = SpackBuilder(req.work, req.mirror, packages=tool_packages(req.tools),
                               repo=req.repo)
    if simulate:
        runs: Runs = SimulatedRuns(req.simulate_cv, random.Random(req.seed), req.speedup)
    else:
        runs = NightlyRuns(step_request(req), gate_look, req.speedup)
    params = {'good': req.good, 'bad': req.bad, 'repo': req.repo_name or str(req.repo),
              'builder': builder.name + (f' (simulated, CV {req.simulate_cv:g})'
                                         if simulate else ''),
              'tools': sorted(req.tools), 'checks': req.checks,
              'select': list(req.select) if req.select else None, 'coverage': req.coverage,
              'metrics': sorted(req.metrics), 'bad_ratio': req.bad_ratio,
              'speedup': req.speedup,
              'looks': looks(req.pairs, req.more_pairs, req.max_pairs)}
    found = bisect(req.repo, req.good, req.bad, builder, runs, req.work, params,
                   on_step=on_step, lock=req.lock)
    return {**found, 'coverage': req.coverage} if req.coverage else found
