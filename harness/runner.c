/* runner.c — see runner.h. One cell: build the batch (generated or read, cached between
 * cells), open the module, warm up, time repetitions, verify sample rows against the oracle,
 * append the row. Every failure becomes the cell's status; the sweep goes on. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../datasets/datasets.h"
#include "../tests/oracle.h"
#include "apply.h"
#include "logits_file.h"
#include "gpu.h"
#include "provenance.h"
#include "results.h"
#include "runner.h"
#include "timing.h"

/* Generated or read logits, kept between cells: one entry per (dataset, seed, vocab), holding
 * as many rows as the largest batch any cell of the plan asks of it, so that the cells of a
 * batch sweep share one generation. Least recently used entries go first. */
#define CACHE_ENTRIES 4
struct cached_batch {
    char dataset[256];
    uint64_t seed;
    int64_t vocab, rows;
    float *logits;
    uint64_t used; /* a tick of the last use */
};

struct batch_cache {
    struct cached_batch entry[CACHE_ENTRIES];
    uint64_t tick;
};

static int same_data(const struct tkp_cell *a, const struct tkp_cell *b)
{
    return strcmp(a->dataset, b->dataset) == 0 && a->seed == b->seed && a->vocab == b->vocab;
}

/* Fill rows [0, rows) of x from the cell's dataset. */
static int load_rows(const struct tkp_cell *cell, int64_t rows, float *x, struct tkp_error *err)
{
    if (strncmp(cell->dataset, "file:", 5) != 0)
        return tkp_dataset_generate(cell->dataset, cell->seed, rows, cell->vocab, x, err);
    struct tkp_batch file;
    int rc = tkp_logits_read(cell->dataset + 5, 0, 1.0f, &file, err);
    if (rc == TKP_OK && file.vocab != cell->vocab) {
        tkp_error_set(err, "%s has V=%lld, the cell asks for V=%lld", cell->dataset + 5,
                      (long long)file.vocab, (long long)cell->vocab);
        rc = TKP_EINVAL;
    } else if (rc == TKP_OK && file.batch == 0) {
        tkp_error_set(err, "%s has no rows", cell->dataset + 5);
        rc = TKP_EINVAL;
    }
    for (int64_t r = 0; rc == TKP_OK && r < rows; r++) /* rows repeat cyclically */
        memcpy(x + r * cell->vocab, file.logits + (r % file.batch) * cell->vocab,
               sizeof(float) * (size_t)cell->vocab);
    tkp_batch_free(&file);
    return rc;
}

/* The logits of `cell` (at least cell->batch rows), generated once for the plan. */
static const float *cache_get(struct batch_cache *c, const struct tkp_plan *plan,
                              const struct tkp_cell *cell, struct tkp_error *err)
{
    struct cached_batch *e = NULL, *oldest = &c->entry[0];
    for (int i = 0; i < CACHE_ENTRIES; i++) {
        struct cached_batch *x = &c->entry[i];
        if (x->logits && strcmp(x->dataset, cell->dataset) == 0 && x->seed == cell->seed &&
            x->vocab == cell->vocab && x->rows >= cell->batch)
            e = x;
        if (x->used < oldest->used)
            oldest = x;
    }
    if (!e) {
        int64_t rows = cell->batch;
        for (size_t i = 0; i < plan->n; i++)
            if (same_data(&plan->cells[i], cell) && plan->cells[i].batch > rows)
                rows = plan->cells[i].batch;
        e = oldest;
        free(e->logits);
        memset(e, 0, sizeof *e);
        e->logits = malloc(sizeof(float) * (size_t)(rows * cell->vocab));
        if (!e->logits) {
            tkp_error_set(err, "out of host memory for [%lld, %lld] logits", (long long)rows,
                          (long long)cell->vocab);
            return NULL;
        }
        if (load_rows(cell, rows, e->logits, err)) {
            free(e->logits);
            e->logits = NULL;
            return NULL;
        }
        snprintf(e->dataset, sizeof e->dataset, "%s", cell->dataset);
        e->seed = cell->seed;
        e->vocab = cell->vocab;
        e->rows = rows;
    }
    e->used = ++c->tick;
    return e->logits;
}

static void cache_free(struct batch_cache *c)
{
    for (int i = 0; i < CACHE_ENTRIES; i++)
        free(c->entry[i].logits);
}

