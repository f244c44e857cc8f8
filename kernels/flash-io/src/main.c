/*
 * flash-io [options] PREFIX
 *
 * Driver: options, the iterations over the three files, timing (max over
 * ranks, file open to close), sizes (stat after close), the text report, the
 * JSON summary, cache hygiene (files removed, memory warning) and the exit
 * status (non-zero on any HDF5, MPI or system error).
 */
#include "flash_io.h"
#include "kernel_common.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

typedef struct {
    int iteration, kind;
    char path[4096];
    long long size, data_bytes;
    ftime_t t; /* max over ranks */
    double bw;
} result_t;

static void usage(FILE *f)
{
    fprintf(f,
"usage: flash-io [options] PREFIX\n"
"\n"
"Writes FLASH's checkpoint (double, 24 unknowns), plotfile (4 variables, float,\n"
"cell-centred) and corner plotfile (the 4 variables at the (nxb+1)^3 corners,\n"
"float) with parallel HDF5, as PREFIXhdf5_chk_NNNN, PREFIXhdf5_plt_cnt_NNNN and\n"
"PREFIXhdf5_plt_crn_NNNN (PREFIXmpiio_* with --api mpiio). Every rank holds\n"
"int(0.8*100) + rank%%3 blocks (80, 81 or 82) of nxb x nyb x nzb zones.\n"
"\n"
"options (defaults in brackets):\n"
"  --api hdf5|mpiio         write through HDF5, or the same data bytes with MPI-IO [hdf5]\n"
"  --collective             collective transfers for the per-block datasets\n"
"  --independent            independent transfers (the original's default) [yes]\n"
"  --contiguous             contiguous datasets [yes]\n"
"  --chunked                chunked unknowns, --chunk-blocks blocks per chunk\n"
"  --chunk-blocks N         blocks per chunk with --chunked [10, as FLASH's CHUNK build]\n"
"  --alignment BYTES        H5Pset_alignment (k/m/g suffixes: KiB/MiB/GiB) [1: none]\n"
"  --alignment-threshold B  objects of at least B bytes are aligned [1]\n"
"  --collective-metadata    collective metadata reads and writes (HDF5 >= 1.10)\n"
"  --blocks-per-rank N      N blocks on every rank instead of 80/81/82\n"
"  --nxb N, --nyb N, --nzb N  zones per block [8 8 8]; nzb=1 is 2-d, nyb=nzb=1 1-d\n"
"  --files LIST             comma-separated: checkpoint,plotfile,corner (or chk,plot,\n"
"                           crn, all) [all]\n"
"  --iterations N           dumps of each file [1]\n"
"  --fsync                  fsync each file on every rank before its clock stops\n"
"  --keep                   keep the files (default: removed after the run, then sync)\n"
"  --json FILE              write a JSON summary to FILE\n"
"  --version                print the version\n"
"  -h, --help               this help\n"
"\n"
"Per file it prints size (stat after close), time (max over ranks, file open to\n"
"close) and bandwidth (MiB/s = size / 2^20 / time). Exit status: 0 when every\n"
"file was written without an HDF5, MPI or system error, 1 on errors, 2 on bad usage.\n");
}

static int parse_size(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': v *= 1024LL; end++; break;
    case 'm': case 'M': v *= 1024LL * 1024; end++; break;
    case 'g': case 'G': v *= 1024LL * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_files(const char *s, int files[FK_N])
{
    char buf[256];
    char *save = NULL, *tok;
    snprintf(buf, sizeof buf, "%s", s);
    memset(files, 0, sizeof(int) * FK_N);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "checkpoint") || !strcmp(tok, "chk"))
            files[FK_CHECKPOINT] = 1;
        else if (!strcmp(tok, "plotfile") || !strcmp(tok, "plot") || !strcmp(tok, "cnt") ||
                 !strcmp(tok, "plt_cnt"))
            files[FK_PLOTFILE] = 1;
        else if (!strcmp(tok, "corner") || !strcmp(tok, "crn") || !strcmp(tok, "plt_crn"))
            files[FK_CORNER] = 1;
        else if (!strcmp(tok, "all"))
            files[0] = files[1] = files[2] = 1;
        else
            return -1;
    }
    return (files[0] || files[1] || files[2]) ? 0 : -1;
}

