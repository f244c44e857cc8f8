"""Every check against every HDF5 build of the Spack environment, for real, on `local`.

These tests read the manifest the Spack environment wrote (``spack-env/manifest.json``,
see spack-env/README.md). Without one they skip -- unless ``$H5REGRESS_EXPECT_SPACK``
is set (``.ci/run`` sets it when the offline bundle is there), when a missing
manifest is a failure. The ReFrame run sets ``$H5REGRESS_REQUIRE_TOOLS``: a check
whose tool the manifest lacks fails, naming the tool, instead of being skipped.

Sizes are small (this is the plumbing: every tool, every build, every parser, real
output), and one ReFrame run serves all the assertions. That run measures nothing (the
envelopes of `local` are floors against absurd values): its tests are marked `beside`,
and `.ci/run` runs them beside the fast tests. The short real night is a night: it runs
after them, with the machine to itself.
"""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from h5regress import manifest, perflog
from reframe_run import REPO, UNDER_LOAD, run_reframe

pytestmark = [pytest.mark.slow, pytest.mark.spack_env]

MANIFEST = REPO / 'spack-env' / 'manifest.json'
#: every tool of the environment: (check name regex, tool as the records name it)
CHECKS = {
    'ior_check': 'ior',
    'mdtest_check': 'mdtest',
    'macsio_check': 'macsio',
    'h5bench_write_check': 'h5bench',
    'h5bench_read_check': 'h5bench',
    'h5bench_exerciser_check': 'h5bench',
    'h5bench_metadata_check': 'h5bench',
    'flashio_check': 'flash-io',
    'h5paths_check': 'h5paths',
}
#: small sizes: each run takes seconds
SMALL = ['-S', 'ior_check.block_size=8m', '-S', 'ior_check.transfer_size=1m',
         '-S', 'ior_check.repetitions=2', '-S', 'mdtest_check.items=100',
         '-S', 'macsio_check.num_dumps=2', '-S', 'flashio_check.iterations=2',
         '-S', 'h5bench_metadata_check.steps=4', '-S', 'h5bench_metadata_check.arrays=50',
         '-S', 'h5paths_check.iterations=2', '-S', 'h5paths_check.size_factor=0.0625',
         '-S', 'h5paths_check.chunk_elements=16384']


def manifest_builds():
    if not MANIFEST.exists():
        why = (f'no {MANIFEST.relative_to(REPO)}: install the Spack environment '
               '(ci/setup --spack-bundle DIR, see spack-env/README.md)')
        if os.environ.get('H5REGRESS_EXPECT_SPACK'):
            pytest.fail(f'H5REGRESS_EXPECT_SPACK is set but {why}', pytrace=False)
        pytest.skip(why)
    return manifest.load(MANIFEST)


@pytest.fixture(scope='module')
def real_run(tmp_path_factory):
    """One ReFrame run of every check of the environment, both builds."""
    builds = manifest_builds()
    tmp = tmp_path_factory.mktemp('spack-tools')
    names = '|'.join(f'^{name}' for name in CHECKS)
    # one retry, which test_only_async_rows_were_retried allows to the ASYNC rows alone
    out = run_reframe(['-c', 'reframe/checks', '-n', f'({names})', '-r', '--max-retries', '1']
                      + SMALL + UNDER_LOAD, tmp,
                      env={'H5REGRESS_MANIFEST': str(MANIFEST),
                           'H5REGRESS_REQUIRE_TOOLS': '1', 'RFM_COLORIZE': 'n'},
                      timeout=2400)
    records, problems = perflog.read([str(tmp / 'perflogs')])
    return builds, out, records, problems


@pytest.mark.beside
def test_only_async_rows_were_retried(real_run):
    """The async VOL connector 1.7 can deadlock (spack-env/README.md): an ASYNC row past
    its time limit may run once more. Any other test that needed a retry fails here."""
    _, out, _, _ = real_run
    report = json.loads(Path(out.args[out.args.index('--report-file') + 1]).read_text())
    retried = [tc['display_name'] for run in report['runs'][1:] for tc in run['testcases']]
    assert all('%benchmark=' in name and 'async' in name.split('%benchmark=')[1]
               for name in retried), retried
    if retried:
        print(f'retried after the first run (ASYNC rows): {retried}')


@pytest.mark.beside
def test_every_check_passes_against_every_build(real_run):
    builds, out, records, problems = real_run
    assert len(builds) >= 2, f'the environment pins several HDF5 builds: {sorted(builds)}'
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]
    assert not problems, problems
    assert 'is not installed for HDF5 build' not in out.stdout


@pytest.mark.beside
def test_every_tool_has_records_of_every_build(real_run):
    builds, _, records, _ = real_run
    seen = Counter((r.tool, r.hdf5_build) for r in records)
    # mdtest does not link HDF5: one run, with any build's binary
    assert seen[('mdtest', 'none')] > 0, seen
    for tool in set(CHECKS.values()) - {'mdtest'}:
        for build in builds:
            if tool == 'h5bench' and 'h5bench_write' not in builds[build].tools:
                continue   # h5bench's recipe excludes HDF5 2.x builds (spack-env/README.md)
            assert seen[(tool, build)] > 0, f'no {tool} record of build {build}: {seen}'


