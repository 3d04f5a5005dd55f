/* shard.h — `topkp run CONFIG --shard I/N` (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"): a
 * deterministic 1/N of a plan, balanced by expected cost, and what a shard file records so
 * that `topkp merge` (merge.h) can check that the shards of a plan are all there, once each:
 * root attributes `shard` ("I/N"), `shard_index`, `shard_count`, `plan_cells`, `plan_hash`,
 * `shard_cells`, and /plan, one row per cell of the whole plan (sweep, key, algo, variant, its
 * shard, its cost). The assignment depends on the plan and N only. */
#ifndef TKP_SHARD_H
#define TKP_SHARD_H

#include <stdint.h>

#include "plan.h"
#include "results.h"

struct tkp_shard {
    int index, count; /* count 0: the whole plan, no shard */
};

/* "I/N" with 0 <= I < N and 1 <= N <= TKP_SHARD_MAX; a usage message naming the value
 * otherwise. */
#define TKP_SHARD_MAX 100000
int tkp_shard_parse(const char *spec, struct tkp_shard *s, struct tkp_error *err);

/* A cell's expected cost: the bytes of its logits (batch x vocab x element bytes). */
double tkp_cell_cost(const struct tkp_cell *c);

/* The shard of every cell of the plan, owner[i] in [0, n): longest first over the plan's order
 * (cost descending, ties in plan order), each to the least loaded shard (ties to the lower
 * index). No shard costs more than the mean plus the largest cell's cost. */
int tkp_shard_assign(const struct tkp_plan *plan, int n, int *owner, struct tkp_error *err);

/* One row of /plan. */
struct tkp_plan_entry {
    char sweep[64], key[TKP_RESULT_KEY_BYTES], algo[32], variant[64];
    int64_t shard;
    double cost;
};
/* The compound type of /plan's rows (an hid_t; the caller closes it). */
int64_t tkp_plan_entry_type(void);

/* The whole plan (before the shard cut) as the merge sees it. */
struct tkp_shard_plan {
    struct tkp_plan_entry *entries; /* owned, one per cell of the whole plan */
    size_t n;
    char hash[16]; /* CRC-32 of the cells' sweeps and keys in plan order */
    size_t shard_cells;
};
void tkp_shard_plan_free(struct tkp_shard_plan *sp);

/* With a shard (s->count > 0): describe the whole plan into sp (every cell's key on `backend`)
 * and keep only shard s's cells in the plan. Without one, sp stays empty. */
int tkp_shard_cut(struct tkp_plan *plan, const struct tkp_shard *s, enum tkp_backend backend,
                  struct tkp_shard_plan *sp, struct tkp_error *err);

/* --resume: the file's shard spec and plan must be this run's (even with --force: a shard file
 * of another spec could not be merged); TKP_EINVAL naming both otherwise. */
int tkp_shard_check_resume(struct tkp_results *r, const char *path, const struct tkp_shard *s,
                           const struct tkp_shard_plan *sp, struct tkp_error *err);

/* Record where this run ran: on /runs/<run> `shard` and `device_index` (-1: not chosen), on a
 * `fresh` file the root attributes of shard.h's top comment and `device_index`, and /plan when
 * a shard file lacks it. Non-zero when a write failed. */
int tkp_shard_record(struct tkp_results *r, int run, int fresh, const struct tkp_shard *s,
                     const struct tkp_shard_plan *sp, int device);

#endif
