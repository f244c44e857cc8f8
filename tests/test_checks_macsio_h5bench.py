"""The MACSio, h5bench and mdtest ReFrame checks: listing, dry-run job scripts, real runs.

Listing and ``--dry-run`` need no benchmark: stub executables named like the tools
stand in for them (the resolver only needs a file on PATH). Real runs on ``local``
need the tools on PATH and are skipped with the reason otherwise.

Every ReFrame run here writes its stage, output, perflogs and results database
under pytest's temporary directory, never into the repository.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from reframe_run import (REPO, UNDER_LOAD, path_with_tools, reframe_bin, reframe_command,
                         reframe_env)

REFRAME = Path(reframe_bin())
CHECKS = REPO / 'reframe' / 'checks'
TOOLS = ('macsio', 'h5bench_write', 'h5bench_read', 'h5bench_exerciser',
         'h5bench_hdf5_iotest', 'h5bench_write_var_normal_dist', 'mdtest')
HOW = {
    'macsio': 'build it from LLNL/MACSio or install the Spack environment (spack-env/)',
    'h5bench': 'build it from hpc-io/h5bench or install the Spack environment (spack-env/)',
    'mdtest': 'build IOR (hpc/ior ships mdtest) or install the Spack environment (spack-env/)',
}

pytestmark = pytest.mark.skipif(not REFRAME.exists(),
                                reason=f'{REFRAME} missing: run the set-up command first')


def reframe(tmp: Path, *args: str, path: str | None = None, check=True,
            timeout=900) -> subprocess.CompletedProcess:
    extra = {'RFM_COLORIZE': 'n'}
    if path is not None:
        extra['PATH'] = path
    cmd = reframe_command(list(args), tmp)
    out = subprocess.run(cmd, cwd=REPO, env=reframe_env(tmp, extra), capture_output=True,
                         text=True, timeout=timeout)
    if check and out.returncode != 0:
        pytest.fail(f'{" ".join(cmd)} exited {out.returncode}:\n{out.stdout[-6000:]}\n'
                    f'{out.stderr[-3000:]}', pytrace=False)
    return out


@pytest.fixture
def stubs(tmp_path):
    """A PATH where every tool is a stub that does nothing (for listing and dry runs)."""
    bindir = tmp_path / 'stub-bin'
    bindir.mkdir()
    for name in TOOLS:
        stub = bindir / name
        stub.write_text('#!/bin/sh\nexit 0\n')
        stub.chmod(0o755)
    return f'{bindir}:{os.environ.get("PATH", "/usr/bin:/bin")}'


def job_scripts(tmp: Path, check: str) -> dict[str, str]:
    """Job scripts of one check's tests, by test hash."""
    stage = tmp / 'stage' / 'local' / 'default' / 'gnu-openmpi'
    return {p.parent.name.rsplit('_', 1)[1]: p.read_text()
            for p in stage.glob(f'{check}_*/rfm_job.sh')}


def listed(out: str) -> list[str]:
    return [line[2:] for line in out.splitlines() if line.startswith('- ')]


# ----------------------------------------------------------------------------- listing

def test_macsio_lists_its_table(tmp_path):
    out = reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '-n', '^macsio_check', '-l').stdout
    rows = [re.search(r'%benchmark=(\S+)', t).group(1) for t in listed(out)]
    assert rows == ['miftmpl-MIF', 'miftmpl-MIFFPP', 'hdf5-MIF', 'hdf5-MIFFPP',
                    'hdf5-SIF-collective', 'hdf5-SIF-independent',
                    'hdf5-SIF-collective-gzip', 'hdf5-MIF-gzip']
    # compressed independent SIF is left out: parallel HDF5 filters need collective writes
    assert 'hdf5-SIF-independent-gzip' not in rows
    assert all('%num_nodes=1 %tasks_per_node=2 %hdf5_build=path' in t for t in listed(out))


