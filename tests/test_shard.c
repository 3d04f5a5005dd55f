/* test_shard.c — `topkp run --shard I/N` (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"): over
 * shipped and random plans and N in {1, 2, 3, 7, 50}, every cell falls in exactly one shard,
 * the shards' costs stay within the mean plus the largest cell, the split is the same every
 * time; the CLI's shards of a plan are its cells once each; bad --shard values are refused
 * naming them, and --resume refuses another shard spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shard.h"
#include "cli_util.h"
#include "test.h"

static const int shard_counts[] = { 1, 2, 3, 7, 50 };

/* A config of random shapes (from `seed`, printed on failure): costs that differ by orders. */
static const char *random_config(unsigned seed)
{
    static char text[4096];
    srand(seed);
    size_t used = (size_t)snprintf(text, sizeof text, "sweep \"r\" { algos = { \"naive_sort\", "
                                   "\"qrita\" }, vocab = { ");
    for (int i = 0; i < 5; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i ? ", " : "",
                                 100 + rand() % 100000);
    used += (size_t)snprintf(text + used, sizeof text - used, " }, batch = { ");
    for (int i = 0; i < 4; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i ? ", " : "",
                                 1 + rand() % 300);
    snprintf(text + used, sizeof text - used, " }, k = { 5, 50 }, p = 1.0,\n"
             "  dtype = { \"f32\", \"bf16\" } }\n");
    return write_scratch("shard_random.lua", text);
}

/* Check the split of `plan` into n shards: each cell in one shard, balanced, deterministic. */
static void check_split(const struct tkp_plan *plan, int n, const char *what)
{
    int *owner = malloc(sizeof *owner * plan->n), *again = malloc(sizeof *again * plan->n);
    double *load = calloc((size_t)n, sizeof *load), total = 0, largest = 0;
    struct tkp_error err = { "" };
    REQUIRE(owner && again && load, "out of memory");
    REQUIRE(tkp_shard_assign(plan, n, owner, &err) == TKP_OK, "%s: %s", what, err.msg);
    REQUIRE(tkp_shard_assign(plan, n, again, &err) == TKP_OK, "%s: %s", what, err.msg);
    for (size_t i = 0; i < plan->n; i++) {
        REQUIRE(owner[i] >= 0 && owner[i] < n, "%s N=%d: cell %zu in shard %d", what, n, i,
                owner[i]);
        CHECK(owner[i] == again[i], "%s N=%d: cell %zu moved from shard %d to %d", what, n, i,
              owner[i], again[i]);
        const double c = tkp_cell_cost(&plan->cells[i]);
        load[owner[i]] += c;
        total += c;
        largest = c > largest ? c : largest;
    }
    for (int s = 0; s < n; s++)
        CHECK(load[s] <= total / n + largest, "%s N=%d: shard %d costs %.0f > mean %.0f + "
              "largest cell %.0f", what, n, s, load[s], total / n, largest);
    free(owner);
    free(again);
    free(load);
}

