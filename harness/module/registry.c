/* registry.c — every algorithm module, in one NULL-terminated list, and the helpers of the
 * contract that read a module's table (algos/tkp.h: backends, implementations, version).
 * Adding a module means one folder under algos/ and one line here (docs/DESIGN.md, "Adding a
 * module"). The peers have their own list in peers.c. */
#include <string.h>

#include "../algos/tkp.h"

extern const struct tkp_algo tkp_algo_naive_sort, tkp_algo_rtopk, tkp_algo_qrita, tkp_algo_cake,
    tkp_algo_rejection;

const struct tkp_algo *const tkp_algos[] = {
    &tkp_algo_naive_sort, &tkp_algo_rtopk, &tkp_algo_qrita, &tkp_algo_cake, &tkp_algo_rejection,
    NULL,
};

const struct tkp_algo *tkp_algo_find(const char *name)
{
    for (int i = 0; tkp_algos[i]; i++)
        if (strcmp(tkp_algos[i]->name, name) == 0)
            return tkp_algos[i];
    for (int i = 0; tkp_peers[i]; i++)
        if (strcmp(tkp_peers[i]->name, name) == 0)
            return tkp_peers[i];
    return NULL;
}

unsigned tkp_algo_backends(const struct tkp_algo *a)
{
    if (a->flags & TKP_PEER)
        return a->peer_backends;
    return (a->cpu ? (unsigned)TKP_CPU : 0u) | (a->gpu ? (unsigned)TKP_GPU : 0u);
}

const struct tkp_impl *tkp_algo_impl(const struct tkp_algo *a, enum tkp_backend b)
{
    return b == TKP_GPU ? a->gpu : b == TKP_CPU ? a->cpu : NULL;
}

int tkp_algo_check_abi(const struct tkp_algo *a, struct tkp_error *err)
{
    if (a->abi == TKP_ABI)
        return TKP_OK;
    tkp_error_set(err, "module %s was written for contract version (abi) %d, but this harness "
                  "implements version %d (algos/tkp.h, TKP_ABI): update the module",
                  a->name, a->abi, (int)TKP_ABI);
    return TKP_EINVAL;
}
