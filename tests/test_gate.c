/* test_gate.c — the one gate by class (docs/ROBUSTNESS.md, "Text that enters" and "Numbers that
 * enter"): hostile names and edge numbers from the generators (hostile_gen.h) drive the gate
 * itself and every surface that takes them — config declarations, keys, algorithms, options
 * and text axes; the command line's names, lists, output paths and numbers — against verdicts
 * computed without the gate. A refusal must name the byte escaped and echo nothing raw. Set
 * TOPKP_SEED to replay another run; a failure prints the seed and the case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "plan.h"
#include "cli_util.h"
#include "hostile_gen.h"
#include "test.h"

#define NAMES 2000

/* The Lua string literal of s: every byte as a decimal escape (so any byte reaches Lua). */
static void lua_literal(const char *s, size_t len, char *out, size_t n)
{
    size_t used = (size_t)snprintf(out, n, "\"");
    for (size_t i = 0; i < len && used + 6 < n; i++)
        used += (size_t)snprintf(out + used, n - used, "\\%d", (unsigned char)s[i]);
    snprintf(out + used, n - used, "\"");
}

TEST(gate_names_match_the_reference_over_hostile_names)
{
    uint64_t seed = hostile_seed(), st = seed;
    for (int i = 0; i < NAMES && !test_failed(); i++) {
        char name[256], shown[512];
        const size_t len = hostile_name(&st, name, sizeof name);
        struct tkp_error err = { "" };
        size_t bad = 0;
        const int ok = tkp_gate_name("name", name, len, &bad, &err) == TKP_OK;
        tkp_gate_escape(name, len, shown, sizeof shown);
        CHECK(ok == name_expected_ok(name, len), "seed %llu case %d: '%s' %s by the gate",
              (unsigned long long)seed, i, shown, ok ? "accepted" : "refused");
        CHECK(ok || printable_text(err.msg, strlen(err.msg), 0),
              "seed %llu case %d: the refusal echoes a raw byte: %s", (unsigned long long)seed, i,
              shown);
        char where[32];
        snprintf(where, sizeof where, "byte %zu is \\x%02X", bad + 1, (unsigned char)name[bad]);
        CHECK(ok || len == 0 || len > TKP_GATE_NAME_MAX || strstr(err.msg, where),
              "seed %llu case %d: '%s' refused without '%s': %s", (unsigned long long)seed, i,
              shown, where, err.msg);
        CHECK(printable_text(shown, strlen(shown), 0) && !strchr(shown, '\t'),
              "seed %llu case %d: the escape of '%s' is not printable", (unsigned long long)seed, i,
              shown);
        CHECK(!ok || (strlen(shown) == len && memcmp(shown, name, len) == 0),
              "seed %llu case %d: an accepted name '%s' is changed by the escape",
              (unsigned long long)seed, i, shown);
    }
}

/* The config surfaces of a name: each template takes the name as a Lua literal (%s); `after`
 * is what an accepted name meets next (an error that is not the gate's), "" for a load. */
static const struct {
    const char *what, *text, *after;
} config_doors[] = {
    { "sweep name", "sweep %s { algos = \"naive_sort\", vocab = 10, batch = 1 }\n", "" },
    { "variant label", "ablation \"a\" { base = { vocab = 10, batch = 1 }, variants = { [%s] = "
                       "\"naive_sort\" } }\n", "" },
    { "algorithm", "sweep \"s\" { algos = { %s }, vocab = 10, batch = 1 }\n", "unknown algorithm" },
    { "option key", "sweep \"s\" { algos = { { \"rtopk\", [%s] = 1 } }, vocab = 10, batch = 1 }\n",
      "has no option" },
    { "option value", "sweep \"s\" { algos = { { \"qrita\", search = %s } }, vocab = 10, batch = 1 }\n",
      "is not one of" },
    { "dataset", "sweep \"s\" { algos = \"naive_sort\", vocab = 10, batch = 1, dataset = %s }\n",
      "unknown dataset" },
    { "sweep key", "sweep \"s\" { algos = \"naive_sort\", vocab = 10, batch = 1, [%s] = 1 }\n",
      "unknown key" },
};

