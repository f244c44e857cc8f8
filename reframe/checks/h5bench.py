"""h5bench 1.6 run directly under ReFrame's launcher: write, read, exerciser, metadata.

The checks write each benchmark's configuration file into the stage directory and
run the binary on it (``h5bench_write <cfg> <file.h5>``), not through h5bench's
Python runner, so ReFrame's launcher, node layout and MPI-IO settings apply.

``h5bench_write_check`` covers h5bench's supported write patterns (one row each):
1D and 2D with every MEM_PATTERN x FILE_PATTERN of {CONTIG, INTERLEAVED}, 3D
CONTIG/CONTIG and 1D CONTIG to STRIDED, all collective (COLLECTIVE_DATA and
COLLECTIVE_METADATA); then 1D independent, 2D compressed (COMPRESS with chunk
dimensions), and 1D with SUBFILING and in ASYNC mode; 1D with collective data and
independent metadata and the other way round; ``h5bench_write_var_normal_dist`` (each
rank's particle count drawn from a normal law, STDEV_DIM_1; its printed size is rank 0's
x ranks, which the parser corrects); and ASYNC with IO_MEM_LIMIT and with
DELAYED_CLOSE_TIMESTEPS. SUBFILING and ASYNC run only where the HDF5 build has them and
are skipped with the reason otherwise.

``h5bench_read_check`` covers the supported read patterns: FULL for 1D, 2D, 3D;
PARTIAL and STRIDED for 1D; PRL, RDC, LDC and CS for 2D (h5bench reads those on
rank 0 only, so they run one rank), and 1D FULL and PARTIAL read independently. A read needs the file its write made: each read
test runs, in one job, the write test's configuration for its pattern, drops the page
cache (when permitted, else the read figures are labelled as cached), then reads.
One job keeps the file's life inside the test's data directory, which the suite's
trap removes whatever happens; a write phase that fails fails the read test with
the write's message.

Sizes: particles per rank scale with the partition's ``size_factor`` (4 Mi
particles, 128 MiB per rank and time step, at 1.0; 2D and 3D use the square and
cube closest to it). h5bench's "MB" is MiB; the parser normalises.

Each ``h5bench_*_check`` runs the h5bench of each HDF5 build of the Spack manifest
(else of PATH). Its ``h5bench_*_build_check`` twin runs the same rows with h5bench
built by a fixture (:class:`h5regress.h5benchbase.build_h5bench`, once for all four) from
the commit ``spack-env/spack.yaml`` pins, against the partition's HDF5, when there is
no manifest and the binary is not on PATH; the prebuilt check then skips naming it.
h5bench forces a Debug build (no optimisation); the fixture builds it optimised
(``Release``) and the records say so (``tool_build_type``, ``tool_build_flags``).
"""

import ctypes
import glob
import math
import os
import shlex
import subprocess

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, variable

from h5regress import proof, tools
from h5regress.builds import Prebuilt, build_check
from h5regress.durability import WRITE_FLUSH
from h5regress.manifest import wrapped_tool
from h5regress.parsers import RunFailed
from h5regress.parsers import h5bench as h5bench_parser
from h5regress.probe import ldd, linked_hdf5
from h5regress.h5benchbase import (ASYNC_VOL_CONNECTOR, async_run, async_run_problem,
                                   build_h5bench, h5bench_base, h5bench_exerciser_base,
                                   h5bench_metadata_base)

#: particles per rank at ``size_factor`` 1.0 (32 B each: 128 MiB per rank and time step)
BASE_PARTICLES = 4 * 1024 ** 2
#: fewest particles per rank the scaling goes down to
MIN_PARTICLES = 16 * 1024
#: bytes per particle h5bench writes (8 four-byte fields)
PARTICLE_BYTES = 32
#: compute-time units h5bench reads correctly (minutes are mis-converted by 1.6)
TIME_UNITS = ('s', 'ms', 'us')

DATA_FILE = 'h5bench.h5'
WRITE_CFG, WRITE_CSV = 'write.cfg', 'write.csv'
READ_CFG, READ_CSV = 'read.cfg', 'read.csv'
#: the write phase of a read test keeps its own stdout/stderr
WRITE_OUT, WRITE_ERR = 'h5bench-write.out', 'h5bench-write.err'
#: what the parser reads of one execution: its stdout, stderr, configuration and CSV
WRITE_FILES = ['stdout', 'stderr', WRITE_CFG, WRITE_CSV]
READ_FILES = ['stdout', 'stderr', READ_CFG, READ_CSV]
WRITE_PHASE_FILES = [WRITE_OUT, WRITE_ERR, WRITE_CFG, WRITE_CSV]


