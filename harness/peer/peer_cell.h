/* peer_cell.h — one cell of a peer library (docs/PEERS.md): the very logits the modules read
 * go to the worker as a raw file (its CRC-32 is checked on the other side), the harness's own
 * stopping rule drives the repetitions (each one timed by the worker between CUDA events,
 * L2 flushed first, the SM clock read here), and the kept mask or the draws come back to be
 * judged by the same oracle as a module's. Every failure is the cell's status. */
#ifndef TKP_PEER_CELL_H
#define TKP_PEER_CELL_H

#include <stdint.h>

#include "apply.h"
#include "judge_memo.h"
#include "peer_worker.h"
#include "plan.h"
#include "results.h"

struct tkp_peer_session {
    struct tkp_peer_worker worker;
    char scratch[512];  /* a private folder for logits and outputs ("" until first used) */
    enum tkp_backend backend;
    long long flush_bytes;  /* what the worker writes to flush L2 (2 x L2; 0 on the CPU) */
    double max_clock_mhz;   /* samples below 90% of it are throttled (0: unknown) */
    int files;              /* logits files written, for unique names */
    char packages[2048];    /* "peer: package version; ..." of every peer that opened */
    struct tkp_results *res; /* where packages goes, as root attribute peer_packages */
};

/* One file of the rows a peer reads: raw little-endian values of one element type
 * (logits-<n>.f32: float32; logits-<n>.bf16 / .f16: the 16-bit encodings, uint16 each), and
 * its CRC-32. */
struct tkp_peer_file {
    char path[600]; /* "" until written */
    uint32_t crc;
};

/* The rows a peer reads, one file per element type a cell of them asks for: the rows of a
 * runner's cache entry serve its f32, bf16 and f16 cells alike (docs/PEERS.md, "16-bit
 * logits"). */
struct tkp_peer_input {
    char path[600]; /* the first file written: "" until one is (what the runner tests) */
    int64_t rows;   /* rows of every file */
    struct tkp_peer_file typed[TKP_DTYPE_COUNT];
};

/* A session writing peer_packages into `res` (may be NULL), continuing what `res` holds. On
 * SIGTERM, SIGINT or SIGHUP the worker is killed and the scratch folder removed; a folder that
 * a killed run left behind is removed when the next session makes its own. */
void tkp_peer_session_init(struct tkp_peer_session *s, enum tkp_backend backend,
                           long long l2_bytes, double max_clock_mhz, struct tkp_results *res);
/* Stop the worker and remove the scratch folder (packages stays readable). */
void tkp_peer_session_close(struct tkp_peer_session *s);
/* Write the first `rows` rows of what a module reads from `b` (tkp_batch_input: a 16-bit
 * batch's encodings, else its float32 logits) to a new file of the scratch folder, the file of
 * b's element type in `in`. The buffers of `b` must hold `rows` rows, which may be more than
 * b->batch: the runner writes its cache entry once for every cell of the same data. */
int tkp_peer_input_write(struct tkp_peer_session *s, const struct tkp_batch *b, int64_t rows,
                         struct tkp_peer_input *in, struct tkp_error *err);
/* Remove every file of `in`. */
void tkp_peer_input_remove(struct tkp_peer_input *in);

/* Run `cell` (its batch b, whose logits are the first rows of `in`) through its peer: fills
 * the row's counters and memory, the samples (malloc'd), kept/drawn judged by the oracle
 * (through `memo`, which may be NULL: tkp_row_judge). The file
 * of b's element type is written first when `in` has none yet (b's buffers then hold in->rows
 * rows, as for tkp_peer_input_write); an `in` of fewer rows than b is an error. Returns the
 * status code; the caller records it. */
int tkp_peer_cell(struct tkp_peer_session *s, const struct tkp_cell *cell,
                  const struct tkp_batch *b, struct tkp_peer_input *in, uint8_t *kept,
                  int64_t *drawn, int32_t draws, struct tkp_cell_row *row, double **samples,
                  int64_t *n_samples, struct tkp_judge_memo *memo, struct tkp_error *err);

/* The `open` request of `cell` (docs/PEERS.md) into line (n bytes): its peer, the logits file
 * of `rows` rows, the device of `backend`, the L2 flush bytes, then every TKP_AXIS_PEER axis
 * as name=value (axes.h, TKP_AXES_PEER) and the options. Returns the length it needed (as
 * snprintf: n or more when cut). */
int tkp_peer_open_line(const struct tkp_cell *cell, const char *logits, int64_t rows,
                       enum tkp_backend backend, long long flush_bytes, char *line, size_t n);
/* Ask the worker which peers import here: calls fn(name, available, info, cast) for each, cast
 * saying what the peer does with 16-bit logits (docs/PEERS.md, "16-bit logits"). */
int tkp_peer_probe(struct tkp_peer_session *s,
                   void (*fn)(const char *name, int available, const char *info,
                              const char *cast, void *ctx),
                   void *ctx, struct tkp_error *err);

#endif