static void check_config_door(int door, const char *name, size_t len, uint64_t seed, int i)
{
    char lit[2048], text[4096], shown[512];
    struct tkp_error err = { "" };
    struct tkp_plan plan;
    lua_literal(name, len, lit, sizeof lit);
    snprintf(text, sizeof text, config_doors[door].text, lit);
    const int loaded = tkp_config_load(write_scratch("gate.lua", text), TKP_CPU, &plan, &err) == 0;
    if (loaded)
        tkp_plan_free(&plan);
    tkp_gate_escape(name, len, shown, sizeof shown);
    const int expect = name_expected_ok(name, len), after = config_doors[door].after[0] != 0;
    const int gated = !loaded && (strstr(err.msg, "a name is 1-63 bytes") != NULL);
    CHECK(expect ? !gated && (after ? strstr(err.msg, config_doors[door].after) != NULL : loaded)
                 : gated,
          "seed %llu case %d, %s '%s': %s", (unsigned long long)seed, i, config_doors[door].what,
          shown, loaded ? "loaded" : err.msg);
    CHECK(loaded || printable_text(err.msg, strlen(err.msg), 0),
          "seed %llu case %d, %s '%s': the error echoes a raw byte", (unsigned long long)seed, i,
          config_doors[door].what, shown);
}

TEST(gate_names_on_every_config_door)
{
    uint64_t seed = hostile_seed() ^ 1, st = seed;
    for (int i = 0; i < 60 && !test_failed(); i++) {
        char name[256];
        const size_t len = hostile_name(&st, name, sizeof name);
        for (size_t d = 0; d < sizeof config_doors / sizeof config_doors[0]; d++)
            check_config_door((int)d, name, len, seed, i);
        char lit[2048], text[2100], shown[512];
        struct tkp_error err = { "" };
        struct tkp_plan plan;
        lua_literal(name, len, lit, sizeof lit);
        snprintf(text, sizeof text, "include %s\n", lit);
        const int loaded = tkp_config_load(write_scratch("inc.lua", text), TKP_CPU, &plan, &err) == 0;
        if (loaded)
            tkp_plan_free(&plan);
        CHECK(!loaded && (strstr(err.msg, "a path is 1-") != NULL) != path_expected_ok(name, len) &&
                  printable_text(err.msg, strlen(err.msg), 0),
              "seed %llu case %d: include '%s': %s", (unsigned long long)seed, i,
              tkp_gate_escape(name, len, shown, sizeof shown), err.msg);
    }
}

/* The command line's doors of a name: argv with "@" where the name goes, the gate's rule
 * ("name" or "path"). An accepted value goes on to another error (no such config, file...). A
 * list's items are split at commas first: an empty item is refused by the same rule. */
static const struct {
    const char *argv[8], *rule;
    int list; /* a comma list of names */
} cli_doors[] = {
    { { "run", "nope.lua", "--only", "@", NULL }, "a name", 1 },
    { { "run", "nope.lua", "--sweep", "@", NULL }, "a name", 1 },
    { { "export", "nope.h5", "--sweep", "@", NULL }, "a name", 0 },
    { { "compare", "a.h5", "b.h5", "--sweep", "@", NULL }, "a name", 0 },
    { { "run", "nope.lua", "-o", "@", NULL }, "a path", 0 },
    { { "gen", "gaussian", "--batch", "1", "--vocab", "5", "-o", "@" }, "a path", 0 },
    { { "apply", "naive_sort", "--in", "nope.h5", "--out", "@", NULL }, "a path", 0 },
};

/* The reference for a comma list: every item a name. */
static int list_expected_ok(const char *list)
{
    for (const char *at = list;; at += strcspn(at, ",") + 1) {
        if (!name_expected_ok(at, strcspn(at, ",")))
            return 0;
        if (!at[strcspn(at, ",")])
            return 1;
    }
}

