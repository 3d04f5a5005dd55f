/* qrita_gpu_boundary.cuh — a row's boundary (qr_search and qr_search_heavy in qrita_gpu.cu):
 * search_row replays the CPU's decisions and its searches on the row's candidates (row_plan),
 * the top-k stage, the top-k set (enter_topk_set) and the top-p stage, checks a buffer that may
 * not hold the answer and searches the row instead when it does not, and finds the cut among the
 * copies of the boundary key (cut_in_pool, cut_in_row); and the warm-up row of the fused search. */
#ifndef QRITA_GPU_BOUNDARY_CUH
#define QRITA_GPU_BOUNDARY_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_block.cuh"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu.h"
#include "qrita_gpu_group.cuh"
#include "qrita_gpu_minp.cuh"
#include "qrita_gpu_row_plan.cuh"
#include "qrita_gpu_search.cuh"
#include "qrita_gpu_slot.cuh"
#include "qrita_gpu_sort.cuh"
#include "qrita_gpu_types.cuh"

/* enter_topk_set, between the two stages of a row with both filters: one pass at b.key - 1
 * (b: the top-k boundary) restricted to the top-k set, whose keys it also copies to shared
 * memory when they fit; q becomes the top-p stage's query on that set, and row_total its mass. */
template <int G, int CAP, class E>
__device__ __forceinline__ void enter_topk_set(Eng &e, const Src &src, struct qrita_boundary b,
                                               bool accepted, int64_t acc_count,
                                               struct qrita_query &q, u64 &row_total,
                                               uint32_t *pool, unsigned *gcnt, SearchSmem &sm)
{
    eng_reset(e, src);
    if (accepted)
        e.U = acc_count;
    uint32_t thr[NSLOT];
    for (int j = 0; j < NSLOT; j++)
        thr[j] = b.key - 1;
    Slot res[NSLOT];
    uint32_t gtot = 0;
    const bool gather = e.U <= CAP;
    uint32_t *dst = pool + (1 - e.cur) * CAP;
    eval_pass<G, E>(e, thr, 1, q.measure, res, gather, b.key - 1, UINT32_MAX, dst, CAP, gcnt, sm,
                 gtot);
    struct qrita_pivot_stat st;
    st.count = res[0].cnt;
    st.mass = res[0].mass;
    st.min_key = res[0].min;
    st.copies = res[0].copies;
    st.copy_weight = st.count ? qrita_measure_of(q.measure, st.min_key) : 0;
    qrita_restrict(&st, b);
    if (gather && gtot <= CAP) {
        e.src.kind = 2;
        e.src.keys = dst;
        e.src.n = gtot;
        e.L = b.key - 1;
        e.cur = 1 - e.cur;
        e.U = gtot;
    }
    q.lo = b.key - 1;
    q.set_size = st.count;
    q.set = b;
    row_total = st.mass;
}

/* The cut of a boundary found on a buffer (pool_n entries, keys pk and indices pi; `fresh` as
 * for pool_word): the keep-th smallest index among the copies of bkey, V when the buffer holds
 * at most keep of them. */
template <int G>
__device__ __forceinline__ int cut_in_pool(const uint32_t *pk, const uint32_t *pi, bool fresh,
                                           int64_t pool_n, uint32_t bkey, int64_t keep, int64_t V,
                                           int tid, SearchSmem &sm)
{
    uint32_t c = 0;
    for (int64_t i = tid; i < pool_n; i += G)
        c += pool_word(pk + i, fresh) == bkey;
    c = group_sum<G>(c, sm.wcnt);
    if ((int64_t)c <= keep)
        return (int)V;
    /* the keep-th smallest index among the copies */
    int64_t lo_i = 0, hi_i = V - 1;
    while (lo_i < hi_i) {
        const int64_t mid = (lo_i + hi_i) / 2;
        uint32_t n = 0;
        for (int64_t i = tid; i < pool_n; i += G)
            n += pool_word(pk + i, fresh) == bkey && (int64_t)pool_word(pi + i, fresh) <= mid;
        n = group_sum<G>(n, sm.wcnt);
        if ((int64_t)n >= keep)
            hi_i = mid;
        else
            lo_i = mid + 1;
    }
    return (int)lo_i;
}

/* The cut of a boundary found on the row x (V tokens of element type E): the index of the
 * keep-th copy of bkey, walking the row in index order a group-wide tile at a time (V: fewer
 * copies). */
template <int G, class E>
__device__ __forceinline__ int cut_in_row(const void *x, int64_t V, uint32_t bkey, int64_t keep,
                                          int g, int tid, SearchSmem &sm)
{
    int64_t running = 0;
    int cut = (int)V;
    const unsigned lane = threadIdx.x & 31;
    for (int64_t base = 0; base < V; base += G) {
        const int64_t i = base + tid;
        const bool eq = i < V && tkp_order_key(qr_elem<E>(x, i)) == bkey;
        unsigned before, tile;
        if (G == 32) {
            const unsigned mk = __ballot_sync(FULL, eq);
            before = __popc(mk & ((1u << lane) - 1u));
            tile = __popc(mk);
        } else { /* the block's scan (algos/common/gpu_block.cuh); sm.wcnt free again after */
            before = tkp_block_excl_count<G / 32>(eq, sm.wcnt, tile);
            __syncthreads();
        }
        if (running + tile >= keep) {
            if (tid == 0)
                sm.found[g] = UINT32_MAX;
            gsync<G>();
            if (eq && running + before + 1 == keep)
                sm.found[g] = (uint32_t)i;
            gsync<G>();
            cut = (int)sm.found[g];
            gsync<G>();
            break;
        }
        running += tile;
    }
    return cut;
}

