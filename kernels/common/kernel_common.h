/* What both kernels of this project (flash-io, h5paths) need alike: the JSON
 * string writer of their summaries, the text of an MPI error code, their
 * command lines' --help, --version, --api and one PREFIX operand, the release
 * of HDF5 handles.  Built into
 * each kernel from kernels/common (kernel.cmake). */
#ifndef KERNEL_COMMON_H
#define KERNEL_COMMON_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

/* s as a JSON string, quotes included ("" for NULL) */
void json_string(FILE *f, const char *s);
/* s as a JSON string, or null for NULL (a variable that was not set) */
void json_string_or_null(FILE *f, const char *s);
/* n strings as the items of a JSON array, ", " between them (no brackets) */
void json_strings(FILE *f, char *const *s, int n);
/* MPI's text for the error code rc, or "MPI error code <rc>" */
void mpi_error_text(int rc, char *msg, size_t size);
/* the PREFIX operand after the options (argv[optind]); NULL with *bad set when
 * there is none (missing, the text naming what PREFIX is for) or more than one */
char *prefix_operand(int argc, char **argv, int optind, const char *missing,
                     const char **bad);

/* --api: through HDF5, or the same bytes through MPI-IO alone */
enum api { API_HDF5 = 0, API_MPIIO = 1 };
#define API_USAGE "--api must be hdf5 or mpiio"
/* --api's argument into *api: 0, or -1 (API_USAGE) when it is neither */
int parse_api(const char *arg, int *api);
/* getopt's c when it is -h or version_option (--version): the usage or
 * "<name> <version>" on stdout of rank 0, and 1 (the kernel then exits 0
 * without a run); 0 for any other option */
int help_or_version(int c, int version_option, int rank, void (*usage)(FILE *),
                    const char *name, const char *version);
/* the end of a kernel's getopt_long table: the options help_or_version answers */
#define HELP_VERSION_LONGOPTS(version_option) \
    {"version", no_argument, 0, version_option}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}

/* close each handle still open (>= 0), in this order, with the close call of its
 * kind, and set it to -1: H5RELEASE on the failure path (quietly: the error is
 * already counted), H5CLOSE_ALL on the success path (unchecked, as H5Sclose(x)) */
void close_handles(hid_t *const ids[], int quiet);
#define H5RELEASE(...) close_handles((hid_t *const[]){__VA_ARGS__, NULL}, 1)
#define H5CLOSE_ALL(...) close_handles((hid_t *const[]){__VA_ARGS__, NULL}, 0)

#endif
