/* multi-dataset: --objects 1-d datasets of doubles in one file, written with
 * one H5Dwrite_multi and read with one H5Dread_multi (HDF5 >= 1.14: the
 * multi-dataset / selection I/O path), every rank moving its --elements of
 * each.  Phases: write (create, H5Dwrite_multi, close, fsync), read (open,
 * H5Dread_multi, close).  Built against an older HDF5 the path exits 2. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if H5_VERSION_GE(1, 14, 0)

static char file_name[4096];
static double *buf;         /* [objects][elements] */
static hid_t *ids;          /* [4][objects]: datasets, memory types, memory / file spaces */

static int prepare(run_t *r)
{
    const options_t *o = r->o;
    path_join(file_name, sizeof file_name, o->prefix, "multi-dataset.h5");
    buf = xmalloc((size_t)(o->objects * o->elements) * sizeof(double));
    ids = xmalloc((size_t)o->objects * 4 * sizeof(hid_t));
    if (!buf || !ids)
        return -1;
    r->o->record_bytes_file = r->o->record_bytes_memory = sizeof(double);
    return run_add_file(r, file_name);
}

static void finish(run_t *r)
{
    (void)r;
    free(buf);
    free(ids);
    buf = NULL;
    ids = NULL;
}

static void close_all(long long D)
{
    for (long long j = 0; j < D; j++) {   /* the memory types are H5T_NATIVE_DOUBLE */
        H5RELEASE(&ids[j], &ids[2 * D + j], &ids[3 * D + j]);
    }
}

/* create or open the datasets, then one multi-dataset transfer of this rank's parts */
static int transfer(run_t *r, int write)
{
    int closed = 0;
    const options_t *o = r->o;
    long long D = o->objects;
    hid_t *dset = ids, *mtype = ids + D, *mspace = ids + 2 * D, *fspace = ids + 3 * D;
    hid_t fapl = -1, dxpl = -1, fid = -1;
    hsize_t total = (hsize_t)(o->elements * g_size), n = (hsize_t)o->elements;
    hsize_t start = (hsize_t)rank_offset(o->elements);
    const void **wbufs = xmalloc((size_t)D * sizeof(void *));
    void **rbufs = (void **)wbufs;
    char name[32];
    for (long long k = 0; k < 4 * D; k++)
        ids[k] = -1;
    if (!wbufs || (fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    if (write)
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    else
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    for (long long j = 0; j < D; j++) {
        snprintf(name, sizeof name, "d%05lld", j);
        H5CHK(fspace[j], H5Screate_simple(1, &total, NULL));
        if (write)
            H5CHK(dset[j], H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, fspace[j], H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT));
        else
            H5CHK(dset[j], H5Dopen2(fid, name, H5P_DEFAULT));
        H5DO(H5Sselect_hyperslab(fspace[j], H5S_SELECT_SET, &start, NULL, &n, NULL));
        H5CHK(mspace[j], H5Screate_simple(1, &n, NULL));
        mtype[j] = H5T_NATIVE_DOUBLE;
        wbufs[j] = buf + j * o->elements;
    }
    if (write)
        H5DO(H5Dwrite_multi((size_t)D, dset, mtype, mspace, fspace, dxpl, wbufs));
    else
        H5DO(H5Dread_multi((size_t)D, dset, mtype, mspace, fspace, dxpl, rbufs));
    note_io_mode(r, dxpl);
    close_all(D);
    if (write) {
        closed = 1;
        if (close_written_file(&fid, file_name) < 0)
            goto fail;
    } else
        H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&dxpl, &fapl);
    free(wbufs);
    return 0;
fail:
    close_all(D);
    if (write && !closed)   /* as every rank on the success path does */
        close_written_file(&fid, file_name);
    H5RELEASE(&fid, &dxpl, &fapl);
    free(wbufs);
    return -1;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    long long nval = o->objects * o->elements, bytes = nval * (long long)sizeof(double);
    char *files[1] = {file_name};
    int salt = r->iteration % 8;
    for (long long k = 0; k < nval; k++)
        buf[k] = member_value(k, salt, M_VALUE_D);
    phase_start(r);
    if (transfer(r, 1) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, "write", bytes, o->objects) < 0 || any_errors())
        return -1;
    check_size(file_name, bytes * g_size);
    if (evict_files(r, files, 1) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)bytes);
    phase_start(r);
    transfer(r, 0);
    if (phase_stop(r, "read", bytes, o->objects) < 0 || any_errors())
        return -1;
    for (long long k = 0; k < nval; k++) {
        double want = member_value(k, salt, M_VALUE_D);
        if (buf[k] != want) {
            char m[32];
            snprintf(m, sizeof m, "dataset %lld", k / o->elements);
            verify_double("read", k % o->elements, m, want, buf[k]);
            break;
        }
    }
    return any_errors() ? -1 : 0;
}

#else /* HDF5 < 1.14: no H5Dwrite_multi */

static int prepare(run_t *r)
{
    (void)r;
    if (g_rank == 0)
        fprintf(stderr, "h5paths: ERROR multi-dataset: not available in HDF5 %s\n",
                H5PATHS_HEADER_VERSION);
    return EXIT_UNAVAILABLE;
}
static int iterate(run_t *r) { (void)r; return -1; }
static void finish(run_t *r) { (void)r; }

#endif

const path_t multi_paths[] = {
    {"multi-dataset", "multi", 0, 2LL << 20, 8, prepare, iterate, finish}, {0}};
