/* test_gate_numbers.c — one parser per number domain, by class (docs/ROBUSTNESS.md, "Numbers
 * that enter"): numbers over the edges of each domain (hostile_gen.h) drive the gate itself,
 * every numeric axis and the timing and option values of a config (as Lua numbers and as
 * text), and the command line's numeric flags, against verdicts computed without the gate; a
 * refusal says what was wrong in the gate's words and names the value. TOPKP_SEED replays. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "axes.h"
#include "limits_config.h"
#include "plan.h"
#include "cli_util.h"
#include "hostile_gen.h"
#include "test.h"

static const struct tkp_domain *const domains[] = { &tkp_dom_k, &tkp_dom_p, &tkp_dom_min_p,
                                                    &tkp_dom_seed, &tkp_dom_offset };

TEST(gate_numbers_match_the_reference_in_every_domain)
{
    uint64_t seed = hostile_seed() ^ 3, st = seed;
    for (int i = 0; i < 3000 && !test_failed(); i++) {
        char text[64];
        hostile_number(&st, text, sizeof text);
        const struct tkp_domain *d = domains[i % 5];
        struct tkp_error err = { "" };
        double v = 0;
        const int rc = tkp_gate_number_text(d, "x", text, &v, &err);
        const enum number_verdict want = number_expected(text, d->integer, d->lo, d->hi);
        CHECK(want == NUM_OK ? rc == 0 : rc != 0 && strstr(err.msg, number_words(want)),
              "seed %llu case %d: %s '%s': want '%s', got %s", (unsigned long long)seed, i, d->name,
              text, want ? number_words(want) : "accepted", rc ? err.msg : "accepted");
    }
}

/* The Lua expression of a number's text, or NULL when Lua would read it otherwise (hex, a
 * '+', blanks); nan and the infinities as 0/0 and +-1/0. */
static const char *lua_number(const char *text, char *buf, size_t n)
{
    const char *t = text + (*text == '-');
    if (!strcasecmp(t, "nan"))
        return "(0/0)";
    if (!strcasecmp(t, "inf") || !strcasecmp(t, "infinity"))
        return *text == '-' ? "(-1/0)" : "(1/0)";
    if (number_expected(text, 0, -INFINITY, INFINITY) == NUM_NOT_A_NUMBER || *text == '+' ||
        strchr(text, 'x'))
        return NULL;
    snprintf(buf, n, "(%s)", text);
    return buf;
}

/* Load `text`; the error, or "" when it loaded. */
static const char *load(const char *text)
{
    static struct tkp_error err;
    struct tkp_plan plan;
    err.msg[0] = 0;
    if (tkp_config_load(write_scratch("num.lua", text), TKP_CPU, &plan, &err) == 0) {
        tkp_plan_free(&plan);
        return "";
    }
    return err.msg;
}

/* A number v (as Lua reads it) through a config door whose domain is (integer, lo, hi). */
static void check_config_number(const char *door, const char *cfg, const char *expr,
                                int integer, double lo, double hi, uint64_t seed, int i)
{
    char text[1024];
    snprintf(text, sizeof text, cfg, expr);
    const double v = strtod(expr + 1, NULL) * 1.0;
    const int special = strstr(expr, "/0") != NULL;
    const long double lv = special ? (strstr(expr, "0/0") ? NAN : expr[1] == '-' ? -INFINITY
                                                                                 : INFINITY)
                                   : (long double)v;
    const enum number_verdict want = value_expected(lv, integer, lo, hi);
    const char *msg = load(text);
    CHECK(want == NUM_OK ? msg[0] == 0 : strstr(msg, number_words(want)) != NULL,
          "seed %llu case %d: %s = %s: want '%s', got %s", (unsigned long long)seed, i, door, expr,
          want ? number_words(want) : "a load", msg[0] ? msg : "a load");
}

