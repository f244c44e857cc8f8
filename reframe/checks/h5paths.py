"""h5paths: the HDF5 code paths where real regressions happened, one row per path.

The kernel is this project's (``kernels/h5paths``; its README says what each path
does and which HDF5 calls it times). ``h5paths_check`` runs the binary of each HDF5
build of the Spack manifest; without one, ``h5paths_build_check`` builds the kernel
from this tree with ReFrame's CMake build system against the parallel HDF5 it finds
(Debian's on ``local``).

Rows: compound datasets read and written through a memory type that is the file
type (``compound-same``), a subset, a superset or a reordering of it; atomic type
conversion (``convert-none`` is its no-conversion twin); metadata-heavy paths
(many datasets, attributes, open/close) with and without collective metadata I/O
and at two file-format bounds; filtered and partial chunks; virtual datasets; the
external file cache (and its twin without the cache); multi-dataset I/O. Data rows
have an MPI-IO twin (``api`` ``mpiio``: the same bytes through MPI-IO, the gate's
canary). A row the HDF5 build
cannot run (``multi-dataset`` before 1.14) is skipped with the kernel's own words.
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (deferrable, fixture, parameter, run_before,
                                   sanity_function, variable)

from h5regress import proof, tools
from h5regress.builds import BuiltByFixture, KernelBuild
from h5regress.checkbase import HDF5Benchmark, shell_word
from h5regress.parsers import h5paths

SUMMARY = 'h5paths.json'


def row_name(row):
    """``compound-subset-hdf5-collective-contiguous-earliest`` (+ ``-mwb``, ``-cmd`` where the
    row sets them, ``-warm`` for warm reads, ``-efc0`` without the external file cache):
    the reference files' ``case``."""
    (path, api, transfer, layout, modify_write_buf, coll_metadata, libver, read_cache,
     efc_cache) = row
    return '-'.join([path, api, transfer, layout] + (['mwb'] if modify_write_buf else []) +
                    (['cmd'] if coll_metadata else []) + [libver] +
                    (['warm'] if read_cache == 'keep' else []) +
                    ([] if efc_cache else ['efc0']))


def rows():
    """The table: (path, api, transfer, layout, modify_write_buf, coll_metadata, libver,
    read_cache, efc_cache)."""
    base = 'earliest'
    compound = ('compound-same', 'compound-subset', 'compound-superset', 'compound-reorder')
    convert = ('convert-none', 'convert-float-double', 'convert-endian')
    table = []
    # compound through each memory type, contiguous and chunked, collective
    table += [(p, 'hdf5', 'collective', lay, False, False, base)
              for p in compound for lay in ('contiguous', 'chunked')]
    # independent transfers for the subset and its no-conversion twin
    table += [(p, 'hdf5', 'independent', 'contiguous', False, False, base)
              for p in ('compound-same', 'compound-subset')]
    # H5Pset_modify_write_buf on the writes that convert
    table += [(p, 'hdf5', 'collective', 'contiguous', True, False, base)
              for p in compound[1:]]
    # atomic conversion on write and read
    table += [(p, 'hdf5', 'collective', 'contiguous', False, False, base) for p in convert]
    # metadata: without and with collective metadata I/O, at two format bounds
    table += [(p, 'hdf5', 'collective', 'contiguous', False, cmd, lv)
              for p in ('many-datasets', 'attributes', 'open-close')
              for cmd, lv in ((False, base), (True, base), (False, 'v110'))]
    table += [('chunked-deflate', 'hdf5', 'collective', 'chunked', False, False, base),
              ('partial-chunk', 'hdf5', 'collective', 'chunked', False, False, base),
              ('vds', 'hdf5', 'collective', 'contiguous', False, False, base),
              ('efc', 'hdf5', 'collective', 'contiguous', False, False, base),
              # its twin: the same traversals without the external file cache
              # (--efc-size 0: every traversal opens and closes the file)
              ('efc', 'hdf5', 'collective', 'contiguous', False, False, base, 'evict', False),
              ('multi-dataset', 'hdf5', 'collective', 'contiguous', False, False, base)]
    # MPI-IO twins of the collective contiguous data rows (the canaries)
    table += [(p, 'mpiio', 'collective', 'contiguous', False, False, base)
              for p in compound + convert]
    table = [row if len(row) == 9 else row + ('evict', True) for row in table]
    # warm reads (--read-cache keep): the conversion is most of the read's time; cold reads
    # bury a conversion regression in the disk (kernels/h5paths/README.md: 1.15.0 b382a8ef
    # read compound subsets 1.6x and supersets 2.1x slower warm, 20 pairs; not visibly cold)
    table += [(p, 'hdf5', 'collective', 'contiguous', False, False, base, 'keep', True)
              for p in compound + convert]
    return table