/* 0: run, 1: done (help/version), 2: usage error */
static int parse_options(int argc, char **argv, options_t *o)
{
    enum { O_API = 256, O_COLL, O_INDEP, O_CONTIG, O_CHUNKED, O_CHUNKB, O_ALIGN, O_ALIGNT,
           O_CMETA, O_BPR, O_NXB, O_NYB, O_NZB, O_FILES, O_ITER, O_FSYNC, O_KEEP, O_JSON,
           O_VERSION };
    static const struct option longopts[] = {
        {"api", required_argument, 0, O_API},
        {"collective", no_argument, 0, O_COLL},
        {"independent", no_argument, 0, O_INDEP},
        {"contiguous", no_argument, 0, O_CONTIG},
        {"chunked", no_argument, 0, O_CHUNKED},
        {"chunk-blocks", required_argument, 0, O_CHUNKB},
        {"alignment", required_argument, 0, O_ALIGN},
        {"alignment-threshold", required_argument, 0, O_ALIGNT},
        {"collective-metadata", no_argument, 0, O_CMETA},
        {"blocks-per-rank", required_argument, 0, O_BPR},
        {"nxb", required_argument, 0, O_NXB},
        {"nyb", required_argument, 0, O_NYB},
        {"nzb", required_argument, 0, O_NZB},
        {"files", required_argument, 0, O_FILES},
        {"iterations", required_argument, 0, O_ITER},
        {"fsync", no_argument, 0, O_FSYNC},
        {"keep", no_argument, 0, O_KEEP},
        {"json", required_argument, 0, O_JSON},
        HELP_VERSION_LONGOPTS(O_VERSION)};
    int c;
    long long v;
    const char *bad = NULL;
    FILE *err = g_rank == 0 ? stderr : NULL;

    memset(o, 0, sizeof *o);
    o->api = API_HDF5;
    o->chunk_blocks = 10;
    o->alignment = 1;
    o->align_threshold = 1;
    o->nxb = o->nyb = o->nzb = 8;
    o->files[0] = o->files[1] = o->files[2] = 1;
    o->iterations = 1;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (help_or_version(c, O_VERSION, g_rank, usage, "flash-io", FLASH_IO_VERSION))
            return 1;
        switch (c) {
        case O_API:
            if (parse_api(optarg, &o->api)) bad = API_USAGE;
            break;
        case O_COLL: o->collective = 1; break;
        case O_INDEP: o->collective = 0; break;
        case O_CONTIG: o->chunked = 0; break;
        case O_CHUNKED: o->chunked = 1; break;
        case O_CHUNKB:
            if (parse_size(optarg, &v) || v < 1) bad = "--chunk-blocks needs a positive integer";
            else o->chunk_blocks = (long)v;
            break;
        case O_ALIGN:
            if (parse_size(optarg, &v) || v < 1) bad = "--alignment needs a positive size";
            else o->alignment = v;
            break;
        case O_ALIGNT:
            if (parse_size(optarg, &v) || v < 1) bad = "--alignment-threshold needs a positive size";
            else o->align_threshold = v;
            break;
        case O_CMETA: o->coll_metadata = 1; break;
        case O_BPR:
            if (parse_size(optarg, &v) || v < 1 || v > 1000000)
                bad = "--blocks-per-rank needs an integer in 1..1000000";
            else o->blocks_per_rank = (long)v;
            break;
        case O_NXB: case O_NYB: case O_NZB:
            if (parse_size(optarg, &v) || v < 1 || v > 4096) {
                bad = "--nxb/--nyb/--nzb need an integer in 1..4096";
            } else {
                if (c == O_NXB) o->nxb = (int)v;
                else if (c == O_NYB) o->nyb = (int)v;
                else o->nzb = (int)v;
            }
            break;
        case O_FILES:
            if (parse_files(optarg, o->files))
                bad = "--files takes a comma-separated list of checkpoint, plotfile, corner";
            break;
        case O_ITER:
            if (parse_size(optarg, &v) || v < 1 || v > 9999)
                bad = "--iterations needs an integer in 1..9999";
            else o->iterations = (int)v;
            break;
        case O_FSYNC: o->fsync = 1; break;
        case O_KEEP: o->keep = 1; break;
        case O_JSON: o->json_path = optarg; break;
        case '?':
        default:
            if (err) {
                if (optopt)
                    fprintf(err, "flash-io: bad option or missing argument: -%c\n", optopt);
                else
                    fprintf(err, "flash-io: bad option or missing argument: %s\n",
                            argv[optind - 1]);
            }
            bad = "see --help";
            break;
        }
        if (bad)
            break;
    }
    if (!bad)
        o->prefix = prefix_operand(argc, argv, optind,
                                   "missing PREFIX (the files are PREFIXhdf5_chk_0000, ...)", &bad);
    if (!bad && o->nzb > 1 && o->nyb == 1)
        bad = "a 3-d block (nzb > 1) needs nyb > 1";
    if (bad) {
        if (err) fprintf(err, "flash-io: usage error: %s\nusage: flash-io [options] PREFIX "
                              "(flash-io --help for the options)\n", bad);
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------- JSON */

typedef struct {
    const options_t *o;
    const mesh_t *m;
    int argc;
    char **argv;
    char hdf5_version[32];
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int nodes;
    long long node_memory;
    char started[40], finished[40];
    result_t *res;
    int nres;
    long errors;
    char warnings[8][512];
    int nwarn;
    double wall, io, setup, cleanup;
    int removed;
} report_t;

static int write_json(const report_t *r)
{
    const options_t *o = r->o;
    const mesh_t *m = r->m;
    FILE *f = fopen(o->json_path, "w");
    if (!f) {
        fio_error(__FILE__, __LINE__, "cannot write the JSON summary %s: %s", o->json_path,
                  strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"tool\": \"flash-io\",\n  \"version\": ");
    json_string(f, FLASH_IO_VERSION);
    fprintf(f, ",\n  \"status\": \"%s\",\n  \"errors\": %ld,\n", r->errors ? "failed" : "ok",
            r->errors);
    fprintf(f, "  \"hdf5_version\": ");
    json_string(f, r->hdf5_version);
    fprintf(f, ",\n  \"mpi_library_version\": ");
    json_string(f, r->mpi_version);
    fprintf(f, ",\n  \"command\": [");
    json_strings(f, r->argv, r->argc);
    fprintf(f, "],\n  \"started\": ");
    json_string(f, r->started);
    fprintf(f, ",\n  \"finished\": ");
    json_string(f, r->finished);
    fprintf(f, ",\n  \"ranks\": %d,\n  \"nodes\": %d,\n  \"node_memory_bytes\": %lld,\n",
            g_size, r->nodes, r->node_memory);
    fprintf(f, "  \"options\": {\n    \"api\": \"%s\",\n    \"transfer\": \"%s\",\n"
               "    \"layout\": \"%s\",\n    \"chunk_blocks\": %ld,\n    \"alignment\": %lld,\n"
               "    \"alignment_threshold\": %lld,\n    \"collective_metadata\": %s,\n",
            o->api == API_MPIIO ? "mpiio" : "hdf5", o->collective ? "collective" : "independent",
            o->chunked ? "chunked" : "contiguous", o->chunk_blocks, o->alignment,
            o->align_threshold, o->coll_metadata ? "true" : "false");
    if (o->blocks_per_rank > 0)
        fprintf(f, "    \"blocks_per_rank\": %ld,\n", o->blocks_per_rank);
    else
        fprintf(f, "    \"blocks_per_rank\": null,\n");
    fprintf(f, "    \"nxb\": %d,\n    \"nyb\": %d,\n    \"nzb\": %d,\n    \"files\": [",
            o->nxb, o->nyb, o->nzb);
    for (int k = 0, first = 1; k < FK_N; k++)
        if (o->files[k]) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", filekind_name(k));
            first = 0;
        }
    fprintf(f, "],\n    \"iterations\": %d,\n    \"fsync\": %s,\n    \"keep\": %s,\n"
               "    \"prefix\": ",
            o->iterations, o->fsync ? "true" : "false", o->keep ? "true" : "false");
    json_string(f, o->prefix);
    fprintf(f, ",\n    \"json\": ");
    json_string(f, o->json_path);
    fprintf(f, "\n  },\n");
    fprintf(f, "  \"mesh\": {\n    \"ndim\": %d,\n    \"nvar\": %d,\n    \"plot_vars\": [",
            m->ndim, NVAR);
    for (int p = 0; p < NPLOT; p++) {
        char l[LABEL_LEN + 1];
        memcpy(l, m->plot_labels[p], LABEL_LEN);
        l[LABEL_LEN] = '\0';
        if (p) fputs(", ", f);
        json_string(f, l);
    }
    fprintf(f, "],\n    \"total_blocks\": %ld,\n    \"blocks_per_rank_min\": %ld,\n"
               "    \"blocks_per_rank_max\": %ld,\n    \"ngid\": %d\n  },\n",
            m->total_blocks, m->min_blocks, m->max_blocks, m->ngid);
    fprintf(f, "  \"results\": [");
    for (int i = 0; i < r->nres; i++) {
        const result_t *x = &r->res[i];
        fprintf(f, "%s\n    {\"iteration\": %d, \"file\": \"%s\", \"name\": ", i ? "," : "",
                x->iteration, filekind_name(x->kind));
        json_string(f, x->path);
        fprintf(f, ", \"size_bytes\": %lld, \"data_bytes\": %lld, \"time_s\": %.9g, "
                   "\"bw_mib_s\": %.6g, \"open_s\": %.9g, \"write_s\": %.9g, "
                   "\"close_s\": %.9g, \"fsync_s\": %.9g}",
                x->size, x->data_bytes, x->t.total, x->bw, x->t.open, x->t.write, x->t.close,
                x->t.fsync);
    }
    fprintf(f, "%s],\n  \"summary\": {", r->nres ? "\n  " : "");
    for (int k = 0, first = 1; k < FK_N; k++) {
        int n = 0;
        double tsum = 0, tmin = 0, tmax = 0, bsum = 0, bmin = 0, bmax = 0;
        long long size = 0, data = 0;
        for (int i = 0; i < r->nres; i++) {
            const result_t *x = &r->res[i];
            if (x->kind != k) continue;
            if (!n || x->t.total < tmin) tmin = x->t.total;
            if (!n || x->t.total > tmax) tmax = x->t.total;
            if (!n || x->bw < bmin) bmin = x->bw;
            if (!n || x->bw > bmax) bmax = x->bw;
            tsum += x->t.total;
            bsum += x->bw;
            size = x->size;
            data = x->data_bytes;
            n++;
        }
        if (!n) continue;
        fprintf(f, "%s\n    \"%s\": {\"count\": %d, \"size_bytes\": %lld, \"data_bytes\": %lld, "
                   "\"time_s\": {\"mean\": %.9g, \"min\": %.9g, \"max\": %.9g}, "
                   "\"bw_mib_s\": {\"mean\": %.6g, \"min\": %.6g, \"max\": %.6g}}",
                first ? "" : ",", filekind_name(k), n, size, data, tsum / n, tmin, tmax,
                bsum / n, bmin, bmax);
        first = 0;
    }
    fprintf(f, "\n  },\n  \"io_share\": {\"wall_s\": %.6g, \"io_s\": %.6g, \"setup_s\": %.6g, "
               "\"cleanup_s\": %.6g, \"fraction\": %.6g, \"fraction_without_cleanup\": %.6g},\n",
            r->wall, r->io, r->setup, r->cleanup, r->wall > 0 ? r->io / r->wall : 0.0,
            r->wall - r->cleanup > 0 ? r->io / (r->wall - r->cleanup) : 0.0);
    fprintf(f, "  \"files_removed\": %s,\n  \"warnings\": [", r->removed ? "true" : "false");
    for (int i = 0; i < r->nwarn; i++) {
        if (i) fputs(", ", f);
        json_string(f, r->warnings[i]);
    }
    fprintf(f, "]\n}\n");
    if (fclose(f) != 0) {
        fio_error(__FILE__, __LINE__, "writing the JSON summary %s: %s", o->json_path,
                  strerror(errno));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    options_t o;
    mesh_t m;
    report_t r;
    MPI_Comm node = MPI_COMM_NULL;
    int node_rank = 0, prc, mesh_ok = 0;
    double t_start, t_setup;
    long total_errors = 0;
    int status = 0;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "flash-io: ERROR: MPI_Init failed\n");
        return 1;
    }
    t_start = MPI_Wtime();
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    fio_install_error_handlers();
    memset(&r, 0, sizeof r);
    memset(&m, 0, sizeof m);

    prc = parse_options(argc, argv, &o);
    if (prc != 0) {
        MPI_Finalize();
        return prc == 1 ? 0 : 2;
    }
    r.o = &o;
    r.m = &m;
    r.argc = argc;
    r.argv = argv;
    iso_utc_now(r.started, sizeof r.started);
    {
        unsigned maj = 0, min = 0, rel = 0;
        int len = 0;
        if (H5get_libversion(&maj, &min, &rel) < 0)
            fio_error(__FILE__, __LINE__, "H5get_libversion failed");
        snprintf(r.hdf5_version, sizeof r.hdf5_version, "%u.%u.%u", maj, min, rel);
        if (MPI_Get_library_version(r.mpi_version, &len) != MPI_SUCCESS)
            snprintf(r.mpi_version, sizeof r.mpi_version, "unknown");
        else {
            r.mpi_version[len] = '\0';
            while (len > 0 && (r.mpi_version[len - 1] == '\n' || r.mpi_version[len - 1] == ' '))
                r.mpi_version[--len] = '\0';
        }
    }

    /* nodes and their memory: node leaders read MemTotal, summed over nodes */
    {
        int leader;
        long long mem, memsum = 0;
        MPICHK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL,
                                   &node));
        MPICHK(MPI_Comm_rank(node, &node_rank));
        leader = node_rank == 0;
        mem = leader ? meminfo_total_bytes() : 0;
        MPICHK(MPI_Allreduce(&leader, &r.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        MPICHK(MPI_Allreduce(&mem, &memsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        r.node_memory = memsum;
    }

    {
        /* every rank must know whether every other rank has its mesh */
        int ok = mesh_init(&m, &o) == 0, all_ok = 0;
        MPICHK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        mesh_ok = ok;
        if (!all_ok) {
            if (ok) fio_error(__FILE__, __LINE__, "another rank could not set up its mesh");
            goto fail;
        }
    }
    t_setup = MPI_Wtime();
    r.setup = t_setup - t_start;

    if (g_rank == 0) {
        char pl[NPLOT * (LABEL_LEN + 1) + 1] = "";
        for (int p = 0; p < NPLOT; p++) {
            char l[LABEL_LEN + 2];
            memcpy(l, m.plot_labels[p], LABEL_LEN);
            l[LABEL_LEN] = '\0';
            for (int i = LABEL_LEN - 1; i >= 0 && l[i] == ' '; i--) l[i] = '\0';
            strcat(l, p + 1 < NPLOT ? " " : "");
            strcat(pl, l);
        }
        char firstline[128];
        snprintf(firstline, sizeof firstline, "%.127s", r.mpi_version);
        firstline[strcspn(firstline, "\n,")] = '\0';
        printf("flash-io %s: h5regress FLASH I/O kernel\n", FLASH_IO_VERSION);
        printf("HDF5 library: %s\nMPI library: %s\n", r.hdf5_version, firstline);
        printf("ranks: %d  nodes: %d  node memory: %.1f GiB\n", g_size, r.nodes,
               r.node_memory / (MIB * 1024));
        printf("api: %s  transfer: %s  layout: %s", o.api == API_MPIIO ? "mpiio" : "hdf5",
               o.collective ? "collective" : "independent", o.chunked ? "chunked" : "contiguous");
        if (o.chunked) printf(" (%ld blocks per chunk)", o.chunk_blocks);
        printf("  alignment: %lld (threshold %lld)  collective metadata: %s  fsync: %s\n",
               o.alignment, o.align_threshold, o.coll_metadata ? "yes" : "no",
               o.fsync ? "yes" : "no");
        printf("mesh: %d-d, %d x %d x %d zones per block, %d unknowns (plotfiles: %s), "
               "%ld blocks (%ld-%ld per rank)\n", m.ndim, m.nxb, m.nyb, m.nzb, NVAR, pl,
               m.total_blocks, m.min_blocks, m.max_blocks);
        printf("files: %s%s%s  iterations: %d  prefix: %s\n",
               o.files[0] ? "checkpoint " : "", o.files[1] ? "plotfile " : "",
               o.files[2] ? "corner" : "", o.iterations, o.prefix);
        printf("%4s  %-10s  %12s  %12s  %10s  %10s  %s\n", "iter", "file", "size_B", "data_B",
               "time_s", "bw_MiB/s", "name");
        fflush(stdout);
        r.res = calloc((size_t)o.iterations * FK_N, sizeof(result_t));
        if (!r.res) {
            fprintf(stderr, "flash-io: ERROR: out of memory for the results\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    for (int it = 0; it < o.iterations && !total_errors; it++) {
        mesh_set_step(&m, it);
        for (int k = 0; k < FK_N && !total_errors; k++) {
            plan_t *plan;
            ftime_t t, tmax;
            if (!o.files[k])
                continue;
            plan = malloc(sizeof *plan);
            if (!plan) {
                fio_error(__FILE__, __LINE__, "out of memory");
            } else {
                plan_build(plan, &m, k, o.prefix, it, o.api);
                if (o.api == API_MPIIO)
                    write_mpiio(plan, &m, &o, &t);
                else
                    write_hdf5(plan, &m, &o, &t);
            }
            /* did any rank fail? (errors are counted where they happen) */
            MPICHK(MPI_Allreduce(&g_errors, &total_errors, 1, MPI_LONG, MPI_SUM,
                                 MPI_COMM_WORLD));
            if (total_errors) {
                if (g_rank == 0 && plan) {
                    /* remember it for the clean-up, even half-written */
                    result_t *x = &r.res[r.nres++];
                    x->iteration = it;
                    x->kind = k;
                    snprintf(x->path, sizeof x->path, "%s", plan->path);
                    x->size = -1;
                }
                free(plan);
                break;
            }
            MPICHK(MPI_Reduce(&t, &tmax, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
            if (g_rank == 0) {
                struct stat st;
                result_t *x = &r.res[r.nres++];
                x->iteration = it;
                x->kind = k;
                snprintf(x->path, sizeof x->path, "%s", plan->path);
                x->data_bytes = (long long)plan_data_bytes(plan);
                x->t = tmax;
                if (stat(plan->path, &st) != 0) {
                    fio_error(__FILE__, __LINE__, "stat(%s): %s", plan->path, strerror(errno));
                    x->size = -1;
                } else {
                    x->size = (long long)st.st_size;
                }
                x->bw = (x->size > 0 && tmax.total > 0) ? x->size / MIB / tmax.total : 0.0;
                r.io += tmax.total;
                printf("%4d  %-10s  %12lld  %12lld  %10.6f  %10.2f  %s\n", it, filekind_name(k),
                       x->size, x->data_bytes, tmax.total, x->bw, x->path);
                fflush(stdout);
            }
            free(plan);
            /* a failed stat on rank 0 must fail the run too */
            MPICHK(MPI_Allreduce(&g_errors, &total_errors, 1, MPI_LONG, MPI_SUM,
                                 MPI_COMM_WORLD));
        }
    }

fail:
    /* clean-up: remove the files (also after a failure), then sync the nodes */
    {
        double c0 = MPI_Wtime();
        if (!o.keep && g_rank == 0) {
            for (int i = 0; i < r.nres; i++) {
                if (unlink(r.res[i].path) != 0 && errno != ENOENT)
                    fio_error(__FILE__, __LINE__, "removing %s: %s", r.res[i].path,
                              strerror(errno));
            }
            r.removed = 1;
        }
        if (node != MPI_COMM_NULL) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (node_rank == 0 && !o.keep)
                sync();
        }
        r.cleanup = MPI_Wtime() - c0;
    }
    MPI_Allreduce(&g_errors, &total_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    r.errors = total_errors;
    r.wall = MPI_Wtime() - t_start;

    if (g_rank == 0) {
        long long written = 0;
        for (int i = 0; i < r.nres; i++)
            if (r.res[i].size > 0)
                written += r.res[i].size;
        if (!total_errors && r.node_memory > 0 && written < r.node_memory) {
            snprintf(r.warnings[r.nwarn++], sizeof r.warnings[0],
                     "data written (%.1f MiB in %d files) is below the memory of the %d node(s) "
                     "used (%.1f MiB): the bandwidths are mostly page cache",
                     written / MIB, r.nres, r.nodes, r.node_memory / MIB);
        }
        if (r.node_memory <= 0)
            snprintf(r.warnings[r.nwarn++], sizeof r.warnings[0],
                     "node memory unknown (/proc/meminfo unreadable): cache effects not assessed");
        if (!total_errors) {
            for (int k = 0; k < FK_N; k++) {
                int n = 0;
                double ts = 0, bs = 0;
                long long size = 0;
                for (int i = 0; i < r.nres; i++)
                    if (r.res[i].kind == k) {
                        n++;
                        ts += r.res[i].t.total;
                        bs += r.res[i].bw;
                        size = r.res[i].size;
                    }
                if (n)
                    printf("%4s  %-10s  %12lld  %12s  %10.6f  %10.2f  (mean of %d)\n", "mean",
                           filekind_name(k), size, "", ts / n, bs / n, n);
            }
            printf("I/O share: %.1f %% of wall time, %.1f %% without the clean-up (I/O %.3f s, "
                   "setup %.3f s, clean-up %.3f s, wall %.3f s)\n",
                   r.wall > 0 ? 100.0 * r.io / r.wall : 0.0,
                   r.wall - r.cleanup > 0 ? 100.0 * r.io / (r.wall - r.cleanup) : 0.0, r.io,
                   r.setup, r.cleanup, r.wall);
        }
        for (int i = 0; i < r.nwarn; i++)
            printf("WARNING: %s\n", r.warnings[i]);
        printf("files: %s\n", o.keep ? "kept" : "removed");
        iso_utc_now(r.finished, sizeof r.finished);
        if (o.json_path && mesh_ok && write_json(&r) < 0)
            total_errors++;
        if (total_errors) {
            printf("flash-io: FAILED: %ld error(s), see stderr\n", total_errors);
            fprintf(stderr, "flash-io: FAILED: %ld error(s)\n", total_errors);
        } else {
            printf("flash-io: finished OK\n");
        }
        fflush(stdout);
    }
    MPI_Bcast(&total_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    status = total_errors ? 1 : 0;
    if (mesh_ok)
        mesh_free(&m);
    free(r.res);
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    MPI_Finalize();
    return status;
}
