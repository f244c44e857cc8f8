/* Error reporting (never swallowed), memory and time helpers. */
#include "flash_io.h"
#include "kernel_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int g_rank = 0, g_size = 1;
long g_errors = 0;

void fio_error(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    g_errors++;
    fprintf(stderr, "flash-io: ERROR: rank %d: %s:%d: ", g_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void fio_mpi_error(const char *file, int line, const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    mpi_error_text(rc, msg, sizeof msg);
    fio_error(file, line, "MPI call failed: %s: %s", call, msg);
}

/* The HDF5 automatic error handler: print the whole stack, count the error.
 * It runs whenever an HDF5 API call fails; the call site also checks the
 * return value, so an error is reported twice at most, never lost. */
static herr_t h5_error_handler(hid_t estack, void *client_data)
{
    (void)client_data;
    g_errors++;
    fprintf(stderr, "flash-io: ERROR: rank %d: HDF5 error stack:\n", g_rank);
    H5Eprint2(estack, stderr);
    fflush(stderr);
    return 0;
}

void fio_install_error_handlers(void)
{
    /* MPI: errors come back as return codes, and every call is checked */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    if (H5Eset_auto2(H5E_DEFAULT, h5_error_handler, NULL) < 0) {
        fprintf(stderr, "flash-io: ERROR: rank %d: cannot install the HDF5 error handler\n",
                g_rank);
        g_errors++;
    }
}

/* MemTotal of this node, in bytes (0 when unknown) */
long long meminfo_total_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kib = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %lld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib * 1024LL;
}

void iso_utc_now(char *buf, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

size_t dtype_size(enum dtype t, size_t strsize)
{
    switch (t) {
    case DT_INT: return sizeof(int);
    case DT_FLOAT: return sizeof(float);
    case DT_DOUBLE: return sizeof(double);
    case DT_STRING: return strsize;
    case DT_SIMPARAMS_D: return sizeof(simparams_d_t);
    case DT_SIMPARAMS_F: return sizeof(simparams_f_t);
    }
    return 0;
}
