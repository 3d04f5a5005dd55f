/* judge_memo.h — the oracle's results for rows already judged in a run, so that the modules
 * and peers of one cell group (the same rows, k and p) are judged against one oracle build a
 * row instead of one each (docs/CAMPAIGN.md, "Chunks and the sample policy"). A memo belongs
 * to one array of logits rows that does not change while it lives (runner.c keeps one per
 * cached batch and element type, freed with it) and holds, for each row and (k, p), what the
 * checks read: vocab, valid, set_size, n_min, n_max and the canonical prefix order[0..n_max).
 * Rows are independent: threads may use distinct rows of one memo at once. */
#ifndef TKP_JUDGE_MEMO_H
#define TKP_JUDGE_MEMO_H

#include <stdint.h>

#include "verify/oracle.h"

struct tkp_judge_memo;

/* A memo for `rows` rows holding at most `max_bytes` of prefixes (past that, rows are judged
 * afresh each time); NULL when out of memory. */
struct tkp_judge_memo *tkp_judge_memo_new(int64_t rows, int64_t max_bytes);
void tkp_judge_memo_free(struct tkp_judge_memo *m);
/* 1 and o filled (order borrowed from the memo, weight NULL: read it with oracle_check_row,
 * never oracle_row_free it) when row r under (k, p) is held, else 0. */
int tkp_judge_memo_get(const struct tkp_judge_memo *m, int64_t r, int32_t k, float p,
                       struct oracle_row *o);
/* Hold o's results for row r under (k, p) unless the memo is full or o is held already. */
void tkp_judge_memo_put(struct tkp_judge_memo *m, int64_t r, int32_t k, float p,
                        const struct oracle_row *o);
/* Bytes of prefixes held. */
int64_t tkp_judge_memo_bytes(const struct tkp_judge_memo *m);

#endif
