/* test_results.c — the results file: export round trip, cell statuses, resume, a sweep killed
 * with -9 keeping every finished cell, and the run records that guard --resume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "axes.h"
#include "h5util.h"
#include "results.h"
#include "cli_util.h"
#include "test.h"

/* Export `h5` and collect "key status" lines sorted; returns the number of cells. */
static int exported_cells(const char *h5, char *keys, size_t n)
{
    static char out[1 << 20];
    if (run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) != 0)
        return -1;
    int key = tsv_column(out, "key"), status = tsv_column(out, "status"), cells = 0;
    keys[0] = 0;
    for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char k[512], s[32];
        tsv_field(line + 1, key, k, sizeof k);
        tsv_field(line + 1, status, s, sizeof s);
        strncat(keys, k, n - strlen(keys) - 1);
        strncat(keys, " ", n - strlen(keys) - 1);
        strncat(keys, s, n - strlen(keys) - 1);
        strncat(keys, "\n", n - strlen(keys) - 1);
        cells++;
    }
    return cells;
}

TEST(results_export_round_trip_with_statuses)
{
    const char *cfg = write_scratch("rt.lua",
                                    "sweep \"rt\" { algos = { \"naive_sort\", \"rtopk\" },\n"
                                    "  vocab = 500, batch = { 1, 3 }, k = 7, p = { 0.5, 1.0 },\n"
                                    "  timing = { min_reps = 2, max_reps = 2 } }\n");
    char h5[512], out[1 << 16];
    REQUIRE(run_into(cfg, "rt", "", h5, sizeof h5) == 0, "run failed");
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) == 0, "export: %s", out);
    static const char *const cols[] = { "sweep", "algo", "options", "dataset", "batch", "vocab",
                                        "k", "p", "mode", "backend", "status", "message",
                                        "median_us", "q1_us", "q3_us", "n_samples", "gbps",
                                        "bw_fraction", "workspace_bytes", "rows_checked",
                                        "rows_exact", "hit_rate", "iterations" };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        CHECK(tsv_column(out, cols[i]) >= 0, "export lacks column %s", cols[i]);
    int algo = tsv_column(out, "algo"), status = tsv_column(out, "status"), p = tsv_column(out, "p");
    int checked = tsv_column(out, "rows_checked"), exact = tsv_column(out, "rows_exact");
    int rows = 0, ok = 0, unsupported = 0;
    for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char a[64], s[32], pv[32], c[32], e[32];
        tsv_field(line + 1, algo, a, sizeof a);
        tsv_field(line + 1, status, s, sizeof s);
        tsv_field(line + 1, p, pv, sizeof pv);
        tsv_field(line + 1, checked, c, sizeof c);
        tsv_field(line + 1, exact, e, sizeof e);
        rows++;
        if (strcmp(s, "ok") == 0) {
            ok++;
            CHECK(atoi(c) > 0 && strcmp(c, e) == 0, "%s: rows checked %s, exact %s", a, c, e);
        }
        if (strcmp(a, "rtopk") == 0 && atof(pv) < 1.0)
            unsupported += strcmp(s, "unsupported") == 0;
    }
    CHECK(rows == 8, "expected 8 cells, got %d", rows);
    CHECK(unsupported == 2, "rtopk with top-p must be 'unsupported' (2 cells), got %d", unsupported);
    CHECK(ok == 6, "expected 6 ok cells, got %d", ok);
    char info[4096];
    CHECK(run_cmd(info, sizeof info, "%s info %s", topkp_bin(), h5) == 0 &&
              strstr(info, "git_commit") && strstr(info, "device_name") &&
              strstr(info, "copy_gbps") && strstr(info, "command_line"),
          "provenance attributes missing: %s", info);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, h5) != 0 &&
              strstr(out, "--resume"),
          "an existing results file must not be overwritten silently: %s", out);
}

