/* Serial rows: each rank works in files of its own with the sec2 driver (one
 * process per file, as most HDF5 users run), PREFIX<path>-rNNNN.h5.
 *
 * storage-kinds (the regression-prone commits' storage layouts): --objects
 * datasets of --elements doubles of each kind: compact (in the object header),
 * external (H5Pset_external into one raw file per rank, found through
 * H5Pset_efile_prefix), contiguous filled when allocated (H5D_ALLOC_TIME_EARLY,
 * H5D_FILL_TIME_ALLOC), anonymous (H5Dcreate_anon, then linked; written and read
 * through H5Dwrite_async and H5Dread_async with H5ES_NONE, which run
 * synchronously) and made by H5Dcreate1 (H5Dcreate2 in a build without deprecated
 * symbols).  Phases: write (file create, every dataset created and written,
 * close, fsync of both files), read (open, every dataset read, H5Drefresh of the
 * first, close; verified); objects: datasets.
 *
 * vlen-strings (netcdf-c 2219, the conversion of variable-length data): a
 * dataset of --elements variable-length strings of 1-40 characters and one of
 * --elements variable-length sequences of 0-7 ints.  Phases: write (file
 * create, both written, close, fsync), read (open, H5Dvlen_get_buf_size of
 * both, both read, H5Treclaim, close; verified); bytes: the memory records
 * (a pointer and an hvl_t per element), as for the other paths.
 *
 * strided-contiguous (regressions/vector-vfd-bypasses-sieve-clio-980.yaml): one
 * contiguous dataset of --elements x STRIDE floats, of which one H5Dwrite writes and one
 * H5Dread reads every STRIDE-th (a hyperslab of --elements blocks of one float).
 * Through sec2 both go through HDF5's data sieve; through a driver with vector callbacks
 * (HDF5_DRIVER: the check's Row.vfd or file_driver), HDF5 from 3236fb79 on turns
 * selection I/O on and hands the driver a vector of one entry per element.  Phases: write (file
 * create, dataset created and written, close, fsync), read (open, --read-repeats reads
 * of the selection, close; verified); bytes: the floats moved. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if H5_VERSION_GE(1, 14, 0)   /* H5Dwrite_async, H5Treclaim */

enum { K_COMPACT, K_EXTERNAL, K_FILLED, K_ANON, K_CREATE1, NKINDS };
static const char *const kind_names[NKINDS] = {"compact", "external", "filled", "anon",
                                              "create1"};

static char file_name[4096], raw_name[4096], raw_dir[4096];
static double *buf;          /* [elements] */
static char **strs;          /* vlen-strings: [elements] */
static float *floats;        /* strided-contiguous: [elements] */
static hvl_t *seqs;          /* vlen-strings: [elements] */

/* every rank's file NAME-rNNNN.h5 (and NAME-rNNNN.raw with raw), rank 0 lists all */
static int rank_files(run_t *r, const char *name, int raw)
{
    char tail[96];
    for (int k = 0; k < g_size; k++) {
        for (int x = 0; x <= raw; x++) {
            char path[4096];
            snprintf(tail, sizeof tail, "%s-r%04d.%s", name, k, x ? "raw" : "h5");
            path_join(path, sizeof path, r->o->prefix, tail);
            if (k == g_rank)
                snprintf(x ? raw_name : file_name, sizeof file_name, "%s", path);
            if (run_add_file(r, path) < 0)
                return -1;
        }
    }
    return 0;
}

/* a pass's end: its file closed (a failed close fails the pass that had not failed) */
static long long close_rank_file(hid_t fid, long long rc)
{
    if (fid >= 0 && H5Fclose(fid) < 0 && rc >= 0) {
        h5p_error("H5Fclose of %s failed", file_name);
        return -1;
    }
    return rc;
}

/* value i of a rank's dataset d of n values */
static double dataset_value(long long d, long long i, long long n, int salt)
{
    return member_value(d * n + i, salt, M_VALUE_D);
}

/* ------------------------------------------------------------ storage-kinds */

static int prepare_storage(run_t *r)
{
    options_t *o = r->o;
    const char *slash;
    if (o->elements * (long long)sizeof(double) > 60000) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR storage-kinds: --elements %lld: a compact dataset "
                    "holds at most 7500 doubles\n", o->elements);
        return EXIT_UNAVAILABLE;
    }
    o->record_bytes_file = o->record_bytes_memory = sizeof(double);
    if (!(buf = xmalloc((size_t)o->elements * sizeof(double))) ||
        rank_files(r, "storage-kinds", 1) < 0)
        return -1;
    /* the datasets name the raw file by its base name; the prefix finds it */
    slash = strrchr(raw_name, '/');
    snprintf(raw_dir, sizeof raw_dir, "%.*s", slash ? (int)(slash - raw_name) : 1,
             slash ? raw_name : ".");
    return 0;
}

