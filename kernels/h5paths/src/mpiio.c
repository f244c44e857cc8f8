/* The MPI-IO twins: the same bytes per rank as the HDF5 row, written and
 * read with MPI_File_write_at[_all] / read_at[_all], no HDF5.  The time of the
 * HDF5 row over its twin's is the cost of HDF5's code path (the canary). */
#include "h5paths.h"

#include <stdio.h>

int mpiio_transfer(const char *path, enum mpiio_mode mode, MPI_Offset disp,
                   MPI_Datatype filetype, void *buf, long long count, MPI_Datatype memtype,
                   int coll)
{
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    MPI_Offset off = disp;
    int amode = mode == MIO_READ ? MPI_MODE_RDONLY
              : mode == MIO_CREATE ? (MPI_MODE_CREATE | MPI_MODE_WRONLY) : MPI_MODE_RDWR;
    int done = 0, rc;

    if (count > 2147483647LL) {
        h5p_error("MPI-IO transfer of %lld elements per rank: more than INT_MAX", count);
        return -1;
    }
    rc = MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        h5p_mpi_error("MPI_File_open", rc);
        h5p_error("cannot open %s with MPI-IO", path);
        return -1;
    }
    if (mode == MIO_CREATE)
        MPICHK(MPI_File_set_size(fh, 0)); /* truncate, like H5F_ACC_TRUNC */
    if (filetype != MPI_DATATYPE_NULL) {
        MPICHK(MPI_File_set_view(fh, disp, MPI_BYTE, filetype, "native", MPI_INFO_NULL));
        off = 0;
    }
    if (mode == MIO_READ) {
        if (coll) MPICHK(MPI_File_read_at_all(fh, off, buf, (int)count, memtype, &st));
        else MPICHK(MPI_File_read_at(fh, off, buf, (int)count, memtype, &st));
    } else {
        if (coll) MPICHK(MPI_File_write_at_all(fh, off, buf, (int)count, memtype, &st));
        else MPICHK(MPI_File_write_at(fh, off, buf, (int)count, memtype, &st));
    }
    MPICHK(MPI_Get_count(&st, memtype, &done));
    if (done != (int)count) {
        h5p_error("short MPI-IO %s of %s: %d of %lld elements", mode == MIO_READ ? "read" :
                  "write", path, done, count);
        goto fail;
    }
    MPICHK(MPI_File_close(&fh));
    return 0;
fail:
    if (fh != MPI_FILE_NULL)
        MPI_File_close(&fh);
    return -1;
}
