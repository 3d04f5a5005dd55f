/* plan.c — what a planned cell says of itself (plan.h): the name of its filter mode, as the
 * results' `mode` column and the plan lines print it (docs/RESULTS.md, "Results"), and its key, the
 * column --resume, shards and merges know it by (results_row.h); the rule that a plan has each
 * cell once (docs/ROBUSTNESS.md, "Duplicates"); and the options its GPU's dispatch table gives
 * it (docs/DESIGN.md, "Variants and the dispatch table"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "../algos/common/half.h"
#include "axes.h"
#include "dispatch.h"
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

/* The order of two cells of a plan by (sweep, key), then by place: qsort's context below. */
static const struct tkp_plan *dup_plan;
static char (*dup_keys)[TKP_RESULT_KEY_BYTES];

static int by_identity(const void *a, const void *b)
{
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(dup_plan->cells[i].sweep, dup_plan->cells[j].sweep);
    if (!c)
        c = strcmp(dup_keys[i], dup_keys[j]);
    return c ? c : (i > j) - (i < j);
}

/* Note one merged cell: its sweep, its line and how many times it was planned. */
static void note_merged(FILE *notes, const char *config, const struct tkp_cell *c, size_t times,
                        size_t shown)
{
    char line[512];
    snprintf(line, sizeof line, "%s%s%s", c->algo->name, c->variant[0] ? " " : "", c->variant);
    tkp_axes_append(c, TKP_AXES_PROGRESS, line, sizeof line);
    if (shown < 8)
        fprintf(notes, "note: %s: sweep '%s' plans %s %zu times (the same cell); it runs once\n",
                config, c->sweep, line, times);
    else if (shown == 8)
        fprintf(notes, "note: %s: more cells planned more than once (each runs once)\n", config);
}

size_t tkp_plan_merge_duplicates(struct tkp_plan *plan, const char *config, FILE *notes)
{
    size_t *order = malloc((plan->n + 1) * sizeof *order);
    char *drop = calloc(plan->n + 1, 1);
    dup_keys = malloc((plan->n + 1) * sizeof *dup_keys);
    size_t merged = 0, shown = 0;
    if (!order || !drop || !dup_keys) {
        free(order), free(drop), free(dup_keys);
        return 0; /* out of memory: the plan is run as it is */
    }
    for (size_t i = 0; i < plan->n; i++) {
        order[i] = i;
        tkp_cell_key(&plan->cells[i], TKP_CPU, dup_keys[i]); /* one backend: the same rule */
    }
    dup_plan = plan;
    qsort(order, plan->n, sizeof *order, by_identity);
    for (size_t a = 0, b; a < plan->n; a = b) {
        for (b = a + 1; b < plan->n &&
                        strcmp(plan->cells[order[a]].sweep, plan->cells[order[b]].sweep) == 0 &&
                        strcmp(dup_keys[order[a]], dup_keys[order[b]]) == 0;
             b++)
            drop[order[b]] = 1; /* the first in plan order stays */
        if (b - a > 1 && notes)
            note_merged(notes, config, &plan->cells[order[a]], b - a, shown++);
    }
    size_t kept = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (drop[i]) {
            free(plan->cells[i].opts);
            merged++;
        } else {
            plan->cells[kept++] = plan->cells[i];
        }
    }
    plan->n = kept;
    free(order), free(drop), free(dup_keys);
    dup_keys = NULL;
    return merged;
}

/* plan.h: each cell takes the options of its row of `slug`'s table that its config left unset
 * (a row that disagrees with an option the config set is no candidate), and c->options shows
 * them (the results' options column, the key, --dry-run's lines). */
int tkp_plan_dispatch(struct tkp_plan *plan, const char *slug, const struct tkp_dispatch_row *rows,
                      size_t n, struct tkp_error *err)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct tkp_cell *c = &plan->cells[i];
        const char *dtype = tkp_dtype_name((enum tkp_dtype)c->dtype);
        char given[1024]; /* tkp_dispatch_lookup's: the options the config set */
        tkp_options_format_given(c->algo, c->opts, c->given, given, sizeof given);
        const struct tkp_dispatch_row *row =
            tkp_dispatch_lookup(rows, n, slug, c->algo->name, dtype ? dtype : "", c->batch,
                                c->vocab, c->k, given, NULL);
        if (!row)
            continue;
        const int rc = tkp_dispatch_apply(c->algo, c->opts, c->given, row, err);
        if (rc != TKP_OK)
            return rc;
        char text[1024];
        tkp_options_format(c->algo, c->opts, text, sizeof text);
        if (strlen(text) >= sizeof c->options) {
            tkp_error_set(err, "%s: the options '%.60s...' are too long (the limit is %zu)",
                          row->where, text, sizeof c->options - 1);
            return TKP_EINVAL;
        }
        memcpy(c->options, text, strlen(text) + 1);
    }
    return TKP_OK;
}
