/* plan.c — what a planned cell says of itself (plan.h): the name of its filter mode, as the
 * results' `mode` column and the plan lines print it (docs/RESULTS.md, "Results"), and its key, the
 * column --resume, shards and merges know it by (results_row.h). */
#include <stdio.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "axes.h"
#include "plan.h"
#include "results_row.h"

const char *tkp_mode_name(int32_t k, float p, int64_t vocab)
{
    int topk = tkp_topk_on(k, vocab), topp = tkp_topp_on(p);
    return topk && topp ? "topk_topp" : topk ? "topk" : topp ? "topp" : "none";
}

/* The key of a cell: `identity` itself when it fits the key column with room to spare, else
 * a prefix, '#' and the FNV-1a 64-bit hash of the whole identity. Short keys are exactly the
 * identity (as older files have them); long keys are all exactly KEY_BYTES - 1 long, so no
 * long key equals a short one, and two long identities share a key only if their hashes
 * collide. */
void tkp_results_key(const char *identity, char key[TKP_RESULT_KEY_BYTES])
{
    const size_t len = strlen(identity), room = TKP_RESULT_KEY_BYTES - 1;
    if (len < room) {
        memcpy(key, identity, len + 1);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a offset basis */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)identity[i];
        h *= 0x100000001b3ULL; /* FNV prime */
    }
    const size_t prefix = room - 1 - TKP_RESULT_KEY_HASH_HEX;
    memcpy(key, identity, prefix);
    snprintf(key + prefix, TKP_RESULT_KEY_BYTES - prefix, "#%016llx", (unsigned long long)h);
}

/* The whole identity of a cell (algorithm, variant, options, the axes of axes.c: dataset, V,
 * B, k, p, draws, seed, and dtype unless f32; backend), never cut: tkp_results_key above turns a long one
 * into a prefix and a hash. */
static void cell_identity(const struct tkp_cell *c, enum tkp_backend backend, char *buf, size_t n)
{
    snprintf(buf, n, "%s|%s|%s", c->algo->name, c->variant, c->options);
    tkp_axes_append(c, TKP_AXES_KEY, buf, n);
    snprintf(buf + strlen(buf), n - strlen(buf), "|%s", backend == TKP_GPU ? "gpu" : "cpu");
}

void tkp_cell_key(const struct tkp_cell *c, enum tkp_backend backend,
                  char key[TKP_RESULT_KEY_BYTES])
{
    char identity[sizeof c->variant + sizeof c->options + sizeof c->dataset + 512];
    cell_identity(c, backend, identity, sizeof identity);
    tkp_results_key(identity, key);
}
