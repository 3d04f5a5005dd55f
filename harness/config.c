/* config.c — the Lua experiment language. A config is a Lua script run in a sandbox (base,
 * table, string and math libraries only) where these are defined:
 *   sweep "name" { algos = {...}, dataset = ..., vocab = {...}, batch = {...}, k = {...},
 *                  p = {...}, draws = n, seed = n, verify = n, where = function(cell) end,
 *                  timing = { warmup = n, warmup_seconds = x, min_reps = n, max_reps = n,
 *                             max_seconds = x } }
 *   ablation "name" { base = { <sweep keys but algos> }, variants = { A = {"qrita", ...} },
 *                     baseline = "A" }   (or variants = { {"A", {"qrita", ...}}, ... }: in order)
 *   pow2(a, b) -> {2^a, ..., 2^b}        range(a, b [, step]) -> {a, a+step, ..., <= b}
 *   file "x.h5" -> a dataset name that reads logits from x.h5 (relative to the config)
 *   backend     -> "cpu" or "gpu": the backend of this run, so a config can size itself
 * Every declaration is validated when it is called, against the modules' option tables and
 * the table of sweep axes (axes.c: dataset ... seed), so an error names the config's
 * file:line. A hostile config fails the same way, never crashes or hangs: the limits of
 * harness/limits.h (README.md, "Configs") bound its instructions, its memory, its wall-clock
 * time (lua_deadline.c) and every list and name it declares. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "../datasets/datasets.h"
#include "axes.h"
#include "limits.h"
#include "lua_deadline.h"
#include "plan.h"

static const char *const timing_keys[] = { "warmup", "warmup_seconds", "min_reps", "max_reps", "max_seconds",
                                           "target_rel", "cold", "graph", "timeout", NULL };

struct load_ctx {
    struct tkp_plan *plan;
    char dir[512];          /* the config's folder, for file "x.h5" */
    long long instructions; /* Lua instructions run so far (counted by budget_hook) */
    size_t lua_bytes;       /* bytes the Lua state holds (counted by capped_alloc) */
    int memory_refused;     /* capped_alloc refused an allocation */
    int n_sweeps;           /* sweep and ablation declarations so far */
    int in_where;           /* a `where` function is running */
    int ended;              /* the script has returned: no more declarations */
};

/* Instructions between two calls of budget_hook. */
#define HOOK_EVERY 1000

/* luaL_error with C printf formats (%g...); the message gets the config's file:line. */
static int config_error(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int config_error(lua_State *L, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return luaL_error(L, "%s", msg);
}

static struct load_ctx *ctx_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

/* The load context of a state: the allocator's user data (see tkp_config_load). */
static struct load_ctx *state_ctx(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return ud;
}

/* The count hook: past TKP_LUA_INSTRUCTION_BUDGET instructions every further call raises, so
 * a config that catches the error with pcall is stopped again at once. The hook runs in the
 * Lua function it interrupts: level 0 names its file:line. */
static void budget_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct load_ctx *ctx = state_ctx(L);
    ctx->instructions += HOOK_EVERY;
    if (ctx->instructions <= TKP_LUA_INSTRUCTION_BUDGET)
        return;
    lua_Debug here;
    if (lua_getstack(L, 0, &here) && lua_getinfo(L, "Sl", &here) && here.currentline > 0)
        lua_pushfstring(L, "%s:%d: ", here.short_src, here.currentline);
    else
        lua_pushliteral(L, "");
    lua_pushfstring(L, "the config ran more than %d Lua instructions (an endless loop?)",
                    TKP_LUA_INSTRUCTION_BUDGET);
    lua_concat(L, 2);
    lua_error(L);
}

/* The Lua state's allocator: it refuses to hold more than TKP_LUA_MEMORY_MIB. */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct load_ctx *ctx = ud;
    const size_t old = ptr ? osize : 0, cap = (size_t)TKP_LUA_MEMORY_MIB << 20;
    if (nsize == 0) {
        free(ptr);
        ctx->lua_bytes -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > cap - ctx->lua_bytes) {
        ctx->memory_refused = 1;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p)
        ctx->lua_bytes = ctx->lua_bytes - old + nsize;
    return p;
}

const char *tkp_mode_name(int32_t k, float p, int64_t vocab)
{
    int topk = tkp_topk_on(k, vocab), topp = tkp_topp_on(p);
    return topk && topp ? "topk_topp" : topk ? "topk" : topp ? "topp" : "none";
}

static int key_allowed(const char *key, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(key, allowed[i]) == 0)
            return 1;
    return 0;
}

