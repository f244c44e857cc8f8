/* chunked-deflate: a chunked dataset of doubles with the deflate filter.
 * Parallel HDF5 writes filtered datasets collectively only (every rank takes
 * part in each chunk's compression and allocation); the read decompresses.
 * The MPI-IO twin moves the uncompressed bytes.
 *
 * partial-chunk: a chunked dataset of doubles where every chunk is shared by
 * all ranks: rank r writes and reads the r-th slice of every chunk (a strided
 * hyperslab), so each rank's selection covers every chunk only partially.
 * The MPI-IO twin moves the same bytes through a file view of the same blocks.
 *
 * strided-chunks (HDF5 issues 4481, 4513): a deflate-chunked dataset of doubles
 * written as doubles (parallel HDF5 cannot convert on a filtered write: it
 * would break collective I/O) and read through floats (float <- double) in a strided,
 * irregular selection: blocks of 5/8 of a chunk, the ranks' blocks interleaved,
 * so blocks start inside chunks and cross chunk boundaries, and the remainder of
 * --elements one more block at the end (the union of two hyperslabs).  Every
 * chunk is shared by ranks, compressed on write and decompressed on read.  No
 * MPI-IO twin (the filter is the point). */
#include "records.h"

#include <stdio.h>

#define DEFLATE_LEVEL 1

static data_plan_t plan = {.file_type = -1};

static int prepare_deflate(run_t *r)
{
    if (r->o->api == API_HDF5 && !r->o->collective) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR chunked-deflate: parallel HDF5 writes filtered "
                    "datasets collectively only (--transfer independent is not possible)\n");
        return EXIT_UNAVAILABLE;
    }
    if (r->o->api == API_HDF5 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR chunked-deflate: the deflate filter is not "
                    "available in this HDF5\n");
        return EXIT_UNAVAILABLE;
    }
    plan.file = plan.write_mem = plan.read_mem = &L_DOUBLE;
    plan.chunked = r->o->api == API_HDF5;
    plan.deflate = r->o->api == API_HDF5 ? DEFLATE_LEVEL : 0;
    if ((plan.file_type = H5Tcopy(H5T_NATIVE_DOUBLE)) < 0)
        return -1;
    if (r->o->api == API_HDF5)
        r->o->chunked = 1;   /* the recorded layout is the one used */
    return data_prepare(r, &plan);
}

/* chunk c holds [c*C, (c+1)*C); rank r owns [r*b, r*b + b_r) of each, b = C/ranks
 * (the last rank takes the remainder); as many chunks as elements*ranks/C */
static int prepare_partial(run_t *r)
{
    const options_t *o = r->o;
    long long C = o->chunk_elements, b = C / g_size;
    long long nchunks = o->elements * g_size / C;
    if (b < 1) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR partial-chunk: --chunk-elements %lld is smaller "
                    "than the number of ranks %d\n", C, g_size);
        return EXIT_UNAVAILABLE;
    }
    if (nchunks < 1)
        nchunks = 1;
    plan.sel.total = nchunks * C;
    plan.sel.start = b * g_rank;
    plan.sel.stride = C;
    plan.sel.count = nchunks;
    plan.sel.block = g_rank == g_size - 1 ? C - b * (g_size - 1) : b;
    plan.file = plan.write_mem = plan.read_mem = &L_DOUBLE;
    plan.chunked = r->o->api == API_HDF5;
    if ((plan.file_type = H5Tcopy(H5T_NATIVE_DOUBLE)) < 0)
        return -1;
    if (r->o->api == API_HDF5)
        r->o->chunked = 1;
    return data_prepare(r, &plan);
}

/* B = 5C/8; rank r: blocks [k*ranks*B + r*B, +B) for k < elements/B, and the
 * remainder R = elements%B at [ranks*B*(elements/B) + r*R, +R) */
static int prepare_strided(run_t *r)
{
    const options_t *o = r->o;
    long long B = o->chunk_elements * 5 / 8, count, rest;
    if (o->api == API_HDF5 && !o->collective) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR strided-chunks: parallel HDF5 writes filtered "
                    "datasets collectively only (--transfer independent is not possible)\n");
        return EXIT_UNAVAILABLE;
    }
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) {
        if (g_rank == 0)
            fprintf(stderr, "h5paths: ERROR strided-chunks: the deflate filter is not "
                    "available in this HDF5\n");
        return EXIT_UNAVAILABLE;
    }
    if (B < 1 || B > o->elements)
        B = o->elements;
    count = o->elements / B;
    rest = o->elements % B;
    plan.sel.total = o->elements * g_size;
    plan.sel.start = B * g_rank;
    plan.sel.stride = B * g_size;
    plan.sel.count = count;
    plan.sel.block = B;
    plan.sel.tail_start = count * B * g_size + rest * g_rank;
    plan.sel.tail = rest;
    plan.file = plan.write_mem = &L_DOUBLE;
    plan.read_mem = &L_FLOAT;
    plan.chunked = 1;
    plan.deflate = DEFLATE_LEVEL;
    if ((plan.file_type = H5Tcopy(H5T_IEEE_F64LE)) < 0)
        return -1;
    r->o->chunked = 1;
    return data_prepare(r, &plan);
}

static int iterate(run_t *r) { return data_iterate(r, &plan); }
static void finish(run_t *r) { (void)r; data_finish(&plan); }

const path_t chunked_paths[] = {
    {"chunked-deflate", "chunked", 1, 4LL << 20, 1, prepare_deflate, iterate, finish},
    {"partial-chunk", "chunked", 1, 16LL << 20, 1, prepare_partial, iterate, finish},
    {"strided-chunks", "chunked", 0, 4LL << 20, 1, prepare_strided, iterate, finish},
    {0}};
