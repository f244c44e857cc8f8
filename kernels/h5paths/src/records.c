/* Records, their values and verification; the one-dataset HDF5 transfer and
 * the write / read / write_subset sequence shared by the compound and convert
 * paths (and their MPI-IO twins). */
#include "records.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The file record: 9 members of 5 types, 48 bytes, no padding. */
typedef struct {
    int64_t id;
    double x, y, z;
    float mass;
    int32_t count;
    int16_t flag, level;
    float charge;
} rec_t;

static const struct {
    const char *name;
    int kind;
} member_info[M_N] = {
    [M_ID] = {"id", K_I64},       [M_X] = {"x", K_F64},         [M_Y] = {"y", K_F64},
    [M_Z] = {"z", K_F64},         [M_MASS] = {"mass", K_F32},   [M_COUNT] = {"count", K_I32},
    [M_FLAG] = {"flag", K_I16},   [M_LEVEL] = {"level", K_I16}, [M_CHARGE] = {"charge", K_F32},
    [M_TAG] = {"tag", K_I64},     [M_WEIGHT] = {"weight", K_F64},
    [M_VALUE_D] = {"value", K_F64}, [M_VALUE_F] = {"value", K_F32},
};

#define OFF(f) offsetof(rec_t, f)
const layout_t L_FULL = {"full", sizeof(rec_t), 0, 9,
    {{M_ID, OFF(id)}, {M_X, OFF(x)}, {M_Y, OFF(y)}, {M_Z, OFF(z)}, {M_MASS, OFF(mass)},
     {M_COUNT, OFF(count)}, {M_FLAG, OFF(flag)}, {M_LEVEL, OFF(level)},
     {M_CHARGE, OFF(charge)}}};
/* the first three members at the file's offsets: the layout HDF5's compound
 * conversion recognises as a subset (H5T_SUBSET_DST on read, _SRC on write) */
const layout_t L_SUBSET = {"subset", 24, 0, 3, {{M_ID, 0}, {M_X, 8}, {M_Y, 16}}};
/* the file record followed by two members the file does not have */
const layout_t L_SUPERSET = {"superset", sizeof(rec_t) + 16, 0, 11,
    {{M_ID, OFF(id)}, {M_X, OFF(x)}, {M_Y, OFF(y)}, {M_Z, OFF(z)}, {M_MASS, OFF(mass)},
     {M_COUNT, OFF(count)}, {M_FLAG, OFF(flag)}, {M_LEVEL, OFF(level)},
     {M_CHARGE, OFF(charge)}, {M_TAG, sizeof(rec_t)}, {M_WEIGHT, sizeof(rec_t) + 8}}};
/* the same members in reverse order */
const layout_t L_REORDER = {"reorder", sizeof(rec_t), 0, 9,
    {{M_CHARGE, 0}, {M_LEVEL, 4}, {M_FLAG, 6}, {M_COUNT, 8}, {M_MASS, 12}, {M_Z, 16},
     {M_Y, 24}, {M_X, 32}, {M_ID, 40}}};
const layout_t L_DOUBLE = {"double", 8, 1, 1, {{M_VALUE_D, 0}}};
const layout_t L_FLOAT = {"float", 4, 1, 1, {{M_VALUE_F, 0}}};

static hid_t kind_type(int kind)
{
    switch (kind) {
    case K_I64: return H5T_NATIVE_INT64;
    case K_F64: return H5T_NATIVE_DOUBLE;
    case K_F32: return H5T_NATIVE_FLOAT;
    case K_I32: return H5T_NATIVE_INT32;
    default: return H5T_NATIVE_INT16;
    }
}

/* the HDF5 memory type of a layout (the caller closes it) */
hid_t layout_type(const layout_t *l)
{
    hid_t t = -1;
    if (l->atomic) {
        H5CHK(t, H5Tcopy(kind_type(member_info[l->m[0].id].kind)));
        return t;
    }
    H5CHK(t, H5Tcreate(H5T_COMPOUND, l->size));
    for (int k = 0; k < l->n; k++)
        H5DO(H5Tinsert(t, member_info[l->m[k].id].name, l->m[k].offset,
                       kind_type(member_info[l->m[k].id].kind)));
    return t;
fail:
    H5QUIET(H5Tclose, t);
    return -1;
}