TEST(gate_numbers_on_every_config_door)
{
    uint64_t seed = hostile_seed() ^ 4, st = seed;
    const struct tkp_option *opt = tkp_option_find(tkp_algo_find("rtopk"), "max_iter");
    for (int i = 0; i < 40 && !test_failed(); i++) {
        char text[64], buf[80], cfg[512];
        hostile_number(&st, text, sizeof text);
        const char *expr = lua_number(text, buf, sizeof buf);
        if (!expr)
            continue;
        for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
            if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM)
                continue;
            const int f32 = a->type == TKP_AXIS_F32;
            /* a later field of a Lua table constructor wins: vocab and batch too */
            snprintf(cfg, sizeof cfg, "sweep \"s\" { algos = \"naive_sort\", vocab = 10, batch = 1,"
                     " %s = %%s }\n", a->name);
            check_config_number(a->name, cfg, expr, !f32, f32 ? fmax(a->min, -FLT_MAX) : a->min,
                                f32 ? fmin(a->max, FLT_MAX) : a->max, seed, i);
        }
        check_config_number("timing.warmup_seconds", "sweep \"s\" { algos = \"naive_sort\", vocab = 10, "
                            "batch = 1, timing = { warmup_seconds = %s } }\n", expr, 0, 0,
                            TKP_MAX_TIMING_SECONDS, seed, i);
        check_config_number("rtopk max_iter", "sweep \"s\" { algos = { { \"rtopk\", max_iter = %s } },"
                            " vocab = 10, batch = 1 }\n", expr, 1, opt->min, opt->max, seed, i);
    }
}

/* The command line's numeric flags and their domains: argv with "@" for the value. A value
 * the domain takes goes on to another error (no such file); a refused one exits 2. */
static const struct {
    const char *argv[8];
    int integer;
    long double lo, hi;
} cli_numbers[] = {
    { { "apply", "naive_sort", "--in", "nope.h5", "--k", "@", NULL }, 1, -2147483647, 2147483647 },
    { { "apply", "naive_sort", "--in", "nope.h5", "--p", "@", NULL }, 0, -FLT_MAX, FLT_MAX },
    { { "apply", "naive_sort", "--in", "nope.h5", "--min-p", "@", NULL }, 0, -FLT_MAX, FLT_MAX },
    { { "apply", "naive_sort", "--in", "nope.h5", "--seed", "@", NULL }, 1, 0, 18446744073709551615.0L },
    { { "apply", "naive_sort", "--in", "nope.h5", "--offset", "@", NULL }, 1, 0, 18446744073709551615.0L },
    { { "apply", "naive_sort", "--in", "nope.h5", "--draws", "@", NULL }, 1, 1, 1 << 24 },
    { { "gen", "nope", "--batch", "@", NULL }, 1, 1, 1 << 20 },
    { { "gen", "nope", "--vocab", "@", NULL }, 1, 1, 1 << 23 },
    { { "gen", "nope", "--k", "@", NULL }, 1, -2147483647, 2147483647 },
    { { "gen", "nope", "--p", "@", NULL }, 0, -FLT_MAX, FLT_MAX },
    { { "gen", "nope", "--row-seeds", "@", NULL }, 1, 0, 18446744073709551615.0L },
    { { "compare", "a.h5", "b.h5", "--threshold", "@", NULL }, 0, 0, 10 },
    { { "run", "nope.lua", "--workers", "@", NULL }, 1, 1, 256 },
};

TEST(gate_numbers_on_every_cli_door)
{
    uint64_t seed = hostile_seed() ^ 5, st = seed;
    for (int i = 0; i < 25 && !test_failed(); i++) {
        char text[64], out[4096];
        hostile_number(&st, text, sizeof text);
        for (size_t d = 0; d < sizeof cli_numbers / sizeof cli_numbers[0]; d++) {
            const char *argv[10] = { topkp_bin() }, *flag = "";
            for (int a = 0; a < 8 && cli_numbers[d].argv[a]; a++) {
                const int here = strcmp(cli_numbers[d].argv[a], "@") == 0;
                argv[a + 1] = here ? text : cli_numbers[d].argv[a];
                flag = here ? cli_numbers[d].argv[a - 1] : flag;
            }
            const enum number_verdict want =
                number_expected(text, cli_numbers[d].integer, cli_numbers[d].lo, cli_numbers[d].hi);
            const int rc = run_argv(out, sizeof out, argv);
            CHECK(want == NUM_OK ? !strstr(out, flag) || rc != 2
                                 : rc == 2 && strstr(out, number_words(want)) && strstr(out, flag),
                  "seed %llu case %d: topkp %s %s '%s': want '%s', got exit %d: %s",
                  (unsigned long long)seed, i, argv[1], flag, text,
                  want ? number_words(want) : "accepted", rc, out);
        }
    }
}
