/* vds paths (work in progress) */
#include "h5paths.h"
#include <stdio.h>

static int prepare(run_t *r)
{
    if (g_rank == 0)
        fprintf(stderr, "h5paths: ERROR %s: not implemented yet\n", r->o->path);
    return EXIT_UNAVAILABLE;
}
static int iterate(run_t *r) { (void)r; return -1; }
static void finish(run_t *r) { (void)r; }
const path_t vds_paths[] = {{"vds", "vds", 0, 16LL << 20, 8, prepare, iterate, finish}, {0}};
