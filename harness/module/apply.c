/* apply.c — see apply.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "../algos/common/prob.h"
#include "apply.h"
#include "peers.h"
#include "gpu.h"

int tkp_validate_rows(const struct tkp_batch *b, struct tkp_error *err)
{
    if (b->vocab < 1 || b->vocab > TKP_MAX_VOCAB) {
        tkp_error_set(err, "vocabulary %lld is outside [1, %lld]", (long long)b->vocab,
                      (long long)TKP_MAX_VOCAB);
        return TKP_EINVAL;
    }
    for (int64_t r = 0; r < b->batch; r++) {
        if (isnan(b->p[r]) || (b->min_p && isnan(b->min_p[r]))) {
            tkp_error_set(err, "row %lld: %s is NaN", (long long)r, isnan(b->p[r]) ? "p" : "min_p");
            return TKP_EINVAL;
        }
        /* an infinity is refused as at every other door, in the gate's words
         * (docs/ROBUSTNESS.md); the message is formed only for that row */
        const int p_bad = !isfinite(b->p[r]);
        if (p_bad || (b->min_p && !isfinite(b->min_p[r]))) {
            char what[48];
            snprintf(what, sizeof what, "row %lld: %s", (long long)r, p_bad ? "p" : "min_p");
            tkp_gate_number(p_bad ? &tkp_dom_p : &tkp_dom_min_p, what,
                            p_bad ? b->p[r] : b->min_p[r], err);
            return TKP_EINVAL;
        }
    }
    return TKP_OK;
}

const void *tkp_batch_input(const struct tkp_batch *b)
{
    return b->dtype == TKP_F32 ? (const void *)b->logits : (const void *)b->logits16;
}

size_t tkp_batch_input_bytes(const struct tkp_batch *b)
{
    return (size_t)tkp_dtype_size(b->dtype) * (size_t)(b->batch * b->vocab);
}

struct tkp_problem tkp_problem_of(const struct tkp_batch *b, enum tkp_backend backend,
                                  unsigned outputs, int32_t draws)
{
    struct tkp_problem pb = { .batch = b->batch, .vocab = b->vocab, .stride = b->vocab,
                              .backend = backend, .outputs = outputs, .draws = draws,
                              .dtype = b->dtype, .row_keyed = b->seed || b->offset };
    for (int64_t r = 0; r < b->batch; r++) {
        if (b->min_p && tkp_minp_on(b->min_p[r]))
            pb.ops |= TKP_MINP;
        int topk = tkp_topk_on(b->k[r], b->vocab), topp = tkp_topp_on(b->p[r]);
        if (topk && b->k[r] > pb.k_max)
            pb.k_max = b->k[r];
        int64_t set = topk ? b->k[r] : b->vocab;
        if (set > pb.set_max)
            pb.set_max = set;
        pb.ops |= topk && topp ? TKP_TOPK_TOPP : topk ? TKP_TOPK : topp ? TKP_TOPP : 0;
    }
    return pb;
}

/* Join up to three names as English does: "a", "a and b", "a, b and c". */
static void join_names(const char *const *names, int n, char *buf, size_t size)
{
    buf[0] = 0;
    size_t used = 0;
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 i == 0 ? "" : i == n - 1 ? " and " : ", ", names[i]);
}

/* A named bit of a set (struct bit_name tables end with name == NULL). */
struct bit_name {
    unsigned bit;
    const char *name;
};

/* docs/SEMANTICS.md, "Top-k and top-p together: top-k first". */
static const struct bit_name op_names[] = {
    { TKP_TOPK, "top-k" }, { TKP_TOPP, "top-p" }, { TKP_TOPK_TOPP, "top-k then top-p" },
    { TKP_MINP, "min-p" }, { 0, NULL },
};
static const struct bit_name output_names[] = {
    { TKP_OUT_SET, "a kept set" }, { TKP_OUT_SAMPLE, "samples" }, { 0, NULL },
};

/* The names of the bits set in `bits`, joined ("top-k, top-p and top-k then top-p"); `none`
 * when no bit is set. */
static void bits_text(unsigned bits, const struct bit_name *table, const char *none, char *buf,
                      size_t size)
{
    const char *names[8];
    int n = 0;
    for (const struct bit_name *t = table; t->name && n < 8; t++)
        if (bits & t->bit)
            names[n++] = t->name;
    if (n)
        join_names(names, n, buf, size);
    else
        snprintf(buf, size, "%s", none);
}

/* "rtopk cannot do this problem (top-p, returning a kept set): it offers top-k only, and
 * returns a kept set". */
