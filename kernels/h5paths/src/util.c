/* Errors (never swallowed), phase timing, files on storage and out of the
 * page cache, the property lists every path shares. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "h5paths.h"
#include "kernel_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

int g_rank = 0, g_size = 1;
long g_errors = 0;
int g_nkept = 0;
int g_node_leader = 1;
int g_abandoned = 0;
char g_kept[MAX_ERRORS_KEPT][512];

static void keep_error(const char *msg)
{
    if (g_nkept < MAX_ERRORS_KEPT)
        snprintf(g_kept[g_nkept++], sizeof g_kept[0], "%s", msg);
}

/* "h5paths: ERROR <message> (rank R)" on stderr; kept for the JSON summary */
void h5p_error(const char *fmt, ...)
{
    char msg[480], line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s (rank %d)", msg, g_rank);
    g_errors++;
    keep_error(line);
    fprintf(stderr, "h5paths: ERROR %s\n", line);
    fflush(stderr);
}

void h5p_mpi_error(const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    mpi_error_text(rc, msg, sizeof msg);
    h5p_error("%s failed: %s", call, msg);
}

/* the contract's line: h5paths: ERROR verify <phase> rank R index I member M: expected X got Y */
int verify_fail(const char *phase, long long i, const char *member, const char *expected,
                const char *got)
{
    char line[512];
    snprintf(line, sizeof line, "verify %s rank %d index %lld member %s: expected %s got %s",
             phase, g_rank, i, member, expected, got);
    g_errors++;
    keep_error(line);
    fprintf(stderr, "h5paths: ERROR %s\n", line);
    fflush(stderr);
    return -1;
}

int verify_double(const char *phase, long long i, const char *member, double expected,
                  double got)
{
    char e[64], g[64];
    snprintf(e, sizeof e, "%.17g", expected);
    snprintf(g, sizeof g, "%.17g", got);
    return verify_fail(phase, i, member, e, g);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        h5p_error("out of memory (%zu bytes)", n);
    return p;
}

