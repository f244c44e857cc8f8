/* multi-dataset: --objects 1-d datasets of doubles in one file, written with
 * one H5Dwrite_multi and read with one H5Dread_multi (HDF5 >= 1.14: the
 * multi-dataset / selection I/O path), every rank moving its --elements of
 * each.  Phases: write (create, H5Dwrite_multi, close, fsync), read (open,
 * H5Dread_multi, close).  Built against an older HDF5 the path exits 2.
 *
 * multi-chunk (the multi-dataset commit 93754cae's chunked and collective paths):
 * the same with two chunked datasets (--chunk-elements), the second deflated
 * (parallel HDF5 then takes its filtered collective path).  Phases write and read
 * as above (HDF5 chooses between linked-chunk and multi-chunk I/O from the chunks
 * per rank), then write_mc (open, one H5Dwrite_multi_async with H5ES_NONE, which
 * runs synchronously, close, fsync) and read_mc (H5Dread_multi_async), both with
 * H5Pset_dxpl_mpio_chunk_opt(MULTI_IO) and selection I/O off: one collective
 * transfer per chunk, the path HDF5 took before selection I/O. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if H5_VERSION_GE(1, 14, 0)

static char file_name[4096];
static double *buf;         /* [objects][elements] */
static hid_t *ids;          /* [4][objects]: datasets, memory types, memory / file spaces */
static int chunked_multi;   /* multi-chunk: chunked datasets, the second deflated */
static long long g_chunk_elements;
enum transfer_kind { CREATE_WRITE, READ, ASYNC_MULTI_CHUNK_WRITE, ASYNC_MULTI_CHUNK_READ };

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

