/* timing_graph.h — the timer's graph mode (docs/DESIGN.md, "A run, step by step"): a cell with
 * graph = 1 (the graph axis, or `timing = { graph = true }`) is timed as replays of its call
 * captured once as a CUDA graph, with the L2 policy of eager cells; a call that cannot be
 * captured is `unsupported` with the reason, never timed eagerly instead, and the CPU backend
 * has no graphs: its graph = 1 cells are `unsupported` too. */
#ifndef TKP_TIMING_GRAPH_H
#define TKP_TIMING_GRAPH_H

#include "gpu.h"
#include "timing.h"

/* TKP_EUNSUPPORTED, naming the cell's `algo`, when graph = 1 on the CPU backend; else TKP_OK. */
int tkp_graph_refusal(int graph, enum tkp_backend backend, const char *algo,
                      struct tkp_error *err);

/* Capture fn(ctx) into t's graph (after the warm-up: a rep source's ready()), which
 * tkp_gpu_time replays until tkp_graph_release. A capture that fails is TKP_EUNSUPPORTED with
 * "CUDA graph capture of <algo> failed ...: <why>" (an out-of-memory stays TKP_ENOMEM). */
int tkp_graph_capture(struct tkp_gpu_timer *t, tkp_gpu_launch fn, void *ctx, const char *algo,
                      struct tkp_error *err);
/* After the cell's repetitions (timed or failed): the next cell's calls run afresh. */
void tkp_graph_release(struct tkp_gpu_timer *t);

#endif