TEST(results_kill_9_keeps_finished_cells_and_resume_completes_them)
{
    /* ~60 cells of a few tens of milliseconds each */
    const char *cfg = write_scratch("kill.lua",
                                    "sweep \"kill\" { algos = { \"naive_sort\" }, vocab = 20000,\n"
                                    "  batch = { 2, 3 }, k = range(1, 30), p = 1.0,\n"
                                    "  timing = { warmup = 0, min_reps = 3, max_reps = 3 } }\n");
    char killed[512], whole[512], log[512], out[4096];
    snprintf(killed, sizeof killed, "%s/killed.h5", scratch_dir());
    snprintf(whole, sizeof whole, "%s/whole.h5", scratch_dir());
    snprintf(log, sizeof log, "%s/kill.log", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, whole) == 0,
            "uninterrupted run failed: %s", out);
    const int progress = kill_after_progress(log, 5, "%s run %s -o %s --backend cpu", topkp_bin(),
                                             cfg, killed);
    REQUIRE(progress >= 5, "the run was not killed after 5 progress lines (%d, %s)", progress, log);
    static char keys_killed[1 << 16], keys_resumed[1 << 16], keys_whole[1 << 16];
    int cells = exported_cells(killed, keys_killed, sizeof keys_killed);
    CHECK(cells >= progress, "file holds %d cells but %d were reported finished", cells, progress);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg, killed) == 0,
            "resume failed: %s", out);
    int total = exported_cells(whole, keys_whole, sizeof keys_whole);
    int resumed = exported_cells(killed, keys_resumed, sizeof keys_resumed);
    CHECK(total == 60, "uninterrupted run has %d cells, expected 60", total);
    CHECK(resumed == total && strcmp(keys_resumed, keys_whole) == 0,
          "killed + resumed run differs from the uninterrupted one (%d vs %d cells)", resumed,
          total);
}

/* The rows of every sweep in `h5` (export's lines but the header). */
static int exported_rows(const char *h5)
{
    static char keys[1 << 16];
    return exported_cells(h5, keys, sizeof keys);
}

/* Overwrite a root string attribute of a results file (as another binary would have left it). */
static void set_root_attr(const char *h5, const char *name, const char *value)
{
    hid_t f = H5Fopen(h5, H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0, "cannot open %s", h5);
    REQUIRE(h5_set_attr_str(f, name, value) == 0, "cannot rewrite %s", name);
    H5Fclose(f);
}

/* The text of dataset `name` of group `group` in a results file (NULL when absent). */
static char *read_text(const char *h5, const char *group, const char *name)
{
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return NULL;
    char *text = NULL;
    if (h5_exists(f, group)) {
        hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
        text = h5_read_text(g, name);
        H5Gclose(g);
    }
    H5Fclose(f);
    return text;
}

/* Provenance per run (README, "Results"): every run into a file is recorded under
 * /runs/<n> with its commit, binary id and config hash; --resume refuses an edited config or
 * another binary, writing nothing, unless --force, which records the run and its config. */
