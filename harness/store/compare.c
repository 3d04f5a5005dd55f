/* compare.c — `topkp compare A.h5 B.h5` (compare.h). Each file is read in a child process
 * (read_guard.h: a corrupt file that crashes libhdf5 is an error naming it), which writes the
 * columns compare needs and every cell's repetition times to a temporary file in this binary's
 * own record layout; this process matches the cells, computes the intervals and prints. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "compare.h"
#include "h5util.h"
#include "limits_files.h"
#include "read_guard.h"

/* ---- statistics ---- */

int tkp_median_interval(const double *sorted, size_t n, double alpha, double *lo, double *hi)
{
    double log_pmf = -(double)n * log(2.0), cdf = 0; /* P(Bin(n, 1/2) = j), P(<= j) */
    size_t l = 0;
    for (size_t j = 0; 2 * j < n; j++) {
        cdf += exp(log_pmf);
        if (cdf > alpha / 2)
            break;
        l = j + 1;
        log_pmf += log((double)(n - j) / (double)(j + 1));
    }
    if (l == 0)
        return -1;
    *lo = sorted[l - 1];
    *hi = sorted[n - l];
    return 0;
}

enum tkp_verdict tkp_compare_samples(double median_a, const double *a, size_t na,
                                     double median_b, const double *b, size_t nb,
                                     double threshold, double *ratio, double *lo, double *hi)
{
    const double each = 0.025; /* each median at 97.5 %: the ratio's interval at >= 95 % */
    double alo, ahi, blo, bhi;
    *ratio = median_a > 0 && median_b >= 0 ? median_b / median_a : NAN;
    *lo = *hi = NAN;
    if (isnan(*ratio))
        return TKP_UNCHANGED;
    if (tkp_median_interval(a, na, each, &alo, &ahi) ||
        tkp_median_interval(b, nb, each, &blo, &bhi) || !(alo > 0))
        return TKP_NO_INTERVAL;
    *lo = blo / ahi;
    *hi = bhi / alo;
    if (*lo > 1 && *ratio > 1 + threshold)
        return TKP_SLOWER;
    if (*hi < 1 && *ratio < 1 / (1 + threshold))
        return TKP_FASTER;
    return TKP_UNCHANGED;
}

/* ---- the child: a results file into records ---- */

/* The columns compare reads (those of results_row.h's struct tkp_cell_row it needs). */
struct cmp_row {
    char key[TKP_RESULT_KEY_BYTES], algo[32], variant[64], options[256], dataset[256], mode[16],
        backend[8], status[16], dtype[16]; /* dtype: empty in a file written before it */
    int64_t batch, vocab, k;
    double p, median_us;
    int64_t n_samples, samples_offset;
};

/* One record of the temporary file: a row and its sweep; n_samples doubles follow it. */
struct cmp_record {
    char sweep[128];
    struct cmp_row row;
};

static const char cmp_magic[16] = "topkp-compare-1";

#define STR H5_KIND_STR /* the member kinds of h5util.h, short */
#define I64 H5_KIND_I64
#define F64 H5_KIND_F64
#define F(name, kind, required)                                                            \
    { #name, offsetof(struct cmp_row, name), kind, sizeof(((struct cmp_row *)0)->name), required }
static const struct cmp_field {
    const char *name;
    size_t offset;
    enum h5_kind kind;
    size_t size;
    int required; /* without it a table is not a results table; the others may be absent */
} cmp_fields[] = {
    F(key, STR, 1), F(algo, STR, 0), F(variant, STR, 0), F(options, STR, 0),
    F(dataset, STR, 0), F(mode, STR, 0), F(backend, STR, 0), F(status, STR, 1), F(dtype, STR, 0),
    F(batch, I64, 0), F(vocab, I64, 0), F(k, I64, 0), F(p, F64, 0), F(median_us, F64, 1),
    F(n_samples, I64, 1), F(samples_offset, I64, 1),
};
#undef F
#define N_CMP_FIELDS (sizeof cmp_fields / sizeof cmp_fields[0])

/* The memory type of cmp_row holding the members the file's compound type `ft` has; -1 with
 * `why` set when a required one is missing or of another class. */
static hid_t row_type(hid_t ft, char *why, size_t n)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct cmp_row));
    for (size_t i = 0; i < N_CMP_FIELDS && t >= 0; i++) {
        const struct cmp_field *f = &cmp_fields[i];
        int m = H5Tget_member_index(ft, f->name);
        H5T_class_t c = H5T_NO_CLASS;
        if (m >= 0) {
            hid_t mt = H5Tget_member_type(ft, (unsigned)m);
            c = mt < 0 ? H5T_NO_CLASS : H5Tget_class(mt);
            if (mt >= 0)
                H5Tclose(mt);
        }
        const H5T_class_t want = f->kind == STR ? H5T_STRING : f->kind == I64 ? H5T_INTEGER
                                                                              : H5T_FLOAT;
        if (c != want) {
            if (!f->required)
                continue;
            snprintf(why, n, m < 0 ? "it has no column '%s'" : "its column '%s' has another type",
                     f->name);
            H5Tclose(t);
            return -1;
        }
        hid_t mem = h5_member_type(f->kind, f->size);
        H5Tinsert(t, f->name, f->offset, mem);
        H5Tclose(mem);
    }
    return t;
}

