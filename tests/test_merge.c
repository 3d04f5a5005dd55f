/* test_merge.c — `topkp merge` (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"): a sweep split
 * into 3 shards and merged is the unsplit run cell for cell (export's rows but the timing columns,
 * in the same order; each row's samples found at its new offset; the rows' runs renumbered onto
 * the shards' records); a shard killed with -9 is reported as missing cells, then resumed and
 * merged; merge refuses another config, another binary, a missing or doubled shard and another
 * N, naming the files, and writes nothing then; `run --workers N` (the CPU backend's --gpus) is
 * the unsplit run too, and a worker that fails is named with its log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"
#include "h5util.h"
#include "results.h"
#include "cli_util.h"
#include "test.h"

static const char *sweep_config(void)
{
    return write_scratch("merge.lua",
                         "sweep \"m1\" { algos = { \"naive_sort\", \"rtopk\", \"qrita\" },\n"
                         "  vocab = { 300, 1000 }, batch = { 1, 2, 5 }, k = 7, p = { 0.9, 1.0 },\n"
                         "  timing = { warmup = 0, min_reps = 2, max_reps = 2 } }\n"
                         "ablation \"m2\" { base = { vocab = 700, batch = { 1, 3 }, k = 20,\n"
                         "  timing = { warmup = 0, min_reps = 2, max_reps = 2 } },\n"
                         "  variants = { A = \"qrita\", B = { \"qrita\", search = \"binary\" } } }\n");
}

/* Run shard i of n of cfg into scratch/<stem>-<i>.h5 (its path into path). */
static int run_shard(const char *cfg, const char *stem, int i, int n, char *path, size_t len)
{
    char name[64], args[32];
    snprintf(name, sizeof name, "%s-%d", stem, i);
    snprintf(args, sizeof args, "--shard %d/%d", i, n);
    return run_into(cfg, name, args, path, len);
}

/* Every row's samples are at its samples_offset: their min and max are the row's. */
static void check_samples(const char *h5, const char *sweep)
{
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(f >= 0, "cannot open %s", h5);
    char path[128];
    snprintf(path, sizeof path, "/sweeps/%s/cells", sweep);
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT), s = H5Dget_space(d);
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    struct tkp_cell_row *rows = calloc((size_t)n + 1, sizeof *rows);
    hid_t t = (hid_t)tkp_results_row_type();
    REQUIRE(rows && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0, "read %s", path);
    snprintf(path, sizeof path, "/sweeps/%s/samples", sweep);
    hid_t sd = H5Dopen2(f, path, H5P_DEFAULT), ss = H5Dget_space(sd);
    const hssize_t m = H5Sget_simple_extent_npoints(ss);
    double *v = calloc((size_t)m + 1, sizeof *v);
    REQUIRE(v && H5Dread(sd, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, "%s", path);
    int64_t next = 0;
    for (hssize_t r = 0; r < n; r++) {
        if (rows[r].n_samples == 0)
            continue;
        double lo = 1e300, hi = -1e300;
        CHECK(rows[r].samples_offset == next && next + rows[r].n_samples <= m,
              "%s row %lld: samples at %lld (+%lld), expected at %lld of %lld", h5, (long long)r,
              (long long)rows[r].samples_offset, (long long)rows[r].n_samples, (long long)next,
              (long long)m);
        for (int64_t i = 0; i < rows[r].n_samples && rows[r].samples_offset + i < m; i++) {
            const double x = v[rows[r].samples_offset + i];
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        CHECK(lo == rows[r].min_us && hi == rows[r].max_us, "%s row %lld: samples %g..%g, row "
              "%g..%g", h5, (long long)r, lo, hi, rows[r].min_us, rows[r].max_us);
        next = rows[r].samples_offset + rows[r].n_samples;
    }
    free(v);
    free(rows);
    H5Tclose(t);
    H5Sclose(ss);
    H5Dclose(sd);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
}

/* The `run` column's values, as a set bit per run. */
static unsigned runs_used(const char *h5)
{
    static char out[1 << 20];
    unsigned used = 0;
    if (run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) != 0)
        return 0;
    const int col = tsv_column(out, "run");
    for (char *line = strchr(out, '\n'); col >= 0 && line && line[1]; line = strchr(line + 1, '\n')) {
        char v[16];
        tsv_field(line + 1, col, v, sizeof v);
        used |= 1u << (atoi(v) & 31);
    }
    return used;
}

