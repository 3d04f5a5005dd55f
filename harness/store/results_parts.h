/* results_parts.h — what the two files of the results writer share, private to them:
 * results.c (the cells table's layout, appends, attributes, closing) and results_open.c
 * (create, or reopen for --resume, under a lock). */
#ifndef TKP_RESULTS_PARTS_H
#define TKP_RESULTS_PARTS_H

#include <hdf5.h>

#include "results.h"

struct done_key {
    char sweep[64], key[400];
};

struct tkp_results {
    hid_t file;
    int lock_fd;  /* flock(LOCK_EX) on the file for the whole run (docs/RESULTS.md, "Results") */
    int fresh;    /* created (or a partial create replaced) by this open */
    int failed;   /* a write failed or had no room: nothing more is written */
    int broken;   /* likewise: the file is left unclosed, as last flushed (tkp_results_close) */
    int removable; /* fresh, no row flushed yet: a signal removes the file (interrupt.h) */
    char path[1024];
    struct done_key *done; /* cells already ok in the file (for --resume) */
    size_t n_done, cap_done;
};

/* Does the compound type `ft` of an existing cells table have exactly this binary's columns,
 * each of the same class (and, for strings, the same size)? Names the first difference. */
int results_layout_matches(hid_t ft, char *why, size_t n);
/* Statuses a rerun would only repeat: --resume skips these cells (error and oom run again). */
int results_is_final(const char *status);
/* Note a done cell (for tkp_results_done); non-zero when out of memory. */
int results_remember(struct tkp_results *r, const char *sweep, const char *key);
/* Close the lock and free r (its HDF5 file is closed already). */
void results_free(struct tkp_results *r);

#endif
