"""The project's FLASH-IO kernel (kernels/flash-io), built with CMake and run for real.

Checks the three files' datasets (names, shapes, types) with h5dump, their
sizes against the original FLASH-IO's at 2 ranks (fixtures, HDF5 1.10.8) and 64
ranks (issue #4), the MPI-IO mode, the JSON summary, the cache hygiene and the
error path. Needs cmake, mpicc/mpirun, a parallel HDF5 (h5pcc) and h5dump:
skipped, with the reason, when one is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from h5regress.parsers import flashio
from kernel_build import cmake_build

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / 'kernels' / 'flash-io'
MIB = 1024 * 1024

# sizes the original FLASH-IO wrote (issue #4; 2 ranks: ../shared/fixtures/flash-io, HDF5 1.10.8)
ORIGINAL_2 = {'checkpoint': 15_868_444, 'plotfile': 1_346_656, 'corner': 1_905_648}
ORIGINAL_64 = {'checkpoint': 509_837_188, 'plotfile': 42_697_532, 'corner': 60_692_908}
H5NAME = {'checkpoint': 'hdf5_chk_0000', 'plotfile': 'hdf5_plt_cnt_0000',
          'corner': 'hdf5_plt_crn_0000'}
VARS = ['dens', 'velx', 'vely', 'velz', 'pres', 'ener', 'temp', 'gamc', 'game', 'enuc', 'gpot'] \
    + [f'f{i}'.ljust(4) for i in range(1, 14)]
PLOT_VARS = ['dens', 'temp', 'pres', 'f1  ']
ENV = {**os.environ, 'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
       'OMPI_MCA_rmaps_base_oversubscribe': '1'}


def _missing_tools() -> list[str]:
    return [t for t in ('cmake', 'mpicc', 'mpirun', 'h5pcc', 'h5dump') if not shutil.which(t)]


pytestmark = pytest.mark.skipif(
    bool(_missing_tools()),
    reason=f'FLASH-IO kernel needs {", ".join(_missing_tools())} '
           '(Debian: cmake libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools)')


@pytest.fixture(scope='module')
def flash_io(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp('flash-io-build')
    cmake_build(SRC, build)
    exe = build / 'flash-io'
    assert exe.is_file()
    return exe


def run(exe: Path, np_: int, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = ['mpirun', '-np', str(np_), '--oversubscribe', str(exe), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)


def datasets(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (HDF5 type class or atomic type, shape), from h5dump -H."""
    p = subprocess.run(['h5dump', '-H', str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = {}
    for m in re.finditer(r'DATASET "([^"]*)" \{\s*DATATYPE\s+(H5T_\w+).*?'
                         r'DATASPACE\s+SIMPLE \{ \( ([\d, ]+) \)', p.stdout, re.S):
        out[m.group(1)] = (m.group(2), tuple(int(x) for x in m.group(3).split(',')))
    return out


def h5value(path: Path, dset: str, start: str | None = None) -> str:
    cmd = ['h5dump', '-d', dset]
    if start:
        cmd += ['-s', start, '-c', ','.join('1' * len(start.split(',')))]
    p = subprocess.run(cmd + [str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope='module')
def two_ranks(flash_io, tmp_path_factory):
    d = tmp_path_factory.mktemp('flash-io-2')
    p = run(flash_io, 2, '--keep', '--json', str(d / 'summary.json'), str(d / 'f_'))
    assert p.returncode == 0, p.stdout + p.stderr
    return d, p


def test_help(flash_io):
    p = run(flash_io, 1, '--help')
    assert p.returncode == 0
    for opt in ('--collective', '--independent', '--chunked', '--contiguous', '--alignment',
                '--blocks-per-rank', '--nxb', '--files', '--iterations', '--api', '--keep',
                '--json'):
        assert opt in p.stdout


def test_two_ranks_sizes_within_1_percent_of_the_original(two_ranks):
    d, p = two_ranks
    for kind, want in ORIGINAL_2.items():
        size = (d / f'f_{H5NAME[kind]}').stat().st_size
        assert abs(size - want) / want < 0.01, (kind, size, want)
    assert not p.stderr.strip() or 'ERROR' not in p.stderr


def test_checkpoint_layout(two_ranks):
    d, _ = two_ranks
    ds = datasets(d / f'f_{H5NAME["checkpoint"]}')
    tot = 161
    for v in VARS:
        assert ds[v] == ('H5T_IEEE_F64LE', (tot, 8, 8, 8)), v
    assert ds['refine level'] == ('H5T_STD_I32LE', (tot,))
    assert ds['node type'] == ('H5T_STD_I32LE', (tot,))
    assert ds['gid'] == ('H5T_STD_I32LE', (tot, 15))
    assert ds['coordinates'] == ('H5T_IEEE_F64LE', (tot, 3))
    assert ds['block size'] == ('H5T_IEEE_F64LE', (tot, 3))
    assert ds['bounding box'] == ('H5T_IEEE_F64LE', (tot, 3, 2))
    assert ds['unknown names'] == ('H5T_STRING', (24, 1))
    assert ds['file creation time'] == ('H5T_STRING', (1,))
    assert ds['FLASH version'] == ('H5T_STRING', (1,))
    assert ds['run comment'] == ('H5T_STRING', (1,))
    assert ds['simulation parameters'] == ('H5T_COMPOUND', (1,))
    assert ds['number of processors'] == ('H5T_STD_I32LE', (1,))
    assert len(ds) == 24 + 6 + 6


def test_plotfile_layouts(two_ranks):
    d, _ = two_ranks
    for kind, zones in (('plotfile', 8), ('corner', 9)):
        ds = datasets(d / f'f_{H5NAME[kind]}')
        for v in PLOT_VARS:
            assert ds[v] == ('H5T_IEEE_F32LE', (161, zones, zones, zones)), (kind, v)
        for v in set(VARS) - set(PLOT_VARS):
            assert v not in ds
        assert ds['coordinates'] == ('H5T_IEEE_F32LE', (161, 3))
        assert ds['bounding box'] == ('H5T_IEEE_F32LE', (161, 3, 2))
        assert ds['gid'] == ('H5T_STD_I32LE', (161, 15))
        assert ds['unknown names'] == ('H5T_STRING', (4, 1))
        assert len(ds) == 4 + 6 + 6


def test_header_values(two_ranks):
    d, _ = two_ranks
    chk = d / f'f_{H5NAME["checkpoint"]}'
    sp = h5value(chk, 'simulation parameters')
    assert re.search(r'H5T_IEEE_F64LE "time"', sp) and re.search(r'"number of steps"', sp)
    assert re.search(r'\{\s*161,', sp)               # total blocks
    names = h5value(chk, 'unknown names')
    assert '"dens"' in names and '"f13 "' in names
    crn = d / f'f_{H5NAME["corner"]}'
    assert re.search(r'\{\s*161,[^}]*\b9,\s*9,\s*9\s*\}', h5value(crn, 'simulation parameters'),
                     re.S)
    assert re.search(r'\(0\): 2\s*$', h5value(chk, 'number of processors'), re.M)


def test_corner_interpolation(two_ranks):
    """Corner (0,0,0) of block 0 is the mean of the 8 zones around it (FLASH's 3-d rule)."""
    d, _ = two_ranks
    out = h5value(d / f'f_{H5NAME["corner"]}', '/dens', '0,0,0,0')
    val = float(re.search(r'\(0,0,0,0\): ([-0-9.e+]+)', out).group(1))
    # dens zone (gx,gy,gz) = 1 + 1e-3 gx + 1e-6 gy + 1e-9 gz; corner = mean over {-1,0}^3
    assert val == pytest.approx(1 - 0.5e-3 - 0.5e-6 - 0.5e-9, rel=1e-6)
    cell = h5value(d / f'f_{H5NAME["plotfile"]}', '/dens', '0,0,0,1')
    assert float(re.search(r'\(0,0,0,1\): ([-0-9.e+]+)', cell).group(1)) == \
        pytest.approx(1.001, rel=1e-6)


def test_json_summary(two_ranks):
    d, p = two_ranks
    s = json.loads((d / 'summary.json').read_text())
    assert s['tool'] == 'flash-io' and s['status'] == 'ok' and s['errors'] == 0
    assert re.fullmatch(r'1\.\d+\.\d+', s['hdf5_version'])
    assert s['mpi_library_version']
    assert s['ranks'] == 2 and s['nodes'] >= 1 and s['node_memory_bytes'] > 0
    assert s['options']['api'] == 'hdf5' and s['options']['transfer'] == 'independent'
    assert s['options']['layout'] == 'contiguous' and s['options']['iterations'] == 1
    assert s['options']['files'] == ['checkpoint', 'plotfile', 'corner']
    assert s['mesh']['total_blocks'] == 161
    assert [r['file'] for r in s['results']] == ['checkpoint', 'plotfile', 'corner']
    for r in s['results']:
        path = Path(r['name'])
        assert r['size_bytes'] == path.stat().st_size
        assert 0 < r['data_bytes'] < r['size_bytes']
        assert r['bw_mib_s'] == pytest.approx(r['size_bytes'] / MIB / r['time_s'], rel=1e-4)
    assert 0 < s['io_share']['fraction'] <= 1
    # 18 MiB on a node with GiBs of memory: the cache warning must be there
    assert any('below the memory' in w for w in s['warnings'])
    assert 'WARNING: data written' in p.stdout
    # the parser reads both the JSON and the text
    run_json = flashio.parse({'summary.json': (d / 'summary.json').read_text()})[0]
    run_text = flashio.parse({'stdout.txt': p.stdout, 'stderr.txt': p.stderr})[0]
    for kind in ('checkpoint', 'plotfile', 'corner'):
        assert run_json.measurement(kind, 'size').value == run_text.measurement(kind, 'size').value
        assert run_json.measurement(kind, 'bw').value > 0


def test_mpiio_mode_writes_the_same_data_bytes(flash_io, two_ranks, tmp_path):
    d, _ = two_ranks
    h5 = {r['file']: r for r in json.loads((d / 'summary.json').read_text())['results']}
    p = run(flash_io, 2, '--api', 'mpiio', '--collective', '--keep', '--json',
            str(tmp_path / 's.json'), str(tmp_path / 'm_'))
    assert p.returncode == 0, p.stdout + p.stderr
    s = json.loads((tmp_path / 's.json').read_text())
    assert s['options']['api'] == 'mpiio'
    for r in s['results']:
        assert r['data_bytes'] == h5[r['file']]['data_bytes']
        assert r['size_bytes'] == r['data_bytes'] == Path(r['name']).stat().st_size
        assert 'mpiio_' in Path(r['name']).name
        assert h5[r['file']]['size_bytes'] > r['data_bytes']   # HDF5 adds only metadata


def test_files_removed_by_default(flash_io, tmp_path):
    p = run(flash_io, 2, '--iterations', '2', '--files', 'checkpoint,corner', str(tmp_path / 'f_'))
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(re.findall(r'^\s+\d+\s+(checkpoint|corner)\s', p.stdout, re.M)) == 4
    assert 'files: removed' in p.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('args', [
    ('--collective', '--chunked', '--chunk-blocks', '16'),
    ('--collective', '--collective-metadata', '--alignment', '64k', '--alignment-threshold', '4k'),
    ('--independent', '--blocks-per-rank', '5', '--nxb', '16', '--nyb', '8', '--nzb', '4'),
])
def test_options(flash_io, tmp_path, args):
    p = run(flash_io, 3, *args, '--keep', '--json', str(tmp_path / 's.json'), str(tmp_path / 'f_'))
    assert p.returncode == 0, p.stdout + p.stderr
    s = json.loads((tmp_path / 's.json').read_text())
    assert s['status'] == 'ok'
    if '--blocks-per-rank' in args:
        ds = datasets(tmp_path / f'f_{H5NAME["checkpoint"]}')
        assert ds['dens'] == ('H5T_IEEE_F64LE', (15, 4, 8, 16))
        assert datasets(tmp_path / f'f_{H5NAME["corner"]}')['dens'][1] == (15, 5, 9, 17)
    if '--chunked' in args:
        out = subprocess.run(['h5dump', '-p', '-H', '-d', '/dens',
                              str(tmp_path / f'f_{H5NAME["checkpoint"]}')],
                             capture_output=True, text=True).stdout
        assert 'CHUNKED ( 16, 8, 8, 8 )' in out


def test_two_d(flash_io, tmp_path):
    p = run(flash_io, 2, '--nzb', '1', '--keep', str(tmp_path / 'f_'))
    assert p.returncode == 0, p.stdout + p.stderr
    ds = datasets(tmp_path / f'f_{H5NAME["corner"]}')
    assert ds['dens'] == ('H5T_IEEE_F32LE', (161, 1, 9, 9))
    assert ds['gid'] == ('H5T_STD_I32LE', (161, 9))      # 4 faces + parent + 4 children
    assert ds['coordinates'] == ('H5T_IEEE_F32LE', (161, 2))


def test_error_nonexistent_directory(flash_io, tmp_path):
    prefix = tmp_path / 'no' / 'such' / 'dir' / 'f_'
    p = run(flash_io, 2, '--json', str(tmp_path / 's.json'), str(prefix))
    assert p.returncode != 0
    assert 'cannot create the HDF5 file' in p.stderr and str(prefix) in p.stderr
    assert 'HDF5-DIAG' in p.stderr                     # the HDF5 stack is printed
    assert 'flash-io: FAILED' in p.stdout
    s = json.loads((tmp_path / 's.json').read_text())
    assert s['status'] == 'failed' and s['errors'] > 0
    with pytest.raises(flashio.RunFailed):
        flashio.parse({'stdout.txt': p.stdout, 'stderr.txt': p.stderr})


def test_error_nonexistent_directory_mpiio(flash_io, tmp_path):
    p = run(flash_io, 2, '--api', 'mpiio', str(tmp_path / 'nope' / 'f_'))
    assert p.returncode != 0
    assert 'cannot create the file' in p.stderr


def test_bad_usage(flash_io, tmp_path):
    # run as an MPI singleton (no mpirun): quicker, and usage errors need no ranks
    for args in (('--bogus', 'x'), ('--files', 'nope', 'x'), ('--iterations', '0', 'x'), (),
                 ('--api', 'posix', 'x'), ('a', 'b')):
        p = subprocess.run([str(flash_io), *args], capture_output=True, text=True, env=ENV,
                           timeout=120, cwd=tmp_path)
        assert p.returncode == 2, args
        assert 'usage' in p.stderr, args
    assert list(tmp_path.iterdir()) == []


def test_64_ranks_sizes_within_1_percent_of_the_original(flash_io, tmp_path):
    """64 ranks (5183 blocks): about 10 s and 615 MB of files on a 2-core machine."""
    p = run(flash_io, 64, '--keep', '--json', str(tmp_path / 's.json'), str(tmp_path / 'f_'),
            timeout=1200)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    s = json.loads((tmp_path / 's.json').read_text())
    assert s['mesh']['total_blocks'] == 64 * 80 + 21 + 2 * 21
    for kind, want in ORIGINAL_64.items():
        size = (tmp_path / f'f_{H5NAME[kind]}').stat().st_size
        assert abs(size - want) / want < 0.01, (kind, size, want)
