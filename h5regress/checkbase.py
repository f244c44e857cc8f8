"""The base every h5regress ReFrame check derives from.

What a check says is *what* to run (a table of benchmark rows, the options of a
row, which files hold its results). What every I/O check must do the same way
lives here, once:

- the binary comes from :mod:`h5regress.tools` (the Spack manifest, else PATH); a
  missing tool skips the test with a message naming the tool and how to get it (fails
  it instead when ``$H5REGRESS_REQUIRE_TOOLS`` is set);
- node and rank counts are parameters whose values come from the partitions'
  ``extras`` (``num_nodes``, ``tasks_per_node``), so ``--dry-run`` needs no scheduler;
- data go to a fresh directory under the partition's ``scratch``; a shell trap
  removes it and syncs after the run, also after a failure; the files written are
  listed first (``h5r-files.txt``) for sanity;
- a sample needs proof of the work: each check declares, from its row's parameters,
  what its run must leave there (:meth:`IOBenchmark.expected_output`, a
  :class:`h5regress.proof.Expectation`), and sanity holds the listing to it, whatever
  the tool printed;
- the MPI-IO layer is set explicitly and the hints file passed through;
- a probe records what no tool reports (node list, file system type, MPI, the
  HDF5 library the binary loads);
- the tool's exit code is echoed into stdout (``h5regress-exit-code: N``) so sanity
  does not depend on the scheduler seeing it (SLURM's ``squeue`` backend does not);
- sanity and performance come from the :mod:`h5regress.parsers` parser of the tool,
  the same one ``h5regress parse`` uses; a :class:`~h5regress.parsers.RunFailed`
  fails sanity with its message, so a failed run never yields a performance record;
- the perflog context (``h5r_context``, JSON) carries the parameters, provenance,
  config hash, run id and per-repetition samples: :mod:`h5regress.perflog` turns
  perflog lines back into :class:`h5regress.record.Record`; a run of several executions
  (:meth:`IOBenchmark.parse_phases`, :class:`h5regress.runresults.PhasedRun`) gives each
  record its own execution's command line, parameters and source.
"""

from __future__ import annotations