/* Every value is exact in its member's type (integers below 2^53 in doubles,
 * below 2^23 in floats).  k is unique per (rank, index). */
double member_value(long long i, int salt, int id)
{
    return member_value_of(g_rank, i, salt, id);
}

void fill_values(double *buf, long long n, int salt)
{
    for (long long i = 0; i < n; i++)
        buf[i] = member_value(i, salt, M_VALUE_D);
}

double member_value_of(int rank, long long i, int salt, int id)
{
    long long k = ((long long)rank << 36) + i;
    switch (id) {
    case M_ID: return (double)(k * 8 + salt);
    case M_X: return (double)k + salt * 0.125;
    case M_Y: return -(double)k - salt * 0.25;
    case M_Z: return (double)k * 0.5 + salt;
    case M_MASS: return (double)(k % 1000003) + salt * 0.25;
    case M_COUNT: return (double)((k * 3 + salt) % 2147483629LL);
    case M_FLAG: return (double)((k + salt) % 32749);
    case M_LEVEL: return (double)((k * 7 + salt) % 251 - 125);
    case M_CHARGE: return (double)(k % 4093 - 2046) * 0.5 + salt * 0.125;
    /* the superset's extras: the caller's values, independent of the salt */
    case M_TAG: return (double)(-3 * (i + 1));
    case M_WEIGHT: return (double)i * 0.75 + 1.0;
    default: return ((double)(k % 1048573) + salt * 0.25) * 0.5; /* M_VALUE_D/F: 23 bits */
    }
}

static void put(void *p, int kind, double v)
{
    switch (kind) {
    case K_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case K_F64: memcpy(p, &v, 8); break;
    case K_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case K_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    default: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    }
}

static double get(const void *p, int kind)
{
    switch (kind) {
    case K_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case K_F64: { double x; memcpy(&x, p, 8); return x; }
    case K_F32: { float x; memcpy(&x, p, 4); return x; }
    case K_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    default: { int16_t x; memcpy(&x, p, 2); return x; }
    }
}

/* fill the members in mask of n records */
void layout_fill(const layout_t *l, void *buf, long long n, int salt, unsigned mask)
{
    char *b = buf;
    for (long long i = 0; i < n; i++, b += l->size)
        for (int k = 0; k < l->n; k++)
            if (mask & MASK(l->m[k].id))
                put(b + l->m[k].offset, member_info[l->m[k].id].kind,
                    member_value(i, salt, l->m[k].id));
}

/* a read buffer before the read: garbage in the members the read must fill,
 * the caller's values in the members the file does not have */
void layout_poison(const layout_t *l, void *buf, long long n)
{
    memset(buf, 0xA5, (size_t)n * l->size);
    layout_fill(l, buf, n, 0, MASK(M_TAG) | MASK(M_WEIGHT));
}

/* Check n records; members in alt_mask carry alt_salt.  Reports the first
 * mismatch in the contract's format and the count; returns the count. */
long long layout_verify(const layout_t *l, const void *buf, long long n, int salt,
                        unsigned alt_mask, int alt_salt, const char *phase)
{
    const char *b = buf;
    long long bad = 0;
    for (long long i = 0; i < n; i++, b += l->size) {
        for (int k = 0; k < l->n; k++) {
            int id = l->m[k].id, kind = member_info[id].kind;
            double want = member_value(i, (alt_mask & MASK(id)) ? alt_salt : salt, id);
            double got = get(b + l->m[k].offset, kind);
            if (kind == K_F32)
                want = (float)want;
            if (got == want || (isnan(got) && isnan(want)))
                continue;
            if (!bad++) {
                verify_double(phase, i, member_info[id].name, want, got);
            }
        }
    }
    if (bad > 1)
        h5p_error("verify %s: %lld mismatching values on this rank", phase, bad);
    return bad;
}

