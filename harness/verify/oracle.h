/* oracle.h — the independent judge of docs/SEMANTICS.md. It shares no code with the modules:
 * its own selection and sort (radix, on order-preserving keys of value then index) and
 * long-double masses. For one row it computes the canonical order (the prefix a check reads),
 * the top-k set and the band of kept-prefix lengths the top-p rule accepts, and checks a kept
 * mask or a draw against them. */
#ifndef TKP_ORACLE_H
#define TKP_ORACLE_H

#include <stddef.h>
#include <stdint.h>

struct oracle_row {
    int64_t vocab, valid;
    int64_t set_size;    /* the largest accepted candidate set, after min-p and top-k (all
                            valid tokens when both are off) */
    int64_t n_min, n_max;/* accepted lengths of the kept prefix, inclusive */
    /* The prefix of the canonical order a check reads: set_size tokens (1 when p <= 0). */
    int32_t *order;
    long double *weight; /* unnormalised probability, in canonical order */
};

/* Judge row x (vocab float32 values) under k and p. A 16-bit row is judged by its exact
 * float32 upcast (struct tkp_batch.logits; docs/SEMANTICS.md, "16-bit logits"), never by the
 * encodings a module reads. Returns 0, or -1 when out of memory. */
int oracle_row_init(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p);
/* The same with min-p (docs/SEMANTICS.md, "min-p"; min_p <= 0: off): min-p, then top-k, then
 * top-p over the renormalised candidates. A token whose probability ratio to the row's
 * largest is within a relative 1e-6 (plus 2^-38) of min_p may be in or out. */
int oracle_row_init_minp(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p,
                         float min_p);
void oracle_row_free(struct oracle_row *o);

/* Is `kept` (vocab bytes) an accepted kept set? On failure `why` says what differs. */
int oracle_check_kept(const struct oracle_row *o, const uint8_t *kept, char *why, size_t n);
/* Is `token` an accepted draw (in the largest accepted kept prefix; -1 iff no valid token)? */
int oracle_check_draw(const struct oracle_row *o, int64_t token, char *why, size_t n);
/* Both checks for one row: the kept mask (may be NULL) and `n` draws (may be NULL). */
int oracle_check_row(const struct oracle_row *o, const uint8_t *kept, const int64_t *draws,
                     int32_t n, char *why, size_t len);
/* Probability of each of the first n tokens of the canonical order renormalised over them. */
void oracle_distribution(const struct oracle_row *o, int64_t n, long double *out);
/* The total-variation bound of docs/SEMANTICS.md for n kept tokens and N draws. */
double oracle_tv_bound(int64_t n, int64_t draws);

#endif
