/* test_gpu_batch_invariance.c — batch invariance on the GPU, the twin of
 * tests/test_batch_invariance.c: the same checks (tests/batch_invariance.c) on each module's
 * GPU backend, and the GPU's draws under per-row keys equal the CPU's (the adversarial suite's
 * row-key cases run there through check_gpu_matches_cpu). Every test skips when no GPU is
 * present. */
#include <stdio.h>
#include <stdlib.h>

#include "../algos/tkp.h"
#include "batch_invariance.h"
#include "cases.h"
#include "test.h"

static void invariant_gpu(const void *arg)
{
    REQUIRE_GPU();
    const struct tkp_algo *a = arg;
    for (uint64_t seed = 1; seed <= 3 && !test_failed(); seed++)
        check_batch_invariance(a->name, TKP_GPU, seed);
}

static void batch_keying_gpu(const void *arg)
{
    REQUIRE_GPU();
    check_batch_keying_depends_on_row(((const struct tkp_algo *)arg)->name, TKP_GPU, 4);
}

static void add(const char *prefix, test_fn_arg fn, const struct tkp_algo *a)
{
    char *name;
    if (asprintf(&name, "%s%s", prefix, a->name) < 0) {
        fprintf(stderr, "out of memory registering %s%s\n", prefix, a->name);
        exit(2);
    }
    test_register_arg(name, fn, a);
}

__attribute__((constructor)) static void register_gpu_batch_invariance(void)
{
    for (int i = 0; tkp_algos[i]; i++) {
        add("gpu_batch_invariance_", invariant_gpu, tkp_algos[i]);
        if (tkp_algos[i]->outputs & TKP_OUT_SAMPLE)
            add("gpu_batch_keying_moves_with_the_row_", batch_keying_gpu, tkp_algos[i]);
    }
}
