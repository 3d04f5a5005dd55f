/* test_figures_layout.c — the layout of docs/FIGURES.md, "Figures": X/BY/FACET (a k sweep
 * puts its k values on x, no series has two points at one x), one palette colour per algorithm in
 * every figure, the memory figure's "0 B" floor, the key outside the panels, a dot plot for
 * one x value, ablation bars in declaration order against the declared baseline (and the
 * config error of a baseline that names no variant), the dtype axis, the panels of a row on
 * one y range and Table 4's bars beside the paper's ratios. Needs bash and gnuplot. */
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

/* A peer 1000 times slower than naive_sort in its top-p cells only (results_with_added_rows):
 * the top-p panels' values lie decades below the others of their row. */
static int add_slow_topp_peer(struct tkp_results *r, const char *header, const char *line,
                              struct tkp_error *err)
{
    char algo[32], status[16], mode[16];
    if (strcmp(get(header, line, "algo", algo, sizeof algo), "naive_sort") ||
        strcmp(get(header, line, "status", status, sizeof status), "ok") ||
        strcmp(get(header, line, "mode", mode, sizeof mode), "topp"))
        return 0;
    struct tkp_cell_row row;
    peer_row(&row, header, line, "torch.sort", "", "ok", 1000, 0);
    return tkp_results_append(r, "plain", &row, &row.median_us, 1, err);
}

/* The y tic labels of each panel of a line figure's SVG: gnuplot writes a panel's y tics
 * (text-anchor end), then its x tics, y label and x label (`xlab`, whose y places the panel's
 * row). Fills rows[i] (the x label's y) and ticks[i] ("first..last" tic label); returns the
 * number of panels. */
static int panel_yticks(const char *svg, const char *xlab, double *rows, char ticks[][64], int max)
{
    int n = 0;
    char first[32] = "", last[32] = "", want[128];
    snprintf(want, sizeof want, "<text>%s</text>", xlab);
    for (const char *g = strstr(svg, "<g transform=\"translate("); g && n < max;
         g = strstr(g + 1, "<g transform=\"translate(")) {
        const char *t = strstr(g, "<text>"), *next = strstr(g + 1, "<g transform=");
        if (!t || (next && t > next))
            continue;
        double x, y;
        sscanf(g + 24, "%lf,%lf", &x, &y);
        const char *anchor = strstr(g, "text-anchor=\"end\"");
        if (strncmp(t, want, strlen(want)) == 0) {
            rows[n] = y;
            snprintf(ticks[n], 64, "%s..%s", first, last);
            n++;
            first[0] = last[0] = 0;
        } else if (anchor && anchor < t) {
            snprintf(last, sizeof last, "%.*s", (int)strcspn(t + 6, "<"), t + 6);
            if (!first[0])
                snprintf(first, sizeof first, "%s", last);
        }
    }
    return n;
}

/* ---- The figures' layout, palette, memory floor, ablation order (docs/FIGURES.md, "Figures") */

static const char *const k_sweep_config =
    "sweep \"ks\" {\n"
    "    algos = { \"qrita\", \"rtopk\" }, vocab = 1000, batch = 2, k = { 5, 20, 100 },\n"
    "    p = { 0.9, 1.0 },\n"
    "    timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 },\n"
    "}\n";

/* Run a config into scratch/<stem>.h5 (once per stem and process); its path or NULL. */
static const char *run_config(const char *stem, const char *text)
{
    enum { SLOTS = 8 }; /* the configs this file runs, each once */
    static char paths[SLOTS][512], stems[SLOTS][64];
    for (int i = 0; i < SLOTS; i++)
        if (strcmp(stems[i], stem) == 0)
            return paths[i];
    int slot = 0;
    while (slot < SLOTS && stems[slot][0])
        slot++;
    if (slot == SLOTS) {
        fprintf(stderr, "  run_config: more than %d configs; raise SLOTS\n", SLOTS);
        return NULL;
    }
    char name[80], out[8192];
    snprintf(name, sizeof name, "%s.lua", stem);
    const char *cfg = write_scratch(name, text);
    snprintf(paths[slot], sizeof paths[slot], "%s/%s.h5", scratch_dir(), stem);
    unlink(paths[slot]);
    if (run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, paths[slot])) {
        fprintf(stderr, "  topkp run %s failed: %s\n", stem, out);
        return NULL;
    }
    snprintf(stems[slot], sizeof stems[slot], "%s", stem);
    return paths[slot];
}