TEST(results_resume_refuses_another_config_or_binary_unless_forced)
{
    const char *text = "sweep \"pv\" { algos = \"naive_sort\", vocab = 300, batch = { 1, 2 },\n"
                       "  k = 5, p = 1.0, timing = { min_reps = 2, max_reps = 2 } }\n";
    const char *cfg = write_scratch("pv.lua", text);
    char h5[512], out[1 << 16];
    snprintf(h5, sizeof h5, "%s/pv.h5", scratch_dir());
    unlink(h5);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, h5) == 0,
            "run failed: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                    h5) == 0, "resume with the same config and binary refused: %s", out);
    const int rows = exported_rows(h5);

    char edited[4096];
    snprintf(edited, sizeof edited, "%s-- an edit\n", text);
    char *three = strstr(edited, "{ 1, 2 }");
    REQUIRE(three, "the config's batch list");
    memcpy(three, "{1,2,3}", 7); /* one more cell (same length, so the rest stays) */
    three[7] = ' ';
    write_scratch("pv.lua", edited);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                  h5) != 0 && strstr(out, "refusing to resume") && strstr(out, "pv.lua changed"),
          "an edited config was resumed: %s", out);
    CHECK(exported_rows(h5) == rows, "a refused resume wrote rows");
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume --force",
                    topkp_bin(), cfg, h5) == 0, "--force refused: %s", out);

    write_scratch("pv.lua", text);
    set_root_attr(h5, "binary_id", "deadbeef");
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                  h5) != 0 && strstr(out, "another binary") && strstr(out, "deadbeef"),
          "a file of another binary was resumed: %s", out);

    static char info[1 << 16];
    REQUIRE(run_cmd(info, sizeof info, "%s info %s", topkp_bin(), h5) == 0, "info: %s", info);
    CHECK(strstr(info, "run 0\n") && strstr(info, "run 1\n") && strstr(info, "run 2\n") &&
              !strstr(info, "run 3\n"),
          "info must list the three runs that went in: %s", info);
    const char *forced = strstr(info, "run 2\n");
    CHECK(forced && strstr(forced, "forced\t1") && strstr(forced, "config_hash"),
          "the forced run's record: %s", forced ? forced : info);
    CHECK(strstr(info, "first_rows\tpv=0") && strstr(info, "first_rows\tpv=2"),
          "each run's first row of the sweep: %s", info);
    /* each row names its run: the first run's two cells, then the forced run's new one */
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) == 0, "export: %s", out);
    const int col = tsv_column(out, "run");
    REQUIRE(col >= 0, "export lacks the run column");
    char runs[64] = "";
    for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char v[16];
        tsv_field(line + 1, col, v, sizeof v);
        strncat(runs, v, sizeof runs - strlen(runs) - 2);
        strcat(runs, " ");
    }
    CHECK(strcmp(runs, "0 0 2 ") == 0, "the rows' runs: %s (expected 0 0 2)", runs);
    char link[600];
    tkp_results_config_link(cfg, link, sizeof link);
    char *recorded = read_text(h5, "/runs/2", link), *first = read_text(h5, "/config", link);
    CHECK(recorded && strstr(recorded, "-- an edit"), "the forced run's config is not recorded");
    CHECK(first && !strstr(first, "-- an edit"), "the first run's /config was overwritten");
    free(recorded);
    free(first);
}

/* Every cell says whether its timer settled (timing.h): a spread target no run can meet leaves
 * every cell noisy; a target any spread meets leaves none, unless the config asked for fewer
 * samples than the policy's minimum (TKP_POLICY_MIN_SAMPLES). */
TEST(results_cells_say_whether_their_times_settled)
{
    static const struct {
        const char *target;
        int reps;
        const char *want;
    } runs[] = { { "1e-12", 12, "1" }, { "100", 12, "0" }, { "100", 4, "1" } };
    for (int i = 0; i < 3; i++) {
        char text[512], name[32], h5[512], out[1 << 14];
        snprintf(text, sizeof text,
                 "sweep \"ns\" { algos = \"naive_sort\", vocab = 400, batch = { 1, 2 }, k = 5,\n"
                 "  p = 1.0, timing = { min_reps = %d, max_reps = %d, target_rel = %s } }\n",
                 runs[i].reps, runs[i].reps, runs[i].target);
        snprintf(name, sizeof name, "ns%d.lua", i);
        const char *cfg = write_scratch(name, text);
        snprintf(h5, sizeof h5, "%s/ns%d.h5", scratch_dir(), i);
        unlink(h5);
        REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu && %s export %s",
                        topkp_bin(), cfg, h5, topkp_bin(), h5) == 0, "run: %s", out);
        const char *header = strstr(out, "sweep\t");
        REQUIRE(header, "no export header: %s", out);
        const int col = tsv_column(header, "noisy");
        REQUIRE(col >= 0, "export lacks the noisy column");
        int cells = 0;
        for (const char *line = strchr(header, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
            char v[16];
            tsv_field(line + 1, col, v, sizeof v);
            CHECK(strcmp(v, runs[i].want) == 0, "target_rel %s, %d reps: a cell with noisy = %s",
                  runs[i].target, runs[i].reps, v);
            cells++;
        }
        CHECK(cells == 2, "expected 2 cells, got %d", cells);
    }
}

/* run --only: the cells of the listed algorithms and no others; a name no cell runs is an
 * error that names it (a typo would otherwise run nothing). */
