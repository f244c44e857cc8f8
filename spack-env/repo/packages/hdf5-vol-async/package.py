# h5regress: the async VOL connector 1.7 with a fix for a lost task, extending
# Spack's builtin recipe.
#
# In 1.7 a task is pushed to the Argobots pool only when no other task of the
# file counts as running, and a task counts as running until its Argobots
# thread has terminated, which is after it has set its eventual, marked
# itself done and made its last push.  A blocking call that adds its task in
# that window (h5bench's H5Fcreate_async with H5ES_NONE: the create finishes,
# then HDF5's post-open file_optional is queued) finds the finished task
# "running", leaves its own in the queue, and waits on it forever: the main
# thread spins in Argobots' scheduler, the connector's stream sleeps on an
# empty pool (spack-env/README.md gives the backtraces and counts).  The
# patch counts a task as running only while it is not done; a done task's
# last push runs after its done mark, so a task queued before that push is
# pushed by it, and one queued after it is pushed by its caller.
from spack.package import *

try:  # Spack >= 1.0
    from spack_repo.builtin.packages.hdf5_vol_async.package import (
        Hdf5VolAsync as BuiltinHdf5VolAsync,
    )
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.hdf5_vol_async import Hdf5VolAsync as BuiltinHdf5VolAsync


class Hdf5VolAsync(BuiltinHdf5VolAsync):
    patch("finished-task-not-running.patch", when="@1.7")
