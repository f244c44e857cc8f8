"""MACSio: multi-physics dump I/O through the HDF5 plugin, with miftmpl as the baseline.

One row of ``benchmark`` is (interface, parallel file mode, HDF5 I/O, compression):

- ``miftmpl`` writes JSON text without HDF5: the baseline the HDF5 rows are held against;
- ``MIF`` writes ``mif_file_count`` files per dump, ranks taking turns within a file
  (MACSio's ``MIF N``); ``MIFFPP`` one file per rank and dump; ``SIF`` one shared file
  per dump through MPI-IO;
- the HDF5 plugin's ``--no_collective`` only matters in SIF mode, so only SIF rows say
  ``collective``/``independent``;
- compression goes through HDF5 filters, which parallel HDF5 only applies to collective
  writes: compressed SIF is collective only (MIF files are written by one rank at a time).

MACSio writes ``macsio-log.log`` and ``macsio-timings.log`` into the stage directory
and nothing to stdout; its data go to ``--filebase`` in the test's data directory. Its
exit code lies (a missing directory exits 0 with a plausible bandwidth), so sanity is
the log as :mod:`h5regress.parsers.macsio` reads it plus the files the run actually
left (:func:`h5regress.parsers.macsio.check_files`).

MACSio never flushes what it writes: its own bandwidths are how fast it hands data to
the page cache (``write_flush: none``). After it ends, the job fsyncs every file it left
and times that (:mod:`h5regress.flush`): ``flush time``, and ``write bw_flushed`` =
MACSio's bytes / (its time + the flush), the figure that includes getting the data to
storage (``write_flush: fsync``) and the one the nightly gates.

``macsio_check`` runs the MACSio of each HDF5 build of the Spack manifest (else of
PATH); ``macsio_build_check`` the same rows with MACSio built by a fixture
(:class:`build_macsio` below, on json-cwx from its own fixture) from the
commits ``spack-env/spack.yaml`` pins, when there is no manifest and no ``macsio`` on
PATH; ``macsio_check`` then skips naming it.
"""

import os
import shlex
import sys

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_after, run_before, variable

from h5regress import flush, presets, proof
from h5regress.builds import Prebuilt, ToolBuild, build_check
from h5regress.checkbase import HDF5Benchmark, shell_word
from h5regress.durability import FSYNC, WRITE_FLUSH
from h5regress.parsers import Measurement, RunFailed
from h5regress.parsers.base import MIB
from h5regress.parsers import macsio as macsio_parser

#: ``--part_size`` at ``size_factor`` 1.0 (bytes per variable of a mesh part)
BASE_PART_SIZE = 2 * 1024 ** 2
#: smallest part size the scaling goes down to: below it per-file and per-dataset
#: overheads are all a run measures
MIN_PART_SIZE = 256 * 1024


class build_json_cwx(ToolBuild):
    """json-cwx, MACSio's JSON library: ``autogen.sh``, configure, make, make install."""

    package = 'json-cwx'
    products = {'libjson-cwx': 'install/lib/libjson-cwx.a',
                'json.h': 'install/include/json-cwx/json.h'}
    main_source = 'json_object.c'
    uses_hdf5 = False
    # Spack's recipe builds it serially
    build_jobs = 1
    build_system = 'Autotools'

    @run_before('compile')
    def configure(self):
        self.prebuild_cmds += ['cd json-cwx/json-cwx', './autogen.sh']
        # static: MACSio must not load it from this stage directory, which goes
        # once MACSio is built
        self.build_system.config_opts = [f'--prefix={self.install_prefix}',
                                         '--disable-shared']
        self.build_system.build_opts = ['V=1']
        self.postbuild_cmds = ['make install'] + self.postbuild_cmds

    @property
    def install_prefix(self) -> str:
        return os.path.join(self.stagedir, 'install')


