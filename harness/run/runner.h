/* runner.h — `topkp run`: execute a plan cell by cell, time each, verify a sample of rows
 * against the oracle, append one results row per cell (flushed) and print progress. */
#ifndef TKP_RUNNER_H
#define TKP_RUNNER_H

#include "plan.h"
#include "shard.h"

struct tkp_run_args {
    const char *config, *output;
    enum tkp_backend backend;
    int resume, dry_run;
    int force; /* --force: resume even with another config or binary (recorded under /runs) */
    const char *only; /* --only A,B: run the cells of these algorithms only (NULL: all) */
    const char *sweeps; /* --sweep S,T: run the cells of these sweeps only (NULL: all) */
    struct tkp_shard shard; /* --shard I/N (count 0: the whole plan; shard.h) */
    int device;             /* --device D, already made current (-1: not given) */
    int argc;
    char **argv;
};

/* Returns 0 when every cell was recorded (whatever its status), non-zero on a fatal error. */
int tkp_run(const struct tkp_run_args *args, struct tkp_error *err);

/* Print the plan, one cell a line, without running it. */
void tkp_plan_print(const struct tkp_plan *plan, FILE *out);

#endif