TEST(results_run_only_keeps_the_listed_algorithms)
{
    char out[1 << 14], h5[512];
    const char *cfg = write_scratch("only.lua",
                                    "sweep \"only\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 300,\n"
                                    "  batch = { 1, 2 }, k = 5, p = 1.0, timing = { max_reps = 1 } }\n");
    snprintf(h5, sizeof h5, "%s/only.h5", scratch_dir());
    unlink(h5);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --only rtopk && %s export %s",
                    topkp_bin(), cfg, h5, topkp_bin(), h5) == 0, "run: %s", out);
    const char *header = strstr(out, "sweep\t");
    REQUIRE(header, "no export header: %s", out);
    const int col = tsv_column(header, "algo");
    int cells = 0;
    for (const char *line = strchr(header, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char v[32];
        tsv_field(line + 1, col, v, sizeof v);
        CHECK(strcmp(v, "rtopk") == 0, "--only rtopk wrote a cell of %s", v);
        cells++;
    }
    CHECK(cells == 2, "--only rtopk: %d cells, expected 2", cells);
    unlink(h5);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --only rtpk", topkp_bin(), cfg,
                  h5) != 0, "--only with an unknown name succeeded: %s", out);
    CHECK(strstr(out, "--only rtpk") != NULL, "the error does not name the value: %s", out);
}

/* run --sweep: the cells of the listed sweeps and no others (a plan's --dry-run lines say each
 * cell's sweep first); a name no sweep has is an error that names it. */
TEST(results_run_sweep_keeps_the_listed_sweeps)
{
    char out[1 << 14];
    const char *cfg = write_scratch("sweeps.lua",
                                    "sweep \"one\" { algos = { \"rtopk\" }, vocab = 300, batch = 1, k = 5, p = 1.0 }\n"
                                    "sweep \"two\" { algos = { \"rtopk\" }, vocab = 300, batch = { 1, 2 }, k = 5, p = 1.0 }\n");
    REQUIRE(run_cmd(out, sizeof out, "%s run %s --backend cpu --dry-run --sweep two", topkp_bin(),
                    cfg) == 0, "run --dry-run --sweep two: %s", out);
    int two = 0, one = 0;
    for (const char *line = out; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        two += strncmp(line, "two\t", 4) == 0;
        one += strncmp(line, "one\t", 4) == 0;
    }
    CHECK(two == 2 && one == 0, "--sweep two planned %d cells of it and %d of sweep one:\n%s", two,
          one, out);
    CHECK(run_cmd(out, sizeof out, "%s run %s --backend cpu --dry-run --sweep tow", topkp_bin(),
                  cfg) != 0, "--sweep with an unknown name succeeded: %s", out);
    CHECK(strstr(out, "--sweep tow") != NULL, "the error does not name the value: %s", out);
}

/* ---- the dtype axis in the results file (docs/DESIGN.md, "/sweeps/<sweep>/cells") ---- */

/* Rewrite /sweeps/<sweep>/cells of `h5` without its `column`, as a binary from before that
 * column wrote it (the other columns and rows kept). */
