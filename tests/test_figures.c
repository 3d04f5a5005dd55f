/* test_figures.c — the figure pipeline end to end: a tiny config run to a results file,
 * `topkp export` read back by column name (round trip: header, row count, values), then
 * scripts/figures.sh drawing real PNG and PDF files for every kind the cells allow, and a
 * clear error for a results file without ok cells. The peers' figures are
 * test_figures_peers.c, the layout test_figures_layout.c; what they share figures_util.c.
 * Needs bash and gnuplot, not TeX. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "results.h"
#include "cli_util.h"
#include "figures_util.h"
#include "test.h"

TEST(figures_export_round_trip_has_every_cell_and_named_columns)
{
    const char *res = tiny_results();
    REQUIRE(res, "the tiny run failed");
    char tsv[512], out[4096];
    snprintf(tsv, sizeof tsv, "%s/figs-export.tsv", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s export %s > %s", topkp_bin(), res, tsv) == 0,
            "export failed: %s", out);
    FILE *f = fopen(tsv, "r");
    REQUIRE(f, "no TSV at %s", tsv);
    static char line[8192], header[8192];
    REQUIRE(fgets(header, sizeof header, f), "empty TSV");
    static const char *const needed[] = { "sweep", "algo", "variant", "mode", "batch", "vocab",
                                          "status", "median_us", "q1_us", "q3_us",
                                          "workspace_bytes", "hit_rate", "outliers", NULL };
    for (int i = 0; needed[i]; i++)
        CHECK(column_of(header, needed[i]) >= 0, "column %s missing from the header", needed[i]);
    int c_sweep = column_of(header, "sweep"), c_status = column_of(header, "status");
    int c_algo = column_of(header, "algo"), c_med = column_of(header, "median_us");
    int c_variant = column_of(header, "variant");
    int plain = 0, ablation = 0, ok = 0, rtopk_unsupported = 0, variants = 0;
    char sweep[64], status[32], algo[32], med[64], variant[64];
    while (fgets(line, sizeof line, f)) {
        field(line, c_sweep, sweep, sizeof sweep);
        field(line, c_status, status, sizeof status);
        field(line, c_algo, algo, sizeof algo);
        field(line, c_med, med, sizeof med);
        field(line, c_variant, variant, sizeof variant);
        plain += strcmp(sweep, "plain") == 0;
        ablation += strcmp(sweep, "abl") == 0;
        variants += strcmp(sweep, "abl") == 0 && (!strcmp(variant, "A") || !strcmp(variant, "B"));
        if (strcmp(status, "ok") == 0) {
            ok++;
            CHECK(atof(med) > 0, "an ok %s cell has median_us '%s'", algo, med);
        } else if (strcmp(algo, "rtopk") == 0 && strcmp(status, "unsupported") == 0) {
            rtopk_unsupported++;
        }
    }
    fclose(f);
    CHECK(plain == PLAIN_CELLS, "%d plain rows, want %d", plain, PLAIN_CELLS);
    CHECK(ablation == ABLATION_CELLS && variants == ABLATION_CELLS,
          "%d ablation rows (%d labelled A/B), want %d", ablation, variants, ABLATION_CELLS);
    CHECK(rtopk_unsupported == 8, "rtopk should be unsupported in its 8 top-p cells, got %d",
          rtopk_unsupported);
    CHECK(ok == PLAIN_CELLS + ABLATION_CELLS - 8, "%d ok cells", ok);
}

TEST(figures_script_draws_png_and_pdf_of_every_kind)
{
    const char *res = tiny_results();
    REQUIRE(res, "the tiny run failed");
    char dir[512], out[8192];
    snprintf(dir, sizeof dir, "%s/figs-out", scratch_dir());
    int rc = run_cmd(out, sizeof out, "TOPKP=%s bash scripts/figures.sh %s %s", topkp_bin(), res,
                     dir);
    REQUIRE(rc == 0, "figures.sh failed (%d): %s", rc, out);
    /* gnuplot's warnings (an empty range, a log axis over 0) reach the user's `make run` */
    CHECK(!strcasestr(out, "warning"), "figures.sh printed a warning: %s", out);
    static const char *const kinds[] = { "", "-throughput", "-speedup", "-memory", "-ablation",
                                         "-hitrate", NULL };
    for (int i = 0; kinds[i]; i++)
        check_drawn(dir, "figs", kinds[i]);
    CHECK(!listed_kind(dir, "figs", "vs-peers"), "vs-peers drawn for a file without peers");
    /* the derived TSV keeps the export's columns and adds the throughput by name */
    char tsv[600];
    snprintf(tsv, sizeof tsv, "%s/figs.tsv", dir);
    FILE *f = fopen(tsv, "r");
    REQUIRE(f, "no %s", tsv);
    char header[8192];
    CHECK(fgets(header, sizeof header, f) && column_of(header, "rows_per_s") >= 0 &&
              column_of(header, "median_us") >= 0 && column_of(header, "speedup") >= 0,
          "derived TSV header lacks rows_per_s/median_us/speedup");
    fclose(f);
}

TEST(figures_script_fails_clearly_without_ok_cells)
{
    /* only rtopk on top-p cells: every cell is unsupported */
    const char *cfg = write_scratch("figs-none.lua",
                                    "sweep \"none\" { algos = { \"rtopk\" }, vocab = 500,\n"
                                    "  batch = 1, k = 0, p = 0.9 }\n");
    char res[512], out[8192];
    snprintf(res, sizeof res, "%s/figs-none.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, res) == 0,
            "run failed: %s", out);
    int rc = run_cmd(out, sizeof out, "TOPKP=%s bash scripts/figures.sh %s %s/figs-none-out",
                     topkp_bin(), res, scratch_dir());
    CHECK(rc != 0, "figures.sh should fail on a file without ok cells");
    CHECK(strstr(out, "no ok cells"), "the error should say 'no ok cells', got: %s", out);
}
