/*
 * h5paths: the h5regress kernel of HDF5 code paths where regressions happened.
 *
 * One run exercises one path (--path): compound datasets read or written
 * through a memory type that differs from the file type, atomic type
 * conversion, metadata-heavy patterns (many datasets, attributes, open/close),
 * chunked and filtered datasets, virtual datasets, external links through the
 * external file cache, multi-dataset I/O.  Every phase is timed between
 * barriers (maximum over ranks) and everything read is verified against what
 * was written.  See README.md for the options, the phases and the JSON summary.
 */
#ifndef H5PATHS_H
#define H5PATHS_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <hdf5.h>

#include "kernel_common.h"

#ifndef H5_HAVE_PARALLEL
#error "h5paths needs a parallel HDF5 (H5_HAVE_PARALLEL is not defined)"
#endif

/* 1.1.1: a full disk ends with its cause; 1.2.0: the loaded libhdf5 named (dladdr);
 * 1.3.0: both (they were made side by side from 1.1.0); 1.4.0: strided-chunks, vds-open,
 * flush-datasets, append; 1.5.0: point-selections, multi-chunk, storage-kinds, vlen-strings;
 * 1.6.0: each phase's MPI-IO calls counted (mpi_file_calls); 1.7.0: --transfer serial of
 * the metadata paths, chunk-cache; 1.8.0: --transfer serial of the compound and convert
 * paths; 1.9.0: the VOL connector the files went through (vol_connector); 1.10.0: the
 * serial rows' file driver measured, not assumed (serial_driver, HDF5_DRIVER),
 * strided-contiguous, and the h5r_vector driver plugin (vfd/vector_vfd.c); 1.11.0: each
 * phase's peak resident memory (peak_rss_kib), vlen-reopen; 1.11.1: vlen-reopen builds
 * against the develop snapshots of 2019 that say 1.13.0 but lack H5Treclaim */
#define H5PATHS_VERSION "1.11.1"
/* the headers' version (H5_VERS_STR is newer than 1.10) */
#define H5PATHS_STR2(x) #x
#define H5PATHS_STR(x) H5PATHS_STR2(x)
#define H5PATHS_HEADER_VERSION \
    H5PATHS_STR(H5_VERS_MAJOR) "." H5PATHS_STR(H5_VERS_MINOR) "." H5PATHS_STR(H5_VERS_RELEASE)
#define MAX_PHASES 4
#define MAX_FILES_LISTED 4096
#define MAX_ERRORS_KEPT 32
#define EXIT_UNAVAILABLE 2   /* usage error, path not in this build, no MPI-IO twin */

typedef struct {
    const char *path;        /* --path NAME (the path table's name) */
    int api;                 /* API_HDF5 | API_MPIIO */
    int collective;          /* --transfer collective (1) | independent (0) */
    int serial;              /* --transfer serial: a file per rank, sec2 (metadata and data paths) */
    int chunked;             /* --layout chunked (1) | contiguous (0) */
    long long chunk_elements;
    int modify_write_buf;    /* asked for */
    int modify_write_buf_applied; /* H5Pset_modify_write_buf called (the build has it) */
    int coll_metadata;
    const char *libver;      /* name as given */
    H5F_libver_t libver_low;
    long long elements;      /* per rank per dataset (data paths) */
    long long objects;       /* datasets / attributes / files (metadata paths) */
    long long efc_size;      /* efc: H5Pset_elink_file_cache_size (-1: = objects) */
    int iterations;
    int read_repeats;        /* --read-repeats: reads of the dataset in one read phase */
    const char *json_path;
    int keep;
    int keep_cache;          /* --read-cache keep: no eviction before the reads */
    const char *prefix;
    /* set by the path's prepare(): recorded in params */
    long long record_bytes_file;
    long long record_bytes_memory;
} options_t;

/* MPI-IO calls counted (mpicount.c) */
enum { MPICOUNT_READ_INDEPENDENT, MPICOUNT_READ_COLLECTIVE, MPICOUNT_WRITE_INDEPENDENT,
       MPICOUNT_WRITE_COLLECTIVE, MPICOUNT_KINDS };

typedef struct {
    char name[24];
    double seconds;          /* max over ranks, barrier to barrier */
    long long bytes;         /* user data bytes moved, memory-type bytes, all ranks */
    long long objects;       /* objects touched */
    long long peak_rss_kib;  /* the largest rank's peak resident memory at the phase's end */
    char io_mode[32];        /* H5Pget_mpio_actual_io_mode of the last transfer, "" if none */
    unsigned no_coll_cause;  /* H5Pget_mpio_no_collective_cause, global, of the last transfer */
    int has_cause;
    /* MPI-IO calls of the phase, per kind: [0] rank 0's, [1] the other ranks' sum */
    long long mpi_calls[MPICOUNT_KINDS][2];
} phase_t;

typedef struct {
    int nphases;
    phase_t phase[MAX_PHASES];
} iteration_t;

typedef struct {
    options_t *o;
    int iteration;           /* the current one */
    iteration_t *it;         /* [o->iterations] */
    double t0;               /* start of the current phase */
    /* files written (full paths), listed in the JSON and removed unless --keep */
    int nfiles;
    char **files;
    /* page cache state of the read phases */
    char read_cache[200];    /* "evicted" | "not-evicted: <reason>" | "" (nothing read) */
    char cache_check[48];    /* how eviction was checked: "mincore" | ... */
    char extra_json[256];    /* a path's own top-level JSON members ("key": value, ...) */
    /* the last transfer's MPI-IO mode, for the next phase record */
    char io_mode[32];
    unsigned no_coll_cause;
    int has_cause;
    long long mpi_calls_at_start[MPICOUNT_KINDS];   /* this rank's, at phase_start */
} run_t;

