"""The tools built by ReFrame fixtures, for machines without the Spack environment.

Like ReFrame's hpctestlib ``osu_build_run``: a tool's build test (a :class:`ToolBuild`)
stands beside its check, used by its checks as a fixture with ``scope='environment'``,
so that one run builds each tool once per partition and environment. Here are the
bases and the builds more than one check file shares:

- :class:`ToolBuild`: a third-party tool from the commit its Spack pin names (MACSio's
  and json-cwx's builds are in ``reframe/checks/macsio.py``, h5bench's in
  :mod:`h5regress.h5benchbase`);
- :class:`build_ior`: IOR and mdtest (IOR's tree ships mdtest), autotools: the ior
  and mdtest checks share it;
- :class:`KernelBuild`: this project's kernels (``kernels/<name>``), built from this
  tree with CMake.

A tool's build is of the commit ``spack-env/spack.yaml`` pins, from the site's source
mirror or the upstream archive (:mod:`h5regress.sources`), against the parallel HDF5
the partition names (:func:`h5regress.sources.locate_hdf5`). A build's sanity checks
the products exist and that the compile line of its main source is optimised; what
it was built from and how (tarball, commit, sha256, build type, compile flags, HDF5)
goes into the provenance of every record of the checks that run it.

The checks use two mixins: :class:`BuiltByFixture` for the ``*_build_check`` tests
(their binaries come from the fixture named ``tool_build``), :class:`Prebuilt` for
the ``*_check`` tests (binaries from the Spack manifest or PATH). Without a Spack
manifest exactly one of the two runs each row: the prebuilt check when the tool is
on PATH, the build check when it is not.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import BuildError, SkipTestError
from reframe.core.meta import make_test

from h5regress import sources, tools

#: the build output's line with the build's wall time in milliseconds
BUILD_TIME_MARK = 'h5regress-build-milliseconds:'
#: compiler options that say how optimised a build is, as recorded
_FLAG = re.compile(r'^-(O\S*|g\S*|march=\S+|mtune=\S+|DNDEBUG|fno-omit-frame-pointer)$')


def compile_flags(build_output: str, source: str) -> list[str] | None:
    """The optimisation and debug flags of the line compiling ``source``, or None."""
    name = re.compile(rf"(^|[\s/'\"`]){re.escape(source)}(['\"`\s]|$)")
    for line in build_output.splitlines():
        words = line.split()
        if '-c' in words and name.search(line):
            return [w for w in words if _FLAG.match(w)]
    return None


def optimisation(flags: list[str]) -> str:
    """The effective -O level (the last one wins; none means -O0)."""
    levels = [f for f in flags if f.startswith('-O')]
    return levels[-1] if levels else '-O0'


class ToolBuild(rfm.CompileOnlyRegressionTest):
    """A tool built from the commit ``spack-env/spack.yaml`` pins (the base of the
    build fixtures)."""

    #: Spack package built: its pin in ``spack-env/spack.yaml`` gives the commit.
    #:
    #: :type: str
    #: :default: required
    package = variable(str)

    #: What the build makes, by name (tools by their binary's name): paths relative to
    #: the stage directory. Sanity checks each exists.
    #:
    #: :type: dict
    #: :default: ``{}``
    products = variable(typ.Dict[str, str], value={})

    #: Source file whose compile line (in the build output) shows the flags used.
    #:
    #: :type: str
    #: :default: required
    main_source = variable(str)

    #: CMake build type (``CMAKE_BUILD_TYPE``); ``''`` for an autotools build, which
    #: keeps configure's default CFLAGS (``-g -O2``).
    #:
    #: :type: str
    #: :default: ``''``
    build_type = variable(str, value='')

    #: The tool does real work inside ``assert()`` (h5bench's metadata benchmark creates
    #: its datasets there): the build must not define ``NDEBUG``, which sanity checks.
    #:
    #: :type: bool
    #: :default: ``False``
    keep_asserts = variable(typ.Bool, value=False)

    #: Parallel build jobs (the machines are small, and a Spack build may run beside).
    #:
    #: :type: int
    #: :default: ``2``
    build_jobs = variable(int, value=2)

    #: Whether the tool links HDF5 (the partition's, see :func:`sources.locate_hdf5`).
    #:
    #: :type: bool
    #: :default: ``True``
    uses_hdf5 = variable(typ.Bool, value=True)

    #: Changes made to the unpacked source before building, as recorded.
    #:
    #: :type: list of str
    #: :default: ``[]``
    patches = variable(typ.List[str], value=[])

    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    sourcesdir = None

    @run_after('setup')
    def queue_with_the_benchmarks(self):
        """Where the partition's jobs run on this machine (local scheduler), the build
        takes a slot of the partition's ``max_jobs`` like a benchmark, so it never runs
        beside one (ReFrame counts local builds apart, against ``max_local_jobs``)."""
        if self.current_partition.scheduler.registered_name == 'local':
            self.build_locally = False

    @run_before('compile')
    def fetch_source(self):
        """Unpack the pinned tarball (from the mirror, or downloaded) into ``<package>/``."""
        extras = self.current_partition.extras
        try:
            self.source = sources.locate(self.package, extras)
            self.hdf5 = sources.locate_hdf5(extras) if self.uses_hdf5 else None
        except sources.SourceError as err:
            raise BuildError(str(err)) from None
        # the build's own prebuild steps follow, ending in the source tree (``cd``): the
        # build system's srcdir is the stage directory's (ReFrame resets it)
        self.prebuild_cmds = (['h5r_build_t0=$(date +%s%N)'] +
                              self.source.unpack_commands(self.package) + self.prebuild_cmds)
        # the build's wall time (fetch, unpack, configure, compile, install), recorded
        self.postbuild_cmds = self.postbuild_cmds + [
            f'echo "{BUILD_TIME_MARK} $(( ($(date +%s%N) - h5r_build_t0) / 1000000 ))"']
        self.build_system.max_concurrency = self.build_jobs

    def product(self, name: str) -> str:
        try:
            return os.path.join(self.stagedir, self.products[name])
        except KeyError:
            raise tools.ToolNotFound(f'{name} is not built by {type(self).__name__} '
                                     f'({", ".join(sorted(self.products))})') from None

    def build_output(self) -> str:
        """The build's standard output ('' before it ran, or in a dry run)."""
        try:
            with open(os.path.join(self.stagedir, self.stdout.evaluate()),
                      errors='replace') as fp:
                return fp.read()
        except (OSError, TypeError):
            return ''

    def flags(self) -> list[str] | None:
        return compile_flags(self.build_output(), self.main_source)

    def build_seconds(self) -> float | None:
        m = re.search(rf'^{BUILD_TIME_MARK} (\d+)$', self.build_output(), re.M)
        return int(m.group(1)) / 1000 if m else None

    @sanity_function
    def built(self):
        missing = [p for p in self.products.values()
                   if not os.path.isfile(os.path.join(self.stagedir, p))]
        flags = self.flags()
        return sn.all([
            sn.assert_false(missing, msg=f'{self.package}: not built: {", ".join(missing)}'),
            sn.assert_true(flags is not None,
                           msg=f'{self.package}: no compile line of {self.main_source} in '
                               'the build output'),
            sn.assert_true(flags is None or optimisation(flags) != '-O0',
                           msg=f'{self.package}: {self.main_source} compiled without '
                               f'optimisation ({" ".join(flags or [])})'),
            sn.assert_false(self.keep_asserts and '-DNDEBUG' in (flags or []),
                            msg=f'{self.package}: compiled with -DNDEBUG, which drops the '
                                'work it does inside assert()'),
        ])

    def provenance(self) -> dict:
        """What the records of a check running this build say about the tool."""
        sha = ''
        try:
            with open(os.path.join(self.stagedir, f'{self.package}.sha256')) as fp:
                sha = fp.read().split()[0]
        except (OSError, IndexError):
            pass
        prov = {
            'tool_commit': self.source.pin.commit,
            'tool_label': self.source.pin.label,
            'tool_tarball': self.source.origin,
            'tool_tarball_sha256': sha,
            'tool_build_type': self.build_type or 'autotools (configure default CFLAGS)',
            'tool_build_flags': ' '.join(self.flags() or []),
            'tool_build_seconds': self.build_seconds(),
            'tool_build_stagedir': self.stagedir,
        }
        if self.patches:
            prov['tool_patches'] = list(self.patches)
        if self.hdf5 is not None:
            prov['tool_hdf5'] = self.hdf5.describe()
        return prov

    def tool(self, name: str) -> tools.Tool:
        """The binary ``name`` as the resolver would give it, with its origin."""
        return tools.Tool(name, self.product(name), tools.PATH_BUILD,
                          f'built from {self.source.origin}')

    def hdf5_link_flags(self) -> list[str]:
        lib = self.hdf5.lib_dir
        return [f'-L{lib}', f'-Wl,-rpath,{lib}']


