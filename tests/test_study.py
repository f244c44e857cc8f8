"""Issue 17: the seed studies (``h5regress study``): their statistics, their tables, and
(slow) each run for real on ``local``."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys

import pytest

from h5regress import checkbase, study
from h5regress.record import Record
from reframe_run import REPO, SETTINGS, path_with_tools


def record(tool, operation, metric, value, pair, **params) -> Record:
    return Record(tool=tool, operation=operation, metric=metric, value=value, unit='MiB/s',
                  higher_is_better=True, params=params, provenance={}, hdf5_build='b',
                  config_hash='h',
                  run_id=f'{pair}-{tool}-{params}', timestamp='2026-11-24T00:00:00Z',
                  pair_id=pair)


def noisy_pairs(ratio: float, n: int, cv: float = 0.04, seed: int = 1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        shared = rng.gauss(0, cv)          # pairs share the machine's noise
        mpiio = 1000 * math.exp(shared + rng.gauss(0, cv / 2))
        out.append((mpiio * ratio * math.exp(rng.gauss(0, cv / 2)), mpiio))
    return out


def test_hdf5_cost_within_beyond_and_undecided():
    within = study.hdf5_cost(noisy_pairs(0.95, 30))
    assert 0.92 < within['ratio'] < 0.98 and within['ratio_lo'] >= 0.85
    assert within['verdict'].startswith('within the 15% allowance')
    beyond = study.hdf5_cost(noisy_pairs(0.70, 30))
    assert beyond['ratio_hi'] < 0.85 and beyond['verdict'].startswith('beyond')
    assert beyond['welch_p'] < 0.001
    edge = study.hdf5_cost(noisy_pairs(0.85, 6, cv=0.08))
    assert edge['verdict'].startswith('undecided'), edge
    assert study.hdf5_cost([(900.0, 1000.0)])['verdict'].startswith('too few')


def test_hdf5_vs_mpiio_pairs_by_repetition_and_phase():
    records = []
    for i, (h, m) in enumerate(noisy_pairs(0.9, 8)):
        hdf5, mpiio = (study.pair_id('hdf5-vs-mpiio', i, v) for v in ('HDF5', 'MPI-IO'))
        records += [record('ior', 'write', 'bw_mean', h, hdf5, api='HDF5'),
                    record('ior', 'write', 'bw_mean', m, mpiio, api='MPIIO'),
                    record('ior', 'read', 'bw_mean', 2 * m, mpiio, api='MPIIO')]
    class Args:
        pattern = 'collective'
    a = study.analyse_hdf5_vs_mpiio(records, Args)
    write, read = a['rows']
    assert write['pairs'] == 8 and 0.85 < write['ratio'] < 0.95
    assert read['pairs'] == 0 and read['verdict'].startswith('too few')
    md = '\n'.join(study.md_hdf5_vs_mpiio(a))
    assert 'HDF5 costs' in md and '| write | 8 |' in md


def test_scaling_table_columns_and_fractions():
    def rec(column, value, ranks, tool='ior', operation='write', metric='bw_mean'):
        return record(tool, operation, metric, value, study.pair_id('scaling', 1, column),
                      num_nodes=1, num_ranks=ranks)
    records = []
    for ranks, scale in ((1, 1.0), (2, 1.8)):
        records += [rec('HDF5 collective', 400 * scale, ranks),
                    rec('HDF5 big chunk', 500 * scale, ranks),
                    rec('HDF5 independent', 300 * scale, ranks),
                    rec('MPI-IO collective', 440 * scale, ranks),
                    rec('POSIX', 800 * scale, ranks),
                    rec('POSIX', 9999, ranks, operation='read'),
                    rec('HDF5 subfiling (h5bench)', 7777, ranks, tool='h5bench',
                        metric='raw_rate')]
    a = study.analyse_scaling(records, None)
    assert [(r['num_ranks'], r['tasks_per_node']) for r in a['rows']] == [(1, 1), (2, 2)]
    cols = a['rows'][1]['columns']
    assert cols['HDF5 collective']['value'] == pytest.approx(720)
    assert cols['HDF5 big chunk']['value'] == pytest.approx(900)
    assert cols['POSIX']['value'] == pytest.approx(1440)      # reads are not in the table
    assert a['rows'][0]['hdf5_over_POSIX'] == pytest.approx(0.5)
    assert a['rows'][0]['hdf5_over_MPI-IO collective'] == pytest.approx(400 / 440)
    # h5bench's raw_rate (no flush) is not the figure of its column
    assert 'HDF5 subfiling (h5bench)' in a['not_measured']
    md = '\n'.join(study.md_scaling(a))
    assert 'HDF5 big chunk (MiB/s)' in md and 'not measured' in md


def test_one_transfer_folds_the_segments_into_one_write(tmp_path):
    """ior_check.one_transfer (the big chunk): one segment, block = transfer = the
    row's block x segments."""
    from reframe_run import run_reframe
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-n', r'HDF5-collective-ssf',
                       '--system', 'local:default', '--dry-run', '-S', 'segments=4',
                       '-S', 'one_transfer=true'], tmp_path)
    assert out.returncode == 0, out.stdout[-3000:]
    scripts = [p.read_text() for p in (tmp_path / 'stage').rglob('rfm_job.sh')]
    writes = [line for text in scripts for line in text.splitlines() if ' -w ' in line]
    assert writes, scripts
    for line in writes:
        words = line.split()
        block, transfer = words[words.index('-b') + 1], words[words.index('-t') + 1]
        assert block == transfer and words[words.index('-s') + 1] == '1', line
        assert int(block) == 4 * 16 * 2 ** 20, line          # local: 16 MiB blocks


