"""IOR through POSIX, MPI-IO and HDF5, as the field runs it.

One row of ``benchmark`` is (api, preset, file layout): the preset
(``reframe/config/presets.yaml``) gives block and transfer sizes and whether
transfers are collective (``-c``); the layout is a single shared file (``ssf``)
or a file per process (``fpp``, ``-F``). Every size can be overridden with
``-S``, e.g. ``-S ior_check.block_size=64m``.

Cache hygiene by default. Writes: each repetition removes the file, writes it anew
and fsyncs it (``-e``; through MPI-IO ``MPI_File_sync``, through HDF5 ``H5Fflush``,
which syncs through MPI-IO) inside the timed phase, before close: the write figures
include getting the data to storage. Reads: on several nodes ``-C`` (reordered
tasks) reads another node's data in the same execution as the write. On one node
``-C`` changes nothing, so the reads are executions of their own, one per repetition
(``-i 1``), each after the page cache was dropped (``extras.drop_caches`` and root):
every read sample is a cold read, and the record says so per repetition
(``read_page_cache_repetitions``). A repetition whose drop failed (not root) or was
not asked for is labelled cached and left out of the figure while any repetition
read cold; with none cold, the whole read phase is labelled cached. Each phase's
record names its own execution (command line, JSON summary, parameters). Results
come from IOR's JSON summary files. The nightly runs the rows without their read
phase (``-S read_phase=false``): its gate judges the writes only.

``ior_check`` runs the IOR of each HDF5 build of the Spack manifest (without one, the
IOR on PATH). ``ior_build_check`` runs the same rows with IOR built by a fixture
(:class:`h5regress.builds.build_ior`) from the commit ``spack-env/spack.yaml`` pins,
against the partition's HDF5 (Debian's parallel HDF5 on ``local``); it runs only when
there is no manifest and no ``ior`` on PATH, and ``ior_check`` then skips naming it:
each row runs once.
"""

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, variable

from h5regress import presets, proof, runresults, tools
from h5regress.builds import BuiltByFixture, Prebuilt, build_ior
from h5regress.checkbase import CACHE_MARK, HDF5Benchmark
from h5regress.parsers import ParseError
from h5regress.parsers import ior as ior_parser

#: the JSON summary of the one execution on several nodes (write and read)
SUMMARY = 'ior.json'
#: on one node: the write phase's JSON summary; each read execution's, renamed
#: ``ior-read-<repetition>.json`` after it
WRITE_SUMMARY = 'ior-write.json'
READ_SUMMARY = 'ior-read.json'
#: the provenance of a row run without its read phase
READS_OFF = 'not run (-S read_phase=false): write figures only'
#: IOR's data file in the data directory (``ior.dat.<rank, 8 digits>`` with ``-F``)
DATA_FILE = 'ior.dat'


def refuse_nonsense(name: str, p: dict) -> None:
    """Refuse, before anything runs, the row values IOR does not refuse itself (a
    ValueError naming each ``-S`` variable and value; ReFrame fails the test in its
    setup): IOR 4 with ``-i 0`` corrupts its heap and hangs to the time limit."""
    problems = [f'{name}.{var}={p[var]}: {why}' for var, bad, why in (
        ('repetitions', p['repetitions'] < 1, 'IOR needs at least one repetition (-i); '
         'with 0 it corrupts its heap and hangs'),
        ('segments', p['segments'] < 1, 'IOR needs at least one segment (-s)'),
        ('block_size', p['block_size'] <= 0, 'the block size (-b) must be positive'),
        ('transfer_size', p['transfer_size'] <= 0, 'the transfer size (-t) must be positive'),
        ('block_size', p['transfer_size'] > 0 and p['block_size'] % p['transfer_size'] != 0,
         f'the block size must be a multiple of the transfer size ({p["transfer_size"]})'),
        ('stonewall', p['stonewall'] < 0, 'a stonewall deadline (-D) is 0 (off) or seconds'),
        ('hdf5_chunk_size', p['hdf5_chunk_size'] < 0, 'a chunk size is 0 (contiguous) or '
         'elements'),
    ) if bad]
    if problems:
        raise ValueError('; '.join(problems))


