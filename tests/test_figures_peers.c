/* test_figures_peers.c — the figures with peer cells (algo names with a '.', as the peer
 * bridge records them): a copy of the tiny results with fake peers (figures_util.c) draws the
 * vs-peers figure and its TSV, the peers in their own style (the SVG that gnuplot writes names
 * each line and says how it is stroked), and the vs-peers comparison like with like (mask
 * against mask peers, draws against samplers, never a peer fed probabilities) with the softmax
 * as its own cost and the paper's kernel standing out. Needs bash and gnuplot. */
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

/* Every module row of the vs-peers TSV names the best ok peer, with ratio = its median / the
 * module's; returns the number of rows. */
static int check_vs_peers_tsv(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f, "no %s", path);
    if (!f)
        return 0;
    static char header[4096], line[4096];
    int rows = 0;
    if (!fgets(header, sizeof header, f))
        header[0] = 0;
    static const char *const cols[] = { "module", "sweep", "dataset", "vocab", "batch", "k", "p",
                                        "module_us", "best_peer", "best_peer_us", "ratio", NULL };
    for (int i = 0; cols[i]; i++)
        CHECK(column_of(header, cols[i]) >= 0, "%s lacks column %s", path, cols[i]);
    while (fgets(line, sizeof line, f)) {
        char module[160], best[160];
        get(header, line, "module", module, sizeof module);
        get(header, line, "best_peer", best, sizeof best);
        double mine = get_num(header, line, "module_us");
        double theirs = get_num(header, line, "best_peer_us");
        double ratio = get_num(header, line, "ratio");
        CHECK(!is_peer_name(module), "%s: peer %s in the module column", path, module);
        CHECK(strcmp(best, BEST_PEER) == 0, "%s: best peer of a %s cell is '%s', want '%s'", path,
              module, best, BEST_PEER);
        CHECK(mine > 0 && fabs(ratio - theirs / mine) <= 1e-4 * ratio,
              "%s: %s ratio %g, but %g / %g", path, module, ratio, theirs, mine);
        rows++;
    }
    fclose(f);
    return rows;
}

TEST(figures_peers_drawn_in_their_own_style_and_against_the_modules)
{
    const char *res = peer_results();
    REQUIRE(res, "could not make the results file with peers");
    char dir[512], out[8192], path[600];
    snprintf(dir, sizeof dir, "%s/figs-peers-out", scratch_dir());
    int rc = run_cmd(out, sizeof out,
                     "FIGURE_FORMATS='png pdf svg' TOPKP=%s bash scripts/figures.sh %s %s",
                     topkp_bin(), res, dir);
    REQUIRE(rc == 0, "figures.sh failed (%d): %s", rc, out);
    REQUIRE(listed_kind(dir, "figs-peers", "vs-peers"), "no vs-peers figure for a file with peers");
    check_drawn(dir, "figs-peers", "-vs-peers");
    snprintf(path, sizeof path, "%s/figs-peers-vs-peers.tsv", dir);
    /* naive_sort and qrita in 2 vocab x 2 batch x 3 modes, rtopk in the 4 top-k cells */
    int rows = check_vs_peers_tsv(path);
    CHECK(rows == 2 * 12 + 4, "%d module cells against peers, want %d", rows, 2 * 12 + 4);

    /* every figure that draws modules draws the peers too, dashed and in colours of their own */
    static const char *const with_peers[] = { "", "-throughput", "-speedup", "-memory", NULL };
    for (int i = 0; with_peers[i]; i++) {
        struct drawn d;
        snprintf(path, sizeof path, "%s/figs-peers%s.svg", dir, with_peers[i]);
        read_svg(path, &d);
        CHECK(d.peers > 0 && d.modules > 0, "%s draws %d peer and %d module lines", path, d.peers,
              d.modules);
        CHECK(!strstr(d.titles, "order=") && !strstr(d.titles, "sglang") &&
                  !strstr(d.titles, "|vllm.triton|"),
              "%s: a legend shows an option that never varies, a failed peer, or the paper's "
              "kernel by its peer name: %s", path,
              d.titles);
        for (int p = 0; i > 0 && p < N_FAKE_PEERS; p++) {
            const char *name = fake_peers[p].legend;
            CHECK(!name || strokes(&d, name) >= 2,
                  "%s: the line %s is in %d plots, want the key strip's and a panel's", path,
                  name, name ? strokes(&d, name) : 0);
        }
    }
    struct drawn vs;
    snprintf(path, sizeof path, "%s/figs-peers-vs-peers.svg", dir);
    read_svg(path, &vs);
    CHECK(vs.modules > 0 && vs.peers == 0, "%s draws %d module and %d peer lines", path,
          vs.modules, vs.peers);
}

/* The stroke width and colour of the first line titled `name` in an SVG figure (gnuplot opens
 * a plot's group with its title, then a group stroked at its width, then its path). */
