"""The benchmarks of the suite, each declared once.

One :class:`Benchmark` entry per tool says everything the rest of the suite needs
to know about it, and the rest is derived from :data:`BENCHMARKS`:

- the Spack package that installs it and the binaries it installs (paths relative to
  the install prefix, and the variant that must be on): :mod:`h5regress.manifest`'s
  ``TOOL_LAYOUT`` (:func:`tool_layout`);
- the parser module of its output: :func:`h5regress.parsers.parser_for`;
- the reference file its checks read and ``h5regress refs`` writes
  (``reframe/config/references/<references>``): :class:`h5regress.checkbase.IOBenchmark`
  sets each check's ``reference`` from it, and :class:`h5regress.refs.ReferenceFiles`
  names the file of a record's class from it;
- the record parameters that make its reference row (``case``) when a record does not
  carry it: :func:`h5regress.refs.index_value`.

The check itself (``reframe/checks/<tool>.py``) holds the rows and the options of a row;
fields left at their defaults are the tool's own name.

**Where the gated metric lives.** Which metric of which test gets a verdict (and which
are canaries and controls) is gate *policy*, and a site may change it with its own
``--config``: it is said once, in ``ci/gate.yaml``'s rules (``gated``, ``canary``,
``control``), which match records by ``tool`` -- the name declared here -- operation,
metric and parameters. Nothing here repeats it: a declaration carries no gated metric,
and a new row of an existing tool is gated by the tool's rule with no edit of
``ci/gate.yaml``. ``tests/test_catalog.py`` checks that every rule names a declared tool.

Standard library only: ``spack-env/install`` loads :mod:`h5regress.manifest` (and so
this module) before any virtualenv exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Binary:
    """One binary a Spack package installs."""

    name: str
    #: candidate paths relative to the install prefix, the first that exists wins
    #: (default ``bin/<name>``)
    paths: tuple[str, ...] = ()
    #: the package variant that must be on for the binary to be there (None: always)
    variant: str | None = None

    def candidates(self) -> tuple[str, ...]:
        return self.paths or (f'bin/{self.name}',)


@dataclass(frozen=True)
class Benchmark:
    """One tool of the suite: every fact about it that is not its check's rows."""

    #: the tool as the records name it (and ``ci/gate.yaml``'s rules match it)
    tool: str
    #: module under :mod:`h5regress.parsers` that reads its output (default: ``tool``)
    parser: str = ''
    #: reference file under ``reframe/config/references/`` (default ``<tool>.yaml``)
    references: str = ''
    #: Spack package that installs it (None: not from the Spack environment)
    package: str | None = None
    #: binaries of ``package`` the checks run (each a tool of the manifest)
    binaries: tuple[Binary, ...] = ()
    #: record parameters whose values, joined by ``-``, make the reference row
    #: (``case``) of a record that does not carry it
    case_params: tuple[str, ...] = field(default=())

    @property
    def parser_module(self) -> str:
        return self.parser or self.tool

    @property
    def reference_file(self) -> str:
        return self.references or f'{self.tool}.yaml'


#: every benchmark of the suite, by tool name
BENCHMARKS: dict[str, Benchmark] = {b.tool: b for b in (
    Benchmark('ior', package='ior', binaries=(Binary('ior'),),
              case_params=('api', 'preset', 'layout')),
    # mdtest ships with IOR: the same package installs it
    Benchmark('mdtest', package='ior', binaries=(Binary('mdtest'),)),
    # from the distribution (Debian's fio), not from the Spack environment
    Benchmark('fio', case_params=('mode',)),
    # MACSio installs its binary at the top of its prefix, not in bin/
    Benchmark('macsio', package='macsio',
              binaries=(Binary('macsio', ('macsio', 'bin/macsio')),)),
    Benchmark('h5bench', package='h5bench', binaries=(
        Binary('h5bench_write'), Binary('h5bench_read'),
        # h5bench_write with a particle count per rank drawn from a normal law (STDEV_DIM_1)
        Binary('h5bench_write_var_normal_dist'),
        Binary('h5bench_exerciser', variant='exerciser'),
        Binary('h5bench_hdf5_iotest', variant='metadata'))),
    Benchmark('flash-io', parser='flashio', references='flashio.yaml', package='flash-io',
              binaries=(Binary('flash-io'),)),
    # the HDF5 code paths where regressions happened (kernels/h5paths): one row per path
    Benchmark('h5paths', package='h5paths', binaries=(Binary('h5paths'),),
              case_params=('path', 'api', 'transfer', 'layout')),
)}


def get(tool: str) -> Benchmark:
    """The declaration of ``tool``; KeyError naming the declared tools."""
    try:
        return BENCHMARKS[tool]
    except KeyError:
        raise KeyError(f'no benchmark {tool!r} is declared in h5regress/catalog.py; '
                       f'declared: {", ".join(sorted(BENCHMARKS))}') from None


def tool_layout() -> dict[str, dict[str, tuple[tuple[str, ...], str | None]]]:
    """Spack package -> {binary: (candidate paths, variant)}: what the manifest expects."""
    layout: dict[str, dict[str, tuple[tuple[str, ...], str | None]]] = {}
    for bench in BENCHMARKS.values():
        if bench.package:
            for binary in bench.binaries:
                layout.setdefault(bench.package, {})[binary.name] = (
                    binary.candidates(), binary.variant)
    return layout