def test_h5bench_lists_the_supported_patterns(tmp_path):
    out = reframe(tmp_path, '-c', str(CHECKS / 'h5bench.py'), '-l').stdout
    tests = listed(out)

    def rows(check):
        return [re.search(r'%benchmark=(\S+)', t).group(1) for t in tests
                if t.startswith(check + ' ')]

    writes = rows('h5bench_write_check')
    for dims in (1, 2):
        for mem in ('CONTIG', 'INTERLEAVED'):
            for file in ('CONTIG', 'INTERLEAVED'):
                assert f'{dims}D-{mem}-{file}-collective' in writes
    for row in ('3D-CONTIG-CONTIG-collective', '1D-CONTIG-STRIDED-collective',
                '1D-CONTIG-CONTIG-independent', '2D-CONTIG-CONTIG-compress',
                '1D-CONTIG-CONTIG-subfiling', '1D-CONTIG-CONTIG-async',
                '1D-CONTIG-CONTIG-collective-data', '1D-CONTIG-CONTIG-collective-metadata',
                '1D-CONTIG-CONTIG-normal-dist', '1D-CONTIG-CONTIG-async-mem-limit',
                '1D-CONTIG-CONTIG-async-delayed-close'):
        assert row in writes
    assert rows('h5bench_read_check') == ['1D-FULL', '2D-FULL', '3D-FULL', '1D-PARTIAL',
                                          '1D-STRIDED', '2D-PRL', '2D-RDC', '2D-LDC', '2D-CS',
                                          '1D-FULL-independent', '1D-PARTIAL-independent']
    assert rows('h5bench_exerciser_check') == ['2D-collective', '2D-independent']
    assert len(rows('h5bench_metadata_check')) == 3


def test_mdtest_lists(tmp_path):
    out = reframe(tmp_path, '-c', str(CHECKS / 'mdtest.py'), '-n', '^mdtest_check', '-l').stdout
    assert [re.search(r'%benchmark=(\S+)', t).group(1) for t in listed(out)] == \
        ['unique_dir', 'shared_dir']


# ----------------------------------------------------------------------------- dry runs

def test_macsio_dry_run_command_lines(tmp_path, stubs):
    reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '--dry-run', path=stubs)
    scripts = job_scripts(tmp_path, 'macsio_check')
    assert len(scripts) == 8
    commands = set()
    for text in scripts.values():
        line = next(ln for ln in text.splitlines() if re.search(r'/macsio\s', ln))
        data = re.search(r'--filebase (\S+)/macsio ', line).group(1)
        assert f'mkdir -p "{data}"' in text
        assert f'trap \'rm -rf "{data}"; sync' in text
        assert 'h5regress-exit-code: $h5r_rc' in text
        command = re.fullmatch(r'mpirun -np 2 \S+/macsio (.*)', line)
        assert command, line
        commands.add(re.sub(r'--filebase \S+', '--filebase DATA', command.group(1)))
    common = ('--part_size 262144 --avg_num_parts 1.0 --vars_per_part 20 --num_dumps 4 '
              '--filebase DATA --log_line_cnt 80 64')
    expected = {
        f'--interface miftmpl --parallel_file_mode MIF 1 {common}',
        f'--interface miftmpl --parallel_file_mode MIFFPP 2 {common}',
        f'--interface hdf5 --parallel_file_mode MIF 1 {common} --plugin_args --show_errors',
        f'--interface hdf5 --parallel_file_mode MIFFPP 2 {common} --plugin_args --show_errors',
        f'--interface hdf5 --parallel_file_mode SIF 1 {common} --plugin_args --show_errors',
        f'--interface hdf5 --parallel_file_mode SIF 1 {common} --plugin_args --show_errors '
        '--no_collective',
        f'--interface hdf5 --parallel_file_mode SIF 1 {common} --plugin_args --show_errors '
        '--compression gzip level=1',
        f'--interface hdf5 --parallel_file_mode MIF 1 {common} --plugin_args --show_errors '
        '--compression gzip level=1',
    }
    assert commands == expected


def test_macsio_dry_run_variables(tmp_path, stubs):
    reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '--dry-run', '-n', 'hdf5-MIF$',
            '-S', 'part_size=1M', '-S', 'num_dumps=100', '-S', 'mif_file_count=2',
            '-S', 'vars_per_part=5', path=stubs)
    (text,) = job_scripts(tmp_path, 'macsio_check').values()
    assert ('--parallel_file_mode MIF 2 --part_size 1048576 --avg_num_parts 1.0 '
            '--vars_per_part 5 --num_dumps 100') in text
    # the circular log holds every dump's two lines
    assert '--log_line_cnt 464 64' in text


