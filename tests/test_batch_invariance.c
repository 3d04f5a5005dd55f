/* test_batch_invariance.c — batch invariance on the CPU (docs/SEMANTICS.md, "Sampling: two
 * keying modes"), one test per module of the registry: with per-row seeds and offsets a row's
 * kept set and draws are its own whatever the batch around it (check_batch_invariance, three
 * seeds); and, the control, a sampler's draws under batch keying do move with the row index.
 * The GPU's twin is tests/test_gpu_batch_invariance.c. */
#include <stdio.h>
#include <stdlib.h>

#include "../algos/tkp.h"
#include "batch_invariance.h"
#include "test.h"

static void invariant_cpu(const void *arg)
{
    const struct tkp_algo *a = arg;
    for (uint64_t seed = 1; seed <= 3 && !test_failed(); seed++)
        check_batch_invariance(a->name, TKP_CPU, seed);
}

static void batch_keying_cpu(const void *arg)
{
    check_batch_keying_depends_on_row(((const struct tkp_algo *)arg)->name, TKP_CPU, 4);
}

__attribute__((constructor)) static void register_batch_invariance(void)
{
    for (int i = 0; tkp_algos[i]; i++) {
        const struct tkp_algo *a = tkp_algos[i];
        test_register_named("batch_invariance_cpu_", a->name, invariant_cpu, a);
        if (a->outputs & TKP_OUT_SAMPLE)
            test_register_named("batch_keying_moves_with_the_row_cpu_", a->name,
                                batch_keying_cpu, a);
    }
}