def cold_reads(reads, states):
    """The read phase from its executions, one per repetition, and the page-cache state
    before each (``dropped`` or ``kept``): its figures from the repetitions read after a
    page-cache drop (all of them, labelled cached, when none was)."""
    if len(states) != len(reads):
        raise ParseError(f'{len(reads)} IOR read executions but {len(states)} '
                         f'"{CACHE_MARK}" lines in stdout')
    cold = [state == 'dropped' for state in states]
    run = ior_parser.combine_executions(
        reads, cold, why_not='read without a page-cache drop before it: cached')
    run.provenance['read_page_cache'] = 'dropped' if any(cold) else 'kept'
    run.provenance['read_page_cache_repetitions'] = states
    if any(cold):
        run.provenance[runresults.CACHE_DEFEATED] = \
            'the page cache dropped before each repetition counted'
    if not any(cold):
        run.warnings.append('read figures are cached: the page cache was not dropped '
                            'before the read repetitions')
    elif not all(cold):
        run.warnings.append(f'{cold.count(False)} of {len(cold)} read repetitions '
                            'had the page cache kept: left out of the read figures')
    return run


def read_summary(repetition: int) -> str:
    """Where the read execution of ``repetition`` (from 1) leaves its JSON summary."""
    return f'ior-read-{repetition}.json'

#: the stand-in night's rows (tag ``standin``): 2 ranks, independent transfers into one
#: file, through HDF5 and through MPI-IO (the canary)
STANDIN_ROWS = (('HDF5', 'independent', 'ssf'), ('MPIIO', 'independent', 'ssf'))


class ior_hdf5_options(rfm.RegressionTestPlugin):
    """IOR's HDF5 backend options, set with ``-S`` (recorded with every row)."""

    #: HDF5 collective metadata operations (``--hdf5.collectiveMetadata``).
    #:
    #: :type: bool
    #: :default: ``False``
    hdf5_collective_metadata = variable(typ.Bool, value=False)

    #: HDF5 object alignment in bytes (``--hdf5.setAlignment``); ``''`` = HDF5 default.
    #:
    #: :type: str
    #: :default: ``''``
    hdf5_alignment = variable(str, value='')

    #: HDF5 chunk size in elements (``--hdf5.chunkSize``); 0 = contiguous dataset.
    #:
    #: :type: int
    #: :default: ``0``
    hdf5_chunk_size = variable(int, value=0)

    #: Do not pre-fill HDF5 datasets (``--hdf5.noFill``).
    #:
    #: :type: bool
    #: :default: ``False``
    hdf5_nofill = variable(typ.Bool, value=False)


class ior_phase_options(rfm.RegressionTestPlugin):
    """What IOR's write and read phases do, set with ``-S`` (recorded with every row)."""

    #: fsync after the write phase (IOR ``-e``): without it the figure is page cache.
    #:
    #: :type: bool
    #: :default: ``True``
    fsync = variable(typ.Bool, value=True)

    #: Run the read phase after the write phase. The nightly turns it off
    #: (``nightrun.NIGHT_SETVARS``): its gate judges IOR's writes only, and on one node
    #: each read repetition is an execution of its own after a cache drop. Off, the
    #: record has no read figures and its provenance says why; the write phase and the
    #: configuration hash are the same either way.
    #:
    #: :type: bool
    #: :default: ``True``
    read_phase = variable(typ.Bool, value=True)


