/* export.c — `topkp export` and `topkp info`: any results file to TSV (one header line,
 * columns by name, so gnuplot and pandas read it) and its provenance attributes. The reader
 * is generic over the compound members it finds, so older files export too. */
#include <stdlib.h>
#include <string.h>

#include "h5util.h"
#include "results.h"

struct export_ctx {
    FILE *out;
    const char *only;
    int header_done, failed;
    char header[4096];
};

static void print_value(FILE *out, hid_t member, const char *data)
{
    H5T_class_t c = H5Tget_class(member);
    size_t size = H5Tget_size(member);
    if (c == H5T_STRING) {
        char buf[1024];
        size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
        memcpy(buf, data, n);
        buf[n] = 0;
        for (char *p = buf; *p; p++)
            if (*p == '\t' || *p == '\n')
                *p = ' ';
        fputs(buf, out);
    } else if (c == H5T_INTEGER) {
        long long v = 0;
        if (size == 8)
            memcpy(&v, data, 8);
        else if (size == 4) {
            int32_t w;
            memcpy(&w, data, 4);
            v = w;
        }
        fprintf(out, "%lld", v);
    } else if (c == H5T_FLOAT) {
        double v = 0;
        if (size == 8)
            memcpy(&v, data, 8);
        else {
            float w;
            memcpy(&w, data, 4);
            v = w;
        }
        fprintf(out, "%.9g", v);
    }
}

static herr_t export_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct export_ctx *x = data;
    char path[128];
    snprintf(path, sizeof path, "%s/cells", name);
    if ((x->only && strcmp(x->only, name) != 0) || !h5_exists(group, path))
        return 0;
    hid_t d = H5Dopen2(group, path, H5P_DEFAULT), ft = H5Dget_type(d);
    hid_t mt = H5Tget_native_type(ft, H5T_DIR_DEFAULT), s = H5Dget_space(d);
    hssize_t n = H5Sget_simple_extent_npoints(s);
    size_t row_size = H5Tget_size(mt);
    int members = H5Tget_nmembers(mt);
    char header[4096];
    size_t used = (size_t)snprintf(header, sizeof header, "sweep");
    for (int m = 0; m < members && used < sizeof header; m++) {
        char *mn = H5Tget_member_name(mt, (unsigned)m);
        used += (size_t)snprintf(header + used, sizeof header - used, "\t%s", mn);
        H5free_memory(mn);
    }
    if (!x->header_done) {
        fprintf(x->out, "%s\n", header);
        snprintf(x->header, sizeof x->header, "%s", header);
        x->header_done = 1;
    } else if (strcmp(header, x->header) != 0) {
        fprintf(stderr, "export: sweep %s has other columns; export it alone with --sweep\n",
                name);
        x->failed = 1;
    }
    char *rows = malloc(row_size * (size_t)(n > 0 ? n : 1));
    if (!x->failed && n > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0) {
        for (hssize_t i = 0; i < n; i++) {
            fputs(name, x->out);
            for (int m = 0; m < members; m++) {
                hid_t member = H5Tget_member_type(mt, (unsigned)m);
                fputc('\t', x->out);
                print_value(x->out, member, rows + (size_t)i * row_size +
                                                H5Tget_member_offset(mt, (unsigned)m));
                H5Tclose(member);
            }
            fputc('\n', x->out);
        }
    }
    free(rows);
    H5Sclose(s);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Dclose(d);
    return 0;
}

int tkp_results_export(const char *path, const char *sweep, FILE *out, struct tkp_error *err)
{
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        tkp_error_set(err, "%s: not a readable HDF5 file", path);
        return TKP_EINVAL;
    }
    struct export_ctx x = { out, sweep, 0, 0, "" };
    if (h5_exists(f, "/sweeps")) {
        hid_t g = H5Gopen2(f, "/sweeps", H5P_DEFAULT);
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, export_sweep, &x);
        H5Gclose(g);
    }
    H5Fclose(f);
    if (!x.header_done) {
        tkp_error_set(err, "%s: no sweep%s%s with cells", path, sweep ? " named " : "",
                      sweep ? sweep : "");
        return TKP_EINVAL;
    }
    return x.failed ? TKP_EINVAL : TKP_OK;
}

static herr_t print_attr(hid_t obj, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    char value[4096];
    if (h5_get_attr_str(obj, name, value, sizeof value) == 0)
        fprintf((FILE *)data, "%s\t%s\n", name, value);
    return 0;
}

/* One run record (/runs/<n>, run_record.h): its attributes as "run <n> name<TAB>value". */
static herr_t print_run(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    hid_t g = H5Gopen2(group, name, H5P_DEFAULT);
    if (g < 0)
        return 0;
    FILE *out = data;
    fprintf(out, "run %s\n", name);
    H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_attr, out);
    H5Gclose(g);
    return 0;
}

int tkp_results_info(const char *path, FILE *out, struct tkp_error *err)
{
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        tkp_error_set(err, "%s: not a readable HDF5 file", path);
        return TKP_EINVAL;
    }
    hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, NULL, print_attr, out);
    H5Gclose(root);
    if (h5_exists(f, "/runs")) { /* every run into the file (names 0, 1, ...; by name) */
        hid_t g = H5Gopen2(f, "/runs", H5P_DEFAULT);
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_run, out);
        H5Gclose(g);
    }
    H5Fclose(f);
    return TKP_OK;
}
