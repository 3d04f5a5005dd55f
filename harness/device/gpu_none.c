/* gpu_none.c — the device layer of a build without CUDA: no GPU is ever present, and every
 * call says the build lacks CUDA. Compiled only when nvcc is absent (see the Makefile). */
#include "gpu.h"

static int no_cuda(struct tkp_error *err)
{
    tkp_error_set(err, "this build has no CUDA support (rebuild where nvcc is present)");
    return TKP_EDEVICE;
}

int tkp_gpu_present(void) { return 0; }
int tkp_gpu_count(void) { return 0; }
int tkp_gpu_selected(void) { return -1; }
int tkp_gpu_select(int device, struct tkp_error *err) { (void)device; return no_cuda(err); }
int tkp_gpu_props(struct tkp_gpu_props *p, struct tkp_error *err) { (void)p; return no_cuda(err); }
int tkp_gpu_alloc(void **p, size_t n, struct tkp_error *err) { (void)p, (void)n; return no_cuda(err); }
void tkp_gpu_free(void *p) { (void)p; }
int tkp_gpu_upload(void *d, const void *s, size_t n, struct tkp_error *err) { (void)d, (void)s, (void)n; return no_cuda(err); }
int tkp_gpu_download(void *d, const void *s, size_t n, struct tkp_error *err) { (void)d, (void)s, (void)n; return no_cuda(err); }
int tkp_gpu_fill(void *d, int b, size_t n, struct tkp_error *err) { (void)d, (void)b, (void)n; return no_cuda(err); }
void *tkp_gpu_stream(void) { return 0; }
int tkp_gpu_sync(struct tkp_error *err) { return no_cuda(err); }
int tkp_gpu_timer_open(struct tkp_gpu_timer **t, struct tkp_error *err) { (void)t; return no_cuda(err); }
void tkp_gpu_timer_close(struct tkp_gpu_timer *t) { (void)t; }
int tkp_gpu_timer_use_graph(struct tkp_gpu_timer *t, tkp_gpu_launch fn, void *ctx, struct tkp_error *err)
{
    (void)t, (void)fn, (void)ctx;
    return no_cuda(err);
}
void tkp_gpu_timer_drop_graph(struct tkp_gpu_timer *t) { (void)t; }
int tkp_gpu_time(struct tkp_gpu_timer *t, int flush, tkp_gpu_launch fn, void *ctx, double *us,
                 double *clock_mhz, struct tkp_error *err)
{
    (void)t, (void)flush, (void)fn, (void)ctx, (void)us, (void)clock_mhz;
    return no_cuda(err);
}
double tkp_gpu_sm_clock_mhz(void) { return 0; }
double tkp_gpu_copy_gbps(struct tkp_error *err) { no_cuda(err); return 0; }