/* Check `rows` rows spread over the batch; returns rows equal to the oracle. */
static int64_t verify(const struct tkp_batch *b, const uint8_t *kept, const int64_t *samples,
                      int32_t draws, int rows, int64_t *checked, char *why, size_t why_n)
{
    int64_t exact = 0;
    *checked = 0;
    if (rows <= 0)
        return 0;
    int64_t step = b->batch > rows ? b->batch / rows : 1;
    for (int64_t r = 0; r < b->batch && *checked < rows; r += step) {
        struct oracle_row o;
        if (oracle_row_init(&o, b->logits + r * b->vocab, b->vocab, b->k[r], b->p[r]))
            break;
        char msg[256] = "";
        int ok = oracle_check_row(&o, kept ? kept + r * b->vocab : NULL,
                                  samples ? samples + r * draws : NULL, draws, msg, sizeof msg);
        if (!ok && !why[0])
            snprintf(why, why_n, "row %lld: %s", (long long)r, msg);
        exact += ok;
        (*checked)++;
        oracle_row_free(&o);
    }
    return exact;
}

static void set_status(struct tkp_cell_row *row, int rc, const char *message)
{
    const char *status = rc == TKP_OK ? "ok"
                         : rc == TKP_EUNSUPPORTED ? "unsupported"
                         : rc == TKP_ENOMEM ? "oom"
                                            : "error";
    snprintf(row->status, sizeof row->status, "%s", status);
    snprintf(row->message, sizeof row->message, "%s", message);
}

/* What one timed launch needs. */
struct launch {
    struct tkp_instance *in;
    const struct tkp_io *io;
};

static int launch_once(void *ctx, struct tkp_error *err)
{
    struct launch *l = ctx;
    return tkp_instance_run(l->in, l->io, err);
}

/* Time repetitions of one opened instance: host clock on the CPU; CUDA events (L2 flushed
 * first when cold, graph replay when asked) on the GPU, where samples taken below 90% of
 * the maximum SM clock are counted as throttled and left out. */
static int time_cell(struct tkp_instance *in, const struct tkp_io *io,
                     const struct tkp_timing *timing, struct tkp_gpu_timer *gpu,
                     double max_clock_mhz, double **samples, int64_t *n, int64_t *throttled,
                     struct tkp_error *err)
{
    struct launch l = { in, io };
    *samples = malloc(sizeof(double) * (size_t)timing->max_reps);
    *n = *throttled = 0;
    for (int w = 0; w < timing->warmup; w++) {
        int rc = launch_once(&l, err);
        if (rc)
            return rc;
    }
    if (gpu && timing->graph) {
        int rc = tkp_gpu_timer_use_graph(gpu, launch_once, &l, err);
        if (rc)
            return rc;
    }
    double total = 0;
    int attempts = 0;
    while (!tkp_time_should_stop(timing, *samples, *n, total) && attempts++ < 4 * timing->max_reps) {
        double dt, clock = 0;
        int rc;
        if (gpu) {
            rc = tkp_gpu_time(gpu, timing->cold, launch_once, &l, &dt, &clock, err);
        } else {
            double t0 = tkp_now_us();
            rc = launch_once(&l, err);
            dt = tkp_now_us() - t0;
        }
        if (rc)
            return rc;
        total += dt;
        if (clock > 0 && max_clock_mhz > 0 && clock < 0.9 * max_clock_mhz) {
            (*throttled)++;
            continue;
        }
        (*samples)[(*n)++] = dt;
    }
    return TKP_OK;
}

/* What the whole run shares between cells. */
struct run_env {
    enum tkp_backend backend;
    double copy_gbps, max_clock_mhz;
    struct tkp_gpu_timer *gpu; /* NULL on the CPU */
    struct batch_cache cache;
};

