/* compound-*: a compound dataset of 9 members (the file record, 48 bytes)
 * written and read through memory types that are the same, a subset, a
 * superset or a reordering of the file type.  HDF5's compound conversion
 * (H5T__conv_struct and its subset shortcut) runs on every transfer but the
 * compound-same twin's; compound-subset also times a partial write, which
 * needs the records read back as the conversion's background buffer. */
#include "records.h"

static data_plan_t plan = {.file_type = -1};

static int prepare(run_t *r, const layout_t *wmem, const layout_t *rmem, const layout_t *sub)
{
    plan.file = &L_FULL;
    plan.write_mem = wmem;
    plan.read_mem = rmem;
    plan.subset_mem = sub;
    if ((plan.file_type = layout_type(&L_FULL)) < 0)
        return -1;
    return data_prepare(r, &plan);
}

static int prepare_same(run_t *r) { return prepare(r, &L_FULL, &L_FULL, NULL); }
/* the full record written, read through the subset, then written through it */
static int prepare_subset(run_t *r) { return prepare(r, &L_FULL, &L_SUBSET, &L_SUBSET); }
static int prepare_superset(run_t *r) { return prepare(r, &L_SUPERSET, &L_SUPERSET, NULL); }
static int prepare_reorder(run_t *r) { return prepare(r, &L_REORDER, &L_REORDER, NULL); }
static int iterate(run_t *r) { return data_iterate(r, &plan); }
static void finish(run_t *r) { (void)r; data_finish(&plan); }

#define COMPOUND_ELEMENTS (4LL << 20)   /* records per rank: 192 MiB of file records */
const path_t compound_paths[] = {
    {"compound-same", "compound", 1, COMPOUND_ELEMENTS, 1, prepare_same, iterate, finish},
    {"compound-subset", "compound", 1, COMPOUND_ELEMENTS, 1, prepare_subset, iterate, finish},
    {"compound-superset", "compound", 1, COMPOUND_ELEMENTS, 1, prepare_superset, iterate,
     finish},
    {"compound-reorder", "compound", 1, COMPOUND_ELEMENTS, 1, prepare_reorder, iterate, finish},
    {0}};