#: this tree's kernels, one directory each (``kernels/<name>``)
KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'kernels')


class KernelBuild(rfm.CompileOnlyRegressionTest):
    """A kernel of this project (``kernels/<kernel>``) built from this tree with CMake,
    against the parallel HDF5 CMake finds (Debian's on ``local``): the fixture of a
    kernel's ``*_build_check`` (:class:`BuiltByFixture`), as :class:`ToolBuild` is a
    tool's. The sources are this checkout's, not a pinned commit's: the records say
    ``built from kernels/<kernel>`` and the build type and compile flags used."""

    #: The kernel: its directory under ``kernels/`` and the name of its binary.
    #:
    #: :type: str
    #: :default: required
    kernel = variable(str)

    #: Source file whose compile line (in the build output) shows the flags used.
    #:
    #: :type: str
    #: :default: ``'src/main.c'``
    main_source = variable(str, value='src/main.c')

    #: Extra CMake options, e.g. ``-DHDF5_ROOT=/path``.
    #:
    #: :type: list of str
    #: :default: ``[]``
    cmake_options = variable(list, value=[])

    #: CMake build type (``CMAKE_BUILD_TYPE``).
    #:
    #: :type: str
    #: :default: ``'Release'``
    build_type = variable(str, value='Release')

    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    build_system = 'CMake'

    @run_after('init')
    def kernel_sources(self):
        self.sourcesdir = os.path.join(KERNELS, self.kernel)

    @run_before('compile')
    def configure(self):
        self.build_system.builddir = 'build'
        # the stage holds a copy of kernels/<kernel> alone: the code both kernels
        # share is taken from this tree
        self.build_system.config_opts = ([f'-DCMAKE_BUILD_TYPE={self.build_type}',
                                          f'-DKERNEL_COMMON_DIR={KERNELS}/common'] +
                                         self.cmake_options)
        # the compile lines in the output, for the recorded flags
        self.build_system.build_opts = ['VERBOSE=1']
        self.build_system.max_concurrency = 2

    def product(self, name: str) -> str:
        if name != self.kernel:
            raise tools.ToolNotFound(f'{name} is not built by {type(self).__name__} '
                                     f'({self.kernel})')
        return os.path.join(self.stagedir, 'build', self.kernel)

    def flags(self) -> list[str] | None:
        try:
            with open(os.path.join(self.stagedir, self.stdout.evaluate()),
                      errors='replace') as fp:
                return compile_flags(fp.read(), self.main_source)
        except (OSError, TypeError):
            return None

    @sanity_function
    def built(self):
        return sn.assert_true(os.path.isfile(self.product(self.kernel)),
                              msg=f'{self.kernel} binary not built')

    def provenance(self) -> dict:
        return {'tool_label': f'kernels/{self.kernel}',
                'tool_build_type': self.build_type,
                'tool_build_flags': ' '.join(self.flags() or []),
                'tool_build_stagedir': self.stagedir}

    def tool(self, name: str) -> tools.Tool:
        """The binary as the resolver would give it, with its origin."""
        return tools.Tool(name, self.product(name), tools.PATH_BUILD,
                          f'built from kernels/{self.kernel}')


