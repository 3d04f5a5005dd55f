/* merge.c — see merge.h. The merged file is a results file of the usual layout (results.h),
 * written through tkp_results_append: the first shard's root attributes (less its shard's own:
 * shard, shard_index, shard_cells, device_index), the earliest start_time and latest end_time,
 * `merged_shards` = N and this command line; /config and /plan as the shards have them; every
 * shard's /runs/<k>, in shard order, as /runs/<offset + k> with the rows' `run` column moved
 * the same way and each record's `first_rows` recomputed; each sweep's rows in plan order (a
 * cell's rows in its file's order), their samples copied and samples_offset set anew. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5util.h"
#include "interrupt.h"
#include "limits_files.h"
#include "merge.h"
#include "merge_shards.h"
#include "out_file.h"
#include "provenance.h"
#include "read_guard.h"

/* Root attributes that describe one shard, not the merged whole. */
static int shard_own(const char *name)
{
    static const char *const own[] = { "shard", "shard_index", "shard_cells", "device_index",
                                       "start_time", "end_time", "command_line", NULL };
    for (int i = 0; own[i]; i++)
        if (strcmp(own[i], name) == 0)
            return 1;
    return 0;
}

/* Copy one attribute as stored (its own type and shape; HDF5 has no attribute copy). */
static herr_t copy_attr(hid_t src, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    const hid_t dst = *(const hid_t *)data;
    if (shard_own(name))
        return 0;
    hid_t a = H5Aopen(src, name, H5P_DEFAULT), t = H5Aget_type(a), s = H5Aget_space(a);
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    const size_t size = t < 0 ? 0 : H5Tget_size(t);
    void *buf = n >= 0 && size > 0 && (double)n * (double)size <= TKP_H5_MAX_ATTR_BYTES
                    ? calloc((size_t)n + 1, size)
                    : NULL;
    int rc = !buf || H5Aread(a, t, buf) < 0;
    if (!rc) {
        hid_t b = H5Acreate2(dst, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
        rc = b < 0 || H5Awrite(b, t, buf) < 0;
        if (b >= 0)
            H5Aclose(b);
        if (H5Tdetect_class(t, H5T_VLEN) > 0 || H5Tis_variable_str(t) > 0)
            H5Dvlen_reclaim(t, s, H5P_DEFAULT, buf);
    }
    free(buf);
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return rc ? -1 : 0;
}

/* Copy object `from` of shard f to `to` in the merged file; an error naming the shard. */
static int copy_object(const struct merge_file *f, const char *from, hid_t out, const char *to,
                       hid_t lcpl, struct tkp_error *err)
{
    tkp_read_guard_at(f->path);
    if (H5Ocopy(f->f, from, out, to, H5P_DEFAULT, lcpl) >= 0)
        return TKP_OK;
    tkp_error_set(err, "%s: cannot copy its %s into the merged file (a damaged shard, or a full "
                  "disk?)", f->path, from);
    return TKP_EINVAL;
}

/* The merged file's /config, /plan (the first shard's) and every shard's /runs. */
static int copy_records(hid_t out, const struct merge_set *m, struct tkp_error *err)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    int rc = copy_object(&m->files[0], "/config", out, "/config", lcpl, err);
    if (rc == TKP_OK)
        rc = copy_object(&m->files[0], "/plan", out, "/plan", lcpl, err);
    for (int i = 0; rc == TKP_OK && i < m->n; i++)
        for (int k = 0; rc == TKP_OK && k < m->files[i].runs; k++) {
            char from[32], to[32];
            snprintf(from, sizeof from, "/runs/%d", k);
            snprintf(to, sizeof to, "/runs/%d", m->files[i].run_offset + k);
            rc = copy_object(&m->files[i], from, out, to, lcpl, err);
        }
    H5Pclose(lcpl);
    return rc;
}