/* Raise "<what>: unknown key 'x'" for a key of the table at idx not in `allowed`. */
static void check_keys(lua_State *L, int idx, const char *what, const char *const *allowed)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            config_error(L, "%s: keys must be names, got a %s", what, luaL_typename(L, -1));
        const char *key = lua_tostring(L, -1);
        if (!key_allowed(key, allowed)) {
            char list[512] = "";
            for (int i = 0; allowed[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         allowed[i]);
            config_error(L, "%s: unknown key '%s' (expected one of %s)", what, key, list);
        }
    }
}

/* Read field `key` of the table at idx as a list of numbers (a single number is a list of
 * one); `def` when absent. Returns the count, values in out[0..max). */
static int number_list(lua_State *L, int idx, const char *what, const char *key, double def,
                       int required, double *out, int max)
{
    int n = 0;
    lua_getfield(L, idx, key);
    if (lua_isnil(L, -1)) {
        if (required)
            config_error(L, "%s: '%s' is required", what, key);
        out[n++] = def;
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
        out[n++] = lua_tonumber(L, -1);
    } else if (lua_istable(L, -1)) {
        lua_Integer len = luaL_len(L, -1);
        if (len == 0)
            config_error(L, "%s: '%s' is an empty list", what, key);
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, -1, i);
            if (lua_type(L, -1) != LUA_TNUMBER)
                config_error(L, "%s: %s[%d] must be a number, got a %s", what, key, (int)i,
                           luaL_typename(L, -1));
            if (n == max)
                config_error(L, "%s: '%s' has more than %d values", what, key, max);
            out[n++] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    } else {
        config_error(L, "%s: '%s' must be a number or a list of numbers, got a %s", what, key,
                   luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return n;
}

static void check_integers(lua_State *L, const char *what, const char *key, const double *v,
                           int n, double lo, double hi)
{
    for (int i = 0; i < n; i++)
        if (v[i] != floor(v[i]) || v[i] < lo || v[i] > hi)
            config_error(L, "%s: %s = %g must be an integer in [%.0f, %.0f]", what, key, v[i], lo,
                       hi);
}

/* One algorithm entry: "name" or { "name", option = value, ... }. */
struct algo_entry {
    const struct tkp_algo *algo;
    void *opts;
    char variant[64];
};

/* The option struct of an algorithm entry being parsed: a Lua userdata anchored in the
 * registry until the state closes, so that a config error raised after it (which jumps past
 * any free) leaks nothing. */
static void *entry_opts(lua_State *L, size_t size)
{
    void *p = lua_newuserdatauv(L, size ? size : 1, 0);
    memset(p, 0, size ? size : 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, "topkp.entry_opts");
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 2);
    return p;
}

static void parse_algo(lua_State *L, int idx, const char *what, struct algo_entry *e)
{
    idx = lua_absindex(L, idx);
    const char *name = NULL;
    if (lua_type(L, idx) == LUA_TSTRING) {
        name = lua_tostring(L, idx);
    } else if (lua_istable(L, idx)) {
        lua_geti(L, idx, 1);
        name = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    if (!name)
        config_error(L, "%s: an algorithm is a name or { \"name\", option = value, ... }", what);
    e->algo = tkp_algo_find(name);
    if (!e->algo)
        config_error(L, "%s: unknown algorithm '%s' (see `topkp list`)", what, name);
    e->opts = entry_opts(L, e->algo->opts_size);
    tkp_options_defaults(e->algo, e->opts);
    if (!lua_istable(L, idx))
        return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        struct tkp_error err;
        int rc = TKP_OK;
        if (lua_type(L, -2) == LUA_TNUMBER) {
            if (lua_tointeger(L, -2) != 1)
                rc = -1, tkp_error_set(&err, "%s: extra positional value", name);
        } else if (lua_type(L, -2) != LUA_TSTRING) {
            rc = -1;
            tkp_error_set(&err, "%s: option names must be strings, got a %s key", name,
                          luaL_typename(L, -2));
        } else if (lua_type(L, -1) == LUA_TSTRING) {
            if (strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))
                rc = -1, tkp_error_set(&err, "%s option %s: the value holds a NUL byte", name,
                                       lua_tostring(L, -2));
            else
                rc = tkp_option_set(e->algo, e->opts, lua_tostring(L, -2), lua_tostring(L, -1),
                                    &err);
        } else if (lua_type(L, -1) == LUA_TNUMBER) {
            rc = tkp_option_set_number(e->algo, e->opts, lua_tostring(L, -2),
                                       lua_tonumber(L, -1), &err);
        } else if (lua_type(L, -1) == LUA_TBOOLEAN) {
            const char *v = lua_toboolean(L, -1) ? "on" : "off";
            rc = tkp_option_set(e->algo, e->opts, lua_tostring(L, -2), v, &err);
        } else {
            rc = -1;
            tkp_error_set(&err, "%s option %s: a %s is not a valid value", name,
                          lua_tostring(L, -2), luaL_typename(L, -1));
        }
        if (rc)
            config_error(L, "%s: %s", what, err.msg);
        lua_pop(L, 1);
    }
}

