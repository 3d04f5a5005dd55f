/* config_expand.c — one sweep into cells (docs/CONFIGS.md, "Configs"; docs/DESIGN.md, "The module
 * table": the axes as data): each axis of harness/plan/axes.c read and checked, the cross product
 * of the algorithms and the axes counted against TKP_MAX_CELLS before any cell is made, one
 * odometer over it (the last axis fastest), each cell offered to the sweep's `where`, and the
 * cells kept appended to the plan. */
#include <lauxlib.h>
#include <lua.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_parts.h"

static void push_cell_table(lua_State *L, const struct tkp_cell *c)
{
    lua_createtable(L, 0, 12);
    lua_pushstring(L, c->algo->name), lua_setfield(L, -2, "algo");
    lua_pushstring(L, c->variant), lua_setfield(L, -2, "variant");
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        if (!(a->flags & TKP_AXIS_WHERE))
            continue;
        if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM) {
            char text[sizeof c->dataset];
            tkp_axis_text(a, c, 0, text, sizeof text);
            lua_pushstring(L, text);
        } else if (a->type == TKP_AXIS_F32) {
            lua_pushnumber(L, tkp_axis_number(a, c));
        } else {
            lua_pushinteger(L, (lua_Integer)tkp_axis_int(a, c));
        }
        lua_setfield(L, -2, a->name);
    }
    lua_pushstring(L, tkp_mode_name(c->k, c->p, c->vocab)), lua_setfield(L, -2, "mode");
    for (const struct tkp_option *o = c->algo->options; o && o->name; o++) {
        char value[64];
        tkp_option_value(o, c->opts, value, sizeof value);
        lua_pushstring(L, value), lua_setfield(L, -2, o->name);
    }
}

/* Append cell c to the plan; 0 when its array cannot grow (out of memory). */
static int add_cell(struct tkp_plan *plan, const struct tkp_cell *c)
{
    if (plan->n == plan->cap) {
        size_t cap = plan->cap ? 2 * plan->cap : 64;
        struct tkp_cell *cells = realloc(plan->cells, cap * sizeof *cells);
        if (!cells)
            return 0;
        plan->cells = cells;
        plan->cap = cap;
    }
    plan->cells[plan->n++] = *c;
    return 1;
}


/* Refuse a sweep whose cross product (the algorithms, then the TKP_AXIS_LIST axes: sizes[]),
 * counted with overflow checks before any cell is made, passes TKP_MAX_CELLS. The message
 * names the list axes but a quiet one at one value (axes.h: it reads as before the axis). */
static void check_cross_product(lua_State *L, const char *what, const int *sizes)
{
    uint64_t total = 1;
    int overflow = 0, n = 1;
    char names[256] = "algos", counts[256];
    snprintf(counts, sizeof counts, "%d", sizes[0]);
    overflow |= __builtin_mul_overflow(total, (uint64_t)sizes[0], &total);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        overflow |= __builtin_mul_overflow(total, (uint64_t)sizes[n], &total);
        if ((a->flags & TKP_AXIS_LIST) && !((a->flags & TKP_AXIS_QUIET) && sizes[n] == 1)) {
            snprintf(names + strlen(names), sizeof names - strlen(names), " x %s", a->name);
            snprintf(counts + strlen(counts), sizeof counts - strlen(counts), " x %d", sizes[n]);
        }
    }
    if (overflow || total > TKP_MAX_CELLS)
        config_error(L, "%s: its cross product has %s%llu cells (%s = %s), more than the limit "
                     "of %d cells a run", what, overflow ? "over " : "",
                     (unsigned long long)total, names, counts, TKP_MAX_CELLS);
}

/* Call the sweep's `where` (at index `where`) on cell c: does it keep the cell? A `where` that
 * raises a value that is not a message is named as such (a table would print "(null)"). */
