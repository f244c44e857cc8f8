# h5regress: Argobots (the async VOL connector's threading library) pinned by
# git commit, extending Spack's builtin recipe.
#
# The builtin recipe's versions are release tarballs (configure included); a
# git checkout, which is what the environment pins (argobots@git.<sha>=1.2) and
# what the source mirror carries, has no configure: it is made by autogen.sh,
# whose tools the builtin recipe declares only for @main.  The environment
# builds Argobots only from git, so they are declared for every version here.
import os

from spack.package import *

try:  # Spack >= 1.0
    from spack_repo.builtin.packages.argobots.package import Argobots as BuiltinArgobots
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.argobots import Argobots as BuiltinArgobots


class Argobots(BuiltinArgobots):
    depends_on("m4", type="build")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")

    sanity_check_is_file = ["include/abt.h"]

    def autoreconf(self, spec, prefix):
        # A release tarball has its configure; a git tree gets it from
        # autogen.sh (autoreconf plus the m4 and Makefile fragments it writes).
        if not os.path.exists("configure"):
            Executable("./autogen.sh")()