#: what an h5bench built without subfiling support prints when asked for it
NO_SUBFILING_MESSAGE = b'HDF5 version does not support SUBFILING'


def subfiling_support(binary: str) -> str | None:
    """Why the HDF5 that ``binary`` loads cannot do SUBFILING, or None when it can."""
    binary = wrapped_tool(binary)
    lib, version = linked_hdf5(ldd(binary))
    if not lib:
        return f'{binary} is not linked with a shared libhdf5 ({version})'
    try:
        numbers = tuple(int(x) for x in version.split('.'))
    except ValueError:
        return f'cannot tell the version of {lib} ({version})'
    if numbers < (1, 14):
        return (f'SUBFILING needs HDF5 >= 1.14 built with the subfiling VFD; {binary} loads '
                f'HDF5 {version} ({lib})')
    try:
        has_vfd = hasattr(ctypes.CDLL(lib), 'H5Pset_fapl_subfiling')
    except OSError as err:
        return f'cannot load {lib}: {err}'
    if not has_vfd:
        return (f'HDF5 {version} ({lib}) was built without the subfiling VFD '
                '(no H5Pset_fapl_subfiling)')
    # h5bench compiles its SUBFILING support in only when its CMake found the VFD's
    # header; without it the binary carries the message it refuses the option with
    with open(binary, 'rb') as fp:
        if NO_SUBFILING_MESSAGE in fp.read():
            return (f'{binary} was built without SUBFILING support (its CMake did not '
                    f'detect the subfiling VFD of HDF5 {version})')
    return None


