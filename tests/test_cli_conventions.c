/* test_cli_conventions.c — the command line's conventions (`topkp --help`): help for every
 * subcommand on stdout with exit 0, --version, usage errors with exit 2 naming the argument,
 * times in scaled units, the time left and the summary of `topkp run`, and the README's
 * five-minute tour (--k on a gen file keeps exactly k tokens a row). */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "axes.h"
#include "logits_file.h"
#include "progress.h"
#include "timing.h"
#include "../harness/verify/oracle.h"
#include "cli_util.h"
#include "test.h"

static const char *const known_commands[] = { "list", "run", "apply", "gen", "export", "info",
                                               NULL };

/* The subcommands `topkp --help` lists (its lines under "commands:"), into names[]. */
static int listed_commands(char names[][32], int max)
{
    static char out[8192];
    if (run_cmd(out, sizeof out, "%s --help", topkp_bin()) != 0)
        return 0;
    const char *at = strstr(out, "commands:\n");
    int n = 0;
    for (at = at ? strchr(at, '\n') + 1 : NULL; at && n < max && strncmp(at, "  ", 2) == 0;
         at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL)
        sscanf(at, " %31s", names[n++]);
    return n;
}

/* Run `topkp ARGS` keeping stdout only (stdout_only) or stderr only; returns the exit status. */
static int run_stream(char *out, size_t n, int stdout_only, const char *args)
{
    return run_cmd(out, n, "{ %s %s %s; }", topkp_bin(), args,
                   stdout_only ? "2>/dev/null" : ">/dev/null");
}

/* `topkp ARGS` prints text holding `want` on stdout, nothing on stderr, and exits 0. */
static void check_help(const char *args, const char *want)
{
    char out[16384], err[4096];
    int rc = run_stream(out, sizeof out, 1, args);
    CHECK(rc == 0, "topkp %s exits %d, not 0", args, rc);
    CHECK(strstr(out, want), "topkp %s: stdout lacks '%s': %s", args, want, out);
    run_stream(err, sizeof err, 0, args);
    CHECK(err[0] == 0, "topkp %s writes on stderr: %s", args, err);
}

TEST(cli_help_exits_0_on_stdout_for_every_subcommand)
{
    char names[32][32];
    const int n = listed_commands(names, 32);
    for (int k = 0; known_commands[k]; k++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found |= strcmp(names[i], known_commands[k]) == 0;
        CHECK(found, "topkp --help does not list %s", known_commands[k]);
    }
    check_help("--help", "usage: topkp COMMAND");
    check_help("-h", "usage: topkp COMMAND");
    check_help("help", "usage: topkp COMMAND");
    for (int i = 0; i < n; i++) {
        char args[96], want[64];
        snprintf(want, sizeof want, "usage: topkp %s", names[i]);
        snprintf(args, sizeof args, "help %s", names[i]);
        check_help(args, want);
        snprintf(args, sizeof args, "%s --help", names[i]);
        check_help(args, want);
        snprintf(args, sizeof args, "%s -h", names[i]);
        check_help(args, want);
    }
    /* a subcommand's text lists its flags */
    check_help("apply --help", "--set NAME=VALUE");
    check_help("gen --help", "--k K");
    check_help("run --help", "--resume");
    check_help("export --help", "--sweep NAME");
}

TEST(cli_version_prints_the_version_and_the_commit)
{
    char out[1024];
    REQUIRE(run_stream(out, sizeof out, 1, "--version") == 0, "--version fails: %s", out);
    CHECK(strncmp(out, "topkp ", 6) == 0 && strstr(out, "(commit "), "--version prints: %s", out);
}

/* `topkp ARGS` exits 2 and names `named`. */
static void check_usage_error(const char *args, const char *named)
{
    char out[8192];
    int rc = run_cmd(out, sizeof out, "%s %s", topkp_bin(), args);
    CHECK(rc == 2, "topkp %s exits %d, not 2: %s", args, rc, out);
    char quoted[128];
    snprintf(quoted, sizeof quoted, "'%s'", named);
    CHECK(strstr(out, quoted), "topkp %s does not name %s: %s", args, quoted, out);
}

