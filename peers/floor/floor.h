/* floor.h — the memory floors as native peers (docs/PEERS.md, "Memory floors"): `floor.read`
 * reads every byte of the batch's logits once, `floor.copy` reads them and writes them into its
 * workspace. Neither selects nor samples (no outputs, never judged): their times are the floors
 * a module's time is held to, measured in the same run, on the same logits, by the same timer.
 *
 * Each also leaves a checksum that the tests compare with the host's: the XOR of the logits'
 * bytes taken as 32-bit little-endian words, the last one padded with zeros (floor_checksum).
 * floor.read leaves it as words in its workspace (their XOR is the checksum); floor.copy leaves
 * the copy itself. */
#ifndef TKP_FLOOR_H
#define TKP_FLOOR_H

#include <stddef.h>
#include <stdint.h>

#include "../../algos/tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes are bytes: every element type is read (tkp_impl.dtypes). */
#define FLOOR_DTYPES (TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16))

/* The checksum of n bytes (the definition above). */
uint32_t floor_checksum(const void *bytes, size_t n);
/* Both floors take a contiguous batch only (stride == vocab): 1, or 0 with *why. */
int floor_supports(const struct tkp_problem *pb, const void *opts, const char **why);
/* The bytes of the batch's logits. */
size_t floor_batch_bytes(const struct tkp_problem *pb);

extern const struct tkp_impl tkp_floor_read_cpu, tkp_floor_copy_cpu;
#ifdef TKP_HAVE_CUDA
extern const struct tkp_impl tkp_floor_read_gpu, tkp_floor_copy_gpu;
#endif

#ifdef __cplusplus
}
#endif

#endif