/* figures.sh on `res` into scratch/<dir> with the extra arguments `args` (X=..., BY=...). */
static int draw_figures(const char *res, const char *dir, const char *args, const char *formats)
{
    char out[8192];
    int rc = run_cmd(out, sizeof out, "FIGURE_FORMATS='%s' TOPKP=%s bash scripts/figures.sh %s %s/%s %s",
                     formats, topkp_bin(), res, scratch_dir(), dir, args);
    if (rc)
        fprintf(stderr, "  figures.sh %s failed (%d): %s\n", args, rc, out);
    return rc;
}

/* The value of `name` in a figures layout file (name<TAB>value lines), into out. */
static int layout_value(const char *path, const char *name, char *out, size_t n)
{
    char *text = slurp(path, NULL), want[80];
    snprintf(want, sizeof want, "%s\t", name);
    const char *at = NULL;
    for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (strncmp(l, want, strlen(want)) == 0) {
            at = l + strlen(want);
            break;
        }
    if (at)
        snprintf(out, n, "%.*s", (int)strcspn(at, "\n"), at);
    free(text);
    return at != NULL;
}

/* The distinct values of column `col` of a TSV file, each between '|', in order of
 * appearance; and whether (ri, ci, skey, fx) repeats (a series that is not a function of x). */
static void column_values(const char *path, const char *col, char *out, size_t n, int *repeats)
{
    static char header[16384], line[16384];
    static char seen[1 << 16];
    FILE *f = fopen(path, "r");
    out[0] = 0;
    seen[0] = 0;
    *repeats = 0;
    if (!f || !fgets(header, sizeof header, f)) {
        if (f)
            fclose(f);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char v[64], id[512], ri[16], ci[16], skey[256], fx[64];
        get(header, line, col, v, sizeof v);
        snprintf(id, sizeof id, "|%s/%s/%s/%s|", get(header, line, "ri", ri, sizeof ri),
                 get(header, line, "ci", ci, sizeof ci), get(header, line, "skey", skey, sizeof skey),
                 get(header, line, "fx", fx, sizeof fx));
        *repeats |= strstr(seen, id) != NULL;
        if (strlen(seen) + strlen(id) < sizeof seen)
            strcat(seen, id);
        char word[80];
        snprintf(word, sizeof word, "|%s|", v);
        if (!strstr(out, word) && strlen(out) + strlen(word) < n)
            strcat(out, out[0] ? word + 1 : word); /* "|a|" then "b|": "|a|b|" */
    }
    fclose(f);
}

TEST(figures_x_k_puts_the_k_values_on_x_and_splits_series_by_p)
{
    const char *res = run_config("ks", k_sweep_config);
    REQUIRE(res, "the k sweep did not run");
    char path[600], xs[256], v[256];
    int repeats;
    /* batch has one value and k varies: x is k by default, and p splits the series */
    REQUIRE(draw_figures(res, "ks-default", "", "png") == 0, "figures.sh failed");
    snprintf(path, sizeof path, "%s/ks-default/ks-layout.txt", scratch_dir());
    CHECK(layout_value(path, "x", v, sizeof v) && strcmp(v, "k") == 0, "default x is '%s', want k", v);
    CHECK(layout_value(path, "by", v, sizeof v) && strcmp(v, "p") == 0,
          "p varies at every k: the series must split by p, got '%s'", v);
    snprintf(path, sizeof path, "%s/ks-default/ks-lines.tsv", scratch_dir());
    column_values(path, "fx", xs, sizeof xs, &repeats);
    CHECK(strcmp(xs, "|5|20|100|") == 0, "the x values of the k figure are %s, want |5|20|100|", xs);
    CHECK(!repeats, "a series has two points at one x in one panel (a vertical zig-zag)");
    /* the same asked for: X=k BY=p FACET=algo, a panel per algorithm */
    REQUIRE(draw_figures(res, "ks-asked", "X=k BY=p FACET=algo", "png pdf") == 0, "figures.sh failed");
    snprintf(path, sizeof path, "%s/ks-asked/ks-layout.txt", scratch_dir());
    CHECK(layout_value(path, "rows", v, sizeof v) && strstr(v, "\"qrita\"") && strstr(v, "\"rtopk\""),
          "FACET=algo: a panel per algorithm, got rows %s", v);
    snprintf(path, sizeof path, "%s/ks-asked/ks-lines.tsv", scratch_dir());
    column_values(path, "fx", xs, sizeof xs, &repeats);
    CHECK(strcmp(xs, "|5|20|100|") == 0 && !repeats, "X=k: x values %s (repeats %d)", xs, repeats);
    check_drawn(scratch_dir(), "ks-asked/ks", "");
    /* an axis that is not one */
    char out[4096];
    CHECK(run_cmd(out, sizeof out, "TOPKP=%s bash scripts/figures.sh %s %s/ks-bad X=rows", topkp_bin(),
                  res, scratch_dir()) != 0 && strstr(out, "X=rows"),
          "X=rows must fail naming it: %s", out);
}