def test_h5bench_dry_run_configs(tmp_path, stubs):
    reframe(tmp_path, '-c', str(CHECKS / 'h5bench.py'), '--dry-run', path=stubs)
    stage = tmp_path / 'stage' / 'local' / 'default' / 'gnu-openmpi'

    def cfg(test_dir, name):
        return dict(line.split('=', 1) for line in
                    (test_dir / name).read_text().splitlines())

    writes = {}
    for d in stage.glob('h5bench_write_check_*'):
        if not (d / 'write.cfg').exists():
            continue        # skipped: subfiling/async unsupported here
        script = (d / 'rfm_job.sh').read_text()
        assert re.search(r'^mpirun -np 2 \S+/h5bench_write(_var_normal_dist)? write.cfg '
                         r'\S+/h5bench\.h5$', script, re.M)
        c = cfg(d, 'write.cfg')
        assert 'MODE' not in c        # a direct run's cfg must not set MODE
        assert c['CSV_FILE'] == 'write.csv'
        writes[(c['NUM_DIMS'], c['MEM_PATTERN'], c['FILE_PATTERN'])] = c
    one = writes[('1', 'CONTIG', 'CONTIG')]
    assert one['DIM_1'] == '65536' and one['TIMESTEPS'] == '3'
    assert one['EMULATED_COMPUTE_TIME_PER_TIMESTEP'] == '10 ms'
    assert writes[('2', 'CONTIG', 'CONTIG')]['DIM_1'] == '256'
    assert writes[('3', 'CONTIG', 'CONTIG')]['DIM_3'] == '40'
    assert writes[('1', 'CONTIG', 'STRIDED')]['BLOCK_CNT'] == '16384'
    compressed = [c for c in writes.values() if c.get('COMPRESS') == 'YES']
    assert compressed and compressed[0]['CHUNK_DIM_1'] == '64'

    reads = {}
    for d in stage.glob('h5bench_read_check_*'):
        script = (d / 'rfm_job.sh').read_text()
        r, w = cfg(d, 'read.cfg'), cfg(d, 'write.cfg')
        # independent rows read (and write) with COLLECTIVE_DATA=NO
        io = ('independent',) if r['COLLECTIVE_DATA'] == 'NO' else ()
        assert w['COLLECTIVE_DATA'] == r['COLLECTIVE_DATA']
        reads[(r['NUM_DIMS'], r['READ_OPTION'], *io)] = (r, w, script)
        ranks = '1' if r['READ_OPTION'] in ('PRL', 'RDC', 'LDC', 'CS') else '2'
        # write phase, page cache dropped, then the read of the same file
        lines = script.splitlines()
        write = next(i for i, ln in enumerate(lines) if '/h5bench_write write.cfg' in ln)
        drop = next(i for i, ln in enumerate(lines) if 'drop_caches' in ln)
        read = next(i for i, ln in enumerate(lines) if '/h5bench_read read.cfg' in ln)
        assert write < drop < read
        assert lines[write].startswith(f'mpirun -np {ranks} ')
        assert lines[read].startswith(f'mpirun -np {ranks} ')
        assert lines[write].split()[5] == lines[read].split()[5]      # same data file
    assert set(reads) == {('1', 'FULL'), ('2', 'FULL'), ('3', 'FULL'), ('1', 'PARTIAL'),
                          ('1', 'STRIDED'), ('2', 'PRL'), ('2', 'RDC'), ('2', 'LDC'),
                          ('2', 'CS'), ('1', 'FULL', 'independent'),
                          ('1', 'PARTIAL', 'independent')}
    assert reads[('1', 'STRIDED')][1]['FILE_PATTERN'] == 'STRIDED'
    assert reads[('1', 'PARTIAL')][0]['TO_READ_NUM_PARTICLES'] == '32768'
    cs = reads[('2', 'CS')][0]
    assert int(cs['STRIDE_SIZE_2']) < int(cs['STRIDE_SIZE'])

    exer = [(d / 'rfm_job.sh').read_text() for d in stage.glob('h5bench_exerciser_check_*')]
    assert any(re.search(r'h5bench_exerciser --numdims 2 --minels 8 8 --nsizes 3 '
                         r'--bufmult 2 2 --dimranks 2 1 --indepio$', s, re.M) for s in exer)
    meta = next(stage.glob('h5bench_metadata_check_*'))
    ini = (meta / 'hdf5_iotest.ini').read_text()
    assert 'process-rows = 2' in ini
    # hdf5_iotest cuts ini lines at 200 characters: paths are relative to the data directory
    assert 'hdf5-file = hdf5_iotest.h5\n' in ini and 'csv-file = hdf5_iotest.csv\n' in ini
    script = (meta / 'rfm_job.sh').read_text()
    data = re.search(r'^mkdir -p (".*")$', script, re.M).group(1)
    assert re.search(rf'^cd {re.escape(data)}$', script, re.M)
    assert re.search(r'^\[ ! -e hdf5_iotest.csv \] \|\| cp hdf5_iotest.csv \S+/$', script, re.M)


