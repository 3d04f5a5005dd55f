/* test_config_include.c — include "x.lua" in a config (docs/CONFIGS.md, "Sharing helpers:
 * include"): a helper shared by two configs, the included texts recorded in the plan, the
 * config's limits counting the included code, and the refused includes (a cycle, a missing
 * file, a path leaving the config's folder, too deep), each an error naming the including file
 * and line. Every config here lives in its own folder under the scratch folder. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "limits_config.h"
#include "plan.h"
#include "cli_util.h"
#include "test.h"

#define SWEEP "sweep \"s\" { algos = { \"naive_sort\" }, vocab = 10, batch = 1 }\n"

/* Write `text` to scratch/inc/`name` (its folders made), return its path. */
static const char *put(const char *name, const char *text)
{
    static char path[8][600];
    static int slot;
    char *p = path[slot++ % 8], dir[600];
    snprintf(p, 600, "%s/inc/%s", scratch_dir(), name);
    for (char *s = strchr(p + strlen(scratch_dir()) + 1, '/'); s; s = strchr(s + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(s - p), p);
        mkdir(dir, 0755);
    }
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

/* Load the config scratch/inc/`name`: its error ("" when it loaded), its cells and files. */
static const char *load(const char *name, size_t *cells, size_t *files)
{
    static struct tkp_error err;
    static char path[600];
    struct tkp_plan plan;
    snprintf(path, sizeof path, "%s/inc/%s", scratch_dir(), name);
    err.msg[0] = 0;
    *cells = *files = 0;
    if (tkp_config_load(path, TKP_CPU, &plan, &err) != TKP_OK)
        return err.msg;
    *cells = plan.n, *files = plan.n_files;
    tkp_plan_free(&plan);
    return "";
}

/* The config scratch/inc/`name` fails with an error that holds `where` and `cause`. */
static void check_refused(const char *name, const char *where, const char *cause)
{
    size_t cells, files;
    const char *m = load(name, &cells, &files);
    CHECK(m[0] != 0, "%s: the include was not refused", name);
    CHECK(strstr(m, where) && strstr(m, cause), "%s: expected '%s' and '%s' in: %s", name, where,
          cause, m);
}

TEST(config_include_shares_a_helper_between_configs)
{
    put("lib/lists.lua", "local more = include \"more/x.lua\"\n"
                         "return { batches = function() return { 1, more.two } end }\n");
    put("lib/more/x.lua", "return { two = 2 }\n");
    put("a.lua", "local lists = include \"lib/lists.lua\"\n"
                 "sweep \"a\" { algos = { \"naive_sort\" }, vocab = 10,\n"
                 "  batch = lists.batches() }\n");
    put("b.lua", "local l = include \"lib/lists.lua\"\nlocal again = include \"lib/lists.lua\"\n"
                 "sweep \"b\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 10,\n"
                 "  batch = again.batches(), k = 2 }\n");
    size_t cells, files;
    const char *m = load("a.lua", &cells, &files);
    CHECK(m[0] == 0 && cells == 2 && files == 3,
          "a.lua: %zu cells (2 expected), %zu files recorded (3: a.lua and its two includes): %s",
          cells, files, m);
    m = load("b.lua", &cells, &files);
    CHECK(m[0] == 0 && cells == 4 && files == 3,
          "b.lua, which includes one file twice: %zu cells (4 expected), %zu files (3): %s", cells,
          files, m);
    char out[8192];
    const char *b = put("c.lua", "include \"lib/lists.lua\"\n" SWEEP);
    CHECK(run_cmd(out, sizeof out, "%s run %s --dry-run --backend cpu", topkp_bin(), b) == 0,
          "topkp run --dry-run of a config with an include: %s", out);
}

TEST(config_include_counts_against_the_config_limits)
{
    put("lim/loop_lib.lua", "local x = 0\nwhile true do x = x + 1 end\n");
    put("lim/loop.lua", "include \"loop_lib.lua\"\n" SWEEP);
    check_refused("lim/loop.lua", "loop_lib.lua:2: ", "the config ran more than");
    put("lim/mem_lib.lua",
        "local t = {}\nfor i = 1, 1e9 do t[i] = string.rep(\"x\", 1000) .. i end\n");
    put("lim/mem.lua", "include \"mem_lib.lua\"\n" SWEEP);
    check_refused("lim/mem.lua", "lim/mem.lua", "MiB of Lua memory");
    put("lim/syntax_lib.lua", "local x = \n\n)\n");
    put("lim/syntax.lua", "include \"syntax_lib.lua\"\n" SWEEP);
    check_refused("lim/syntax.lua", "syntax_lib.lua:3:", "unexpected symbol");
    char chain[64], next[96];
    for (int i = 0; i <= TKP_CONFIG_MAX_INCLUDE_DEPTH; i++) {
        snprintf(chain, sizeof chain, "deep/d%d.lua", i);
        snprintf(next, sizeof next, "include \"d%d.lua\"\n", i + 1);
        put(chain, next);
    }
    put("deep/main.lua", "include \"d0.lua\"\n" SWEEP);
    char depth[64];
    snprintf(depth, sizeof depth, "more than %d includes inside each other",
             TKP_CONFIG_MAX_INCLUDE_DEPTH);
    check_refused("deep/main.lua", "deep/d7.lua:1: include \"d8.lua\"", depth);
}

TEST(config_include_cycles_and_missing_files_are_named)
{
    put("cyc/a.lua", "-- a\ninclude \"b.lua\"\n" SWEEP);
    put("cyc/b.lua", "include \"sub/c.lua\"\n");
    put("cyc/sub/c.lua", "\n\ninclude \"../a.lua\"\n");
    check_refused("cyc/a.lua", "cyc/sub/c.lua:3: include \"../a.lua\"", "'..' component");
    put("cyc/sub/c.lua", "\n\ninclude \"c.lua\"\n");
    check_refused("cyc/a.lua", "cyc/sub/c.lua:3: include \"c.lua\": an include cycle: ",
                  "cyc/sub/c.lua includes ");
    check_refused("cyc/a.lua", "cyc/sub/c.lua:3:", "cyc/sub/c.lua again");
    put("cyc2/a.lua", "include \"b.lua\"\n" SWEEP);
    put("cyc2/b.lua", "\ninclude \"a.lua\"\n");
    check_refused("cyc2/a.lua", "cyc2/b.lua:2: include \"a.lua\": an include cycle: ",
                  "cyc2/a.lua includes ");
    check_refused("cyc2/a.lua", "cyc2/b.lua includes ", "cyc2/a.lua again");
    put("miss/a.lua", "\ninclude \"lib/nope.lua\"\n" SWEEP);
    check_refused("miss/a.lua", "miss/a.lua:2: include \"lib/nope.lua\"",
                  "cannot read ");
    CHECK(strstr(load("miss/a.lua", &(size_t){ 0 }, &(size_t){ 0 }), "miss/lib/nope.lua"),
          "the missing file is not named with its folder");
}

TEST(config_include_cannot_leave_the_config_folder)
{
    put("out/outside.lua", "return 1\n");
    put("out/in/up.lua", "include \"../outside.lua\"\n" SWEEP);
    check_refused("out/in/up.lua", "out/in/up.lua:1: include \"../outside.lua\"",
                  "'..' component (it would leave the config's folder)");
    put("out/in/abs.lua", "\ninclude \"/etc/hostname\"\n" SWEEP);
    check_refused("out/in/abs.lua", "out/in/abs.lua:2: include \"/etc/hostname\"",
                  "an absolute path");
    put("out/in/dot.lua", "include \"./x.lua\"\n" SWEEP);
    check_refused("out/in/dot.lua", "out/in/dot.lua:1:", "a '.' component");
    char link[700], target[700];
    snprintf(link, sizeof link, "%s/inc/out/in/link.lua", scratch_dir());
    snprintf(target, sizeof target, "%s/inc/out/outside.lua", scratch_dir());
    unlink(link);
    CHECK(symlink(target, link) == 0, "cannot make the symbolic link %s", link);
    put("out/in/sym.lua", "include \"link.lua\"\n" SWEEP);
    check_refused("out/in/sym.lua", "out/in/sym.lua:1: include \"link.lua\"",
                  "outside the config's folder");
    put("out/in/where.lua", "sweep \"s\" { algos = { \"naive_sort\" }, vocab = 10, batch = 1,\n"
                            "  where = function(c) return include(\"x.lua\") end }\n");
    check_refused("out/in/where.lua", "out/in/where.lua:2:", "not from a where() function");
}

#define RESUME "%s run %s -o %s --backend cpu --resume"

/* The included texts go into the results file beside the config's, so that --resume refuses a
 * run whose included file changed (docs/RESULTS.md, "Runs"). */
TEST(config_include_texts_are_recorded_and_checked_on_resume)
{
    put("res/lib/h.lua", "return { batches = { 1, 2 } }\n");
    const char *cfg = put("res/c.lua", "local h = include \"lib/h.lua\"\n"
                                       "sweep \"s\" { algos = { \"naive_sort\" }, vocab = 100,\n"
                                       "  batch = h.batches,\n"
                                       "  timing = { min_reps = 3, max_reps = 3 } }\n");
    char h5[600], out[8192];
    REQUIRE(run_into(cfg, "include_resume", "", h5, sizeof h5) == 0,
            "the run with an include failed");
    CHECK(run_cmd(out, sizeof out, "h5ls -r %s", h5) != 0 || strstr(out, "res|lib|h.lua"),
          "the included file's text is not under /config: %s", out);
    CHECK(run_cmd(out, sizeof out, RESUME, topkp_bin(), cfg, h5) == 0,
          "--resume with the same included text was refused: %s", out);
    put("res/lib/h.lua", "return { batches = { 1, 2 } } -- changed\n");
    CHECK(run_cmd(out, sizeof out, RESUME, topkp_bin(), cfg, h5) != 0 &&
              strstr(out, "lib/h.lua changed"),
          "--resume after the included file changed: %s", out);
}
