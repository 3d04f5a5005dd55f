/* test_hostile_config.c — hostile configs (docs/CONFIGS.md, "Configs": the limits a config runs
 * under): each one must fail, never crash or hang, with an error naming the config file and
 * the cause. One test per kind of hostility. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "limits_config.h"
#include "plan.h"
#include "cli_util.h"
#include "test.h"

/* Load the config at `path`; the error message, or "" when it loaded. */
static const char *load_path_error(const char *path)
{
    static struct tkp_error err;
    struct tkp_plan plan;
    err.msg[0] = 0;
    if (tkp_config_load(path, TKP_CPU, &plan, &err) == TKP_OK) {
        tkp_plan_free(&plan);
        return "";
    }
    return err.msg;
}

static const char *load_error(const char *name, const char *text)
{
    return load_path_error(write_scratch(name, text));
}

/* The config `name` fails with a message that names it and holds `cause`. */
#define CHECK_REFUSED(name, msg, cause)                                                   \
    do {                                                                                 \
        const char *m_ = (msg);                                                          \
        CHECK(m_[0] != 0, "%s: the hostile config loaded", name);                        \
        CHECK(strstr(m_, name) != NULL, "%s: the message names no config: %s", name, m_); \
        CHECK(strstr(m_, cause) != NULL, "%s: expected '%s' in: %s", name, cause, m_);   \
    } while (0)

#define SWEEP "sweep \"s\" { algos = { \"naive_sort\" }, vocab = 10, batch = 1"

TEST(hostile_config_endless_loop_is_stopped)
{
    CHECK_REFUSED("loop.lua", load_error("loop.lua", "x = 1\nwhile true do end\n"),
                  "loop.lua:2: the config ran more than");
    CHECK_REFUSED("where_loop.lua",
                  load_error("where_loop.lua", SWEEP ",\n where = function(c) while true do end end }\n"),
                  "where_loop.lua:2: the config ran more than");
    CHECK_REFUSED("pcall_loop.lua",
                  load_error("pcall_loop.lua", "for i = 1, 3 do pcall(function() while true do end end) end\n" SWEEP " }\n"),
                  "Lua instructions");
    char out[4096];
    const char *path = write_scratch("cli_loop.lua", "while true do end\n");
    CHECK(run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), path) != 0 &&
              strstr(out, "cli_loop.lua:1: the config ran more than") != NULL,
          "topkp run --dry-run of an endless loop: %s", out);
}

/* A C function is not counted by the instruction budget: a pattern that backtracks in find,
 * gsub (under pcall), match (in `where`) or gmatch ends after TKP_LUA_SECONDS with an error
 * naming the config's file:line. The four run at once, each `topkp run --dry-run` under
 * `timeout`, so that a hang fails this test rather than hanging the suite. */
TEST(hostile_config_pattern_backtracking_is_stopped)
{
    static const char *const names[] = { "pat_find.lua", "pat_gsub.lua", "pat_match.lua",
                                          "pat_gmatch.lua" };
    static const char *const texts[] = {
        "local s = string.rep(\"a\", 200000)\ns:find(\".-.-.-.-.-b\")\n" SWEEP " }\n",
        "local s = string.rep(\"a\", 200000)\npcall(string.gsub, s, \".-.-.-.-.-b\", \"\")\n" SWEEP " }\n",
        "local s = string.rep(\"a\", 200000)\n" SWEEP ",\n where = function(c) return s:match(\"a*a*a*a*a*b\") end }\n",
        "local s = string.rep(\"a\", 200000)\nfor w in s:gmatch(\".-.-.-.-.-b\") do end\n" SWEEP " }\n",
    };
    static const int lines[] = { 2, 2, 3, 2 };
    char script[8192] = "", out[16384];
    for (int i = 0; i < 4; i++) {
        const char *path = write_scratch(names[i], texts[i]);
        snprintf(script + strlen(script), sizeof script - strlen(script),
                 "(timeout %d %s run %s --dry-run > %s.out 2>&1; echo \"exit $?\" >> %s.out) & ",
                 6 * TKP_LUA_SECONDS, topkp_bin(), path, path, path);
    }
    snprintf(script + strlen(script), sizeof script - strlen(script), "wait; cat %s/pat_*.out",
             scratch_dir());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_cmd(out, sizeof out, "%s", script);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    for (int i = 0; i < 4; i++) {
        char cause[128];
        snprintf(cause, sizeof cause, "%s:%d: the config did not finish within %d s", names[i],
                 lines[i], TKP_LUA_SECONDS);
        CHECK(strstr(out, cause) != NULL, "%s: expected '%s' in: %s", names[i], cause, out);
    }
    CHECK(strstr(out, "backtracks") != NULL, "the message names no cause: %s", out);
    CHECK(strstr(out, "exit 124") == NULL && strstr(out, "exit 0") == NULL,
          "a backtracking config loaded or was stopped by `timeout`, not by topkp: %s", out);
    CHECK(seconds < 2 * TKP_LUA_SECONDS + 10, "the four configs took %.1f s (the limit is %d s)",
          seconds, TKP_LUA_SECONDS);
}

