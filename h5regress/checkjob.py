"""Where and how a check's job runs: node and rank counts from the partitions'
``extras``, the data directory under the partition's scratch and its clean-up, the
MPI-IO layer and hints, the launcher (:class:`JobLayout`, a mixin of
:class:`h5regress.checkbase.IOBenchmark`), and the marks the job script leaves for sanity.
"""

from __future__ import annotations

import os
import shlex
import sys
import uuid

import reframe as rfm
import reframe.core.runtime as rt
from reframe.core.builtins import run_after, run_before
from reframe.core.exceptions import ReframeFatalError

from h5regress import proof, runresults

EXIT_MARK = 'h5regress-exit-code:'
SETUP_MARK = 'h5regress-setup-failed:'
CACHE_MARK = 'h5regress-page-cache:'
PROBE_FILE = runresults.PROBE_FILE
FILES_LIST = runresults.FILES_LIST
HINTS_FILE = 'h5r-mpiio-hints'
#: touched in the stage directory just before the tool starts: the data directory
#: modified after it was changed by the run (:data:`h5regress.proof.CHANGED_MARK`)
START_STAMP = 'h5r-tool-start'
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


class JobLayout(rfm.RegressionTestPlugin):
    """The job of an I/O check: its layout, its data directory and its hygiene."""

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