static hid_t storage_dcpl(int kind, long long j, const options_t *o)
{
    hid_t dcpl = -1;
    double fill = -1.0;
    const char *base = strrchr(raw_name, '/') ? strrchr(raw_name, '/') + 1 : raw_name;
    hsize_t bytes = (hsize_t)o->elements * sizeof(double);
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    if (kind == K_COMPACT)
        H5DO(H5Pset_layout(dcpl, H5D_COMPACT));
    else if (kind == K_EXTERNAL)
        H5DO(H5Pset_external(dcpl, base, (off_t)(j * (long long)bytes), bytes));
    else if (kind == K_FILLED) {
        H5DO(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
        H5DO(H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC));
        H5DO(H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill));
    }
    return dcpl;
fail:
    H5QUIET(H5Pclose, dcpl);
    return -1;
}

static hid_t storage_create(hid_t fid, int kind, long long j, hid_t space, hid_t dcpl,
                            hid_t dapl)
{
    char name[48];
    hid_t d = -1;
    snprintf(name, sizeof name, "%s%06lld", kind_names[kind], j);
    if (kind == K_ANON) {
        H5CHK(d, H5Dcreate_anon(fid, H5T_NATIVE_DOUBLE, space, dcpl, dapl));
        H5DO(H5Olink(d, fid, name, H5P_DEFAULT, H5P_DEFAULT));
    } else if (kind == K_CREATE1) {
#ifndef H5_NO_DEPRECATED_SYMBOLS
        H5CHK(d, H5Dcreate1(fid, name, H5T_NATIVE_DOUBLE, space, dcpl));
#else
        H5CHK(d, H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
#endif
    } else {
        H5CHK(d, H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, dapl));
    }
    return d;
fail:
    H5QUIET(H5Dclose, d);
    return -1;
}

/* every kind's datasets written (create) or read and checked; datasets done */
static long long storage_pass(const options_t *o, int write, int salt)
{
    hid_t fapl = -1, fid = -1, space = -1, dapl = -1, dcpl = -1, d = -1;
    hsize_t n = (hsize_t)o->elements;
    long long done = 0;
    char name[48];
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(dapl, H5Pcreate(H5P_DATASET_ACCESS));
    H5DO(H5Pset_efile_prefix(dapl, raw_dir));
    if (write)
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    else
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    for (int kind = 0; kind < NKINDS; kind++) {
        for (long long j = 0; j < o->objects; j++) {
            if (write) {
                if ((dcpl = storage_dcpl(kind, j, o)) < 0 ||
                    (d = storage_create(fid, kind, j, space, dcpl, dapl)) < 0)
                    goto fail;
                H5CLOSE(H5Pclose, dcpl);
                for (long long i = 0; i < o->elements; i++)
                    buf[i] = dataset_value(kind * o->objects + j, i, o->elements, salt);
                if (kind == K_ANON)
                    H5DO(H5Dwrite_async(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                        buf, H5ES_NONE));
                else
                    H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
            } else {
                snprintf(name, sizeof name, "%s%06lld", kind_names[kind], j);
                H5CHK(d, H5Dopen2(fid, name, dapl));
                if (kind == 0 && j == 0)
                    H5DO(H5Drefresh(d));
                if (kind == K_ANON)
                    H5DO(H5Dread_async(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf,
                                       H5ES_NONE));
                else
                    H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
                for (long long i = 0; i < o->elements; i++)
                    if (buf[i] != dataset_value(kind * o->objects + j, i, o->elements, salt)) {
                        verify_double("read", i, name,
                                      dataset_value(kind * o->objects + j, i, o->elements, salt),
                                      buf[i]);
                        goto fail;
                    }
            }
            H5CLOSE(H5Dclose, d);
            done++;
        }
    }
    H5CLOSE(H5Fclose, fid);
    H5Sclose(space);
    H5Pclose(dapl);
    H5Pclose(fapl);
    return done;
fail:
    H5QUIET(H5Dclose, d);
    H5QUIET(H5Pclose, dcpl);
    H5QUIET(H5Fclose, fid);
    H5QUIET(H5Sclose, space);
    H5QUIET(H5Pclose, dapl);
    H5QUIET(H5Pclose, fapl);
    return -1;
}

