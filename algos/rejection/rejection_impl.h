/* rejection_impl.h — what the two implementations of rejection share: the options struct, the
 * statistics both report, and the GPU one's table (its row in algos/common/tkp_gpu_impl.c, CUDA
 * builds only), which rejection.c names through TKP_GPU_IMPL (algos/tkp.h). The sampler's
 * decisions both share are rejection_rules.h. */
#ifndef REJECTION_IMPL_H
#define REJECTION_IMPL_H

#include "../tkp.h"

struct rej_opts {
    int max_rounds;
};

/* Rejection rounds and bisection steps (tkp.h, TKP_STAT_*), on both backends. */
#define REJ_REPORTED (TKP_STAT_ROUNDS | TKP_STAT_ITERATIONS)

extern const struct tkp_impl tkp_rejection_gpu;

#endif
