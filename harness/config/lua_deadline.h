/* lua_deadline.h — a config's wall-clock limit (TKP_LUA_SECONDS, harness/config/limits_config.h): the loaded
 * chunk is run once in a forked child under alarm() before the caller runs it in-process. */
#ifndef TKP_LUA_DEADLINE_H
#define TKP_LUA_DEADLINE_H

#include <lua.h>

#include "../algos/tkp.h"

/* Run the chunk on top of L's stack in a forked copy of the process, limited to
 * TKP_LUA_SECONDS. Returns 0 when it finished there (with whatever outcome: the caller runs it
 * again, in-process, to get the same outcome and the plan); else sets err, naming `path` (and
 * the line the config was at when it ran out of time) and returns -1. L is left as it was. */
int tkp_lua_finishes_in_time(lua_State *L, const char *path, struct tkp_error *err);

#endif
