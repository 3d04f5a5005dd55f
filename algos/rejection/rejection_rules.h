/* rejection_rules.h — the decisions of the dual-pivot rejection sampler that the CPU reference
 * (rejection.c) and the CUDA kernel (rejection_gpu.cu) take identically, written once as
 * host-and-device code (TKP_HD): positions and pivots, the second pivot, the kept-set test, and
 * the per-row limits derived from (k, p, #valid). README.md here explains each rule. */
#ifndef REJECTION_RULES_H
#define REJECTION_RULES_H

#include <stdint.h>

#include "../common/hd.h"
#include "../common/prob.h"

/* A pivot is a 64-bit position in the canonical order: a token's position is
 * (~order_key << 32) | index, so a smaller position comes first. The candidate set of a
 * pivot P is every valid token whose position is < P. REJ_END is past every valid token
 * (invalid tokens have order key 0, so they sit at REJ_END and beyond). */
#define REJ_END ((uint64_t)0xFFFFFFFFu << 32)
/* Radix select of the k-th order key: 8-bit digits, most significant first. */
#define REJ_DIGIT_BITS 8
#define REJ_DIGIT_PASSES (32 / REJ_DIGIT_BITS)
/* No top-k limit. */
#define REJ_NO_LIMIT INT64_MAX

TKP_HD uint64_t rej_pos(uint32_t key, int64_t index)
{
    return (uint64_t)(uint32_t)~key << 32 | (uint64_t)index;
}

/* The value of the tokens at a position (the inverse of the order key). */
TKP_HD float rej_pos_value(uint64_t pos) { return tkp_key_value(~(uint32_t)(pos >> 32)); }

/* A token is in the top-k set iff fewer than this many tokens come before it. */
TKP_HD int64_t rej_k_limit(int32_t k, int64_t vocab, int64_t valid)
{
    return tkp_topk_on(k, vocab) && (int64_t)k < valid ? (int64_t)k : REJ_NO_LIMIT;
}

/* Does this row start from its top-k set (top-k on with k < #valid, with or without top-p)?
 * The first candidate set is then every token with a key >= the k-th one, found by radix
 * select; with top-p, its mass also gives the target. */
TKP_HD int rej_starts_at_kth(int64_t k_limit, int64_t valid) { return k_limit < valid; }

/* Does this row start from the mass floor (top-p alone: top-p on, no top-k limit)? */
TKP_HD int rej_from_mass_floor(float p, int64_t k_limit)
{
    return tkp_topp_on(p) && k_limit == REJ_NO_LIMIT;
}

/* GPU only (the launch shape, not a decision of the draws; README.md, "The k-th key from pass
 * 1's list"): the first chunk of a row whose k-th key is selected from pass 1's big list, in
 * tokens. Its k-th key sets the bound of the list, a lower bound of the row's k-th key, so
 * the list holds about k * vocab / chunk tokens: `step` (a whole number of the kernel's steps)
 * times ceil(k / 256), at most 4 times, and less than the row. */
TKP_HD int rej_list_chunk(int32_t k, int64_t vocab, int step)
{
    int64_t m = ((int64_t)k + 255) / 256;
    m = m < 1 ? 1 : m > 4 ? 4 : m;
    while (m > 1 && m * step >= vocab)
        m--;
    return (int)(m * step);
}

/* Would a token at a pivot with `count` tokens of fixed mass `mass` before it be kept?
 * (docs/SEMANTICS.md: in the top-k set, and first or with the mass before it below the top-p
 * target.) Monotone: once false at a pivot, false at every later one. */
TKP_HD int rej_kept(int64_t count, uint64_t mass, int64_t k_limit, uint64_t target)
{
    return count < k_limit && (count == 0 || mass < target);
}

/* What one pass learns about a pivot: the tokens before it and their fixed mass. */
struct rej_tally {
    int64_t count;
    uint64_t mass;
};

/* One round's verdict, given the tallies at the candidate's position pc and at the second
 * pivot p1: 1 when the candidate is kept (the draw is accepted); otherwise 0, with the
 * candidate set (lo, mass) and the kept bound hi narrowed the dual-pivot way. */
TKP_HD int rej_round_verdict(struct rej_tally tc, struct rej_tally t1, uint64_t pc, uint64_t p1,
                             int64_t k_limit, uint64_t target, uint64_t *lo, uint64_t *hi,
                             uint64_t *mass)
{
    if (rej_kept(tc.count, tc.mass, k_limit, target))
        return 1;
    if (rej_kept(t1.count, t1.mass, k_limit, target)) {
        *hi = p1;
        *lo = pc;
        *mass = tc.mass;
    } else {
        *lo = p1;
        *mass = t1.mass;
    }
    return 0;
}

/* The second pivot, strictly between the kept bound `hi` and the rejected candidate at `pc`
 * whenever such a position exists: the value halfway between theirs (all tokens above it),
 * or, when no float lies strictly between, the midpoint of the two positions (which halves
 * the index range of a run of equal values). Both sides compile without FMA contraction
 * (-ffp-contract=off, -fmad=false), so the midpoint rounds the same. */
TKP_HD uint64_t rej_second_pivot(uint64_t hi, uint64_t pc)
{
    float mid = 0.5f * rej_pos_value(pc) + 0.5f * rej_pos_value(hi);
    uint64_t pm = rej_pos(tkp_order_key(mid), 0);
    if (pm > hi && pm < pc)
        return pm;
    return hi + (pc - hi) / 2;
}

#endif
