/* shard.c — see shard.h. The assignment is the longest-processing-time rule: cells by cost,
 * largest first (plan order among equals), each to the shard with the least cost so far (a
 * binary heap of (cost, index)), so the result depends on the plan and N alone. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../algos/common/gate.h"
#include "../algos/common/half.h"
#include "h5util.h"
#include "shard.h"
#include "interrupt.h"

/* A decimal number of at most 9 digits at *at (no sign, no space); -1 otherwise. */
static long digits(const char **at)
{
    const char *s = *at;
    long v = 0;
    int n = 0;
    while (isdigit((unsigned char)s[n]) && n < 10)
        v = v * 10 + (s[n] - '0'), n++;
    *at = s + n;
    return n == 0 || n > 9 ? -1 : v;
}

int tkp_shard_parse(const char *spec, struct tkp_shard *s, struct tkp_error *err)
{
    const char *at = spec;
    const long i = digits(&at);
    const long n = *at == '/' ? (at++, digits(&at)) : -1;
    if (i < 0 || n < 0 || *at) {
        tkp_error_set(err, "--shard '%s': expected I/N, two whole numbers such as 0/4",
                      tkp_gate_shown(spec));
        return TKP_EINVAL;
    }
    if (n < 1 || n > TKP_SHARD_MAX || i >= n) {
        tkp_error_set(err, "--shard '%s': needs 0 <= I < N and 1 <= N <= %d", tkp_gate_shown(spec),
                      TKP_SHARD_MAX);
        return TKP_EINVAL;
    }
    s->index = (int)i;
    s->count = (int)n;
    return TKP_OK;
}

double tkp_cell_cost(const struct tkp_cell *c)
{
    const double bytes = c->dtype == TKP_F32 ? 4.0 : 2.0;
    return (double)c->batch * (double)c->vocab * bytes;
}

struct by_cost {
    double cost;
    size_t cell;
};

static int larger_first(const void *a, const void *b)
{
    const struct by_cost *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* The shards' loads as a min-heap of (load, index). */
struct load {
    double cost;
    int shard;
};

static int lighter(const struct load *a, const struct load *b)
{
    return a->cost < b->cost || (a->cost == b->cost && a->shard < b->shard);
}

/* Restore the heap below position `at` after its load grew. */
static void sift_down(struct load *h, int n, int at)
{
    for (;;) {
        int least = at, l = 2 * at + 1, r = l + 1;
        if (l < n && lighter(&h[l], &h[least]))
            least = l;
        if (r < n && lighter(&h[r], &h[least]))
            least = r;
        if (least == at)
            return;
        const struct load t = h[at];
        h[at] = h[least];
        h[least] = t;
        at = least;
    }
}

int tkp_shard_assign(const struct tkp_plan *plan, int n, int *owner, struct tkp_error *err)
{
    struct by_cost *order = malloc(sizeof *order * (plan->n ? plan->n : 1));
    struct load *heap = malloc(sizeof *heap * (size_t)(n > 0 ? n : 1));
    if (!order || !heap) {
        free(order);
        free(heap);
        tkp_error_set(err, "out of host memory to split %zu cells into %d shards", plan->n, n);
        return TKP_ENOMEM;
    }
    for (size_t i = 0; i < plan->n; i++)
        order[i] = (struct by_cost){ tkp_cell_cost(&plan->cells[i]), i };
    qsort(order, plan->n, sizeof *order, larger_first);
    for (int s = 0; s < n; s++) /* equal loads in index order: already a heap */
        heap[s] = (struct load){ 0, s };
    for (size_t i = 0; i < plan->n; i++) {
        owner[order[i].cell] = heap[0].shard;
        heap[0].cost += order[i].cost;
        sift_down(heap, n, 0);
    }
    free(order);
    free(heap);
    return TKP_OK;
}

int64_t tkp_plan_entry_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct tkp_plan_entry));
#define STR_MEMBER(m)                                                                          \
    do {                                                                                       \
        hid_t s = h5_member_type(H5_KIND_STR, sizeof(((struct tkp_plan_entry *)0)->m));        \
        H5Tinsert(t, #m, offsetof(struct tkp_plan_entry, m), s);                               \
        H5Tclose(s);                                                                           \
    } while (0)
    STR_MEMBER(sweep);
    STR_MEMBER(key);
    STR_MEMBER(algo);
    STR_MEMBER(variant);
#undef STR_MEMBER
    H5Tinsert(t, "shard", offsetof(struct tkp_plan_entry, shard), H5T_NATIVE_INT64);
    H5Tinsert(t, "cost", offsetof(struct tkp_plan_entry, cost), H5T_NATIVE_DOUBLE);
    return (int64_t)t;
}

void tkp_shard_plan_free(struct tkp_shard_plan *sp)
{
    free(sp->entries);
    memset(sp, 0, sizeof *sp);
}

/* Every cell of the plan as a /plan row, its shard from owner. */
static void describe(const struct tkp_plan *plan, const int *owner, enum tkp_backend backend,
                     struct tkp_shard_plan *sp)
{
    unsigned long crc = crc32(0L, Z_NULL, 0);
    for (size_t i = 0; i < plan->n; i++) {
        const struct tkp_cell *c = &plan->cells[i];
        struct tkp_plan_entry *e = &sp->entries[i];
        memset(e, 0, sizeof *e);
        snprintf(e->sweep, sizeof e->sweep, "%s", c->sweep);
        tkp_cell_key(c, backend, e->key);
        snprintf(e->algo, sizeof e->algo, "%s", c->algo->name);
        snprintf(e->variant, sizeof e->variant, "%s", c->variant);
        e->shard = owner[i];
        e->cost = tkp_cell_cost(c);
        crc = crc32(crc, (const unsigned char *)e->sweep, (uInt)strlen(e->sweep) + 1);
        crc = crc32(crc, (const unsigned char *)e->key, (uInt)strlen(e->key) + 1);
    }
    sp->n = plan->n;
    snprintf(sp->hash, sizeof sp->hash, "%08lx", crc);
}

