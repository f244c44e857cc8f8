/* chunk-cache (HDFFV-10601, regressions/chunk-cache-hash-hdffv-10601.yaml): a 2-D
 * deflate-chunked dataset of doubles read one column at a time through a chunk cache
 * of fewer hash slots than there are chunks along the fastest dimension, with partial
 * edge chunks in both dimensions. Serial: every rank works in a file of its own with
 * the sec2 driver, PREFIXchunk-cache-rNNNN.h5.
 *
 * Before HDF5's fix e07d097d (2018), once the chunks along the fastest dimension
 * outnumbered the slots, H5D__chunk_hash_val hashed that dimension alone: every chunk
 * of one column of chunks took the same slot and evicted the one before, so each
 * column read decompressed them all again. Fixed, they stay in the cache.
 *
 * --elements: rows (the slower dimension) per rank; COLS columns of CHUNK x CHUNK
 * chunks whatever --chunk-elements says (fewer rows than CHUNK: chunks of every row;
 * the summary records the chunks made); a record is one row (COLS doubles). Phases: write (file create, one
 * H5Dwrite of the whole dataset, close, fsync), read (open with
 * H5Pset_chunk_cache(SLOTS, CACHE_BYTES, 0.75), one H5Dread per column, close;
 * verified); objects: none. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS 3250          /* 33 columns of chunks, the last one 50 wide */
#define CHUNK 100
#define SLOTS 31           /* prime, fewer than the 33 (32 by the old rounding) */
#define CACHE_BYTES (4 << 20)   /* every chunk of a column of chunks, at 850 rows */

static hsize_t chunk_rows; /* CHUNK, or every row of a smaller dataset */
static char **names;       /* every rank's file (rank 0 lists and removes them all) */
static char *file_name;    /* this rank's */
static double *buf;        /* [rows][COLS] */

static double value(long long i, long long j, int salt) { return (double)(i + j + salt); }

static int prepare(run_t *r)
{
    options_t *o = r->o;
    o->record_bytes_file = o->record_bytes_memory = COLS * (long long)sizeof(double);
    chunk_rows = o->elements < CHUNK ? (hsize_t)o->elements : CHUNK;
    o->chunk_elements = (long long)chunk_rows * CHUNK;     /* the chunks made */
    o->chunked = 1;
    if (!(buf = xmalloc((size_t)(o->elements * COLS) * sizeof(double))) ||
        !(names = rank_file_names(r, "chunk-cache")))
        return -1;
    file_name = names[g_rank];
    snprintf(r->extra_json, sizeof r->extra_json,
             "\"chunk_cache\": {\"columns\": %d, "
             "\"chunk\": [%llu, %d], \"slots\": %d, \"bytes\": %d}",
             COLS, (unsigned long long)chunk_rows, CHUNK, SLOTS, CACHE_BYTES);
    return 0;
}

static void finish(run_t *r)
{
    (void)r;
    release_rank_files(&names, &buf);
}

static int write_dataset(const options_t *o, int salt)
{
    hid_t fapl = -1, dcpl = -1, fid = -1, space = -1, d = -1;
    hsize_t dims[2] = {(hsize_t)o->elements, COLS}, chunk[2] = {chunk_rows, CHUNK};
    for (long long i = 0; i < o->elements; i++)
        for (long long j = 0; j < COLS; j++)
            buf[i * COLS + j] = value(i, j, salt);
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    H5DO(H5Pset_chunk(dcpl, 2, chunk));
    H5DO(H5Pset_deflate(dcpl, 1));
    H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5CHK(space, H5Screate_simple(2, dims, NULL));
    H5CHK(d, H5Dcreate2(fid, "columns", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl,
                        H5P_DEFAULT));
    H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    H5CLOSE(H5Dclose, d);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&space, &dcpl, &fapl);
    return 0;
fail:
    H5RELEASE(&d, &space, &fid, &dcpl, &fapl);
    return -1;
}

/* column j of every row into buf's column j, through a memory space of one column */
static int read_columns(const options_t *o, int salt)
{
    hid_t fapl = -1, dapl = -1, fid = -1, fspace = -1, mspace = -1, d = -1;
    hsize_t rows = (hsize_t)o->elements, start[2] = {0, 0}, count[2] = {rows, 1};
    double *col = xmalloc((size_t)rows * sizeof(double));
    if (!col)
        return -1;
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(dapl, H5Pcreate(H5P_DATASET_ACCESS));
    H5DO(H5Pset_chunk_cache(dapl, SLOTS, CACHE_BYTES, 0.75));
    H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    H5CHK(d, H5Dopen2(fid, "columns", dapl));
    H5CHK(fspace, H5Dget_space(d));
    H5CHK(mspace, H5Screate_simple(1, &rows, NULL));
    for (long long j = 0; j < COLS; j++) {
        start[1] = (hsize_t)j;
        H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
        H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, col));
        for (long long i = 0; i < o->elements; i++)
            if (col[i] != value(i, j, salt)) {
                char m[32];
                snprintf(m, sizeof m, "column %lld", j);
                verify_double("read", i, m, value(i, j, salt), col[i]);
                goto fail;
            }
    }
    H5CLOSE(H5Dclose, d);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&mspace, &fspace, &dapl, &fapl);
    free(col);
    return 0;
fail:
    H5RELEASE(&d, &mspace, &fspace, &fid, &dapl, &fapl);
    free(col);
    return -1;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    char *files[1] = {file_name};
    long long bytes = o->elements * o->record_bytes_memory;
    int salt = r->iteration % 8, rc;
    phase_start(r);
    if ((rc = write_dataset(o, salt)) == 0)
        rc = fsync_files(files, 1);
    if (phase_stop(r, "write", rc < 0 ? 0 : bytes, 0) < 0 || any_errors())
        return -1;
    if (evict_files(r, names, g_size) < 0)   /* the node leader: every rank's */
        return -1;
    phase_start(r);
    rc = read_columns(o, salt);
    if (phase_stop(r, "read", rc < 0 ? 0 : bytes, 0) < 0)
        return -1;
    return any_errors() ? -1 : 0;
}

const path_t chunkcache_paths[] = {
    {"chunk-cache", "serial", 0, 850, 1, prepare, iterate, finish}, {0}};