/* a contiguous dataset, or (multi-chunk) a chunked one, every second one deflated */
static hid_t create_dataset(hid_t fid, const char *name, hid_t space, long long j, hsize_t total)
{
    hid_t dcpl = -1, d = -1;
    hsize_t chunk = total;
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    if (chunked_multi) {
        if ((hsize_t)g_chunk_elements < chunk)
            chunk = (hsize_t)g_chunk_elements;
        H5DO(H5Pset_chunk(dcpl, 1, &chunk));
        if (j % 2)
            H5DO(H5Pset_deflate(dcpl, 1));
    }
    H5CHK(d, H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
fail:
    H5QUIET(H5Pclose, dcpl);
    return d;
}

/* one collective transfer per chunk, without selection I/O */
static int multi_chunk_dxpl(hid_t dxpl)
{
    H5DO(H5Pset_dxpl_mpio_chunk_opt(dxpl, H5FD_MPIO_CHUNK_MULTI_IO));
#ifdef H5PATHS_HAVE_SELECTION_IO   /* before it (3236fb79), selection I/O was off unless
                                    * the environment's HDF5_USE_SELECTION_IO said so */
    H5DO(H5Pset_selection_io(dxpl, H5D_SELECTION_IO_MODE_OFF));
#endif
    return 0;
fail:
    return -1;
}

/* create or open the datasets, then one multi-dataset transfer of this rank's parts */
static int transfer(run_t *r, enum transfer_kind kind)
{
    int write = kind == CREATE_WRITE || kind == ASYNC_MULTI_CHUNK_WRITE;
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
    if (kind >= ASYNC_MULTI_CHUNK_WRITE && multi_chunk_dxpl(dxpl) < 0)
        goto fail;
    if (kind == CREATE_WRITE)
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    else
        H5CHK(fid, H5Fopen(file_name, write ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl));
    for (long long j = 0; j < D; j++) {
        snprintf(name, sizeof name, "d%05lld", j);
        H5CHK(fspace[j], H5Screate_simple(1, &total, NULL));
        if (kind == CREATE_WRITE)
            H5CHK(dset[j], create_dataset(fid, name, fspace[j], j, total));
        else
            H5CHK(dset[j], H5Dopen2(fid, name, H5P_DEFAULT));
        H5DO(H5Sselect_hyperslab(fspace[j], H5S_SELECT_SET, &start, NULL, &n, NULL));
        H5CHK(mspace[j], H5Screate_simple(1, &n, NULL));
        mtype[j] = H5T_NATIVE_DOUBLE;
        wbufs[j] = buf + j * o->elements;
    }
    if (kind == CREATE_WRITE)
        H5DO(H5Dwrite_multi((size_t)D, dset, mtype, mspace, fspace, dxpl, wbufs));
    else if (kind == READ)
        H5DO(H5Dread_multi((size_t)D, dset, mtype, mspace, fspace, dxpl, rbufs));
    else if (write)
        H5DO(H5Dwrite_multi_async((size_t)D, dset, mtype, mspace, fspace, dxpl, wbufs,
                                  H5ES_NONE));
    else
        H5DO(H5Dread_multi_async((size_t)D, dset, mtype, mspace, fspace, dxpl, rbufs,
                                 H5ES_NONE));
    note_io_mode(r, dxpl);
    close_all(D);
    if (close_phase_file(&fid, file_name, write, &closed) < 0)
        goto fail;
    H5CLOSE_ALL(&dxpl, &fapl);
    free(wbufs);
    return 0;
fail:
    close_all(D);
    release_phase_file(&fid, file_name, write, closed);
    H5RELEASE(&fid, &dxpl, &fapl);
    free(wbufs);
    return -1;
}

/* a timed write then a timed read of every dataset (the file evicted between) */
static int write_read(run_t *r, enum transfer_kind wkind, const char *wname,
                      enum transfer_kind rkind, const char *rname, int salt)
{
    const options_t *o = r->o;
    long long nval = o->objects * o->elements, bytes = nval * (long long)sizeof(double);
    char *files[1] = {file_name};
    fill_values(buf, nval, salt);
    phase_start(r);
    if (transfer(r, wkind) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, wname, bytes, o->objects) < 0 || any_errors())
        return -1;
    if (!chunked_multi)   /* deflated datasets are smaller */
        check_size(file_name, bytes * g_size);
    if (evict_files(r, files, 1) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)bytes);
    phase_start(r);
    transfer(r, rkind);
    if (phase_stop(r, rname, bytes, o->objects) < 0 || any_errors())
        return -1;
    for (long long k = 0; k < nval; k++) {
        double want = member_value(k, salt, M_VALUE_D);
        if (buf[k] != want) {
            char m[32];
            snprintf(m, sizeof m, "dataset %lld", k / o->elements);
            verify_double(rname, k % o->elements, m, want, buf[k]);
            break;
        }
    }
    return any_errors() ? -1 : 0;
}

static int iterate(run_t *r)
{
    int salt = r->iteration % 8;
    if (write_read(r, CREATE_WRITE, "write", READ, "read", salt) < 0)
        return -1;
    if (!chunked_multi)
        return 0;
    return write_read(r, ASYNC_MULTI_CHUNK_WRITE, "write_mc", ASYNC_MULTI_CHUNK_READ,
                      "read_mc", (salt + 1) % 8);
}

static int prepare_chunked(run_t *r)
{
    chunked_multi = 1;
    g_chunk_elements = r->o->chunk_elements;
    r->o->chunked = 1;
    if (!r->o->collective || H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR multi-chunk: needs collective transfers and the "
                    "deflate filter\n");
        return EXIT_UNAVAILABLE;
    }
    return prepare(r);
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
static int prepare_chunked(run_t *r) { return unavailable_before_1_14(r); }
static int iterate(run_t *r) { (void)r; return -1; }
static void finish(run_t *r) { (void)r; }

#endif

const path_t multi_paths[] = {
    {"multi-dataset", "multi", 0, 2LL << 20, 8, prepare, iterate, finish},
    {"multi-chunk", "multi", 0, 1LL << 20, 2, prepare_chunked, iterate, finish}, {0}};