class build_ior(ToolBuild):
    """IOR and mdtest: ``./bootstrap``, ``./configure --with-hdf5``, ``make``."""

    package = 'ior'
    products = {'ior': 'ior/src/ior', 'mdtest': 'ior/src/mdtest'}
    main_source = 'ior.c'
    build_system = 'Autotools'

    @run_before('compile')
    def configure(self):
        self.prebuild_cmds += ['cd ior', './bootstrap']
        self.build_system.config_opts = ['--with-hdf5']
        self.build_system.cppflags = [f'-I{self.hdf5.include_dir}']
        self.build_system.ldflags = self.hdf5_link_flags()
        # full compile lines in the output (automake's silent rules hide the flags)
        self.build_system.build_opts = ['V=1']


# ----------------------------------------------------------------------------- the checks

def _sibling(test, suffix_from: str, suffix_to: str) -> str:
    name = type(test).__name__
    return name[:-len(suffix_from)] + suffix_to if name.endswith(suffix_from) else name


class BuiltByFixture(rfm.RegressionTestPlugin):
    """Mixin of a ``*_build_check``: the binaries come from the fixture ``tool_build``
    (a :class:`ToolBuild`, or a :class:`KernelBuild` for this project's kernels), which
    the check declares.

    It runs only where nothing else provides the tool: skipped when the Spack manifest
    has HDF5 builds (the ``*_check`` runs those), and when the tool is on PATH (the
    ``*_check`` runs that one), so no row runs twice.
    """

    @run_after('init')
    def only_where_nothing_else_provides_it(self):
        prebuilt = _sibling(self, '_build_check', '_check')
        name = self.binary or self.tool
        self.skip_if(tools.builds() != [tools.PATH_BUILD],
                     f'the Spack manifest has HDF5 builds: {prebuilt} runs its {name}')
        on_path = shutil.which(name)
        self.skip_if(on_path is not None, f'{name} is on PATH ({on_path}): {prebuilt} runs it')

    @run_after('setup')
    def resolve_tool(self):
        """The fixture's binary instead of the resolver's; its build in the provenance."""
        self.resolved_tool = self.tool_build.tool(self.binary or self.tool)
        self.executable = self.resolved_tool.path
        self.tool_provenance = self.tool_build.provenance()

    def companion_binary(self, name: str) -> str:
        """Another binary of the same build (h5bench's read test runs h5bench_write)."""
        return self.tool_build.product(name)


