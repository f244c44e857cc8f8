# h5regress: Spack package for the project's own FLASH-IO kernel, and what every
# kernel of this project has in common (ProjectKernel, which h5paths builds on too).
import spack.directives
from spack.package import *

# Spack 1.x gives a package a C compiler only through depends_on("c"); the
# Spack 0.23 development snapshot tested here knows only cxx and fortran as
# language dependencies and fails on "c".  Declare it wherever it is known.
_C_IS_A_DEPENDENCY = "c" in getattr(spack.directives, "SUPPORTED_LANGUAGES", ("c",))


class ProjectKernel(CMakePackage):
    """A kernel of this project (kernels/<name>), built with CMake against a
    parallel HDF5 and MPI.

    The source is this project's tree.  The environment builds it with its
    `develop:` section; there is no release tarball, so the only version is
    `main`, whose source is the develop path.
    """

    # Built from the project tree (spack-env/spack.yaml `develop:`), not fetched.
    version("main")

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


class FlashIo(ProjectKernel):
    """FLASH-IO: the h5regress kernel that writes what the FLASH code writes
    (checkpoint, plotfile and corner plotfile) with parallel HDF5, plus an
    MPI-IO mode that writes the same bytes without HDF5.

    The source is this project's tree (kernels/flash-io), version `main`.
    """

    # The executable the suite runs (checked by Spack after install).
    sanity_check_is_file = ["bin/flash-io"]
