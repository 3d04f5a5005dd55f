/* test_make_run.c — `make run`'s plan (make -n: nothing is built or run) on a machine with
 * nvcc and no GPU: a parallel CPU-only build in its own folder, no CUDA object, unless GPU=1
 * asks for the kernels (README.md, "Set-up: two commands on a fresh machine"). Skipped where
 * nvcc is absent (nothing to leave out) or a GPU answers. */
#include <string.h>

#include "cli_util.h"
#include "test.h"

/* make -n in the repository root, without the make that may have started the suite nor the
 * variables it exports to the suite (`make SAN=1 test` exports SAN, which means CPU-only). */
static int plan(char *out, size_t n, const char *args)
{
    return run_cmd(out, n,
                   "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN -u FUZZ -u CPU_ONLY -u BUILD "
                   "make -n run %s", args);
}

TEST(make_run_builds_no_cuda_objects_in_parallel_without_a_gpu)
{
    static char out[1 << 18];
    if (run_cmd(out, sizeof out, "command -v nvcc && command -v make") != 0) {
        test_skip("no nvcc here: every build is CPU-only");
        return;
    }
    if (run_cmd(out, sizeof out, "nvidia-smi -L") == 0) {
        test_skip("a GPU answers: make run builds the kernels");
        return;
    }
    REQUIRE(plan(out, sizeof out, "") == 0, "make -n run failed (run from the repository root): %s",
            out);
    CHECK(!strstr(out, "nvcc"), "make run plans nvcc on a machine without a GPU: %s", out);
    CHECK(strstr(out, " -j") && strstr(out, "BUILD=build/cpu CPU_ONLY=1 all"),
          "make run does not build CPU-only in parallel in build/cpu: %s", out);
    CHECK(strstr(out, "build/cpu/topkp run configs/quick.lua"), "make run runs another binary: %s",
          out);
    REQUIRE(plan(out, sizeof out, "GPU=1") == 0, "make -n run GPU=1 failed: %s", out);
    CHECK(strstr(out, "nvcc") && !strstr(out, "build/cpu"),
          "make run GPU=1 does not plan the CUDA build in build/: %.2000s", out);
}
