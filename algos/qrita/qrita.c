/* qrita.c — placeholder registration: the module is not implemented yet, and says so through
 * supports() so that nothing fake is ever produced. */
#include "../tkp.h"

static const struct tkp_option qrita_options[] = { { NULL } };

static int qrita_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)pb;
    (void)opts;
    *why = "qrita: not implemented";
    return 0;
}

const struct tkp_algo tkp_algo_qrita = {
    .abi = TKP_ABI,
    .name = "qrita",
    .summary = "not implemented",
    .flags = TKP_NOT_IMPLEMENTED,
    .options = qrita_options,
    .opts_size = sizeof(int),
    .state_size = sizeof(int),
    .supports = qrita_supports,
};
