/* rejection_impl.h — what the two implementations of rejection share: the options struct, the
 * statistics both report, and the GPU one's table (its row in algos/common/tkp_gpu_impl.c, CUDA
 * builds only), which rejection.c names through TKP_GPU_IMPL (algos/tkp.h). The sampler's
 * decisions both share are rejection_rules.h. */
#ifndef REJECTION_IMPL_H
#define REJECTION_IMPL_H

#include "../tkp.h"

struct rej_opts {
    int max_rounds;
    int cluster; /* index into tkp_cluster_choices (GPU only; algos/tkp.h) */
    int threads; /* index into rej_thread_choices: auto, 1024, 512, 256 (GPU only; rejection.c) */
};

#ifdef __cplusplus
extern "C" {
#endif
/* The threads a CTA the option `threads` chose, 0 for auto (rejection.c). */
int rej_threads_chosen(const struct rej_opts *o);
/* threads=auto where one CTA takes a row, on a device of `sms` SMs (rejection.c; README "GPU",
 * "Launch shape"): 1024 while some row has top-p alone (TKP_TOPP in pb->ops) or B <= SMs,
 * 256 from B >= 4 x SMs when every set is at most 256 tokens, else 512. */
int rej_auto_threads(const struct tkp_problem *pb, int64_t sms);
/* The room of pass 1's list on the GPU, in tokens, for one-CTA rows of `threads` (rejection.c;
 * README "The k-th key from pass 1's list"): 16 a thread (the big list in dynamic shared
 * memory) at 512 and 1024 threads when some row's k exceeds 256 on a row longer than `step`
 * tokens (pass 1's first chunk), else `gather` (the gathered tokens' own arrays). */
int rej_list_cap(const struct tkp_problem *pb, int threads, int step, int gather);
#ifdef __cplusplus
}
#endif

/* The statistics both backends count (algos/tkp.h, struct tkp_stat): X(id, name, unit,
 * meaning), the indices of struct tkp_stats.total. */
#define REJ_STATS(X)                                                                      \
    X(REJ_STAT_ROUNDS, "rounds", "rounds per row",                                        \
      "rejection rounds over the row's draws")                                            \
    X(REJ_STAT_FALLBACKS, "fallbacks", "fallbacks per row",                               \
      "draws that reached the round budget and sampled the exact kept set")               \
    X(REJ_STAT_ITERATIONS, "iterations", "iterations per row",                            \
      "radix-select digit passes and bisection steps")                                    \
    /* one row per statistic, each ending in a backslash */
enum { REJ_STATS(TKP_STAT_ID) REJ_STAT_COUNT };
/* Every statistic applies, on both backends. */
#define REJ_REPORTED TKP_STAT_ALL(REJ_STAT_COUNT)

extern const struct tkp_impl tkp_rejection_gpu;

#endif
