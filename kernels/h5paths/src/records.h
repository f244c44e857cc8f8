/* Records of the data paths: a layout is a list of members at offsets (a
 * compound type, or one atomic member); values are a function of the rank,
 * the local index, the member and a salt, so any read can be verified. */
#ifndef H5PATHS_RECORDS_H
#define H5PATHS_RECORDS_H

#include "h5paths.h"

enum kind { K_I64, K_F64, K_F32, K_I32, K_I16 };

/* member ids: the file record's nine, the superset's two extras (set by the
 * caller, never in the file), the atomic value of the convert paths */
enum member_id {
    M_ID, M_X, M_Y, M_Z, M_MASS, M_COUNT, M_FLAG, M_LEVEL, M_CHARGE, /* file record */
    M_TAG, M_WEIGHT,                                                  /* superset extras */
    M_VALUE_D, M_VALUE_F,                                             /* convert paths */
    M_N
};
#define MASK(id) (1u << (id))
#define ALL_MEMBERS (~0u)

typedef struct {
    int id;
    size_t offset;
} member_t;

typedef struct {
    const char *name;
    size_t size;
    int atomic;          /* one member, an atomic HDF5 type (no compound) */
    int n;
    member_t m[12];
} layout_t;

/* the file record (9 members, 48 bytes, no padding) and its memory views */
extern const layout_t L_FULL, L_SUBSET, L_SUPERSET, L_REORDER, L_DOUBLE, L_FLOAT;

hid_t layout_type(const layout_t *l);
void layout_fill(const layout_t *l, void *buf, long long n, int salt, unsigned mask);
void layout_poison(const layout_t *l, void *buf, long long n);
long long layout_verify(const layout_t *l, const void *buf, long long n, int salt,
                        unsigned alt_mask, int alt_salt, const char *phase);
double member_value(long long i, int salt, int id);       /* this rank's */
double member_value_of(int rank, long long i, int salt, int id);
/* buf[0..n): this rank's doubles (member_value of M_VALUE_D) for salt */
void fill_values(double *buf, long long n, int salt);

/* This rank's part of a 1-d dataset: count blocks of block elements, stride
 * apart, from start (a contiguous part: count 1, block n), and where tail > 0
 * one more block of tail elements at tail_start (an irregular selection: the
 * union of the regular one and the tail). */
typedef struct {
    long long total;     /* elements of the dataset */
    long long start, stride, count, block;
    long long tail_start, tail;
} selection_t;
long long selection_elements(const selection_t *s);

/* one HDF5 transfer of this rank's records of the 1-d dataset "data" */
enum xfer_mode { X_CREATE, X_UPDATE, X_READ };
typedef struct {
    const char *file;
    hid_t file_type;     /* X_CREATE only */
    hid_t mem_type;
    selection_t sel;
    long long chunk;     /* > 0: chunked layout, elements per chunk */
    int deflate;         /* > 0: deflate filter at this level (chunked only) */
} xfer_t;
int h5_transfer(run_t *r, const xfer_t *x, enum xfer_mode mode, void *buf);

/* vds.c: the file of a virtual dataset "vds" of dcpl's mappings (vds, vds-open) */
int create_vds_file(const options_t *o, const char *path, hid_t vspace, hid_t dcpl);

/* the write / read (/ write_subset) sequence of the compound and convert paths */
typedef struct {
    const layout_t *file;        /* the file record */
    hid_t file_type;             /* its HDF5 type (owned by the plan) */
    const layout_t *write_mem;   /* memory type of the write */
    const layout_t *read_mem;    /* memory type of the read */
    const layout_t *subset_mem;  /* non-NULL: also time a partial write through it */
    int chunked;                 /* chunked layout (--layout chunked, or the path's own) */
    int deflate;                 /* deflate level, 0 = none */
    selection_t sel;             /* this rank's part; data_prepare's default: contiguous */
    long long n;                 /* elements of this rank (count x block) */
    char file_name[4096];        /* this rank's file: the one file, or (serial) its own */
    char **rank_names;           /* --transfer serial: every rank's file, else NULL */
    void *wbuf, *rbuf;
} data_plan_t;
int data_prepare(run_t *r, data_plan_t *p);
void contiguous_selection(selection_t *s, long long per_rank);
int data_iterate(run_t *r, data_plan_t *p);
void data_finish(data_plan_t *p);

#endif
