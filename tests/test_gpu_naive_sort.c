/* test_gpu_naive_sort.c — naive_sort on the GPU: bit for bit equal to the CPU backend (kept
 * masks and samples) on large Gaussian batches, on odd vocabularies, batch 1, many draws and
 * samples-only runs (the adversarial suite and the sampler test: tests/test_conformance.c).
 * Every test skips when no GPU is present. */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "cases.h"
#include "test.h"

static void free_case(struct test_case *c)
{
    free(c->b.logits);
    free(c->b.k);
    free(c->b.p);
}

/* Run naive_sort on both backends over batch b (kept mask when `with_set`, `draws` samples
 * per row) and require identical outputs. */
static void gpu_vs_cpu(const struct tkp_batch *b, int with_set, int32_t draws, uint64_t seed,
                       const char *what)
{
    const struct tkp_algo *a = tkp_algo_find("naive_sort");
    REQUIRE(a, "no module naive_sort");
    const size_t cells = (size_t)(b->batch * b->vocab), drawn = (size_t)(b->batch * draws);
    uint8_t *kc = with_set ? malloc(cells) : NULL, *kg = with_set ? malloc(cells) : NULL;
    int64_t *sc = draws ? malloc(8 * drawn) : NULL, *sg = draws ? malloc(8 * drawn) : NULL;
    struct tkp_error err = { "" };
    int rc = tkp_apply(a, NULL, TKP_CPU, b, kc, sc, draws, seed, 5, NULL, &err);
    CHECK(rc == TKP_OK, "%s: CPU: %s", what, err.msg);
    if (rc == TKP_OK) {
        rc = tkp_apply(a, NULL, TKP_GPU, b, kg, sg, draws, seed, 5, NULL, &err);
        CHECK(rc == TKP_OK, "%s: GPU: %s", what, err.msg);
    }
    int reported = 0;
    for (int64_t r = 0; rc == TKP_OK && r < b->batch && reported < 5; r++) {
        if (with_set && memcmp(kc + r * b->vocab, kg + r * b->vocab, (size_t)b->vocab)) {
            int64_t i = 0;
            while (kc[r * b->vocab + i] == kg[r * b->vocab + i])
                i++;
            test_fail(__FILE__, __LINE__,
                      "%s (seed %llu) row %lld k=%d p=%g: mask differs first at token %lld "
                      "(CPU %d, GPU %d)",
                      what, (unsigned long long)seed, (long long)r, b->k[r], (double)b->p[r],
                      (long long)i, kc[r * b->vocab + i], kg[r * b->vocab + i]);
            reported++;
        }
        if (draws && memcmp(sc + r * draws, sg + r * draws, 8 * (size_t)draws)) {
            int32_t d = 0;
            while (sc[r * draws + d] == sg[r * draws + d])
                d++;
            test_fail(__FILE__, __LINE__,
                      "%s (seed %llu) row %lld k=%d p=%g: draw %d differs (CPU %lld, GPU %lld)",
                      what, (unsigned long long)seed, (long long)r, b->k[r], (double)b->p[r], d,
                      (long long)sc[r * draws + d], (long long)sg[r * draws + d]);
            reported++;
        }
    }
    free(kc), free(kg), free(sc), free(sg);
}

/* The acceptance shape: B = 64, V = 128256, k = 50 with p = 0.9 and with p = 1. */
TEST(gpu_naive_sort_large_gaussian_k50_matches_cpu)
{
    REQUIRE_GPU();
    const float ps[2] = { 0.9f, 1.0f };
    for (int i = 0; i < 2 && !test_failed(); i++) {
        struct test_case c;
        case_gaussian(&c, 4242 + (uint64_t)i, 64, 128256, 1.0f);
        for (int64_t r = 0; r < c.b.batch; r++) {
            c.b.k[r] = 50;
            c.b.p[r] = ps[i];
        }
        gpu_vs_cpu(&c.b, 1, 8, c.seed, ps[i] < 1 ? "gaussian k50 p0.9" : "gaussian k50 p1");
        free_case(&c);
    }
}

/* The standard (k, p) mix of cases.c (top-p-only rows keep tens of thousands of tokens) on a
 * vocabulary that is not a multiple of 4 (so most rows start unaligned), with more draws
 * than the finishing kernel has threads. */
TEST(gpu_naive_sort_mixed_rows_odd_vocab_many_draws)
{
    REQUIRE_GPU();
    struct test_case c;
    case_gaussian(&c, 77, 34, 128257, 2.0f);
    gpu_vs_cpu(&c.b, 1, 700, c.seed, "mixed rows V=128257, 700 draws");
    free_case(&c);
}

TEST(gpu_naive_sort_batch_1_and_samples_only)
{
    REQUIRE_GPU();
    struct test_case c;
    case_gaussian(&c, 91, 1, 262144, 1.5f);
    c.b.k[0] = 50;
    c.b.p[0] = 0.9f;
    gpu_vs_cpu(&c.b, 1, 16, c.seed, "batch 1 V=262144");
    gpu_vs_cpu(&c.b, 0, 16, c.seed, "batch 1 V=262144, samples only");
    free_case(&c);

    case_gaussian(&c, 92, 17, 3001, 1.0f);
    gpu_vs_cpu(&c.b, 0, 33, c.seed, "mixed rows V=3001, samples only");
    gpu_vs_cpu(&c.b, 1, 0, c.seed, "mixed rows V=3001, set only");
    free_case(&c);
}
