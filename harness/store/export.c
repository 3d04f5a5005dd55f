/* export.c — `topkp export` and `topkp info`: any results file to text, one row per cell with
 * a first column `sweep` and then every column by name (docs/RESULTS.md, "Results"): TSV (the
 * default, what gnuplot and the figures read), CSV with RFC 4180 quoting, or JSON (an array of
 * objects, numbers as numbers, NaN as null); and its provenance attributes. The reader is
 * generic over the compound members it finds, so older files export too; a quiet axis's column
 * an older file lacks (axes.h, TKP_AXIS_QUIET: dtype) is printed last with its default. A corrupt file can
 * crash or hang HDF5 itself, so each command reads the file in a child process
 * (read_guard.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "axes.h"
#include "h5util.h"
#include "read_guard.h"
#include "results.h"

struct export_ctx {
    FILE *out;
    const char *only;
    enum tkp_export_format format;
    int header_done, failed;
    int64_t rows; /* rows written so far (JSON puts a comma before every row but the first) */
    char header[4096];
};

int tkp_export_format_of(const char *name, enum tkp_export_format *format)
{
    static const char *const names[] = { "tsv", "csv", "json" };
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *format = (enum tkp_export_format)i;
            return 0;
        }
    return -1;
}

/* TSV: the text escaped by the gate (docs/ROBUSTNESS.md, "Outputs"): a tab, a line break, any
 * control byte or byte that is not UTF-8 as \xHH, '\' as \\, so each row is one line of the
 * same columns whatever a name, or a string of an older file, holds. */
static void tsv_text(FILE *out, const char *s)
{
    tkp_gate_fput_escaped(out, s);
}

