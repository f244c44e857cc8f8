"""The h5paths checks (reframe/checks/h5paths.py): rows, options, gate roles, a dry run
(fast), and real runs on `local` of the kernel built by the check's fixture (slow).
Against the Spack environment's two HDF5 builds: tests/test_spack_tools.py."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from h5regress import gate, gateconfig, manifest, perflog
from h5regress.parsers import h5paths as parser
from h5regress.parsers.h5paths_table import PATHS, Row
from kernel_build import cmake_build
from reframe_run import REPO, UNDER_LOAD, load_check_file, run_reframe, two_build_manifest
from test_reliability import chained_config, full_fs  # noqa: F401 (a fixture)

CHECKS = REPO / 'reframe' / 'checks' / 'h5paths.py'


def check_module():
    """The check file as a module, loaded without a Spack manifest (as the ReFrame runs
    of these tests are)."""
    return load_check_file('h5paths.py', 'h5paths_check_file')


def test_the_table_covers_the_issue():
    rows = check_module().rows()
    assert len(rows) == len(set(rows))
    paths = {r[0] for r in rows}
    assert paths == set(parser.PHASES), 'every path of the kernel has a row'
    compound = [r for r in rows if r[0].startswith('compound-') and r[1] == 'hdf5']
    for path in ('compound-same', 'compound-subset', 'compound-superset', 'compound-reorder'):
        assert {r[3] for r in compound if r[0] == path} == {'contiguous', 'chunked'}
    assert {r[0] for r in compound if r[4]} == {'compound-subset', 'compound-superset',
                                               'compound-reorder'}
    assert {r[2] for r in compound} == {'collective', 'independent', 'serial'}
    for path in ('many-datasets', 'attributes', 'open-close'):
        mine = [r for r in rows if r[0] == path]
        assert {r[5] for r in mine} == {False, True}, path       # collective metadata
        assert len({r[6] for r in mine}) == 2, path               # two format bounds
    # MPI-IO twins of the data rows only (the kernel has none for the others)
    assert {r[0] for r in rows if r[1] == 'mpiio'} == {
        p for p in parser.PHASES if p.startswith(('compound-', 'convert-'))}
    assert all(r[3] == 'contiguous' for r in rows if r[1] == 'mpiio')
    # warm reads of every compound and conversion path (where a conversion regression shows),
    # and the serial open-close (HDF5's own time of an open and close: corpus cases 10658
    # and the object-close cork); serial warm reads of the conversions the corpus names
    # (compound subset, the in-place superset, float <- double); the strided reads through
    # a driver with vector callbacks (corpus case vector-vfd-bypasses-sieve-clio-980)
    assert {r[0] for r in rows if r[7] == 'keep'} == {
        p for p in parser.PHASES if p.startswith(('compound-', 'convert-'))} | {
        'open-close', 'strided-contiguous'}
    assert [r for r in rows if r[2] == 'serial'] == [
        Row('open-close', transfer='serial', read_cache='keep'),
        Row('vlen-reopen', transfer='serial', nightly=True),
        Row('chunk-cache', transfer='serial', layout='chunked', nightly=True),
        Row('compound-subset', transfer='serial', read_cache='keep'),
        Row('compound-superset', transfer='serial', read_cache='keep'),
        Row('convert-float-double', transfer='serial', read_cache='keep'),
        Row('strided-contiguous', transfer='serial', read_cache='keep', vfd='h5r_vector',
            nightly=True)]
    # a file driver only where a row is serial (the parallel rows' driver is MPI-IO's)
    assert all(r.transfer == 'serial' for r in rows if r.vfd)


def test_a_row_is_one_line_of_the_one_paths_table():
    """Rows name only what differs from Row's defaults; every path a row runs is in the
    one paths table (PATHS) the parser reads its phases from, and every path of the
    kernel (its --path list) is in it."""
    checks = check_module()
    assert all(isinstance(r, Row) for r in checks.ROWS)
    assert {r.path for r in checks.ROWS} == set(PATHS) == set(parser.PHASES)
    kernel = ''.join(p.read_text() for p in (REPO / 'kernels' / 'h5paths' / 'src').glob('*.c'))
    kernel_paths = set(re.findall(r'\{"([a-z0-9-]+)", "[a-z]+", [01], ', kernel))
    assert kernel_paths == set(PATHS)
    rows_source = re.search(r'^ROWS = \[\n(.*?)^\]', CHECKS.read_text(), re.M | re.S)[1]
    one_line = [ln for ln in rows_source.splitlines() if ln.strip().startswith('Row(')]
    assert len(one_line) == len(checks.ROWS) and all(ln.endswith('),') for ln in one_line)


def test_every_hdf5_row_has_one_gated_metric_and_its_twin_a_canary():
    checks, cfg = check_module(), gateconfig.load_config()
    ignore = cfg['canary_ignore_params']
    gated, canaries = {}, {}
    for row in checks.rows():
        params = checks.row_params(row, chunk_elements=65536, iterations=3)
        roles = {}
        for phase in parser.PHASES[row[0]]:
            for metric in ('bw', 'ops_per_s', 'time', 'peak_rss'):
                roles[(phase, metric)] = gate.role_of(cfg, 'h5paths', phase, metric, params)
        chosen = [k for k, role in roles.items() if role in ('gated', 'canary')]
        if row[1] == 'hdf5':
            assert len(chosen) == 1 and roles[chosen[0]] == 'gated', (row, roles)
            gated[checks.row_name(row)] = (chosen[0], params)
        else:
            assert len(chosen) == 1 and roles[chosen[0]] == 'canary', (row, roles)
            canaries[checks.row_name(row)] = (chosen[0], params)

    def signature(key, params):
        return gate._signature({'tool': 'h5paths', 'operation': key[0], 'metric': key[1],
                                'params': params}, ignore)
    twins = {signature(*v) for v in canaries.values()}
    assert len(twins) == len(canaries)
    paired = [name for name, v in gated.items() if signature(*v) in twins]
    # every MPI-IO row is the twin of the cold HDF5 row of its path, transfer and layout;
    # the warm rows have none (an MPI-IO read of the page cache would compare nothing)
    assert sorted(paired) == sorted(n.replace('-mpiio-', '-hdf5-') for n in canaries)


def test_options_of_a_row():
    checks = check_module()
    params = checks.row_params(('compound-subset', 'hdf5', 'independent', 'chunked', True,
                                False, 'v110', 'keep', True), chunk_elements=4096,
                               iterations=2)
    assert checks.row_options(params) == [
        '--path', 'compound-subset', '--api', 'hdf5', '--transfer', 'independent',
        '--layout', 'chunked', '--chunk-elements', '4096', '--modify-write-buf',
        '--libver', 'v110', '--elements', str(PATHS['compound-subset'].elements),
        '--objects', '1', '--iterations', '2', '--read-cache', 'keep',
        '--read-repeats', str(PATHS['compound-subset'].warm_read_repeats)]
    params = checks.row_params(('many-datasets', 'hdf5', 'collective', 'contiguous', False,
                                True, 'earliest', 'evict', True), size_factor=0.5,
                               chunk_elements=4096,
                               iterations=1)
    # a metadata path's work is its objects; its datasets stay their size
    assert params['chunk_elements'] == 0
    assert params['objects'] == PATHS['many-datasets'].objects // 2
    assert params['elements'] == PATHS['many-datasets'].elements
    assert '--coll-metadata' in checks.row_options(params)
    assert '--chunk-elements' not in checks.row_options(params)
    assert '--read-cache' not in checks.row_options(params)     # the kernel's default
    assert '--read-repeats' not in checks.row_options(params) and params['read_repeats'] == 1
    assert '--efc-size' not in checks.row_options(params)


def test_efc_has_a_twin_without_the_cache():
    """The external file cache row and its twin differ only in the cache: the same links
    traversed as often, with H5Pset_elink_file_cache_size(files) and (0)."""
    checks = check_module()
    efc = [r for r in checks.rows() if r[0] == 'efc']
    assert len(efc) == 2 and {r[:8] for r in efc} == {efc[0][:8]}
    names = {r[8]: checks.row_name(r) for r in efc}
    assert names == {True: 'efc-hdf5-collective-contiguous-earliest',
                     False: 'efc-hdf5-collective-contiguous-earliest-efc0'}
    opts = {r[8]: checks.row_options(checks.row_params(r, chunk_elements=4096, iterations=2))
            for r in efc}
    objects = str(PATHS['efc'].objects)
    assert opts[True][opts[True].index('--efc-size') + 1] == objects
    assert opts[False][opts[False].index('--efc-size') + 1] == '0'
    for o in opts.values():
        del o[o.index('--efc-size') + 1]
    assert opts[True] == opts[False]
    cfg = gateconfig.load_config()
    for r in efc:      # both gated: a slower uncached traversal is a regression too
        p = checks.row_params(r, chunk_elements=4096, iterations=2)
        assert gate.role_of(cfg, 'h5paths', 'open_read', 'ops_per_s', p) == 'gated'


def test_list_and_dry_run_without_a_manifest(tmp_path):
    out = run_reframe(['-c', str(CHECKS), '--dry-run', '-n', 'h5paths_build_check'], tmp_path,
                      env={'RFM_COLORIZE': 'n'})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = len(check_module().rows())
    # the file driver rows skip: the kernel this tree builds installs no driver plugin
    vfd = [r for r in check_module().rows() if r.vfd]
    assert len(re.findall(r'^\[\s+OK \].*h5paths_build_check', out.stdout, re.M)) == \
        rows - len(vfd)
    assert len(re.findall(r'^\[\s+SKIP \].*h5paths_build_check.*vfd-', out.stdout, re.M)) == \
        len(vfd)
    scripts = {p.parent.name: p.read_text() for p in (tmp_path / 'stage').rglob('rfm_job.sh')}
    subset = [s for s in scripts.values()
              if '--path compound-subset --api hdf5 --transfer collective --layout chunked '
                 '--chunk-elements 65536 --modify-write-buf' not in s and
              '--path compound-subset --api hdf5 --transfer collective --layout chunked' in s]
    assert len(subset) == 1
    assert re.search(r'mpirun -np 2 \S+/build/h5paths --path compound-subset .* --iterations 3 '
                     r'--keep --json h5paths.json "\S+/h5p_"', subset[0])
    assert "trap 'rm -rf " in subset[0] and 'h5regress-exit-code: $h5r_rc' in subset[0]


def test_one_test_per_row_and_manifest_build(tmp_path):
    path = two_build_manifest(tmp_path, ('h5paths',))
    out = run_reframe(['-c', str(CHECKS), '-l'], tmp_path, env={'H5REGRESS_MANIFEST': str(path)})
    assert out.returncode == 0, out.stdout + out.stderr
    rows = len(check_module().rows())
    for build_id in ('hdf5-1.14.1', 'hdf5-1.15.0'):
        assert len(re.findall(rf'^- h5paths_check .*%hdf5_build={build_id} ', out.stdout,
                              re.M)) == rows
    assert 'h5paths_build_check' not in out.stdout


def test_both_kernels_are_built_by_one_fixture_class():
    """flash-io and h5paths are built from this tree by one KernelBuild fixture, and their
    build checks take its binary the way every tool's build check does (BuiltByFixture)."""
    from h5regress import builds
    h5p = check_module()
    spec = importlib.util.spec_from_file_location(
        'flashio_check_file', REPO / 'reframe' / 'checks' / 'flashio.py')
    flashio = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = flashio
    spec.loader.exec_module(flashio)
    for module, build, check, kernel in (
            (h5p, 'build_h5paths', 'h5paths_build_check', 'h5paths'),
            (flashio, 'build_flashio', 'flashio_build_check', 'flash-io')):
        assert issubclass(getattr(module, build), builds.KernelBuild)
        assert getattr(module, build).kernel == kernel
        assert issubclass(getattr(module, check), builds.BuiltByFixture)


