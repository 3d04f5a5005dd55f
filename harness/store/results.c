/* results.c — see results.h: the cells table's HDF5 type (from the row's columns,
 * plan/results_row.c), appends, attributes, the config texts and closing. Opening (create, or
 * an existing file checked for --resume) is results_open.c; what the two share is
 * results_parts.h. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "axes.h"
#include "h5util.h"
#include "interrupt.h"
#include "limits_files.h"
#include "results.h"
#include "results_parts.h"

/* The HDF5 kind of a column of the row's layout (results_row.h). */
static enum h5_kind h5_kind_of(enum tkp_row_kind kind)
{
    return kind == TKP_ROW_STR ? H5_KIND_STR : kind == TKP_ROW_I64 ? H5_KIND_I64 : H5_KIND_F64;
}

static hid_t cell_type(void)
{
    struct tkp_row_field fields[TKP_ROW_MAX_FIELDS];
    const size_t n = tkp_row_fields(fields);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct tkp_cell_row));
    for (size_t i = 0; i < n; i++) {
        const struct tkp_row_field *f = &fields[i];
        hid_t mt = h5_member_type(h5_kind_of(f->kind), f->size);
        H5Tinsert(t, f->name, f->offset, mt);
        H5Tclose(mt);
    }
    return t;
}

/* Statuses a rerun would only repeat: --resume skips these cells (error and oom run again). */
int results_is_final(const char *status)
{
    return strcmp(status, "ok") == 0 || strcmp(status, "unsupported") == 0;
}

int results_remember(struct tkp_results *r, const char *sweep, const char *key)
{
    if (r->n_done == r->cap_done) {
        size_t cap = r->cap_done ? 2 * r->cap_done : 64;
        struct done_key *grown = realloc(r->done, cap * sizeof *r->done);
        if (!grown)
            return -1;
        r->done = grown;
        r->cap_done = cap;
    }
    snprintf(r->done[r->n_done].sweep, sizeof r->done[0].sweep, "%s", sweep);
    snprintf(r->done[r->n_done].key, sizeof r->done[0].key, "%s", key);
    r->n_done++;
    return 0;
}

/* Is column `name` one a file written before its axis may lack (axes.h, TKP_AXIS_QUIET)? */
static const struct tkp_axis *quiet_column(const char *name)
{
    const struct tkp_axis *a = tkp_axis_named(name);
    return a && (a->flags & TKP_AXIS_QUIET) ? a : NULL;
}

/* A row a cells table written before one of its quiet axes' columns cannot hold (its value
 * would be dropped, and the cell read back as the default): 1 with `why` naming it. */
static int row_unfit_for_table(hid_t cells, const struct tkp_cell_row *row, char *why, size_t n)
{
    hid_t ft = H5Dget_type(cells);
    int unfit = 0;
    for (const struct tkp_axis *a = tkp_axes; ft >= 0 && a->name && !unfit; a++) {
        if (!(a->flags & TKP_AXIS_QUIET) || H5Tget_member_index(ft, a->name) >= 0 ||
            tkp_axis_row_is_default(a, row))
            continue;
        char def[64];
        tkp_axis_default_text(a, def, sizeof def);
        snprintf(why, n, "its cells table was written before the '%s' column, so it holds %s "
                 "cells only; record %s cells in a new results file", a->name, def,
                 (a->type == TKP_AXIS_ENUM || a->type == TKP_AXIS_DATASET)
                     ? (const char *)row + a->column : "these");
        unfit = 1;
    }
    if (ft >= 0)
        H5Tclose(ft);
    return unfit;
}

/* Does the compound type `ft` of an existing cells table have exactly this binary's columns,
 * each of the same class (and, for strings, the same size)? Names the first difference. A
 * quiet axis's column may be missing (a file written before it: its cells hold the default). */