/* did any rank count an error? (collective) */
int any_errors(void)
{
    long total = 0;
    if (MPI_Allreduce(&g_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return 1;
    return total != 0;
}

/* The sum of every rank's errors, collective.  A rank that has failed waits for
 * the others at most AGREE_WAIT_S: after a failed write one rank can be left inside
 * a collective HDF5 call (a metadata cache sync point of H5Dcreate2) that the failed
 * rank never enters, and both would wait until the job's time limit.  Then the run
 * is ended with MPI_Abort, its error lines already printed. */
#define AGREE_WAIT_S 60.0
static long agree_errors(const char *path)
{
    long total = 0;
    int done = 0;
    MPI_Request req;
    if (MPI_Iallreduce(&g_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS)
        return 1;
    for (double t0 = MPI_Wtime(); !done;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 1;
        if (!done && g_errors && MPI_Wtime() - t0 > AGREE_WAIT_S) {
            h5p_error("%s: the other ranks did not reach the close after this rank failed "
                      "(%.0f s: they wait in a collective HDF5 call); ending the run with "
                      "MPI_Abort", path, AGREE_WAIT_S);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return total;
}

/* Close a file this run writes, on every rank, on the success and on the failure
 * path alike (its collective calls must match across ranks).  When any rank has
 * failed the file is NOT closed: after a failed parallel write HDF5's close flushes
 * its metadata cache, the flush fails on one rank and not the other, and the ranks
 * then wait in different collectives (1.14.1, a full file system: one rank in
 * H5AC__run_sync_point's barrier, the other in H5FD__mpio_truncate's broadcast,
 * until the time limit); a close that fails instead leaves a freed file's ID that
 * crashes MPI_Finalize (1.10.8, 1.14.1: segfault in H5F__close_cb).  The file is
 * abandoned (g_abandoned: main exits without MPI_Finalize once the summary is
 * written), emptied by rank 0 to give the space back, and removed at the end.
 * Returns -1 on every rank when any rank failed. */
int close_written_file(hid_t *fid, const char *path)
{
    long total = agree_errors(path);
    herr_t rc = 0;
    if (total) {
        struct statvfs fs;
        /* the failed write's cause, when it is a full file system: HDF5's error stack
         * says only "file write failed" */
        if ((g_rank == 0 || g_errors) && statvfs(path, &fs) == 0 && fs.f_bavail == 0)
            h5p_error("%s: the file system is full after the failed write (statvfs: 0 of "
                      "%llu blocks available): %s", path, (unsigned long long)fs.f_blocks,
                      strerror(ENOSPC));
        if (g_rank == 0 && *fid >= 0 && truncate(path, 0) != 0)
            fprintf(stderr, "h5paths: note: emptying %s after a failure: %s\n", path,
                    strerror(errno));
        if (*fid >= 0)
            g_abandoned = 1;
        *fid = -1;
        return -1;
    }
    if (*fid >= 0) {
        hid_t f = *fid;
        *fid = -1;
        if ((rc = H5Fclose(f)) < 0)
            h5p_error("H5Fclose(%s) failed", path);
    }
    return rc < 0 ? -1 : 0;
}

int close_phase_file(hid_t *fid, const char *path, int written, int *closed)
{
    if (written) {
        *closed = 1;
        return close_written_file(fid, path);
    }
    H5CLOSE(H5Fclose, *fid);
    return 0;
fail:
    return -1;
}

void release_phase_file(hid_t *fid, const char *path, int written, int closed)
{
    if (written && !closed)
        close_written_file(fid, path);
}

long long rank_offset(long long per_rank)
{
    return per_rank * (long long)g_rank;
}

int read_rank_part(hid_t fid, const char *name, hid_t mspace, hid_t dxpl, hsize_t start,
                   hsize_t n, double *dst)
{
    hid_t d = -1, fspace = -1;
    H5CHK(d, H5Dopen2(fid, name, H5P_DEFAULT));
    H5CHK(fspace, H5Dget_space(d));
    H5DO(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &n, NULL));
    H5DO(H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, dst));
    H5CLOSE(H5Sclose, fspace);
    H5CLOSE(H5Dclose, d);
    return 0;
fail:
    H5RELEASE(&fspace, &d);
    return -1;
}

const char *path_join(char *buf, size_t n, const char *prefix, const char *name)
{
    snprintf(buf, n, "%s%s", prefix, name);
    return buf;
}

/* every rank's file PREFIX<name>-rNNNN.h5, listed in the run's files (rank 0 lists and
 * removes them all); NULL on failure */
char **rank_file_names(run_t *r, const char *name)
{
    char tail[96];
    char **names = calloc((size_t)g_size, sizeof(char *));
    for (int k = 0; names && k < g_size; k++) {
        size_t n;
        snprintf(tail, sizeof tail, "%s-r%04d.h5", name, k);
        n = strlen(r->o->prefix) + strlen(tail) + 1;
        if (!(names[k] = malloc(n)) ||
            run_add_file(r, path_join(names[k], n, r->o->prefix, tail)) < 0) {
            free_rank_file_names(names);
            return NULL;
        }
    }
    return names;
}

void free_rank_file_names(char **names)
{
    for (int k = 0; names && k < g_size; k++)
        free(names[k]);
    free(names);
}

void release_rank_files(char ***names, double **buf)
{
    free_rank_file_names(*names);
    free(*buf);
    *names = NULL;
    *buf = NULL;
}

int run_add_file(run_t *r, const char *path)
{
    for (int i = 0; i < r->nfiles; i++)
        if (!strcmp(r->files[i], path))
            return 0;
    if (r->nfiles >= MAX_FILES_LISTED) {
        h5p_error("more than %d files written: raise MAX_FILES_LISTED", MAX_FILES_LISTED);
        return -1;
    }
    if (!(r->files[r->nfiles] = strdup(path))) {
        h5p_error("out of memory");
        return -1;
    }
    r->nfiles++;
    return 0;
}

int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        h5p_error("open(%s) for fsync: %s", path, strerror(errno));
        return -1;
    }
    if (fsync(fd) != 0) {
        h5p_error("fsync(%s): %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* resident pages of a file (mincore of a mapping), -1 if unknown */
static long long resident_pages(int fd, long long size, long long *total)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t npages = (size_t)((size + page - 1) / page);
    unsigned char *vec;
    long long n = 0;
    void *map;
    *total = (long long)npages;
    if (size <= 0)
        return 0;
    map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return -1;
    vec = malloc(npages);
    if (!vec || mincore(map, (size_t)size, vec) != 0)
        n = -1;
    else
        for (size_t i = 0; i < npages; i++)
            n += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)size);
    return n;
}

/* The page cache state of the read phases: "evicted" until a failure, then
 * "not-evicted: <reason>" for the rest of the run. */
static void cache_state(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cache_state(run_t *r, const char *fmt, ...)
{
    va_list ap;
    if (!strncmp(r->read_cache, "not-evicted", 11))
        return;
    va_start(ap, fmt);
    vsnprintf(r->read_cache, sizeof r->read_cache, fmt, ap);
    va_end(ap);
}

/* drop a written (and fsynced) file from the page cache; with check, count
 * with mincore what is still resident */
static int evict_path(run_t *r, const char *path, int check)
{
    struct stat st;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int fd = open(path, O_RDONLY), rc;
    if (fd < 0) {
        h5p_error("open(%s) for eviction: %s", path, strerror(errno));
        return -1;
    }
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc != 0) {
        cache_state(r, "not-evicted: posix_fadvise(DONTNEED) of %s failed: %s", base,
                    strerror(rc));
    } else if (check && fstat(fd, &st) == 0) {
        long long total = 0, res = resident_pages(fd, (long long)st.st_size, &total);
        if (res > 0)
            cache_state(r, "not-evicted: %lld of %lld pages of %s still resident after "
                        "posix_fadvise(DONTNEED)", res, total, base);
        else
            cache_state(r, "evicted");
        snprintf(r->cache_check, sizeof r->cache_check, "%s",
                 res < 0 ? "posix_fadvise only (mincore failed)" : "mincore");
    } else {
        cache_state(r, "evicted");
    }
    close(fd);
    return 0;
}

/* Inside a write phase: the files this rank wrote reach storage. */
int fsync_files(char *const *paths, int n)
{
    for (int i = 0; i < n; i++)
        if (fsync_path(paths[i]) < 0)
            return -1;
    return 0;
}

/* Outside the timed phases (collective): one rank per node drops the files
 * from its node's page cache, so the next read phase reads from storage. */
int evict_files(run_t *r, char *const *paths, int n)
{
    int rc = 0;
    if (r->o->keep_cache) {
        cache_state(r, "not-evicted: --read-cache keep");
        snprintf(r->cache_check, sizeof r->cache_check, "none");
    } else if (g_node_leader) {
        for (int i = 0; i < n && rc == 0; i++)
            rc = evict_path(r, paths[i], i == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return rc;
}

/* ---- phases ---- */

void phase_start(run_t *r)
{
    MPI_Barrier(MPI_COMM_WORLD);
    r->io_mode[0] = '\0';
    r->has_cause = 0;
    mpicount_now(r->mpi_calls_at_start);
    r->t0 = MPI_Wtime();
}

/* end of a timed phase: every rank calls it (collective) */
int phase_stop(run_t *r, const char *name, long long local_bytes, long long objects)
{
    double dt = MPI_Wtime() - r->t0, tmax = 0;
    long long bytes = 0, calls[MPICOUNT_KINDS], others[MPICOUNT_KINDS], rss = 0, rss_max = 0;
    iteration_t *it = &r->it[r->iteration];
    phase_t *p;
    struct rusage usage;
    MPICHK(MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    /* ru_maxrss: KiB on Linux; the process's peak so far (a leak only grows it) */
    if (getrusage(RUSAGE_SELF, &usage) == 0)
        rss = usage.ru_maxrss;
    MPICHK(MPI_Allreduce(&rss, &rss_max, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));
    MPICHK(MPI_Allreduce(&local_bytes, &bytes, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    /* this phase's MPI-IO calls: rank 0's, and the sum of the other ranks' */
    mpicount_now(calls);
    for (int k = 0; k < MPICOUNT_KINDS; k++) {
        calls[k] -= r->mpi_calls_at_start[k];
        others[k] = g_rank == 0 ? 0 : calls[k];
    }
    MPICHK(MPI_Allreduce(MPI_IN_PLACE, others, MPICOUNT_KINDS, MPI_LONG_LONG, MPI_SUM,
                         MPI_COMM_WORLD));
    if (it->nphases >= MAX_PHASES) {
        h5p_error("more than %d phases in one iteration", MAX_PHASES);
        return -1;
    }
    p = &it->phase[it->nphases++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->seconds = tmax;
    p->bytes = bytes;
    p->objects = objects;
    p->peak_rss_kib = rss_max;
    snprintf(p->io_mode, sizeof p->io_mode, "%s", r->io_mode);
    p->no_coll_cause = r->no_coll_cause;
    p->has_cause = r->has_cause;
    for (int k = 0; k < MPICOUNT_KINDS; k++) {
        p->mpi_calls[k][0] = calls[k];   /* rank 0's: only rank 0 writes the summary */
        p->mpi_calls[k][1] = others[k];
    }
    return 0;
fail:
    return -1;
}

/* what parallel HDF5 did with the last transfer (collective or not, and why) */
void note_io_mode(run_t *r, hid_t dxpl)
{
    H5D_mpio_actual_io_mode_t mode;
    uint32_t local = 0, global = 0;
    const char *name = "unknown";
    if (r->o->serial)       /* sec2: no MPI-IO transfer to note */
        return;
    if (H5Pget_mpio_actual_io_mode(dxpl, &mode) >= 0) {
        switch (mode) {
        case H5D_MPIO_NO_COLLECTIVE: name = "no-collective"; break;
        case H5D_MPIO_CHUNK_INDEPENDENT: name = "chunk-independent"; break;
        case H5D_MPIO_CHUNK_COLLECTIVE: name = "chunk-collective"; break;
        case H5D_MPIO_CHUNK_MIXED: name = "chunk-mixed"; break;
        case H5D_MPIO_CONTIGUOUS_COLLECTIVE: name = "contiguous-collective"; break;
        }
        snprintf(r->io_mode, sizeof r->io_mode, "%s", name);
    }
    if (H5Pget_mpio_no_collective_cause(dxpl, &local, &global) >= 0) {
        r->no_coll_cause = global;
        r->has_cause = 1;
    }
}

int check_size(const char *path, long long min_bytes)
{
    struct stat st;
    if (g_rank != 0)
        return 0;
    if (stat(path, &st) != 0) {
        h5p_error("stat(%s): %s", path, strerror(errno));
        return -1;
    }
    if ((long long)st.st_size < min_bytes) {
        h5p_error("file %s is %lld bytes, less than the %lld data bytes written", path,
                  (long long)st.st_size, min_bytes);
        return -1;
    }
    return 0;
}

/* ---- property lists ---- */

hid_t make_fapl(const options_t *o)
{
    hid_t fapl = -1;
    if (o->serial)
        return make_serial_fapl(o);
    H5CHK(fapl, H5Pcreate(H5P_FILE_ACCESS));
    H5DO(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    H5DO(H5Pset_libver_bounds(fapl, o->libver_low, H5F_LIBVER_LATEST));
    if (o->coll_metadata) {
        H5DO(H5Pset_all_coll_metadata_ops(fapl, 1));
        H5DO(H5Pset_coll_metadata_write(fapl, 1));
    }
    return fapl;
fail:
    H5QUIET(H5Pclose, fapl);
    return -1;
}

/* a path this HDF5 lacks: rank 0 says so, the kernel exits 2 */
int unavailable_before_1_14(run_t *r)
{
    if (g_rank == 0)
        fprintf(stderr, "h5paths: ERROR %s: not available in HDF5 %s\n",
                r->o->path, H5PATHS_HEADER_VERSION);
    return EXIT_UNAVAILABLE;
}
int unavailable_iterate(run_t *r) { (void)r; return -1; }
void unavailable_finish(run_t *r) { (void)r; }

/* one process per file: the default (sec2) driver, the row's format bounds */
hid_t make_serial_fapl(const options_t *o)
{
    hid_t fapl = -1;
    H5CHK(fapl, H5Pcreate(H5P_FILE_ACCESS));
    H5DO(H5Pset_libver_bounds(fapl, o->libver_low, H5F_LIBVER_LATEST));
    return fapl;
fail:
    H5QUIET(H5Pclose, fapl);
    return -1;
}

hid_t make_dxpl(const options_t *o)
{
    hid_t dxpl = -1;
    H5CHK(dxpl, H5Pcreate(H5P_DATASET_XFER));
    if (!o->serial)
        H5DO(H5Pset_dxpl_mpio(dxpl, o->collective ? H5FD_MPIO_COLLECTIVE
                                                  : H5FD_MPIO_INDEPENDENT));
#ifdef H5PATHS_HAVE_MODIFY_WRITE_BUF
    if (o->modify_write_buf)
        H5DO(H5Pset_modify_write_buf(dxpl, 1));
#endif
    return dxpl;
fail:
    H5QUIET(H5Pclose, dxpl);
    return -1;
}
