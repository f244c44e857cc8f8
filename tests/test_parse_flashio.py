"""The FLASH-IO parser against this project's kernel: its real outputs in
tests/fixtures/flash-io (own-*, fail-own-*: recorded by tests/fixtures/record-tools.sh,
numbers checked by hand against the text table) and JSON summaries and text derived
from them. Extra, when present: every output of the *original* FLASH-IO benchmark in
../shared/fixtures/flash-io/ (the project has neither the original's code nor a way to
build it: its kernel replaces it, kernels/flash-io)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from h5regress.parsers import ParseError, RunFailed, parser_for
from h5regress.parsers import flashio
from h5regress.parsers.base import MIB

from reframe_run import FIXTURES as SHARED_FIXTURES, OWN_FIXTURES  # noqa: E402

OWN = OWN_FIXTURES / 'flash-io'
OWN_CASES = sorted(p.name for p in OWN.iterdir() if p.is_dir())
FIXTURES = SHARED_FIXTURES / 'flash-io'
CASES = sorted(p.name for p in FIXTURES.iterdir()) if FIXTURES.is_dir() else []

#: the original FLASH-IO's outputs are only in ../shared/fixtures: an extra
needs_fixtures = pytest.mark.shared_fixtures


def _case_files(case: str, drop: tuple[str, ...] = (), root: Path = FIXTURES) -> dict[str, str]:
    d = root / case
    return {p.name: p.read_text() for p in sorted(d.iterdir())
            if flashio.wanted(p.name) and p.name not in drop}


def _own(case: str, drop: tuple[str, ...] = ()) -> dict[str, str]:
    return _case_files(case, drop, root=OWN)


def _ls_sizes(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].startswith('-'):
            out[f[-1]] = int(f[4])
    return out


def test_registered():
    assert parser_for('flash-io') is flashio


def test_wanted():
    assert flashio.wanted('stdout.txt')
    assert flashio.wanted('run/files.txt')
    assert flashio.wanted('rfm_job.out') and flashio.wanted('rfm_job.err')
    assert flashio.wanted('flashio.json')
    assert not flashio.wanted('f_hdf5_chk_0000')


@needs_fixtures
def test_fixtures_present():
    assert any(c.startswith('fail-') for c in CASES)
    assert any(not c.startswith('fail-') for c in CASES)


@needs_fixtures
@pytest.mark.parametrize('case', CASES or ['no-shared-fixtures'])
def test_fixture(case):
    files = _case_files(case)
    if case.startswith('fail-'):
        with pytest.raises(RunFailed):
            flashio.parse(files)
        return
    runs = flashio.parse(files)
    assert len(runs) == 1
    run = runs[0]
    assert run.tool == 'flash-io'
    assert run.params['implementation'] == 'original'
    assert run.params['num_ranks'] == 2
    assert run.params['total_blocks'] == 161
    assert (run.params['nxb'], run.params['nyb'], run.params['nzb']) == (8, 8, 8)
    niter = int(re.search(r'niter(\d+)', case).group(1))
    assert run.params['iterations'] == niter

    stdout = files['stdout.txt']
    sizes = _ls_sizes(files['files.txt'])
    wrote = re.findall(r'Wrote output to (\S+) .*\n\s*time to output =\s*(\S+)', stdout)
    assert len(wrote) == 3 * niter
    expected = {'checkpoint': [], 'plotfile': [], 'corner': []}
    for name, t in wrote:
        base = Path(name).name
        kind = ('checkpoint' if '_chk_' in base else 'plotfile' if '_plt_cnt_' in base
                else 'corner')
        expected[kind].append((sizes[base], float(t)))
    for kind, pairs in expected.items():
        bw = run.measurement(kind, 'bw')
        assert bw.unit == 'MiB/s' and bw.higher_is_better
        assert bw.samples == pytest.approx([s / MIB / t for s, t in pairs])
        assert bw.value == pytest.approx(sum(bw.samples) / len(bw.samples))
        tm = run.measurement(kind, 'time')
        assert tm.unit == 's' and not tm.higher_is_better
        assert tm.samples == pytest.approx([t for _, t in pairs])
        size = run.measurement(kind, 'size')
        assert size.unit == 'B' and size.value == pairs[-1][0]
    # the sizes the kernel must match (issue #4)
    assert run.measurement('checkpoint', 'size').value == 15_868_444
    assert run.measurement('plotfile', 'size').value == 1_346_656
    assert run.measurement('corner', 'size').value == 1_905_648
    # records come out of it
    recs = run.to_records()
    assert {(r.operation, r.metric) for r in recs} >= {('checkpoint', 'bw'), ('corner', 'time')}


@needs_fixtures
@pytest.mark.parametrize('case', [c for c in CASES if c.startswith('fail-')]
                         or ['no-shared-fixtures'])
def test_fail_fixture_without_stderr(case):
    """The unported original exits 0; even without its stderr the 4 KiB files give it away."""
    with pytest.raises(RunFailed, match='smaller than'):
        flashio.parse(_case_files(case, drop=('stderr.txt',)))


@needs_fixtures
def test_original_without_sizes_gives_times_only():
    case = next(c for c in CASES if not c.startswith('fail-'))
    run = flashio.parse(_case_files(case, drop=('files.txt',)))[0]
    assert run.measurement('checkpoint', 'time').value > 0
    with pytest.raises(KeyError):
        run.measurement('checkpoint', 'bw')
    assert any('no file sizes' in w for w in run.warnings)


@needs_fixtures
def test_original_truncated_is_a_failure():
    case = next(c for c in CASES if not c.startswith('fail-'))
    files = _case_files(case)
    files['stdout.txt'] = files['stdout.txt'].split(' TOTAL time to output')[0]
    with pytest.raises(RunFailed, match='incomplete'):
        flashio.parse(files)


# ------------------------------------------------------ the kernel's own real outputs

def _table(stdout: str) -> dict[str, list[tuple[int, float]]]:
    """The kernel's per-file rows (iter, file, size_B, data_B, time_s, ...), by file."""
    rows: dict[str, list[tuple[int, float]]] = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 7 and f[0].isdigit():
            rows.setdefault(f[1], []).append((int(f[2]), float(f[4])))
    return rows