int results_layout_matches(hid_t ft, char *why, size_t n)
{
    if (H5Tget_class(ft) != H5T_COMPOUND) {
        snprintf(why, n, "it is not a compound table");
        return 0;
    }
    int members = H5Tget_nmembers(ft);
    struct tkp_row_field fields[TKP_ROW_MAX_FIELDS];
    const size_t n_fields = tkp_row_fields(fields);
    int expected = (int)n_fields;
    for (size_t i = 0; i < n_fields; i++) {
        const struct tkp_row_field *f = &fields[i];
        int m = H5Tget_member_index(ft, f->name);
        if (m < 0 && quiet_column(f->name)) {
            expected--;
            continue;
        }
        if (m < 0) {
            snprintf(why, n, "it has no column '%s'", f->name);
            return 0;
        }
        hid_t mt = H5Tget_member_type(ft, (unsigned)m);
        H5T_class_t c = H5Tget_class(mt);
        size_t size = H5Tget_size(mt);
        H5Tclose(mt);
        int same = f->kind == TKP_ROW_STR ? c == H5T_STRING && size == f->size
                   : f->kind == TKP_ROW_I64 ? c == H5T_INTEGER && size == 8
                                            : c == H5T_FLOAT && size == 8;
        if (!same) {
            snprintf(why, n, "its column '%s' has another type or size", f->name);
            return 0;
        }
    }
    if (members != expected) {
        snprintf(why, n, "it has %d columns, this binary writes %d", members, expected);
        return 0;
    }
    return 1;
}

void results_free(struct tkp_results *r)
{
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    free(r->done);
    free(r);
}

int tkp_results_fresh(const struct tkp_results *r) { return r->fresh; }

int tkp_results_failed(const struct tkp_results *r) { return r->failed; }

const char *tkp_results_path(const struct tkp_results *r) { return r->path; }

/* Bytes of the superblock (version 0, 8-byte addresses: the default format) that hold the
 * end-of-file address: HDF5's EOA. 0 when the superblock is another version. */
static uint64_t superblock_eoa(int fd)
{
    unsigned char sb[48];
    if (pread(fd, sb, sizeof sb, 0) != (ssize_t)sizeof sb || sb[8] != 0 || sb[13] != 8)
        return 0;
    uint64_t eoa = 0;
    for (int i = 7; i >= 0; i--)
        eoa = eoa << 8 | sb[40 + i];
    return eoa;
}

/* After a failed write, HDF5 1.10's H5Fclose fails flushing again and leaves the file's id
 * half torn down, which then crashes HDF5's exit handler: such a file is not closed (its rows
 * before the failure are on disk already, each flushed) and topkp turns that handler off
 * (main.c). Either way the room reserved past the end (reserve_room) is given back, up to
 * the end of file the superblock on disk names. */
static void close_file(struct tkp_results *r)
{
    if (!r)
        return;
    if (r->removable) /* closed whole, rows or none: nothing for a signal to remove */
        tkp_interrupt_remove(NULL);
    if (r->file >= 0 && !r->broken && H5Fclose(r->file) < 0)
        fprintf(stderr, "%s: closing failed (the last cells may not be on disk)\n", r->path);
    if (r->file >= 0) {
        struct stat st;
        uint64_t eoa = r->lock_fd >= 0 ? superblock_eoa(r->lock_fd) : 0;
        if (eoa && fstat(r->lock_fd, &st) == 0 && (uint64_t)st.st_size > eoa &&
            ftruncate(r->lock_fd, (off_t)eoa) != 0)
            fprintf(stderr, "%s: cannot trim the reserved room: %s\n", r->path, strerror(errno));
    }
    r->file = -1;
    results_free(r);
}

/* The store's writes hold signals (interrupt.h): a stop mid-write would tear the file. */
void tkp_results_close(struct tkp_results *r)
{
    tkp_interrupt_hold();
    close_file(r);
    tkp_interrupt_release();
}

static int write_attr(struct tkp_results *r, const char *name, const char *value)
{
    if (r->failed)
        return -1;
    return h5_set_attr_str(r->file, name, value);
}

int tkp_results_attr(struct tkp_results *r, const char *name, const char *value)
{
    tkp_interrupt_hold();
    const int rc = write_attr(r, name, value);
    tkp_interrupt_release();
    return rc;
}

int tkp_results_attr_get(struct tkp_results *r, const char *name, char *buf, size_t n)
{
    return h5_get_attr_str(r->file, name, buf, n);
}

static int write_attr_num(struct tkp_results *r, const char *name, double value)
{
    return h5_set_attr_f64(r->file, name, value);
}

int tkp_results_attr_num(struct tkp_results *r, const char *name, double value)
{
    tkp_interrupt_hold();
    const int rc = write_attr_num(r, name, value);
    tkp_interrupt_release();
    return rc;
}

