# h5regress: h5bench with version 1.6, extending Spack's builtin recipe.
#
# The builtin recipe stops at 1.4 and clones every git submodule (AMReX,
# openPMD-api, E3SM-IO, MACSio), which the metadata and exerciser benchmarks
# do not need and which an air-gapped source mirror would have to carry.
# Here only the submodules of the selected benchmarks are initialised.
from spack.package import *

try:  # Spack >= 1.0: builtin packages live in the spack_repo.builtin namespace
    from spack_repo.builtin.packages.h5bench.package import H5bench as BuiltinH5bench
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.h5bench import H5bench as BuiltinH5bench


def _needed_submodules(pkg):
    """Submodules the selected variants build from (none for +metadata +exerciser)."""
    spec = pkg.spec
    if spec.satisfies("+all"):
        return ["amrex", "openpmd", "e3sm", "macsio"]
    return [name for name in ("amrex", "openpmd", "e3sm") if spec.satisfies(f"+{name}")]


# CMake's flags of each optimised build type, without -DNDEBUG.
_OPTIMISED_FLAGS_WITH_ASSERTS = {
    "Release": "-O3",
    "RelWithDebInfo": "-O2 -g",
    "MinSizeRel": "-Os",
}


class H5bench(BuiltinH5bench):
    # h5bench 1.6 (tag 1.6).
    version(
        "1.6",
        commit="675c86d11832c625f1d71e63d7626308170ba8c5",
        submodules=_needed_submodules,
    )

    # CMakeLists.txt calls find_package(Python REQUIRED) (it installs the
    # `h5bench` driver script).
    depends_on("python@3:", type="build", when="@1.6:")

    # +async: the builtin recipe asks for hdf5-vol-async@1.5 (dropped below,
    # after the class); h5bench 1.6 works with the connector's 1.7, the
    # version the environment pins.
    depends_on("hdf5-vol-async@1.7:", when="@1.6: +async")

    def setup_build_environment(self, env):
        super().setup_build_environment(env)
        if self.spec.satisfies("+async"):
            # CMakeLists.txt takes the connector's headers and libraries
            # (h5_async_lib.h, libasynchdf5, libh5async) from $ASYNC_HOME.
            env.set("ASYNC_HOME", self.spec["hdf5-vol-async"].prefix)

    def patch(self):
        # h5bench's CMakeLists.txt sets CMAKE_BUILD_TYPE to Debug itself (-g,
        # no optimisation) whatever the command line says: drop that line so
        # that the build_type variant (-DCMAKE_BUILD_TYPE, default Release)
        # decides.
        filter_file(r"^\s*set\(CMAKE_BUILD_TYPE Debug\)\s*$", "", "CMakeLists.txt")

    def cmake_args(self):
        args = super().cmake_args()
        # Optimised, but with the asserts kept: the metadata benchmark does
        # its work inside assert() (H5Dcreate, H5Sselect_hyperslab, ...), so
        # CMake's -DNDEBUG of the optimised build types would leave it
        # writing nothing.  These are CMake's defaults without -DNDEBUG.
        build_type = self.spec.variants["build_type"].value
        flags = _OPTIMISED_FLAGS_WITH_ASSERTS.get(build_type)
        if flags:
            for lang in ("C", "CXX"):
                args.append(self.define(f"CMAKE_{lang}_FLAGS_{build_type.upper()}", flags))
        hdf5 = self.spec["hdf5"]
        if hdf5.satisfies("+subfiling"):
            # h5bench 1.6 looks for H5FDsubfiling.h in HDF5_INCLUDE_DIRS, which a
            # CMake-built HDF5's package config leaves empty: without these its
            # SUBFILING option is compiled out ("HDF5 version does not support
            # SUBFILING") although the VFD is there
            args += [
                self.define("H5FDsubfiling_H", join_path(hdf5.prefix.include,
                                                         "H5FDsubfiling.h")),
                self.define("HAVE_SUBFILING_VFD", True),
            ]
        return args


def _without_builtin_async_pin(dependencies):
    """The recipe's dependencies without the builtin `hdf5-vol-async@1.5`
    (when +async): it would conflict with the 1.7 declared above.  New dicts,
    so that the builtin class keeps its own."""
    kept = {}
    for when, by_name in dependencies.items():
        dep = by_name.get("hdf5-vol-async")
        if dep is not None and str(dep.spec.versions) == "1.5":
            by_name = {name: d for name, d in by_name.items() if name != "hdf5-vol-async"}
        if by_name:
            kept[when] = by_name
    return kept


H5bench.dependencies = _without_builtin_async_pin(H5bench.dependencies)
