"""Issue 13, item 7: the h5bench rows users set that no row covered (mixed collective
data/metadata, independent reads, h5bench_write_var_normal_dist, ASYNC with IO_MEM_LIMIT
and DELAYED_CLOSE_TIMESTEPS), and the normal-distribution writer's real output."""

import json
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


# ------------------------------------------------------------------ issue 30: ASYNC for real

HDF5_COMMIT = '577c192518598c7e2945683655feffcdbdf5a91b'


def _executable(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\nexit 0\n')
    path.chmod(0o755)
    return str(path)


def async_manifest(root: Path) -> Path:
    """A manifest whose build hdf5-1.14.1 has an ``async`` entry (stub binaries)."""
    sync, threadsafe, vol = root / 'hdf5', root / 'hdf5-ts', root / 'vol-async'
    tools = {t: _executable(root / 'h5bench' / 'bin' / t) for t in ('h5bench_write',
                                                                    'h5bench_read')}
    async_tools = {t: _executable(root / 'h5bench-async' / 'bin' / t)
                   for t in ('h5bench_write', 'h5bench_read')}
    (vol / 'lib').mkdir(parents=True)
    (vol / 'lib' / 'libh5async.so').write_text('')
    hdf5 = {'version': '1.14.1', 'label': '1.14.1', 'commit': HDF5_COMMIT,
            'variants': '+hl+mpi~threadsafe', 'hash': 'a' * 32, 'prefix': str(sync)}
    data = {'schema': 1, 'generated': '2026-11-27T00:00:00Z', 'spack_version': 'test',
            'environment': str(root), 'lock_sha256': 'b' * 64,
            'builds': {'hdf5-1.14.1': {
                'hdf5': hdf5, 'tools': tools,
                'async': {'hdf5': {**hdf5, 'variants': '+hl+mpi+threadsafe', 'hash': 'c' * 32,
                                   'prefix': str(threadsafe)},
                          'connector': {'name': 'async', 'version': '1.7', 'commit': 'd' * 40,
                                        'hash': 'e' * 32, 'prefix': str(vol),
                                        'plugin_path': str(vol / 'lib'),
                                        'library': str(vol / 'lib' / 'libh5async.so')},
                          'tools': async_tools}}}}
    path = root / 'manifest.json'
    path.write_text(json.dumps(data))
    return path


def test_async_run_takes_the_connector_and_threadsafe_build_of_the_manifest(tmp_path,
                                                                           monkeypatch):
    from h5regress import h5benchbase, tools
    monkeypatch.setenv('H5REGRESS_MANIFEST', str(async_manifest(tmp_path)))
    tool = tools.find('h5bench_write', 'hdf5-1.14.1')
    run = h5benchbase.async_run(tool)
    assert run.tool.path == str(tmp_path / 'h5bench-async' / 'bin' / 'h5bench_write')
    assert (run.tool.build, run.tool.hdf5_commit) == ('hdf5-1.14.1', HDF5_COMMIT)
    assert run.tool.spec_hash == 'c' * 32 and run.tool.hdf5_prefix == str(tmp_path / 'hdf5-ts')
    assert run.env_vars == {'HDF5_PLUGIN_PATH': str(tmp_path / 'vol-async' / 'lib'),
                            'HDF5_VOL_CONNECTOR': 'async under_vol=0;under_info={}'}
    assert run.provenance['async_vol_connector_version'] == '1.7'
    assert run.provenance['async_vol_connector_commit'] == 'd' * 40
    with pytest.raises(tools.ToolNotFound, match='h5bench_exerciser'):
        h5benchbase.async_run(tools.Tool('h5bench_exerciser', tool.path, 'hdf5-1.14.1',
                                    'spack-manifest'))
    # from PATH there is no manifest entry: the partition's plugin path decides
    assert h5benchbase.async_run(tools.Tool('h5bench_write', '/bin/true', 'path', 'PATH')) is None


def test_async_rows_run_the_connector_build_with_the_documented_settings(tmp_path):
    """The job scripts of the three ASYNC rows: the build's h5bench built with the
    connector, HDF5_VOL_CONNECTOR quoted for the shell (its ';' would end the export),
    HDF5_PLUGIN_PATH at the connector's plugin directory."""
    manifest = async_manifest(tmp_path / 'env')
    out = run_reframe(['-c', 'reframe/checks/h5bench.py', '--dry-run', '-n',
                       'h5bench_write_check.*async'], tmp_path,
                      env={'H5REGRESS_MANIFEST': str(manifest)})
    scripts = job_scripts(tmp_path, 'h5bench_write_check')
    assert len(scripts) == 3, out.stdout + out.stderr
    for script in scripts:
        assert "export HDF5_VOL_CONNECTOR='async under_vol=0;under_info={}'" in script
        assert f'export HDF5_PLUGIN_PATH={tmp_path}/env/vol-async/lib' in script
        assert '/h5bench-async/bin/h5bench_write ' in script, script


def async_and_sync_time_limits(tmp_path, *options):
    tmp_path.mkdir()
    out = run_reframe(['-c', 'reframe/checks/h5bench.py', '--describe', *options, '-n',
                       'h5bench_write_check.*(async|1D-CONTIG-CONTIG-collective$)'], tmp_path,
                      env=stub_path(tmp_path, 'h5bench_write'))
    limits = {t['display_name']: t['time_limit'] for t in json.loads(out.stdout)}
    return ({v for k, v in limits.items() if 'async' in k},
            {v for k, v in limits.items() if 'async' not in k})


def test_an_async_row_has_a_time_limit_of_its_own(tmp_path):
    """The patched connector 1.7 still deadlocked once (spack-env/README.md): the ASYNC
    rows run under 5 minutes by default, the synchronous ones under the partition's
    limit; a site may set its own."""
    assert async_and_sync_time_limits(tmp_path / 'default') == ({300.0}, {None})
    async_limits, sync_limits = async_and_sync_time_limits(
        tmp_path / 'set', '-S', 'h5bench_write_check.async_time_limit=2m')
    assert (async_limits, sync_limits) == ({120.0}, {None})


ASYNC_STDOUT = ("Using 'async' VOL connector\nMode: ASYNC\n")


@pytest.mark.parametrize('stdout, mode, problem', [
    (ASYNC_STDOUT, 'ASYNC', None),
    ('Mode: ASYNC\n', 'ASYNC', 'did not register the async VOL connector'),
    (ASYNC_STDOUT, 'SYNC', 'ran in SYNC mode'),
])
def test_an_async_row_proves_the_connector_ran(stdout, mode, problem):
    """h5bench's mode follows the text of HDF5_VOL_CONNECTOR only; the proof is its
    line saying HDF5 registered the connector in its process."""
    from h5regress.h5benchbase import async_run_problem
    why = async_run_problem(stdout, mode)
    assert (why is None) if problem is None else (problem in why), why