TEST(hostile_config_memory_is_capped)
{
    CHECK_REFUSED("mem.lua",
                  load_error("mem.lua", "local t, s = {}, \"x\"\nwhile true do t[#t + 1] = s; s = s .. s end\n"),
                  "more than 256 MiB of Lua memory");
}

TEST(hostile_config_finalizers_cannot_run_or_declare)
{
    CHECK_REFUSED("gc_loop.lua",
                  load_error("gc_loop.lua", "setmetatable({}, { __gc = function() while true do end end })\n" SWEEP " }\n"),
                  "gc_loop.lua:1: setmetatable: __gc finalizers are not allowed");
    CHECK_REFUSED("gc_late.lua",
                  load_error("gc_late.lua", SWEEP " }\nlocal mt = { __gc = true }\nsetmetatable({}, mt)\n"
                             "mt.__gc = function() sweep \"late\" { algos = { \"naive_sort\" }, vocab = 10, batch = 1 } end\n"),
                  "gc_late.lua:3: setmetatable: __gc finalizers are not allowed");
    CHECK_REFUSED("where_declares.lua",
                  load_error("where_declares.lua", SWEEP ", where = function(c) sweep \"t\" {} end }\n"),
                  "declared inside a where() function");
}

TEST(hostile_config_non_string_option_key)
{
    CHECK_REFUSED("key.lua", load_error("key.lua", "\nsweep \"s\" { algos = {{ \"qrita\", [true] = \"x\" }}, vocab = 10, batch = 1 }\n"),
                  "key.lua:2: sweep 's': qrita: option names must be strings, got a boolean key");
    CHECK_REFUSED("key_table.lua", load_error("key_table.lua", "sweep \"s\" { algos = {{ \"qrita\", [{}] = 1 }}, vocab = 10, batch = 1 }\n"),
                  "got a table key");
    CHECK_REFUSED("timing_key.lua", load_error("timing_key.lua", SWEEP ", timing = { [1.5] = 2 } }\n"),
                  "timing: keys must be names, got a number");
}

TEST(hostile_config_non_string_error_value)
{
    CHECK_REFUSED("err.lua", load_error("err.lua", "error({})\n"),
                  "err.lua: the config raised a table value (not a message)");
    CHECK_REFUSED("where_err.lua", load_error("where_err.lua", SWEEP ", where = function(c) error({}) end }\n"),
                  "where_err.lua:1: sweep 's': where() raised a table value (not a message)");
}

TEST(hostile_config_nul_byte_is_refused)
{
    static const char text[] = SWEEP " }\n\0sweep \"t\" { }\n";
    char path[1024];
    snprintf(path, sizeof path, "%s/nul.lua", scratch_dir());
    FILE *f = fopen(path, "wb");
    REQUIRE(f, "cannot write %s", path);
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    char cause[64];
    snprintf(cause, sizeof cause, "byte %zu is \\x00: a NUL byte", strlen(text) + 1);
    CHECK_REFUSED("nul.lua", load_path_error(path), cause);
}

