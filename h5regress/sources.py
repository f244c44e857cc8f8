"""Where the source of a tool built without Spack comes from, and the HDF5 it builds against.

The build fixtures of the checks (:mod:`h5regress.builds`) build IOR (with mdtest),
json-cwx + MACSio and h5bench from source when there is no Spack environment. What
they build is what the Spack environment pins, read from ``spack-env/spack.yaml``
(one place for each fact): a spec ``<name>@git.<40-hex commit>=<label>`` among its
definitions or specs, or a ``require`` of ``packages: <name>:`` (json-cwx).

Where the tarball of that commit comes from:

- a directory laid out as a Spack source mirror,
  ``<dir>/_source-cache/git/<org>/<repo>.git/<commit>.tar.gz``, named by
  ``$H5REGRESS_TOOL_SOURCES`` or else by the partition's ``extras['tool_sources']``
  (an air-gapped site keeps one beside its Spack; ``file://`` is accepted);
- otherwise the upstream GitHub archive of the commit,
  ``https://github.com/<org>/<repo>/archive/<commit>.tar.gz``, downloaded with curl
  by the build job; when that fails the job says which URL and which setting to use.

Either tarball unpacks into one directory named after the package: the mirror's
tarballs hold one top directory (``ior/``), GitHub's another (``ior-<commit>/``);
``--strip-components=1`` takes either.

The HDF5 a build compiles against comes from the partition's ``extras`` too
(:func:`locate_hdf5`): ``hdf5_prefix``, or the pkg-config module ``hdf5_pkg_config``
(``hdf5-openmpi`` on Debian), or else what ``h5pcc -show`` compiles with.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import shlex
import subprocess
from pathlib import Path

import yaml

from h5regress.manifest import repo_root

#: environment variable naming the source mirror; it overrides the partition's setting
ENV_VAR = 'H5REGRESS_TOOL_SOURCES'
#: the partition ``extras`` key naming the source mirror
EXTRAS_KEY = 'tool_sources'

#: upstream GitHub repository (``org/repo``) of each package the fixtures build: what
#: the Spack recipes clone, and the path of its tarballs in a Spack source mirror
REPOSITORIES = {
    'ior': 'hpc/ior',
    'json-cwx': 'LLNL/json-cwx',
    'macsio': 'LLNL/MACSio',
    'h5bench': 'hpc-io/h5bench',
    'hdf5': 'HDFGroup/hdf5',
}

_PIN = re.compile(r'^(?P<name>[A-Za-z0-9_-]*)@git\.(?P<commit>[0-9a-f]{40})=(?P<label>[^\s%^+~]+)')


class SourceError(RuntimeError):
    """No pin, no tarball or no HDF5: the message names the file or setting to fix."""


@dataclasses.dataclass(frozen=True)
class Pin:
    """One package at the commit ``spack-env/spack.yaml`` pins."""

    package: str
    commit: str
    label: str

    @property
    def repository(self) -> str:
        try:
            return REPOSITORIES[self.package]
        except KeyError:
            raise SourceError(f'no upstream repository known for {self.package} '
                              f'(h5regress.sources.REPOSITORIES)') from None

    def mirror_path(self, mirror: str | os.PathLike) -> Path:
        """The tarball's path in a Spack source mirror."""
        return (Path(mirror) / '_source-cache' / 'git' / f'{self.repository}.git' /
                f'{self.commit}.tar.gz')

    @property
    def url(self) -> str:
        return f'https://github.com/{self.repository}/archive/{self.commit}.tar.gz'

    def __str__(self) -> str:
        return f'{self.package} {self.label} at commit {self.commit}'


def spack_yaml() -> Path:
    return repo_root() / 'spack-env' / 'spack.yaml'