class build_macsio(ToolBuild):
    """MACSio with its HDF5 plugin (CMake), on json-cwx built by its own fixture."""

    json_cwx = fixture(build_json_cwx, scope='environment')

    package = 'macsio'
    products = {'macsio': 'macsio/build/macsio/macsio'}
    main_source = 'macsio_main.c'
    build_type = 'Release'
    build_system = 'CMake'

    @run_before('compile')
    def configure(self):
        self.prebuild_cmds += ['cd macsio']
        self.build_system.builddir = 'build'
        opts = [f'-DCMAKE_BUILD_TYPE={self.build_type}', '-DENABLE_SILO_PLUGIN=OFF',
                '-DENABLE_HDF5_PLUGIN=ON',
                # MACSio's FindHDF5 looks under the prefix; the found files are given too
                f'-DHDF5_INCLUDE_DIRS={self.hdf5.include_dir}',
                f'-DHDF5_LIBRARIES={self.hdf5.library}',
                f'-DWITH_JSON-CWX_PREFIX={self.json_cwx.install_prefix}',
                f'-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath,{self.hdf5.lib_dir}']
        if self.hdf5.prefix:
            opts.append(f'-DWITH_HDF5_PREFIX={self.hdf5.prefix}')
        self.build_system.config_opts = [shlex.quote(o) for o in opts]
        self.build_system.build_opts = ['VERBOSE=1']

    def provenance(self) -> dict:
        prov = super().provenance()
        dep = self.json_cwx.provenance()
        prov['tool_dependencies'] = {
            'json-cwx': {k.replace('tool_', ''): v for k, v in dep.items()}}
        return prov