static int drop_column(const char *h5, const char *sweep, const char *column)
{
    char path[128];
    snprintf(path, sizeof path, "/sweeps/%s/cells", sweep);
    hid_t f = H5Fopen(h5, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, path, H5P_DEFAULT);
    hid_t ft = d < 0 ? -1 : H5Dget_type(d), s = d < 0 ? -1 : H5Dget_space(d);
    if (ft < 0 || s < 0)
        return -1;
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    size_t size = 0;
    const int members = H5Tget_nmembers(ft);
    for (int m = 0; m < members; m++) {
        char *name = H5Tget_member_name(ft, (unsigned)m);
        hid_t mt = H5Tget_member_type(ft, (unsigned)m);
        if (strcmp(name, column) != 0)
            size += H5Tget_size(mt);
        H5Tclose(mt);
        H5free_memory(name);
    }
    hid_t old = H5Tcreate(H5T_COMPOUND, size);
    size = 0;
    for (int m = 0; m < members; m++) {
        char *name = H5Tget_member_name(ft, (unsigned)m);
        hid_t mt = H5Tget_member_type(ft, (unsigned)m);
        if (strcmp(name, column) != 0) {
            H5Tinsert(old, name, size, mt);
            size += H5Tget_size(mt);
        }
        H5Tclose(mt);
        H5free_memory(name);
    }
    char *rows = malloc(size * (size_t)(n > 0 ? n : 1));
    int rc = !rows || H5Dread(d, old, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0 ? -1 : 0;
    H5Dclose(d);
    if (!rc)
        rc = H5Ldelete(f, path, H5P_DEFAULT) < 0 ? -1 : 0;
    hsize_t chunk = 64;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hsize_t dims = (hsize_t)n, unlimited = H5S_UNLIMITED;
    hid_t space = H5Screate_simple(1, &dims, &unlimited);
    hid_t nd = rc ? -1 : H5Dcreate2(f, path, old, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (nd < 0 || (n > 0 && H5Dwrite(nd, old, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0))
        rc = -1;
    if (nd >= 0)
        H5Dclose(nd);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Tclose(old);
    H5Tclose(ft);
    H5Sclose(s);
    H5Fclose(f);
    free(rows);
    return rc;
}

/* The values of column `name` of an export or a compare table, one per row, joined by ' '. */
static void export_column(const char *tsv, const char *name, char *out, size_t n)
{
    const int col = tsv_column(tsv, name);
    out[0] = 0;
    for (const char *line = strchr(tsv, '\n'); col >= 0 && line && line[1];
         line = strchr(line + 1, '\n')) {
        char v[512];
        if (!memchr(line + 1, '\t', strcspn(line + 1, "\n")))
            continue; /* a summary line (compare's counts) */
        tsv_field(line + 1, col, v, sizeof v);
        snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "", v);
    }
}

static const char *const dtype_config =
    "sweep \"dt\" { algos = \"naive_sort\", vocab = 500, batch = 3, k = 7, p = 1.0,\n"
    "  dtype = { \"f32\", \"bf16\" }, timing = { min_reps = 2, max_reps = 2 } }\n";

/* A dtype = {f32, bf16} sweep: a row per type with its dtype column, the bf16 key naming it (the
 * f32 one as before the axis), half the logits' bytes read, and the bf16 cell either refused
 * as unsupported naming bf16 (a module that reads f32 only: tkp_capable) or ok and exact. A
 * --resume finds both done. */
TEST(results_dtype_sweep_has_a_row_per_type_with_its_bytes)
{
    const char *cfg = write_scratch("dt.lua", dtype_config);
    char h5[512];
    static char out[1 << 16], v[4096];
    snprintf(h5, sizeof h5, "%s/dt.h5", scratch_dir());
    unlink(h5);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu && %s export %s", topkp_bin(),
                    cfg, h5, topkp_bin(), h5) == 0, "run: %s", out);
    const char *tsv = strstr(out, "sweep\t");
    REQUIRE(tsv, "no export: %s", out);
    export_column(tsv, "dtype", v, sizeof v);
    CHECK(strcmp(v, "f32 bf16") == 0, "the dtype column: '%s', want 'f32 bf16'", v);
    export_column(tsv, "bytes_read", v, sizeof v);
    char want[128];
    snprintf(want, sizeof want, "%d %d", 3 * 500 * 4 + 3 * 8, 3 * 500 * 2 + 3 * 8);
    CHECK(strcmp(v, want) == 0, "bytes_read '%s', want '%s' (bf16: 2 bytes a logit)", v, want);
    export_column(tsv, "key", v, sizeof v);
    CHECK(strcmp(v, "naive_sort|||gaussian|500|3|7|1|1|1|cpu "
                    "naive_sort|||gaussian|500|3|7|1|1|1|bf16|cpu") == 0, "the keys: %s", v);
    const char *bf16 = strstr(tsv, "|bf16|cpu");
    REQUIRE(bf16, "no bf16 row");
    const char *row = strrchr(tsv, '\n') == bf16 ? NULL : bf16;
    while (row > tsv && row[-1] != '\n')
        row--;
    char status[32], message[256], checked[32], exact[32];
    tsv_field(row, tsv_column(tsv, "status"), status, sizeof status);
    tsv_field(row, tsv_column(tsv, "message"), message, sizeof message);
    tsv_field(row, tsv_column(tsv, "rows_checked"), checked, sizeof checked);
    tsv_field(row, tsv_column(tsv, "rows_exact"), exact, sizeof exact);
    CHECK((strcmp(status, "unsupported") == 0 && strstr(message, "naive_sort") &&
           strstr(message, "bf16")) ||
              (strcmp(status, "ok") == 0 && atoi(checked) > 0 && strcmp(checked, exact) == 0),
          "the bf16 cell: %s '%s' (%s of %s rows exact)", status, message, exact, checked);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                    h5) == 0, "resume: %s", out);
    CHECK(strstr(out, "resume: 2 cells were already done"), "resume redid a cell: %s", out);
}