def _spec_strings(node):
    """Every string under ``node`` (definitions, specs, matrices, requires)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _spec_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _spec_strings(value)


def pins(path: str | os.PathLike | None = None) -> dict[str, Pin]:
    """Packages pinned by commit in the Spack environment, by name.

    A package pinned more than once (HDF5: baseline and candidate) is left out: the
    fixtures build tools, one commit each.
    """
    path = Path(path or spack_yaml())
    try:
        env = (yaml.safe_load(path.read_text()) or {}).get('spack', {})
    except (OSError, yaml.YAMLError) as err:
        raise SourceError(f'cannot read the tool pins: {path}: {err}') from None
    found: dict[str, set[tuple[str, str]]] = {}
    for text in _spec_strings([env.get('definitions', []), env.get('specs', [])]):
        m = _PIN.match(text.strip())
        if m and m['name']:
            found.setdefault(m['name'], set()).add((m['commit'], m['label']))
    for name, conf in (env.get('packages') or {}).items():
        for text in _spec_strings((conf or {}).get('require', [])):
            m = _PIN.match(text.strip())
            if m and m['name'] in ('', name):
                found.setdefault(name, set()).add((m['commit'], m['label']))
    return {name: Pin(name, *next(iter(commits)))
            for name, commits in found.items() if len(commits) == 1}


def pin(package: str, path: str | os.PathLike | None = None) -> Pin:
    found = pins(path)
    if package not in found:
        raise SourceError(f'{path or spack_yaml()} pins no single commit of {package} '
                          f"(expected '{package}@git.<40-hex commit>=<label>')")
    return found[package]


def mirror_setting(extras: dict) -> tuple[str, str]:
    """(source mirror directory or '', the setting that named it)."""
    value, setting = os.environ.get(ENV_VAR, ''), f'${ENV_VAR}'
    if not value:
        value, setting = extras.get(EXTRAS_KEY) or '', f"the partition's extras['{EXTRAS_KEY}']"
    if value.startswith('file://'):
        value = value[len('file://'):]
    return (os.path.abspath(os.path.expandvars(os.path.expanduser(value))) if value else '',
            setting)


@dataclasses.dataclass(frozen=True)
class Source:
    """A pinned package's tarball: a file of the source mirror, or the upstream URL."""

    pin: Pin
    #: path of the tarball in the mirror, or the URL to download
    origin: str
    #: ``True`` when ``origin`` is a URL the build job downloads
    download: bool

    @property
    def how_to_provide(self) -> str:
        return (f'set ${ENV_VAR} (or the partition\'s extras["{EXTRAS_KEY}"]) to a Spack '
                f'source mirror holding _source-cache/git/{self.pin.repository}.git/'
                f'{self.pin.commit}.tar.gz')

    def unpack_commands(self, dest: str) -> list[str]:
        """Shell lines that put the source tree into ``dest`` (relative to the build's
        working directory) and record the tarball's sha256 in ``<dest>.sha256``."""
        tarball = self.origin
        lines = []
        if self.download:
            tarball = f'{dest}-{self.pin.commit}.tar.gz'
            why = (f'h5regress: cannot download {self.origin} ({self.pin}, pinned by '
                   f'spack-env/spack.yaml): {self.how_to_provide}')
            lines.append(f'curl -fsSL --retry 2 --connect-timeout 20 -o {shlex.quote(tarball)} '
                         f'{shlex.quote(self.origin)} || '
                         f'{{ echo {shlex.quote(why)} >&2; exit 1; }}')
        q, d = shlex.quote(tarball), shlex.quote(dest)
        lines += [f'rm -rf {d}', f'mkdir -p {d}',
                  f'tar -xzf {q} -C {d} --strip-components=1',
                  f'sha256sum {q} > {d}.sha256']
        return lines


def locate(package: str, extras: dict, spack_yaml_path=None) -> Source:
    """The tarball of ``package`` at its pinned commit, from the mirror the site names
    (``$H5REGRESS_TOOL_SOURCES``, else ``extras['tool_sources']``), else the upstream URL.

    Raises :class:`SourceError` when a mirror is named but lacks the tarball.
    """
    p = pin(package, spack_yaml_path)
    mirror, setting = mirror_setting(extras)
    if not mirror:
        return Source(p, p.url, download=True)
    if not os.path.isdir(mirror):
        raise SourceError(f'{mirror}: no such directory, named as the source mirror by '
                          f'{setting}')
    path = p.mirror_path(mirror)
    if not path.is_file():
        raise SourceError(f'{path}: no tarball of {p} in the source mirror {mirror} that '
                          f'{setting} names (a Spack source mirror: '
                          f'spack mirror create, or the site\'s offline bundle)')
    return Source(p, str(path), download=False)


