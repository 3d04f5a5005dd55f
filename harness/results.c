/* results.c — see results.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5util.h"
#include "results.h"

struct done_key {
    char sweep[64], key[400];
};

struct tkp_results {
    hid_t file;
    struct done_key *done; /* cells already ok in the file (for --resume) */
    size_t n_done, cap_done;
};

/* The compound type of a cell row, built from one table of fields. */
enum kind { STR, I64, F64 };
#define F(name, kind) { #name, offsetof(struct tkp_cell_row, name), kind, sizeof(((struct tkp_cell_row *)0)->name) }
static const struct field {
    const char *name;
    size_t offset;
    enum kind kind;
    size_t size;
} cell_fields[] = {
    F(key, STR), F(algo, STR), F(variant, STR), F(options, STR), F(dataset, STR), F(mode, STR),
    F(backend, STR), F(batch, I64), F(vocab, I64), F(k, I64), F(p, F64), F(draws, I64),
    F(seed, I64), F(status, STR), F(message, STR), F(median_us, F64), F(q1_us, F64),
    F(q3_us, F64), F(min_us, F64), F(max_us, F64), F(mean_us, F64), F(stdev_us, F64),
    F(n_samples, I64), F(samples_offset, I64), F(throttled, I64), F(bytes_read, F64),
    F(bytes_written, F64), F(gbps, F64), F(bw_fraction, F64), F(workspace_bytes, I64),
    F(peak_device_bytes, I64), F(rows_checked, I64), F(rows_exact, I64), F(hit_rate, F64),
    F(outliers, F64), F(outlier_mass, F64), F(iterations, F64), F(rounds, F64),
    F(cell_seconds, F64),
    F(noisy, I64),
    F(run, I64),
    F(sorted, F64),
};
#undef F
#define N_FIELDS (sizeof cell_fields / sizeof cell_fields[0])

static hid_t cell_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct tkp_cell_row));
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct field *f = &cell_fields[i];
        hid_t mt = f->kind == I64 ? H5Tcopy(H5T_NATIVE_INT64)
                   : f->kind == F64 ? H5Tcopy(H5T_NATIVE_DOUBLE)
                                    : H5Tcopy(H5T_C_S1);
        if (f->kind == STR)
            H5Tset_size(mt, f->size);
        H5Tinsert(t, f->name, f->offset, mt);
        H5Tclose(mt);
    }
    return t;
}

/* The key and status columns only, for reading back what is done. */
struct key_status {
    char key[400], status[16];
};

static hid_t key_status_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct key_status));
    hid_t k = H5Tcopy(H5T_C_S1), s = H5Tcopy(H5T_C_S1);
    H5Tset_size(k, sizeof(((struct key_status *)0)->key));
    H5Tset_size(s, sizeof(((struct key_status *)0)->status));
    H5Tinsert(t, "key", offsetof(struct key_status, key), k);
    H5Tinsert(t, "status", offsetof(struct key_status, status), s);
    H5Tclose(k);
    H5Tclose(s);
    return t;
}

/* Statuses a rerun would only repeat: --resume skips these cells (error and oom run again). */
static int is_final(const char *status)
{
    return strcmp(status, "ok") == 0 || strcmp(status, "unsupported") == 0;
}

static void remember(struct tkp_results *r, const char *sweep, const char *key)
{
    if (r->n_done == r->cap_done) {
        r->cap_done = r->cap_done ? 2 * r->cap_done : 64;
        r->done = realloc(r->done, r->cap_done * sizeof *r->done);
    }
    snprintf(r->done[r->n_done].sweep, sizeof r->done[0].sweep, "%s", sweep);
    snprintf(r->done[r->n_done].key, sizeof r->done[0].key, "%s", key);
    r->n_done++;
}

static herr_t load_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct tkp_results *r = data;
    char path[128];
    snprintf(path, sizeof path, "%s/cells", name);
    if (H5Lexists(group, name, H5P_DEFAULT) <= 0 || !h5_exists(group, path))
        return 0;
    hid_t d = H5Dopen2(group, path, H5P_DEFAULT), s = H5Dget_space(d);
    hssize_t n = H5Sget_simple_extent_npoints(s);
    struct key_status *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    hid_t t = key_status_type();
    if (n > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0)
        for (hssize_t i = 0; i < n; i++)
            if (is_final(rows[i].status))
                remember(r, name, rows[i].key);
    H5Tclose(t);
    free(rows);
    H5Sclose(s);
    H5Dclose(d);
    return 0;
}

int tkp_results_open(struct tkp_results **out, const char *path, int resume,
                     struct tkp_error *err)
{
    h5_quiet();
    struct tkp_results *r = calloc(1, sizeof *r);
    int exists = access(path, F_OK) == 0;
    if (exists && !resume) {
        tkp_error_set(err, "%s exists: pass --resume to continue it, or remove it", path);
        free(r);
        return TKP_EINVAL;
    }
    if (exists) {
        r->file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
        if (r->file < 0) {
            tkp_error_set(err, "%s: not a readable HDF5 results file", path);
            free(r);
            return TKP_EINVAL;
        }
        if (h5_exists(r->file, "/sweeps")) {
            hid_t g = H5Gopen2(r->file, "/sweeps", H5P_DEFAULT);
            H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, load_sweep, r);
            H5Gclose(g);
        }
    } else {
        r->file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        if (r->file < 0) {
            tkp_error_set(err, "%s: cannot create (does its folder exist?)", path);
            free(r);
            return TKP_EINVAL;
        }
    }
    *out = r;
    return TKP_OK;
}

