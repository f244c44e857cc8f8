"""The bases of the h5bench checks (``reframe/checks/h5bench.py``) that are not its
write and read patterns: what every h5bench check shares, the exerciser's buffer-size
sweep and the metadata benchmark (``h5bench_hdf5_iotest``); h5bench's build fixture
(:class:`build_h5bench`) and how an ASYNC row runs (:func:`async_run`)."""

from __future__ import annotations

import dataclasses
import os
import shlex

from reframe.core.builtins import parameter, run_after, run_before, variable

from h5regress import manifest, proof, tools
from h5regress.builds import ToolBuild
from h5regress.checkbase import HDF5Benchmark, shell_word
from h5regress.parsers import ParsedRun, RunFailed
from h5regress.parsers import h5bench as h5bench_parser


class h5bench_base(HDF5Benchmark):
    """What every h5bench check shares: the tool name of its records, the references,
    the reference index, and parsing one execution of the benchmark."""

    tool = 'h5bench'

    #: h5bench benchmark the parser reads (``write``, ``read``, ``exerciser``, ``metadata``)
    kind = ''
    #: file the run leaves in the data directory, checked after each phase ('' for none)
    data_file = ''

    def phase(self, files: dict[str, str], names: list[str], kind: str,
              command: str) -> ParsedRun:
        """One h5bench execution from its stdout, stderr, cfg and CSV; its data file checked."""
        run = h5bench_parser.parse_benchmark({n: files[n] for n in names if n in files},
                                             '', kind, command)
        if self.data_file:
            written = self.written_files()
            # the subfiling VFD adds <data file>.subfile_* files next to it
            if not any(size for name, size in written.items()
                       if name.startswith(self.data_file)):
                raise RunFailed(f'{self.data_dir}: {kind} phase: no non-empty {self.data_file} '
                                'in the data directory (found: '
                                f'{", ".join(sorted(written)) or "nothing"})')
        return run

    def parse_output(self, files):
        return self.phase(files, self.output_files, self.kind,
                          self.launch_command(self.executable_opts))

    def run_in_data_dir(self, keep: tuple[str, ...] = ()) -> None:
        """Run in the data directory; the files in ``keep`` come back to the stage."""
        stage = shlex.quote(self.stagedir)
        self.prerun_cmds = [f'cd {shell_word(self.data_dir)}']
        self.postrun_cmds = [f'[ ! -e {shlex.quote(name)} ] || cp {shlex.quote(name)} {stage}/'
                             for name in keep] + [f'cd {stage}']


class h5bench_exerciser_base(h5bench_base):
    #: (dimensions, I/O): the exerciser's buffer-size sweep, collective or independent.
    benchmark = parameter([(2, 'collective'), (2, 'independent')],
                          fmt=lambda row: f'{row[0]}D-{row[1]}', loggable=True)

    #: Elements per dimension of the smallest buffer (``--minels``).
    #:
    #: :type: int
    #: :default: ``8``
    min_elements = variable(int, value=8)

    #: Buffer sizes swept (``--nsizes``); each is ``buffer_multiplier`` times the last
    #: in every dimension.
    #:
    #: :type: int
    #: :default: ``3``
    num_sizes = variable(int, value=3)

    #: Growth of each dimension between buffer sizes (``--bufmult``).
    #:
    #: :type: int
    #: :default: ``2``
    buffer_multiplier = variable(int, value=2)

    binary = 'h5bench_exerciser'
    kind = 'exerciser'
    output_files = ['stdout', 'stderr']

    def row_params(self):
        dims, io = self.benchmark
        return {'benchmark': 'exerciser', 'numdims': dims, 'io': io,
                'minels': self.min_elements, 'nsizes': self.num_sizes,
                'bufmult': self.buffer_multiplier,
                'dimranks': [self.num_tasks] + [1] * (dims - 1)}

    def row_options(self, p):
        dims = p['numdims']
        return (['--numdims', str(dims), '--minels'] + [str(p['minels'])] * dims +
                ['--nsizes', str(p['nsizes']), '--bufmult'] + [str(p['bufmult'])] * dims +
                ['--dimranks'] + [str(r) for r in p['dimranks']] +
                ['--indepio'] * (p['io'] == 'independent'))

    def perf_table(self):
        # bytes per rank of the double dataset at the largest buffer (the parser's key)
        largest = 8 * (self.min_elements * self.buffer_multiplier ** (self.num_sizes - 1)) \
            ** self.benchmark[0]
        return {'write_raw_rate': ('write', f'raw_rate_{largest}B', 'MiB/s'),
                'read_raw_rate': ('read', f'raw_rate_{largest}B', 'MiB/s'),
                'dataset_create_time': ('dataset_create', f'time_{largest}B', 's'),
                'file_open_time': ('file_open', f'time_{largest}B', 's')}

    def expected_output(self, p):
        """The exerciser removes the file it made in the data directory: the directory
        changed while it ran, and nothing is left."""
        return proof.Expectation(nothing_else=True, changed=True)

    @run_after('setup')
    def in_data_dir(self):
        # the exerciser makes (and removes) its file in the working directory
        self.run_in_data_dir()


