/* vds: a virtual dataset over --objects source files.  Source s
 * (PREFIXvds-src-NNNN.h5, dataset "data") holds L = elements/objects doubles
 * per rank, every rank writing its L at rank*L; the virtual dataset "vds" of
 * PREFIXvds.h5 maps source s to [s*L*ranks, (s+1)*L*ranks).  Phases:
 * write_sources (all source files, fsynced), read_vds (rank r reads the r-th
 * contiguous part of the virtual dataset: its part spans sources written by
 * other ranks).  The virtual dataset itself is created untimed, after the
 * sources.  HDF5 refuses to read a virtual dataset through the MPI-IO driver,
 * so read_vds opens the file on every rank with the default (sec2) driver
 * (recorded in the JSON as "read_vds_driver": "sec2"). */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **src_names;     /* [objects] */
static char vds_name[4096];
static long long L;          /* elements per rank per source */
static double *buf;

static int prepare(run_t *r)
{
    const options_t *o = r->o;
    char tail[64];
    L = o->elements / o->objects;
    if (L < 1) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR vds: --elements %lld is smaller than --objects "
                    "%lld (elements per rank per source would be 0)\n", o->elements, o->objects);
        return EXIT_UNAVAILABLE;
    }
    src_names = calloc((size_t)o->objects, sizeof(char *));
    buf = xmalloc((size_t)(L * o->objects) * sizeof(double));
    if (!src_names || !buf)
        return -1;
    for (long long s = 0; s < o->objects; s++) {
        snprintf(tail, sizeof tail, "vds-src-%04lld.h5", s);
        if (!(src_names[s] = malloc(strlen(o->prefix) + strlen(tail) + 1)))
            return -1;
        path_join(src_names[s], strlen(o->prefix) + strlen(tail) + 1, o->prefix, tail);
        if (run_add_file(r, src_names[s]) < 0)
            return -1;
    }
    path_join(vds_name, sizeof vds_name, o->prefix, "vds.h5");
    r->o->record_bytes_file = r->o->record_bytes_memory = sizeof(double);
    snprintf(r->extra_json, sizeof r->extra_json, "\"read_vds_driver\": \"sec2\"");
    return run_add_file(r, vds_name);
}

static void finish(run_t *r)
{
    for (long long s = 0; src_names && s < r->o->objects; s++)
        free(src_names[s]);
    free(src_names);
    free(buf);
    src_names = NULL;
    buf = NULL;
}

/* value of global element G of the virtual dataset */
static double vds_value(long long G, int salt)
{
    long long per_src = L * g_size, s = G / per_src, q = G % per_src;
    return member_value_of((int)(q / L), s * L + q % L, salt, M_VALUE_D);
}

static int write_sources(run_t *r, int salt)
{
    const options_t *o = r->o;
    xfer_t x = {NULL, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, {0}, 0, 0};
    contiguous_selection(&x.sel, L);
    for (long long s = 0; s < o->objects; s++) {
        for (long long i = 0; i < L; i++)
            buf[i] = member_value(s * L + i, salt, M_VALUE_D);
        x.file = src_names[s];
        if (h5_transfer(r, &x, X_CREATE, buf) < 0)
            return -1;
    }
    return fsync_files(src_names, (int)o->objects);
}

/* PATH holding the virtual dataset "vds" of DCPL's mappings over VSPACE (its
 * selection is set to all), closed and fsynced; vds-open's file too */
