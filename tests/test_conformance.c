/* test_conformance.c — every module of the registry (tkp_algos[], harness/registry.c) held to
 * the contract of docs/SEMANTICS.md with its default options, with no test written for it:
 * a module added to the registry gets these tests at load time. Per module, on each backend
 * it offers in this build (an implementation, algos/tkp.h: struct tkp_impl):
 *   conformance_table_<m>              the table and its implementations are well formed
 *                                      (algos/tkp.h, TKP_ABI)
 *   conformance_last_run_stats_cpu_<m> stats() describes the last run, not the sum of runs
 *   conformance_oracle_cpu_<m>         every row of the adversarial suite (tests/cases.c)
 *                                      accepted by the oracle: kept sets and draws
 *   conformance_sampler_tv_cpu_<m>     sampling modules: the statistical sampler test
 *   conformance_deterministic_cpu_<m>  the same seed twice gives identical output
 *   gpu_conformance_matches_cpu_<m>    GPU = CPU bit for bit on the suite, and the oracle
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
 * and, once, conformance_refuses_another_abi: the harness refuses a module of another TKP_ABI,
 * and conformance_refuses_a_dtype_no_impl_reads: a logits type outside an implementation's
 * `dtypes` is refused by name before anything runs.
 * The gpu_ tests skip without a GPU (scripts/gpu-test.sh runs them, and compute-sanitizer
 * on gpu_conformance_matches_cpu_*). The per-module test files keep what is specific to a
 * module: its option knobs, its kernels' launch paths, its statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/gpu.h"
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

static void table(const void *arg)
{
    const struct tkp_algo *a = arg;
    REQUIRE(a->abi == TKP_ABI, "%s: abi %d, want %d", a->name, a->abi, TKP_ABI);
    CHECK(a->name[0] && a->summary && a->summary[0], "%s: empty name or summary", a->name);
    CHECK(tkp_algo_find(a->name) == a, "%s: another module or peer has this name", a->name);
    CHECK(!(a->flags & TKP_PEER) && !a->package, "%s: a peer in the module list", a->name);
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
    CHECK(tkp_algo_backends(a) == (TKP_CPU | (a->gpu ? (unsigned)TKP_GPU : 0u)) &&
          !a->peer_backends, "%s: backends %#x, peer_backends %#x (a module has impls)",
          a->name, tkp_algo_backends(a), a->peer_backends);
    CHECK(a->max_set >= 0, "%s: max_set %lld", a->name, (long long)a->max_set);
    for (const struct tkp_option *o = a->options; o && o->name; o++) {
        size_t size = o->type == TKP_OPT_DOUBLE ? sizeof(double) : sizeof(int);
        CHECK(o->help && o->help[0], "%s option %s: no help", a->name, o->name);
        CHECK(o->offset + size <= a->opts_size, "%s option %s: offset %zu past opts_size %zu",
              a->name, o->name, o->offset, a->opts_size);
        if (o->type == TKP_OPT_ENUM) {
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

/* Two of the statistics are the same (field by field: the struct has padding). */
static int same_stats(const struct tkp_stats *x, const struct tkp_stats *y)
{
    return x->rows == y->rows && x->trunc_hits == y->trunc_hits &&
           x->fallbacks == y->fallbacks && x->outliers == y->outliers &&
           x->outlier_mass == y->outlier_mass && x->iterations == y->iterations &&
           x->rounds == y->rounds && x->sorted == y->sorted && x->reported == y->reported;
}

/* algos/tkp.h: stats() describes the last run. Run one instance once, then twice more: the
 * statistics must not change, and they must count the batch's rows once. */
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
    CHECK(rc != TKP_OK || same_stats(&once, &thrice),
          "%s: the statistics after three runs differ from those after one (rows %lld/%lld, "
          "hits %lld/%lld, outliers %g/%g, iterations %g/%g, rounds %g/%g, sorted %g/%g)",
          a->name, (long long)once.rows, (long long)thrice.rows, (long long)once.trunc_hits,
          (long long)thrice.trunc_hits, once.outliers, thrice.outliers, once.iterations,
          thrice.iterations, once.rounds, thrice.rounds, once.sorted, thrice.sorted);
    CHECK(rc != TKP_OK || !once.reported || once.rows == B, "%s: stats count %lld rows of %d",
          a->name, (long long)once.rows, B);
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

/* A module written for another contract version is refused at its first use, by name. */
TEST(conformance_refuses_another_abi)
{
    struct tkp_algo old = *tkp_algo_find("naive_sort");
    old.abi = TKP_ABI - 1;
    struct test_case c;
    case_gaussian(&c, 3, 2, 50, 1.0f);
    uint8_t kept[2 * 50];
    struct tkp_error err = { "" };
    int rc = tkp_apply(&old, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
    char versions[64];
    snprintf(versions, sizeof versions, "(abi) %d, but this harness implements version %d",
             TKP_ABI - 1, TKP_ABI);
    CHECK(rc == TKP_EINVAL, "a module of abi %d ran (status %d)", TKP_ABI - 1, rc);
    CHECK(strstr(err.msg, "naive_sort") && strstr(err.msg, versions),
          "the refusal names neither the module nor both versions: %s", err.msg);
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
                if (impl->dtypes & TKP_DTYPE_BIT(t))
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
        if (!(impl->dtypes & TKP_DTYPE_BIT(t)))
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

/* One test named <prefix><module> (the name is never freed: the runner keeps it). */
static void add(const char *prefix, test_fn_arg fn, const struct tkp_algo *a)
{
    char *name;
    if (asprintf(&name, "%s%s", prefix, a->name) < 0) {
        fprintf(stderr, "out of memory registering %s%s\n", prefix, a->name);
        exit(2);
    }
    test_register_arg(name, fn, a);
}

__attribute__((constructor)) static void register_conformance(void)
{
    for (int i = 0; tkp_algos[i]; i++) {
        const struct tkp_algo *a = tkp_algos[i];
        const int sampler = (a->outputs & TKP_OUT_SAMPLE) != 0;
        add("conformance_table_", table, a);
        add("conformance_oracle_cpu_", oracle_cpu, a);
        if (sampler)
            add("conformance_sampler_tv_cpu_", sampler_tv_cpu, a);
        add("conformance_deterministic_cpu_", deterministic_cpu, a);
        add("conformance_last_run_stats_cpu_", last_run_stats_cpu, a);
        add_dtype_tests(a, TKP_CPU);
        if (!(tkp_algo_backends(a) & TKP_GPU))
            continue;
        add("gpu_conformance_matches_cpu_", gpu_matches_cpu, a);
        if (sampler)
            add("gpu_conformance_sampler_tv_", gpu_sampler_tv, a);
        add("gpu_conformance_deterministic_", gpu_deterministic, a);
        add("gpu_conformance_last_run_stats_", gpu_last_run_stats, a);
        add_dtype_tests(a, TKP_GPU);
    }
}
