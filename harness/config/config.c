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
 *   include "lib/x.lua" -> runs a Lua file beside the config or below it, returns its values
 *   backend     -> "cpu" or "gpu": the backend of this run, so a config can size itself
 * Every declaration is validated when it is called, against the modules' option tables and
 * the table of sweep axes (axes.c: dataset ... seed), so an error names the config's
 * file:line. A hostile config fails the same way, never crashes or hangs: the limits of
 * harness/config/limits_config.h (docs/CONFIGS.md, "Configs") bound its instructions, its memory, its wall-clock
 * time (lua_deadline.c) and every list and name it declares.
 * The parts: this file (the entry point: read the file, run it, the plan), config_sandbox.c
 * (the state and its limits), config_values.c (the value readers), config_expand.c (a sweep
 * into cells), config_declare.c (sweep, ablation, pow2, range, file) and config_include.c
 * (include); config_parts.h is what they share. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_parts.h"
#include "lua_deadline.h"

int config_add_file(struct tkp_plan *plan, const char *name, const char *text)
{
    for (size_t i = 0; i < plan->n_files; i++)
        if (strcmp(plan->files[i].name, name) == 0)
            return 1; /* a file included twice is recorded once */
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

char *config_read_text(const char *path, size_t *size)
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

int config_load_chunk(lua_State *L, const char *path, const char *text, size_t size,
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
    char *text = config_read_text(path, &size);
    if (!text) {
        if (size > TKP_CONFIG_MAX_BYTES)
            tkp_error_set(err, "%s: larger than the limit of %d bytes for a config", path,
                          TKP_CONFIG_MAX_BYTES);
        else
            tkp_error_set(err, "%s: cannot read", path);
        return TKP_EINVAL;
    }
    struct load_ctx ctx = { .plan = plan, .path = path };
    const char *slash = strrchr(path, '/');
    if (strlen(path) >= sizeof ctx.dir - 1) {
        tkp_error_set(err, "%.80s...: the path is too long (%zu characters; the limit is %zu)",
                      path, strlen(path), sizeof ctx.dir - 2);
        free(text);
        return TKP_EINVAL;
    }
    if (slash)
        snprintf(ctx.dir, sizeof ctx.dir, "%.*s/", (int)(slash - path), path);
    lua_State *L = config_sandbox_new(&ctx);
    if (!L) {
        tkp_error_set(err, "%s: out of memory starting Lua", path);
        free(text);
        return TKP_EINVAL;
    }
    config_register_api(L, &ctx);
    config_register_include(L, &ctx);
    lua_pushstring(L, backend == TKP_GPU ? "gpu" : "cpu");
    lua_setglobal(L, "backend");
    config_count_instructions(L);
    int rc = config_load_chunk(L, path, text, size, err);
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
    } else if (rc == 0 && !config_add_file(plan, path, text)) {
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
    for (size_t i = 0; i < plan->n_data_files; i++) {
        free(plan->data_files[i].path);
        free(plan->data_files[i].made_by);
    }
    free(plan->cells);
    free(plan->files);
    free(plan->ablations);
    free(plan->data_files);
    memset(plan, 0, sizeof *plan);
}

int tkp_plan_check_files(const struct tkp_plan *plan, const char *config, struct tkp_error *err)
{
    for (size_t i = 0; i < plan->n; i++) {
        const struct tkp_cell *c = &plan->cells[i];
        if (strncmp(c->dataset, "file:", 5) != 0 || access(c->dataset + 5, R_OK) == 0)
            continue;
        const char *why = strerror(errno), *made_by = NULL;
        for (size_t f = 0; f < plan->n_data_files && !made_by; f++)
            if (strcmp(plan->data_files[f].path, c->dataset + 5) == 0)
                made_by = plan->data_files[f].made_by;
        tkp_error_set(err, "%s: sweep %s reads the logits file %s: %s%s%s%s; nothing was run",
                      config, c->sweep, c->dataset + 5, why, made_by ? " (`" : "",
                      made_by ? made_by : "", made_by ? "` writes it)" : "");
        return TKP_EINVAL;
    }
    return TKP_OK;
}
