"""The tools built by ReFrame fixtures (h5regress.builds), for machines without Spack.

The real runs build IOR (+ mdtest), json-cwx + MACSio and h5bench from the tarballs of
the commits spack-env/spack.yaml pins, out of the shared Spack source mirror beside the
checkout (``../shared/spack-offline/mirror``, as an air-gapped site keeps one), against
the parallel HDF5 the ``local`` partition names, then run a few rows of every
``*_build_check`` at small sizes. Without the mirror they are skipped, saying so.

Every ReFrame run writes under pytest's temporary directory and sees no Spack manifest.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from h5regress import builds, perflog, sources
from reframe_run import REPO, UNDER_LOAD, run_reframe

#: the shared Spack source mirror beside the checkout
MIRROR = REPO.parent / 'shared' / 'spack-offline' / 'mirror'
#: every binary the fixtures build, which must not be on PATH for the build checks to run
BINARIES = ('ior', 'mdtest', 'macsio', 'h5bench_write', 'h5bench_read',
            'h5bench_exerciser', 'h5bench_hdf5_iotest')
#: the rows the real run covers: one per build check (the builds take most of the time)
ROWS = ('ior_build_check.*HDF5-collective-ssf$|'
        'mdtest_build_check.*unique_dir$|'
        'macsio_build_check.*hdf5-SIF-collective$|'
        'h5bench_write_build_check.*1D-CONTIG-CONTIG-collective$|'
        'h5bench_read_build_check.*1D-FULL$|'
        'h5bench_exerciser_build_check.*2D-collective$|'
        'h5bench_metadata_build_check.*contiguous-independent$')
SMALL = ['-S', 'ior_build_check.block_size=8m', '-S', 'ior_build_check.transfer_size=1m',
         '-S', 'ior_build_check.repetitions=2', '-S', 'mdtest_build_check.items=100',
         '-S', 'macsio_build_check.num_dumps=2',
         '-S', 'h5bench_metadata_build_check.steps=4',
         '-S', 'h5bench_metadata_build_check.arrays=50']

needs_mirror = pytest.mark.skipif(
    not MIRROR.is_dir(), reason=f'no shared source mirror at {MIRROR}: the offline bundle '
    '(../shared/spack-offline/) holds the pinned tool tarballs')


def path_without_tools() -> str:
    """PATH minus the directories holding a tool the fixtures build (else the prebuilt
    check runs it and the build check stands down)."""
    return ':'.join(d for d in os.environ.get('PATH', '').split(':')
                    if d and not any((Path(d) / b).exists() for b in BINARIES))


def reframe_env(**extra) -> dict:
    return {'PATH': path_without_tools(), 'RFM_COLORIZE': 'n', **extra}


# ----------------------------------------------------------------------------- sources

def test_the_pins_come_from_spack_yaml():
    pins = sources.pins()
    assert set(pins) >= {'ior', 'macsio', 'json-cwx', 'h5bench'}
    text = sources.spack_yaml().read_text()
    for name, pin in pins.items():
        assert re.fullmatch(r'[0-9a-f]{40}', pin.commit)
        assert f'git.{pin.commit}={pin.label}' in text, name
    # json-cwx is pinned only through packages: json-cwx: require:
    assert pins['json-cwx'].label == '0.12'
    # several HDF5 pins (baseline, candidate): no single commit to build
    assert 'hdf5' not in pins


def test_pins_of_a_manifest_of_ones_own(tmp_path):
    sha = 'a' * 40
    (tmp_path / 'spack.yaml').write_text(f'''spack:
  definitions:
  - tools:
    - ior@git.{sha}=4.0.0 +hdf5
    - flash-io@=main
  - builds:
    - hdf5@git.{'b' * 40}=1.14.1 +mpi
    - hdf5@git.{'c' * 40}=1.15.0 +mpi
  packages:
    json-cwx:
      require:
      - '@git.{'d' * 40}=0.12'
''')
    pins = sources.pins(tmp_path / 'spack.yaml')
    assert pins == {'ior': sources.Pin('ior', sha, '4.0.0'),
                    'json-cwx': sources.Pin('json-cwx', 'd' * 40, '0.12')}
    with pytest.raises(sources.SourceError, match='pins no single commit of h5bench'):
        sources.pin('h5bench', tmp_path / 'spack.yaml')


def test_where_a_tarball_comes_from(tmp_path, monkeypatch):
    monkeypatch.delenv(sources.ENV_VAR, raising=False)
    pin = sources.pin('ior')
    # nothing named: the upstream archive of the commit, downloaded by the build
    src = sources.locate('ior', {})
    assert src.download and src.origin == \
        f'https://github.com/hpc/ior/archive/{pin.commit}.tar.gz'
    # the partition names a mirror; the environment variable overrides it
    mirror = tmp_path / 'mirror'
    tarball = mirror / '_source-cache' / 'git' / 'hpc' / 'ior.git' / f'{pin.commit}.tar.gz'
    tarball.parent.mkdir(parents=True)
    tarball.write_bytes(b'')
    src = sources.locate('ior', {'tool_sources': f'file://{mirror}'})
    assert not src.download and src.origin == str(tarball)
    monkeypatch.setenv(sources.ENV_VAR, str(tmp_path / 'elsewhere'))
    with pytest.raises(sources.SourceError, match=r'elsewhere: no such directory.*'
                                                  r'\$H5REGRESS_TOOL_SOURCES'):
        sources.locate('ior', {'tool_sources': str(mirror)})
    # a mirror without the tarball: the message names the file, the commit and the setting
    monkeypatch.delenv(sources.ENV_VAR)
    (tmp_path / 'empty').mkdir()
    with pytest.raises(sources.SourceError) as err:
        sources.locate('macsio', {'tool_sources': str(tmp_path / 'empty')})
    macsio = sources.pin('macsio')
    assert f'LLNL/MACSio.git/{macsio.commit}.tar.gz' in str(err.value)
    assert "extras['tool_sources']" in str(err.value)


@pytest.mark.skipif(shutil.which('pkg-config') is None, reason='no pkg-config')
def test_the_hdf5_the_partition_names():
    extras = {'hdf5_pkg_config': 'hdf5-openmpi'}
    try:
        hdf5 = sources.locate_hdf5(extras)
    except sources.SourceError as err:
        pytest.skip(f'no parallel HDF5 through pkg-config here: {err}')
    assert (Path(hdf5.include_dir) / 'hdf5.h').exists()
    assert Path(hdf5.library).exists()
    assert hdf5.found_by == 'pkg-config hdf5-openmpi'
    if hdf5.prefix:
        assert sources.locate_hdf5({'hdf5_prefix': hdf5.prefix}).include_dir
    with pytest.raises(sources.SourceError, match="extras\\['hdf5_prefix'\\]"):
        sources.locate_hdf5({'hdf5_prefix': '/nonexistent'})


def test_compile_flags_from_the_build_output():
    out = '\n'.join([
        '[ 28%] Building C object CMakeFiles/h5bench_write.dir/h5bench_write.c.o',
        'mpicc -I/x -O3 -o CMakeFiles/w.dir/h5bench_write.c.o -c /src/h5bench_write.c',
        "mpicc -DHAVE_CONFIG_H -g -O2 -MT ior.o -c -o ior-ior.o `test -f 'ior.c' || "
        "echo './'`ior.c",
    ])
    assert builds.compile_flags(out, 'h5bench_write.c') == ['-O3']
    assert builds.compile_flags(out, 'ior.c') == ['-g', '-O2']
    assert builds.compile_flags(out, 'mdtest.c') is None
    assert builds.optimisation(['-g']) == '-O0'
    assert builds.optimisation(['-O0', '-O2']) == '-O2'


# ----------------------------------------------------------------------------- failures

def test_a_mirror_without_the_tarball_names_the_setting(tmp_path):
    (tmp_path / 'empty').mkdir()
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r',
                       '-n', 'ior_build_check.*POSIX-independent-ssf$'], tmp_path,
                      env=reframe_env(H5REGRESS_TOOL_SOURCES=str(tmp_path / 'empty')))
    assert out.returncode != 0
    pin = sources.pin('ior')
    assert re.search(rf'build_ior .*\n(.*\n)*?.*Reason: build error: \S*empty/_source-cache/'
                     rf'git/hpc/ior\.git/{pin.commit}\.tar\.gz: no tarball of ior '
                     rf'{pin.label}.*\$H5REGRESS_TOOL_SOURCES', out.stdout), out.stdout
    assert 'dependencies failed' in out.stdout


def test_no_mirror_and_no_network_names_the_url_and_the_setting(tmp_path):
    # the download goes through a proxy that refuses: the same failure as no network
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-r',
                       '-n', 'ior_build_check.*POSIX-independent-ssf$'], tmp_path,
                      env=reframe_env(H5REGRESS_TOOL_SOURCES='',
                                      https_proxy='http://127.0.0.1:9',
                                      HTTPS_PROXY='http://127.0.0.1:9'))
    assert out.returncode != 0
    pin = sources.pin('ior')
    url = f'https://github.com/hpc/ior/archive/{pin.commit}.tar.gz'
    assert f'h5regress: cannot download {url}' in out.stdout, out.stdout
    assert 'set $H5REGRESS_TOOL_SOURCES (or the partition\'s extras["tool_sources"])' \
        in out.stdout


def one_build_manifest(tmp_path: Path) -> Path:
    """A manifest of one HDF5 build whose only tool is a stub ior."""
    import hashlib

    from h5regress import manifest
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'ior').write_text('#!/bin/sh\n')
    (bindir / 'ior').chmod(0o755)
    path = tmp_path / 'manifest.json'
    manifest.write(path, {
        'schema': 1, 'generated': '2026-11-21T00:00:00Z', 'spack_version': 'test',
        'environment': str(tmp_path), 'lock_sha256': hashlib.sha256(b'').hexdigest(),
        'builds': {'hdf5-1.14.1': {
            'hdf5': {'version': '1.14.1', 'label': '1.14.1', 'commit': 'a' * 40,
                     'variants': '+mpi+hl', 'hash': 'x', 'prefix': str(tmp_path)},
            'tools': {'ior': str(bindir / 'ior')}}}})
    return path


def test_with_a_manifest_the_build_checks_stand_down(tmp_path):
    path = one_build_manifest(tmp_path)
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-c', 'reframe/checks/mdtest.py',
                       '-l'], tmp_path, env={'H5REGRESS_MANIFEST': str(path)})
    assert out.returncode == 0, out.stdout + out.stderr
    assert '_build_check' not in out.stdout and 'build_ior' not in out.stdout
    assert len(re.findall(r'^- ior_check .*%hdf5_build=hdf5-1\.14\.1 ', out.stdout, re.M)) == 8


def test_without_manifest_or_tool_the_prebuilt_check_names_the_build_check(tmp_path):
    out = run_reframe(['-c', 'reframe/checks/macsio.py', '-r',
                       '-n', 'macsio_check.*hdf5-SIF-collective$'], tmp_path,
                      env=reframe_env())
    assert out.returncode == 0, out.stdout
    assert re.search(r'SKIP.*macsio not found on PATH: .*; without them macsio_build_check '
                     r'builds it from the commit spack-env/spack.yaml pins', out.stdout)


def test_a_tool_on_path_stands_the_build_check_down(tmp_path):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'mdtest').write_text('#!/bin/sh\n')
    (bindir / 'mdtest').chmod(0o755)
    out = run_reframe(['-c', 'reframe/checks/mdtest.py', '-l', '-v'], tmp_path,
                      env={'PATH': f'{bindir}:{os.environ["PATH"]}'})
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(re.findall(r'^- mdtest_check ', out.stdout, re.M)) == 2
    assert not re.search(r'^- mdtest_build_check', out.stdout, re.M)
    assert f'mdtest is on PATH ({bindir}/mdtest): mdtest_check runs it' in out.stdout


# ----------------------------------------------------------------------------- real runs

@pytest.fixture(scope='module')
def built_run(tmp_path_factory):
    """One ReFrame run: every tool built from the mirror, a few rows of each build check."""
    if not MIRROR.is_dir():
        pytest.skip(f'no shared source mirror at {MIRROR}')
    tmp = tmp_path_factory.mktemp('built')
    out = run_reframe(['-c', 'reframe/checks/ior.py', '-c', 'reframe/checks/mdtest.py',
                       '-c', 'reframe/checks/macsio.py', '-c', 'reframe/checks/h5bench.py',
                       '-n', ROWS, '-r'] + SMALL + UNDER_LOAD, tmp,
                      env=reframe_env(H5REGRESS_TOOL_SOURCES=str(MIRROR)), timeout=1500)
    records, problems = perflog.read([str(tmp / 'perflogs')])
    return out, records, problems


@needs_mirror
@pytest.mark.slow
@pytest.mark.beside
def test_every_build_check_passes(built_run):
    out, records, problems = built_run
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]
    assert not problems, problems
    # one build per tool, shared by its checks (IOR's by ior_build_check and mdtest's)
    for fixture in ('build_ior', 'build_json_cwx', 'build_macsio', 'build_h5bench'):
        assert len(re.findall(rf'^\[ +OK \] \( *\d+/\d+\) {fixture} ', out.stdout,
                              re.M)) == 1, fixture
    assert re.search(r'Ran 11/11 test case\(s\)', out.stdout), out.stdout[-3000:]


@needs_mirror
@pytest.mark.slow
@pytest.mark.beside
def test_records_of_every_tool_with_sane_values(built_run):
    _, records, _ = built_run
    by_tool = {}
    for r in records:
        by_tool.setdefault(r.tool, []).append(r)
    assert set(by_tool) == {'ior', 'mdtest', 'macsio', 'h5bench'}
    for r in records:
        # mdtest is no HDF5 tool: its records name no HDF5 build
        assert r.hdf5_build == ('none' if r.tool == 'mdtest' else 'path')
        assert r.system == 'local:default'
        assert r.params['num_ranks'] == 2
        if r.metric in ('bw_mean', 'bw', 'rate_mean', 'raw_rate', 'observed_rate'):
            assert 0 < r.value < 1e7, (r.tool, r.operation, r.metric, r.value)
    ior = {(r.params['api'], r.operation): r for r in by_tool['ior'] if r.metric == 'bw_mean'}
    assert set(ior) == {('HDF5', 'write'), ('HDF5', 'read')}
    assert all(len(r.samples) == 2 for r in ior.values())
    assert {r.operation for r in by_tool['mdtest']} >= {'file_create', 'file_remove'}
    macsio = {(r.params['interface'], r.params['parallel_file_mode']) for r in by_tool['macsio']}
    assert macsio == {('hdf5', 'SIF')}
    h5bench = {r.params['benchmark'] for r in by_tool['h5bench']}
    assert h5bench == {'write', 'read', 'exerciser', 'metadata'}
    # the metadata benchmark really wrote its datasets (its I/O is inside assert())
    meta = next(r for r in by_tool['h5bench']
                if r.params['benchmark'] == 'metadata' and r.operation == 'write')
    assert meta.provenance['hdf5_library_version']


@needs_mirror
@pytest.mark.slow
@pytest.mark.beside
def test_provenance_says_where_each_tool_came_from(built_run):
    _, records, _ = built_run
    tarballs = {'ior': 'hpc/ior.git', 'mdtest': 'hpc/ior.git', 'macsio': 'LLNL/MACSio.git',
                'h5bench': 'hpc-io/h5bench.git'}
    packages = {'ior': 'ior', 'mdtest': 'ior', 'macsio': 'macsio', 'h5bench': 'h5bench'}
    for r in records:
        prov = r.provenance
        pin = sources.pin(packages[r.tool])
        tarball = str(MIRROR / '_source-cache' / 'git' / tarballs[r.tool] /
                      f'{pin.commit}.tar.gz')
        assert prov['tool_source'] == f'built from {tarball}'
        assert prov['tool_tarball'] == tarball
        assert prov['tool_commit'] == pin.commit and prov['tool_label'] == pin.label
        assert re.fullmatch(r'[0-9a-f]{64}', prov['tool_tarball_sha256'])
        assert prov['tool_hdf5'].startswith('pkg-config hdf5-openmpi: -I')
        assert prov['tool_build_seconds'] > 0
        assert prov['test_class'].endswith('_build_check')
        assert not any('from PATH' in w for w in prov['warnings'])
        # the binary is the one the fixture built
        assert '/build_' in prov['tool_path']
    macsio = next(r for r in records if r.tool == 'macsio').provenance
    dep = macsio['tool_dependencies']['json-cwx']
    assert dep['commit'] == sources.pin('json-cwx').commit and dep['label'] == '0.12'
    ior = next(r for r in records if r.tool == 'ior').provenance
    assert '-O2' in ior['tool_build_flags'].split()


@needs_mirror
@pytest.mark.slow
@pytest.mark.beside
def test_h5bench_is_built_optimised(built_run):
    _, records, _ = built_run
    for r in (r for r in records if r.tool == 'h5bench'):
        prov = r.provenance
        assert prov['tool_build_type'] == 'Release'
        flags = prov['tool_build_flags'].split()
        assert builds.optimisation(flags) in ('-O2', '-O3')
        # asserts kept: the metadata benchmark does its work inside them
        assert '-DNDEBUG' not in flags
        assert any('set(CMAKE_BUILD_TYPE Debug)' in p for p in prov['tool_patches'])