def test_own_cases_cover_both_apis_and_failures():
    assert {'own-hdf5-collective-iter2', 'own-mpiio-independent-iter2',
            'own-hdf5-independent-keep-iter1', 'fail-own-hdf5-full-disk',
            'fail-own-hdf5-nonexistent-dir'} <= set(OWN_CASES)


@pytest.mark.parametrize('case', [c for c in OWN_CASES if not c.startswith('fail-')])
def test_own_kernel_run_is_its_table(case):
    """JSON summary or text alone, the samples are the table's size / time per file."""
    files = _own(case)
    table = _table(files['stdout.txt'])
    command = (OWN / case / 'README.md').read_text()
    iterations = int(re.search(r'--iterations=(\d+)', command).group(1))
    for source in ({'flashio.json': files['flashio.json']}, {'stdout.txt': files['stdout.txt']}):
        run, = flashio.parse(source)
        assert run.params['implementation'] == 'h5regress'
        assert run.params['num_ranks'] == 2 and run.params['total_blocks'] == 161
        assert run.params['iterations'] == iterations
        assert run.params['api'] == ('mpiio' if '--api=mpiio' in command else 'hdf5')
        assert run.provenance['hdf5_version'] == '1.14.1'
        for kind in ('checkpoint', 'plotfile', 'corner'):
            rows = table[kind]
            assert len(rows) == iterations
            # the text prints times to the microsecond, the JSON to the nanosecond
            assert run.measurement(kind, 'time').samples == pytest.approx(
                [t for _, t in rows], abs=1e-6)
            times = run.measurement(kind, 'time').samples
            assert run.measurement(kind, 'bw').samples == pytest.approx(
                [size / MIB / t for (size, _), t in zip(rows, times)], rel=1e-9)
            assert run.measurement(kind, 'size').value == rows[-1][0]