static hid_t group_path(hid_t file, const char *path)
{
    if (h5_exists(file, path))
        return H5Gopen2(file, path, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    return g;
}

void tkp_results_config_link(const char *name, char *link, size_t n)
{
    snprintf(link, n, "%s", name);
    for (char *c = link; *c; c++)
        if (*c == '/')
            *c = '|';
}

static int write_config(struct tkp_results *r, const char *name, const char *text)
{
    hid_t g = group_path(r->file, "/config");
    char link[256];
    tkp_results_config_link(name, link, sizeof link);
    if (g < 0)
        return -1;
    int rc = H5Lexists(g, link, H5P_DEFAULT) > 0 ? 0 : h5_write_text(g, link, text);
    H5Gclose(g);
    if (H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0)
        rc = -1;
    return rc;
}

int tkp_results_config(struct tkp_results *r, const char *name, const char *text)
{
    tkp_interrupt_hold();
    const int rc = write_config(r, name, text);
    tkp_interrupt_release();
    return rc;
}

/* Open (creating when missing) an extendible 1-D dataset, chunked and deflated. */
static hid_t open_table(hid_t group, const char *name, hid_t type, hsize_t chunk)
{
    if (H5Lexists(group, name, H5P_DEFAULT) > 0)
        return H5Dopen2(group, name, H5P_DEFAULT);
    hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    hid_t s = H5Screate_simple(1, &zero, &unlimited);
    hid_t dcpl = h5_deflated_dcpl(1, &chunk, H5_DEFLATE_TABLE);
    hid_t d = s < 0 || dcpl < 0 ? -1
                                : H5Dcreate2(group, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Sclose(s);
    return d;
}

/* Append n elements of `type` to a 1-D dataset; returns the old length or -1. */
static int64_t append(hid_t d, hid_t type, const void *data, hsize_t n)
{
    hid_t s = H5Dget_space(d);
    hsize_t len = 0;
    int bad = s < 0 || H5Sget_simple_extent_ndims(s) != 1 ||
              H5Sget_simple_extent_dims(s, &len, NULL) < 0;
    if (s >= 0)
        H5Sclose(s);
    if (bad)
        return -1;
    if (n == 0)
        return (int64_t)len;
    hsize_t grown = len + n;
    if (H5Dset_extent(d, &grown) < 0)
        return -1;
    s = H5Dget_space(d);
    hid_t m = H5Screate_simple(1, &n, NULL);
    herr_t rc = s < 0 || m < 0 ? -1 : H5Sselect_hyperslab(s, H5S_SELECT_SET, &len, NULL, &n, NULL);
    if (rc >= 0)
        rc = H5Dwrite(d, type, m, s, H5P_DEFAULT, data);
    if (m >= 0)
        H5Sclose(m);
    if (s >= 0)
        H5Sclose(s);
    return rc < 0 ? -1 : (int64_t)len;
}

/* Most bytes one append may add to the file: a new chunk of cells rows (64 rows, open_table),
 * the samples in 1024-element chunks, and room for HDF5's metadata. */
static uint64_t append_room(int64_t n_samples)
{
    return 64 * sizeof(struct tkp_cell_row) + ((uint64_t)n_samples / 1024 + 2) * 8192 +
           TKP_RESULTS_METADATA_ROOM;
}

/* Allocate `room` bytes past HDF5's end of file before HDF5 writes anything (posix_fallocate,
 * so that a full disk or a file-size limit fails here, when nothing of the cell is written
 * yet: a failed write inside HDF5 leaves a superblock that points past the end of the file,
 * and no cell of the file would open). Returns 0, or the errno. */
static int reserve_room(struct tkp_results *r, uint64_t room)
{
    struct stat st;
    hsize_t size = 0;
    if (H5Fget_filesize(r->file, &size) < 0 || fstat(r->lock_fd, &st) != 0)
        return EIO;
    const off_t want = (off_t)(size + room);
    if (st.st_size >= want)
        return 0;
    int e = posix_fallocate(r->lock_fd, 0, want);
    if (e) { /* give back whatever was allocated: the file is as HDF5 left it */
        if (ftruncate(r->lock_fd, st.st_size) != 0)
            e = errno;
    }
    return e;
}

int tkp_results_reserve(struct tkp_results *r, uint64_t bytes, struct tkp_error *err)
{
    int e = r->failed ? EIO : reserve_room(r, bytes + TKP_RESULTS_METADATA_ROOM);
    if (!e)
        return TKP_OK;
    r->failed = r->broken = 1;
    tkp_error_set(err, "%s: no room for the run's records (%s); the run stops, the file is "
                  "left as it was", r->path, strerror(e));
    return TKP_EINVAL;
}

void tkp_results_fail(struct tkp_results *r) { r->failed = r->broken = 1; }

/* Append the repetition times and flush, then the row and flush: a row reaches the disk only
 * after its samples (docs/RESULTS.md, "Results"). Any failed HDF5 call fails the append. */
static int append_cell(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
                       const double *samples_us, int64_t n, struct tkp_error *err)
{
    if (r->failed) {
        tkp_error_set(err, "%s: an earlier write failed; nothing more is written", r->path);
        return TKP_EINVAL;
    }
    char path[128];
    snprintf(path, sizeof path, "/sweeps/%s", sweep);
    hid_t g = group_path(r->file, path);
    hid_t t = cell_type();
    hid_t cells = g < 0 ? -1 : open_table(g, "cells", t, 64);
    hid_t times = g < 0 ? -1 : open_table(g, "samples", H5T_NATIVE_DOUBLE, 1024);
    const char *step = NULL;
    char unfit[256] = "";
    int room = 0, saved_errno = 0;
    errno = 0;
    if (g < 0 || cells < 0 || times < 0) {
        step = "cannot open its tables";
    } else if (row_unfit_for_table(cells, row, unfit, sizeof unfit)) {
        step = unfit;
    } else if ((room = reserve_room(r, append_room(n))) != 0) {
        step = "no room for its samples";
    } else {
        row->n_samples = n;
        row->samples_offset = append(times, H5T_NATIVE_DOUBLE, samples_us, (hsize_t)n);
        if (row->samples_offset < 0)
            step = "cannot write its samples";
        else if (H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0)
            step = "cannot flush its samples";
    }
    if (!step) {
        tkp_pause_point("row-writing"); /* the tests' signal between the two flushes */
        if ((room = reserve_room(r, append_room(0))) != 0)
            step = "no room for its row";
        else if (append(cells, t, row, 1) < 0)
            step = "cannot write its row";
        else if (H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0)
            step = "cannot flush its row";
    }
    saved_errno = room ? room : errno;
    if (times >= 0)
        H5Dclose(times);
    if (cells >= 0)
        H5Dclose(cells);
    H5Tclose(t);
    if (g >= 0)
        H5Gclose(g);
    if (unfit[0]) { /* nothing of the cell was written: the file stays as it is */
        r->failed = 1;
        tkp_error_set(err, "%s: sweep %s: %s (cell %.120s%s); the run stops", r->path, sweep,
                      unfit, row->key, strlen(row->key) > 120 ? "..." : "");
        return TKP_EINVAL;
    }
    if (step) { /* whatever HDF5 holds unwritten is never flushed: the file stays as flushed */
        r->failed = r->broken = 1;
        tkp_error_set(err, "%s: %s for cell %.120s%s (%s); the run stops, the cells before it "
                      "are kept", r->path, step, row->key, strlen(row->key) > 120 ? "..." : "",
                      saved_errno ? strerror(saved_errno) : "HDF5 write failed");
        return TKP_EINVAL;
    }
    if (r->removable) { /* a row is on disk: the file is worth keeping from now on */
        tkp_interrupt_remove(NULL);
        r->removable = 0;
    }
    if (results_is_final(row->status) && results_remember(r, sweep, row->key)) {
        tkp_error_set(err, "%s: out of host memory for the done keys", r->path);
        return TKP_ENOMEM;
    }
    return TKP_OK;
}

int tkp_results_append(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
                       const double *samples_us, int64_t n, struct tkp_error *err)
{
    tkp_interrupt_hold();
    const int rc = append_cell(r, sweep, row, samples_us, n, err);
    tkp_interrupt_release();
    return rc;
}

int tkp_results_done(struct tkp_results *r, const char *sweep, const char *key)
{
    for (size_t i = 0; i < r->n_done; i++)
        if (strcmp(r->done[i].sweep, sweep) == 0 && strcmp(r->done[i].key, key) == 0)
            return 1;
    return 0;
}

int64_t tkp_results_rows(struct tkp_results *r, const char *sweep)
{
    char path[160];
    snprintf(path, sizeof path, "/sweeps/%s/cells", sweep);
    if (!h5_exists(r->file, path))
        return 0;
    hid_t d = H5Dopen2(r->file, path, H5P_DEFAULT), s = H5Dget_space(d);
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    H5Dclose(d);
    return n > 0 ? (int64_t)n : 0;
}

int64_t tkp_results_handle(struct tkp_results *r) { return (int64_t)r->file; }

int64_t tkp_results_row_type(void) { return (int64_t)cell_type(); }
