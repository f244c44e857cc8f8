/*
 * The mesh FLASH writes: PARAMESH blocks of nxb x nyb x nzb zones, 24
 * unknowns, the tree metadata of every block, and the list of datasets
 * (the "plan") of each of the three files.
 *
 * The blocks tile the unit cube on a regular nbx x nby x nbz grid, all leaves
 * at refinement level 1 (as in the FLASH I/O benchmark, no block has a parent
 * or children); neighbour ids are real global block ids (1-based, as FLASH
 * stores them), -21 at the domain boundary (PARAMESH's physical-boundary
 * code), -1 where the grid's last layer is incomplete.  The unknowns are a
 * linear function of the global zone index, so guard cells (never written)
 * are implicit and the corner interpolation is the FLASH one: the mean of
 * the 2^ndim zones around each corner.
 */
#include "flash_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hydro_labels[11] = {
    "dens", "velx", "vely", "velz", "pres", "ener", "temp", "gamc", "game", "enuc", "gpot"};
/* the plotfiles store dens, temp, pres and the first abundance, in that order */
static const int plot_vars[NPLOT] = {0, 6, 4, 11};

const char *filekind_name(int kind)
{
    static const char *const names[FK_N] = {"checkpoint", "plotfile", "corner"};
    return (kind >= 0 && kind < FK_N) ? names[kind] : "?";
}

static int iroot_ceil(long n, int k)
{
    /* smallest r with r^k >= n */
    long r = 1;
    for (;;) {
        long p = 1;
        for (int i = 0; i < k; i++)
            p *= r;
        if (p >= n)
            return (int)r;
        r++;
    }
}

static double zone_value(int var, long gx, long gy, long gz)
{
    return (double)(var + 1) + 1.0e-3 * (double)gx + 1.0e-6 * (double)gy + 1.0e-9 * (double)gz;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fio_error(__FILE__, __LINE__, "out of memory allocating %zu x %zu bytes", n, size);
    }
    return p;
}

