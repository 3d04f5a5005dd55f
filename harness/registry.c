/* registry.c — every algorithm module, in one NULL-terminated list. Adding a module means one
 * folder under algos/ and one line here. The peers have their own list in peers.c. */
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
