/* config_values.c — the value readers of the config language (docs/CONFIGS.md, "Configs"): a
 * table's keys against the allowed ones, numbers and lists of numbers, integers in a range,
 * names and lists of names (the text axes), algorithm entries with their options, the
 * `timing` table with the measurement policy's defaults (docs/DESIGN.md, "A run, step by
 * step"), and names copied into fixed buffers. Each raises a config error naming the
 * declaration and the key. */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "../datasets/datasets.h"
#include "config_parts.h"

static const char *const timing_keys[] = { "warmup", "warmup_seconds", "min_reps", "max_reps", "max_seconds",
                                           "target_rel", "cold", "graph", "timeout", NULL };

/* luaL_error with C printf formats (%g...); the message gets the config's file:line. */
int config_error(lua_State *L, const char *fmt, ...)
{
    struct tkp_error e; /* a long path is cut in its middle, the reason kept (tkp.h) */
    va_list ap;
    va_start(ap, fmt);
    tkp_error_vset(&e, fmt, ap);
    va_end(ap);
    return luaL_error(L, "%s", e.msg);
}

static int key_allowed(const char *key, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(key, allowed[i]) == 0)
            return 1;
    return 0;
}

/* Raise "<what>: unknown key 'x'" for a key of the table at idx not in `allowed`. */
void config_check_keys(lua_State *L, int idx, const char *what, const char *const *allowed)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            config_error(L, "%s: keys must be names, got a %s", what, luaL_typename(L, -1));
        const char *key = config_checked_name(L, -1, what, ": key");
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
int config_number_list(lua_State *L, int idx, const char *what, const char *key, double def,
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

void config_check_numbers(lua_State *L, const char *what, const char *key, const double *v,
                          int n, int integer, double lo, double hi)
{
    const struct tkp_domain d = { key, integer, lo, hi };
    struct tkp_error err;
    char name[160];
    for (int i = 0; i < n; i++) {
        if (n > 1)
            snprintf(name, sizeof name, "%s: %s[%d]", what, key, i + 1);
        else
            snprintf(name, sizeof name, "%s: %s", what, key);
        if (tkp_gate_number(&d, name, v[i], &err))
            config_error(L, "%s", err.msg);
    }
}

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

/* Is one of enum option o's choices spelled as a number (cluster's "4", threads' "256")? */
static int has_number_choice(const struct tkp_option *o)
{
    for (int i = 0; o->choices[i]; i++) {
        char *end = NULL;
        (void)strtod(o->choices[i], &end);
        if (end != o->choices[i] && *end == 0)
            return 1;
    }
    return 0;
}

/* A number for option `name`: an enum with a choice spelled as that number takes it (cluster = 4
 * is the choice "4"); an enum whose choices are numbers refuses any other number, naming its
 * choices (threads = 1 is no choice, not the choice at index 1); any other enum takes it as a
 * choice index, a number option as it is. */
static int set_number(const struct tkp_algo *a, void *opts, const char *name, double v,
                      struct tkp_error *err)
{
    const struct tkp_option *o = tkp_option_find(a, name);
    char text[32];
    snprintf(text, sizeof text, "%.15g", v);
    if (o && TKP_OPT_IS_ENUM(o) && has_number_choice(o))
        return tkp_option_set(a, opts, name, text, err);
    return tkp_option_set_number(a, opts, name, v, err);
}

void config_parse_algo(lua_State *L, int idx, const char *what, struct algo_entry *e)
{
    idx = lua_absindex(L, idx);
    const char *name = NULL;
    if (lua_type(L, idx) == LUA_TSTRING) {
        name = config_checked_name(L, idx, what, ": algorithm");
    } else if (lua_istable(L, idx)) {
        lua_geti(L, idx, 1);
        name = lua_type(L, -1) == LUA_TSTRING ? config_checked_name(L, -1, what, ": algorithm")
                                               : NULL;
        lua_pop(L, 1); /* the table at idx still holds the string */
    }
    if (!name)
        config_error(L, "%s: an algorithm is a name or { \"name\", option = value, ... }", what);
    e->algo = tkp_algo_find(name);
    if (!e->algo)
        config_error(L, "%s: unknown algorithm '%s' (see `topkp list`)", what, name);
    e->opts = entry_opts(L, e->algo->opts_size);
    e->given = 0;
    tkp_options_defaults(e->algo, e->opts);
    if (!lua_istable(L, idx))
        return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        struct tkp_error err;
        int rc = TKP_OK;
        if (lua_type(L, -2) == LUA_TSTRING)
            config_checked_name(L, -2, what, ": option");
        if (lua_type(L, -2) == LUA_TNUMBER) {
            if (lua_tointeger(L, -2) != 1)
                rc = -1, tkp_error_set(&err, "%s: extra positional value", name);
        } else if (lua_type(L, -2) != LUA_TSTRING) {
            rc = -1;
            tkp_error_set(&err, "%s: option names must be strings, got a %s key", name,
                          luaL_typename(L, -2));
        } else if (lua_type(L, -1) == LUA_TSTRING) {
            config_checked_name(L, -1, what, ": option value");
            rc = tkp_option_set(e->algo, e->opts, lua_tostring(L, -2), lua_tostring(L, -1),
                                &err);
        } else if (lua_type(L, -1) == LUA_TNUMBER) {
            rc = set_number(e->algo, e->opts, lua_tostring(L, -2), lua_tonumber(L, -1), &err);
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
        const ptrdiff_t at = lua_type(L, -2) == LUA_TSTRING
            ? tkp_option_find(e->algo, lua_tostring(L, -2)) - e->algo->options : 32;
        if (at < 32) /* the bits of struct tkp_cell.given (a module has fewer options) */
            e->given |= 1u << at;
        lua_pop(L, 1);
    }
}

/* A value of a text axis through the gate: a "file:" dataset as a path, any other as a name. */
static const char *checked_text(lua_State *L, int idx, const char *what, const struct tkp_axis *a)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    struct tkp_error err;
    char label[160];
    snprintf(label, sizeof label, "%s: %s", what, a->name);
    if (a->type == TKP_AXIS_DATASET && strncmp(s, "file:", 5) == 0
            ? tkp_gate_path(label, s + 5, len - 5, &err)
            : tkp_gate_name(label, s, len, NULL, &err))
        config_error(L, "%s", err.msg);
    return s;
}

