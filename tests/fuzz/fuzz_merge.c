/* fuzz_merge.c — libFuzzer target for `topkp merge` (harness/store/merge.c, tkp_merge): the
 * input is a shard file's bytes (seeds under tests/fuzz/corpus/merge/: shard 0/1 and 1/2 of a
 * tiny plan), merged alone and with a copy of itself, so that the shard record, the /plan index, the
 * rows, the samples and the copied /runs are all read. Built by `make fuzz` (docs/USAGE.md,
 * "Robustness checks"). */
#include <stdio.h>
#include <string.h>

#include "merge.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(data, size, ".h5");
    if (!path)
        return 0;
    char out[600], copy[600];
    snprintf(out, sizeof out, "%s.merged.h5", path);
    snprintf(copy, sizeof copy, "%s.copy.h5", path);
    FILE *f = fopen(copy, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    const char *shards[2] = { path, copy };
    char *argv[] = { "topkp", "merge", NULL };
    for (int n = 1; n <= 2; n++) {
        const struct tkp_merge_args a = { out, shards, n, 1, 2, argv };
        struct tkp_error err = { { 0 } };
        tkp_merge(&a, &err);
        unlink(out);
    }
    unlink(copy);
    unlink(path);
    return 0;
}
