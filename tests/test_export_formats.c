/* test_export_formats.c — `topkp export --format tsv|csv|json` and what a results file stores where
 * a column does not apply (docs/RESULTS.md, "Results"): NaN in the file, `nan` in TSV and CSV, null
 * in JSON; RFC 4180 quoting of a variant label with a comma and a quote; the JSON parses with
 * Python's json module; scripts/topkp_results.py and docs/RESULTS.md's pandas recipe select rows by
 * a string column. The Python tests skip when /usr/bin/python3 (or h5py) is absent. */
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5util.h"
#include "cli_util.h"
#include "test.h"

#define PYTHON "/usr/bin/python3"
#define LABEL "a,\"b\"" /* a variant label with a comma and a quote */

static char out[1 << 18];

/* A small run, once per process: naive_sort (no module statistics), rtopk (top-p: unsupported,
 * untimed) and an ablation whose variant label needs CSV quoting. Its path, or NULL. */
static const char *format_results(void)
{
    static char h5[512];
    static int state; /* 0 not made, 1 ok, 2 failed */
    if (state)
        return state == 1 ? h5 : NULL;
    state = 2;
    const char *cfg = write_scratch(
        "formats.lua",
        "sweep \"fmt\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 300, batch = 2, k = 5,\n"
        "  p = { 0.5, 1.0 }, timing = { min_reps = 2, max_reps = 2 } }\n"
        "ablation \"abl\" { base = { vocab = 300, batch = 2, k = 5, p = 1.0,\n"
        "  timing = { min_reps = 2, max_reps = 2 } },\n"
        "  variants = { ['" LABEL "'] = \"naive_sort\", plain = \"qrita\" } }\n");
    snprintf(h5, sizeof h5, "%s/formats.h5", scratch_dir());
    if (run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, h5) != 0) {
        fprintf(stderr, "  run failed: %.2000s\n", out);
        return NULL;
    }
    state = 1;
    return h5;
}

/* The TSV line (after the header) of the first cell of `algo` with status `status`. */
static int tsv_line_of(const char *tsv, const char *algo, const char *status, char *line,
                       size_t n)
{
    int a = tsv_column(tsv, "algo"), s = tsv_column(tsv, "status");
    for (const char *l = strchr(tsv, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        char va[64], vs[32];
        tsv_field(l + 1, a, va, sizeof va);
        tsv_field(l + 1, s, vs, sizeof vs);
        if (strcmp(va, algo) == 0 && strcmp(vs, status) == 0) {
            size_t len = strcspn(l + 1, "\n");
            snprintf(line, n, "%.*s", (int)len, l + 1);
            return 1;
        }
    }
    return 0;
}

TEST(export_formats_tsv_prints_nan_where_a_column_does_not_apply)
{
    const char *h5 = format_results();
    REQUIRE(h5, "no results to export");
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) == 0, "export: %s", out);
    char line[8192], v[64];
    REQUIRE(tsv_line_of(out, "naive_sort", "ok", line, sizeof line), "no ok naive_sort row");
    static const char *const none[] = { "hit_rate", "outliers", "outlier_mass", "iterations",
                                        "rounds", "sorted" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        tsv_field(line, tsv_column(out, none[i]), v, sizeof v);
        CHECK(strcmp(v, "nan") == 0, "naive_sort's %s is '%s', not nan", none[i], v);
    }
    tsv_field(line, tsv_column(out, "median_us"), v, sizeof v);
    CHECK(atof(v) > 0, "an ok naive_sort cell has median_us '%s'", v);
    REQUIRE(tsv_line_of(out, "rtopk", "ok", line, sizeof line), "no ok rtopk row");
    tsv_field(line, tsv_column(out, "iterations"), v, sizeof v);
    CHECK(strcmp(v, "nan") != 0 && atof(v) > 0, "rtopk reports iterations, got '%s'", v);
    tsv_field(line, tsv_column(out, "hit_rate"), v, sizeof v);
    CHECK(strcmp(v, "nan") == 0, "rtopk has no hit rate, got '%s'", v);
    REQUIRE(tsv_line_of(out, "rtopk", "unsupported", line, sizeof line), "no unsupported row");
    static const char *const untimed[] = { "median_us", "q1_us", "q3_us", "min_us", "max_us",
                                           "mean_us", "stdev_us", "gbps", "bw_fraction" };
    for (size_t i = 0; i < sizeof untimed / sizeof untimed[0]; i++) {
        tsv_field(line, tsv_column(out, untimed[i]), v, sizeof v);
        CHECK(strcmp(v, "nan") == 0, "the unsupported cell's %s is '%s', not nan", untimed[i], v);
    }
    tsv_field(line, tsv_column(out, "n_samples"), v, sizeof v);
    CHECK(strcmp(v, "0") == 0, "the unsupported cell has n_samples '%s'", v);
}

