/* test_plans.c — every shipped config still expands to its golden plan
 * for the CPU backend (tests/golden/<config>.plan, written by scripts/update-goldens.sh): a
 * config edit that
 * changes which cells run must be deliberate. The 16-bit configs' GPU plans (which no golden
 * holds): Figure 2's bf16 sweep is its f32 grid cell for cell, and the bf16 targets pair each
 * f32 cell with its bf16 twin. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/half.h"
#include "plan.h"
#include "cli_util.h"
#include "test.h"

TEST(plans_of_shipped_configs_match_their_goldens)
{
    DIR *dir = opendir("tests/golden");
    REQUIRE(dir, "tests/golden is missing (run from the repository root)");
    int checked = 0;
    static char out[1 << 20];
    for (struct dirent *e; (e = readdir(dir));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".plan") != 0)
            continue;
        /* golden "paper_fig2_throughput.plan" <- config "configs/paper/fig2_throughput.lua" */
        char stem[256], config[512], golden_path[512];
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 5), e->d_name);
        snprintf(golden_path, sizeof golden_path, "tests/golden/%s", e->d_name);
        snprintf(config, sizeof config, "configs/%s.lua", stem);
        char *us = strchr(stem, '_');
        FILE *probe = fopen(config, "r");
        if (!probe && us) {
            *us = '/';
            snprintf(config, sizeof config, "configs/%s.lua", stem);
            probe = fopen(config, "r");
        }
        CHECK(probe != NULL, "golden %s has no config (%s)", e->d_name, config);
        if (!probe)
            continue;
        fclose(probe);
        int rc = run_cmd(out, sizeof out, "%s run %s --dry-run --backend cpu 2>/dev/null", topkp_bin(), config);
        char *golden = slurp(golden_path, NULL);
        CHECK(rc == 0 && golden && strcmp(out, golden) == 0,
              "%s no longer expands to %s (rerun scripts/update-goldens.sh if intended)", config,
              golden_path);
        free(golden);
        checked++;
    }
    closedir(dir);
    CHECK(checked >= 6, "only %d golden plans checked", checked);
}

/* The cells of `sweep` in the plan whose dtype is `dtype`; -1 when some cell of it has another. */
static long cells_of(const struct tkp_plan *plan, const char *sweep, int dtype)
{
    long n = 0;
    for (size_t i = 0; i < plan->n; i++)
        if (strcmp(plan->cells[i].sweep, sweep) == 0) {
            if (plan->cells[i].dtype != dtype)
                return -1;
            n++;
        }
    return n;
}

TEST(plans_of_the_bf16_configs_on_the_gpu_pair_each_f32_cell)
{
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    REQUIRE(tkp_config_load("configs/paper/fig2_throughput.lua", TKP_GPU, &plan, &err) == TKP_OK,
            "%s", err.msg);
    const long f32 = cells_of(&plan, "fig2", TKP_F32), bf16 = cells_of(&plan, "fig2_bf16", TKP_BF16);
    CHECK(f32 > 0 && bf16 == f32 && (size_t)(f32 + bf16) == plan.n,
          "fig2: %ld f32 cells, fig2_bf16: %ld bf16 cells, %zu in all", f32, bf16, plan.n);
    for (long i = 0; f32 > 0 && bf16 == f32 && i < f32; i++) {
        const struct tkp_cell *a = &plan.cells[i], *b = &plan.cells[f32 + i];
        CHECK(a->algo == b->algo && strcmp(a->options, b->options) == 0 &&
                  strcmp(a->dataset, b->dataset) == 0 && a->vocab == b->vocab &&
                  a->batch == b->batch && a->k == b->k && a->p == b->p,
              "fig2 cell %ld and its bf16 twin differ", i);
    }
    tkp_plan_free(&plan);
    REQUIRE(tkp_config_load("configs/h200/targets_bf16.lua", TKP_GPU, &plan, &err) == TKP_OK,
            "%s", err.msg);
    /* (3 modules + 9 peer variants) x 2 vocabularies x 3 batches x 2 dtypes */
    CHECK(plan.n == (3 + 9) * 2 * 3 * 2, "targets_bf16: %zu cells, want 144", plan.n);
    for (size_t i = 0; i + 1 < plan.n; i += 2)
        CHECK(plan.cells[i].dtype == TKP_F32 && plan.cells[i + 1].dtype == TKP_BF16 &&
                  plan.cells[i].algo == plan.cells[i + 1].algo &&
                  plan.cells[i].vocab == plan.cells[i + 1].vocab &&
                  plan.cells[i].batch == plan.cells[i + 1].batch,
              "targets_bf16 cell %zu is not an f32 cell followed by its bf16 twin", i);
    tkp_plan_free(&plan);
}

/* The campaign's sample policy (docs/CAMPAIGN.md, "Chunks and the sample policy"): every cell
 * of every config of scripts/campaign-chunks.tsv judges every row, on both backends. */
TEST(plans_of_the_campaign_judge_every_row_of_every_cell)
{
    FILE *f = fopen("scripts/campaign-chunks.tsv", "r");
    REQUIRE(f, "scripts/campaign-chunks.tsv is missing (run from the repository root)");
    char line[1024], done[16][256];
    int configs = 0;
    while (fgets(line, sizeof line, f)) {
        char chunk[256], file[256], config[256];
        if (line[0] == '#' || sscanf(line, "%255[^\t]\t%255[^\t]\t%255[^\t]", chunk, file,
                                     config) != 3 || strcmp(config, "-") == 0)
            continue;
        int seen = 0;
        for (int i = 0; i < configs; i++)
            seen |= strcmp(done[i], config) == 0;
        if (seen || configs == 16)
            continue;
        snprintf(done[configs++], sizeof done[0], "%s", config);
        for (int backend = 0; backend < 2; backend++) {
            struct tkp_plan plan;
            struct tkp_error err = { "" };
            REQUIRE(tkp_config_load(config, backend ? TKP_GPU : TKP_CPU, &plan, &err) == TKP_OK,
                    "%s: %s", config, err.msg);
            int short_cells = 0;
            for (size_t i = 0; i < plan.n; i++) {
                const struct tkp_cell *c = &plan.cells[i];
                if (c->verify_rows < c->batch && short_cells++ == 0)
                    CHECK(0, "%s (%s backend): sweep %s %s B=%lld judges %d rows", config,
                          backend ? "GPU" : "CPU", c->sweep, c->algo->name,
                          (long long)c->batch, c->verify_rows);
            }
            tkp_plan_free(&plan);
        }
    }
    fclose(f);
    CHECK(configs >= 6, "scripts/campaign-chunks.tsv names %d configs", configs);
}
