/* convert-*: a 1-d dataset of doubles written and read through a memory type
 * that needs HDF5's atomic conversion (float <-> double, little <-> big endian)
 * or none (convert-none, the no-conversion twin). */
#include "records.h"

static data_plan_t plan = {.file_type = -1};

static int prepare(run_t *r, hid_t file_type, const layout_t *mem)
{
    plan.file = &L_DOUBLE;
    plan.write_mem = plan.read_mem = mem;
    plan.subset_mem = NULL;
    if ((plan.file_type = H5Tcopy(file_type)) < 0) {
        h5p_error("H5Tcopy failed");
        return -1;
    }
    return data_prepare(r, &plan);
}

static int prepare_none(run_t *r) { return prepare(r, H5T_NATIVE_DOUBLE, &L_DOUBLE); }
static int prepare_float(run_t *r) { return prepare(r, H5T_IEEE_F64LE, &L_FLOAT); }
static int prepare_endian(run_t *r) { return prepare(r, H5T_IEEE_F64BE, &L_DOUBLE); }
static int iterate(run_t *r) { return data_iterate(r, &plan); }
static void finish(run_t *r) { (void)r; data_finish(&plan); }

#define CONVERT_ELEMENTS (16LL << 20)   /* values per rank: 128 MiB of doubles */
const path_t convert_paths[] = {
    {"convert-none", "convert", 1, CONVERT_ELEMENTS, 1, prepare_none, iterate, finish},
    {"convert-float-double", "convert", 1, CONVERT_ELEMENTS, 1, prepare_float, iterate, finish},
    {"convert-endian", "convert", 1, CONVERT_ELEMENTS, 1, prepare_endian, iterate, finish},
    {0}};
