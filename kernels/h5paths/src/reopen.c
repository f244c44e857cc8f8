/* vlen-reopen (HDF5 issue 1256; regressions/vlen-conversion-path-leak-1256.yaml):
 * --objects cycles in one process, each H5Fopen of this rank's file, H5Dopen2 of a
 * dataset of --elements variable-length strings, H5Dread into C strings (HDF5
 * converts them), the strings checked and reclaimed, H5Dclose, H5Fclose: a program
 * that opens its files again and again, as h5py users' loops do.  From develop
 * a8ee8597 (hdf5_1_12 98a27f1f, released in 1.12.1) a variable-length file type
 * holds a reference to its file's VOL object, so no cycle finds the conversion path
 * the cycle before it made: HDF5's path table keeps one more path (two datatype
 * copies and the VOL object they hold) per cycle until the process ends, until
 * f86fe61c (1.14.4) removed a file's paths at its close.  Each rank works serially
 * (sec2, or HDF5_DRIVER) in PREFIXvlen-reopen-rNNNN.h5.  Phases: write (file
 * create, the dataset written, close, fsync; objects 1), reopen_read (the cycles;
 * objects: the cycles every rank read back equal, the least over the ranks).  The
 * leak shows in peak_rss_kib, which every phase records (util.c). */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef H5PATHS_HAVE_TRECLAIM   /* CMakeLists.txt: asked of the headers */
#define RECLAIM_VLEN(type, space, data) H5Treclaim(type, space, H5P_DEFAULT, data)
#else
#define RECLAIM_VLEN(type, space, data) H5Dvlen_reclaim(type, space, H5P_DEFAULT, data)
#endif

#define MAX_STRING 40

static char **names;         /* every rank's file (rank 0 lists and removes them all) */
static char *file_name;      /* this rank's */
static char **strs;          /* [elements] the strings written, each MAX_STRING + 1 */
static char **got;           /* [elements] the strings read (HDF5 allocates them) */

static int prepare(run_t *r)
{
    options_t *o = r->o;
    if (!(strs = calloc((size_t)o->elements, sizeof(char *))) ||
        !(got = calloc((size_t)o->elements, sizeof(char *))) ||
        !(names = rank_file_names(r, "vlen-reopen")))
        return -1;
    for (long long i = 0; i < o->elements; i++)
        if (!(strs[i] = xmalloc(MAX_STRING + 1)))
            return -1;
    file_name = names[g_rank];
    o->record_bytes_file = o->record_bytes_memory = (long long)sizeof(char *);
    return 0;
}

static void finish(run_t *r)
{
    for (long long i = 0; strs && i < r->o->elements; i++)
        free(strs[i]);
    free(strs);
    free(got);
    free_rank_file_names(names);
    strs = got = names = NULL;
}

/* string i of a pass: 1-MAX_STRING letters */
static void fill(long long n, int salt)
{
    for (long long i = 0; i < n; i++) {
        size_t len = 1 + (size_t)(i * 7919 % MAX_STRING);
        for (size_t c = 0; c < len; c++)
            strs[i][c] = (char)('a' + (i + (long long)c + salt) % 26);
        strs[i][len] = '\0';
    }
}

static hid_t string_type(void)
{
    hid_t t = -1;
    H5CHK(t, H5Tcopy(H5T_C_S1));
    H5DO(H5Tset_size(t, H5T_VARIABLE));
    return t;
fail:
    H5QUIET(H5Tclose, t);
    return -1;
}

static int write_file(const options_t *o, int salt)
{
    hid_t fapl = -1, fid = -1, space = -1, type = -1, d = -1;
    hsize_t n = (hsize_t)o->elements;
    fill(o->elements, salt);
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(type, string_type());
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    H5CHK(fid, H5Fcreate(file_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5CHK(d, H5Dcreate2(fid, "strings", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5DO(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs));
    H5CLOSE(H5Dclose, d);
    H5CLOSE(H5Fclose, fid);
    H5CLOSE_ALL(&space, &type, &fapl);
    return 0;
fail:
    H5RELEASE(&d, &fid, &space, &type, &fapl);
    return -1;
}

/* one cycle: open, read, check, reclaim, close */
static int reopen_read(const options_t *o, hid_t fapl, hid_t type, hid_t space)
{
    hid_t fid = -1, d = -1;
    int read = 0, rc = -1;
    H5CHK(fid, H5Fopen(file_name, H5F_ACC_RDONLY, fapl));
    H5CHK(d, H5Dopen2(fid, "strings", H5P_DEFAULT));
    H5DO(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, got));
    read = 1;
    for (long long i = 0; i < o->elements; i++)
        if (!got[i] || strcmp(got[i], strs[i])) {
            verify_fail("reopen_read", i, "string", strs[i], got[i] ? got[i] : "(null)");
            goto fail;
        }
    rc = 0;
fail:
    if (read && RECLAIM_VLEN(type, space, got) < 0 && rc == 0) {
        h5p_error("reclaiming the strings read from %s failed", file_name);
        rc = -1;
    }
    H5QUIET(H5Dclose, d);
    if (fid >= 0 && H5Fclose(fid) < 0 && rc == 0) {
        h5p_error("H5Fclose of %s failed", file_name);
        rc = -1;
    }
    return rc;
}

static long long reopen_cycles(const options_t *o)
{
    hid_t fapl = -1, type = -1, space = -1;
    hsize_t n = (hsize_t)o->elements;
    long long done = 0;
    H5CHK(fapl, make_serial_fapl(o));
    H5CHK(type, string_type());
    H5CHK(space, H5Screate_simple(1, &n, NULL));
    for (long long k = 0; k < o->objects; k++) {
        if (reopen_read(o, fapl, type, space) < 0)
            break;
        done++;
    }
    H5CLOSE_ALL(&space, &type, &fapl);
    return done;
fail:
    H5RELEASE(&space, &type, &fapl);
    return -1;
}

static int iterate(run_t *r)
{
    const options_t *o = r->o;
    char *files[1] = {file_name};
    long long done, least = 0;
    phase_start(r);
    if (write_file(o, r->iteration % 8) == 0)
        fsync_files(files, 1);
    if (phase_stop(r, "write", o->elements * (long long)sizeof(char *), 1) < 0 ||
        any_errors())
        return -1;
    if (evict_files(r, names, g_size) < 0)   /* the node leader: every rank's */
        return -1;
    phase_start(r);
    done = reopen_cycles(o);
    MPICHK(MPI_Allreduce(&done, &least, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
    if (phase_stop(r, "reopen_read", 0, least < 0 ? 0 : least) < 0)
        return -1;
    return any_errors() ? -1 : 0;
fail:
    return -1;
}

const path_t reopen_paths[] = {
    {"vlen-reopen", "serial", 0, 64, 2000, prepare, iterate, finish}, {0}};
