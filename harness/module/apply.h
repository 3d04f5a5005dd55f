/* apply.h — run one module on one batch held in host memory: validate the rows, plan the
 * problem, init, allocate the workspace, run, collect statistics. Used by `topkp apply`,
 * by the sweep runner and by the tests. */
#ifndef TKP_APPLY_H
#define TKP_APPLY_H

#include "../algos/tkp.h"

/* A batch of logits with per-row k and p, all in host memory. A 16-bit batch keeps both its
 * encodings (what a module reads) and their exact float32 upcast (what the oracle judges and
 * what a float32 run of the same values reads). */
struct tkp_batch {
    int64_t batch, vocab;
    float *logits;        /* [batch, vocab]: the values (a 16-bit batch: upcast, exactly) */
    int32_t *k;           /* [batch] */
    float *p;             /* [batch] */
    enum tkp_dtype dtype; /* TKP_F32 (0), or the type of logits16 */
    uint16_t *logits16;   /* [batch, vocab] 16-bit encodings; NULL for TKP_F32 */
    /* Optional per-row inputs, NULL when absent (docs/SEMANTICS.md, "Sampling: two keying
     * modes", "min-p"): a seed and an offset of each row's own, and min_p. */
    uint64_t *seed, *offset;
    float *min_p;
};

/* The logits a module reads from the batch (logits16 for a 16-bit batch) and their bytes. */
const void *tkp_batch_input(const struct tkp_batch *b);
size_t tkp_batch_input_bytes(const struct tkp_batch *b);

/* Reject a NaN p or min_p before anything runs; the message names the row and the value. */
int tkp_validate_rows(const struct tkp_batch *b, struct tkp_error *err);

/* The problem a batch poses to a module. */
struct tkp_problem tkp_problem_of(const struct tkp_batch *b, enum tkp_backend backend,
                                  unsigned outputs, int32_t draws);

/* A module ready to run on one problem: the implementation of the problem's backend, options,
 * state and workspace. */
struct tkp_instance {
    const struct tkp_algo *algo;
    const struct tkp_impl *impl; /* algo's cpu or gpu */
    struct tkp_problem pb;
    void *opts, *state, *workspace;
    size_t workspace_bytes;
};

/* Can `a` do problem `pb` at all (its contract version, backend, ops and outputs; min-p and
 * per-row keys only from TKP_ABI_SAMPLING on; a 16-bit type only where it reads it)?
 * TKP_EINVAL for a module of a version this harness does not load (tkp_algo_check_abi),
 * TKP_EUNSUPPORTED otherwise; the message says why. */
int tkp_capable(const struct tkp_algo *a, const struct tkp_problem *pb, struct tkp_error *err);
/* tkp_capable, then the module's supports() and its backend implementation's
 * (TKP_EUNSUPPORTED with the reason), init, allocate. `opts` may be NULL for the defaults; it
 * is copied. A peer is TKP_EUNSUPPORTED: it runs in `topkp run`. */
/* tkp_instance_open without the workspace: in->workspace_bytes says what a run needs, and
 * the caller brings it (the C entry point of include/topkp_ops.h, whose caller owns memory and
 * stream). tkp_instance_close frees nothing it did not allocate. */
int tkp_instance_plan(struct tkp_instance *in, const struct tkp_algo *a, const void *opts,
                      const struct tkp_problem *pb, struct tkp_error *err);
int tkp_instance_open(struct tkp_instance *in, const struct tkp_algo *a, const void *opts,
                      const struct tkp_problem *pb, struct tkp_error *err);
int tkp_instance_run(struct tkp_instance *in, const struct tkp_io *io, struct tkp_error *err);
/* One run of an instance in the shape the GPU timer and the graph capture call back
 * (int (*)(void *ctx, struct tkp_error *)): ctx is a struct tkp_instance_call. */
struct tkp_instance_call {
    struct tkp_instance *in;
    const struct tkp_io *io;
};
int tkp_instance_call_launch(void *ctx, struct tkp_error *err);
/* The statistics of the instance's last run (algos/tkp.h, struct tkp_impl); zero when its
 * implementation has none or its module is older than TKP_ABI_STATISTICS (stats() is not
 * called). */
void tkp_instance_stats(const struct tkp_instance *in, struct tkp_stats *out);
void tkp_instance_close(struct tkp_instance *in);

/* The buffers of one batch where the backend wants them: on the CPU the host buffers
 * themselves, on the GPU device copies (outputs poisoned so that unwritten entries show). */
struct tkp_staged {
    struct tkp_io io;
    enum tkp_backend backend;
    size_t logits_bytes, row_bytes, kept_bytes, samples_bytes;
    void *device[8]; /* logits, k, p, kept, samples, seed, offset, min_p on the GPU; NULL on
                        the CPU (and for an absent per-row array) */
    uint8_t *host_kept;
    int64_t *host_samples;
};

int tkp_stage(struct tkp_staged *s, const struct tkp_batch *b, enum tkp_backend backend,
              uint8_t *kept, int64_t *samples, int32_t draws, uint64_t seed, uint64_t offset,
              struct tkp_error *err);
/* Copy the outputs back to the host buffers given to tkp_stage (no-op on the CPU). */
int tkp_staged_fetch(struct tkp_staged *s, struct tkp_error *err);
void tkp_staged_release(struct tkp_staged *s);
/* Device bytes the staged buffers hold (0 on the CPU). */
size_t tkp_staged_bytes(const struct tkp_staged *s);

/* Everything at once on host buffers: kept [batch, vocab] and samples [batch, draws] may be
 * NULL when not wanted; stats may be NULL. */
int tkp_apply(const struct tkp_algo *a, const void *opts, enum tkp_backend backend,
              const struct tkp_batch *b, uint8_t *kept, int64_t *samples, int32_t draws,
              uint64_t seed, uint64_t offset, struct tkp_stats *stats, struct tkp_error *err);

/* Parse "name=value" and set it on opts. */
int tkp_option_assign(const struct tkp_algo *a, void *opts, const char *assignment,
                      struct tkp_error *err);

#endif