static void incapable_message(const struct tkp_algo *a, const struct tkp_problem *pb,
                              struct tkp_error *err)
{
    char asked_ops[96], asked_out[48], ops[96], outs[48];
    bits_text(pb->ops, op_names, "no truncation", asked_ops, sizeof asked_ops);
    bits_text(pb->outputs, output_names, "nothing", asked_out, sizeof asked_out);
    bits_text(a->ops, op_names, "no truncation", ops, sizeof ops);
    bits_text(a->outputs, output_names, "nothing", outs, sizeof outs);
    const int one_op = a->ops == TKP_TOPK || a->ops == TKP_TOPP || a->ops == TKP_TOPK_TOPP;
    tkp_error_set(err, "%s cannot do this problem (%s, returning %s): it offers %s%s, and "
                  "returns %s", a->name, asked_ops, asked_out, ops, one_op ? " only" : "", outs);
}

/* Does the backend's implementation read the problem's element type? (Peers: the bridge
 * decides, docs/PEERS.md.) */
static int dtype_readable(const struct tkp_algo *a, const struct tkp_problem *pb,
                          struct tkp_error *err)
{
    const struct tkp_impl *impl = tkp_algo_impl(a, pb->backend);
    if (pb->dtype == TKP_F32 || tkp_peer_bridged(a) ||
        (tkp_impl_dtypes(a, impl) & TKP_DTYPE_BIT(pb->dtype)))
        return TKP_OK;
    if (!tkp_dtype_name(pb->dtype)) {
        tkp_error_set(err, "logits element type %d is not one of f32, bf16, f16", (int)pb->dtype);
        return TKP_EINVAL;
    }
    tkp_error_set(err, "%s reads no %s logits on the %s (its %s code reads f32)", a->name,
                  tkp_dtype_name(pb->dtype), pb->backend == TKP_GPU ? "GPU" : "CPU",
                  pb->backend == TKP_GPU ? "GPU" : "CPU");
    return TKP_EUNSUPPORTED;
}

/* The version rule for per-row keys and min-p (algos/tkp.h, TKP_ABI_SAMPLING): a module older
 * than that version would ignore struct tkp_io.row_seed, row_offset and min_p and keep or draw
 * something else, so a problem with min-p on in a row or with per-row keys is refused it by
 * name, as a 16-bit type is refused a module that does not read it (dtype_readable). Peers are
 * the harness's own (TKP_ABI). */
static int sampling_readable(const struct tkp_algo *a, const struct tkp_problem *pb,
                             struct tkp_error *err)
{
    if (a->abi >= TKP_ABI_SAMPLING || !((pb->ops & TKP_MINP) || pb->row_keyed))
        return TKP_OK;
    tkp_error_set(err, "%s was written for contract version (abi) %d, which has no %s (version "
                  "%d, algos/tkp.h TKP_ABI_SAMPLING): it cannot do this problem", a->name, a->abi,
                  (pb->ops & TKP_MINP) ? "min-p" : "per-row seeds and offsets",
                  (int)TKP_ABI_SAMPLING);
    return TKP_EUNSUPPORTED;
}

int tkp_capable(const struct tkp_algo *a, const struct tkp_problem *pb, struct tkp_error *err)
{
    int rc = tkp_algo_check_abi(a, err);
    if (rc)
        return rc;
    if (!(tkp_algo_backends(a) & pb->backend)) {
        const char *where = pb->backend == TKP_GPU ? "GPU" : "CPU";
        if (a->flags & TKP_NOT_IMPLEMENTED)
            tkp_error_set(err, "%s is not implemented yet (no %s code)", a->name, where);
        else
            tkp_error_set(err, "%s has no %s implementation%s", a->name, where,
                          pb->backend == TKP_GPU && !(a->flags & TKP_PEER)
                              ? " in this build (the GPU code needs a build with CUDA)"
                              : "");
        return TKP_EUNSUPPORTED;
    }
    rc = sampling_readable(a, pb, err);
    if (rc)
        return rc;
    if ((pb->ops & ~a->ops) || (pb->outputs & ~a->outputs)) {
        incapable_message(a, pb, err);
        return TKP_EUNSUPPORTED;
    }
    return dtype_readable(a, pb, err);
}

/* The module's refusals (every backend), then its backend's; TKP_EUNSUPPORTED with the reason. */
static int instance_supports(const struct tkp_instance *in, struct tkp_error *err)
{
    const char *why = NULL;
    if ((in->algo->supports && !in->algo->supports(&in->pb, in->opts, &why)) ||
        (in->impl->supports && !in->impl->supports(&in->pb, in->opts, &why))) {
        tkp_error_set(err, "%s", why ? why : "unsupported");
        return TKP_EUNSUPPORTED;
    }
    return TKP_OK;
}