class h5bench_metadata_base(h5bench_base):
    #: (dataset layout, MPI-IO mode) of h5bench_hdf5_iotest's many small datasets.
    benchmark = parameter([('contiguous', 'independent'), ('contiguous', 'collective'),
                           ('chunked', 'independent')],
                          fmt=lambda row: '-'.join(row), loggable=True)

    #: Time steps (``steps``).
    #:
    #: :type: int
    #: :default: ``20`` (h5bench's sample)
    steps = variable(int, value=20)

    #: Arrays (datasets) per step (``arrays``).
    #:
    #: :type: int
    #: :default: ``500`` (h5bench's sample)
    arrays = variable(int, value=500)

    #: Rows and columns of each rank's block of an array (``rows``, ``columns``).
    #:
    #: :type: int
    #: :default: ``2``
    block_side = variable(int, value=2)

    binary = 'h5bench_hdf5_iotest'
    kind = 'metadata'
    data_file = 'hdf5_iotest.h5'

    INI = 'hdf5_iotest.ini'
    CSV = 'hdf5_iotest.csv'
    output_files = ['stdout', 'stderr', INI, CSV]

    def settings(self) -> dict[str, str]:
        """hdf5_iotest's settings of the row (the ini file's keys, paths apart)."""
        layout, mpi_io = self.benchmark
        return {
            'version': '0', 'steps': str(self.steps), 'arrays': str(self.arrays),
            'rows': str(self.block_side), 'columns': str(self.block_side),
            'process-rows': str(self.num_tasks), 'process-columns': '1',
            'scaling': 'weak', 'dataset-rank': '4', 'slowest-dimension': 'step',
            'layout': layout, 'mpi-io': mpi_io,
        }

    def row_params(self):
        return {'benchmark': 'metadata', **h5bench_parser.parse_ini(
            ''.join(f'{k} = {v}\n' for k, v in self.settings().items()))}

    def row_options(self, p):
        return [f'{k}={v}' for k, v in self.settings().items()]

    def command_options(self):
        return [os.path.join(self.stagedir, self.INI)]

    def expected_output(self, p):
        """hdf5_iotest's file: every rank's block of doubles of every array and step."""
        s = self.settings()
        data = 8 * int(s['steps']) * int(s['arrays']) * int(s['rows']) * \
            int(s['columns']) * self.num_tasks
        return proof.Expectation((proof.FileSet(
            "hdf5_iotest's file", self.data_file, count=1, min_each=data),))

    def perf_table(self):
        return {'total_time': ('total', 'time', 's'),
                'write_phase_time_max': ('write', 'phase_time_max', 's'),
                'read_phase_time_max': ('read', 'phase_time_max', 's'),
                'write_rate_max': ('write', 'rate_max', 'MiB/s'),
                'read_rate_max': ('read', 'rate_max', 'MiB/s')}

    @run_after('setup')
    def write_ini(self):
        # hdf5_iotest cuts ini lines at 200 characters (inih's INI_MAX_LINE): paths are
        # relative to the data directory it runs in, and the CSV comes back to the stage
        paths = {'csv-file': self.CSV, 'hdf5-file': self.data_file}
        with open(os.path.join(self.stagedir, self.INI), 'w') as fp:
            fp.write('[DEFAULT]\n')
            fp.writelines(f'{k} = {v}\n' for k, v in {**self.settings(), **paths}.items())
        self.run_in_data_dir(keep=(self.CSV,))


# ------------------------------------------------------------------ the build fixture

