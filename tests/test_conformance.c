/* test_conformance.c — every module of the registry (tkp_algos[], harness/module/registry.c) held to
 * the contract of docs/SEMANTICS.md with its default options, with no test written for it:
 * a module added to the registry gets these tests at load time. Per module, on each backend
 * it offers in this build (an implementation, algos/tkp.h: struct tkp_impl):
 *   conformance_table_<m>              the table, its statistics and its implementations are
 *                                      well formed (algos/tkp.h, TKP_ABI)
 *   conformance_last_run_stats_cpu_<m> stats() describes the last run, not the sum of runs
 *   conformance_oracle_cpu_<m>         every row of the adversarial suite (tests/cases.c)
 *                                      accepted by the oracle: kept sets and draws
 *   conformance_sampler_tv_cpu_<m>     sampling modules: the statistical sampler test
 *   conformance_deterministic_cpu_<m>  the same seed twice gives identical output
 *   gpu_conformance_matches_cpu_<m>    GPU = CPU bit for bit on the suite, and the oracle
 *   gpu_conformance_tiled_matches_cpu_<m> the same with each case's rows cycled to B = 200
 *   gpu_conformance_sampler_tv_<m>     sampling modules, on the GPU
 *   gpu_conformance_deterministic_<m>  on the GPU
 *   gpu_conformance_last_run_stats_<m> on the GPU
 * and per 16-bit type T (bf16, f16) that a backend's implementation reads (its `dtypes`),
 * on the suite in T (tests/cases_half.c; docs/SEMANTICS.md, "16-bit logits"):
 *   conformance_T_matches_f32_cpu_<m>  the output on T equals, bit for bit, the same
 *                                      implementation's on the float32 upcast, and the oracle
 *   conformance_T_deterministic_cpu_<m> the same seed twice gives identical output
 *   conformance_T_sampler_tv_cpu_<m>   sampling modules: the statistical sampler test
 *   gpu_conformance_T_matches_f32_<m>, gpu_conformance_T_deterministic_<m>,
 *   gpu_conformance_T_sampler_tv_<m>   the same on the GPU
 *   gpu_conformance_T_matches_cpu_<m>  GPU on T = CPU on T (or on the upcast, where the CPU
 *                                      does not read T) bit for bit, and the oracle
 * and, once, conformance_statistics_are_results_columns: the modules' statistics are the
 * results row's statistics columns, each name once; conformance_older_module_runs_without_
 * later_methods, conformance_older_module_gets_no_min_p_or_row_keys and
 * conformance_refuses_a_module_of_an_unknown_version: the version rule (algos/tkp.h, TKP_ABI);
 * and conformance_refuses_a_dtype_no_impl_reads: a logits type outside
 * an implementation's `dtypes` is refused by name before anything runs.
 * The gpu_ tests skip without a GPU (scripts/gpu-test.sh runs them, and compute-sanitizer
 * on gpu_conformance_matches_cpu_*). The per-module test files keep what is specific to a
 * module: its option knobs, its kernels' launch paths, its statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_row.h"
#include "gpu.h"
#include "peers.h"
#include "cases.h"
#include "test.h"

enum { TV_DRAWS = 20000 };

/* A module declaring TKP_NOT_IMPLEMENTED has nothing to check yet: skip, do not pass. */
static int implemented(const struct tkp_algo *a)
{
    if (a->flags & TKP_NOT_IMPLEMENTED) {
        test_skip("the module declares TKP_NOT_IMPLEMENTED");
        return 0;
    }
    return 1;
}

/* Only a module declaring TKP_DETERMINISTIC promises the same output for the same seed. */
static int deterministic(const struct tkp_algo *a)
{
    if (!(a->flags & TKP_DETERMINISTIC)) {
        test_skip("the module does not declare TKP_DETERMINISTIC");
        return 0;
    }
    return implemented(a);
}

/* One backend's implementation: what the harness calls must be there. */
static void check_impl(const struct tkp_algo *a, const struct tkp_impl *impl, const char *where)
{
    if (a->flags & TKP_NOT_IMPLEMENTED)
        return;
    CHECK(impl->state_size > 0 && impl->init && impl->run, "%s %s: state_size, init or run "
          "missing", a->name, where);
}