def test_h5bench_subfiling_and_async_skip_with_reason(tmp_path, stubs):
    out = reframe(tmp_path, '-c', str(CHECKS / 'h5bench.py'), '--dry-run',
                  '-n', 'subfiling|async', path=stubs).stdout
    skips = [ln for ln in out.splitlines() if 'SKIP' in ln]
    assert len(skips) == 4      # subfiling; async, with IO_MEM_LIMIT, with delayed close
    assert any('subfiling' in s and 'libhdf5' in s for s in skips)
    assert any('async' in s and 'async VOL' in s for s in skips)


def test_mdtest_dry_run(tmp_path, stubs):
    reframe(tmp_path, '-c', str(CHECKS / 'mdtest.py'), '--dry-run', path=stubs)
    scripts = job_scripts(tmp_path, 'mdtest_check').values()
    lines = sorted(re.search(r'^mpirun .*$', s, re.M).group(0) for s in scripts)
    assert re.fullmatch(r'mpirun -np 2 \S+/mdtest -F -n 500 -i 2 -w 3901 -e 3901 -d \S+',
                        lines[0])
    assert re.fullmatch(r'mpirun -np 2 \S+/mdtest -F -n 500 -i 2 -w 3901 -e 3901 -u -d \S+',
                        lines[1])


def test_slurm_example_dry_run(tmp_path, stubs):
    """The example cluster: srun, Lustre scratch from config, 32 ranks per node."""
    reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '--system', 'example-lustre:compute',
            '--dry-run', '-n', 'hdf5-SIF-collective$', path=stubs)
    stage = tmp_path / 'stage' / 'example-lustre' / 'compute' / 'gnu-openmpi'
    scripts = sorted(p.read_text() for p in stage.glob('macsio_check_*/rfm_job.sh'))
    assert len(scripts) == 2        # 1 and 4 nodes
    for text in scripts:
        assert '#SBATCH --ntasks-per-node=32' in text
        assert re.search(r'^srun \S+/macsio --interface hdf5 --parallel_file_mode SIF 1 '
                         r'.*--filebase /lustre/scratch/\$USER/h5regress/', text, re.M)
        assert 'lfs setstripe -c 8' in text


def test_missing_tool_is_skipped_with_how_to_get_it(tmp_path):
    path = ':'.join(d for d in os.environ.get('PATH', '').split(':')
                    if d and not (Path(d) / 'macsio').exists())
    out = reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '-r',
                  '-n', '^macsio_check.*hdf5-SIF-collective$', path=path).stdout
    assert re.search(r'SKIP.*macsio not found on PATH: install it with the Spack environment',
                     out)


# ----------------------------------------------------------------------------- real runs



def perf_lines(tmp: Path, check: str) -> list[dict]:
    """Perflog lines of one check as dicts (see settings.py for the format)."""
    path = tmp / 'perflogs' / 'local' / 'default' / f'{check}.log'
    lines = path.read_text().splitlines()
    header = lines[0].split('|')
    rows = [dict(zip(header, ln.split('|', len(header) - 1))) for ln in lines[1:]]
    for row in rows:
        row['context'] = json.loads(row['h5r_context'])
    return rows