# ------------------------------------------------------------------------- HDF5

@dataclasses.dataclass(frozen=True)
class HDF5Location:
    """The parallel HDF5 a build compiles and links against."""

    include_dir: str
    lib_dir: str
    #: a directory with ``include/hdf5.h`` and ``lib/libhdf5.*`` ('' when there is none)
    prefix: str
    #: how it was found (the setting or command), for the provenance
    found_by: str

    @property
    def library(self) -> str:
        """The shared libhdf5 (else the static one) in :attr:`lib_dir`."""
        for name in ('libhdf5.so', 'libhdf5.a'):
            if os.path.exists(os.path.join(self.lib_dir, name)):
                return os.path.join(self.lib_dir, name)
        return os.path.join(self.lib_dir, 'libhdf5.so')

    def describe(self) -> str:
        return f'{self.found_by}: -I{self.include_dir} -L{self.lib_dir}'


def _dirs(flags: str, option: str) -> list[str]:
    words = shlex.split(flags)
    out = []
    for i, word in enumerate(words):
        if word == option and i + 1 < len(words):
            out.append(words[i + 1])
        elif word.startswith(option) and len(word) > len(option):
            out.append(word[len(option):])
    return out


def _command(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SourceError(f'{" ".join(cmd)}: {err}') from None
    if out.returncode != 0:
        raise SourceError(f'{" ".join(cmd)} exited {out.returncode}: '
                          f'{(out.stderr or out.stdout).strip()}')
    return out.stdout


def _prefix_of(include_dir: str, lib_dir: str) -> str:
    """The directory holding both as ``include/`` and ``lib/`` (Spack's prefix; Debian's
    flavour directory, whose ``include`` and ``lib`` are links), or ''."""
    for cand in (os.path.dirname(lib_dir.rstrip('/')), lib_dir):
        inc = os.path.join(cand, 'include')
        if os.path.isdir(inc) and os.path.samefile(inc, include_dir) and \
                glob.glob(os.path.join(cand, 'lib', 'libhdf5.*')):
            return cand
    return ''


def locate_hdf5(extras: dict) -> HDF5Location:
    """The HDF5 the partition names: ``extras['hdf5_prefix']``, else the pkg-config
    module ``extras['hdf5_pkg_config']``, else the flags of ``h5pcc -show``
    (``extras['h5pcc']``, default ``h5pcc`` on PATH)."""
    how_to = ("set the partition's extras['hdf5_prefix'] (a directory with include/hdf5.h "
              "and lib/libhdf5.so) or extras['hdf5_pkg_config'] (a pkg-config module, "
              "e.g. hdf5-openmpi)")
    if extras.get('hdf5_prefix'):
        prefix = os.path.expanduser(extras['hdf5_prefix'])
        lib = next((os.path.join(prefix, d) for d in ('lib', 'lib64')
                    if glob.glob(os.path.join(prefix, d, 'libhdf5.*'))),
                   os.path.join(prefix, 'lib'))
        incs, libs = [os.path.join(prefix, 'include')], [lib]
        found_by = f"extras['hdf5_prefix'] {prefix}"
    elif extras.get('hdf5_pkg_config'):
        module = extras['hdf5_pkg_config']
        flags = _command(['pkg-config', '--cflags-only-I', '--libs-only-L', module])
        incs, libs = _dirs(flags, '-I'), _dirs(flags, '-L')
        found_by = f'pkg-config {module}'
    else:
        h5pcc = extras.get('h5pcc', 'h5pcc')
        flags = _command([h5pcc, '-show'])
        incs, libs = _dirs(flags, '-I'), _dirs(flags, '-L')
        found_by = f'{h5pcc} -show'
    include = next((d for d in incs if os.path.isfile(os.path.join(d, 'hdf5.h'))), '')
    lib = next((d for d in libs if glob.glob(os.path.join(d, 'libhdf5.*'))), '')
    if not include or not lib:
        raise SourceError(f'{found_by}: no hdf5.h in {incs or "no -I"} or no libhdf5 in '
                          f'{libs or "no -L"}: {how_to}')
    return HDF5Location(include, lib, _prefix_of(include, lib), found_by)