TEST(gate_names_on_every_cli_door)
{
    uint64_t seed = hostile_seed() ^ 2, st = seed;
    for (int i = 0; i < 40 && !test_failed(); i++) {
        char name[256], shown[512], out[4096];
        const size_t len = hostile_name(&st, name, sizeof name);
        tkp_gate_escape(name, len, shown, sizeof shown);
        for (size_t d = 0; d < sizeof cli_doors / sizeof cli_doors[0]; d++) {
            const char *argv[10] = { topkp_bin() };
            for (int a = 0; a < 8 && cli_doors[d].argv[a]; a++)
                argv[a + 1] = strcmp(cli_doors[d].argv[a], "@") ? cli_doors[d].argv[a] : name;
            const int path = cli_doors[d].rule[2] == 'p';
            struct tkp_error err;
            const int ok = path ? tkp_gate_path("p", name, len, &err) == 0
                         : cli_doors[d].list ? list_expected_ok(name) : name_expected_ok(name, len);
            if (path && ok)
                continue; /* gen would write it: the path rule is checked above */
            const int rc = run_argv(out, sizeof out, argv);
            char rule[32];
            snprintf(rule, sizeof rule, "%s is 1-", cli_doors[d].rule);
            CHECK(ok ? !strstr(out, rule) : rc == 2 && strstr(out, rule),
                  "seed %llu case %d, topkp %s %s '%s': exit %d: %s", (unsigned long long)seed, i,
                  cli_doors[d].argv[0], cli_doors[d].argv[2], shown, rc, out);
            CHECK(printable_text(out, strlen(out), 1), "seed %llu case %d, topkp %s '%s': the "
                  "output echoes a raw byte", (unsigned long long)seed, i, cli_doors[d].argv[0],
                  shown);
        }
    }
}

TEST(gate_empty_lists_and_dot_names_are_refused)
{
    static const char *const lists[] = { "", ",", "a,", ",a", "a,,b", ".", "a,.." };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (int flag = 0; flag < 2; flag++) {
            char out[4096];
            const char *argv[] = { topkp_bin(), "run", "nope.lua", flag ? "--sweep" : "--only",
                                   lists[i], NULL };
            const int rc = run_argv(out, sizeof out, argv);
            CHECK(rc == 2 && (strstr(out, "is empty") || strstr(out, "alone names an HDF5")),
                  "%s '%s': exit %d: %s", argv[3], lists[i], rc, out);
        }
}

/* Doors that take a word of their own (a format, a shard, devices, a command, a dataset...): a
 * hostile value is refused (exit 2, or 1 for a dataset that gen does not know), and the message
 * shows it escaped, never raw. */
static const char *const word_doors[][10] = {
    { "export", "x.h5", "--format", "@", NULL },   { "run", "x.lua", "--shard", "@", NULL },
    { "run", "x.lua", "--gpus", "@", NULL },       { "run", "x.lua", "--backend", "@", NULL },
    { "apply", "naive_sort", "--dtype", "@", NULL }, { "help", "@", NULL },
    { "@", NULL },                                  { "apply", "@", NULL },
    { "list", "@", NULL },                          { "apply", "naive_sort", "--set", "@", NULL },
    { "gen", "@", "--batch", "1", "--vocab", "5", "-o", "g.h5", NULL },
};

TEST(gate_cli_words_are_echoed_escaped)
{
    uint64_t seed = hostile_seed() ^ 6, st = seed;
    for (int i = 0; i < 30 && !test_failed(); i++) {
        char name[256], shown[512], out[4096];
        const size_t len = hostile_name(&st, name, sizeof name);
        if (printable_text(name, len, 0))
            continue; /* only values with a raw byte to leak */
        tkp_gate_escape(name, len, shown, sizeof shown);
        for (size_t d = 0; d < sizeof word_doors / sizeof word_doors[0]; d++) {
            const char *argv[12] = { topkp_bin() };
            for (int a = 0; a < 10 && word_doors[d][a]; a++)
                argv[a + 1] = strcmp(word_doors[d][a], "@") ? word_doors[d][a] : name;
            const int rc = run_argv(out, sizeof out, argv);
            CHECK((rc == 1 || rc == 2) && printable_text(out, strlen(out), 1),
                  "seed %llu case %d: topkp %s %s '%s': exit %d, %s", (unsigned long long)seed, i,
                  argv[1], argv[2] ? argv[2] : "", shown, rc,
                  printable_text(out, strlen(out), 1) ? out : "a raw byte in the output");
        }
    }
}