#: Sizes of each path: ``elements``, records per rank per dataset (the attribute size of
#: ``attributes``, the dataset size of the other metadata paths); ``objects``, in all:
#: datasets, attributes, files (the source files of vds, the datasets of multi-dataset).
#: Sized on ``local`` (2 ranks, the 2-core VM) for gated phases of at least 0.5 s where
#: the data allow it: the gated phase is the read for most rows, and a read moves less
#: than the fsynced write before it. One warm read (``-warm``) is shorter (0.03-0.2 s:
#: memory moves at 1-4 GiB/s, and 0.5 s of it would need a 1 GB fsynced write per
#: iteration), so a warm read phase reads the dataset several times
#: (:data:`WARM_READ_REPEATS`). benchmarks/h5paths_noise.py prints each row's gated
#: phase time; kernels/h5paths/README.md has the kernel's own defaults. ``size_factor``
#: scales the work.
#:
#: The metadata sizes were raised (many-datasets x10, attributes and open-close x2) after
#: benchmarks/h5paths_noise.py measured their gated phases at 0.06-0.27 s, pair ln-ratio
#: SD 0.11-0.24 (20 A/A pairs, 1.14.1); at 0.4-0.6 s it was 0.11-0.16 for these three,
#: and twice the work again (8 pairs) did not lower it: their noise is not the timer's.
SIZES = {
    **{p: {'elements': 3145728, 'objects': 1} for p in (
        'compound-same', 'compound-subset', 'compound-superset', 'compound-reorder')},
    **{p: {'elements': 20971520, 'objects': 1} for p in (
        'convert-none', 'convert-float-double', 'convert-endian')},
    'many-datasets': {'elements': 16, 'objects': 15000},
    'attributes': {'elements': 8, 'objects': 50000},
    'open-close': {'elements': 16, 'objects': 20000},
    'chunked-deflate': {'elements': 2097152, 'objects': 1},
    'partial-chunk': {'elements': 8388608, 'objects': 1},
    'vds': {'elements': 33554432, 'objects': 8},
    'efc': {'elements': 16, 'objects': 8},
    'multi-dataset': {'elements': 1048576, 'objects': 8},
}
#: Reads per read phase of the warm rows (``--read-repeats``; a cold read is one read of
#: an evicted file): one warm read took 0.03-0.2 s on ``local`` (the same A/A pairs, SD
#: 0.11-0.18), these make each read phase 0.5-0.6 s (SD 0.04-0.08, but superset 0.135
#: and reorder 0.119, which twice the repeats did not lower).
WARM_READ_REPEATS = {'compound-same': 16, 'compound-subset': 12, 'compound-superset': 8,
                     'compound-reorder': 3, 'convert-none': 16, 'convert-float-double': 8,
                     'convert-endian': 6}
#: paths whose work is their objects (``size_factor`` scales ``objects``, else ``elements``)
OBJECT_PATHS = ('many-datasets', 'attributes', 'open-close', 'efc')


def row_params(row, *, size_factor=1.0, chunk_elements, iterations):
    """The recorded parameters of a row, defaults included (shared with
    ``benchmarks/h5paths_noise.py``, which runs the rows without ReFrame)."""
    (path, api, transfer, layout, modify_write_buf, coll_metadata, libver, read_cache,
     efc_cache) = row
    size = dict(SIZES[path])
    work = 'objects' if path in OBJECT_PATHS else 'elements'
    size[work] = max(1, round(size[work] * size_factor))
    params = {'path': path, 'api': api, 'transfer': transfer, 'layout': layout,
              'chunk_elements': chunk_elements if layout == 'chunked' else 0,
              'modify_write_buf': modify_write_buf, 'coll_metadata': coll_metadata,
              'libver': libver, 'elements': size['elements'], 'objects': size['objects'],
              'size_factor': size_factor, 'iterations': iterations, 'read_cache': read_cache,
              'read_repeats': WARM_READ_REPEATS[path] if read_cache == 'keep' else 1}
    if path == 'efc':
        # H5Pset_elink_file_cache_size: room for every linked file, or no cache
        params['efc_size'] = size['objects'] if efc_cache else 0
    return params


