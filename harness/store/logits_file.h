/* logits_file.h — the HDF5 files of `topkp gen` and `topkp apply` (layouts in docs/DESIGN.md):
 *   input:  /logits [B, V] float32, bf16 or fp16 (read as stored); optional /k int32 [B],
 *           /p float32 [B], /seed and /offset uint64 [B] (per-row keying) and /min_p float32 [B]
 *   output: /kept uint8 [B, V]; /samples int64 [B, N]; root attributes algo, backend, options */
#ifndef TKP_LOGITS_FILE_H
#define TKP_LOGITS_FILE_H

#include "apply.h"

/* Read a logits file. Rows the file's /k (/p) leaves out, or all rows when it has none, take
 * k_default (p_default); a /k (/p) longer than /logits is an error. (`topkp apply` then lets a
 * --k or --p given on its command line override every row: its --help.) The shape is checked
 * against limits_files.h before it sizes a buffer. Errors name the file, the dataset and its
 * shape. */
int tkp_logits_read(const char *path, int32_t k_default, float p_default, struct tkp_batch *b,
                    struct tkp_error *err);
void tkp_batch_free(struct tkp_batch *b);

/* enc[i] := x[i] rounded to nearest even in the 16-bit type t, and up[i] := the exact float32
 * value of enc[i] (up may be x itself), for i < n. No threads of its own: a caller may run it
 * on chunks in parallel (never inside read_guard's child: harness/common/read_guard.h). */
void tkp_encode_16bit(const float *x, size_t n, enum tkp_dtype t, uint16_t *enc, float *up);
/* b->logits := the exact upcast of b->logits16 (of b->dtype, 16-bit). */
void tkp_batch_upcast(struct tkp_batch *b);
/* Make b a batch of type t: its values (b->logits) rounded to nearest even into new 16-bit
 * encodings and upcast again, or for TKP_F32 the upcast kept and the encodings dropped.
 * TKP_ENOMEM when out of memory (b unchanged). */
int tkp_batch_to_dtype(struct tkp_batch *b, enum tkp_dtype t, struct tkp_error *err);

/* Write /logits in b's type (bf16 and fp16 as HDF5 floats of their fields, with an attribute
 * dtype naming it), and /k, /p, /seed, /offset and /min_p unless b's array is NULL, plus string attributes given as
 * NULL-terminated name/value pairs (may be NULL). */
int tkp_logits_write(const char *path, const struct tkp_batch *b, const char *const *attrs,
                     struct tkp_error *err);

/* Write the output of apply: kept [B, V] and samples [B, draws] may be NULL. */
int tkp_apply_write(const char *path, int64_t batch, int64_t vocab, const uint8_t *kept,
                    const int64_t *samples, int32_t draws, const char *algo, const char *backend,
                    const char *options, struct tkp_error *err);

#endif
