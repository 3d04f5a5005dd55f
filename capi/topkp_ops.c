/* topkp_ops.c — the C entry point of include/topkp_ops.h over the module table: a spec
 * becomes the struct tkp_problem `topkp apply` would plan (tkp_problem_of, tkp_validate_rows,
 * harness/module/apply.c), then an instance without a workspace (tkp_instance_plan); a run
 * hands the module the caller's buffers, workspace and stream (docs/DESIGN.md, "The module
 * table": run never allocates and never synchronises). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/module/apply.h"
#include "../algos/common/prob.h"
#include "../algos/common/gate.h"
#include "../include/topkp_ops.h"
#include "gpu.h"

/* The compute capability the kernels were built for (Makefile, CUDA_ARCH). */
#ifndef TOPKP_OPS_CC
#define TOPKP_OPS_CC 90
#endif

struct topkp_ops_plan {
    struct tkp_instance in;
    int64_t batch, vocab;
    int32_t want_kept, draws, row_keyed;
};

/* Copy err's message out; returns rc. */
static int report(int rc, const struct tkp_error *err, char *msg, size_t msg_size)
{
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", rc ? err->msg : "");
    return rc;
}

int topkp_ops_version(void) { return TOPKP_OPS_VERSION; }

int topkp_ops_backends(void)
{
#ifdef TKP_HAVE_CUDA
    return TOPKP_OPS_CPU | TOPKP_OPS_GPU;
#else
    return TOPKP_OPS_CPU;
#endif
}

const char *topkp_ops_algo(int i, unsigned *ops, unsigned *outputs, unsigned *backends)
{
    for (int n = 0; tkp_algos[n]; n++)
        if (n == i) {
            *ops = tkp_algos[n]->ops, *outputs = tkp_algos[n]->outputs;
            *backends = tkp_algo_backends(tkp_algos[n]);
            return tkp_algos[n]->name;
        }
    return NULL;
}

/* The shape, type and output checks that need no rows. */
static int check_spec(const struct topkp_ops_spec *s, struct tkp_error *err)
{
    if (!s || s->size < (int32_t)sizeof *s)
        return tkp_error_set(err, "spec: NULL or of size %d, this library's is %d",
                             s ? (int)s->size : 0, (int)sizeof *s), TKP_EINVAL;
    if (s->backend != TOPKP_OPS_CPU && s->backend != TOPKP_OPS_GPU)
        return tkp_error_set(err, "backend %d is not cpu (1) or gpu (2)", (int)s->backend), TKP_EINVAL;
    if (!tkp_dtype_name((enum tkp_dtype)s->dtype))
        return tkp_error_set(err, "logits dtype %d is not one of f32 (0), bf16 (1), f16 (2)",
                             (int)s->dtype), TKP_EINVAL;
    if (s->batch < 1 || s->vocab < 1 || s->vocab > TKP_MAX_VOCAB)
        return tkp_error_set(err, "logits of shape [%lld, %lld]: need batch >= 1 and vocab in "
                             "[1, %lld]", (long long)s->batch, (long long)s->vocab,
                             (long long)TKP_MAX_VOCAB), TKP_EINVAL;
    if (s->row_stride != s->vocab)
        return tkp_error_set(err, "logits rows are not contiguous (row stride %lld, vocab %lld)",
                             (long long)s->row_stride, (long long)s->vocab), TKP_EINVAL;
    if (s->draws < 0 || (!s->want_kept && !s->draws))
        return tkp_error_set(err, "ask for a kept mask or for draws >= 1 (draws %d)",
                             (int)s->draws), TKP_EINVAL;
    if (!s->algo)
        return tkp_error_set(err, "no algorithm named (see `topkp list`)"), TKP_EINVAL;
    /* the name passes the one gate for names before it is looked up or echoed (escaped) */
    if (tkp_gate_name("algorithm name", s->algo, strlen(s->algo), NULL, err))
        return TKP_EINVAL;
    if (!tkp_algo_find(s->algo))
        return tkp_error_set(err, "unknown algorithm '%s' (see `topkp list`)", s->algo),
               TKP_EINVAL;
    if ((!s->k) != (!s->p))
        return tkp_error_set(err, "spec: give both host rows k and p, or neither"), TKP_EINVAL;
    return TKP_OK;
}

