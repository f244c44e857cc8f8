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

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import deferrable, parameter, run_after, sanity_function, variable

from h5regress import catalog, loadedhdf5, tools
from h5regress.checkjob import (CACHE_MARK, SWEEP_ENV, JobLayout,  # noqa: F401 (re-exported)
                                extras_values, partition_values, shell_word)
from h5regress.checkrecord import RecordContext
from h5regress.checksanity import SanityProof
from h5regress.checktool import ToolResolution
from h5regress.gateconfig import REFERENCES_DIR
from h5regress.parsers import parser_for


class IOBenchmark(RecordContext, SanityProof, JobLayout, ToolResolution,
                  rfm.RunOnlyRegressionTest):
    """Base of the I/O checks: the row and its performance variables here; tool
    resolution, job layout, sanity and the record context in their mixins."""

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

    #: Reference file the check reads, under ``config/references/`` beside the checks.
    #:
    #: :type: str
    #: :default: the one its tool declares (:mod:`h5regress.catalog`)
    reference_file = variable(str, value='')

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

    @sanity_function
    def validate(self):
        return sn.all([self.assert_tool_exit(), self.assert_no_error_lines(),
                       self.assert_parsed(), self.assert_loaded_hdf5(),
                       self.assert_proof_of_work()])


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


class KernelBenchmark(HDF5Benchmark):
    """One of this project's kernels (``kernels/``): beyond the base's sanity, the files
    on disk are held to what its summary says it wrote (its parser's ``check_files``)."""

    @sanity_function
    def validate(self):
        return sn.all([
            super().validate(),
            sn.assert_false(self.file_problems(), msg='files on disk: {0}'),
        ])

    @deferrable
    def file_problems(self):
        parser = parser_for(self.parser or self.tool)
        return '; '.join(parser.check_files(self.parsed_run(), self.written_files()))
