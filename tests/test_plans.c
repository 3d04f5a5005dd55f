/* test_plans.c — every shipped config still expands to its golden plan
 * for the CPU backend (tests/golden/<config>.plan, written by scripts/update-goldens.sh): a
 * config edit that
 * changes which cells run must be deliberate. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "test.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

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
        char *golden = slurp(golden_path);
        CHECK(rc == 0 && golden && strcmp(out, golden) == 0,
              "%s no longer expands to %s (rerun scripts/update-goldens.sh if intended)", config,
              golden_path);
        free(golden);
        checked++;
    }
    closedir(dir);
    CHECK(checked >= 6, "only %d golden plans checked", checked);
}
