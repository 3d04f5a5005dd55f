/* read_guard.h — reading a file in a child process. A corrupt file can crash or hang libhdf5
 * itself, so `export`, `info`, `compare`, --resume's check, the logits reader and `merge` (its
 * shards, read and merged in one child) read it in a child limited to TKP_READ_SECONDS of
 * wall-clock time and to CPU time in proportion to the file's size (limits_files.h): a crash or
 * a hang there is an error naming the file, never a crash of topkp (docs/RESULTS.md, "Results";
 * docs/ROBUSTNESS.md, "Readers inside the process"). */
#ifndef TKP_READ_GUARD_H
#define TKP_READ_GUARD_H

#include <stdio.h>

#include "../algos/tkp.h"

/* A reader: reads `path` (with its own argument `arg`), writes what it found to `out`;
 * TKP_OK or an error code with err set. */
typedef int (*tkp_read_fn)(const char *path, const void *arg, FILE *out, struct tkp_error *err);

/* Run fn in a child process and return its status; what it writes to `out` is there when this
 * returns (out is flushed before the child starts). A child that crashed or hung is an error
 * naming the file (*crashed = 1 for a crash, 2 for a time limit); the child's own error
 * message comes back through a pipe.
 * Without a pipe or a fork, fn runs in this process. */
int tkp_read_guarded(tkp_read_fn fn, const char *path, const void *arg, FILE *out,
                     struct tkp_error *err, int *crashed);

/* The same for a reader of several files (merge reads its shards and writes the merged file in
 * one child): fn gets paths[0]; the CPU limit counts every file's bytes, cpu_factor times (a
 * child that also writes). A crash or hang names the file the child last named through
 * tkp_read_guard_at, else paths[0]. */
struct tkp_guard {
    tkp_read_fn fn;
    const char *const *paths;
    int n;
    int cpu_factor;
};
int tkp_run_guarded(const struct tkp_guard *g, const void *arg, FILE *out,
                    struct tkp_error *err, int *crashed);
/* In a guarded child: `path` is the file now read (a no-op elsewhere); also the pause point
 * "reading:PATH" (interrupt.h), where the tests make a reader crash on one file. */
void tkp_read_guard_at(const char *path);

/* True when TKP_GUARDS_IN_PROCESS is set: readers and the config's time limit (lua_deadline.c)
 * then run in this process, unguarded. The fuzz targets set it (tests/fuzz/fuzz_file.h):
 * libFuzzer sees the coverage and the crashes of its own process only. */
int tkp_guards_in_process(void);

/* Why H5Fopen failed on `path`: missing, locked by a run (flock, results.c) or not HDF5. */
void tkp_read_open_failed(const char *path, struct tkp_error *err);

#endif