/* The cut of boundary b found on the buffer (use_pool; in_win, fresh: as for pool_keys and
 * pool_word) or on the row x: the mask keeps key > b.key, and the copies of b.key with index
 * <= cut. */
template <int G, class E>
__device__ __forceinline__ int boundary_cut(const qr_args &a, int64_t r, const void *x,
                                            struct qrita_boundary b, bool use_pool, bool in_win,
                                            bool fresh, int64_t pool_n, int g, int tid,
                                            SearchSmem &sm)
{
    if (b.keep == QRITA_KEEP_ALL)
        return (int)a.vocab;
    if (b.keep == 0)
        return -1;
    if (use_pool)
        return cut_in_pool<G>(pool_keys(a, r, in_win), pool_idx(a, r, in_win), fresh, pool_n,
                              b.key, b.keep, a.vocab, tid, sm);
    return cut_in_row<G, E>(x, a.vocab, b.key, b.keep, g, tid, sm);
}

/* A warp's search leaves row r to qr_search_heavy: it lists it. */
__device__ __forceinline__ void list_heavy(const qr_args &a, int64_t r, int tid)
{
    if (tid == 0)
        a.heavy[1 + atomicAdd(&a.heavy[0], 1u)] = (uint32_t)r;
}

/* One attempt of search_row on src (the buffer, or the row): the top-k stage, then top-p on
 * its set (q: the row's query; total: the row's mass; sort: search=sort, whose sorted
 * candidates are sorted[0, n_sorted)). failed: the buffer did not provably hold
 * the answer (validate); iters counts the search's iterations. */
template <int G, int CAP, class E>
__device__ __forceinline__ struct qrita_boundary
search_attempt(Eng &e, const Src &src, struct qrita_query q, u64 total, const RowPlan &plan,
               int32_t k, float p, bool validate, int sort, const uint32_t *sorted,
               int64_t n_sorted, int pivots, int max_iter, int dedup, int tid, int64_t &iters,
               bool &failed, uint32_t *pool, unsigned *gcnt, SearchSmem &sm)
{
    bool accepted = false;
    uint32_t first_min = UINT32_MAX;
    int64_t acc_count = 0;
    u64 row_total = total;
    struct qrita_boundary b = qrita_all_valid();
    if (plan.topk) {
        struct qrita_query qk = q;
        qk.measure.unit = 1;
        qk.target = (uint64_t)k;
        eng_reset(e, src);
        b = sort ? sorted_boundary<G>(sorted, n_sorted, qk, dedup, tid)
                 : search_stage<G, CAP, E>(e, qk, pivots, max_iter, dedup, iters, accepted,
                                           first_min, acc_count, pool, gcnt, sm);
        failed = validate && !(accepted && b.key > first_min);
    }
    if (plan.topp && !failed) {
        if (plan.topk)
            enter_topk_set<G, CAP, E>(e, src, b, accepted, acc_count, q, row_total, pool, gcnt,
                                      sm);
        else
            eng_reset(e, src);
        q.target = tkp_topp_target(p, row_total);
        bool acc2 = false;
        uint32_t fm2 = UINT32_MAX;
        int64_t ac2 = 0;
        b = sort ? sorted_boundary<G>(sorted, n_sorted, q, dedup, tid)
                 : search_stage<G, CAP, E>(e, q, pivots, max_iter, dedup, iters, acc2, fm2, ac2,
                                           pool, gcnt, sm);
        if (!plan.topk)
            failed = validate && !(acc2 && b.key > fm2);
    }
    return b;
}

/* Row r's search with filters k, p and min_p by the G threads of group g (tid: the thread's
 * index in the group; pool: the group's 2 x CAP words of shared memory); r = batch is the
 * warm-up row of qr_search (k = 0, min_p = 0). A warp (G = 32) leaves a row with more than
 * a.heavy_n candidates, one searched over the whole row (a truncation miss, a buffer that failed
 * its check) or whose min-p needs a count over the row to qr_search_heavy: it only lists it. */