@pytest.mark.beside
def test_the_async_rows_ran_through_the_connector_of_every_build(real_run):
    """The three ASYNC rows of each build with an ``async`` entry ran (none hung, none
    was skipped) through that entry's connector and h5bench."""
    builds, _, records, _ = real_run
    for build, b in builds.items():
        if b.async_io is None:
            continue
        rows = {r.params.get('io'): r for r in records
                if r.hdf5_build == build and r.params.get('mode') == 'ASYNC'}
        assert set(rows) == {'async', 'async-mem-limit', 'async-delayed-close'}, (build, rows)
        for r in rows.values():
            assert r.provenance['async_vol_connector_version'] == b.async_io.connector_version
            assert r.provenance['tool_path'] in b.async_io.tools.values(), r.provenance


@pytest.mark.beside
def test_the_file_driver_row_ran_through_the_plugin_of_every_build(real_run):
    """The h5paths row with a file driver (``Row.vfd``) ran on every build through the
    kernel's h5r_vector plugin, which the kernel names after opening a file through it:
    its records carry the driver, the other serial rows' do not (sec2)."""
    builds, _, records, _ = real_run
    through = {r.hdf5_build for r in records if r.tool == 'h5paths'
               and r.params.get('serial_driver') == 'h5r_vector'
               and r.params['path'] == 'strided-contiguous'}
    assert through == set(builds), through
    assert {r.params.get('serial_driver') for r in records if r.tool == 'h5paths'
            and r.params.get('transfer') == 'serial'
            and r.params['path'] != 'strided-contiguous'} == {None}


@pytest.mark.beside
def test_records_name_the_spack_build_they_ran(real_run):
    builds, _, records, _ = real_run
    for r in records:
        if r.tool == 'mdtest':      # not linked with HDF5: any build's binary will do
            continue
        b = builds[r.hdf5_build]
        assert r.provenance['tool_source'] == 'spack-manifest', r.provenance
        # an ASYNC row runs the build's h5bench built with the connector
        paths = {*b.tools.values(), *(b.async_io.tools.values() if b.async_io else ())}
        assert r.provenance['tool_path'] in paths, (r.provenance, b.tools)
        assert r.provenance['hdf5_commit'] == b.hdf5_commit
        # the library the binary loads is the build's own HDF5, not Debian's 1.10
        lib = r.provenance.get('hdf5_library_version') or ''
        if lib:
            assert not lib.startswith('1.10'), (r.tool, r.hdf5_build, lib)


@pytest.mark.beside
def test_both_builds_ran_on_the_same_cases(real_run):
    builds, _, records, _ = real_run
    cases = {}
    for r in records:
        if r.hdf5_build != 'none':
            cases.setdefault(r.hdf5_build, set()).add((r.tool, r.params.get('case'),
                                                       r.operation))
    assert set(cases) == set(builds)
    common = set.intersection(*cases.values())
    # h5bench may be excluded for one build; everything else runs on both
    for build, seen in cases.items():
        assert {c for c in seen - common if c[0] != 'h5bench'} == set(), build


# -- a short real night: the two pinned HDF5 builds through the whole chain --------

NIGHT_PAIRS = 3
NIGHT_CHECKS = r'^(ior_check.*(HDF5|MPIIO)-collective-ssf|flashio_check.*-collective)'


@pytest.fixture(scope='module')
def real_night(tmp_path_factory):
    builds = manifest_builds()
    out = tmp_path_factory.mktemp('real-night')
    cmd = [sys.executable, '-m', 'h5regress.nightly', '--no-install',
           '--pairs', str(NIGHT_PAIRS), '--max-pairs', str(NIGHT_PAIRS),
           '--checks', NIGHT_CHECKS, '-S', 'ior_check.block_size=16m',
           '-S', 'ior_check.transfer_size=1m', '-S', 'ior_check.repetitions=1',
           '-S', 'flashio_check.iterations=2', '--out', str(out),
           '--history', str(out / 'history'), '--night', '2026-11-23', '--quiet']
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800,
                            env={**os.environ, 'H5REGRESS_MANIFEST': str(MANIFEST),
                                 'H5REGRESS_REQUIRE_TOOLS': '1'})
    return builds, out, result


def test_a_real_night_between_the_pinned_builds_reaches_the_report(real_night):
    builds, out, result = real_night
    # any verdict is an answer (the builds are really different); ERROR is not
    assert result.returncode in (0, 1, 2, 3), result.stderr[-5000:]
    verdict = json.loads((out / 'gate.json').read_text())
    assert verdict['baseline'] == 'hdf5-1.14.1' and verdict['candidate'] == 'hdf5-1.15.0'
    gated = [m for m in verdict['metrics'] if m['role'] == 'gated']
    assert {m['tool'] for m in gated} == {'ior', 'flash-io'}
    assert all(m['n_pairs'] == NIGHT_PAIRS for m in gated), gated
    for name in ('report.md', 'report.html', 'junit.xml'):
        assert (out / 'report' / name).stat().st_size > 0


def test_a_real_night_ran_abba_on_both_builds(real_night):
    _, out, _ = real_night
    records, problems = perflog.read([str(out / 'perflogs')])
    assert not problems
    first = {}
    for r in sorted(records, key=lambda r: r.timestamp):
        first.setdefault(r.pair_id, r.hdf5_build)
    assert len(first) == NIGHT_PAIRS
    for pair_id, build in first.items():
        odd = int(pair_id.rsplit('p', 1)[1]) % 2
        assert build == ('hdf5-1.14.1' if odd else 'hdf5-1.15.0'), pair_id
    assert {r.provenance['tool_source'] for r in records} == {'spack-manifest'}