/* The root of the merged file, then copy_records. */
static int write_records(hid_t out, const struct merge_set *m, int argc, char **argv,
                         struct tkp_error *err)
{
    const struct merge_file *first = &m->files[0];
    tkp_read_guard_at(first->path);
    hid_t root = H5Gopen2(first->f, "/", H5P_DEFAULT);
    int bad = root < 0 || H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attr,
                                      &(hid_t){ out }) < 0;
    if (root >= 0)
        H5Gclose(root);
    if (bad) {
        tkp_error_set(err, "%s: cannot copy its root attributes into the merged file (a damaged "
                      "shard, or a full disk?)", first->path);
        return TKP_EINVAL;
    }
    char start[64], end[64], line[4096];
    snprintf(start, sizeof start, "%s", first->start);
    snprintf(end, sizeof end, "%s", first->end);
    for (int i = 1; i < m->n; i++) { /* ISO 8601 UTC times order as strings */
        if (strcmp(m->files[i].start, start) < 0)
            snprintf(start, sizeof start, "%s", m->files[i].start);
        if (strcmp(m->files[i].end, end) > 0)
            snprintf(end, sizeof end, "%s", m->files[i].end);
    }
    tkp_command_line(argc, argv, line, sizeof line);
    if (h5_set_attr_str(out, "start_time", start) | h5_set_attr_str(out, "end_time", end) |
        h5_set_attr_str(out, "command_line", line) |
        h5_set_attr_i64(out, "merged_shards", first->s.count)) {
        tkp_error_set(err, "cannot write the merged file's root attributes (disk full or an I/O "
                      "error?)");
        return TKP_EINVAL;
    }
    return copy_records(out, m, err);
}

/* One row to write: where its cell is in the plan, and where the row came from. */
struct item {
    size_t pos;
    int file;
    size_t row;
};

static int plan_then_file(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    if (x->file != y->file)
        return x->file - y->file;
    return (x->row > y->row) - (x->row < y->row);
}

/* n_samples repetition times from samples_offset of /sweeps/<sweep>/samples of file f. */
static double *read_samples(hid_t f, const char *sweep, const struct tkp_cell_row *row)
{
    double *v = malloc(sizeof(double) * (size_t)(row->n_samples > 0 ? row->n_samples : 1));
    if (!v || row->n_samples <= 0)
        return v;
    char path[160];
    snprintf(path, sizeof path, "/sweeps/%s/samples", sweep);
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT), s = d < 0 ? -1 : H5Dget_space(d);
    hsize_t at = (hsize_t)row->samples_offset, n = (hsize_t)row->n_samples;
    hid_t mem = H5Screate_simple(1, &n, NULL);
    int bad = s < 0 || row->samples_offset < 0 ||
              H5Sselect_hyperslab(s, H5S_SELECT_SET, &at, NULL, &n, NULL) < 0 ||
              H5Dread(d, H5T_NATIVE_DOUBLE, mem, s, H5P_DEFAULT, v) < 0;
    H5Sclose(mem);
    if (s >= 0)
        H5Sclose(s);
    if (d >= 0)
        H5Dclose(d);
    if (bad) {
        free(v);
        return NULL;
    }
    return v;
}

/* first[run * n_sweeps + sweep]: the first merged row of that run in that sweep (-1: none). */
struct first_rows {
    int64_t *first;
    int64_t *rows; /* rows per sweep */
    int runs;      /* the merged /runs records */
};