TEST(figures_series_are_functions_of_x_on_a_mixed_sweep)
{
    /* the tiny sweep: k in {0, 20} and p in {0.9, 1} under modes as columns, batch on x */
    const char *res = tiny_results();
    REQUIRE(res, "the tiny run failed");
    REQUIRE(draw_figures(res, "figs-fn", "", "png") == 0, "figures.sh failed");
    char path[600], xs[256];
    int repeats;
    snprintf(path, sizeof path, "%s/figs-fn/figs-lines.tsv", scratch_dir());
    column_values(path, "fx", xs, sizeof xs, &repeats);
    CHECK(strcmp(xs, "|1|4|") == 0, "batch on x: %s", xs);
    CHECK(!repeats, "a series has two points at one x in one panel");
}

/* The stroke colour of the first line titled `name` in an SVG figure, into out. */
static int line_colour(const char *path, const char *name, char *out, size_t n)
{
    char *text = slurp(path, NULL), want[256];
    snprintf(want, sizeof want, "<title>%s</title>", name);
    const char *g = text ? strstr(text, want) : NULL;
    const char *stroke = g ? strstr(g, "<path stroke='") : NULL;
    if (stroke)
        snprintf(out, n, "%.*s", (int)strcspn(stroke + 14, "'"), stroke + 14);
    free(text);
    return stroke != NULL;
}

TEST(figures_palette_gives_an_algorithm_one_colour_in_every_figure)
{
    const char *tiny = tiny_results(), *ks = run_config("ks", k_sweep_config);
    REQUIRE(tiny && ks, "the runs failed");
    REQUIRE(draw_figures(tiny, "pal-tiny", "", "svg") == 0 && draw_figures(ks, "pal-ks", "", "svg") == 0,
            "figures.sh failed");
    /* plots/palette.tsv: qrita #D55E00, rtopk #0072B2 */
    static const struct { const char *algo, *rgb; } want[] = {
        { "qrita", "rgb(213,  94,   0)" }, { "rtopk", "rgb(  0, 114, 178)" } };
    static const char *const figures[] = { "pal-tiny/figs.svg", "pal-tiny/figs-memory.svg",
                                           "pal-tiny/figs-throughput.svg" };
    for (int a = 0; a < 2; a++) {
        char c[64] = "", path[600];
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%s", scratch_dir(), figures[i]);
            CHECK(line_colour(path, want[a].algo, c, sizeof c) && strcmp(c, want[a].rgb) == 0,
                  "%s: %s is drawn in %s, want %s", path, want[a].algo, c, want[a].rgb);
        }
        /* in the k sweep its series split by p: the last level is the palette's colour */
        char name[64];
        snprintf(name, sizeof name, "%s p=off", want[a].algo);
        snprintf(path, sizeof path, "%s/pal-ks/ks.svg", scratch_dir());
        CHECK(line_colour(path, name, c, sizeof c) && strcmp(c, want[a].rgb) == 0,
              "%s: %s is drawn in %s, want %s", path, name, c, want[a].rgb);
    }
    /* an algorithm the palette does not list takes a colour from a hash of its name: the same
     * in two runs of the style table */
    char out[4096], again[4096];
    const char *cmd = "printf 'series\\tzz.new\\tzz.new\\t1\\t1\\n' | awk -f scripts/figures-style.awk "
                      "plots/palette.tsv -";
    CHECK(run_cmd(out, sizeof out, "%s", cmd) == 0 && run_cmd(again, sizeof again, "%s", cmd) == 0 &&
              strstr(out, "zz.new\t#") && strcmp(out, again) == 0,
          "an unlisted name must get a deterministic colour: %s / %s", out, again);
}