TEST(cli_unknown_options_and_extra_arguments_exit_2_naming_them)
{
    char names[32][32], args[512];
    const int n = listed_commands(names, 32);
    REQUIRE(n >= 6, "topkp --help lists %d commands", n);
    for (int i = 0; i < n; i++) {
        snprintf(args, sizeof args, "%s --no-such-flag", names[i]);
        if (strcmp(names[i], "apply") == 0)
            snprintf(args, sizeof args, "apply naive_sort --no-such-flag");
        check_usage_error(args, "--no-such-flag");
    }
    const char *x = scratch_dir();
    snprintf(args, sizeof args, "gen gaussian --batch 1 --vocab 5 -o %s/extra.h5 extra1", x);
    check_usage_error(args, "extra1");
    snprintf(args, sizeof args, "%s/extra.h5", x);
    CHECK(access(args, F_OK) != 0, "gen with an extra argument wrote its output");
    check_usage_error("list extra1", "extra1");
    check_usage_error("run a.lua extra1", "extra1");
    check_usage_error("apply naive_sort --in a.h5 --out b.h5 extra1", "extra1");
    check_usage_error("export a.h5 extra1", "extra1");
    check_usage_error("info a.h5 extra1", "extra1");
    check_usage_error("help run extra1", "extra1");
    check_usage_error("help no-such-command", "no-such-command");
    check_usage_error("no-such-command", "no-such-command");
    check_usage_error("--no-such-flag", "--no-such-flag");
    check_usage_error("--version extra1", "extra1");
    check_usage_error("run a.lua -o", "-o"); /* a flag without its value */
    check_usage_error("apply naive_sort --in a.h5 --out b.h5 --k x", "x");
    /* a bad value names its flag too */
    static const char *const flagged[][2] = { { "compare a.h5 b.h5 --threshold x", "--threshold" },
                                              { "run a.lua --workers 0", "--workers" },
                                              { "run a.lua --device x", "--device" } };
    for (int i = 0; i < 3; i++) {
        char out[4096], expect[64];
        const int rc = run_cmd(out, sizeof out, "%s %s", topkp_bin(), flagged[i][0]);
        snprintf(expect, sizeof expect, "%s", flagged[i][1]);
        CHECK(rc == 2 && strstr(out, expect), "topkp %s: exit %d, not naming %s: %s",
              flagged[i][0], rc, flagged[i][1], out);
    }
}

/* /kept of an apply output, or NULL; dims[] gets its shape. */
static uint8_t *read_kept(const char *path, hsize_t dims[2])
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return NULL;
    uint8_t *kept = NULL;
    hid_t d = H5Lexists(f, "kept", H5P_DEFAULT) > 0 ? H5Dopen2(f, "kept", H5P_DEFAULT) : -1;
    if (d >= 0) {
        hid_t s = H5Dget_space(d);
        H5Sget_simple_extent_dims(s, dims, NULL);
        kept = malloc(dims[0] * dims[1] + 1);
        H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, kept);
        H5Sclose(s);
        H5Dclose(d);
    }
    H5Fclose(f);
    return kept;
}