/* The module's statistics table: at most TKP_MAX_STATS rows, each a column name with a unit
 * and a meaning, no name twice, and a name another module declares has its unit. */
static void check_statistics(const struct tkp_algo *a)
{
    const struct tkp_stat *st = tkp_algo_statistics(a);
    const int n = tkp_algo_stat_count(a);
    CHECK(n <= TKP_MAX_STATS, "%s: %d statistics, at most %d", a->name, n, TKP_MAX_STATS);
    for (int i = 0; i < n && i < TKP_MAX_STATS; i++) {
        const char *name = st[i].name;
        CHECK(name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name),
              "%s statistic '%s': a column name is [a-z0-9_]", a->name, name);
        CHECK(st[i].unit && st[i].unit[0] && st[i].meaning && st[i].meaning[0],
              "%s statistic %s: no unit or meaning", a->name, name);
        CHECK(tkp_algo_stat_index(a, name) == i, "%s: statistic %s declared twice", a->name, name);
        for (const struct tkp_algo *const *m = tkp_algos; *m; m++) {
            const int j = tkp_algo_stat_index(*m, name);
            CHECK(j < 0 || strcmp(tkp_algo_statistics(*m)[j].unit, st[i].unit) == 0,
                  "statistic %s: unit '%s' in %s, '%s' in %s (one column, one unit)", name,
                  st[i].unit, a->name, tkp_algo_statistics(*m)[j].unit, (*m)->name);
        }
    }
}

static void table(const void *arg)
{
    const struct tkp_algo *a = arg;
    struct tkp_error err = { "" };
    REQUIRE(tkp_algo_check_abi(a, &err) == TKP_OK, "%s", err.msg);
    CHECK(a->name[0] && a->summary && a->summary[0], "%s: empty name or summary", a->name);
    CHECK(tkp_algo_find(a->name) == a, "%s: another module or peer has this name", a->name);
    CHECK(!(a->flags & TKP_PEER) && !tkp_peer_of(a), "%s: a peer in the module list", a->name);
    CHECK(a->ops && !(a->ops & ~(unsigned)(TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP | TKP_MINP)),
          "%s: ops %#x", a->name, a->ops);
    CHECK(a->outputs && !(a->outputs & ~(unsigned)(TKP_OUT_SET | TKP_OUT_SAMPLE)),
          "%s: outputs %#x", a->name, a->outputs);
    /* The CPU reference always; the GPU only where the kernels were compiled. */
    REQUIRE(a->cpu, "%s: no CPU implementation", a->name);
    check_impl(a, a->cpu, "cpu");
#ifdef TKP_HAVE_CUDA
    if (a->gpu)
        check_impl(a, a->gpu, "gpu");
#else
    CHECK(!a->gpu, "%s: a GPU implementation in a build without CUDA", a->name);
#endif
    CHECK(tkp_algo_backends(a) == (TKP_CPU | (a->gpu ? (unsigned)TKP_GPU : 0u)),
          "%s: backends %#x (a module's are its impls)", a->name, tkp_algo_backends(a));
    check_statistics(a);
    CHECK(a->max_set >= 0, "%s: max_set %lld", a->name, (long long)a->max_set);
    for (const struct tkp_option *o = a->options; o && o->name; o++) {
        size_t size = o->type == TKP_OPT_DOUBLE ? sizeof(double) : sizeof(int);
        CHECK(o->help && o->help[0], "%s option %s: no help", a->name, o->name);
        CHECK(o->offset + size <= a->opts_size, "%s option %s: offset %zu past opts_size %zu",
              a->name, o->name, o->offset, a->opts_size);
        if (TKP_OPT_IS_ENUM(o)) {
            int n = 0;
            while (o->choices && o->choices[n])
                n++;
            CHECK(n > 0 && o->def >= 0 && o->def < n, "%s option %s: default %g of %d choices",
                  a->name, o->name, o->def, n);
        } else {
            CHECK(o->min <= o->def && o->def <= o->max, "%s option %s: default %g outside %g..%g",
                  a->name, o->name, o->def, o->min, o->max);
        }
    }
    /* The defaults are what every other conformance test runs: they must be exact. */
    void *opts = module_options(a->name, NULL);
    CHECK(opts && !(a->approximate && a->approximate(opts)),
          "%s: the default options are approximate", a->name);
    free(opts);
}

