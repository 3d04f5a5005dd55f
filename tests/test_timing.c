/* test_timing.c — the timer's limits bound (docs/ROBUSTNESS.md, "Limits that bound"):
 * max_seconds caps a cell's wall-clock time whatever its warm-up asks and however much untimed
 * work each repetition does, and the spread checks cost O(n log n) over n samples, not a sort
 * per sample. The sources below stop with an error once they run far past what the cap
 * allows, so a timer that does not bound fails here instead of hanging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "test.h"
#include "gpu.h"
#include "timing.h"

/* A fake repetition source: each call takes `untimed_us` of wall-clock time, the timed part
 * reported as `timed_us` (alternating with 100x that when `spread`, so it never settles). */
struct fake {
    double untimed_us, timed_us;
    int spread;
    long calls, warm_calls;
    double give_up; /* tkp_now_us() past which a call is an error */
};

static int fake_spin(struct fake *f, struct tkp_error *err)
{
    const double t0 = tkp_now_us();
    while (tkp_now_us() - t0 < f->untimed_us)
        ;
    if (tkp_now_us() > f->give_up) {
        tkp_error_set(err, "the timer ran past its cap (%ld calls)", f->calls);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

static int fake_warm(void *ctx, struct tkp_error *err)
{
    struct fake *f = ctx;
    f->warm_calls++;
    return fake_spin(f, err);
}

static int fake_take(void *ctx, int cold, double *us, double *clock, struct tkp_error *err)
{
    (void)cold;
    struct fake *f = ctx;
    *clock = 0;
    *us = f->spread && (f->calls & 1) ? 100 * f->timed_us : f->timed_us;
    f->calls++;
    return fake_spin(f, err);
}

/* Run the timer over f; the wall-clock seconds it took into *secs. */
static int time_fake(const struct tkp_timing *t, struct fake *f, int64_t *n, double *secs)
{
    const struct tkp_rep_source src = { fake_warm, NULL, fake_take, f };
    double *samples;
    int64_t throttled;
    struct tkp_error err = { "" };
    const double t0 = tkp_now_us();
    f->give_up = t0 + 20e6;
    int rc = tkp_time_repetitions(t, &src, 0, &samples, n, &throttled, &err);
    *secs = (tkp_now_us() - t0) * 1e-6;
    CHECK(rc == TKP_OK, "%s", err.msg);
    free(samples);
    return rc;
}

/* A tiny timed part (1 us) behind 2 ms of untimed work per repetition (an L2 flush, say),
 * with a million repetitions allowed and a spread that never settles: max_seconds = 0.2
 * ends it within the cap plus one repetition; so it does a warm-up of 30 s. */
TEST(timing_max_seconds_bounds_the_cells_wall_time)
{
    const struct tkp_timing t = { .warmup = 1, .warmup_seconds = 0, .min_reps = 10,
                                  .max_reps = 1000000, .max_seconds = 0.2, .target_rel = 0 };
    struct fake f = { .untimed_us = 2000, .timed_us = 1, .spread = 1 };
    int64_t n;
    double secs;
    if (time_fake(&t, &f, &n, &secs) == TKP_OK)
        CHECK(secs < 0.2 + 0.3 && n >= 1, "max_seconds 0.2: the cell took %.2f s (%lld samples)",
              secs, (long long)n);
    struct tkp_timing w = t;
    w.warmup_seconds = 30;
    struct fake g = { .untimed_us = 2000, .timed_us = 1, .spread = 1 };
    if (time_fake(&w, &g, &n, &secs) == TKP_OK)
        CHECK(secs < 0.2 + 0.3 && n >= 1,
              "warmup_seconds 30, max_seconds 0.2: the cell took %.2f s (%ld warm-up calls, "
              "%lld samples)", secs, g.warm_calls, (long long)n);
}

/* 60000 samples that never settle: the spread checks sort O(n log n) values in all (a sort
 * per sample would take minutes), and the timer takes exactly max_reps samples. */
TEST(timing_spread_checks_do_not_sort_every_sample)
{
    const struct tkp_timing t = { .warmup = 0, .min_reps = 10, .max_reps = 60000,
                                  .max_seconds = 1000, .target_rel = 0 };
    struct fake f = { .untimed_us = 0, .timed_us = 1, .spread = 1 };
    int64_t n;
    double secs;
    if (time_fake(&t, &f, &n, &secs) == TKP_OK)
        CHECK(n == 60000 && secs < 5, "60000 samples took %.2f s (%lld taken)", secs,
              (long long)n);
}

/* Samples that agree settle at the first count the policy allows (10), as before. */
TEST(timing_settled_samples_stop_at_the_minimum)
{
    const struct tkp_timing t = { .warmup = 0, .min_reps = 3, .max_reps = 1000,
                                  .max_seconds = 1000, .target_rel = 0.02 };
    struct fake f = { .untimed_us = 0, .timed_us = 5, .spread = 0 };
    int64_t n;
    double secs;
    if (time_fake(&t, &f, &n, &secs) == TKP_OK)
        CHECK(n == TKP_POLICY_MIN_SAMPLES, "equal samples stopped at %lld, want %d",
              (long long)n, TKP_POLICY_MIN_SAMPLES);
}

/* Run the one-cell config `cfg` into scratch_dir()/<name>.h5 on `backend` (stopped after
 * `limit_s` seconds) and put field `column` of its exported row into `field`; 0, or -1 with
 * what failed in `field`. */
static int run_one_cell(const char *cfg, const char *name, const char *backend, int limit_s,
                        const char *column, char *field, size_t n)
{
    static char out[1 << 14];
    char h5[512];
    snprintf(h5, sizeof h5, "%s/%s.h5", scratch_dir(), name);
    if (run_cmd(out, sizeof out, "timeout %d %s run %s -o %s --backend %s", limit_s, topkp_bin(),
                cfg, h5, backend) != 0) {
        snprintf(field, n, "the run failed or ran past %d s: %.400s", limit_s, out);
        return -1;
    }
    if (run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) != 0) {
        snprintf(field, n, "export: %.400s", out);
        return -1;
    }
    const int col = tsv_column(out, column);
    const char *row = strchr(out, '\n');
    if (col < 0 || !row) {
        snprintf(field, n, "no %s column or row: %.400s", column, out);
        return -1;
    }
    tsv_field(row + 1, col, field, n);
    return 0;
}

/* The same through `topkp run` (stopped at 60 s): a tiny cell allowed a million repetitions that never settle
 * (target_rel = 0), a warm-up of 30 s and max_seconds = 0.3 records a cell_seconds under 2 s
 * (the cap, plus the judging of its rows). */
TEST(timing_run_of_a_tiny_cell_ends_at_max_seconds)
{
    const char *cfg = write_scratch("timing-cap.lua",
                                    "sweep \"cap\" { algos = { \"naive_sort\" }, vocab = 64,\n"
                                    "  batch = 1, k = 3, p = 1.0, timing = { warmup = 1,\n"
                                    "  warmup_seconds = 30, min_reps = 10, max_reps = 1000000,\n"
                                    "  max_seconds = 0.3, target_rel = 0 } }\n");
    char field[512];
    REQUIRE(run_one_cell(cfg, "timing-cap", "cpu", 60, "cell_seconds", field, sizeof field) == 0,
            "%s", field);
    CHECK(atof(field) > 0 && atof(field) < 2.0, "the cell took %s s, want under 2 (max_seconds "
          "0.3)", field);
}

/* On the GPU a module's warm-up waits for each call, so that warmup_seconds is the GPU's time:
 * a large batch's launches only enqueued for 0.05 s held seconds of work that the first timed
 * repetition waited behind, past max_seconds, and the cell kept one sample (results/h200/
 * d7af87f-2026-12-06/README.md). A rejection cell of ~0.3 ms a call keeps min_reps. */
TEST(gpu_timing_module_warm_up_leaves_min_reps_within_max_seconds)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    const char *cfg = write_scratch("timing-warm.lua",
        "sweep \"warm\" { algos = { \"rejection\" }, dataset = \"gaussian\",\n"
        "  vocab = 128256, batch = 1024, k = 50, p = 1.0, verify = 1,\n"
        "  timing = { warmup = 1, warmup_seconds = 0.05, min_reps = 10,\n"
        "  max_reps = 20, max_seconds = 0.5 } }\n");
    char field[512];
    REQUIRE(run_one_cell(cfg, "timing-warm", "gpu", 120, "n_samples", field, sizeof field) == 0,
            "%s", field);
    CHECK(atoi(field) >= 10, "the cell kept %s samples, want min_reps = 10 within 0.5 s", field);
}
