/* run_record.h — the provenance of every `topkp run` into a results file (README, "Results"):
 * /runs/<n> holds one run's commit, binary id, config hash, host, device, start and end times,
 * command line, the first row each sweep of its plan appended and each ablation's baseline and
 * variant order ("ablation:<sweep>" = "<baseline>/<variants in order>"). `--resume` compares the
 * config and the binary with the file's and refuses another one unless --force, which records
 * the new config's text beside that run. */
#ifndef TKP_RUN_RECORD_H
#define TKP_RUN_RECORD_H

#include "../algos/tkp.h"
#include "plan.h"
#include "results.h"

struct tkp_run_identity {
    char commit[128];     /* the build's git commit, "+dirty" when the tree was */
    char binary_id[32];   /* CRC-32 of this executable's bytes */
    char config_hash[32]; /* CRC-32 of the names and texts of the Lua files the plan loaded */
};

void tkp_run_identity_of(const struct tkp_plan *plan, struct tkp_run_identity *id);

/* Before --resume appends: the file's config (its /config texts) and binary (binary_id, or
 * git_commit in files written before binary ids) against this run's; TKP_EINVAL with a message
 * naming what differs, unless `force`. */
int tkp_run_check_resume(struct tkp_results *r, const char *path, const struct tkp_plan *plan,
                         const struct tkp_run_identity *id, int force, struct tkp_error *err);

/* Append /runs/<n> for this run (and, on a `fresh` file, the root config_hash and binary_id;
 * a file written before run records starts its /runs at its first resume); returns n, or -1
 * when the file cannot take it. */
int tkp_run_record_begin(struct tkp_results *r, const struct tkp_plan *plan,
                         const struct tkp_run_identity *id, enum tkp_backend backend, int fresh,
                         int forced, int argc, char **argv);

/* The run's end time into /runs/<n>. */
void tkp_run_record_end(struct tkp_results *r, int n);

#endif
