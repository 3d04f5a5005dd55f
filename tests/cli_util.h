/* cli_util.h — helpers for tests that drive the topkp binary ($TOPKP, default build/topkp):
 * run a shell command capturing its output and exit status, write small files in a scratch
 * folder, read a whole file, run a config into one, export without the timing columns, kill a
 * run with -9 part way, copy a results file with rows added, corrupt a copy of a file. */
#ifndef TKP_CLI_UTIL_H
#define TKP_CLI_UTIL_H

#include <stddef.h>

const char *topkp_bin(void);
/* A fresh scratch folder for this process (created once, removed at exit unless
 * TOPKP_KEEP_SCRATCH is set). */
const char *scratch_dir(void);
/* Run `cmd` through sh with stderr merged into stdout; returns the exit status. */
int run_cmd(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Run argv (argv[0] a path, NULL-terminated) without a shell, so that any byte reaches the
 * program as it is, in scratch_dir() (relative paths and default outputs land there); stdout
 * and stderr into out (NUL-terminated; out[..used] may hold NULs).
 * Returns the exit status, -1 when it did not exit. */
int run_argv(char *out, size_t n, const char *const argv[]);
/* topkp run cfg -o scratch_dir()/<name>.h5 --backend cpu `args`, over no earlier file (its
 * path into path); returns the exit status, printing the output when it fails. */
int run_into(const char *cfg, const char *name, const char *args, char *path, size_t len);
/* Write `text` to scratch_dir()/name; returns the full path (static buffer per call slot). */
const char *write_scratch(const char *name, const char *text);
/* The whole file at `path`, NUL-terminated and malloc'd (its length into *n unless n is NULL),
 * or NULL when it cannot be read. */
char *slurp(const char *path, size_t *n);
/* Index of column `name` in a TSV header line (the first line of `header`), or -1. */
int tsv_column(const char *header, const char *name);
/* Field `col` of a TSV line into out (up to the tab or the end of the line). */
void tsv_field(const char *line, int col, char *out, size_t n);
/* `topkp export h5` (TSV, header included) into out without the columns named in `drop`
 * (NULL-terminated), each line's fields tab-terminated; returns the data rows, or -1 when
 * export fails (its output is then in out). */
int export_without(const char *h5, const char *const *drop, char *out, size_t n);
/* export's columns whose values depend on the clock or on which run wrote a row, not on the
 * cell (NULL-terminated, for export_without): what may differ between a merged file and the
 * unsplit run (docs/CLUSTERS.md, "Sweeps across GPUs and hosts"). */
extern const char *const timing_columns[];
/* Start the shell command in the background, its stderr into `log` and its stdout discarded;
 * once `log` holds `lines` progress lines (lines starting with '['), or after 12 s, kill it
 * with SIGKILL and reap it. Returns the progress lines `log` held when it was killed, or -1
 * when it could not start or ended before it was killed (then it says so on stderr). */
int kill_after_progress(const char *log, int lines, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* dst := a copy of the results file src with, appended through the results writer, the rows
 * add() makes from each row of `topkp export src export_args` (header: the export's first
 * line). 0, or -1 having printed why. */
struct tkp_results;
struct tkp_error;
typedef int (*row_adder)(struct tkp_results *r, const char *header, const char *line,
                         struct tkp_error *err);
int results_with_added_rows(const char *src, const char *dst, const char *export_args,
                            row_adder add);

/* Write n bytes to path (0, or -1). */
int write_file(const char *path, const void *data, size_t n);
/* Does `path` hold exactly `want` (n bytes)? */
int same_bytes(const char *path, const char *want, size_t n);
/* Is `out` a sanitizer's report whose first frame outside the sanitizer is in libhdf5 (the
 * library's own fault on a corrupt file, under SAN=1)? */
int libhdf5_sanitizer_report(const char *out);
/* Trial `trial` of a corruption loop: a copy of good[0..n) written to `path`, truncated at a
 * random byte *at (every third trial) or with 1-16 random bits flipped (rand(), seeded by the
 * caller). 0, or -1 when the file cannot be written. */
int write_corrupt_copy(const char *path, const char *good, char *copy, size_t n, int trial,
                       size_t *at);

#endif
