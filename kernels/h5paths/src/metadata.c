/* The metadata-heavy paths: HDF5's object headers, B-trees / link storage,
 * the metadata cache and (with --coll-metadata) collective metadata I/O.
 *
 * many-datasets: --objects small datasets in nested groups (g<NNNN>/s<NN>/d<NN>,
 *   64 datasets per group in 4 subgroups), each rank writes and reads its
 *   --elements doubles of every one. Phases: create (file, groups, datasets,
 *   writes, close, fsync), open_read (open, every dataset opened, read, closed).
 * attributes: --objects attributes of --elements doubles on groups of 128;
 *   create (H5Acreate2 + H5Awrite), open_read (H5Aopen + H5Aread).
 * open-close: the many-datasets file created once (untimed); each iteration
 *   opens the file, opens and closes every dataset (checking its extent), closes.
 * The file format follows --libver (compact / dense link and attribute storage).
 * --transfer serial: each rank works alone in a file of its own (PREFIX<path>-r<NNNN>.h5,
 * the sec2 driver), the time of HDF5's own code without MPI-IO's; every rank still
 * writes and reads its part of each dataset of the size a parallel run gives it. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_GROUP 64
#define PER_SUBGROUP 16
#define ATTRS_PER_GROUP 128

static char file_name[4096];  /* this rank's: the one file, or (serial) its own */
static char **names;          /* every rank's (serial), or the_file */
static char *the_file[1];     /* file_name */
static int nnames;
static double *buf;         /* [objects][elements] */

static void dset_name(char *s, size_t n, long long j)
{
    snprintf(s, n, "g%04lld/s%02lld/d%02lld", j / PER_GROUP, (j % PER_GROUP) / PER_SUBGROUP,
             j % PER_SUBGROUP);
}

static int prepare(run_t *r)
{
    options_t *o = r->o;
    buf = xmalloc((size_t)(o->objects * o->elements) * sizeof(double));
    if (!buf)
        return -1;
    if (o->serial) {
        if (!(names = rank_file_names(r, o->path)))
            return -1;
        nnames = g_size;
        snprintf(file_name, sizeof file_name, "%s", names[g_rank]);
        return 0;
    }
    path_join(file_name, sizeof file_name, o->prefix, o->path);
    strncat(file_name, ".h5", sizeof file_name - strlen(file_name) - 1);
    the_file[0] = file_name;
    names = the_file;
    nnames = 1;
    return run_add_file(r, file_name);
}

static void finish(run_t *r)
{
    (void)r;
    if (names != the_file)
        free_rank_file_names(names);
    free(buf);
    names = NULL;
    buf = NULL;
}

int metadata_serial(const path_t *p)
{
    for (const path_t *q = metadata_paths; q->name; q++)
        if (q == p)
            return 1;
    return 0;
}

/* values of dataset j: this rank's, of attribute j: every rank's (rank 0's are written) */
static void fill(const options_t *o, int salt, int per_rank)
{
    for (long long j = 0; j < o->objects; j++)
        for (long long i = 0; i < o->elements; i++) {
            long long k = j * o->elements + i;
            buf[k] = per_rank ? member_value(k, salt, M_VALUE_D) : (double)k + salt * 0.25;
        }
}

static int verify(const options_t *o, int salt, int per_rank, const char *phase)
{
    for (long long k = 0; k < o->objects * o->elements; k++) {
        double want = per_rank ? member_value(k, salt, M_VALUE_D) : (double)k + salt * 0.25;
        if (buf[k] != want) {
            char m[48];
            snprintf(m, sizeof m, "%s %lld", per_rank ? "dataset" : "attribute",
                     k / o->elements);
            return verify_double(phase, k % o->elements, m, want, buf[k]);
        }
    }
    return 0;
}

