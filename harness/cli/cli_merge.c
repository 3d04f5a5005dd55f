/* cli_merge.c — `topkp merge OUT.h5 SHARD.h5... [--force]` (merge.h; docs/CLUSTERS.md, "Sweeps
 * across GPUs and hosts"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "merge.h"

const char MERGE_USAGE[] =
    "usage: topkp merge OUT.h5 SHARD.h5... [--force]\n"
    "\n"
    "Joins the shard files of one plan (topkp run CONFIG --shard I/N -o SHARD.h5, one per I)\n"
    "into OUT.h5, which export, compare, info, the figures, the paper and --resume read as if\n"
    "one run had made it. The shards must come from the same config and binary and the same\n"
    "N; every cell of the plan must be in exactly one of them: missing and doubled cells are\n"
    "listed (sweep, algo, variant, key) and nothing is written. Resume an incomplete shard\n"
    "with topkp run CONFIG --shard I/N -o SHARD.h5 --resume, then merge again. OUT.h5 is\n"
    "written as OUT.h5.partial and renamed.\n"
    "\n"
    "  --force             overwrite an existing OUT.h5 (never one of the shards)\n";

int cmd_merge(int argc, char **argv)
{
    const char **shards = calloc((size_t)argc + 1, sizeof *shards);
    struct tkp_merge_args a = { .shards = shards, .argc = argc + 2, .argv = argv - 2 };
    if (!shards)
        return fail("merge", "out of host memory");
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--force") == 0)
            a.force = 1;
        else if (argv[i][0] == '-' && argv[i][1]) {
            free(shards);
            return bad_arg("merge", argv[i]);
        } else if (!a.out)
            a.out = argv[i];
        else
            shards[a.n_shards++] = argv[i];
    }
    int rc = !a.out ? missing("merge", "no OUT.h5 given")
             : a.n_shards == 0 ? missing("merge", "no SHARD.h5 given")
                               : -1;
    struct tkp_error err = { "" };
    if (rc < 0)
        rc = tkp_merge(&a, &err) ? fail("merge", err.msg) : 0;
    free(shards);
    return rc;
}
