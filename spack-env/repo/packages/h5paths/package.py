# h5regress: Spack package for the project's own h5paths kernel.
from spack.package import *
from spack.pkg.h5regress.flash_io import ProjectKernel


class H5paths(ProjectKernel):
    """h5paths: the h5regress kernel that times the HDF5 code paths where real
    regressions happened (compound subsets and type conversion, metadata-heavy
    files, chunked and filtered datasets, virtual datasets, multi-dataset I/O),
    with parallel HDF5 and MPI, one mode per path.

    The source is this project's tree (kernels/h5paths), version `main`.
    """

    # The executable the suite runs (checked by Spack after install).
    sanity_check_is_file = ["bin/h5paths"]