/* README.md's tour: gen, then apply --k 50 (--p 0.9) must use the flags. */
TEST(cli_tour_apply_k_50_on_a_gen_file_keeps_exactly_50_tokens_a_row)
{
    char out[4096], in[512], res[512];
    snprintf(in, sizeof in, "%s/tour-x.h5", scratch_dir());
    snprintf(res, sizeof res, "%s/tour-y.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 8 --vocab 32000 -o %s", topkp_bin(),
                    in) == 0, "gen failed: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s apply qrita --backend cpu --in %s --out %s --k 50 --set search=binary",
                    topkp_bin(), in, res) == 0, "apply failed: %s", out);
    CHECK(strstr(out, "kept 50 tokens a row") && strstr(out, "wrote "), "apply's report: %s", out);
    hsize_t dims[2] = { 0, 0 };
    uint8_t *kept = read_kept(res, dims);
    REQUIRE(kept && dims[0] == 8 && dims[1] == 32000, "no /kept [8, 32000] in %s", res);
    for (hsize_t r = 0; r < dims[0]; r++) {
        int n = 0;
        for (hsize_t j = 0; j < dims[1]; j++)
            n += kept[r * dims[1] + j];
        CHECK(n == 50, "row %llu keeps %d tokens, not 50", (unsigned long long)r, n);
    }
    free(kept);
    /* the tour's own line, k then p, row by row against the oracle */
    REQUIRE(run_cmd(out, sizeof out, "%s apply qrita --backend cpu --in %s --out %s --k 50 --p 0.9 --force",
                    topkp_bin(), in, res) == 0, "apply failed: %s", out);
    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(in, 50, 0.9f, &b, &err) == 0, "%s", err.msg);
    kept = read_kept(res, dims);
    REQUIRE(kept, "no /kept in %s", res);
    for (int64_t r = 0; r < b.batch && !test_failed(); r++) {
        struct oracle_row o;
        char why[256];
        oracle_row_init(&o, b.logits + r * b.vocab, b.vocab, 50, 0.9f);
        CHECK(oracle_check_kept(&o, kept + r * b.vocab, why, sizeof why), "row %lld: %s",
              (long long)r, why);
        oracle_row_free(&o);
    }
    free(kept);
    tkp_batch_free(&b);
}

/* Does `path` hold a dataset `name`? */
static int has_dataset(const char *path, const char *name)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int yes = f >= 0 && H5Lexists(f, name, H5P_DEFAULT) > 0;
    if (f >= 0)
        H5Fclose(f);
    return yes;
}

TEST(cli_gen_writes_k_and_p_only_when_asked)
{
    char out[4096], plain[512], with[512];
    snprintf(plain, sizeof plain, "%s/gen-plain.h5", scratch_dir());
    snprintf(with, sizeof with, "%s/gen-kp.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 40 -o %s", topkp_bin(),
                    plain) == 0, "gen failed: %s", out);
    CHECK(has_dataset(plain, "logits") && !has_dataset(plain, "k") && !has_dataset(plain, "p"),
          "gen without --k/--p must write /logits only");
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 40 --k 5 --p 0.9 -o %s",
                    topkp_bin(), with) == 0, "gen --k --p failed: %s", out);
    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(with, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
    for (int64_t r = 0; r < b.batch; r++)
        CHECK(b.k[r] == 5 && b.p[r] == 0.9f, "row %lld: k %d p %g, want 5 and 0.9", (long long)r,
              b.k[r], (double)b.p[r]);
    tkp_batch_free(&b);
    /* the file's values apply without flags: 5 tokens a row at most */
    char res[512];
    snprintf(res, sizeof res, "%s/gen-kp-out.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s", topkp_bin(),
                    with, res) == 0, "apply failed: %s", out);
    CHECK(strstr(out, "tokens a row") && !strstr(out, "overrides"), "apply's report: %s", out);
}

TEST(cli_run_prints_scaled_times_and_a_summary_naming_the_file)
{
    const char *cfg = write_scratch("summary.lua",
                                    "sweep \"s\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 2000,\n"
                                    "  batch = { 1, 2 }, k = 10, p = { 0.9, 1.0 },\n"
                                    "  timing = { warmup = 0, warmup_seconds = 0, min_reps = 3, max_reps = 3 } }\n");
    char out[16384], res[512];
    snprintf(res, sizeof res, "%s/summary.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, res) == 0,
            "run failed: %s", out);
    char wrote[600];
    snprintf(wrote, sizeof wrote, "wrote %s\n", res);
    CHECK(strstr(out, wrote), "no '%s' at the end: %s", wrote, out);
    CHECK(strstr(out, "summary: 8 cells run in "), "no summary line: %s", out);
    CHECK(strstr(out, "  ok                6") && strstr(out, "  unsupported       2") &&
          strstr(out, "  error             0"), "the summary's counts: %s", out);
    CHECK(strstr(out, "slowest cells"), "no slowest cells: %s", out);
    CHECK(strstr(out, " us  (") || strstr(out, " ms  (") || strstr(out, " ms\n") || strstr(out, " us\n"),
          "no time in us or ms on a progress line: %s", out);
    /* no time prints as zero; " 0.0 us" with its space, so that 280.0 us is not taken for it */
    CHECK(strstr(out, " left)") && !strstr(out, " 0.0 us"), "progress lines: %s", out);
    CHECK(strstr(out, "it offers top-k only, and returns a kept set") && !strstr(out, "  and"),
          "rtopk's message: %s", out);
}

