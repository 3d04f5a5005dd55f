/* naive_sort_impl.h — what the two implementations of naive_sort share: the GPU one's table (its
 * row in algos/common/tkp_gpu_impl.c, CUDA builds only), which naive_sort.c names through
 * TKP_GPU_IMPL (algos/tkp.h). */
#ifndef NAIVE_SORT_IMPL_H
#define NAIVE_SORT_IMPL_H

#include "../tkp.h"

extern const struct tkp_impl tkp_naive_sort_gpu;

#endif