/* Columns algo, status, median_us and hit_rate of every row of /sweeps/fmt/cells. */
struct nan_row {
    char algo[32], status[16];
    double median_us, hit_rate;
};

TEST(export_formats_nan_is_stored_in_the_file)
{
    const char *h5 = format_results();
    REQUIRE(h5, "no results");
    h5_quiet();
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(f >= 0, "cannot open %s", h5);
    hid_t d = H5Dopen2(f, "/sweeps/fmt/cells", H5P_DEFAULT);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct nan_row)), s32 = H5Tcopy(H5T_C_S1);
    hid_t s16 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s32, 32);
    H5Tset_size(s16, 16);
    H5Tinsert(t, "algo", offsetof(struct nan_row, algo), s32);
    H5Tinsert(t, "status", offsetof(struct nan_row, status), s16);
    H5Tinsert(t, "median_us", offsetof(struct nan_row, median_us), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "hit_rate", offsetof(struct nan_row, hit_rate), H5T_NATIVE_DOUBLE);
    struct nan_row rows[8];
    hid_t sp = H5Dget_space(d);
    const hssize_t n = H5Sget_simple_extent_npoints(sp);
    int read = n == 4 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0;
    H5Sclose(sp);
    H5Tclose(s16);
    H5Tclose(s32);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
    REQUIRE(read, "cannot read the 4 rows of /sweeps/fmt/cells (%lld rows)", (long long)n);
    int naive = 0, unsupported = 0;
    for (int i = 0; i < 4; i++) {
        if (strcmp(rows[i].algo, "naive_sort") == 0) {
            naive++;
            CHECK(isnan(rows[i].hit_rate), "naive_sort's stored hit_rate is %g, not NaN",
                  rows[i].hit_rate);
        }
        if (strcmp(rows[i].status, "unsupported") == 0) {
            unsupported++;
            CHECK(isnan(rows[i].median_us), "an unsupported cell's stored median_us is %g",
                  rows[i].median_us);
        }
    }
    CHECK(naive == 2 && unsupported == 1, "%d naive_sort rows, %d unsupported", naive,
          unsupported);
}

/* One RFC 4180 record from *p into fields (at most max, each cut to 512 bytes); *p moves past
 * its line end. Returns the number of fields, -1 on a malformed quoted field. */
static int csv_record(const char **p, char fields[][512], int max)
{
    const char *s = *p;
    int n = 0;
    for (;;) {
        char buf[512];
        size_t len = 0;
        if (*s == '"') {
            for (s++;; s++) {
                if (!*s)
                    return -1;
                if (*s == '"' && s[1] == '"')
                    s++;
                else if (*s == '"')
                    break;
                if (len < sizeof buf - 1)
                    buf[len++] = *s;
            }
            s++;
            if (*s && *s != ',' && *s != '\n')
                return -1; /* text after a closing quote */
        } else {
            for (; *s && *s != ',' && *s != '\n'; s++) {
                if (*s == '"')
                    return -1; /* a quote inside an unquoted field */
                if (len < sizeof buf - 1)
                    buf[len++] = *s;
            }
        }
        buf[len] = 0;
        if (n < max)
            snprintf(fields[n], 512, "%s", buf);
        n++;
        if (*s != ',')
            break;
        s++;
    }
    *p = *s == '\n' ? s + 1 : s;
    return n;
}

