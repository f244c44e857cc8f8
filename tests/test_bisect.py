"""h5regress bisect (issue 15) over stand-in repositories: real git, the real search,
builder interface, gate and state file; the runs simulated (log-normal noise at
CV 4 % around each commit's known slowdown, judged by the gate's run_gate), except
in the slow test, where the nightly's ReFrame machinery runs the FLASH-IO kernel."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from h5regress import bisect, followup, manifest
from h5regress import bisectbuild, bisectruns, bisectsearch, nightrun
from reframe_run import REPO

SLOW = 0.111            # the shim's fraction: writes take 1.111x, bandwidth x0.9 (10 %)
CV = 0.04               # IOR 1 MiB run-to-run noise on this kind of machine


def standin_repo(tmp_path, planted, k=16, broken=()):
    """good + k commits, the slowdown from commit ``planted`` on; ``broken`` cannot build."""
    fractions = [0.0] + [SLOW if i >= planted else 0.0 for i in range(1, k + 1)]
    for i in broken:
        fractions[i] = bisectbuild.BUILD_FAILS
    return bisectbuild.make_standin_repo(tmp_path / 'repo', fractions)


def cli(tmp_path, shas, *extra, seed=1):
    return ['--good', shas[0], '--bad', shas[-1], '--repo', str(tmp_path / 'repo'),
            '--builder', 'stand-in', '--simulate-cv', str(CV), '--seed', str(seed),
            '--work', str(tmp_path / 'work'), '--json', str(tmp_path / 'result.json'), *extra]


def test_the_search_halves_what_is_unknown_and_avoids_skipped_commits():
    assert bisectsearch.next_index(16, {}) == 7                       # between -1 and 15
    assert bisectsearch.next_index(16, {7: 'good'}) == 11
    assert bisectsearch.next_index(16, {7: 'good', 11: 'bad', 9: 'skip'}) == 8   # tie: older
    assert bisectsearch.next_index(16, {7: 'good', 8: 'bad'}) is None
    assert bisectsearch.bounds(16, {3: 'good', 8: 'bad', 12: 'good'}) == (3, 8)   # noise: first bad wins


def test_finds_the_planted_commit_within_log2_builds(tmp_path, capsys):
    """As ci/nightly --bisect runs it: --bad's ratio from the FAIL night, not measured."""
    shas = standin_repo(tmp_path, planted=11)
    assert bisect.main(cli(tmp_path, shas, '--bad-ratio', '0.9')) == 0
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['found'] and result['first_bad']['commit'] == shas[11]
    assert result['first_bad']['subject'] == f'stand-in commit 11: slowdown {SLOW}'
    assert result['builds'] <= result['bound_builds'] == 5       # ceil(log2 16) + 1
    for step in result['steps']:
        assert step['verdict'] in ('good', 'bad')
        assert step['ratio_lo'] <= step['ratio'] <= step['ratio_hi']
        assert step['pairs'] in (10, 15, 20) and step['date']
        assert step['margin'] == pytest.approx(1 - 0.9 ** 0.5)
    out = capsys.readouterr().out
    assert f'first bad commit {shas[11]}' in out and 'not measured' not in out
    assert "margin 5.1%, the midpoint of 1 and --bad's performance ratio 0.900" in out


def test_bad_is_measured_first_and_sets_the_steps_metrics_and_margin(tmp_path, capsys):
    """Without --bad-ratio the bisect measures --bad against --good before any step: the
    answer never rests on a --bad nobody measured, and its ratio sets the steps' margin."""
    shas = standin_repo(tmp_path, planted=11)
    assert bisect.main(cli(tmp_path, shas)) == 0
    result = json.loads((tmp_path / 'result.json').read_text())
    first, *steps = result['steps']
    assert first['commit'] == shas[-1] and first['verdict'] == 'bad'
    assert first['reason'].startswith('--bad, measured first: ') and first['margin'] is None
    (ratio,) = first['fails'].values()
    assert result['bad_ratio'] == ratio and result['bad_measured']
    assert all(s['margin'] == pytest.approx(1 - ratio ** 0.5) for s in steps)
    assert result['first_bad']['commit'] == shas[11] and result['found']
    assert result['builds'] <= result['bound_builds'] == 6       # ceil(log2 16) + 1 + --bad
    assert 'ceil(log2 K)+1, +1 for --bad measured = 6' in capsys.readouterr().out


def test_speedup_finds_the_commit_that_made_the_checks_faster(tmp_path, capsys):
    """Which commit fixed a slowdown (a corpus case with a fix and no regressing
    commit): --good is the older, slow end; the fix is planted at commit 11. Without
    --speedup the same range is an error, --bad being no slower than --good."""
    fractions = [SLOW] + [0.0 if i >= 11 else SLOW for i in range(1, 17)]
    shas = bisectbuild.make_standin_repo(tmp_path / 'repo', fractions)
    assert bisect.main(cli(tmp_path, shas, '--speedup')) == 0
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['speedup'] and result['found']
    assert result['first_bad']['commit'] == shas[11]
    first, *steps = result['steps']
    assert first['commit'] == shas[-1] and first['verdict'] == 'bad'
    (ratio,) = first['fails'].values()          # --good's bandwidth over --bad's
    assert ratio == pytest.approx(1 / (1 + SLOW), rel=0.05)
    assert {s['verdict'] for s in steps} <= {'good', 'bad'}
    assert f'first commit with the speed-up {shas[11]}' in capsys.readouterr().out
    assert bisect.main(cli(tmp_path, shas, '--work', str(tmp_path / 'w2'))) == 4
    assert f'--bad {shas[-1][:12]} is not shown slower than --good' in capsys.readouterr().err


def test_a_bad_commit_the_gate_does_not_fail_is_an_error_not_an_answer(tmp_path, capsys):
    """A real bisect over HDF5 commits here took --bad as bad and answered a range
    ending at it, while --bad was no slower than --good (PASS 1.007): now --bad is
    measured first and a --bad the gate does not FAIL ends in an error."""
    shas = standin_repo(tmp_path, planted=17)      # no commit is slow
    assert bisect.main(cli(tmp_path, shas)) == 4
    err = capsys.readouterr().err
    assert f'--bad {shas[-1][:12]} is not shown slower than --good: the gate said PASS' in err
    assert 'bisect-state.json (remove it to measure again)' in err
    state = json.loads((tmp_path / 'work' / bisectsearch.STATE_FILE).read_text())
    assert list(state['steps']) == [shas[-1]] and len(state['builds']) == 2