/* CSV (RFC 4180): quoted when it holds a comma, a quote or a line break; quotes doubled. */
static void csv_text(FILE *out, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* JSON: a quoted string, `"` `\` and control characters escaped; a byte that is not valid
 * UTF-8 becomes U+FFFD, so the output always parses. */
static void json_text(FILE *out, const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    fputc('"', out);
    while (*s) {
        int n = tkp_utf8_length(s, 4); /* a NUL ends any sequence early */
        if (n == 0) {
            fputs("\\ufffd", out);
            s++;
            continue;
        }
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else if (*s == '\t')
            fputs("\\t", out);
        else if (*s == '\r')
            fputs("\\r", out);
        else if (*s < 0x20)
            fprintf(out, "\\u%04x", *s);
        else
            fwrite(s, 1, (size_t)n, out);
        s += n;
    }
    fputc('"', out);
}

static void print_text(FILE *out, enum tkp_export_format f, const char *s)
{
    if (f == TKP_EXPORT_JSON)
        json_text(out, s);
    else if (f == TKP_EXPORT_CSV)
        csv_text(out, s);
    else
        tsv_text(out, s);
}

/* TSV and CSV: %.9g, NaN as `nan` (a column that does not apply to the cell). JSON: the
 * shortest of %.15g, %.16g, %.17g that reads back as the same double, with ".0" when that
 * looks like an integer (a float column stays float for JSON readers); NaN and the
 * infinities, which JSON has no number for, as null. */
static void print_double(FILE *out, enum tkp_export_format f, double v)
{
    if (f != TKP_EXPORT_JSON) {
        if (isnan(v))
            fputs("nan", out);
        else
            fprintf(out, "%.9g", v);
        return;
    }
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
    if (!buf[strcspn(buf, ".e")])
        fputs(".0", out);
}

/* One member of a row (a compound member of type `member` at `data`). */
static void print_value(FILE *out, enum tkp_export_format f, hid_t member, const char *data)
{
    H5T_class_t c = H5Tget_class(member);
    size_t size = H5Tget_size(member);
    if (c == H5T_STRING) {
        char buf[1024];
        size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
        memcpy(buf, data, n);
        buf[n] = 0;
        print_text(out, f, buf);
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
        print_double(out, f, v);
    } else if (f == TKP_EXPORT_JSON) {
        fputs("null", out); /* a member of another class: no value, but valid JSON */
    }
}

/* The quiet axes whose column the table (memory type mt) lacks, written before them: export
 * prints each last, with its default (what the table's cells are). Returns how many. */
static int missing_axes(hid_t mt, const struct tkp_axis **out)
{
    int n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name && n < TKP_MAX_AXES; a++)
        if ((a->flags & TKP_AXIS_QUIET) && H5Tget_member_index(mt, a->name) < 0)
            out[n++] = a;
    return n;
}

/* The value of a missing quiet axis a in `format`: its default (text quoted in JSON). */
static void print_default(FILE *out, enum tkp_export_format f, const struct tkp_axis *a)
{
    char def[64];
    tkp_axis_default_text(a, def, sizeof def);
    if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM)
        print_text(out, f, def);
    else
        fputs(def, out);
}

/* The column names of a sweep, "sweep" first, tab-separated (to compare sweeps' columns). */
static void header_of(hid_t mt, char *header, size_t n)
{
    size_t used = (size_t)snprintf(header, n, "sweep");
    for (int m = 0; m < H5Tget_nmembers(mt) && used < n; m++) {
        char *mn = H5Tget_member_name(mt, (unsigned)m);
        used += (size_t)snprintf(header + used, n - used, "\t%s", mn ? mn : "");
        H5free_memory(mn);
    }
    const struct tkp_axis *missing[TKP_MAX_AXES];
    for (int i = 0, k = missing_axes(mt, missing); i < k && used < n; i++)
        used += (size_t)snprintf(header + used, n - used, "\t%s", missing[i]->name);
}

/* The header line: TSV as it is, CSV each name quoted as needed; JSON opens the array. */
static void print_header(struct export_ctx *x, hid_t mt)
{
    if (x->format == TKP_EXPORT_JSON) {
        fputc('[', x->out);
        return;
    }
    if (x->format == TKP_EXPORT_TSV) {
        fprintf(x->out, "%s\n", x->header);
        return;
    }
    csv_text(x->out, "sweep");
    for (int m = 0; m < H5Tget_nmembers(mt); m++) {
        char *mn = H5Tget_member_name(mt, (unsigned)m);
        fputc(',', x->out);
        csv_text(x->out, mn ? mn : "");
        H5free_memory(mn);
    }
    const struct tkp_axis *missing[TKP_MAX_AXES];
    for (int i = 0, k = missing_axes(mt, missing); i < k; i++) {
        fputc(',', x->out);
        csv_text(x->out, missing[i]->name);
    }
    fputc('\n', x->out);
}

/* One row: TSV/CSV fields in column order; JSON an object {"sweep": ..., "<column>": ...}. */
static void print_row(struct export_ctx *x, const char *sweep, hid_t mt, const char *row)
{
    const enum tkp_export_format f = x->format;
    const char sep = f == TKP_EXPORT_CSV ? ',' : '\t';
    if (f == TKP_EXPORT_JSON)
        fputs(x->rows ? ",\n{\"sweep\": " : "\n{\"sweep\": ", x->out);
    print_text(x->out, f, sweep); /* an older file's name, escaped on reading */
    for (int m = 0; m < H5Tget_nmembers(mt); m++) {
        hid_t member = H5Tget_member_type(mt, (unsigned)m);
        if (f == TKP_EXPORT_JSON) {
            char *mn = H5Tget_member_name(mt, (unsigned)m);
            fputs(", ", x->out);
            json_text(x->out, mn ? mn : "");
            fputs(": ", x->out);
            H5free_memory(mn);
        } else {
            fputc(sep, x->out);
        }
        print_value(x->out, f, member, row + H5Tget_member_offset(mt, (unsigned)m));
        H5Tclose(member);
    }
    const struct tkp_axis *missing[TKP_MAX_AXES];
    for (int i = 0, k = missing_axes(mt, missing); i < k; i++) {
        if (f == TKP_EXPORT_JSON) {
            fputs(", ", x->out);
            json_text(x->out, missing[i]->name);
            fputs(": ", x->out);
        } else {
            fputc(sep, x->out);
        }
        print_default(x->out, f, missing[i]);
    }
    fputs(f == TKP_EXPORT_JSON ? "}" : "\n", x->out);
    x->rows++;
}

/* Every row of one opened cells table (its memory type mt, n rows). */
static void export_rows(struct export_ctx *x, const char *name, hid_t d, hid_t mt, hssize_t n)
{
    size_t row_size = H5Tget_size(mt);
    int members = H5Tget_nmembers(mt);
    char *rows = n >= 0 && members > 0 && row_size > 0 ? malloc(row_size * (size_t)(n > 0 ? n : 1))
                                                      : NULL;
    if (!rows) {
        fprintf(stderr, "export: sweep %s: its cells table cannot be read\n", name);
        x->failed = 1;
    } else if (!x->failed && n > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
        fprintf(stderr, "export: sweep %s: its cells cannot be read (a corrupt file?)\n", name);
        x->failed = 1;
    } else if (!x->failed) {
        for (hssize_t i = 0; i < n; i++)
            print_row(x, name, mt, rows + (size_t)i * row_size);
    }
    free(rows);
}

static herr_t export_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct export_ctx *x = data;
    if (x->only && strcmp(x->only, name) != 0)
        return 0;
    struct h5_cells c;
    char why[128] = "";
    const int opened = h5_cells_open(group, name, &c, why, sizeof why);
    if (opened == 0)
        return 0;
    hid_t mt = opened > 0 ? H5Tget_native_type(c.ft, H5T_DIR_DEFAULT) : -1;
    if (mt < 0) {
        fprintf(stderr, "export: sweep %s: its cells table cannot be opened%s%s\n", name,
                why[0] ? ": " : "", why);
        x->failed = 1;
    } else {
        char header[4096];
        header_of(mt, header, sizeof header);
        if (!x->header_done) {
            snprintf(x->header, sizeof x->header, "%s", header);
            print_header(x, mt);
            x->header_done = 1;
        } else if (strcmp(header, x->header) != 0) {
            fprintf(stderr, "export: sweep %s has other columns; export it alone with --sweep\n",
                    name);
            x->failed = 1;
        }
        export_rows(x, name, c.d, mt, c.n);
        H5Tclose(mt);
    }
    h5_cells_close(&c);
    return mt >= 0 ? 0 : 1;
}

/* What export's child reads with: the sweep (or NULL for all) and the format. */
struct export_req {
    const char *sweep;
    enum tkp_export_format format;
};

static int export_file(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    const struct export_req *req = arg;
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        tkp_read_open_failed(path, err);
        return TKP_EINVAL;
    }
    struct export_ctx x = { .out = out, .only = req->sweep, .format = req->format };
    if (h5_exists(f, "/sweeps")) {
        hid_t g = H5Gopen2(f, "/sweeps", H5P_DEFAULT);
        if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, export_sweep, &x) < 0)
            x.failed = 1;
        if (g >= 0)
            H5Gclose(g);
    }
    H5Fclose(f);
    if (x.header_done && req->format == TKP_EXPORT_JSON)
        fputs("\n]\n", out);
    if (x.failed) {
        tkp_error_set(err, "%s: not every sweep could be exported (a corrupt file? see above)",
                      path);
        return TKP_EINVAL;
    }
    if (!x.header_done) {
        tkp_error_set(err, "%s: no sweep%s%s with cells", path, req->sweep ? " named " : "",
                      req->sweep ? req->sweep : "");
        return TKP_EINVAL;
    }
    return TKP_OK;
}

static herr_t print_attr(hid_t obj, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    char value[4096];
    if (h5_get_attr_str(obj, name, value, sizeof value) == 0) {
        tkp_gate_fput_escaped((FILE *)data, name); /* an older file's text, escaped on reading */
        fputc('\t', (FILE *)data);
        tkp_gate_fput_escaped((FILE *)data, value);
        fputc('\n', (FILE *)data);
    }
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

static int info_file(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    (void)arg;
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        tkp_read_open_failed(path, err);
        return TKP_EINVAL;
    }
    hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    if (root < 0 || H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, NULL, print_attr, out) < 0) {
        if (root >= 0)
            H5Gclose(root);
        H5Fclose(f);
        tkp_error_set(err, "%s: its root attributes cannot be read (a corrupt file?)", path);
        return TKP_EINVAL;
    }
    H5Gclose(root);
    if (h5_exists(f, "/runs")) { /* every run into the file (names 0, 1, ...; by name) */
        hid_t g = H5Gopen2(f, "/runs", H5P_DEFAULT);
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_run, out);
        H5Gclose(g);
    }
    H5Fclose(f);
    return TKP_OK;
}

int tkp_results_export_as(const char *path, const char *sweep, enum tkp_export_format format,
                          FILE *out, struct tkp_error *err)
{
    const struct export_req req = { sweep, format };
    int crashed;
    return tkp_read_guarded(export_file, path, &req, out, err, &crashed);
}

int tkp_results_export(const char *path, const char *sweep, FILE *out, struct tkp_error *err)
{
    return tkp_results_export_as(path, sweep, TKP_EXPORT_TSV, out, err);
}

int tkp_results_info(const char *path, FILE *out, struct tkp_error *err)
{
    int crashed;
    return tkp_read_guarded(info_file, path, NULL, out, err, &crashed);
}

static herr_t read_one_text(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    (void)data;
    free(h5_read_text(group, name));
    return 0;
}

static int info_file(const char *path, const void *arg, FILE *out, struct tkp_error *err);

/* What --resume reads before it writes: the cells as export reads them, the root's and every
 * run record's attributes as info reads them (the parent reads git_commit, binary_id and the
 * runs' to check the file is this run's), then every config text under /config (run_record.c
 * compares them with the run's), so that a corrupt one that crashes the library is found here,
 * in the child. */
static int resume_reads(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    int rc = export_file(path, arg, out, err);
    if (info_file(path, NULL, out, err) != TKP_OK)
        rc = rc ? rc : TKP_EINVAL;
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0 && h5_exists(f, "/config")) {
        hid_t g = H5Gopen2(f, "/config", H5P_DEFAULT);
        if (g >= 0) {
            H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, read_one_text, NULL);
            H5Gclose(g);
        }
    }
    if (f >= 0)
        H5Fclose(f);
    return rc;
}

int tkp_results_read_crashes(const char *path, struct tkp_error *err)
{
    FILE *sink = fopen("/dev/null", "w");
    if (!sink)
        return 0;
    const struct export_req req = { NULL, TKP_EXPORT_TSV };
    struct tkp_error ignored;
    int crashed;
    tkp_read_guarded(resume_reads, path, &req, sink, &ignored, &crashed);
    fclose(sink);
    if (crashed)
        tkp_error_set(err, "%s", ignored.msg);
    return crashed;
}
