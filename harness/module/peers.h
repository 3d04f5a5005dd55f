/* peers.h — a peer library as the harness holds it: the module table that `topkp list`,
 * config checks and the planner read (ops, outputs, options), embedded first in a struct with
 * what only a peer has, as FFmpeg's FFCodec holds an AVCodec (docs/PEERS.md). A module never
 * sees this struct; the peers' code is Python (peers/catalog.py), called through the worker of
 * peer_worker.c, but for a native peer's, compiled in (peers/cub/). */
#ifndef TKP_PEERS_H
#define TKP_PEERS_H

#include "../algos/tkp.h"

struct tkp_peer {
    struct tkp_algo algo; /* first: a peer's struct tkp_algo is its struct tkp_peer */
    const char *package;  /* the Python package the peer calls (a native peer: its headers) */
    unsigned backends;    /* TKP_CPU | TKP_GPU: where the peer runs (a module has impls) */
    /* A native peer (C/CUDA in this binary, no Python; docs/PEERS.md, "cub.topk"): non-NULL,
     * why a build may lack its code and how to build it. Its code is algo.gpu, run in-process
     * as a module's is (NULL in such a build: its cells are `unsupported` with this text). */
    const char *native;
};

extern const struct tkp_peer *const tkp_peers[]; /* NULL-terminated (peers.c) */

/* The peer whose table `a` is (a->flags has TKP_PEER); NULL for a module. */
const struct tkp_peer *tkp_peer_of(const struct tkp_algo *a);
/* 1 for a peer whose cells go to the Python worker (peer_worker.c); 0 for a module and for a
 * native peer, whose cells run in-process. */
int tkp_peer_bridged(const struct tkp_algo *a);

#endif
