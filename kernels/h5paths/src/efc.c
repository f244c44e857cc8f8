/* efc: external links to --objects files (PREFIXefc-NNNNN.h5, dataset "data"
 * of --elements doubles per rank) from PREFIXefc-main.h5 (links l<NNNNN>),
 * opened through the external file cache (H5Pset_elink_file_cache_size on the
 * main file's fapl, --efc-size, default = objects; 0 = no cache, the twin).
 * Phases: create (the files, their data, the links; fsynced), open_read (the
 * main file opened, every link traversed PASSES times: H5Dopen2 through the
 * link, this rank's part read, closed; with the cache a target file is opened
 * once, without it at every traversal). */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASSES 4

static char **names;         /* [objects] targets, then the main file */
static double *buf;          /* [objects][elements] */

static int prepare(run_t *r)
{
    const options_t *o = r->o;
    char tail[64];
    names = calloc((size_t)o->objects + 1, sizeof(char *));
    buf = xmalloc((size_t)(o->objects * o->elements) * sizeof(double));
    if (!names || !buf)
        return -1;
    for (long long f = 0; f <= o->objects; f++) {
        if (f < o->objects) snprintf(tail, sizeof tail, "efc-%05lld.h5", f);
        else snprintf(tail, sizeof tail, "efc-main.h5");
        if (!(names[f] = malloc(strlen(o->prefix) + strlen(tail) + 1)))
            return -1;
        path_join(names[f], strlen(o->prefix) + strlen(tail) + 1, o->prefix, tail);
        if (run_add_file(r, names[f]) < 0)
            return -1;
    }
    return 0;
}

static void finish(run_t *r)
{
    for (long long f = 0; names && f <= r->o->objects; f++)
        free(names[f]);
    free(names);
    free(buf);
    names = NULL;
    buf = NULL;
}

static const char *base(const char *p)
{
    return strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
}

/* the links name the targets relative to the main file's directory */
static int create_main(const options_t *o)
{
    int closed = 0;
    hid_t fapl = -1, fid = -1;
    char link[32];
    if ((fapl = make_fapl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fcreate(names[o->objects], H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    for (long long f = 0; f < o->objects; f++) {
        snprintf(link, sizeof link, "l%05lld", f);
        H5DO(H5Lcreate_external(base(names[f]), "/data", fid, link, H5P_DEFAULT, H5P_DEFAULT));
    }
    closed = 1;
    if (close_written_file(&fid, names[o->objects]) < 0)
        goto fail;
    H5Pclose(fapl);
    return 0;
fail:
    release_phase_file(&fid, names[o->objects], 1, closed);
    H5RELEASE(&fid, &fapl);
    return -1;
}

static int create(run_t *r, int salt)
{
    const options_t *o = r->o;
    xfer_t x = {NULL, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, {0}, 0, 0};
    contiguous_selection(&x.sel, o->elements);
    for (long long f = 0; f < o->objects; f++) {
        double *b = buf + f * o->elements;
        for (long long i = 0; i < o->elements; i++)
            b[i] = member_value(f * o->elements + i, salt, M_VALUE_D);
        x.file = names[f];
        if (h5_transfer(r, &x, X_CREATE, b) < 0)
            return -1;
    }
    if (create_main(o) < 0)
        return -1;
    return fsync_files(names, (int)o->objects + 1);
}

static int open_read(run_t *r)
{
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, mspace = -1;
    hsize_t n = (hsize_t)o->elements, start = (hsize_t)rank_offset(o->elements);
    char link[32];
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    H5DO(H5Pset_elink_file_cache_size(fapl, (unsigned)o->efc_size));
    H5CHK(fid, H5Fopen(names[o->objects], H5F_ACC_RDONLY, fapl));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    for (int pass = 0; pass < PASSES; pass++)
        for (long long f = 0; f < o->objects; f++) {
            snprintf(link, sizeof link, "l%05lld", f);
            if (read_rank_part(fid, link, mspace, dxpl, start, n, buf + f * o->elements) < 0)
                goto fail;
        }
    note_io_mode(r, dxpl);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&mspace, &dxpl, &fapl);
    return 0;
fail:
    H5RELEASE(&mspace, &fid, &dxpl, &fapl);
    return -1;
}

static int verify(const options_t *o, int salt)
{
    for (long long k = 0; k < o->objects * o->elements; k++) {
        double want = member_value(k, salt, M_VALUE_D);
        if (buf[k] != want) {
            char m[48];
            snprintf(m, sizeof m, "file %lld", k / o->elements);
            return verify_double("open_read", k % o->elements, m, want, buf[k]);
        }
    }
    return 0;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    long long bytes = o->objects * o->elements * (long long)sizeof(double);
    int salt = r->iteration % 8;
    phase_start(r);
    create(r, salt);
    if (phase_stop(r, "create", bytes, o->objects + 1) < 0 || any_errors() ||
        evict_files(r, names, (int)o->objects + 1) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)bytes);
    phase_start(r);
    open_read(r);
    if (phase_stop(r, "open_read", bytes * PASSES, o->objects * PASSES) < 0 || any_errors())
        return -1;
    verify(o, salt);
    return any_errors() ? -1 : 0;
}

const path_t efc_paths[] = {{"efc", "efc", 0, 16, 10, prepare, iterate, finish}, {0}};