int tkp_shard_cut(struct tkp_plan *plan, const struct tkp_shard *s, enum tkp_backend backend,
                  struct tkp_shard_plan *sp, struct tkp_error *err)
{
    memset(sp, 0, sizeof *sp);
    sp->shard_cells = plan->n;
    if (s->count == 0) /* the whole plan: nothing to cut or record */
        return TKP_OK;
    sp->entries = malloc(sizeof *sp->entries * (plan->n ? plan->n : 1));
    int *owner = malloc(sizeof *owner * (plan->n ? plan->n : 1));
    if (!sp->entries || !owner) {
        free(owner);
        tkp_shard_plan_free(sp);
        tkp_error_set(err, "out of host memory to describe %zu cells", plan->n);
        return TKP_ENOMEM;
    }
    int rc = tkp_shard_assign(plan, s->count, owner, err);
    if (rc == TKP_OK)
        describe(plan, owner, backend, sp);
    size_t kept = 0;
    for (size_t i = 0; rc == TKP_OK && i < plan->n; i++) {
        if (owner[i] == s->index)
            plan->cells[kept++] = plan->cells[i];
        else
            free(plan->cells[i].opts);
    }
    if (rc == TKP_OK)
        plan->n = sp->shard_cells = kept;
    free(owner);
    if (rc)
        tkp_shard_plan_free(sp);
    return rc;
}

int tkp_shard_check_resume(struct tkp_results *r, const char *path, const struct tkp_shard *s,
                           const struct tkp_shard_plan *sp, struct tkp_error *err)
{
    char stored[64] = "", mine[64] = "", hash[32] = "";
    const int has = tkp_results_attr_get(r, "shard", stored, sizeof stored) == 0;
    if (s->count > 0)
        snprintf(mine, sizeof mine, "%d/%d", s->index, s->count);
    if (!has && s->count == 0)
        return TKP_OK;
    if (!has) {
        tkp_error_set(err, "%s: refusing to resume it as shard %s: it holds a whole run, not a "
                      "shard (resume it without --shard)", path, mine);
        return TKP_EINVAL;
    }
    if (strcmp(stored, mine) != 0) {
        tkp_error_set(err, "%s: refusing to resume: it holds shard %s, this run asks for %s%s",
                      path, stored, s->count ? "--shard " : "the whole plan (no --shard)", mine);
        return TKP_EINVAL;
    }
    tkp_results_attr_get(r, "plan_hash", hash, sizeof hash);
    if (strcmp(hash, sp->hash) != 0) {
        tkp_error_set(err, "%s: refusing to resume shard %s: its plan (plan_hash %s) is not this "
                      "run's (%s, %zu cells): another config, --only or --sweep?", path, stored,
                      hash, sp->hash, sp->n);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* /plan, deflated (its keys repeat), unless the file has it. */
static int write_plan(hid_t file, const struct tkp_shard_plan *sp)
{
    if (h5_exists(file, "/plan"))
        return 0;
    hsize_t n = sp->n, chunk = sp->n < 1024 ? (sp->n ? sp->n : 1) : 1024;
    hid_t t = (hid_t)tkp_plan_entry_type(), space = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = h5_deflated_dcpl(1, &chunk, H5_DEFLATE_TABLE);
    hid_t d = dcpl < 0 ? -1 : H5Dcreate2(file, "/plan", t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = d < 0 || (n && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, sp->entries) < 0);
    if (d >= 0)
        H5Dclose(d);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(t);
    return rc;
}

static int record_shard(struct tkp_results *r, int run, int fresh, const struct tkp_shard *s,
                        const struct tkp_shard_plan *sp, int device)
{
    const hid_t file = (hid_t)tkp_results_handle(r);
    char spec[64] = "", path[64];
    if (s->count > 0)
        snprintf(spec, sizeof spec, "%d/%d", s->index, s->count);
    snprintf(path, sizeof path, "/runs/%d", run);
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    int rc = g < 0;
    if (g >= 0) {
        rc |= s->count > 0 && h5_set_attr_str(g, "shard", spec);
        rc |= h5_set_attr_i64(g, "device_index", device);
        H5Gclose(g);
    }
    if (fresh) {
        rc |= tkp_results_attr_num(r, "device_index", device) != 0;
        if (s->count > 0) {
            rc |= tkp_results_attr(r, "shard", spec) != 0;
            rc |= h5_set_attr_i64(file, "shard_index", s->index);
            rc |= h5_set_attr_i64(file, "shard_count", s->count);
            rc |= h5_set_attr_i64(file, "plan_cells", (long long)sp->n);
            rc |= h5_set_attr_i64(file, "shard_cells", (long long)sp->shard_cells);
            rc |= tkp_results_attr(r, "plan_hash", sp->hash) != 0;
        }
    }
    if (s->count > 0)
        rc |= write_plan(file, sp);
    return rc || H5Fflush(file, H5F_SCOPE_GLOBAL) < 0;
}

/* The store's writes hold signals (interrupt.h): a stop mid-write would tear the file. */
int tkp_shard_record(struct tkp_results *r, int run, int fresh, const struct tkp_shard *s,
                     const struct tkp_shard_plan *sp, int device)
{
    tkp_interrupt_hold();
    const int rc = record_shard(r, run, fresh, s, sp, device);
    tkp_interrupt_release();
    return rc;
}
