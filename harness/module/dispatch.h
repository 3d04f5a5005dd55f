/* dispatch.h — the fitted dispatch tables (docs/DESIGN.md, "Variants and the dispatch table"):
 * one TSV per GPU under dispatch/, named by the device's slug, compiled into the binary
 * (scripts/dispatch-tables.awk writes $(BUILD)/dispatch_tables.c), the row a cell falls under
 * and the setting of its options; a plan's cells take them in harness/plan/plan.c. */
#ifndef TKP_DISPATCH_H
#define TKP_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "../algos/tkp.h"

/* One row of a table: `module` run as the variant `options` ("name=value,...") took a median of
 * `us` microseconds on the fit grid point (dtype, batch, vocab, k); dtype is "f32", "bf16",
 * "f16" or "*" (any). */
struct tkp_dispatch_row {
    const char *slug, *module, *dtype;
    int64_t batch, vocab, k;
    const char *options;
    double us;
    const char *where; /* "dispatch/h100.tsv:3", for messages */
};

/* The tables of the TSVs under dispatch/, in file order (generated; no row without a table). */
extern const struct tkp_dispatch_row tkp_dispatch_rows[];
extern const size_t tkp_dispatch_count;

/* The slug of a GPU name, scripts/reproduce.sh's rule: the first token of the lower-cased name
 * (tokens split at anything other than a-z and 0-9) matching ^[a-z]+[0-9]+[a-z]*$ ("h100" from
 * "NVIDIA H100 80GB HBM3"); "" when none does. */
void tkp_dispatch_slug(const char *gpu_name, char *slug, size_t n);

/* The variant a cell takes from `slug`'s table (docs/DESIGN.md, "Variants and the dispatch
 * table"): k goes to the table's nearest k in log (a tie to the larger; k = 0 counts as 1); B
 * and V to their neighbouring grid values at that k (the largest at or below, the smallest at
 * or above; clamped to the grid's ends outside it); each variant timed at all four corners gets
 * its time interpolated bilinearly in (log B, log V) on log us, and the smallest wins (a tie:
 * the first in table order). A variant missing at a corner is no candidate, nor is one that
 * disagrees with `given` (the options the cell's config set, "name=value" joined by commas;
 * NULL or "": none): a row whose options name one of them with another value (a config's
 * cluster = 2 takes the fastest row of cluster=2, never another size's threads). Returns the
 * winner's row at the corner (B below, V below), whose options are the cell's; NULL when no
 * variant is a candidate (the module's options stay as they are). *us, when not NULL, gets the
 * interpolated time. */
const struct tkp_dispatch_row *tkp_dispatch_lookup(const struct tkp_dispatch_row *rows, size_t n,
                                                   const char *slug, const char *module,
                                                   const char *dtype, int64_t batch,
                                                   int64_t vocab, int64_t k, const char *given,
                                                   double *us);

/* Set on opts (module a's) each option of row->options whose bit in `given` is clear (bit i:
 * the config set option i of a's table: an explicit option always wins). TKP_EINVAL naming
 * row->where when an option does not parse for the module. */
int tkp_dispatch_apply(const struct tkp_algo *a, void *opts, unsigned given,
                       const struct tkp_dispatch_row *row, struct tkp_error *err);

/* The slug whose table a GPU run takes: TKP_DISPATCH_SLUG's when set (a dry run on another
 * machine; tests), else the current device's (tkp_dispatch_slug); 0 when there is none (no
 * device, a name with no slug). */
int tkp_dispatch_device_slug(char *slug, size_t n);

#endif
