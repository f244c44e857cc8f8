/*
 * h5paths [options] PREFIX
 *
 * Driver: options, the path table, the iterations, the text report, the JSON
 * summary, the clean-up of the files and the exit status (0 ok, 1 failed,
 * 2 usage error or path not available in this build / no MPI-IO twin).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* dladdr and Dl_info (dlfcn.h) */
#endif
#include "h5paths.h"
#include "kernel_common.h"

/* H5FDopen and H5FD_t moved from H5FDpublic.h to H5FDdevelop.h during 1.13.0's
 * development: a 2020 develop commit says 1.13.0 and has no H5FDdevelop.h, so CMake
 * looks for the header rather than trusting the version */
#ifdef H5PATHS_HAVE_H5FDDEVELOP
#include <H5FDdevelop.h>
#endif

#include <dlfcn.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_FAMILY_TABLE(name) name##_paths,
static const path_t *const families[] = {PATH_FAMILIES(PATH_FAMILY_TABLE)};
#define NFAMILIES (sizeof families / sizeof families[0])

static const path_t *find_path(const char *name)
{
    for (size_t f = 0; f < NFAMILIES; f++)
        for (const path_t *p = families[f]; p->name; p++)
            if (!strcmp(p->name, name))
                return p;
    return NULL;
}

static void list_paths(FILE *f)
{
    for (size_t k = 0; k < NFAMILIES; k++)
        for (const path_t *p = families[k]; p->name; p++)
            fprintf(f, " %s", p->name);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: h5paths [options] PREFIX\n"
"\n"
"Exercises one HDF5 code path where regressions happened, with parallel HDF5\n"
"(or its MPI-IO twin), timing each phase (max over ranks) and verifying every\n"
"read. Writes PREFIX<path>*.h5 (removed at the end unless --keep).\n"
"\n"
"options (defaults in brackets):\n"
"  --path NAME              the code path [compound-subset]:\n"
"                          ");
    list_paths(f);
    fprintf(f, "\n"
"  --api hdf5|mpiio         HDF5, or the same bytes with MPI-IO (data paths) [hdf5]\n"
"  --transfer collective|independent   H5FD_MPIO_* / MPI_File_*_at_all vs _at [collective]\n"
"  --transfer serial        many-datasets, attributes, open-close, compound-*,\n"
"                           convert-*: a file per rank, the sec2 driver, no MPI-IO\n"
"                           (no --coll-metadata, no --api mpiio);\n"
"                           storage-kinds, vlen-strings, vlen-reopen, chunk-cache\n"
"                           (serial anyway)\n"
"  --layout contiguous|chunked         compound-* and convert-* datasets [contiguous]\n"
"  --chunk-elements N       elements per chunk (chunked layouts) [262144]\n"
"  --modify-write-buf       H5Pset_modify_write_buf(dxpl, 1) where the build has it\n"
"  --coll-metadata          H5Pset_coll_metadata_write + H5Pset_all_coll_metadata_ops\n"
"  --libver earliest|v18|v110|v112|v114|latest   low bound of H5Pset_libver_bounds\n"
"                           (high: H5F_LIBVER_LATEST) [earliest]\n"
"  --elements N             records/values per rank per dataset [per path, see README]\n"
"  --objects N              datasets/attributes/files of the metadata paths [per path]\n"
"  --efc-size N             efc: H5Pset_elink_file_cache_size, 0 = no cache [objects]\n"
"  --iterations N           [3]\n"
"  --json FILE              write the JSON summary (rank 0)\n"
"  --keep                   keep the data files\n"
"  --read-cache evict|keep  drop the written files from the page cache before the\n"
"                           reads (cold reads), or not (warm: CPU-bound paths) [evict]\n"
"  --read-repeats N         compound-*/convert-* with --read-cache keep: the read phase\n"
"                           reads the dataset N times (the last read verified), so a\n"
"                           conversion-bound read lasts long enough to time [1]\n"
"  --version, -h/--help\n"
"\n"
"Exit status: 0 ok, 1 failed (HDF5/MPI/system error or a verification mismatch),\n"
"2 usage error, path not available in this HDF5, or no MPI-IO twin.\n");
}

