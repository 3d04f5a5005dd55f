/* rtopk.c — placeholder registration: the module is not implemented yet, and says so through
 * supports() so that nothing fake is ever produced. */
#include "../tkp.h"

static const struct tkp_option rtopk_options[] = { { NULL } };

static int rtopk_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)pb;
    (void)opts;
    *why = "rtopk: not implemented";
    return 0;
}

const struct tkp_algo tkp_algo_rtopk = {
    .abi = TKP_ABI,
    .name = "rtopk",
    .summary = "not implemented",
    .flags = TKP_NOT_IMPLEMENTED,
    .options = rtopk_options,
    .opts_size = sizeof(int),
    .state_size = sizeof(int),
    .supports = rtopk_supports,
};
