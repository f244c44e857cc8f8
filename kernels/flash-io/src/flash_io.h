/*
 * flash-io: the h5regress FLASH I/O kernel.
 *
 * Reproduces the parallel output of the FLASH code (PARAMESH blocks, one
 * dataset per unknown, tree metadata per block) as described by the FLASH
 * I/O benchmark: a double-precision checkpoint, a single-precision plotfile
 * with cell-centred data and a single-precision plotfile with the same
 * variables interpolated to the block corners.  Written from the published
 * layout; see README.md for the file format and the options.
 */
#ifndef FLASH_IO_H
#define FLASH_IO_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <hdf5.h>

#include "kernel_common.h"

#ifndef H5_HAVE_PARALLEL
#error "flash-io needs a parallel HDF5 (H5_HAVE_PARALLEL is not defined)"
#endif

#define FLASH_IO_VERSION "1.0.0"

/* FLASH-IO's problem: 11 hydro variables + 13 abundances, 4 plot variables. */
#define NVAR 24
#define NPLOT 4
#define LABEL_LEN 4              /* FLASH variable labels are 4 characters */
#define MAX_GID (2 * 3 + 1 + 8)  /* 6 neighbours + parent + 8 children in 3-d */
#define DEFAULT_MAXBLOCKS 100    /* the original: lnblocks = 0.8*maxblocks + rank%3 */

enum filekind { FK_CHECKPOINT = 0, FK_PLOTFILE = 1, FK_CORNER = 2, FK_N = 3 };

/* element types of the datasets; the same list drives HDF5 and MPI-IO */
enum dtype {
    DT_INT,        /* H5T_NATIVE_INT, 4 bytes */
    DT_FLOAT,      /* H5T_NATIVE_FLOAT */
    DT_DOUBLE,     /* H5T_NATIVE_DOUBLE */
    DT_STRING,     /* fixed-length C string of strlen bytes */
    DT_SIMPARAMS_D,/* "simulation parameters" compound, double time/dt (checkpoint) */
    DT_SIMPARAMS_F /* the same with float time/dt (plotfiles) */
};

/* "simulation parameters": the original's compound (FLASH 2 benchmark), plus redshift */
typedef struct {
    int total_blocks;
    int nsteps;
    int nxb, nyb, nzb;
    double time;
    double timestep;
    double redshift;
} simparams_d_t;

typedef struct {
    int total_blocks;
    int nsteps;
    int nxb, nyb, nzb;
    float time;
    float timestep;
    float redshift;
} simparams_f_t;

typedef struct {
    /* api and transfer */
    int api;                 /* API_HDF5 | API_MPIIO */
    int collective;          /* 1: collective transfers, 0: independent (the original's default) */
    int chunked;             /* 1: chunked unknowns, 0: contiguous (default) */
    long chunk_blocks;       /* blocks per chunk (the original's CHUNK build: 10) */
    long long alignment;     /* H5Pset_alignment alignment, 1 = none */
    long long align_threshold;
    int coll_metadata;       /* H5Pset_all_coll_metadata_ops + H5Pset_coll_metadata_write */
    /* problem */
    long blocks_per_rank;    /* <= 0: the original's 0.8*maxblocks + rank%3 */
    int nxb, nyb, nzb;
    int files[FK_N];         /* which files to write */
    int iterations;
    /* hygiene and output */
    int fsync;               /* fsync every file before the clock stops */
    int keep;                /* keep the files (default: remove them after the run) */
    const char *json_path;
    const char *prefix;
} options_t;

/* one dataset of a file, as FLASH writes it */
typedef struct {
    char name[48];
    enum dtype type;
    size_t strsize;          /* DT_STRING only */
    int blocked;             /* 1: dims[0] = total blocks, each rank writes its rows;
                                0: header, written whole by rank 0 */
    int is_unknown;          /* an unknown (a variable): chunked with --chunked */
    int rank;
    hsize_t dims[5];
    const void *buf;         /* blocked: local rows, contiguous; header: the whole thing */
} dset_t;

typedef struct {
    int kind;
    char path[4096];
    int ndset;
    dset_t dset[64];
} plan_t;

/* the mesh: per-rank blocks and their metadata, plus the data of the files */
typedef struct {
    int ndim, ngid;
    int nxb, nyb, nzb;
    long local_blocks, total_blocks, global_offset;
    long min_blocks, max_blocks;
    int nbx, nby, nbz;       /* the blocks tile [0,1]^ndim on an nbx x nby x nbz grid */
    int *lrefine, *nodetype, *gid;
    double *coord, *bsize, *bnd_box;
    float *coord_f, *bsize_f, *bnd_box_f;
    double *unk;             /* [NVAR][local_blocks][nzb][nyb][nxb] */
    float *plot;             /* [NPLOT][local_blocks][nzb][nyb][nxb] */
    float *corner;           /* [NPLOT][local_blocks][nzb+k3d][nyb+k2d][nxb+1] */
    char labels[NVAR][LABEL_LEN];
    char plot_labels[NPLOT][LABEL_LEN];
    int plot_index[NPLOT];
    simparams_d_t sp_d;
    simparams_f_t sp_f[2];   /* plotfile, corner plotfile (zones per block differ) */
    char creation_time[40];
    char flash_version[20];
    char run_comment[80];
    int nprocs;
} mesh_t;

/* timings of one file (each rank's; reduced to the max for the report) */
typedef struct {
    double open, write, close, fsync, total;
} ftime_t;

/* ---- util.c ---- */
extern int g_rank, g_size;
extern long g_errors;        /* errors on this rank (HDF5 stack, MPI, system) */
void fio_error(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fio_mpi_error(const char *file, int line, const char *call, int rc);
void fio_install_error_handlers(void);
long long meminfo_total_bytes(void);
void iso_utc_now(char *buf, size_t n);
size_t dtype_size(enum dtype t, size_t strsize);

#define FAIL(...) do { fio_error(__FILE__, __LINE__, __VA_ARGS__); goto fail; } while (0)
/* HDF5 calls: a negative return is an error (the handler has printed the stack) */
#define H5CHK(var, call) do { if (((var) = (call)) < 0) { \
    fio_error(__FILE__, __LINE__, "HDF5 call failed: %s", #call); goto fail; } } while (0)
#define H5DO(call) do { if ((call) < 0) { \
    fio_error(__FILE__, __LINE__, "HDF5 call failed: %s", #call); goto fail; } } while (0)
#define MPICHK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { \
    fio_mpi_error(__FILE__, __LINE__, #call, rc_); goto fail; } } while (0)

/* ---- mesh.c ---- */
int mesh_init(mesh_t *m, const options_t *o);
void mesh_set_step(mesh_t *m, int iteration);
void mesh_free(mesh_t *m);
void plan_build(plan_t *p, const mesh_t *m, int kind, const char *prefix, int iteration,
                int api);
size_t dset_row_bytes(const dset_t *d);
size_t dset_total_bytes(const dset_t *d);
size_t plan_data_bytes(const plan_t *p);
const char *filekind_name(int kind);

/* ---- write_hdf5.c / write_mpiio.c ---- */
int write_hdf5(const plan_t *p, const mesh_t *m, const options_t *o, ftime_t *t);
int write_mpiio(const plan_t *p, const mesh_t *m, const options_t *o, ftime_t *t);
int fsync_path(const char *path);

#endif