static void run_cell(const struct tkp_plan *plan, const struct tkp_cell *cell, struct run_env *env,
                     struct tkp_cell_row *row, double **samples, int64_t *n_samples)
{
    struct tkp_error err = { "" };
    *samples = NULL;
    *n_samples = 0;
    enum tkp_backend backend = env->backend;
    const float *logits = cache_get(&env->cache, plan, cell, &err);
    if (!logits) {
        set_status(row, TKP_EINVAL, err.msg);
        return;
    }
    int32_t *k = malloc(sizeof(int32_t) * (size_t)cell->batch);
    float *p = malloc(sizeof(float) * (size_t)cell->batch);
    for (int64_t r = 0; r < cell->batch; r++) {
        k[r] = cell->k;
        p[r] = cell->p;
    }
    struct tkp_batch b = { cell->batch, cell->vocab, (float *)logits, k, p };
    const struct tkp_algo *a = cell->algo;
    int32_t draws = (a->outputs & TKP_OUT_SAMPLE) ? cell->draws : 0;
    struct tkp_problem pb = tkp_problem_of(&b, backend, a->outputs, draws);
    uint8_t *kept = (a->outputs & TKP_OUT_SET) ? malloc((size_t)(b.batch * b.vocab)) : NULL;
    int64_t *drawn = draws ? malloc(sizeof(int64_t) * (size_t)(b.batch * draws)) : NULL;
    struct tkp_instance in;
    int rc = tkp_validate_rows(&b, &err);
    if (!rc)
        rc = tkp_instance_open(&in, a, cell->opts, &pb, &err);
    if (!rc) {
        struct tkp_staged st;
        rc = tkp_stage(&st, &b, backend, kept, drawn, draws, cell->seed, 0, &err);
        if (!rc)
            rc = time_cell(&in, &st.io, &cell->timing, env->gpu, env->max_clock_mhz, samples,
                           n_samples, &row->throttled, &err);
        if (!rc)
            rc = tkp_staged_fetch(&st, &err);
        row->workspace_bytes = (int64_t)in.workspace_bytes;
        row->peak_device_bytes = (int64_t)(tkp_staged_bytes(&st) +
                                           (backend == TKP_GPU ? in.workspace_bytes : 0));
        tkp_staged_release(&st);
        if (!rc) {
            struct tkp_stats st = { 0 };
            if (a->stats)
                a->stats(in.state, &st);
            double rows = st.rows > 0 ? (double)st.rows : 1.0;
            row->hit_rate = (double)st.trunc_hits / rows;
            row->outliers = st.outliers / rows;
            row->outlier_mass = st.outlier_mass / rows;
            row->iterations = st.iterations / rows;
            row->rounds = st.rounds / rows;
            char why[300] = "";
            row->rows_exact = verify(&b, kept, drawn, draws, cell->verify_rows,
                                     &row->rows_checked, why, sizeof why);
            int exact = !(a->approximate && a->approximate(cell->opts));
            if (exact && row->rows_exact < row->rows_checked) {
                rc = TKP_EINVAL;
                tkp_error_set(&err, "%lld of %lld checked rows differ from the oracle; %s",
                              (long long)(row->rows_checked - row->rows_exact),
                              (long long)row->rows_checked, why);
            }
        }
        tkp_instance_close(&in);
    }
    struct tkp_time_stats ts;
    tkp_time_summarize(*samples, *n_samples, &ts);
    row->median_us = ts.median;
    row->q1_us = ts.q1;
    row->q3_us = ts.q3;
    row->min_us = ts.min;
    row->max_us = ts.max;
    row->mean_us = ts.mean;
    row->stdev_us = ts.stdev;
    row->bytes_read = (double)(b.batch * b.vocab) * 4.0 + (double)b.batch * 8.0;
    row->bytes_written = (kept ? (double)(b.batch * b.vocab) : 0.0) +
                         (double)(b.batch * draws) * 8.0;
    if (ts.median > 0) {
        row->gbps = (row->bytes_read + row->bytes_written) / (ts.median * 1e3);
        row->bw_fraction = env->copy_gbps > 0 ? row->gbps / env->copy_gbps : 0.0;
    }
    set_status(row, rc, err.msg);
    free(kept);
    free(drawn);
    free(k);
    free(p);
}