static int index_of(char fields[][512], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(fields[i], name) == 0)
            return i;
    return -1;
}

TEST(export_formats_csv_quotes_a_label_with_a_comma_and_a_quote)
{
    const char *h5 = format_results();
    REQUIRE(h5, "no results");
    REQUIRE(run_cmd(out, sizeof out, "%s export %s --format csv 2>/dev/null", topkp_bin(), h5) == 0,
            "export --format csv: %s", out);
    CHECK(strstr(out, ",\"a,\"\"b\"\"\",") != NULL,
          "the label is not quoted as \"a,\"\"b\"\"\" between commas: %.600s", out);
    static char header[64][512], fields[64][512];
    const char *p = out;
    int columns = csv_record(&p, header, 64);
    int variant = index_of(header, columns, "variant"), message = index_of(header, columns, "message");
    int hit = index_of(header, columns, "hit_rate"), algo = index_of(header, columns, "algo");
    REQUIRE(columns > 40 && variant > 0 && message > 0 && hit > 0, "header: %d columns", columns);
    int rows = 0, labelled = 0, commas = 0;
    while (*p) {
        int n = csv_record(&p, fields, 64);
        REQUIRE(n == columns, "row %d has %d fields, the header %d", rows, n, columns);
        rows++;
        labelled += strcmp(fields[variant], LABEL) == 0;
        commas += strchr(fields[message], ',') != NULL;
        if (strcmp(fields[algo], "naive_sort") == 0)
            CHECK(strcmp(fields[hit], "nan") == 0, "naive_sort's hit_rate in CSV: '%s'", fields[hit]);
    }
    CHECK(rows == 6, "%d CSV rows, expected 6", rows);
    CHECK(labelled == 1, "the variant label %s came back %d times", LABEL, labelled);
    CHECK(commas == 1, "the unsupported cell's message (with a comma) came back %d times", commas);
    CHECK(run_cmd(out, sizeof out, "%s export %s --format xml", topkp_bin(), h5) == 2,
          "an unknown format must be a usage error: %s", out);
}

/* Does /usr/bin/python3 import these modules (a Python expression over u = importlib.util)? */
static int python_has(const char *modules_expr)
{
    if (access(PYTHON, X_OK) != 0)
        return 0;
    return run_cmd(NULL, 0, "%s -c 'import importlib.util as u, sys; sys.exit(not (%s))'",
                   PYTHON, modules_expr) == 0;
}

TEST(export_formats_json_parses_with_null_for_nan)
{
    if (!python_has("True")) {
        test_skip("no " PYTHON);
        return;
    }
    const char *h5 = format_results();
    REQUIRE(h5, "no results");
    char json[512];
    snprintf(json, sizeof json, "%s/formats.json", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s export %s --format json > %s", topkp_bin(), h5, json) == 0,
            "export --format json: %s", out);
    const char *script =
        "import json, sys\n"
        "rows = json.load(open(sys.argv[1]))\n"
        "assert isinstance(rows, list) and len(rows) == 6, len(rows)\n"
        "naive = [r for r in rows if r['algo'] == 'naive_sort' and r['variant'] == '']\n"
        "assert len(naive) == 2 and all(r['hit_rate'] is None for r in naive), naive\n"
        "bad = [r for r in rows if r['status'] == 'unsupported']\n"
        "assert len(bad) == 1 and bad[0]['median_us'] is None and ',' in bad[0]['message']\n"
        "assert any(r['variant'] == sys.argv[2] for r in rows), 'label'\n"
        "assert all(type(r['batch']) is int and type(r['p']) is float for r in rows)\n"
        "assert all(list(r)[0] == 'sweep' for r in rows)\n"
        "ok = [r for r in rows if r['status'] == 'ok']\n"
        "assert all(r['median_us'] > 0 for r in ok)\n"
        "print('json ok')\n";
    const char *py = write_scratch("check_json.py", script);
    CHECK(run_cmd(out, sizeof out, "%s %s %s '%s'", PYTHON, py, json, LABEL) == 0 &&
              strstr(out, "json ok"),
          "the JSON export does not parse as expected: %.2000s", out);
}

