/* multi_gpu.c — see multi_gpu.h. */
#include "multi_gpu.h"

int tkp_run_multi(const struct tkp_run_args *a, const struct tkp_multi_args *m,
                  struct tkp_error *err)
{
    (void)a, (void)m;
    tkp_error_set(err, "--gpus and --workers are not built yet");
    return TKP_EINVAL;
}
