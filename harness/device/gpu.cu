/* gpu.cu — see gpu.h. The SM clock comes from NVML, loaded at run time with dlopen so that
 * the binary needs no NVML at link time and runs (CPU backend) where there is no driver. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "../algos/common/cuda_util.h"
#include "gpu.h"

static cudaStream_t stream;

extern "C" int tkp_gpu_present(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

extern "C" int tkp_gpu_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

static int selected_device = -1;

extern "C" int tkp_gpu_selected(void) { return selected_device; }

extern "C" int tkp_gpu_select(int device, struct tkp_error *err)
{
    const int n = tkp_gpu_count();
    if (device < 0 || device >= n) {
        tkp_error_set(err, "device %d: this machine has %d CUDA device%s (0 to %d)", device, n,
                      n == 1 ? "" : "s", n - 1);
        return TKP_EDEVICE;
    }
    TKP_CUDA_TRY(cudaSetDevice(device), err);
    selected_device = device;
    return TKP_OK;
}

/* ---- NVML, optional ---- */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned, void **);
typedef int (*nvml_clock_fn)(void *, int, unsigned *);
static struct {
    int tried;
    void *device;
    nvml_clock_fn clock, max_clock;
} nvml;

static void nvml_load(void)
{
    if (nvml.tried)
        return;
    nvml.tried = 1;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib)
        return;
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_handle_fn handle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvml.clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    nvml.max_clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetMaxClockInfo");
    int dev = 0;
    cudaGetDevice(&dev);
    if (!init || !handle || !nvml.clock || init() != 0 || handle((unsigned)dev, &nvml.device) != 0)
        nvml.device = NULL;
}

static double sm_clock(nvml_clock_fn fn)
{
    nvml_load();
    unsigned mhz = 0;
    const int nvml_clock_sm = 1;
    if (nvml.device && fn && fn(nvml.device, nvml_clock_sm, &mhz) == 0)
        return mhz;
    return 0;
}

extern "C" double tkp_gpu_sm_clock_mhz(void) { return sm_clock(nvml.clock); }

extern "C" int tkp_gpu_props(struct tkp_gpu_props *p, struct tkp_error *err)
{
    memset(p, 0, sizeof *p);
    int dev = 0;
    cudaDeviceProp prop;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaGetDeviceProperties(&prop, dev), err);
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->sm_count = prop.multiProcessorCount;
    p->cc_major = prop.major;
    p->cc_minor = prop.minor;
    p->l2_bytes = prop.l2CacheSize;
    p->total_mem = (long long)prop.totalGlobalMem;
    cudaDriverGetVersion(&p->driver_version);
    cudaRuntimeGetVersion(&p->runtime_version);
    p->max_sm_clock_mhz = sm_clock(nvml.max_clock);
    return TKP_OK;
}

extern "C" int tkp_gpu_alloc(void **p, size_t n, struct tkp_error *err)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, n ? n : 1);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        tkp_error_set(err, "out of device memory for %zu bytes", n);
        return TKP_ENOMEM;
    }
    TKP_CUDA_TRY(e, err);
    return TKP_OK;
}

extern "C" void tkp_gpu_free(void *p) { cudaFree(p); }

extern "C" void *tkp_gpu_stream(void)
{
    if (!stream)
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    return stream;
}

extern "C" int tkp_gpu_upload(void *dst, const void *src, size_t n, struct tkp_error *err)
{
    TKP_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice,
                                 (cudaStream_t)tkp_gpu_stream()), err);
    return tkp_gpu_sync(err);
}

extern "C" int tkp_gpu_download(void *dst, const void *src, size_t n, struct tkp_error *err)
{
    TKP_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost,
                                 (cudaStream_t)tkp_gpu_stream()), err);
    return tkp_gpu_sync(err);
}

extern "C" int tkp_gpu_fill(void *dst, int byte, size_t n, struct tkp_error *err)
{
    TKP_CUDA_TRY(cudaMemsetAsync(dst, byte, n, (cudaStream_t)tkp_gpu_stream()), err);
    return TKP_OK;
}

extern "C" int tkp_gpu_sync(struct tkp_error *err)
{
    TKP_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)tkp_gpu_stream()), err);
    TKP_CUDA_TRY(cudaGetLastError(), err);
    return TKP_OK;
}

struct tkp_gpu_timer {
    cudaEvent_t start, stop;
    void *flush;
    size_t flush_bytes;
    cudaGraphExec_t graph;
};

