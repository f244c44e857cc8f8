/* point-selections (the regression-prone commits a5ffedb8 "Improve performance of
 * multiple calls to H5Sget_select_elem_pointlist" and 52276f37, H5Sencode/H5Sdecode
 * of many points): a 2-d chunked dataset of doubles, 64 rows per rank, each rank
 * its rows' elements of one parity (a checkerboard: --elements points per rank,
 * a multiple of 32) selected with H5Sselect_elements.  Phases: write (file
 * create, the point selection, H5Dwrite from a 1-d buffer, close, fsync), read
 * (open, the same points read, close; verified), select_ops (on this rank's
 * point selection: H5Sget_select_elem_pointlist in blocks of 1024 points, then
 * H5Sencode2, H5Sencode1 where the build keeps deprecated symbols, H5Sdecode and
 * H5Scopy of it; H5Sencode2 of an "all" and a "none" selection;
 * H5Sselect_project_intersection of a strided hyperslab onto the 1-d buffer;
 * H5Pencode2 and H5Pdecode of the dataset's creation list): its objects are the
 * calls made by rank 0.  No MPI-IO twin. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if H5_VERSION_GE(1, 14, 0)   /* H5Sencode2, H5Sselect_project_intersection */

#define ROWS_PER_RANK 64
#define POINT_BLOCK 1024

static char file_name[4096];
static double *buf;          /* [elements] */
static hsize_t *coords;      /* [elements][2] */
static hsize_t *got;         /* [POINT_BLOCK][2] */
static hsize_t ncols;        /* the dataset's columns: elements * 2 / ROWS_PER_RANK */

static int prepare(run_t *r)
{
    options_t *o = r->o;
    if (o->elements % (ROWS_PER_RANK / 2)) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR point-selections: --elements %lld is not a "
                    "multiple of %d\n", o->elements, ROWS_PER_RANK / 2);
        return EXIT_UNAVAILABLE;
    }
    ncols = (hsize_t)(o->elements * 2 / ROWS_PER_RANK);
    o->chunked = 1;
    o->record_bytes_file = o->record_bytes_memory = sizeof(double);
    path_join(file_name, sizeof file_name, o->prefix, "point-selections.h5");
    buf = xmalloc((size_t)o->elements * sizeof(double));
    coords = xmalloc((size_t)o->elements * 2 * sizeof(hsize_t));
    got = xmalloc(POINT_BLOCK * 2 * sizeof(hsize_t));
    if (!buf || !coords || !got)
        return -1;
    /* point k: row i = k / (ncols/2) of this rank's, column 2j + (i%2) */
    for (long long k = 0; k < o->elements; k++) {
        hsize_t i = (hsize_t)k / (ncols / 2), j = (hsize_t)k % (ncols / 2);
        coords[2 * k] = (hsize_t)g_rank * ROWS_PER_RANK + i;
        coords[2 * k + 1] = 2 * j + (i % 2);
    }
    return run_add_file(r, file_name);
}

static void finish(run_t *r)
{
    (void)r;
    free(buf);
    free(coords);
    free(got);
    buf = NULL;
    coords = got = NULL;
}

static hid_t make_dcpl(const options_t *o)
{
    hid_t dcpl = -1;
    hsize_t chunk[2] = {16, 0};
    chunk[1] = (hsize_t)o->chunk_elements / 16;
    if (chunk[1] < 1) chunk[1] = 1;
    if (chunk[1] > ncols) chunk[1] = ncols;
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    H5DO(H5Pset_chunk(dcpl, 2, chunk));
    return dcpl;
fail:
    H5QUIET(H5Pclose, dcpl);
    return -1;
}

/* this rank's points selected in the dataset's space */
static hid_t point_space(hid_t d)
{
    hid_t fspace = -1;
    H5CHK(fspace, H5Dget_space(d));
    H5DO(H5Sselect_elements(fspace, H5S_SELECT_SET, (size_t)(ncols * ROWS_PER_RANK / 2),
                            coords));
    return fspace;
fail:
    H5QUIET(H5Sclose, fspace);
    return -1;
}

