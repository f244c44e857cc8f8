"""The HDF5 build id, spelled in this module only.

A build of the Spack manifest is ``hdf5-<label>`` (:func:`of_label`, :func:`label_of`).
Two ids name no manifest build: :data:`PATH_BUILD`, the HDF5 of tools found on
``PATH`` or built by a ReFrame fixture (the value of those checks' ``hdf5_build``
parameter), and :data:`NO_BUILD`, a check or record without an HDF5 build (POSIX
tools, an empty perflog column, ``h5regress parse`` without ``--hdf5-build``).
"""

from __future__ import annotations

#: what every build id of the manifest starts with
PREFIX = 'hdf5-'
#: the HDF5 of the tools on PATH (or built by a fixture): no manifest build
PATH_BUILD = 'path'
#: no HDF5 build at all, or none said
NO_BUILD = 'none'


def of_label(label: str) -> str:
    """The build id of a manifest build's ``label`` (its version or commit label)."""
    return f'{PREFIX}{label}'


def label_of(build_id: str) -> str:
    """The label of a build id (:func:`of_label` undone)."""
    return build_id.removeprefix(PREFIX)