import os
import shlex
import sys
import uuid

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (deferrable, parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import ReframeError, ReframeFatalError, SanityError

from h5regress import catalog, loadedhdf5, proof, runresults, tools, toolversion
from h5regress.parsers import ParsedRun, ParseError, parser_for
from h5regress.parsers import base as parser_base
from h5regress.gateconfig import REFERENCES_DIR
from h5regress.record import comparable_config, config_hash

EXIT_MARK = 'h5regress-exit-code:'
SETUP_MARK = 'h5regress-setup-failed:'
CACHE_MARK = 'h5regress-page-cache:'
PROBE_FILE = runresults.PROBE_FILE
FILES_LIST = runresults.FILES_LIST
HINTS_FILE = 'h5r-mpiio-hints'
#: touched in the stage directory just before the tool starts: the data directory
#: modified after it was changed by the run (:data:`h5regress.proof.CHANGED_MARK`)
START_STAMP = 'h5r-tool-start'
#: set (to anything) where every tool must be there (CI with the Spack bundle): a check
#: whose tool is missing fails, naming it, instead of being skipped
REQUIRE_TOOLS_ENV = 'H5REGRESS_REQUIRE_TOOLS'


#: ``h5regress study NAME`` sets this to NAME: the node and rank counts then come from
#: ``extras['NAME_num_nodes']`` and ``extras['NAME_tasks_per_node']`` where a partition
#: has them (a study sweeps further than the nightly runs), else from the usual keys.
SWEEP_ENV = 'H5REGRESS_SWEEP'


def extras_values(extras: dict, key: str, default: list) -> list:
    """``extras[key]`` as a list (a study's sweep first: :data:`SWEEP_ENV`)."""
    sweep = os.environ.get(SWEEP_ENV, '')
    value = extras.get(f'{sweep}_{key}', extras.get(key, default)) if sweep else \
        extras.get(key, default)
    return value if isinstance(value, list) else [value]


def partition_values(key: str, default: list) -> list:
    """Union of ``extras[key]`` over the current system's partitions.

    Parameters are fixed when checks load, before a partition is chosen; each
    test is then restricted to the partitions whose extras hold its value
    (see :meth:`IOBenchmark.restrict_to_partitions`).
    """
    try:
        partitions = rt.runtime().system.partitions
    except ReframeFatalError:   # imported outside a ReFrame run (e.g. by pytest)
        return default
    values = set()
    for part in partitions:
        values.update(extras_values(part.extras, key, default))
    return sorted(values) or default


def expand_scratch(template: str, stagedir: str) -> str:
    return template.replace('{stagedir}', stagedir)


def shell_word(path: str) -> str:
    """``path`` double-quoted for the job script: spaces are safe, ``$USER`` expands."""
    return '"' + ''.join('\\' + c if c in '"\\`' else c for c in path) + '"'


class IOBenchmark(rfm.RunOnlyRegressionTest):
    """Base of the I/O checks: resolution, hygiene, provenance, sanity, perf records."""

    #: Tool the records name (``ior``, ``fio``, ``h5bench``...): the parser's tool.
    #:
    #: :type: str
    #: :default: required
    tool = variable(str, loggable=True)

    #: Binary the resolver looks up, when it is not named like the tool
    #: (``h5bench_write`` of ``h5bench``).
    #:
    #: :type: str
    #: :default: ``''``: the tool name
    binary = variable(str, value='')

    #: Parser of the tool's output (a key of :func:`h5regress.parsers.parser_for`).
    #:
    #: :type: str
    #: :default: the tool name
    parser = variable(str, value='')

    #: Files the parser reads, relative to the stage directory.
    #:
    #: :type: list of str
    #: :default: ``['stdout']`` meaning the job's standard output
    output_files = variable(typ.List[str], value=['stdout'])

    #: The test's parameters, defaults included, as recorded with every result and
    #: hashed into the config hash; filled by each check's row hook.
    #:
    #: :type: dict
    #: :default: ``{}``
    test_params = variable(typ.Dict[str, object], value={})

    #: Tool options that define the benchmark (no run-specific paths): part of the
    #: config hash. Paths go into ``executable_opts`` only.
    #:
    #: :type: list of str
    #: :default: ``[]``
    tool_options = variable(typ.List[str], value=[])

    #: Bytes the run writes in total, for the "data below node memory" warning.
    #:
    #: :type: int
    #: :default: ``0`` (no warning computed)
    data_bytes = variable(int, value=0)

    #: Id of this execution of the tool (all its records share it).
    run_id = variable(str, value='', loggable=True)

    #: Config hash of the run (see :func:`h5regress.record.config_hash`).
    config_hash = variable(str, value='', loggable=True)

    #: Reference file the check reads, under ``config/references/`` beside the checks.
    #:
    #: :type: str
    #: :default: the one its tool declares (:mod:`h5regress.catalog`)
    reference_file = variable(str, value='')

    #: ``{perf var: unit}`` of the performance variables declared at init: what
    #: ``reframe --describe`` shows of them, and what ``h5regress refs --check`` reads.
    #:
    #: :type: dict
    #: :default: filled at init from :meth:`perf_table`
    perf_units = variable(typ.Dict[str, str], value={})

    #: Perflog context: JSON with parameters, provenance, samples; the last perflog column.
    h5r_context = variable(str, value='{}', loggable=True)

    #: Provenance of the tool beyond its path and source, merged into the records'
    #: (a build fixture's commit, tarball, build type and flags: ``h5regress.builds``).
    #:
    #: :type: dict
    #: :default: ``{}``
    tool_provenance = variable(typ.Dict[str, object], value={})

    #: The benchmark row as its parameter (``benchmark``) formats it, e.g.
    #: ``HDF5-collective-ssf``: the reference files' index beside ``$partition``.
    case = variable(str, value='', loggable=True)

    #: Nodes the test runs on; values from the partitions' ``extras['num_nodes']``.
    num_nodes = parameter(partition_values('num_nodes', [1]), loggable=True)

    #: I/O ranks per node; values from the partitions' ``extras['tasks_per_node']``.
    tasks_per_node = parameter(partition_values('tasks_per_node', [2]), loggable=True)

    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'io'}

    @run_after('init')
    def restrict_to_partitions(self):
        """Run each node/rank count only where a partition's extras list it."""
        try:
            partitions = rt.runtime().system.partitions
        except ReframeFatalError:
            return

        def listed(part, key, value, default):
            return value in extras_values(part.extras, key, default)

        self.valid_systems = [p.fullname for p in partitions
                              if listed(p, 'num_nodes', self.num_nodes, [1])
                              and listed(p, 'tasks_per_node', self.tasks_per_node, [2])]

    @run_after('init')
    def set_case(self):
        row = type(self).raw_params.get('benchmark')
        if row is not None:
            self.case = row.format(self.benchmark)

    @run_after('init')
    def set_reference_file(self):
        """ReFrame reads the envelopes from the reference file the tool declares
        (:mod:`h5regress.catalog`), the file ``h5regress refs`` writes: in
        ``config/references/`` beside the checks' directory, found relative to the check
        (ReFrame's ``$ref``), unless the check names its own (``reference_file``)."""
        self.reference_file = self.reference_file or catalog.get(self.tool).reference_file
        if not getattr(self.reference, 'is_external', bool)():
            self.reference = {'$ref': os.path.join(
                '..', 'config', REFERENCES_DIR.name, self.reference_file)}

    # -- set-up ---------------------------------------------------------------

    def hdf5_build_id(self) -> str:
        """HDF5 build this test runs; checks of HDF5 tools carry ``hdf5_build``."""
        return getattr(self, 'hdf5_build', 'none')

    @run_after('setup')
    def resolve_tool(self):
        """The binary from the resolver; a check built by a fixture overrides this."""
        build = self.hdf5_build_id()
        try:
            self.resolved_tool = tools.find(
                self.binary or self.tool, tools.PATH_BUILD if build == 'none' else build,
                any_build=build == 'none')
        except tools.ToolNotFound as err:
            if os.environ.get(REQUIRE_TOOLS_ENV):
                raise ReframeError(f'{err} ({REQUIRE_TOOLS_ENV} is set: a missing '
                                   'tool is a failure, not a skip)') from None
            self.skip(str(err))
        self.executable = self.resolved_tool.path

    @run_after('setup')
    def set_job_layout(self):
        self.num_tasks = self.num_nodes * self.tasks_per_node
        self.num_tasks_per_node = self.tasks_per_node
        self.run_id = uuid.uuid4().hex[:12]
        extras = self.current_partition.extras
        scratch = expand_scratch(extras.get('scratch', '{stagedir}/scratch'), self.stagedir)
        self.data_dir = os.path.join(scratch, f'{self.short_name}-{self.run_id}')

    @run_after('setup')
    def set_mpiio(self):
        """Set the MPI-IO layer explicitly and pass the site's hints through."""
        extras = self.current_partition.extras
        self.mpiio_layer = extras.get('mpiio_layer', 'ompio')
        self.mpiio_hints = dict(extras.get('mpiio_hints', {}))
        self.env_vars['OMPI_MCA_io'] = self.mpiio_layer
        if self.mpiio_hints:
            hints = os.path.join(self.stagedir, HINTS_FILE)
            with open(hints, 'w') as fp:
                fp.writelines(f'{k} {v}\n' for k, v in sorted(self.mpiio_hints.items()))
            self.env_vars['ROMIO_HINTS'] = hints

    # -- the row: its parameters once, the options from them -------------------

    def row_params(self) -> dict[str, object]:
        """The test's parameters, defaults included, from its row (``benchmark``) and
        its variables: what every record carries and the config hash covers. Each check
        defines it; sizes the partition scales are resolved here, once."""
        return {}

    def row_options(self, params: dict[str, object]) -> list[str]:
        """The tool options that define the benchmark, from :meth:`row_params`'s
        parameters (no run-specific paths: they are :meth:`run_options`)."""
        return []

    def run_options(self) -> list[str]:
        """What one execution adds to the options: paths in the data directory."""
        return []

    def command_options(self) -> list[str]:
        """The executed command's options: the tool options, then :meth:`run_options`
        (a tool that reads its settings from a file overrides this)."""
        return self.tool_options + self.run_options()

    def row_data_bytes(self, params: dict[str, object]) -> int:
        """Bytes the run writes in total (for the "data below node memory" warning)."""
        return 0

    def perf_table(self) -> dict[str, tuple[str, str, str]]:
        """``{perf var: (operation, metric, unit)}`` of the row: from the parameters and
        variables alone (it is read at init, before any partition is known)."""
        return {}

    @run_after('init')
    def declare_perf_variables(self):
        """The performance variables, declared at init: ``reframe --describe`` and
        :mod:`h5regress.refs` see them without running anything."""
        self.set_perf_variables(self.perf_table())

    @run_after('setup')
    def derive_from_row(self):
        """``test_params``, ``tool_options``, ``executable_opts`` and ``data_bytes``,
        each derived once from the row."""
        self.test_params = self.row_params()
        self.tool_options = self.row_options(self.test_params)
        self.executable_opts = self.command_options()
        self.data_bytes = self.row_data_bytes(self.test_params)

    @run_before('run')
    def add_hygiene_and_probe(self):
        extras = self.current_partition.extras
        data = shell_word(self.data_dir)
        prerun = [
            f'mkdir -p {data}',
            # no data directory, no run: stop here and say so (sanity reads this line)
            f'[ -d {data} ] || {{ echo "{SETUP_MARK} cannot create the data directory" >&2; '
            f'exit 1; }}',
            # the data go whatever happens: also on failure, timeout or cancellation
            # (and the watcher below, with its sleep, has nothing left to do)
            f"trap 'rm -rf {data}; sync; kill -- -$h5r_cleaner 2>/dev/null' EXIT",
            # a job the scheduler cancels gets SIGTERM: exit, so the EXIT trap cleans up
            "trap 'exit 143' TERM INT",
            # ... but the shell runs its traps only once the tool has ended, and ReFrame's
            # local scheduler SIGKILLs the job's process group 2 s after its SIGTERM
            # (mpirun can take longer to stop its ranks). A watcher outside the group
            # removes the data once this shell is gone, however it died, then ends.
            'setsid sh -c \'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
            f'rm -rf "$2"\' h5regress-cleaner $$ {data} </dev/null >/dev/null 2>&1 &',
            'h5r_cleaner=$!',
        ]
        if extras.get('lfs_setstripe'):
            prerun.append(f'lfs setstripe -c {int(extras.get("stripe_count", 1))} {data}')
        prerun.append(f'{shlex.quote(sys.executable)} -m h5regress.probe {PROBE_FILE} '
                      f'--data-dir {data} --binary {shlex.quote(self.executable)}')
        stamp = shlex.quote(os.path.join(self.stagedir, START_STAMP))
        prerun.append(f'touch {stamp}')
        self.prerun_cmds = prerun + self.prerun_cmds
        stage = shlex.quote(self.stagedir)
        # the proof of the work, listed on the node before the trap removes the data
        self.postrun_cmds = ['h5r_rc=$?'] + self.postrun_cmds + [
            f'find {data} -type f -printf "%s %P\\n" > {stage}/{FILES_LIST}',
            f'find {data} -maxdepth 0 -newer {stamp} > {stage}/{proof.CHANGED_MARK}',
            f'echo "{EXIT_MARK} $h5r_rc"',
        ]

    @run_before('run')
    def size_an_srun_step(self):
        """Inside an allocation (local scheduler, srun launcher: the ``alloc``
        partitions) srun sizes its step from the allocation, one task per node of all
        its nodes, not from the row: a 2-node row of 2 tasks per node ran 2 ranks and
        a 1-node row ran on both nodes. Give srun the row's size."""
        part = self.current_partition
        if part.scheduler.is_local and part.launcher_type.registered_name == 'srun':
            self.job.launcher.options += [f'--nodes={self.num_nodes}',
                                          f'--ntasks={self.num_tasks}',
                                          f'--ntasks-per-node={self.num_tasks_per_node}']

    def launch_command(self, opts: list[str], executable: str | None = None) -> str:
        """A further execution of the tool (or of ``executable``), through the same
        launcher, for postrun."""
        # the launcher sizes itself from the job, which ReFrame fills only at run time
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launcher = ' '.join(self.job.launcher.run_command(self.job).split())
        return ' '.join([launcher, shlex.quote(executable or self.executable)] + list(opts))

    def drop_caches_command(self) -> str:
        """Drop the page cache when permitted, and say in stdout whether it was."""
        return (f'sync; if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; '
                f'then echo "{CACHE_MARK} dropped"; else echo "{CACHE_MARK} kept"; fi')

    def main_command(self) -> str:
        """The command line of the job's execution of the tool."""
        return ' '.join([self.executable] + list(self.executable_opts))

    # -- results --------------------------------------------------------------

    def read_outputs(self) -> dict[str, str]:
        """``output_files`` that exist, by name; ``stdout`` and ``stderr`` are the job's."""
        job_files = {'stdout': self.stdout.evaluate(), 'stderr': self.stderr.evaluate()}
        files = {}
        for name in self.output_files:
            path = os.path.join(self.stagedir, job_files.get(name, name))
            if os.path.exists(path):
                with open(path, errors='replace') as fp:
                    files[name] = fp.read()
        return files

    def parse_output(self, files: dict[str, str]) -> ParsedRun:
        """The run as the tool's parser reads it; checks with several outputs override."""
        runs = parser_for(self.parser or self.tool).parse(files)
        if len(runs) != 1:
            raise ParseError(f'{self.tool}: expected one run in {sorted(files)}, '
                             f'found {len(runs)}')
        return runs[0]

    def parse_phases(self, names: list[str], files: dict[str, str], cache_matters: bool,
                     commands: dict[str, str] | None = None) -> ParsedRun:
        """One run from several executions (a write phase, a read phase, ...), each
        output file ``names`` one execution, run by ``commands[name]`` (the first by
        default the job's own): each record names its own execution
        (:class:`h5regress.runresults.PhasedRun`).

        ``cache_matters``: the phases after the first (the reads) could be served by
        this node's page cache (one node); unless the job says it dropped the cache,
        their figures are labelled as cached.
        """
        parser = parser_for(self.parser or self.tool)
        commands = {names[0]: self.main_command(), **(commands or {})}
        phases = [runresults.Phase(run, commands.get(name, ''))
                  for name in names for run in parser.parse({name: files.get(name, '')})]
        if cache_matters:
            for phase in phases[1:]:
                self.label_cache(phase.run, files.get('stdout', ''))
        return runresults.merge_phases(self.tool, phases)

    @staticmethod
    def cache_states(stdout: str) -> list[str]:
        """What each :meth:`drop_caches_command` of the job said, in order."""
        return [line.split(':', 1)[1].strip() for line in stdout.splitlines()
                if line.startswith(CACHE_MARK)]

    @classmethod
    def label_cache(cls, run: ParsedRun, stdout: str) -> None:
        """Record whether the page cache was dropped before the read phase (the
        :meth:`drop_caches_command` line in ``stdout``); if not, say the reads are cached."""
        cache = (cls.cache_states(stdout) or ['kept'])[0]
        run.provenance['read_page_cache'] = cache
        if cache != 'dropped':
            run.warnings.append('read figures are cached: the page cache was not '
                                'dropped between the write and read phases')

    def parsed_run(self) -> ParsedRun:
        """The tool's results, parsed once."""
        if getattr(self, '_parsed_run', None) is None:
            self._parsed_run = self.parse_output(self.read_outputs())
        return self._parsed_run

    @deferrable
    def assert_parsed(self):
        try:
            self.parsed_run()
        except ParseError as err:
            raise SanityError(str(err)) from None
        return True

    @deferrable
    def assert_tool_exit(self):
        """The tool ran to its end and exited 0, as the job script echoed it.

        Not the scheduler's exit code: SLURM's ``squeue`` backend never sees it. A
        job killed by the scheduler (time limit, cancellation) never echoes it.
        """
        stdout = sn.evaluate(sn.extractall(rf'^{EXIT_MARK} (\d+)$', self.stdout, 1, int))
        if not stdout:
            stderr_path = os.path.join(self.stagedir, self.stderr.evaluate())
            lines = []
            if os.path.exists(stderr_path):
                with open(stderr_path, errors='replace') as fp:
                    lines = [line.strip() for line in fp]
            killed = next((line for line in lines if 'CANCELLED' in line or
                           'TIME LIMIT' in line or line.startswith(SETUP_MARK)), '')
            if killed.startswith(SETUP_MARK):
                why = [line for line in lines if line.startswith('mkdir:')]
                raise SanityError(f'{self.tool} never ran: '
                                  f'{": ".join([killed[len(SETUP_MARK):].strip()] + why)}')
            raise SanityError(f'the job ended before {self.tool} finished: '
                              f'{killed or "killed, cancelled or timed out"}')
        if stdout[-1] != 0:
            raise SanityError(f'{self.tool} exited with {stdout[-1]}{self.failure_cause()}')
        return True

    def error_line(self) -> str | None:
        """The tool's error line on the job's stdout or stderr (its parser's
        ``error_line``; the operating system's errors for tools without one)."""
        streams = {}
        for name in ('stdout', 'stderr'):
            path = os.path.join(self.stagedir, getattr(self, name).evaluate())
            if os.path.exists(path):
                with open(path, errors='replace') as fp:
                    streams[name] = fp.read()
        parser = parser_for(self.parser or self.tool)
        return getattr(parser, 'error_line', parser_base.error_line)(streams)

    def failure_cause(self) -> str:
        """``': <cause>'`` as the tool's output names it (the parser's reason, the tool's
        error line on stdout or stderr), or ``''``."""
        causes = []
        try:
            self.parsed_run()
        except ParseError as err:
            causes.append(str(err))
        line = self.error_line()
        if line and not any(line in cause for cause in causes):
            causes.append(line)
        return f': {"; ".join(causes)}' if causes else ''

    @deferrable
    def assert_no_error_lines(self):
        """No error line of the tool on the job's stdout or stderr, whatever its exit
        code: several tools exit 0 after failing (IOR through OMPIO on a full file system,
        fio after one of its workers was killed)."""
        line = self.error_line()
        if line:
            raise SanityError(f'{self.tool} failed: {line}')
        return True

    def expected_output(self, params: dict[str, object]) -> proof.Expectation | None:
        """What the run of a row with ``params`` must leave in its data directory,
        from the parameters alone (never from what the tool printed). Every check
        declares it: ``None`` fails sanity."""
        return None

    def stage_text(self, name: str) -> str | None:
        """A file of the stage directory, or ``None`` when the job did not write it."""
        try:
            with open(os.path.join(self.stagedir, name), errors='replace') as fp:
                return fp.read()
        except FileNotFoundError:
            return None

    def proof_problems(self) -> list[str]:
        """What the listing of the data directory lacks against :meth:`expected_output`."""
        expectation = self.expected_output(self.test_params)
        if expectation is None:
            return [f'{type(self).__name__} declares nothing its run must leave '
                    '(expected_output)']
        return proof.check(expectation, self.stage_text(FILES_LIST),
                           self.stage_text(proof.CHANGED_MARK), where=self.data_dir)

    @deferrable
    def assert_proof_of_work(self):
        """The run left what its row asked for: a summary alone is no proof."""
        problems = self.proof_problems()
        if problems:
            raise SanityError(f'{self.tool}: no proof of the work in the data directory: '
                              + '; '.join(problems))
        return True

    def loaded_hdf5_problems(self) -> list[str]:
        """How the HDF5 the run loaded differs from its build's (HDF5 tools only)."""
        return []

    @deferrable
    def assert_loaded_hdf5(self):
        """The run loaded the HDF5 of the build its records are labelled with."""
        problems = self.loaded_hdf5_problems()
        if problems:
            raise SanityError('the wrong HDF5 ran: ' + '; '.join(problems))
        return True

    @sanity_function
    def validate(self):
        return sn.all([self.assert_tool_exit(), self.assert_no_error_lines(),
                       self.assert_parsed(), self.assert_loaded_hdf5(),
                       self.assert_proof_of_work()])

    @deferrable
    def measured(self, operation: str, metric: str):
        return self.parsed_run().measurement(operation, metric).value

    def perf(self, operation: str, metric: str, unit: str):
        """A performance function for one measurement of the parsed run."""
        return sn.make_performance_function(self.measured(operation, metric), unit)

    def written_files(self) -> dict[str, int]:
        """Files the run left in its data directory (relative path -> bytes)."""
        return runresults.written_files(self.stagedir)

    def probe(self) -> dict:
        return runresults.probe(self.stagedir)

    def node_memory(self, probe: dict) -> int | None:
        """Memory of one node: the partition's ``extras``, else what the probe read."""
        return self.current_partition.extras.get('node_memory_bytes') or \
            probe.get('node_memory_bytes')

    def memory_warning(self, probe: dict) -> list[str]:
        """The suite's "data below node memory" warning (the one place it is made)."""
        return runresults.memory_warning(self.data_bytes, self.node_memory(probe),
                                         self.num_nodes)

    def provenance(self, run: ParsedRun, probe: dict, command: str = '') -> dict:
        """Where the figures come from: the tool's, the probe's, the build's, the job's
        (``command``: the execution's command line, by default the job's own)."""
        tool = self.resolved_tool
        provenance = {
            **run.provenance,
            **probe,
            'tool_path': tool.path,
            'tool_source': tool.source,
            'hdf5_commit': tool.hdf5_commit,
            'hdf5_spec_hash': tool.spec_hash,
            **self.tool_provenance,
            # one key for every tool, and where it came from
            **toolversion.describe(run.provenance, tool.path, self.tool_provenance),
            'mpiio_layer': self.mpiio_layer,
            'mpiio_hints': self.mpiio_hints,
            'command_line': command or self.main_command(),
            'job_script': self.job.script_filename,
            'spack_lock': os.environ.get('H5REGRESS_SPACK_LOCK', ''),
            'warnings': runresults.record_warnings(run, self.data_bytes,
                                                   self.node_memory(probe), self.num_nodes),
        }
        if tool.source == 'PATH':
            provenance['warnings'].append(f'{self.tool} from PATH, not from the Spack '
                                          'environment manifest')
        provenance['test_class'] = type(self).__name__
        return provenance

    @run_before('performance')
    def set_record_context(self):
        """Everything a perflog line needs to become a record (see h5regress.perflog)."""
        if self.is_dry_run():
            return
        run, probe = self.parsed_run(), self.probe()
        self.config_hash = config_hash(comparable_config(
            tool=self.tool, params=self.test_params, options=self.tool_options,
            num_nodes=self.num_nodes, num_ranks=self.num_tasks,
            fs_type=probe.get('fs_type'), mpiio_layer=self.mpiio_layer,
            mpiio_hints=self.mpiio_hints, system=self.current_partition.fullname))
        # each execution's own parameters and provenance (the first's are the context's)
        contexts = [({**phase.run.params, **self.test_params, 'num_nodes': self.num_nodes,
                      'num_ranks': self.num_tasks, 'case': getattr(self, 'case', '')},
                     self.provenance(phase.run, probe, phase.command))
                    for phase in runresults.phases_of(run, self.main_command())]
        self.h5r_context = runresults.context_json(
            self.tool, *contexts[0],
            runresults.perfvars(run, self.perfvar_measurements, contexts))

    def set_perf_variables(self, table: dict[str, tuple[str, str, str]]):
        """``{perf var name: (operation, metric, unit)}`` -> performance variables."""
        self.perfvar_measurements = {name: (op, metric)
                                     for name, (op, metric, _) in table.items()}
        self.perf_variables = {name: self.perf(op, metric, unit)
                               for name, (op, metric, unit) in table.items()}
        self.perf_units = {name: unit for name, (_, _, unit) in table.items()}