# -- real runs --------------------------------------------------------------------

def _missing():
    return [t for t in ('cmake', 'mpicc', 'mpirun', 'h5pcc') if not shutil.which(t)]


#: every row, small: seconds each on `local`
SMALL = ['-S', 'h5paths_build_check.iterations=2', '-S', 'h5paths_build_check.size_factor=0.0625',
         '-S', 'h5paths_build_check.chunk_elements=16384']


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.skipif(bool(_missing()), reason=f'needs {", ".join(_missing())} (Debian: cmake '
                    'libopenmpi-dev openmpi-bin libhdf5-openmpi-dev)')
def test_every_row_built_from_this_tree_runs_on_local(tmp_path):
    out = run_reframe(['-c', str(CHECKS), '-r', '-n', 'h5paths_build_check'] + SMALL + UNDER_LOAD,
                      tmp_path,
                      env={'RFM_COLORIZE': 'n'}, timeout=2400)
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-2000:]
    records, problems = perflog.read([str(tmp_path / 'perflogs')])
    assert not problems, problems
    checks = check_module()
    ran = {r.params['case'] for r in records}
    skipped = re.findall(r'SKIP \].*%benchmark=(\S+) .*\[(.*)\]', out.stdout)
    # Debian's HDF5 1.10.8 has neither multi-dataset I/O nor H5Pset_modify_write_buf nor
    # the 1.14 calls of the kernel's 1.5.0 paths, and reads metadata on every rank when
    # the file access list asks for collective metadata reads (the kernel counts its
    # MPI-IO calls): those rows are skipped with the kernel's words, never failed, never
    # recorded; the kernel built from this tree installs no driver plugin (the file driver
    # rows)
    needs_1_14 = ('multi-dataset', 'multi-chunk', 'point-selections', 'storage-kinds',
                  'vlen-strings')
    for name, why in skipped:
        assert name.startswith(needs_1_14) or '-mwb-' in name or '-cmd-' in name or \
            '-vfd-' in name, (name, why)
        assert 'not available in HDF5' in why or 'no H5Pset_modify_write_buf' in why or \
            ('--coll-metadata not done' in why and 'independent MPI-IO reads' in why) or \
            ('-vfd-' in name and 'has no h5r_vector plugin' in why)
    assert ran | {name for name, _ in skipped} == {checks.row_name(r) for r in checks.rows()}
    assert {name for name, _ in skipped if '-cmd-' in name} == \
        {checks.row_name(r) for r in checks.rows() if r.coll_metadata}
    cfg = gateconfig.load_config()
    for r in records:
        assert r.value > 0 and len(r.samples) == 2, r
        assert r.provenance['tool_source'] == 'built from kernels/h5paths'
        # the fixture (builds.KernelBuild) records how it built the kernel
        assert r.provenance['tool_build_type'] == 'Release'
        assert r.provenance['tool_build_flags'].split()[0] in ('-O2', '-O3'), r.provenance
        assert r.provenance['hdf5_version'].startswith('1.')
        assert r.provenance['read_cache'] in ('evicted', 'not-evicted: no read phase ran') or \
            r.provenance['read_cache'].startswith('not-evicted')
    gated = {r.params['case'] for r in records
             if gate.role_of(cfg, r.tool, r.operation, r.metric, r.params) == 'gated'}
    assert gated == {c for c in ran if '-hdf5-' in c}


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.skipif(bool(_missing()), reason=f'needs {", ".join(_missing())}')
def test_a_row_on_a_full_scratch_fails_naming_enospc(full_fs, tmp_path):
    """The data directory on an 8 MiB tmpfs: the write hits ENOSPC (HDF5 1.10.8 then
    crashes at MPI_Finalize); the row FAILs naming the cause, and leaves no record."""
    env = {'RFM_CONFIG_FILES': chained_config(tmp_path, scratch=str(full_fs)),
           'RFM_COLORIZE': 'n'}
    out = run_reframe(['-c', str(CHECKS), '-r', '-n',
                       'h5paths_build_check.*compound-same-hdf5-collective-contiguous',
                       '-S', 'h5paths_build_check.iterations=2',
                       '-S', 'h5paths_build_check.size_factor=0.25'], tmp_path, env=env,
                      timeout=900)
    assert out.returncode != 0, out.stdout
    assert 'No space left on device' in out.stdout, out.stdout[-4000:]
    records, _ = perflog.read([str(tmp_path / 'perflogs')])
    assert [r for r in records if r.tool == 'h5paths'] == []
    assert list(full_fs.iterdir()) == []            # the data were removed


