/* rtopk_impl.h — what the two implementations of rtopk share: the options struct and the GPU
 * one's table (its row in algos/common/tkp_gpu_impl.c, CUDA builds only), which rtopk.c names
 * through TKP_GPU_IMPL (algos/tkp.h). */
#ifndef RTOPK_IMPL_H
#define RTOPK_IMPL_H

#include "../tkp.h"

struct rtopk_opts {
    int max_iter;
};

/* The statistics both backends count (algos/tkp.h, struct tkp_stat): X(id, name, unit,
 * meaning), the indices of struct tkp_stats.total. */
#define RTOPK_STATS(X)                                                                    \
    X(RTOPK_STAT_ITERATIONS, "iterations", "iterations per row",                          \
      "the threshold search's counting passes (rows needing no search: 0)")               \
    /* one row per statistic, each ending in a backslash */
enum { RTOPK_STATS(TKP_STAT_ID) RTOPK_STAT_COUNT };

extern const struct tkp_impl tkp_rtopk_gpu;

#endif
