/* limits_files.h — named limits of the file readers and writers (logits files, results
 * files, `apply` and `gen`): every size read from a file or the command line is checked
 * against one of these before it sizes an allocation (docs/USAGE.md, "A five-minute tour" and
 * "Results"). */
#ifndef TKP_LIMITS_FILES_H
#define TKP_LIMITS_FILES_H

/* Most float elements (rows x vocab) a logits file or `gen` may hold: 2^34 (64 GiB of float). */
#define TKP_MAX_LOGITS_ELEMS (1LL << 34)
/* Most rows a logits file may declare (the k and p vectors are one entry a row). */
#define TKP_MAX_LOGITS_ROWS (1LL << 24)
/* Most columns (vocabulary) a logits file may declare. */
#define TKP_MAX_LOGITS_VOCAB (1LL << 31)
/* Bytes of the results key column (struct tkp_cell_row.key): longer identities keep a prefix
 * and a 64-bit FNV-1a hash of the whole identity (results_row.h). */
#define TKP_RESULT_KEY_BYTES 400
/* Hex digits of the hash that ends a long key, after a '#'. */
#define TKP_RESULT_KEY_HASH_HEX 16
/* Largest existing results file that fails to open and is taken for a partial create (a run
 * killed before its first flush leaves 96 bytes) rather than a corrupt results file. */
#define TKP_PARTIAL_CREATE_BYTES 4096
/* Seconds a signalled process waits for its children (workers, guarded readers) to end after
 * SIGTERM before it kills them (interrupt.c): their locks go with them either way. */
#define TKP_CHILD_GRACE_SECONDS 5
/* Bytes reserved past a results file's end for HDF5's metadata of one append (results.c). */
#define TKP_RESULTS_METADATA_ROOM (64 * 1024)
/* How many bytes a stored byte of a results table may stand for when read: zlib's deflate
 * ceiling (1032:1) with room to spare. A table that declares more rows than its storage can
 * hold this way is corrupt, and is refused before its rows size an allocation (h5util.c). */
#define TKP_H5_INFLATE_RATIO 1100
/* Bytes a table of a results file may declare beyond that, whatever its storage (HDF5 reads
 * chunks it never wrote as fill values, so a tiny table may have no storage at all). */
#define TKP_H5_UNSTORED_BYTES (64 * 1024)
/* Most bytes an attribute of a results file may hold when it is copied (merge). */
#define TKP_H5_MAX_ATTR_BYTES (1 << 20)
/* Seconds a reader in a child process (read_guard.h: export, info, compare, --resume's check,
 * logits files, merge) may read a file before it is taken for corrupt. */
#define TKP_READ_SECONDS 600
/* CPU seconds such a reader may spend (read_guard.c): this many, plus one for every
 * TKP_READ_CPU_BYTES_PER_S bytes of the file (a results file of 3 MiB: 13 s). A results
 * file's tables are deflated, ~15x for the cells (docs/DESIGN.md, "The results file"), and
 * export reads ~27 MB of rows a CPU second (Figure 2's 2640 cells, 4.1 MB of rows: 0.15 s on
 * this project's 2-core CPU): a MiB of file is at most ~0.6 s of reading. */
#define TKP_READ_CPU_SECONDS 10
#define TKP_READ_CPU_BYTES_PER_S (1LL * 1024 * 1024)

#endif