static int create_groups(hid_t fid, long long ngroups)
{
    char name[64];
    hid_t g = -1;
    for (long long a = 0; a < ngroups; a++)
        for (int s = -1; s < PER_GROUP / PER_SUBGROUP; s++) {
            if (s < 0) snprintf(name, sizeof name, "g%04lld", a);
            else snprintf(name, sizeof name, "g%04lld/s%02d", a, s);
            H5CHK(g, H5Gcreate2(fid, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            H5CLOSE(H5Gclose, g);
        }
    return 0;
fail:
    H5QUIET(H5Gclose, g);
    return -1;
}

/* the many-datasets file: with data (write) or without (open-close's setup) */
static int create_datasets(run_t *r, int write)
{
    int closed = 0;
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, fspace = -1, mspace = -1, d = -1;
    hsize_t total = (hsize_t)(o->elements * g_size), n = (hsize_t)o->elements;
    hsize_t start = (hsize_t)rank_offset(o->elements);
    char name[64];
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    if (create_groups(fid, (o->objects + PER_GROUP - 1) / PER_GROUP) < 0)
        goto fail;
    H5CHK(fspace, H5Screate_simple(1, &total, NULL));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL));
    for (long long j = 0; j < o->objects; j++) {
        dset_name(name, sizeof name, j);
        H5CHK(d, H5Dcreate2(fid, name, H5T_NATIVE_DOUBLE, fspace, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT));
        if (write)
            H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf + j * o->elements));
        H5CLOSE(H5Dclose, d);
    }
    if (write)
        note_io_mode(r, dxpl);
    closed = 1;
    if (close_written_file(&fid, file_name) < 0)
        goto fail;
    H5CLOSE_ALL(&mspace, &fspace, &dxpl, &fapl);
    return 0;
fail:
    H5RELEASE(&d, &mspace, &fspace);
    release_phase_file(&fid, file_name, 1, closed);
    H5RELEASE(&fid, &dxpl, &fapl);
    return -1;
}

/* open every dataset; read this rank's part (read) or check its extent and close */
static int open_datasets(run_t *r, int read)
{
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, fspace = -1, mspace = -1, d = -1;
    hsize_t n = (hsize_t)o->elements, start = (hsize_t)rank_offset(o->elements);
    char name[64];
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    for (long long j = 0; j < o->objects; j++) {
        dset_name(name, sizeof name, j);
        if (read) {
            if (read_rank_part(fid, name, mspace, dxpl, start, n, buf + j * o->elements) < 0)
                goto fail;
            continue;
        }
        H5CHK(d, H5Dopen2(fid, name, H5P_DEFAULT));
        H5CHK(fspace, H5Dget_space(d));
        if (H5Sget_simple_extent_npoints(fspace) != (hssize_t)(n * g_size))
            h5p_error("verify open_close: dataset %s has %lld elements, expected %lld", name,
                      (long long)H5Sget_simple_extent_npoints(fspace), (long long)n * g_size);
        H5CLOSE(H5Sclose, fspace);
        H5CLOSE(H5Dclose, d);
    }
    if (read)
        note_io_mode(r, dxpl);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&mspace, &dxpl, &fapl);
    return 0;
fail:
    H5RELEASE(&d, &fspace, &mspace, &fid, &dxpl, &fapl);
    return -1;
}

static int prepare_open_close(run_t *r)
{
    char *files[1] = {file_name};
    if (prepare(r) < 0 || create_datasets(r, 0) < 0 || fsync_files(files, 1) < 0)
        return -1;
    return 0;
}

static int iterate_open_close(run_t *r)
{
    if (evict_files(r, names, nnames) < 0)   /* the node leader: every rank's */
        return -1;
    phase_start(r);
    open_datasets(r, 0);
    if (phase_stop(r, "open_close", 0, r->o->objects) < 0)
        return -1;
    return any_errors() ? -1 : 0;
}

/* ---- attributes ---- */