template <int G, int CAP, class E>
__device__ __forceinline__ void search_row(const qr_args &a, int64_t r, int32_t k, float p,
                                           float min_p, int g, int tid, uint32_t *pool,
                                           SearchSmem &sm)
{
    qr_row *row = a.rows + r;
    const int64_t V = a.vocab;
    /* the truncation ran on kt; with top-k on, min-p folds into the search's k here
     * (qrita_gpu_minp.cuh): a block before the search's first loads, a warp after them (each
     * order the one that keeps the search in its registers) */
    const bool late = tkp_minp_on(min_p) && tkp_topk_on(k, V);
    int32_t ks = 0;
    if (G > 32 && late)
        ks = search_minp_k<G, E>(a, r, row, k, min_p, tid, sm);
    unsigned *gcnt = &sm.gcnt[g];
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    const uint32_t max_key = row->max_key;
    const u64 total = row->total;
    const int32_t kt = row->k_trunc;
    if (!late)
        ks = kt;
    else if (G == 32 && (ks = search_minp_k<G, E>(a, r, row, k, min_p, tid, sm)) < 0)
        return list_heavy(a, r, tid);
    const RowPlan plan = row_plan(a, row, kt, ks, p, late);
    qrita_gpu_rstat rs = plan.rs;
    uint32_t bkey = 0;
    int cut = -1, pool_ok = 0;
    int64_t pool_n_out = 0;
    if (plan.work) {
        const int64_t valid = row->valid;
        bool use_pool = plan.use_pool, validate = plan.validate;
        const int64_t pool_n = plan.pool_n;
        const uint32_t lo_q = plan.lo_q;
        /* a warp searches at most heavy_n buffered keys, never the row (README, "Past B =
         * #SMs": a missed row is read in full at every pass, 16 times wider by a block) */
        if (G == 32 && (!use_pool || pool_n > a.heavy_n))
            return list_heavy(a, r, tid);
        pool_n_out = pool_n;
        const bool in_win = plan.in_win;
        /* fused, not the window: other CTAs of this kernel gathered the buffer */
        const Src pool_src = { a.fuse && !in_win ? 3 : 0, pool_keys(a, r, in_win), nullptr,
                               pool_n };
        const Src row_src = { 1, nullptr, x, V };
        const int sort = a.search == QRITA_SORT;
        const int max_iter = a.max_iter;
        /* search=sort: qr_sort_keys and the segmented sort left the candidates above lo_q
         * sorted in descending order */
        const uint32_t *sorted = sort ? a.sort_out + r * V : nullptr;
        const int64_t n_sorted = sort ? a.sort_end[r] - r * V : 0;
        rs.sorted = n_sorted;
        const int pivots = a.pivots, dedup = a.dedup == QRITA_ON;
        struct qrita_measure weight = { 0, tkp_key_value(max_key) };
        struct qrita_boundary b;
        int64_t iters;
        Eng e;
        for (;;) {
            iters = 0;
            const Src src = use_pool ? pool_src : row_src;
            const struct qrita_query q = { lo_q, max_key, weight, 0, valid, qrita_all_valid() };
            bool failed = false;
            b = search_attempt<G, CAP, E>(e, src, q, total, plan, ks, p, validate, sort, sorted,
                                          n_sorted, pivots, max_iter, dedup, tid, iters, failed,
                                          pool, gcnt, sm);
            if (!failed)
                break;
            if (G == 32) /* the buffer did not provably hold the answer: a block searches */
                return list_heavy(a, r, tid);
            use_pool = false; /* ... the row */
            validate = false;
        }
        rs.iterations = sort ? 0 : iters;
        bkey = b.key;
        pool_ok = use_pool ? 1 + in_win : 0;
        cut = boundary_cut<G, E>(a, r, x, b, use_pool, in_win, pool_src.kind == 3, pool_n, g,
                                 tid, sm);
    }
    if (tid == 0) {
        row->bkey = bkey;
        row->cut = cut;
        row->pool_ok = (unsigned)pool_ok;
        row->pool_n = (unsigned)pool_n_out;
        a.rstat[r] = rs;
    }
}

/* The warm-up row (r = batch, past the batch's rows in every per-row array): WARM_N distinct
 * keys of a truncation hit (the buffer complete, its mass the row's). Reads only inputs and
 * writes only that row, as long as the buffer holds WARM_N keys (V >= WARM_N: the caller
 * checks; else the search would read the row, past the logits). */
__device__ __forceinline__ void warm_up_row(const qr_args &a)
{
    const int t = threadIdx.x;
    const float top = 8.0f, step = 0.5f;
    uint32_t *keys = a.keys + a.batch * a.pitch, *idx = a.idx + a.batch * a.pitch;
    qr_row *row = a.rows + a.batch;
    if (t < 32) {
        const uint32_t key = t < WARM_N ? tkp_order_key(top - step * (float)t) : 0u;
        const u64 w = warp_sum_u64(t < WARM_N ? tkp_weight(top - step * (float)t, top) : 0u);
        if (t < WARM_N) {
            keys[t] = key;
            idx[t] = (uint32_t)t;
        }
        if (t == 0) {
            const uint32_t low = tkp_order_key(top - step * (float)WARM_N);
            row->valid = (unsigned)a.vocab;
            row->gathered = row->gathered2 = row->pooled = WARM_N;
            row->pool_win = 0;
            row->max_key = tkp_order_key(top);
            row->inv_min = ~low;
            row->trunc_key = row->lo2 = row->gather_key = low;
            row->k_trunc = 0;
            row->flags = 3;
            row->total = row->above = w;
        }
    }
    __syncthreads();
}

#endif
