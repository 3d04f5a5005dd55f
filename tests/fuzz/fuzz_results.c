/* fuzz_results.c — libFuzzer target for the results readers behind `topkp export`, `topkp
 * info`, `topkp compare` and `run --resume` (harness/store/export.c, compare.c and
 * results_open.c: tkp_results_export, tkp_results_info, tkp_compare_files of the file with
 * itself, tkp_results_open with resume): the input is a results file's bytes (seeds under tests/fuzz/corpus/results/: a tiny `topkp run` from before
 * the tables were deflated, and its `h5repack -f GZIP=6` copy, whose chunks inflate). The text
 * goes to /dev/null. Built by `make fuzz` (docs/USAGE.md, "Robustness checks"). */
#include "compare.h"
#include "results.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    const char *path = fuzz_write_file(data, size, ".h5");
    if (!path)
        return 0;
    struct tkp_error err = { { 0 } };
    tkp_results_export(path, NULL, sink, &err);
    tkp_results_info(path, sink, &err);
    tkp_compare_files(path, path, NULL, 0.1, sink, &err);
    struct tkp_results *r;
    if (tkp_results_open(&r, path, 1, &err) == TKP_OK)
        tkp_results_close(r);
    unlink(path);
    return 0;
}
