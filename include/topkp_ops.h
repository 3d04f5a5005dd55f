/* topkp_ops.h — the stable C entry point of build/libtopkp_ops.so, the library the Python
 * package loads (docs/PYTHON.md, "The C entry point"). It runs the modules of algos/ through the
 * same code path as `topkp apply` (harness/module/apply.c: the rows planned into a problem, the
 * module's and its backend's refusals, init, run), so its outputs equal apply's bit for bit;
 * it holds no HDF5, no Lua, no timer. Every call validates its arguments and returns a status
 * with a message; nothing is printed. On the GPU the caller owns memory and the stream: a run
 * enqueues on the caller's stream, in the caller's workspace (its size asked once, at plan
 * time), never allocates and never synchronises.
 *
 * Only appended to: a struct's first field is its size (sizeof as the caller knows it), so
 * an older caller keeps working against a newer library. */
#ifndef TOPKP_OPS_H
#define TOPKP_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TOPKP_OPS_API __attribute__((visibility("default")))
#else
#define TOPKP_OPS_API
#endif

#define TOPKP_OPS_VERSION 1

/* Status codes (the values of enum tkp_status, algos/tkp.h). */
enum topkp_ops_status {
    TOPKP_OPS_OK = 0,
    TOPKP_OPS_EUNSUPPORTED = 1, /* the module cannot do this request; the message says why */
    TOPKP_OPS_EINVAL = 2,       /* a bad argument; the message names it */
    TOPKP_OPS_ENOMEM = 3,
    TOPKP_OPS_EDEVICE = 4,      /* a CUDA call failed, or the device is not one the build targets */
};
enum topkp_ops_backend { TOPKP_OPS_CPU = 1, TOPKP_OPS_GPU = 2 };
enum topkp_ops_dtype { TOPKP_OPS_F32 = 0, TOPKP_OPS_BF16 = 1, TOPKP_OPS_F16 = 2 };
/* topkp_ops_algo's ops and outputs bits (algos/tkp.h's values). */
enum { TOPKP_OPS_TOPK = 1, TOPKP_OPS_TOPP = 2, TOPKP_OPS_TOPK_TOPP = 4, TOPKP_OPS_MINP = 8 };
enum { TOPKP_OPS_OUT_SET = 1, TOPKP_OPS_OUT_SAMPLE = 2 };

/* What a plan is made for. With `k` and `p` (host arrays of `batch` values; min_p optional)
 * the problem is planned from the rows exactly as `topkp apply` plans it, and they are
 * validated (a NaN p or min_p is an error naming the row); this is what a CPU plan needs.
 * Without them (rows that live on the GPU, unread so that nothing synchronises) the plan
 * covers any rows: has_k, has_p and has_min_p say which filters may be on, top-k up to vocab,
 * or, with 0 < k_bound < vocab, every row's top-k on and at most k_bound (the caller's
 * promise: a scalar k; a module that bounds its top-k set, cake, plans only with it). */
struct topkp_ops_spec {
    int32_t size;          /* sizeof(struct topkp_ops_spec) */
    const char *algo;      /* a module's name (topkp list) */
    const char *options;   /* "name=value,name=value" (module options), or NULL */
    int32_t backend;       /* enum topkp_ops_backend */
    int32_t dtype;         /* enum topkp_ops_dtype */
    int64_t batch, vocab;  /* batch >= 1; 1 <= vocab <= 2^23 */
    int64_t row_stride;    /* elements between rows: must be vocab (contiguous rows) */
    int32_t want_kept;     /* 1: the run writes a kept mask */
    int32_t draws;         /* > 0: the run draws that many tokens a row */
    int32_t row_keyed;     /* 1: runs pass per-row seeds or offsets */
    const int32_t *k;      /* host rows, or NULL (then has_* below) */
    const float *p, *min_p;
    int32_t has_k, has_p, has_min_p;
    int32_t k_bound;       /* without host rows: 0, or every row's 0 < k <= k_bound */
};

/* The buffers of one run: host pointers for a CPU plan, device pointers for a GPU one. */
struct topkp_ops_io {
    int32_t size;          /* sizeof(struct topkp_ops_io) */
    const void *logits;    /* [batch, vocab] of the plan's dtype (16-bit: the encodings) */
    const int32_t *k;      /* [batch]; k <= 0 or k >= vocab: top-k off */
    const float *p;        /* [batch]; p >= 1: top-p off */
    const float *min_p;    /* [batch] or NULL */
    uint8_t *kept;         /* [batch, vocab] when the plan wants a mask, else NULL */
    int64_t *samples;      /* [batch, draws] when the plan draws, else NULL */
    uint64_t seed, offset; /* batch keying (docs/SEMANTICS.md, "Sampling: two keying modes") */
    const uint64_t *row_seed, *row_offset; /* [batch] or NULL: per-row keying */
};

typedef struct topkp_ops_plan topkp_ops_plan;

/* TOPKP_OPS_VERSION of the library; the backends it was built with (TOPKP_OPS_CPU | _GPU). */
TOPKP_OPS_API int topkp_ops_version(void);
TOPKP_OPS_API int topkp_ops_backends(void);
/* Module i (0, 1, ...): its name, ops and outputs bits and backends; NULL past the last. */
TOPKP_OPS_API const char *topkp_ops_algo(int i, unsigned *ops, unsigned *outputs,
                                         unsigned *backends);

/* Plan `spec`: validate, refuse what the module cannot do, init. *out is NULL on failure. */
TOPKP_OPS_API int topkp_ops_plan_create(const struct topkp_ops_spec *spec, topkp_ops_plan **out,
                                        char *msg, size_t msg_size);
/* The workspace bytes every run of the plan needs (host memory on the CPU, device memory on
 * the GPU); 0: none (a NULL workspace will do). */
TOPKP_OPS_API size_t topkp_ops_plan_workspace(const topkp_ops_plan *plan);
/* One run. `stream` is a cudaStream_t for a GPU plan (NULL: the default stream), ignored on
 * the CPU. A CPU run validates the rows again (NaN, and that they fit the plan). */
TOPKP_OPS_API int topkp_ops_plan_run(topkp_ops_plan *plan, const struct topkp_ops_io *io,
                                     void *workspace, size_t workspace_bytes, void *stream,
                                     char *msg, size_t msg_size);
TOPKP_OPS_API void topkp_ops_plan_destroy(topkp_ops_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
