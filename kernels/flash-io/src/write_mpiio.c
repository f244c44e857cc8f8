/* The same file with MPI-IO directly, no HDF5: the datasets of the plan are
 * laid end to end (each aligned like HDF5 would with --alignment), rank 0
 * writes the header bytes, every rank writes its rows of every per-block
 * dataset at the same offsets within the array as in the HDF5 file.  The
 * bytes of data are identical; what differs is HDF5's metadata and library
 * overhead, so HDF5 time / MPI-IO time is the cost of HDF5 for this pattern. */
#include "flash_io.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static int write_at(MPI_File fh, MPI_Offset off, const void *buf, size_t n, int coll)
{
    /* counts above INT_MAX are written in pieces (a rank never has that much here,
       but the kernel must not truncate silently if someone asks for huge blocks) */
    const char *c = buf;
    MPI_Status st;
    do {
        int piece = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        int done = 0;
        if (coll)
            MPICHK(MPI_File_write_at_all(fh, off, c, piece, MPI_BYTE, &st));
        else
            MPICHK(MPI_File_write_at(fh, off, c, piece, MPI_BYTE, &st));
        MPICHK(MPI_Get_count(&st, MPI_BYTE, &done));
        if (done != piece)
            FAIL("short write: %d of %d bytes at offset %lld", done, piece, (long long)off);
        n -= (size_t)piece;
        off += piece;
        c += piece;
    } while (n > 0 && !coll);
    if (n > 0)
        FAIL("collective write of more than INT_MAX bytes per rank is not supported");
    return 0;
fail:
    return -1;
}

int write_mpiio(const plan_t *p, const mesh_t *m, const options_t *o, ftime_t *t)
{
    MPI_File fh = MPI_FILE_NULL;
    MPI_Offset off = 0;
    double t0, t1, t2, t3, t4;

    memset(t, 0, sizeof *t);
    MPICHK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    {
        int rc = MPI_File_open(MPI_COMM_WORLD, p->path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                               MPI_INFO_NULL, &fh);
        if (rc != MPI_SUCCESS) {
            fio_mpi_error(__FILE__, __LINE__, "MPI_File_open", rc);
            fh = MPI_FILE_NULL;
            FAIL("cannot create the file %s (MPI_File_open failed)", p->path);
        }
    }
    MPICHK(MPI_File_set_size(fh, 0)); /* truncate, like H5F_ACC_TRUNC */
    t1 = MPI_Wtime();
    for (int i = 0; i < p->ndset; i++) {
        const dset_t *d = &p->dset[i];
        size_t total = dset_total_bytes(d);
        if (o->alignment > 1 && (long long)total >= o->align_threshold)
            off = (off + o->alignment - 1) / o->alignment * o->alignment;
        if (!d->blocked) {
            if (g_rank == 0 && write_at(fh, off, d->buf, total, 0) < 0)
                FAIL("writing \"%s\" of %s", d->name, p->path);
        } else {
            size_t row = dset_row_bytes(d);
            MPI_Offset mine = off + (MPI_Offset)row * m->global_offset;
            if (write_at(fh, mine, d->buf, row * (size_t)m->local_blocks, o->collective) < 0)
                FAIL("writing \"%s\" of %s", d->name, p->path);
        }
        off += (MPI_Offset)total;
    }
    t2 = MPI_Wtime();
    MPICHK(MPI_File_close(&fh));
    t3 = MPI_Wtime();
    if (o->fsync && fsync_path(p->path) < 0)
        goto fail;
    t4 = MPI_Wtime();
    t->open = t1 - t0;
    t->write = t2 - t1;
    t->close = t3 - t2;
    t->fsync = t4 - t3;
    t->total = t4 - t0;
    return 0;
fail:
    if (fh != MPI_FILE_NULL)
        MPI_File_close(&fh);
    return -1;
}