@pytest.fixture(scope='module')
def kernel_from_this_tree(tmp_path_factory):
    """The kernel built from this tree against the parallel HDF5 CMake finds (Debian's)."""
    build = tmp_path_factory.mktemp('h5paths-build')
    cmake_build(REPO / 'kernels' / 'h5paths', build)
    return build / 'h5paths'


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.skipif(bool(_missing()), reason=f'needs {", ".join(_missing())}')
@pytest.mark.parametrize('args', [
    ['--path', 'compound-same', '--elements', '131072'],
    # several files written one after the other: the next H5Fcreate is collective
    ['--path', 'efc', '--elements', '200000', '--objects', '4'],
    ['--path', 'many-datasets', '--elements', '20000', '--objects', '100']])
def test_the_kernel_on_a_full_file_system_exits_with_its_error_line(
        kernel_from_this_tree, full_fs, tmp_path, args):
    """A write that fills the file system: the kernel closes what it opened and exits 1
    with its error lines, naming ENOSPC. (It used to end on a segfault in MPI_Finalize,
    exit 139: with HDF5 1.10.8 the failed write made H5Fclose fail too, which left a
    file ID whose file HDF5 had freed.)"""
    summary = tmp_path / 'h5paths.json'
    out = subprocess.run(
        ['mpirun', '-np', '2', str(kernel_from_this_tree), *args, '--iterations', '2',
         '--json', str(summary), str(full_fs / 'h5p_')],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, 'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
             'OMPI_MCA_rmaps_base_oversubscribe': '1', 'OMPI_MCA_io': 'ompio'})
    assert out.returncode == 1, (out.returncode, out.stderr[-3000:])
    assert 'Segmentation fault' not in out.stderr and 'signal' not in out.stderr
    assert 'h5paths: FAILED' in out.stdout
    # not anchored at a line's start: the two ranks share stderr, and another rank's
    # HDF5-DIAG text can end up on the same line before it (seen in a CI rehearsal)
    assert re.search(r'h5paths: ERROR .*No space left on device', out.stderr), \
        out.stderr[-3000:]
    d = json.loads(summary.read_text())
    assert d['status'] == 'failed' and any('No space left on device' in e for e in d['errors'])
    assert list(full_fs.iterdir()) == []            # the files were removed


