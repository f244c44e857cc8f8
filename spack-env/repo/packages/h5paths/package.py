# h5regress: Spack package for the project's own h5paths kernel.
import spack.directives
from spack.package import *

# Spack 1.x gives a package a C compiler only through depends_on("c"); the
# Spack 0.23 development snapshot tested here knows only cxx and fortran as
# language dependencies and fails on "c".  Declare it wherever it is known.
_C_IS_A_DEPENDENCY = "c" in getattr(spack.directives, "SUPPORTED_LANGUAGES", ("c",))


class H5paths(CMakePackage):
    """h5paths: the h5regress kernel that times the HDF5 code paths where real
    regressions happened (compound subsets and type conversion, metadata-heavy
    files, chunked and filtered datasets, virtual datasets, multi-dataset I/O),
    with parallel HDF5 and MPI, one mode per path.

    The source is this project's tree (kernels/h5paths).  The environment
    builds it with its `develop:` section; there is no release tarball, so the
    only version is `main`, whose source is the develop path.
    """

    # Built from the project tree (spack-env/spack.yaml `develop:`), not fetched.
    version("main")

    # The executable the suite runs (checked by Spack after install).
    sanity_check_is_file = ["bin/h5paths"]

    if _C_IS_A_DEPENDENCY:
        depends_on("c", type="build")
    depends_on("cmake@3.16:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.10: +mpi")

    def cmake_args(self):
        hdf5 = self.spec["hdf5"]
        return [
            # Never let CMake's FindHDF5 pick another parallel HDF5 (Debian's
            # in /usr, say): use the one this spec depends on.
            self.define("HDF5_ROOT", hdf5.prefix),
            self.define("HDF5_PREFER_PARALLEL", True),
            self.define("HDF5_C_COMPILER_EXECUTABLE", join_path(hdf5.prefix.bin, "h5pcc")),
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
        ]