def async_connector(binary: str, plugin_path: str) -> tuple[str | None, str]:
    """(why ASYNC cannot run or None, the plugin directory holding libh5async).

    h5bench reports ASYNC only when built with the connector (``-DWITH_ASYNC_VOL=ON``,
    which links ``libasynchdf5``), and HDF5 loads the connector from the plugin path.
    """
    binary = wrapped_tool(binary)
    try:
        linked = subprocess.run(['ldd', binary], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        return f'cannot inspect {binary}: {err}', ''
    if 'async' not in linked:
        return (f'{binary} was built without the async VOL connector (h5bench '
                '-DWITH_ASYNC_VOL=ON links libasynchdf5)'), ''
    dirs = [d for d in plugin_path.split(':') if d]
    found = next((d for d in dirs if glob.glob(os.path.join(d, 'libh5async*.so*'))), '')
    if not found:
        return (f'the HDF5 async VOL connector (libh5async) is not in HDF5_PLUGIN_PATH '
                f'({plugin_path or "unset"}): install hdf5-vol-async and set the '
                "partition's extras.hdf5_plugin_path or HDF5_PLUGIN_PATH"), ''
    return None, found


def pattern_dims(num_dims: int, particles: int) -> list[int]:
    """DIM_1..DIM_3 holding about ``particles`` (1D exact, 2D square, 3D cube)."""
    if num_dims == 1:
        return [particles, 1, 1]
    if num_dims == 2:
        side = math.isqrt(particles)
        return [side, side, 1]
    side = max(1, round(particles ** (1 / 3)))
    return [side, side, side]


class h5bench_pattern_base(h5bench_base):
    """The write and read checks: sizes, time steps, the configuration file."""

    #: Particles per rank (DIM_1 x DIM_2 x DIM_3 before rounding 2D/3D to a square/cube).
    #:
    #: :type: int
    #: :default: ``0``: 4 Mi scaled by the partition's ``size_factor`` (at least 16 Ki)
    particles_per_rank = variable(int, value=0)

    #: Time steps (TIMESTEPS): each writes (or reads) every particle once.
    #:
    #: :type: int
    #: :default: ``3``
    timesteps = variable(int, value=3)

    #: Emulated compute time per time step with its unit (EMULATED_COMPUTE_TIME_PER_TIMESTEP):
    #: ``s``, ``ms`` or ``us``; h5bench 1.6 misreads minutes, so they are refused.
    #:
    #: :type: str
    #: :default: ``'10 ms'``
    compute_time = variable(str, value='10 ms')

    #: Chunk dimensions of compressed rows, one per data dimension (CHUNK_DIM_1..3).
    #:
    #: :type: list of int
    #: :default: ``[]``: a quarter of each data dimension
    chunk_dims = variable(typ.List[int], value=[])

    #: Standard deviation of the particles per rank of the ``normal-dist`` row
    #: (STDEV_DIM_1 of h5bench_write_var_normal_dist: each rank draws its count from a
    #: normal law around DIM_1).
    #:
    #: :type: int
    #: :default: ``0``: a tenth of the particles per rank
    stdev_particles = variable(int, value=0)

    #: Memory bound of the ``async-mem-limit`` row in bytes (IO_MEM_LIMIT: what the async
    #: connector may hold of data not yet written; h5bench refuses a bound below a time step).
    #:
    #: :type: int
    #: :default: ``0``: two time steps of a rank
    io_mem_limit = variable(int, value=0)

    #: Time steps the ``async-delayed-close`` row keeps its datasets open before closing
    #: them (DELAYED_CLOSE_TIMESTEPS).
    #:
    #: :type: int
    #: :default: ``2``
    delayed_close_timesteps = variable(int, value=2)

    data_file = DATA_FILE

    def particles(self) -> int:
        if self.particles_per_rank:
            return self.particles_per_rank
        factor = float(self.current_partition.extras.get('size_factor', 1.0))
        return max(MIN_PARTICLES, int(BASE_PARTICLES * factor))

    def pattern_config(self, num_dims: int, mem: str, file: str, io: str) -> dict[str, str]:
        """h5bench_write's KEY=VALUE settings of one write pattern (no MODE: see ASYNC)."""
        number, _, unit = self.compute_time.partition(' ')
        if unit.strip() not in TIME_UNITS or not number.strip().isdigit():
            raise ValueError(f'{type(self).__name__}.compute_time={self.compute_time!r}: '
                             f'give a whole number and one of {", ".join(TIME_UNITS)} '
                             '(h5bench 1.6 misreads minutes)')
        dims = pattern_dims(num_dims, self.particles())
        # h5bench refuses collective data buffering through the subfiling VFD
        collective = 'NO' if io in ('independent', 'subfiling') else 'YES'
        data, metadata = {'collective-data': ('YES', 'NO'),
                          'collective-metadata': ('NO', 'YES')}.get(io, (collective, collective))
        cfg = {
            'MEM_PATTERN': mem, 'FILE_PATTERN': file, 'TIMESTEPS': str(self.timesteps),
            'COLLECTIVE_DATA': data, 'COLLECTIVE_METADATA': metadata,
            'EMULATED_COMPUTE_TIME_PER_TIMESTEP': self.compute_time,
            'NUM_DIMS': str(num_dims),
            'DIM_1': str(dims[0]), 'DIM_2': str(dims[1]), 'DIM_3': str(dims[2]),
        }
        if file == 'STRIDED':
            # (STRIDE_SIZE + BLOCK_SIZE) * BLOCK_CNT must fit in DIM_1
            cfg.update(STRIDE_SIZE='2', BLOCK_SIZE='2', BLOCK_CNT=str(dims[0] // 4))
        if io == 'compress':
            chunks = list(self.chunk_dims) or [max(1, d // 4) for d in dims[:num_dims]]
            cfg['COMPRESS'] = 'YES'
            for i, size in enumerate(chunks[:num_dims] + [1] * (3 - num_dims)):
                cfg[f'CHUNK_DIM_{i + 1}'] = str(size)
        if io == 'subfiling':
            cfg['SUBFILING'] = 'YES'
        if io == 'normal-dist':
            cfg['STDEV_DIM_1'] = str(self.stdev_particles or max(1, dims[0] // 10))
        if io == 'async-mem-limit':
            cfg['IO_MEM_LIMIT'] = str(self.io_mem_limit or
                                      2 * math.prod(dims) * PARTICLE_BYTES)
        if io == 'async-delayed-close':
            cfg['DELAYED_CLOSE_TIMESTEPS'] = str(self.delayed_close_timesteps)
        return cfg

    @staticmethod
    def cfg_text(cfg: dict[str, str]) -> str:
        return ''.join(f'{k}={v}\n' for k, v in cfg.items())

    def write_cfg(self, name: str, cfg: dict[str, str], csv: str) -> None:
        with open(os.path.join(self.stagedir, name), 'w') as fp:
            fp.write(self.cfg_text({**cfg, 'CSV_FILE': csv}))

    #: the configuration file and CSV of the measured execution
    cfg_name, csv_name = WRITE_CFG, WRITE_CSV

    def row_config(self) -> tuple[dict[str, str], dict[str, object]]:
        """h5bench's KEY=VALUE settings of the row, and the row's own parameters (its
        I/O and mode); each pattern check defines it."""
        raise NotImplementedError

    def row_params(self):
        """The settings as h5bench's parser reads them, the row's I/O and mode."""
        self.cfg, extra = self.row_config()
        return {**h5bench_parser.parse_cfg(self.cfg_text(self.cfg)), 'benchmark': self.kind,
                **extra}

    def row_options(self, p):
        return [f'{k}={v}' for k, v in self.cfg.items()]

    def command_options(self):
        return [self.cfg_name, os.path.join(self.data_dir, DATA_FILE)]

    def row_data_bytes(self, p):
        return (math.prod(int(self.cfg[f'DIM_{i}']) for i in (1, 2, 3)) *
                PARTICLE_BYTES * self.timesteps * self.num_tasks)

    def perf_table(self):
        op = self.kind
        return {f'{op}_raw_rate': (op, 'raw_rate', 'MiB/s'),
                f'{op}_observed_rate': (op, 'observed_rate', 'MiB/s'),
                f'{op}_metadata_time': (op, 'metadata_time', 's'),
                f'{op}_size': (op, 'size', 'B')}

    def expected_output(self, p):
        """The data file (and the subfiling VFD's ``<file>.subfile_*`` beside it) with
        every rank's particles of every time step; less where the row writes less
        (compressed, strided, or particles drawn per rank)."""
        exact = self.cfg.get('COMPRESS') != 'YES' and 'STDEV_DIM_1' not in self.cfg and \
            self.cfg['FILE_PATTERN'] != 'STRIDED'
        return proof.Expectation((proof.FileSet(
            "h5bench's data file", f'{DATA_FILE}*',
            min_total=self.row_data_bytes(p) if exact else 1),))

    @run_after('setup')
    def write_config_file(self):
        self.write_cfg(self.cfg_name, self.cfg, self.csv_name)

    def use_async(self) -> None:
        """ASYNC mode: the async VOL connector as h5bench's documentation sets it
        (``HDF5_VOL_CONNECTOR``, ``HDF5_PLUGIN_PATH``). From the Spack manifest, the
        build's h5bench built with the connector against the thread-safe HDF5 of the
        same commit; from PATH, the partition's plugin directory. Skipped, saying why,
        without the connector."""
        try:
            run = async_run(self.resolved_tool)
        except tools.ToolNotFound as err:
            self.skip_because(str(err))
        if run is not None:
            self.resolved_tool, self.executable = run.tool, run.tool.path
            self.env_vars.update({k: shlex.quote(v) for k, v in run.env_vars.items()})
            self.tool_provenance = {**self.tool_provenance, **run.provenance}
        else:
            extras = self.current_partition.extras
            plugin_path = extras.get('hdf5_plugin_path') or os.environ.get('HDF5_PLUGIN_PATH', '')
            why, directory = async_connector(self.executable, plugin_path)
            self.skip_because(why)
            self.env_vars['HDF5_PLUGIN_PATH'] = directory
            self.env_vars['HDF5_VOL_CONNECTOR'] = shlex.quote(ASYNC_VOL_CONNECTOR)
            self.tool_provenance = {**self.tool_provenance, 'async_vol_connector': 'async',
                                    'async_vol_connector_library': directory}
        # the connector's background thread needs MPI_THREAD_MULTIPLE
        self.env_vars['MPICH_MAX_THREAD_SAFETY'] = 'multiple'


class h5bench_write_base(h5bench_pattern_base):
    #: (dimensions, MEM_PATTERN, FILE_PATTERN, I/O): h5bench's supported write patterns,
    #: then collective/independent, compression, subfiling and ASYNC on 1D/2D CONTIG.
    benchmark = parameter([
        (1, 'CONTIG', 'CONTIG', 'collective'),
        (1, 'CONTIG', 'INTERLEAVED', 'collective'),
        (1, 'INTERLEAVED', 'CONTIG', 'collective'),
        (1, 'INTERLEAVED', 'INTERLEAVED', 'collective'),
        (2, 'CONTIG', 'CONTIG', 'collective'),
        (2, 'CONTIG', 'INTERLEAVED', 'collective'),
        (2, 'INTERLEAVED', 'CONTIG', 'collective'),
        (2, 'INTERLEAVED', 'INTERLEAVED', 'collective'),
        (3, 'CONTIG', 'CONTIG', 'collective'),
        (1, 'CONTIG', 'STRIDED', 'collective'),
        (1, 'CONTIG', 'CONTIG', 'independent'),
        (2, 'CONTIG', 'CONTIG', 'compress'),
        (1, 'CONTIG', 'CONTIG', 'subfiling'),
        (1, 'CONTIG', 'CONTIG', 'async'),
        # collective data with independent metadata, and the other way round
        (1, 'CONTIG', 'CONTIG', 'collective-data'),
        (1, 'CONTIG', 'CONTIG', 'collective-metadata'),
        # h5bench_write_var_normal_dist: particles per rank from a normal law (STDEV_DIM_1)
        (1, 'CONTIG', 'CONTIG', 'normal-dist'),
        # ASYNC with a memory bound (IO_MEM_LIMIT), and with delayed dataset closes
        (1, 'CONTIG', 'CONTIG', 'async-mem-limit'),
        (1, 'CONTIG', 'CONTIG', 'async-delayed-close'),
    ], fmt=lambda row: f'{row[0]}D-{row[1]}-{row[2]}-{row[3]}', loggable=True)

    binary = 'h5bench_write'
    kind = 'write'
    output_files = WRITE_FILES

    #: Time limit of the ASYNC rows. The async VOL connector 1.7 can deadlock: at the
    #: file's creation (a task it never started; the environment's build is patched for
    #: it) and, seen once since, between a group create waiting for the application's
    #: lock on one rank and a collective on the other (spack-env/README.md). A row runs
    #: for seconds; past the limit its job is killed and the row fails, naming the limit.
    #:
    #: :type: str or None
    #: :default: ``'5m'``; ``None``: the partition's
    async_time_limit = variable(str, type(None), value='5m')

    @run_after('init')
    def limit_async_rows(self):
        if self.benchmark[3].startswith('async') and self.async_time_limit is not None:
            self.time_limit = self.async_time_limit

    @run_after('init')
    def normal_dist_binary(self):
        if self.benchmark[3] == 'normal-dist':
            self.binary = 'h5bench_write_var_normal_dist'

    def row_config(self):
        dims, mem, file, io = self.benchmark
        if io == 'subfiling':
            why = subfiling_support(self.executable)
            self.skip_because(why)
        if io.startswith('async'):
            self.use_async()
        return (self.pattern_config(dims, mem, file, io),
                {'io': io, 'mode': 'ASYNC' if io.startswith('async') else 'SYNC'})

    def parse_output(self, files):
        run = super().parse_output(files)
        if self.benchmark[3].startswith('async'):
            why = async_run_problem(files.get('stdout', ''), str(run.params.get('mode', '')))
            if why:
                raise RunFailed(why)
        return run


class h5bench_read_base(h5bench_pattern_base):
    #: (dimensions, READ_OPTION[, I/O]): h5bench's supported read patterns, collective
    #: unless the row says ``independent``. The file is written
    #: first with the matching write pattern (CONTIG/STRIDED for STRIDED, else CONTIG/CONTIG).
    benchmark = parameter([
        (1, 'FULL'), (2, 'FULL'), (3, 'FULL'),
        (1, 'PARTIAL'), (1, 'STRIDED'),
        (2, 'PRL'), (2, 'RDC'), (2, 'LDC'), (2, 'CS'),
        # independent reads (COLLECTIVE_DATA and COLLECTIVE_METADATA NO; the file written
        # the same way); the rows above read collectively
        (1, 'FULL', 'independent'), (1, 'PARTIAL', 'independent'),
    ], fmt=lambda row: '-'.join([f'{row[0]}D', *row[1:]]), loggable=True)

    binary = 'h5bench_read'
    kind = 'read'
    cfg_name, csv_name = READ_CFG, READ_CSV
    output_files = READ_FILES + WRITE_PHASE_FILES

    #: READ_OPTIONs h5bench reads on rank 0 only
    SINGLE_RANK = ('PRL', 'RDC', 'LDC', 'CS')

    def row_config(self):
        dims, option, io = (*self.benchmark, 'collective')[:3]
        if option in self.SINGLE_RANK:
            # h5bench reads these on rank 0 only: one rank writes and reads
            self.skip_if(self.num_nodes != 1, f'READ_OPTION={option} runs on one rank')
            self.num_tasks = self.num_tasks_per_node = 1
        file_pattern = 'STRIDED' if option == 'STRIDED' else 'CONTIG'
        write = self.pattern_config(dims, 'CONTIG', file_pattern, io)
        read = {**write, 'READ_OPTION': option}
        d1, d2 = int(write['DIM_1']), int(write['DIM_2'])
        if option == 'PARTIAL':
            read['TO_READ_NUM_PARTICLES'] = str(d1 // 2)
        if option in ('PRL', 'RDC', 'LDC', 'CS'):
            # PRL/RDC/LDC want blocks of 1/10 to 1/5 of each dimension
            read.update(BLOCK_SIZE=str(d1 // 8), BLOCK_SIZE_2=str(d2 // 8))
        if option == 'CS':
            # the cross stencil steps diagonally; h5bench wants STRIDE_SIZE_2 < STRIDE_SIZE
            read.update(STRIDE_SIZE=str(d1 // 4), STRIDE_SIZE_2=str(d2 // 5))
        self.write_cfg(WRITE_CFG, write, WRITE_CSV)
        return read, {'mode': 'SYNC'}

    @run_after('setup')
    def set_write_phase(self):
        """The write phase that makes the file read, then the page cache dropped."""
        try:
            writer = self.companion_binary('h5bench_write')
        except tools.ToolNotFound as err:
            self.skip_because(f'the write phase: {err}')
        # the write phase, its own output kept apart; then the page cache goes
        self.write_command = self.launch_command([WRITE_CFG, self.executable_opts[1]],
                                                 executable=writer)
        self.prerun_cmds = [
            f'{self.write_command} > {WRITE_OUT} 2> {WRITE_ERR}; h5r_write_rc=$?',
            self.drop_caches_command(),
        ]
        self.postrun_cmds = ['[ "$h5r_write_rc" -eq 0 ] || h5r_rc=$h5r_write_rc']

    def parse_output(self, files):
        """The write phase must have succeeded; the run is the read phase, its figures
        labelled as cached unless the page cache was dropped (each rank reads back what
        it wrote, on the node it wrote it from)."""
        try:
            write = self.phase(files, WRITE_PHASE_FILES, 'write', self.write_command)
        except RunFailed as err:
            raise RunFailed(f'write phase (which makes the file read): {err}') from None
        read = self.phase(files, READ_FILES, 'read', self.launch_command(self.executable_opts))
        self.label_cache(read, files.get('stdout', ''))
        read.measurements += write.measurements
        # the write phase's figures keep what they include (observed: H5Fflush)
        read.provenance[WRITE_FLUSH] = write.provenance.get(WRITE_FLUSH, {})
        return read


# ------------------------------------------------------------------ prebuilt and built

@rfm.simple_test
class h5bench_write_check(Prebuilt, h5bench_write_base):
    """h5bench_write as the Spack environment installed it, per HDF5 build (else PATH)."""


@rfm.simple_test
class h5bench_read_check(Prebuilt, h5bench_read_base):
    """h5bench_read (and h5bench_write) as the Spack environment installed them."""


@rfm.simple_test
class h5bench_exerciser_check(Prebuilt, h5bench_exerciser_base):
    """h5bench_exerciser as the Spack environment installed it."""


@rfm.simple_test
class h5bench_metadata_check(Prebuilt, h5bench_metadata_base):
    """h5bench_hdf5_iotest as the Spack environment installed it."""


# the *_build_check twins (h5bench_write_build_check, ...): h5bench built by the fixture
# once per partition and environment, optimised, when nothing provides it
for _base, _doc in (
        (h5bench_write_base, 'h5bench_write built by the fixture, when nothing provides it.'),
        (h5bench_read_base, 'h5bench_read and h5bench_write built by the fixture, when '
                            'nothing provides them.'),
        (h5bench_exerciser_base, 'h5bench_exerciser built by the fixture, when nothing '
                                 'provides it.'),
        (h5bench_metadata_base, 'h5bench_hdf5_iotest built by the fixture, when nothing '
                                'provides it.')):
    build_check(_base, __name__, _doc, tool_build=fixture(build_h5bench, scope='environment'))