/* The problem of the spec: from the host rows as apply plans it, else the bounds of any rows. */
static int spec_problem(const struct topkp_ops_spec *s, struct tkp_problem *pb,
                        struct tkp_error *err)
{
    const enum tkp_backend be = s->backend == TOPKP_OPS_GPU ? TKP_GPU : TKP_CPU;
    const unsigned outputs = (s->want_kept ? TKP_OUT_SET : 0u) | (s->draws ? TKP_OUT_SAMPLE : 0u);
    struct tkp_batch b = { .batch = s->batch, .vocab = s->vocab, .k = (int32_t *)s->k,
                           .p = (float *)s->p, .dtype = (enum tkp_dtype)s->dtype,
                           .min_p = (float *)s->min_p };
    if (s->k) {
        int rc = tkp_validate_rows(&b, err);
        if (rc)
            return rc;
        *pb = tkp_problem_of(&b, be, outputs, s->draws);
    } else {
        *pb = (struct tkp_problem){ .batch = s->batch, .vocab = s->vocab, .stride = s->vocab,
                                    .backend = be, .outputs = outputs, .draws = s->draws,
                                    .dtype = b.dtype, .set_max = s->vocab };
        pb->ops = (s->has_k ? TKP_TOPK : 0u) | (s->has_p ? TKP_TOPP : 0u) |
                  (s->has_k && s->has_p ? TKP_TOPK_TOPP : 0u) | (s->has_min_p ? TKP_MINP : 0u);
        pb->k_max = s->has_k ? (int32_t)(s->vocab > 1 ? s->vocab - 1 : 1) : 0;
        if (s->has_k && s->k_bound > 0 && s->k_bound < s->vocab) {
            /* the promise: every row's top-k on, so no row is top-p alone (cake plans it) */
            pb->k_max = s->k_bound, pb->set_max = s->k_bound;
            pb->ops &= ~(unsigned)TKP_TOPP;
        }
    }
    pb->row_keyed = s->row_keyed != 0;
    return TKP_OK;
}

/* A GPU whose compute capability the kernels were not built for is refused by name. */
static int check_device(const struct topkp_ops_spec *s, struct tkp_error *err)
{
#ifdef TKP_HAVE_CUDA
    struct tkp_gpu_props props;
    if (s->backend != TOPKP_OPS_GPU)
        return TKP_OK;
    int rc = tkp_gpu_props(&props, err);
    if (rc)
        return rc;
    if (props.cc_major * 10 + props.cc_minor != TOPKP_OPS_CC) {
        tkp_error_set(err, "the GPU %s is sm_%d%d; this build of the kernels targets sm_%d only "
                      "(rebuild with CUDA_ARCH for it, docs/PYTHON.md)", props.name,
                      props.cc_major, props.cc_minor, TOPKP_OPS_CC);
        return TKP_EDEVICE;
    }
#else
    (void)s, (void)err;
#endif
    return TKP_OK;
}

/* "a=1,b=x" onto opts, one assignment at a time. */
static int set_options(const struct tkp_algo *a, void *opts, const char *text,
                       struct tkp_error *err)
{
    char item[256];
    for (const char *at = text; at && *at;) {
        const char *end = strchr(at, ',');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        if (n >= sizeof item)
            return tkp_error_set(err, "option '%.40s...' is too long", at), TKP_EINVAL;
        memcpy(item, at, n);
        item[n] = 0;
        int rc = n ? tkp_option_assign(a, opts, item, err) : TKP_OK;
        if (rc)
            return rc;
        at = end ? end + 1 : NULL;
    }
    return TKP_OK;
}

static int plan_create(const struct topkp_ops_spec *s, topkp_ops_plan **out,
                       struct tkp_error *err)
{
    int rc = check_spec(s, err);
    struct tkp_problem pb;
    if (!rc)
        rc = spec_problem(s, &pb, err);
    if (!rc)
        rc = check_device(s, err);
    if (rc)
        return rc;
    const struct tkp_algo *a = tkp_algo_find(s->algo);
    void *opts = calloc(1, a->opts_size ? a->opts_size : 1);
    topkp_ops_plan *plan = calloc(1, sizeof *plan);
    if (!opts || !plan) {
        free(opts), free(plan);
        return tkp_error_set(err, "out of host memory"), TKP_ENOMEM;
    }
    tkp_options_defaults(a, opts);
    rc = set_options(a, opts, s->options, err);
    if (!rc)
        rc = tkp_instance_plan(&plan->in, a, opts, &pb, err);
    free(opts);
    if (rc) {
        free(plan);
        return rc;
    }
    plan->batch = s->batch, plan->vocab = s->vocab, plan->want_kept = s->want_kept != 0;
    plan->draws = s->draws, plan->row_keyed = s->row_keyed != 0;
    *out = plan;
    return TKP_OK;
}

