/* results.h — the results file of `topkp run` (docs/DESIGN.md): provenance attributes on /, the
 * text of every Lua file under /config, and per sweep a compound table
 * /sweeps/<sweep>/cells (one row per cell, appended and flushed as it finishes) with the raw
 * repetition times in /sweeps/<sweep>/samples. The default HDF5 format is used on purpose:
 * a writer killed with -9 leaves a file that opens with every flushed row. */
#ifndef TKP_RESULTS_H
#define TKP_RESULTS_H

#include <stdint.h>
#include <stdio.h>

#include "../algos/tkp.h"
#include "limits_files.h"
#include "results_row.h"

struct tkp_results;

/* Create `path` (TKP_EINVAL if it exists and resume is 0) or, with resume, reopen it. Either
 * way the file is locked (flock LOCK_EX) until tkp_results_close: a second writer is refused
 * ("in use by another topkp run"). --resume refuses, writing nothing, a file that is not a
 * results file of this layout (a logits file, a non-HDF5 file, other cells columns). A file
 * that holds no cells and no run records (a run killed before its first flush) is started
 * afresh, with a message, by run and --resume alike. */
int tkp_results_open(struct tkp_results **out, const char *path, int resume,
                     struct tkp_error *err);
/* Was the file created (or a partial one replaced) by tkp_results_open? */
int tkp_results_fresh(const struct tkp_results *r);
/* Allocate room on disk for `bytes` more (and HDF5's metadata) before writing anything that
 * is not a cell; on failure nothing more is written and the error names the file. */
int tkp_results_reserve(struct tkp_results *r, uint64_t bytes, struct tkp_error *err);
/* Mark the file failed (a write outside tkp_results_append failed): nothing more is written. */
void tkp_results_fail(struct tkp_results *r);
/* Has a write failed (nothing more is written, the file is left unclosed)? */
int tkp_results_failed(const struct tkp_results *r);
/* The path the results were opened with. */
const char *tkp_results_path(const struct tkp_results *r);
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
/* Append one cell's repetition times and flush, then its row and flush. Any failed write is an
 * error naming the file; after one, nothing more is written (rows before stay readable). */
int tkp_results_append(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
                       const double *samples_us, int64_t n, struct tkp_error *err);
/* Rows in /sweeps/<sweep>/cells (0 when the sweep has none yet). */
int64_t tkp_results_rows(struct tkp_results *r, const char *sweep);
/* The memory type of struct tkp_cell_row (an hid_t; the caller closes it): merge.c reads the
 * shards' rows with it. */
int64_t tkp_results_row_type(void);
/* The HDF5 file id (an hid_t) behind r, for the run records (run_record.c). */
int64_t tkp_results_handle(struct tkp_results *r);
/* Was a cell with this key already recorded as ok or unsupported? */
int tkp_results_done(struct tkp_results *r, const char *sweep, const char *key);

/* What `topkp export --format` prints (docs/RESULTS.md, "Results"): */
enum tkp_export_format {
    TKP_EXPORT_TSV,  /* one header line; tabs and newlines in strings as spaces; %.9g; NaN `nan` */
    TKP_EXPORT_CSV,  /* the same columns, RFC 4180 quoting (a field with , " or a line break is
                        quoted, quotes doubled), LF line ends; %.9g; NaN `nan` */
    TKP_EXPORT_JSON, /* an array of objects {"sweep": ..., "<column>": ...}, one per line;
                        numbers exact (round-trip); NaN and infinities null */
};
/* "tsv", "csv" or "json" into *format; -1 for any other name. */
int tkp_export_format_of(const char *name, enum tkp_export_format *format);
/* Print every sweep's cells (or only `sweep`) in `format`: a first column `sweep`, then every
 * column of the cells table by name, in its order. Read in a child process (read_guard.h). */
int tkp_results_export_as(const char *path, const char *sweep, enum tkp_export_format format,
                          FILE *out, struct tkp_error *err);
/* tkp_results_export_as in TSV. */
int tkp_results_export(const char *path, const char *sweep, FILE *out, struct tkp_error *err);
/* Print the root attributes as name<TAB>value lines. */
int tkp_results_info(const char *path, FILE *out, struct tkp_error *err);
/* Does reading `path` as export does (in a child process) crash or hang the HDF5 library? 1,
 * with err saying how, or 0 (it reads, or fails with an ordinary error). The callers ask before
 * they open a file in this process: `run --resume` (runner.c) and `merge` (merge_shards.c);
 * tkp_results_open itself does not read in a child. */
int tkp_results_read_crashes(const char *path, struct tkp_error *err);

#endif