def mpirun_within(seconds: int, what: str, *args, **env: str) -> tuple[int, str, str]:
    """``mpirun -np 2 ARGS`` with ``env`` added: (exit code, stdout, stderr); past
    ``seconds`` every process of it is killed and the test fails, calling it a hang."""
    proc = subprocess.Popen(
        ['mpirun', '-np', '2', *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, 'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
             'OMPI_MCA_rmaps_base_oversubscribe': '1', 'OMPI_MCA_io': 'ompio', **env})
    try:
        stdout, stderr = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f'{what} ran past {seconds} s (a hang)')
    return proc.returncode, stdout, stderr


@pytest.fixture(scope='module')
def kernel_hdf5_1_14(tmp_path_factory):
    """The kernel built from this tree against the Spack environment's HDF5 1.14 build."""
    try:
        builds = json.loads(manifest.default_path().read_text())['builds']
    except (OSError, ValueError, KeyError):
        pytest.skip('no Spack manifest (spack-env/manifest.json)')
    prefixes = [b['hdf5']['prefix'] for b in builds.values()
                if b['hdf5']['version'].startswith('1.14.')]
    if not prefixes or not os.path.isdir(prefixes[0]):
        pytest.skip('no HDF5 1.14 build in the Spack manifest')
    build = tmp_path_factory.mktemp('h5paths-build-1.14')
    cmake_build(REPO / 'kernels' / 'h5paths', build, f'-DHDF5_ROOT={prefixes[0]}',
                f'-DCMAKE_BUILD_RPATH={prefixes[0]}/lib')
    return build / 'h5paths'


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
@pytest.mark.skipif(bool(_missing()), reason=f'needs {", ".join(_missing())}')
def test_the_metadata_path_on_a_full_file_system_ends_naming_enospc(
        kernel_hdf5_1_14, full_fs, tmp_path):
    """many-datasets filling the file system with HDF5 1.14.1 (2 MiB left of the 8 MiB
    tmpfs): the kernel ends in seconds, exit 1, naming ENOSPC. Kernel 1.1.0 hung until the
    time limit: HDF5's H5Fclose after the failed write left its ranks in different
    collectives (a barrier of the metadata cache's sync point, the broadcast of
    H5FD__mpio_truncate)."""
    with open(full_fs / 'filler', 'wb') as fp:
        os.posix_fallocate(fp.fileno(), 0, 6 * 1024 * 1024)
    summary = tmp_path / 'h5paths.json'
    returncode, stdout, stderr = mpirun_within(
        120, 'the kernel on a full file system', kernel_hdf5_1_14, '--path', 'many-datasets',
        '--libver', 'v110', '--elements', '16', '--objects', '15000', '--iterations', '2',
        '--json', str(summary), str(full_fs / 'h5p_'))
    assert returncode == 1, (returncode, stderr[-3000:])
    assert 'h5paths: FAILED' in stdout
    assert re.search(r'^h5paths: ERROR .*No space left on device', stderr, re.M), stderr[-3000:]
    assert json.loads(summary.read_text())['status'] == 'failed'
    assert [p.name for p in full_fs.iterdir()] == ['filler']     # the file was removed