/* both phases of a serial path; pass(o, write, salt) returns its objects, -1 */
static int serial_iterate(run_t *r, long long (*pass)(const options_t *, int, int),
                          long long bytes, int read_repeats)
{
    char *files[2] = {file_name, raw_name};
    int nfiles = raw_name[0] ? 2 : 1, salt = r->iteration % 8;
    long long done;
    phase_start(r);
    if ((done = pass(r->o, 1, salt)) >= 0)
        fsync_files(files, nfiles);
    if (phase_stop(r, "write", done < 0 ? 0 : bytes, done < 0 ? 0 : done) < 0 || any_errors())
        return -1;
    if (evict_files(r, files, nfiles) < 0)
        return -1;
    phase_start(r);
    done = pass(r->o, 0, salt);
    if (phase_stop(r, "read", done < 0 ? 0 : bytes * read_repeats, done < 0 ? 0 : done) < 0)
        return -1;
    return any_errors() ? -1 : 0;
}

/* ------------------------------------------------------------ strided-contiguous */

/* every 16th float (64 B apart): every element its own entry of HDF5's vector, as the
 * case's 1 KiB, in a file of 16 MiB a rank at the default size, not 256 */
#define STRIDE 16

static int prepare_strided(run_t *r)
{
    options_t *o = r->o;
    o->record_bytes_file = o->record_bytes_memory = sizeof(float);
    if (!(floats = xmalloc((size_t)o->elements * sizeof(float))))
        return -1;
    raw_name[0] = '\0';
    return rank_files(r, "strided-contiguous", 0);
}

/* float i of the selection: exact in a float up to 2^24 */
static float strided_value(long long i, int salt) { return (float)((i + salt) % 16777216); }

static long long strided_pass(const options_t *o, int write, int salt)
{
    hid_t fapl = -1, fid = -1, fspace = -1, mspace = -1, d = -1;
    hsize_t n = (hsize_t)o->elements, dims = n * STRIDE, start = 0, stride = STRIDE;
    long long rc = -1;
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(fspace, H5Screate_simple(1, &dims, NULL));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, &stride, &n, NULL));
    if (write) {
        for (long long i = 0; i < o->elements; i++)
            floats[i] = strided_value(i, salt);
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5CHK(d, H5Dcreate2(fid, "strided", H5T_NATIVE_FLOAT, fspace, H5P_DEFAULT,
                            H5P_DEFAULT, H5P_DEFAULT));
        H5DO(H5Dwrite(d, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, floats));
    } else {
        memset(floats, 0xff, (size_t)o->elements * sizeof(float));
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
        H5CHK(d, H5Dopen2(fid, "strided", H5P_DEFAULT));
        /* --read-repeats: the same selection read again into the same buffer; the
         * sieve path's read of one selection lasts milliseconds, too short to time */
        for (int k = 0; k < o->read_repeats; k++)
            H5DO(H5Dread(d, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, floats));
        for (long long i = 0; i < o->elements; i++)
            if (floats[i] != strided_value(i, salt)) {
                verify_double("read", i, "strided", strided_value(i, salt), floats[i]);
                goto fail;
            }
    }
    rc = 1;
fail:
    H5QUIET(H5Dclose, d);
    rc = close_rank_file(fid, rc);
    H5QUIET(H5Sclose, mspace);
    H5QUIET(H5Sclose, fspace);
    H5QUIET(H5Pclose, fapl);
    return rc;
}

static int iterate_strided(run_t *r)
{
    return serial_iterate(r, strided_pass, r->o->elements * (long long)sizeof(float),
                          r->o->read_repeats);
}

static int iterate_storage(run_t *r)
{
    return serial_iterate(r, storage_pass,
                          NKINDS * r->o->objects * r->o->elements * (long long)sizeof(double), 1);
}

static void finish(run_t *r)
{
    (void)r;
    if (strs)
        for (long long i = 0; i < r->o->elements; i++)
            free(strs[i]);
    if (seqs)
        for (long long i = 0; i < r->o->elements; i++)
            free(seqs[i].p);
    free(strs);
    free(seqs);
    free(buf);
    free(floats);
    floats = NULL;
    strs = NULL;
    seqs = NULL;
    buf = NULL;
}

/* ------------------------------------------------------------ vlen-strings */

static size_t str_len(long long i) { return 1 + (size_t)(i * 7919 % 40); }
static size_t seq_len(long long i) { return (size_t)(i * 104729 % 8); }

static void vlen_fill(long long n, int salt)
{
    for (long long i = 0; i < n; i++) {
        size_t len = str_len(i);
        for (size_t c = 0; c < len; c++)
            strs[i][c] = (char)('a' + (i + (long long)c + salt) % 26);
        strs[i][len] = '\0';
        seqs[i].len = seq_len(i);
        for (size_t c = 0; c < seqs[i].len; c++)
            ((int *)seqs[i].p)[c] = (int)(i * 8 + (long long)c + salt);
    }
}

