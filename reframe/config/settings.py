"""h5regress ReFrame configuration: the entry config.

Systems here:

- ``local``: this machine (local scheduler, ``mpirun``); the embedded default.
- ``example-lustre``: an example cluster with SLURM partitions, showing what a
  site sets. Copy it into your own file and chain it: ``reframe -C
  reframe/config/settings.py:mysite.py ...`` (later files override earlier ones).
- ``ci-slurm``: the two-node SLURM the tests bring up on one host, with the
  ``squeue`` scheduler (srun and mpirun launchers), the ``slurm`` scheduler
  (accounting) and ``alloc`` (ReFrame inside an allocation, for ci/nightly).

Systems are matched against the host name in order; ``local`` matches any host,
so it comes last.

Every partition has a ``time_limit`` (ReFrame's, per job, builds included): a tool
that hangs (IOR through HDF5 on a full file system, h5bench collective) fails its test
with "job timed out" instead of holding the run or the night. The ``local`` scheduler
enforces it itself: SIGTERM to the job's process group (the job script's trap cleans
the scratch), SIGKILL to the group 2 s later; SLURM gets it as ``--time``. The
defaults fit the sizes each partition runs with; a site sets its own per partition,
and a check may set a longer ``time_limit`` of its own.

Site specifics live in each partition's ``extras`` (read by the checks, never
hard-coded in them):

``scratch``         directory for benchmark data; ``{stagedir}`` expands to the test's
                    stage directory. Data are removed after every run.
``num_nodes``       node counts the checks run at (list; fixed numbers, so ``--dry-run``
                    works without a scheduler).
``tasks_per_node``  I/O ranks per node.
``scaling_num_nodes``, ``scaling_tasks_per_node`` what ``h5regress study scaling`` sweeps
                    (unset: ``num_nodes``/``tasks_per_node``); ``h5regress.study``.
``size_factor``     scales the IOR presets (1.0 = the published sizes; small on a laptop).
``stripe_count``    file-system stripe count; IOR's "collective" preset writes that many
                    segments. ``lfs_setstripe`` (true/false) runs ``lfs setstripe -c`` on
                    the data directory before the run.
``mpiio_layer``     Open MPI io component, set explicitly (``ompio`` or ``romio321``):
                    no tool reports which one ran.
``mpiio_hints``     MPI-IO hints (``cb_nodes``, ``cb_buffer_size``, ``romio_cb_write``,
                    ``striping_factor``, ``striping_unit``...), written to a hints file
                    passed through ``ROMIO_HINTS``.
``drop_caches``     drop the page cache between write and read phases on one node when
                    permitted (root); otherwise read figures are labelled as cached.
``node_memory_bytes`` memory of a node, for the "data below node memory" warning; when
                    absent the job reads /proc/meminfo.
``fio_size``        file size per fio job (the storage-ceiling check).
``flashio_blocks_per_rank`` FLASH-IO blocks per rank (unset: FLASH's own 80-82); sized so
                    the checkpoint the nightly gates takes long enough to measure.
``hdf5_plugin_path`` where HDF5 VOL connectors live (h5bench's ASYNC rows need the
                    async VOL connector there, or in $HDF5_PLUGIN_PATH).

For the tools built by fixtures (the ``*_build_check`` tests; ``h5regress.builds``):

``tool_sources``    a Spack source mirror holding the tarballs of the commits
                    spack-env/spack.yaml pins (``_source-cache/git/<org>/<repo>.git/
                    <commit>.tar.gz``); ``$H5REGRESS_TOOL_SOURCES`` overrides it. Unset:
                    the build downloads the upstream GitHub archive of the commit.
``hdf5_pkg_config`` pkg-config module of the parallel HDF5 the tools build against
                    (``hdf5-openmpi`` on Debian); or ``hdf5_prefix``, a directory with
                    ``include/hdf5.h`` and ``lib/libhdf5.so``. Neither: ``h5pcc -show``.
"""

import importlib.util
import os

