/* qrita_gpu_search.cuh — the pivot search of qr_search (qrita_gpu.cu): one pass over the
 * candidates (eval_pass: the statistics of five thresholds, and the keys of the window copied to
 * shared memory), the CPU's pivots and verdicts, the warp's register search, and search_stage,
 * which replays one qrita_pivot_search. Everything here is called by a group of G threads (a
 * warp, or a block of G / 32 warps). The data it works on is in qrita_gpu_slot.cuh. */
#ifndef QRITA_GPU_SEARCH_CUH
#define QRITA_GPU_SEARCH_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_logits.cuh"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu_group.cuh"
#include "qrita_gpu_slot.cuh"
#include "qrita_gpu_types.cuh"

#define EVAL_UNROLL 2 /* items of 4 keys in flight per thread */

/* The order keys of item `item` (4 candidates) of s; a row (kind 1) is of element type E,
 * read one element at a time (its values exact as float32: docs/SEMANTICS.md "16-bit logits"). */
template <class E>
__device__ __forceinline__ void load4(const Src &s, int64_t item, uint32_t (&k)[4])
{
    const int64_t i = 4 * item;
    if (s.kind == 1) {
#pragma unroll
        for (int u = 0; u < 4; u++)
            k[u] = i + u < s.n ? tkp_order_key(qr_elem<E>(s.row, i + u)) : 0u;
    } else if (i + 4 <= s.n) {
        const uint4 *q = reinterpret_cast<const uint4 *>(s.keys + i);
        const uint4 v = s.kind == 3 ? __ldcg(q) : *q; /* as pool_word */
        k[0] = v.x;
        k[1] = v.y;
        k[2] = v.z;
        k[3] = v.w;
    } else { /* the last, partial item: no read past n (those words were never written) */
#pragma unroll
        for (int u = 0; u < 4; u++)
            k[u] = i + u < s.n ? (s.kind == 3 ? __ldcg(s.keys + i + u) : s.keys[i + u]) : 0u;
    }
}

/* One pass over the source: the statistics of the keys above each of thr[0..ns) (ascending),
 * and optionally the keys in (glo, ghi] copied to dst (at most cap; *gtotal counts them all). */
template <int G, class E>
__device__ void eval_pass(const Eng &e, const uint32_t (&thr)[NSLOT], int ns,
                          struct qrita_measure m, Slot (&res)[NSLOT], bool gather, uint32_t glo,
                          uint32_t ghi, uint32_t *dst, uint32_t cap, unsigned *gcnt,
                          SearchSmem &sm, uint32_t &gtotal)
{
    const int tid = G == 32 ? (threadIdx.x & 31) : threadIdx.x;
    const unsigned lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < NSLOT; j++)
        res[j] = slot_empty();
    if (gather && tid == 0)
        *gcnt = 0;
    gsync<G>();
    uint32_t wbase = 0; /* G == 32: the warp's running gather count (no atomics) */
    const int64_t items = (e.src.n + 3) / 4;
    for (int64_t base = 0; base < items; base += EVAL_UNROLL * G) {
        uint32_t kk[EVAL_UNROLL][4];
#pragma unroll
        for (int u = 0; u < EVAL_UNROLL; u++) {
            int64_t it = base + u * G + tid;
            if (it < items)
                load4<E>(e.src, it, kk[u]);
            else
                kk[u][0] = kk[u][1] = kk[u][2] = kk[u][3] = 0u;
        }
#pragma unroll
        for (int u = 0; u < EVAL_UNROLL; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const uint32_t key = kk[u][c];
                const bool in = key > e.L && key <= e.H;
                if (in && key > thr[0]) {
                    const u64 w = qrita_measure_of(m, key);
#pragma unroll
                    for (int j = 0; j < NSLOT; j++)
                        if (j < ns && key > thr[j])
                            slot_push(res[j], key, w);
                }
                if (gather) {
                    const bool g = in && key > glo && key <= ghi;
                    const unsigned mk = __ballot_sync(FULL, g);
                    if (G == 32) {
                        /* one warp: the running count is warp-uniform, no atomic round trip */
                        const uint32_t pos = wbase + __popc(mk & ((1u << lane) - 1u));
                        if (g && pos < cap)
                            dst[pos] = key;
                        wbase += __popc(mk);
                    } else if (mk) {
                        const int leader = __ffs(mk) - 1;
                        unsigned b = 0;
                        if ((int)lane == leader)
                            b = atomicAdd(gcnt, (unsigned)__popc(mk));
                        b = __shfl_sync(FULL, b, leader);
                        const unsigned pos = b + __popc(mk & ((1u << lane) - 1u));
                        if (g && pos < cap)
                            dst[pos] = key;
                    }
                }
            }
    }
    reduce_slots<G>(res, sm);
    if (gather) {
        gsync<G>();
        gtotal = G == 32 ? wbase : *gcnt;
        gsync<G>();
    }
}