def test_own_kernel_numbers_by_hand():
    run, = flashio.parse(_own('own-hdf5-collective-iter2'))
    # "0  checkpoint  15870580  15853636  1.931819  7.83" and iteration 1: 1.275554 s
    assert run.measurement('checkpoint', 'time').samples == pytest.approx(
        [1.931819, 1.275554], abs=1e-6)
    assert run.measurement('checkpoint', 'bw').samples[0] == pytest.approx(7.83, abs=0.005)
    assert run.measurement('checkpoint', 'time').value == pytest.approx(1.603687, abs=1e-6)
    assert run.measurement('corner', 'bw').value == pytest.approx(17.38, abs=0.01)
    assert run.measurement('plotfile', 'size').value == 1346628
    assert run.params['transfer'] == 'collective'
    assert any('below the memory' in w for w in run.warnings)
    mpiio, = flashio.parse(_own('own-mpiio-independent-iter2'))
    # MPI-IO writes the data alone: its checkpoint is the HDF5 one's data_B
    assert mpiio.measurement('checkpoint', 'size').value == 15853636
    assert mpiio.params['transfer'] == 'independent'


def test_check_files_on_a_real_listing():
    """The kernel kept its files (--keep): files.txt has them at the reported sizes."""
    files = _own('own-hdf5-independent-keep-iter1')
    run, = flashio.parse({'flashio.json': files['flashio.json']})
    written = _ls_sizes(files['files.txt'])
    assert written['flash_hdf5_chk_0000'] == 15870580
    assert flashio.check_files(run, written) == []
    written['flash_hdf5_plt_crn_0000'] = 4792
    del written['flash_hdf5_plt_cnt_0000']
    assert flashio.check_files(run, written) == [
        'flash_hdf5_plt_cnt_0000: reported but not on disk',
        'flash_hdf5_plt_crn_0000: 4792 B on disk, 1905620 B reported',
        # data_B 1896772, HDF5 at most 2 % + 64 KiB on top: 1896772 x 1.02 + 65536
        'flash_hdf5_plt_crn_0000: 4792 B, expected 1896772 B of data up to 2000243 B']


def test_own_kernel_failures_from_each_of_its_outputs():
    """Whichever output the caller has, a failed kernel run is a failure: its JSON says
    so, its text says FAILED or never says "finished OK", its stderr has HDF5's stack."""
    bad_dir = _own('fail-own-hdf5-nonexistent-dir')
    with pytest.raises(RunFailed, match=r"run status 'failed', 4 error\(s\)"):
        flashio.parse({'flashio.json': bad_dir['flashio.json']})
    with pytest.raises(RunFailed, match='FAILED: 4 error'):
        flashio.parse({'stdout.txt': bad_dir['stdout.txt']})
    with pytest.raises(RunFailed, match='HDF5 errors in stderr.txt'):
        flashio.parse({'stderr.txt': bad_dir['stderr.txt']})
    # the full disk: HDF5's stack, then the ranks hang and are killed (no JSON)
    full = _own('fail-own-hdf5-full-disk')
    assert 'flashio.json' not in full
    with pytest.raises(RunFailed, match='incomplete output'):
        flashio.parse({'stdout.txt': full['stdout.txt']})
    with pytest.raises(RunFailed, match='HDF5 errors'):
        flashio.parse(full)


def test_not_flashio_output():
    with pytest.raises(ParseError):
        flashio.parse({'stdout.txt': 'hello\n'})


# ---------------------------------------------------------------- the kernel's output

def _summary(**over):
    d = {
        'tool': 'flash-io', 'version': '1.0.0', 'status': 'ok', 'errors': 0,
        'hdf5_version': '1.10.8', 'mpi_library_version': 'Open MPI v4.1.4',
        'command': ['flash-io', '--json', 's.json', '/scr/f_'],
        'started': '2026-11-21T20:14:16Z', 'finished': '2026-11-21T20:14:17Z',
        'ranks': 2, 'nodes': 1, 'node_memory_bytes': 25276502016,
        'options': {'api': 'hdf5', 'transfer': 'independent', 'layout': 'contiguous',
                    'chunk_blocks': 10, 'alignment': 1, 'alignment_threshold': 1,
                    'collective_metadata': False, 'blocks_per_rank': None,
                    'nxb': 8, 'nyb': 8, 'nzb': 8,
                    'files': ['checkpoint', 'plotfile', 'corner'], 'iterations': 2,
                    'fsync': False, 'keep': False, 'prefix': '/scr/f_', 'json': 's.json'},
        'mesh': {'ndim': 3, 'nvar': 24, 'plot_vars': ['dens', 'temp', 'pres', 'f1  '],
                 'total_blocks': 161, 'blocks_per_rank_min': 80, 'blocks_per_rank_max': 81,
                 'ngid': 15},
        'results': [],
        'io_share': {'wall_s': 1.0, 'io_s': 0.9, 'setup_s': 0.01, 'cleanup_s': 0.05,
                     'fraction': 0.9, 'fraction_without_cleanup': 0.95},
        'files_removed': True,
        'warnings': ['data written (36.4 MiB in 6 files) is below the memory of the 1 node(s) '
                     'used (24105.6 MiB): the bandwidths are mostly page cache'],
    }
    sizes = {'checkpoint': 15870580, 'plotfile': 1346628, 'corner': 1905620}
    for it in range(2):
        for k, s in sizes.items():
            t = 0.01 * (it + 1)
            d['results'].append({'iteration': it, 'file': k, 'name': f'/scr/f_{k}_{it}',
                                 'size_bytes': s, 'data_bytes': s - 9000, 'time_s': t,
                                 'bw_mib_s': s / MIB / t, 'open_s': 0.001, 'write_s': t / 2,
                                 'close_s': 0.001, 'fsync_s': 0.0})
    d.update(over)
    return d


