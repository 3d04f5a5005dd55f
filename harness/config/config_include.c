/* config_include.c — include "x.lua" in a config (docs/CONFIGS.md, "Sharing helpers:
 * include"): it runs a Lua file beside the including file or below it, in the config's sandbox
 * and under its limits (the file's instructions, memory and time count with the config's), and
 * returns what the file returns. The text of every file included is recorded in the plan beside
 * the config's, so the results file's /config holds it and the config hash covers it. Refused
 * with an error naming the including file and line: an absolute path or one with a '.', '..'
 * or empty component, a file whose real path leaves the config's folder (a symbolic link), a
 * missing or unreadable file, a cycle (named file by file), more than
 * TKP_CONFIG_MAX_INCLUDE_DEPTH includes inside each other, more than TKP_CONFIG_MAX_INCLUDES
 * files, an include from a `where` function or after the config ended. */
#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "config_parts.h"

/* What is wrong with an include's path, or NULL: a config names files beside it or below. */
static const char *bad_path(const char *path, size_t len)
{
    if (strlen(path) != len)
        return "a NUL byte";
    if (path[0] == '/')
        return "an absolute path";
    for (const char *c = path;; c++) {
        const size_t n = strcspn(c, "/");
        if (n == 0)
            return "an empty component (an empty path, '//' or a '/' at the end)";
        if (n == 1 && c[0] == '.')
            return "a '.' component";
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return "a '..' component (it would leave the config's folder)";
        if (!c[n])
            return NULL;
        c += n;
    }
}

/* The folder, '/' at its end, of the Lua file whose code calls include (its chunk name is
 * "@path"); the config's folder when a C function (pcall) calls it. */
static void caller_folder(lua_State *L, const struct load_ctx *ctx, char *out, size_t n)
{
    lua_Debug ar;
    snprintf(out, n, "%s", ctx->dir);
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && ar.source[0] == '@') {
        const char *file = ar.source + 1, *slash = strrchr(file, '/');
        snprintf(out, n, "%.*s", slash ? (int)(slash + 1 - file) : 0, file);
    }
}

/* Is the real path `real` the config itself or a file being included? Then it is a cycle:
 * the error names the files in order. */
static void check_cycle(lua_State *L, const struct load_ctx *ctx, const char *path,
                        const char *full, const char *real)
{
    char config_real[PATH_MAX];
    int from = -1; /* -1: the config itself */
    if (!realpath(ctx->path, config_real) || strcmp(config_real, real) != 0)
        for (from = 0; from < ctx->depth && strcmp(ctx->including_real[from], real) != 0; from++)
            ;
    if (from == ctx->depth)
        return;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, from < 0 ? ctx->path : ctx->including[from]);
    for (int i = from + 1; i < ctx->depth; i++) {
        luaL_addstring(&b, " includes ");
        luaL_addstring(&b, ctx->including[i]);
    }
    luaL_pushresult(&b);
    config_error(L, "include \"%s\": an include cycle: %s includes %s again", path,
                 lua_tostring(L, -1), full);
}

/* Read the file `full` and load it as a chunk on the stack; record its text in the plan. */
static void load_included(lua_State *L, struct load_ctx *ctx, const char *path, const char *full)
{
    size_t size;
    const char *why;
    char *text = config_read_text(full, &size, &why);
    if (!text && size > TKP_CONFIG_MAX_BYTES)
        config_error(L, "include \"%s\": %s is larger than the limit of %d bytes", path, full,
                     TKP_CONFIG_MAX_BYTES);
    if (!text)
        config_error(L, "include \"%s\": cannot read %s (%s)", path, full, why);
    int known = 0;
    for (size_t i = 0; i < ctx->plan->n_files; i++)
        known |= strcmp(ctx->plan->files[i].name, full) == 0;
    struct tkp_error err = { { 0 } };
    const int top = lua_gettop(L);
    const int too_many = !known && ctx->plan->n_files >= TKP_CONFIG_MAX_INCLUDES;
    const int rc = too_many ? 0 : config_load_chunk(L, full, text, size, &err);
    const int recorded = too_many || rc != LUA_OK || config_add_file(ctx->plan, full, text);
    free(text);
    if (too_many)
        config_error(L, "include \"%s\": more than %d files included", path,
                     TKP_CONFIG_MAX_INCLUDES);
    if (rc != LUA_OK && lua_gettop(L) == top)
        config_error(L, "include \"%s\": %s", path, err.msg);
    if (rc != LUA_OK)
        lua_error(L); /* the syntax error, naming the included file and its line */
    if (!recorded)
        config_error(L, "include \"%s\": out of memory recording %s", path, full);
}

/* include "x.lua": run the file, return its values. Stack: 1 path, 2 its real path, 3 its
 * name from the config's folder, 4 the chunk, then what it returns. */
static int lua_include(lua_State *L)
{
    struct load_ctx *ctx = ctx_of(L);
    size_t len;
    const char *path = luaL_checklstring(L, 1, &len), *why = bad_path(path, len);
    struct tkp_error err;
    if (tkp_gate_path("include", path, len, &err)) /* docs/ROBUSTNESS.md, "Text that enters" */
        config_error(L, "%s", err.msg);
    lua_settop(L, 1);
    if (ctx->ended || ctx->in_where)
        config_error(L, "include \"%s\": only while the config runs, not from a where() "
                     "function or a finalizer", path);
    if (why)
        config_error(L, "include \"%s\": the path has %s; a config includes files beside it or "
                     "below it, by a relative path such as \"lib/x.lua\"", path, why);
    char folder[512], full[1024], real[PATH_MAX], root[PATH_MAX];
    caller_folder(L, ctx, folder, sizeof folder);
    if ((size_t)snprintf(full, sizeof full, "%s%s", folder, path) >= sizeof full)
        config_error(L, "include \"%.60s...\": the path is too long", path);
    if (!realpath(full, real))
        config_error(L, "include \"%s\": cannot read %s: %s", path, full, strerror(errno));
    const size_t r = realpath(ctx->dir[0] ? ctx->dir : ".", root) ? strlen(root) : 0;
    if (!r || strncmp(real, root, r) != 0 || (real[r] != '/' && root[r - 1] != '/'))
        config_error(L, "include \"%s\": %s is %s, outside the config's folder (a symbolic "
                     "link?)", path, full, real);
    check_cycle(L, ctx, path, full, real);
    if (ctx->depth >= TKP_CONFIG_MAX_INCLUDE_DEPTH)
        config_error(L, "include \"%s\": more than %d includes inside each other", path,
                     TKP_CONFIG_MAX_INCLUDE_DEPTH);
    ctx->including_real[ctx->depth] = lua_pushstring(L, real);
    ctx->including[ctx->depth] = lua_pushstring(L, full);
    load_included(L, ctx, path, full);
    ctx->depth++;
    const int rc = lua_pcall(L, 0, LUA_MULTRET, 0);
    ctx->depth--;
    if (rc != LUA_OK)
        lua_error(L);
    return lua_gettop(L) - 3;
}

void config_register_include(lua_State *L, struct load_ctx *ctx)
{
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, lua_include, 1);
    lua_setglobal(L, "include");
}