TEST(figures_memory_draws_zero_workspace_on_a_labelled_floor)
{
    const char *res = tiny_results();
    REQUIRE(res, "the tiny run failed");
    REQUIRE(draw_figures(res, "mem", "", "svg") == 0, "figures.sh failed");
    char path[600];
    snprintf(path, sizeof path, "%s/mem/figs-memory.svg", scratch_dir());
    char *svg = slurp(path, NULL);
    REQUIRE(svg, "no %s", path);
    CHECK(strstr(svg, "<text>0 B</text>"), "the memory figure has no \"0 B\" floor tic");
    free(svg);
    /* rtopk needs no workspace on the CPU: it is still drawn, on the floor */
    struct drawn d;
    read_svg(path, &d);
    CHECK(strokes(&d, "rtopk") >= 1, "rtopk (0 bytes) is not drawn in the memory figure: %s",
          d.titles);
    char *gp = slurp("plots/grid.gp", NULL);
    CHECK(gp && strstr(gp, "\"0 B\" floor"), "plots/grid.gp lost its \"0 B\" floor tic");
    free(gp);
}

/* The key of a figure stays inside it and below or beside the panels: every key label's
 * estimated extent lies within the SVG's width, and below every panel's bottom or to the
 * right of every panel. */
TEST(figures_key_is_outside_the_panels_and_inside_the_figure)
{
    const char *res = peer_results();
    REQUIRE(res, "could not make the results file with peers");
    REQUIRE(draw_figures(res, "keys", "", "svg") == 0, "figures.sh failed");
    char path[600];
    snprintf(path, sizeof path, "%s/keys/figs-peers-throughput.svg", scratch_dir());
    char *svg = slurp(path, NULL);
    REQUIRE(svg, "no %s", path);
    double width = 0;
    const char *w = strstr(svg, "width=\"");
    if (w)
        width = atof(w + 7);
    /* the panels' frame: the border paths drawn before the plots, "M x,y L ..." */
    double panel_bottom = 0, panel_right = 0;
    for (const char *g = strstr(svg, "<g id=\"gnuplot_plot_"); g; g = strstr(g + 1, "<g id=\"gnuplot_plot_"))
        for (const char *p = strstr(g, " d='M"); p && p < g + 4000; p = strstr(p + 1, " d='M")) {
            double x, y;
            if (sscanf(p + 5, "%lf,%lf", &x, &y) == 2) {
                panel_bottom = y > panel_bottom ? y : panel_bottom;
                panel_right = x > panel_right ? x : panel_right;
            }
            break;
        }
    int labels = 0;
    for (int i = 0; i < N_FAKE_PEERS; i++) {
        const char *name = fake_peers[i].legend;
        char want[128];
        if (!name)
            continue;
        snprintf(want, sizeof want, "<text>%s</text>", name);
        for (const char *t = strstr(svg, want); t; t = strstr(t + 1, want)) {
            const char *tr = t;
            while (tr > svg && strncmp(tr, "translate(", 10) != 0)
                tr--;
            double x = 0, y = 0;
            sscanf(tr + 10, "%lf,%lf", &x, &y);
            CHECK(x >= 0 && x + 8.0 * strlen(name) <= width,
                  "%s: key label %s at x = %.0f runs past the figure's width %.0f", path, name, x,
                  width);
            CHECK(y > panel_bottom || x > panel_right,
                  "%s: key label %s at (%.0f, %.0f) lies over the panels (bottom %.0f)", path,
                  name, x, y, panel_bottom);
            labels++;
        }
    }
    CHECK(labels >= 3, "%s: %d key labels of the peers found", path, labels);
    free(svg);
}

