/* h5util.h — small HDF5 helpers used by the file readers and writers: scalar UTF-8 string
 * attributes and datasets, and silencing HDF5's own error stack (we report our own errors,
 * naming the file and the dataset). */
#ifndef TKP_H5UTIL_H
#define TKP_H5UTIL_H

#include <hdf5.h>

void h5_quiet(void);
int h5_set_attr_str(hid_t obj, const char *name, const char *value);
int h5_set_attr_f64(hid_t obj, const char *name, double value);
int h5_set_attr_i64(hid_t obj, const char *name, long long value);
/* Read a string attribute (fixed or variable length) into buf; 0 on success. */
int h5_get_attr_str(hid_t obj, const char *name, char *buf, size_t n);
int h5_write_text(hid_t loc, const char *name, const char *text);
/* Read a scalar string dataset written by h5_write_text; a malloc'd copy, NULL when absent. */
char *h5_read_text(hid_t loc, const char *name);
/* The kinds of a compound member the results tables hold, and a new memory type for one
 * (a fixed-size string of `size` bytes for H5_KIND_STR); the caller closes it. */
enum h5_kind { H5_KIND_STR, H5_KIND_I64, H5_KIND_F64 };
hid_t h5_member_type(enum h5_kind kind, size_t size);
/* The creation property list of a chunked dataset of `rank` dimensions (chunk sizes in `chunk`),
 * deflated at `level` (1 fastest ... 9 smallest) when this HDF5 has the filter: the one way
 * the results tables, a shard's plan and `gen`'s logits are written (docs/DESIGN.md, "The results
 * file"). Any HDF5 reader inflates it on its own. -1 on failure; the caller closes it. */
hid_t h5_deflated_dcpl(int rank, const hsize_t *chunk, int level);
/* Its levels: the tables (results cells and samples, a shard's plan) are small and repetitive,
 * so the smaller files win (`h5repack -f GZIP=6` of a committed Figure 2 file: 4.25 MB to
 * 0.29 MB); logits files are large and noisy, so the faster write wins. */
enum { H5_DEFLATE_TABLE = 6, H5_DEFLATE_LOGITS = 1 };
/* Does the link `path` exist (every intermediate group too)? */
int h5_exists(hid_t file, const char *path);

/* The element count of 1-D dataset d, whose elements are read as `elem_size` bytes each; -1
 * when its dataspace cannot be read, it is not 1-D, or it declares more bytes than its stored
 * bytes can inflate to (a corrupt dimension: limits_files.h, TKP_H5_INFLATE_RATIO). Call it
 * before a dataset's length sizes an allocation. */
hssize_t h5_rows_checked(hid_t d, size_t elem_size);
/* The bytes dataset d stores in its file: HDF5's count, never more than the file's size (a
 * corrupt layout may claim more). */
double h5_stored_bytes(hid_t d);
/* Can d's stored bytes hold `declared_bytes` once inflated (the same rule as h5_rows_checked)?
 * Call it before a dataset's declared shape sizes an allocation. */
int h5_storage_can_hold(hid_t d, double declared_bytes);

/* One sweep's results table, /sweeps/<name>/cells (docs/DESIGN.md, "The results file"), opened:
 * the dataset, its file type and its row count. */
struct h5_cells {
    hid_t d, ft;
    hssize_t n;
};
/* Open `name`/cells under the /sweeps group: 0 when the sweep has no such table (nothing is
 * open), 1 when it is open as a 1-D compound table, -1 when it exists but is not one (why
 * says what is wrong; nothing is open). Close an opened table with h5_cells_close. */
int h5_cells_open(hid_t sweeps, const char *name, struct h5_cells *c, char *why, size_t n);
void h5_cells_close(struct h5_cells *c);

#endif
