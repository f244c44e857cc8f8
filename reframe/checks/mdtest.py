"""mdtest (ships with IOR): file create, stat, read and remove rates in the data directory.

Metadata rates bound what HDF5 users see when they open, create and close many
files (file-per-process output, MIF dumps). One row of ``benchmark`` is where the
ranks' files go: ``unique_dir``, a directory per rank (``-u``), or ``shared_dir``,
all ranks in one directory (contention on one directory's lock). Every file gets
``file_bytes`` written and read back (``-w``/``-e``; 3901 B as IO500's
mdtest-hard), so "File read" opens and reads data.

On several nodes, stat and read go to another node's files (``-N`` tasks per
node), out of the client cache; on one node they are served from it, and the records
say so (``stat_read_cache``, and a warning naming the two rates).

``mdtest_check`` runs the mdtest of the Spack environment (or of PATH);
``mdtest_build_check`` the mdtest of IOR's tree, built by IOR's fixture
(:class:`h5regress.builds.build_ior`, the same build ``ior_build_check`` runs), when
there is no manifest and no ``mdtest`` on PATH; ``mdtest_check`` then skips naming it.
"""

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_after, variable

from h5regress import proof
from h5regress.builds import BuiltByFixture, Prebuilt, build_ior
from h5regress.checkbase import IOBenchmark

#: mdtest operations reported as performance variables
OPERATIONS = ('file_create', 'file_stat', 'file_read', 'file_remove')


class mdtest_base(IOBenchmark):
    #: Where the ranks' files go: a directory per rank (``-u``) or one shared directory.
    benchmark = parameter(['unique_dir', 'shared_dir'], loggable=True)

    #: Files per rank (mdtest ``-n``).
    #:
    #: :type: int
    #: :default: ``500``
    items = variable(int, value=500)

    #: Iterations inside one execution (``-i``): the rates are their mean.
    #:
    #: :type: int
    #: :default: ``2``
    iterations = variable(int, value=2)

    #: Bytes written to and read from each file (``-w``, ``-e``).
    #:
    #: :type: int
    #: :default: ``3901`` (IO500's mdtest-hard)
    file_bytes = variable(int, value=3901)

    tool = 'mdtest'
    output_files = ['stdout', 'stderr']

    def row_params(self):
        return {'layout': self.benchmark, 'items': self.items,
                'iterations': self.iterations, 'write_bytes': self.file_bytes,
                'read_bytes': self.file_bytes, 'files_only': True,
                'unique_dir': self.benchmark == 'unique_dir',
                # on several nodes, stat and read another node's files, not the cached ones
                'nstride': self.tasks_per_node if self.num_nodes > 1 else 0}

    def row_options(self, p):
        return (['-F'] * p['files_only'] +
                ['-n', str(p['items']), '-i', str(p['iterations']),
                 '-w', str(p['write_bytes']), '-e', str(p['read_bytes'])] +
                ['-u'] * p['unique_dir'] + (['-N', str(p['nstride'])] if p['nstride'] else []))

    def run_options(self):
        return ['-d', self.data_dir]

    def row_data_bytes(self, p):
        return p['items'] * p['write_bytes'] * self.num_tasks

    def expected_output(self, p):
        """mdtest removes every item it made (its remove phase): the proof it leaves is
        the data directory changed while it ran (its tree made and removed there) and
        nothing left behind. How many items it made only its output says."""
        return proof.Expectation(nothing_else=True, changed=True)

    def perf_table(self):
        return {f'{op}_rate': (op, 'rate_mean', 'ops/s') for op in OPERATIONS}

    def parse_output(self, files):
        run = super().parse_output(files)
        if self.num_nodes == 1:
            # mdtest stats and reads the files it has just made, in one execution: on
            # one node from this node's inode, dentry and page caches (-N needs nodes)
            run.provenance['stat_read_cache'] = 'kept (one node: the files just made)'
            run.warnings.append('file_stat and file_read rates on one node come from this '
                                "node's caches: mdtest stats and reads back the files it "
                                'has just made')
        return run


@rfm.simple_test
class mdtest_check(Prebuilt, mdtest_base):
    """mdtest of the Spack environment (any HDF5 build's IOR), else from PATH."""


@rfm.simple_test
class mdtest_build_check(BuiltByFixture, mdtest_base):
    """mdtest from IOR's fixture build, when nothing provides it."""

    #: IOR's build (it makes mdtest too): shared with ior_build_check
    tool_build = fixture(build_ior, scope='environment')
