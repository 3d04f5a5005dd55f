/* merge_shards.h — the reading half of `topkp merge` (merge.h), private to merge.c: open the
 * shard files, check that they belong together, index the plan they share (/plan, shard.h)
 * and check that their rows cover it, each cell once. */
#ifndef TKP_MERGE_SHARDS_H
#define TKP_MERGE_SHARDS_H

#include <hdf5.h>

#include "results.h"
#include "shard.h"

struct merge_file {
    const char *path;
    hid_t f;
    int fd; /* holds flock(LOCK_SH): no run writes the file while it is merged */
    struct tkp_shard s;
    char config_hash[32], binary_id[32], plan_hash[32], start[64], end[64];
    int runs, run_offset; /* its /runs records, and where they go in the merged /runs */
};

struct merge_set {
    struct merge_file *files; /* by shard index */
    int n;
    struct tkp_plan_entry *plan; /* the first file's /plan */
    size_t n_plan;
    size_t *by_key; /* plan positions sorted by (sweep, key) */
    int *held;      /* per plan position: 1 + the file holding it, 0 when none */
    char (*sweeps)[64]; /* the plan's sweeps in plan order */
    size_t n_sweeps;
};

/* Open every shard (merge.c calls it in a guarded child: a corrupt file crashing libhdf5 is
 * an error naming it) and check that they share config, binary, N and plan, once per shard index. */
int merge_open(struct merge_set *m, const char *const *paths, int n, struct tkp_error *err);
void merge_close(struct merge_set *m);
/* Every row of every file in the plan and in its own shard; every cell held; the missing and
 * doubled cells listed on stderr. */
int merge_check(struct merge_set *m, struct tkp_error *err);
/* The rows of /sweeps/<sweep>/cells of file f (*n = 0 when it has none); the caller frees. */
int merge_read_rows(const struct merge_file *f, const char *sweep, struct tkp_cell_row **rows,
                    size_t *n, struct tkp_error *err);
/* Where (sweep, key) first comes in by_key (its plan position: by_key[that]), or (size_t)-1. */
size_t merge_find(const struct merge_set *m, const char *sweep, const char *key);

#endif
