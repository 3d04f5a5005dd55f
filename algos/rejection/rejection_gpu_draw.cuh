/* rejection_gpu_draw.cuh — the draws of the CUDA rejection sampler: one rejection chain
 * (draw_one, rej_draw's rounds and its bisection fallback, over the row or over the first
 * candidate set in shared memory) and a CTA's whole share of a row (sample_row: prepare, draw,
 * write the samples and the statistics). README.md ("GPU", "Statistics"). */
#ifndef REJECTION_GPU_DRAW_CUH
#define REJECTION_GPU_DRAW_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "../common/gpu_async.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "rejection_gpu_passes.cuh"
#include "rejection_gpu_prepare.cuh"
#include "rejection_gpu_types.cuh"
#include "rejection_rules.h"

namespace rej_gpu {

/* One draw (rej_draw): a rejection chain of at most max_rounds rounds; round `round` of draw
 * d of row r uses Philox counter d * max_rounds + round, and the last round of the budget
 * samples the exact kept set found by bisection. The chain state is the same in every thread
 * (of the cluster, when the rounds run over a cluster's row). `small`: the first candidate set
 * is in this CTA's shared memory, and every round runs there (no cluster barrier). `count`:
 * this CTA counts the rounds, fallbacks and bisection steps. */
template <class R>
__device__ __forceinline__ int draw_one(R &row, float max, const Params &prm, int r, int d,
                                        bool small, bool count)
{
    auto &sh = row.sh;
    const int rounds = prm.max_rounds;
    uint64_t hi = sh.top, lo = sh.start, mass = sh.start_mass;
    int c = 0;
    for (int round = 0;; round++) {
        const uint32_t counter = (uint32_t)d * (uint32_t)rounds + (uint32_t)round;
        /* the row's key (docs/SEMANTICS.md, "Sampling: two keying modes"), from the copy in
         * shared memory at each round: held across the round's passes it cost a spill */
        const struct tkp_row_key key = tkp_row_key_from(prm.io.row_seed || prm.io.row_offset,
                                                        sh.key_seed, sh.key_offset, r);
        const uint64_t u = tkp_philox_u64(key.seed, key.row, key.offset, counter);
        if (threadIdx.x == 0 && count)
            sh.stat[0] += 1;
        uint64_t pc;
        if (round == rounds - 1) {
            while (lo - hi > 1) {
                const uint64_t mid = hi + (lo - hi) / 2;
                Tally tm, same;
                if (small)
                    tally2_small(sh, mid, mid, tm, same);
                else
                    tm = tally1(row, max, mid);
                if (rej_kept(tm.count, tm.mass, sh.k_limit, sh.target))
                    hi = mid;
                else
                    lo = mid;
                if (threadIdx.x == 0 && count)
                    sh.stat[2] += 1;
            }
            lo = hi + 1;
            if (threadIdx.x == 0 && count)
                sh.stat[1] += 1;
            if (small) {
                Tally tl, same;
                tally2_small(sh, lo, lo, tl, same);
                pick_small(row, lo, tl.mass, u, c, pc);
            } else {
                const Tally tl = tally1(row, max, lo);
                row.pick(max, lo, tl.mass, u, c, pc);
            }
            return c;
        }
        if (small)
            pick_small(row, lo, mass, u, c, pc);
        else
            row.pick(max, lo, mass, u, c, pc);
        const uint64_t p1 = rej_second_pivot(hi, pc);
        Tally tc, t1;
        if (small)
            tally2_small(sh, pc, p1, tc, t1);
        else
            tally2(row, max, pc, p1, tc, t1);
        if (rej_round_verdict(tc, t1, pc, p1, sh.k_limit, sh.target, &lo, &hi, &mass))
            return c;
    }
}

/* Row r's draw key, seed and offset, into sh by one thread: an asynchronous copy of the row's
 * own (gpu_async.cuh), or the batch's; that thread waits for it before a barrier. */
template <class S> __device__ __forceinline__ void fetch_row_key(const Params &prm, int r, S &sh)
{
    if (prm.io.row_seed)
        tkp_copy_async<8>(&sh.key_seed, prm.io.row_seed + r);
    else
        sh.key_seed = prm.io.seed;
    if (prm.io.row_offset)
        tkp_copy_async<8>(&sh.key_offset, prm.io.row_offset + r);
    else
        sh.key_offset = prm.io.offset;
    tkp_copy_async_commit();
}

/* Row r, group g, on this CTA (rank `row.rank` of a cluster of `row.size`): prepare (min-p
 * folded in), draw, write the samples and this CTA's statistics slot. */
template <class R> __device__ void sample_row(R &row, const Params &prm, int r, int g)
{
    auto &sh = row.sh;
    if (threadIdx.x < kStatWords)
        sh.stat[threadIdx.x] = 0; /* thread 0 alone updates them later (after barriers) */
    if (threadIdx.x == 0) /* the draw key, landing while the row is prepared */
        fetch_row_key(prm, r, sh);
    float max;
    /* min_p from device memory (a captured graph replays with new values); NULL: off */
    const float min_p = prm.io.min_p ? prm.io.min_p[r] : 0.0f;
    const u64 valid = prepare_row(row, prm.io.k[r], prm.io.p[r], min_p, prm.minp_force_count,
                                  max, g == 0 && row.leader());
    if (threadIdx.x == 0)
        tkp_copy_async_wait_all();
    __syncthreads(); /* the key's copy is seen by every thread */
    int64_t *out = prm.io.samples + (int64_t)r * prm.draws;
    if (sh.nsmall > 0) {
        /* The first candidate set is in every CTA's shared memory: each runs its own draws. */
        const int step = prm.groups * (int)row.size;
        for (int d = g * (int)row.size + (int)row.rank; d < prm.draws; d += step) {
            const int c = draw_one(row, max, prm, r, d, true, true);
            if (threadIdx.x == 0)
                out[d] = c;
        }
    } else {
        /* Rounds over the row: every CTA of the cluster takes part, the leader counts. */
        if (valid)
            row.cache_weights(max);
        for (int d = g; d < prm.draws; d += prm.groups) {
            const int c = valid ? draw_one(row, max, prm, r, d, false, row.leader()) : -1;
            if (threadIdx.x == 0 && row.leader())
                out[d] = c;
        }
    }
    __syncthreads();
    const int64_t slot = ((int64_t)r * prm.groups + g) * row.size + row.rank;
    if (threadIdx.x < kStatWords)
        prm.stats[slot * kStatWords + threadIdx.x] = sh.stat[threadIdx.x];
}

} // namespace rej_gpu

#endif