void tkp_results_close(struct tkp_results *r)
{
    if (!r)
        return;
    H5Fclose(r->file);
    free(r->done);
    free(r);
}

int tkp_results_attr(struct tkp_results *r, const char *name, const char *value)
{
    return h5_set_attr_str(r->file, name, value);
}

int tkp_results_attr_get(struct tkp_results *r, const char *name, char *buf, size_t n)
{
    return h5_get_attr_str(r->file, name, buf, n);
}

int tkp_results_attr_num(struct tkp_results *r, const char *name, double value)
{
    return h5_set_attr_f64(r->file, name, value);
}

static hid_t group_path(hid_t file, const char *path)
{
    if (h5_exists(file, path))
        return H5Gopen2(file, path, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    return g;
}

void tkp_results_config_link(const char *name, char *link, size_t n)
{
    snprintf(link, n, "%s", name);
    for (char *c = link; *c; c++)
        if (*c == '/')
            *c = '|';
}

int tkp_results_config(struct tkp_results *r, const char *name, const char *text)
{
    hid_t g = group_path(r->file, "/config");
    char link[256];
    tkp_results_config_link(name, link, sizeof link);
    int rc = H5Lexists(g, link, H5P_DEFAULT) > 0 ? 0 : h5_write_text(g, link, text);
    H5Gclose(g);
    H5Fflush(r->file, H5F_SCOPE_GLOBAL);
    return rc;
}

/* Open (creating when missing) an extendible 1-D dataset. */
static hid_t open_table(hid_t group, const char *name, hid_t type, hsize_t chunk)
{
    if (H5Lexists(group, name, H5P_DEFAULT) > 0)
        return H5Dopen2(group, name, H5P_DEFAULT);
    hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    hid_t s = H5Screate_simple(1, &zero, &unlimited), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t d = H5Dcreate2(group, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(s);
    return d;
}

/* Append n elements of `type` to a 1-D dataset; returns the old length or -1. */
static int64_t append(hid_t d, hid_t type, const void *data, hsize_t n)
{
    hid_t s = H5Dget_space(d);
    hsize_t len;
    H5Sget_simple_extent_dims(s, &len, NULL);
    H5Sclose(s);
    if (n == 0)
        return (int64_t)len;
    hsize_t grown = len + n;
    if (H5Dset_extent(d, &grown) < 0)
        return -1;
    s = H5Dget_space(d);
    hid_t m = H5Screate_simple(1, &n, NULL);
    H5Sselect_hyperslab(s, H5S_SELECT_SET, &len, NULL, &n, NULL);
    herr_t rc = H5Dwrite(d, type, m, s, H5P_DEFAULT, data);
    H5Sclose(m);
    H5Sclose(s);
    return rc < 0 ? -1 : (int64_t)len;
}

int tkp_results_append(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
                       const double *samples_us, int64_t n, struct tkp_error *err)
{
    char path[128];
    snprintf(path, sizeof path, "/sweeps/%s", sweep);
    hid_t g = group_path(r->file, path);
    hid_t t = cell_type();
    hid_t cells = open_table(g, "cells", t, 64);
    hid_t times = open_table(g, "samples", H5T_NATIVE_DOUBLE, 1024);
    int rc = TKP_OK;
    if (g < 0 || cells < 0 || times < 0) {
        rc = TKP_EINVAL;
    } else {
        row->n_samples = n;
        row->samples_offset = append(times, H5T_NATIVE_DOUBLE, samples_us, (hsize_t)n);
        if (row->samples_offset < 0 || append(cells, t, row, 1) < 0)
            rc = TKP_EINVAL;
    }
    if (times >= 0)
        H5Dclose(times);
    if (cells >= 0)
        H5Dclose(cells);
    H5Tclose(t);
    if (g >= 0)
        H5Gclose(g);
    if (rc == TKP_OK && H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0)
        rc = TKP_EINVAL;
    if (rc)
        tkp_error_set(err, "cannot append cell %s to the results file", row->key);
    else if (is_final(row->status))
        remember(r, sweep, row->key);
    return rc;
}

int tkp_results_done(struct tkp_results *r, const char *sweep, const char *key)
{
    for (size_t i = 0; i < r->n_done; i++)
        if (strcmp(r->done[i].sweep, sweep) == 0 && strcmp(r->done[i].key, key) == 0)
            return 1;
    return 0;
}

int64_t tkp_results_rows(struct tkp_results *r, const char *sweep)
{
    char path[160];
    snprintf(path, sizeof path, "/sweeps/%s/cells", sweep);
    if (!h5_exists(r->file, path))
        return 0;
    hid_t d = H5Dopen2(r->file, path, H5P_DEFAULT), s = H5Dget_space(d);
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    H5Dclose(d);
    return n > 0 ? (int64_t)n : 0;
}

int64_t tkp_results_handle(struct tkp_results *r) { return (int64_t)r->file; }