/* A 1-D dataset of numbers, read whole as doubles (malloc'd; *len its length); a missing one
 * is empty. -1 when it is not a 1-D table of numbers or cannot be read. */
static int read_samples(hid_t group, const char *path, double **out, int64_t *len)
{
    *out = NULL;
    *len = 0;
    if (!h5_exists(group, path))
        return 0;
    hid_t d = H5Dopen2(group, path, H5P_DEFAULT), t = d < 0 ? -1 : H5Dget_type(d);
    hssize_t n = t < 0 ? -1 : h5_rows_checked(d, H5Tget_size(t));
    int rc = d < 0 || t < 0 ||
                     (H5Tget_class(t) != H5T_FLOAT && H5Tget_class(t) != H5T_INTEGER)
                 ? -1 : n < 0 ? -2 : 0;
    if (!rc && n > 0) {
        *out = malloc(sizeof(double) * (size_t)n);
        rc = !*out || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0 ? -1
                                                                                           : 0;
    }
    *len = rc ? 0 : (int64_t)n;
    if (rc) {
        free(*out);
        *out = NULL;
    }
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    return rc;
}

/* What the child's sweep iteration carries. */
struct dump_ctx {
    FILE *out;
    const char *only; /* --sweep, or NULL */
    int tables;       /* cells tables found */
    char why[600];    /* set: this file is not read (iteration stops) */
};

/* Every row of one sweep's opened cells table `d` (n rows) as records. */
static void dump_rows(struct dump_ctx *x, hid_t group, const char *name, hid_t d, hid_t t,
                      hssize_t n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/samples", name);
    double *samples = NULL;
    int64_t len = 0;
    struct cmp_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    const int samples_rc = rows ? read_samples(group, path, &samples, &len) : -1;
    if (samples_rc)
        snprintf(x->why, sizeof x->why, "/sweeps/%s/samples %s", name,
                 samples_rc == -2 ? "declares more rows than the file stores (a corrupt file?)"
                                  : "cannot be read");
    else if (n > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
        snprintf(x->why, sizeof x->why, "/sweeps/%s/cells cannot be read (a corrupt file?)", name);
    for (hssize_t i = 0; !x->why[0] && i < n; i++) {
        const struct cmp_row *r = &rows[i];
        if (r->n_samples < 0 || (r->n_samples > 0 && (r->samples_offset < 0 ||
                                                      r->samples_offset > len - r->n_samples))) {
            snprintf(x->why, sizeof x->why, "/sweeps/%s/cells row %lld: its %lld samples at %lld "
                     "lie outside /sweeps/%s/samples (%lld values; a corrupt file?)", name,
                     (long long)i, (long long)r->n_samples, (long long)r->samples_offset, name,
                     (long long)len);
            break;
        }
        struct cmp_record rec;
        memset(&rec, 0, sizeof rec);
        snprintf(rec.sweep, sizeof rec.sweep, "%s", name);
        rec.row = *r;
        fwrite(&rec, sizeof rec, 1, x->out);
        fwrite(samples + (r->n_samples ? r->samples_offset : 0), sizeof(double),
               (size_t)r->n_samples, x->out);
    }
    free(samples);
    free(rows);
}

/* One sweep (an H5Literate callback over /sweeps): its cells table checked and dumped. */
static herr_t dump_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct dump_ctx *x = data;
    if (x->only && strcmp(x->only, name) != 0)
        return 0;
    struct h5_cells c;
    char why[300] = "";
    const int opened = h5_cells_open(group, name, &c, why, sizeof why);
    if (opened == 0)
        return 0;
    x->tables++;
    hid_t t = opened > 0 ? row_type(c.ft, why, sizeof why) : -1;
    if (why[0])
        snprintf(x->why, sizeof x->why, "/sweeps/%s/cells is not a topkp results table: %s",
                 name, why);
    else
        dump_rows(x, group, name, c.d, t, c.n);
    if (t >= 0)
        H5Tclose(t);
    h5_cells_close(&c);
    return x->why[0] ? 1 : 0;
}