def test_an_answer_that_rests_on_a_bad_ratio_says_bad_was_not_measured(tmp_path, capsys):
    shas = standin_repo(tmp_path, planted=16)      # only the last commit, --bad, is slow
    assert bisect.main(cli(tmp_path, shas, '--bad-ratio', '0.9')) == 0
    out = capsys.readouterr().out
    assert f'first bad commit {shas[16]}' in out
    assert (f'{shas[16][:12]} is the --bad commit, taken as bad and not measured by this '
            f'bisect (given ratio 0.900)') in out
    result = json.loads((tmp_path / 'result.json').read_text())
    assert 'taken as bad and not measured' in followup.bisect_summary(result)


@pytest.mark.parametrize('value', ['1.2', '0', '-0.5'])
def test_a_bad_ratio_that_is_no_slowdown_is_refused(tmp_path, capsys, value):
    shas = standin_repo(tmp_path, planted=3, k=4)
    assert bisect.main(cli(tmp_path, shas, '--bad-ratio', value)) == 4
    assert f'--bad-ratio {float(value):g}: a performance ratio' in capsys.readouterr().err


def test_a_large_regression_is_found_at_noise_where_the_nightly_margin_decides_nothing(
        tmp_path):
    """The real h5paths bisect here: pair log-ratio SD 0.2-0.5, every step INCONCLUSIVE at
    20 pairs against the nightly's 5 % margin. A step judged at the midpoint of 1 and
    --bad's ratio (a 1.6x slowdown: margin 21 %) decides at that noise (run CV 20 %)."""
    fractions = [0.0] + [0.6 if i >= 5 else 0.0 for i in range(1, 9)]
    shas = bisectbuild.make_standin_repo(tmp_path / 'repo', fractions)
    args = cli(tmp_path, shas, seed=0)
    args[args.index('--simulate-cv') + 1] = '0.2'
    assert bisect.main(args) == 0
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['first_bad']['commit'] == shas[5] and result['found']
    assert not result['skipped']
    # 1 - sqrt(1 / 1.6) = 0.21, from --bad's measured ratio
    assert result['step_margin'] == pytest.approx(1 - result['bad_ratio'] ** 0.5, abs=1e-6)
    assert 0.1 < result['step_margin'] < 0.35


def test_a_commit_that_does_not_build_is_skipped_and_said(tmp_path, capsys):
    # good at 7, bad at 11 and 9, then 8 does not build: the answer is "8 or 9"
    shas = standin_repo(tmp_path, planted=9, broken=(8,))
    assert bisect.main(cli(tmp_path, shas)) == 1
    result = json.loads((tmp_path / 'result.json').read_text())
    assert not result['found'] and result['candidates'] == [shas[8], shas[9]]
    assert result['skipped'] == [shas[8]]
    step = next(s for s in result['steps'] if s['commit'] == shas[8])
    assert step['build'] == 'failed' and 'build fails' in step['reason'] and step['pairs'] == 0
    out = capsys.readouterr()
    assert f'is one of {shas[8][:12]}, {shas[9][:12]} (skipped commits in the way' in out.out
    assert f'cannot build {shas[8][:12]}' in out.err


