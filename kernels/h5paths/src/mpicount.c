/* MPI-IO calls counted per rank: the kernel's own definitions of the MPI_File read
 * and write calls HDF5's MPI-IO driver makes, each counting and passing the call to
 * its PMPI_ twin (the MPI profiling interface).
 *
 * Why: collective metadata I/O (--coll-metadata: H5Pset_all_coll_metadata_ops) means
 * rank 0 reads HDF5's metadata and broadcasts it; the other ranks read none.  Nothing
 * in HDF5's API says whether it did (H5Pget_mpio_actual_io_mode covers raw data only),
 * and the 1.10 branch from 1.10.5 to 1.10.8 ignores the file access list's setting
 * after the file's open (HDFFV-11260, fixed in 1.10.9; measured, kernels/h5paths/README.md).
 * The counts of each phase (phase_stop) show which ranks read and wrote, and how.
 *
 * The executable exports these symbols (src/mpicount.dynlist), so libhdf5's calls bind
 * to them; mpicount_active() checks that they did rather than assuming it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* RTLD_DEFAULT (dlfcn.h) */
#endif
#include <dlfcn.h>

#include "h5paths.h"

static long long counts[MPICOUNT_KINDS];

int mpicount_active(void)
{
    /* what a shared library's call to MPI_File_read_at binds to: ours, or the MPI
     * library's (an executable that does not export its symbols) */
    return dlsym(RTLD_DEFAULT, "MPI_File_read_at") == (void *)MPI_File_read_at;
}

void mpicount_now(long long out[MPICOUNT_KINDS])
{
    for (int k = 0; k < MPICOUNT_KINDS; k++)
        out[k] = counts[k];
}

/* each wrapper: count, then the PMPI_ twin; AT: the explicit-offset calls */
#define COUNTED_AT(call, kind, qual) \
    int MPI_##call(MPI_File fh, MPI_Offset offset, qual void *buf, int count, \
                   MPI_Datatype datatype, MPI_Status *status) \
    { counts[kind]++; return PMPI_##call(fh, offset, buf, count, datatype, status); }
#define COUNTED(call, kind, qual) \
    int MPI_##call(MPI_File fh, qual void *buf, int count, MPI_Datatype datatype, \
                   MPI_Status *status) \
    { counts[kind]++; return PMPI_##call(fh, buf, count, datatype, status); }

COUNTED_AT(File_read_at, MPICOUNT_READ_INDEPENDENT, )
COUNTED(File_read, MPICOUNT_READ_INDEPENDENT, )
COUNTED_AT(File_read_at_all, MPICOUNT_READ_COLLECTIVE, )
COUNTED(File_read_all, MPICOUNT_READ_COLLECTIVE, )
COUNTED_AT(File_write_at, MPICOUNT_WRITE_INDEPENDENT, const)
COUNTED(File_write, MPICOUNT_WRITE_INDEPENDENT, const)
COUNTED_AT(File_write_at_all, MPICOUNT_WRITE_COLLECTIVE, const)
COUNTED(File_write_all, MPICOUNT_WRITE_COLLECTIVE, const)
