"""FLASH-IO: the checkpoint, plotfile and corner plotfile FLASH writes.

The kernel is this project's (``kernels/flash-io``). ``flashio_check`` runs the
binary of each HDF5 build of the Spack manifest; without one,
``flashio_build_check`` builds the kernel from this tree with ReFrame's CMake
build system against the parallel HDF5 it finds (Debian's on ``local``).

Each row runs one API and transfer mode: the same bytes through HDF5 and
through MPI-IO directly give the HDF5/MPI-IO ratio, the nightly gate's canary.

Every rank fsyncs each file before the kernel's clock stops (``--fsync``): the figures
include getting the data to storage (``write_flush: fsync``). The blocks per rank come
from the partition (``extras['flashio_blocks_per_rank']``; ``local`` sets 2000, a
checkpoint of 393 MB at 2 ranks, so the phase the nightly gates takes long enough to
time); unset, FLASH's own 80-82.
"""

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, variable

from h5regress import proof, tools
from h5regress.builds import BuiltByFixture, KernelBuild
from h5regress.checkbase import KernelBenchmark, shell_word

SUMMARY = 'flashio.json'
KINDS = {'checkpoint': 'checkpoint', 'plot': 'plotfile', 'corner': 'corner'}
#: each kind's files (``flash_<api>_<name>_NNNN``, one per iteration)
FILE_NAMES = {'checkpoint': 'chk', 'plot': 'plt_cnt', 'corner': 'plt_crn'}
#: FLASH's fewest blocks per rank (80 + rank mod 3), when the row does not set them
FLASH_MIN_BLOCKS = 80
#: unknowns of a checkpoint block's zone, 8 bytes each
CHECKPOINT_UNKNOWNS = 24


class build_flashio(KernelBuild):
    """The kernel built from this tree with CMake (HDF5 found by CMake)."""

    kernel = 'flash-io'


class flashio_base(KernelBenchmark):
    #: (api, transfer): HDF5 against MPI-IO, collective against independent.
    benchmark = parameter([
        ('hdf5', 'collective'),
        ('hdf5', 'independent'),
        ('mpiio', 'collective'),
        ('mpiio', 'independent'),
    ], fmt=lambda row: '-'.join(row), loggable=True)

    #: Blocks per rank; 0 = the partition's ``extras['flashio_blocks_per_rank']``, else
    #: FLASH's own (80, 81 or 82: 0.8 x 100 + rank mod 3).
    #:
    #: :type: int
    #: :default: ``0``
    blocks_per_rank = variable(int, value=0)

    #: Zones per block edge (nxb = nyb = nzb).
    #:
    #: :type: int
    #: :default: ``8``
    zones_per_block = variable(int, value=8)

    #: Files written, of ``checkpoint``, ``plot``, ``corner``.
    #:
    #: :type: str
    #: :default: ``'checkpoint,plot,corner'``
    files = variable(str, value='checkpoint,plot,corner')

    #: fsync each file on every rank before the kernel's clock stops (``--fsync``), so
    #: each figure includes getting the data to storage (``write_flush: fsync``); off,
    #: the figures end in the page cache and the records say ``none``.
    #:
    #: :type: bool
    #: :default: ``True``
    fsync = variable(typ.Bool, value=True)

    #: Iterations (each writes every file once; per-iteration values are the samples).
    #:
    #: :type: int
    #: :default: ``3``
    iterations = variable(int, value=3)

    tool = 'flash-io'
    parser = 'flash-io'
    output_files = [SUMMARY, 'stdout', 'stderr']

    def row_params(self):
        api, transfer = self.benchmark
        blocks = self.blocks_per_rank or int(
            self.current_partition.extras.get('flashio_blocks_per_rank', 0))
        return {'api': api, 'transfer': transfer, 'blocks_per_rank': blocks,
                'zones_per_block': self.zones_per_block, 'files': self.files,
                'iterations': self.iterations, 'fsync': self.fsync}

    def row_options(self, p):
        zones = str(p['zones_per_block'])
        return ([f'--api={p["api"]}', f'--{p["transfer"]}', f'--files={p["files"]}',
                 f'--iterations={p["iterations"]}', '--nxb', zones, '--nyb', zones,
                 '--nzb', zones] + ['--fsync'] * p['fsync'] +
                (['--blocks-per-rank', str(p['blocks_per_rank'])] if p['blocks_per_rank']
                 else []))

    def run_options(self):
        # --keep: the files stay for the base's listing; its trap removes them after.
        # The prefix is quoted for the job script (a scratch path may hold spaces).
        return ['--keep', '--json', SUMMARY, shell_word(os.path.join(self.data_dir, 'flash_'))]

    def row_data_bytes(self, p):
        blocks = (p['blocks_per_rank'] or 81) * self.num_nodes * self.tasks_per_node
        return p['iterations'] * blocks * p['zones_per_block'] ** 3 * 24 * 8

    def expected_output(self, p):
        """One file per kind and iteration (``--keep``); a checkpoint holds at least
        every rank's blocks of every unknown."""
        blocks = (p['blocks_per_rank'] or FLASH_MIN_BLOCKS) * self.num_tasks
        checkpoint = blocks * p['zones_per_block'] ** 3 * CHECKPOINT_UNKNOWNS * 8
        return proof.Expectation(tuple(
            proof.FileSet(f'FLASH-IO {KINDS[kind]} files, one per iteration',
                          f'flash_{p["api"]}_{FILE_NAMES[kind]}_*', count=p['iterations'],
                          min_each=checkpoint if kind == 'checkpoint' else 1)
            for kind in p['files'].split(',')))

    def perf_table(self):
        return {f'{kind}_{metric}': (kind, metric, unit)
                for kind in [KINDS[f] for f in self.files.split(',')]
                for metric, unit in (('bw', 'MiB/s'), ('time', 's'))}


#: the rows of the night (``-t nightly``): collective, through HDF5 and its MPI-IO canary.
#: The independent rows left it on 2026-11-28: they execute no HDF5 function that another
#: night row does not (the night's coverage map), and their checkpoint, the night's
#: noisiest metric, stayed undecided through every pair (README, "The nightly gate").
NIGHT_ROWS = (('hdf5', 'collective'), ('mpiio', 'collective'))


@rfm.simple_test
class flashio_check(flashio_base):
    """The kernel as the Spack environment installed it, per HDF5 build."""

    tags = {'io'}

    @run_after('init')
    def tag_night_rows(self):
        if self.benchmark in NIGHT_ROWS:
            self.tags = self.tags | {'nightly'}


@rfm.simple_test
class flashio_build_check(BuiltByFixture, flashio_base):
    """The kernel built from this tree when the Spack manifest has none."""

    tool_build = fixture(build_flashio, scope='environment')
    hdf5_build = parameter([tools.PATH_BUILD], inherit_params=False, loggable=True)
