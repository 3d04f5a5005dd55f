/* axes.h — the sweep axes as data (docs/CONFIGS.md, "Configs"; docs/DESIGN.md, "Adding an axis"):
 * one row per axis of a cell in harness/plan/axes.def (dataset, vocab, batch, k, p, draws, seed,
 * dtype), as the modules' options are rows of `struct tkp_option`. The rows make the cell's
 * fields (plan.h) and the results columns (results_row.h); the table tkp_axes[] built from them
 * drives the sweep keys a config may write, their parsing and checks (config_values.c,
 * config_expand.c), the cross product, the cell `where` sees, the --dry-run line, the progress
 * line, the resume key (tkp_results_key), the axes' columns of a results row and the peer
 * request (peer_cell.c). The algorithms are the outermost axis of every sweep but not a row:
 * an entry carries a module and its options (config_values.c). */
#ifndef TKP_AXES_H
#define TKP_AXES_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct tkp_cell_row; /* results_row.h */

enum tkp_axis_type {
    TKP_AXIS_DATASET, /* char[] in the cell: a dataset name (`topkp list`) or file:PATH */
    TKP_AXIS_ENUM,    /* int in the cell: the index of one of `choices` */
    TKP_AXIS_I64,     /* int64_t */
    TKP_AXIS_I32,     /* int32_t */
    TKP_AXIS_U64,     /* uint64_t */
    TKP_AXIS_F32,     /* float, and the value as written as a double at `declared` */
};

enum {
    TKP_AXIS_LIST = 1u << 0,     /* a value or a list the cross product runs over; else one value */
    TKP_AXIS_REQUIRED = 1u << 1, /* no default: a sweep must set it */
    TKP_AXIS_WHERE = 1u << 2,    /* a field of the cell a sweep's `where` gets */
    TKP_AXIS_PLAN = 1u << 3,     /* in `run --dry-run` lines (tests/golden/) */
    TKP_AXIS_PROGRESS = 1u << 4, /* in the progress lines of `run` */
    TKP_AXIS_QUIET = 1u << 5,    /* at its default: left out of the plan and progress lines and
                                  * of the key, so that configs and results files written before
                                  * the axis plan, print and resume as before; a results file
                                  * without its column reads as the default */
    TKP_AXIS_PEER = 1u << 6,     /* sent to a peer in its `open` request as name=value */
};

struct tkp_axis {
    const char *name;   /* the sweep key, the `where` field */
    const char *help;   /* for `topkp list` */
    const char *label;  /* "V" prints V=<value> in plan and progress lines; NULL: the value alone */
    enum tkp_axis_type type;
    size_t offset, size; /* the value in struct tkp_cell */
    size_t declared;     /* F32: the double as written in struct tkp_cell */
    size_t column, column_size; /* its column in struct tkp_cell_row: int64 (the integers),
                                 * float64 (F32, as declared) or a string (DATASET, ENUM) */
    double def, min, max; /* the default (ENUM: an index) and the allowed range of numbers */
    const char *def_text; /* DATASET: the default */
    const char *const *choices; /* ENUM only, NULL-terminated */
    unsigned flags;
};

#define TKP_MAX_AXES 16
/* The axes in the order of the cross product (the last varies fastest), of every printed
 * line and of the key; NULL-named at the end. */
extern const struct tkp_axis tkp_axes[];

/* Is the cell's value of the axis its default (ENUM: the index `def`; DATASET: `def_text`)? */
int tkp_axis_is_default(const struct tkp_axis *a, const struct tkp_cell *c);
/* The axis's default as text (the value a results file without its column holds). */
void tkp_axis_default_text(const struct tkp_axis *a, char *buf, size_t n);
/* Does a results row's column of the axis hold its default? */
int tkp_axis_row_is_default(const struct tkp_axis *a, const struct tkp_cell_row *row);
/* The axis named `name`, or NULL. */
const struct tkp_axis *tkp_axis_named(const char *name);

/* Store a number (ENUM: an index) into the cell's axis; F32 keeps `v` as declared too. */
void tkp_axis_store(const struct tkp_axis *a, struct tkp_cell *c, double v);
/* The axis's value in the cell as a number (ENUM: the index; DATASET: 0). */
double tkp_axis_number(const struct tkp_axis *a, const struct tkp_cell *c);
/* An integer axis's value (I64, I32, U64; ENUM: the index), exactly. */
int64_t tkp_axis_int(const struct tkp_axis *a, const struct tkp_cell *c);
/* The axis's value as text: F32 with %g, or %.9g when `precise` (the key). */
void tkp_axis_text(const struct tkp_axis *a, const struct tkp_cell *c, int precise, char *buf,
                   size_t n);

enum tkp_axes_style {
    TKP_AXES_PLAN,     /* "\tdataset\tV=..\tB=..": the TKP_AXIS_PLAN axes */
    TKP_AXES_PROGRESS, /* " V=.. B=..": the TKP_AXIS_PROGRESS axes */
    TKP_AXES_KEY,      /* "|dataset|V|B|k|p|draws|seed[|dtype]": every axis, p with %.9g
                        * (a TKP_AXIS_QUIET axis only off its default) */
    TKP_AXES_PEER,     /* "\tvocab=..\tbatch=..": the TKP_AXIS_PEER axes, quiet or not, p
                        * with %.9g (a peer's `open` request, peer_cell.c) */
};
/* A cell with every axis at its default (a required one at its least value) and every other
 * field zero: what code and tests start a cell from rather than filling one by hand. */
void tkp_cell_defaults(struct tkp_cell *c);
/* Append the cell's axes in `style` to the string in buf (of n bytes). */
void tkp_axes_append(const struct tkp_cell *c, enum tkp_axes_style style, char *buf, size_t n);
/* Copy the cell's axes into their columns of a results row. */
void tkp_axes_to_row(const struct tkp_cell *c, struct tkp_cell_row *row);

#endif