#: Repository root: config, checks, references and perflogs are found from it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _checkout_module(name):
    """A module of this checkout's h5regress, loaded from its file: an installed
    h5regress may be another checkout's, and a sys.path changed here left ReFrame's
    later imports without the virtualenv's site-packages (polars not found)."""
    spec = importlib.util.spec_from_file_location(
        f'h5regress_checkout_{name}', os.path.join(REPO, 'h5regress', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# perflog lines are written whole and checked: a failed write is a failed run, not a
# warning (h5regress.perfloghandler)
_checkout_module('perfloghandler').install()

#: Where perflogs and the results database go; a site points this at a persistent path.
PERFLOG_DIR = os.environ.get('H5REGRESS_PERFLOG_DIR', os.path.join(REPO, 'perflogs'))

#: Open MPI as root needs these; harmless otherwise.
OMPI_AS_ROOT = [
    ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
    ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
]

#: The test SLURM: two "nodes" on one host, 2 cores each; data under the stage directory
#: (shared by both nodes, as a parallel file system would be).
CI_SLURM_EXTRAS = {
    'scratch': '{stagedir}/scratch',
    'num_nodes': [1, 2],
    'tasks_per_node': 2,
    # h5regress study scaling: 1 and 2 nodes
    'scaling_num_nodes': [1, 2],
    'size_factor': 1 / 64,
    'stripe_count': 1,
    'mpiio_layer': 'ompio',
    'mpiio_hints': {},
    'drop_caches': True,
    'fio_size': '128M',
}

#: Both test "nodes" are this one host: Open MPI's shared-memory transport names its
#: segments after the host and the node-local rank, so ranks of n1 and n2 would share
#: (and corrupt) them. TCP between all ranks, over loopback (a rank of a 2-node IOR
#: once died at start failing to connect to the host's own eth0 address): a harness
#: artefact, not a site setting.
CI_SLURM_MPI = [['OMPI_MCA_btl', 'self,tcp'], ['OMPI_MCA_btl_tcp_if_include', 'lo']]



#: srun's environment: Open MPI through PMIx, and a task that dies (a segfault in
#: MPI_Init was seen on the test SLURM) ends the whole step at once; without
#: SLURM_KILL_BAD_EXIT the other ranks wait in a collective until the time limit
SRUN_ENV = [['SLURM_MPI_TYPE', 'pmix'], ['SLURM_KILL_BAD_EXIT', '1']]


#: A job of the local scheduler past its time limit gets SIGTERM in its process group,
#: and the moment its shell exits ReFrame SIGKILLs that group: the launcher (mpirun,
#: srun), killed before it could stop the ranks it put in their own process groups,
#: left them running. The job shell waits for its foreground launcher, which stops its
#: ranks on the same SIGTERM, and exits only then.
LOCAL_JOB_PREPARE = ["trap 'exit 143' TERM"]


def ci_slurm_partition(name, descr, scheduler, launcher):
    """A partition of the test SLURM: all share its one SLURM partition, exclusively."""
    part = {
        'name': name,
        'descr': descr,
        'scheduler': scheduler,
        'launcher': launcher,
        'environs': ['gnu-openmpi'],
        'max_jobs': 1,
        # srun launches Open MPI through PMIx; mpirun needs its run-as-root switches
        'env_vars': (SRUN_ENV if launcher == 'srun' else OMPI_AS_ROOT)
        + CI_SLURM_MPI,
        'extras': CI_SLURM_EXTRAS,
        # also inside an allocation (local scheduler): a hung tool must not hold it
        'time_limit': '10m',
    }
    if scheduler != 'local':
        part['access'] = ['--partition=debug', '--exclusive']
    else:
        part['prepare_cmds'] = LOCAL_JOB_PREPARE
    return part


site_configuration = {
    'systems': [
        {
            'name': 'example-lustre',
            'descr': 'Example cluster: SLURM, srun, Lustre scratch (copy and adapt)',
            'hostnames': ['^login\\d+\\.example\\.org$'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'compute',
                    'descr': 'Compute nodes, exclusive allocations',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': ['--partition=compute', '--account=io-bench', '--exclusive'],
                    'environs': ['gnu-openmpi'],
                    'max_jobs': 4,
                    'time_limit': '30m',
                    'env_vars': SRUN_ENV,
                    'extras': {
                        'scratch': '/lustre/scratch/$USER/h5regress',
                        'num_nodes': [1, 4],
                        'tasks_per_node': 32,
                        # h5regress study scaling (the DKRZ multifile sweep)
                        'scaling_num_nodes': [10, 100],
                        'scaling_tasks_per_node': [1, 2, 4, 8, 12],
                        'size_factor': 1.0,
                        'stripe_count': 8,
                        'lfs_setstripe': True,
                        'mpiio_layer': 'romio321',
                        'mpiio_hints': {
                            'romio_cb_write': 'enable',
                            'cb_nodes': '4',
                            'cb_buffer_size': '16777216',
                            'striping_factor': '8',
                            'striping_unit': '1048576',
                        },
                        'drop_caches': False,
                        'fio_size': '16G',
                        'node_memory_bytes': 256 * 1024 ** 3,
                    },
                },
                {
                    # ci/nightly inside one allocation (salloc -N4 -p compute
                    # --exclusive ci/nightly --system example-lustre:alloc): the same
                    # nodes for baseline and candidate, the order set by the script
                    'name': 'alloc',
                    'descr': 'Inside an existing allocation: local scheduler, srun',
                    'scheduler': 'local',
                    'launcher': 'srun',
                    'environs': ['gnu-openmpi'],
                    'max_jobs': 1,
                    # the local scheduler kills a job past it (the night goes on)
                    'time_limit': '30m',
                    'prepare_cmds': LOCAL_JOB_PREPARE,
                    'env_vars': SRUN_ENV,
                    'extras': {
                        'scratch': '/lustre/scratch/$USER/h5regress',
                        'num_nodes': [4],
                        'tasks_per_node': 32,
                        'size_factor': 1.0,
                        'stripe_count': 8,
                        'lfs_setstripe': True,
                        'mpiio_layer': 'romio321',
                        'mpiio_hints': {'romio_cb_write': 'enable', 'cb_nodes': '4',
                                        'striping_factor': '8', 'striping_unit': '1048576'},
                        'drop_caches': False,
                        'fio_size': '16G',
                        'node_memory_bytes': 256 * 1024 ** 3,
                    },
                },
            ],
        },
        {
            # The two-node SLURM the tests bring up on one host (tests/slurm_cluster.py);
            # chosen with --system ci-slurm:<partition>, SLURM_CONF in the environment.
            'name': 'ci-slurm',
            'descr': 'Test SLURM cluster on this host: nodes n1, n2, partition debug',
            'hostnames': ['^ci-slurm$'],
            'modules_system': 'nomod',
            'partitions': [
                ci_slurm_partition('squeue-srun', 'squeue scheduler (no accounting), srun',
                                   'squeue', 'srun'),
                ci_slurm_partition('squeue-mpirun', 'squeue scheduler, mpirun in the job',
                                   'squeue', 'mpirun'),
                ci_slurm_partition('slurm-srun', 'slurm scheduler (polls sacct: '
                                   'accounting), srun', 'slurm', 'srun'),
                # ReFrame inside one allocation (salloc -N2 ...): what ci/nightly uses so
                # that baseline and candidate run on the same nodes
                ci_slurm_partition('alloc', 'inside an existing allocation: local '
                                   'scheduler, srun', 'local', 'srun'),
            ],
        },
        {
            'name': 'local',
            'descr': 'This machine: local scheduler, mpirun',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'All cores of this machine; I/O checks run one at a time',
                    'scheduler': 'local',
                    'launcher': 'mpirun',
                    'environs': ['gnu-openmpi'],
                    # I/O checks must not share a node: ReFrame's default would run 8 at once
                    'max_jobs': 1,
                    # a run at local's sizes takes seconds, a build a few minutes: a job
                    # past this hangs, and is killed with its whole process group
                    'time_limit': '15m',
                    'prepare_cmds': LOCAL_JOB_PREPARE,
                    'env_vars': OMPI_AS_ROOT + [
                        # ranks may exceed cores on a workstation
                        ['OMPI_MCA_rmaps_base_oversubscribe', '1'],
                    ],
                    'extras': {
                        'scratch': '{stagedir}/scratch',
                        'num_nodes': [1],
                        'tasks_per_node': 2,
                        # h5regress study scaling: 1 and 2 ranks
                        'scaling_tasks_per_node': [1, 2],
                        'size_factor': 1 / 64,
                        'stripe_count': 1,
                        'lfs_setstripe': False,
                        'mpiio_layer': 'ompio',
                        'mpiio_hints': {},
                        'drop_caches': True,
                        'fio_size': '256M',
                        # FLASH's own 80-82 blocks (16 MB checkpoints at 2 ranks) take
                        # ~10 ms here: timer and page-cache noise. 2000 blocks per rank:
                        # a 393 MB checkpoint, 0.5-1 s with its fsync on this kind of VM
                        'flashio_blocks_per_rank': 2000,
                        # the tools built by fixtures: Debian's parallel HDF5
                        'hdf5_pkg_config': 'hdf5-openmpi',
                    },
                },
            ],
        },
    ],
    'environments': [
        {
            # GCC with Open MPI and parallel HDF5
            'name': 'gnu-openmpi',
            'features': ['mpi', 'hdf5'],
            'cc': 'mpicc',
            'cxx': 'mpicxx',
            'ftn': 'mpif90',
        },
    ],
    'general': [
        {
            'check_search_path': [os.path.join(REPO, 'reframe', 'checks')],
            # a run keeps its full report and test-case JSON next to the perflogs
            'report_file': os.path.join(PERFLOG_DIR, 'reports', 'run-report-{sessionid}.json'),
        },
    ],
    # ReFrame's results database: `reframe --performance-compare` and
    # `reframe --list-stored-sessions` read it.
    'storage': [
        {
            'enable': True,
            'sqlite_db_file': os.path.join(PERFLOG_DIR, 'results.db'),
        },
    ],
    'logging': [
        {
            # one perflog line per performance variable
            'perflog_multiline': True,
            'handlers_perflog': [
                {
                    'type': 'filelog',
                    'basedir': PERFLOG_DIR,
                    'prefix': '%(check_system)s/%(check_partition)s',
                    'level': 'info',
                    # Readable columns first; the last column is the h5regress context
                    # (JSON: parameters, provenance, config hash, run id, samples) and may
                    # hold any character, so readers split at most len(header)-1 times.
                    'format': (
                        '%(check_job_completion_time)s|%(check_name)s|'
                        '%(check_system)s:%(check_partition)s|%(check_environ)s|'
                        '%(check_perf_var)s|%(check_perf_value)s|%(check_perf_unit)s|'
                        '%(check_perf_ref)s|%(check_perf_lower_thres)s|'
                        '%(check_perf_upper_thres)s|%(check_perf_result)s|'
                        '%(check_result)s|%(check_fail_phase)s|%(check_hdf5_build)s|'
                        '%(check_config_hash)s|%(check_run_id)s|%(check_h5r_context)s'
                    ),
                    'datefmt': '%FT%T%:z',
                    'append': True,
                },
            ],
        },
    ],
}
