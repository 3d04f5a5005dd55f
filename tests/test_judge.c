/* test_judge.c — tkp_row_judge (harness/measure/cell_row.c), whose rows are judged in parallel: the
 * counts and the first differing row named in the message are those of judging the rows in
 * order, with every row or a spread sample of them; through a memo (harness/verify/judge_memo.c) the
 * verdicts are those without one, for every k and p the rows are judged under. */
#include <stdlib.h>
#include <string.h>

#include "cell_row.h"
#include "test.h"

enum { ROWS = 64, VOCAB = 257, K = 5 };

/* A batch of distinct logits with top-k 5, its exact kept mask, and rows `bad` (ending in -1)
 * each with one kept token dropped. */
static void make_batch(struct tkp_batch *b, uint8_t *kept, const int *bad)
{
    static float logits[ROWS * VOCAB];
    static int32_t k[ROWS];
    static float p[ROWS];
    for (int r = 0; r < ROWS; r++) {
        k[r] = K;
        p[r] = 1.0f;
        for (int v = 0; v < VOCAB; v++) {
            logits[r * VOCAB + v] = (float)((v * 37 + r * 11) % VOCAB);
            kept[r * VOCAB + v] = logits[r * VOCAB + v] >= VOCAB - K;
        }
    }
    for (int i = 0; bad[i] >= 0; i++)
        for (int v = 0; v < VOCAB; v++)
            if (kept[bad[i] * VOCAB + v]) {
                kept[bad[i] * VOCAB + v] = 0;
                break;
            }
    *b = (struct tkp_batch){ .batch = ROWS, .vocab = VOCAB, .logits = logits, .k = k, .p = p };
}

TEST(judge_counts_and_names_the_first_differing_row_in_order)
{
    static uint8_t kept[ROWS * VOCAB];
    struct tkp_batch b;
    static const int bad[] = { 61, 18, 40, -1 };
    make_batch(&b, kept, bad);
    static const struct { int rows; long long checked, exact; const char *first; } cases[] = {
        { ROWS, ROWS, ROWS - 3, "row 18: " }, /* every row */
        { 32, 32, 30, "row 18: " },           /* rows 0, 2, ..., 62: 18 and 40 */
        { 8, 8, 7, "row 40: " },              /* rows 0, 8, ..., 56: 40 alone */
        { 3, 3, 3, NULL },                    /* rows 0, 21, 42 */
        { 1000, ROWS, ROWS - 3, "row 18: " },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tkp_cell_row row;
        memset(&row, 0, sizeof row);
        struct tkp_error err = { "" };
        int rc = tkp_row_judge(&row, &b, kept, NULL, 0, cases[i].rows, 0, NULL, &err);
        CHECK(rc == 0 && row.rows_checked == cases[i].checked && row.rows_exact == cases[i].exact,
              "rows=%d: rc %d, %lld checked, %lld exact; want %lld and %lld", cases[i].rows, rc,
              (long long)row.rows_checked, (long long)row.rows_exact, cases[i].checked,
              cases[i].exact);
        const char *at = strstr(err.msg, "; row ");
        CHECK(cases[i].first ? at && strncmp(at + 2, cases[i].first, strlen(cases[i].first)) == 0
                             : err.msg[0] == 0,
              "rows=%d: message '%s', want the first differing row %s", cases[i].rows, err.msg,
              cases[i].first ? cases[i].first : "(none)");
        rc = tkp_row_judge(&row, &b, kept, NULL, 0, cases[i].rows, 1, NULL, &err);
        CHECK((rc != 0) == (cases[i].first != NULL), "rows=%d, exact required: rc %d", cases[i].rows,
              rc);
    }
}

/* Judge b's rows with `kept` through memo m; returns the rows equal to the oracle. */
static long long judged_exact(const struct tkp_batch *b, const uint8_t *kept,
                              struct tkp_judge_memo *m)
{
    struct tkp_cell_row row;
    memset(&row, 0, sizeof row);
    struct tkp_error err = { "" };
    tkp_row_judge(&row, b, kept, NULL, 0, ROWS, 0, m, &err);
    return row.rows_checked == ROWS ? row.rows_exact : -1;
}

TEST(judge_memo_gives_the_verdicts_of_a_fresh_oracle_for_each_k_and_p)
{
    static uint8_t good[ROWS * VOCAB], bad_kept[ROWS * VOCAB];
    struct tkp_batch b;
    static const int none[] = { -1 }, bad[] = { 3, 50, -1 };
    make_batch(&b, good, none);
    make_batch(&b, bad_kept, bad);
    struct tkp_judge_memo *m = tkp_judge_memo_new(ROWS, 1 << 20);
    REQUIRE(m, "out of memory");
    CHECK(judged_exact(&b, good, m) == ROWS, "first cell: not every row exact");
    CHECK(tkp_judge_memo_bytes(m) > 0, "the memo holds nothing after a cell");
    CHECK(judged_exact(&b, good, m) == ROWS, "second cell, from the memo: not every row exact");
    CHECK(judged_exact(&b, bad_kept, m) == ROWS - 2, "from the memo, a wrong mask passes");
    int32_t *k = (int32_t *)b.k; /* the same rows under k = 6: the 5-token masks are wrong */
    for (int r = 0; r < ROWS; r++)
        k[r] = K + 1;
    CHECK(judged_exact(&b, good, m) == 0, "k = 6 judged by the memo of k = 5");
    for (int r = 0; r < ROWS; r++)
        k[r] = K;
    float *p = (float *)b.p; /* and under top-p 0.5: one token */
    for (int r = 0; r < ROWS; r++)
        p[r] = 0.5f;
    CHECK(judged_exact(&b, good, m) == 0, "p = 0.5 judged by the memo of p = 1");
    for (int r = 0; r < ROWS; r++)
        p[r] = 1.0f;
    tkp_judge_memo_free(m);
    m = tkp_judge_memo_new(ROWS, 0); /* full at once: every row judged afresh */
    REQUIRE(m, "out of memory");
    CHECK(judged_exact(&b, bad_kept, m) == ROWS - 2 && tkp_judge_memo_bytes(m) == 0,
          "a memo of 0 bytes: %lld bytes held", (long long)tkp_judge_memo_bytes(m));
    tkp_judge_memo_free(m);
}
