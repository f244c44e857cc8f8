"""The bisect's commits and builders: the first-parent chain, a build per commit.

:class:`SpackBuilder` (``spack-env/install --candidate SHA``, the install tree reused)
and :class:`StandInBuilder` (a small git repository whose commits each set a known
slowdown in a file ``slowdown``).
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h5regress import buildid, manifest, standins


BASE_ID = 'hdf5-bisect-good'


#: what a stand-in commit's ``slowdown`` file says when its build must fail
BUILD_FAILS = 'build fails'


class BisectError(Exception):
    """Bad input or state; the message names the file, commit or option (exit 4)."""


class BuildFailed(Exception):
    """A builder could not build a commit: the commit is skipped, with this reason."""


def log(msg: str) -> None:
    print(f'h5regress bisect: {msg}', file=sys.stderr, flush=True)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


# ------------------------------------------------------------------ commits
@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str       # committer date, ISO 8601


def git(repo: str | Path, *args: str) -> str:
    out = subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True)
    if out.returncode:
        raise BisectError(f'git -C {repo} {" ".join(args)}: {out.stderr.strip()}')
    return out.stdout


def local_repo(repo: str, work: Path) -> Path:
    """``repo`` itself when it is a local clone, else a bare clone of the URL in ``work``."""
    if Path(repo).is_dir():
        return Path(repo).resolve()
    dest = work / 'repo.git'
    if not dest.is_dir():
        log(f'cloning {repo} into {dest}')
        out = subprocess.run(['git', 'clone', '--bare', '--quiet', repo, str(dest)],
                             capture_output=True, text=True)
        if out.returncode:
            raise BisectError(f'cannot clone --repo {repo}: {out.stderr.strip()}')
    return dest


def resolve(repo: Path, ref: str, option: str) -> str:
    try:
        return git(repo, 'rev-parse', '--verify', '--quiet', f'{ref}^{{commit}}').strip()
    except BisectError:
        raise BisectError(f'{option} {ref}: no such commit in {repo}') from None


def first_parent_commits(repo: Path, good: str, bad: str) -> list[Commit]:
    """Commits after ``good`` up to ``bad`` (included), oldest first, first parents only."""
    if subprocess.run(['git', '-C', str(repo), 'merge-base', '--is-ancestor', good, bad]
                      ).returncode:
        raise BisectError(f'--good {good} is not an ancestor of --bad {bad} in {repo}')
    out = git(repo, 'log', '--first-parent', '--reverse', '--format=%H%x1f%s%x1f%cI',
              f'{good}..{bad}')
    commits = [Commit(*line.split('\x1f', 2)) for line in out.splitlines() if line]
    if not commits or commits[-1].sha != bad:
        raise BisectError(f'--bad {bad} is not on the first-parent chain above --good {good}')
    return commits


def merged_commits(repo: Path, merge: str) -> list[Commit]:
    """The commits a merge brought in, oldest first: its second parent's first-parent
    chain down to the first parent's history (none when ``merge`` is no merge)."""
    parents = git(repo, 'rev-list', '--parents', '-n', '1', merge).split()[1:]
    if len(parents) < 2:
        return []
    out = git(repo, 'log', '--first-parent', '--reverse', '--format=%H%x1f%s%x1f%cI',
              f'{parents[0]}..{parents[1]}')
    return [Commit(*line.split('\x1f', 2)) for line in out.splitlines() if line]


# ------------------------------------------------------------------ builders
@dataclass
class Built:
    """A commit's build: its manifest entry (``hdf5`` and ``tools``), the manifest's
    top-level fields it came with, and what the builder knows (stand-in: slowdown)."""
    entry: dict[str, Any]
    top: dict[str, Any]
    info: dict[str, Any]