/* A text axis of the sweep at idx (DATASET, ENUM): a name or a list of names (the default when
 * absent), each checked; the value stays on the stack so that the strings stay referenced. */
int config_text_list(lua_State *L, int idx, const char *what, const struct tkp_axis *a,
                     const char **out, double *index, int max)
{
    int n = 0;
    lua_getfield(L, idx, a->name);
    if (lua_isnil(L, -1) && (a->flags & TKP_AXIS_REQUIRED)) {
        config_error(L, "%s: '%s' is required", what, a->name);
    } else if (lua_isnil(L, -1)) {
        out[n++] = a->type == TKP_AXIS_ENUM ? a->choices[(int)a->def] : a->def_text;
    } else if (lua_type(L, -1) == LUA_TSTRING) {
        out[n++] = checked_text(L, -1, what, a);
    } else if (lua_istable(L, -1)) {
        lua_Integer len = luaL_len(L, -1);
        if (len == 0 || len > max)
            config_error(L, "%s: '%s' must list 1 to %d %ss, got %lld", what, a->name, max,
                         a->name, (long long)len);
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING)
                config_error(L, "%s: %s[%d] must be a name", what, a->name, (int)i);
            out[n++] = checked_text(L, -1, what, a);
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
    char name[64];
    config_number_list(L, ti, what, key, def, 0, v, 1);
    snprintf(name, sizeof name, "timing.%s", key);
    config_check_numbers(L, what, name, v, 1, integer, lo, hi); /* limits_config.h */
    return v[0];
}

/* The measurement policy's defaults (README, "Results"): one warm-up call and more for 0.05 s,
 * at least 10 samples a cell (20 on the GPU), at most 50 (200), a 0.5 s cap once the minimum is
 * taken, a 2 % relative IQR to stop early; a cell that hits a cap first, or has fewer than
 * TKP_POLICY_MIN_SAMPLES samples, is flagged noisy. A config that sets max_reps below the
 * default minimum gets that as its minimum too. */
void config_read_timing(lua_State *L, int idx, const char *what, struct tkp_timing *t)
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
    config_check_keys(L, ti, "timing", timing_keys);
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

/* A name or label (copied into a fixed buffer, and carried to every output): it passes the
 * one gate for names (tkp_gate_name, docs/ROBUSTNESS.md, "Text that enters"), which names the
 * offending byte escaped, never raw. */
const char *config_checked_name(lua_State *L, int idx, const char *what, const char *kind)
{
    size_t len;
    const char *name = lua_tolstring(L, idx, &len);
    char label[160];
    struct tkp_error err;
    snprintf(label, sizeof label, "%s%s name", what, kind);
    if (tkp_gate_name(label[0] == ' ' ? label + 1 : label, name, len, NULL, &err))
        config_error(L, "%s", err.msg);
    return name;
}

/* Parse the list at idx into algorithm entries; returns the count. */
int config_parse_algo_list(lua_State *L, int idx, const char *what, struct algo_entry *out)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        memset(&out[0], 0, sizeof out[0]); /* no variant label: "", as in the list form */
        config_parse_algo(L, idx, what, &out[0]);
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
        config_parse_algo(L, -1, what, &out[i - 1]);
        lua_pop(L, 1);
    }
    return (int)len;
}
