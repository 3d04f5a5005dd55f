/* batch_invariance.h — the batch-invariance checks of docs/SEMANTICS.md, "Sampling: two keying
 * modes", shared by the CPU tests (tests/test_batch_invariance.c) and the GPU ones
 * (tests/test_gpu_batch_invariance.c): with per-row seeds and offsets, a row's kept set and
 * draws depend on that row alone. */
#ifndef TKP_BATCH_INVARIANCE_H
#define TKP_BATCH_INVARIANCE_H

#include "../algos/tkp.h"

/* On module `algo` (defaults) on `backend`, over a seeded batch of 1024 rows with per-row
 * seeds, offsets, k, p and (where the module has it) min-p: permuting the rows permutes the
 * outputs; changing every other row, removing them or adding rows changes nothing for the
 * rows kept; each of several rows alone (B = 1) gives what it gives inside the batch. The
 * seed of the batch is printed on failure. */
void check_batch_invariance(const char *algo, enum tkp_backend backend, uint64_t seed);

/* The control that shows the check can fail: without the arrays (batch keying) a sampler's
 * draws of a row change when the rows are permuted. */
void check_batch_keying_depends_on_row(const char *algo, enum tkp_backend backend, uint64_t seed);

#endif