/* A results file from before the dtype column: it resumes (its f32 keys stand), exports and
 * compares as f32, and a bf16 cell is refused from it rather than recorded as f32. */
TEST(results_file_without_the_dtype_column_reads_as_f32)
{
    const char *text = "sweep \"old\" { algos = \"naive_sort\", vocab = 400, batch = { 1, 2 },\n"
                       "  k = 5, p = 1.0, timing = { min_reps = 2, max_reps = 2 } }\n";
    const char *cfg = write_scratch("old.lua", text);
    char h5[512], fresh[512];
    static char out[1 << 16], v[4096];
    snprintf(h5, sizeof h5, "%s/old.h5", scratch_dir());
    snprintf(fresh, sizeof fresh, "%s/old-fresh.h5", scratch_dir());
    unlink(h5);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu && cp %s %s", topkp_bin(), cfg,
                    h5, h5, fresh) == 0, "run: %s", out);
    /* a binary from before the dtype axis wrote no column of it or of an axis appended later */
    const char *names[128];
    const size_t n_columns = tkp_results_columns(names, 128);
    for (size_t i = 0, from = 0; i < n_columns && i < 128; i++) {
        from = from || strcmp(names[i], "dtype") == 0;
        REQUIRE(!from || !tkp_axis_named(names[i]) || drop_column(h5, "old", names[i]) == 0,
                "cannot drop the %s column of %s", names[i], h5);
    }
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) == 0, "export: %s", out);
    export_column(out, "dtype", v, sizeof v);
    CHECK(strcmp(v, "f32 f32") == 0, "an old file's dtype column exports as '%s', want f32", v);
    static char fresh_tsv[1 << 16];
    REQUIRE(run_cmd(fresh_tsv, sizeof fresh_tsv, "%s export %s", topkp_bin(), fresh) == 0, "export");
    CHECK(strncmp(out, fresh_tsv, strcspn(out, "\n") + 1) == 0,
          "the old file's header differs from a new file's: %.*s", (int)strcspn(out, "\n"), out);
    REQUIRE(run_cmd(out, sizeof out, "%s export --format json %s", topkp_bin(), h5) == 0, "json");
    CHECK(strstr(out, "\"dtype\": \"f32\""), "JSON export lacks dtype f32: %.300s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(), h5, fresh) == 0 ||
                strstr(out, "sweep\t"), "compare: %s", out);
    export_column(strstr(out, "sweep\t") ? strstr(out, "sweep\t") : out, "dtype", v, sizeof v);
    CHECK(strcmp(v, "f32 f32") == 0 && strstr(out, "0 only in A, 0 only in B"),
          "compare pairs the old cells as '%s', want 'f32 f32', each in both: %s", v, out);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                    h5) == 0, "resume of an old file: %s", out);
    CHECK(strstr(out, "resume: 2 cells were already done"), "old keys did not match: %s", out);
    write_scratch("old.lua", "sweep \"old\" { algos = \"naive_sort\", vocab = 400, batch = { 1, 2 },\n"
                             "  k = 5, p = 1.0, dtype = { 'f32', 'bf16' },\n"
                             "  timing = { min_reps = 2, max_reps = 2 } }\n");
    const int rows = exported_rows(h5);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume --force", topkp_bin(),
                  cfg, h5) != 0 && strstr(out, "before the 'dtype' column") && strstr(out, "bf16"),
          "a bf16 cell went into a file without the dtype column: %s", out);
    CHECK(exported_rows(h5) == rows, "a refused bf16 cell left a row");
}