TEST(figures_ablation_bars_in_declaration_order_against_the_declared_baseline)
{
    const char *res = run_config("abl-order",
        "ablation \"ord\" {\n"
        "    base = { vocab = 2000, batch = 2, k = 20, p = 0.9,\n"
        "             timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 } },\n"
        "    baseline = \"M\",\n"
        "    variants = { { \"Z\", \"qrita\" }, { \"A\", { \"qrita\", search = \"binary\" } },\n"
        "                 { \"M\", { \"qrita\", truncation = \"off\" } } },\n"
        "}\n");
    REQUIRE(res, "the ablation did not run");
    char out[16384];
    CHECK(run_cmd(out, sizeof out, "%s info %s", topkp_bin(), res) == 0 &&
              strstr(out, "ablation:ord\tM/Z/A/M\n"),
          "the run record must keep baseline and order (ablation:ord = M/Z/A/M): %s", out);
    REQUIRE(draw_figures(res, "abl-order", "", "png pdf svg") == 0, "figures.sh failed");
    check_drawn(scratch_dir(), "abl-order/abl-order", "-ablation");
    char path[600], order[128];
    int repeats;
    /* three bars make a narrow figure: it is still as wide as its title (7.6 px a character) */
    snprintf(path, sizeof path, "%s/abl-order/abl-order-ablation.svg", scratch_dir());
    char *svg = slurp(path, NULL);
    const char *w = svg ? strstr(svg, "width=\"") : NULL, *t = svg ? strstr(svg, "<text>Ablation") : NULL;
    size_t title = t ? strcspn(t + 6, "<") : 0;
    CHECK(w && t && atof(w + 7) >= 7.6 * (double)title,
          "%s: %.0f px wide for a title of %zu characters", path, w ? atof(w + 7) : 0, title);
    free(svg);
    snprintf(path, sizeof path, "%s/abl-order/abl-order-ablation.tsv", scratch_dir());
    column_values(path, "variant", order, sizeof order, &repeats);
    CHECK(strcmp(order, "|Z|A|M|") == 0, "bars in order %s, want the declared |Z|A|M|", order);
    FILE *f = fopen(path, "r");
    REQUIRE(f, "no %s", path);
    char header[4096], line[4096], v[64], b[64];
    int checked = 0;
    if (fgets(header, sizeof header, f))
        while (fgets(line, sizeof line, f)) {
            get(header, line, "variant", v, sizeof v);
            CHECK(strcmp(get(header, line, "baseline", b, sizeof b), "M") == 0,
                  "variant %s has baseline %s, want M", v, b);
            if (strcmp(v, "M") == 0)
                CHECK(fabs(get_num(header, line, "rel") - 1) < 1e-9, "the baseline's ratio is not 1");
            checked++;
        }
    fclose(f);
    CHECK(checked == 3, "%d bars, want 3", checked);
}

TEST(config_ablation_baseline_must_name_a_variant)
{
    const char *cfg = write_scratch("bl.lua",
        "-- a baseline that names no variant\n"
        "ablation \"t\" {\n"
        "    base = { vocab = 1000, batch = 1, k = 5 },\n"
        "    baseline = \"Q\",\n"
        "    variants = { A = \"qrita\", B = { \"qrita\", search = \"binary\" } },\n"
        "}\n");
    char out[4096];
    int rc = run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), cfg);
    CHECK(rc != 0 && strstr(out, "bl.lua:2:") && strstr(out, "baseline 'Q' names no variant") &&
              strstr(out, "A, B"),
          "a baseline naming no variant must fail with file:line and the variants: %s", out);
    /* the list form: declaration order is the plan's, labels listed twice are refused */
    cfg = write_scratch("bl2.lua",
        "ablation \"t\" { base = { vocab = 1000, batch = 1, k = 5 },\n"
        "    variants = { { \"B\", \"qrita\" }, { \"A\", \"rtopk\" } } }\n");
    rc = run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), cfg);
    const char *b = strstr(out, "qrita:B"), *a = strstr(out, "rtopk:A");
    CHECK(rc == 0 && b && a && b < a, "the list form must keep the order written: %s", out);
    cfg = write_scratch("bl3.lua",
        "ablation \"t\" { base = { vocab = 1000, batch = 1, k = 5 },\n"
        "    variants = { { \"A\", \"qrita\" }, { \"A\", \"rtopk\" } } }\n");
    rc = run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), cfg);
    CHECK(rc != 0 && strstr(out, "bl3.lua:1:") && strstr(out, "listed twice"),
          "a label listed twice must fail: %s", out);
}

TEST(figures_one_x_value_draws_a_labelled_dot_plot)
{
    /* every cell at one shape (a Table-4-like file of plain cells): no 5 points at one x */
    const char *res = run_config("one-x",
        "sweep \"one\" { algos = { \"naive_sort\", \"rtopk\", \"qrita\" }, vocab = 1000,\n"
        "  batch = 2, k = 20, p = 1.0, timing = { warmup = 0, min_reps = 1, max_reps = 2 } }\n");
    REQUIRE(res, "the run failed");
    REQUIRE(draw_figures(res, "one-x", "", "svg") == 0, "figures.sh failed");
    char path[600], v[64];
    snprintf(path, sizeof path, "%s/one-x/one-x-layout.txt", scratch_dir());
    CHECK(layout_value(path, "nx", v, sizeof v) && strcmp(v, "1") == 0, "nx = %s, want 1", v);
    snprintf(path, sizeof path, "%s/one-x/one-x.svg", scratch_dir());
    char *svg = slurp(path, NULL);
    /* each series is a labelled row: its name as a y tic */
    CHECK(svg && strstr(svg, "<text>naive_sort</text>") && strstr(svg, "<text>qrita</text>"),
          "the dot plot must name each series on its axis");
    free(svg);
}

