/* append: a chunked 1-d dataset of doubles with an unlimited extent, grown in
 * --objects steps (H5Dset_extent, collective) and written after each step, every
 * rank its slice of the new part (--elements doubles per rank in all).  Phase
 * append: file create, every step (extend, check the new extent with
 * H5Dget_space, write), close, fsync; its bytes are what the ranks wrote, its
 * objects the extents HDF5 reported grown.  Untimed after it: the whole dataset
 * read back (each rank its slices) and checked.  No MPI-IO twin. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char file_name[4096];
static double *buf;          /* [elements] */
static long long per_step;   /* elements per rank per step */

static int prepare(run_t *r)
{
    options_t *o = r->o;
    if (o->objects < 1 || o->elements % o->objects) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR append: --elements %lld is not a multiple of the "
                    "--objects %lld steps\n", o->elements, o->objects);
        return EXIT_UNAVAILABLE;
    }
    per_step = o->elements / o->objects;
    o->chunked = 1;
    o->record_bytes_file = o->record_bytes_memory = sizeof(double);
    path_join(file_name, sizeof file_name, o->prefix, "append.h5");
    if (!(buf = xmalloc((size_t)o->elements * sizeof(double))))
        return -1;
    return run_add_file(r, file_name);
}

static void finish(run_t *r) { (void)r; free(buf); buf = NULL; }

/* step s holds [s*ranks*P, (s+1)*ranks*P); rank r's slice of it starts at r*P */
static hsize_t slice_start(long long s) { return (hsize_t)((s * g_size + g_rank) * per_step); }

static int transfer(run_t *r, hid_t d, long long s, int write, hid_t dxpl)
{
    hid_t fspace = -1, mspace = -1;
    hsize_t start = slice_start(s), n = (hsize_t)per_step;
    int rc = -1;
    H5CHK(fspace, H5Dget_space(d));
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    if (write)
        H5DO(H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf + s * per_step));
    else
        H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf + s * per_step));
    note_io_mode(r, dxpl);
    rc = 0;
fail:
    H5RELEASE(&mspace, &fspace);
    return rc;
}

/* returns the steps whose extent HDF5 reported grown, -1 on an error */
static long long append(run_t *r)
{
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, dcpl = -1, space = -1, d = -1, now = -1;
    hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = (hsize_t)o->chunk_elements, size;
    long long grown = -1;
    int closed = 0;
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5CHK(space, H5Screate_simple(1, &zero, &unlimited));
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    H5DO(H5Pset_chunk(dcpl, 1, &chunk));
    H5CHK(d, H5Dcreate2(fid, "data", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    for (grown = 0; grown < o->objects; grown++) {
        hsize_t want = (hsize_t)((grown + 1) * g_size * per_step);
        H5DO(H5Dset_extent(d, &want));
        H5CHK(now, H5Dget_space(d));
        H5DO(H5Sget_simple_extent_dims(now, &size, NULL));
        H5CLOSE(H5Sclose, now);
        if (size != want) {
            h5p_error("append: step %lld: extent %llu after H5Dset_extent to %llu", grown,
                      (unsigned long long)size, (unsigned long long)want);
            goto fail;
        }
        if (transfer(r, d, grown, 1, dxpl) < 0)
            goto fail;
    }
    H5CLOSE(H5Dclose, d);
    closed = 1;
    if (close_written_file(&fid, file_name) < 0)
        goto fail;
    H5CLOSE_ALL(&dcpl, &space, &dxpl, &fapl);
    return grown;
fail:
    H5RELEASE(&now, &d);
    release_phase_file(&fid, file_name, 1, closed);
    H5RELEASE(&fid, &dcpl, &space, &dxpl, &fapl);
    return -1;
}

static int read_back(run_t *r, int salt)
{
    const options_t *o = r->o;
    hid_t fapl = -1, dxpl = -1, fid = -1, d = -1;
    if ((fapl = make_fapl(o)) < 0 || (dxpl = make_dxpl(o)) < 0)
        goto fail;
    H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    H5CHK(d, H5Dopen2(fid, "data", H5P_DEFAULT));
    memset(buf, 0xA5, (size_t)o->elements * sizeof(double));
    for (long long s = 0; s < o->objects; s++)
        if (transfer(r, d, s, 0, dxpl) < 0)
            goto fail;
    H5CLOSE(H5Dclose, d);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&dxpl, &fapl);
    for (long long i = 0; i < o->elements; i++)
        if (buf[i] != member_value(i, salt, M_VALUE_D)) {
            return verify_double("append", i, "value", member_value(i, salt, M_VALUE_D), buf[i]);
        }
    return 0;
fail:
    H5RELEASE(&d, &fid, &dxpl, &fapl);
    return -1;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    char *files[1] = {file_name};
    int salt = r->iteration % 8;
    long long grown;
    fill_values(buf, o->elements, salt);
    phase_start(r);
    if ((grown = append(r)) >= 0)
        fsync_files(files, 1);
    if (phase_stop(r, "append", grown < 0 ? 0 : grown * per_step * (long long)sizeof(double),
                   grown < 0 ? 0 : grown) < 0 || any_errors())
        return -1;
    if (evict_files(r, files, 1) < 0)
        return -1;
    read_back(r, salt);
    return any_errors() ? -1 : 0;
}

const path_t append_paths[] = {
    {"append", "chunked", 0, 1LL << 20, 256, prepare, iterate, finish}, {0}};
