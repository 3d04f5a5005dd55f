/* results_row.h — the row a cell of the plan becomes in a results file (/sweeps/<sweep>/cells,
 * docs/DESIGN.md, "The results file (output of `run`): a contract"): its fields (the axes' of
 * axes.def, the modules' statistics), its columns in file order and its key column. Here,
 * below the writer (results.h), a cell's row (cell_row.h) and the axes (axes.h) alike, so that
 * all describe it. */
#ifndef TKP_RESULTS_ROW_H
#define TKP_RESULTS_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "limits_files.h"

/* The column in struct tkp_cell_row of an axis of each type (axes.h, enum tkp_axis_type):
 * integers as int64, F32 as the float64 the config wrote, names as strings. */
#define TKP_COLUMN_DATASET(name) char name[256];
#define TKP_COLUMN_ENUM(name) char name[16];
#define TKP_COLUMN_I64(name) int64_t name;
#define TKP_COLUMN_I32(name) int64_t name;
#define TKP_COLUMN_U64(name) int64_t name;
#define TKP_COLUMN_F32(name) double name;
/* The statistics columns a results row can hold: the union of the modules' statistics tables
 * (algos/tkp.h, struct tkp_stat; tkp_results_stat_columns). */
enum { TKP_MAX_STAT_COLUMNS = 32 };

struct tkp_cell_row {
    char key[TKP_RESULT_KEY_BYTES]; /* identifies the cell for --resume (tkp_results_key) */
    char algo[32], variant[64], options[256], mode[16], backend[8];
    char status[16];     /* ok, unsupported, oom, error */
    char message[256];
    double median_us, q1_us, q3_us, min_us, max_us, mean_us, stdev_us;
    int64_t n_samples, samples_offset, throttled;
    double bytes_read, bytes_written, gbps, bw_fraction;
    int64_t workspace_bytes, peak_device_bytes;
    int64_t rows_checked, rows_exact;
    double stats[TKP_MAX_STAT_COLUMNS]; /* per row, by tkp_results_stat_columns' order; NaN
                                           where the cell's module does not report it */
    double cell_seconds;
    int64_t noisy; /* 1: the timer stopped at its cap before the spread settled (timing.h) */
    int64_t run;   /* the run that wrote the row: /runs/<run> has its commit, binary and config */
    /* one column per axis of harness/plan/axes.def, of its type: dataset, vocab, batch, k, p,
     * draws, seed, dtype (a file written before the dtype column has none: its cells are f32,
     * axes.h TKP_AXIS_QUIET). Their place in the file is results.c's. */
#define TKP_AXIS(name, type, ...) TKP_COLUMN_##type(name)
#include "axes.def"
#undef TKP_AXIS
};

/* ---- the columns of a cells row, in file order (results_row.c) ---- */
/* A column's kind in the file: a fixed-size string, an int64 or a float64. */
enum tkp_row_kind { TKP_ROW_STR, TKP_ROW_I64, TKP_ROW_F64 };
struct tkp_row_field {
    const char *name;
    size_t offset; /* in struct tkp_cell_row */
    enum tkp_row_kind kind;
    size_t size;
    int stat; /* a module statistic's column */
};
enum { TKP_ROW_MAX_FIELDS = 128 };
/* The columns of a cells row in file order (the results writer's HDF5 type): the fixed
 * columns, then any module statistic they do not name, then any axis of
 * harness/plan/axes.def they do not name. Returns how many (<= TKP_ROW_MAX_FIELDS). */
size_t tkp_row_fields(struct tkp_row_field out[TKP_ROW_MAX_FIELDS]);
/* Their names (at most cap into names); returns how many there are. */
size_t tkp_results_columns(const char **names, size_t cap);
/* The statistics columns in the order of tkp_cell_row.stats (at most cap into names): those
 * the fixed columns name, then every other statistic of the modules' tables (tkp_algos[]
 * order, each table's order), each name once. Returns how many there are. */
size_t tkp_results_stat_columns(const char **names, size_t cap);
/* The index of statistics column `name` in tkp_cell_row.stats, or -1. */
int tkp_results_stat_column(const char *name);

/* The key column of a cell from its whole identity: the identity itself when shorter than
 * TKP_RESULT_KEY_BYTES - 1, else a prefix, '#' and a 64-bit FNV-1a hash of all of it. */
void tkp_results_key(const char *identity, char key[TKP_RESULT_KEY_BYTES]);

#endif