static int line_stroke(const char *path, const char *name, double *width, char *colour, size_t n)
{
    char *text = slurp(path, NULL), want[256];
    snprintf(want, sizeof want, "<title>%s</title>", name);
    const char *g = text ? strstr(text, want) : NULL;
    const char *w = g ? strstr(g, "stroke-width=\"") : NULL;
    const char *c = g ? strstr(g, "<path stroke='") : NULL;
    if (w)
        *width = atof(w + 14);
    if (c)
        snprintf(colour, n, "%.*s", (int)strcspn(c + 14, "'"), c + 14);
    free(text);
    return w && c;
}

/* The fake peer the TSVs name `name`, or -1. */
static int fake_peer_named(const char *name)
{
    for (int i = 0; i < N_FAKE_PEERS; i++)
        if (fake_peers[i].name && strcmp(fake_peers[i].name, name) == 0)
            return i;
    return -1;
}

/* Does module `algo` write `output` (README.md's table of modules: naive_sort a set and draws, qrita
 * and rtopk a set)? */
static int module_writes(const char *algo, const char *output)
{
    if (strcmp(output, "set") == 0)
        return 1;
    return strcmp(output, "sample") == 0 && strcmp(algo, "naive_sort") == 0;
}

/* Like with like (<stem>-vs-peers-like.tsv): a module's mask only against mask peers, its draws
 * only against samplers, never against a peer fed probabilities (input=probs), and against the
 * fastest peer that qualifies; the softmax of a peer timed both ways as its own cost
 * (<stem>-softmax.tsv); and the vs-peers figure draws those pairs, one series per module and
 * output. The fastest peer of any kind (a probs-in mask) stays in <stem>-vs-peers.tsv. */
TEST(figures_vs_peers_pairs_like_with_like)
{
    const char *res = peer_results();
    REQUIRE(res, "could not make the results file with peers");
    char dir[512], out[8192], path[600];
    snprintf(dir, sizeof dir, "%s/like", scratch_dir());
    int rc = run_cmd(out, sizeof out, "FIGURE_FORMATS=svg TOPKP=%s bash scripts/figures.sh %s %s",
                     topkp_bin(), res, dir);
    REQUIRE(rc == 0, "figures.sh failed (%d): %s", rc, out);
    snprintf(path, sizeof path, "%s/figs-peers-vs-peers-like.tsv", dir);
    FILE *f = fopen(path, "r");
    REQUIRE(f, "no %s", path);
    static char header[4096], line[4096];
    if (!fgets(header, sizeof header, f))
        header[0] = 0;
    int rows = 0, per_output[2] = { 0, 0 };
    while (fgets(line, sizeof line, f)) {
        char module[64], output[16], cls[64], peer[160];
        get(header, line, "module", module, sizeof module);
        get(header, line, "output", output, sizeof output);
        get(header, line, "peer_class", cls, sizeof cls);
        get(header, line, "best_like_peer", peer, sizeof peer);
        int p = fake_peer_named(peer), sample = strcmp(output, "sample") == 0;
        CHECK(module_writes(module, output), "%s: %s paired by an output it does not write: %s",
              path, module, output);
        CHECK(p >= 0, "%s: %s paired with '%s', no peer of the file", path, module, peer);
        if (p < 0)
            continue;
        CHECK(strcmp(fake_peers[p].output, output) == 0,
              "%s: %s's %s paired with %s, which writes a %s", path, module, output, peer,
              fake_peers[p].output);
        CHECK(strcmp(fake_peers[p].input, "probs") != 0,
              "%s: %s paired with %s, which is fed probabilities: no logits-in comparison", path,
              module, peer);
        CHECK(strcmp(peer, sample ? "flashinfer.cake input=softmax" : "vllm.triton") == 0,
              "%s: %s's %s paired with %s, not the fastest logits-in peer of that output", path,
              module, output, peer);
        CHECK(strstr(cls, sample ? "sampler" : "mask") && strstr(cls, "logits in"),
              "%s: peer_class '%s' for a %s", path, cls, output);
        double mine = get_num(header, line, "module_us");
        double theirs = get_num(header, line, "best_like_peer_us");
        double ratio = get_num(header, line, "ratio");
        CHECK(mine > 0 && fabs(ratio - theirs / mine) <= 1e-4 * ratio,
              "%s: %s ratio %g, but %g / %g", path, module, ratio, theirs, mine);
        per_output[sample]++;
        rows++;
    }
    fclose(f);
    /* masks: naive_sort and qrita in 2 vocab x 2 batch x 3 modes, rtopk in the 4 top-k cells;
     * draws: naive_sort's 12 */
    CHECK(per_output[0] == 2 * 12 + 4 && per_output[1] == 12,
          "%d mask and %d sampler pairs, want %d and %d", per_output[0], per_output[1],
          2 * 12 + 4, 12);

    /* the softmax as its own cost: flashinfer.cake's input=softmax (0.3 t) less its input=probs
     * (0.2 t): a third of the time with the softmax, in each of naive_sort's 12 cells */
    snprintf(path, sizeof path, "%s/figs-peers-softmax.tsv", dir);
    f = fopen(path, "r");
    REQUIRE(f, "no %s", path);
    if (!fgets(header, sizeof header, f))
        header[0] = 0;
    int softmax_rows = 0;
    while (fgets(line, sizeof line, f)) {
        char peer[64];
        get(header, line, "peer", peer, sizeof peer);
        double share = get_num(header, line, "softmax_share");
        double cost = get_num(header, line, "softmax_us");
        double with = get_num(header, line, "with_softmax_us");
        double probs = get_num(header, line, "probs_us");
        CHECK(strcmp(peer, "flashinfer.cake") == 0 && fabs(share - 1.0 / 3) < 1e-3 &&
                  fabs(cost - (with - probs)) <= 1e-4 * with,
              "%s: %s softmax %g us of %g (share %g), want a third", path, peer, cost, with, share);
        softmax_rows++;
    }
    fclose(f);
    CHECK(softmax_rows == 12, "%s: %d rows, want 12", path, softmax_rows);

    /* the figure: one series per module and output, no peer of its own */
    struct drawn vs;
    snprintf(path, sizeof path, "%s/figs-peers-vs-peers.svg", dir);
    read_svg(path, &vs);
    static const char *const want[] = { "naive_sort [mask]", "naive_sort [sampler]",
                                        "qrita [mask]", "rtopk [mask]" };
    for (int i = 0; i < 4; i++)
        CHECK(strokes(&vs, want[i]) >= 2, "%s: no line %s (%s)", path, want[i], vs.titles);
    CHECK(!strstr(vs.titles, "qrita [sampler]") && !strstr(vs.titles, "rtopk [sampler]") &&
              vs.peers == 0,
          "%s: a module drawn against samplers for an output it lacks, or a peer: %s", path,
          vs.titles);

    /* the paper's kernel stands out in the throughput figure (the paper's Figure 2): heavier
     * than our qrita, which is drawn lighter there than its palette colour (plots/palette.tsv:
     * qrita #D55E00) and in it elsewhere */
    double heavy = 0, light = 0, plain = 0;
    char c_heavy[64] = "", c_light[64] = "", c_plain[64] = "";
    snprintf(path, sizeof path, "%s/figs-peers-throughput.svg", dir);
    CHECK(line_stroke(path, fake_peers[0].legend, &heavy, c_heavy, sizeof c_heavy) &&
              line_stroke(path, "qrita", &light, c_light, sizeof c_light),
          "%s: no line %s or qrita", path, fake_peers[0].legend);
    CHECK(heavy >= 2 * light && strcmp(c_light, "rgb(213,  94,   0)") != 0,
          "%s: the paper's kernel %.2f wide, qrita %.2f in %s: the kernel must stand out", path,
          heavy, light, c_light);
    snprintf(path, sizeof path, "%s/figs-peers-memory.svg", dir);
    CHECK(line_stroke(path, "qrita", &plain, c_plain, sizeof c_plain) &&
              strcmp(c_plain, "rgb(213,  94,   0)") == 0,
          "%s: qrita drawn in %s, want its palette colour beside no emphasis", path, c_plain);
}