/* write (create) or read (open) this rank's points; the file is left closed */
static int transfer(run_t *r, int write)
{
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, dcpl = -1, space = -1, d = -1, fspace = -1,
          mspace = -1;
    hsize_t dims[2] = {(hsize_t)g_size * ROWS_PER_RANK, ncols}, n = (hsize_t)o->elements;
    int closed = 0;
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    if (write) {
        H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5CHK(space, H5Screate_simple(2, dims, NULL));
        if ((dcpl = make_dcpl(o)) < 0)
            goto fail;
        H5CHK(d, H5Dcreate2(fid, "points", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl,
                            H5P_DEFAULT));
    } else {
        H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
        H5CHK(d, H5Dopen2(fid, "points", H5P_DEFAULT));
    }
    if ((fspace = point_space(d)) < 0)
        goto fail;
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    if (write)
        H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
    else
        H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
    note_io_mode(r, dxpl);
    H5CLOSE(H5Dclose, d);
    closed = 1;
    if (write ? close_written_file(&fid, file_name) < 0 : H5Fclose(fid) < 0)
        goto fail;
    fid = -1;
    H5Sclose(mspace);
    H5Sclose(fspace);
    H5QUIET(H5Sclose, space);
    H5QUIET(H5Pclose, dcpl);
    H5Pclose(dxpl);
    H5Pclose(fapl);
    return 0;
fail:
    H5QUIET(H5Dclose, d);
    if (write && !closed)
        close_written_file(&fid, file_name);
    H5QUIET(H5Fclose, fid);
    H5QUIET(H5Sclose, mspace);
    H5QUIET(H5Sclose, fspace);
    H5QUIET(H5Sclose, space);
    H5QUIET(H5Pclose, dcpl);
    H5QUIET(H5Pclose, dxpl);
    H5QUIET(H5Pclose, fapl);
    return -1;
}

/* the point list read back in blocks equals the coordinates selected; calls made */
static long long pointlists(hid_t fspace, long long npoints)
{
    long long calls = 0;
    for (long long s = 0; s < npoints; s += POINT_BLOCK) {
        hsize_t n = (hsize_t)(npoints - s < POINT_BLOCK ? npoints - s : POINT_BLOCK);
        H5DO(H5Sget_select_elem_pointlist(fspace, (hsize_t)s, n, got));
        calls++;
        if (memcmp(got, coords + 2 * s, (size_t)n * 2 * sizeof(hsize_t))) {
            h5p_error("point-selections: H5Sget_select_elem_pointlist from point %lld "
                      "differs from the points selected", s);
            return -1;
        }
    }
    return calls;
fail:
    return -1;
}

/* a dataspace (space) or a property list encoded (H5Sencode2/H5Pencode2, and the
 * deprecated H5Sencode1/H5Pencode1 where the build has them) and decoded; a decoded
 * space must select as many points as the original; calls made */
static long long encode_decode(hid_t id, int space)
{
    size_t size = 0;
    unsigned char *enc = NULL;
    hid_t back = -1;
    long long calls = 3;
    H5DO(space ? H5Sencode2(id, NULL, &size, H5P_DEFAULT) : H5Pencode2(id, NULL, &size,
                                                                       H5P_DEFAULT));
    if (!(enc = xmalloc(size)))
        goto fail;
    H5DO(space ? H5Sencode2(id, enc, &size, H5P_DEFAULT) : H5Pencode2(id, enc, &size,
                                                                      H5P_DEFAULT));
#ifndef H5_NO_DEPRECATED_SYMBOLS
    H5DO(space ? H5Sencode1(id, enc, &size) : H5Pencode1(id, enc, &size));
    calls++;
#endif
    H5CHK(back, space ? H5Sdecode(enc) : H5Pdecode(enc));
    if (space && H5Sget_select_npoints(back) != H5Sget_select_npoints(id)) {
        h5p_error("point-selections: H5Sdecode gave %lld points, encoded %lld",
                  (long long)H5Sget_select_npoints(back), (long long)H5Sget_select_npoints(id));
        goto fail;
    }
    free(enc);
    return (space ? H5Sclose(back) : H5Pclose(back)) < 0 ? -1 : calls;
fail:
    if (back >= 0)
        H5E_BEGIN_TRY { space ? H5Sclose(back) : H5Pclose(back); } H5E_END_TRY;
    free(enc);
    return -1;
}

/* this rank's rows (a hyperslab) onto the 1-d buffer, intersected with every other
 * column; the projection selects half of the buffer */
