/* synthetic.c — the built-in synthetic datasets: Gaussian noise with a few large outliers
 * per row (the shape of LLM logits that sigma-truncation relies on), plain N(0,1), and the
 * adversarial shapes (bf16 ties, -inf masks, NaN and +inf). */
#include <math.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "../algos/common/philox.h"
#include "datasets.h"
#include "model_like.h"

/* A stream of uniforms in (0, 1) for one row. */
struct row_rng {
    uint64_t seed, row;
    uint32_t counter;
    struct tkp_philox4 block;
    int used;
};

static double next_uniform(struct row_rng *g)
{
    if (g->used == 0 || g->used == 4) {
        g->block = tkp_philox_block(g->seed, g->row, 0, g->counter++);
        g->used = 0;
    }
    return ((double)g->block.v[g->used++] + 0.5) * 0x1p-32;
}

static float next_gauss(struct row_rng *g)
{
    double u = next_uniform(g), v = next_uniform(g);
    return (float)(sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
}

static struct row_rng rng_for(uint64_t seed, uint64_t row)
{
    struct row_rng g = { seed, row, 0, { { 0, 0, 0, 0 } }, 0 };
    return g;
}

static void fill_flat(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    struct row_rng g = rng_for(seed, row);
    for (int64_t i = 0; i < vocab; i++)
        x[i] = next_gauss(&g);
}

/* N(0, 1) plus 16 outliers per row at 4 to 10 standard deviations. */
static void fill_gaussian(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_flat(seed, row, vocab, x);
    struct row_rng g = rng_for(seed ^ 0x5DEECE66Dull, row);
    for (int i = 0; i < 16; i++) {
        int64_t at = (int64_t)(next_uniform(&g) * (double)vocab);
        x[at < vocab ? at : vocab - 1] = (float)(4.0 + 6.0 * next_uniform(&g));
    }
}

/* The shape docs/H200-PEERS.md measured the peers on: N(0, sigma) plus 20 to 100 outliers per row
 * shifted 4 to 12 sigma up. */
static void fill_peers(uint64_t seed, uint64_t row, int64_t vocab, float *x, float sigma)
{
    fill_flat(seed, row, vocab, x);
    for (int64_t i = 0; i < vocab; i++)
        x[i] *= sigma;
    struct row_rng g = rng_for(seed ^ 0x7F4A7C15ull, row);
    int outliers = 20 + (int)(next_uniform(&g) * 81.0);
    for (int i = 0; i < outliers; i++) {
        int64_t at = (int64_t)(next_uniform(&g) * (double)vocab);
        x[at < vocab ? at : vocab - 1] += sigma * (float)(4.0 + 8.0 * next_uniform(&g));
    }
}

static void fill_peers_s1(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_peers(seed, row, vocab, x, 1.0f);
}

static void fill_peers_s2(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_peers(seed, row, vocab, x, 2.0f);
}

static float round_to_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void fill_bf16(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_gaussian(seed, row, vocab, x);
    for (int64_t i = 0; i < vocab; i++)
        x[i] = round_to_bf16(x[i]);
}

/* Half the vocabulary masked to -inf, as a grammar mask does. */
static void fill_masked(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_gaussian(seed, row, vocab, x);
    struct row_rng g = rng_for(seed ^ 0xA5A5A5A5ull, row);
    for (int64_t i = 0; i < vocab; i++)
        if (next_uniform(&g) < 0.5)
            x[i] = -INFINITY;
}

/* 1% NaN, and +inf at two positions in every other row. */
static void fill_nan_inf(uint64_t seed, uint64_t row, int64_t vocab, float *x)
{
    fill_gaussian(seed, row, vocab, x);
    struct row_rng g = rng_for(seed ^ 0x3C3C3C3Cull, row);
    for (int64_t i = 0; i < vocab; i++)
        if (next_uniform(&g) < 0.01)
            x[i] = NAN;
    if (row % 2 == 0) {
        x[vocab / 3] = INFINITY;
        x[vocab - 1] = INFINITY;
    }
}

const struct tkp_dataset tkp_datasets[] = {
    { "gaussian", "N(0,1) with 16 outliers per row at 4-10 sigma", fill_gaussian },
    { "flat", "N(0,1), no outliers", fill_flat },
    { "peers_s1", "N(0,1) + 20-100 outliers at 4-12 sigma (docs/H200-PEERS.md, top-k tables)",
      fill_peers_s1 },
    { "peers_s2", "N(0,2) + 20-100 outliers at 4-12 sigma (docs/H200-PEERS.md, top-p table)",
      fill_peers_s2 },
    { "bf16", "gaussian rounded to bfloat16 (many ties)", fill_bf16 },
    { "masked", "gaussian with half the tokens masked to -inf", fill_masked },
    { "nan_inf", "gaussian with 1% NaN and +inf in every other row", fill_nan_inf },
    /* model-like profiles (model_like.c, CALIBRATION.md); each tied to its model's V */
    { "model_llama3_8b", "R1-Distill-Llama-8B-like, V=128256 (Table 1 row)",
      tkp_fill_model_llama3_8b },
    { "model_qwen3_8b", "Qwen3-8B-like, V=151936 (Table 1 row)", tkp_fill_model_qwen3_8b },
    { "model_gpt_oss_20b", "GPT-OSS-20B-like, V=201088 (Table 1 row)",
      tkp_fill_model_gpt_oss_20b },
    { "model_qwen35", "Qwen3.5-35B-A3B-like, V=248320 (no Table 1 row: not calibrated)",
      tkp_fill_model_qwen35 },
    { "model_gemma3_4b", "Gemma3-4B-like, V=262208 (Table 1 row)", tkp_fill_model_gemma3_4b },
    { NULL, NULL, NULL },
};

const struct tkp_dataset *tkp_dataset_find(const char *name)
{
    for (const struct tkp_dataset *d = tkp_datasets; d->name; d++)
        if (strcmp(d->name, name) == 0)
            return d;
    return NULL;
}

int tkp_dataset_generate(const char *name, uint64_t seed, int64_t batch, int64_t vocab,
                         float *out, struct tkp_error *err)
{
    const struct tkp_dataset *d = tkp_dataset_find(name);
    if (!d) {
        tkp_error_set(err, "unknown dataset '%s' (see `topkp list`)", tkp_gate_shown(name));
        return TKP_EINVAL;
    }
    /* rows are independent streams, so they fill in parallel and stay deterministic */
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t r = 0; r < batch; r++)
        d->fill_row(seed, (uint64_t)r, vocab, out + r * vocab);
    return TKP_OK;
}
