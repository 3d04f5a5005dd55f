/* datasets.h — seeded logit generators. Each row is generated from its own Philox stream
 * keyed by (seed, row), so a row does not depend on the batch size it was generated in. */
#ifndef TKP_DATASETS_H
#define TKP_DATASETS_H

#include <stdint.h>

#include "../algos/tkp.h"

struct tkp_dataset {
    const char *name, *summary;
    void (*fill_row)(uint64_t seed, uint64_t row, int64_t vocab, float *x);
};

extern const struct tkp_dataset tkp_datasets[]; /* terminated by name == NULL */
const struct tkp_dataset *tkp_dataset_find(const char *name);

/* Fill `out` [batch, vocab] with dataset `name`; TKP_EINVAL naming it when unknown. */
int tkp_dataset_generate(const char *name, uint64_t seed, int64_t batch, int64_t vocab,
                         float *out, struct tkp_error *err);

#endif
