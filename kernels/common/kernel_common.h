/* What both kernels of this project (flash-io, h5paths) need alike: the JSON
 * string writer of their summaries, the text of an MPI error code, the one
 * PREFIX operand of their command lines.  Built into each kernel from
 * kernels/common (kernel.cmake). */
#ifndef KERNEL_COMMON_H
#define KERNEL_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

/* s as a JSON string, quotes included ("" for NULL) */
void json_string(FILE *f, const char *s);
/* n strings as the items of a JSON array, ", " between them (no brackets) */
void json_strings(FILE *f, char *const *s, int n);
/* MPI's text for the error code rc, or "MPI error code <rc>" */
void mpi_error_text(int rc, char *msg, size_t size);
/* the PREFIX operand after the options (argv[optind]); NULL with *bad set when
 * there is none (missing, the text naming what PREFIX is for) or more than one */
char *prefix_operand(int argc, char **argv, int optind, const char *missing,
                     const char **bad);

#endif
