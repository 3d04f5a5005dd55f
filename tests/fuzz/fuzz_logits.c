/* fuzz_logits.c — libFuzzer target for the logits reader (harness/store/logits_file.c,
 * tkp_logits_read): the input is an HDF5 file's bytes (seeds: `topkp gen` outputs under
 * tests/fuzz/corpus/logits/). Built by `make fuzz` (docs/USAGE.md, "Robustness checks"). */
#include "logits_file.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(data, size, ".h5");
    if (!path)
        return 0;
    struct tkp_batch b = { 0 };
    struct tkp_error err = { { 0 } };
    if (tkp_logits_read(path, 0, 1.0f, &b, &err) == TKP_OK)
        tkp_batch_free(&b);
    unlink(path);
    return 0;
}