class ior_base(HDF5Benchmark, ior_hdf5_options, ior_phase_options):
    #: (api, preset, layout): what the field compares. POSIX has no collective mode.
    benchmark = parameter([
        ('POSIX', 'independent', 'ssf'),
        ('POSIX', 'independent', 'fpp'),
        ('MPIIO', 'collective', 'ssf'),
        ('MPIIO', 'independent', 'ssf'),
        ('MPIIO', 'independent', 'fpp'),
        ('HDF5', 'collective', 'ssf'),
        ('HDF5', 'independent', 'ssf'),
        ('HDF5', 'independent', 'fpp'),
    ], fmt=lambda row: '-'.join(row), loggable=True)

    #: Block size per rank and segment (IOR ``-b``), e.g. ``64m``.
    #:
    #: :type: str
    #: :default: ``''``: the preset's, scaled by the partition's ``size_factor``
    block_size = variable(str, value='')

    #: Transfer size (IOR ``-t``).
    #:
    #: :type: str
    #: :default: ``''``: the preset's, scaled by the partition's ``size_factor``
    transfer_size = variable(str, value='')

    #: Segments (IOR ``-s``).
    #:
    #: :type: int
    #: :default: ``0``: the preset's (``collective``: the partition's stripe count)
    segments = variable(int, value=0)

    #: Write each rank's whole data in one transfer: one segment whose block and transfer
    #: are the row's block x segments (the "big chunk" of the DKRZ multifile study;
    #: ``h5regress study scaling``). Recorded only when set.
    #:
    #: :type: bool
    #: :default: ``False``
    one_transfer = variable(typ.Bool, value=False)

    #: Repetitions (IOR ``-i``): of the write phase inside one execution (each writes
    #: the file anew); on one node, of the read phase one execution each, after a cache
    #: drop. Context, not independent samples.
    #:
    #: :type: int
    #: :default: ``3``
    repetitions = variable(int, value=3)

    #: Stonewall deadline in seconds (IOR ``-D``); 0 = off.
    #:
    #: :type: int
    #: :default: ``0``
    stonewall = variable(int, value=0)

    tool = 'ior'

    def preset(self, name):
        """The sizes of a row's preset (``reframe/config/presets.yaml``)."""
        return presets.load('ior')[name]

    def row_params(self):
        api, preset_name, layout = self.benchmark
        extras = self.current_partition.extras
        preset = self.preset(preset_name)
        where = f'ior preset {preset_name}'
        block, transfer = presets.scaled_sizes(
            presets.parse_size(preset['block_size'], where),
            presets.parse_size(preset['transfer_size'], where),
            float(extras.get('size_factor', 1.0)))
        segments = (extras.get('stripe_count', 1) if preset['segments'] == 'stripe_count'
                    else int(preset['segments']))
        name = type(self).__name__
        params = {
            'api': api, 'preset': preset_name, 'layout': layout,
            'collective': bool(preset['collective']),
            'block_size': (presets.parse_size(self.block_size, f'{name}.block_size')
                           if self.block_size else block),
            'transfer_size': (presets.parse_size(self.transfer_size, f'{name}.transfer_size')
                              if self.transfer_size else transfer),
            'segments': self.segments or segments,
            'repetitions': self.repetitions, 'stonewall': self.stonewall,
            'fsync': self.fsync, 'reorder_tasks': True,
            'hdf5_collective_metadata': self.hdf5_collective_metadata,
            'hdf5_alignment': self.hdf5_alignment, 'hdf5_chunk_size': self.hdf5_chunk_size,
            'hdf5_nofill': self.hdf5_nofill,
        }
        if self.one_transfer:
            whole = params['block_size'] * params['segments']
            params.update(block_size=whole, transfer_size=whole, segments=1, one_transfer=True)
        return params

    def row_options(self, p):
        refuse_nonsense(type(self).__name__, p)
        hdf5 = p['api'] == 'HDF5'
        return (['-a', p['api'], '-b', str(p['block_size']), '-t', str(p['transfer_size']),
                 '-s', str(p['segments']), '-i', str(p['repetitions'])] +
                ['-C'] * p['reorder_tasks'] + ['-c'] * p['collective'] +
                ['-F'] * (p['layout'] == 'fpp') + ['-e'] * p['fsync'] +
                (['-D', str(p['stonewall'])] if p['stonewall'] else []) +
                ['--hdf5.collectiveMetadata'] * (hdf5 and p['hdf5_collective_metadata']) +
                ([f'--hdf5.setAlignment={p["hdf5_alignment"]}']
                 if hdf5 and p['hdf5_alignment'] else []) +
                ([f'--hdf5.chunkSize={p["hdf5_chunk_size"]}']
                 if hdf5 and p['hdf5_chunk_size'] else []) +
                ['--hdf5.noFill'] * (hdf5 and p['hdf5_nofill']))

    def row_data_bytes(self, p):
        return p['block_size'] * p['segments'] * self.num_nodes * self.tasks_per_node

    def perf_table(self):
        ops = ('write', 'read') if self.read_phase else ('write',)
        return {f'{op}_{metric}': (op, metric, 'MiB/s') for op in ops
                for metric in ('bw_mean', 'bw_max', 'bw_min', 'bw_std')}

    def expected_output(self, p):
        """IOR's file (``-k`` keeps it): one shared ``ior.dat`` of every rank's blocks,
        or ``ior.dat.<rank>`` per rank (``-F``) of its own. Through HDF5 the file holds
        more than the data (its metadata); a stonewalled write (``-D``) may end early."""
        per_rank = 0 if p['stonewall'] else p['block_size'] * p['segments']
        if p['layout'] == 'fpp':
            return proof.Expectation((proof.FileSet(
                "IOR's files, one per rank (-F)", f'{DATA_FILE}.*', count=self.num_tasks,
                min_each=max(1, per_rank)),))
        return proof.Expectation((proof.FileSet(
            "IOR's shared file", DATA_FILE, count=1,
            min_each=max(1, per_rank * self.num_tasks)),))

    @run_after('setup')
    def set_phases(self):
        target = ['-o', os.path.join(self.data_dir, DATA_FILE)]

        def summary(name):
            return ['-O', 'summaryFormat=JSON', '-O', f'summaryFile={name}']

        if self.num_nodes > 1:
            # -C: each node reads another node's data, not its own page cache; -k keeps
            # the file for the listing (the proof of the work), the trap removes it after
            self.executable_opts = self.tool_options + ['-w'] + ['-r'] * self.read_phase + \
                ['-k'] + target + summary(SUMMARY)
            self.output_files = [SUMMARY, 'stdout']
            return
        # one node: the write phase (each repetition writes the file anew, -k keeps the
        # last), then each read repetition an execution of its own after a cache drop.
        # -e is a write option (IOR's HDF5 backend fails to open read-only with it)
        reps = self.test_params['repetitions']
        self.executable_opts = self.tool_options + ['-w', '-k'] + target + \
            summary(WRITE_SUMMARY)
        if not self.read_phase:
            self.output_files = [WRITE_SUMMARY, 'stdout']
            return
        read_opts = [o for o in self.tool_options if o != '-e']
        read_opts[read_opts.index('-i') + 1] = '1'
        self.read_command = self.launch_command(read_opts + ['-r', '-k'] + target +
                                                summary(READ_SUMMARY))
        drop = (self.drop_caches_command() if self.current_partition.extras.get('drop_caches')
                else f'echo "{CACHE_MARK} kept (extras.drop_caches is off)"')
        self.postrun_cmds = [
            # no reads of a file the write phase did not make
            f'if [ "$h5r_rc" -eq 0 ]; then for h5r_rep in $(seq {reps}); do {drop}; '
            f'{self.read_command} || h5r_rc=$?; [ ! -e {READ_SUMMARY} ] || '
            f'mv {READ_SUMMARY} ior-read-$h5r_rep.json; done; fi',
        ]
        self.output_files = [WRITE_SUMMARY] + [read_summary(i + 1) for i in range(reps)] + \
            ['stdout']

    def parse_output(self, files):
        fsync = 'fsync before the timer stops (IOR -e)' if self.test_params['fsync'] else ''
        if not self.read_phase:     # one execution, writes only, on any number of nodes
            run = self.parse_phases([SUMMARY if self.num_nodes > 1 else WRITE_SUMMARY],
                                    files, cache_matters=False)
            provenance = run.phases[0].run.provenance
            provenance['read_phase'] = READS_OFF
            if fsync:
                provenance[runresults.CACHE_DEFEATED] = fsync
            return run
        if self.num_nodes > 1:
            run = self.parse_phases([SUMMARY], files, cache_matters=False)
            provenance = run.phases[0].run.provenance
            provenance['read_page_cache'] = "another node's data (IOR -C)"
            if fsync:
                provenance[runresults.CACHE_DEFEATED] = \
                    f"{fsync}; reads of another node's data (IOR -C)"
            return run
        write = self.parse_phases([WRITE_SUMMARY], files, cache_matters=False)
        if fsync:
            write.phases[0].run.provenance[runresults.CACHE_DEFEATED] = fsync
        reads = [run for name in self.output_files[1:-1]
                 for run in ior_parser.parse({name: files.get(name, '')})]
        return runresults.merge_phases(self.tool, [
            write.phases[0],
            runresults.Phase(cold_reads(reads, self.cache_states(files.get('stdout', ''))),
                             self.read_command)])