/* tkp_shard_cut's N shards hold every key of the whole plan exactly once. */
static void check_cuts(const char *config, int n, const char *what)
{
    struct tkp_plan whole;
    struct tkp_error err = { "" };
    REQUIRE(tkp_config_load(config, TKP_CPU, &whole, &err) == TKP_OK, "%s: %s", what, err.msg);
    int *seen = calloc(whole.n ? whole.n : 1, sizeof *seen);
    char(*keys)[TKP_RESULT_KEY_BYTES] = malloc(sizeof *keys * (whole.n ? whole.n : 1));
    REQUIRE(seen && keys, "out of memory");
    for (size_t i = 0; i < whole.n; i++)
        tkp_cell_key(&whole.cells[i], TKP_CPU, keys[i]);
    for (int s = 0; s < n; s++) {
        struct tkp_plan part;
        struct tkp_shard_plan sp;
        REQUIRE(tkp_config_load(config, TKP_CPU, &part, &err) == TKP_OK, "%s", err.msg);
        REQUIRE(tkp_shard_cut(&part, &(struct tkp_shard){ s, n }, TKP_CPU, &sp, &err) == TKP_OK,
                "%s", err.msg);
        CHECK(sp.n == whole.n && sp.shard_cells == part.n, "%s N=%d: /plan has %zu of %zu cells",
              what, n, sp.n, whole.n);
        for (size_t c = 0; c < part.n; c++) {
            char key[TKP_RESULT_KEY_BYTES];
            tkp_cell_key(&part.cells[c], TKP_CPU, key);
            size_t at = 0; /* keys may repeat across sweeps: take the first not yet seen */
            while (at < whole.n && (strcmp(keys[at], key) != 0 ||
                                    strcmp(whole.cells[at].sweep, part.cells[c].sweep) != 0 ||
                                    seen[at]))
                at++;
            CHECK(at < whole.n, "%s N=%d: shard %d has a cell the plan lacks (or twice): %s",
                  what, n, s, key);
            if (at < whole.n)
                seen[at] = 1 + s;
        }
        tkp_shard_plan_free(&sp);
        tkp_plan_free(&part);
    }
    for (size_t i = 0; i < whole.n; i++)
        CHECK(seen[i], "%s N=%d: cell %s is in no shard", what, n, keys[i]);
    free(seen);
    free(keys);
    tkp_plan_free(&whole);
}

TEST(shard_every_cell_in_one_balanced_shard)
{
    const unsigned seed = 20261203u;
    const char *configs[] = { "configs/quick.lua", "configs/paper/fig4_memory.lua",
                              "configs/paper/table4_ablation.lua", random_config(seed) };
    for (size_t f = 0; f < sizeof configs / sizeof configs[0]; f++) {
        char what[600];
        snprintf(what, sizeof what, "%s%s", configs[f], f == 3 ? " (random shapes)" : "");
        if (f == 3)
            snprintf(what + strlen(what), sizeof what - strlen(what), " seed %u", seed);
        struct tkp_plan plan;
        struct tkp_error err = { "" };
        REQUIRE(tkp_config_load(configs[f], TKP_CPU, &plan, &err) == TKP_OK, "%s: %s", what,
                err.msg);
        REQUIRE(plan.n > 3, "%s plans %zu cells", what, plan.n);
        for (size_t i = 0; i < sizeof shard_counts / sizeof shard_counts[0]; i++) {
            check_split(&plan, shard_counts[i], what);
            check_cuts(configs[f], shard_counts[i], what);
        }
        tkp_plan_free(&plan);
    }
}

/* The CLI: the --dry-run of each of 3 shards, put together, is the whole plan's, line for line
 * (sorted: the shards keep plan order among their own cells). */
TEST(shard_dry_runs_together_are_the_whole_plan)
{
    static char whole[1 << 16], part[1 << 16], joined[1 << 16];
    const char *cfg = "configs/paper/table4_ablation.lua";
    REQUIRE(run_cmd(whole, sizeof whole, "%s run %s --dry-run --backend cpu | tail -n +2 | sort",
                    topkp_bin(), cfg) == 0, "%s", whole);
    joined[0] = 0;
    for (int s = 0; s < 3; s++) {
        REQUIRE(run_cmd(part, sizeof part, "%s run %s --dry-run --backend cpu --shard %d/3 | "
                        "tail -n +2", topkp_bin(), cfg, s) == 0, "%s", part);
        strncat(joined, part, sizeof joined - strlen(joined) - 1);
    }
    char path[600];
    snprintf(path, sizeof path, "%s", write_scratch("shard_joined.txt", joined));
    REQUIRE(run_cmd(part, sizeof part, "sort %s", path) == 0, "%s", part);
    CHECK(strcmp(part, whole) == 0 && strlen(whole) > 100,
          "the shards' cells are not the plan's:\n%s\nvs\n%s", part, whole);
}

