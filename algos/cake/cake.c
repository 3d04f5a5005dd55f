/* cake.c — placeholder registration: the module is not implemented yet, and says so through
 * supports() so that nothing fake is ever produced. */
#include "../tkp.h"

static const struct tkp_option cake_options[] = { { NULL } };

static int cake_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)pb;
    (void)opts;
    *why = "cake: not implemented";
    return 0;
}

const struct tkp_algo tkp_algo_cake = {
    .abi = TKP_ABI,
    .name = "cake",
    .summary = "not implemented",
    .flags = TKP_NOT_IMPLEMENTED,
    .options = cake_options,
    .opts_size = sizeof(int),
    .state_size = sizeof(int),
    .supports = cake_supports,
};
