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
#include <sys/stat.h>
#include <unistd.h>

#include "../algos/common/gate.h"
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

char *config_read_text(const char *path, size_t *size, const char **why)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    *size = 0;
    *why = NULL;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = !f ? strerror(errno) : S_ISDIR(st.st_mode) ? "it is a directory, not a file"
                                                          : "it is not a regular file";
        if (f)
            fclose(f);
        return NULL;
    }
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
    const int failed = !buf || ferror(f);
    fclose(f);
    *why = !buf ? "out of memory" : failed ? "a read error" : NULL;
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *size = n;
    if (n > TKP_CONFIG_MAX_BYTES) {
        *why = "larger than the limit";
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

/* The encoding rule (docs/ROBUSTNESS.md, "Text that enters"): a config is UTF-8 text; a
 * UTF-8 byte-order mark is accepted and skipped (returns 3), a UTF-16 or UTF-32 one is refused
 * by name, as is a NUL byte or a byte that is not UTF-8 (its line and byte, escaped). -1:
 * refused, err set. */
static int config_encoding(const char *path, const unsigned char *t, size_t size,
                           struct tkp_error *err)
{
    static const struct { const char *bom, *name; size_t n; } boms[] = {
        { "\x00\x00\xFE\xFF", "UTF-32 BE", 4 }, { "\xFF\xFE\x00\x00", "UTF-32 LE", 4 },
        { "\xFE\xFF", "UTF-16 BE", 2 },          { "\xFF\xFE", "UTF-16 LE", 2 },
    };
    for (size_t i = 0; i < sizeof boms / sizeof boms[0]; i++)
        if (size >= boms[i].n && memcmp(t, boms[i].bom, boms[i].n) == 0) {
            tkp_error_set(err, "%s: starts with a %s byte-order mark; a config is UTF-8 text "
                          "(save it as UTF-8)", path, boms[i].name);
            return -1;
        }
    const size_t skip = size >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    size_t line = 1;
    for (size_t i = skip; i < size;) {
        const int n = t[i] ? tkp_utf8_length(t + i, size - i) : 0;
        if (n == 0) {
            tkp_error_set(err, "%s: line %zu, byte %zu is \\x%02X: %s (a config is UTF-8 text)",
                          path, line, i + 1, t[i], t[i] ? "not UTF-8" : "a NUL byte");
            return -1;
        }
        line += t[i] == '\n';
        i += (size_t)n;
    }
    return (int)skip;
}

int config_load_chunk(lua_State *L, const char *path, const char *text, size_t size,
                      struct tkp_error *err)
{
    const int skip = config_encoding(path, (const unsigned char *)text, size, err);
    if (skip < 0)
        return 1;
    text += skip;
    size -= (size_t)skip;
    char chunk[600];
    snprintf(chunk, sizeof chunk, "@%s", path);
    return luaL_loadbufferx(L, text, size, chunk, "t");
}

int tkp_config_load(const char *path, enum tkp_backend backend, struct tkp_plan *plan,
                    struct tkp_error *err)
{
    memset(plan, 0, sizeof *plan);
    size_t size;
    const char *why;
    char *text = config_read_text(path, &size, &why);
    if (!text) {
        if (size > TKP_CONFIG_MAX_BYTES)
            tkp_error_set(err, "%s: larger than the limit of %d bytes for a config", path,
                          TKP_CONFIG_MAX_BYTES);
        else
            tkp_error_set(err, "%s: cannot read (%s)", path, why);
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
    if (rc == 0)
        tkp_plan_merge_duplicates(plan, path, stderr); /* docs/ROBUSTNESS.md, "Duplicates" */
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
