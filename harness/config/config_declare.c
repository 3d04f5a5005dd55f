/* config_declare.c — the functions a config calls (docs/CONFIGS.md, "Configs"): sweep "name"
 * { ... } and ablation "name" { base = ..., variants = ..., baseline = ... }, each checked when
 * it is called and expanded into cells at once (config_expand.c), the ablation's baseline and
 * variant order recorded for its figures (docs/FIGURES.md, "Figures"); pow2 and range for lists
 * of values; file "x.h5" (or file("x.h5", "how to make it")) for a logits file as a dataset.
 * include is config_include.c's. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_parts.h"

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

/* sweep "name" { ... }: the closure that receives the spec table. */
static int sweep_body(lua_State *L)
{
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    char what[96];
    snprintf(what, sizeof what, "sweep '%s'", name);
    check_declaration_allowed(L, what);
    luaL_checktype(L, 1, LUA_TTABLE);
    config_check_keys(L, 1, what, sweep_keys());
    struct algo_entry algos[MAX_AXIS];
    lua_getfield(L, 1, "algos");
    int n = config_parse_algo_list(L, -1, what, algos);
    lua_pop(L, 1);
    config_expand(L, 1, name, what, algos, n);
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
    const char *label = config_checked_name(L, label_idx, what, ": variant label");
    snprintf(label_what, sizeof label_what, "%s variant %s", what, label);
    config_parse_algo(L, entry_idx, label_what, e);
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

/* `baseline = "A"`: the variant an ablation's ratios divide by (docs/FIGURES.md, "Figures"), which
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
    config_check_keys(L, 1, what, keys);
    lua_getfield(L, 1, "base");
    if (!lua_istable(L, -1))
        config_error(L, "%s: 'base' must be a table of sweep keys", what);
    int base = lua_gettop(L);
    config_check_keys(L, base, what, sweep_keys());
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
    config_expand(L, base, name, what, algos, n);
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
    const char *name = config_checked_name(L, 1, "", kind);
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

/* Remember how to make the logits file `path` (named as its cells name it: config_file_path),
 * for the run that finds it missing; once per file (the first way given), for at most
 * MAX_MADE_BY files. */
#define MAX_MADE_BY 256
static void record_made_by(lua_State *L, const char *path, const char *made_by)
{
    struct load_ctx *ctx = ctx_of(L);
    struct tkp_plan *plan = ctx->plan;
    char full[TKP_MAX_DATASET_CHARS + 512];
    config_file_path(ctx->dir, path, full, sizeof full);
    for (size_t i = 0; i < plan->n_data_files; i++)
        if (strcmp(plan->data_files[i].path, full) == 0)
            return;
    if (plan->n_data_files >= MAX_MADE_BY)
        config_error(L, "file \"%s\": more than %d files say how to make them", path,
                     MAX_MADE_BY);
    struct tkp_data_file *grown =
        realloc(plan->data_files, (plan->n_data_files + 1) * sizeof *plan->data_files);
    char *p = grown ? strdup(full) : NULL, *m = p ? strdup(made_by) : NULL;
    if (grown)
        plan->data_files = grown;
    if (!m) {
        free(p);
        config_error(L, "file \"%s\": out of memory", path);
    }
    plan->data_files[plan->n_data_files++] = (struct tkp_data_file){ p, m };
}

/* file "x.h5", or file("x.h5", "make x"): a logits file as a dataset, relative to the config's
 * folder; the second argument says how to make the file, which a run whose cells read it names
 * when the file is missing (tkp_plan_check_files). */
static int lua_file(lua_State *L)
{
    size_t len, made_len = 0;
    const char *path = luaL_checklstring(L, 1, &len);
    const int has_how = !lua_isnoneornil(L, 2);
    const char *made_by = has_how && lua_type(L, 2) == LUA_TSTRING ? lua_tolstring(L, 2, &made_len)
                                                                    : NULL;
    if (strlen(path) != len)
        config_error(L, "file \"%s...\": the path holds a NUL byte", path);
    if (len > TKP_MAX_DATASET_CHARS - 5)
        config_error(L, "file \"%.60s...\": the path is too long (%zu characters; the limit is %d)",
                     path, len, TKP_MAX_DATASET_CHARS - 5);
    if (has_how && (!made_by || strlen(made_by) != made_len || made_len == 0 || made_len > 255))
        config_error(L, "file \"%s\": its second argument (how to make the file) must be a "
                     "string of 1 to 255 characters without NUL bytes", path);
    if (made_by)
        record_made_by(L, path, made_by);
    lua_pushfstring(L, "file:%s", path);
    return 1;
}

void config_register_api(lua_State *L, struct load_ctx *ctx)
{
    static const struct {
        const char *name;
        lua_CFunction fn;
    } api[] = { { "sweep", lua_sweep }, { "ablation", lua_ablation }, { "pow2", lua_pow2 },
                { "range", lua_range }, { "file", lua_file } };
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        lua_pushlightuserdata(L, ctx);
        lua_pushcclosure(L, api[i].fn, 1);
        lua_setglobal(L, api[i].name);
    }
}
