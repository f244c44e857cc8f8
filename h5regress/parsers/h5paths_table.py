"""The h5paths kernel's code paths and the suite's rows of them: one table each.

:data:`PATHS` says, once per code path of ``kernels/h5paths``, the phases it times (the
parser reads them), its sizes and warm reads (the check runs them). :class:`Row` is one
row of the check (``reframe/checks/h5paths.py``'s ``ROWS``): every field but the path has
a default, so a new row is one line naming what differs.
"""

from __future__ import annotations

from typing import NamedTuple

#: phases that move array data (bandwidth) and phases that touch objects (rate)
DATA_PHASES = ('write', 'write_subset', 'read', 'write_sources', 'read_vds', 'append',
               'write_mc', 'read_mc')
#: data phases whose objects the kernel counts too (append: the extents HDF5 grew)
COUNTED_DATA_PHASES = ('append',)
METADATA_PHASES = ('create', 'open_read', 'open_close', 'open_vds', 'create_flush',
                   'select_ops', 'reopen_read')
#: phases whose peak resident memory is a metric too (``peak_rss``): where HDF5 leaked
MEMORY_PHASES = ('reopen_read',)


class Path(NamedTuple):
    """One code path of the kernel (``--path``)."""

    #: the timed phases, in the kernel's order
    phases: tuple[str, ...]
    #: records per rank per dataset (the attribute size of ``attributes``, the dataset
    #: size of the other metadata paths)
    elements: int
    #: datasets, attributes, files in all (the source files of vds, the datasets of
    #: multi-dataset and multi-chunk, the datasets of each kind of storage-kinds)
    objects: int = 1
    #: reads per read phase of a warm row (``--read-repeats``)
    warm_read_repeats: int = 1
    #: what ``size_factor`` scales: ``elements``, or ``objects`` where they are the work
    work: str = 'elements'
    #: elements per chunk the path always uses (0: the check's ``chunk_elements``)
    chunk_elements: int = 0


_DATA = ('write', 'read')
_OBJECTS = ('create', 'open_read')

#: Every path of the kernel. Sized on ``local`` (2 ranks, the 2-core VM) for gated phases
#: of at least 0.5 s where the data allow it: the gated phase is the read for most rows,
#: and a read moves less than the fsynced write before it. One warm read (``-warm``) is
#: shorter (memory moves at GiB/s, and 0.5 s of it would need a 1 GB fsynced write per
#: iteration), so a warm read phase reads the dataset several times (``warm_read_repeats``).
#: benchmarks/h5paths_noise.py prints each row's gated phase time and the noise the sizes
#: were chosen from; kernels/h5paths/README.md has the kernel's own defaults.
PATHS: dict[str, Path] = {
    'compound-same': Path(_DATA, 3145728, warm_read_repeats=16),
    'compound-subset': Path(('write', 'read', 'write_subset'), 3145728, warm_read_repeats=12),
    'compound-superset': Path(_DATA, 3145728, warm_read_repeats=8),
    'compound-reorder': Path(_DATA, 3145728, warm_read_repeats=3),
    'convert-none': Path(_DATA, 20971520, warm_read_repeats=16),
    'convert-float-double': Path(_DATA, 20971520, warm_read_repeats=8),
    'convert-endian': Path(_DATA, 20971520, warm_read_repeats=6),
    'many-datasets': Path(_OBJECTS, 16, 15000, work='objects'),
    'attributes': Path(_OBJECTS, 8, 50000, work='objects'),
    'open-close': Path(('open_close',), 16, 20000, work='objects'),
    'chunked-deflate': Path(_DATA, 2097152),
    'partial-chunk': Path(_DATA, 8388608),
    'vds': Path(('write_sources', 'read_vds'), 33554432, 8),
    'efc': Path(_OBJECTS, 16, 8, work='objects'),
    'multi-dataset': Path(_DATA, 1048576, 8),
    'strided-chunks': Path(_DATA, 2097152),
    'vds-open': Path(('open_vds',), 65536, 4096, work='objects'),
    'flush-datasets': Path(('create_flush',), 16, 16000, work='objects'),
    'append': Path(('append',), 4194304, 256),
    'point-selections': Path(('write', 'read', 'select_ops'), 131072),
    'multi-chunk': Path(('write', 'read', 'write_mc', 'read_mc'), 2097152, 2),
    'storage-kinds': Path(_DATA, 1024, 2000, work='objects'),
    'vlen-strings': Path(_DATA, 65536),
    'vlen-reopen': Path(('write', 'reopen_read'), 64, 8000, work='objects'),
    'chunk-cache': Path(_DATA, 850, chunk_elements=10000),
    'strided-contiguous': Path(_DATA, 262144, warm_read_repeats=16),
}

#: datasets a data phase moves ``elements`` records of, per object: every object of the
#: multi-dataset paths, the five kinds of each object of storage-kinds (compact,
#: external, filled, anonymous, H5Dcreate1)
DATASETS_PER_OBJECT = {'multi-dataset': 1, 'multi-chunk': 1, 'storage-kinds': 5}

#: paths whose write moves the file record, not the read's memory record (the parser
#: checks the bytes): compound-subset writes whole records before its subset write,
#: strided-chunks writes doubles (parallel HDF5 cannot convert on a filtered write)
#: and reads them as floats
WRITES_FILE_RECORDS = ('compound-subset', 'strided-chunks')

#: the timed phases of each path, in the kernel's order
PHASES: dict[str, tuple[str, ...]] = {name: p.phases for name, p in PATHS.items()}


class Row(NamedTuple):
    """One row of the check: a code path and how it is driven."""

    #: the code path (a key of :data:`PATHS`)
    path: str
    #: ``hdf5``, or ``mpiio``: the same bytes through MPI-IO (the gate's canary)
    api: str = 'hdf5'
    #: ``collective`` or ``independent`` transfers, or ``serial``: a file per rank, the
    #: sec2 driver (many-datasets, attributes, open-close, and the serial paths)
    transfer: str = 'collective'
    #: ``contiguous`` or ``chunked`` datasets
    layout: str = 'contiguous'
    #: ``H5Pset_modify_write_buf``
    modify_write_buf: bool = False
    #: collective metadata I/O
    coll_metadata: bool = False
    #: the low bound of ``H5Pset_libver_bounds``
    libver: str = 'earliest'
    #: cold (``evict``) or warm (``keep``) reads
    read_cache: str = 'evict'
    #: the external file cache on (its size: the linked files) or off (``efc`` only)
    efc_cache: bool = True
    #: a row of the default night (ReFrame tag ``nightly``): the paths where real
    #: regressions were, read warm so the conversion is not buried under the disk
    nightly: bool = False
    #: the file driver of a serial row (``HDF5_DRIVER``): ``''`` for HDF5's default
    #: (sec2), or a driver's name, e.g. ``h5r_vector``, the kernel's plugin with vector
    #: callbacks (``kernels/h5paths/vfd``)
    vfd: str = ''

    def name(self) -> str:
        """``compound-subset-hdf5-collective-contiguous-earliest`` (+ ``-mwb``, ``-cmd``
        where the row sets them, ``-warm`` for warm reads, ``-efc0`` without the external
        file cache, ``-vfd-NAME`` through a file driver): the reference files' ``case``."""
        return '-'.join([self.path, self.api, self.transfer, self.layout] +
                        (['mwb'] if self.modify_write_buf else []) +
                        (['cmd'] if self.coll_metadata else []) + [self.libver] +
                        (['warm'] if self.read_cache == 'keep' else []) +
                        ([] if self.efc_cache else ['efc0']) +
                        ([f'vfd-{self.vfd}'] if self.vfd else []))
