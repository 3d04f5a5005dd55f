/* cake_gpu_256.cu — cake's kernels for CTAs of 256 threads with a quarter of the candidate
 * list (4096 entries: ~88 KB of shared memory), so that two CTAs share a SM and one row's tail
 * overlaps another row's stream (README.md, "Two CTAs a SM"). The same device code as the
 * default variant (cake_gpu_kernels.cuh), in namespace ck256; cake_gpu.cu launches it. */
#define CK_THREADS 256
#define CK_CAP 4096
#define CK_MIN_BLOCKS 2
#define CK_NS ck256
#include "cake_gpu_kernels.cuh"
