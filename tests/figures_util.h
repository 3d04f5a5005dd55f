/* figures_util.h — what the figure tests share (test_figures.c, test_figures_peers.c,
 * test_figures_layout.c): see figures_util.c. */
#ifndef TKP_FIGURES_UTIL_H
#define TKP_FIGURES_UTIL_H

#include <stddef.h>

#include "results.h"

/* The tiny config's cells: 2 algos x 2 vocab x 2 batch x 3 modes + rtopk (2 x 2 x 3, top-k
 * only ok) + 2 variants. */
enum { PLAIN_CELLS = 3 * 2 * 2 * 3, ABLATION_CELLS = 2 };

/* Index of column `name` in a tab-separated header line, or -1. */
int column_of(const char *header, const char *name);
/* Field `col` of a tab-separated line into out. */
void field(const char *line, int col, char *out, size_t n);
/* Named field of a TSV line, by the header; as a number. */
const char *get(const char *header, const char *line, const char *name, char *out, size_t n);
double get_num(const char *header, const char *line, const char *name);
/* The figure DIR/STEM<kind> was drawn: a real PNG and a real PDF of a plausible size. */
void check_drawn(const char *dir, const char *stem, const char *kind);
/* Does DIR/STEM-kinds.txt list `kind` as a word? */
int listed_kind(const char *dir, const char *stem, const char *kind);
/* The tiny config run once per process: the results path, or NULL. */
const char *tiny_results(void);

/* The fake peers (figures_util.c says who they are and why). */
struct fake_peer {
    const char *algo, *options, *status, *name, *legend, *output, *input;
    double factor;
};
#define N_FAKE_PEERS 5
#define BEST_PEER "flashinfer.renorm"
extern const struct fake_peer fake_peers[N_FAKE_PEERS];
/* A peer's row in the cell of the module row `line` (factor times its time), or fake peer i's. */
void peer_row(struct tkp_cell_row *row, const char *header, const char *line, const char *algo,
              const char *options, const char *status, double factor, int i);
void fake_peer_row(struct tkp_cell_row *row, const char *header, const char *line, int i);
/* The fake peers beside an ok naive_sort row (results_with_added_rows). */
int add_fake_peers(struct tkp_results *r, const char *header, const char *line,
                   struct tkp_error *err);
/* The tiny results with the fake peers added, once per process: its path or NULL. */
const char *peer_results(void);
/* Is `name` a peer's (its algo has a '.')? */
int is_peer_name(const char *name);

/* What a figure draws, from gnuplot's SVG: each plot is a group <g id="gnuplot_plot_..."> with
 * its key title, then (when it has points in that panel) a path stroked in its colour, with a
 * stroke-dasharray when dashed. */
struct drawn {
    int peers, modules;       /* plots with a stroked line */
    char peer_colours[2048], module_colours[2048];
    char titles[16384];       /* the title of each such plot, each between '|' */
};
/* How many of the figure's plots titled `name` stroke a line. */
int strokes(const struct drawn *d, const char *name);
/* Read the SVG figure at `path` into d, checking peer lines dashed and module lines solid. */
void read_svg(const char *path, struct drawn *d);

#endif
