/* plan.h — the cells a config describes: one per algorithm (with its options) x the sweep
 * axes of harness/plan/axes.def, after the sweep's `where` filter. */
#ifndef TKP_PLAN_H
#define TKP_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../algos/tkp.h"
#include "limits_files.h"

struct tkp_timing {
    int warmup;         /* untimed runs first ... */
    double warmup_seconds; /* ... and more of them until this much time has passed (timing.h) */
    int min_reps, max_reps;
    double max_seconds; /* the cell's wall-clock cap: warm-up, repetitions and checks (timing.h) */
    double target_rel;  /* stop once the relative IQR of the times is below this */
    int cold;           /* GPU: flush L2 before every repetition */
    int graph;          /* the config's timing.graph, folded into the cells' graph axis
                           (config_expand.c); the runner reads tkp_cell.graph */
    double timeout;     /* peers: seconds a cell may take before its worker is killed */
};

/* The field(s) in struct tkp_cell of an axis of each type (axes.h, enum tkp_axis_type). */
#define TKP_CELL_FIELD_DATASET(name) char name[256];
#define TKP_CELL_FIELD_ENUM(name) int name;
#define TKP_CELL_FIELD_I64(name) int64_t name;
#define TKP_CELL_FIELD_I32(name) int32_t name;
#define TKP_CELL_FIELD_U64(name) uint64_t name;
/* the float32 the modules get, and the value as the config wrote it (the results column) */
#define TKP_CELL_FIELD_F32(name) float name; double name##_declared;

struct tkp_cell {
    char sweep[64];
    const struct tkp_algo *algo;
    void *opts;               /* owned; algo->opts_size bytes */
    char options[256];        /* the full option string, defaults included */
    unsigned given;           /* bit i: the config set option i of algo's table (the others
                                 a dispatch table may set: harness/module/dispatch.h) */
    char variant[64];         /* the ablation label, or "" */
    /* one field per axis of harness/plan/axes.def, of its type: dataset, vocab, batch, k, p (and
     * p_declared), draws, seed, dtype (an enum tkp_dtype, algos/common/half.h) */
#define TKP_AXIS(name, type, ...) TKP_CELL_FIELD_##type(name)
#include "axes.def"
#undef TKP_AXIS
    int verify_rows;
    struct tkp_timing timing;
};

struct tkp_config_file {
    char *name, *text;
};

/* An ablation's figure metadata (docs/FIGURES.md, "Figures"): the variant its ratios divide by and
 * its variants in declaration order (the list form of `variants`; by label for the keyed form,
 * the order its cells run in). */
struct tkp_ablation {
    char sweep[64];
    char baseline[64]; /* `baseline = "A"`, else the first variant */
    char *variants;    /* owned: the labels joined by '/' (a label holds no '/') */
};

/* A logits file a config names with how to make it: file("x.h5", "make x") (docs/CONFIGS.md,
 * "Configs"); path as the cells name it, under the config's folder. */
struct tkp_data_file {
    char *path, *made_by; /* owned */
};

struct tkp_plan {
    struct tkp_cell *cells;
    size_t n, cap;
    struct tkp_config_file *files;
    size_t n_files;
    struct tkp_ablation *ablations;
    size_t n_ablations;
    struct tkp_data_file *data_files;
    size_t n_data_files;
};

/* Run a Lua config in a sandbox and expand its sweeps; errors name file:line. The config sees
 * the backend the run will use as the global `backend` ("cpu" or "gpu"), so one file can size
 * itself for either. */
int tkp_config_load(const char *path, enum tkp_backend backend, struct tkp_plan *plan,
                    struct tkp_error *err);
void tkp_plan_free(struct tkp_plan *plan);

/* Every logits file a cell of the plan reads (file "x.h5") can be read; else an error naming
 * the config, the sweep, the file and, where the config said, how to make it. */
int tkp_plan_check_files(const struct tkp_plan *plan, const char *config, struct tkp_error *err);
/* "topk", "topp", "topk_topp" or "none" for a cell's k and p. */
const char *tkp_mode_name(int32_t k, float p, int64_t vocab);

/* The key column of a cell run on `backend` (tkp_results_key of its whole identity). */
void tkp_cell_key(const struct tkp_cell *c, enum tkp_backend backend,
                  char key[TKP_RESULT_KEY_BYTES]);

/* A plan has each cell once (docs/ROBUSTNESS.md, "Duplicates"): cells of the same sweep and key
 * (repeated values, a sweep declared twice through a local name, algorithm entries that
 * resolve to the same options) are merged into the first in plan order, each merge noted on
 * `notes` (NULL: none) naming the config, the sweep and the cell. Returns how many were
 * dropped. */
size_t tkp_plan_merge_duplicates(struct tkp_plan *plan, const char *config, FILE *notes);

/* Each cell takes the options of its row of the dispatch table of GPU `slug` (rows[0..n), the
 * compiled-in tkp_dispatch_rows in a run: harness/module/dispatch.h) that its config left unset
 * (tkp_cell.given); its options text shows them. TKP_EINVAL naming the row when they do not
 * parse. Call tkp_plan_merge_duplicates after: two cells may now say the same. */
struct tkp_dispatch_row;
int tkp_plan_dispatch(struct tkp_plan *plan, const char *slug, const struct tkp_dispatch_row *rows,
                      size_t n, struct tkp_error *err);

#endif
