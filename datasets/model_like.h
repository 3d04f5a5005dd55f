/* model_like.h — "model-like" logit profiles: a left-skewed body plus a handful of signal
 * tokens whose strength varies from row to row, with a few interpretable parameters per
 * profile, calibrated so that qrita's sigma-truncation statistics (N_t, S_t, hit rates at
 * k=50 and p=0.9) land near the paper's Table 1 (datasets/CALIBRATION.md). */
#ifndef TKP_MODEL_LIKE_H
#define TKP_MODEL_LIKE_H

#include <stdint.h>

/* One profile. Every row r under seed s is drawn from Philox streams keyed by (s, r) alone
 * (body: offset 0, per-row draws and signal tokens: offset 1), so a row does not depend on the
 * batch it is generated in, nor on the vocabulary size except through its length.
 *
 * A row (c = the row's body scale, in logit units):
 *   c      = scale * exp(scale_jitter * g),  g ~ N(0, 1) per row
 *   body   z_i = c * (n_i - [u_i < tail_weight] * tail_length * e_i),
 *            n_i ~ N(0, 1), u_i ~ U(0, 1), e_i ~ Exp(1): a Gaussian core with a long left tail
 *   peak   h = peak_lo + (peak_hi - peak_lo) * v^peak_shape, v ~ U(0, 1) per row: the height of
 *          the row's top token above the core mean, in core units (peak_shape > 1: more flat
 *          rows, < 1: more peaked rows)
 *   signal m tokens, m uniform in [signal_min, signal_max]; the first at height h, the others
 *          at floor + (h - floor) * w^signal_decay, w ~ U(0, 1) (floor = signal_floor), each
 *          written over a uniformly drawn position (max with the body value there). */
struct tkp_model_profile {
    const char *name, *model;
    int64_t vocab;         /* the model's vocabulary; other sizes generate too */
    double scale;          /* median core std, logit units */
    double scale_jitter;   /* log-normal spread of the per-row scale */
    double tail_weight;    /* fraction of body tokens pushed into the left tail */
    double tail_length;    /* mean push of a tail token, core units */
    double peak_lo, peak_hi, peak_shape;
    int signal_min, signal_max;
    double signal_floor, signal_decay;
    int calibrated;        /* 1: tuned against a published Table 1 row */
};

extern const struct tkp_model_profile tkp_model_profiles[]; /* terminated by name == NULL */
const struct tkp_model_profile *tkp_model_profile_find(const char *name);

/* Fill one row of `vocab` logits from profile `p`. */
void tkp_model_like_row(const struct tkp_model_profile *p, uint64_t seed, uint64_t row,
                        int64_t vocab, float *x);

/* The fill_row entries of tkp_datasets[] (datasets/synthetic.c). */
void tkp_fill_model_llama3_8b(uint64_t seed, uint64_t row, int64_t vocab, float *x);
void tkp_fill_model_qwen3_8b(uint64_t seed, uint64_t row, int64_t vocab, float *x);
void tkp_fill_model_gpt_oss_20b(uint64_t seed, uint64_t row, int64_t vocab, float *x);
void tkp_fill_model_qwen35(uint64_t seed, uint64_t row, int64_t vocab, float *x);
void tkp_fill_model_gemma3_4b(uint64_t seed, uint64_t row, int64_t vocab, float *x);

#endif