/* ------------------------------------------------------ HDF5 transfer */

static hid_t create_dataset(const options_t *o, hid_t fid, const xfer_t *x, hid_t fspace)
{
    hid_t dcpl = -1, dset = -1;
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    if (x->chunk > 0) {
        hsize_t total = (hsize_t)x->sel.total;
        hsize_t chunk = (hsize_t)x->chunk < total ? (hsize_t)x->chunk : total;
        H5DO(H5Pset_chunk(dcpl, 1, &chunk));
        if (x->deflate > 0)
            H5DO(H5Pset_deflate(dcpl, (unsigned)x->deflate));
    }
    H5CHK(dset, H5Dcreate2(fid, "data", x->file_type, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5CLOSE(H5Pclose, dcpl);
    (void)o;
    return dset;
fail:
    H5RELEASE(&dcpl, &dset);
    return -1;
}

long long selection_elements(const selection_t *s)
{
    return s->count * s->block + s->tail;
}

void contiguous_selection(selection_t *s, long long per_rank)
{
    s->total = per_rank * g_size;
    s->start = rank_offset(per_rank);
    s->stride = 1;
    s->count = 1;
    s->block = per_rank;
}

/* open or create the file and its dataset "data", move this rank's records
 * (x->sel), close everything (H5Fclose included: the data leaves HDF5) */
int h5_transfer(run_t *r, const xfer_t *x, enum xfer_mode mode, void *buf)
{
    hid_t fapl = -1, dxpl = -1, fid = -1, dset = -1, fspace = -1, mspace = -1;
    hsize_t total = (hsize_t)x->sel.total, start = (hsize_t)x->sel.start;
    hsize_t stride = (hsize_t)x->sel.stride, count = (hsize_t)x->sel.count;
    hsize_t block = (hsize_t)x->sel.block, n = (hsize_t)selection_elements(&x->sel);
    hsize_t tail_start = (hsize_t)x->sel.tail_start, tail = (hsize_t)x->sel.tail;
    int rc = -1, closed = 0;

    if ((fapl = make_fapl(r->o)) < 0 || (dxpl = make_dxpl(r->o)) < 0)
        goto fail;
    if (mode == X_CREATE) {
        H5CHK(fid, H5Fcreate(x->file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5CHK(fspace, H5Screate_simple(1, &total, NULL));
        if ((dset = create_dataset(r->o, fid, x, fspace)) < 0)
            goto fail;
    } else {
        H5CHK(fid, H5Fopen(x->file, mode == X_READ ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl));
        H5CHK(dset, H5Dopen2(fid, "data", H5P_DEFAULT));
        H5CHK(fspace, H5Dget_space(dset));
    }
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, &stride, &count, &block));
    if (tail > 0)
        H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_OR, &tail_start, NULL, &tail, NULL));
    H5CHK(mspace, H5Screate_simple(1, &n, NULL));
    if (mode == X_READ)
        H5DO(H5Dread(dset, x->mem_type, mspace, fspace, dxpl, buf));
    else
        H5DO(H5Dwrite(dset, x->mem_type, mspace, fspace, dxpl, buf));
    note_io_mode(r, dxpl);
    H5CLOSE(H5Sclose, mspace);
    H5CLOSE(H5Sclose, fspace);
    H5CLOSE(H5Dclose, dset);
    if (mode == X_READ)
        H5CLOSE(H5Fclose, fid);
    else if ((closed = 1, close_written_file(&fid, x->file)) < 0)
        goto fail;
    rc = 0;
fail:
    H5RELEASE(&mspace, &fspace, &dset);
    if (mode != X_READ && !closed)   /* as every rank on the success path does */
        close_written_file(&fid, x->file);
    H5RELEASE(&fid, &dxpl, &fapl);
    return rc;
}

/* ------------------------------------------------ the data sequence */