/* Below this many candidates in shared memory a block-per-row search hands the rest of its
 * iterations to its first warp: no block-wide reductions, no __syncthreads. */
#define HANDOFF_N 1024
/* At most this many candidates per lane: the warp keeps them in registers for the rest of the
 * search (register_iterations). */
#define REG_KEYS 8

/* The pivots of one iteration (qrita_place_pivots): how many there are in [lo, hi], and the j-th
 * (0-based) of them. */
__device__ __forceinline__ int pivot_count(uint32_t lo, uint32_t hi, int pivots)
{
    const uint64_t width = (uint64_t)hi - lo + 1;
    return width <= (uint64_t)pivots ? (int)width : pivots;
}

__device__ __forceinline__ uint32_t pivot_at(uint32_t lo, uint32_t hi, int pivots, int j)
{
    const uint64_t width = (uint64_t)hi - lo + 1;
    if (width <= (uint64_t)pivots)
        return lo + (uint32_t)j;
    /* (j + 1) (width - pivots) / (pivots + 1), the divisor a constant per case */
    const uint64_t span = (uint64_t)(j + 1) * (width - (uint64_t)pivots);
    const uint64_t step = pivots == 3 ? span >> 2 : pivots == 1 ? span >> 1 : span / 3u;
    return lo + (uint32_t)j + (uint32_t)step;
}

/* All of them at once, in registers: thr[0] = lo, thr[1..3] the pivots (unused ones repeat hi),
 * thr[4] = hi. Returns how many. */
__device__ __forceinline__ int place_pivots(uint32_t lo, uint32_t hi, int pivots,
                                            uint32_t (&thr)[NSLOT])
{
    const int c = pivot_count(lo, hi, pivots);
    thr[0] = lo;
#pragma unroll
    for (int j = 0; j < 3; j++)
        thr[1 + j] = j < c ? pivot_at(lo, hi, pivots, j) : hi;
    thr[4] = hi;
    return c;
}

/* The CPU's verdict on a pivot whose statistics over the current source are pj, given those of
 * the keys above the source's window (agg); st gets the pivot's statistics. It depends on pj
 * only (agg and q are fixed during a search). */
__device__ __forceinline__ enum qrita_verdict pivot_verdict(const Slot &pj, const Slot &agg,
                                                           const struct qrita_query &q,
                                                           struct qrita_pivot_stat &st,
                                                           u64 pj_min_weight)
{
    st.count = (int64_t)agg.cnt + pj.cnt;
    st.mass = agg.mass + pj.mass;
    st.min_key = pj.cnt ? pj.min : agg.min;
    st.copies = pj.cnt ? pj.copies : agg.copies;
    /* the measure of one copy (UINT64_MAX: not known to the caller) */
    st.copy_weight = !st.count                                ? 0
                     : pj.cnt && pj_min_weight != UINT64_MAX ? pj_min_weight
                                                               : qrita_measure_of(q.measure, st.min_key);
    qrita_restrict(&st, q.set);
    return qrita_classify(&st, q.target, q.set_size);
}

/* A pivot's verdict with what acting on it needs: the pivot's smallest key, its count and, when
 * accepted, the copies of that key the boundary keeps. */
struct Verdict {
    enum qrita_verdict v;
    uint32_t min_key;
    int64_t count, keep;
};

__device__ __forceinline__ Verdict verdict_of(const Slot &pj, const Slot &agg,
                                              const struct qrita_query &q, int dedup,
                                              u64 pj_min_weight)
{
    struct qrita_pivot_stat st;
    Verdict r;
    r.v = pivot_verdict(pj, agg, q, st, pj_min_weight);
    r.min_key = st.min_key;
    r.count = st.count;
    r.keep = r.v != QRITA_PIVOT_ACCEPT ? 0
             : dedup                   ? qrita_copies_kept(&st, q.target)
                                       : QRITA_KEEP_ALL;
    return r;
}

