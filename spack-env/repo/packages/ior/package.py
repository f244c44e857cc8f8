# h5regress: IOR, extending Spack's builtin recipe with the upstream git
# repository, so that the environment can pin IOR by commit
# (ior@git.<sha>=4.0.0) and a source mirror can carry that commit.
from spack.package import *

try:  # Spack >= 1.0
    from spack_repo.builtin.packages.ior.package import Ior as BuiltinIor
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.ior import Ior as BuiltinIor


class Ior(BuiltinIor):
    git = "https://github.com/hpc/ior.git"

    # Both executables the suite runs (checked by Spack after install).
    sanity_check_is_file = ["bin/ior", "bin/mdtest"]
