"""Issue 13, item 7: the h5bench rows users set that no row covered (mixed collective
data/metadata, independent reads, h5bench_write_var_normal_dist, ASYNC with IO_MEM_LIMIT
and DELAYED_CLOSE_TIMESTEPS), and the normal-distribution writer's real output."""

import re
from pathlib import Path

import pytest

from h5regress.parsers import RunFailed, h5bench
from reframe_run import run_reframe
from test_checks_flush_and_sizes import job_scripts, stub_path

NORMAL_DIST = Path(__file__).resolve().parent / 'fixtures' / 'h5bench' / \
    'direct-write-var-normal-dist'


def normal_dist_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in NORMAL_DIST.iterdir() if h5bench.wanted(p.name)}


def test_normal_dist_size_is_what_all_ranks_wrote():
    """h5bench prints rank 0's bytes x ranks (136.135 MB); the ranks wrote 1115220 and
    1139538 particles, 32 B each, 2 time steps: 144304512 B (the file: 144312760 B)."""
    run, = h5bench.parse(normal_dist_files())
    size = run.measurement('write', 'size').value
    assert abs(size - 144304512) / 144304512 < 1e-4
    factor = (1115220 + 1139538) / (2 * 1115220)
    assert run.measurement('write', 'raw_rate').value == pytest.approx(127.237 * factor)
    assert run.measurement('write', 'observed_rate').value == pytest.approx(98.498 * factor)
    assert run.provenance['particles_per_rank'] == [1115220, 1139538]
    assert run.params['stdev_dim_1'] == 100000


def test_normal_dist_without_every_ranks_count_fails():
    files = normal_dist_files()
    files['stdout.txt'] = re.sub(r'.*Number of particles in rank 1 = .*\n', '',
                                 files['stdout.txt'])
    with pytest.raises(RunFailed, match='cannot be told'):
        h5bench.parse(files)


def test_new_rows_and_their_settings(tmp_path):
    binaries = ('h5bench_write', 'h5bench_read', 'h5bench_write_var_normal_dist')
    out = run_reframe(['-c', 'reframe/checks/h5bench.py', '--dry-run', '-n',
                       r'h5bench_(write|read)_check.*(collective-data|collective-metadata|'
                       r'normal-dist|independent)$'],
                      tmp_path, env=stub_path(tmp_path, *binaries))
    stages = {p.parent.name: p.parent for p in (tmp_path / 'stage').rglob('rfm_job.sh')}
    cfgs = {name: (d / ('read.cfg' if 'read' in name else 'write.cfg')).read_text()
            for name, d in stages.items()}
    assert len(cfgs) == 6, out.stdout + out.stderr
    found = {tuple(sorted(re.findall(r'^(COLLECTIVE_\w+=\w+|STDEV_DIM_1=\d+)$', c, re.M)))
             for c in cfgs.values()}
    assert ('COLLECTIVE_DATA=YES', 'COLLECTIVE_METADATA=NO') in found
    assert ('COLLECTIVE_DATA=NO', 'COLLECTIVE_METADATA=YES') in found
    # the independent reads read (and write) independently
    reads = [c for name, c in cfgs.items() if name.startswith('h5bench_read')]
    assert len(reads) == 2 and all('COLLECTIVE_DATA=NO' in c for c in reads)
    normal = [s for s in job_scripts(tmp_path, 'h5bench_write') if
              '/h5bench_write_var_normal_dist ' in s]
    assert len(normal) == 1
    assert any(re.search(r'^STDEV_DIM_1=\d+$', c, re.M) for c in cfgs.values())


def test_async_rows_name_their_settings(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/h5bench.py', '-l', '-n',
                       'h5bench_write_check.*async'], tmp_path,
                      env=stub_path(tmp_path, 'h5bench_write'))
    assert 'async-mem-limit' in out.stdout and 'async-delayed-close' in out.stdout