@rfm.simple_test
class ior_check(Prebuilt, ior_base):
    """IOR as the Spack environment installed it, per HDF5 build (else from PATH)."""

    tags = {'io', 'nightly'}

    @run_after('init')
    def tag_standin_rows(self):
        """The stand-in night's rows (``-t standin``): the quietest HDF5 write measured
        on a workstation VM and its MPI-IO twin, the canary."""
        if self.benchmark in STANDIN_ROWS:
            self.tags = self.tags | {'standin'}


@rfm.simple_test
class ior_build_check(BuiltByFixture, ior_base):
    """IOR built by a fixture from the pinned commit, when nothing provides it."""

    #: IOR (and mdtest) built once per partition and environment
    tool_build = fixture(build_ior, scope='environment')
    #: the partition's HDF5: the build the records call ``path``
    hdf5_build = parameter([tools.PATH_BUILD], inherit_params=False, loggable=True)


# ------------------------------------------------------------------ IO500's IOR phases

#: IO500's ior-hard transfer (and block) size in bytes
IO500_HARD_TRANSFER = 47008
#: ior-hard segments at ``size_factor`` 1.0 (each rank writes one transfer per segment)
IO500_HARD_SEGMENTS = 10000
#: IO500's two IOR phases as presets (sizes before scaling)
IO500_PHASES = {
    'easy': {'block_size': '10g', 'transfer_size': '2m', 'segments': 1, 'collective': False},
    'hard': {'block_size': IO500_HARD_TRANSFER, 'transfer_size': IO500_HARD_TRANSFER,
             'segments': IO500_HARD_SEGMENTS, 'collective': False},
}


