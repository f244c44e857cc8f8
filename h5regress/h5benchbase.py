"""The bases of the h5bench checks (``reframe/checks/h5bench.py``) that are not its
write and read patterns: what every h5bench check shares, the exerciser's buffer-size
sweep and the metadata benchmark (``h5bench_hdf5_iotest``)."""

from __future__ import annotations

import os
import shlex

from reframe.core.builtins import parameter, run_after, variable

from h5regress import proof
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