PASS_THROUGH = 'pass_through under_vol=0;under_info={}'


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
@pytest.mark.skipif(bool(_missing()), reason=f'needs {", ".join(_missing())}')
def test_ranks_on_different_vol_connectors_end_at_once_naming_both(kernel_hdf5_1_14, tmp_path):
    """HDF5_VOL_CONNECTOR reaching rank 0 and not rank 1 (a launcher that does not pass
    the environment to every node): HDF5's collective file open then waits for ever
    (kernel 1.9.0's first build hung there); the kernel stops before any file, exit 1,
    naming each rank's connector."""
    wrapper = tmp_path / 'rank1-native.sh'
    wrapper.write_text('#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && unset HDF5_VOL_CONNECTOR\n'
                       f'exec {kernel_hdf5_1_14} "$@"\n')
    wrapper.chmod(0o755)
    returncode, _, stderr = mpirun_within(
        60, 'ranks on different VOL connectors', wrapper, '--path', 'open-close', '--objects',
        '20', '--iterations', '1', '--json', str(tmp_path / 'h5paths.json'),
        str(tmp_path / 'h5p_'), HDF5_VOL_CONNECTOR=PASS_THROUGH)
    assert returncode == 1, stderr[-3000:]
    assert ("h5paths: ERROR the ranks' files go through different VOL connectors "
            "(rank 0 pass_through, rank 1 native)") in stderr
    assert not list(tmp_path.glob('h5p_*'))