/* The workspace init asked for, where the backend wants it. */
static int instance_workspace(struct tkp_instance *in, struct tkp_error *err)
{
    if (!in->workspace_bytes)
        return TKP_OK;
    if (in->pb.backend == TKP_GPU)
        return tkp_gpu_alloc(&in->workspace, in->workspace_bytes, err);
    in->workspace = malloc(in->workspace_bytes);
    if (in->workspace)
        return TKP_OK;
    tkp_error_set(err, "out of host memory for a %zu-byte workspace", in->workspace_bytes);
    return TKP_ENOMEM;
}

int tkp_instance_plan(struct tkp_instance *in, const struct tkp_algo *a, const void *opts,
                      const struct tkp_problem *pb, struct tkp_error *err)
{
    memset(in, 0, sizeof *in);
    in->algo = a;
    in->pb = *pb;
    int capable = tkp_capable(a, pb, err);
    if (capable)
        return capable;
    if (tkp_peer_bridged(a)) {
        tkp_error_set(err, "%s is a peer library: it runs inside `topkp run`, through the "
                      "Python bridge (docs/PEERS.md)", a->name);
        return TKP_EUNSUPPORTED;
    }
    in->impl = tkp_algo_impl(a, pb->backend);
    if (!in->impl) { /* a native peer built without its code */
        tkp_error_set(err, "%s", tkp_peer_of(a)->native);
        return TKP_EUNSUPPORTED;
    }
    in->opts = calloc(1, a->opts_size);
    in->state = calloc(1, in->impl->state_size ? in->impl->state_size : 1);
    if (!in->opts || !in->state) {
        tkp_instance_close(in);
        tkp_error_set(err, "out of host memory");
        return TKP_ENOMEM;
    }
    if (opts)
        memcpy(in->opts, opts, a->opts_size);
    else
        tkp_options_defaults(a, in->opts);
    int rc = instance_supports(in, err);
    if (rc) {
        tkp_instance_close(in);
        return rc;
    }
    rc = in->impl->init(in->state, pb, in->opts, &in->workspace_bytes, err);
    if (rc != TKP_OK) { /* init failed: fini has nothing to free */
        free(in->opts);
        free(in->state);
        in->opts = in->state = NULL;
    }
    return rc;
}

int tkp_instance_open(struct tkp_instance *in, const struct tkp_algo *a, const void *opts,
                      const struct tkp_problem *pb, struct tkp_error *err)
{
    int rc = tkp_instance_plan(in, a, opts, pb, err);
    if (rc == TKP_OK && (rc = instance_workspace(in, err)) != TKP_OK)
        tkp_instance_close(in);
    return rc;
}

int tkp_instance_run(struct tkp_instance *in, const struct tkp_io *io, struct tkp_error *err)
{
    return in->impl->run(in->state, io, in->workspace,
                         in->pb.backend == TKP_GPU ? tkp_gpu_stream() : NULL, err);
}

int tkp_instance_call_launch(void *ctx, struct tkp_error *err)
{
    const struct tkp_instance_call *call = ctx;
    return tkp_instance_run(call->in, call->io, err);
}

void tkp_instance_stats(const struct tkp_instance *in, struct tkp_stats *out)
{
    memset(out, 0, sizeof *out);
    if (in->impl && in->impl->stats && in->algo->abi >= TKP_ABI_STATISTICS)
        in->impl->stats(in->state, out);
}

void tkp_instance_close(struct tkp_instance *in)
{
    if (in->state && in->impl && in->impl->fini)
        in->impl->fini(in->state);
    if (in->pb.backend == TKP_GPU)
        tkp_gpu_free(in->workspace);
    else
        free(in->workspace);
    free(in->state);
    free(in->opts);
    memset(in, 0, sizeof *in);
}

