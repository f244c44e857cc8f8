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
and at two file-format bounds, open/close also serially and warm; filtered and
partial chunks; virtual datasets; the external file cache (and its twin without the
cache); multi-dataset I/O; strided, irregular reads across deflate chunks with
conversion; the opening of a virtual dataset of many mappings; datasets flushed one
by one; a chunked dataset grown by H5Dset_extent and written step by step; point
selections (read, encoded, projected); multi-dataset I/O of chunked and filtered
datasets, also one collective transfer per chunk; storage layouts (compact,
external, filled, anonymous); variable-length strings and sequences; columns of a
2-D chunked dataset read through a chunk cache of few slots. Serial rows (the flush,
the storage layouts, variable-length data, the chunk cache, the serial open/close and
warm conversion reads) work in a file per rank through the sec2 driver. Data rows
have an MPI-IO twin (``api`` ``mpiio``: the same bytes through MPI-IO, the gate's
canary). A row the HDF5 build
cannot run (``multi-dataset`` before 1.14), or ran other than its name says (collective
metadata I/O asked and not done, by the kernel's counts of MPI-IO calls), is skipped
saying why.
"""

import os

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_after, run_before, variable

from h5regress import manifest, proof, tools
from h5regress.builds import BuiltByFixture, KernelBuild
from h5regress.checkbase import KernelBenchmark, shell_word
from h5regress.parsers import h5paths
from h5regress.parsers.h5paths_table import DATA_PHASES, MEMORY_PHASES, PATHS, Row

SUMMARY = 'h5paths.json'
#: the kernel's file driver plugin with vector callbacks, and where it is installed
#: under the kernel's prefix (kernels/h5paths/CMakeLists.txt)
VECTOR_VFD = 'h5r_vector'
VECTOR_VFD_DIR = os.path.join('lib', 'h5paths', 'vfd')


#: The rows, one line each: the fields a row does not name keep :class:`Row`'s defaults
#: (HDF5, collective, contiguous, libver earliest, cold reads, the EFC on).
ROWS = [
    # compound through each memory type, contiguous and chunked, collective
    Row('compound-same'),
    Row('compound-same', layout='chunked'),
    Row('compound-subset'),
    Row('compound-subset', layout='chunked'),
    Row('compound-superset'),
    Row('compound-superset', layout='chunked'),
    Row('compound-reorder'),
    Row('compound-reorder', layout='chunked'),
    # independent transfers for the subset and its no-conversion twin
    Row('compound-same', transfer='independent'),
    Row('compound-subset', transfer='independent'),
    # H5Pset_modify_write_buf on the writes that convert
    Row('compound-subset', modify_write_buf=True),
    Row('compound-superset', modify_write_buf=True),
    Row('compound-reorder', modify_write_buf=True),
    # atomic conversion on write and read
    Row('convert-none'),
    Row('convert-float-double'),
    Row('convert-endian'),
    # metadata: without and with collective metadata I/O, at two format bounds
    Row('many-datasets', nightly=True),
    Row('many-datasets', coll_metadata=True),
    Row('many-datasets', libver='v110'),
    Row('attributes', nightly=True),
    Row('attributes', coll_metadata=True),
    Row('attributes', libver='v110'),
    Row('open-close', nightly=True),
    # in the night: the kernel's counts skip it when HDF5 reads metadata on every rank
    # (HDFFV-11260, regressions/collective-metadata-1.10.5-hdffv-11260.yaml); 3.3 s a side
    Row('open-close', coll_metadata=True, nightly=True),
    Row('open-close', libver='v110'),
    # serially, a file per rank (sec2), warm: HDF5's own time of the opens and closes,
    # without MPI-IO's latency or the disk, which hid the 2019 fixes of
    # regressions/dataset-open-prefix-hdffv-10658.yaml and object-close-cork-taglist-2019.yaml
    Row('open-close', transfer='serial', read_cache='keep'),
    # filtered and partial chunks, virtual datasets, the external file cache and its twin
    # without it (--efc-size 0: every traversal opens and closes the file), multi-dataset
    Row('chunked-deflate', layout='chunked'),
    Row('partial-chunk', layout='chunked'),
    Row('vds'),
    Row('efc'),
    Row('efc', efc_cache=False),
    Row('multi-dataset'),
    # HDF5 issues 4481 and 4513: strided, irregular reads across deflate chunks through
    # floats; issue 5295: the time to open a virtual dataset of many mappings (not in the
    # night: beyond the night's other rows it executes one more regression-prone function)
    Row('strided-chunks', layout='chunked', nightly=True),
    Row('vds-open'),
    # issue 3084: datasets flushed one by one (H5Dflush; serial: a file per rank, sec2)
    Row('flush-datasets', nightly=True),
    # append: H5Dset_extent then a write, --objects steps
    Row('append', layout='chunked', nightly=True),
    # chosen from the regression-prone functions the night missed (h5regress coverage
    # prone; docs/corpus-and-coverage.md): point selections and their encoding (commits
    # a5ffedb8, 52276f37), multi-dataset I/O of chunked and filtered datasets (93754cae),
    # and, serially (sec2, a file per rank), storage layouts and variable-length data
    Row('point-selections', layout='chunked', nightly=True),
    Row('multi-chunk', layout='chunked', nightly=True),
    Row('storage-kinds', nightly=True),
    Row('vlen-strings', nightly=True),
    # HDF5 issue 1256: a file opened, its variable-length strings read, closed, again and
    # again in one process (serial, sec2); from 1.12.1 to 1.14.3 every cycle left a
    # conversion path behind (regressions/vlen-conversion-path-leak-1256.yaml): gated on
    # the peak memory, 4-6 s a side (ReFrame's time of the test, 2021 develop builds)
    Row('vlen-reopen', transfer='serial', nightly=True),
    # HDFFV-10601: columns read one by one through a chunk cache of fewer slots than chunks
    # along the fastest dimension, partial edge chunks (serial, deflate); in the night for
    # the case it catches (regressions/chunk-cache-hash-hdffv-10601.yaml), about 2 s a side
    Row('chunk-cache', transfer='serial', layout='chunked', nightly=True),
    # MPI-IO twins of the collective contiguous data rows (the canaries)
    Row('compound-same', api='mpiio'),
    Row('compound-subset', api='mpiio'),
    Row('compound-superset', api='mpiio'),
    Row('compound-reorder', api='mpiio'),
    Row('convert-none', api='mpiio'),
    Row('convert-float-double', api='mpiio'),
    Row('convert-endian', api='mpiio'),
    # warm reads (--read-cache keep): the conversion is most of the read's time; cold reads
    # bury a conversion regression in the disk (kernels/h5paths/README.md)
    Row('compound-same', read_cache='keep', nightly=True),
    Row('compound-subset', read_cache='keep', nightly=True),
    Row('compound-superset', read_cache='keep', nightly=True),
    Row('compound-reorder', read_cache='keep', nightly=True),
    Row('convert-none', read_cache='keep', nightly=True),
    Row('convert-float-double', read_cache='keep', nightly=True),
    Row('convert-endian', read_cache='keep', nightly=True),
    # the same warm reads serially, a file per rank (sec2): the conversion's own time,
    # without MPI-IO's, as HDF5's staff measure it (the subset and in-place superset cases,
    # the float <- double reads of issues 4481 and 4513; not in the night)
    Row('compound-subset', transfer='serial', read_cache='keep'),
    Row('compound-superset', transfer='serial', read_cache='keep'),
    Row('convert-float-double', transfer='serial', read_cache='keep'),
    # a strided write and read of a contiguous dataset through a file driver with vector
    # callbacks (the kernel's h5r_vector plugin, a site driver's stand-in): from HDF5
    # 3236fb79 on such a driver gets a vector of one entry per element instead of the
    # data sieve (regressions/vector-vfd-bypasses-sieve-clio-980.yaml); in the night for
    # the case it catches, about 7 s a side on builds that take the slow branch
    Row('strided-contiguous', transfer='serial', read_cache='keep', vfd=VECTOR_VFD, nightly=True),
]


def rows():
    """The table (:data:`ROWS`)."""
    return list(ROWS)


def row_driver(row, file_driver=''):
    """The file driver a row's runs ask HDF5 for (``HDF5_DRIVER``): the row's own, else
    ``file_driver`` on a serial row; ``''`` for HDF5's default."""
    row = Row(*row)
    return row.vfd or (file_driver if row.transfer == 'serial' else '')


def plugin_dir(kernel):
    """Where the kernel at ``kernel`` keeps its driver plugins: under its own prefix,
    also behind a wrapper (a coverage build's)."""
    kernel = manifest.wrapped_tool(kernel)
    return os.path.join(os.path.dirname(os.path.dirname(kernel)), VECTOR_VFD_DIR)


def row_name(row):
    """The row's name (:meth:`Row.name`): the reference files' ``case``."""
    return Row(*row).name()


def row_params(row, *, size_factor=1.0, chunk_elements, iterations):
    """The recorded parameters of a row, defaults included (shared with
    ``benchmarks/h5paths_noise.py``, which runs the rows without ReFrame)."""
    row = Row(*row)
    path = PATHS[row.path]
    size = {'elements': path.elements, 'objects': path.objects}
    size[path.work] = max(1, round(size[path.work] * size_factor))
    params = {'path': row.path, 'api': row.api, 'transfer': row.transfer,
              'layout': row.layout,
              'chunk_elements': (path.chunk_elements or chunk_elements)
                                if row.layout == 'chunked' else 0,
              'modify_write_buf': row.modify_write_buf, 'coll_metadata': row.coll_metadata,
              'libver': row.libver, 'elements': size['elements'], 'objects': size['objects'],
              'size_factor': size_factor, 'iterations': iterations,
              'read_cache': row.read_cache,
              'read_repeats': path.warm_read_repeats if row.read_cache == 'keep' else 1}
    if row.path == 'efc':
        # H5Pset_elink_file_cache_size: room for every linked file, or no cache
        params['efc_size'] = size['objects'] if row.efc_cache else 0
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


class h5paths_base(KernelBenchmark):
    #: A :class:`Row` of :data:`ROWS`: the code path and how it is driven.
    benchmark = parameter(ROWS, fmt=Row.name, loggable=True)

    #: Work of every row relative to its path's sizes (:data:`PATHS`): the records per
    #: rank of the data paths, the objects of the metadata paths (rounded, at least 1).
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

    #: ``HDF5_VOL_CONNECTOR`` of the runs: a site's VOL connector, its name and info
    #: string (e.g. HDF5's built-in ``pass_through under_vol=0;under_info={}``, one layer
    #: over the native format); a plugin's directory comes from the partition's or the
    #: job's ``HDF5_PLUGIN_PATH``. The kernel names the connector its files went through
    #: (a record parameter when not native) and a run through another one fails.
    #:
    #: :type: str
    #: :default: ``''``: the job's environment as it is
    vol_connector = variable(str, value='')

    #: ``HDF5_DRIVER`` of the serial rows (a row's own :attr:`Row.vfd` comes first): a
    #: site's file driver by name (a plugin's directory from the partition's or the job's
    #: ``HDF5_PLUGIN_PATH``), e.g. ``stdio``. The kernel names the driver its files went
    #: through (a record parameter when not sec2) and a run through another one fails.
    #:
    #: :type: str
    #: :default: ``''``: the row's driver, or HDF5's default (sec2)
    file_driver = variable(str, value='')

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
                for phase in PATHS[self.benchmark.path].phases
                for metric, unit in ((('bw', 'MiB/s') if phase in DATA_PHASES
                                      else ('ops_per_s', '1/s')), ('time', 's')) +
                ((('peak_rss', 'MiB'),) if phase in MEMORY_PHASES else ())}

    @run_before('run')
    def ask_for_the_vol_connector(self):
        if self.vol_connector:
            self.env_vars['HDF5_VOL_CONNECTOR'] = shell_word(self.vol_connector)

    @run_before('run')
    def ask_for_the_file_driver(self):
        """A row's file driver through HDF5's own ``HDF5_DRIVER``; the kernel's plugin
        from its install prefix (a build without it, HDF5 before 1.13.2 or a kernel
        before 1.10.0, skips the row)."""
        vfd = row_driver(self.benchmark, self.file_driver)
        if not vfd:
            return
        self.env_vars['HDF5_DRIVER'] = shell_word(vfd)
        if vfd == VECTOR_VFD:
            plugins = plugin_dir(self.executable)
            self.skip_if(not os.path.isfile(os.path.join(plugins, f'lib{vfd}.so')),
                         f'the kernel at {manifest.wrapped_tool(self.executable)} has no '
                         f'{vfd} plugin in '
                         f'{VECTOR_VFD_DIR} (HDF5 before 1.13.2, or a kernel before 1.10.0)')
            self.env_vars['HDF5_PLUGIN_PATH'] = shell_word(plugins)

    @run_before('sanity')
    def skip_what_the_build_cannot_run(self):
        """A row the HDF5 build cannot run as labelled is a skip, not a FAIL: a path it
        lacks (the kernel's exit-2 line), an option it did not apply, collective
        metadata I/O it did not do (:func:`h5paths.unavailable`)."""
        self.skip_because(h5paths.unavailable(self.read_outputs()))


@rfm.simple_test
class h5paths_check(h5paths_base):
    """The kernel as the Spack environment installed it, per HDF5 build."""

    @run_after('init')
    def tag_night_rows(self):
        """The night's rows (``-t nightly``): :attr:`Row.nightly`."""
        if Row(*self.benchmark).nightly:
            self.tags = self.tags | {'nightly'}


@rfm.simple_test
class h5paths_build_check(BuiltByFixture, h5paths_base):
    """The kernel built from this tree when the Spack manifest has none."""

    tool_build = fixture(build_h5paths, scope='environment')
    hdf5_build = parameter([tools.PATH_BUILD], inherit_params=False, loggable=True)
