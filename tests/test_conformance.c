/* test_conformance.c — every module of the registry (tkp_algos[], harness/registry.c) held to
 * the contract of docs/SEMANTICS.md with its default options, with no test written for it:
 * a module added to the registry gets these tests at load time. Per module, on each backend
 * it declares and this build has:
 *   conformance_table_<m>              the table is well formed (algos/tkp.h)
 *   conformance_oracle_cpu_<m>         every row of the adversarial suite (tests/cases.c)
 *                                      accepted by the oracle: kept sets and draws
 *   conformance_sampler_tv_cpu_<m>     sampling modules: the statistical sampler test
 *   conformance_deterministic_cpu_<m>  the same seed twice gives identical output
 *   gpu_conformance_matches_cpu_<m>    GPU = CPU bit for bit on the suite, and the oracle
 *   gpu_conformance_sampler_tv_<m>     sampling modules, on the GPU
 *   gpu_conformance_deterministic_<m>  on the GPU
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

static void table(const void *arg)
{
    const struct tkp_algo *a = arg;
    REQUIRE(a->abi == TKP_ABI, "%s: abi %d, want %d", a->name, a->abi, TKP_ABI);
    CHECK(a->name[0] && a->summary && a->summary[0], "%s: empty name or summary", a->name);
    CHECK(tkp_algo_find(a->name) == a, "%s: another module or peer has this name", a->name);
    CHECK(!(a->flags & TKP_PEER) && !a->package, "%s: a peer in the module list", a->name);
    CHECK(a->ops && !(a->ops & ~(unsigned)(TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP)),
          "%s: ops %#x", a->name, a->ops);
    CHECK(a->outputs && !(a->outputs & ~(unsigned)(TKP_OUT_SET | TKP_OUT_SAMPLE)),
          "%s: outputs %#x", a->name, a->outputs);
    CHECK((a->backends & TKP_CPU) && !(a->backends & ~(unsigned)TKP_BUILT_BACKENDS),
          "%s: backends %#x (the CPU, and nothing this build lacks)", a->name, a->backends);
    CHECK(a->supports && ((a->init && a->run) || (a->flags & TKP_NOT_IMPLEMENTED)),
          "%s: supports, init or run missing", a->name);
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
        if (!(a->backends & TKP_BUILT_BACKENDS & TKP_GPU))
            continue;
        add("gpu_conformance_matches_cpu_", gpu_matches_cpu, a);
        if (sampler)
            add("gpu_conformance_sampler_tv_", gpu_sampler_tv, a);
        add("gpu_conformance_deterministic_", gpu_deterministic, a);
    }
}
