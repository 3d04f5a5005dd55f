/* figures_util.c — what the figure tests share (figures_util.h): the tiny config run once per
 * process, its TSV read by column name, the drawn-figure checks, the fake peers beside its
 * naive_sort cells and the SVG reader that tells peer lines from module lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "figures_util.h"
#include "test.h"

/* Two sweeps: a plain one (throughput, speed-up, memory, hit rate) and an ablation. */
static const char *const tiny_config =
    "sweep \"plain\" {\n"
    "    algos = { \"naive_sort\", \"qrita\", \"rtopk\" },\n"
    "    vocab = { 1000, 2000 }, batch = { 1, 4 }, k = { 0, 20 }, p = { 0.9, 1.0 },\n"
    "    where = function(c) return c.mode ~= \"none\" end,\n"
    "    timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 },\n"
    "}\n"
    "ablation \"abl\" {\n"
    "    base = { vocab = 2000, batch = 2, k = 20, p = 0.9,\n"
    "             timing = { warmup = 0, min_reps = 1, max_reps = 2, max_seconds = 0.01 } },\n"
    "    variants = { A = \"qrita\", B = { \"qrita\", search = \"binary\" } },\n"
    "}\n";

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int has_prefix_bytes(const char *path, const char *magic, size_t n)
{
    char buf[16] = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got == n && memcmp(buf, magic, n) == 0;
}

/* Index of column `name` in a tab-separated header line, or -1. */
int column_of(const char *header, const char *name)
{
    int i = 0;
    for (const char *s = header;; i++) {
        const char *end = strpbrk(s, "\t\n");
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == strlen(name) && strncmp(s, name, len) == 0)
            return i;
        if (!end || *end == '\n')
            return -1;
        s = end + 1;
    }
}

/* Field `col` of a tab-separated line into out. */
void field(const char *line, int col, char *out, size_t n)
{
    for (int i = 0; i < col && line; i++)
        line = strchr(line, '\t') ? strchr(line, '\t') + 1 : NULL;
    size_t len = line ? strcspn(line, "\t\n") : 0;
    snprintf(out, n, "%.*s", (int)len, line ? line : "");
}

/* The figure DIR/STEM<kind> was drawn: a real PNG and a real PDF of a plausible size. */
void check_drawn(const char *dir, const char *stem, const char *kind)
{
    char png[600], pdf[600];
    snprintf(png, sizeof png, "%s/%s%s.png", dir, stem, kind);
    snprintf(pdf, sizeof pdf, "%s/%s%s.pdf", dir, stem, kind);
    CHECK(has_prefix_bytes(png, "\x89PNG\r\n\x1a\n", 8), "%s is not a PNG", png);
    CHECK(file_size(png) > 8000, "%s is %ld bytes: too small for a drawn figure", png,
          file_size(png));
    CHECK(has_prefix_bytes(pdf, "%PDF", 4), "%s is not a PDF", pdf);
    CHECK(file_size(pdf) > 4000, "%s is %ld bytes", pdf, file_size(pdf));
}

/* Does DIR/STEM-kinds.txt list `kind` as a word? */
int listed_kind(const char *dir, const char *stem, const char *kind)
{
    char path[600], kinds[512] = "";
    snprintf(path, sizeof path, "%s/%s-kinds.txt", dir, stem);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(kinds + 1, sizeof kinds - 2, f))
            kinds[1] = 0;
        fclose(f);
    }
    kinds[0] = ' ';
    kinds[strcspn(kinds, "\n")] = 0;
    strcat(kinds, " ");
    char word[64];
    snprintf(word, sizeof word, " %s ", kind);
    return strstr(kinds, word) != NULL;
}

/* Run the tiny config once per process; returns the results path or NULL. */
const char *tiny_results(void)
{
    static char path[512];
    static int state; /* 0 not run, 1 ok, 2 failed */
    if (!state) {
        char out[8192];
        const char *cfg = write_scratch("figs.lua", tiny_config);
        snprintf(path, sizeof path, "%s/figs.h5", scratch_dir());
        int rc = run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(), cfg, path);
        state = rc == 0 ? 1 : 2;
        if (rc)
            fprintf(stderr, "  topkp run failed (%d): %s\n", rc, out);
    }
    return state == 1 ? path : NULL;
}