int data_prepare(run_t *r, data_plan_t *p)
{
    options_t *o = r->o;
    size_t big = p->file->size;
    const layout_t *mems[3] = {p->write_mem, p->read_mem, p->subset_mem};
    if (o->api == API_MPIIO && o->chunked) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR %s: --layout chunked has no MPI-IO twin (the twin "
                    "of every layout is the contiguous --api mpiio row)\n", o->path);
        return EXIT_UNAVAILABLE;
    }
    if (o->api == API_MPIIO)   /* the twin moves the file's bytes both ways */
        p->write_mem = p->read_mem = p->file;
    for (int k = 0; k < 3; k++)
        if (mems[k] && mems[k]->size > big)
            big = mems[k]->size;
    if (o->chunked && o->api == API_HDF5)
        p->chunked = 1;
    if (o->serial) {
        /* a file per rank (sec2): this rank's records are the whole dataset of its file */
        contiguous_selection(&p->sel, o->elements);
        p->sel.total = o->elements;
        p->sel.start = 0;
        if (!(p->rank_names = rank_file_names(r, o->path)))
            return -1;
        snprintf(p->file_name, sizeof p->file_name, "%s", p->rank_names[g_rank]);
    } else {
        if (!p->sel.total)
            contiguous_selection(&p->sel, o->elements);
        path_join(p->file_name, sizeof p->file_name, o->prefix, o->path);
        strncat(p->file_name, o->api == API_MPIIO ? "-mpiio.h5" : ".h5",
                sizeof p->file_name - strlen(p->file_name) - 1);
    }
    p->n = selection_elements(&p->sel);
    o->record_bytes_file = (long long)p->file->size;
    o->record_bytes_memory = (long long)p->read_mem->size;
    p->wbuf = xmalloc((size_t)p->n * big);
    p->rbuf = xmalloc((size_t)p->n * big);
    if (!p->wbuf || !p->rbuf)
        return -1;
    return o->serial ? 0 : run_add_file(r, p->file_name);
}

/* outside the timed phases: the node leader drops every rank's file (serial: one each) */
static int evict_data(run_t *r, data_plan_t *p)
{
    char *one[1] = {p->file_name};
    return p->rank_names ? evict_files(r, p->rank_names, g_size) : evict_files(r, one, 1);
}

void data_finish(data_plan_t *p)
{
    free(p->wbuf);
    free(p->rbuf);
    p->wbuf = p->rbuf = NULL;
    free_rank_file_names(p->rank_names);
    p->rank_names = NULL;
    if (p->file_type >= 0)
        H5QUIET(H5Tclose, p->file_type);
}

