/* rtopk_impl.h — what the two implementations of rtopk share: the options struct and the GPU
 * one's table (its row in algos/common/tkp_gpu_impl.c, CUDA builds only), which rtopk.c names
 * through TKP_GPU_IMPL (algos/tkp.h). */
#ifndef RTOPK_IMPL_H
#define RTOPK_IMPL_H

#include "../tkp.h"

struct rtopk_opts {
    int max_iter;
};

extern const struct tkp_impl tkp_rtopk_gpu;

#endif