/* A text axis of the sweep at idx (DATASET, ENUM): a name or a list of names (the default when
 * absent), each checked; the value stays on the stack so that the strings stay referenced. */
static int text_list(lua_State *L, int idx, const char *what, const struct tkp_axis *a,
                     const char **out, double *index, int max)
{
    int n = 0;
    lua_getfield(L, idx, a->name);
    if (lua_isnil(L, -1) && (a->flags & TKP_AXIS_REQUIRED)) {
        config_error(L, "%s: '%s' is required", what, a->name);
    } else if (lua_isnil(L, -1)) {
        out[n++] = a->type == TKP_AXIS_ENUM ? a->choices[(int)a->def] : a->def_text;
    } else if (lua_type(L, -1) == LUA_TSTRING) {
        out[n++] = lua_tostring(L, -1);
    } else if (lua_istable(L, -1)) {
        lua_Integer len = luaL_len(L, -1);
        if (len == 0 || len > max)
            config_error(L, "%s: '%s' must list 1 to %d %ss, got %lld", what, a->name, max,
                         a->name, (long long)len);
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING)
                config_error(L, "%s: %s[%d] must be a name", what, a->name, (int)i);
            out[n++] = lua_tostring(L, -1);
            lua_pop(L, 1); /* the string stays alive: the list holds it */
        }
    } else {
        config_error(L, "%s: '%s' must be a name or a list of names", what, a->name);
    }
    for (int i = 0; i < n; i++) {
        int found = a->type == TKP_AXIS_DATASET
                        ? strncmp(out[i], "file:", 5) == 0 || tkp_dataset_find(out[i])
                        : 0;
        for (int c = 0; a->type == TKP_AXIS_ENUM && a->choices[c] && !found; c++)
            if (strcmp(a->choices[c], out[i]) == 0)
                found = 1, index[i] = c;
        if (!found)
            config_error(L, "%s: unknown %s '%s' (see `topkp list`)", what, a->name, out[i]);
    }
    return n;
}

/* A boolean field of the table at idx; `def` when absent. */
static int flag_field(lua_State *L, int idx, const char *what, const char *key, int def)
{
    lua_getfield(L, idx, key);
    int type = lua_type(L, -1), v = type == LUA_TNIL ? def : lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (type != LUA_TNIL && type != LUA_TBOOLEAN)
        config_error(L, "%s: timing.%s must be true or false", what, key);
    return v;
}

/* Field timing.`key` of the table at ti (`def` when absent), refused outside [lo, hi] (and
 * when not an integer, for counts) before any cast. */
static double timing_number(lua_State *L, int ti, const char *what, const char *key, double def,
                            double lo, double hi, int integer)
{
    double v[1];
    number_list(L, ti, what, key, def, 0, v, 1);
    if (!(v[0] >= lo && v[0] <= hi) || (integer && v[0] != floor(v[0])))
        config_error(L, "%s: timing.%s = %g must be %s in [%g, %g] (the limit of "
                     "harness/limits.h)", what, key, v[0], integer ? "an integer" : "a number",
                     lo, hi);
    return v[0];
}

/* The measurement policy's defaults (README, "Results"): one warm-up call and more for 0.05 s,
 * at least 10 samples a cell (20 on the GPU), at most 50 (200), a 0.5 s cap once the minimum is
 * taken, a 2 % relative IQR to stop early; a cell that hits a cap first, or has fewer than
 * TKP_POLICY_MIN_SAMPLES samples, is flagged noisy. A config that sets max_reps below the
 * default minimum gets that as its minimum too. */