/* The bf16 twin of an ok row, as a module that reads bf16 would record it (0.6 of the time). */
static int add_bf16_twin(struct tkp_results *r, const char *header, const char *line,
                         struct tkp_error *err)
{
    char status[16];
    if (strcmp(get(header, line, "status", status, sizeof status), "ok"))
        return 0;
    struct tkp_cell_row row;
    fake_peer_row(&row, header, line, 0);
    snprintf(row.algo, sizeof row.algo, "naive_sort");
    snprintf(row.dtype, sizeof row.dtype, "bf16");
    snprintf(row.key + strlen(row.key), sizeof row.key - strlen(row.key), "|bf16");
    row.median_us = row.q1_us = row.q3_us = row.min_us = row.max_us = row.mean_us =
        0.6 * get_num(header, line, "median_us");
    return tkp_results_append(r, "dts", &row, &row.median_us, 1, err);
}

/* A results file of one f32 sweep and, beside each of its ok cells, the same cell at bf16
 * (add_bf16_twin), through the results writer. */
static const char *dtype_results(void)
{
    static char path[512];
    const char *res = run_config("dtypes", "sweep \"dts\" {\n"
                                 "    algos = \"naive_sort\", vocab = 1000, batch = { 1, 4 }, k = 20,\n"
                                 "    timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 },\n"
                                 "}\n");
    if (!res)
        return NULL;
    snprintf(path, sizeof path, "%s/dtypes-both.h5", scratch_dir());
    return results_with_added_rows(res, path, "", add_bf16_twin) ? NULL : path;
}

/* An f32 and a bf16 run of one algorithm are two series (dtype varies inside the panel); a
 * file with f32 cells only draws one, with dtype among the axes of one value. */
TEST(figures_dtype_splits_the_series_of_an_algorithm)
{
    const char *res = dtype_results();
    REQUIRE(res, "the dtype results could not be made");
    REQUIRE(draw_figures(res, "dts-both", "", "png") == 0, "figures.sh failed");
    char path[600], v[512];
    snprintf(path, sizeof path, "%s/dts-both/dtypes-both-layout.txt", scratch_dir());
    char *layout = slurp(path, NULL);
    REQUIRE(layout, "no layout file %s", path);
    int series = 0;
    for (const char *l = layout; (l = strstr(l, "\nseries\t")) != NULL; l++)
        series++;
    CHECK(series == 2 && strstr(layout, "bf16") && strstr(layout, "f32"),
          "f32 and bf16 must be two series named by their type: %s", layout);
    free(layout);
    REQUIRE(draw_figures(run_config("dtypes", ""), "dts-f32", "", "png") == 0, "figures.sh failed");
    snprintf(path, sizeof path, "%s/dts-f32/dtypes-layout.txt", scratch_dir());
    layout = slurp(path, NULL);
    REQUIRE(layout, "no layout file %s", path);
    series = 0;
    for (const char *l = layout; (l = strstr(l, "\nseries\t")) != NULL; l++)
        series++;
    CHECK(series == 1 && !strstr(layout, "bf16"), "f32 cells alone: one series: %s", layout);
    (void)v;
    free(layout);
}

/* The panels of a row share one y range: with a peer 1000 times slower in the top-p column
 * only, every panel of a row still reads the same y tics (throughput and time figures). */