/* Fake peers put beside every ok naive_sort cell of the tiny plain sweep, their median a factor
 * of naive_sort's: `name` as the TSVs name the line, `legend` as the key titles it
 * (plots/palette.tsv: the paper's kernel by its role), what it writes (`topkp list`:
 * outputs=set|sample) and takes in (input=probs: after a softmax outside its timed region). The
 * two flashinfer.cake cells differ only in `input`, so their legends name input and leave out
 * `order`. The fastest of any kind takes probabilities in; the fastest logits-in ones are
 * vllm.triton (a mask) and flashinfer.cake input=softmax (a sampler); sglang.via_flashinfer is
 * faster still but failed, so it is never a best peer and never drawn. */
const struct fake_peer fake_peers[N_FAKE_PEERS] = {
    { "vllm.triton", "", "ok", "vllm.triton", "Qrita (vLLM Triton, the paper's kernel)", "set",
      "logits", 0.5 },
    { "flashinfer.renorm", "input=probs", "ok", "flashinfer.renorm", "flashinfer.renorm", "set",
      "probs", 0.1 },
    { "flashinfer.cake", "input=probs,order=top_k_first", "ok", "flashinfer.cake input=probs",
      "flashinfer.cake input=probs", "sample", "probs", 0.2 },
    { "flashinfer.cake", "input=softmax,order=top_k_first", "ok", "flashinfer.cake input=softmax",
      "flashinfer.cake input=softmax", "sample", "softmax", 0.3 },
    { "sglang.via_flashinfer", "", "error", NULL, NULL, "sample", "probs", 0.01 },
};

/* Named field of a TSV line, by the header. */
const char *get(const char *header, const char *line, const char *name, char *out, size_t n)
{
    int c = column_of(header, name);
    field(line, c, out, c >= 0 ? n : 1);
    return out;
}

double get_num(const char *header, const char *line, const char *name)
{
    char v[64];
    return atof(get(header, line, name, v, sizeof v));
}

/* The row of peer `i` in the cell of the module row `line`, as the peer bridge writes it. */
/* The row of a peer `algo` (options, status) taking `factor` times the module row's time, in
 * the cell of the module row `line`; workspace: 4096 (i + 1) bytes a row. */
void peer_row(struct tkp_cell_row *row, const char *header, const char *line,
                     const char *algo, const char *options, const char *status, double factor,
                     int i)
{
    memset(row, 0, sizeof *row);
    snprintf(row->algo, sizeof row->algo, "%s", algo);
    snprintf(row->options, sizeof row->options, "%s", options);
    snprintf(row->status, sizeof row->status, "%s", status);
    get(header, line, "dataset", row->dataset, sizeof row->dataset);
    get(header, line, "mode", row->mode, sizeof row->mode);
    get(header, line, "backend", row->backend, sizeof row->backend);
    row->batch = (int64_t)get_num(header, line, "batch");
    row->vocab = (int64_t)get_num(header, line, "vocab");
    row->k = (int64_t)get_num(header, line, "k");
    row->p = get_num(header, line, "p");
    row->draws = (int64_t)get_num(header, line, "draws");
    row->seed = (int64_t)get_num(header, line, "seed");
    double t = factor * get_num(header, line, "median_us");
    row->median_us = row->q1_us = row->q3_us = row->min_us = row->max_us = row->mean_us = t;
    row->workspace_bytes = 4096 * (i + 1) * row->batch;
    row->rows_checked = row->rows_exact = (int64_t)get_num(header, line, "rows_checked");
    snprintf(row->key, sizeof row->key, "%s||%s|%s|%lld|%lld|%lld|%.9g|%lld|%lld|%s", row->algo,
             row->options, row->dataset, (long long)row->vocab, (long long)row->batch,
             (long long)row->k, row->p, (long long)row->draws, (long long)row->seed,
             row->backend);
}

void fake_peer_row(struct tkp_cell_row *row, const char *header, const char *line, int i)
{
    peer_row(row, header, line, fake_peers[i].algo, fake_peers[i].options, fake_peers[i].status,
             fake_peers[i].factor, i);
}