@rfm.simple_test
class io500_check(Prebuilt, ior_base):
    """IO500's ``ior-easy`` and ``ior-hard`` phases, through POSIX and HDF5.

    The IO500 list runs the same IOR phases on every storage system: ``ior-easy``
    writes and reads a file per process in large sequential transfers (the best case),
    ``ior-hard`` one shared file in 47008-byte transfers interleaved across the ranks
    (the worst case: transfers match neither stripes nor blocks). Each is a row
    (``api-phase-layout``) of :class:`ior_base`: IOR's parser reads it, the gate's IOR
    rules judge it (HDF5 rows gated, POSIX rows controls), and its envelopes are
    ``io500_check``'s entries of IOR's reference file. ``ior-easy``'s block scales
    with ``size_factor`` like the presets, ``ior-hard``'s segment count (its transfer
    is IO500's). IO500 stonewalls each write phase at 300 s; these write a fixed amount.
    """

    #: (api, IO500 phase, layout)
    benchmark = parameter([
        ('POSIX', 'easy', 'fpp'), ('HDF5', 'easy', 'fpp'),
        ('POSIX', 'hard', 'ssf'), ('HDF5', 'hard', 'ssf'),
    ], fmt=lambda row: '-'.join(row), loggable=True, inherit_params=False)

    def preset(self, name):
        return IO500_PHASES[name]

    def row_params(self):
        params = super().row_params()
        if params['preset'] == 'hard' and not (self.block_size or self.transfer_size
                                               or self.segments):
            factor = float(self.current_partition.extras.get('size_factor', 1.0))
            params.update(block_size=IO500_HARD_TRANSFER, transfer_size=IO500_HARD_TRANSFER,
                          segments=max(1, round(IO500_HARD_SEGMENTS * factor)))
        return params
