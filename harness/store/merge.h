/* merge.h — `topkp merge OUT.h5 SHARD.h5...` (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"):
 * the shard files of one plan (`topkp run --shard I/N`) into one results file that every reader
 * (export, compare, info, figures, the paper, --resume) reads as if one run had made it. The
 * shards must share their config (config_hash), binary (binary_id), N and plan (plan_hash);
 * every cell of the plan must be in exactly one of them (missing and doubled cells are listed:
 * sweep, algo, variant, key). The shards are read and OUT's temporary written in a guarded child
 * (read_guard.h), so a damaged shard is an error naming it; OUT is written as out_file.h says:
 * never over an input, over an existing OUT only with force and when no run holds it. */
#ifndef TKP_MERGE_H
#define TKP_MERGE_H

#include "../algos/tkp.h"

struct tkp_merge_args {
    const char *out;
    const char *const *shards;
    int n_shards;
    int force;
    int argc; /* the command line, recorded in OUT */
    char **argv;
};

int tkp_merge(const struct tkp_merge_args *a, struct tkp_error *err);

#endif