static void read_timing(lua_State *L, int idx, const char *what, struct tkp_timing *t)
{
    lua_getglobal(L, "backend");
    const int gpu = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "gpu") == 0;
    lua_pop(L, 1);
    *t = (struct tkp_timing){ .warmup = 1, .warmup_seconds = 0.05, .min_reps = gpu ? 20 : 10, .max_reps = gpu ? 200 : 50,
                              .max_seconds = 0.5, .target_rel = 0.02, .cold = 1, .graph = 0,
                              .timeout = 300 };
    lua_getfield(L, idx, "timing");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_istable(L, -1))
        config_error(L, "%s: 'timing' must be a table", what);
    int ti = lua_gettop(L);
    check_keys(L, ti, "timing", timing_keys);
    t->warmup = (int)timing_number(L, ti, what, "warmup", t->warmup, 0, TKP_MAX_WARMUP, 1);
    t->warmup_seconds = timing_number(L, ti, what, "warmup_seconds", t->warmup_seconds, 0,
                                      TKP_MAX_TIMING_SECONDS, 0);
    t->max_reps = (int)timing_number(L, ti, what, "max_reps", t->max_reps, 1, TKP_MAX_REPS, 1);
    if (t->max_reps < t->min_reps)
        t->min_reps = t->max_reps; /* the default minimum, lowered to an explicit maximum */
    t->min_reps = (int)timing_number(L, ti, what, "min_reps", t->min_reps, 1, TKP_MAX_REPS, 1);
    t->max_seconds = timing_number(L, ti, what, "max_seconds", t->max_seconds, 0,
                                   TKP_MAX_TIMING_SECONDS, 0);
    /* a relative IQR: 0 never stops early, 1000 always does */
    t->target_rel = timing_number(L, ti, what, "target_rel", t->target_rel, 0, 1000, 0);
    t->timeout = timing_number(L, ti, what, "timeout", t->timeout, 0, TKP_MAX_TIMING_SECONDS, 0);
    t->cold = flag_field(L, ti, what, "cold", t->cold);
    t->graph = flag_field(L, ti, what, "graph", t->graph);
    if (t->warmup < 0 || !(t->warmup_seconds >= 0) || t->min_reps < 1 ||
        t->max_reps < t->min_reps || !(t->max_seconds > 0) || !(t->timeout > 0))
        config_error(L, "%s: timing needs warmup >= 0, warmup_seconds >= 0, "
                     "1 <= min_reps <= max_reps, max_seconds > 0, timeout > 0", what);
    lua_pop(L, 1);
}

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

#define MAX_AXIS TKP_MAX_LIST_VALUES

/* Refuse a sweep whose cross product (the algorithms, then the TKP_AXIS_LIST axes: sizes[]),
 * counted with overflow checks before any cell is made, passes TKP_MAX_CELLS. */
static void check_cross_product(lua_State *L, const char *what, const int *sizes)
{
    uint64_t total = 1;
    int overflow = 0, n = 1;
    char names[256] = "algos", counts[256];
    snprintf(counts, sizeof counts, "%d", sizes[0]);
    overflow |= __builtin_mul_overflow(total, (uint64_t)sizes[0], &total);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        overflow |= __builtin_mul_overflow(total, (uint64_t)sizes[n], &total);
        if (a->flags & TKP_AXIS_LIST) {
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
    if (strncmp(name, "file:", 5) == 0 && name[5] != '/')
        n = snprintf(out, a->size, "file:%s%s", dir, name + 5);
    else
        n = snprintf(out, a->size, "%s", name);
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
        v->n = text_list(L, idx, what, a, v->text, v->num, max);
        return;
    }
    v->n = number_list(L, idx, what, a->name, a->def, (a->flags & TKP_AXIS_REQUIRED) != 0,
                       v->num, max);
    if (a->type != TKP_AXIS_F32) {
        check_integers(L, what, a->name, v->num, v->n, a->min, a->max);
        return;
    }
    for (int i = 0; i < v->n; i++)
        if (isnan(v->num[i]))
            config_error(L, "%s: %s[%d] is NaN", what, a->name, i + 1);
        else if (v->num[i] < a->min || v->num[i] > a->max)
            config_error(L, "%s: %s = %g must be in [%g, %g]", what, a->name, v->num[i], a->min,
                         a->max);
}

/* The sweep keys: algos, the axes, then the rest. */
static const char *const *sweep_keys(void)
{
    static const char *keys[TKP_MAX_AXES + 5];
    if (!keys[0]) {
        int n = 0;
        keys[n++] = "algos";
        for (const struct tkp_axis *a = tkp_axes; a->name; a++)
            keys[n++] = a->name;
        keys[n++] = "verify", keys[n++] = "where", keys[n++] = "timing";
    }
    return keys;
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
static void expand(lua_State *L, int idx, const char *sweep, const char *what,
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
    number_list(L, idx, what, "verify", 4, 0, v, 1);
    check_integers(L, what, "verify", v, 1, 0, 1 << 20);
    int verify = (int)v[0];
    struct tkp_timing timing;
    read_timing(L, idx, what, &timing);
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

/* A name or label that is copied into a fixed buffer: refused, never cut, when too long, and
 * when it holds a NUL byte (C would see only the part before it). */
static const char *checked_name(lua_State *L, int idx, const char *what, const char *kind)
{
    size_t len;
    const char *name = lua_tolstring(L, idx, &len);
    if (!*name || len > TKP_MAX_NAME_CHARS || strlen(name) != len || strchr(name, '/'))
        config_error(L, "%s%s name '%.60s%s' must be 1-%d characters without '/' or NUL (it has %zu)",
                     what, kind, name, len > 60 ? "..." : "", TKP_MAX_NAME_CHARS, len);
    return name;
}

/* Refuse a declaration after the script ended or from inside a `where` function. */
static void check_declaration_allowed(lua_State *L, const char *kind)
{
    struct load_ctx *ctx = ctx_of(L);
    if (ctx->ended)
        config_error(L, "%s declared after the config ended (from a finalizer?): declarations "
                     "must run while the config runs", kind);
    if (ctx->in_where)
        config_error(L, "%s declared inside a where() function", kind);
}

/* Parse the list at idx into algorithm entries; returns the count. */
static int parse_algo_list(lua_State *L, int idx, const char *what, struct algo_entry *out)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        parse_algo(L, idx, what, &out[0]);
        return 1;
    }
    if (!lua_istable(L, idx))
        config_error(L, "%s: 'algos' is required: a list of names or { \"name\", opt = v }", what);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TNUMBER)
            config_error(L, "%s: 'algos' is a list; write options inside an entry: "
                          "algos = { { \"qrita\", search = \"binary\" } }", what);
    }
    lua_Integer len = luaL_len(L, idx);
    if (len == 0 || len > MAX_AXIS)
        config_error(L, "%s: 'algos' must list 1 to %d algorithms", what, MAX_AXIS);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_geti(L, idx, i);
        memset(&out[i - 1], 0, sizeof out[i - 1]);
        parse_algo(L, -1, what, &out[i - 1]);
        lua_pop(L, 1);
    }
    return (int)len;
}

