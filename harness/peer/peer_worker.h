/* peer_worker.h — the Python side of the peer bridge as seen from C (docs/PEERS.md): one
 * worker process (peers/worker.py) started on demand, spoken to one request line and one
 * reply line at a time over pipes, with a deadline on every reply. A worker that misses its
 * deadline, crashes or reports a broken device is killed; the next request starts a new one. */
#ifndef TKP_PEER_WORKER_H
#define TKP_PEER_WORKER_H

#include <sys/types.h>

#include "../algos/tkp.h"

struct tkp_peer_worker {
    pid_t pid;             /* 0: not running; also its process group */
    int reaped, status;    /* it has exited and was waited for; its wait status */
    int to, from;          /* its stdin, its protocol output */
    char buf[8192];        /* bytes read but not yet returned as a line */
    size_t used;
};

/* One reply: its first word (ok, unsupported, error, peer) and its key=value fields. */
struct tkp_peer_reply {
    char line[4096];
    char *status;
    char *keys[32], *values[32];
    int n;
};

/* The interpreter ($TOPKP_PYTHON, words split at spaces, e.g. "python3 -X dev"; else the
 * .venv-peers/ of scripts/install-peers.sh beside the peers/ folder when it exists; else
 * python3) and the worker script ($TOPKP_PEERS_DIR, else
 * the peers/ folder found from the executable's place: beside it or one or two levels up). */
const char *tkp_peer_python(void);
int tkp_peer_script(char *path, size_t n, struct tkp_error *err);

/* Send `request` (one line, no newline) and wait for the reply until `deadline_us` on
 * tkp_now_us()'s clock. Lines starting with "peer" go to on_peer (may be NULL) before the
 * final reply. Starts the worker when it is not running. TKP_OK when a reply came (whatever
 * its status); TKP_EDEVICE with a message when the worker could not start, died or timed out
 * (it is then stopped). */
int tkp_peer_request(struct tkp_peer_worker *w, const char *request, double deadline_us,
                     void (*on_peer)(const struct tkp_peer_reply *, void *), void *ctx,
                     struct tkp_peer_reply *reply, struct tkp_error *err);
/* A field of a reply, or NULL. */
const char *tkp_peer_field(const struct tkp_peer_reply *r, const char *key);
/* Stop the worker (politely, then SIGKILL). Safe to call when it is not running. */
void tkp_peer_worker_stop(struct tkp_peer_worker *w);

#endif
