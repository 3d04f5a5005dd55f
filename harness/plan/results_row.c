/* results_row.c — the columns of a cells row (results_row.h): their names, kinds and places
 * in struct tkp_cell_row, in file order (docs/DESIGN.md, "The results file (output of `run`):
 * a contract"). The results writer builds its HDF5 type from them (store/results.c); the
 * statistics columns are here, below the row a cell's statistics are written into
 * (measure/cell_row.c), so that both read one order. */
#include <stddef.h>
#include <string.h>

#include "../algos/tkp.h"
#include "axes.h"
#include "results_row.h"

/* The columns of a cell row, from one table of fields. A statistics column (S) is named here
 * only where files already have it; its place in tkp_cell_row.stats is its place in
 * tkp_results_stat_columns. */
#define STR TKP_ROW_STR /* the column kinds of results_row.h, short */
#define I64 TKP_ROW_I64
#define F64 TKP_ROW_F64
#define F(name, kind)                                                                         \
    { #name, offsetof(struct tkp_cell_row, name), kind,                                       \
      sizeof(((struct tkp_cell_row *)0)->name), 0 }
#define S(name) { #name, 0, F64, sizeof(double), 1 }
/* An axis's column at its place in files written before, of its type (tkp_row_fields) */
#define AXIS(name) { #name, offsetof(struct tkp_cell_row, name), STR, 0, 0 }
static const struct tkp_row_field cell_fields[] = {
    F(key, STR), F(algo, STR), F(variant, STR), F(options, STR), AXIS(dataset), F(mode, STR),
    F(backend, STR), AXIS(batch), AXIS(vocab), AXIS(k), AXIS(p), AXIS(draws),
    AXIS(seed), F(status, STR), F(message, STR), F(median_us, F64), F(q1_us, F64),
    F(q3_us, F64), F(min_us, F64), F(max_us, F64), F(mean_us, F64), F(stdev_us, F64),
    F(n_samples, I64), F(samples_offset, I64), F(throttled, I64), F(bytes_read, F64),
    F(bytes_written, F64), F(gbps, F64), F(bw_fraction, F64), F(workspace_bytes, I64),
    F(peak_device_bytes, I64), F(rows_checked, I64), F(rows_exact, I64), S(hit_rate),
    S(outliers), S(outlier_mass), S(iterations), S(rounds),
    F(cell_seconds, F64),
    F(noisy, I64),
    F(run, I64),
    S(sorted),
};
#undef F
#undef S
#undef AXIS
#define N_FIELDS (sizeof cell_fields / sizeof cell_fields[0])

/* The column of axis a, of its type (results_row.h, TKP_COLUMN_<TYPE>). */
static struct tkp_row_field axis_field(const struct tkp_axis *a)
{
    const enum tkp_row_kind kind = a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM ? STR
                                   : a->type == TKP_AXIS_F32                               ? F64
                                                                                           : I64;
    return (struct tkp_row_field){ a->name, a->column, kind, a->column_size, 0 };
}

/* The statistics columns cell_fields names (at most N_FIELDS into names); returns how many. */
static size_t fixed_stats(const char **names)
{
    size_t n = 0;
    for (size_t i = 0; i < N_FIELDS; i++)
        if (cell_fields[i].stat)
            names[n++] = cell_fields[i].name;
    return n;
}

size_t tkp_results_stat_columns(const char **names, size_t cap)
{
    const char *fixed[N_FIELDS];
    return tkp_stat_union(fixed, fixed_stats(fixed), names, cap);
}

int tkp_results_stat_column(const char *name)
{
    const char *names[TKP_MAX_STAT_COLUMNS];
    const size_t n = tkp_results_stat_columns(names, TKP_MAX_STAT_COLUMNS);
    for (size_t i = 0; i < n && i < TKP_MAX_STAT_COLUMNS; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

/* The column of statistic `name`, tkp_cell_row.stats[i]. */
static struct tkp_row_field stat_field(const char *name, size_t i)
{
    return (struct tkp_row_field){ name, offsetof(struct tkp_cell_row, stats) + sizeof(double) * i,
                                   F64, sizeof(double), 1 };
}

/* The columns of a cells row, in file order: cell_fields, then each module statistic it does
 * not name, then each axis whose column it does not name (harness/plan/axes.def), so that a new
 * statistic's or axis's column is appended after the fixed ones (docs/DESIGN.md: columns are
 * only ever appended), the axes last: export prints a quiet axis a file lacks last. Returns how
 * many. */
_Static_assert(N_FIELDS + TKP_MAX_AXES + TKP_MAX_STAT_COLUMNS <= TKP_ROW_MAX_FIELDS,
               "raise TKP_ROW_MAX_FIELDS");
size_t tkp_row_fields(struct tkp_row_field out[TKP_ROW_MAX_FIELDS])
{
    size_t n = 0, s = 0; /* cell_fields' statistics come first in tkp_results_stat_columns */
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct tkp_axis *a = tkp_axis_named(cell_fields[i].name);
        out[n++] = cell_fields[i].stat ? stat_field(cell_fields[i].name, s++)
                   : a                 ? axis_field(a)
                                       : cell_fields[i];
    }
    const char *stats[TKP_MAX_STAT_COLUMNS];
    const size_t n_stats = tkp_results_stat_columns(stats, TKP_MAX_STAT_COLUMNS);
    for (; s < n_stats && s < TKP_MAX_STAT_COLUMNS; s++)
        out[n++] = stat_field(stats[s], s);
    for (const struct tkp_axis *a = tkp_axes; a->name && n < TKP_ROW_MAX_FIELDS; a++) {
        int listed = 0;
        for (size_t i = 0; i < N_FIELDS && !listed; i++)
            listed = strcmp(cell_fields[i].name, a->name) == 0;
        if (!listed)
            out[n++] = axis_field(a);
    }
    return n;
}

size_t tkp_results_columns(const char **names, size_t cap)
{
    struct tkp_row_field f[TKP_ROW_MAX_FIELDS];
    const size_t n = tkp_row_fields(f);
    for (size_t i = 0; i < n && i < cap; i++)
        names[i] = f[i].name;
    return n;
}
