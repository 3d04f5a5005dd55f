/* axes.c — the table of sweep axes built from harness/plan/axes.def and the generic code that
 * stores, prints and copies them (see axes.h; docs/CONFIGS.md, "Configs";
 * docs/DESIGN.md, "Adding an axis"). */
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
/* F32: the value as the config wrote it (plan.h, TKP_CELL_FIELD_F32) */
#define DECLARED_DATASET(f)
#define DECLARED_ENUM(f)
#define DECLARED_I64(f)
#define DECLARED_I32(f)
#define DECLARED_U64(f)
#define DECLARED_F32(f) .declared = offsetof(struct tkp_cell, f##_declared),

/* The logits' element types, by enum tkp_dtype (algos/common/half.h: tkp_dtype_name). */
static const char *const tkp_axis_dtype_choices[] = { "f32", "bf16", "f16", NULL };
_Static_assert(TKP_DTYPE_COUNT == 3 && TKP_F32 == 0 && TKP_BF16 == 1 && TKP_F16 == 2,
               "tkp_axis_dtype_choices follows enum tkp_dtype");

/* The rows of harness/plan/axes.def (its comment says how to add one). */
const struct tkp_axis tkp_axes[] = {
#define TKP_AXIS(n, t, ...)                                                                     \
    { .name = #n, .type = TKP_AXIS_##t, AT(n), COLUMN(n), DECLARED_##t(n) __VA_ARGS__ },
#include "axes.def"
#undef TKP_AXIS
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

void tkp_cell_defaults(struct tkp_cell *c)
{
    memset(c, 0, sizeof *c);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        if (a->type == TKP_AXIS_DATASET)
            snprintf((char *)c + a->offset, a->size, "%s", a->def_text);
        else
            tkp_axis_store(a, c, (a->flags & TKP_AXIS_REQUIRED) ? a->min : a->def);
    }
}

void tkp_axes_append(const struct tkp_cell *c, enum tkp_axes_style style, char *buf, size_t n)
{
    static const struct { unsigned want; char sep; int precise, quiet; } styles[] = {
        [TKP_AXES_PLAN] = { TKP_AXIS_PLAN, '\t', 0, 1 },
        [TKP_AXES_PROGRESS] = { TKP_AXIS_PROGRESS, ' ', 0, 1 },
        [TKP_AXES_KEY] = { 0, '|', 1, 1 },
        [TKP_AXES_PEER] = { TKP_AXIS_PEER, '\t', 1, 0 },
    };
    const unsigned want = styles[style].want;
    size_t used = strlen(buf);
    for (const struct tkp_axis *a = tkp_axes; a->name && used < n; a++) {
        if ((want && !(a->flags & want)) ||
            (styles[style].quiet && (a->flags & TKP_AXIS_QUIET) && tkp_axis_is_default(a, c)))
            continue;
        char value[sizeof c->dataset];
        tkp_axis_text(a, c, styles[style].precise, value, sizeof value);
        /* plan and progress: the label, if any; the peer request: the name */
        const char *label = style == TKP_AXES_PEER ? a->name : style == TKP_AXES_KEY ? NULL
                                                                                     : a->label;
        used += (size_t)snprintf(buf + used, n - used, "%c%s%s%s", styles[style].sep,
                                 label ? label : "", label ? "=" : "", value);
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