static int where_keeps(lua_State *L, int where, const char *what, const struct tkp_cell *c)
{
    struct load_ctx *ctx = ctx_of(L);
    lua_pushvalue(L, where);
    push_cell_table(L, c);
    ctx->in_where++;
    int rc = lua_pcall(L, 1, 1, 0);
    ctx->in_where--;
    if (rc != LUA_OK) {
        if (lua_type(L, -1) == LUA_TSTRING)
            lua_error(L);
        config_error(L, "%s: where() raised a %s value (not a message)", what,
                     luaL_typename(L, -1));
    }
    int keep = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return keep;
}

/* The dataset of a cell (axis a), with a relative file "x.h5" under the config's folder;
 * refused when longer than TKP_MAX_DATASET_CHARS rather than cut. */
static void cell_dataset(lua_State *L, const char *what, const char *dir, const char *name,
                         const struct tkp_axis *a, struct tkp_cell *c)
{
    char *out = (char *)c + a->offset;
    int n;
    if (strncmp(name, "file:", 5) == 0 && a->size > 5) {
        memcpy(out, "file:", 5);
        n = 5 + config_file_path(dir, name + 5, out + 5, a->size - 5);
    } else {
        n = snprintf(out, a->size, "%s", name);
    }
    if (n < 0 || n > TKP_MAX_DATASET_CHARS || (size_t)n >= a->size)
        config_error(L, "%s: %s '%.60s...' is too long (%d characters; the limit is %d)",
                     what, a->name, out, n, TKP_MAX_DATASET_CHARS);
}

/* The cell's options, refused rather than cut when they do not fit. (Its results key is built
 * from the whole identity by the runner: tkp_results_key.) */
static void cell_options(lua_State *L, const char *what, struct tkp_cell *c)
{
    char options[1024];
    tkp_options_format(c->algo, c->opts, options, sizeof options);
    if (strlen(options) >= sizeof c->options)
        config_error(L, "%s: the options '%.60s...' are too long (the limit is %zu characters)",
                     what, options, sizeof c->options - 1);
    memcpy(c->options, options, strlen(options) + 1);
}

/* The values a sweep gives one axis: numbers (ENUM: indices) or names. */
struct axis_values {
    int n;
    double num[MAX_AXIS];
    const char *text[MAX_AXIS];
};

/* Read and check axis a of the sweep at idx (a text axis leaves its value on the stack). */
static void read_axis(lua_State *L, int idx, const char *what, const struct tkp_axis *a,
                      struct axis_values *v)
{
    const int max = (a->flags & TKP_AXIS_LIST) ? MAX_AXIS : 1;
    if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM) {
        v->n = config_text_list(L, idx, what, a, v->text, v->num, max);
        return;
    }
    v->n = config_number_list(L, idx, what, a->name, a->def, (a->flags & TKP_AXIS_REQUIRED) != 0,
                       v->num, max);
    /* a float axis holds floats: its range is at most the finite floats */
    const int integer = a->type != TKP_AXIS_F32;
    config_check_numbers(L, what, a->name, v->num, v->n, integer,
                         integer ? a->min : fmax(a->min, -FLT_MAX),
                         integer ? a->max : fmin(a->max, FLT_MAX));
}

/* `timing = { graph = true }` is the sweep-wide spelling of the graph axis (graph = 1 in every
 * cell; docs/DESIGN.md, "A run, step by step"): folded into that axis's values here, so that the
 * cell, its key and its results column say it. Both spellings in one sweep are an error. */
static void graph_from_timing(lua_State *L, int idx, const char *what, struct tkp_timing *timing,
                              struct axis_values *values)
{
    if (!timing->graph)
        return;
    lua_getfield(L, idx, "graph");
    const int both = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (both)
        config_error(L, "%s: timing.graph and the graph axis are one setting: give one of them",
                     what);
    for (int i = 0; tkp_axes[i].name; i++)
        if (strcmp(tkp_axes[i].name, "graph") == 0)
            values[i] = (struct axis_values){ .n = 1, .num = { 1 } };
    timing->graph = 0; /* the cell's graph axis holds it now */
}

