/* timing_graph.c — see timing_graph.h: the graph mode's refusals and its capture, beside the
 * shared timer (timing.c), for modules and native peers alike; a Python peer captures in its
 * worker (peers/worker.py), under the same rule. */
#include <stdio.h>
#include <string.h>

#include "timing_graph.h"

int tkp_graph_refusal(int graph, enum tkp_backend backend, const char *algo,
                      struct tkp_error *err)
{
    if (!graph || backend != TKP_CPU)
        return TKP_OK;
    tkp_error_set(err, "graph = 1: %s would be timed as CUDA graph replays, which the CPU "
                  "backend has not; it times eager calls only "
                  "(docs/DESIGN.md, \"A run, step by step\")", algo);
    return TKP_EUNSUPPORTED;
}

int tkp_graph_capture(struct tkp_gpu_timer *t, tkp_gpu_launch fn, void *ctx, const char *algo,
                      struct tkp_error *err)
{
    int rc = tkp_gpu_timer_use_graph(t, fn, ctx, err);
    if (rc == TKP_OK || rc == TKP_ENOMEM)
        return rc;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    tkp_error_set(err, "CUDA graph capture of %s failed, so it is not timed (graph = 1 times "
                  "replays only): %s", algo, why);
    return TKP_EUNSUPPORTED;
}

void tkp_graph_release(struct tkp_gpu_timer *t)
{
    tkp_gpu_timer_drop_graph(t);
}