/* The merged file is the unsplit run: same rows in the same order but for the timing
 * columns, samples at their offsets, runs renumbered. */
static void check_equal(const char *merged, const char *whole)
{
    static char a[1 << 20], b[1 << 20];
    const int na = export_without(merged, timing_columns, a, sizeof a),
              nb = export_without(whole, timing_columns, b, sizeof b);
    CHECK(na > 10 && na == nb && strcmp(a, b) == 0,
          "merged %s (%d rows) differs from the unsplit %s (%d rows):\n%s\nvs\n%s", merged, na,
          whole, nb, a, b);
    check_samples(merged, "m1");
    check_samples(merged, "m2");
}

TEST(merge_of_three_shards_is_the_unsplit_run)
{
    const char *cfg = sweep_config();
    char whole[512], merged[600], shard[3][512], out[1 << 14];
    snprintf(merged, sizeof merged, "%s/merge-all.h5", scratch_dir());
    unlink(merged);
    REQUIRE(run_into(cfg, "merge-whole", "", whole, sizeof whole) == 0, "the unsplit run");
    for (int i = 0; i < 3; i++)
        REQUIRE(run_shard(cfg, "merge", i, 3, shard[i], sizeof shard[i]) == 0, "shard %d", i);
    REQUIRE(run_cmd(out, sizeof out, "%s merge %s %s %s %s", topkp_bin(), merged, shard[2],
                    shard[0], shard[1]) == 0, "merge: %s", out);
    check_equal(merged, whole);
    CHECK(runs_used(merged) == 7u, "the rows' runs are not the three shards' records (mask %#x)",
          runs_used(merged));
    static char info[1 << 16];
    REQUIRE(run_cmd(info, sizeof info, "%s info %s", topkp_bin(), merged) == 0, "%s", info);
    char *runs = strstr(info, "run 0\n");
    REQUIRE(runs, "the merged file has no run records: %s", info);
    runs[-1] = 0; /* the root attributes alone, then the records */
    CHECK(strstr(info, "merged_shards\t3") && !strstr(info, "\nshard\t"),
          "the merged root is a shard's: %s", info);
    runs[-1] = '\n';
    CHECK(
              strstr(info, "run 0\n") && strstr(info, "shard\t0/3") && strstr(info, "shard\t2/3") &&
              !strstr(info, "run 3\n") && strstr(info, "first_rows\tm1="),
          "the merged records: %s", info);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                    merged) == 0 && strstr(out, "already done"), "resume of the merge: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(), whole, merged) == 0,
          "compare: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s merge %s %s %s %s", topkp_bin(), merged, shard[0],
                  shard[1], shard[2]) == 1 && strstr(out, "--force"),
          "an existing OUT was overwritten without --force: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s merge %s %s %s %s --force", topkp_bin(), shard[0],
                  shard[0], shard[1], shard[2]) == 1 && strstr(out, "refusing to write over"),
          "merge wrote over a shard: %s", out);
}

/* Shard 1 of 3 killed with -9 after a few cells: merged, its missing cells are listed; resumed
 * and merged, the file is the unsplit run. */