def build_check(base: type, module: str, doc: str, **body: Any) -> type:
    """The ``<tool>_build_check`` of the check ``base`` (``<tool>_base``), registered
    with ReFrame in the check file ``module`` (its ``__name__``): :class:`BuiltByFixture`
    with ``body`` (its ``tool_build`` fixture), on the partition's HDF5 only, the build
    the records call ``path``. One declaration serves every such twin: ReFrame refuses
    a parameter that two bases define, so no mixin can carry ``hdf5_build``."""
    name = base.__name__.removesuffix('_base') + '_build_check'
    body = {'__doc__': doc, **body,
            'hdf5_build': parameter([tools.PATH_BUILD], inherit_params=False, loggable=True)}
    return rfm.simple_test(make_test(name, (BuiltByFixture, base), body, module=module))


class Prebuilt(rfm.RegressionTestPlugin):
    """Mixin of a ``*_check`` whose tool can also be built by a fixture: without a Spack
    manifest and without the tool on PATH it is skipped, naming the ``*_build_check``
    that builds and runs the tool instead."""

    @run_after('setup')
    def resolve_tool(self):
        try:
            super().resolve_tool()
        except SkipTestError as err:
            if tools.builds() == [tools.PATH_BUILD]:
                raise SkipTestError(
                    f'{err}; without them {_sibling(self, "_check", "_build_check")} '
                    'builds it from the commit spack-env/spack.yaml pins') from None
            raise

    def companion_binary(self, name: str) -> str:
        return tools.find(name, self.resolved_tool.build).path
