/* rejection.c — placeholder registration: the module is not implemented yet, and says so through
 * supports() so that nothing fake is ever produced. */
#include "../tkp.h"

static const struct tkp_option rejection_options[] = { { NULL } };

static int rejection_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)pb;
    (void)opts;
    *why = "rejection: not implemented";
    return 0;
}

const struct tkp_algo tkp_algo_rejection = {
    .abi = TKP_ABI,
    .name = "rejection",
    .summary = "not implemented",
    .flags = TKP_NOT_IMPLEMENTED,
    .options = rejection_options,
    .opts_size = sizeof(int),
    .state_size = sizeof(int),
    .supports = rejection_supports,
};