int mesh_init(mesh_t *m, const options_t *o)
{
    long nb;
    long counts_local[1];
    long *all = NULL;

    memset(m, 0, sizeof *m);
    m->nxb = o->nxb;
    m->nyb = o->nyb;
    m->nzb = o->nzb;
    m->ndim = (o->nzb > 1) ? 3 : (o->nyb > 1) ? 2 : 1;
    m->ngid = 2 * m->ndim + 1 + (1 << m->ndim);
    m->nprocs = g_size;

    /* the original: lnblocks = int(0.8*maxblocks) + mod(MyPE,3) */
    if (o->blocks_per_rank > 0)
        m->local_blocks = o->blocks_per_rank;
    else
        m->local_blocks = (long)(0.8 * DEFAULT_MAXBLOCKS) + g_rank % 3;

    all = malloc(sizeof(long) * (size_t)g_size);
    if (!all) {
        fio_error(__FILE__, __LINE__, "out of memory");
        return -1;
    }
    counts_local[0] = m->local_blocks;
    MPICHK(MPI_Allgather(counts_local, 1, MPI_LONG, all, 1, MPI_LONG, MPI_COMM_WORLD));
    m->total_blocks = 0;
    m->min_blocks = m->max_blocks = all[0];
    for (int r = 0; r < g_size; r++) {
        if (r < g_rank)
            m->global_offset += all[r];
        m->total_blocks += all[r];
        if (all[r] < m->min_blocks) m->min_blocks = all[r];
        if (all[r] > m->max_blocks) m->max_blocks = all[r];
    }
    free(all);
    all = NULL;

    nb = m->total_blocks;
    if (m->ndim == 3) {
        m->nbx = iroot_ceil(nb, 3);
        m->nby = iroot_ceil((nb + m->nbx - 1) / m->nbx, 2);
        m->nbz = (int)((nb + (long)m->nbx * m->nby - 1) / ((long)m->nbx * m->nby));
    } else if (m->ndim == 2) {
        m->nbx = iroot_ceil(nb, 2);
        m->nby = (int)((nb + m->nbx - 1) / m->nbx);
        m->nbz = 1;
    } else {
        m->nbx = (int)nb;
        m->nby = m->nbz = 1;
    }

    /* labels: 11 hydro variables, then abundances f1..f13, 4 characters, blank padded */
    for (int v = 0; v < NVAR; v++) {
        char tmp[16];
        if (v < 11)
            snprintf(tmp, sizeof tmp, "%-4s", hydro_labels[v]);
        else
            snprintf(tmp, sizeof tmp, "f%-3d", v - 10);
        memcpy(m->labels[v], tmp, LABEL_LEN);
    }
    for (int p = 0; p < NPLOT; p++) {
        m->plot_index[p] = plot_vars[p];
        memcpy(m->plot_labels[p], m->labels[plot_vars[p]], LABEL_LEN);
    }

    /* tree metadata */
    long lb = m->local_blocks;
    int nd = m->ndim;
    m->lrefine = xcalloc((size_t)lb, sizeof(int));
    m->nodetype = xcalloc((size_t)lb, sizeof(int));
    m->gid = xcalloc((size_t)lb * (size_t)m->ngid, sizeof(int));
    m->coord = xcalloc((size_t)lb * (size_t)nd, sizeof(double));
    m->bsize = xcalloc((size_t)lb * (size_t)nd, sizeof(double));
    m->bnd_box = xcalloc((size_t)lb * (size_t)nd * 2, sizeof(double));
    m->coord_f = xcalloc((size_t)lb * (size_t)nd, sizeof(float));
    m->bsize_f = xcalloc((size_t)lb * (size_t)nd, sizeof(float));
    m->bnd_box_f = xcalloc((size_t)lb * (size_t)nd * 2, sizeof(float));
    if (!m->lrefine || !m->nodetype || !m->gid || !m->coord || !m->bsize || !m->bnd_box ||
        !m->coord_f || !m->bsize_f || !m->bnd_box_f)
        return -1;

    const int nblk[3] = {m->nbx, m->nby, m->nbz};
    for (long b = 0; b < lb; b++) {
        long g = m->global_offset + b;
        long bi[3] = {g % m->nbx, (g / m->nbx) % m->nby, g / ((long)m->nbx * m->nby)};
        int *gid = m->gid + b * m->ngid;
        int n = 0;
        m->lrefine[b] = 1;
        m->nodetype[b] = 1; /* leaf */
        for (int d = 0; d < nd; d++) {
            double h = 1.0 / nblk[d];
            m->coord[b * nd + d] = (bi[d] + 0.5) * h;
            m->bsize[b * nd + d] = h;
            m->bnd_box[(b * nd + d) * 2 + 0] = bi[d] * h;
            m->bnd_box[(b * nd + d) * 2 + 1] = (bi[d] + 1) * h;
            for (int side = -1; side <= 1; side += 2) {
                long nbi[3] = {bi[0], bi[1], bi[2]};
                nbi[d] += side;
                if (nbi[d] < 0 || nbi[d] >= nblk[d]) {
                    gid[n++] = -21; /* physical boundary */
                } else {
                    long ng = nbi[0] + (long)m->nbx * (nbi[1] + (long)m->nby * nbi[2]);
                    gid[n++] = (ng < m->total_blocks) ? (int)(ng + 1) : -1;
                }
            }
        }
        gid[n++] = -1;                       /* parent: none */
        for (int c = 0; c < (1 << nd); c++)  /* children: none (all leaves) */
            gid[n++] = -1;
        for (int i = 0; i < nd; i++) {
            m->coord_f[b * nd + i] = (float)m->coord[b * nd + i];
            m->bsize_f[b * nd + i] = (float)m->bsize[b * nd + i];
            m->bnd_box_f[(b * nd + i) * 2] = (float)m->bnd_box[(b * nd + i) * 2];
            m->bnd_box_f[(b * nd + i) * 2 + 1] = (float)m->bnd_box[(b * nd + i) * 2 + 1];
        }
    }

    /* unknowns, plot data and corner data (made before any file is opened) */
    size_t zones = (size_t)m->nxb * m->nyb * m->nzb;
    int k2d = nd >= 2, k3d = nd >= 3;
    int cx = m->nxb + 1, cy = m->nyb + k2d, cz = m->nzb + k3d;
    size_t corners = (size_t)cx * cy * cz;
    m->unk = xcalloc((size_t)NVAR * (size_t)lb * zones, sizeof(double));
    m->plot = xcalloc((size_t)NPLOT * (size_t)lb * zones, sizeof(float));
    m->corner = xcalloc((size_t)NPLOT * (size_t)lb * corners, sizeof(float));
    if (!m->unk || !m->plot || !m->corner)
        return -1;

    for (long b = 0; b < lb; b++) {
        long g = m->global_offset + b;
        long ox = (g % m->nbx) * m->nxb;
        long oy = ((g / m->nbx) % m->nby) * m->nyb;
        long oz = (g / ((long)m->nbx * m->nby)) * m->nzb;
        for (int v = 0; v < NVAR; v++) {
            double *u = m->unk + ((size_t)v * lb + b) * zones;
            for (int k = 0; k < m->nzb; k++)
                for (int j = 0; j < m->nyb; j++)
                    for (int i = 0; i < m->nxb; i++)
                        u[((size_t)k * m->nyb + j) * m->nxb + i] =
                            zone_value(v, ox + i, oy + j, oz + k);
        }
        for (int p = 0; p < NPLOT; p++) {
            const double *u = m->unk + ((size_t)plot_vars[p] * lb + b) * zones;
            float *pl = m->plot + ((size_t)p * lb + b) * zones;
            float *cr = m->corner + ((size_t)p * lb + b) * corners;
            for (size_t z = 0; z < zones; z++)
                pl[z] = (float)u[z];
            /* corners: mean of the 2^ndim zones that meet there; zones outside
               the block are guard cells, filled from the same field */
            for (int k = 0; k < cz; k++)
                for (int j = 0; j < cy; j++)
                    for (int i = 0; i < cx; i++) {
                        double s = 0.0;
                        int cnt = 0;
                        for (int dk = k3d ? -1 : 0; dk <= 0; dk++)
                            for (int dj = k2d ? -1 : 0; dj <= 0; dj++)
                                for (int di = -1; di <= 0; di++) {
                                    s += zone_value(plot_vars[p], ox + i + di, oy + j + dj,
                                                    oz + k + dk);
                                    cnt++;
                                }
                        cr[((size_t)k * cy + j) * cx + i] = (float)(s / cnt);
                    }
        }
    }

    snprintf(m->flash_version, sizeof m->flash_version, "flash-io %s", FLASH_IO_VERSION);
    snprintf(m->run_comment, sizeof m->run_comment,
             "h5regress FLASH-IO kernel, %d ranks, %ld blocks", g_size, m->total_blocks);
    mesh_set_step(m, 0);
    return 0;
fail:
    free(all);
    return -1;
}