/* The search state after verdict v on pivot `piv`, whose count over the current source is
 * pj_cnt (lowc/highc get it at the new lo or hi). True when the iteration ends here. */
__device__ __forceinline__ bool apply_verdict(const Verdict &v, uint32_t piv, uint32_t pj_cnt,
                                              SearchState &st_, int64_t &lowc, int64_t &highc)
{
    if (v.v == QRITA_PIVOT_ACCEPT) {
        st_.acc_key = v.min_key;
        st_.acc_keep = v.keep;
        st_.accepted = true;
        st_.acc_count = v.count;
        return true;
    }
    if (v.v == QRITA_PIVOT_LOW) {
        st_.floor_key = piv;
        st_.lo = piv + 1;
        lowc = pj_cnt;
        return false;
    }
    st_.hi = piv - 1;
    highc = pj_cnt;
    return true;
}

/* The CPU's verdict on one pivot `piv` of an iteration, given its statistics over the current
 * source (pj) and those of the keys above the source's window (agg). Updates the search state
 * (lowc/highc get the source counts at the new lo and hi); true when the iteration ends here. */
__device__ __forceinline__ bool judge_one(const Slot &pj, uint32_t piv, const Slot &agg,
                                          const struct qrita_query &q, int dedup,
                                          SearchState &st_, int64_t &lowc, int64_t &highc)
{
    return apply_verdict(verdict_of(pj, agg, q, dedup, UINT64_MAX), piv, pj.cnt, st_, lowc,
                         highc);
}

/* The verdicts on the c pivots thr[1..c] of one iteration, in order (res[1..3]: their
 * statistics over the current source). */
__device__ __forceinline__ void judge_pivots(const Slot (&res)[NSLOT],
                                             const uint32_t (&thr)[NSLOT], int c, const Slot &agg,
                                             const struct qrita_query &q, int dedup,
                                             SearchState &st_, int64_t &lowc, int64_t &highc)
{
#pragma unroll
    for (int j = 0; j < 3; j++)
        if (j < c && judge_one(res[1 + j], thr[1 + j], agg, q, dedup, st_, lowc, highc))
            break;
}

/* The statistics of the lane-held keys above `piv`, over the warp. Keys outside the window are
 * held as 0, which is above no pivot. */
__device__ __forceinline__ Slot warp_slot(const uint32_t (&key)[REG_KEYS],
                                          const u64 (&w)[REG_KEYS], uint32_t piv)
{
    Slot s = slot_empty();
#pragma unroll
    for (int i = 0; i < REG_KEYS; i++)
        if (key[i] > piv)
            slot_push(s, key[i], w[i]);
    return warp_slot_reduce(s);
}

/* At most n <= 32 candidates, in lanes [0, n) (key, weight; 0 for none): sorted in descending
 * key order across the warp (a bitonic network over the first power of two >= n lanes, the
 * rest hold zeros; equal keys carry equal weights, so the order among them does not matter),
 * with the inclusive prefix sums of the weights. */
__device__ __forceinline__ void warp_sort_desc(uint32_t &key, u64 &w, u64 &prefix, int n)
{
    const unsigned lane = threadIdx.x & 31;
#pragma unroll 1
    for (unsigned k = 2; k < 2u * (unsigned)n; k <<= 1)
#pragma unroll 1
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            const uint32_t ok = __shfl_xor_sync(FULL, key, j);
            const u64 ow = __shfl_xor_sync(FULL, w, j);
            /* the lower lane of a pair keeps the larger key in the blocks that end descending */
            const bool take_max = ((lane & k) == 0) == ((lane & j) == 0);
            if (take_max ? ok > key : ok < key) {
                key = ok;
                w = ow;
            }
        }
    prefix = w;
#pragma unroll 1
    for (unsigned o = 1; o < 32; o <<= 1) {
        const u64 y = __shfl_up_sync(FULL, prefix, o);
        if (lane >= o)
            prefix += y;
    }
}

