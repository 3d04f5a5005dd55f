/* cake_impl.h — what the two implementations of cake share: the slab's size, the options
 * struct and the GPU one's table (its row in algos/common/tkp_gpu_impl.c, CUDA builds only),
 * which cake.c names through TKP_GPU_IMPL (algos/tkp.h). */
#ifndef CAKE_IMPL_H
#define CAKE_IMPL_H

#include "../tkp.h"

/* The entries of a row's top-k slab: every row's effective k (k, or V when top-k is off) must
 * be at most this (cake.c, cake_supports). */
#define CAKE_SLAB 1024

struct cake_opts {
    int topp_launch; /* enum cake_topp_launch (GPU only; cake_gpu.h) */
    int cluster;     /* index into tkp_cluster_choices (GPU only; algos/tkp.h) */
    int threads;     /* index into cake_thread_choices: auto, 512, 256 (GPU only; cake.c) */
};

/* The statistics the CPU counts (algos/tkp.h, struct tkp_stat; the GPU reports none):
 * X(id, name, unit, meaning), the indices of struct tkp_stats.total. */
#define CAKE_STATS(X)                                                                     \
    X(CAKE_STAT_HIT_RATE, "hit_rate", "fraction of rows",                                 \
      "rows whose radix select finished before its last pass")                            \
    X(CAKE_STAT_ITERATIONS, "iterations", "iterations per row",                           \
      "radix-select passes (1 to 3)")                                                     \
    /* one row per statistic, each ending in a backslash */
enum { CAKE_STATS(TKP_STAT_ID) CAKE_STAT_COUNT };

extern const struct tkp_impl tkp_cake_gpu;

#ifdef __cplusplus
extern "C" {
#endif
/* The threads a CTA the option `threads` chose, 0 for auto (or NULL options; cake.c). */
int cake_threads_chosen(const struct cake_opts *o);
#ifdef __cplusplus
}
#endif

#endif