TEST(hostile_config_many_sweeps_are_capped)
{
    char cause[64];
    snprintf(cause, sizeof cause, "more than the limit of %d sweeps", TKP_MAX_SWEEPS);
    CHECK_REFUSED("many.lua", load_error("many.lua", "for i = 1, 200000 do sweep(\"s\" .. i) end\n"),
                  cause);
    CHECK_REFUSED("twice.lua", load_error("twice.lua", "sweep \"a\"\nsweep \"a\"\n"),
                  "twice.lua:2: sweep 'a' is declared twice");
}

TEST(hostile_config_huge_cross_product_is_refused)
{
    CHECK_REFUSED("cross.lua",
                  load_error("cross.lua", "local d = {} for i = 1, 64 do d[i] = \"gaussian\" end\n"
                             "sweep \"big\" { algos = { \"naive_sort\" }, dataset = d, vocab = range(10, 73),\n"
                             "  batch = range(1, 64), k = range(1, 64), p = range(0.01, 0.64, 0.01),\n"
                             "  where = function(c) return false end }\n"),
                  "sweep 'big': its cross product has 1073741824 cells");
}

TEST(hostile_config_timing_counts_out_of_range)
{
    CHECK_REFUSED("warmup.lua", load_error("warmup.lua", SWEEP ", timing = { warmup = 2e9 } }\n"),
                  "timing.warmup = 2000000000 is out of range");
    CHECK_REFUSED("max_reps.lua", load_error("max_reps.lua", SWEEP ", timing = { max_reps = 2^29 } }\n"),
                  "timing.max_reps = 536870912 is out of range");
    CHECK_REFUSED("min_reps.lua", load_error("min_reps.lua", SWEEP ", timing = { min_reps = 1.5 } }\n"),
                  "timing.min_reps = 1.5 is not an integer");
    CHECK_REFUSED("seconds.lua", load_error("seconds.lua", SWEEP ", timing = { warmup_seconds = math.huge } }\n"),
                  "timing.warmup_seconds = inf is not finite");
    CHECK_REFUSED("target.lua", load_error("target.lua", SWEEP ", timing = { target_rel = -1 } }\n"),
                  "timing.target_rel = -1 is out of range");
}

TEST(hostile_config_list_overflow_is_refused)
{
    CHECK_REFUSED("datasets.lua",
                  load_error("datasets.lua", "local d = {} for i = 1, 64 do d[i] = \"gaussian\" end d[65] = \"nosuch\"\n" SWEEP ", dataset = d }\n"),
                  "datasets.lua:2: sweep 's': 'dataset' must list 1 to 64 datasets, got 65");
    CHECK_REFUSED("vocabs.lua", load_error("vocabs.lua", SWEEP " , k = range(1, 65) }\n"),
                  "'k' has more than 64 values");
}

TEST(hostile_config_long_names_are_refused)
{
    CHECK_REFUSED("label.lua",
                  load_error("label.lua", "ablation \"a\" { base = { vocab = 10, batch = 1 },\n"
                             "  variants = { [string.rep(\"L\", 100)] = \"naive_sort\" } }\n"),
                  "variant label name 'LLLL");
    CHECK(strstr(load_error("label.lua", "ablation \"a\" { base = { vocab = 10, batch = 1 },\n"
                            "  variants = { [string.rep(\"L\", 100)] = \"naive_sort\" } }\n"),
                 "a name is 1-63 bytes") != NULL, "the label's limit is not named");
    CHECK_REFUSED("file.lua", load_error("file.lua", SWEEP ", dataset = file(string.rep(\"d\", 300) .. \".h5\") }\n"),
                  "the path is too long (303 characters; the limit is 250)");
    CHECK_REFUSED("name.lua", load_error("name.lua", "sweep(string.rep(\"n\", 64)) {}\n"),
                  "is 64 bytes, too long: a name is 1-63 bytes");
}

TEST(hostile_config_limits_are_listed)
{
    char out[65536];
    CHECK(run_cmd(out, sizeof out, "%s list --no-probe", topkp_bin()) == 0, "topkp list: %s", out);
    CHECK(strstr(out, "limits:\n") && strstr(out, "TKP_LUA_INSTRUCTION_BUDGET") &&
              strstr(out, "TKP_LUA_SECONDS") && strstr(out, "TKP_MAX_CELLS"),
          "topkp list prints no limits: %s", out);
}