__device__ __forceinline__ Verdict shfl_verdict(const Verdict &x, int lane)
{
    Verdict r;
    r.v = (enum qrita_verdict)__shfl_sync(FULL, (int)x.v, lane);
    r.min_key = __shfl_sync(FULL, x.min_key, lane);
    r.count = __shfl_sync(FULL, x.count, lane);
    r.keep = __shfl_sync(FULL, x.keep, lane);
    return r;
}

/* The rest of a search on at most 32 x REG_KEYS candidates (e.src.kind 0, 2 or 3), by one warp
 * with the candidates in registers: the source no longer shrinks (its window and agg stay those
 * at entry), so every pivot's statistics are agg + the lane-held keys above it, the same numbers
 * the shrinking source gives. A pivot's statistics are computed only when it is judged (the
 * verdicts go in order and stop at the first that ends the iteration), and the loops stay
 * rolled: at small batch the search is bound by fetching its code (README, "GPU"). */
__device__ void register_iterations(const Eng &e, const struct qrita_query &q, int pivots,
                                    int max_iter, int dedup, SearchState &st_)
{
    const unsigned lane = threadIdx.x & 31;
    uint32_t key[REG_KEYS];
    u64 w[REG_KEYS];
#pragma unroll
    for (int i = 0; i < REG_KEYS; i++) {
        const int64_t j = lane + 32 * i;
        const uint32_t k = j >= e.src.n ? 0u : pool_word(e.src.keys + j, e.src.kind == 3);
        key[i] = k > e.L && k <= e.H ? k : 0u;
    }
    /* the weights, one key at a time: the arrays rotate by one per step (static indices keep
     * them in registers; one copy of the weight's code) */
    const bool sorted = e.src.n <= 32;
#pragma unroll 1
    for (int i = 0; i < REG_KEYS; i++) {
        const uint32_t k0 = key[0];
        const u64 w0 = k0 ? qrita_measure_of(q.measure, k0) : 0;
#pragma unroll
        for (int j = 0; j < REG_KEYS - 1; j++) {
            key[j] = key[j + 1];
            w[j] = w[j + 1];
        }
        key[REG_KEYS - 1] = k0;
        w[REG_KEYS - 1] = w0;
    }
    /* at most 32 candidates (one per lane, in key[0]): sorted once. A pivot's verdict depends
     * only on how many keys are above it, so lane L judges once the pivots with exactly L + 1
     * keys above (lane L's key the smallest of them), every lane those with none; each pivot is
     * then a ballot and a lookup */
    u64 prefix = 0;
    Verdict mine = {}, none = {};
    if (sorted) {
        warp_sort_desc(key[0], w[0], prefix, (int)e.src.n);
        Slot s;
        s.cnt = lane + 1;
        s.min = key[0];
        s.mass = prefix;
        s.copies = __popc(__match_any_sync(FULL, key[0]));
        mine = verdict_of(s, e.agg, q, dedup, w[0]);
        none = verdict_of(slot_empty(), e.agg, q, dedup, UINT64_MAX);
    }
#pragma unroll 1
    for (; st_.it < max_iter && st_.lo <= st_.hi; st_.it++) {
        const uint32_t lo = st_.lo, hi = st_.hi;
        const int c = pivot_count(lo, hi, pivots);
        st_.iters++;
        int64_t lowc = 0, highc = 0;
        /* j = -1: the first pass's statistics at lo (only its smallest key is used) */
#pragma unroll 1
        for (int j = st_.first ? -1 : 0; j < c; j++) {
            const uint32_t piv = j < 0 ? lo : pivot_at(lo, hi, pivots, j);
            if (sorted) {
                const unsigned cnt = __popc(__ballot_sync(FULL, key[0] > piv));
                const int from = cnt ? (int)cnt - 1 : 0;
                if (j < 0) {
                    const uint32_t m = __shfl_sync(FULL, key[0], from);
                    st_.first_min = cnt ? m : UINT32_MAX;
                    st_.first = false;
                    continue;
                }
                const Verdict v = cnt ? shfl_verdict(mine, from) : none;
                if (apply_verdict(v, piv, cnt, st_, lowc, highc))
                    break;
                continue;
            }
            const Slot sj = warp_slot(key, w, piv);
            if (j < 0) {
                st_.first_min = sj.min;
                st_.first = false;
            } else if (judge_one(sj, piv, e.agg, q, dedup, st_, lowc, highc)) {
                break;
            }
        }
        if (st_.accepted)
            return;
    }
}