/* header values of iteration `it` (the time advances, like successive dumps) */
void mesh_set_step(mesh_t *m, int it)
{
    int k2d = m->ndim >= 2, k3d = m->ndim >= 3;
    simparams_d_t *d = &m->sp_d;
    d->total_blocks = (int)m->total_blocks;
    d->nsteps = it;
    d->nxb = m->nxb;
    d->nyb = m->nyb;
    d->nzb = m->nzb;
    d->time = 1.0e-3 * it;
    d->timestep = 1.0e-3;
    d->redshift = 0.0;
    for (int c = 0; c < 2; c++) {
        simparams_f_t *f = &m->sp_f[c];
        f->total_blocks = d->total_blocks;
        f->nsteps = d->nsteps;
        f->nxb = m->nxb + c;
        f->nyb = m->nyb + c * k2d;
        f->nzb = m->nzb + c * k3d;
        f->time = (float)d->time;
        f->timestep = (float)d->timestep;
        f->redshift = (float)d->redshift;
    }
    memset(m->creation_time, 0, sizeof m->creation_time);
    iso_utc_now(m->creation_time, sizeof m->creation_time);
}

void mesh_free(mesh_t *m)
{
    free(m->lrefine); free(m->nodetype); free(m->gid);
    free(m->coord); free(m->bsize); free(m->bnd_box);
    free(m->coord_f); free(m->bsize_f); free(m->bnd_box_f);
    free(m->unk); free(m->plot); free(m->corner);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- plans */

static dset_t *add(plan_t *p, const char *name, enum dtype t, int blocked, int rank,
                   const hsize_t *dims, const void *buf)
{
    dset_t *d = &p->dset[p->ndset++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->type = t;
    d->blocked = blocked;
    d->rank = rank;
    for (int i = 0; i < rank; i++)
        d->dims[i] = dims[i];
    d->buf = buf;
    return d;
}

static void add_string(plan_t *p, const char *name, size_t len, const char *buf)
{
    hsize_t one = 1;
    dset_t *d = add(p, name, DT_STRING, 0, 1, &one, buf);
    d->strsize = len;
}

/*
 * The datasets of one file, in the order FLASH writes them:
 *   header:  "file creation time" (string 40), "FLASH version" (string 20),
 *            "run comment" (string 80), "simulation parameters" (compound:
 *            total blocks, time, timestep, redshift, number of steps, nxb, nyb,
 *            nzb), "number of processors" (int), "unknown names" (string 4,
 *            [nvar][1]);
 *   tree:    "refine level" int [tot], "node type" int [tot], "gid" int
 *            [tot][ngid], "coordinates" [tot][ndim], "block size" [tot][ndim],
 *            "bounding box" [tot][ndim][2] (double in the checkpoint, float in
 *            the plotfiles);
 *   data:    one dataset per variable, named by its 4-character label,
 *            [tot][nzb][nyb][nxb] (corner file: [tot][nzb+1][nyb+1][nxb+1]),
 *            double in the checkpoint, float in the plotfiles.
 */
void plan_build(plan_t *p, const mesh_t *m, int kind, const char *prefix, int it, int api)
{
    static const char *const h5names[FK_N] = {"hdf5_chk_", "hdf5_plt_cnt_", "hdf5_plt_crn_"};
    static const char *const mpinames[FK_N] = {"mpiio_chk_", "mpiio_plt_cnt_", "mpiio_plt_crn_"};
    hsize_t dims[5];
    int nd = m->ndim;
    int k2d = nd >= 2, k3d = nd >= 3;
    int single = kind != FK_CHECKPOINT;
    enum dtype real_t = single ? DT_FLOAT : DT_DOUBLE;
    hsize_t tot = (hsize_t)m->total_blocks;
    long lb = m->local_blocks;

    memset(p, 0, sizeof *p);
    p->kind = kind;
    snprintf(p->path, sizeof p->path, "%s%s%04d", prefix,
             api == API_MPIIO ? mpinames[kind] : h5names[kind], it);

    add_string(p, "file creation time", 40, m->creation_time);
    add_string(p, "FLASH version", 20, m->flash_version);
    add_string(p, "run comment", 80, m->run_comment);
    dims[0] = 1;
    if (single)
        add(p, "simulation parameters", DT_SIMPARAMS_F, 0, 1, dims,
            &m->sp_f[kind == FK_CORNER ? 1 : 0]);
    else
        add(p, "simulation parameters", DT_SIMPARAMS_D, 0, 1, dims, &m->sp_d);
    add(p, "number of processors", DT_INT, 0, 1, dims, &m->nprocs);
    dims[0] = single ? NPLOT : NVAR;
    dims[1] = 1;
    {
        dset_t *d = add(p, "unknown names", DT_STRING, 0, 2, dims,
                        single ? (const void *)m->plot_labels : (const void *)m->labels);
        d->strsize = LABEL_LEN;
    }

    dims[0] = tot;
    add(p, "refine level", DT_INT, 1, 1, dims, m->lrefine);
    add(p, "node type", DT_INT, 1, 1, dims, m->nodetype);
    dims[1] = (hsize_t)m->ngid;
    add(p, "gid", DT_INT, 1, 2, dims, m->gid);
    dims[1] = (hsize_t)nd;
    add(p, "coordinates", real_t, 1, 2, dims, single ? (const void *)m->coord_f : m->coord);
    add(p, "block size", real_t, 1, 2, dims, single ? (const void *)m->bsize_f : m->bsize);
    dims[2] = 2;
    add(p, "bounding box", real_t, 1, 3, dims,
        single ? (const void *)m->bnd_box_f : m->bnd_box);

    size_t zones = (size_t)m->nxb * m->nyb * m->nzb;
    if (kind == FK_CORNER) {
        dims[1] = (hsize_t)(m->nzb + k3d);
        dims[2] = (hsize_t)(m->nyb + k2d);
        dims[3] = (hsize_t)(m->nxb + 1);
    } else {
        dims[1] = (hsize_t)m->nzb;
        dims[2] = (hsize_t)m->nyb;
        dims[3] = (hsize_t)m->nxb;
    }
    size_t per_block = (size_t)(dims[1] * dims[2] * dims[3]);
    int nv = single ? NPLOT : NVAR;
    for (int v = 0; v < nv; v++) {
        char name[LABEL_LEN + 1];
        const void *buf;
        memcpy(name, single ? m->plot_labels[v] : m->labels[v], LABEL_LEN);
        name[LABEL_LEN] = '\0';
        if (kind == FK_CHECKPOINT)
            buf = m->unk + (size_t)v * lb * zones;
        else if (kind == FK_PLOTFILE)
            buf = m->plot + (size_t)v * lb * zones;
        else
            buf = m->corner + (size_t)v * lb * per_block;
        dset_t *d = add(p, name, real_t, 1, 4, dims, buf);
        d->is_unknown = 1;
    }
}

size_t dset_row_bytes(const dset_t *d)
{
    size_t n = dtype_size(d->type, d->strsize);
    for (int i = 1; i < d->rank; i++)
        n *= (size_t)d->dims[i];
    return n;
}

size_t dset_total_bytes(const dset_t *d)
{
    return dset_row_bytes(d) * (size_t)d->dims[0];
}

size_t plan_data_bytes(const plan_t *p)
{
    size_t n = 0;
    for (int i = 0; i < p->ndset; i++)
        n += dset_total_bytes(&p->dset[i]);
    return n;
}