int tkp_stage(struct tkp_staged *s, const struct tkp_batch *b, enum tkp_backend backend,
              uint8_t *kept, int64_t *samples, int32_t draws, uint64_t seed, uint64_t offset,
              struct tkp_error *err)
{
    memset(s, 0, sizeof *s);
    s->backend = backend;
    s->host_kept = kept;
    s->host_samples = samples;
    s->logits_bytes = tkp_batch_input_bytes(b);
    s->row_bytes = (sizeof(int32_t) + sizeof(float)) * (size_t)b->batch;
    s->kept_bytes = kept ? (size_t)(b->batch * b->vocab) : 0;
    s->samples_bytes = samples ? sizeof(int64_t) * (size_t)(b->batch * draws) : 0;
    const size_t rows = (size_t)b->batch;
    s->row_bytes += (b->seed ? 8 * rows : 0) + (b->offset ? 8 * rows : 0) +
                    (b->min_p ? sizeof(float) * rows : 0);
    s->io = (struct tkp_io){ .logits = tkp_batch_input(b), .k = b->k, .p = b->p, .kept = kept,
                             .samples = samples, .seed = seed, .offset = offset,
                             .row_seed = b->seed, .row_offset = b->offset, .min_p = b->min_p };
    if (backend != TKP_GPU)
        return TKP_OK;
    /* the inputs uploaded, the outputs poisoned, an absent per-row array left NULL */
    const size_t bytes[8] = { s->logits_bytes, sizeof(int32_t) * rows, sizeof(float) * rows,
                              s->kept_bytes, s->samples_bytes, b->seed ? 8 * rows : 0,
                              b->offset ? 8 * rows : 0, b->min_p ? sizeof(float) * rows : 0 };
    const void *from[8] = { tkp_batch_input(b), b->k, b->p, NULL, NULL, b->seed, b->offset,
                            b->min_p };
    int rc = TKP_OK;
    for (int i = 0; i < 8 && rc == TKP_OK; i++) {
        if (i >= 3 && bytes[i] == 0)
            continue;
        rc = tkp_gpu_alloc(&s->device[i], bytes[i], err);
        if (rc == TKP_OK && from[i])
            rc = tkp_gpu_upload(s->device[i], from[i], bytes[i], err);
        else if (rc == TKP_OK) /* poison: 0xAB bytes are neither 0/1 masks nor token ids */
            rc = tkp_gpu_fill(s->device[i], 0xAB, bytes[i], err);
    }
    if (rc) {
        tkp_staged_release(s);
        return rc;
    }
    s->io.logits = s->device[0];
    s->io.k = s->device[1];
    s->io.p = s->device[2];
    s->io.kept = s->device[3];
    s->io.samples = s->device[4];
    s->io.row_seed = s->device[5];
    s->io.row_offset = s->device[6];
    s->io.min_p = s->device[7];
    return tkp_gpu_sync(err);
}

int tkp_staged_fetch(struct tkp_staged *s, struct tkp_error *err)
{
    if (s->backend != TKP_GPU)
        return TKP_OK;
    int rc = tkp_gpu_sync(err);
    if (!rc && s->kept_bytes)
        rc = tkp_gpu_download(s->host_kept, s->device[3], s->kept_bytes, err);
    if (!rc && s->samples_bytes)
        rc = tkp_gpu_download(s->host_samples, s->device[4], s->samples_bytes, err);
    return rc;
}

void tkp_staged_release(struct tkp_staged *s)
{
    for (int i = 0; i < 8; i++)
        if (s->device[i])
            tkp_gpu_free(s->device[i]);
    memset(s->device, 0, sizeof s->device);
}

size_t tkp_staged_bytes(const struct tkp_staged *s)
{
    if (s->backend != TKP_GPU)
        return 0;
    return s->logits_bytes + s->row_bytes + s->kept_bytes + s->samples_bytes;
}

int tkp_apply(const struct tkp_algo *a, const void *opts, enum tkp_backend backend,
              const struct tkp_batch *b, uint8_t *kept, int64_t *samples, int32_t draws,
              uint64_t seed, uint64_t offset, struct tkp_stats *stats, struct tkp_error *err)
{
    int rc = tkp_validate_rows(b, err);
    if (rc)
        return rc;
    unsigned outputs = (kept ? TKP_OUT_SET : 0) | (samples ? TKP_OUT_SAMPLE : 0);
    struct tkp_problem pb = tkp_problem_of(b, backend, outputs, draws);
    struct tkp_instance in;
    rc = tkp_instance_open(&in, a, opts, &pb, err);
    if (rc)
        return rc;
    struct tkp_staged st;
    rc = tkp_stage(&st, b, backend, kept, samples, draws, seed, offset, err);
    if (rc == TKP_OK) {
        rc = tkp_instance_run(&in, &st.io, err);
        if (rc == TKP_OK)
            rc = tkp_staged_fetch(&st, err);
        tkp_staged_release(&st);
    }
    if (stats && rc == TKP_OK)
        tkp_instance_stats(&in, stats);
    else if (stats)
        memset(stats, 0, sizeof *stats);
    tkp_instance_close(&in);
    return rc;
}

int tkp_option_assign(const struct tkp_algo *a, void *opts, const char *assignment,
                      struct tkp_error *err)
{
    const char *eq = strchr(assignment, '=');
    char name[TKP_GATE_NAME_MAX + 1];
    if (!eq || eq == assignment) {
        tkp_error_set(err, "option '%s' is not name=value",
                      tkp_gate_escape(assignment, strlen(assignment), name, sizeof name));
        return TKP_EINVAL;
    }
    size_t len = (size_t)(eq - assignment);
    if (tkp_gate_name("option name", assignment, len, NULL, err))
        return TKP_EINVAL; /* the gate: docs/ROBUSTNESS.md, "Text that enters" */
    memcpy(name, assignment, len);
    name[len] = 0;
    return tkp_option_set(a, opts, name, eq + 1, err);
}
