/* What both kernels write and parse alike (kernel_common.h). */
#include "kernel_common.h"

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

void json_strings(FILE *f, char *const *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        json_string(f, s[i]);
    }
}

void mpi_error_text(int rc, char *msg, size_t size)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(msg, size, "MPI error code %d", rc);
    else
        snprintf(msg, size, "%.*s", len, text);
}

char *prefix_operand(int argc, char **argv, int optind, const char *missing,
                     const char **bad)
{
    if (optind == argc)
        *bad = missing;
    else if (optind + 1 < argc)
        *bad = "only one PREFIX is allowed";
    else
        return argv[optind];
    return NULL;
}