/* The fake peers beside an ok naive_sort row (results_with_added_rows). */
int add_fake_peers(struct tkp_results *r, const char *header, const char *line,
                          struct tkp_error *err)
{
    char algo[32], status[16];
    if (strcmp(get(header, line, "algo", algo, sizeof algo), "naive_sort") ||
        strcmp(get(header, line, "status", status, sizeof status), "ok"))
        return 0;
    int rc = 0;
    for (int i = 0; i < N_FAKE_PEERS && !rc; i++) {
        struct tkp_cell_row row;
        fake_peer_row(&row, header, line, i);
        rc = tkp_results_append(r, "plain", &row, &row.median_us, 1, err);
    }
    return rc;
}

/* A copy of the tiny results with the fake peers beside every ok naive_sort cell of the plain
 * sweep, appended through the results writer; once per process. Returns its path or NULL. */
const char *peer_results(void)
{
    static char path[512];
    static int state; /* 0 not made, 1 ok, 2 failed */
    const char *res = tiny_results();
    if (state || !res)
        return state == 1 ? path : NULL;
    snprintf(path, sizeof path, "%s/figs-peers.h5", scratch_dir());
    state = results_with_added_rows(res, path, "--sweep plain", add_fake_peers) ? 2 : 1;
    return state == 1 ? path : NULL;
}

/* A peer's name starts with its algo, which has a '.'; then come options (" ") or, in the
 * time figure's series, "/mode/panel". */
int is_peer_name(const char *name)
{
    size_t algo = strcspn(name, " /");
    const char *dot = strchr(name, '.');
    return dot && (size_t)(dot - name) < algo;
}

/* How many of the figure's plots titled `name` stroke a line (in a panel grid: the key strip's
 * sample, then each panel where the line has points). */
int strokes(const struct drawn *d, const char *name)
{
    char want[256];
    int n = 0;
    snprintf(want, sizeof want, "|%s|", name);
    for (const char *t = strstr(d->titles, want); t; t = strstr(t + 1, want))
        n++;
    return n;
}

/* Read the figure at `path` into d, checking on the way that every peer line is dashed and every
 * module line solid, and that no peer is drawn in a module's colour. */
void read_svg(const char *path, struct drawn *d)
{
    memset(d, 0, sizeof *d);
    char *text = slurp(path, NULL);
    CHECK(text, "no %s", path);
    static const char group[] = "<g id=\"gnuplot_plot_";
    for (char *g = text ? strstr(text, group) : NULL; g;) {
        char *next = strstr(g + 1, group), title[256] = "", colour[64];
        char *t = strstr(g, "<title>"), *path_at = strstr(g, "<path stroke='");
        if (t && (!next || t < next))
            snprintf(title, sizeof title, "%.*s", (int)strcspn(t + 7, "<"), t + 7);
        if (title[0] && strncmp(title, "gnuplot_plot_", 13) != 0 && path_at &&
            (!next || path_at < next)) {
            snprintf(colour, sizeof colour, "%.*s|", (int)strcspn(path_at + 14, "'"),
                     path_at + 14);
            char *end = strstr(path_at, "/>");
            char *dash = strstr(path_at, "stroke-dasharray");
            int dashed = dash && (!end || dash < end);
            int peer = is_peer_name(title);
            CHECK(dashed == peer, "%s: %s is drawn %s", path, title,
                  peer ? "solid, as the modules are" : "dashed, as the peers are");
            char *set = peer ? d->peer_colours : d->module_colours;
            if (!strstr(set, colour) && strlen(set) + strlen(colour) < sizeof d->peer_colours)
                strcat(set, colour);
            if (peer)
                d->peers++;
            else
                d->modules++;
            if (strlen(d->titles) + strlen(title) + 3 < sizeof d->titles)
                strcat(strcat(strcat(d->titles, "|"), title), "|");
        }
        g = next;
    }
    free(text);
    /* no peer in a module's colour */
    for (char *c = d->peer_colours, *e; *c; c = e + 1) {
        e = strchr(c, '|');
        char one[64];
        snprintf(one, sizeof one, "%.*s|", (int)(e - c), c);
        CHECK(!strstr(d->module_colours, one), "%s: a peer is drawn in module colour %s", path,
              one);
    }
}