static MPI_Datatype record_mpi_type(const layout_t *l)
{
    MPI_Datatype t;
    MPI_Type_contiguous((int)l->size, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

/* one transfer of the sequence, through HDF5 or MPI-IO; mem is the memory
 * layout (the file's for MPI-IO) */
static int transfer(run_t *r, data_plan_t *p, const layout_t *mem, enum xfer_mode mode,
                    void *buf)
{
    const options_t *o = r->o;
    int rc;
    if (o->api == API_MPIIO) {
        MPI_Datatype t = record_mpi_type(p->file), view = MPI_DATATYPE_NULL;
        MPI_Offset disp = (MPI_Offset)p->sel.start * (MPI_Offset)p->file->size;
        if (p->sel.count > 1) {  /* strided: a file view of the same blocks */
            MPI_Type_vector((int)p->sel.count, (int)p->sel.block, (int)p->sel.stride, t, &view);
            MPI_Type_commit(&view);
        }
        rc = mpiio_transfer(p->file_name, mode == X_READ ? MIO_READ : mode == X_CREATE ?
                            MIO_CREATE : MIO_UPDATE, disp, view, buf, p->n, t, o->collective);
        if (view != MPI_DATATYPE_NULL)
            MPI_Type_free(&view);
        MPI_Type_free(&t);
        return rc;
    } else {
        xfer_t x = {p->file_name, p->file_type, -1, p->sel, p->chunked ? o->chunk_elements : 0,
                    p->deflate};
        if ((x.mem_type = layout_type(mem)) < 0)
            return -1;
        rc = h5_transfer(r, &x, mode, buf);
        H5Tclose(x.mem_type);
        return rc;
    }
}

static int timed_write(run_t *r, data_plan_t *p, const char *phase, const layout_t *mem,
                       enum xfer_mode mode, void *buf, long long bytes)
{
    char *files[1] = {p->file_name};
    phase_start(r);
    if (transfer(r, p, mem, mode, buf) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, phase, bytes, 1) < 0 || any_errors())
        return -1;
    if (!p->deflate)
        check_size(p->file_name, p->sel.total * (long long)p->file->size);
    return evict_data(r, p);
}

/* the partial write: through the subset type (HDF5 reads the records back as
 * the conversion's background), or for the MPI-IO twin the same read, update
 * of the subset's members and write of whole records */
static int write_subset(run_t *r, data_plan_t *p, int salt)
{
    const options_t *o = r->o;
    long long n = p->n;
    char *files[1] = {p->file_name};
    unsigned mask = 0;
    for (int k = 0; k < p->subset_mem->n; k++)
        mask |= MASK(p->subset_mem->m[k].id);
    if (o->api == API_HDF5) {
        layout_fill(p->subset_mem, p->wbuf, n, salt + 1, ALL_MEMBERS);
        return timed_write(r, p, "write_subset", p->subset_mem, X_UPDATE, p->wbuf,
                           n * (long long)p->subset_mem->size);
    }
    phase_start(r);
    if (transfer(r, p, p->file, X_READ, p->wbuf) == 0) {
        layout_fill(p->file, p->wbuf, n, salt + 1, mask);
        if (transfer(r, p, p->file, X_UPDATE, p->wbuf) == 0)
            fsync_files(files, 1);
    }
    if (phase_stop(r, "write_subset", n * (long long)p->file->size, 1) < 0 || any_errors())
        return -1;
    return evict_files(r, files, 1);
}

/* after write_subset (untimed): the subset's members are new, the rest old */
static int verify_subset(run_t *r, data_plan_t *p, int salt)
{
    unsigned mask = 0;
    for (int k = 0; k < p->subset_mem->n; k++)
        mask |= MASK(p->subset_mem->m[k].id);
    layout_poison(p->file, p->rbuf, p->n);
    if (transfer(r, p, p->file, X_READ, p->rbuf) < 0)
        return -1;
    layout_verify(p->file, p->rbuf, p->n, salt, mask, salt + 1, "write_subset");
    return any_errors() ? -1 : 0;
}

int data_iterate(run_t *r, data_plan_t *p)
{
    long long n = p->n;
    int salt = (r->iteration % 4) * 2;   /* each iteration writes other values */

    /* write: the buffer is filled again every time (--modify-write-buf may clobber it) */
    layout_fill(p->write_mem, p->wbuf, n, salt, ALL_MEMBERS);
    if (timed_write(r, p, "write", p->write_mem, X_CREATE, p->wbuf,
                    n * (long long)p->write_mem->size) < 0)
        return -1;

    /* --read-repeats N (warm reads only): N whole reads into the same buffer, timed as
     * one phase of N times the bytes; the poison before the first and the check after
     * the last stay outside the phase */
    layout_poison(p->read_mem, p->rbuf, n);
    phase_start(r);
    for (int k = 0; k < r->o->read_repeats && !any_errors(); k++)
        transfer(r, p, p->read_mem, X_READ, p->rbuf);
    if (phase_stop(r, "read", (long long)r->o->read_repeats * n * (long long)p->read_mem->size,
                   1) < 0 || any_errors())
        return -1;
    layout_verify(p->read_mem, p->rbuf, n, salt, 0, 0, "read");
    if (any_errors())
        return -1;

    if (!p->subset_mem)
        return 0;
    if (evict_data(r, p) < 0)  /* the read cached it */
        return -1;
    if (write_subset(r, p, salt) < 0)
        return -1;
    return verify_subset(r, p, salt);
}
