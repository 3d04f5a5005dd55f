/* results_row.h — the row a cell of the plan becomes in a results file (/sweeps/<sweep>/cells,
 * docs/DESIGN.md, "The results file (output of `run`): a contract"), and its key column. Here,
 * below the writer (results.h) and the axes (axes.h) alike, so that both describe it. */
#ifndef TKP_RESULTS_ROW_H
#define TKP_RESULTS_ROW_H

#include <stdint.h>

#include "limits_files.h"

struct tkp_cell_row {
    char key[TKP_RESULT_KEY_BYTES]; /* identifies the cell for --resume (tkp_results_key) */
    char algo[32], variant[64], options[256], dataset[256], mode[16], backend[8];
    int64_t batch, vocab, k, draws, seed;
    double p;
    char status[16];     /* ok, unsupported, oom, error */
    char message[256];
    double median_us, q1_us, q3_us, min_us, max_us, mean_us, stdev_us;
    int64_t n_samples, samples_offset, throttled;
    double bytes_read, bytes_written, gbps, bw_fraction;
    int64_t workspace_bytes, peak_device_bytes;
    int64_t rows_checked, rows_exact;
    double hit_rate, outliers, outlier_mass, iterations, rounds;
    double cell_seconds;
    int64_t noisy; /* 1: the timer stopped at its cap before the spread settled (timing.h) */
    int64_t run;   /* the run that wrote the row: /runs/<run> has its commit, binary and config */
    double sorted; /* keys sorted per row (a sort-based boundary search; 0 otherwise) */
    char dtype[16]; /* the logits' element type: f32, bf16, f16 (a file written before this
                     * column has none: its cells are f32, axes.h TKP_AXIS_QUIET) */
};

/* The key column of a cell from its whole identity: the identity itself when shorter than
 * TKP_RESULT_KEY_BYTES - 1, else a prefix, '#' and a 64-bit FNV-1a hash of all of it. */
void tkp_results_key(const char *identity, char key[TKP_RESULT_KEY_BYTES]);

#endif