@pytest.mark.slow
@pytest.mark.beside
@pytest.mark.spack_env
def test_a_row_through_a_vol_connector_on_every_build_is_keyed_by_it(tmp_path):
    """`-S h5paths_check.vol_connector=...` with HDF5's built-in pass-through connector:
    each Spack build's run passes sanity and its records carry the connector its files
    went through, so the gate never pairs them with native rows."""
    if not manifest.default_path().is_file():
        pytest.skip('no Spack manifest (spack-env/manifest.json)')
    row = 'open-close-hdf5-collective-contiguous-earliest'
    out = run_reframe(['-c', 'reframe/checks', '-n', f'^h5paths_check(?=.*%benchmark={row}(%|$))',
                       '-S', f'h5paths_check.vol_connector={PASS_THROUGH}', '-r', *UNDER_LOAD],
                      tmp_path, timeout=600,
                      env={'H5REGRESS_MANIFEST': str(manifest.default_path()),
                           'H5REGRESS_REQUIRE_TOOLS': '1'})
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]
    records, problems = perflog.read([str(tmp_path / 'perflogs')])
    assert not problems, problems
    builds = {r.hdf5_build for r in records}
    assert len(builds) >= 2, builds
    assert {(r.params.get('vol_connector'), r.provenance['vol_connector_asked'])
            for r in records} == {('pass_through', PASS_THROUGH)}


