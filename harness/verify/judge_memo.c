/* judge_memo.c — see judge_memo.h. Each row holds a short list of (k, p) entries. */
#include <stdlib.h>
#include <string.h>

#include "judge_memo.h"

struct memo_entry {
    int32_t k;
    uint32_t p_bits; /* p compared by its bits: a NaN p matches only itself */
    struct oracle_row o; /* order holds n_max tokens; weight NULL */
    struct memo_entry *next;
};

struct tkp_judge_memo {
    int64_t rows, max_bytes, bytes;
    struct memo_entry **row; /* [rows] */
};

static uint32_t bits_of(float p)
{
    uint32_t u;
    memcpy(&u, &p, sizeof u);
    return u;
}

struct tkp_judge_memo *tkp_judge_memo_new(int64_t rows, int64_t max_bytes)
{
    struct tkp_judge_memo *m = calloc(1, sizeof *m);
    if (m)
        m->row = calloc((size_t)(rows > 0 ? rows : 1), sizeof *m->row);
    if (!m || !m->row) {
        free(m);
        return NULL;
    }
    m->rows = rows;
    m->max_bytes = max_bytes;
    return m;
}

void tkp_judge_memo_free(struct tkp_judge_memo *m)
{
    if (!m)
        return;
    for (int64_t r = 0; r < m->rows; r++)
        for (struct memo_entry *e = m->row[r], *next; e; e = next) {
            next = e->next;
            free(e->o.order);
            free(e);
        }
    free(m->row);
    free(m);
}

static const struct memo_entry *find(const struct tkp_judge_memo *m, int64_t r, int32_t k,
                                     float p)
{
    if (!m || r < 0 || r >= m->rows)
        return NULL;
    for (const struct memo_entry *e = m->row[r]; e; e = e->next)
        if (e->k == k && e->p_bits == bits_of(p))
            return e;
    return NULL;
}

int tkp_judge_memo_get(const struct tkp_judge_memo *m, int64_t r, int32_t k, float p,
                       struct oracle_row *o)
{
    const struct memo_entry *e = find(m, r, k, p);
    if (e)
        *o = e->o;
    return e != NULL;
}

void tkp_judge_memo_put(struct tkp_judge_memo *m, int64_t r, int32_t k, float p,
                        const struct oracle_row *o)
{
    if (!m || r < 0 || r >= m->rows || find(m, r, k, p))
        return;
    int64_t size = (int64_t)(sizeof(struct memo_entry) + sizeof(int32_t) * (size_t)o->n_max);
    int64_t held;
#pragma omp atomic capture
    held = m->bytes += size;
    if (held > m->max_bytes) {
#pragma omp atomic
        m->bytes -= size;
        return;
    }
    struct memo_entry *e = malloc(sizeof *e);
    int32_t *order = malloc(sizeof *order * (size_t)(o->n_max ? o->n_max : 1));
    if (!e || !order) {
        free(e);
        free(order);
#pragma omp atomic
        m->bytes -= size;
        return;
    }
    memcpy(order, o->order, sizeof *order * (size_t)o->n_max);
    e->k = k;
    e->p_bits = bits_of(p);
    e->o = *o;
    e->o.order = order;
    e->o.weight = NULL;
    e->next = m->row[r];
    m->row[r] = e;
}

int64_t tkp_judge_memo_bytes(const struct tkp_judge_memo *m)
{
    int64_t held;
#pragma omp atomic read
    held = m->bytes;
    return held;
}
