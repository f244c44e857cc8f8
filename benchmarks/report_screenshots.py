"""Screenshots of the night's report in headless Chromium (issue 16): what a reader sees
in the first screen of an A/A night, a FAIL night and a history with creep.

    nice -n 19 .venv/bin/python benchmarks/report_screenshots.py OUTDIR
    nice -n 19 .venv/bin/python benchmarks/report_screenshots.py OUTDIR --night NIGHTDIR ...

Writes OUTDIR/<case>/report.html (and report.md, junit.xml, summary.md) and
OUTDIR/<case>.png (the first screen, 1400x900) and OUTDIR/<case>-full.png (the page down to the history plots,
1400x2600) for three simulated nights, each with a 60-night history written by the
gate itself (``gate.run_gate`` and ``history.write_night``, as ``ci/nightly`` does):

* ``aa``: both builds one commit (A/A), true ratio 1;
* ``fail``: tonight's candidate writes FLASH-IO's collective checkpoint 20 % slower;
* ``creep``: each candidate commit of the last ``--creep-nights`` (7) writes the
  collective checkpoint 1 % slower than the one before (tonight: 0.99^7 = 0.932).

The simulated runs: two FLASH-IO checkpoint rows (collective, independent) and IOR's
HDF5 write are gated, IOR's MPI-IO write is their canary, fio's write a control; 20
ABBA pairs a night; each run's log value has sd 0.08 around its level (per-pair
log-ratio sd 0.11, a night's log ratio 0.025) and the machine shifts both builds of a
night together with sd 0.02; provenance as the checks record it (node list, file system,
data size, command, HDF5 version). These are a quiet machine's figures: on this 2-core
machine the stand-in nights measured a per-pair log-ratio sd of 0.16-0.27 (see
benchmarks/creep.py).

Then ``h5regress publish`` of the FAIL case's history and night as OUTDIR/site, shot
as OUTDIR/dashboard.png (index), regressions.png and dashboard-metric.png (the
collective checkpoint on its commit axis).

``--night DIR`` (repeatable) also shoots a real night's directory as ``ci/nightly``
left it: its published ``DIR/report/report.html``, else a report made again from
``DIR/gate.json``, ``DIR/perflogs/<attempt>`` and ``DIR/manifest.json`` with
``h5regress report`` as ``OUTDIR/night-<name>``; the shots are ``OUTDIR/night-<name>.png``.

Chromium: ``chromium --headless --no-sandbox --screenshot=PNG --window-size=W,H
--virtual-time-budget=MS file://...`` (the virtual time lets plotly draw before the
shot; ``--hide-scrollbars`` keeps the width).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

from h5regress import gate, history, report
from h5regress.record import Record

BASE, CAND = 'hdf5-1.14.6', 'hdf5-develop'
NIGHTS = 60
RUN_SD, MACHINE_SD, PAIRS = 0.08, 0.02, 20

#: (test, tool, operation, metric, params, level MiB/s, data bytes per run, command)
ROWS = [
    ('flashio_check %num_nodes=2 %tasks_per_node=16 %benchmark=hdf5-collective',
     'flash-io', 'checkpoint', 'bw', {'api': 'hdf5', 'case': 'hdf5-collective',
                                      'transfer': 'collective', 'num_nodes': 2, 'num_ranks': 32},
     610.0, 7.6 * 2 ** 30, 'mpirun -n 32 flash_io_h5regress -i 3 --collective --blocks 2000'),
    ('flashio_check %num_nodes=2 %tasks_per_node=16 %benchmark=hdf5-independent',
     'flash-io', 'checkpoint', 'bw', {'api': 'hdf5', 'case': 'hdf5-independent',
                                      'transfer': 'independent', 'num_nodes': 2, 'num_ranks': 32},
     540.0, 7.6 * 2 ** 30, 'mpirun -n 32 flash_io_h5regress -i 3 --independent --blocks 2000'),
    ('ior_check %num_nodes=2 %api=HDF5', 'ior', 'write', 'bw_max',
     {'api': 'hdf5', 'case': 'hdf5-ssf', 'num_nodes': 2, 'num_ranks': 32},
     1450.0, 8 * 2 ** 30, 'mpirun -n 32 ior -a HDF5 -w -r -C -e -F 0 -b 256m -t 4m -o /scratch/ior'),
    ('ior_check %num_nodes=2 %api=MPIIO', 'ior', 'write', 'bw_max',
     {'api': 'mpiio', 'case': 'mpiio-ssf', 'num_nodes': 2, 'num_ranks': 32},
     1600.0, 8 * 2 ** 30, 'mpirun -n 32 ior -a MPIIO -w -r -C -e -F 0 -b 256m -t 4m -o /scratch/ior'),
    ('fio_check %rw=write', 'fio', 'write', 'bw', {'rw': 'write', 'num_nodes': 1, 'num_ranks': 1},
     2100.0, 4 * 2 ** 30, 'fio --name=ceiling --rw=write --bs=4m --size=4g --end_fsync=1'),
]


def _commit(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()


def night_records(k: int, slow: dict[int, float], a_a: bool,
                  rng: random.Random) -> tuple[list[Record], str, str]:
    """One night's records: PAIRS ABBA pairs of every row; ``slow``: row -> candidate
    factor."""
    date = f'2026-09-{1 + k:02d}' if k < 30 else f'2026-10-{k - 29:02d}'
    cand_commit = _commit('base') if a_a else _commit(f'develop-{k}')
    machine = math.exp(rng.gauss(0.0, MACHINE_SD))
    recs = []
    for row, (test, tool, op, metric, params, level, data, cmd) in enumerate(ROWS):
        hdf5 = params.get('api') == 'hdf5'
        for p in range(PAIRS):
            order = (BASE, CAND) if p % 2 == 0 else (CAND, BASE)
            for build in order:
                factor = slow.get(row, 1.0) if build == CAND else 1.0
                value = level * machine * factor * math.exp(rng.gauss(0.0, RUN_SD))
                recs.append(Record(
                    tool=tool, operation=op, metric=metric, value=value, unit='MiB/s',
                    higher_is_better=True, params=dict(params), hdf5_build=build,
                    config_hash=hashlib.sha1(test.encode()).hexdigest()[:16],
                    run_id=f'{k}-{p}-{build}', timestamp=f'{date}T02:{p:02d}:00+00:00',
                    test=test, system='cluster:compute', pair_id=f'{date}-p{p}',
                    provenance={
                        'hdf5_commit': (_commit('base') if build == BASE else cand_commit)
                        if hdf5 else None,
                        'hdf5_version': ('1.14.6' if build == BASE else '1.17.0')
                        if hdf5 else None,
                        'nodelist': 'cn[017-018]', 'fs_type': 'lustre',
                        'command_line': cmd, 'data_bytes': data}))
    return recs, date, cand_commit


def simulate(out: Path, case: str, seed: int, creep_nights: int = 9) -> Path:
    """A history of NIGHTS nights and tonight, written by the gate; returns the report."""
    rng = random.Random(seed)
    cfg = gate.load_config()
    hdir = out / case / 'history'
    shutil.rmtree(out / case, ignore_errors=True)
    for k in range(NIGHTS + 1):
        tonight = k == NIGHTS
        slow = {}
        if case == 'creep' and k > NIGHTS - creep_nights:
            slow = {0: 0.99 ** (k - NIGHTS + creep_nights)}
        elif case == 'fail' and tonight:
            slow = {0: 0.80}
        a_a = case == 'aa' and tonight
        recs, date, commit = night_records(k, slow, a_a, rng)
        res = gate.run_gate(recs, BASE, CAND, cfg, history=history.load(hdir), night=date,
                            baseline_commit=_commit('base'), candidate_commit=commit)
        if not tonight:
            history.write_night(hdir, *gate.history_lines(res))
            continue
        (out / case / 'gate.json').write_text(gate.dumps(res))
        history.write_night(out / case / 'site-history', *gate.history_lines(res))
        res = json.loads(gate.dumps(res))
        ctx = report.collect_context(res, recs)
        files = report.write_all(res, history.load(hdir), out / case / 'report', ctx)
        print(f'{case}: {res["overall"]}; change points: '
              f'{[(c["metric"][:40], c["from_night"], c["to_night"]) for c in res["change_points"]]}')
        return files['html']
    raise AssertionError('unreachable')


def real_night(out: Path, night_dir: Path) -> Path:
    """The report ci/nightly published (with the night's history and --repo-url, so the
    FAILs' history plots and commit links are there), else one made again here."""
    published = night_dir / 'report' / 'report.html'
    if published.is_file():
        return published
    dest = out / f'night-{night_dir.name}'
    code = report.main_report([str(night_dir / 'gate.json'), '--out', str(dest)])
    if code:
        raise SystemExit(f'h5regress report failed on {night_dir} (exit {code})')
    return dest / 'report.html'


def screenshot(html: Path, png: Path, size: str) -> None:
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    if not browser:
        raise SystemExit('chromium not found (apt-get install -y chromium)')
    cmd = [browser, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--no-first-run', '--virtual-time-budget=5000', f'--window-size={size}',
           f'--screenshot={png}', html.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if not png.is_file():
        raise SystemExit(f'no screenshot of {html}: {proc.stderr[-2000:]}')
    print(f'wrote {png}')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir', type=Path)
    ap.add_argument('--night', type=Path, action='append', default=[],
                    help="a real night's directory (gate.json, perflogs/, manifest.json)")
    ap.add_argument('--seed', type=int, default=16, help='of the A/A and FAIL histories (16)')
    ap.add_argument('--creep-seed', type=int, default=31,
                    help='of the creep history (31: tonight INCONCLUSIVE, a change point '
                         'found a night before the first slower one; at 7 nights Otava finds '
                         'one in about half the histories, see benchmarks/creep.py)')
    ap.add_argument('--creep-nights', type=int, default=7,
                    help='nights of 1 %% creep up to tonight (7)')
    ap.add_argument('--nights-only', action='store_true',
                    help='only the --night directories: no simulated night, no dashboard')
    args = ap.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    pages = {} if args.nights_only else {
        case: simulate(args.outdir, case, seed, args.creep_nights)
        for case, seed in (('aa', args.seed), ('fail', args.seed + 1), ('creep', args.creep_seed))}
    for d in args.night:
        pages[f'night-{d.name}'] = real_night(args.outdir, d)
    for name, page in pages.items():
        screenshot(page, args.outdir / f'{name}.png', '1400,900')
        screenshot(page, args.outdir / f'{name}-full.png', '1400,2600')
    if args.nights_only:
        return 0
    site = args.outdir / 'site'
    # the FAIL case's history with tonight in it (a copy: the reports exclude tonight)
    hist = args.outdir / 'fail' / 'site-history'
    shutil.copytree(args.outdir / 'fail' / 'history', hist, dirs_exist_ok=True)
    report.publish(str(hist), site, [args.outdir / 'fail'])
    screenshot(site / 'index.html', args.outdir / 'dashboard.png', '1400,900')
    screenshot(site / 'regressions.html', args.outdir / 'regressions.png', '1400,900')
    collective = next(p for p in sorted((site / 'metric').glob('*.html'))
                      if 'flash-io hdf5-collective checkpoint' in p.read_text())
    screenshot(collective, args.outdir / 'dashboard-metric.png', '1400,900')
    return 0


if __name__ == '__main__':
    sys.exit(main())