/* one path of the kernel */
typedef struct {
    const char *name;
    const char *family;          /* compound, convert, metadata, chunked, vds, efc, multi */
    int has_mpiio_twin;
    long long default_elements;
    long long default_objects;
    int (*prepare)(run_t *r);    /* allocate, set record sizes; before any timing */
    int (*iterate)(run_t *r);    /* one iteration: its timed phases */
    void (*finish)(run_t *r);    /* free */
} path_t;

/* ---- util.c ---- */
extern int g_rank, g_size;
extern long g_errors;
extern int g_nkept;
extern int g_abandoned;        /* a file left open after a failed write: no MPI_Finalize */
extern int g_node_leader;      /* lowest rank of its node: evicts the page cache */
extern char g_kept[MAX_ERRORS_KEPT][512];
void h5p_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void h5p_mpi_error(const char *call, int rc);
const char *path_join(char *buf, size_t n, const char *prefix, const char *name);
int run_add_file(run_t *r, const char *path);
/* every rank's file PREFIX<name>-rNNNN.h5 (listed in the run's files), NULL on failure */
char **rank_file_names(run_t *r, const char *name);
void free_rank_file_names(char **names);
/* a path's finish(): its rank files' names and its buffer freed and set to NULL */
void release_rank_files(char ***names, double **buf);
int fsync_path(const char *path);
int fsync_files(char *const *paths, int n);
int evict_files(run_t *r, char *const *paths, int n);
void phase_start(run_t *r);
int phase_stop(run_t *r, const char *name, long long local_bytes, long long objects);
void note_io_mode(run_t *r, hid_t dxpl);
int check_size(const char *path, long long min_bytes);
hid_t make_fapl(const options_t *o);
hid_t make_serial_fapl(const options_t *o);
/* metadata.c: the metadata paths --transfer serial runs (a file per rank, sec2) */
int metadata_serial(const path_t *p);
int unavailable_before_1_14(run_t *r);   /* prepare() of a path an older HDF5 lacks */
int unavailable_iterate(run_t *r);
void unavailable_finish(run_t *r);
hid_t make_dxpl(const options_t *o);
int any_errors(void);
int close_written_file(hid_t *fid, const char *path);
/* the file of a phase that wrote it (close_written_file, *closed set first: the
 * failure path must not close it again) or only read it (H5Fclose, checked);
 * -1 on failure */
int close_phase_file(hid_t *fid, const char *path, int written, int *closed);
/* on the failure path: the file a phase wrote and did not close yet is closed as
 * every rank on the success path does (close_written_file agrees collectively) */
void release_phase_file(hid_t *fid, const char *path, int written, int closed);
void *xmalloc(size_t n);
long long rank_offset(long long per_rank);
/* open dataset `name` of fid and read this rank's n doubles from start into dst
 * (through mspace, n elements); 0, or -1 with the error counted */
int read_rank_part(hid_t fid, const char *name, hid_t mspace, hid_t dxpl, hsize_t start,
                   hsize_t n, double *dst);
int verify_fail(const char *phase, long long i, const char *member, const char *expected,
                const char *got);
/* verify_fail with the values as %.17g */
int verify_double(const char *phase, long long i, const char *member, double expected,
                  double got);

/* the call (its text) failed: count the error, say where, and go to the caller's fail: */
#define H5FAILED(what) do { \
    h5p_error("%s failed (%s:%d)", what, __FILE__, __LINE__); goto fail; } while (0)
#define H5CHK(var, call) do { if (((var) = (call)) < 0) H5FAILED(#call); } while (0)
#define H5DO(call) do { if ((call) < 0) H5FAILED(#call); } while (0)
#define MPICHK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { \
    h5p_mpi_error(#call, rc_); goto fail; } } while (0)
#define H5CLOSE(fn, id) do { if ((id) >= 0) { hid_t x_ = (id); (id) = -1; \
    if (fn(x_) < 0) H5FAILED(#fn); } } while (0)
/* release on the failure path: the error is already counted */
#define H5QUIET(fn, id) do { if ((id) >= 0) { H5E_BEGIN_TRY { fn(id); } H5E_END_TRY; \
    (id) = -1; } } while (0)
/* H5RELEASE and H5CLOSE_ALL: kernel_common.h */

/* ---- mpicount.c ---- */
/* this process's MPI-IO calls count (HDF5's calls reach the kernel's wrappers) */
int mpicount_active(void);
void mpicount_now(long long out[MPICOUNT_KINDS]);

/* ---- mpiio.c: the MPI-IO twins ---- */
enum mpiio_mode { MIO_READ, MIO_CREATE, MIO_UPDATE };
/* open (MIO_CREATE truncates), optional file view (filetype, at byte disp), one
 * transfer of count memtype elements (at disp without a view), close */
int mpiio_transfer(const char *path, enum mpiio_mode mode, MPI_Offset disp,
                   MPI_Datatype filetype, void *buf, long long count, MPI_Datatype memtype,
                   int coll);

/* ---- the path families: X(name) for each table name_paths[] (compound.c,
 * convert.c, ..., selections.c: selection_paths), in the order --help lists them;
 * a new family is one X here and its file */
#define PATH_FAMILIES(X) X(compound) X(convert) X(metadata) X(chunked) X(vds) X(vdsopen) \
    X(efc) X(multi) X(flush) X(append) X(selection) X(serial) X(chunkcache) \
    X(reopen)
#define DECLARE_PATH_FAMILY(name) extern const path_t name##_paths[];
PATH_FAMILIES(DECLARE_PATH_FAMILY)

#endif