/* The child's reader (tkp_read_fn): every cell of `path` (or of the sweep `arg`) to `out`. */
static int dump_file(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        tkp_read_open_failed(path, err);
        return TKP_EINVAL;
    }
    struct dump_ctx x = { .out = out, .only = arg, .tables = 0, .why = "" };
    fwrite(cmp_magic, sizeof cmp_magic, 1, out);
    const int logits = h5_exists(f, "/logits");
    if (h5_exists(f, "/sweeps")) {
        hid_t g = H5Gopen2(f, "/sweeps", H5P_DEFAULT);
        if ((g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, dump_sweep, &x) < 0) &&
            !x.why[0])
            snprintf(x.why, sizeof x.why, "/sweeps cannot be read (a corrupt file?)");
        if (g >= 0)
            H5Gclose(g);
    }
    H5Fclose(f);
    if (x.why[0])
        tkp_error_set(err, "%s: %s", path, x.why);
    else if (!x.tables && x.only)
        tkp_error_set(err, "%s: no sweep named %s with cells", path, x.only);
    else if (!x.tables)
        tkp_error_set(err, "%s: not a topkp results file (%s)", path,
                      logits ? "a logits file: it holds /logits" : "no /sweeps/<name>/cells table");
    return x.why[0] || !x.tables ? TKP_EINVAL : TKP_OK;
}

/* ---- this process: the records back, matched ---- */

struct cell {
    struct cmp_record r;
    double *samples; /* sorted */
    size_t order;    /* the row's place in its file */
    int rep;         /* the row that stands for its (sweep, key) */
    int matched;     /* a cell of B that A has */
};

struct cell_set {
    struct cell *c;
    size_t n, cap;
    struct cell **by_key; /* the representatives, sorted by (sweep, key) */
    size_t n_keys;
};

static void set_free(struct cell_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->c[i].samples);
    free(s->c);
    free(s->by_key);
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One record and its samples from the temporary file; 1 at its end, -1 when it is cut short. */
static int read_record(FILE *in, struct cell *c)
{
    memset(c, 0, sizeof *c);
    size_t got = fread(&c->r, 1, sizeof c->r, in);
    if (got == 0 && feof(in))
        return 1;
    const int64_t n = c->r.row.n_samples;
    if (got != sizeof c->r || n < 0 || n > TKP_MAX_LOGITS_ELEMS)
        return -1;
    c->r.sweep[sizeof c->r.sweep - 1] = 0;
    c->samples = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!c->samples || fread(c->samples, sizeof(double), (size_t)n, in) != (size_t)n)
        return -1;
    qsort(c->samples, (size_t)n, sizeof(double), by_value);
    return 0;
}

/* Every string member read into a fixed buffer ends inside it. */
static void terminate_strings(struct cmp_row *r)
{
    for (size_t i = 0; i < N_CMP_FIELDS; i++)
        if (cmp_fields[i].kind == STR)
            ((char *)r)[cmp_fields[i].offset + cmp_fields[i].size - 1] = 0;
}