extern "C" int tkp_gpu_timer_open(struct tkp_gpu_timer **out, struct tkp_error *err)
{
    struct tkp_gpu_timer *t = (struct tkp_gpu_timer *)calloc(1, sizeof *t);
    *out = t;
    struct tkp_gpu_props props;
    int rc = tkp_gpu_props(&props, err);
    if (rc)
        return rc;
    t->flush_bytes = 2 * (size_t)props.l2_bytes; /* twice L2, so nothing of the input stays */
    rc = tkp_gpu_alloc(&t->flush, t->flush_bytes, err);
    if (rc)
        return rc;
    TKP_CUDA_TRY(cudaEventCreate(&t->start), err);
    TKP_CUDA_TRY(cudaEventCreate(&t->stop), err);
    return TKP_OK;
}

extern "C" void tkp_gpu_timer_close(struct tkp_gpu_timer *t)
{
    if (!t)
        return;
    if (t->graph)
        cudaGraphExecDestroy(t->graph);
    if (t->start)
        cudaEventDestroy(t->start);
    if (t->stop)
        cudaEventDestroy(t->stop);
    tkp_gpu_free(t->flush);
    free(t);
}

extern "C" int tkp_gpu_timer_use_graph(struct tkp_gpu_timer *t, tkp_gpu_launch fn, void *ctx,
                                       struct tkp_error *err)
{
    cudaStream_t s = (cudaStream_t)tkp_gpu_stream();
    cudaGraph_t graph;
    tkp_gpu_timer_drop_graph(t);
    TKP_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), err);
    int rc = fn(ctx, err);
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (rc || end != cudaSuccess) {
        (void)cudaGetLastError(); /* a refused capture's error is not sticky: clear it */
        if (end == cudaSuccess)
            cudaGraphDestroy(graph);
        if (!rc)
            tkp_error_set(err, "CUDA error: %s", cudaGetErrorString(end));
        return rc ? rc : TKP_EDEVICE;
    }
    cudaError_t made = cudaGraphInstantiate(&t->graph, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
        t->graph = NULL;
        (void)cudaGetLastError();
        tkp_error_set(err, "CUDA error: %s", cudaGetErrorString(made));
        return TKP_EDEVICE;
    }
    return TKP_OK;
}

extern "C" void tkp_gpu_timer_drop_graph(struct tkp_gpu_timer *t)
{
    if (t && t->graph)
        cudaGraphExecDestroy(t->graph);
    if (t)
        t->graph = NULL;
}

extern "C" int tkp_gpu_time(struct tkp_gpu_timer *t, int flush, tkp_gpu_launch fn, void *ctx,
                            double *us, double *clock_mhz, struct tkp_error *err)
{
    cudaStream_t s = (cudaStream_t)tkp_gpu_stream();
    if (flush)
        TKP_CUDA_TRY(cudaMemsetAsync(t->flush, flush & 0xFF, t->flush_bytes, s), err);
    TKP_CUDA_TRY(cudaEventRecord(t->start, s), err);
    if (t->graph) {
        TKP_CUDA_TRY(cudaGraphLaunch(t->graph, s), err);
    } else {
        int rc = fn(ctx, err);
        if (rc)
            return rc;
    }
    TKP_CUDA_TRY(cudaEventRecord(t->stop, s), err);
    TKP_CUDA_TRY(cudaEventSynchronize(t->stop), err);
    TKP_CUDA_TRY(cudaGetLastError(), err);
    float ms = 0;
    TKP_CUDA_TRY(cudaEventElapsedTime(&ms, t->start, t->stop), err);
    *us = (double)ms * 1e3;
    *clock_mhz = sm_clock(nvml.clock);
    return TKP_OK;
}

extern "C" double tkp_gpu_copy_gbps(struct tkp_error *err)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    double best = 0;
    cudaEvent_t e0, e1;
    if (tkp_gpu_alloc(&a, bytes, err) || tkp_gpu_alloc(&b, bytes, err)) {
        tkp_gpu_free(a);
        return 0;
    }
    cudaStream_t s = (cudaStream_t)tkp_gpu_stream();
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaMemsetAsync(a, 1, bytes, s);
    for (int i = 0; i < 6; i++) {
        cudaEventRecord(e0, s);
        cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        double gbps = 2.0 * (double)bytes / ((double)ms * 1e6);
        if (i > 0 && gbps > best) /* the first copy is a warm-up */
            best = gbps;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    tkp_gpu_free(a);
    tkp_gpu_free(b);
    return best;
}
