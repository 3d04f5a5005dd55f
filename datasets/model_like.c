/* model_like.c — the model-like profiles (model_like.h; calibration in CALIBRATION.md). */
#include <math.h>
#include <string.h>

#include "../algos/common/philox.h"
#include "model_like.h"

/* A stream of uniforms in (0, 1): Philox (seed, row) at one offset. */
struct ml_rng {
    uint64_t seed, row, offset;
    uint32_t counter;
    struct tkp_philox4 block;
    int used;
};

static struct ml_rng ml_rng_for(uint64_t seed, uint64_t row, uint64_t offset)
{
    struct ml_rng g = { seed, row, offset, 0, { { 0, 0, 0, 0 } }, 4 };
    return g;
}

static double ml_uniform(struct ml_rng *g)
{
    if (g->used == 4) {
        g->block = tkp_philox_block(g->seed, g->row, g->offset, g->counter++);
        g->used = 0;
    }
    return ((double)g->block.v[g->used++] + 0.5) * 0x1p-32;
}

static double ml_gauss(struct ml_rng *g)
{
    double u = ml_uniform(g), v = ml_uniform(g);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* Parameters: name, model, V, scale, jitter, tail weight, tail length, peak lo/hi/shape,
 * signal min/max, floor, decay, calibrated. Found with scripts/calibrate_table1.sh. */
const struct tkp_model_profile tkp_model_profiles[] = {
    /*                                          scale jit  tail_w tail_l peak lo/hi/shape
                                                signal min/max floor decay */
    { "model_llama3_8b", "R1-Distill-Llama-8B", 128256,
      2.0, 0.05, 0.135, 2.0, 6.0, 9.0, 0.20, 8, 40, 2.5, 2.0, 1 },
    { "model_qwen3_8b", "Qwen3-8B", 151936,
      2.0, 0.05, 0.117, 2.0, 4.0, 10.5, 0.30, 8, 40, 2.5, 2.0, 1 },
    { "model_gpt_oss_20b", "GPT-OSS-20B", 201088,
      2.0, 0.05, 0.170, 2.0, 5.0, 8.4, 0.10, 8, 40, 2.5, 2.0, 1 },
    { "model_qwen35", "Qwen3.5-35B-A3B (no Table 1 row)", 248320,
      2.0, 0.05, 0.117, 2.0, 4.0, 10.5, 0.30, 8, 40, 2.5, 2.0, 0 },
    { "model_gemma3_4b", "Gemma3-4B", 262208,
      3.0, 0.05, 0.028, 2.0, 9.0, 13.0, 0.30, 8, 40, 2.5, 2.0, 1 },
    { NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};

const struct tkp_model_profile *tkp_model_profile_find(const char *name)
{
    for (const struct tkp_model_profile *p = tkp_model_profiles; p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

void tkp_model_like_row(const struct tkp_model_profile *p, uint64_t seed, uint64_t row,
                        int64_t vocab, float *x)
{
    /* Per-row draws first, from their own stream, so that they do not depend on V. */
    struct ml_rng r = ml_rng_for(seed, row, 1);
    double c = p->scale * exp(p->scale_jitter * ml_gauss(&r));
    double h = p->peak_lo + (p->peak_hi - p->peak_lo) * pow(ml_uniform(&r), p->peak_shape);
    int span = p->signal_max - p->signal_min + 1;
    int m = p->signal_min + (int)(ml_uniform(&r) * span);
    if (m > p->signal_max)
        m = p->signal_max;

    struct ml_rng b = ml_rng_for(seed, row, 0);
    for (int64_t i = 0; i < vocab; i++) {
        double z = ml_gauss(&b);
        if (ml_uniform(&b) < p->tail_weight)
            z += p->tail_length * log(ml_uniform(&b)); /* minus tail_length * Exp(1) */
        x[i] = (float)(c * z);
    }
    for (int j = 0; j < m && vocab > 0; j++) {
        double height = j == 0 ? h
                               : p->signal_floor + (h - p->signal_floor) *
                                                       pow(ml_uniform(&r), p->signal_decay);
        int64_t at = (int64_t)(ml_uniform(&r) * (double)vocab);
        if (at >= vocab)
            at = vocab - 1;
        float v = (float)(c * height);
        if (v > x[at])
            x[at] = v;
    }
}

#define ML_FILL(fn, index)                                                                \
    void fn(uint64_t seed, uint64_t row, int64_t vocab, float *x)                         \
    {                                                                                     \
        tkp_model_like_row(&tkp_model_profiles[index], seed, row, vocab, x);              \
    }
ML_FILL(tkp_fill_model_llama3_8b, 0)
ML_FILL(tkp_fill_model_qwen3_8b, 1)
ML_FILL(tkp_fill_model_gpt_oss_20b, 2)
ML_FILL(tkp_fill_model_qwen35, 3)
ML_FILL(tkp_fill_model_gemma3_4b, 4)
