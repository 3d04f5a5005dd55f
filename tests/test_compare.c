/* test_compare.c — `topkp compare A.h5 B.h5` (harness/store/compare.h): the order-statistic interval
 * of a median, a file against itself (every cell unchanged, ratio 1), two files written
 * through the results writer with known repetition times (a cell made slower or faster, one
 * within the threshold, one with too few samples, cells only in one file, an untimed cell, a
 * cell a resumed run timed again), and files that are not results files (exit 2, named). */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "h5util.h"
#include "results.h"
#include "cli_util.h"
#include "test.h"

static char out[1 << 18];

TEST(compare_median_interval_is_the_binomial_order_statistics)
{
    double x[100], lo = 0, hi = 0;
    for (int i = 0; i < 100; i++)
        x[i] = i;
    CHECK(tkp_median_interval(x, 6, 0.025, &lo, &hi) != 0,
          "6 samples cannot give a 97.5 %% interval, got [%g, %g]", lo, hi);
    CHECK(tkp_median_interval(x, 7, 0.025, &lo, &hi) == 0 && lo == 0 && hi == 6,
          "7 samples: [min, max] expected, got [%g, %g]", lo, hi);
    /* P(Bin(100, 1/2) <= 38) <= 0.0125 < P(<= 39): the 39th and the 62nd of 100 */
    CHECK(tkp_median_interval(x, 100, 0.025, &lo, &hi) == 0 && lo == 38 && hi == 61,
          "100 samples: [x(39), x(62)] = [38, 61] expected, got [%g, %g]", lo, hi);
    double ratio, rlo, rhi;
    CHECK(tkp_compare_samples(49.5, x, 100, 49.5, x, 100, 0.02, &ratio, &rlo, &rhi) ==
                  TKP_UNCHANGED && ratio == 1 && rlo < 1 && rhi > 1,
          "the same samples: ratio %g in [%g, %g]", ratio, rlo, rhi);
}

/* One synthetic cell: its key, status, and n repetition times 100 + (i % 5) * 0.2 (us) times
 * `scale`. */
struct syn_cell {
    const char *key, *status;
    int n;
    double scale;
};

