/* axes.c — the table of sweep axes and the generic code that stores, prints and copies them
 * (see axes.h; README.md, "Configs"; docs/DESIGN.md, "/sweeps/<sweep>/cells"). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../algos/common/half.h"
#include "../algos/common/prob.h"
#include "axes.h"
#include "results_row.h"

#define AT(f) .offset = offsetof(struct tkp_cell, f), .size = sizeof(((struct tkp_cell *)0)->f)
#define COLUMN(f)                                                                               \
    .column = offsetof(struct tkp_cell_row, f), .column_size = sizeof(((struct tkp_cell_row *)0)->f)

/* To add an axis: a field in struct tkp_cell (plan.h), a field appended last in
 * struct tkp_cell_row (results.h; results.c appends its column after the fixed ones, and
 * docs/DESIGN.md lists the columns), a row here, and its use where a cell runs (runner.c). The
 * row's place is its place in the cross product, the lines and the key. Every axis is part of
 * the key, so a new one changes every key (--resume onto a file written before it finds no cell
 * done) and a TKP_AXIS_PLAN one every plan (rerun scripts/update-goldens.sh) -- unless it is
 * TKP_AXIS_QUIET with a default that reproduces the cells from before it, like dtype. */

/* The logits' element types, by enum tkp_dtype (algos/common/half.h: tkp_dtype_name). */
static const char *const dtype_choices[] = { "f32", "bf16", "f16", NULL };
_Static_assert(TKP_DTYPE_COUNT == 3 && TKP_F32 == 0 && TKP_BF16 == 1 && TKP_F16 == 2,
               "dtype_choices follows enum tkp_dtype");

const struct tkp_axis tkp_axes[] = {
    { .name = "dataset", .help = "a dataset (above) or file \"x.h5\"", .type = TKP_AXIS_DATASET,
      AT(dataset), COLUMN(dataset), .def_text = "gaussian",
      .flags = TKP_AXIS_LIST | TKP_AXIS_WHERE | TKP_AXIS_PLAN },
    { .name = "vocab", .help = "V, tokens a row", .label = "V", .type = TKP_AXIS_I64, AT(vocab),
      COLUMN(vocab), .min = 1, .max = (double)TKP_MAX_VOCAB,
      .flags = TKP_AXIS_LIST | TKP_AXIS_REQUIRED | TKP_AXIS_WHERE | TKP_AXIS_PLAN | TKP_AXIS_PROGRESS },
    { .name = "batch", .help = "B, rows a call", .label = "B", .type = TKP_AXIS_I64, AT(batch),
      COLUMN(batch), .min = 1, .max = 1 << 20,
      .flags = TKP_AXIS_LIST | TKP_AXIS_REQUIRED | TKP_AXIS_WHERE | TKP_AXIS_PLAN | TKP_AXIS_PROGRESS },
    { .name = "k", .help = "top-k (off when <= 0 or >= V)", .label = "k", .type = TKP_AXIS_I32,
      AT(k), COLUMN(k), .def = 0, .min = -1, .max = 2147483647.0,
      .flags = TKP_AXIS_LIST | TKP_AXIS_WHERE | TKP_AXIS_PLAN | TKP_AXIS_PROGRESS },
    { .name = "p", .help = "top-p (off when >= 1)", .label = "p", .type = TKP_AXIS_F32, AT(p),
      .declared = offsetof(struct tkp_cell, p_declared), COLUMN(p), .def = 1.0,
      .min = -INFINITY, .max = INFINITY,
      .flags = TKP_AXIS_LIST | TKP_AXIS_WHERE | TKP_AXIS_PLAN | TKP_AXIS_PROGRESS },
    { .name = "draws", .help = "samples a row, for a module that samples", .type = TKP_AXIS_I32,
      AT(draws), COLUMN(draws), .def = 1, .min = 1, .max = 1 << 20 },
    { .name = "seed", .help = "the seed of the dataset and the sampler", .type = TKP_AXIS_U64,
      AT(seed), COLUMN(seed), .def = 1, .min = 0, .max = 9007199254740992.0 },
    /* Quiet: at f32 it is in no line and no key, so every plan and key from before it stands
     * (docs/DESIGN.md, "/sweeps/<sweep>/cells"). */
    { .name = "dtype", .help = "the logits' element type (f32, bf16, f16)", .label = "dtype",
      .type = TKP_AXIS_ENUM, AT(dtype), COLUMN(dtype), .def = TKP_F32, .choices = dtype_choices,
      .flags = TKP_AXIS_LIST | TKP_AXIS_WHERE | TKP_AXIS_PLAN | TKP_AXIS_PROGRESS |
               TKP_AXIS_QUIET },
    { .name = NULL },
};

_Static_assert(sizeof tkp_axes / sizeof tkp_axes[0] <= TKP_MAX_AXES + 1, "raise TKP_MAX_AXES");

int tkp_axis_is_default(const struct tkp_axis *a, const struct tkp_cell *c)
{
    if (a->type != TKP_AXIS_DATASET)
        return tkp_axis_number(a, c) == a->def;
    return strcmp((const char *)c + a->offset, a->def_text) == 0;
}