static int parse_count(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_libver(const char *s, H5F_libver_t *out)
{
    if (!strcmp(s, "earliest")) *out = H5F_LIBVER_EARLIEST;
    else if (!strcmp(s, "v18")) *out = H5F_LIBVER_V18;
    else if (!strcmp(s, "v110")) *out = H5F_LIBVER_V110;
#if H5_VERSION_GE(1, 12, 0)
    else if (!strcmp(s, "v112")) *out = H5F_LIBVER_V112;
#endif
#if H5_VERSION_GE(1, 13, 0)
    else if (!strcmp(s, "v114")) *out = H5F_LIBVER_V114;
#endif
    else if (!strcmp(s, "latest")) *out = H5F_LIBVER_LATEST;
    else return -1;
    return 0;
}

/* 0: run, 1: done (help/version), 2: usage error (message printed by rank 0) */
static int parse_options(int argc, char **argv, options_t *o)
{
    enum { O_PATH = 256, O_API, O_TRANSFER, O_LAYOUT, O_CHUNK, O_MWB, O_CMETA, O_LIBVER,
           O_ELEM, O_OBJ, O_EFC, O_ITER, O_JSON, O_KEEP, O_RCACHE, O_RREP, O_VERSION };
    static const struct option longopts[] = {
        {"path", required_argument, 0, O_PATH},
        {"api", required_argument, 0, O_API},
        {"transfer", required_argument, 0, O_TRANSFER},
        {"layout", required_argument, 0, O_LAYOUT},
        {"chunk-elements", required_argument, 0, O_CHUNK},
        {"modify-write-buf", no_argument, 0, O_MWB},
        {"coll-metadata", no_argument, 0, O_CMETA},
        {"libver", required_argument, 0, O_LIBVER},
        {"elements", required_argument, 0, O_ELEM},
        {"objects", required_argument, 0, O_OBJ},
        {"efc-size", required_argument, 0, O_EFC},
        {"iterations", required_argument, 0, O_ITER},
        {"read-repeats", required_argument, 0, O_RREP},
        {"json", required_argument, 0, O_JSON},
        {"keep", no_argument, 0, O_KEEP},
        {"read-cache", required_argument, 0, O_RCACHE},
        HELP_VERSION_LONGOPTS(O_VERSION)};
    char bad[256] = "";
    long long v;
    int c;
    FILE *err = g_rank == 0 ? stderr : NULL;

    memset(o, 0, sizeof *o);
    o->path = "compound-subset";
    o->api = API_HDF5;
    o->collective = 1;
    o->chunk_elements = 262144;
    o->libver = "earliest";
    o->libver_low = H5F_LIBVER_EARLIEST;
    o->elements = -1;
    o->objects = -1;
    o->efc_size = -1;
    o->iterations = 3;
    o->read_repeats = 1;
    opterr = 0;
    optind = 1;
    while (!bad[0] && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (help_or_version(c, O_VERSION, g_rank, usage, "h5paths", H5PATHS_VERSION))
            return 1;
        switch (c) {
        case O_PATH:
            o->path = optarg;
            if (!find_path(optarg))
                snprintf(bad, sizeof bad, "unknown --path %s", optarg);
            break;
        case O_API:
            if (parse_api(optarg, &o->api)) snprintf(bad, sizeof bad, "%s", API_USAGE);
            break;
        case O_TRANSFER:
            if (!strcmp(optarg, "collective")) o->collective = 1;
            else if (!strcmp(optarg, "independent")) o->collective = 0;
            else if (!strcmp(optarg, "serial")) o->collective = 0, o->serial = 1;
            else snprintf(bad, sizeof bad,
                          "--transfer must be collective, independent or serial");
            break;
        case O_LAYOUT:
            if (!strcmp(optarg, "contiguous")) o->chunked = 0;
            else if (!strcmp(optarg, "chunked")) o->chunked = 1;
            else snprintf(bad, sizeof bad, "--layout must be contiguous or chunked");
            break;
        case O_CHUNK:
            if (parse_count(optarg, 1, 1LL << 32, &o->chunk_elements))
                snprintf(bad, sizeof bad, "--chunk-elements needs an integer in 1..2^32");
            break;
        case O_MWB: o->modify_write_buf = 1; break;
        case O_CMETA: o->coll_metadata = 1; break;
        case O_LIBVER:
            o->libver = optarg;
            if (parse_libver(optarg, &o->libver_low))
                snprintf(bad, sizeof bad, "--libver %s: not one of earliest|v18|v110|v112|v114|"
                         "latest, or not available in HDF5 %s", optarg, H5PATHS_HEADER_VERSION);
            break;
        case O_ELEM:
            if (parse_count(optarg, 1, 1LL << 40, &o->elements))
                snprintf(bad, sizeof bad, "--elements needs a positive integer");
            break;
        case O_OBJ:
            if (parse_count(optarg, 1, 100000000, &o->objects))
                snprintf(bad, sizeof bad, "--objects needs an integer in 1..1e8");
            break;
        case O_EFC:
            if (parse_count(optarg, 0, 100000000, &o->efc_size))
                snprintf(bad, sizeof bad, "--efc-size needs an integer in 0..1e8");
            break;
        case O_ITER:
            if (parse_count(optarg, 1, 9999, &v))
                snprintf(bad, sizeof bad, "--iterations needs an integer in 1..9999");
            else o->iterations = (int)v;
            break;
        case O_RREP:
            if (parse_count(optarg, 1, 9999, &v))
                snprintf(bad, sizeof bad, "--read-repeats needs an integer in 1..9999");
            else o->read_repeats = (int)v;
            break;
        case O_JSON: o->json_path = optarg; break;
        case O_KEEP: o->keep = 1; break;
        case O_RCACHE:
            if (!strcmp(optarg, "evict")) o->keep_cache = 0;
            else if (!strcmp(optarg, "keep")) o->keep_cache = 1;
            else snprintf(bad, sizeof bad, "--read-cache must be evict or keep");
            break;
        default:
            snprintf(bad, sizeof bad, "bad option or missing argument: %s (see --help)",
                     argv[optind - 1]);
            break;
        }
    }
    if (!bad[0]) {
        const char *why = NULL;
        o->prefix = prefix_operand(argc, argv, optind,
                                   "missing PREFIX (the files are PREFIX<path>*.h5)", &why);
        if (why)
            snprintf(bad, sizeof bad, "%s", why);
    }
    if (bad[0]) {
        if (err) fprintf(err, "h5paths: ERROR usage: %s\n", bad);
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------- output */

static const char *jbool(int b) { return b ? "true" : "false"; }

static const char *transfer_name(const options_t *o)
{
    return o->serial ? "serial" : o->collective ? "collective" : "independent";
}

typedef struct {
    int nerr;                /* error lines of all ranks (rank 0) */
    char (*err)[512];
    char hdf5_version[32];
    char hdf5_library[4096]; /* the libhdf5 this process loaded (dladdr), or "unknown" */
    int mpi_calls_counted;   /* mpicount_active(): per-phase MPI-IO calls in the summary */
    char mpi_version[256];
    char vol_connector[128]; /* the connector of a file made as every path makes them */
    const char *vol_asked;   /* $HDF5_VOL_CONNECTOR, or NULL */
    char serial_driver[64];  /* --transfer serial: the file driver of a file made as the
                                serial paths make them; "" otherwise */
    const char *driver_asked; /* $HDF5_DRIVER, or NULL */
    long long *file_bytes;   /* [nfiles], -1 if absent */
    int ok;
    int argc;
    char **argv;
} summary_t;

static void write_params(FILE *f, const run_t *r)
{
    const options_t *o = r->o;
    fprintf(f, "  \"params\": {\"path\": ");
    json_string(f, o->path);
    fprintf(f, ", \"api\": \"%s\", \"transfer\": \"%s\", \"layout\": \"%s\", "
               "\"chunk_elements\": %lld, \"modify_write_buf\": %s, "
               "\"modify_write_buf_applied\": %s, \"coll_metadata\": %s, \"libver\": ",
            o->api == API_MPIIO ? "mpiio" : "hdf5", transfer_name(o),
            o->chunked ? "chunked" : "contiguous", o->chunk_elements, jbool(o->modify_write_buf),
            jbool(o->modify_write_buf_applied), jbool(o->coll_metadata));
    json_string(f, o->libver);
    fprintf(f, ", \"elements\": %lld, \"objects\": %lld, \"efc_size\": %lld, "
               "\"iterations\": %d, \"read_repeats\": %d, \"record_bytes_file\": %lld, "
               "\"record_bytes_memory\": %lld, \"keep\": %s, \"read_cache\": \"%s\", "
               "\"prefix\": ",
            o->elements, o->objects, o->efc_size, o->iterations, o->read_repeats,
            o->record_bytes_file, o->record_bytes_memory, jbool(o->keep),
            o->keep_cache ? "keep" : "evict");
    json_string(f, o->prefix);
    fprintf(f, "},\n");
}

/* a phase's MPI-IO calls per kind: [rank 0's, the other ranks' sum] (mpicount.c),
 * when HDF5's calls reach the kernel's counters */
static void write_phase(FILE *f, const phase_t *p, int counted)
{
    fprintf(f, "{\"phase\": \"%s\", \"seconds\": %.9g, \"bytes\": %lld, \"objects\": %lld, "
               "\"peak_rss_kib\": %lld", p->name, p->seconds, p->bytes, p->objects, p->peak_rss_kib);
    if (p->io_mode[0])
        fprintf(f, ", \"mpio_actual_io_mode\": \"%s\"", p->io_mode);
    if (p->has_cause)
        fprintf(f, ", \"mpio_no_collective_cause\": %u", p->no_coll_cause);
    if (counted) {
        static const char *const kind[MPICOUNT_KINDS] = {
            "read_independent", "read_collective", "write_independent", "write_collective"};
        fprintf(f, ", \"mpi_file_calls\": {");
        for (int k = 0; k < MPICOUNT_KINDS; k++)
            fprintf(f, "%s\"%s\": [%lld, %lld]", k ? ", " : "", kind[k], p->mpi_calls[k][0],
                    p->mpi_calls[k][1]);
        fputc('}', f);
    }
    fputc('}', f);
}

static int write_json(const run_t *r, const summary_t *s, long total_errors)
{
    const options_t *o = r->o;
    FILE *f = fopen(o->json_path, "w");
    if (!f) {
        h5p_error("cannot write the JSON summary %s: %s", o->json_path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\"tool\": \"h5paths\", \"kernel_version\": \"%s\", \"hdf5_version\": \"%s\", "
               "\"hdf5_version_source\": \"H5get_libversion\", \"hdf5_header_version\": \"%s\",\n"
               "  \"hdf5_library\": ",
            H5PATHS_VERSION, s->hdf5_version, H5PATHS_HEADER_VERSION);
    json_string(f, s->hdf5_library);
    fprintf(f, ", \"hdf5_library_source\": \"dladdr(H5get_libversion)\",\n"
               "  \"vol_connector\": ");
    json_string(f, s->vol_connector);
    fprintf(f, ", \"vol_connector_asked\": ");
    json_string_or_null(f, s->vol_asked);
    if (s->serial_driver[0]) {
        fprintf(f, ", \"serial_driver\": ");
        json_string(f, s->serial_driver);
        fprintf(f, ", \"serial_driver_asked\": ");
        json_string_or_null(f, s->driver_asked);
    }
    fprintf(f, ",\n"
               "  \"mpi_library_version\": ");
    json_string(f, s->mpi_version);
    fprintf(f, ",\n  \"mpi_ranks\": %d, \"status\": \"%s\", \"error_count\": %ld, \"errors\": [",
            g_size, s->ok ? "ok" : "failed", total_errors);
    for (int i = 0; i < s->nerr; i++) {
        if (i) fputs(", ", f);
        json_string(f, s->err[i]);
    }
    if (total_errors > s->nerr) {
        char more[96];
        snprintf(more, sizeof more, "%ld more error(s) not listed here: see stderr",
                 total_errors - s->nerr);
        if (s->nerr) fputs(", ", f);
        json_string(f, more);
    }
    fprintf(f, "],\n  \"command\": [");
    json_strings(f, s->argv, s->argc);
    fprintf(f, "],\n  \"path\": ");
    json_string(f, o->path);
    fprintf(f, ", \"api\": \"%s\",\n", o->api == API_MPIIO ? "mpiio" : "hdf5");
    write_params(f, r);
    fprintf(f, "  \"read_cache\": ");
    json_string(f, r->read_cache[0] ? r->read_cache : "not-evicted: no read phase ran");
    fprintf(f, ", \"read_cache_check\": ");
    json_string(f, r->cache_check[0] ? r->cache_check : "none");
    fprintf(f, ", \"mpi_file_calls_counted\": %s", jbool(s->mpi_calls_counted));
    if (r->extra_json[0])
        fprintf(f, ", %s", r->extra_json);
    fprintf(f, ",\n  \"iterations\": [");
    for (int i = 0; i < o->iterations; i++) {
        const iteration_t *it = &r->it[i];
        if (!it->nphases)
            continue;
        fprintf(f, "%s\n    {\"iteration\": %d, \"phases\": [", i ? "," : "", i);
        for (int k = 0; k < it->nphases; k++) {
            if (k) fputs(", ", f);
            write_phase(f, &it->phase[k], s->mpi_calls_counted);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n  ],\n  \"files\": [");
    for (int i = 0; i < r->nfiles; i++) {
        const char *base = strrchr(r->files[i], '/') ? strrchr(r->files[i], '/') + 1 : r->files[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        json_string(f, base);
        fprintf(f, ", \"bytes\": %lld}", s->file_bytes[i]);
    }
    fprintf(f, "],\n  \"files_kept\": %s\n}\n", jbool(o->keep));
    if (fclose(f) != 0) {
        h5p_error("writing the JSON summary %s: %s", o->json_path, strerror(errno));
        return -1;
    }
    return 0;
}

static void print_header(const run_t *r, const summary_t *s)
{
    const options_t *o = r->o;
    char first[128];
    snprintf(first, sizeof first, "%.127s", s->mpi_version);
    first[strcspn(first, "\n,")] = '\0';
    printf("h5paths %s: h5regress kernel of HDF5 code paths\n", H5PATHS_VERSION);
    printf("HDF5 library: %s (headers %s)\nMPI library: %s\nranks: %d\n", s->hdf5_version,
           H5PATHS_HEADER_VERSION, first, g_size);
    printf("VOL connector: %s (HDF5_VOL_CONNECTOR %s)\n", s->vol_connector,
           s->vol_asked ? s->vol_asked : "unset");
    if (s->serial_driver[0])
        printf("file driver: %s (HDF5_DRIVER %s)\n", s->serial_driver,
               s->driver_asked ? s->driver_asked : "unset");
    printf("path: %s  api: %s  transfer: %s  layout: %s (chunk %lld)  libver: %s  "
           "coll-metadata: %s  modify-write-buf: %s%s\n", o->path,
           o->api == API_MPIIO ? "mpiio" : "hdf5", transfer_name(o),
           o->chunked ? "chunked" : "contiguous", o->chunk_elements, o->libver,
           o->coll_metadata ? "yes" : "no", o->modify_write_buf ? "yes" : "no",
           !o->modify_write_buf || o->modify_write_buf_applied ? "" :
           o->api == API_MPIIO ? " (NOT applied: MPI-IO)" :
           " (NOT applied: this HDF5 has no H5Pset_modify_write_buf)");
    printf("elements: %lld  objects: %lld  record bytes: file %lld memory %lld  "
           "iterations: %d  read repeats: %d\n", o->elements, o->objects,
           o->record_bytes_file, o->record_bytes_memory, o->iterations, o->read_repeats);
    printf("%4s  %-14s  %10s  %14s  %10s  %8s  %s\n", "iter", "phase", "seconds", "bytes",
           "MiB/s", "objects", "mpio_mode");
    fflush(stdout);
}

static void print_iteration(const run_t *r, int i)
{
    const iteration_t *it = &r->it[i];
    for (int k = 0; k < it->nphases; k++) {
        const phase_t *p = &it->phase[k];
        printf("%4d  %-14s  %10.6f  %14lld  %10.2f  %8lld  %s\n", i, p->name, p->seconds,
               p->bytes, p->seconds > 0 ? p->bytes / 1048576.0 / p->seconds : 0.0, p->objects,
               p->io_mode[0] ? p->io_mode : "-");
    }
    fflush(stdout);
}

/* ------------------------------------------------------------- main */

static void versions(summary_t *s)
{
    unsigned maj = 0, min = 0, rel = 0;
    int len = 0;
    if (H5get_libversion(&maj, &min, &rel) < 0)
        h5p_error("H5get_libversion failed");
    snprintf(s->hdf5_version, sizeof s->hdf5_version, "%u.%u.%u", maj, min, rel);
    /* the object H5get_libversion was resolved from: the library that really runs,
     * whatever LD_PRELOAD or LD_LIBRARY_PATH did to the link-time choice */
    Dl_info info;
    snprintf(s->hdf5_library, sizeof s->hdf5_library, "%s",
             dladdr((void *)H5get_libversion, &info) && info.dli_fname ? info.dli_fname
                                                                       : "unknown");
    s->mpi_calls_counted = mpicount_active();
    if (MPI_Get_library_version(s->mpi_version, &len) != MPI_SUCCESS) {
        snprintf(s->mpi_version, sizeof s->mpi_version, "unknown");
    } else {
        s->mpi_version[len < (int)sizeof s->mpi_version ? len : (int)sizeof s->mpi_version - 1]
            = '\0';
        for (len = (int)strlen(s->mpi_version);
             len > 0 && (s->mpi_version[len - 1] == '\n' || s->mpi_version[len - 1] == ' ');)
            s->mpi_version[--len] = '\0';
    }
}

/* The connector HDF5 puts on a file access list the kernel makes: every path's files get
 * it, since the kernel never sets one (H5Pset_vol); it is the default HDF5 took from
 * $HDF5_VOL_CONNECTOR, or native. Asked of an in-memory file (core driver, no backing
 * store), as H5VLget_connector_name needs an object. "unknown: ..." when that file cannot
 * be made: a row labelled with a connector nobody saw is what the suite must not record. */
static int vol_connector(summary_t *s)
{
    int mixed = 0;
    s->vol_asked = getenv("HDF5_VOL_CONNECTOR");
#if H5_VERSION_GE(1, 12, 0)
    hid_t fapl = -1, fid = -1;
    H5E_auto2_t func;
    void *data;
    ssize_t n = -1;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) >= 0 && H5Pset_fapl_core(fapl, 4096, 0) >= 0 &&
        (fid = H5Fcreate("h5paths-vol-probe.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) >= 0)
        n = H5VLget_connector_name(fid, s->vol_connector, sizeof s->vol_connector);
    if (fid >= 0)
        H5Fclose(fid);
    if (fapl >= 0)
        H5Pclose(fapl);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    if (n <= 0)
        snprintf(s->vol_connector, sizeof s->vol_connector, "unknown: %s",
                 fid < 0 ? "no file could be made to ask" : "H5VLget_connector_name failed");
#else
    /* before 1.12 HDF5 has no VOL layer: every file goes through the native format */
    snprintf(s->vol_connector, sizeof s->vol_connector, "native");
#endif
    /* a launcher that does not pass the environment to every node leaves ranks native,
     * and HDF5's collective opens then wait for each other for ever */
    char (*all)[sizeof s->vol_connector] = g_rank == 0 ? calloc((size_t)g_size,
                                                                 sizeof *all) : NULL;
    MPI_Gather(s->vol_connector, sizeof s->vol_connector, MPI_CHAR, all,
               sizeof s->vol_connector, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int k = 1; all && k < g_size && !mixed; k++)
        if (strcmp(all[k], all[0])) {
            fprintf(stderr, "h5paths: ERROR the ranks' files go through different VOL "
                    "connectors (rank 0 %s, rank %d %s): is HDF5_VOL_CONNECTOR set on every "
                    "node?\n", all[0], k, all[k]);
            mixed = 1;
        }
    free(all);
    MPI_Bcast(&mixed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return mixed;
}

/* The file driver of a serial row's files: the kernel sets none (make_serial_fapl), so
 * it is the default HDF5 took from $HDF5_DRIVER (a site's driver, a plugin through
 * HDF5_PLUGIN_PATH), or sec2. Asked of the driver itself: each rank opens a probe file
 * PREFIXdriver-probe-rNNNN through it (H5FDopen, removed at once) and reads the class's
 * name. A row labelled with a driver its files did not go through must not be recorded:
 * the parser fails a run whose driver is not the one asked. */
static int serial_driver(summary_t *s, const options_t *o)
{
    char tail[48], probe[4096];
    hid_t fapl = -1;
    H5FD_t *f = NULL;
    s->driver_asked = getenv("HDF5_DRIVER");
    if (!o->serial)
        return 0;
    snprintf(tail, sizeof tail, "driver-probe-r%04d", g_rank);
    path_join(probe, sizeof probe, o->prefix, tail);
    if ((fapl = make_serial_fapl(o)) >= 0 &&
        (f = H5FDopen(probe, H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC, fapl,
                      HADDR_UNDEF)) != NULL)
        snprintf(s->serial_driver, sizeof s->serial_driver, "%s",
                 f->cls && f->cls->name ? f->cls->name : "unknown: the driver has no name");
    else
        h5p_error("the file driver of %s could not open it (HDF5_DRIVER %s)", probe,
                  s->driver_asked ? s->driver_asked : "unset");
    if (f && H5FDclose(f) < 0)
        h5p_error("H5FDclose of %s failed", probe);
    if (fapl >= 0)
        H5Pclose(fapl);
    unlink(probe);
    if (!s->serial_driver[0])
        snprintf(s->serial_driver, sizeof s->serial_driver, "unknown: no file could be made");
    return any_errors();
}

static void node_leader(void)
{
    MPI_Comm node;
    int nr = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL,
                            &node) != MPI_SUCCESS)
        return; /* every rank evicts: correct, only slower */
    MPI_Comm_rank(node, &nr);
    g_node_leader = nr == 0;
    MPI_Comm_free(&node);
}

/* 0 ok, 2 not available / no twin (the message is printed by rank 0) */
static int settle_options(options_t *o, const path_t *p)
{
    if (o->elements < 0) o->elements = p->default_elements;
    if (o->objects < 0) o->objects = p->default_objects;
    if (o->efc_size < 0) o->efc_size = o->objects;
#ifdef H5PATHS_HAVE_MODIFY_WRITE_BUF
    o->modify_write_buf_applied = o->modify_write_buf && o->api == API_HDF5;
#endif
    /* a second read of an evicted file would be warm; the other paths' reads are no
     * single dataset read */
    if (o->read_repeats > 1 && (!o->keep_cache || (strcmp(p->family, "compound") &&
                                                   strcmp(p->family, "convert") &&
                                                   strcmp(p->name, "strided-contiguous")))) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR usage: --read-repeats %d needs --read-cache keep "
                            "and a compound-*, convert-* or strided-contiguous path (not %s%s)\n",
                    o->read_repeats, p->name, o->keep_cache ? "" : " with evicted reads");
        return 2;
    }
    /* the serial family's paths are serial whatever --transfer says */
    if (o->serial && ((!metadata_serial(p) && strcmp(p->family, "serial") &&
                       strcmp(p->family, "compound") && strcmp(p->family, "convert")) ||
                      o->coll_metadata || o->api == API_MPIIO)) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR usage: --transfer serial is for the paths "
                            "many-datasets, attributes, open-close, compound-*, convert-* "
                            "and the serial ones, through HDF5 without --coll-metadata "
                            "(not %s%s%s)\n", p->name,
                    o->coll_metadata ? " with --coll-metadata" : "",
                    o->api == API_MPIIO ? " with --api mpiio" : "");
        return 2;
    }
    if (o->api == API_MPIIO && !p->has_mpiio_twin) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR %s: no MPI-IO twin\n", p->name);
        return EXIT_UNAVAILABLE;
    }
    return 0;
}

