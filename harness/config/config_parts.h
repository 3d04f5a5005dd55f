/* config_parts.h — what the parts of the config loader share, private to them (docs/CONFIGS.md,
 * "Configs"; docs/DESIGN.md, "The floors"): the load context, an algorithm entry, and the
 * functions one part calls in another. The parts:
 *   config.c          the entry point (tkp_config_load): read the file, run it, the plan
 *   config_sandbox.c  the Lua state and its limits: allocator, count hook, safe libraries
 *   config_values.c   the value readers: numbers, names, lists, algorithm entries, timing
 *   config_expand.c   one sweep's cross product, filtered by `where`, into the plan's cells
 *   config_declare.c  the functions a config calls: sweep, ablation, pow2, range, file
 *   config_include.c  include "x.lua": a Lua file beside the config or below it */
#ifndef TKP_CONFIG_PARTS_H
#define TKP_CONFIG_PARTS_H

#include <lua.h>
#include <stddef.h>
#include <stdio.h>

#include "axes.h"
#include "limits_config.h"
#include "plan.h"

struct load_ctx {
    struct tkp_plan *plan;
    const char *path;       /* the config file */
    char dir[512];          /* the config's folder, for file "x.h5" */
    /* The files being included, outermost first (config_include.c): their names from the
     * config's folder and their real paths, Lua strings on the stack of the include that runs
     * each. */
    const char *including[TKP_CONFIG_MAX_INCLUDE_DEPTH];
    const char *including_real[TKP_CONFIG_MAX_INCLUDE_DEPTH];
    int depth;              /* includes running, one inside the other */
    long long instructions; /* Lua instructions run so far (counted by budget_hook) */
    size_t lua_bytes;       /* bytes the Lua state holds (counted by capped_alloc) */
    int memory_refused;     /* capped_alloc refused an allocation */
    int n_sweeps;           /* sweep and ablation declarations so far */
    int in_where;           /* a `where` function is running */
    int ended;              /* the script has returned: no more declarations */
};

/* A logits file a config names (file "x.h5") as its cells name it: under the config's folder
 * `dir` unless absolute. snprintf's count (n or more: cut). */
static inline int config_file_path(const char *dir, const char *path, char *out, size_t n)
{
    return snprintf(out, n, "%s%s", path[0] == '/' ? "" : dir, path);
}

/* The load context of a function a config calls: its first upvalue (config_register_api). */
static inline struct load_ctx *ctx_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

#define MAX_AXIS TKP_MAX_LIST_VALUES

/* One algorithm entry: "name" or { "name", option = value, ... }. */
struct algo_entry {
    const struct tkp_algo *algo;
    void *opts;
    unsigned given; /* bit i: the entry sets option i of algo's table (struct tkp_cell) */
    char variant[64];
};

/* config.c: the whole file, NUL-terminated, its size in *size; NULL when unreadable, not a
 * regular file (a directory is named as one) or larger than TKP_CONFIG_MAX_BYTES (*size is
 * then past the limit), with the reason in *why. */
char *config_read_text(const char *path, size_t *size, const char **why);
/* config.c: load the text as a chunk named after the file: whole (a NUL byte or a byte that is
 * not UTF-8 is refused with its line and offset, in err, rather than ending the config early;
 * a UTF-8 byte-order mark is skipped, any other refused by name), and text only (no precompiled
 * chunks). Lua's status; -1 with err set when refused before Lua saw it. */
int config_load_chunk(lua_State *L, const char *path, const char *text, size_t size,
                      struct tkp_error *err);
/* config.c: record a Lua file's name and text in the plan (once per name); 0 when out of
 * memory. */
int config_add_file(struct tkp_plan *plan, const char *name, const char *text);

/* config_include.c: define include in the state, a closure over ctx. */
void config_register_include(lua_State *L, struct load_ctx *ctx);

/* config_sandbox.c: a Lua state with the capped allocator (its user data is ctx), the panic
 * message and the safe libraries only; NULL when out of memory. */
lua_State *config_sandbox_new(struct load_ctx *ctx);
/* config_sandbox.c: start counting the state's instructions against the budget. */
void config_count_instructions(lua_State *L);

/* config_values.c: luaL_error with C printf formats (%g...); the message gets the config's
 * file:line. */
int config_error(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void config_check_keys(lua_State *L, int idx, const char *what, const char *const *allowed);
int config_number_list(lua_State *L, int idx, const char *what, const char *key, double def,
                int required, double *out, int max);
void config_check_numbers(lua_State *L, const char *what, const char *key, const double *v, int n,
                          int integer, double lo, double hi);
void config_parse_algo(lua_State *L, int idx, const char *what, struct algo_entry *e);
int config_parse_algo_list(lua_State *L, int idx, const char *what, struct algo_entry *out);
int config_text_list(lua_State *L, int idx, const char *what, const struct tkp_axis *a,
              const char **out, double *index, int max);
void config_read_timing(lua_State *L, int idx, const char *what, struct tkp_timing *t);
const char *config_checked_name(lua_State *L, int idx, const char *what, const char *kind);

/* config_expand.c: expand one sweep (the spec table at idx) for the given algorithm entries
 * into the plan's cells. */
void config_expand(lua_State *L, int idx, const char *sweep, const char *what,
            struct algo_entry *algos, int n_algos);

/* config_declare.c: define sweep, ablation, pow2, range and file in the state, each a closure
 * over ctx. */
void config_register_api(lua_State *L, struct load_ctx *ctx);

#endif