TEST(merge_of_a_killed_then_resumed_shard_is_the_unsplit_run)
{
    const char *cfg = write_scratch("merge_kill.lua",
                                    "sweep \"m1\" { algos = { \"naive_sort\" }, vocab = 20000,\n"
                                    "  batch = { 2, 3 }, k = range(1, 30), p = 1.0,\n"
                                    "  timing = { warmup = 0, min_reps = 3, max_reps = 3 } }\n"
                                    "sweep \"m2\" { algos = { \"rtopk\" }, vocab = 900, batch = 2,\n"
                                    "  k = { 4, 8 }, p = 1.0, timing = { min_reps = 2, max_reps = 2 } }\n");
    char whole[512], merged[600], shard[3][512], log[600], out[1 << 14];
    snprintf(merged, sizeof merged, "%s/mk-all.h5", scratch_dir());
    snprintf(log, sizeof log, "%s/mk.log", scratch_dir());
    unlink(merged);
    REQUIRE(run_into(cfg, "mk-whole", "", whole, sizeof whole) == 0, "the unsplit run");
    REQUIRE(run_shard(cfg, "mk", 0, 3, shard[0], sizeof shard[0]) == 0, "shard 0");
    REQUIRE(run_shard(cfg, "mk", 2, 3, shard[2], sizeof shard[2]) == 0, "shard 2");
    snprintf(shard[1], sizeof shard[1], "%s/mk-1.h5", scratch_dir());
    unlink(shard[1]);
    const int progress = kill_after_progress(log, 3, "%s run %s -o %s --backend cpu --shard 1/3",
                                             topkp_bin(), cfg, shard[1]);
    REQUIRE(progress >= 3, "shard 1 was not killed after 3 progress lines (%d, %s)", progress, log);
    CHECK(run_cmd(out, sizeof out, "%s merge %s %s %s %s", topkp_bin(), merged, shard[0],
                  shard[1], shard[2]) == 1 && strstr(out, "missing: m1\tnaive_sort") &&
              strstr(out, "cells missing") && strstr(out, "shard 1/3") && strstr(out, "--resume"),
          "the killed shard's cells are not reported missing: %s", out);
    CHECK(access(merged, F_OK) != 0, "a failed merge wrote %s", merged);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --shard 1/3 --resume",
                    topkp_bin(), cfg, shard[1]) == 0, "resume of shard 1: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s merge %s %s %s %s", topkp_bin(), merged, shard[0],
                    shard[1], shard[2]) == 0, "merge: %s", out);
    static char a[1 << 20], b[1 << 20];
    const int na = export_without(merged, timing_columns, a, sizeof a),
              nb = export_without(whole, timing_columns, b, sizeof b);
    CHECK(na == 62 && na == nb && strcmp(a, b) == 0, "killed, resumed and merged (%d rows) is "
          "not the unsplit run (%d rows):\n%s\nvs\n%s", na, nb, a, b);
    check_samples(merged, "m1");
}

/* Set a root string attribute of a copy of `h5` (as another binary or config would have it). */
static void copy_with_attr(const char *h5, const char *copy, const char *name, const char *value)
{
    char out[4096];
    REQUIRE(run_cmd(out, sizeof out, "cp %s %s", h5, copy) == 0, "%s", out);
    hid_t f = H5Fopen(copy, H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0 && h5_set_attr_str(f, name, value) == 0, "cannot edit %s", copy);
    H5Fclose(f);
}

/* merge OUT with the given shards must fail saying `what` and `also`, writing no OUT. */
static void refused(const char *shards, const char *what, const char *also)
{
    char merged[600], out[1 << 14];
    snprintf(merged, sizeof merged, "%s/refused.h5", scratch_dir());
    unlink(merged);
    CHECK(run_cmd(out, sizeof out, "%s merge %s %s", topkp_bin(), merged, shards) == 1 &&
              strstr(out, what) && strstr(out, also),
          "merge %s: expected '%s' and '%s': %s", shards, what, also, out);
    char partial[700];
    snprintf(partial, sizeof partial, "%s.partial", merged);
    CHECK(access(merged, F_OK) != 0 && access(partial, F_OK) != 0, "a refused merge wrote %s",
          merged);
}

