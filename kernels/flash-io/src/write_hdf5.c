/* Writing one FLASH file with parallel HDF5, as FLASH does: every rank
 * creates every dataset, rank 0 writes the header datasets, every rank writes
 * its own rows (blocks) of the per-block datasets. */
#include "flash_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fsync_path(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0) {
        fio_error(__FILE__, __LINE__, "open(%s) for fsync: %s", path, strerror(errno));
        return -1;
    }
    if (fsync(fd) != 0) {
        fio_error(__FILE__, __LINE__, "fsync(%s): %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) != 0) {
        fio_error(__FILE__, __LINE__, "close(%s): %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static hid_t simparams_type(int single)
{
    hid_t t = -1;
    hid_t real = single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
    size_t size = single ? sizeof(simparams_f_t) : sizeof(simparams_d_t);
    size_t o_time = single ? offsetof(simparams_f_t, time) : offsetof(simparams_d_t, time);
    size_t o_dt = single ? offsetof(simparams_f_t, timestep) : offsetof(simparams_d_t, timestep);
    size_t o_z = single ? offsetof(simparams_f_t, redshift) : offsetof(simparams_d_t, redshift);

    H5CHK(t, H5Tcreate(H5T_COMPOUND, size));
    H5DO(H5Tinsert(t, "total blocks", offsetof(simparams_d_t, total_blocks), H5T_NATIVE_INT));
    H5DO(H5Tinsert(t, "time", o_time, real));
    H5DO(H5Tinsert(t, "timestep", o_dt, real));
    H5DO(H5Tinsert(t, "redshift", o_z, real));
    H5DO(H5Tinsert(t, "number of steps", offsetof(simparams_d_t, nsteps), H5T_NATIVE_INT));
    H5DO(H5Tinsert(t, "nxb", offsetof(simparams_d_t, nxb), H5T_NATIVE_INT));
    H5DO(H5Tinsert(t, "nyb", offsetof(simparams_d_t, nyb), H5T_NATIVE_INT));
    H5DO(H5Tinsert(t, "nzb", offsetof(simparams_d_t, nzb), H5T_NATIVE_INT));
    return t;
fail:
    if (t >= 0)
        H5Tclose(t);
    return -1;
}

/* a datatype the caller closes (H5Tcopy of the native ones so closing is uniform) */
static hid_t make_type(const dset_t *d)
{
    hid_t t = -1;
    switch (d->type) {
    case DT_INT: H5CHK(t, H5Tcopy(H5T_NATIVE_INT)); break;
    case DT_FLOAT: H5CHK(t, H5Tcopy(H5T_NATIVE_FLOAT)); break;
    case DT_DOUBLE: H5CHK(t, H5Tcopy(H5T_NATIVE_DOUBLE)); break;
    case DT_STRING:
        H5CHK(t, H5Tcopy(H5T_C_S1));
        H5DO(H5Tset_size(t, d->strsize));
        break;
    case DT_SIMPARAMS_D: t = simparams_type(0); break;
    case DT_SIMPARAMS_F: t = simparams_type(1); break;
    }
    return t;
fail:
    if (t >= 0)
        H5Tclose(t);
    return -1;
}

static int write_dataset(hid_t fid, const dset_t *d, const mesh_t *m, const options_t *o,
                         hid_t dxpl)
{
    hid_t type = -1, fspace = -1, mspace = -1, dcpl = -1, dset = -1;
    hsize_t start[5] = {0}, count[5], mdims[5];
    int rc = -1;

    if ((type = make_type(d)) < 0)
        goto fail;
    H5CHK(fspace, H5Screate_simple(d->rank, d->dims, NULL));
    H5CHK(dcpl, H5Pcreate(H5P_DATASET_CREATE));
    if (o->chunked && d->is_unknown) {
        hsize_t chunk[5];
        for (int i = 0; i < d->rank; i++)
            chunk[i] = d->dims[i];
        chunk[0] = (hsize_t)o->chunk_blocks < d->dims[0] ? (hsize_t)o->chunk_blocks : d->dims[0];
        H5DO(H5Pset_chunk(dcpl, d->rank, chunk));
    }
    H5CHK(dset, H5Dcreate2(fid, d->name, type, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT));

    if (!d->blocked) {
        /* header: rank 0 writes it whole, independently (as FLASH does) */
        if (g_rank == 0)
            H5DO(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, d->buf));
    } else {
        for (int i = 0; i < d->rank; i++) {
            count[i] = d->dims[i];
            mdims[i] = d->dims[i];
        }
        start[0] = (hsize_t)m->global_offset;
        count[0] = (hsize_t)m->local_blocks;
        mdims[0] = count[0] ? count[0] : 1;
        H5CHK(mspace, H5Screate_simple(d->rank, mdims, NULL));
        if (m->local_blocks > 0) {
            H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
        } else {
            H5DO(H5Sselect_none(fspace));
            H5DO(H5Sselect_none(mspace));
        }
        H5DO(H5Dwrite(dset, type, mspace, fspace, dxpl, d->buf));
    }
    /* success path: every close is checked */
    {
        hid_t x = dset;
        dset = -1;
        H5DO(H5Dclose(x));
        x = dcpl; dcpl = -1;
        H5DO(H5Pclose(x));
        if (mspace >= 0) { x = mspace; mspace = -1; H5DO(H5Sclose(x)); }
        x = fspace; fspace = -1;
        H5DO(H5Sclose(x));
        x = type; type = -1;
        H5DO(H5Tclose(x));
    }
    rc = 0;
fail:
    /* failure path only: release what is left, the error is already counted */
    H5RELEASE(&dset, &dcpl, &mspace, &fspace, &type);
    return rc;
}

int write_hdf5(const plan_t *p, const mesh_t *m, const options_t *o, ftime_t *t)
{
    hid_t fapl = -1, dxpl = -1, fid = -1;
    double t0, t1, t2, t3, t4;
    int rc = -1;

    memset(t, 0, sizeof *t);
    H5CHK(fapl, H5Pcreate(H5P_FILE_ACCESS));
    H5DO(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    if (o->alignment > 1)
        H5DO(H5Pset_alignment(fapl, (hsize_t)o->align_threshold, (hsize_t)o->alignment));
    if (o->coll_metadata) {
        H5DO(H5Pset_all_coll_metadata_ops(fapl, 1));
        H5DO(H5Pset_coll_metadata_write(fapl, 1));
    }
    H5CHK(dxpl, H5Pcreate(H5P_DATASET_XFER));
    H5DO(H5Pset_dxpl_mpio(dxpl, o->collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT));

    MPICHK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    if ((fid = H5Fcreate(p->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0)
        FAIL("cannot create the HDF5 file %s (H5Fcreate failed)", p->path);
    t1 = MPI_Wtime();
    for (int i = 0; i < p->ndset; i++) {
        if (write_dataset(fid, &p->dset[i], m, o, dxpl) < 0)
            FAIL("writing dataset \"%s\" of %s", p->dset[i].name, p->path);
    }
    t2 = MPI_Wtime();
    {
        hid_t f = fid;
        fid = -1;
        H5DO(H5Fclose(f));
    }
    t3 = MPI_Wtime();
    if (o->fsync && fsync_path(p->path) < 0)
        goto fail;
    t4 = MPI_Wtime();
    {
        hid_t x = dxpl;
        dxpl = -1;
        H5DO(H5Pclose(x));
        x = fapl;
        fapl = -1;
        H5DO(H5Pclose(x));
    }
    t->open = t1 - t0;
    t->write = t2 - t1;
    t->close = t3 - t2;
    t->fsync = t4 - t3;
    t->total = t4 - t0;
    rc = 0;
fail:
    /* also the success path's: every handle is closed and -1 by then */
    H5RELEASE(&fid, &dxpl, &fapl);
    return rc;
}
