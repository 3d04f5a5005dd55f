/* test_naive_sort.c — naive_sort on the CPU against the oracle on random rows, and its refusal
 * of a NaN p. The adversarial suite, the sampler test and determinism are
 * tests/test_conformance.c's, as for every module. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/verify/oracle.h"
#include "cases.h"
#include "test.h"

TEST(naive_sort_cpu_random_rows_match_oracle)
{
    for (uint64_t seed = 1; seed <= 20 && !test_failed(); seed++) {
        struct test_case c;
        case_gaussian(&c, seed, 17, 50 + (int64_t)(seed * 37 % 900), (float)seed * 0.3f);
        uint8_t *kept = malloc((size_t)(c.b.batch * c.b.vocab));
        struct tkp_error err;
        int rc = tkp_apply(tkp_algo_find("naive_sort"), NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0,
                           NULL, &err);
        CHECK(rc == TKP_OK, "seed %llu: %s", (unsigned long long)seed, err.msg);
        for (int64_t r = 0; rc == TKP_OK && r < c.b.batch; r++) {
            struct oracle_row o;
            char why[256];
            case_oracle_row(&o, &c.b, r);
            CHECK(oracle_check_kept(&o, kept + r * c.b.vocab, why, sizeof why),
                  "seed %llu row %lld: %s", (unsigned long long)seed, (long long)r, why);
            oracle_row_free(&o);
        }
        free(kept);
        free(c.b.logits);
        free(c.b.k);
        free(c.b.p);
    }
}

TEST(naive_sort_rejects_nan_p_naming_the_row)
{
    float x[4] = { 1, 2, 3, 4 }, p[2] = { 0.5f, NAN };
    int32_t k[2] = { 0, 0 };
    struct tkp_batch b = { 2, 2, x, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    uint8_t kept[4];
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("naive_sort"), NULL, TKP_CPU, &b, kept, NULL, 0, 0, 0, NULL,
                       &err);
    CHECK(rc == TKP_EINVAL, "NaN p accepted");
    CHECK(strstr(err.msg, "row 1") != NULL, "message does not name the row: %s", err.msg);
}