def test_the_file_driver_row_finds_the_plugin_of_a_wrapped_kernel(tmp_path):
    """A coverage run (and any site's wrapper) puts a script in front of the kernel: the
    driver row takes its plugin from the kernel's own prefix, not from the wrapper's,
    which has none (the row was skipped on the coverage build of 1.15.0). Dry run: the
    job script asks HDF5 for the driver and names the plugin directory."""
    kernel = tmp_path / 'kernel' / 'bin' / 'h5paths'
    plugins = tmp_path / 'kernel' / 'lib' / 'h5paths' / 'vfd'
    kernel.parent.mkdir(parents=True)
    plugins.mkdir(parents=True)
    kernel.write_text('#!/bin/sh\nexit 0\n')
    kernel.chmod(0o755)
    (plugins / 'libh5r_vector.so').write_text('')
    tools = {'h5paths': str(kernel)}
    manifest.wrap_tools(tools, tmp_path / 'wrappers', ['export WRAPPED=1'], 'a test')
    path = f'{os.path.dirname(tools["h5paths"])}:{os.environ["PATH"]}'
    out = run_reframe(['-c', 'reframe/checks/h5paths.py', '--dry-run',
                       '-n', r'^h5paths_check(?=.*%benchmark=strided-contiguous\S*-vfd-)'],
                      tmp_path, env={'H5REGRESS_MANIFEST': 'none', 'PATH': path})
    assert out.returncode == 0 and 'SKIP' not in out.stdout, out.stdout[-2000:]
    scripts = list((tmp_path / 'stage').rglob('rfm_job.sh'))
    assert len(scripts) == 1, scripts
    script = scripts[0].read_text()
    assert 'export HDF5_DRIVER="h5r_vector"' in script
    assert f'export HDF5_PLUGIN_PATH="{plugins}"' in script


def test_the_noise_benchmark_runs_the_driver_row_through_its_driver(tmp_path, monkeypatch):
    """benchmarks/h5paths_noise.py asks HDF5 for a row's file driver as the check does:
    without it the driver row ran through sec2 and was printed under its own name."""
    spec = importlib.util.spec_from_file_location(
        'h5paths_noise_under_test', REPO / 'benchmarks' / 'h5paths_noise.py')
    noise = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noise)
    checks = noise.load_check_module()
    kernel = tmp_path / 'kernel' / 'bin' / 'h5paths'
    asked = {}

    def one_run(args, exe, opts, scratch, preload):
        asked[opts[opts.index('--path') + 1]] = preload
        return {'value': 1.0}
    monkeypatch.setattr(noise, 'one_run', one_run)
    rows = [r for r in checks.rows() if r.vfd or r.path == 'flush-datasets']
    args = argparse.Namespace(size_factor=1.0, chunk_elements=65536, iterations=1)
    noise.run_pair(args, 0, 'rows', rows, checks, (str(kernel), str(kernel), {}, 'A'),
                   tmp_path, None)
    assert asked['strided-contiguous'] == {
        'HDF5_DRIVER': 'h5r_vector',
        'HDF5_PLUGIN_PATH': str(tmp_path / 'kernel' / 'lib' / 'h5paths' / 'vfd')}
    assert asked['flush-datasets'] == {}


@pytest.mark.skipif(not shutil.which('mpicc') or not shutil.which('pkg-config'),
                    reason='needs mpicc and pkg-config')
def test_the_kernels_includes_hold_for_a_1_13_0_without_h5fddevelop(tmp_path):
    """A 2020 develop commit of HDF5 says 1.13.0 but has no H5FDdevelop.h (it came
    during 1.13.0's development): the kernel took the version as the header's sign and
    did not build (the replay of 5d8c5849's first parent, 2026-11-29). Debian's headers,
    relabelled 1.13.0, stand in for its headers (preprocessed only: they lack what
    1.12 added); CMake defines H5PATHS_HAVE_H5FDDEVELOP only when it finds the header."""
    cflags = subprocess.run(['pkg-config', '--cflags', 'hdf5-openmpi'], capture_output=True,
                            text=True)
    if cflags.returncode:
        pytest.skip('no pkg-config module hdf5-openmpi')
    includes = [f[2:] for f in cflags.stdout.split() if f.startswith('-I')]
    hdf5_include = next((d for d in includes if os.path.isfile(f'{d}/H5public.h')), None)
    if hdf5_include is None:
        pytest.skip(f'no H5public.h under hdf5-openmpi\'s include flags: {cflags.stdout}')
    headers = tmp_path / 'include'
    shutil.copytree(hdf5_include, headers)
    assert not (headers / 'H5FDdevelop.h').exists()
    public = headers / 'H5public.h'
    text, n = re.subn(r'#define H5_VERS_MINOR\s+\d+', '#define H5_VERS_MINOR 13',
                      public.read_text())
    assert n == 1
    public.write_text(text)
    src = REPO / 'kernels' / 'h5paths' / 'src'
    out = subprocess.run(
        ['mpicc', '-E', '-o', os.devnull, f'-I{headers}', f'-I{src}',
         f'-I{REPO / "kernels" / "common"}', str(src / 'main.c')],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