/* The records the child wrote to `in`. */
static int parse_records(FILE *in, const char *path, struct cell_set *s, struct tkp_error *err)
{
    char magic[sizeof cmp_magic];
    rewind(in);
    if (fread(magic, sizeof magic, 1, in) != 1 || memcmp(magic, cmp_magic, sizeof magic) != 0) {
        tkp_error_set(err, "%s: the reading child wrote nothing", path);
        return TKP_EINVAL;
    }
    for (;;) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 256;
            struct cell *grown = realloc(s->c, cap * sizeof *grown);
            if (!grown) {
                tkp_error_set(err, "%s: out of host memory for its cells", path);
                return TKP_ENOMEM;
            }
            s->c = grown;
            s->cap = cap;
        }
        int rc = read_record(in, &s->c[s->n]);
        if (rc == 1)
            return TKP_OK;
        if (rc < 0) {
            free(s->c[s->n].samples);
            tkp_error_set(err, "%s: its cells came back cut short (%s)", path,
                          ferror(in) ? strerror(errno) : "a corrupt file?");
            return TKP_EINVAL;
        }
        terminate_strings(&s->c[s->n].r.row);
        s->c[s->n].order = s->n;
        s->n++;
    }
}

/* Read every cell of `path` (or of `sweep`) through a child process. */
static int load(const char *path, const char *sweep, struct cell_set *s, struct tkp_error *err)
{
    memset(s, 0, sizeof *s);
    FILE *tmp = tmpfile();
    if (!tmp) {
        tkp_error_set(err, "%s: no temporary file to read it into: %s", path, strerror(errno));
        return TKP_EINVAL;
    }
    int crashed;
    int rc = tkp_read_guarded(dump_file, path, sweep, tmp, err, &crashed);
    if (!rc)
        rc = parse_records(tmp, path, s, err);
    fclose(tmp);
    return rc;
}

static int by_identity(const struct cell *a, const struct cell *b)
{
    int c = strcmp(a->r.sweep, b->r.sweep);
    return c ? c : strcmp(a->r.row.key, b->r.row.key);
}