class build_h5bench(ToolBuild):
    """h5bench's write, read, exerciser and metadata benchmarks (CMake), optimised."""

    package = 'h5bench'
    products = {name: f'h5bench/build/{name}' for name in
                ('h5bench_write', 'h5bench_read', 'h5bench_exerciser', 'h5bench_hdf5_iotest')}
    main_source = 'h5bench_write.c'
    #: h5bench's CMakeLists.txt sets Debug (-g, no optimisation); the build drops that
    build_type = 'Release'
    #: hdf5_iotest (the metadata benchmark) creates and writes its datasets inside
    #: assert(): Release's -DNDEBUG would leave an empty file
    keep_asserts = True
    build_system = 'CMake'

    #: the line of h5bench's CMakeLists.txt that forces a Debug build
    FORCED_DEBUG = 'set(CMAKE_BUILD_TYPE Debug)'

    @run_before('compile')
    def configure(self):
        cmakelists = 'h5bench/CMakeLists.txt'
        # a basic regular expression: the parentheses are literal
        edit = f's/^{self.FORCED_DEBUG}$/# h5regress: the build type comes from the command line/'
        self.prebuild_cmds += [
            f'sed -i {shlex.quote(edit)} {cmakelists}',
            'cd h5bench',
            # h5bench includes and links from $HDF5_HOME/include and /lib
            f'export HDF5_HOME={shlex.quote(self.hdf5.prefix)}' if self.hdf5.prefix else ':',
        ]
        self.patches = [f'{cmakelists}: dropped "{self.FORCED_DEBUG}"']
        self.build_system.builddir = 'build'
        opts = [f'-DCMAKE_BUILD_TYPE={self.build_type}', '-DH5BENCH_METADATA=ON',
                '-DH5BENCH_EXERCISER=ON']
        if self.keep_asserts:
            # the build type's optimisation without its -DNDEBUG
            opts += [f'-DCMAKE_{lang}_FLAGS_{self.build_type.upper()}=-O3'
                     for lang in ('C', 'CXX')]
        subfiling = os.path.join(self.hdf5.include_dir, 'H5FDsubfiling.h')
        if os.path.exists(subfiling):
            # h5bench looks for the header in HDF5_INCLUDE_DIRS only (as the Spack package)
            opts += [f'-DH5FDsubfiling_H={subfiling}', '-DHAVE_SUBFILING_VFD=ON']
        self.build_system.config_opts = opts
        self.build_system.cppflags = [f'-I{self.hdf5.include_dir}']
        self.build_system.ldflags = self.hdf5_link_flags()
        self.build_system.build_opts = ['VERBOSE=1']


# ------------------------------------------------------------------ asynchronous I/O

#: HDF5_VOL_CONNECTOR as h5bench's documentation sets it: the async connector
#: stacked on the native one
ASYNC_VOL_CONNECTOR = 'async under_vol=0;under_info={}'


@dataclasses.dataclass(frozen=True)
class AsyncRun:
    """How an ASYNC row runs: its tool (the build's h5bench built with the connector,
    against the thread-safe HDF5 of the same commit), its environment, and what its
    records say of the connector."""

    tool: tools.Tool
    env_vars: dict[str, str]
    provenance: dict[str, object]


def async_run(tool: tools.Tool) -> AsyncRun | None:
    """The ASYNC run of ``tool``'s build from the manifest's ``async`` entry; None when
    the manifest has none for it (tools from PATH: the partition names the plugin
    directory). Raises :class:`tools.ToolNotFound` when the entry lacks the tool."""
    path = manifest.configured_path() if tool.source == 'spack-manifest' else None
    build = manifest.load(path).get(tool.build) if path else None
    if build is None or build.async_io is None:
        return None
    a = build.async_io
    if tool.name not in a.tools:
        raise tools.ToolNotFound(f'{tool.name} is not built with the async VOL connector for '
                                 f'HDF5 build {tool.build!r} (the manifest\'s async tools: '
                                 f'{", ".join(sorted(a.tools)) or "none"})')
    async_tool = dataclasses.replace(tool, path=a.tools[tool.name], spec_hash=a.hdf5_hash,
                                     hdf5_prefix=a.hdf5_prefix)
    return AsyncRun(
        tool=async_tool,
        env_vars={'HDF5_PLUGIN_PATH': a.plugin_path, 'HDF5_VOL_CONNECTOR': ASYNC_VOL_CONNECTOR},
        provenance={'async_vol_connector': a.connector,
                    'async_vol_connector_version': a.connector_version,
                    'async_vol_connector_commit': a.connector_commit or '',
                    'async_vol_connector_library': a.library,
                    'hdf5_vol_connector': ASYNC_VOL_CONNECTOR,
                    'hdf5_variants': a.hdf5_variants})


#: what h5bench_write prints when HDF5 registered the async connector in its process
ASYNC_CONNECTOR_LINE = "Using 'async' VOL connector"


def async_run_problem(stdout: str, mode: str) -> str | None:
    """Why an ASYNC row's run was not asynchronous, or None: h5bench must say that HDF5
    registered the async connector in its process (``H5VLis_connector_registered_by_name``)
    and that it ran in ASYNC mode; the mode alone follows HDF5_VOL_CONNECTOR's text, and
    the native connector runs the ``H5*_async`` calls synchronously."""
    if ASYNC_CONNECTOR_LINE not in stdout:
        return (f'h5bench did not print "{ASYNC_CONNECTOR_LINE}": HDF5 did not register '
                'the async VOL connector (the run was not asynchronous)')
    if mode != 'ASYNC':
        return f'h5bench ran in {mode or "no"} mode, not ASYNC'
    return None
