/* merge_shards.c — see merge_shards.h. What each shard file records is in shard.h; a mismatch
 * names the two files and what differs (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../algos/common/gate.h"
#include "h5util.h"
#include "merge_shards.h"
#include "read_guard.h"

#define LIST_MAX 50 /* cells listed on stderr per kind; the rest are counted */

static long long attr_i64(hid_t f, const char *name)
{
    long long v = -1;
    if (H5Aexists(f, name) > 0) {
        hid_t a = H5Aopen(f, name, H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_LLONG, &v) < 0)
            v = -1;
        if (a >= 0)
            H5Aclose(a);
    }
    return v;
}

/* The /runs/<n> records of a file (named 0, 1, ...). */
static int runs_of(hid_t f)
{
    if (!h5_exists(f, "/runs"))
        return 0;
    hid_t g = H5Gopen2(f, "/runs", H5P_DEFAULT);
    H5G_info_t info;
    const int n = g >= 0 && H5Gget_info(g, &info) >= 0 ? (int)info.nlinks : 0;
    if (g >= 0)
        H5Gclose(g);
    return n;
}

/* Open one shard file: locked against a writer, its identity attributes read. */
static int open_one(struct merge_file *x, const char *path, struct tkp_error *err)
{
    memset(x, 0, sizeof *x);
    x->path = path;
    x->f = x->fd = -1;
    tkp_read_guard_at(path); /* merge reads in a guarded child (merge.c) */
    x->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (x->fd < 0) {
        tkp_error_set(err, "%s: cannot open: %s", path, strerror(errno));
        return TKP_EINVAL;
    }
    if (flock(x->fd, LOCK_SH | LOCK_NB) != 0) {
        tkp_error_set(err, "%s is in use by a topkp run (still running?); merge it once the run "
                      "ends", path);
        return TKP_EINVAL;
    }
    x->f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    char spec[64] = "";
    if (x->f < 0 || h5_get_attr_str(x->f, "shard", spec, sizeof spec) != 0) {
        tkp_error_set(err, "%s: %s", path, x->f < 0 ? "not an HDF5 results file"
                      : "not a shard file (no 'shard' attribute: written by topkp run --shard "
                        "I/N)");
        return TKP_EINVAL;
    }
    x->s.index = (int)attr_i64(x->f, "shard_index");
    x->s.count = (int)attr_i64(x->f, "shard_count");
    h5_get_attr_str(x->f, "config_hash", x->config_hash, sizeof x->config_hash);
    h5_get_attr_str(x->f, "binary_id", x->binary_id, sizeof x->binary_id);
    h5_get_attr_str(x->f, "plan_hash", x->plan_hash, sizeof x->plan_hash);
    h5_get_attr_str(x->f, "start_time", x->start, sizeof x->start);
    h5_get_attr_str(x->f, "end_time", x->end, sizeof x->end);
    x->runs = runs_of(x->f);
    if (x->s.count < 1 || x->s.index < 0 || x->s.index >= x->s.count ||
        !h5_exists(x->f, "/plan")) {
        tkp_error_set(err, "%s: its shard record (shard %s) is incomplete or damaged", path, spec);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* Does file b belong with file a? A message naming both and what differs otherwise. */
static int same_origin(const struct merge_file *a, const struct merge_file *b,
                       struct tkp_error *err)
{
    const char *what = NULL, *va = NULL, *vb = NULL;
    if (strcmp(a->config_hash, b->config_hash) != 0)
        what = "come from different configs: config_hash", va = a->config_hash,
        vb = b->config_hash;
    else if (strcmp(a->binary_id, b->binary_id) != 0)
        what = "were written by different binaries: binary_id", va = a->binary_id,
        vb = b->binary_id;
    if (what) {
        tkp_error_set(err, "%s and %s %s %s and %s", a->path, b->path, what, va, vb);
        return TKP_EINVAL;
    }
    if (a->s.count != b->s.count) {
        tkp_error_set(err, "%s and %s split the plan differently: shard %d/%d and %d/%d (N %d "
                      "and %d)", a->path, b->path, a->s.index, a->s.count, b->s.index,
                      b->s.count, a->s.count, b->s.count);
        return TKP_EINVAL;
    }
    if (strcmp(a->plan_hash, b->plan_hash) != 0) {
        tkp_error_set(err, "%s and %s have different plans: plan_hash %s and %s (another --only "
                      "or --sweep?)", a->path, b->path, a->plan_hash, b->plan_hash);
        return TKP_EINVAL;
    }
    if (a->s.index == b->s.index) {
        tkp_error_set(err, "%s and %s are both shard %d/%d: each shard is merged once", a->path,
                      b->path, a->s.index, a->s.count);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

static const struct merge_set *sort_set; /* qsort's context: one merge at a time */

static int by_key(const void *a, const void *b)
{
    const struct tkp_plan_entry *x = &sort_set->plan[*(const size_t *)a],
                                *y = &sort_set->plan[*(const size_t *)b];
    int c = strcmp(x->sweep, y->sweep);
    if (!c)
        c = strcmp(x->key, y->key);
    return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

size_t merge_find(const struct merge_set *m, const char *sweep, const char *key)
{
    size_t lo = 0, hi = m->n_plan;
    while (lo < hi) { /* the first position not below (sweep, key) */
        const size_t mid = lo + (hi - lo) / 2;
        const struct tkp_plan_entry *e = &m->plan[m->by_key[mid]];
        int c = strcmp(e->sweep, sweep);
        if (!c)
            c = strcmp(e->key, key);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n_plan && strcmp(m->plan[m->by_key[lo]].sweep, sweep) == 0 &&
        strcmp(m->plan[m->by_key[lo]].key, key) == 0)
        return lo;
    return (size_t)-1;
}

/* Read the first file's /plan, index it by key and list its sweeps in plan order. */
static int index_plan(struct merge_set *m, struct tkp_error *err)
{
    const struct merge_file *f = &m->files[0];
    tkp_read_guard_at(f->path);
    hid_t d = H5Dopen2(f->f, "/plan", H5P_DEFAULT), ft = d < 0 ? -1 : H5Dget_type(d);
    const hssize_t n = ft < 0 ? -1 : h5_rows_checked(d, H5Tget_size(ft));
    hid_t t = (hid_t)tkp_plan_entry_type();
    if (ft >= 0)
        H5Tclose(ft);
    m->n_plan = n > 0 ? (size_t)n : 0;
    m->plan = calloc(m->n_plan + 1, sizeof *m->plan);
    m->by_key = calloc(m->n_plan + 1, sizeof *m->by_key);
    m->held = calloc(m->n_plan + 1, sizeof *m->held);
    m->sweeps = calloc(m->n_plan + 1, sizeof *m->sweeps);
    int rc = n < 0 || !m->plan || !m->by_key || !m->held || !m->sweeps ||
             (n > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->plan) < 0);
    H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    if (rc) {
        tkp_error_set(err, "%s: its /plan cannot be read", f->path);
        return TKP_EINVAL;
    }
    for (size_t i = 0; i < m->n_plan; i++) {
        m->by_key[i] = i;
        size_t j = 0;
        while (j < m->n_sweeps && strcmp(m->sweeps[j], m->plan[i].sweep) != 0)
            j++;
        if (j == m->n_sweeps)
            snprintf(m->sweeps[m->n_sweeps++], sizeof m->sweeps[0], "%s", m->plan[i].sweep);
    }
    sort_set = m;
    qsort(m->by_key, m->n_plan, sizeof *m->by_key, by_key);
    return TKP_OK;
}

static int by_shard_index(const void *a, const void *b)
{
    return ((const struct merge_file *)a)->s.index - ((const struct merge_file *)b)->s.index;
}

int merge_open(struct merge_set *m, const char *const *paths, int n, struct tkp_error *err)
{
    memset(m, 0, sizeof *m);
    h5_quiet();
    m->files = calloc((size_t)n, sizeof *m->files);
    if (!m->files) {
        tkp_error_set(err, "out of host memory for %d shard files", n);
        return TKP_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        struct stat a, b;
        for (int j = 0; j < i; j++)
            if (stat(paths[i], &a) == 0 && stat(paths[j], &b) == 0 && a.st_dev == b.st_dev &&
                a.st_ino == b.st_ino) {
                tkp_error_set(err, "%s and %s are the same file: each shard is merged once",
                              paths[j], paths[i]);
                return TKP_EINVAL;
            }
        m->n = i + 1;
        int rc = open_one(&m->files[i], paths[i], err);
        for (int j = 0; j < i && rc == TKP_OK; j++)
            rc = same_origin(&m->files[j], &m->files[i], err);
        if (rc)
            return rc;
    }
    qsort(m->files, (size_t)n, sizeof *m->files, by_shard_index);
    for (int i = 1; i < n; i++)
        m->files[i].run_offset = m->files[i - 1].run_offset + m->files[i - 1].runs;
    return index_plan(m, err);
}

void merge_close(struct merge_set *m)
{
    for (int i = 0; m->files && i < m->n; i++) {
        tkp_read_guard_at(m->files[i].path); /* closing reads what the cache still holds */
        if (m->files[i].f >= 0)
            H5Fclose(m->files[i].f);
        if (m->files[i].fd >= 0)
            close(m->files[i].fd);
    }
    free(m->files);
    free(m->plan);
    free(m->by_key);
    free(m->held);
    free(m->sweeps);
    memset(m, 0, sizeof *m);
}

int merge_read_rows(const struct merge_file *f, const char *sweep, struct tkp_cell_row **rows,
                    size_t *n, struct tkp_error *err)
{
    *rows = NULL;
    *n = 0;
    tkp_read_guard_at(f->path);
    if (!h5_exists(f->f, "/sweeps"))
        return TKP_OK;
    hid_t g = H5Gopen2(f->f, "/sweeps", H5P_DEFAULT);
    struct h5_cells c;
    char why[256] = "";
    const int opened = g < 0 ? -1 : h5_cells_open(g, sweep, &c, why, sizeof why);
    int rc = TKP_OK;
    if (opened > 0) {
        hid_t t = (hid_t)tkp_results_row_type();
        *rows = calloc((size_t)c.n + 1, sizeof **rows);
        if (!*rows || (c.n > 0 && H5Dread(c.d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) < 0))
            snprintf(why, sizeof why, "its rows cannot be read");
        else
            *n = (size_t)c.n;
        H5Tclose(t);
        h5_cells_close(&c);
    }
    if (g >= 0)
        H5Gclose(g);
    if (opened < 0 || why[0]) {
        tkp_error_set(err, "%s: /sweeps/%s/cells: %s", f->path, sweep, why[0] ? why : "unreadable");
        free(*rows);
        *rows = NULL;
        *n = 0;
        rc = TKP_EINVAL;
    }
    return rc;
}

/* Mark the plan position of a row of file `fi`; a row of another shard's cell (or of none) is
 * counted in *listed and listed on stderr. A second row of a cell in its own file is a --resume's rerun. */
static void take_row(struct merge_set *m, int fi, const struct tkp_cell_row *row,
                     const char *sweep, size_t *listed)
{
    const struct merge_file *f = &m->files[fi];
    size_t at = merge_find(m, sweep, row->key), owner = (size_t)-1;
    for (; at != (size_t)-1 && at < m->n_plan; at++) {
        const struct tkp_plan_entry *e = &m->plan[m->by_key[at]];
        if (strcmp(e->sweep, sweep) != 0 || strcmp(e->key, row->key) != 0)
            break;
        if (e->shard == f->s.index && m->held[m->by_key[at]] == 0) {
            m->held[m->by_key[at]] = 1 + fi;
            return;
        }
        if (e->shard == f->s.index)
            return;
        owner = (size_t)e->shard;
    }
    if ((*listed)++ < LIST_MAX)
        fprintf(stderr, "  doubled: %s\t%s\t%s\t%s  (in %s, shard %d/%d; %s)\n",
                tkp_gate_shown(sweep), tkp_gate_shown(row->algo), tkp_gate_shown(row->variant),
                tkp_gate_shown(row->key), f->path, f->s.index, f->s.count,
                owner == (size_t)-1 ? "the plan has no such cell" : "it belongs to another shard");
}

/* A sweep a file holds that the plan has not. */
static herr_t foreign_sweep(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g, (void)info;
    const struct merge_set *m = data;
    for (size_t i = 0; i < m->n_sweeps; i++)
        if (strcmp(m->sweeps[i], name) == 0)
            return 0;
    fprintf(stderr, "  doubled: sweep %s, which the plan has not\n", tkp_gate_shown(name));
    return 1;
}

/* The cells of the plan no file holds, listed with the shard that should: sweep, algo,
 * variant, key. */
static size_t list_missing(const struct merge_set *m)
{
    size_t missing = 0;
    for (size_t i = 0; i < m->n_plan; i++) {
        if (m->held[i])
            continue;
        const struct tkp_plan_entry *e = &m->plan[i];
        const char *file = "no file given";
        for (int f = 0; f < m->n; f++)
            if (m->files[f].s.index == e->shard)
                file = m->files[f].path;
        if (missing++ < LIST_MAX)
            fprintf(stderr, "  missing: %s\t%s\t%s\t%s  (shard %lld/%d: %s)\n",
                    tkp_gate_shown(e->sweep), tkp_gate_shown(e->algo), tkp_gate_shown(e->variant),
                    tkp_gate_shown(e->key), (long long)e->shard, m->files[0].s.count, file);
    }
    if (missing > LIST_MAX)
        fprintf(stderr, "  ... and %zu more missing\n", missing - LIST_MAX);
    return missing;
}

int merge_check(struct merge_set *m, struct tkp_error *err)
{
    size_t doubled = 0;
    for (int fi = 0; fi < m->n; fi++) {
        tkp_read_guard_at(m->files[fi].path);
        if (h5_exists(m->files[fi].f, "/sweeps")) {
            hid_t g = H5Gopen2(m->files[fi].f, "/sweeps", H5P_DEFAULT);
            doubled += H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, foreign_sweep, m) != 0;
            H5Gclose(g);
        }
        for (size_t s = 0; s < m->n_sweeps; s++) {
            struct tkp_cell_row *rows;
            size_t n;
            int rc = merge_read_rows(&m->files[fi], m->sweeps[s], &rows, &n, err);
            for (size_t r = 0; r < n; r++) /* counts (and lists) what is doubled */
                take_row(m, fi, &rows[r], m->sweeps[s], &doubled);
            free(rows);
            if (rc)
                return rc;
        }
    }
    if (doubled > LIST_MAX)
        fprintf(stderr, "  ... and %zu more doubled\n", doubled - LIST_MAX);
    const size_t missing = list_missing(m);
    if (!missing && !doubled)
        return TKP_OK;
    char shards[256] = "";
    for (int s = 0, used = 0, n = m->files[0].s.count; s < n && used < 200; s++) {
        int given = 0;
        for (int f = 0; f < m->n; f++)
            given |= m->files[f].s.index == s;
        if (!given)
            used += snprintf(shards + used, sizeof shards - (size_t)used, "%s%d/%d",
                             used ? ", " : "; no file given for shard ", s, n);
    }
    tkp_error_set(err, "%zu of %zu cells missing, %zu doubled (listed above)%s; resume an "
                  "incomplete shard with topkp run CONFIG --shard I/N -o FILE --resume and merge "
                  "again", missing, m->n_plan, doubled, shards);
    return TKP_EINVAL;
}