TEST(shard_bad_values_are_refused_naming_them)
{
    static const char *const bad[] = { "3/3", "-1/2", "1/0", "0/0", "a/b", "1/2/3", "1/",
                                       "/2", "1", " 1/2", "0/100001", "1.5/3", "+1/3",
                                       "99999999999/3" };
    char out[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int rc = run_cmd(out, sizeof out, "%s run configs/quick.lua --dry-run --backend "
                               "cpu --shard '%s'", topkp_bin(), bad[i]);
        char named[64];
        snprintf(named, sizeof named, "'%s'", bad[i]);
        CHECK(rc == 2 && strstr(out, named) && strstr(out, "--shard"),
              "--shard %s: exit %d, %s", bad[i], rc, out);
    }
    CHECK(run_cmd(out, sizeof out, "%s run configs/quick.lua --dry-run --backend cpu --shard "
                  "0/1 | head -1", topkp_bin()) == 0 && atoi(out) > 0,
          "--shard 0/1 is the whole plan: %s", out);
}

/* --gpus, --workers and --device take their values' form at parsing: a bad one is a usage
 * error (exit 2) naming the flag and the value, before any device or file is touched. */
TEST(multi_process_flags_refuse_bad_values_naming_them)
{
    static const char *const bad[][2] = {
        { "--gpus", "0,x" }, { "--gpus", "" },      { "--gpus", "1," },    { "--gpus", "0,,1" },
        { "--gpus", "-1" },  { "--gpus", "1024" },  { "--gpus", "any" },   { "--gpus", "0,0" },
        { "--workers", "0" }, { "--workers", "257" }, { "--workers", "2x" },
        { "--device", "-1" }, { "--device", "x" },
    };
    char out[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int rc = run_cmd(out, sizeof out, "%s run configs/quick.lua -o %s/never.h5 %s '%s'",
                               topkp_bin(), scratch_dir(), bad[i][0], bad[i][1]);
        char named[64], number[64]; /* a value quoted, or a number as the gate shows one */
        snprintf(named, sizeof named, "'%s'", bad[i][1]);
        snprintf(number, sizeof number, "= %s ", bad[i][1]);
        CHECK(rc == 2 && strstr(out, bad[i][0]) && (strstr(out, named) || strstr(out, number)),
              "%s '%s': exit %d, %s", bad[i][0], bad[i][1], rc, out);
    }
}

/* A shard file records its shard and plan; --resume refuses another spec or a whole run. */
TEST(shard_file_records_its_shard_and_resume_keeps_it)
{
    const char *cfg = write_scratch("shard_rec.lua",
                                    "sweep \"sr\" { algos = \"naive_sort\", vocab = 300,\n"
                                    "  batch = { 1, 2, 3 }, k = 5, p = 1.0,\n"
                                    "  timing = { min_reps = 2, max_reps = 2 } }\n");
    char h5[512], out[1 << 14];
    REQUIRE(run_into(cfg, "shard_rec", "--shard 1/2", h5, sizeof h5) == 0, "--shard 1/2");
    REQUIRE(run_cmd(out, sizeof out, "%s info %s", topkp_bin(), h5) == 0, "%s", out);
    CHECK(strstr(out, "shard\t1/2\n") && strstr(out, "plan_cells\t3\n") &&
              strstr(out, "plan_hash\t") && strstr(out, "device_index\t-1"),
          "the shard file's record: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --shard 1/2 --resume",
                  topkp_bin(), cfg, h5) == 0 && strstr(out, "already done"),
          "resuming the same shard: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --shard 0/2 --resume --force",
                  topkp_bin(), cfg, h5) != 0 && strstr(out, "holds shard 1/2") &&
              strstr(out, "--shard 0/2"), "another shard spec was resumed: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg,
                  h5) != 0 && strstr(out, "holds shard 1/2"),
          "a shard file was resumed as a whole run: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --device 0", topkp_bin(),
                  cfg, h5) == 2 && strstr(out, "--device 0"),
          "--device on the CPU backend: %s", out);
}