TEST(cli_times_print_in_scaled_units)
{
    static const struct {
        double us;
        const char *text;
    } cases[] = { { 0.25, "0.2 us" },       { 12.34, "12.3 us" },     { 999.96, "1.0 ms" },
                  { 150400, "150.4 ms" },   { 1.5e6, "1.50 s" },      { 59.996e6, "1 min 00 s" },
                  { 125e6, "2 min 05 s" },  { 3723e6, "1 h 02 min" }, { -1, "-" },
                  { NAN, "-" } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        tkp_format_us(cases[i].us, buf, sizeof buf);
        CHECK(strcmp(buf, cases[i].text) == 0, "%g us prints '%s', want '%s'", cases[i].us, buf,
              cases[i].text);
    }
}

/* A plan of cells: algorithm a at batch B each, one per entry of `batches`. */
static void small_plan(struct tkp_plan *plan, struct tkp_cell *cells, const int64_t *batches,
                       size_t n)
{
    memset(plan, 0, sizeof *plan);
    for (size_t i = 0; i < n; i++) {
        tkp_cell_defaults(&cells[i]);
        snprintf(cells[i].sweep, sizeof cells[i].sweep, "t");
        cells[i].algo = tkp_algo_find("naive_sort");
        cells[i].batch = batches[i];
        cells[i].vocab = 100;
    }
    plan->cells = cells;
    plan->n = n;
}

TEST(cli_time_left_is_the_group_mean_then_the_median_of_finished_cells)
{
    /* groups: B=1 (cells 0, 1, 2), B=2 (cells 3, 4), B=4 (cell 5) */
    const int64_t batches[6] = { 1, 1, 1, 2, 2, 4 };
    struct tkp_cell cells[6];
    struct tkp_plan plan;
    small_plan(&plan, cells, batches, 6);
    struct tkp_progress p;
    struct tkp_error err;
    REQUIRE(tkp_progress_init(&p, &plan, &err) == 0, "%s", err.msg);
    FILE *sink = fopen("/dev/null", "w");
    struct tkp_cell_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.status, sizeof row.status, "ok");
    tkp_progress_done(&p, 0, &row, 1.0, sink);
    /* B=1: 2 left at 1 s; B=2 and B=4: 3 cells at the median (1 s, within a bucket) */
    double left = tkp_progress_left_seconds(&p);
    CHECK(fabs(left - 5.0) < 0.7, "left %g s, want about 5", left);
    tkp_progress_done(&p, 3, &row, 10.0, sink);
    tkp_progress_skip(&p, 4); /* done before (--resume): not waited for */
    /* B=1: 2 x 1 s; B=4: the median of {1, 10} s */
    left = tkp_progress_left_seconds(&p);
    CHECK(left > 2.0 + 1.0 && left < 2.0 + 10.0, "left %g s, want 2 s + a median in (1, 10)", left);
    tkp_progress_done(&p, 1, &row, 3.0, sink); /* B=1's mean is 2 s now: 1 left */
    tkp_progress_done(&p, 5, &row, 4.0, sink);
    left = tkp_progress_left_seconds(&p);
    CHECK(fabs(left - 2.0) < 1e-9, "left %g s, want 2 (the B=1 mean)", left);
    tkp_progress_done(&p, 2, &row, 2.0, sink);
    CHECK(tkp_progress_left_seconds(&p) == 0, "nothing left, got %g", tkp_progress_left_seconds(&p));
    CHECK(p.ok == 5 && p.skipped_n == 1 && p.slowest[0].seconds == 10.0 &&
          p.slowest[1].seconds == 4.0 && p.slowest[2].seconds == 3.0,
          "counts and the slowest cells: ok %lld skipped %lld slowest %g %g %g", (long long)p.ok,
          (long long)p.skipped_n, p.slowest[0].seconds, p.slowest[1].seconds, p.slowest[2].seconds);
    fclose(sink);
    tkp_progress_free(&p);
}