/* sweep "name" { ... }: the closure that receives the spec table. */
static int sweep_body(lua_State *L)
{
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    char what[96];
    snprintf(what, sizeof what, "sweep '%s'", name);
    check_declaration_allowed(L, what);
    luaL_checktype(L, 1, LUA_TTABLE);
    check_keys(L, 1, what, sweep_keys());
    struct algo_entry algos[MAX_AXIS];
    lua_getfield(L, 1, "algos");
    int n = parse_algo_list(L, -1, what, algos);
    lua_pop(L, 1);
    expand(L, 1, name, what, algos, n);
    return 0;
}

static int by_label(const void *a, const void *b)
{
    return strcmp(((const struct algo_entry *)a)->variant, ((const struct algo_entry *)b)->variant);
}

/* How the `variants` table at idx is written: 1 for the list form { {"A", entry}, ... } (keys
 * 1..n only), 0 for the keyed form { A = entry, ... } (names only); a mix is refused. */
static int variants_listed(lua_State *L, int idx, const char *what)
{
    int numbers = 0, names = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING)
            names++;
        else if (lua_isinteger(L, -1))
            numbers++;
        else
            config_error(L, "%s: variant labels must be names", what);
    }
    if (numbers && names)
        config_error(L, "%s: 'variants' is either a list { {\"A\", entry}, ... } or a table "
                     "{ A = entry, ... }, not both", what);
    if (numbers && luaL_len(L, idx) != numbers)
        config_error(L, "%s: the list of variants has holes", what);
    return numbers > 0;
}

/* Variant `label` (the value at label_idx) with its algorithm entry at entry_idx into *e. */
static void parse_variant(lua_State *L, int label_idx, int entry_idx, const char *what,
                          struct algo_entry *e)
{
    char label_what[160];
    memset(e, 0, sizeof *e);
    const char *label = checked_name(L, label_idx, what, ": variant label");
    snprintf(label_what, sizeof label_what, "%s variant %s", what, label);
    parse_algo(L, entry_idx, label_what, e);
    snprintf(e->variant, sizeof e->variant, "%s", label);
}

/* The keyed form { A = entry, ... }: run (and drawn) by label, since Lua keeps no order of a
 * table's keys. Returns the count. */
static int keyed_variants(lua_State *L, int idx, const char *what, struct algo_entry *algos)
{
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (n == MAX_AXIS)
            config_error(L, "%s: more than %d variants", what, MAX_AXIS);
        parse_variant(L, -2, -1, what, &algos[n++]);
        lua_pop(L, 1);
    }
    qsort(algos, (size_t)n, sizeof algos[0], by_label);
    return n;
}

/* The list form { {"A", entry}, {"B", entry}, ... }: run and drawn in the order written. */
static int listed_variants(lua_State *L, int idx, const char *what, struct algo_entry *algos)
{
    lua_Integer len = luaL_len(L, idx);
    if (len > MAX_AXIS)
        config_error(L, "%s: more than %d variants", what, MAX_AXIS);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_geti(L, idx, i);
        const int item = lua_gettop(L);
        int extra = !lua_istable(L, item); /* anything but [1] and [2] */
        for (lua_pushnil(L); !extra && lua_next(L, item); lua_pop(L, 1))
            extra = !lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 || lua_tointeger(L, -2) > 2;
        if (extra || lua_geti(L, item, 1) != LUA_TSTRING || lua_geti(L, item, 2) == LUA_TNIL)
            config_error(L, "%s: variants[%d] must be { \"label\", algorithm entry }", what,
                         (int)i);
        parse_variant(L, item + 1, item + 2, what, &algos[i - 1]);
        for (lua_Integer j = 1; j < i; j++)
            if (strcmp(algos[j - 1].variant, algos[i - 1].variant) == 0)
                config_error(L, "%s: variant %s is listed twice", what, algos[i - 1].variant);
        lua_settop(L, item - 1);
    }
    return (int)len;
}