def missing_blobs(repo: Path, commit: str) -> list[str]:
    """Paths of ``commit``'s tree whose blobs the clone lacks."""
    tree = git(repo, 'ls-tree', '-r', '-z', commit).split('\0')
    blobs = [(line.split()[2], line.split('\t', 1)[1]) for line in tree
             if line and line.split()[1] == 'blob']
    out = subprocess.run(['git', '-C', str(repo), 'cat-file', '--batch-check'],
                         input=''.join(f'{sha}\n' for sha, _ in blobs),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [path for (_, path), line in zip(blobs, out) if line.endswith(' missing')]


def source_tarball(repo: Path, commit: str, tarball: Path) -> list[str]:
    """``commit``'s tree under ``hdf5/`` into ``tarball`` (whole or not at all),
    leaving out the files whose blobs the clone lacks; returns those paths."""
    missing = missing_blobs(repo, commit)
    tarball.parent.mkdir(parents=True, exist_ok=True)
    part = tarball.with_name(tarball.name + '.part')
    try:
        git(repo, 'archive', '--format=tar.gz', '--prefix=hdf5/', '-o', str(part), commit,
            '--', '.', *(f':(exclude){p}' for p in missing))
    except BisectError:
        part.unlink(missing_ok=True)
        raise
    part.rename(tarball)
    return missing


class Builder:
    """Builds one commit; :meth:`build` raises :class:`BuildFailed` when it cannot."""
    name = 'builder'

    def build(self, commit: str) -> Built:
        raise NotImplementedError

    def prepare(self, commit: str) -> str:
        """What a build needs before it starts, without building (a machine busy with a
        measurement gets the cheap steps); returns what was done."""
        return 'nothing to prepare'


#: where Spack looks for a git commit's source in a mirror: ``_source-cache/`` + the git
#: fetcher's ``mirror_id`` (``git/<path of the recipe's git URL>/<commit>``) + ``.tar.gz``,
#: a tarball of the tree under ``hdf5/`` (the layout of ``spack mirror create`` and of
#: the offline bundle's mirror); the path is the one of HDF5's recipe,
#: https://github.com/HDFGroup/hdf5.git
HDF5_MIRROR_PATH = '_source-cache/git/HDFGroup/hdf5.git'


class SpackBuilder(Builder):
    """``spack-env/install --candidate SHA`` in a copy of the environment
    (``spack-env/.candidates/<sha12>``), reusing Spack's install tree; the commit's
    build is the manifest's build of that commit.

    With ``repo`` (the bisect's HDF5 clone), each commit's source goes into a source
    mirror of the bisect's own (``<work>/source-mirror``, passed after the given ones)
    from that clone, so an air-gapped site bisects without network: its offline mirror
    holds the pinned commits only."""
    name = 'spack'

    def __init__(self, work: Path, mirrors: Sequence[str] = (),
                 install: Path | None = None, packages: Sequence[str] = (),
                 repo: Path | None = None) -> None:
        self.work, self.mirrors, self.repo = work, list(mirrors), repo
        self.install = install or manifest.repo_root() / 'spack-env' / 'install'
        #: Spack packages built with each commit (``--only``: the failing metrics'
        #: tools); none: the whole environment (every tool, Darshan, the baseline)
        self.packages = sorted(set(packages))

    def source_mirror(self) -> Path:
        return self.work / 'source-mirror'

    def command(self, commit: str, path: Path) -> list[str]:
        cmd = [sys.executable, str(self.install), '--candidate', commit, '--manifest', str(path)]
        if self.packages:
            cmd += ['--only', *self.packages]
        for mirror in self.mirrors + ([str(self.source_mirror())] if self.repo else []):
            cmd += ['--mirror', mirror]
        return cmd

    def archive_source(self, commit: str) -> None:
        """The commit's tree from the clone into the bisect's source mirror (once; whole
        or not at all), without the files whose blobs the clone lacks (public snapshots
        of HDF5 lack some test data, which no build needs). A commit the clone does not
        hold is said, and the build goes on with the other mirrors."""
        tarball = self.source_mirror() / HDF5_MIRROR_PATH / f'{commit}.tar.gz'
        if tarball.exists():
            return
        try:
            left = source_tarball(self.repo, commit, tarball)
        except BisectError as e:
            log(f'warning: no source of {commit[:12]} ({str(e)[:300]}); Spack tries the '
                f'other mirrors')
            return
        if left:
            log(f'{commit[:12]}: source without {len(left)} file(s) whose blobs the clone '
                f'lacks: {", ".join(left[:5])}')

    def run_install(self, cmd: list[str], install_log: Path) -> None:
        install_log.parent.mkdir(parents=True, exist_ok=True)
        log('$ ' + ' '.join(cmd) + f' > {install_log}')
        with open(install_log, 'w') as fp:
            code = subprocess.run(cmd, stdout=fp, stderr=subprocess.STDOUT).returncode
        if code:
            tail = ' | '.join(install_log.read_text().strip().splitlines()[-3:])
            raise BuildFailed(f'spack-env/install exit {code}: {tail}')

    def prepare(self, commit: str) -> str:
        """The commit's source in the mirror and its environment copy concretized
        (``--concretize-only``): the build that follows starts with the install."""
        path = self.work / 'builds' / commit[:12] / 'manifest.json'
        if self.repo:
            self.archive_source(commit)
        self.run_install(self.command(commit, path) + ['--concretize-only'],
                         path.with_name('concretize.log'))
        return f'concretized ({path.with_name("concretize.log")})'

    def build(self, commit: str) -> Built:
        path = self.work / 'builds' / commit[:12] / 'manifest.json'
        if self.repo:
            self.archive_source(commit)
        self.run_install(self.command(commit, path), path.with_name('install.log'))
        data = json.loads(path.read_text())
        for build in data['builds'].values():
            if build['hdf5']['commit'] == commit:
                top = {k: v for k, v in data.items() if k != 'builds'}
                return Built(build, top, {'manifest': str(path)})
        raise BuildFailed(f'{path} has no build of HDF5 commit {commit}')


class StandInBuilder(Builder):
    """A stand-in repository: each commit's file ``slowdown`` holds the fraction by
    which its "HDF5" writes are slowed (0 = as fast as the good commit), or
    ``build fails``. With ``tools``, the build is the stand-in nightly's tools
    (FLASH-IO kernel, ior when on PATH) behind the shim at that fraction;
    without, only the fraction (what :class:`SimulatedRuns` needs)."""
    name = 'stand-in'

    def __init__(self, repo: Path, work: Path, tools: bool = True) -> None:
        self.repo, self.work, self.tools = repo, work, tools

    def slowdown(self, commit: str) -> float:
        try:
            text = git(self.repo, 'show', f'{commit}:slowdown').strip()
        except BisectError as err:
            raise BuildFailed(f'no file "slowdown" in the stand-in commit: {err}') from None
        if text == BUILD_FAILS:
            raise BuildFailed(f'the stand-in commit says "{BUILD_FAILS}"')
        try:
            return float(text)
        except ValueError:
            raise BuildFailed(f'its file "slowdown" reads {text!r}, not a fraction') from None

    def build(self, commit: str) -> Built:
        fraction = self.slowdown(commit)
        hdf5 = {'version': 'system', 'label': f'bisect-{commit[:12]}', 'commit': commit,
                'variants': f'stand-in: the HDF5 on this machine, writes slowed by '
                            f'{fraction:g}', 'hash': commit[:12], 'prefix': str(self.work)}
        top = {'schema': manifest.SCHEMA, 'generated': now_iso(),
               'spack_version': 'none (stand-in)', 'environment': str(self.work),
               'lock_sha256': '0' * 64}
        tools: dict[str, str] = {}
        if self.tools:
            built = manifest.load(standins.build_standins(self.work, fraction),
                                  check_stale=False)
            which = buildid.of_label(standins.STANDIN_B if fraction > 0 else standins.STANDIN_A)
            own = self.work / 'builds' / commit[:12]
            own.mkdir(parents=True, exist_ok=True)
            for name, path in built[which].tools.items():
                # the slowed wrappers are rewritten by the next build: keep this commit's
                if fraction > 0:
                    shutil.copy(path, own / name)
                    path = str(own / name)
                tools[name] = path
        return Built({'hdf5': hdf5, 'tools': tools}, top, {'slowdown': fraction})


def make_standin_repo(path: Path, fractions: Sequence[float | str]) -> list[str]:
    """A stand-in repository: one commit per fraction (the first is --good); returns
    the shas, oldest first. For the tests and the benchmark."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, 'init', '--quiet', '-b', 'main')
    shas = []
    for i, f in enumerate(fractions):
        (path / 'slowdown').write_text(f'{f}\n')
        git(path, 'add', 'slowdown')
        git(path, '-c', 'user.name=h5regress', '-c', 'user.email=h5regress@localhost',
            'commit', '--quiet', '--allow-empty', '-m', f'stand-in commit {i}: slowdown {f}')
        shas.append(git(path, 'rev-parse', 'HEAD').strip())
    return shas