/* Advance the odometer at[0..n) over sizes[0..n), the last digit fastest; 0 past the end. */
static int odometer_next(int *at, const int *sizes, int n)
{
    for (int d = n - 1; d >= 0; d--) {
        if (++at[d] < sizes[d])
            return 1;
        at[d] = 0;
    }
    return 0;
}

/* Make the cell at odometer position `at`: algos[at[0]], then each axis's value at[1 + i]. */
static void make_cell(lua_State *L, const char *sweep, const char *what, const int *at,
                      const struct algo_entry *algos, const struct axis_values *values,
                      struct tkp_cell *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->sweep, sizeof c->sweep, "%s", sweep);
    c->algo = algos[at[0]].algo;
    snprintf(c->variant, sizeof c->variant, "%s", algos[at[0]].variant);
    c->opts = algos[at[0]].opts;
    c->given = algos[at[0]].given;
    for (int i = 0; tkp_axes[i].name; i++) {
        const struct tkp_axis *a = &tkp_axes[i];
        const struct axis_values *v = &values[i];
        if (a->type == TKP_AXIS_DATASET)
            cell_dataset(L, what, ctx_of(L)->dir, v->text[at[1 + i]], a, c);
        else
            tkp_axis_store(a, c, v->num[at[1 + i]]);
    }
}

/* Expand one sweep (the spec table at idx) for the given algorithm entries: the cross product
 * of the algorithms and the axes (tkp_axes, in that order), filtered by `where`. */
void config_expand(lua_State *L, int idx, const char *sweep, const char *what,
                   struct algo_entry *algos, int n_algos)
{
    struct load_ctx *ctx = ctx_of(L);
    const int top = lua_gettop(L);
    struct axis_values values[TKP_MAX_AXES];
    int sizes[1 + TKP_MAX_AXES], at[1 + TKP_MAX_AXES] = { 0 }, n = 1;
    sizes[0] = n_algos;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        read_axis(L, idx, what, a, &values[n - 1]);
        sizes[n] = values[n - 1].n;
    }
    double v[1];
    config_number_list(L, idx, what, "verify", 4, 0, v, 1);
    config_check_numbers(L, what, "verify", v, 1, 1, 0, 1 << 20);
    int verify = (int)v[0];
    struct tkp_timing timing;
    config_read_timing(L, idx, what, &timing);
    graph_from_timing(L, idx, what, &timing, values);
    lua_getfield(L, idx, "where");
    int where = lua_gettop(L);
    if (!lua_isnil(L, where) && !lua_isfunction(L, where))
        config_error(L, "%s: 'where' must be a function", what);
    check_cross_product(L, what, sizes);

    do {
        struct tkp_cell c;
        make_cell(L, sweep, what, at, algos, values, &c);
        c.verify_rows = verify;
        c.timing = timing;
        if (!lua_isnil(L, where) && !where_keeps(L, where, what, &c))
            continue;
        cell_options(L, what, &c);
        if (ctx->plan->n >= TKP_MAX_CELLS)
            config_error(L, "%s: the plan has more than the limit of %d cells a run", what,
                         TKP_MAX_CELLS);
        c.opts = malloc(c.algo->opts_size ? c.algo->opts_size : 1);
        if (!c.opts)
            config_error(L, "%s: out of memory for cell %zu", what, ctx->plan->n + 1);
        memcpy(c.opts, algos[at[0]].opts, c.algo->opts_size);
        if (!add_cell(ctx->plan, &c)) {
            free(c.opts);
            config_error(L, "%s: out of memory for cell %zu", what, ctx->plan->n + 1);
        }
    } while (odometer_next(at, sizes, n));
    lua_settop(L, top); /* where, the text axes */
}