/* Sorted by (sweep, key), then by the row's place in the file. */
static int by_identity_then_order(const void *x, const void *y)
{
    const struct cell *a = *(struct cell *const *)x, *b = *(struct cell *const *)y;
    int c = by_identity(a, b);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* One row stands for each (sweep, key): its last ok row, else its last row (a cell an earlier
 * run left as error or oom and a --resume ran again is there twice). */
static int pick_representatives(struct cell_set *s)
{
    struct cell **all = malloc(sizeof *all * (s->n ? s->n : 1));
    if (!all)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        all[i] = &s->c[i];
    qsort(all, s->n, sizeof *all, by_identity_then_order);
    size_t keys = 0;
    for (size_t i = 0; i < s->n;) {
        size_t end = i, pick = i;
        for (; end < s->n && by_identity(all[end], all[i]) == 0; end++)
            if (strcmp(all[end]->r.row.status, "ok") == 0 ||
                strcmp(all[pick]->r.row.status, "ok") != 0)
                pick = end;
        all[pick]->rep = 1;
        all[keys++] = all[pick];
        i = end;
    }
    s->by_key = all;
    s->n_keys = keys;
    return 0;
}

static int by_identity_ptr(const void *x, const void *y)
{
    return by_identity(*(struct cell *const *)x, *(struct cell *const *)y);
}

static struct cell *find(const struct cell_set *s, const struct cell *like)
{
    struct cell **hit = bsearch(&like, s->by_key, s->n_keys, sizeof *s->by_key, by_identity_ptr);
    return hit ? *hit : NULL;
}

/* ---- output ---- */

static const char *const verdict_names[TKP_N_VERDICTS] = {
    "faster", "slower", "unchanged", "no-interval", "only-in-A", "only-in-B", "not-timed",
};

static void print_num(FILE *out, const char *format, double v)
{
    if (isnan(v))
        fputs("\tnan", out);
    else
        fprintf(out, format, v);
}

static void print_header(FILE *out)
{
    fputs("sweep\talgo\tvariant\toptions\tdataset\tvocab\tbatch\tk\tp\tmode\tbackend\tdtype\t"
          "a_median_us\tb_median_us\tratio\tci_low\tci_high\tverdict\n", out);
}

/* A string column as the TSV export prints it: escaped by the gate (docs/ROBUSTNESS.md,
 * "Outputs"). */
static void print_text(FILE *out, const char *s)
{
    fputc('\t', out);
    tkp_gate_fput_escaped(out, s);
}

/* One line: the cell's identity (from whichever file has it), both medians (NaN where a file
 * lacks the cell or did not time it), the ratio, its interval and the verdict. */
static void print_line(FILE *out, const struct cell *a, const struct cell *b, double ratio,
                       double lo, double hi, enum tkp_verdict v)
{
    const struct cmp_record *r = a ? &a->r : &b->r;
    const struct cmp_row *w = &r->row;
    const int a_ok = a && strcmp(a->r.row.status, "ok") == 0;
    const int b_ok = b && strcmp(b->r.row.status, "ok") == 0;
    tkp_gate_fput_escaped(out, r->sweep);
    print_text(out, w->algo);
    print_text(out, w->variant);
    print_text(out, w->options);
    print_text(out, w->dataset);
    fprintf(out, "\t%lld\t%lld\t%lld\t%.9g", (long long)w->vocab, (long long)w->batch,
            (long long)w->k, w->p);
    print_text(out, w->mode);
    print_text(out, w->backend);
    print_text(out, w->dtype[0] ? w->dtype : "f32"); /* a file written before the column: f32 */
    print_num(out, "\t%.6g", a_ok ? a->r.row.median_us : NAN);
    print_num(out, "\t%.6g", b_ok ? b->r.row.median_us : NAN);
    print_num(out, "\t%.4f", ratio);
    print_num(out, "\t%.4f", lo);
    print_num(out, "\t%.4f", hi);
    fprintf(out, "\t%s\n", verdict_names[v]);
}

/* The verdict of a cell both files have (and print its line). */
static enum tkp_verdict compare_pair(FILE *out, const struct cell *a, const struct cell *b,
                                     double threshold)
{
    double ratio = NAN, lo = NAN, hi = NAN;
    enum tkp_verdict v = TKP_NOT_TIMED;
    const struct cmp_row *x = &a->r.row, *y = &b->r.row;
    if (strcmp(x->status, "ok") == 0 && strcmp(y->status, "ok") == 0 && x->n_samples > 0 &&
        y->n_samples > 0)
        v = tkp_compare_samples(x->median_us, a->samples, (size_t)x->n_samples, y->median_us,
                                b->samples, (size_t)y->n_samples, threshold, &ratio, &lo, &hi);
    print_line(out, a, b, ratio, lo, hi, v);
    return v;
}

/* The table: A's cells in A's order, then the cells only B has in B's; the counts per verdict. */
static void compare_sets(FILE *out, struct cell_set *a, struct cell_set *b, double threshold,
                         size_t counts[TKP_N_VERDICTS])
{
    print_header(out);
    for (size_t i = 0; i < a->n; i++) {
        if (!a->c[i].rep)
            continue;
        struct cell *m = find(b, &a->c[i]);
        if (m)
            m->matched = 1;
        if (m)
            counts[compare_pair(out, &a->c[i], m, threshold)]++;
        else {
            print_line(out, &a->c[i], NULL, NAN, NAN, NAN, TKP_ONLY_A);
            counts[TKP_ONLY_A]++;
        }
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->c[i].rep && !b->c[i].matched) {
            print_line(out, NULL, &b->c[i], NAN, NAN, NAN, TKP_ONLY_B);
            counts[TKP_ONLY_B]++;
        }
}

/* ---- the command ---- */

int tkp_compare_files(const char *path_a, const char *path_b, const char *sweep,
                      double threshold, FILE *out, struct tkp_error *err)
{
    struct cell_set a, b;
    memset(&b, 0, sizeof b);
    int rc = load(path_a, sweep, &a, err);
    if (!rc)
        rc = load(path_b, sweep, &b, err);
    if (!rc && (pick_representatives(&a) || pick_representatives(&b))) {
        tkp_error_set(err, "out of host memory for the cells");
        rc = TKP_ENOMEM;
    }
    if (!rc) {
        size_t counts[TKP_N_VERDICTS] = { 0 };
        compare_sets(out, &a, &b, threshold, counts);
        fprintf(out, "%zu faster, %zu slower, %zu unchanged, %zu without an interval, "
                "%zu only in A, %zu only in B, %zu not timed in both\n", counts[TKP_FASTER],
                counts[TKP_SLOWER], counts[TKP_UNCHANGED], counts[TKP_NO_INTERVAL],
                counts[TKP_ONLY_A], counts[TKP_ONLY_B], counts[TKP_NOT_TIMED]);
        if (fflush(out) != 0) {
            tkp_error_set(err, "cannot write the comparison (%s)", strerror(errno));
            rc = TKP_EINVAL;
        }
    }
    set_free(&a);
    set_free(&b);
    return rc;
}