/* `baseline = "A"`: the variant an ablation's ratios divide by (README.md, "Figures"), which
 * must be one of its variants; the first declared when absent. */
static void ablation_baseline(lua_State *L, const char *what, const struct algo_entry *algos,
                              int n, char *out, size_t size)
{
    lua_getfield(L, 1, "baseline");
    if (lua_isnil(L, -1)) {
        snprintf(out, size, "%s", algos[0].variant);
    } else {
        const char *want = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int i = 0;
        while (want && i < n && strcmp(algos[i].variant, want) != 0)
            i++;
        if (!want || i == n) {
            char list[512] = "";
            for (int j = 0; j < n && strlen(list) < sizeof list - 80; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                         algos[j].variant);
            config_error(L, "%s: baseline %s%.63s%s names no variant (the variants: %s)", what,
                         want ? "'" : "a ", want ? want : luaL_typename(L, -1), want ? "'" : "",
                         list);
        }
        snprintf(out, size, "%s", want);
    }
    lua_pop(L, 1);
}

/* Record the ablation's baseline and variant order in the plan (the run record keeps them:
 * run_record.c). */
static void record_ablation(lua_State *L, const char *name, const char *what,
                            const char *baseline, const struct algo_entry *algos, int n)
{
    struct tkp_plan *plan = ctx_of(L)->plan;
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(algos[i].variant) + 1;
    struct tkp_ablation *grown =
        realloc(plan->ablations, (plan->n_ablations + 1) * sizeof *plan->ablations);
    char *labels = grown ? malloc(len) : NULL;
    if (grown)
        plan->ablations = grown;
    if (!labels)
        config_error(L, "%s: out of memory", what);
    labels[0] = 0;
    for (int i = 0; i < n; i++)
        strcat(strcat(labels, i ? "/" : ""), algos[i].variant);
    struct tkp_ablation *a = &plan->ablations[plan->n_ablations++];
    snprintf(a->sweep, sizeof a->sweep, "%s", name);
    snprintf(a->baseline, sizeof a->baseline, "%s", baseline);
    a->variants = labels;
}

/* ablation "name" { base = { sweep keys }, variants = { A = algo entry, ... } or
 * { {"A", algo entry}, ... }, baseline = "A" }. */
static int ablation_body(lua_State *L)
{
    static const char *const keys[] = { "base", "variants", "baseline", NULL };
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    char what[96], baseline[64];
    snprintf(what, sizeof what, "ablation '%s'", name);
    check_declaration_allowed(L, what);
    luaL_checktype(L, 1, LUA_TTABLE);
    check_keys(L, 1, what, keys);
    lua_getfield(L, 1, "base");
    if (!lua_istable(L, -1))
        config_error(L, "%s: 'base' must be a table of sweep keys", what);
    int base = lua_gettop(L);
    check_keys(L, base, what, sweep_keys());
    lua_getfield(L, base, "algos");
    if (!lua_isnil(L, -1))
        config_error(L, "%s: 'base' takes no algos; each variant names its algorithm", what);
    lua_pop(L, 1);
    lua_getfield(L, 1, "variants");
    if (!lua_istable(L, -1))
        config_error(L, "%s: 'variants' must be a table { label = algorithm entry }", what);
    int variants = lua_gettop(L);
    struct algo_entry algos[MAX_AXIS];
    int n = variants_listed(L, variants, what) ? listed_variants(L, variants, what, algos)
                                                : keyed_variants(L, variants, what, algos);
    if (n == 0)
        config_error(L, "%s: no variants", what);
    ablation_baseline(L, what, algos, n, baseline, sizeof baseline);
    expand(L, base, name, what, algos, n);
    record_ablation(L, name, what, baseline, algos, n);
    lua_pop(L, 2);
    return 0;
}

/* sweep "name" / ablation "name": returns the closure that takes the spec table. The names
 * declared so far are a set in the registry (a name is checked in constant time), at most
 * TKP_MAX_SWEEPS of them. */
static int declare(lua_State *L, const char *kind, lua_CFunction body)
{
    luaL_checkstring(L, 1);
    check_declaration_allowed(L, kind);
    const char *name = checked_name(L, 1, "", kind);
    struct load_ctx *ctx = ctx_of(L);
    if (ctx->n_sweeps == TKP_MAX_SWEEPS)
        config_error(L, "%s '%s': more than the limit of %d sweeps and ablations", kind, name,
                     TKP_MAX_SWEEPS);
    lua_getfield(L, LUA_REGISTRYINDEX, "tkp.declared");
    if (lua_getfield(L, -1, name) != LUA_TNIL)
        config_error(L, "%s '%s' is declared twice", kind, name);
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
    ctx->n_sweeps++;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, body, 2);
    return 1;
}

