/* interrupt.h — what SIGINT, SIGTERM and SIGHUP leave behind (docs/ROBUSTNESS.md, "Signals"):
 * the first one removes the temporary output this process created and has not finished, ends
 * the child processes it started (a --workers shard, a guarded reader: read_guard.h) and waits
 * for them (a few seconds, then SIGKILL), so that their locks are released, then ends this
 * process by the same signal; a repeat while that runs is ignored. Nothing else is written on
 * the way out: what is complete stays (a results file's flushed cells, a renamed output). Also
 * the pause points the tests use to signal a process at a named place, not after a sleep. */
#ifndef TKP_INTERRUPT_H
#define TKP_INTERRUPT_H

#include <sys/types.h>

/* The temporary output to remove on a signal (NULL: none). One at a time per process. */
void tkp_interrupt_remove(const char *path);
/* Child processes to end (SIGTERM, then wait) on a signal; forget one once it is reaped. */
void tkp_interrupt_child(pid_t pid);
void tkp_interrupt_forget(pid_t pid);
/* A cleanup of its own to run first on a signal (async-signal-safe; a peer session's worker
 * and scratch folder, peer_cell.c); at most 4, each registered once; NULL-safe. */
void tkp_interrupt_call(void (*fn)(void));
/* Hold the signals' action while a file this process keeps is being written (a results file's
 * row, its run record, its closing: a signal in the middle of HDF5's flush or close leaves a
 * file that no longer opens); a signal that comes meanwhile acts at the matching release, once
 * the file is whole again. Nests; the main thread's calls only. The results store's write
 * functions hold by themselves (harness/store); a caller holds around several that belong
 * together. */
void tkp_interrupt_hold(void);
void tkp_interrupt_release(void);
/* Record this process as the one a pause point signals (main() calls it first thing). */
void tkp_interrupt_main(void);
/* A pause point: when TKP_PAUSE_AT names `point`, send TKP_PAUSE_SIGNAL (a number; default
 * SIGTERM) to the main process, as a user's `kill` would, the first time the process reaches
 * it (a process stopped there by SIGSTOP and continued does not stop again at the next cell,
 * where a SIGTERM sent to end it would wait on the stopped process). In a forked child (a
 * guarded reader or writer) the child then waits to be ended by its parent. With
 * TKP_PAUSE_SELF set the signal goes to the calling process instead (SIGSEGV there: a crash
 * inside libhdf5 at that place). Otherwise a no-op. */
void tkp_pause_point(const char *point);

#endif
