/* flush-datasets (HDF5 issue 3084, fixed by 560e80c0 "Improve performance of
 * flushing single objects"): --objects small datasets created one after the
 * other, each written and flushed by itself (H5Dflush) while the metadata cache
 * holds every object made before it: a flush that scans the whole cache is
 * quadratic in the objects.  Parallel HDF5 refuses to flush a single object, so
 * each rank works serially (sec2 driver) in a file of its own,
 * PREFIXflush-datasets-rNNNN.h5.  Phase create_flush: file create, every
 * dataset created, written, flushed and closed, file closed and fsynced; its
 * objects are the datasets H5Dflush returned success for on rank 0 (the least
 * over the ranks).  Untimed after it: every dataset read back and checked. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **names;         /* every rank's file (rank 0 lists and removes them all) */
static char *file_name;      /* this rank's */
static double *buf;          /* [elements] */

static int prepare(run_t *r)
{
    if (!(buf = xmalloc((size_t)r->o->elements * sizeof(double))) ||
        !(names = rank_file_names(r, "flush-datasets")))
        return -1;
    file_name = names[g_rank];
    snprintf(r->extra_json, sizeof r->extra_json, "\"flush_driver\": \"sec2\"");
    return 0;
}

static void finish(run_t *r)
{
    (void)r;
    release_rank_files(&names, &buf);
}

static double value(long long j, long long i, int salt)
{
    return member_value(j * 1000003LL + i, salt, M_VALUE_D);
}

/* dataset j is d<j>; returns the datasets flushed, -1 on an error */
static long long create_flush(const options_t *o, int salt)
{
    hid_t fapl = -1, fid = -1, space = -1, d = -1;
    hsize_t n = (hsize_t)o->elements;
    long long flushed = 0;
    char name[32];
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    for (long long j = 0; j < o->objects; j++) {
        for (long long i = 0; i < o->elements; i++)
            buf[i] = value(j, i, salt);
        snprintf(name, sizeof name, "d%06lld", j);
        H5CHK(d, H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT));
        H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
        H5DO(H5Dflush(d));
        flushed++;
        H5CLOSE(H5Dclose, d);
    }
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&space, &fapl);
    return flushed;
fail:
    H5RELEASE(&d, &space, &fid, &fapl);
    return -1;
}

static int read_back(const options_t *o, int salt)
{
    hid_t fapl = -1, fid = -1, d = -1;
    char name[32];
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    for (long long j = 0; j < o->objects; j++) {
        snprintf(name, sizeof name, "d%06lld", j);
        H5CHK(d, H5Dopen2(fid, name, H5P_DEFAULT));
        H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
        H5CLOSE(H5Dclose, d);
        for (long long i = 0; i < o->elements; i++)
            if (buf[i] != value(j, i, salt)) {
                verify_double("create_flush", i, name, value(j, i, salt), buf[i]);
                goto fail;
            }
    }
    H5CLOSE(H5Fclose, fid);
    H5Pclose(fapl);
    return 0;
fail:
    H5RELEASE(&d, &fid, &fapl);
    return -1;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    char *files[1] = {file_name};
    int salt = r->iteration % 8;
    long long flushed, least = 0;
    phase_start(r);
    if ((flushed = create_flush(o, salt)) >= 0)
        fsync_files(files, 1);
    MPICHK(MPI_Allreduce(&flushed, &least, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
    if (phase_stop(r, "create_flush", o->objects * o->elements * (long long)sizeof(double),
                   least < 0 ? 0 : least) < 0 || any_errors())
        return -1;
    if (evict_files(r, names, g_size) < 0)   /* the node leader: every rank's */
        return -1;
    read_back(o, salt);
    return any_errors() ? -1 : 0;
fail:
    return -1;
}

const path_t flush_paths[] = {
    {"flush-datasets", "metadata", 0, 16, 4000, prepare, iterate, finish}, {0}};