int create_vds_file(const options_t *o, const char *path, hid_t vspace, hid_t dcpl)
{
    int closed = 0;
    hid_t fapl = -1, fid = -1, d = -1;
    if ((fapl = make_fapl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5DO(H5Sselect_all(vspace));
    H5CHK(d, H5Dcreate2(fid, "vds", H5T_NATIVE_DOUBLE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5CLOSE(H5Dclose, d);
    closed = 1;
    if (close_written_file(&fid, path) < 0)
        goto fail;
    H5Pclose(fapl);
    return fsync_path(path);
fail:
    H5QUIET(H5Dclose, d);
    if (!closed)   /* as every rank on the success path does */
        close_written_file(&fid, path);
    H5RELEASE(&fid, &fapl);
    return -1;
}

static int create_vds(run_t *r)
{
    const options_t *o = r->o;
    hsize_t per_src = (hsize_t)(L * g_size), total = per_src * (hsize_t)o->objects;
    hid_t dcpl = -1, vspace = -1, sspace = -1;
    int rc = -1;
    H5CHK(vspace, H5Screate_simple(1, &total, NULL));
    H5CHK(sspace, H5Screate_simple(1, &per_src, NULL));
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    for (long long s = 0; s < o->objects; s++) {
        hsize_t start = (hsize_t)s * per_src;
        H5DO(H5Sselect_hyperslab(vspace, H5S_SELECT_SET, &start, NULL, &per_src, NULL));
        H5DO(H5Pset_virtual(dcpl, vspace, src_names[s], "data", sspace));
    }
    rc = create_vds_file(o, vds_name, vspace, dcpl);
fail:
    H5RELEASE(&dcpl, &sspace, &vspace);
    return rc;
}

static int read_vds(run_t *r)
{
    xfer_t x = {vds_name, -1, H5T_NATIVE_DOUBLE, {0}, 0, 0};
    hid_t fapl = -1, dxpl = H5P_DEFAULT, fid = -1, d = -1, fspace = -1, mspace = -1;
    hsize_t start, n;
    contiguous_selection(&x.sel, L * r->o->objects);
    start = (hsize_t)x.sel.start;
    n = (hsize_t)x.sel.block;
    /* HDF5 (1.10 to 1.15 at least) refuses reads of a virtual dataset through
     * the MPI-IO driver ("parallel reads not supported on virtual datasets"):
     * every rank opens the file by itself with the default (sec2) driver */
    H5CHK(fapl, H5Pcreate(H5P_FILE_ACCESS));
    H5DO(H5Pset_libver_bounds(fapl, r->o->libver_low, H5F_LIBVER_LATEST));
    H5CHK(fid, H5Fopen(vds_name, H5F_ACC_RDONLY, fapl));
    H5CHK(d, H5Dopen2(fid, "vds", H5P_DEFAULT));
    H5CHK(fspace, H5Dget_space(d));
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
    H5CLOSE(H5Dclose, d);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&mspace, &fspace, &fapl);
    return 0;
fail:
    H5RELEASE(&d, &mspace, &fspace, &fid, &fapl);
    return -1;
}

static int verify(const options_t *o, int salt)
{
    long long n = L * o->objects, G0 = rank_offset(n);
    for (long long i = 0; i < n; i++) {
        double want = vds_value(G0 + i, salt);
        if (buf[i] != want) {
            return verify_double("read_vds", i, "value", want, buf[i]);
        }
    }
    return 0;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    long long bytes = L * o->objects * (long long)sizeof(double);
    int salt = r->iteration % 8;
    phase_start(r);
    write_sources(r, salt);
    if (phase_stop(r, "write_sources", bytes, o->objects) < 0 || any_errors())
        return -1;
    if (create_vds(r) < 0 || any_errors())
        return -1;
    for (long long s = 0; s < o->objects; s++)
        check_size(src_names[s], L * g_size * (long long)sizeof(double));
    if (evict_files(r, src_names, (int)o->objects) < 0 ||
        evict_files(r, (char *const[]){vds_name}, 1) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)bytes);
    phase_start(r);
    read_vds(r);
    if (phase_stop(r, "read_vds", bytes, o->objects + 1) < 0 || any_errors())
        return -1;
    verify(o, salt);
    return any_errors() ? -1 : 0;
}

const path_t vds_paths[] = {{"vds", "vds", 0, 16LL << 20, 4, prepare, iterate, finish}, {0}};