class HDF5Benchmark(IOBenchmark):
    """A tool linked with HDF5: one test per HDF5 build of the Spack manifest."""

    #: HDF5 build the tool comes from: the manifest's build ids, or ``path``
    #: (tools on PATH) when there is no manifest.
    hdf5_build = parameter(tools.builds(), loggable=True)

    def loaded_hdf5(self) -> list[loadedhdf5.Loaded]:
        """What the run says it loaded: the tool itself (``H5get_libversion``; a kernel's
        ``dladdr`` file), the job's probe (``ldd`` in the job's environment)."""
        run, probe = self.parsed_run().provenance, self.probe()
        library = run.get('hdf5_library', '')
        loaded = [loadedhdf5.Loaded(
            f'{self.tool} itself ({run.get("hdf5_library_source") or "H5get_libversion"})',
            str(run.get('hdf5_version', '')),
            os.path.realpath(os.path.join(self.stagedir, library)) if library else '')]
        if probe.get('hdf5_library'):
            version = str(probe.get('hdf5_library_version', ''))
            loaded.append(loadedhdf5.Loaded(
                'the job (ldd of the binary in its environment)',
                version if version[:1].isdigit() else '',
                os.path.realpath(probe['hdf5_library'])))
        return loaded

    def loaded_hdf5_problems(self) -> list[str]:
        tool = self.resolved_tool
        # a stand-in build (ci/nightly --stand-in, the stand-in bisect) is "the HDF5 on
        # this machine", version 'system': its tools may link different ones (its IOR
        # can be a Spack build's), so there is no one library to hold them to
        if tool.source != 'spack-manifest' or tool.hdf5_version in ('', 'system'):
            return []
        prefixes = tuple(dict.fromkeys(p for p in (tool.hdf5_prefix,
                                                    os.path.realpath(tool.hdf5_prefix)) if p))
        return loadedhdf5.problems(tool.build, tool.hdf5_version, prefixes,
                                   self.loaded_hdf5())