TEST(figures_panels_of_a_row_share_a_y_range)
{
    const char *tiny = tiny_results();
    REQUIRE(tiny, "the tiny run failed");
    char res[512];
    snprintf(res, sizeof res, "%s/figs-slow.h5", scratch_dir());
    REQUIRE(results_with_added_rows(tiny, res, "--sweep plain", add_slow_topp_peer) == 0,
            "could not add the slow peer");
    REQUIRE(draw_figures(res, "rows", "", "svg") == 0, "figures.sh failed");
    static const char *const figs[] = { "figs-slow-throughput.svg", "figs-slow.svg" };
    for (int f = 0; f < 2; f++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rows/%s", scratch_dir(), figs[f]);
        char *svg = slurp(path, NULL);
        REQUIRE(svg, "no %s", path);
        double rows[32];
        char ticks[32][64];
        int n = panel_yticks(svg, "batch (rows)", rows, ticks, 32), pairs = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (fabs(rows[i] - rows[j]) < 0.5) {
                    pairs++;
                    CHECK(strcmp(ticks[i], ticks[j]) == 0,
                          "%s: panels %d and %d of one row read y tics %s and %s", path, i + 1,
                          j + 1, ticks[i], ticks[j]);
                }
        CHECK(n >= 4 && pairs >= 2, "%s: %d panels, %d pairs in a row", path, n, pairs);
        free(svg);
    }
}

/* Table 4 beside the paper's: the ablation sweep named table4 takes the published times of its
 * runs (PUBLISHED, default paper/published.tsv: table4 rows, time_ms) as paper_ms, and each
 * over the published baseline run's as paper_rel; the figure draws those ratios beside ours.
 * Another sweep's bars have none. */
TEST(figures_table4_bars_stand_beside_the_papers_ratios)
{
    const char *res = run_config("t4-paper",
        "ablation \"table4\" {\n"
        "    base = { vocab = 2000, batch = 2, k = 20, p = 0.9,\n"
        "             timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 } },\n"
        "    variants = { A = \"qrita\", J = { \"qrita\", truncation = \"off\", search = \"sort\" } },\n"
        "}\n"
        "ablation \"other\" {\n"
        "    base = { vocab = 2000, batch = 2, k = 20, p = 0.9,\n"
        "             timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 } },\n"
        "    variants = { A = \"qrita\", J = { \"qrita\", search = \"binary\" } },\n"
        "}\n");
    REQUIRE(res, "the ablation did not run");
    const char *pub = write_scratch("published.tsv",
                                    "# a published table\ntable\tkey\tlabel\tmetric\tvalue\n"
                                    "table4\tA\tfull\ttime_ms\t0.5\n"
                                    "table4\tJ\tsort\ttime_ms\t4\n"
                                    "table1\t1000\tx\ttopk_nt\t9\n");
    char out[8192], path[600];
    int rc = run_cmd(out, sizeof out,
                     "PUBLISHED=%s FIGURE_FORMATS=svg TOPKP=%s bash scripts/figures.sh %s %s/t4p",
                     pub, topkp_bin(), res, scratch_dir());
    REQUIRE(rc == 0, "figures.sh failed (%d): %s", rc, out);
    snprintf(path, sizeof path, "%s/t4p/t4-paper-ablation.tsv", scratch_dir());
    FILE *f = fopen(path, "r");
    REQUIRE(f, "no %s", path);
    char header[4096], line[4096], sweep[32], v[16];
    int rows = 0;
    if (fgets(header, sizeof header, f))
        while (fgets(line, sizeof line, f)) {
            get(header, line, "sweep", sweep, sizeof sweep);
            get(header, line, "variant", v, sizeof v);
            double ms = get_num(header, line, "paper_ms"), rel = get_num(header, line, "paper_rel");
            int t4 = strcmp(sweep, "table4") == 0, a = strcmp(v, "A") == 0;
            if (t4)
                CHECK(fabs(ms - (a ? 0.5 : 4)) < 1e-9 && fabs(rel - (a ? 1 : 8)) < 1e-9,
                      "%s: table4 %s: paper %g ms, %g x A; want %g and %g", path, v, ms, rel,
                      a ? 0.5 : 4.0, a ? 1.0 : 8.0);
            else
                CHECK(isnan(ms) && isnan(rel), "%s: sweep %s %s has the paper's %g ms", path,
                      sweep, v, ms);
            rows++;
        }
    fclose(f);
    CHECK(rows == 4, "%s: %d bars, want 4", path, rows);
    snprintf(path, sizeof path, "%s/t4p/t4-paper-ablation.svg", scratch_dir());
    char *svg = slurp(path, NULL);
    CHECK(svg && strstr(svg, "<text>the paper (H100)</text>") && strstr(svg, "<text>8.00</text>"),
          "%s: the paper's bars (J: 8.00 x A) are not drawn", path);
    free(svg);
}
