"""Which binary a check runs: the tool, its parser, and the resolver's answer
(:class:`ToolResolution`, a mixin of :class:`h5regress.checkbase.IOBenchmark`)."""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable
from reframe.core.exceptions import ReframeError

from h5regress import tools
from h5regress.buildid import NO_BUILD, PATH_BUILD

#: set (to anything) where every tool must be there (CI with the Spack bundle): a check
#: whose tool is missing fails, naming it, instead of being skipped
REQUIRE_TOOLS_ENV = 'H5REGRESS_REQUIRE_TOOLS'


class ToolResolution(rfm.RegressionTestPlugin):
    """The tool a check runs and where its binary comes from."""

    #: Tool the records name (``ior``, ``fio``, ``h5bench``...): the parser's tool.
    #:
    #: :type: str
    #: :default: required
    tool = variable(str, loggable=True)

    #: Binary the resolver looks up, when it is not named like the tool
    #: (``h5bench_write`` of ``h5bench``).
    #:
    #: :type: str
    #: :default: ``''``: the tool name
    binary = variable(str, value='')

    #: Parser of the tool's output (a key of :func:`h5regress.parsers.parser_for`).
    #:
    #: :type: str
    #: :default: the tool name
    parser = variable(str, value='')

    #: Provenance of the tool beyond its path and source, merged into the records'
    #: (a build fixture's commit, tarball, build type and flags: ``h5regress.builds``).
    #:
    #: :type: dict
    #: :default: ``{}``
    tool_provenance = variable(typ.Dict[str, object], value={})

    def hdf5_build_id(self) -> str:
        """HDF5 build this test runs; checks of HDF5 tools carry ``hdf5_build``."""
        return getattr(self, 'hdf5_build', NO_BUILD)

    @run_after('setup')
    def resolve_tool(self):
        """The binary from the resolver; a check built by a fixture overrides this."""
        build = self.hdf5_build_id()
        try:
            self.resolved_tool = tools.find(
                self.binary or self.tool, PATH_BUILD if build == NO_BUILD else build,
                any_build=build == NO_BUILD)
        except tools.ToolNotFound as err:
            if os.environ.get(REQUIRE_TOOLS_ENV):
                raise ReframeError(f'{err} ({REQUIRE_TOOLS_ENV} is set: a missing '
                                   'tool is a failure, not a skip)') from None
            self.skip_because(str(err))
        self.executable = self.resolved_tool.path
