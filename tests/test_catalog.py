"""The benchmark declarations (h5regress/catalog.py) and what is derived from them."""

import re
import sys
from pathlib import Path

from h5regress import builds, catalog, gateconfig, h5benchbase, manifest, parsers, refs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'benchmarks'))

import redesign_figures  # noqa: E402
from reframe_run import load_check_file  # noqa: E402


def test_manifest_layout_is_derived_from_the_declarations():
    """Every binary a declared tool's package installs is where the manifest looks, with
    its variant; nothing else is (coverage of the catalog, not a copy of it)."""
    expected = {}
    for bench in catalog.BENCHMARKS.values():
        for binary in bench.binaries if bench.package else ():
            expected.setdefault(bench.package, {})[binary.name] = (binary.candidates(),
                                                                   binary.variant)
    assert manifest.TOOL_LAYOUT == expected
    # what the declarations say beyond the default bin/<name>
    assert manifest.TOOL_LAYOUT['macsio']['macsio'] == (('macsio', 'bin/macsio'), None)
    assert manifest.TOOL_LAYOUT['h5bench']['h5bench_exerciser'][1] == 'exerciser'
    assert manifest.TOOL_LAYOUT['ior']['mdtest'] == (('bin/mdtest',), None)


def test_every_declared_tool_has_its_parser_and_reference_file():
    for bench in catalog.BENCHMARKS.values():
        assert parsers.parser_for(bench.tool).__name__ == \
            f'h5regress.parsers.{bench.parser_module}'
        assert (gateconfig.REFERENCES_DIR / bench.reference_file).is_file(), bench.tool
    assert refs.ReferenceFiles.from_checks().by_tool == {
        b.tool: b.reference_file for b in catalog.BENCHMARKS.values()}


def test_every_gate_rule_names_a_declared_tool():
    cfg = gateconfig.load_config()
    rules = [r for key in gateconfig.RULE_KEYS for r in cfg[key]] + [cfg['ceiling']]
    for rule in rules:
        assert rule['tool'] in catalog.BENCHMARKS, rule


def test_case_of_a_record_without_it_comes_from_the_declared_parameters():
    assert refs.index_value('case', 's:p', {'api': 'HDF5', 'preset': 'collective',
                                             'layout': 'ssf'}) == 'HDF5-collective-ssf'
    assert refs.index_value('case', 's:p', {'mode': 'direct'}) == 'direct'


def test_the_memory_warning_is_the_suites_once():
    from h5regress import runresults
    from h5regress.parsers import ParsedRun
    kernel = ('data written (18.0 MiB in 6 files) is below the memory of the 1 node(s) '
              '(7.8 GiB): the figures may be mostly page cache')
    run = ParsedRun(tool='flash-io', params={}, provenance={}, measurements=[],
                    warnings=[kernel, 'something else'])
    warnings = runresults.record_warnings(run, 100, 1000, 1)
    assert [w for w in warnings if 'below the memory' in w] == [
        'data written (100 B) is below the memory of the nodes used (1000 B): the figures '
        'may be mostly page cache']
    assert 'something else' in warnings
    # where the suite cannot tell (node memory unknown), the tool's own is kept
    assert runresults.record_warnings(run, 100, None, 1) == [kernel, 'something else']


def test_a_new_tool_is_the_places_the_readme_names():
    """Every declared tool has a check that runs it (as ReFrame describes the checks),
    its parser, its reference file, and its Spack line where a package installs it;
    the README's "Adding a benchmark" names exactly these places."""
    described = refs.described_checks()
    spack = (REPO / 'spack-env' / 'spack.yaml').read_text()
    for bench in catalog.BENCHMARKS.values():
        assert any(t['tool'] == bench.tool for t in described), f'no check runs {bench.tool}'
        assert parsers.parser_for(bench.tool)
        assert (gateconfig.REFERENCES_DIR / bench.reference_file).is_file(), bench.tool
        if bench.package:
            assert f'    - {bench.package}@' in spack, bench.package
    readme = (REPO / 'README.md').read_text()
    section = readme.split('### Adding a benchmark\n')[1].split('\n### ')[0]
    for place in ('reframe/checks/<tool>.py', 'h5regress/parsers/<parser>.py',
                  'h5regress/catalog.py', 'reframe/config/references/<references>',
                  'ci/gate.yaml', 'spack-env/spack.yaml'):
        assert place in section, place
    # the lists a new tool joins are these places: no other file of the code names them all
    named = set(re.findall(r'`([\w./<>-]+)`', section))
    packaged = {b.package for b in catalog.BENCHMARKS.values() if b.package}
    assert set(redesign_figures.central_lists(packaged)) <= named
    assert set(redesign_figures.central_lists(set(catalog.BENCHMARKS))) <= named
    row = readme.split('### Adding a row\n')[1].split('\n## ')[0]
    assert 'ROWS' in row and 'PATHS' in row and 'h5regress/parsers/h5paths_table.py' in row


def test_build_fixtures_build_the_catalogs_packages():
    """A tool's build fixture (beside its check) builds the Spack package the catalog
    declares for each binary it makes, and makes only declared binaries or what no
    check runs (a library): the fixtures carry no list of their own."""
    macsio = load_check_file('macsio.py', 'macsio_check_file_of_test_catalog')
    package_of = {binary.name: bench.package for bench in catalog.BENCHMARKS.values()
                  for binary in bench.binaries}
    fixtures = (builds.build_ior, h5benchbase.build_h5bench, macsio.build_macsio,
                macsio.build_json_cwx)
    for fixture in fixtures:
        made = [p for p in fixture.products if p in package_of]
        assert all(package_of[p] == fixture.package for p in made), fixture.__name__
        # json-cwx: MACSio's library, not a tool of the catalog
        assert made or fixture.package not in catalog.tool_layout(), fixture.__name__
