/*
 * h5r_vector: a file driver plugin (HDF5 >= 1.13.2) that stands in for a site's own
 * VFD with vector callbacks (a burst buffer's, an object store's): POSIX pread and
 * pwrite, as sec2 does, plus read_vector and write_vector callbacks that carry out the
 * vector one entry at a time, as a driver does that maps each entry to a request.
 *
 * Why: from HDF5 commit 3236fb79 (2023-04, "Implement selection I/O with type
 * conversion") on, a driver with vector callbacks turns selection I/O on by default,
 * and a strided write of a contiguous dataset then reaches the driver as a vector of
 * one entry per element instead of through the data sieve
 * (regressions/vector-vfd-bypasses-sieve-clio-980.yaml). sec2 has no vector
 * callbacks, so no row through sec2 takes that branch.
 *
 * Loaded by HDF5_DRIVER=h5r_vector with HDF5_PLUGIN_PATH naming this library's
 * directory. Each call of a vector callback counts its entries in the environment's
 * H5R_VECTOR_VFD_COUNTS file (appended at close: "vector_reads N entries N
 * vector_writes N entries N") when that variable is set, so that a run can show which
 * branch it took.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>
#include <H5FDdevelop.h>
#include <H5PLextern.h>

#define VECTOR_VFD_NAME "h5r_vector"
/* a plugin's value: above HDF5's reserved range, unregistered with The HDF Group */
#define VECTOR_VFD_VALUE 610

typedef struct {
    H5FD_t pub;
    int fd;
    haddr_t eoa, eof;
    dev_t device;
    ino_t inode;
    long long vector_reads, vector_read_entries, vector_writes, vector_write_entries;
} vector_file_t;

/* one error frame, as HDF5's own drivers push them, and FAIL */
#define VFD_FAIL(major, minor, what) do { \
    H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, major, minor, \
             "%s: %s", what, strerror(errno)); return -1; } while (0)

static H5FD_t *vector_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
    int o_flags = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
    struct stat st;
    vector_file_t *f;
    (void)fapl;
    (void)maxaddr;
    if (flags & H5F_ACC_TRUNC)
        o_flags |= O_TRUNC;
    if (flags & H5F_ACC_CREAT)
        o_flags |= O_CREAT;
    if (flags & H5F_ACC_EXCL)
        o_flags |= O_EXCL;
    if (!(f = calloc(1, sizeof *f)))
        return NULL;
    if ((f->fd = open(name, o_flags, 0666)) < 0 || fstat(f->fd, &st) < 0) {
        H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_FILE,
                 H5E_CANTOPENFILE, "open or fstat of %s: %s", name, strerror(errno));
        if (f->fd >= 0)
            close(f->fd);
        free(f);
        return NULL;
    }
    f->eof = (haddr_t)st.st_size;
    f->device = st.st_dev;
    f->inode = st.st_ino;
    return &f->pub;
}

static herr_t vector_close(H5FD_t *file)
{
    vector_file_t *f = (vector_file_t *)file;
    const char *counts = getenv("H5R_VECTOR_VFD_COUNTS");
    int rc = close(f->fd);
    if (counts && *counts) {
        FILE *out = fopen(counts, "a");
        if (out) {
            fprintf(out, "vector_reads %lld entries %lld vector_writes %lld entries %lld\n",
                    f->vector_reads, f->vector_read_entries, f->vector_writes,
                    f->vector_write_entries);
            fclose(out);
        }
    }
    free(f);
    if (rc < 0)
        VFD_FAIL(H5E_IO, H5E_CANTCLOSEFILE, "close");
    return 0;
}

static int vector_cmp(const H5FD_t *a, const H5FD_t *b)
{
    const vector_file_t *x = (const vector_file_t *)a, *y = (const vector_file_t *)b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->inode != y->inode)
        return x->inode < y->inode ? -1 : 1;
    return 0;
}

/* what sec2 says of itself, so that only the vector callbacks differ */
static herr_t vector_query(const H5FD_t *file, unsigned long *flags)
{
    (void)file;
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
             H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA |
             H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

static haddr_t vector_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const vector_file_t *)file)->eoa;
}