static int write_cells(const char *path, const struct syn_cell *cells, int n)
{
    struct tkp_results *r;
    struct tkp_error err = { "" };
    if (tkp_results_open(&r, path, 0, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        struct tkp_cell_row row;
        double t[64];
        memset(&row, 0, sizeof row);
        snprintf(row.key, sizeof row.key, "%s", cells[i].key);
        snprintf(row.algo, sizeof row.algo, "naive_sort");
        snprintf(row.dataset, sizeof row.dataset, "%s", cells[i].key); /* to tell them apart */
        snprintf(row.status, sizeof row.status, "%s", cells[i].status);
        for (int j = 0; j < cells[i].n; j++)
            t[j] = (100 + (j % 5) * 0.2) * cells[i].scale;
        row.median_us = cells[i].n ? 100.4 * cells[i].scale : NAN;
        row.vocab = 1000;
        row.batch = 1;
        rc = tkp_results_append(r, "syn", &row, t, cells[i].n, &err);
    }
    if (rc)
        fprintf(stderr, "  %s\n", err.msg);
    tkp_results_close(r);
    return rc;
}

/* The line of the compare table whose dataset column is `name`, or NULL. */
static const char *line_of(const char *table, const char *name, char *line, size_t n)
{
    int col = tsv_column(table, "dataset");
    for (const char *l = strchr(table, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        char v[128];
        tsv_field(l + 1, col, v, sizeof v);
        if (strcmp(v, name) == 0) {
            snprintf(line, n, "%.*s", (int)strcspn(l + 1, "\n"), l + 1);
            return line;
        }
    }
    return NULL;
}

static void field_of(const char *table, const char *line, const char *column, char *v, size_t n)
{
    tsv_field(line, tsv_column(table, column), v, n);
}

/* The verdict column of the cell `name` of the table. */
static const char *verdict_of(const char *table, const char *name)
{
    static char line[4096], v[64];
    if (!line_of(table, name, line, sizeof line))
        return "(absent)";
    field_of(table, line, "verdict", v, sizeof v);
    return v;
}

TEST(compare_classifies_slower_faster_and_the_rest)
{
    static const struct syn_cell a[] = {
        { "same", "ok", 30, 1 }, { "slower", "ok", 30, 1 }, { "faster", "ok", 30, 1 },
        { "small", "ok", 30, 1 }, { "few", "ok", 5, 1 }, { "onlyA", "ok", 30, 1 },
        { "unsup", "ok", 30, 1 }, { "resumed", "ok", 30, 1 },
    };
    static const struct syn_cell b[] = {
        { "resumed", "error", 0, 1 }, { "same", "ok", 30, 1 }, { "slower", "ok", 30, 1.5 },
        { "faster", "ok", 30, 0.5 }, { "small", "ok", 30, 1.01 }, { "few", "ok", 5, 2 },
        { "onlyB", "ok", 30, 1 }, { "unsup", "unsupported", 0, 1 }, { "resumed", "ok", 30, 1.5 },
    };
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/cmp-a.h5", scratch_dir());
    snprintf(pb, sizeof pb, "%s/cmp-b.h5", scratch_dir());
    REQUIRE(write_cells(pa, a, 8) == 0 && write_cells(pb, b, 9) == 0, "cannot write the files");
    int rc = run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(), pa, pb);
    REQUIRE(rc == 0, "compare exited %d: %s", rc, out);
    static const char *const expect[][2] = {
        { "same", "unchanged" }, { "slower", "slower" }, { "faster", "faster" },
        { "small", "unchanged" }, { "few", "no-interval" }, { "onlyA", "only-in-A" },
        { "onlyB", "only-in-B" }, { "unsup", "not-timed" }, { "resumed", "slower" },
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECK(strcmp(verdict_of(out, expect[i][0]), expect[i][1]) == 0, "%s: %s, expected %s",
              expect[i][0], verdict_of(out, expect[i][0]), expect[i][1]);
    char line[4096], v[64];
    if (line_of(out, "slower", line, sizeof line)) {
        field_of(out, line, "ratio", v, sizeof v);
        CHECK(strcmp(v, "1.5000") == 0, "slower: ratio %s, expected 1.5000", v);
        field_of(out, line, "ci_low", v, sizeof v);
        CHECK(atof(v) > 1, "slower: the interval's low end %s is not above 1", v);
    }
    if (line_of(out, "few", line, sizeof line)) {
        field_of(out, line, "ci_low", v, sizeof v);
        CHECK(strcmp(v, "nan") == 0, "5 samples claim an interval (low end %s)", v);
    }
    CHECK(strstr(out, "2 faster") == NULL &&
              strstr(out, "1 faster, 2 slower, 2 unchanged, 1 without an interval, 1 only in A, "
                          "1 only in B, 1 not timed in both"),
          "summary line: %s", out);
    /* 1 % slower with an interval above 1: unchanged under the 2 % threshold, slower under 0.5 % */
    REQUIRE(run_cmd(out, sizeof out, "%s compare %s %s --threshold 0.005", topkp_bin(), pa, pb) == 0,
            "compare --threshold: %s", out);
    CHECK(strcmp(verdict_of(out, "small"), "slower") == 0, "small under 0.5 %%: %s",
          verdict_of(out, "small"));
}

TEST(compare_a_run_with_itself_is_unchanged_everywhere)
{
    const char *cfg = write_scratch("cmp-self.lua",
                                    "sweep \"self\" { algos = { \"naive_sort\", \"rtopk\" },\n"
                                    "  vocab = 400, batch = { 1, 2 }, k = 5, p = { 0.5, 1.0 },\n"
                                    "  timing = { min_reps = 8, max_reps = 8 } }\n");
    char h5[512];
    snprintf(h5, sizeof h5, "%s/cmp-self.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, h5) == 0,
            "run: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(), h5, h5) == 0, "compare: %s",
            out);
    int ratio = tsv_column(out, "ratio"), lo = tsv_column(out, "ci_low");
    int hi = tsv_column(out, "ci_high"), verdict = tsv_column(out, "verdict");
    int timed = 0;
    for (const char *l = strchr(out, '\n'); l && l[1] && strchr(l + 1, '\t'); l = strchr(l + 1, '\n')) {
        char r[32], a[32], b[32], v[32];
        tsv_field(l + 1, ratio, r, sizeof r);
        tsv_field(l + 1, lo, a, sizeof a);
        tsv_field(l + 1, hi, b, sizeof b);
        tsv_field(l + 1, verdict, v, sizeof v);
        if (strcmp(v, "not-timed") == 0)
            continue;
        timed++;
        CHECK(strcmp(v, "unchanged") == 0 && strcmp(r, "1.0000") == 0 && atof(a) <= 1 &&
                  atof(b) >= 1,
              "a cell against itself: %s, ratio %s in [%s, %s]", v, r, a, b);
    }
    CHECK(timed == 6, "%d timed cells compared, expected 6", timed);
    CHECK(strstr(out, "0 faster, 0 slower, 6 unchanged, 0 without an interval, 0 only in A, "
                      "0 only in B, 2 not timed"),
          "summary: %s", out);
}

/* A file whose /sweeps/x/cells is a compound table without a median_us column. */
static int write_other_table(const char *path)
{
    h5_quiet();
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    struct { char key[16], status[16]; } row = { "k", "ok" };
    hid_t s16 = H5Tcopy(H5T_C_S1), t = H5Tcreate(H5T_COMPOUND, sizeof row);
    H5Tset_size(s16, 16);
    H5Tinsert(t, "key", 0, s16);
    H5Tinsert(t, "status", 16, s16);
    hsize_t one = 1;
    hid_t sp = H5Screate_simple(1, &one, NULL);
    hid_t d = H5Dcreate2(f, "/sweeps/x/cells", t, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    int rc = f < 0 || d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &row) < 0 ? -1 : 0;
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
    H5Tclose(s16);
    H5Pclose(lcpl);
    H5Fclose(f);
    return rc;
}

TEST(compare_refuses_files_that_are_not_results)
{
    char logits[512], good[512], other[512];
    snprintf(logits, sizeof logits, "%s/cmp-logits.h5", scratch_dir());
    snprintf(good, sizeof good, "%s/cmp-good.h5", scratch_dir());
    snprintf(other, sizeof other, "%s/cmp-other.h5", scratch_dir());
    static const struct syn_cell one[] = { { "same", "ok", 10, 1 } };
    REQUIRE(write_cells(good, one, 1) == 0 && write_other_table(other) == 0, "cannot write");
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", topkp_bin(),
                    logits) == 0, "gen: %s", out);
    const char *text = write_scratch("cmp-text.h5", "not an HDF5 file\n");
    static const char *const why[] = { "not a topkp results file", "not a readable HDF5 file",
                                       "no column 'median_us'", "cannot open" };
    const char *bad[] = { logits, text, other, "/nonexistent/x.h5" };
    for (int i = 0; i < 4; i++)
        for (int side = 0; side < 2; side++) {
            int rc = run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(),
                             side ? good : bad[i], side ? bad[i] : good);
            CHECK(rc == 1 && strstr(out, bad[i]) && strstr(out, why[i]) &&
                      !strstr(out, "unchanged"),
                  "compare with %s as %s: exit %d, expected 1 and '%s': %s", bad[i],
                  side ? "B" : "A", rc, why[i], out);
        }
    CHECK(run_cmd(out, sizeof out, "%s compare %s", topkp_bin(), good) == 2 &&
              strstr(out, "two results files"),
          "compare with one file must be a usage error: %s", out);
}
