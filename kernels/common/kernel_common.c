/* What both kernels write and parse alike (kernel_common.h). */
#include "kernel_common.h"

#include <string.h>

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

void json_string_or_null(FILE *f, const char *s)
{
    if (s)
        json_string(f, s);
    else
        fputs("null", f);
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

int parse_api(const char *arg, int *api)
{
    if (!strcmp(arg, "hdf5")) *api = API_HDF5;
    else if (!strcmp(arg, "mpiio")) *api = API_MPIIO;
    else return -1;
    return 0;
}

int help_or_version(int c, int version_option, int rank, void (*usage)(FILE *),
                    const char *name, const char *version)
{
    if (c != 'h' && c != version_option)
        return 0;
    if (rank == 0) {
        if (c == 'h') usage(stdout);
        else printf("%s %s\n", name, version);
    }
    return 1;
}

static void close_handle(hid_t id)
{
    switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: H5Idec_ref(id); break;
    }
}

void close_handles(hid_t *const ids[], int quiet)
{
    for (; *ids; ids++) {
        if (**ids < 0)
            continue;
        if (quiet) {
            H5E_BEGIN_TRY { close_handle(**ids); } H5E_END_TRY;
        } else {
            close_handle(**ids);
        }
        **ids = -1;
    }
}