/* Write one sweep's rows from every file in plan order. */
static int write_sweep(struct tkp_results *res, const struct merge_set *m, size_t sweep,
                       struct first_rows *fr, struct tkp_error *err)
{
    const char *name = m->sweeps[sweep];
    struct tkp_cell_row *rows[m->n];
    size_t n[m->n], total = 0;
    int rc = TKP_OK;
    for (int f = 0; f < m->n; f++) {
        rows[f] = NULL;
        n[f] = 0;
        if (rc == TKP_OK)
            rc = merge_read_rows(&m->files[f], name, &rows[f], &n[f], err);
        total += n[f];
    }
    struct item *items = malloc(sizeof *items * (total + 1));
    size_t k = 0;
    for (int f = 0; items && rc == TKP_OK && f < m->n; f++)
        for (size_t r = 0; r < n[f]; r++)
            items[k++] = (struct item){ m->by_key[merge_find(m, name, rows[f][r].key)], f, r };
    if (!items && rc == TKP_OK) {
        tkp_error_set(err, "out of host memory for %zu rows of sweep %s", total, name);
        rc = TKP_ENOMEM;
    }
    if (rc == TKP_OK)
        qsort(items, k, sizeof *items, plan_then_file);
    for (size_t i = 0; rc == TKP_OK && i < k; i++) {
        const struct merge_file *src = &m->files[items[i].file];
        struct tkp_cell_row row = rows[items[i].file][items[i].row];
        tkp_read_guard_at(src->path);
        double *samples = read_samples(src->f, name, &row);
        if (!samples) {
            tkp_error_set(err, "%s: /sweeps/%s/samples: cannot read the %lld samples of cell %s",
                          src->path, name, (long long)row.n_samples, row.key);
            rc = TKP_EINVAL;
            break;
        }
        if (row.run < 0 || row.run >= src->runs) {
            tkp_error_set(err, "%s: sweep %s: cell %s names run %lld, but the file has %d run "
                          "records", src->path, name, row.key, (long long)row.run, src->runs);
            free(samples);
            rc = TKP_EINVAL;
            break;
        }
        row.run += src->run_offset;
        int64_t *first = &fr->first[(size_t)row.run * m->n_sweeps + sweep];
        if (*first < 0)
            *first = fr->rows[sweep];
        rc = tkp_results_append(res, name, &row, samples, row.n_samples, err);
        fr->rows[sweep]++;
        free(samples);
    }
    free(items);
    for (int f = 0; f < m->n; f++)
        free(rows[f]);
    return rc;
}

/* Each merged run record's first_rows: every sweep of the plan, in plan order, with the first
 * row of that run in it (a sweep the run wrote nothing into: its row count). */
static int write_first_rows(hid_t out, const struct merge_set *m, const struct first_rows *fr)
{
    int rc = 0;
    for (int run = 0; run < fr->runs; run++) {
        char path[32], buf[4096];
        size_t used = 0;
        buf[0] = 0;
        for (size_t s = 0; s < m->n_sweeps && used < sizeof buf; s++) {
            const int64_t at = fr->first[(size_t)run * m->n_sweeps + s];
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s=%lld", used ? "," : "",
                                     m->sweeps[s], (long long)(at < 0 ? fr->rows[s] : at));
        }
        snprintf(path, sizeof path, "/runs/%d", run);
        hid_t g = H5Gopen2(out, path, H5P_DEFAULT);
        rc |= g < 0 || h5_set_attr_str(g, "first_rows", buf);
        if (g >= 0)
            H5Gclose(g);
    }
    return rc;
}

/* Write the merged file at `path` (a fresh results file). */
static int write_merged(const char *path, const struct merge_set *m, int argc, char **argv,
                        struct tkp_error *err)
{
    struct tkp_results *res;
    int rc = tkp_results_open(&res, path, 0, err);
    if (rc)
        return rc;
    const hid_t out = (hid_t)tkp_results_handle(res);
    const int runs = m->files[m->n - 1].run_offset + m->files[m->n - 1].runs;
    struct first_rows fr = { calloc((size_t)runs * m->n_sweeps + 1, sizeof(int64_t)),
                             calloc(m->n_sweeps + 1, sizeof(int64_t)), runs };
    if (!fr.first || !fr.rows) {
        tkp_error_set(err, "out of host memory for %d run records", runs);
        rc = TKP_ENOMEM;
    }
    for (size_t i = 0; fr.first && i < (size_t)runs * m->n_sweeps; i++)
        fr.first[i] = -1;
    if (rc == TKP_OK)
        rc = write_records(out, m, argc, argv, err);
    for (size_t s = 0; rc == TKP_OK && s < m->n_sweeps; s++) {
        rc = write_sweep(res, m, s, &fr, err);
        tkp_pause_point("merge-writing");
    }
    if (rc == TKP_OK && (write_first_rows(out, m, &fr) ||
                         H5Fflush(out, H5F_SCOPE_GLOBAL) < 0)) {
        tkp_error_set(err, "%s: cannot write the run records' first rows", path);
        rc = TKP_EINVAL;
    }
    free(fr.first);
    free(fr.rows);
    tkp_results_close(res);
    return rc;
}

