"""What a check's records carry: its performance variables, the provenance of its
figures and the perflog context :mod:`h5regress.perflog` turns back into records
(:class:`RecordContext`, a mixin of :class:`h5regress.checkbase.IOBenchmark`)."""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import deferrable, run_after, run_before, variable

from h5regress import runresults, toolversion
from h5regress.parsers import ParsedRun
from h5regress.record import comparable_config, config_hash


class RecordContext(rfm.RegressionTestPlugin):
    """Performance variables, provenance and the perflog context of a run."""

    #: Id of this execution of the tool (all its records share it).
    run_id = variable(str, value='', loggable=True)

    #: Config hash of the run (see :func:`h5regress.record.config_hash`).
    config_hash = variable(str, value='', loggable=True)

    #: ``{perf var: unit}`` of the performance variables declared at init: what
    #: ``reframe --describe`` shows of them, and what ``h5regress refs --check`` reads.
    #:
    #: :type: dict
    #: :default: filled at init from :meth:`perf_table`
    perf_units = variable(typ.Dict[str, str], value={})

    #: Perflog context: JSON with parameters, provenance, samples; the last perflog column.
    h5r_context = variable(str, value='{}', loggable=True)

    #: The nightly's pair of this run (``H5REGRESS_PAIR_ID``; '' outside a night), set at
    #: init: in the run report of every test, also one that failed or skipped before its
    #: context was written, so that the gate knows a side whose every test did.
    pair_id = variable(str, value='', loggable=True)

    @run_after('init')
    def set_pair_id(self):
        self.pair_id = os.environ.get('H5REGRESS_PAIR_ID', '')

    #: Why the test was skipped ('' unless it was): ReFrame's run report keeps no
    #: reason for a skip, and the gate says it when a build's runs left no samples.
    skip_reason = variable(str, value='', loggable=True)

    def skip_because(self, why: str | None) -> None:
        """Skip saying ``why``, kept in :attr:`skip_reason`; None: no skip."""
        if why is not None:
            self.skip_reason = why
            self.skip(why)

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
            runresults.perfvars(run, self.perfvar_measurements, contexts), self.pair_id)

    def set_perf_variables(self, table: dict[str, tuple[str, str, str]]):
        """``{perf var name: (operation, metric, unit)}`` -> performance variables."""
        self.perfvar_measurements = {name: (op, metric)
                                     for name, (op, metric, _) in table.items()}
        self.perf_variables = {name: self.perf(op, metric, unit)
                               for name, (op, metric, unit) in table.items()}
        self.perf_units = {name: unit for name, (_, _, unit) in table.items()}