/* The fake peers and a memory floor (floor.read, docs/PEERS.md "Memory floors") a hundred times
 * faster than naive_sort in each of its cells. */
static int add_peers_and_a_floor(struct tkp_results *r, const char *header, const char *line,
                                 struct tkp_error *err)
{
    int rc = add_fake_peers(r, header, line, err);
    char algo[32], status[16];
    if (rc || strcmp(get(header, line, "algo", algo, sizeof algo), "naive_sort") ||
        strcmp(get(header, line, "status", status, sizeof status), "ok"))
        return rc;
    struct tkp_cell_row row;
    peer_row(&row, header, line, "floor.read", "", "ok", 0.01, N_FAKE_PEERS);
    return tkp_results_append(r, "plain", &row, &row.median_us, 1, err);
}

/* A floor is no module's peer: the fastest peer of a cell (vs-peers) stays the fastest real one
 * (BEST_PEER) however fast the floor beside it is. */
TEST(figures_a_floor_is_never_the_best_peer)
{
    char res[512], dir[512], out[8192], path[600];
    snprintf(res, sizeof res, "%s/figs-floor.h5", scratch_dir());
    REQUIRE(tiny_results() && results_with_added_rows(tiny_results(), res, "--sweep plain",
                                                      add_peers_and_a_floor) == 0,
            "could not make the results file with a floor");
    snprintf(dir, sizeof dir, "%s/figs-floor-out", scratch_dir());
    int rc = run_cmd(out, sizeof out, "FIGURE_FORMATS=svg TOPKP=%s bash scripts/figures.sh %s %s",
                     topkp_bin(), res, dir);
    REQUIRE(rc == 0, "figures.sh failed (%d): %s", rc, out);
    snprintf(path, sizeof path, "%s/figs-floor-vs-peers.tsv", dir);
    char *tsv = slurp(path, NULL);
    CHECK(tsv && strstr(tsv, BEST_PEER) && !strstr(tsv, "floor.read"),
          "%s: the best peer should be %s, never floor.read:\n%.600s", path, BEST_PEER,
          tsv ? tsv : "(none)");
    free(tsv);
}