def row_options(p):
    """The kernel's options of a row's parameters (no paths)."""
    return (['--path', p['path'], '--api', p['api'], '--transfer', p['transfer'],
             '--layout', p['layout']] +
            (['--chunk-elements', str(p['chunk_elements'])] if p['chunk_elements'] else []) +
            (['--modify-write-buf'] if p['modify_write_buf'] else []) +
            (['--coll-metadata'] if p['coll_metadata'] else []) +
            ['--libver', p['libver'], '--elements', str(p['elements']),
             '--objects', str(p['objects']), '--iterations', str(p['iterations'])] +
            (['--efc-size', str(p['efc_size'])] if 'efc_size' in p else []) +
            # only when not the kernel's default: a kernel from before the option still runs
            (['--read-cache', p['read_cache']] if p['read_cache'] != 'evict' else []) +
            (['--read-repeats', str(p['read_repeats'])] if p['read_repeats'] != 1 else []))


class build_h5paths(KernelBuild):
    """The kernel built from this tree with CMake (HDF5 found by CMake)."""

    kernel = 'h5paths'


class h5paths_base(HDF5Benchmark):
    #: (path, api, transfer, layout, modify_write_buf, coll_metadata, libver, read_cache,
    #: efc_cache): the code path, HDF5 or its MPI-IO twin, collective or independent
    #: transfers, contiguous or chunked datasets, ``H5Pset_modify_write_buf``, collective
    #: metadata I/O, the low bound of ``H5Pset_libver_bounds``, cold (``evict``) or warm
    #: (``keep``) reads, the external file cache on (its size: the linked files) or off
    #: (``efc`` only).
    benchmark = parameter(rows(), fmt=row_name, loggable=True)

    #: Work of every row relative to :data:`SIZES`: the records per rank of the data
    #: paths, the objects of the metadata paths (rounded, at least 1).
    #:
    #: :type: float
    #: :default: ``1.0``: gated phases of at least 0.5 s on ``local``
    size_factor = variable(float, value=1.0)

    #: Elements per chunk of the chunked rows.
    #:
    #: :type: int
    #: :default: ``65536``
    chunk_elements = variable(int, value=65536)

    #: Iterations (each runs every phase of the path once; per-iteration values are
    #: the samples).
    #:
    #: :type: int
    #: :default: ``3``
    iterations = variable(int, value=3)

    tool = 'h5paths'
    output_files = [SUMMARY, 'stdout', 'stderr']

    def row_params(self):
        return row_params(self.benchmark, size_factor=self.size_factor,
                          chunk_elements=self.chunk_elements, iterations=self.iterations)

    def row_options(self, p):
        return row_options(p)

    def run_options(self):
        # --keep: the files stay for the base's listing; its trap removes them after.
        # The prefix is quoted for the job script (a scratch path may hold spaces).
        return ['--keep', '--json', SUMMARY, shell_word(os.path.join(self.data_dir, 'h5p_'))]

    def row_data_bytes(self, p):
        # No "data below node memory" warning: the kernel defeats the page cache
        # itself -- every write phase ends with fsync inside its time, and the files
        # are evicted (checked with mincore) before every read phase; when it cannot
        # evict, the parser's warning says so.
        return 0

    def expected_output(self, p):
        """The kernel's files (``--keep``); the compound and conversion paths' at least
        every rank's records of 4 bytes or more."""
        data = p['path'].startswith(('compound-', 'convert-'))
        return proof.Expectation((proof.FileSet(
            "h5paths' files", 'h5p_*',
            min_total=p['elements'] * self.num_tasks * 4 if data else 1),))

    def perf_table(self):
        return {f'{phase}_{metric}': (phase, metric, unit)
                for phase in h5paths.PHASES[self.benchmark[0]]
                for metric, unit in ((('bw', 'MiB/s') if phase in h5paths.DATA_PHASES
                                      else ('ops_per_s', '1/s')), ('time', 's'))}

    @run_before('sanity')
    def skip_what_the_build_cannot_run(self):
        """A path the HDF5 build lacks (the kernel's exit-2 line) is a skip, not a FAIL."""
        line = h5paths.unavailable(self.read_outputs())
        self.skip_if(line is not None, line)

    @sanity_function
    def validate(self):
        return sn.all([
            super().validate(),
            sn.assert_false(self.file_problems(), msg='files on disk: {0}'),
        ])

    @deferrable
    def file_problems(self):
        return '; '.join(h5paths.check_files(self.parsed_run(), self.written_files()))


@rfm.simple_test
class h5paths_check(h5paths_base):
    """The kernel as the Spack environment installed it, per HDF5 build."""


@rfm.simple_test
class h5paths_build_check(BuiltByFixture, h5paths_base):
    """The kernel built from this tree when the Spack manifest has none."""

    tool_build = fixture(build_h5paths, scope='environment')
    hdf5_build = parameter([tools.PATH_BUILD], inherit_params=False, loggable=True)