TEST(merge_refuses_shards_that_do_not_belong_together)
{
    const char *cfg = write_scratch("merge_bad.lua",
                                    "sweep \"mb\" { algos = { \"naive_sort\" }, vocab = 300,\n"
                                    "  batch = { 1, 2, 3, 4 }, k = 5, p = 1.0,\n"
                                    "  timing = { min_reps = 2, max_reps = 2 } }\n");
    char s[3][512], two[512], other[600], edited[600], copy[600], list[4096];
    for (int i = 0; i < 3; i++)
        REQUIRE(run_shard(cfg, "mb", i, 3, s[i], sizeof s[i]) == 0, "shard %d", i);
    REQUIRE(run_shard(cfg, "mb2", 0, 2, two, sizeof two) == 0, "shard 0/2");
    const char *edited_cfg = write_scratch("merge_bad2.lua",
                                           "sweep \"mb\" { algos = { \"naive_sort\" }, vocab = 300,\n"
                                           "  batch = { 1, 2, 3, 4 }, k = 5, p = 1.0,\n"
                                           "  timing = { min_reps = 2, max_reps = 2 } } -- edit\n");
    REQUIRE(run_shard(edited_cfg, "mbc", 2, 3, other, sizeof other) == 0, "edited shard");
    snprintf(edited, sizeof edited, "%s/mb-binary.h5", scratch_dir());
    copy_with_attr(s[2], edited, "binary_id", "deadbeef");

    snprintf(list, sizeof list, "%s %s %s", s[0], s[1], other);
    refused(list, "different configs", other);
    snprintf(list, sizeof list, "%s %s %s", s[0], s[1], edited);
    refused(list, "different binaries", "deadbeef");
    snprintf(list, sizeof list, "%s %s", s[0], s[2]);
    refused(list, "missing: mb\tnaive_sort", "no file given for shard 1/3");
    snprintf(copy, sizeof copy, "%s/mb-copy.h5", scratch_dir());
    char out[4096];
    REQUIRE(run_cmd(out, sizeof out, "cp %s %s", s[1], copy) == 0, "%s", out);
    snprintf(list, sizeof list, "%s %s %s %s", s[0], s[1], copy, s[2]);
    refused(list, "are both shard 1/3", copy);
    snprintf(list, sizeof list, "%s %s %s", s[1], s[2], two);
    refused(list, "split the plan differently", "N 3 and 2");
    /* shard 0's cells in a file that says it is shard 1: doubled cells, and 1's missing */
    char relabelled[600];
    snprintf(relabelled, sizeof relabelled, "%s/mb-relabelled.h5", scratch_dir());
    copy_with_attr(s[0], relabelled, "shard", "1/3");
    hid_t f = H5Fopen(relabelled, H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(f >= 0 && h5_set_attr_i64(f, "shard_index", 1) == 0, "cannot edit %s", relabelled);
    H5Fclose(f);
    snprintf(list, sizeof list, "%s %s %s", s[0], relabelled, s[2]);
    refused(list, "doubled: mb\tnaive_sort", "belongs to another shard");
    refused(list, "missing: mb\tnaive_sort", "1 doubled");
    char whole[600];
    REQUIRE(run_into(cfg, "mb-whole", "", whole, sizeof whole) == 0, "the unsplit run");
    snprintf(list, sizeof list, "%s %s", s[0], whole);
    refused(list, "not a shard file", whole);
}

/* --workers 3: three shard processes and their merge are the unsplit run; one progress line
 * counts every cell. A worker that fails (its shard file is not a results file) is named with
 * its log, the other shard files are kept and no merged file is written. */
TEST(merge_run_workers_is_the_unsplit_run_and_names_a_failed_worker)
{
    const char *cfg = sweep_config();
    char whole[512], merged[600], out[1 << 14], shard[700];
    snprintf(merged, sizeof merged, "%s/workers.h5", scratch_dir());
    REQUIRE(run_into(cfg, "workers-whole", "", whole, sizeof whole) == 0, "the unsplit run");
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --workers 3", topkp_bin(), cfg, merged) == 0,
            "--workers 3: %s", out);
    CHECK(strstr(out, "[workers] 40/40 cells") && strstr(out, "shard 2: "),
          "no progress line for the whole run: %s", out);
    check_equal(merged, whole);
    snprintf(shard, sizeof shard, "%s/workers.shard-1.h5", scratch_dir());
    CHECK(access(shard, F_OK) == 0, "the shard files are not kept");

    char failed[600];
    snprintf(failed, sizeof failed, "%s/wfail.h5", scratch_dir());
    snprintf(shard, sizeof shard, "%s/wfail.shard-1.h5", scratch_dir());
    write_scratch("wfail.shard-1.h5", "not a results file\n");
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --workers 2 --resume", topkp_bin(), cfg,
                  failed) == 1 && strstr(out, "shard 1/2 (workers) failed") &&
              strstr(out, "wfail.shard-1.log") && strstr(out, "not an HDF5 file") &&
              strstr(out, "--resume"),
          "a failed worker is not named with its log: %s", out);
    snprintf(shard, sizeof shard, "%s/wfail.shard-0.h5", scratch_dir());
    CHECK(access(failed, F_OK) != 0 && access(shard, F_OK) == 0,
          "after a failed worker: no merged file, the other shard kept");
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --workers 2", topkp_bin(), cfg, failed) == 1 &&
              strstr(out, "wfail.shard-0.h5 exists"),
          "a second run without --resume must not start over the shard files: %s", out);
    if (!tkp_gpu_present())
        CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --gpus all", topkp_bin(), cfg, failed) == 1
                  && strstr(out, "--gpus all: no CUDA device"), "--gpus all without a GPU: %s", out);
}
