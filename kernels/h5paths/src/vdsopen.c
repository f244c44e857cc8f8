/* vds-open (HDF5 issue 5295): the time to open a virtual dataset of --objects
 * mappings.  One source file (PREFIXvds-open-src.h5) holds "data", --elements
 * doubles per rank; the virtual dataset "vds" of PREFIXvds-open.h5 maps it
 * piecewise, mapping m taking the m-th of --objects equal slices (the
 * remainder in the last), so the layout message holds --objects source
 * selections, each decoded again at every open.  Both files are written
 * untimed in the first iteration.  Phase open_vds: every rank opens the file,
 * the dataset and its creation property list, and counts the mappings HDF5
 * decoded (H5Pget_virtual_count); the phase's objects are the mappings found,
 * and the last mapping's virtual selection is checked against what was written.
 * The source is never read: opening alone is the case's slow part. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char src_name[4096], vds_name[4096];
static double *buf;

static int prepare(run_t *r)
{
    const options_t *o = r->o;
    if (o->objects < 1 || o->elements * g_size < o->objects) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR vds-open: --objects %lld mappings need 1 to "
                    "elements x ranks (%lld) elements\n", o->objects, o->elements * g_size);
        return EXIT_UNAVAILABLE;
    }
    if (!(buf = xmalloc((size_t)o->elements * sizeof(double))))
        return -1;
    path_join(src_name, sizeof src_name, o->prefix, "vds-open-src.h5");
    path_join(vds_name, sizeof vds_name, o->prefix, "vds-open.h5");
    r->o->record_bytes_file = r->o->record_bytes_memory = sizeof(double);
    if (run_add_file(r, src_name) < 0)
        return -1;
    return run_add_file(r, vds_name);
}

static void finish(run_t *r) { (void)r; free(buf); buf = NULL; }

/* mapping m: [m*per, m*per + per), the last one to the end */
static void mapping(long long m, long long objects, hsize_t total, hsize_t *start,
                    hsize_t *count)
{
    hsize_t per = total / (hsize_t)objects;
    *start = (hsize_t)m * per;
    *count = m == objects - 1 ? total - *start : per;
}

static int write_files(run_t *r)
{
    const options_t *o = r->o;
    hsize_t total = (hsize_t)(o->elements * g_size), start, count;
    hid_t dcpl = -1, space = -1;
    int rc = -1;
    xfer_t x = {src_name, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, {0}, 0, 0};
    contiguous_selection(&x.sel, o->elements);
    for (long long i = 0; i < o->elements; i++)
        buf[i] = member_value(i, 0, M_VALUE_D);
    if (h5_transfer(r, &x, X_CREATE, buf) < 0 || fsync_path(src_name) < 0)
        return -1;
    H5CHK(space, H5Screate_simple(1, &total, NULL));
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    for (long long m = 0; m < o->objects; m++) {
        mapping(m, o->objects, total, &start, &count);
        H5DO(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL));
        /* the same selection in the source, which has the virtual dataset's shape */
        H5DO(H5Pset_virtual(dcpl, space, src_name, "data", space));
    }
    rc = create_vds_file(o, vds_name, space, dcpl);
fail:
    H5RELEASE(&dcpl, &space);
    return rc;
}

/* open the virtual dataset and count its mappings; -1 on an HDF5 error */
static long long open_vds(run_t *r)
{
    const options_t *o = r->o;
    hid_t fapl = -1, fid = -1, d = -1, dcpl = -1, vspace = -1;
    size_t found = 0;
    hsize_t total = (hsize_t)(o->elements * g_size), want_start, want_count, start, stride,
            count, block;
    long long rc = -1;
    if ((fapl = make_fapl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fopen(vds_name, H5F_ACC_RDONLY, fapl));
    H5CHK(d, H5Dopen2(fid, "vds", H5P_DEFAULT));
    H5CHK(dcpl, H5Dget_create_plist(d));
    H5DO(H5Pget_virtual_count(dcpl, &found));
    if (found < 1) {
        h5p_error("vds-open: the virtual dataset has no mapping, %lld written", o->objects);
        goto fail;
    }
    H5CHK(vspace, H5Pget_virtual_vspace(dcpl, found - 1));
    H5DO(H5Sget_regular_hyperslab(vspace, &start, &stride, &count, &block));
    mapping((long long)found - 1, o->objects, total, &want_start, &want_count);
    if (start != want_start || count * block != want_count) {
        char e[64], g[64];
        snprintf(e, sizeof e, "[%llu, +%llu)", (unsigned long long)want_start,
                 (unsigned long long)want_count);
        snprintf(g, sizeof g, "[%llu, +%llu)", (unsigned long long)start,
                 (unsigned long long)(count * block));
        verify_fail("open_vds", (long long)found - 1, "mapping", e, g);
        goto fail;
    }
    rc = (long long)found;
fail:
    H5RELEASE(&vspace, &dcpl, &d, &fid, &fapl);
    return rc;
}

static int iterate(run_t *r)
{
    long long found;
    if (r->iteration == 0 && (write_files(r) < 0 || any_errors()))
        return -1;
    if (evict_files(r, (char *const[]){vds_name}, 1) < 0)
        return -1;
    phase_start(r);
    found = open_vds(r);
    /* the mappings HDF5 decoded: the parser checks them against --objects */
    if (phase_stop(r, "open_vds", 0, found < 0 ? 0 : found) < 0 || any_errors())
        return -1;
    if (found != r->o->objects) {
        char e[32], g[32];
        snprintf(e, sizeof e, "%lld", r->o->objects);
        snprintf(g, sizeof g, "%lld", found);
        verify_fail("open_vds", 0, "mappings", e, g);
    }
    return any_errors() ? -1 : 0;
}

const path_t vdsopen_paths[] = {
    {"vds-open", "vds", 0, 1LL << 16, 4096, prepare, iterate, finish}, {0}};