static int lua_sweep(lua_State *L) { return declare(L, "sweep", sweep_body); }
static int lua_ablation(lua_State *L) { return declare(L, "ablation", ablation_body); }

static int lua_pow2(lua_State *L)
{
    lua_Integer a = luaL_checkinteger(L, 1), b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, a >= 0 && b >= a && b <= 40, 2, "pow2(a, b) needs 0 <= a <= b <= 40");
    lua_createtable(L, (int)(b - a + 1), 0);
    for (lua_Integer e = a; e <= b; e++) {
        lua_pushinteger(L, (lua_Integer)1 << e);
        lua_rawseti(L, -2, e - a + 1);
    }
    return 1;
}

static int lua_range(lua_State *L)
{
    lua_Number a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
    lua_Number step = luaL_optnumber(L, 3, 1);
    luaL_argcheck(L, step > 0 && (b - a) / step < 100000, 3, "range(a, b, step) needs step > 0");
    int integers = lua_isinteger(L, 1) && lua_isinteger(L, 2) &&
                   (lua_isnone(L, 3) || lua_isinteger(L, 3));
    lua_newtable(L);
    for (int i = 0; a + step * i <= b + step * 1e-9; i++) {
        lua_Number v = a + step * i;
        if (integers)
            lua_pushinteger(L, (lua_Integer)v);
        else
            lua_pushnumber(L, v);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int lua_file(lua_State *L)
{
    size_t len;
    const char *path = luaL_checklstring(L, 1, &len);
    if (strlen(path) != len)
        config_error(L, "file \"%s...\": the path holds a NUL byte", path);
    if (len > TKP_MAX_DATASET_CHARS - 5)
        config_error(L, "file \"%.60s...\": the path is too long (%zu characters; the limit is %d)",
                     path, len, TKP_MAX_DATASET_CHARS - 5);
    lua_pushfstring(L, "file:%s", path);
    return 1;
}

/* Record a config file's name and text in the plan; 0 when out of memory. */
static int add_file(struct tkp_plan *plan, const char *name, const char *text)
{
    struct tkp_config_file *files =
        realloc(plan->files, (plan->n_files + 1) * sizeof *plan->files);
    if (!files)
        return 0;
    plan->files = files;
    char *n = strdup(name), *t = strdup(text);
    if (!n || !t) {
        free(n);
        free(t);
        return 0;
    }
    plan->files[plan->n_files].name = n;
    plan->files[plan->n_files].text = t;
    plan->n_files++;
    return 1;
}

/* The whole file, NUL-terminated; its size in *size. NULL when unreadable or larger than
 * TKP_CONFIG_MAX_BYTES (*size is then past the limit). */
static char *read_text(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    *size = 0;
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n > TKP_CONFIG_MAX_BYTES)
            break;
        if (n + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    if (!buf) {
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    *size = n;
    if (n > TKP_CONFIG_MAX_BYTES) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* setmetatable without finalizers: Lua 5.4 runs a __gc with debug hooks off, so the
 * instruction budget could not stop one, and it could run after the script ended (at
 * lua_close). A metatable with a __gc field is refused when it is set, the only moment Lua
 * marks an object for finalization. */
static int lua_setmetatable_no_gc(lua_State *L)
{
    if (lua_istable(L, 2) && (lua_pushliteral(L, "__gc"), lua_rawget(L, 2)) != LUA_TNIL)
        config_error(L, "setmetatable: __gc finalizers are not allowed in a config (they run "
                     "outside the instruction budget, possibly after the config ended)");
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

static int lua_panic_message(lua_State *L)
{
    fprintf(stderr, "topkp: unprotected Lua error: %s\n", lua_tostring(L, -1));
    return 0; /* Lua aborts */
}

static void open_sandbox(lua_State *L)
{
    static const luaL_Reg libs[] = { { LUA_GNAME, luaopen_base },
                                     { LUA_TABLIBNAME, luaopen_table },
                                     { LUA_STRLIBNAME, luaopen_string },
                                     { LUA_MATHLIBNAME, luaopen_math },
                                     { NULL, NULL } };
    for (const luaL_Reg *lib = libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    static const char *const removed[] = { "dofile", "loadfile", "load", "collectgarbage", NULL };
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    lua_getglobal(L, "setmetatable");
    lua_pushcclosure(L, lua_setmetatable_no_gc, 1);
    lua_setglobal(L, "setmetatable");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "tkp.declared");
}

/* The config's error message, for an error value that may not be a message, or a memory
 * error (Lua's own message names no file). */
static void config_failure(lua_State *L, const char *path, int rc, const struct load_ctx *ctx,
                           struct tkp_error *err)
{
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (ctx->memory_refused && (rc == LUA_ERRMEM || (msg && strcmp(msg, "not enough memory") == 0)))
        tkp_error_set(err, "%s: the config used more than %d MiB of Lua memory (a table or "
                      "string that grows without bound?)", path, TKP_LUA_MEMORY_MIB);
    else if (msg)
        tkp_error_set(err, "%s", msg);
    else
        tkp_error_set(err, "%s: the config raised a %s value (not a message)", path,
                      luaL_typename(L, -1));
}

/* Load the text as a chunk named after the file: whole (a NUL byte is refused with its
 * offset rather than ending the config early), and text only (no precompiled chunks). */
static int load_chunk(lua_State *L, const char *path, const char *text, size_t size,
                      struct tkp_error *err)
{
    const char *nul = memchr(text, 0, size);
    if (nul) {
        tkp_error_set(err, "%s: byte %zu is a NUL byte (a config is text)", path,
                      (size_t)(nul - text));
        return 1;
    }
    char chunk[600];
    snprintf(chunk, sizeof chunk, "@%s", path);
    return luaL_loadbufferx(L, text, size, chunk, "t");
}

int tkp_config_load(const char *path, enum tkp_backend backend, struct tkp_plan *plan,
                    struct tkp_error *err)
{
    memset(plan, 0, sizeof *plan);
    size_t size;
    char *text = read_text(path, &size);
    if (!text) {
        if (size > TKP_CONFIG_MAX_BYTES)
            tkp_error_set(err, "%s: larger than the limit of %d bytes for a config", path,
                          TKP_CONFIG_MAX_BYTES);
        else
            tkp_error_set(err, "%s: cannot read", path);
        return TKP_EINVAL;
    }
    struct load_ctx ctx = { .plan = plan };
    const char *slash = strrchr(path, '/');
    if (strlen(path) >= sizeof ctx.dir - 1) {
        tkp_error_set(err, "%.80s...: the path is too long (%zu characters; the limit is %zu)",
                      path, strlen(path), sizeof ctx.dir - 2);
        free(text);
        return TKP_EINVAL;
    }
    if (slash)
        snprintf(ctx.dir, sizeof ctx.dir, "%.*s/", (int)(slash - path), path);
    lua_State *L = lua_newstate(capped_alloc, &ctx);
    if (!L) {
        tkp_error_set(err, "%s: out of memory starting Lua", path);
        free(text);
        return TKP_EINVAL;
    }
    lua_atpanic(L, lua_panic_message);
    open_sandbox(L);
    static const struct {
        const char *name;
        lua_CFunction fn;
    } api[] = { { "sweep", lua_sweep }, { "ablation", lua_ablation }, { "pow2", lua_pow2 },
                { "range", lua_range }, { "file", lua_file } };
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        lua_pushlightuserdata(L, &ctx);
        lua_pushcclosure(L, api[i].fn, 1);
        lua_setglobal(L, api[i].name);
    }
    lua_pushstring(L, backend == TKP_GPU ? "gpu" : "cpu");
    lua_setglobal(L, "backend");
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
    int rc = load_chunk(L, path, text, size, err);
    if (rc == LUA_OK) /* first in a child under TKP_LUA_SECONDS (lua_deadline.c) */
        rc = tkp_lua_finishes_in_time(L, path, err) ? -1 : lua_pcall(L, 0, 0, 0);
    else if (lua_gettop(L) == 0)
        rc = -1; /* err is set: the chunk was refused before Lua saw it */
    ctx.ended = 1;
    if (rc > 0) {
        config_failure(L, path, rc, &ctx, err);
    } else if (rc == 0 && ctx.instructions > TKP_LUA_INSTRUCTION_BUDGET) {
        tkp_error_set(err, "%s: the config ran more than %d Lua instructions (an endless loop "
                      "caught by pcall?)", path, TKP_LUA_INSTRUCTION_BUDGET);
        rc = 1;
    } else if (rc == 0 && plan->n == 0) {
        tkp_error_set(err, "%s: declares no cells (no sweep, or every cell filtered out)", path);
        rc = 1;
    } else if (rc == 0 && !add_file(plan, path, text)) {
        tkp_error_set(err, "%s: out of memory recording the config's text", path);
        rc = 1;
    }
    lua_close(L);
    free(text);
    if (rc) {
        tkp_plan_free(plan);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

void tkp_plan_free(struct tkp_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        free(plan->cells[i].opts);
    for (size_t i = 0; i < plan->n_files; i++) {
        free(plan->files[i].name);
        free(plan->files[i].text);
    }
    for (size_t i = 0; i < plan->n_ablations; i++)
        free(plan->ablations[i].variants);
    free(plan->cells);
    free(plan->files);
    free(plan->ablations);
    memset(plan, 0, sizeof *plan);
}