static void oracle_cpu(const void *arg)
{
    if (implemented(arg))
        check_module_cases(((const struct tkp_algo *)arg)->name, NULL, TKP_CPU);
}

static void sampler_tv_cpu(const void *arg)
{
    if (implemented(arg))
        check_sampler_tv(((const struct tkp_algo *)arg)->name, NULL, TKP_CPU, TV_DRAWS);
}

static void deterministic_cpu(const void *arg)
{
    if (deterministic(arg))
        check_deterministic(((const struct tkp_algo *)arg)->name, NULL, TKP_CPU);
}

static void gpu_matches_cpu(const void *arg)
{
    if (implemented(arg))
        check_gpu_matches_cpu(((const struct tkp_algo *)arg)->name, NULL);
}

/* The suite's rows cycled to B = 200, past the 132 SMs of an H100 or H200: the paths of many
 * rows (a CTA or a warp a row, rows in waves) on adversarial rows. */
static void gpu_tiled_matches_cpu(const void *arg)
{
    if (implemented(arg))
        check_gpu_matches_cpu_tiled(((const struct tkp_algo *)arg)->name, NULL, 200);
}

static void gpu_sampler_tv(const void *arg)
{
    REQUIRE_GPU();
    if (implemented(arg))
        check_sampler_tv(((const struct tkp_algo *)arg)->name, NULL, TKP_GPU, TV_DRAWS);
}

static void gpu_deterministic(const void *arg)
{
    if (deterministic(arg))
        check_deterministic(((const struct tkp_algo *)arg)->name, NULL, TKP_GPU);
}

/* Two of the statistics are the same (field by field: the struct has padding); `differs`
 * names the first statistic that is not. */
static int same_stats(const struct tkp_algo *a, const struct tkp_stats *x,
                      const struct tkp_stats *y, char *differs, size_t n)
{
    snprintf(differs, n, "rows %lld/%lld, reported %#x/%#x", (long long)x->rows,
             (long long)y->rows, x->reported, y->reported);
    if (x->rows != y->rows || x->reported != y->reported)
        return 0;
    for (int i = 0; i < TKP_MAX_STATS; i++)
        if (x->total[i] != y->total[i]) {
            snprintf(differs, n, "%s %.17g/%.17g", i < tkp_algo_stat_count(a)
                     ? tkp_algo_statistics(a)[i].name : "an undeclared statistic",
                     x->total[i], y->total[i]);
            return 0;
        }
    return 1;
}

/* algos/tkp.h: stats() describes the last run. Run one instance once, then twice more: the
 * statistics must not change, they must count the batch's rows once, and report only what the
 * module's table declares. */