class macsio_base(HDF5Benchmark):
    #: (interface, parallel file mode, SIF collective/independent, compression)
    benchmark = parameter([
        ('miftmpl', 'MIF', '', ''),
        ('miftmpl', 'MIFFPP', '', ''),
        ('hdf5', 'MIF', '', ''),
        ('hdf5', 'MIFFPP', '', ''),
        ('hdf5', 'SIF', 'collective', ''),
        ('hdf5', 'SIF', 'independent', ''),
        ('hdf5', 'SIF', 'collective', 'gzip'),
        ('hdf5', 'MIF', '', 'gzip'),
    ], fmt=lambda row: '-'.join(f for f in row if f), loggable=True)

    #: Bytes of each variable of a mesh part (MACSio ``--part_size``), e.g. ``2M``.
    #:
    #: :type: str
    #: :default: ``''``: 2 MiB scaled by the partition's ``size_factor`` (at least 256 KiB)
    part_size = variable(str, value='')

    #: Average number of mesh parts per rank (``--avg_num_parts``).
    #:
    #: :type: float
    #: :default: ``1.0``
    avg_num_parts = variable(float, value=1.0)

    #: Variables per mesh part (``--vars_per_part``).
    #:
    #: :type: int
    #: :default: ``20`` (MACSio's own)
    vars_per_part = variable(int, value=20)

    #: Dumps per run (``--num_dumps``); every dump is one per-dump bandwidth sample.
    #:
    #: :type: int
    #: :default: ``4``
    num_dumps = variable(int, value=4)

    #: Files per dump in ``MIF`` mode (``--parallel_file_mode MIF N``).
    #:
    #: :type: int
    #: :default: ``0``: half the ranks (at least 1), so ranks share files in turns
    mif_file_count = variable(int, value=0)

    #: Parameters of the compression algorithm of compressed rows (MACSio
    #: ``--compression ALGORITHM PARAMS``; gzip takes ``level=1..9``).
    #:
    #: :type: str
    #: :default: ``'level=1'``
    compression_params = variable(str, value='level=1')

    tool = 'macsio'
    output_files = [macsio_parser.LOG_NAME, macsio_parser.TIMINGS_NAME, 'stdout', 'stderr']

    def row_params(self):
        interface, mode, io, compression = self.benchmark
        factor = float(self.current_partition.extras.get('size_factor', 1.0))
        return {
            'interface': interface, 'parallel_file_mode': mode,
            'file_count': {'MIF': self.mif_file_count or max(1, self.num_tasks // 2),
                           'MIFFPP': None, 'SIF': 1}[mode],
            'part_size': (presets.parse_size(self.part_size, f'{type(self).__name__}.part_size')
                          if self.part_size else max(MIN_PART_SIZE, int(BASE_PART_SIZE * factor))),
            'avg_num_parts': self.avg_num_parts, 'vars_per_part': self.vars_per_part,
            'num_dumps': self.num_dumps,
            'collective': None if interface != 'hdf5' else io != 'independent',
            'compression': compression or None,
            'compression_params': self.compression_params if compression else None,
        }

    def row_options(self, p):
        files = self.num_tasks if p['file_count'] is None else p['file_count']
        return ['--interface', p['interface'], '--parallel_file_mode', p['parallel_file_mode'],
                str(files), '--part_size', str(p['part_size']),
                '--avg_num_parts', str(p['avg_num_parts']),
                '--vars_per_part', str(p['vars_per_part']), '--num_dumps', str(p['num_dumps'])]

    def plugin_options(self, p):
        """``--plugin_args`` and the HDF5 plugin's options (it takes everything after it)."""
        if p['interface'] != 'hdf5':
            return []
        # HDF5's error stack only reaches stderr with --show_errors
        return (['--plugin_args', '--show_errors'] + ['--no_collective'] * (not p['collective']) +
                (['--compression', p['compression'], p['compression_params']]
                 if p['compression'] else []))

    def run_options(self):
        # the log is circular, 64 lines per rank: make room for two lines per dump
        return ['--filebase', os.path.join(self.data_dir, 'macsio'),
                '--log_line_cnt', str(64 + 4 * self.num_dumps), '64']

    def row_data_bytes(self, p):
        return int(p['part_size'] * p['vars_per_part'] * p['avg_num_parts'] * self.num_tasks *
                   p['num_dumps'])

    def expected_output(self, p):
        """Its data files (``<filebase>_<hdf5|json>_...``) for every dump, holding at
        least 90 % of the mesh's bytes unless compressed."""
        tag = 'hdf5' if p['interface'] == 'hdf5' else 'json'
        data = 0 if p['compression'] else int(0.9 * self.row_data_bytes(p))
        return proof.Expectation((proof.FileSet(
            "MACSio's data files", f'macsio_{tag}_*', min_total=max(1, data)),))

    def perf_table(self):
        return {'write_bw': ('write', 'bw', 'MiB/s'),
                'write_bw_dump_min': ('write', 'bw_dump_min', 'MiB/s'),
                'write_bw_dump_max': ('write', 'bw_dump_max', 'MiB/s'),
                'flush_time': ('flush', 'time', 's'),
                'write_bw_flushed': ('write', 'bw_flushed', 'MiB/s')}

    @run_after('setup')
    def flush_after_the_run(self):
        """MACSio never flushes: once it has ended, fsync its files and time that
        (:mod:`h5regress.flush`), before the base lists them."""
        self.postrun_cmds = [f'{shlex.quote(sys.executable)} -m h5regress.flush '
                             f'{shell_word(self.data_dir)}'] + self.postrun_cmds

    @run_after('setup')
    def plugin_args_last(self):
        """Paths and logging go before ``--plugin_args``, which takes everything after it."""
        plugin = self.plugin_options(self.test_params)
        self.tool_options += plugin
        self.executable_opts += plugin

    def parse_output(self, files):
        """The log (with the command line) and the files left in the data directory."""
        run = macsio_parser.parse(files, command=self.launch_command(self.executable_opts))[0]
        problems = macsio_parser.check_files(run, self.written_files())
        if problems:
            raise RunFailed(f'{self.data_dir}: the data files do not match '
                            f'{macsio_parser.LOG_NAME}: ' + '; '.join(problems))
        return self.with_flush(run, files.get('stdout', ''))

    @staticmethod
    def with_flush(run, stdout: str):
        """``flush time`` (the fsync of the files after MACSio) and ``write bw_flushed``:
        MACSio's bytes over its own time plus that flush, a figure that includes getting
        the data to storage (``write_flush: fsync``; MACSio's own figures stay ``none``).
        The moments between MACSio's end and the flush (MPI's teardown) are in neither:
        the kernel's writeback during them shortens the flush."""
        flushed = flush.parse_line(stdout)
        if flushed is None:
            failed = next((line for line in stdout.splitlines()
                           if line.startswith(flush.FAILED_MARK)), 'no flush line in stdout')
            raise RunFailed(f'the flush of the files MACSio wrote failed: {failed}')
        seconds = flushed[0]
        size, time = run.measurement('write', 'size').value, run.measurement('write', 'time').value
        bw = size / MIB / (time + seconds)
        run.measurements += [Measurement('flush', 'time', seconds, 's', False, [seconds]),
                             Measurement('write', 'bw_flushed', bw, 'MiB/s', True, [bw])]
        run.provenance[WRITE_FLUSH] = {**run.provenance.get(WRITE_FLUSH, {}),
                                       'write bw_flushed': FSYNC}
        run.provenance['flushed_bytes'], run.provenance['flushed_files'] = flushed[1:]
        return run


@rfm.simple_test
class macsio_check(Prebuilt, macsio_base):
    """MACSio as the Spack environment installed it, per HDF5 build (else from PATH)."""


#: MACSio (and json-cwx) built once per partition and environment
build_check(macsio_base, __name__,
            'MACSio built by a fixture from the pinned commit, when nothing provides it.',
            tool_build=fixture(build_macsio, scope='environment'))
