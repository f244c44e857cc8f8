"""``tool_version`` and where it came from: one key for every tool.

Every record carries ``tool_version`` and ``tool_version_source``. The version is the
first of these that exists, and the source says which it is:

1. ``tool output``: what the run printed (IOR's and mdtest's header, fio's JSON,
   the FLASH-IO kernel's summary); the tool's parser puts it in its provenance;
2. ``build file <path>``: what the installed build says of itself where it prints
   nothing: h5bench's ``h5bench_version.py`` beside its binaries (h5bench 1.6 calls
   itself ``1.4.0`` there: recorded as the build says it);
3. ``Spack spec <prefix>/.spack/spec.json``: the version of the installed Spack spec
   (``git.<commit>=<label>``: MACSio, which reports none, is ``master`` at a commit);
4. ``pinned commit (spack-env/spack.yaml), built by a fixture``: the label and
   commit the build fixture built (:mod:`h5regress.builds`);
5. else ``unknown``, and the source says nothing was found.

Where the Spack spec is there, its version is also kept as ``tool_spack_version``
whatever the first source was (h5bench: ``tool_version`` 1.4.0 from its build file,
``tool_spack_version`` ``git.675c86d...=1.6``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

#: what a parser sets when the tool printed its version
FROM_OUTPUT = 'tool output'
#: files an installed build describes its own version in, beside its binaries
_VERSION_FILES = {'h5bench_version.py': re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""",
                                                   re.M)}
#: how far above the binary a Spack prefix may be (``prefix/bin/x`` or ``prefix/x``)
_PREFIX_LEVELS = 2


def spack_spec_version(binary: str) -> tuple[str, str] | None:
    """(version, path of spec.json) of the Spack spec that installed ``binary``."""
    directory = os.path.dirname(os.path.realpath(binary))
    for _ in range(_PREFIX_LEVELS):
        spec = os.path.join(directory, '.spack', 'spec.json')
        if os.path.exists(spec):
            try:
                with open(spec) as fp:
                    node = json.load(fp)['spec']['nodes'][0]
                return str(node['version']), spec
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                return None
        directory = os.path.dirname(directory)
    return None


def build_file_version(binary: str) -> tuple[str, str] | None:
    """(version, path) from a version file the build installed beside ``binary``."""
    directory = os.path.dirname(os.path.realpath(binary))
    for name, pattern in _VERSION_FILES.items():
        path = os.path.join(directory, name)
        try:
            with open(path) as fp:
                match = pattern.search(fp.read())
        except OSError:
            continue
        if match:
            return match.group(1), path
    return None


def describe(provenance: Mapping[str, Any], binary: str,
             tool_provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``tool_version``, ``tool_version_source`` (and ``tool_spack_version``) of a run:
    ``provenance`` is its parser's, ``binary`` the tool that ran, ``tool_provenance``
    what a build fixture says of its build."""
    out: dict[str, Any] = {}
    spec = spack_spec_version(binary) if binary else None
    if spec:
        out['tool_spack_version'] = spec[0]
    if provenance.get('tool_version'):
        return {**out, 'tool_version': provenance['tool_version'],
                'tool_version_source': provenance.get('tool_version_source', FROM_OUTPUT)}
    found = build_file_version(binary) if binary else None
    if found:
        return {**out, 'tool_version': found[0], 'tool_version_source': f'build file {found[1]}'}
    if spec:
        return {**out, 'tool_version': spec[0], 'tool_version_source': f'Spack spec {spec[1]}'}
    fixture = tool_provenance or {}
    if fixture.get('tool_commit'):
        return {**out, 'tool_version': f'{fixture.get("tool_label", "")}@{fixture["tool_commit"]}',
                'tool_version_source': 'pinned commit (spack-env/spack.yaml), built by a fixture'}
    return {**out, 'tool_version': 'unknown',
            'tool_version_source': f'none: {binary or "the tool"} printed no version and has '
                                   'no build version file nor Spack spec'}