static int prepare_vlen(run_t *r)
{
    options_t *o = r->o;
    if (!(strs = calloc((size_t)o->elements, sizeof(char *))) ||
        !(seqs = calloc((size_t)o->elements, sizeof(hvl_t))))
        return -1;
    for (long long i = 0; i < o->elements; i++)
        if (!(strs[i] = xmalloc(41)) || !(seqs[i].p = xmalloc(8 * sizeof(int))))
            return -1;
    o->record_bytes_file = o->record_bytes_memory = (long long)(sizeof(char *) + sizeof(hvl_t));
    raw_name[0] = '\0';
    return rank_files(r, "vlen-strings", 0);
}

/* the strings and sequences read equal the ones written */
static int vlen_check(long long n, char **rs, const hvl_t *rq, int salt)
{
    vlen_fill(n, salt);
    for (long long i = 0; i < n; i++) {
        if (strcmp(rs[i], strs[i]))
            return verify_fail("read", i, "string", strs[i], rs[i]);
        if (rq[i].len != seqs[i].len ||
            memcmp(rq[i].p, seqs[i].p, seqs[i].len * sizeof(int))) {
            char e[32], g[32];
            snprintf(e, sizeof e, "%zu ints", seqs[i].len);
            snprintf(g, sizeof g, "%zu ints (or others)", rq[i].len);
            return verify_fail("read", i, "sequence", e, g);
        }
    }
    return 0;
}

static long long vlen_pass(const options_t *o, int write, int salt)
{
    hid_t fapl = -1, fid = -1, space = -1, stype = -1, qtype = -1, ds = -1, dq = -1;
    hsize_t n = (hsize_t)o->elements, size_s = 0, size_q = 0;
    char **rs = NULL;
    hvl_t *rq = NULL;
    long long rc = -1;
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(stype, H5Tcopy(H5T_C_S1));
    H5DO(H5Tset_size(stype, H5T_VARIABLE));
    H5CHK(qtype, H5Tvlen_create(H5T_NATIVE_INT));
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    if (write) {
        vlen_fill(o->elements, salt);
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5CHK(ds, H5Dcreate2(fid, "strings", stype, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
        H5CHK(dq, H5Dcreate2(fid, "sequences", qtype, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT));
        H5DO(H5Dwrite(ds, stype, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs));
        H5DO(H5Dwrite(dq, qtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs));
    } else {
        if (!(rs = calloc(n, sizeof(char *))) || !(rq = calloc(n, sizeof(hvl_t))))
            goto fail;
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
        H5CHK(ds, H5Dopen2(fid, "strings", H5P_DEFAULT));
        H5CHK(dq, H5Dopen2(fid, "sequences", H5P_DEFAULT));
        H5DO(H5Dvlen_get_buf_size(ds, stype, space, &size_s));
        H5DO(H5Dvlen_get_buf_size(dq, qtype, space, &size_q));
        H5DO(H5Dread(ds, stype, H5S_ALL, H5S_ALL, H5P_DEFAULT, rs));
        H5DO(H5Dread(dq, qtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, rq));
        if (vlen_check(o->elements, rs, rq, salt) < 0)
            goto fail;
    }
    rc = 2;
fail:
    if (rs)
        H5Treclaim(stype, space, H5P_DEFAULT, rs);
    if (rq)
        H5Treclaim(qtype, space, H5P_DEFAULT, rq);
    free(rs);
    free(rq);
    H5QUIET(H5Dclose, ds);
    H5QUIET(H5Dclose, dq);
    rc = close_rank_file(fid, rc);
    H5QUIET(H5Sclose, space);
    H5QUIET(H5Tclose, qtype);
    H5QUIET(H5Tclose, stype);
    H5QUIET(H5Pclose, fapl);
    return rc;
}

static int iterate_vlen(run_t *r)
{
    return serial_iterate(r, vlen_pass, r->o->elements * r->o->record_bytes_memory, 1);
}

#else
#define prepare_storage unavailable_before_1_14
#define prepare_vlen unavailable_before_1_14
#define prepare_strided unavailable_before_1_14
#define iterate_strided unavailable_iterate
#define iterate_storage unavailable_iterate
#define iterate_vlen unavailable_iterate
#define finish unavailable_finish
#endif

const path_t serial_paths[] = {
    {"storage-kinds", "serial", 0, 4096, 64, prepare_storage, iterate_storage, finish},
    {"vlen-strings", "serial", 0, 1LL << 19, 1, prepare_vlen, iterate_vlen, finish},
    {"strided-contiguous", "serial", 0, 65536, 1, prepare_strided, iterate_strided, finish},
    {0}};
