"""The storage ceiling: sequential write and read with fio, no HDF5, no MPI.

HDF5 as a fraction of this ceiling and of IOR MPI-IO tells a user whether HDF5
or the platform is the bottleneck. One job per I/O rank of a node
(``tasks_per_node``), each on its own file, reported as a group.

``benchmark`` ``direct`` uses O_DIRECT; ``buffered`` writes through the page cache
and fsyncs at the end. The read phase is a second fio execution after the page
cache was dropped (when permitted; otherwise the read is labelled as cached).
fio preallocates files by default (``fallocate``), which changes the answer:
the allocation mode is set explicitly and recorded.
"""

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, variable

from h5regress import presets, proof
from h5regress.checkbase import IOBenchmark, shell_word
from h5regress.durability import DIRECT, READ_PAGE_CACHE

WRITE_OUT = 'fio-write.json'
READ_OUT = 'fio-read.json'


@rfm.simple_test
class fio_check(IOBenchmark):
    #: ``direct`` (O_DIRECT) or ``buffered`` (page cache, fsync at the end of writing).
    benchmark = parameter(['direct', 'buffered'], loggable=True)

    #: fio is one node's ceiling: it runs on one node only.
    num_nodes = parameter([1], inherit_params=False, loggable=True)

    #: File size per job, e.g. ``1G``.
    #:
    #: :type: str
    #: :default: ``''``: the partition's ``extras.fio_size`` (``1G`` if unset)
    size = variable(str, value='')

    #: Block size of each request.
    #:
    #: :type: str
    #: :default: ``'1M'``
    block_size = variable(str, value='1M')

    #: fio I/O engine.
    #:
    #: :type: str
    #: :default: ``'psync'``
    ioengine = variable(str, value='psync')

    #: fio allocation mode of the files (``native``, ``posix``, ``keep``, ``none``).
    #:
    #: :type: str
    #: :default: ``'native'`` (fio's own default, set explicitly so it is recorded)
    fallocate = variable(str, value='native')

    #: Open the files with O_SYNC (fio ``--sync=1``): each write returns once its data
    #: are on storage.
    #:
    #: :type: bool
    #: :default: ``False``
    sync = variable(typ.Bool, value=False)

    #: fsync at the end of writing, inside the timed phase (fio ``--end_fsync=1``).
    #:
    #: :type: bool or None
    #: :default: ``None``: the row's (``buffered`` yes, ``direct`` no)
    end_fsync = variable(typ.Bool, type(None), value=None)

    #: The file as the write finds it: ``preallocated`` (allocated first, by
    #: ``fallocate``), ``append`` (no allocation: every write extends the file at its
    #: end; fio ``--fallocate=none``), ``overwrite`` (written in full first, then written
    #: over: fio ``--overwrite=1``).
    #:
    #: :type: str
    #: :default: ``'preallocated'``
    file_state = variable(str, value='preallocated')

    tool = 'fio'
    output_files = [WRITE_OUT, READ_OUT, 'stdout']

    def row_params(self):
        size = self.size or self.current_partition.extras.get('fio_size', '1G')
        return {
            'mode': self.benchmark, 'size': presets.parse_size(size, 'fio_check.size'),
            'block_size': self.block_size, 'numjobs': self.tasks_per_node,
            'ioengine': self.ioengine, 'direct': self.benchmark == 'direct',
            'end_fsync': (self.benchmark == 'buffered' if self.end_fsync is None
                          else self.end_fsync),
            'fallocate': 'none' if self.file_state == 'append' else self.fallocate,
            # recorded only when set, so the default rows keep their config hash
            **({'sync': True} if self.sync else {}),
            **({'file_state': self.file_state} if self.file_state != 'preallocated' else {}),
        }

    def row_options(self, p):
        return ['--rw={rw}', f'--bs={p["block_size"]}', f'--size={p["size"]}',
                f'--numjobs={p["numjobs"]}', f'--ioengine={p["ioengine"]}',
                f'--direct={int(p["direct"])}', f'--fallocate={p["fallocate"]}',
                '--group_reporting', '--output-format=json'] + ['--end_fsync=1'] * p['end_fsync'] \
            + ['--sync=1'] * p.get('sync', False) \
            + ['--overwrite=1'] * (p.get('file_state') == 'overwrite')

    def row_data_bytes(self, p):
        return p['size'] * p['numjobs']

    def expected_output(self, p):
        """Each phase's files, one per job (fio's ``<name>.<job>.0``), each of the size
        asked: the read phase's job lays its file out when it is not there."""
        return proof.Expectation(tuple(
            proof.FileSet(f"fio's {rw} files, one per job", f'seq{rw}.*.0',
                          count=p['numjobs'], min_each=p['size'])
            for rw in ('write', 'read')))

    @run_after('init')
    def check_file_state(self):
        states = ('preallocated', 'append', 'overwrite')
        if self.file_state not in states:
            raise ValueError(f'fio_check.file_state: {self.file_state!r} is not one of '
                             f'{", ".join(states)}')

    def perf_table(self):
        return {f'{op}_bw': (op, 'bw', 'MiB/s') for op in ('write', 'read')}

    @run_after('setup')
    def run_on_the_node(self):
        # fio is not an MPI program: run it directly on the node
        self.job.launcher = getlauncher('local')()

    def _fio_opts(self, rw: str, output: str) -> list[str]:
        opts = [o.format(rw=rw) for o in self.tool_options]
        # quoted for the job script (spaces); fio splits --directory at ':' unless escaped
        directory = shell_word(self.data_dir.replace(':', '\\:'))
        return opts + [f'--name=seq{rw}', f'--directory={directory}', f'--output={output}']

    @run_after('setup')
    def set_phases(self):
        self.executable_opts = self._fio_opts('write', WRITE_OUT)
        self.read_command = self.launch_command(self._fio_opts('read', READ_OUT))
        self.postrun_cmds = [
            self.drop_caches_command(),
            self.read_command + ' || h5r_rc=$?',
        ]

    def parse_output(self, files):
        run = self.parse_phases([WRITE_OUT, READ_OUT], files,
                                cache_matters=self.benchmark == 'buffered',
                                commands={READ_OUT: self.read_command})
        if self.benchmark == 'direct':
            # O_DIRECT reads bypass the page cache whether or not it was dropped
            phases = getattr(run, 'phases', [])
            for read in [p.run for p in phases[1:]] if phases else [run]:
                read.provenance[READ_PAGE_CACHE] = DIRECT
        return run