/* Iterations of qrita_pivot_search until it ends (false) or, with `handoff` > 0, until the
 * candidates are at most `handoff` keys in shared memory (true). */
template <int G, int CAP, class E>
__device__ bool search_iterations(Eng &e, const struct qrita_query &q, int pivots, int max_iter,
                                  int dedup, SearchState &st_, uint32_t *pool, unsigned *gcnt,
                                  SearchSmem &sm, int handoff)
{
    for (; st_.it < max_iter && st_.lo <= st_.hi; st_.it++) {
        /* few candidates left: the warp's register search (a block hands off to its warp) */
        const bool few = e.src.kind != 1 && e.src.n <= 32 * REG_KEYS;
        if (handoff && (few || (e.src.kind == 2 && e.src.n <= handoff)))
            return true;
        if (G == 32 && few) {
            register_iterations(e, q, pivots, max_iter, dedup, st_);
            return false;
        }
        const uint32_t lo = st_.lo, hi = st_.hi;
        uint32_t thr[NSLOT];
        const int c = place_pivots(lo, hi, pivots, thr);
        /* slots: lo, the pivots (unused ones repeat hi), hi */
        const bool gather = e.U <= CAP;
        uint32_t *dst = pool + (1 - e.cur) * CAP;
        Slot res[NSLOT];
        uint32_t gtot = 0;
        eval_pass<G, E>(e, thr, NSLOT, q.measure, res, gather, lo, hi, dst,
                        CAP, gcnt, sm, gtot);
        if (st_.first) {
            st_.first_min = res[0].min;
            st_.first = false;
        }
        st_.iters++;
        int64_t lowc = res[0].cnt, highc = res[4].cnt;
        judge_pivots(res, thr, c, e.agg, q, dedup, st_, lowc, highc);
        if (gather && gtot <= CAP) {
            slot_add(e.agg, res[4]);
            e.src.kind = 2;
            e.src.keys = dst;
            e.src.n = gtot;
            e.L = thr[0];
            e.H = thr[4];
            e.cur = 1 - e.cur;
        }
        if (st_.accepted)
            return false;
        e.U = lowc - highc;
    }
    return false;
}

/* qrita_pivot_search, replayed: the same pivots, the same statistics per pivot (agg + source),
 * the same verdicts. `accepted` says whether a pivot was accepted; `first_min` is the smallest
 * candidate key above q.lo seen by the first pass; `acc_count` the accepted pivot's count. */
template <int G, int CAP, class E>
__device__ struct qrita_boundary search_stage(Eng &e, const struct qrita_query &q, int pivots,
                                              int max_iter, int dedup, int64_t &iters,
                                              bool &accepted, uint32_t &first_min,
                                              int64_t &acc_count, uint32_t *pool,
                                              unsigned *gcnt, SearchSmem &sm)
{
    SearchState st_;
    st_.lo = q.lo;
    st_.hi = q.hi - 1;
    st_.floor_key = q.lo;
    st_.first_min = UINT32_MAX;
    st_.acc_key = 0;
    st_.it = 0;
    st_.first = true;
    st_.accepted = false;
    st_.acc_count = st_.acc_keep = st_.iters = 0;
    if (G > 32) {
        if (search_iterations<G, CAP, E>(e, q, pivots, max_iter, dedup, st_, pool, gcnt, sm,
                                         HANDOFF_N)) {
            if (threadIdx.x < 32) {
                search_iterations<32, CAP, E>(e, q, pivots, max_iter, dedup, st_, pool, gcnt,
                                              sm, 0);
                if (threadIdx.x == 0)
                    sm.hand = st_;
            }
            __syncthreads();
            st_ = sm.hand;
            __syncthreads();
        }
    } else {
        search_iterations<G, CAP, E>(e, q, pivots, max_iter, dedup, st_, pool, gcnt, sm, 0);
    }
    iters += st_.iters;
    accepted = st_.accepted;
    if (!st_.first)
        first_min = st_.first_min;
    if (st_.accepted) {
        acc_count = st_.acc_count;
        struct qrita_boundary b = { st_.acc_key, st_.acc_keep };
        return b;
    }
    struct qrita_boundary unresolved = { st_.floor_key, 0 };
    return unresolved;
}

#endif
