/* qrita_gpu_row_plan.cuh — where row r's boundary search looks (row_plan), from what the
 * streaming kernels left in its qr_row: shared by the search (qrita_gpu_boundary.cuh) and by
 * search=sort's qr_sort_keys, so that both take the same candidates. */
#ifndef QRITA_GPU_ROW_PLAN_CUH
#define QRITA_GPU_ROW_PLAN_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu.h"
#include "qrita_gpu_minp.cuh"
#include "qrita_gpu_types.cuh"

/* Where row r's boundary search looks, from what the streaming kernels left in its row: the
 * CPU's truncation verdict (its statistics), the candidates (the buffer, the window, or the
 * row) and the lower end of the CPU's query. qr_sort_keys and the search decide alike. The
 * truncation ran on kt (the row's k_trunc), the search runs on ks (with min-p folded in: kt
 * but where `late`, qrita_gpu_minp.cuh). */
struct RowPlan {
    bool work;                 /* a valid token and a filter: a boundary to find */
    int topk, topp;
    bool use_pool, validate;   /* validate: the buffer may not hold the answer (checked after) */
    bool in_win;               /* the candidates are qr_mass's window */
    int64_t pool_n;            /* entries of the buffer (or window) searched */
    uint32_t lo_q;             /* the query's lower end: every candidate key is above it */
    qrita_gpu_rstat rs;        /* the row's truncation statistics */
};

__device__ __forceinline__ RowPlan row_plan(const qr_args &a, const qr_row *row, int32_t kt,
                                            int32_t ks, float p, bool late)
{
    const int64_t V = a.vocab;
    const int64_t valid = row->valid, gathered = row->gathered;
    const uint32_t min_key = ~row->inv_min, trunc_key = row->trunc_key;
    const unsigned flags = row->flags;
    const u64 total = row->total, above = row->above;
    RowPlan pl = {};
    pl.topk = tkp_topk_on(ks, V) && ks < valid;
    pl.topp = tkp_topp_on(p);
    pl.work = valid > 0 && (pl.topk || pl.topp);
    if (!pl.work)
        return pl;
    const int truncate = (flags & 2) != 0, has = (flags & 1) != 0;
    const int topk_t = tkp_topk_on(kt, V) && kt < valid; /* the truncation's top-k */
    const bool whole = qrita_minp_whole_row(late, kt, valid);
    int hit = 0;
    if (truncate) {
        const int fits = has && gathered <= a.cap_cpu;
        hit = a.trunc == QRITA_TRUNC_AUTO && fits && !whole &&
              (topk_t ? gathered >= kt : gathered >= 1 && above >= tkp_topp_target(p, total));
        pl.rs.counted = 1;
        pl.rs.hit = hit;
        pl.rs.outliers = gathered;
        if (!topk_t && pl.topp)
            pl.rs.outlier_mass = (double)above / (double)total;
    }
    /* The buffer holds every key above gather_key when it did not overflow. Equal to the CPU's
     * buffer (gather_key = trunc_key) on a hit, it is searched as the CPU searches it.
     * Otherwise (a row the CPU searches in full, or a buffer gathered above a tighter key) the
     * CPU's query runs on it when it may hold the answer, and the result is checked afterwards
     * (README, "Buffer bound" and "Workspace"); a full buffer, or a failed check, sends the row
     * to the CPU's query over the whole row. search=sort sorts the CPU's candidates: never a
     * buffer the CPU would not search. */
    const int64_t pooled = a.tight ? row->pooled : gathered;
    const bool complete = has && pooled <= a.cap_gpu;
    const bool cpu_pool = row->gather_key == trunc_key;
    pl.use_pool = hit && cpu_pool && complete;
    pl.pool_n = pooled;
    pl.lo_q = hit ? trunc_key : min_key - 1;
    if (!pl.topk && a.trunc == QRITA_TRUNC_AUTO && !whole) {
        /* top-p alone: the buffer of qr_gather2 (or the window) holds every key above lo2
         * (the CPU's q.lo raised to the mass floor), the lower end of the CPU's search */
        pl.in_win = row->pool_win != 0;
        pl.pool_n = pl.in_win ? row->win_n : pool_word(&row->gathered2, a.fuse);
        pl.lo_q = row->lo2;
        pl.use_pool = pl.pool_n <= a.cap_gpu;
    } else if (!pl.use_pool && a.trunc == QRITA_TRUNC_AUTO && complete && pl.topk && !whole &&
               pooled > ks && a.search != QRITA_SORT) {
        pl.use_pool = true;
        pl.validate = true;
    }
    return pl;
}

/* Row r's plan for qr_sort_keys, which runs before the search folds min-p: its candidates do
 * not depend on k' (k' <= kt < valid: a top-k search either way; a whole row: the row's), so
 * it plans with kt, or with 1 in a whole row (whose search may be top-k whatever its p). */
__device__ __forceinline__ RowPlan sort_plan(const qr_args &a, int64_t r)
{
    const qr_row *row = a.rows + r;
    const int32_t kt = row->k_trunc;
    const bool late = tkp_minp_on(qr_min_p(a, r)) && tkp_topk_on(a.io.k[r], a.vocab);
    const int32_t ks = qrita_minp_whole_row(late, kt, row->valid) ? 1 : kt;
    return row_plan(a, row, kt, ks, a.io.p[r], late);
}

#endif