void tkp_axis_default_text(const struct tkp_axis *a, char *buf, size_t n)
{
    if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM)
        snprintf(buf, n, "%s", a->type == TKP_AXIS_ENUM ? a->choices[(int)a->def] : a->def_text);
    else
        snprintf(buf, n, "%g", a->def);
}

int tkp_axis_row_is_default(const struct tkp_axis *a, const struct tkp_cell_row *row)
{
    const char *col = (const char *)row + a->column;
    if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM) {
        char def[256];
        tkp_axis_default_text(a, def, sizeof def);
        return strcmp(col, def) == 0;
    }
    return a->type == TKP_AXIS_F32 ? *(const double *)col == a->def
                                   : *(const int64_t *)col == (int64_t)a->def;
}

const struct tkp_axis *tkp_axis_named(const char *name)
{
    for (const struct tkp_axis *a = tkp_axes; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

void tkp_axis_store(const struct tkp_axis *a, struct tkp_cell *c, double v)
{
    char *at = (char *)c + a->offset;
    switch (a->type) {
    case TKP_AXIS_ENUM: *(int *)at = (int)v; break;
    case TKP_AXIS_I64: *(int64_t *)at = (int64_t)v; break;
    case TKP_AXIS_I32: *(int32_t *)at = (int32_t)v; break;
    case TKP_AXIS_U64: *(uint64_t *)at = (uint64_t)v; break;
    case TKP_AXIS_F32:
        *(float *)at = (float)v;
        *(double *)((char *)c + a->declared) = v;
        break;
    case TKP_AXIS_DATASET: break; /* text: config_expand.c resolves and copies it */
    }
}

double tkp_axis_number(const struct tkp_axis *a, const struct tkp_cell *c)
{
    const char *at = (const char *)c + a->offset;
    switch (a->type) {
    case TKP_AXIS_ENUM: return *(const int *)at;
    case TKP_AXIS_I64: return (double)*(const int64_t *)at;
    case TKP_AXIS_I32: return *(const int32_t *)at;
    case TKP_AXIS_U64: return (double)*(const uint64_t *)at;
    case TKP_AXIS_F32: return *(const float *)at;
    case TKP_AXIS_DATASET: break;
    }
    return 0;
}

void tkp_axis_text(const struct tkp_axis *a, const struct tkp_cell *c, int precise, char *buf,
                   size_t n)
{
    const char *at = (const char *)c + a->offset;
    switch (a->type) {
    case TKP_AXIS_DATASET: snprintf(buf, n, "%s", at); break;
    case TKP_AXIS_ENUM: snprintf(buf, n, "%s", a->choices[*(const int *)at]); break;
    case TKP_AXIS_I64: snprintf(buf, n, "%lld", (long long)*(const int64_t *)at); break;
    case TKP_AXIS_I32: snprintf(buf, n, "%d", *(const int32_t *)at); break;
    case TKP_AXIS_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)at); break;
    case TKP_AXIS_F32:
        snprintf(buf, n, precise ? "%.9g" : "%g", (double)*(const float *)at);
        break;
    }
}

void tkp_axes_append(const struct tkp_cell *c, enum tkp_axes_style style, char *buf, size_t n)
{
    const unsigned want = style == TKP_AXES_PLAN ? TKP_AXIS_PLAN
                          : style == TKP_AXES_PROGRESS ? TKP_AXIS_PROGRESS : 0;
    const char sep = style == TKP_AXES_PLAN ? '\t' : style == TKP_AXES_PROGRESS ? ' ' : '|';
    size_t used = strlen(buf);
    for (const struct tkp_axis *a = tkp_axes; a->name && used < n; a++) {
        if ((want && !(a->flags & want)) || ((a->flags & TKP_AXIS_QUIET) && tkp_axis_is_default(a, c)))
            continue;
        char value[sizeof c->dataset];
        tkp_axis_text(a, c, style == TKP_AXES_KEY, value, sizeof value);
        const int labelled = style != TKP_AXES_KEY && a->label;
        used += (size_t)snprintf(buf + used, n - used, "%c%s%s%s", sep, labelled ? a->label : "",
                                 labelled ? "=" : "", value);
    }
}

int64_t tkp_axis_int(const struct tkp_axis *a, const struct tkp_cell *c)
{
    const char *at = (const char *)c + a->offset;
    return a->type == TKP_AXIS_I64   ? *(const int64_t *)at
           : a->type == TKP_AXIS_I32 ? *(const int32_t *)at
           : a->type == TKP_AXIS_U64 ? (int64_t)*(const uint64_t *)at
                                     : *(const int *)at;
}

void tkp_axes_to_row(const struct tkp_cell *c, struct tkp_cell_row *row)
{
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        char *col = (char *)row + a->column;
        if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM)
            tkp_axis_text(a, c, 1, col, a->column_size);
        else if (a->type == TKP_AXIS_F32)
            *(double *)col = *(const double *)((const char *)c + a->declared);
        else
            *(int64_t *)col = tkp_axis_int(a, c);
    }
}
