/* gpu.h — the harness's device layer (harness/device/gpu.cu; harness/device/gpu_none.c when built without
 * CUDA): memory, one stream, and the timer of docs/DESIGN.md — CUDA events around the launch
 * only, L2 flushed before every cold repetition, SM clock read after each sample, optional
 * CUDA-graph replay, and the device's copy bandwidth. */
#ifndef TKP_GPU_H
#define TKP_GPU_H

#include <stddef.h>

#include "../algos/tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tkp_gpu_props {
    char name[128];
    int sm_count, cc_major, cc_minor, driver_version, runtime_version;
    long long l2_bytes, total_mem;
    double max_sm_clock_mhz;
};

int tkp_gpu_present(void);
/* The number of CUDA devices (0 without CUDA or a driver). */
int tkp_gpu_count(void);
/* Make device `device` current (cudaSetDevice), before anything else touches CUDA: `topkp run
 * --device D` (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"). An index past the devices is an
 * error naming it and the count. */
int tkp_gpu_select(int device, struct tkp_error *err);
/* The device tkp_gpu_select made current, or -1. */
int tkp_gpu_selected(void);
int tkp_gpu_props(struct tkp_gpu_props *p, struct tkp_error *err);
int tkp_gpu_alloc(void **p, size_t n, struct tkp_error *err);
void tkp_gpu_free(void *p);
int tkp_gpu_upload(void *dst, const void *src, size_t n, struct tkp_error *err);
int tkp_gpu_download(void *dst, const void *src, size_t n, struct tkp_error *err);
int tkp_gpu_fill(void *dst, int byte, size_t n, struct tkp_error *err);
void *tkp_gpu_stream(void);
/* Wait for the stream and report any asynchronous error. */
int tkp_gpu_sync(struct tkp_error *err);

/* A launch to time: fn enqueues work on the harness stream. */
typedef int (*tkp_gpu_launch)(void *ctx, struct tkp_error *err);

struct tkp_gpu_timer;
int tkp_gpu_timer_open(struct tkp_gpu_timer **t, struct tkp_error *err);
void tkp_gpu_timer_close(struct tkp_gpu_timer *t);
/* Capture fn once into a CUDA graph; later tkp_gpu_time calls replay it until
 * tkp_gpu_timer_drop_graph (a graph the timer held before is dropped first). A capture that
 * fails leaves no graph, and no CUDA error behind it. */
int tkp_gpu_timer_use_graph(struct tkp_gpu_timer *t, tkp_gpu_launch fn, void *ctx,
                            struct tkp_error *err);
/* Drop the captured graph: later tkp_gpu_time calls run fn again (the next cell's). */
void tkp_gpu_timer_drop_graph(struct tkp_gpu_timer *t);
/* One sample: optionally flush L2, then events around fn (or the graph). us = elapsed
 * microseconds, clock_mhz = the SM clock read right after (0 when unknown). */
int tkp_gpu_time(struct tkp_gpu_timer *t, int flush, tkp_gpu_launch fn, void *ctx, double *us,
                 double *clock_mhz, struct tkp_error *err);
/* The SM clock now, from NVML (0 when unknown). */
double tkp_gpu_sm_clock_mhz(void);
/* Device-to-device copy bandwidth, bytes read + written per second, in GB/s. */
double tkp_gpu_copy_gbps(struct tkp_error *err);

#ifdef __cplusplus
}
#endif
#endif