class Counting(bisectbuild.StandInBuilder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.built = []

    def build(self, commit):
        self.built.append(commit)
        return super().build(commit)


class Stop(Exception):
    pass


def test_an_interrupted_bisect_resumes_without_rebuilding_or_rerunning(tmp_path):
    shas = standin_repo(tmp_path, planted=5)
    params = {'good': shas[0], 'bad': shas[-1], 'repo': 'r', 'builder': 'stand-in',
              'checks': None, 'metrics': [], 'looks': [10, 15, 20]}
    repo, work = tmp_path / 'repo', tmp_path / 'work'

    def stop_after_2(n):
        if n == 2:
            raise Stop

    first = Counting(repo, work, tools=False)
    with pytest.raises(Stop):
        bisectsearch.bisect(repo, shas[0], shas[-1], first, bisectruns.SimulatedRuns(CV, random.Random(2)),
                      work, params, on_step=stop_after_2)
    state = json.loads((work / bisectsearch.STATE_FILE).read_text())
    done = list(state['order'])
    assert len(done) == 2 and first.built == [shas[0]] + done
    second = Counting(repo, work, tools=False)
    result = bisectsearch.bisect(repo, shas[0], shas[-1], second,
                           bisectruns.SimulatedRuns(CV, random.Random(3)), work, params)
    assert not set(second.built) & ({shas[0]} | set(done))      # nothing built twice
    assert [s['commit'] for s in result['steps']][:2] == done
    for sha in done:                                             # nor run again
        assert {k: v for k, v in next(s for s in result['steps'] if s['commit'] == sha).items()
                if k in state['steps'][sha]} == state['steps'][sha]
    assert result['first_bad']['commit'] == shas[5]


def test_a_bisect_killed_by_sigkill_resumes_from_its_state_file(tmp_path):
    shas = standin_repo(tmp_path, planted=13)
    state_file = tmp_path / 'work' / bisectsearch.STATE_FILE
    cmd = [sys.executable, '-m', 'h5regress.bisect', *cli(tmp_path, shas)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if state_file.exists() and len(json.loads(state_file.read_text())['steps']) >= 1:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    before = json.loads(state_file.read_text())          # whole: written atomically
    assert before['result'] is None, 'the bisect ended before the kill: nothing to resume'
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert 'resuming' in out.stderr
    after = json.loads(state_file.read_text())
    started = '\n'.join(line for line in out.stderr.splitlines() if ': step ' in line)
    for sha, step in before['steps'].items():
        assert after['steps'][sha] == step and sha[:12] not in started
    for sha, build in before['builds'].items():
        assert after['builds'][sha] == build
    assert after['result']['first_bad']['commit'] == shas[13]


def test_a_work_directory_of_another_bisect_is_refused(tmp_path, capsys):
    shas = standin_repo(tmp_path, planted=3, k=4)
    assert bisect.main(cli(tmp_path, shas)) == 0
    other = cli(tmp_path, shas)
    other[other.index('--bad') + 1] = shas[-2]
    assert bisect.main(other) == 4
    err = capsys.readouterr().err
    assert 'bisect-state.json: a bisect with bad' in err and 'another\n--work' not in err


def test_good_must_be_an_ancestor_of_bad(tmp_path, capsys):
    shas = standin_repo(tmp_path, planted=3, k=4)
    args = cli(tmp_path, shas)
    args[1], args[3] = shas[-1], shas[0]
    assert bisect.main(args) == 4
    assert 'is not an ancestor of --bad' in capsys.readouterr().err


@pytest.mark.slow
def test_bisect_through_the_nightly_finds_a_real_slowdown(tmp_path):
    """The nightly's machinery for real: stand-in builds of the FLASH-IO kernel (the
    planted commit's writes ten times slower through the shim), ReFrame, ABBA pairs,
    the gate; one step (good, planted, bad)."""
    shas = bisectbuild.make_standin_repo(tmp_path / 'repo', [0.0, 9.0, 9.0])
    cmd = [sys.executable, '-m', 'h5regress.bisect', '--good', shas[0], '--bad', shas[-1],
           '--repo', str(tmp_path / 'repo'), '--builder', 'stand-in',
           '--checks', '^flashio_check.*-collective', '--pairs', '8', '--max-pairs', '8',
           # as ci/nightly --bisect passes it after such a night (FAIL at about 0.1-0.15)
           '--bad-ratio', '0.15',
           '--nightly-arg=-Sflashio_check.iterations=2',
           # FLASH's own 80 blocks per rank: a tenfold slowdown needs no large checkpoint
           '--nightly-arg=-Sflashio_check.blocks_per_rank=80', '--work', str(tmp_path / 'work'),
           '--json', str(tmp_path / 'result.json')]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['first_bad']['commit'] == shas[1] and result['found']
    (step,) = result['steps']
    assert step['verdict'] == 'bad' and step['gate'] == 'FAIL' and step['ratio'] < 0.5
    assert step['pairs'] == 8 and step['margin'] == pytest.approx(1 - 0.15 ** 0.5)
    perflogs = list((tmp_path / 'work' / 'steps' / shas[1][:12] / 'perflogs').rglob('*.log'))
    assert perflogs, 'the step ran no ReFrame check'


@pytest.mark.slow
def test_a_failing_stand_in_night_bisects_and_reports(injected_night):
    """ci/nightly --bisect after a real FAIL (stand-in candidate ten times slower,
    conftest.py's night): the bisect (here over a stand-in repository with no commit
    left to test: its answer is the --bad commit, after building the good one) and the
    Darshan section (stand-ins have no Darshan: the reason) land in gate.json, the
    report and JUnit."""
    out, proc, shas, _ = injected_night
    assert proc.returncode == 1, proc.stderr[-3000:]
    result = json.loads((out / 'gate.json').read_text())
    assert result['bisect']['first_bad']['commit'] == shas[1]
    assert result['bisect']['steps'] == [] and result['bisect']['builds'] == 1
    assert not result['darshan']['available'] and 'no darshan-runtime' in \
        result['darshan']['reason']
    md = (out / 'report' / 'report.md').read_text()
    assert '## Bisect: the first bad commit' in md and shas[1] in md
    assert 'no Darshan counter diff' in md
    junit = (out / 'report' / 'junit.xml').read_text()
    assert 'classname="h5regress.bisect"' in junit and 'classname="h5regress.darshan"' in junit


def test_the_spack_builder_builds_only_the_tools_of_the_checks(tmp_path):
    """--tool: a step builds HDF5 and the failing checks' tools only (spack-env/install
    --only their packages; mdtest is IOR's), not every tool and Darshan: a real step
    cost 30-60 min when the whole environment was rebuilt per commit."""
    sha = '0123456789abcdef0123456789abcdef01234567'
    builder = bisectbuild.SpackBuilder(tmp_path, ['file:///m'],
                                  packages=bisectruns.tool_packages(['mdtest', 'h5paths', 'ior']))
    cmd = builder.command(sha, tmp_path / 'manifest.json')
    assert cmd[cmd.index('--only') + 1:cmd.index('--mirror')] == ['h5paths', 'ior']
    assert '--only' not in bisectbuild.SpackBuilder(tmp_path).command(sha, tmp_path / 'm.json')
    with pytest.raises(bisectbuild.BisectError, match="--tool 'fio': not built by the Spack"):
        bisectruns.tool_packages(['fio'])
    with pytest.raises(bisectbuild.BisectError, match="--tool 'nosuch': no benchmark"):
        bisectruns.tool_packages(['nosuch'])


FAKE_INSTALL = '''
import json, pathlib, sys
# spack-env/install offline: the candidate's source must be in one of the --mirror's
argv = sys.argv[1:]
sha, manifest = argv[argv.index('--candidate') + 1], argv[argv.index('--manifest') + 1]
mirrors = [argv[i + 1] for i, a in enumerate(argv) if a == '--mirror']
if not any((pathlib.Path(m) / '_source-cache/git/HDFGroup/hdf5.git' / f'{sha}.tar.gz').is_file()
           for m in mirrors):
    sys.exit(f'==> Error: All fetchers failed for hdf5@git.{sha}')
pathlib.Path(manifest).parent.mkdir(parents=True, exist_ok=True)
pathlib.Path(manifest).write_text(json.dumps({'schema': 1, 'builds': {'hdf5-x': {
    'hdf5': {'commit': sha, 'version': '1.15.0', 'label': 'x'}, 'tools': {}}}}))
'''


def test_the_spack_builder_takes_each_commits_source_from_the_bisect_clone(tmp_path):
    """An air-gapped site's mirror holds the pinned commits only: a real bisect here
    could build no step until the commits' tarballs were made by hand. The builder now
    puts each commit's tree from the clone into a source mirror of its own, in Spack's
    layout, and passes it to spack-env/install."""
    repo = tmp_path / 'hdf5'
    subprocess.run(['git', 'init', '-q', str(repo)], check=True)
    (repo / 'configure.ac').write_text('AC_INIT([HDF5], [1.15.0])\n')
    subprocess.run(['git', '-C', str(repo), 'add', '.'], check=True)
    subprocess.run(['git', '-C', str(repo), '-c', 'user.name=t', '-c', 'user.email=t@t',
                    'commit', '-q', '-m', 'x'], check=True)
    sha = bisectbuild.git(repo, 'rev-parse', 'HEAD').strip()
    install = tmp_path / 'install'
    install.write_text(FAKE_INSTALL)
    work = tmp_path / 'work'
    offline = str(tmp_path / 'offline-mirror')      # the site's: not this commit

    built = bisectbuild.SpackBuilder(work, [offline], install=install, repo=repo).build(sha)
    assert built.entry['hdf5']['commit'] == sha
    tarball = work / 'source-mirror' / bisectbuild.HDF5_MIRROR_PATH / f'{sha}.tar.gz'
    listing = subprocess.run(['tar', 'tzf', str(tarball)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert 'hdf5/configure.ac' in listing
    cmd = bisectbuild.SpackBuilder(work, [offline], install=install, repo=repo).command(sha, work)
    assert cmd[-4:] == ['--mirror', offline, '--mirror', str(work / 'source-mirror')]
    # without the clone (as before) the build finds no source offline
    with pytest.raises(bisectbuild.BuildFailed, match='All fetchers failed'):
        bisectbuild.SpackBuilder(tmp_path / 'work2', [offline], install=install).build(sha)
    # a commit the clone cannot archive is said; the build goes on with the other mirrors
    missing = '1' * 40
    with pytest.raises(bisectbuild.BuildFailed, match='All fetchers failed'):
        bisectbuild.SpackBuilder(work, [offline], install=install, repo=repo).build(missing)
    assert not list((work / 'source-mirror').rglob('*.part'))


def test_the_bisect_builds_a_commit_whose_clone_lacks_test_data_blobs(tmp_path):
    """Public snapshots of HDF5 lack a few test-data blobs: the bisect's own `git
    archive` of the whole tree failed there (a real bisect, aebac33a..ede4987b, found
    no source of its first commit), while the replay made the tarball without them.
    Both now take :func:`bisectbuild.source_tarball`."""
    repo = tmp_path / 'hdf5'
    bisectbuild.make_standin_repo(repo, [0.0])
    (repo / 'usa.wri').write_bytes(b'test data')
    bisectbuild.git(repo, 'add', 'usa.wri')
    bisectbuild.git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'data')
    blob = bisectbuild.git(repo, 'rev-parse', 'HEAD:usa.wri').strip()
    (repo / '.git' / 'objects' / blob[:2] / blob[2:]).unlink()
    sha = bisectbuild.git(repo, 'rev-parse', 'HEAD').strip()
    install = tmp_path / 'install'
    install.write_text(FAKE_INSTALL)
    work = tmp_path / 'work'
    built = bisectbuild.SpackBuilder(work, [], install=install, repo=repo).build(sha)
    assert built.entry['hdf5']['commit'] == sha
    tarball = work / 'source-mirror' / bisectbuild.HDF5_MIRROR_PATH / f'{sha}.tar.gz'
    listing = subprocess.run(['tar', 'tzf', str(tarball)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert 'hdf5/slowdown' in listing and 'hdf5/usa.wri' not in listing


def test_a_bisect_with_other_tools_is_refused_in_the_same_work_directory(tmp_path, capsys):
    shas = standin_repo(tmp_path, planted=3, k=4)
    assert bisect.main(cli(tmp_path, shas)) == 0
    assert bisect.main(cli(tmp_path, shas, '--tool', 'h5paths')) == 4
    assert "a bisect with tools = [] is in" in capsys.readouterr().err


def test_the_nightly_bisects_only_the_failing_tests_with_their_tools_and_mirrors(
        tmp_path, monkeypatch):
    """ci/nightly --bisect after a FAIL: the bisect runs the FAIL rows' tests only (not
    the night's --checks), builds their tools only (--tool), and gets --mirror."""
    from h5regress import nightly
    shas = bisectbuild.make_standin_repo(tmp_path / 'repo', [0, 0.5])
    args = nightly.parse_args(['--out', str(tmp_path), '--bisect', '--bisect-good', shas[0],
                               '--bisect-repo', str(tmp_path / 'repo'),
                               '--mirror', 'file:///srv/mirror', '--mirror', '/m2',
                               '--system', 'local:cpu', '-S', 'x.y=1'])
    test = ('h5paths_check %benchmark=compound-subset-hdf5-collective-contiguous-earliest-warm'
            ' %hdf5_build=hdf5-1.15.0')
    result = {'candidate_commit': shas[1], 'metrics': [
        {'key': 'k-read', 'role': 'gated', 'verdict': 'FAIL', 'tool': 'h5paths', 'test': test,
         'perf_ratio': 0.62},
        {'key': 'k-write', 'role': 'gated', 'verdict': 'FAIL', 'tool': 'h5paths', 'test': test,
         'perf_ratio': 0.88},
        {'key': 'k-ior', 'role': 'gated', 'verdict': 'PASS', 'tool': 'ior',
         'test': 'ior_check %benchmark=HDF5-independent-ssf %hdf5_build=hdf5-1.15.0'},
        {'key': 'k-canary', 'role': 'canary', 'verdict': 'FAIL', 'tool': 'ior',
         'test': 'ior_check %benchmark=MPIIO-independent-ssf %hdf5_build=hdf5-1.15.0'}]}
    seen = []

    def fake_bisect(req, gate_look, on_step=None):
        seen.append(req)
        raise bisectbuild.BisectError('stopped here')

    monkeypatch.setattr(bisectruns, 'run_bisect', fake_bisect)
    assert nightly.bisect_night.__module__ == 'h5regress.nightly'
    with pytest.raises(bisectbuild.BisectError):
        nightly.bisect_night(result, args)
    (req,) = seen       # a typed call, no argv
    assert req.tools == ['h5paths'] and req.builder == 'spack'
    assert req.mirror == ['file:///srv/mirror', '/m2']
    assert (req.good, req.bad) == (shas[0], shas[1])
    assert sorted(req.metrics) == ['k-read', 'k-write']
    assert req.night.system == 'local:cpu' and req.night.setvar == ['x.y=1']
    # tonight's least slowed FAIL sets the steps' margin; --bad (tonight's) is not re-measured
    assert req.bad_ratio == 0.88
    import re
    pattern = re.compile(req.checks)
    assert pattern.match(test.replace(' ', ''))
    for other in ('ior_check%benchmark=HDF5-independent-ssf%hdf5_build=hdf5-bisect-good',
                  'h5paths_check%benchmark=compound-subset-hdf5-collective-contiguous-earliest'
                  '%hdf5_build=hdf5-bisect-good'):
        assert not pattern.match(other), other


def test_steps_stops_a_run_and_the_same_command_goes_on(tmp_path, capsys):
    """--steps N (one step per hold of the measurement lock): exit 75 after N steps with
    more to go; the same command goes on; the answer is the one of a whole run."""
    shas = standin_repo(tmp_path, planted=11)
    codes = []
    while not codes or codes[-1] == bisect.EXIT_STOPPED:
        codes.append(bisect.main(cli(tmp_path, shas, '--steps', '1')))
        assert len(codes) < 20
    assert codes[-1] == 0 and len(codes) >= 4 and set(codes[:-1]) == {bisect.EXIT_STOPPED}
    state = json.loads((tmp_path / 'work' / bisectsearch.STATE_FILE).read_text())
    assert len(state['steps']) == len(codes)
    assert json.loads((tmp_path / 'result.json').read_text())['first_bad']['commit'] == shas[11]
    assert 'stopped after 1 step(s) of this run' in capsys.readouterr().out


def test_the_lock_is_held_during_the_runs_of_a_step_and_not_its_build(tmp_path):
    """--lock FILE: each step's pairs run holding an flock on FILE (a measurement lock
    shared with others), the builds do not."""
    import fcntl
    lock = tmp_path / 'measure.lock'
    seen = []

    def locked():
        with open(lock, 'a') as fp:
            try:
                fcntl.flock(fp, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fp, fcntl.LOCK_UN)
            return False

    class Builder(bisectbuild.StandInBuilder):
        def build(self, commit):
            seen.append(('build', locked()))
            return super().build(commit)

    class Runs(bisectruns.SimulatedRuns):
        def pairs(self, first, last):
            seen.append(('pairs', locked()))
            return super().pairs(first, last)

    shas = standin_repo(tmp_path, planted=2, k=4)
    repo, work = tmp_path / 'repo', tmp_path / 'work'
    params = {'good': shas[0], 'bad': shas[-1], 'repo': 'r', 'builder': 'stand-in',
              'checks': None, 'metrics': [], 'looks': [10, 15, 20]}
    bisectsearch.bisect(repo, shas[0], shas[-1], Builder(repo, work, tools=False),
                  Runs(CV, random.Random(1)), work, params, lock=lock)
    assert {what for what, _ in seen} == {'build', 'pairs'}
    assert all(held == (what == 'pairs') for what, held in seen), seen


def standin_built(tmp_path, tools):
    """A stand-in build with these tools, no slowdown."""
    entry = {'hdf5': {'version': 'system', 'label': 'x', 'commit': '0' * 40,
                      'variants': 'stand-in', 'hash': 'x', 'prefix': str(tmp_path)},
             'tools': tools}
    top = {'schema': manifest.SCHEMA, 'generated': '2026-11-24T00:00:00+00:00',
           'spack_version': 'none (stand-in)', 'environment': str(tmp_path),
           'lock_sha256': '0' * 64}
    return bisectbuild.Built(entry, top, {'slowdown': 0.0})


def test_a_stand_in_bisect_without_checks_runs_the_stand_in_nights_checks(tmp_path):
    """h5regress bisect --builder stand-in without --checks: the step's runs take the
    stand-in night's default checks (with IOR: its quiet HDF5 row; else FLASH-IO), not a
    name filter of 'None' that matches no test."""
    runs = bisectruns.NightlyRuns(nightrun.NightRequest(stand_in=True, quiet=True), None)
    for tools, checks in (({'flash-io': '/k/flash-io'}, nightrun.STANDIN_SELECTION),
                          ({'flash-io': '/k/flash-io', 'ior': '/k/ior'},
                           nightrun.STANDIN_IOR_SELECTION)):
        built = standin_built(tmp_path, tools)
        runs.start(built, built, 'a' * 40, tmp_path / checks[1].strip('^'))
        assert runs.args.select == checks


def test_a_speedup_step_runs_the_older_end_as_the_candidate(tmp_path, monkeypatch):
    """The nightly's runs of a --speedup step: the step's commit is the baseline and
    --good's build the candidate, in the pairs and at the gate."""
    seen = []
    monkeypatch.setattr(nightrun, 'run_pairs', lambda first, last, a, b, *_: seen.append(
        ('pairs', a, b)))
    runs = bisectruns.NightlyRuns(nightrun.NightRequest(quiet=True, checks='^x'),
                                  lambda a, b, req: seen.append(('gate', a, b)), speedup=True)
    built = standin_built(tmp_path, {'flash-io': '/k/flash-io'})
    runs.start(built, built, 'a' * 40, tmp_path / 'step')
    runs.pairs(1, 2)
    with pytest.raises(bisectbuild.BisectError):    # the stand-in gate wrote no gate.json
        runs.gate([2])
    step = 'hdf5-bisect-' + 'a' * 12
    assert seen == [('pairs', step, bisectbuild.BASE_ID), ('gate', step, bisectbuild.BASE_ID)]


class InconclusiveRuns(bisectsearch.Runs):
    """Every look: one gated row, INCONCLUSIVE, at this ratio and pair-log-ratio variance."""

    def __init__(self, ratio, lr_var):
        self.row = {'key': 'k', 'role': 'gated', 'verdict': 'INCONCLUSIVE', 'label': 'm',
                    'ratio': ratio, 'ratio_lo': ratio * 0.9, 'ratio_hi': ratio * 1.1,
                    'perf_ratio': ratio, 'lr_var': lr_var, 'lr_n': 0, 'reason': 'undecided'}

    def start(self, good, cand, commit, step_dir, margin=None):
        self.n = 0

    def pairs(self, first, last):
        self.n = last

    def gate(self, looks_):
        return {'overall': 'INCONCLUSIVE', 'metrics': [{**self.row, 'lr_n': self.n}]}


@pytest.mark.parametrize('ratio, verdict, words', [
    (0.99, 'good', "like --good: the 90% lower bound of the ratio, 0.976, is above it"),
    (0.91, 'bad', "like --bad: the 90% upper bound of the ratio, 0.923, is below it"),
    (0.95, 'skip', 'the 90% bounds straddle it: skipped, as git bisect skip'),
])
def test_a_step_inconclusive_at_the_cap_is_decided_against_the_midpoint(ratio, verdict, words):
    """At IOR's noise (CV 4 %) 3-6 of ~80 steps of a 10 % bisect ended INCONCLUSIVE at 20
    pairs against the 5 % margin, and their bisects answered a range. A step is either
    like --good or like --bad: at the cap its 90 % bound against the midpoint decides."""
    built = bisectbuild.Built({}, {}, {})
    margin = 1 - 0.9 ** 0.5            # --bad 10 % slower: midpoint 0.949
    step = bisectsearch.run_step(InconclusiveRuns(ratio, 0.0025), built, built, 'c' * 40, None,
                           [10, 15, 20], [], margin)
    assert step['pairs'] == 20 and step['gate'] == 'INCONCLUSIVE'
    assert step['verdict'] == verdict and step['decided_at_cap'] == (verdict != 'skip')
    assert step['reason'] == ('INCONCLUSIVE after 20 pairs (the cap); against the midpoint '
                              f"0.949 of 1 and --bad's ratio, {words}")
    # --bad's own measurement has no midpoint yet: INCONCLUSIVE at the cap stays undecided
    ref = bisectsearch.run_step(InconclusiveRuns(ratio, 0.0025), built, built, 'c' * 40, None,
                          [10, 15, 20], [])
    assert ref['verdict'] == 'skip' and not ref['decided_at_cap']


class BrokenRowRuns(InconclusiveRuns):
    """Every look: the row ERROR, its candidate's runs left no samples."""

    def gate(self, looks_):
        self.looked = getattr(self, 'looked', 0) + 1
        return {'overall': 'ERROR', 'metrics': [{
            **self.row, 'verdict': 'ERROR', 'ratio': None,
            'reason': 'no candidate samples: 10 candidate run(s) failed'}]}


def test_a_step_whose_commit_broke_the_row_stops_at_the_first_look():
    """A row the step's build broke is an ERROR that more pairs will not decide: the
    step ran on to the cap (20 pairs, twice the time) and then called it "INCONCLUSIVE
    after 20 pairs (the cap)". It stops at the first look, a skip that says the ERROR."""
    built = bisectbuild.Built({}, {}, {})
    runs = BrokenRowRuns(0.9, 0.0025)
    step = bisectsearch.run_step(runs, built, built, 'c' * 40, None, [10, 15, 20], [], 0.05)
    assert (step['pairs'], runs.looked, step['verdict'], step['gate']) == (10, 1, 'skip', 'ERROR')
    assert step['reason'] == ('ERROR after 10 pairs, skipped as git bisect skip: no candidate '
                              'samples: 10 candidate run(s) failed')


class BrokenBaselineRuns(InconclusiveRuns):
    """Every look: the row INCONCLUSIVE without baseline samples, the baseline's runs
    having said why (a fix replay whose parent breaks the row)."""

    def gate(self, looks_):
        self.looked = getattr(self, 'looked', 0) + 1
        said = "; the baseline's runs said: not done (10 run(s))"
        return {'overall': 'INCONCLUSIVE', 'metrics': [{
            **self.row, 'ratio': None, 'reason': 'no baseline samples' + said,
            'runs_said': {'baseline': said}}]}


def test_a_step_whose_baseline_broke_every_undecided_row_stops_at_the_first_look():
    """The fix replay of the 1.10.5 collective-metadata case ran 20 pairs (326 s) where
    its first look had no baseline samples and the baseline's runs had said why."""
    built = bisectbuild.Built({}, {}, {})
    runs = BrokenBaselineRuns(0.9, 0.0025)
    step = bisectsearch.run_step(runs, built, built, 'c' * 40, None, [10, 15, 20], [])
    assert (step['pairs'], runs.looked, step['verdict']) == (10, 1, 'skip')
    assert step['reason'].startswith('INCONCLUSIVE after 10 pairs, skipped as git bisect '
                                     'skip: no baseline samples; the baseline')
    # one other row still undecided with samples: more pairs may decide that one
    rows = [{'verdict': 'INCONCLUSIVE', 'runs_said': {'baseline': 'x'}},
            {'verdict': 'INCONCLUSIVE'}]
    assert bisectsearch.stuck_rows(rows) == ([], [])


class BreakingRuns(bisectsearch.Runs):
    """A commit whose stand-in slowdown is 0.5 or more breaks the row: its runs leave no
    samples and say why, with counts that vary by commit (the 1.10.5 collective-metadata
    case: rank 1's independent reads); 0.75 breaks it otherwise; the others PASS."""

    SAID = ("; the candidate's runs said: h5paths: --coll-metadata not done: HDF5 1.10.5 "
            "rank 1 made {} independent MPI-IO read(s) in open_read (10 run(s))")

    def start(self, good, cand, commit, step_dir, margin=None):
        self.slowdown, self.commit = cand.info['slowdown'], commit

    def pairs(self, first, last):
        self.n = last

    def gate(self, looks_):
        row = {'key': 'k', 'role': 'gated', 'label': 'open-close cmd', 'n_pairs': self.n}
        if self.slowdown >= 0.5:
            said = (self.SAID.format(int(self.commit[:4], 16)) if self.slowdown < 0.75
                    else "; the candidate's runs said: h5paths: segmentation fault (10 run(s))")
            row.update(verdict='ERROR', ratio=None, perf_ratio=None,
                       reason='no candidate samples: 10 candidate run(s) failed' + said,
                       runs_said={'candidate': said})
        else:
            row.update(verdict='PASS', ratio=0.99, ratio_lo=0.97, ratio_hi=1.01,
                       perf_ratio=0.99, reason='within the margin')
        return {'overall': 'ERROR' if row['verdict'] == 'ERROR' else 'PASS', 'metrics': [row]}


def test_a_bad_commit_that_broke_a_row_is_bisected_to_the_commit_that_broke_it(tmp_path):
    """The 1.10.5 collective-metadata case: the candidate's runs of the -cmd- row leave
    no samples (the kernel's counts say rank 1 read metadata itself), so the gate says
    ERROR, not FAIL, and the bisect refused --bad ("not shown slower") and skipped
    every such step. Now an ERROR --bad makes the bisect look for the commit that broke
    the row: steps whose runs break as --bad's did are bad, those with samples good,
    those broken otherwise skipped; each is decided at the first look."""
    fractions = [0.0] * 10 + [0.5] * 4 + [0.75] + [0.5] * 2
    shas = bisectbuild.make_standin_repo(tmp_path / 'repo', fractions)
    params = {'good': shas[0], 'bad': shas[-1], 'repo': 'r', 'builder': 'stand-in',
              'checks': None, 'metrics': [], 'looks': [10, 15, 20]}
    repo, work = tmp_path / 'repo', tmp_path / 'work'
    result = bisectsearch.bisect(repo, shas[0], shas[-1],
                                 bisectbuild.StandInBuilder(repo, work, tools=False),
                                 BreakingRuns(), work, params)
    assert result['found'] and result['first_bad']['commit'] == shas[10]
    assert result['broke'] == {'k': bisectsearch.said_signature(
        {'runs_said': {'candidate': BreakingRuns.SAID.format(1)}})}
    assert result['bad_ratio'] is None and result['step_margin'] is None
    by_commit = {s['commit']: s for s in result['steps']}
    assert by_commit[shas[-1]]['verdict'] == 'bad'
    assert 'the bisect looks for the commit that broke 1 row(s) so' in by_commit[shas[-1]]['reason']
    for sha, step in by_commit.items():
        assert step['pairs'] == 10
        if sha != shas[-1]:
            want = 'bad' if fractions[shas.index(sha)] >= 0.5 else 'good'
            assert step['verdict'] == want, (shas.index(sha), step)
    words = bisect.format_text(result)
    assert f'first commit that breaks the row(s) {shas[10]}' in words
    assert 'left samples (good) or failed as --bad\'s did (bad)' in words
    # a step broken otherwise is a skip, not an answer
    verdict, _, why = bisectsearch.broken_verdict(
        [{'key': 'k', 'verdict': 'ERROR', 'reason': 'segfault',
          'runs_said': {'candidate': '; the candidate\'s runs said: segmentation fault'}}],
        result['broke'])
    assert verdict == 'skip' and why.startswith('ERROR, not as --bad broke it')


def test_a_search_that_ends_on_a_merge_bisects_the_commits_it_brought_in(tmp_path):
    """HDF5's 1.10 branch of 2019 merged pull requests: the first-parent chain holds
    "Merge pull request #1536", whose branch brought in the commit that broke
    collective metadata reads (a4cfd0bf) and a release note. A search that ends on a
    merge goes on into the merged commits, as git bisect without --first-parent does."""
    repo = tmp_path / 'repo'
    g = lambda *a: bisectbuild.git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', *a)

    def commit(fraction, msg):
        (repo / 'slowdown').write_text(f'{fraction}\n')
        g('add', 'slowdown')
        g('commit', '--quiet', '--allow-empty', '-m', msg)
        return g('rev-parse', 'HEAD').strip()

    shas = bisectbuild.make_standin_repo(repo, [0.0, 0.0])
    g('checkout', '--quiet', '-b', 'pr')
    branch = [commit(0.0, 'pr 1'), commit(SLOW, 'pr 2: the slowdown'), commit(SLOW, 'pr 3')]
    g('checkout', '--quiet', 'main')
    main = [commit(0.0, f'main {i}') for i in range(3)]
    g('merge', '--quiet', '--no-ff', '-X', 'theirs', '-m', 'Merge pull request 7', 'pr')
    merge = g('rev-parse', 'HEAD').strip()
    after = [commit(SLOW, f'after {i}') for i in range(3)]
    args = ['--good', shas[0], '--bad', after[-1], '--repo', str(repo), '--builder', 'stand-in',
            '--simulate-cv', str(CV), '--seed', '4', '--bad-ratio', '0.9',
            '--work', str(tmp_path / 'work'), '--json', str(tmp_path / 'result.json')]
    assert bisect.main(args) == 0
    result = json.loads((tmp_path / 'result.json').read_text())
    assert result['first_bad']['commit'] == branch[1], result['steps']
    assert result['descended'] == [{'merge': merge, 'subject': 'Merge pull request 7',
                                    'commits': 3}]
    assert result['commits'] == 1 + len(main) + 1 + len(after) + len(branch)
    # ceil(log2 8 first-parent commits) + 1, and ceil(log2(3 + 1)) for the merge's 3
    assert result['builds'] <= result['bound_builds'] == 4 + 2
    tested = {s['commit']: s['verdict'] for s in result['steps']}
    assert tested[merge] == 'bad' and tested[main[-1]] == 'good'
    assert f'the merge {merge[:12]} "Merge pull request 7" brought in 3 commit(s)' in \
        followup.bisect_summary(result)


def test_a_signal_to_the_bisect_stops_the_runs_it_started(tmp_path):
    """The nightly's runs start ReFrame in a session of its own: a SIGTERM to `h5regress
    bisect` alone (a CI job's timeout, kill PID) left the running child behind. Now the
    bisect forwards it, stops every descendant and exits ERROR (4); the state file
    keeps the steps done."""
    shas = standin_repo(tmp_path, planted=3, k=4)
    pidfile = tmp_path / 'child.pid'
    script = tmp_path / 'bisect_with_a_slow_run.py'
    script.write_text(
        'import sys\n'
        f'sys.path.insert(0, {str(REPO)!r})\n'
        'from h5regress import bisect, bisectruns, nightprocs\n'
        'def pairs(self, first, last):\n'
        f'    nightprocs.run(["sh", "-c", "echo $$ > {pidfile}; exec sleep 300"])\n'
        'bisectruns.SimulatedRuns.pairs = pairs\n'
        'sys.exit(bisect.main(sys.argv[1:]))\n')
    log = tmp_path / 'stderr'
    with open(log, 'w') as stderr:      # a file: a surviving child would hold a pipe open
        proc = subprocess.Popen([sys.executable, str(script), *cli(tmp_path, shas)],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.05)
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = log.read_text()
    alive = os.path.exists(f'/proc/{child}') and \
        open(f'/proc/{child}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, 'the run the bisect started outlived it'
    assert proc.returncode == 4, err
    assert 'stopped by SIGTERM, its children gone; the same command goes on from' in err


# ------------------------------------------------------------------------------------
# issue 28: a bisect runs the rows that execute the range's changed functions

ROW_F = 'h5paths_check %benchmark=compound-subset-hdf5-collective-contiguous-earliest-warm'
ROW_G = 'ior_check %benchmark=HDF5-independent-ssf'


def covered_repo(tmp_path):
    """A stand-in repository whose last commit changes f() of src/H5x.c (g() stays), and
    a coverage map of that commit: ROW_F executes f, ROW_G executes g."""
    repo = tmp_path / 'repo'
    (repo / 'src').mkdir(parents=True)
    bisectbuild.git(repo, 'init', '--quiet', '-b', 'main')
    shas = []
    for i, (slowdown, f_returns) in enumerate([(0.0, 1), (0.0, 1), (SLOW, 3)]):
        (repo / 'slowdown').write_text(f'{slowdown}\n')
        (repo / 'src' / 'H5x.c').write_text(f'int f(void)\n{{\n  return {f_returns};\n}}\n\n'
                                            'int g(void)\n{\n  return 2;\n}\n')
        bisectbuild.git(repo, 'add', 'src', 'slowdown')
        bisectbuild.git(repo, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit',
                        '--quiet', '--allow-empty', '-m', f'commit {i}')
        shas.append(bisectbuild.git(repo, 'rev-parse', 'HEAD').strip())
    hit = lambda name: {'file': 'src/H5x.c', 'name': name, 'calls': 1, 'lines_hit': 2,
                        'lines_total': 2}
    cmap = tmp_path / 'map.json'
    cmap.write_text(json.dumps({
        'schema': 1, 'build': 'hdf5-x-cov', 'commit': shas[-1],
        'rows': {ROW_F: [hit('f')], ROW_G: [hit('g')]},
        'extents': [{'file': 'src/H5x.c', 'name': 'f', 'first_line': 1, 'last_line': 4},
                    {'file': 'src/H5x.c', 'name': 'g', 'first_line': 6, 'last_line': 9}]}))
    return shas, cmap


def test_rows_executing_any_of_some_functions():
    from h5regress import coverage
    hit = lambda f, n: coverage.FunctionHit(f, n, 1, 1, 1)
    cmap = coverage.CoverageMap('b', {'r1': [hit('a.c', 'f')], 'r2': [hit('a.c', 'g')],
                                      'r3': [hit('b.c', 'f'), hit('a.c', 'g')]}, [])
    assert coverage.rows_executing_any(cmap, [('a.c', 'g')]) == ['r2', 'r3']
    assert coverage.rows_executing_any(cmap, [('a.c', 'f'), ('b.c', 'f')]) == ['r1', 'r3']
    assert coverage.rows_executing_any(cmap, []) == []


def test_a_bisect_with_a_coverage_map_runs_the_rows_of_the_changed_functions(tmp_path):
    """h5regress bisect --coverage-map MAP without --checks: the steps run the night's rows
    but the mapped ones that execute no function the range changes (ROW_G, not f's ROW_F).
    Fails on old code: yes (no --coverage-map)."""
    shas, cmap = covered_repo(tmp_path)
    assert bisect.main(cli(tmp_path, shas, '--coverage-map', str(cmap))) == 0
    state = json.loads((tmp_path / 'work' / bisectsearch.STATE_FILE).read_text())
    assert state['select'] == [*nightrun.NIGHT_SELECTION, '-x', nightrun.tests_regex([ROW_G])]
    # a map of another commit, whose range changes no function: every row, said
    # (tests/test_coverage_range.py: maps of other commits)
    bisect.main(cli(tmp_path, shas[:-1], '--coverage-map', str(cmap),   # --bad: not slower
                    '--work', str(tmp_path / 'w2')))
    state = json.loads((tmp_path / 'w2' / bisectsearch.STATE_FILE).read_text())
    assert state['select'] is None and state['coverage']['fallback']


def test_the_nightly_bisects_the_fail_rows_that_execute_changed_functions(tmp_path, capsys):
    """ci/nightly --bisect --coverage-map: of the FAIL tests, those whose row executes a
    function the range changes; none does: all of them, said. Fails on old code: yes."""
    from h5regress import nightly
    shas, cmap = covered_repo(tmp_path)
    args = nightly.parse_args(['--out', str(tmp_path / 'out'), '--coverage-map', str(cmap)])
    tests = [f'{ROW_F} %hdf5_build=hdf5-1.15.0', f'{ROW_G} %hdf5_build=hdf5-1.15.0']
    repo = tmp_path / 'repo'
    assert nightly.night_tests(tests, args, repo, shas[0], shas[-1]) == tests[:1]
    assert nightly.night_tests(tests[1:], args, repo, shas[0], shas[-1]) == tests[1:]
    assert 'bisecting every FAIL row' in capsys.readouterr().err