def test_pitfall_flags_from_the_recorded_parameters():
    def flags(**p):
        return study.pitfall_flags(record('fio', 'write', 'bw', 1.0, 'r', **p))
    assert flags(direct=False, end_fsync=False) == 'default'
    assert flags(direct=True, end_fsync=False) == 'O_DIRECT'
    assert flags(direct=False, sync=True, end_fsync=False) == 'O_SYNC'
    assert flags(direct=True, sync=True) == 'O_DIRECT|O_SYNC'
    assert flags(direct=False, end_fsync=True) == 'buffered + fsync'


def test_geometric_interval():
    c = study.geo_interval([100.0, 110.0, 90.0, 105.0])
    assert c['n'] == 4 and c['lo'] < c['value'] < c['hi']
    one = study.geo_interval([5.0])
    assert one['n'] == 1 and one['value'] == pytest.approx(5.0) and one['lo'] is None


def test_a_study_sweeps_its_own_extras(monkeypatch):
    extras = {'tasks_per_node': 2, 'scaling_tasks_per_node': [1, 2]}
    monkeypatch.delenv(checkbase.SWEEP_ENV, raising=False)
    assert checkbase.extras_values(extras, 'tasks_per_node', [2]) == [2]
    monkeypatch.setenv(checkbase.SWEEP_ENV, 'scaling')
    assert checkbase.extras_values(extras, 'tasks_per_node', [2]) == [1, 2]
    assert checkbase.extras_values(extras, 'num_nodes', [1]) == [1]
    assert study.SWEEP_ENV == checkbase.SWEEP_ENV


def test_a_mistyped_build_is_an_error_naming_the_builds(capsys):
    assert study.main(['hdf5-vs-mpiio', '--build', 'hdf5-nosuch', '--runs', '1']) == 4
    assert 'hdf5-nosuch' in capsys.readouterr().err


def run_study(tmp_path, *args, path=None):
    env = {**os.environ, 'RFM_CONFIG_FILES': str(SETTINGS),
           'H5REGRESS_MANIFEST': 'none'}
    if path:
        env['PATH'] = path
    proc = subprocess.run([sys.executable, '-m', 'h5regress.cli', 'study', *args,
                           '--system', 'local:default', '--out', str(tmp_path / 'out'),
                           '--quiet'],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / 'out' / 'study.json').read_text())
    html = (tmp_path / 'out' / 'study.html').read_text()
    assert 'plotly' in html.lower()
    return result, (tmp_path / 'out' / 'study.md').read_text()


@pytest.mark.slow
def test_pitfalls_for_real(tmp_path):
    result, md = run_study(tmp_path, 'pitfalls', '--runs', '1', '-S', 'fio_check.size=16M')
    rows = result['analysis']['rows']
    cells = {(r['operation'], r['flags'], r['file_state']) for r in rows}
    for flags in ('default', 'O_DIRECT', 'O_SYNC', 'O_DIRECT|O_SYNC'):
        for state in study.FILE_STATES:
            assert ('write', flags, state) in cells, (flags, state, md)
    assert '| O_DIRECT\\|O_SYNC |' in md           # a | in a Markdown cell is escaped


@pytest.mark.slow
def test_hdf5_vs_mpiio_for_real(tmp_path):
    path = path_with_tools('ior')
    result, md = run_study(tmp_path, 'hdf5-vs-mpiio', '--runs', '3', path=path)
    write = result['analysis']['rows'][0]
    assert write['operation'] == 'write' and write['pairs'] == 3, md
    assert 0.2 < write['ratio'] < 5, write
    assert 'against the 15 % allowance' in md


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.beside
def test_scaling_through_the_test_slurm_on_1_and_2_nodes(slurm_cluster, tmp_path):
    path = path_with_tools('ior')
    env = {**os.environ, **slurm_cluster.env, 'RFM_CONFIG_FILES': str(SETTINGS),
           'H5REGRESS_MANIFEST': 'none', 'PATH': path}
    proc = subprocess.run([sys.executable, '-m', 'h5regress.cli', 'study', 'scaling',
                           '--runs', '1', '--system', 'ci-slurm:squeue-srun',
                           '--out', str(tmp_path / 'out'), '--quiet'],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / 'out' / 'study.json').read_text())
    rows = result['analysis']['rows']
    assert [(r['num_nodes'], r['num_ranks']) for r in rows] == [(1, 2), (2, 4)], rows
    for row in rows:
        for column in ('HDF5 collective', 'HDF5 big chunk', 'HDF5 independent',
                       'MPI-IO collective', 'POSIX'):
            assert row['columns'][column]['value'] > 0, (row, column)
        assert row['hdf5_over_POSIX'] > 0


@pytest.mark.slow
def test_scaling_for_real_on_local_sweeps_1_and_2_ranks(tmp_path):
    result, md = run_study(tmp_path, 'scaling', '--runs', '1', path=path_with_tools('ior'))
    rows = result['analysis']['rows']
    assert [(r['num_nodes'], r['num_ranks']) for r in rows] == [(1, 1), (1, 2)], md
    assert all(r['columns']['HDF5 collective']['value'] > 0 for r in rows), md
    assert 'HDF5 coll. / POSIX' in md