static void fill_row_identity(const struct tkp_cell *c, enum tkp_backend backend,
                              struct tkp_cell_row *row)
{
    memset(row, 0, sizeof *row);
    snprintf(row->key, sizeof row->key, "%s|%s", c->key, backend == TKP_GPU ? "gpu" : "cpu");
    snprintf(row->algo, sizeof row->algo, "%s", c->algo->name);
    snprintf(row->variant, sizeof row->variant, "%s", c->variant);
    snprintf(row->options, sizeof row->options, "%s", c->options);
    snprintf(row->dataset, sizeof row->dataset, "%s", c->dataset);
    snprintf(row->mode, sizeof row->mode, "%s", tkp_mode_name(c->k, c->p, c->vocab));
    snprintf(row->backend, sizeof row->backend, "%s", backend == TKP_GPU ? "gpu" : "cpu");
    row->batch = c->batch;
    row->vocab = c->vocab;
    row->k = c->k;
    row->p = c->p_declared;
    row->draws = c->draws;
    row->seed = (int64_t)c->seed;
}

void tkp_plan_print(const struct tkp_plan *plan, FILE *out)
{
    fprintf(out, "%zu cells\n", plan->n);
    for (size_t i = 0; i < plan->n; i++) {
        const struct tkp_cell *c = &plan->cells[i];
        fprintf(out, "%s\t%s%s%s\t%s\t%s\tV=%lld\tB=%lld\tk=%d\tp=%g\t%s\n", c->sweep,
                c->algo->name, c->variant[0] ? ":" : "", c->variant, c->options, c->dataset,
                (long long)c->vocab, (long long)c->batch, c->k, (double)c->p,
                tkp_mode_name(c->k, c->p, c->vocab));
    }
}

int tkp_run(const struct tkp_run_args *args, struct tkp_error *err)
{
    struct tkp_plan plan;
    int rc = tkp_config_load(args->config, args->backend, &plan, err);
    if (rc)
        return rc;
    if (args->dry_run) {
        tkp_plan_print(&plan, stdout);
        tkp_plan_free(&plan);
        return TKP_OK;
    }
    struct tkp_results *res;
    rc = tkp_results_open(&res, args->output, args->resume, err);
    if (rc) {
        tkp_plan_free(&plan);
        return rc;
    }
    struct run_env env = { .backend = args->backend };
    if (args->backend == TKP_GPU) {
        struct tkp_gpu_props props;
        rc = tkp_gpu_props(&props, err);
        if (!rc)
            rc = tkp_gpu_timer_open(&env.gpu, err);
        if (rc) {
            tkp_results_close(res);
            tkp_plan_free(&plan);
            return rc;
        }
        env.max_clock_mhz = props.max_sm_clock_mhz;
    }
    env.copy_gbps = tkp_measure_copy_gbps(args->backend);
    if (!args->resume)
        tkp_provenance_write(res, args->backend, args->argc, args->argv, env.copy_gbps);
    for (size_t i = 0; i < plan.n_files; i++)
        tkp_results_config(res, plan.files[i].name, plan.files[i].text);

    double started = tkp_now_us();
    size_t ran = 0, skipped = 0;
    for (size_t i = 0; i < plan.n && rc == TKP_OK; i++) {
        const struct tkp_cell *c = &plan.cells[i];
        struct tkp_cell_row row;
        fill_row_identity(c, args->backend, &row);
        if (args->resume && tkp_results_done(res, c->sweep, row.key)) {
            skipped++;
            continue;
        }
        double t0 = tkp_now_us(), *samples;
        int64_t n;
        run_cell(&plan, c, &env, &row, &samples, &n);
        row.cell_seconds = (tkp_now_us() - t0) * 1e-6;
        rc = tkp_results_append(res, c->sweep, &row, samples, n, err);
        free(samples);
        ran++;
        double elapsed = (tkp_now_us() - started) * 1e-6;
        double left = elapsed / (double)ran * (double)(plan.n - i - 1);
        fprintf(stderr, "[%zu/%zu] %s %s%s%s V=%lld B=%lld k=%d p=%g: %s %.1f us%s%s  (%.0f s left)\n",
                i + 1, plan.n, c->sweep, c->algo->name, c->variant[0] ? ":" : "", c->variant,
                (long long)c->vocab, (long long)c->batch, c->k, (double)c->p, row.status,
                row.median_us, row.message[0] ? " — " : "", row.message, left);
    }
    if (skipped)
        fprintf(stderr, "resume: %zu cells were already done\n", skipped);
    char now[64];
    tkp_utc_now(now, sizeof now);
    tkp_results_attr(res, "end_time", now);
    tkp_results_close(res);
    cache_free(&env.cache);
    tkp_gpu_timer_close(env.gpu);
    tkp_plan_free(&plan);
    return rc;
}