static void check_last_run_stats(const struct tkp_algo *a, enum tkp_backend backend)
{
    enum { B = 6, V = 700, DRAWS = 8 };
    struct test_case c;
    case_gaussian(&c, 23, B, V, 2.0f);
    cases_fit(a, &c, 1);
    const int32_t draws = (a->outputs & TKP_OUT_SAMPLE) ? DRAWS : 0;
    uint8_t *kept = (a->outputs & TKP_OUT_SET) ? malloc(B * V) : NULL;
    int64_t *drawn = draws ? malloc(sizeof(int64_t) * B * DRAWS) : NULL;
    struct tkp_problem pb = tkp_problem_of(&c.b, backend, a->outputs, draws);
    struct tkp_instance in;
    struct tkp_staged st;
    struct tkp_error err = { "" };
    int rc = tkp_instance_open(&in, a, NULL, &pb, &err);
    REQUIRE(rc == TKP_OK, "%s: open: %s", a->name, err.msg);
    rc = tkp_stage(&st, &c.b, backend, kept, drawn, draws, 5, 0, &err);
    struct tkp_stats once, thrice;
    if (rc == TKP_OK && (rc = tkp_instance_run(&in, &st.io, &err)) == TKP_OK) {
        tkp_instance_stats(&in, &once);
        for (int i = 0; i < 2 && rc == TKP_OK; i++)
            rc = tkp_instance_run(&in, &st.io, &err);
        tkp_instance_stats(&in, &thrice);
    }
    CHECK(rc == TKP_OK, "%s: %s", a->name, err.msg);
    char differs[160];
    CHECK(rc != TKP_OK || same_stats(a, &once, &thrice, differs, sizeof differs),
          "%s: the statistics after three runs differ from those after one (%s)", a->name,
          differs);
    CHECK(rc != TKP_OK || !once.reported || once.rows == B, "%s: stats count %lld rows of %d",
          a->name, (long long)once.rows, B);
    const unsigned declared = (unsigned)((1ull << tkp_algo_stat_count(a)) - 1);
    CHECK(!(once.reported & ~declared), "%s: stats report %#x, its table declares %#x", a->name,
          once.reported, declared);
    tkp_staged_release(&st);
    tkp_instance_close(&in);
    free(kept);
    free(drawn);
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

static void last_run_stats_cpu(const void *arg)
{
    if (implemented(arg))
        check_last_run_stats(arg, TKP_CPU);
}

static void gpu_last_run_stats(const void *arg)
{
    REQUIRE_GPU();
    if (implemented(arg))
        check_last_run_stats(arg, TKP_GPU);
}

/* The registry's statistics are the results row's statistics columns: each module's names
 * are columns (once each among all the columns), the statistics columns files already have are
 * declared by some module, and the union fits tkp_cell_row.stats. A row takes a module's
 * reported statistics per row and NaN elsewhere. */
TEST(conformance_statistics_are_results_columns)
{
    const char *stats[TKP_MAX_STAT_COLUMNS], *cols[256];
    const size_t n_stats = tkp_results_stat_columns(stats, TKP_MAX_STAT_COLUMNS);
    const size_t n_cols = tkp_results_columns(cols, 256);
    REQUIRE(n_stats <= TKP_MAX_STAT_COLUMNS && n_cols <= 256, "%zu statistics columns (at most "
            "%d), %zu columns", n_stats, TKP_MAX_STAT_COLUMNS, n_cols);
    for (size_t i = 0; i < n_cols; i++)
        for (size_t j = i + 1; j < n_cols; j++)
            CHECK(strcmp(cols[i], cols[j]) != 0, "column %s twice (a statistic named as a fixed "
                  "column?)", cols[i]);
    for (size_t i = 0; i < n_stats; i++) {
        int declared = 0, listed = 0;
        for (const struct tkp_algo *const *m = tkp_algos; *m; m++)
            declared |= tkp_algo_stat_index(*m, stats[i]) >= 0;
        for (size_t j = 0; j < n_cols; j++)
            listed |= strcmp(cols[j], stats[i]) == 0;
        CHECK(declared && listed && tkp_results_stat_column(stats[i]) == (int)i,
              "statistics column %s: declared by a module %d, a column %d", stats[i], declared,
              listed);
    }
    const struct tkp_algo *q = tkp_algo_find("qrita");
    struct tkp_stats st = { .rows = 4, .reported = TKP_STAT_BIT(1) };
    st.total[0] = 3; /* not reported: NaN */
    st.total[1] = 10;
    struct tkp_cell_row row;
    tkp_row_stats(&row, q, &st);
    const int reported = tkp_results_stat_column(tkp_algo_statistics(q)[1].name);
    for (int i = 0; i < TKP_MAX_STAT_COLUMNS; i++)
        CHECK(i == reported ? row.stats[i] == 2.5 : isnan(row.stats[i]),
              "row statistic %d: %g (%s reported in column %d)", i, row.stats[i],
              tkp_algo_statistics(q)[1].name, reported);
}

/* The version rule (algos/tkp.h, TKP_ABI): a copy of rtopk's table as a module of an older
 * version. Version 3 has no statistics: it runs, its output bit for bit the current rtopk's,
 * and its stats() is never called (the control, at TKP_ABI, calls it); version 2 has no
 * `dtypes`: a bf16 batch is refused, though its implementation reads bf16. */
static int spied_stats;
static void spy_stats(const void *state, struct tkp_stats *out)
{
    (void)state;
    spied_stats++;
    out->rows = 1;
    out->reported = 1;
}

TEST(conformance_older_module_runs_without_later_methods)
{
    const struct tkp_algo *now = tkp_algo_find("rtopk");
    struct tkp_impl impl = *now->cpu;
    impl.stats = spy_stats;
    struct tkp_algo old = *now;
    old.cpu = &impl;
    struct test_case c;
    case_gaussian(&c, 7, 3, 300, 1.0f);
    for (int i = 0; i < 3; i++)
        c.b.k[i] = 20;
    uint8_t kept[3 * 300], want[3 * 300];
    struct tkp_error err = { "" };
    REQUIRE(tkp_apply(now, NULL, TKP_CPU, &c.b, want, NULL, 0, 0, 0, NULL, &err) == TKP_OK, "%s",
            err.msg);
    struct tkp_stats st;
    for (int abi = TKP_ABI_STATISTICS - 1; abi <= TKP_ABI; abi++) {
        old.abi = abi;
        spied_stats = 0;
        int rc = tkp_apply(&old, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, &st, &err);
        REQUIRE(rc == TKP_OK, "a module of version %d: %s", abi, err.msg);
        CHECK(memcmp(kept, want, sizeof want) == 0, "version %d: another kept set", abi);
        const int later = abi >= TKP_ABI_STATISTICS;
        CHECK(spied_stats == later && !!st.reported == later && !!tkp_algo_statistics(&old) ==
              later, "version %d: stats() called %d times, reported %#x", abi, spied_stats,
              st.reported);
    }
    uint16_t enc[3 * 300];
    for (int i = 0; i < 3 * 300; i++)
        enc[i] = tkp_f32_to_bf16(c.b.logits[i]);
    c.b.logits16 = enc;
    c.b.dtype = TKP_BF16;
    for (int abi = TKP_ABI_DTYPES - 1; abi <= TKP_ABI_DTYPES; abi++) {
        old.abi = abi;
        int rc = tkp_apply(&old, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
        CHECK(abi < TKP_ABI_DTYPES ? rc == TKP_EUNSUPPORTED && strstr(err.msg, "bf16")
                                   : rc == TKP_OK,
              "version %d on bf16 logits: status %d (%s)", abi, rc, err.msg);
    }
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

/* The version rule for per-row keys and min-p (algos/tkp.h, TKP_ABI_SAMPLING): a copy of
 * naive_sort's table (it has min-p and draws) as a module of the version before is refused a
 * batch with min-p on in a row, and a draw with per-row seeds, by name and with nothing
 * written; at TKP_ABI_SAMPLING it runs, bit for bit the current naive_sort; without either, the
 * older one runs. */
static int older_run(const struct tkp_algo *a, const struct test_case *c, uint8_t *kept,
                     int64_t *samples, struct tkp_error *err)
{
    memset(kept, 0xAB, (size_t)(c->b.batch * c->b.vocab));
    memset(samples, 0xAB, sizeof(int64_t) * (size_t)(c->b.batch * 2));
    return tkp_apply(a, NULL, TKP_CPU, &c->b, kept, samples, 2, 7, 0, NULL, err);
}

TEST(conformance_older_module_gets_no_min_p_or_row_keys)
{
    const struct tkp_algo *now = tkp_algo_find("naive_sort");
    struct tkp_algo old = *now;
    struct test_case c;
    case_gaussian(&c, 11, 3, 200, 1.0f);
    float min_p[3] = { 0.0f, 0.25f, 0.0f };
    uint64_t seeds[3] = { 5, 0, UINT64_MAX };
    uint8_t kept[3 * 200], want_kept[3 * 200];
    int64_t samples[3 * 2], want_samples[3 * 2];
    struct tkp_error err = { "" };
    for (int mode = 0; mode < 3; mode++) { /* none, min-p, per-row seeds */
        c.b.min_p = mode == 1 ? min_p : NULL;
        c.b.seed = mode == 2 ? seeds : NULL;
        REQUIRE(older_run(now, &c, want_kept, want_samples, &err) == TKP_OK, "%s", err.msg);
        for (int abi = TKP_ABI_SAMPLING - 1; abi <= TKP_ABI_SAMPLING; abi++) {
            old.abi = abi;
            int rc = older_run(&old, &c, kept, samples, &err);
            if (abi < TKP_ABI_SAMPLING && mode > 0) {
                CHECK(rc == TKP_EUNSUPPORTED && strstr(err.msg, "naive_sort") &&
                      strstr(err.msg, mode == 1 ? "no min-p" : "no per-row seeds"),
                      "version %d, mode %d: status %d (%s)", abi, mode, rc, err.msg);
                CHECK(kept[0] == 0xAB && kept[sizeof kept - 1] == 0xAB,
                      "version %d, mode %d: refused but wrote a kept set", abi, mode);
                continue;
            }
            REQUIRE(rc == TKP_OK, "version %d, mode %d: %s", abi, mode, err.msg);
            CHECK(memcmp(kept, want_kept, sizeof kept) == 0 &&
                  memcmp(samples, want_samples, sizeof samples) == 0,
                  "version %d, mode %d: another kept set or other draws", abi, mode);
        }
    }
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

/* A module newer than the harness, or older than the oldest it loads, is refused at its first
 * use with a message naming the module and both versions. */
TEST(conformance_refuses_a_module_of_an_unknown_version)
{
    struct tkp_algo old = *tkp_algo_find("naive_sort");
    struct test_case c;
    case_gaussian(&c, 3, 2, 50, 1.0f);
    uint8_t kept[2 * 50];
    const int versions[] = { TKP_ABI + 1, TKP_ABI_OLDEST - 1 };
    for (int i = 0; i < 2; i++) {
        old.abi = versions[i];
        struct tkp_error err = { "" };
        int rc = tkp_apply(&old, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
        char module[64], harness[64];
        snprintf(module, sizeof module, "contract version (abi) %d, %s", versions[i],
                 i == 0 ? "newer than" : "older than");
        snprintf(harness, sizeof harness, i == 0 ? "this harness's version %d" :
                 "this harness (version %d)", TKP_ABI);
        CHECK(rc == TKP_EINVAL, "a module of abi %d ran (status %d)", versions[i], rc);
        CHECK(strstr(err.msg, "naive_sort") && strstr(err.msg, module) &&
              strstr(err.msg, harness), "the refusal names neither the module nor both "
              "versions: %s", err.msg);
    }
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

/* Every implementation of every module: a 16-bit batch of a type its `dtypes` lacks is
 * TKP_EUNSUPPORTED, the message naming the module and the type, with no output written; a
 * type outside enum tkp_dtype is TKP_EINVAL. */
TEST(conformance_refuses_a_dtype_no_impl_reads)
{
    struct test_case c;
    case_gaussian(&c, 5, 2, 64, 1.0f);
    uint16_t enc[2 * 64];
    for (int i = 0; i < 2 * 64; i++)
        enc[i] = tkp_f32_to_bf16(c.b.logits[i]);
    c.b.logits16 = enc;
    uint8_t kept[2 * 64];
    for (const struct tkp_algo *const *m = tkp_algos; *m; m++)
        for (enum tkp_backend be = TKP_CPU; be <= TKP_GPU; be = (enum tkp_backend)(be << 1)) {
            const struct tkp_impl *impl = tkp_algo_impl(*m, be);
            if (!impl || ((*m)->flags & TKP_NOT_IMPLEMENTED) || !((*m)->outputs & TKP_OUT_SET))
                continue;
            for (enum tkp_dtype t = TKP_BF16; t <= TKP_F16; t++) {
                if (tkp_impl_dtypes(*m, impl) & TKP_DTYPE_BIT(t))
                    continue;
                c.b.dtype = t;
                memset(kept, 0xAB, sizeof kept);
                struct tkp_error err = { "" };
                int rc = tkp_apply(*m, NULL, be, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
                CHECK(rc == TKP_EUNSUPPORTED, "%s on %s logits (backend %d): status %d, want "
                      "unsupported", (*m)->name, tkp_dtype_name(t), (int)be, rc);
                CHECK(strstr(err.msg, (*m)->name) && strstr(err.msg, tkp_dtype_name(t)),
                      "the refusal names neither the module nor %s: %s", tkp_dtype_name(t),
                      err.msg);
                CHECK(kept[0] == 0xAB && kept[2 * 64 - 1] == 0xAB, "%s wrote a refused output",
                      (*m)->name);
            }
            c.b.dtype = (enum tkp_dtype)7;
            struct tkp_error err = { "" };
            int rc = tkp_apply(*m, NULL, be, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
            CHECK(rc == TKP_EINVAL && strstr(err.msg, "7"), "%s on element type 7: status %d "
                  "(%s), want invalid", (*m)->name, rc, err.msg);
        }
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

/* What a 16-bit conformance test runs: a module's implementation on one backend reading
 * one 16-bit type. */
struct dtype_run {
    const struct tkp_algo *algo;
    enum tkp_backend backend;
    enum tkp_dtype dtype;
};

static void dtype_matches_f32(const void *arg)
{
    const struct dtype_run *x = arg;
    if (implemented(x->algo))
        check_dtype_matches_f32(x->algo->name, NULL, x->backend, x->dtype);
}

static void dtype_gpu_matches_cpu(const void *arg)
{
    const struct dtype_run *x = arg;
    if (implemented(x->algo))
        check_gpu_matches_cpu_dtype(x->algo->name, NULL, x->dtype);
}

static void dtype_deterministic(const void *arg)
{
    const struct dtype_run *x = arg;
    if (deterministic(x->algo))
        check_deterministic_dtype(x->algo->name, NULL, x->backend, x->dtype);
}

static void dtype_sampler_tv(const void *arg)
{
    const struct dtype_run *x = arg;
    if (x->backend == TKP_GPU)
        REQUIRE_GPU();
    if (implemented(x->algo))
        check_sampler_tv_dtype(x->algo->name, NULL, x->backend, TV_DRAWS, x->dtype);
}

/* The 16-bit tests of one backend's implementation, one set per type in its `dtypes`
 * (names and arguments are never freed: the runner keeps them). */
static void add_dtype_tests(const struct tkp_algo *a, enum tkp_backend backend)
{
    const struct tkp_impl *impl = tkp_algo_impl(a, backend);
    static const struct {
        const char *what;
        test_fn_arg fn;
        int sampler_only, gpu_only;
    } tests[] = {
        { "matches_f32", dtype_matches_f32, 0, 0 },
        { "deterministic", dtype_deterministic, 0, 0 },
        { "sampler_tv", dtype_sampler_tv, 1, 0 },
        { "matches_cpu", dtype_gpu_matches_cpu, 0, 1 },
    };
    for (enum tkp_dtype t = TKP_BF16; impl && t <= TKP_F16; t++) {
        if (!(tkp_impl_dtypes(a, impl) & TKP_DTYPE_BIT(t)))
            continue;
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
            if ((tests[i].sampler_only && !(a->outputs & TKP_OUT_SAMPLE)) ||
                (tests[i].gpu_only && backend != TKP_GPU))
                continue;
            struct dtype_run *x = malloc(sizeof *x);
            char *name;
            if (!x || (backend == TKP_GPU
                           ? asprintf(&name, "gpu_conformance_%s_%s_%s", tkp_dtype_name(t),
                                      tests[i].what, a->name)
                           : asprintf(&name, "conformance_%s_%s_cpu_%s", tkp_dtype_name(t),
                                      tests[i].what, a->name)) < 0) {
                fprintf(stderr, "out of memory registering the %s tests of %s\n",
                        tkp_dtype_name(t), a->name);
                exit(2);
            }
            *x = (struct dtype_run){ a, backend, t };
            test_register_arg(name, tests[i].fn, x);
        }
    }
}

/* naive_sort's kept sets and 4 draws a row of case c on the CPU (draws NULL: none). */
static int run_naive_sort(const struct test_case *c, uint8_t *kept, int64_t *draws)
{
    const struct tkp_algo *a = tkp_algo_find("naive_sort");
    void *opts = module_options("naive_sort", NULL);
    struct tkp_error err = { "" };
    const int rc = opts ? tkp_apply(a, opts, TKP_CPU, &c->b, kept, draws, draws ? 4 : 0, c->seed,
                                    11, NULL, &err)
                        : -1;
    free(opts);
    return rc;
}

/* case_tile, which the tiled GPU tests rely on: row r of a tiled case is row r % B of the
 * case, values, encodings and filters alike, so a module keeps the same set there; with
 * per-row keys (seeds and offsets tiled too) it also draws the same tokens (CPU, every case
 * of the float32 and bf16 suites, tiled to 3 and to 37 rows). */
TEST(conformance_tiled_rows_keep_their_rows_kept_sets)
{
    for (enum tkp_dtype dt = TKP_F32; dt <= TKP_BF16 && !test_failed(); dt++) {
        struct test_case *c, *t;
        const int n = cases_build_dtype(dt, &c);
        for (int64_t rows = 3; rows <= 37 && !test_failed(); rows += 34) {
            REQUIRE(cases_build_dtype(dt, &t) == n, "the suite is not the same twice");
            for (int i = 0; i < n && !test_failed(); i++) {
                const size_t v = (size_t)c[i].b.vocab, b = (size_t)c[i].b.batch;
                const int keyed = c[i].b.seed || c[i].b.offset;
                uint8_t *k1 = malloc(v * b), *k2 = malloc(v * (size_t)rows);
                int64_t *d1 = keyed ? malloc(32 * b) : NULL, *d2 = keyed ? malloc(32 * rows) : NULL;
                case_tile(&t[i], rows);
                REQUIRE(k1 && k2 && t[i].b.batch == rows && run_naive_sort(&c[i], k1, d1) == 0 &&
                            run_naive_sort(&t[i], k2, d2) == 0,
                        "case %s (%s) tiled to %lld rows", c[i].name, tkp_dtype_name(dt),
                        (long long)rows);
                for (int64_t r = 0; r < rows; r++) {
                    const size_t from = (size_t)(r % c[i].b.batch);
                    CHECK(memcmp(k2 + v * (size_t)r, k1 + v * from, v) == 0 &&
                              (!keyed || memcmp(d2 + 4 * r, d1 + 4 * from, 32) == 0),
                          "case %s (%s) tiled to %lld rows: row %lld is not row %zu", c[i].name,
                          tkp_dtype_name(dt), (long long)rows, (long long)r, from);
                }
                free(k1), free(k2), free(d1), free(d2);
            }
            cases_free(t, n);
        }
        cases_free(c, n);
    }
}

__attribute__((constructor)) static void register_conformance(void)
{
    for (int i = 0; tkp_algos[i]; i++) {
        const struct tkp_algo *a = tkp_algos[i];
        const int sampler = (a->outputs & TKP_OUT_SAMPLE) != 0;
        test_register_named("conformance_table_", a->name, table, a);
        test_register_named("conformance_oracle_cpu_", a->name, oracle_cpu, a);
        if (sampler)
            test_register_named("conformance_sampler_tv_cpu_", a->name, sampler_tv_cpu, a);
        test_register_named("conformance_deterministic_cpu_", a->name, deterministic_cpu, a);
        test_register_named("conformance_last_run_stats_cpu_", a->name, last_run_stats_cpu, a);
        add_dtype_tests(a, TKP_CPU);
        if (!(tkp_algo_backends(a) & TKP_GPU))
            continue;
        test_register_named("gpu_conformance_matches_cpu_", a->name, gpu_matches_cpu, a);
        test_register_named("gpu_conformance_tiled_matches_cpu_", a->name, gpu_tiled_matches_cpu,
                            a);
        if (sampler)
            test_register_named("gpu_conformance_sampler_tv_", a->name, gpu_sampler_tv, a);
        test_register_named("gpu_conformance_deterministic_", a->name, gpu_deterministic, a);
        test_register_named("gpu_conformance_last_run_stats_", a->name, gpu_last_run_stats, a);
        add_dtype_tests(a, TKP_GPU);
    }
}