/* rank 0 collects every rank's first error lines for the JSON summary */
static void gather_errors(summary_t *s)
{
    int *counts = g_rank == 0 ? calloc((size_t)g_size, sizeof(int)) : NULL;
    char (*all)[512] = g_rank == 0 ? calloc((size_t)g_size * MAX_ERRORS_KEPT, 512) : NULL;
    if (g_rank == 0 && (!counts || !all)) {
        free(counts);
        free(all);
        counts = NULL;
        all = NULL;
    }
    MPI_Gather(&g_nkept, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(g_kept, MAX_ERRORS_KEPT * 512, MPI_CHAR, all, MAX_ERRORS_KEPT * 512, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (g_rank != 0 || !all)
        return;
    s->err = all;
    for (int r = 0; r < g_size; r++)
        for (int i = 0; i < counts[r]; i++)
            memmove(all[s->nerr++], all[r * MAX_ERRORS_KEPT + i], 512);
    free(counts);
}

/* rank 0: sizes of the files, then (unless --keep) remove them */
static void files_epilogue(run_t *r, summary_t *s)
{
    s->file_bytes = calloc((size_t)r->nfiles + 1, sizeof(long long));
    if (g_rank != 0 || !s->file_bytes)
        return;
    for (int i = 0; i < r->nfiles; i++) {
        struct stat st;
        s->file_bytes[i] = stat(r->files[i], &st) == 0 ? (long long)st.st_size : -1;
        if (!r->o->keep && unlink(r->files[i]) != 0 && errno != ENOENT)
            h5p_error("removing %s: %s", r->files[i], strerror(errno));
    }
}

int main(int argc, char **argv)
{
    options_t o;
    run_t r;
    summary_t s;
    const path_t *p;
    long total_errors = 0;
    int rc;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "h5paths: ERROR MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    memset(&r, 0, sizeof r);
    memset(&s, 0, sizeof s);
    s.argc = argc;
    s.argv = argv;

    rc = parse_options(argc, argv, &o);
    if (rc == 0) {
        p = find_path(o.path);
        rc = settle_options(&o, p);
    }
    if (rc != 0) {
        MPI_Finalize();
        return rc == 1 ? 0 : rc;
    }
    node_leader();
    versions(&s);
    if (vol_connector(&s) || serial_driver(&s, &o)) {
        MPI_Finalize();
        return 1;
    }
    r.o = &o;
    r.it = calloc((size_t)o.iterations, sizeof(iteration_t));
    r.files = calloc(MAX_FILES_LISTED, sizeof(char *));
    if (!r.it || !r.files) {
        fprintf(stderr, "h5paths: ERROR out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    rc = p->prepare(&r);
    if (rc == EXIT_UNAVAILABLE) {   /* decided alike on every rank; rank 0 said why */
        p->finish(&r);
        MPI_Finalize();
        return EXIT_UNAVAILABLE;
    }
    if (g_rank == 0)
        print_header(&r, &s);
    if (!any_errors()) {
        for (int i = 0; i < o.iterations; i++) {
            r.iteration = i;
            p->iterate(&r);
            if (any_errors())
                break;
            if (g_rank == 0)
                print_iteration(&r, i);
        }
    }
    p->finish(&r);

    files_epilogue(&r, &s);
    MPI_Allreduce(&g_errors, &total_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    gather_errors(&s);
    s.ok = total_errors == 0;
    if (g_rank == 0) {
        if (o.json_path && write_json(&r, &s, total_errors) < 0)
            s.ok = 0;
        printf("read cache: %s (%s)\nfiles: %d %s\n",
               r.read_cache[0] ? r.read_cache : "not-evicted: no read phase ran",
               r.cache_check[0] ? r.cache_check : "no check", r.nfiles,
               o.keep ? "kept" : "removed");
        if (s.ok)
            printf("h5paths: finished OK\n");
        else
            printf("h5paths: FAILED: %ld error(s), see stderr\n", total_errors ? total_errors : 1);
        fflush(stdout);
    }
    MPI_Bcast(&s.ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (g_abandoned) {
        /* set alike on every rank: MPI_Finalize would close the file HDF5 cannot close,
         * and MPI_Abort loses output the launcher has not forwarded yet (the kernel's
         * ENOSPC line, seen once in four runs): every rank leaves at once, streams
         * flushed, without HDF5's exit handlers */
        if (g_rank == 0)
            fprintf(stderr, "h5paths: note: exiting without MPI_Finalize: HDF5 cannot close "
                    "a file after a failed parallel write (its ranks' flushes diverge)\n");
        fflush(stdout);
        fflush(stderr);
        MPI_Barrier(MPI_COMM_WORLD);
        _exit(1);
    }
    for (int i = 0; i < r.nfiles; i++)
        free(r.files[i]);
    free(r.files);
    free(r.it);
    free(s.file_bytes);
    free(s.err);
    MPI_Finalize();
    return s.ok ? 0 : 1;
}
