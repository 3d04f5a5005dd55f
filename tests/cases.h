/* cases.h — the adversarial test inputs of docs/SEMANTICS.md (ties, near-ties, -inf,
 * NaN, +inf, extreme k and p, V=1, odd V, mixed rows), and the checks that run a module on
 * all of them against the oracle. tests/test_conformance.c calls them on every module of the
 * registry with its defaults; each module's test file, with its own options. */
#ifndef TKP_CASES_H
#define TKP_CASES_H

#include <stdint.h>

#include "apply.h"
#include "gpu.h"
#include "test.h"

struct test_case {
    char name[64];
    uint64_t seed; /* printed on failure */
    struct tkp_batch b;
};

/* Skip the running test when no GPU is present. */
#define REQUIRE_GPU()                                                                    \
    do {                                                                                 \
        if (!tkp_gpu_present()) {                                                        \
            test_skip("no GPU");                                                         \
            return;                                                                      \
        }                                                                                \
    } while (0)

/* The options of module `algo` set from "name=value" strings (NULL-terminated; NULL for the
 * defaults). A bad one fails the running test and gives NULL. Free with free(). */
void *module_options(const char *algo, const char *const *options);

/* Run `algo` (options as for module_options) on one backend for its kept set; a failure
 * fails the running test. Returns the tkp_apply status. */
int apply_kept(const char *algo, const char *const *options, enum tkp_backend backend,
               const struct tkp_batch *b, uint8_t *kept, struct tkp_stats *stats);

/* The min-p and per-row-key cases (tests/cases_sampling.c), at most CASES_SAMPLING_MAX of
 * them written from c; returns how many. cases_build appends them. */
enum { CASES_SAMPLING_MAX = 16 };
int cases_sampling(struct test_case *c);

/* The oracle's judgement of row r of batch b, with its min_p where the batch has one. */
struct oracle_row;
int case_oracle_row(struct oracle_row *o, const struct tkp_batch *b, int64_t r);

/* All adversarial cases; free with cases_free. */
int cases_build(struct test_case **out);
/* The adversarial suite in element type t (tests/cases_half.c): for TKP_F32 cases_build; for
 * a 16-bit t every case of cases_build with each value rounded to t, then the 16-bit family
 * built from bit patterns (few distinct values, every NaN class, +-inf, +-0, subnormals, the
 * largest finite values, ties that rounding creates, odd V). Free with cases_free. */
int cases_build_dtype(enum tkp_dtype t, struct test_case **out);
/* Make case c a case of type t (no-op for TKP_F32): each value rounded to nearest even
 * (half.h) into b.logits16, and b.logits replaced by their exact upcast. */
void case_to_dtype(struct test_case *c, enum tkp_dtype t);
/* A case of `batch` rows of `vocab` (values unset) with the standard mix of (k, p) per row. */
void case_alloc(struct test_case *c, const char *name, uint64_t seed, int64_t batch,
                int64_t vocab);
/* The tests' own generator (splitmix64) and a standard normal drawn from it. */
uint64_t case_next_u64(uint64_t *s);
float case_gauss(uint64_t *s);
void cases_free(struct test_case *c, int n);
/* A seeded batch of N(0, scale) rows with the standard mix of (k, p) per row. */
void case_gaussian(struct test_case *c, uint64_t seed, int64_t batch, int64_t vocab,
                   float scale);

/* Fit every row of the cases to what module `a` offers: p = 1 without top-p, k clamped to
 * the module's max_set (a row with top-k off gets k = max_set when V is larger). */
void cases_fit(const struct tkp_algo *a, struct test_case *c, int n);

/* Run `algo` on the GPU and on the CPU over every (fitted) case: the kept masks and the
 * samples must agree bit for bit, and the GPU output must satisfy the oracle. Skips the
 * test when no GPU is present. */
void check_gpu_matches_cpu(const char *algo, const char *const *options);
/* The same with every case's rows cycled to `batch` rows (case_tile): past B = #SMs the GPU
 * modules take their many-row paths (a CTA or a warp a row, waves), on the suite's rows. */
void check_gpu_matches_cpu_tiled(const char *algo, const char *const *options, int64_t batch);
/* Case c's rows (values, encodings, k, p, min_p, seeds, offsets) cycled into `batch` rows. */
void case_tile(struct test_case *c, int64_t batch);

/* The same on the suite of 16-bit type t (cases_build_dtype): the GPU reads t, the CPU t too
 * where its `dtypes` has it, else the exact float32 upcast. */
void check_gpu_matches_cpu_dtype(const char *algo, const char *const *options, enum tkp_dtype t);

/* Run `algo` with options ("name=value" strings, NULL-terminated; NULL for defaults) on the
 * CPU (or GPU) over every case and check every row against the oracle: set outputs must be
 * accepted kept sets, every draw must lie in the kept set. Failures go through CHECK. */
void check_module_cases(const char *algo, const char *const *options, enum tkp_backend backend);

/* The statistical sampler test: on several rows, `draws` draws of one row have a total
 * variation distance to the renormalised kept distribution below the docs/SEMANTICS.md bound, and
 * the same seed gives the same draws. */
void check_sampler_tv(const char *algo, const char *const *options, enum tkp_backend backend,
                      int32_t draws);
/* The same on its rows rounded to element type t (read as t). */
void check_sampler_tv_dtype(const char *algo, const char *const *options,
                            enum tkp_backend backend, int32_t draws, enum tkp_dtype t);

/* Run `algo` (options as for module_options) twice on `backend` over every (fitted) case
 * with the case's seed: the kept masks and the draws of the two runs must be identical.
 * Skips the test on the GPU when no GPU is present. */
void check_deterministic(const char *algo, const char *const *options, enum tkp_backend backend);
/* The same on the suite of element type t (cases_build_dtype). */
void check_deterministic_dtype(const char *algo, const char *const *options,
                               enum tkp_backend backend, enum tkp_dtype t);

/* docs/SEMANTICS.md, "16-bit logits": `algo` on `backend` over the suite of 16-bit type t,
 * read as t, gives bit for bit the kept masks and draws of the same run on the exact float32
 * upcast, and the oracle accepts them. Skips on the GPU when no GPU is present. */
void check_dtype_matches_f32(const char *algo, const char *const *options,
                             enum tkp_backend backend, enum tkp_dtype t);

/* Report the fraction of rows equal to the oracle (for approximate variants). */
double module_exactness(const char *algo, const char *const *options, enum tkp_backend backend);

#endif