TEST(export_formats_pandas_recipe_selects_rows)
{
    if (!python_has("u.find_spec(\"h5py\") and u.find_spec(\"numpy\")")) {
        test_skip("h5py/numpy not installed for " PYTHON " (scripts/install-python-deps.sh)");
        return;
    }
    REQUIRE(access("scripts/topkp_results.py", R_OK) == 0,
            "scripts/topkp_results.py not found (run the tests from the repository root)");
    const char *h5 = format_results();
    REQUIRE(h5, "no results");
    /* README.md's recipe, with and without pandas (a list of dicts without it) */
    const char *script =
        "import math, sys\n"
        "sys.path.insert(0, 'scripts')\n"
        "import topkp_results\n"
        "df = topkp_results.load(sys.argv[1])\n"
        "if topkp_results.pandas is not None:\n"
        "    q = df[df.algo == 'qrita']\n"
        "    assert len(q) == 1 and q.iloc[0].variant == 'plain', q\n"
        "    assert df[df.algo == 'naive_sort'].hit_rate.isna().all()\n"
        "    assert len(df[df.sweep == 'fmt']) == 4\n"
        "    import h5py, pandas\n"
        "    raw = pandas.DataFrame(h5py.File(sys.argv[1], 'r')['/sweeps/fmt/cells'][:])\n"
        "    raw = raw.apply(lambda c: c.str.decode('utf-8') if c.dtype == object else c)\n"
        "    assert len(raw[raw.algo == 'rtopk']) == 2, raw.algo\n"
        "    print('pandas ok')\n"
        "topkp_results.pandas = None\n"
        "rows = topkp_results.load(sys.argv[1], 'fmt')\n"
        "assert [r['algo'] for r in rows].count('rtopk') == 2 and type(rows[0]['algo']) is str\n"
        "assert all(math.isnan(r['hit_rate']) for r in rows if r['algo'] == 'naive_sort')\n"
        "ok = [r for r in rows if r['status'] == 'ok']\n"
        "assert len(topkp_results.samples(sys.argv[1], 'fmt', ok[0])) == ok[0]['n_samples']\n"
        "import lzma, shutil\n" /* a results file kept xz-compressed reads the same */
        "xz = sys.argv[1] + '.xz'\n"
        "with open(sys.argv[1], 'rb') as f, lzma.open(xz, 'wb') as g:\n"
        "    shutil.copyfileobj(f, g)\n"
        "assert repr(topkp_results.load(xz, 'fmt')) == repr(rows), 'xz cells'\n"
        "assert topkp_results.sweeps(xz) == topkp_results.sweeps(sys.argv[1])\n"
        "same = topkp_results.samples(sys.argv[1], 'fmt', ok[0])\n"
        "assert topkp_results.samples(xz, 'fmt', ok[0]) == same, 'xz samples'\n"
        "opened = []\n" /* the samples of every cell: no decompression past the first */
        "unpack, lzma.open = lzma.open, lambda *a, **k: opened.append(a) or unpack(*a, **k)\n"
        "for r in ok:\n"
        "    topkp_results.samples(xz, 'fmt', r)\n"
        "assert len(ok) > 1 and not opened, f'{len(opened)} decompressions for {len(ok)} cells'\n"
        "print('dicts ok')\n";
    const char *py = write_scratch("check_pandas.py", script);
    CHECK(run_cmd(out, sizeof out, "%s %s %s", PYTHON, py, h5) == 0 && strstr(out, "dicts ok"),
          "scripts/topkp_results.py: %.2000s", out);
    if (!strstr(out, "pandas ok"))
        printf("     (pandas is not installed: only the list-of-dicts path was checked)\n");
}
