/* peers_util.h — what the peer tests share (test_peers.c, test_peers_16bit.c): the Python with
 * torch, a Lua config run through `topkp run` with its cells exported, and a cell's fields. */
#ifndef TKP_TESTS_PEERS_UTIL_H
#define TKP_TESTS_PEERS_UTIL_H

#include <stddef.h>
#include <string.h>

#define PYTHON "/usr/bin/python3"

/* 1 when PYTHON imports torch and numpy; else the test is skipped and 0. */
int torch_ready(void);
/* Cells of the last exported run, one TSV line each after the header. */
extern char tsv[1 << 20];
/* Run `config` (Lua text) with `env` before the command; export into tsv. */
int run_peers(const char *name, const char *env, const char *config, char *log, size_t n);
/* Column `col` of the first exported cell whose algo, dataset and mode match (NULL: any). */
int cell_field(const char *algo, const char *dataset, const char *mode, const char *col,
               char *out, size_t n);
long long cell_int(const char *algo, const char *dataset, const char *mode, const char *col);

/* Check the status of algo's first cell, and that its message holds `part` (NULL: anything;
 * "": the message is empty). */
#define EXPECT_CELL(what, algo, want, part)                                                      \
    do {                                                                                         \
        char status_[32], message_[300];                                                         \
        cell_field(algo, NULL, NULL, "status", status_, sizeof status_);                          \
        cell_field(algo, NULL, NULL, "message", message_, sizeof message_);                       \
        const char *part_ = (part);                                                              \
        CHECK(strcmp(status_, want) == 0 &&                                                      \
                  (!part_ || (part_[0] ? strstr(message_, part_) != NULL : !message_[0])),       \
              "%s: %s is %s (%s), expected %s with \"%s\"", what, algo, status_, message_, want,   \
              part_ ? part_ : "");                                                               \
    } while (0)

#endif
