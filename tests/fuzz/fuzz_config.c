/* fuzz_config.c — libFuzzer target for the Lua config loader (harness/config/config.c,
 * tkp_config_load): the input is a config's text; any outcome but a crash, a sanitizer
 * report or a hang is fine. Built by `make fuzz` (docs/USAGE.md, "Robustness checks"). */
#include "plan.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(data, size, ".lua");
    if (!path)
        return 0;
    struct tkp_plan plan;
    struct tkp_error err = { { 0 } };
    if (tkp_config_load(path, TKP_CPU, &plan, &err) == TKP_OK)
        tkp_plan_free(&plan);
    unlink(path);
    return 0;
}