/* What the merging child gets: the command's arguments and the temporary to write. */
struct merge_job {
    const struct tkp_merge_args *a;
    const char *tmp;
};

/* The guarded child (read_guard.h): read the shards, check them, write the merged file into
 * the temporary. `first` (the first shard) is unused: the job names every file. */
static int merge_in_child(const char *first, const void *arg, FILE *out, struct tkp_error *err)
{
    (void)first;
    (void)out;
    const struct merge_job *j = arg;
    struct merge_set m;
    int rc = merge_open(&m, j->a->shards, j->a->n_shards, err);
    if (rc == TKP_OK)
        rc = merge_check(&m, err);
    if (rc == TKP_OK)
        rc = write_merged(j->tmp, &m, j->a->argc, j->a->argv, err);
    if (rc == TKP_OK)
        fprintf(stderr, "merged %d shards (%zu cells) into %s\n", m.n, m.n_plan, j->a->out);
    merge_close(&m);
    return rc;
}

/* A guarded child reading one shard alone: its identity, /plan, every sweep's rows and every
 * row's samples (what merge reads of it, but the root attributes and the copied records). */
static int probe_shard(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    (void)arg, (void)out;
    struct merge_set m;
    int rc = merge_open(&m, &path, 1, err);
    for (size_t s = 0; rc == TKP_OK && s < m.n_sweeps; s++) {
        struct tkp_cell_row *rows;
        size_t n;
        rc = merge_read_rows(&m.files[0], m.sweeps[s], &rows, &n, err);
        for (size_t r = 0; rc == TKP_OK && r < n; r++) {
            double *samples = read_samples(m.files[0].f, m.sweeps[s], &rows[r]);
            if (!samples) {
                tkp_error_set(err, "%s: /sweeps/%s/samples: cannot read the samples of cell %s",
                              path, m.sweeps[s], rows[r].key);
                rc = TKP_EINVAL;
            }
            free(samples);
        }
        free(rows);
    }
    merge_close(&m);
    return rc;
}

/* The merging child crashed: libhdf5 may have damaged its memory reading one shard and
 * crashed later, on another, so each shard is read again alone (probe_shard). err names the
 * first that fails so; when none does, every shard. */
static void name_the_crash(const struct tkp_merge_args *a, struct tkp_error *err)
{
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    for (int i = 0; i < a->n_shards; i++) {
        struct tkp_error alone = { 0 };
        int crashed;
        if (tkp_read_guarded(probe_shard, a->shards[i], NULL, stderr, &alone, &crashed)) {
            tkp_error_set(err, "%s; not merged", alone.msg);
            return;
        }
    }
    char list[512] = "";
    for (int i = 0, used = 0; i < a->n_shards && used < (int)sizeof list; i++)
        used += snprintf(list + used, sizeof list - (size_t)used, "%s%s", i ? ", " : "",
                         a->shards[i]);
    tkp_error_set(err, "%s, and no shard crashes it read alone: one of %s is damaged; not merged",
                  why, list);
}

int tkp_merge(const struct tkp_merge_args *a, struct tkp_error *err)
{
    struct tkp_out o;
    int rc = tkp_out_begin(&o, a->out, a->shards, a->n_shards, a->force, err);
    if (rc)
        return rc;
    const struct merge_job job = { a, o.tmp };
    /* it reads every shard and writes about as much: twice the CPU of a reader */
    const struct tkp_guard g = { merge_in_child, a->shards, a->n_shards, 2 };
    int crashed;
    rc = tkp_run_guarded(&g, &job, stderr, err, &crashed);
    if (crashed == 1) /* a crash, not a time limit (the hanging shard is named already) */
        name_the_crash(a, err);
    return tkp_out_finish(&o, rc, err);
}