static long long project(void)
{
    hid_t src = -1, dst = -1, every_other = -1, out = -1;
    hsize_t dims[2] = {(hsize_t)g_size * ROWS_PER_RANK, ncols}, n = ROWS_PER_RANK * ncols;
    hsize_t start[2] = {(hsize_t)g_rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, ncols};
    hsize_t stride[2] = {1, 2}, half[2] = {ROWS_PER_RANK, ncols / 2}, zero = 0;
    H5CHK(src, H5Screate_simple(2, dims, NULL));
    H5DO(H5Sselect_hyperslab(src, H5S_SELECT_SET, start, NULL, count, NULL));
    H5CHK(every_other, H5Screate_simple(2, dims, NULL));
    H5DO(H5Sselect_hyperslab(every_other, H5S_SELECT_SET, start, stride, half, NULL));
    H5CHK(dst, H5Screate_simple(1, &n, NULL));
    H5DO(H5Sselect_hyperslab(dst, H5S_SELECT_SET, &zero, NULL, &n, NULL));
    H5CHK(out, H5Sselect_project_intersection(src, dst, every_other));
    if (H5Sget_select_npoints(out) != (hssize_t)(n / 2)) {
        h5p_error("point-selections: H5Sselect_project_intersection selected %lld, not %llu",
                  (long long)H5Sget_select_npoints(out), (unsigned long long)(n / 2));
        goto fail;
    }
    H5Sclose(out);
    H5Sclose(dst);
    H5Sclose(every_other);
    H5Sclose(src);
    return 1;
fail:
    H5QUIET(H5Sclose, out);
    H5QUIET(H5Sclose, dst);
    H5QUIET(H5Sclose, every_other);
    H5QUIET(H5Sclose, src);
    return -1;
}

/* the select_ops phase's calls (no file I/O) */
static long long select_ops(const options_t *o)
{
    hid_t fspace = -1, other = -1, dcpl = -1;
    hsize_t dims[2] = {(hsize_t)g_size * ROWS_PER_RANK, ncols};
    long long calls = 0, c;
    H5CHK(fspace, H5Screate_simple(2, dims, NULL));
    H5DO(H5Sselect_elements(fspace, H5S_SELECT_SET, (size_t)o->elements, coords));
    if ((c = pointlists(fspace, o->elements)) < 0 || (calls += c, c = encode_decode(fspace, 1)) < 0)
        goto fail;
    calls += c;
    H5CHK(other, H5Scopy(fspace));
    if (H5Sget_select_npoints(other) != (hssize_t)o->elements) {
        h5p_error("point-selections: H5Scopy kept %lld of %lld points",
                  (long long)H5Sget_select_npoints(other), o->elements);
        goto fail;
    }
    H5DO(H5Sselect_all(other));
    if ((c = encode_decode(other, 1)) < 0)
        goto fail;
    H5DO(H5Sselect_none(other));
    calls += c + 1;
    if ((c = encode_decode(other, 1)) < 0 || (calls += c, c = project()) < 0)
        goto fail;
    calls += c;
    if ((dcpl = make_dcpl(o)) < 0 || (c = encode_decode(dcpl, 0)) < 0)
        goto fail;
    calls += c;
    H5Pclose(dcpl);
    H5Sclose(other);
    H5Sclose(fspace);
    return calls;
fail:
    H5QUIET(H5Pclose, dcpl);
    H5QUIET(H5Sclose, other);
    H5QUIET(H5Sclose, fspace);
    return -1;
}

static double value(long long k, int salt)
{
    return member_value(k, salt, M_VALUE_D);
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    char *files[1] = {file_name};
    int salt = r->iteration % 8;
    long long calls;
    fill_values(buf, o->elements, salt);
    phase_start(r);
    if (transfer(r, 1) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, "write", o->elements * (long long)sizeof(double), 1) < 0 || any_errors())
        return -1;
    if (evict_files(r, files, 1) < 0)
        return -1;
    memset(buf, 0xA5, (size_t)o->elements * sizeof(double));
    phase_start(r);
    transfer(r, 0);
    if (phase_stop(r, "read", o->elements * (long long)sizeof(double), 1) < 0 || any_errors())
        return -1;
    for (long long k = 0; k < o->elements; k++)
        if (buf[k] != value(k, salt))
            return verify_double("read", k, "value", value(k, salt), buf[k]);
    phase_start(r);
    calls = select_ops(o);
    if (phase_stop(r, "select_ops", 0, calls < 0 ? 0 : calls) < 0)
        return -1;
    return any_errors() ? -1 : 0;
}

#else
#define prepare unavailable_before_1_14
#define iterate unavailable_iterate
#define finish unavailable_finish
#endif

const path_t selection_paths[] = {
    {"point-selections", "selection", 0, 262144, 1, prepare, iterate, finish}, {0}};