/* ---- compression: tables chunked and deflated (docs/DESIGN.md, "The results file") ---- */

/* Does `dataset` of `h5` carry the deflate filter? 1 yes, 0 no, -1 when it cannot be read. */
static int deflated(const char *h5, const char *dataset)
{
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, dataset, H5P_DEFAULT);
    hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    const int n = dcpl < 0 ? -1 : H5Pget_nfilters(dcpl);
    int found = n < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        unsigned flags, config;
        size_t nvalues = 0;
        found |= H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, NULL, 0, NULL,
                                &config) == H5Z_FILTER_DEFLATE;
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    return found;
}

/* A fresh run's cells and samples, a shard's plan and gen's logits: each deflated, through the
 * one helper that writes them (h5_deflated_dcpl). */
TEST(results_tables_of_a_fresh_file_are_deflated)
{
    h5_quiet();
    const char *cfg = write_scratch("dfl.lua", "sweep \"dfl\" { algos = \"naive_sort\", vocab = 300,\n"
                                               "  batch = { 1, 2 }, k = 5, p = 1.0,\n"
                                               "  timing = { min_reps = 2, max_reps = 2 } }\n");
    char h5[512], shard[512], logits[512];
    static char out[1 << 14];
    REQUIRE(run_into(cfg, "dfl", "", h5, sizeof h5) == 0, "run failed");
    REQUIRE(run_into(cfg, "dfl-shard", "--shard 0/2", shard, sizeof shard) == 0, "shard run failed");
    snprintf(logits, sizeof logits, "%s/dfl-logits.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 100 -o %s --force",
                    topkp_bin(), logits) == 0, "gen: %s", out);
    const struct { const char *file, *dataset; } tables[] = {
        { h5, "/sweeps/dfl/cells" },     { h5, "/sweeps/dfl/samples" },
        { shard, "/sweeps/dfl/cells" },  { shard, "/plan" },
        { logits, "/logits" },
    };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        CHECK(deflated(tables[i].file, tables[i].dataset) == 1, "%s of %s is not deflated (%d)",
              tables[i].dataset, tables[i].file, deflated(tables[i].file, tables[i].dataset));
}

/* A committed results file written before the tables were deflated (the fuzz corpus's, never
 * rewritten) reads as before: export and info print the same as for its deflated copy
 * (h5repack, HDF5's own tool, as the committed results were rewritten). */
TEST(results_old_uncompressed_file_reads_as_its_deflated_copy)
{
    h5_quiet();
    const char *old = "tests/fuzz/corpus/results/tiny.h5";
    char copy[512];
    static char out[1 << 16], a[1 << 16], b[1 << 16];
    snprintf(copy, sizeof copy, "%s/tiny-deflated.h5", scratch_dir());
    if (run_cmd(out, sizeof out, "command -v h5repack") != 0) {
        test_skip("no h5repack (hdf5-tools, `make deps`)");
        return;
    }
    REQUIRE(deflated(old, "/sweeps/tiny/cells") == 0 && deflated(old, "/sweeps/tiny/samples") == 0,
            "%s is no longer an uncompressed file (run from the repository root)", old);
    REQUIRE(run_cmd(out, sizeof out, "rm -f %s && h5repack -f GZIP=6 %s %s", copy, old, copy) == 0,
            "h5repack: %s", out);
    REQUIRE(deflated(copy, "/sweeps/tiny/cells") == 1, "h5repack did not deflate %s", copy);
    static const char *const commands[] = { "export", "export --format json", "info" };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        CHECK(run_cmd(a, sizeof a, "%s %s %s", topkp_bin(), commands[i], old) == 0 &&
                  run_cmd(b, sizeof b, "%s %s %s", topkp_bin(), commands[i], copy) == 0 &&
                  strcmp(a, b) == 0 && strlen(a) > 100,
              "topkp %s differs between %s and its deflated copy:\n%.400s\n---\n%.400s",
              commands[i], old, a, b);
    }
}
