/* peers.h — a peer library as the harness holds it: the module table that `topkp list`,
 * config checks and the planner read (ops, outputs, options), embedded first in a struct with
 * what only a peer has, as FFmpeg's FFCodec holds an AVCodec (docs/PEERS.md). A module never
 * sees this struct; the peers' code is Python (peers/catalog.py), called through the worker of
 * peer_worker.c. */
#ifndef TKP_PEERS_H
#define TKP_PEERS_H

#include "../algos/tkp.h"

struct tkp_peer {
    struct tkp_algo algo; /* first: a peer's struct tkp_algo is its struct tkp_peer */
    const char *package;  /* the Python package the peer calls */
    unsigned backends;    /* TKP_CPU | TKP_GPU: where the peer runs (a module has impls) */
};

extern const struct tkp_peer *const tkp_peers[]; /* NULL-terminated (peers.c) */

/* The peer whose table `a` is (a->flags has TKP_PEER); NULL for a module. */
const struct tkp_peer *tkp_peer_of(const struct tkp_algo *a);

#endif