static herr_t vector_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    ((vector_file_t *)file)->eoa = addr;
    return 0;
}

static haddr_t vector_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const vector_file_t *)file)->eof;
}

static herr_t vector_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
    (void)fapl;
    *handle = &((vector_file_t *)file)->fd;
    return 0;
}

/* the POSIX transfer of one request, as sec2 does it; reads past the end of the file
 * give zeros, as sec2's do. The buffer is only read on a write. */
static herr_t posix_io(vector_file_t *f, int write, haddr_t addr, size_t size, char *p)
{
    while (size > 0) {
        ssize_t n = write ? pwrite(f->fd, p, size, (off_t)addr)
                          : pread(f->fd, p, size, (off_t)addr);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n == 0 && write))
            VFD_FAIL(H5E_IO, write ? H5E_WRITEERROR : H5E_READERROR,
                     write ? "pwrite" : "pread");
        if (n == 0) {
            memset(p, 0, size);
            return 0;
        }
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    if (write && addr > f->eof)
        f->eof = addr;
    return 0;
}

static herr_t vector_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr,
                          size_t size, void *buf)
{
    (void)type;
    (void)dxpl;
    return posix_io((vector_file_t *)file, 0, addr, size, buf);
}

static herr_t vector_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr,
                           size_t size, const void *buf)
{
    (void)type;
    (void)dxpl;
    return posix_io((vector_file_t *)file, 1, addr, size, (char *)buf);
}

/* one vector, entry by entry; HDF5's vector convention: a size of 0 means this and every
 * later entry have the previous entry's size (the array may end there: not read on) */
static herr_t vector_each(H5FD_t *file, uint32_t count, haddr_t addrs[], size_t sizes[],
                          void *const bufs[], int write)
{
    vector_file_t *f = (vector_file_t *)file;
    size_t size = 0;
    int same_size = 0;
    if (write) {
        f->vector_writes++;
        f->vector_write_entries += count;
    } else {
        f->vector_reads++;
        f->vector_read_entries += count;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (!same_size) {
            if (i > 0 && sizes[i] == 0)
                same_size = 1;
            else
                size = sizes[i];
        }
        if (posix_io(f, write, addrs[i], size, bufs[i]) < 0)
            return -1;
    }
    return 0;
}

static herr_t vector_read_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[],
                                 haddr_t addrs[], size_t sizes[], void *bufs[])
{
    (void)dxpl;
    (void)types;
    return vector_each(file, count, addrs, sizes, bufs, 0);
}

static herr_t vector_write_vector(H5FD_t *file, hid_t dxpl, uint32_t count, H5FD_mem_t types[],
                                  haddr_t addrs[], size_t sizes[], const void *bufs[])
{
    /* the buffers are only read (vector_write takes const) */
    (void)dxpl;
    (void)types;
    return vector_each(file, count, addrs, sizes, (void *const *)bufs, 1);
}

static herr_t vector_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
    vector_file_t *f = (vector_file_t *)file;
    (void)dxpl;
    (void)closing;
    if (f->eoa != f->eof) {
        if (ftruncate(f->fd, (off_t)f->eoa) < 0)
            VFD_FAIL(H5E_IO, H5E_SEEKERROR, "ftruncate");
        f->eof = f->eoa;
    }
    return 0;
}

static const H5FD_class_t vector_class = {
    .version = H5FD_CLASS_VERSION,
    .value = VECTOR_VFD_VALUE,
    .name = VECTOR_VFD_NAME,
    .maxaddr = (haddr_t)0x7fffffffffffffffLL,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = vector_open,
    .close = vector_close,
    .cmp = vector_cmp,
    .query = vector_query,
    .get_eoa = vector_get_eoa,
    .set_eoa = vector_set_eoa,
    .get_eof = vector_get_eof,
    .get_handle = vector_get_handle,
    .read = vector_read,
    .write = vector_write,
    .read_vector = vector_read_vector,
    .write_vector = vector_write_vector,
    .truncate = vector_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_VFD; }
const void *H5PLget_plugin_info(void) { return &vector_class; }