static int attr_groups(hid_t fid, long long ngroups, int create, hid_t *g)
{
    char name[32];
    for (long long a = 0; a < ngroups; a++) {
        snprintf(name, sizeof name, "a%04lld", a);
        if (create)
            H5CHK(g[a], H5Gcreate2(fid, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        else
            H5CHK(g[a], H5Gopen2(fid, name, H5P_DEFAULT));
    }
    return 0;
fail:
    return -1;
}

/* create (and write) or open (and read) every attribute */
static int attributes_io(run_t *r, int create)
{
    int closed = 0;
    const options_t *o = r->o;
    long long ngroups = (o->objects + ATTRS_PER_GROUP - 1) / ATTRS_PER_GROUP;
    hid_t fapl = -1, fid = -1, space = -1, a = -1, *g = calloc((size_t)ngroups, sizeof(hid_t));
    hsize_t n = (hsize_t)o->elements;
    char name[32];
    if (!g || (fapl = make_fapl(o)) < 0)
        goto fail;
    for (long long k = 0; k < ngroups; k++)
        g[k] = -1;
    if (create)
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    else
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    if (attr_groups(fid, ngroups, create, g) < 0)
        goto fail;
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    for (long long j = 0; j < o->objects; j++) {
        hid_t holder = g[j / ATTRS_PER_GROUP];
        snprintf(name, sizeof name, "attr%06lld", j);
        if (create) {
            H5CHK(a, H5Acreate2(holder, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                                H5P_DEFAULT));
            H5DO(H5Awrite(a, H5T_NATIVE_DOUBLE, buf + j * o->elements));
        } else {
            H5CHK(a, H5Aopen(holder, name, H5P_DEFAULT));
            H5DO(H5Aread(a, H5T_NATIVE_DOUBLE, buf + j * o->elements));
        }
        H5CLOSE(H5Aclose, a);
    }
    for (long long k = 0; k < ngroups; k++)
        H5CLOSE(H5Gclose, g[k]);
    if (close_phase_file(&fid, file_name, create, &closed) < 0)
        goto fail;
    H5CLOSE_ALL(&space, &fapl);
    free(g);
    return 0;
fail:
    H5QUIET(H5Aclose, a);
    for (long long k = 0; g && k < ngroups; k++)
        H5QUIET(H5Gclose, g[k]);
    H5QUIET(H5Sclose, space);
    release_phase_file(&fid, file_name, create, closed);
    H5RELEASE(&fid, &fapl);
    free(g);
    return -1;
}

/* one iteration of many-datasets (io: the datasets, per rank's values) or attributes
 * (io: attributes_io, rank 0's values): create and write (with the fsync), evict,
 * open and read back, verify */
static int create_then_read(run_t *r, int per_rank, int (*io)(run_t *r, int create))
{
    const options_t *o = r->o;
    long long bytes = o->objects * o->elements * (long long)sizeof(double);
    char *files[1] = {file_name};
    int salt = r->iteration % 8;
    fill(o, salt, per_rank);
    phase_start(r);
    if (io(r, 1) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, "create", bytes, o->objects) < 0 || any_errors() ||
        evict_files(r, names, nnames) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)bytes);
    phase_start(r);
    io(r, 0);
    if (phase_stop(r, "open_read", bytes, o->objects) < 0 || any_errors())
        return -1;
    verify(o, salt, per_rank, "open_read");
    return any_errors() ? -1 : 0;
}

static int datasets_io(run_t *r, int create)
{
    return create ? create_datasets(r, 1) : open_datasets(r, 1);
}

static int iterate_datasets(run_t *r) { return create_then_read(r, 1, datasets_io); }
static int iterate_attributes(run_t *r) { return create_then_read(r, 0, attributes_io); }

const path_t metadata_paths[] = {
    {"many-datasets", "metadata", 0, 16, 400, prepare, iterate_datasets, finish},
    {"attributes", "metadata", 0, 8, 10000, prepare, iterate_attributes, finish},
    {"open-close", "metadata", 0, 16, 4000, prepare_open_close, iterate_open_close, finish},
    {0}};