int topkp_ops_plan_create(const struct topkp_ops_spec *spec, topkp_ops_plan **out, char *msg,
                          size_t msg_size)
{
    struct tkp_error err = { "" };
    if (!out)
        return tkp_error_set(&err, "out is NULL"), report(TKP_EINVAL, &err, msg, msg_size);
    *out = NULL;
    return report(plan_create(spec, out, &err), &err, msg, msg_size);
}

size_t topkp_ops_plan_workspace(const topkp_ops_plan *plan)
{
    return plan ? plan->in.workspace_bytes : 0;
}

/* Host rows of a CPU run: no NaN, and a problem the plan covers (its ops, k_max, set_max). */
static int check_host_rows(const topkp_ops_plan *plan, const struct topkp_ops_io *io,
                           struct tkp_error *err)
{
    struct tkp_batch b = { .batch = plan->batch, .vocab = plan->vocab, .k = (int32_t *)io->k,
                           .p = (float *)io->p, .min_p = (float *)io->min_p };
    int rc = tkp_validate_rows(&b, err);
    if (rc)
        return rc;
    const struct tkp_problem *planned = &plan->in.pb;
    struct tkp_problem pb = tkp_problem_of(&b, planned->backend, planned->outputs, plan->draws);
    if ((pb.ops & ~planned->ops) || pb.k_max > planned->k_max || pb.set_max > planned->set_max)
        return tkp_error_set(err, "these rows ask for more than the plan was made for (filters "
                             "%u of %u, k up to %d of %d): plan them again", pb.ops,
                             planned->ops, (int)pb.k_max, (int)planned->k_max), TKP_EINVAL;
    return TKP_OK;
}

/* The buffers against the plan. */
static int check_io(const topkp_ops_plan *plan, const struct topkp_ops_io *io, size_t ws_bytes,
                    struct tkp_error *err)
{
    if (!io || io->size < (int32_t)sizeof *io)
        return tkp_error_set(err, "io: NULL or of size %d, this library's is %d",
                             io ? (int)io->size : 0, (int)sizeof *io), TKP_EINVAL;
    if (!io->logits || !io->k || !io->p)
        return tkp_error_set(err, "io: logits, k and p are required"), TKP_EINVAL;
    if ((!io->kept) == plan->want_kept || (!io->samples) == (plan->draws > 0))
        return tkp_error_set(err, "io: the plan wants %s and %s", plan->want_kept ? "a kept "
                             "mask" : "no kept mask", plan->draws ? "samples" : "no samples"),
               TKP_EINVAL;
    if ((io->row_seed || io->row_offset) && !plan->row_keyed)
        return tkp_error_set(err, "io: per-row seeds or offsets given to a plan made without "
                             "them (row_keyed 0)"), TKP_EINVAL;
    if ((io->min_p != NULL) && !(plan->in.pb.ops & TKP_MINP) && plan->in.pb.backend == TKP_GPU)
        return tkp_error_set(err, "io: min_p given to a plan made without it"), TKP_EINVAL;
    if (ws_bytes < plan->in.workspace_bytes || (plan->in.workspace_bytes && !ws_bytes))
        return tkp_error_set(err, "workspace of %zu bytes; the plan needs %zu", ws_bytes,
                             plan->in.workspace_bytes), TKP_EINVAL;
    return plan->in.pb.backend == TKP_CPU ? check_host_rows(plan, io, err) : TKP_OK;
}

int topkp_ops_plan_run(topkp_ops_plan *plan, const struct topkp_ops_io *io, void *workspace,
                       size_t workspace_bytes, void *stream, char *msg, size_t msg_size)
{
    struct tkp_error err = { "" };
    if (!plan)
        return tkp_error_set(&err, "plan is NULL"), report(TKP_EINVAL, &err, msg, msg_size);
    int rc = check_io(plan, io, workspace ? workspace_bytes : 0, &err);
    if (rc)
        return report(rc, &err, msg, msg_size);
    const struct tkp_io tio = { .logits = io->logits, .k = io->k, .p = io->p, .kept = io->kept,
                                .samples = io->samples, .seed = io->seed, .offset = io->offset,
                                .row_seed = io->row_seed, .row_offset = io->row_offset,
                                .min_p = io->min_p };
    rc = plan->in.impl->run(plan->in.state, &tio, workspace,
                            plan->in.pb.backend == TKP_GPU ? stream : NULL, &err);
    return report(rc, &err, msg, msg_size);
}

void topkp_ops_plan_destroy(topkp_ops_plan *plan)
{
    if (!plan)
        return;
    tkp_instance_close(&plan->in);
    free(plan);
}