def test_kernel_json_derived():
    run = flashio.parse({'flashio.json': json.dumps(_summary())})[0]
    assert run.params['implementation'] == 'h5regress'
    assert run.params['num_ranks'] == 2 and run.params['transfer'] == 'independent'
    assert run.params['files'] == 'checkpoint,plotfile,corner'
    assert run.provenance['hdf5_version'] == '1.10.8'
    bw = run.measurement('checkpoint', 'bw')
    assert bw.samples == pytest.approx([15870580 / MIB / 0.01, 15870580 / MIB / 0.02])
    assert run.measurement('corner', 'time').value == pytest.approx(0.015)
    assert run.measurement('plotfile', 'size').value == 1346628
    assert any('below the memory' in w for w in run.warnings)


def test_kernel_json_preferred_over_text():
    files = {'flashio.json': json.dumps(_summary()), 'rfm_job.out': 'whatever\n'}
    assert flashio.parse(files)[0].params['implementation'] == 'h5regress'


@pytest.mark.parametrize('over', [{'status': 'failed', 'errors': 4}, {'errors': 1},
                                  {'results': []}])
def test_kernel_json_failed(over):
    with pytest.raises(RunFailed):
        flashio.parse({'flashio.json': json.dumps(_summary(**over))})


def test_kernel_json_truncated():
    text = json.dumps(_summary())
    with pytest.raises(RunFailed, match='truncated'):
        flashio.parse({'flashio.json': text[:len(text) // 2]})


def test_kernel_json_zero_time_is_a_failure():
    d = _summary()
    d['results'][0]['time_s'] = 0.0
    with pytest.raises(RunFailed):
        flashio.parse({'flashio.json': json.dumps(d)})


KERNEL_TEXT = """\
flash-io 1.0.0: h5regress FLASH I/O kernel
HDF5 library: 1.10.8
MPI library: Open MPI v4.1.4
ranks: 2  nodes: 1  node memory: 23.5 GiB
api: hdf5  transfer: collective  layout: contiguous  alignment: 1 (threshold 1)  collective metadata: no  fsync: no
mesh: 3-d, 8 x 8 x 8 zones per block, 24 unknowns (plotfiles: dens temp pres f1), 161 blocks (80-81 per rank)
files: checkpoint plotfile corner  iterations: 1  prefix: /tmp/fio/f_
iter  file              size_B        data_B      time_s    bw_MiB/s  name
   0  checkpoint      15870580      15853636    0.078549      192.69  /tmp/fio/f_hdf5_chk_0000
   0  plotfile         1346628       1337780    0.018834       68.19  /tmp/fio/f_hdf5_plt_cnt_0000
   0  corner           1905620       1896772    0.012185      149.15  /tmp/fio/f_hdf5_plt_crn_0000
mean  checkpoint      15870580                  0.078549      192.69  (mean of 1)
mean  plotfile         1346628                  0.018834       68.19  (mean of 1)
mean  corner           1905620                  0.012185      149.15  (mean of 1)
I/O share: 75.4 % of wall time, 79.6 % without the clean-up (I/O 0.110 s, setup 0.011 s, clean-up 0.008 s, wall 0.145 s)
WARNING: data written (18.2 MiB in 3 files) is below the memory of the 1 node(s) used (24105.6 MiB): the bandwidths are mostly page cache
files: removed
flash-io: finished OK
"""


def test_kernel_text():
    run = flashio.parse({'rfm_job.out': KERNEL_TEXT, 'rfm_job.err': ''})[0]
    assert run.params['num_ranks'] == 2 and run.params['transfer'] == 'collective'
    assert run.params['total_blocks'] == 161
    assert run.provenance['hdf5_version'] == '1.10.8'
    assert run.measurement('checkpoint', 'bw').value == pytest.approx(15870580 / MIB / 0.078549)
    assert run.measurement('corner', 'time').value == pytest.approx(0.012185)
    assert len(run.warnings) == 1


def test_kernel_text_failed():
    text = KERNEL_TEXT.replace('flash-io: finished OK', 'flash-io: FAILED: 4 error(s), see stderr')
    with pytest.raises(RunFailed, match='FAILED'):
        flashio.parse({'rfm_job.out': text})
    with pytest.raises(RunFailed, match='finished OK'):
        flashio.parse({'rfm_job.out': KERNEL_TEXT.split('mean ')[0]})


def test_kernel_stderr_errors():
    err = 'flash-io: ERROR: rank 1: write_hdf5.c:165: cannot create the HDF5 file /x/f_\n'
    with pytest.raises(RunFailed, match='ERROR'):
        flashio.parse({'rfm_job.out': KERNEL_TEXT, 'rfm_job.err': err})
    with pytest.raises(RunFailed, match='HDF5 errors'):
        flashio.parse({'rfm_job.out': KERNEL_TEXT,
                       'rfm_job.err': 'HDF5-DIAG: Error detected in HDF5 (1.10.8) MPI-process 0:\n'})


def _on_disk(summary: dict) -> dict[str, int]:
    return {f'run/{Path(r["name"]).name}': r['size_bytes'] for r in summary['results']}


def test_check_files_against_the_kernel_json():
    """Each reported file on disk at its reported size, holding its data (HDF5: at most
    2 % + 64 KiB of metadata on top)."""
    summary = _summary()
    run = flashio.parse({'flashio.json': json.dumps(summary)})[0]
    written = _on_disk(summary)
    assert flashio.check_files(run, written) == []
    del written['run/f_plotfile_1']
    written['run/f_corner_0'] = 100
    written['run/f_checkpoint_1'] = 15870580 + 1
    written['run/f_checkpoint_0'] = 17_000_000
    assert flashio.check_files(run, written) == [
        'f_checkpoint_0: 17000000 B on disk, 15870580 B reported',
        'f_checkpoint_0: 17000000 B, expected 15861580 B of data up to 16244347 B',
        'f_corner_0: 100 B on disk, 1905620 B reported',
        'f_corner_0: 100 B, expected 1896620 B of data up to 2000088 B',
        'f_checkpoint_1: 15870581 B on disk, 15870580 B reported',
        'f_plotfile_1: reported but not on disk',
    ]


def test_check_files_mpiio_is_exactly_the_data():
    summary = _summary()
    summary['options']['api'] = 'mpiio'
    for r in summary['results']:
        r['size_bytes'] = r['data_bytes']
    run = flashio.parse({'flashio.json': json.dumps(summary)})[0]
    written = _on_disk(summary)
    assert flashio.check_files(run, written) == []
    written['run/f_corner_1'] += 1
    assert flashio.check_files(run, written) == [
        'f_corner_1: 1896621 B on disk, 1896620 B reported',
        'f_corner_1: 1896621 B, expected 1896620 B of data']


def test_check_files_without_the_kernel_json_has_nothing_to_check():
    run = flashio.parse({'rfm_job.out': KERNEL_TEXT})[0]
    assert flashio.check_files(run, {'f_hdf5_chk_0000': 1}) == []


@needs_fixtures
def test_unported_original_names_the_short_file():
    case = next(c for c in CASES if c.startswith('fail-unpatched-hdf5-1.10.8'))
    with pytest.raises(RunFailed) as err:
        flashio.parse(_case_files(case, drop=('stderr.txt',)))
    assert str(err.value) == (
        'flash-io: stdout.txt: flash_io_test_hdf5_chk_0000 is 4792 B, smaller than the '
        '15826944 B of data a checkpoint of 161 blocks holds: the writes failed')
