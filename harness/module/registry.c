/* registry.c — every algorithm module, in one NULL-terminated list, and the helpers of the
 * contract that read a module's table (algos/tkp.h: backends, implementations, version,
 * statistics). Adding a module means one folder under algos/ and one line here
 * (docs/DESIGN.md, "The module table"). The peers have their own list in peers.c. */
#include <string.h>

#include "../algos/tkp.h"
#include "peers.h"

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
        if (strcmp(tkp_peers[i]->algo.name, name) == 0)
            return &tkp_peers[i]->algo;
    return NULL;
}

const struct tkp_peer *tkp_peer_of(const struct tkp_algo *a)
{
    return a && (a->flags & TKP_PEER) ? (const struct tkp_peer *)a : NULL;
}

int tkp_peer_bridged(const struct tkp_algo *a)
{
    const struct tkp_peer *peer = tkp_peer_of(a);
    return peer && !peer->native;
}

unsigned tkp_algo_backends(const struct tkp_algo *a)
{
    const struct tkp_peer *peer = tkp_peer_of(a);
    if (peer)
        return peer->backends;
    return (a->cpu ? (unsigned)TKP_CPU : 0u) | (a->gpu ? (unsigned)TKP_GPU : 0u);
}

const struct tkp_impl *tkp_algo_impl(const struct tkp_algo *a, enum tkp_backend b)
{
    return b == TKP_GPU ? a->gpu : b == TKP_CPU ? a->cpu : NULL;
}

int tkp_algo_check_abi(const struct tkp_algo *a, struct tkp_error *err)
{
    if (a->abi >= TKP_ABI_OLDEST && a->abi <= TKP_ABI)
        return TKP_OK;
    if (a->abi > TKP_ABI)
        tkp_error_set(err, "module %s was written for contract version (abi) %d, newer than "
                      "this harness's version %d (algos/tkp.h, TKP_ABI): update topkp", a->name,
                      a->abi, (int)TKP_ABI);
    else
        tkp_error_set(err, "module %s was written for contract version (abi) %d, older than "
                      "the oldest this harness (version %d) loads, %d (algos/tkp.h, "
                      "TKP_ABI_OLDEST): update the module", a->name, a->abi, (int)TKP_ABI,
                      (int)TKP_ABI_OLDEST);
    return TKP_EINVAL;
}

unsigned tkp_impl_dtypes(const struct tkp_algo *a, const struct tkp_impl *impl)
{
    return impl && a->abi >= TKP_ABI_DTYPES ? impl->dtypes : 0u;
}

const struct tkp_stat *tkp_algo_statistics(const struct tkp_algo *a)
{
    return a && a->abi >= TKP_ABI_STATISTICS ? a->statistics : NULL;
}

int tkp_algo_stat_count(const struct tkp_algo *a)
{
    const struct tkp_stat *s = tkp_algo_statistics(a);
    int n = 0;
    while (s && s[n].name)
        n++;
    return n;
}

int tkp_algo_stat_index(const struct tkp_algo *a, const char *name)
{
    const struct tkp_stat *s = tkp_algo_statistics(a);
    for (int i = 0; s && i < TKP_MAX_STATS && s[i].name; i++)
        if (strcmp(s[i].name, name) == 0)
            return i;
    return -1;
}

size_t tkp_stat_union(const char *const *first, size_t n_first, const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < n_first; i++)
        if (n++ < cap)
            names[n - 1] = first[i];
    for (int m = 0; tkp_algos[m]; m++)
        for (const struct tkp_stat *st = tkp_algo_statistics(tkp_algos[m]); st && st->name; st++) {
            int seen = 0;
            for (size_t i = 0; i < n && i < cap && !seen; i++)
                seen = strcmp(names[i], st->name) == 0;
            if (!seen && n++ < cap)
                names[n - 1] = st->name;
        }
    return n;
}