def by_test(rows: list[dict]) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for row in rows:
        bench = re.search(r'%benchmark=(\S+)', row['name']).group(1)
        out.setdefault(bench, {})[row['perf_var']] = row
    return out


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_macsio_runs_on_local(tmp_path):
    path = path_with_tools('macsio', how=HOW['macsio'])
    out = reframe(tmp_path, '-c', str(CHECKS / 'macsio.py'), '-r',
                  '-n', 'miftmpl-MIF$|hdf5-MIF$|hdf5-SIF-collective$', *UNDER_LOAD, path=path,
                  check=False)
    assert out.returncode == 0, out.stdout[-6000:]
    tests = by_test(perf_lines(tmp_path, 'macsio_check'))
    assert set(tests) == {'miftmpl-MIF', 'hdf5-MIF', 'hdf5-SIF-collective'}
    for bench, perf in tests.items():
        assert set(perf) == {'write_bw', 'write_bw_dump_min', 'write_bw_dump_max',
                             'flush_time', 'write_bw_flushed'}
        bw = float(perf['write_bw']['perf_value'])
        assert 0 < bw < 1e6
        # MACSio's bytes over its time plus the timed flush of its files after it
        assert 0 < float(perf['write_bw_flushed']['perf_value']) <= bw
        assert float(perf['write_bw_dump_min']['perf_value']) <= \
            float(perf['write_bw_dump_max']['perf_value'])
        ctx = perf['write_bw']['context']
        assert len(ctx['perfvars']['write_bw']['samples']) == 4     # one per dump
        assert ctx['params']['part_size'] == 262144
        assert ctx['provenance']['hdf5_library_version']
    assert tests['hdf5-SIF-collective']['write_bw']['context']['params']['collective'] is True
    # data removed after the run
    assert not any((tmp_path / 'stage').rglob('macsio_hdf5_*.h5'))


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_h5bench_runs_on_local(tmp_path):
    path = path_with_tools('h5bench_write', 'h5bench_read', 'h5bench_exerciser',
                           'h5bench_hdf5_iotest', how=HOW['h5bench'])
    out = reframe(tmp_path, '-c', str(CHECKS / 'h5bench.py'), '-r', '-n',
                  'write_check.*(1D-CONTIG-CONTIG-collective|subfiling)$|'
                  'read_check.*(1D-FULL|2D-CS)$|exerciser.*collective$|'
                  'metadata.*contiguous-independent$', *UNDER_LOAD, path=path, check=False)
    assert out.returncode == 0, out.stdout[-6000:]
    write = by_test(perf_lines(tmp_path, 'h5bench_write_check'))
    assert '1D-CONTIG-CONTIG-collective' in write
    # every h5bench benchmark's records name the tool h5bench, as `h5regress parse` does
    for check in ('write', 'read', 'exerciser', 'metadata'):
        rows = perf_lines(tmp_path, f'h5bench_{check}_check')
        assert {row['context']['tool'] for row in rows} == {'h5bench'}
    perf = write['1D-CONTIG-CONTIG-collective']
    assert float(perf['write_size']['perf_value']) == 65536 * 32 * 3 * 2
    assert float(perf['write_observed_rate']['perf_value']) > 0
    read = by_test(perf_lines(tmp_path, 'h5bench_read_check'))
    assert float(read['1D-FULL']['read_size']['perf_value']) == 65536 * 32 * 3 * 2
    assert read['2D-CS']['read_raw_rate']['context']['params']['num_ranks'] == 1
    cache = read['1D-FULL']['read_raw_rate']['context']['provenance']['read_page_cache']
    assert cache in ('dropped', 'kept')
    exer = by_test(perf_lines(tmp_path, 'h5bench_exerciser_check'))
    assert float(exer['2D-collective']['write_raw_rate']['perf_value']) > 0
    meta = by_test(perf_lines(tmp_path, 'h5bench_metadata_check'))
    assert float(meta['contiguous-independent']['total_time']['perf_value']) >= 0
    # SUBFILING runs where HDF5 >= 1.14 has the VFD; elsewhere it is skipped with the reason
    skipped = re.search(r'SKIP.*1D-CONTIG-CONTIG-subfiling.*\[(.*)\]', out.stdout)
    if skipped:
        assert re.search(r'SUBFILING needs HDF5 >= 1\.14|without the subfiling VFD',
                         skipped.group(1))
    else:
        assert '1D-CONTIG-CONTIG-subfiling' in write


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_mdtest_runs_on_local(tmp_path):
    path = path_with_tools('mdtest', how=HOW['mdtest'])
    out = reframe(tmp_path, '-c', str(CHECKS / 'mdtest.py'), '-r', *UNDER_LOAD, path=path,
                  check=False)
    assert out.returncode == 0, out.stdout[-6000:]
    tests = by_test(perf_lines(tmp_path, 'mdtest_check'))
    assert set(tests) == {'unique_dir', 'shared_dir'}
    for perf in tests.values():
        assert set(perf) == {'file_create_rate', 'file_stat_rate', 'file_read_rate',
                             'file_remove_rate'}
        assert all(float(p['perf_value']) > 0 for p in perf.values())
