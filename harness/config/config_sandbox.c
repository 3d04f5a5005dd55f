/* config_sandbox.c — the Lua state a config runs in, and its limits (docs/CONFIGS.md, "Configs";
 * the limits of harness/config/limits_config.h): an allocator that refuses past TKP_LUA_MEMORY_MIB, a count
 * hook that stops the config past TKP_LUA_INSTRUCTION_BUDGET instructions, and the safe
 * libraries only (base, table, string, math; no load, dofile, loadfile, collectgarbage, and no
 * __gc finalizers). The wall-clock limit is lua_deadline.c's. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>

#include "config_parts.h"

/* Instructions between two calls of budget_hook. */
#define HOOK_EVERY 1000

/* The load context of a state: the allocator's user data (see config_sandbox_new). */
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

lua_State *config_sandbox_new(struct load_ctx *ctx)
{
    lua_State *L = lua_newstate(capped_alloc, ctx);
    if (!L)
        return NULL;
    lua_atpanic(L, lua_panic_message);
    open_sandbox(L);
    return L;
}

void config_count_instructions(lua_State *L)
{
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
}
