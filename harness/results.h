/* results.h — the results file of `topkp run` (DESIGN.md): provenance attributes on /, the
 * text of every Lua file under /config, and per sweep a compound table
 * /sweeps/<sweep>/cells (one row per cell, appended and flushed as it finishes) with the raw
 * repetition times in /sweeps/<sweep>/samples. The default HDF5 format is used on purpose:
 * a writer killed with -9 leaves a file that opens with every flushed row. */
#ifndef TKP_RESULTS_H
#define TKP_RESULTS_H

#include <stdint.h>
#include <stdio.h>

#include "../algos/tkp.h"

struct tkp_cell_row {
    char key[400];       /* identifies the cell for --resume */
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
};

struct tkp_results;

/* Create `path` (TKP_EINVAL if it exists and resume is 0) or, with resume, reopen it. */
int tkp_results_open(struct tkp_results **out, const char *path, int resume,
                     struct tkp_error *err);
void tkp_results_close(struct tkp_results *r);
/* Root provenance attribute (string). */
int tkp_results_attr(struct tkp_results *r, const char *name, const char *value);
int tkp_results_attr_num(struct tkp_results *r, const char *name, double value);
/* Read a root string attribute into buf; non-zero when it is absent. */
int tkp_results_attr_get(struct tkp_results *r, const char *name, char *buf, size_t n);
/* The dataset name of a config file under /config: its path with '/' as '|' (one dataset per
 * file, not a tree of groups). */
void tkp_results_config_link(const char *name, char *link, size_t n);
/* Store the text of a loaded config file under /config/<name> (once). */
int tkp_results_config(struct tkp_results *r, const char *name, const char *text);
/* Append one cell and its repetition times, then flush the file. */
int tkp_results_append(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
                       const double *samples_us, int64_t n, struct tkp_error *err);
/* Rows in /sweeps/<sweep>/cells (0 when the sweep has none yet). */
int64_t tkp_results_rows(struct tkp_results *r, const char *sweep);
/* The HDF5 file id (an hid_t) behind r, for the run records (run_record.c). */
int64_t tkp_results_handle(struct tkp_results *r);
/* Was a cell with this key already recorded as ok or unsupported? */
int tkp_results_done(struct tkp_results *r, const char *sweep, const char *key);

/* Print every sweep's cells (or only `sweep`) as TSV with one header line: a first column
 * `sweep`, then every field. Strings as written, numbers with %.9g. */
int tkp_results_export(const char *path, const char *sweep, FILE *out, struct tkp_error *err);
/* Print the root attributes as name<TAB>value lines. */
int tkp_results_info(const char *path, FILE *out, struct tkp_error *err);

#endif
