/* results.c — see results.h. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "axes.h"
#include "file_error.h"
#include "h5util.h"
#include "limits_files.h"
#include "results.h"

struct done_key {
    char sweep[64], key[400];
};

struct tkp_results {
    hid_t file;
    int lock_fd;  /* holds flock(LOCK_EX) on the file for the whole run (README.md, "Results") */
    int fresh;    /* created (or a partial create replaced) by this open */
    int failed;   /* a write failed or had no room: nothing more is written */
    int broken;   /* likewise: the file is left unclosed, as last flushed (tkp_results_close) */
    char path[1024];
    struct done_key *done; /* cells already ok in the file (for --resume) */
    size_t n_done, cap_done;
};

/* The compound type of a cell row, built from one table of fields. */
#define STR H5_KIND_STR /* the member kinds of h5util.h, short */
#define I64 H5_KIND_I64
#define F64 H5_KIND_F64
#define F(name, kind) { #name, offsetof(struct tkp_cell_row, name), kind, sizeof(((struct tkp_cell_row *)0)->name) }
static const struct field {
    const char *name;
    size_t offset;
    enum h5_kind kind;
    size_t size;
} cell_fields[] = {
    F(key, STR), F(algo, STR), F(variant, STR), F(options, STR), F(dataset, STR), F(mode, STR),
    F(backend, STR), F(batch, I64), F(vocab, I64), F(k, I64), F(p, F64), F(draws, I64),
    F(seed, I64), F(status, STR), F(message, STR), F(median_us, F64), F(q1_us, F64),
    F(q3_us, F64), F(min_us, F64), F(max_us, F64), F(mean_us, F64), F(stdev_us, F64),
    F(n_samples, I64), F(samples_offset, I64), F(throttled, I64), F(bytes_read, F64),
    F(bytes_written, F64), F(gbps, F64), F(bw_fraction, F64), F(workspace_bytes, I64),
    F(peak_device_bytes, I64), F(rows_checked, I64), F(rows_exact, I64), F(hit_rate, F64),
    F(outliers, F64), F(outlier_mass, F64), F(iterations, F64), F(rounds, F64),
    F(cell_seconds, F64),
    F(noisy, I64),
    F(run, I64),
    F(sorted, F64),
};
#undef F
#define N_FIELDS (sizeof cell_fields / sizeof cell_fields[0])

/* The columns of a cells row, in file order: cell_fields, then each axis whose column
 * cell_fields does not name (harness/axes.c), so that a new axis's column is appended last
 * (docs/DESIGN.md: columns are only ever appended). Returns how many. */
enum { MAX_FIELDS = N_FIELDS + TKP_MAX_AXES };
static size_t row_fields(struct field out[MAX_FIELDS])
{
    size_t n = 0;
    for (size_t i = 0; i < N_FIELDS; i++)
        out[n++] = cell_fields[i];
    for (const struct tkp_axis *a = tkp_axes; a->name && n < MAX_FIELDS; a++) {
        int listed = 0;
        for (size_t i = 0; i < N_FIELDS && !listed; i++)
            listed = strcmp(cell_fields[i].name, a->name) == 0;
        if (listed)
            continue;
        const enum h5_kind kind = a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM ? STR
                                  : a->type == TKP_AXIS_F32                               ? F64
                                                                                          : I64;
        out[n++] = (struct field){ a->name, a->column, kind, a->column_size };
    }
    return n;
}

size_t tkp_results_columns(const char **names, size_t cap)
{
    struct field f[MAX_FIELDS];
    const size_t n = row_fields(f);
    for (size_t i = 0; i < n && i < cap; i++)
        names[i] = f[i].name;
    return n;
}

static hid_t cell_type(void)
{
    struct field fields[MAX_FIELDS];
    const size_t n = row_fields(fields);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct tkp_cell_row));
    for (size_t i = 0; i < n; i++) {
        const struct field *f = &fields[i];
        hid_t mt = h5_member_type(f->kind, f->size);
        H5Tinsert(t, f->name, f->offset, mt);
        H5Tclose(mt);
    }
    return t;
}

/* The key and status columns only, for reading back what is done. */
struct key_status {
    char key[400], status[16];
};

static hid_t key_status_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct key_status));
    hid_t k = H5Tcopy(H5T_C_S1), s = H5Tcopy(H5T_C_S1);
    H5Tset_size(k, sizeof(((struct key_status *)0)->key));
    H5Tset_size(s, sizeof(((struct key_status *)0)->status));
    H5Tinsert(t, "key", offsetof(struct key_status, key), k);
    H5Tinsert(t, "status", offsetof(struct key_status, status), s);
    H5Tclose(k);
    H5Tclose(s);
    return t;
}

/* Statuses a rerun would only repeat: --resume skips these cells (error and oom run again). */
static int is_final(const char *status)
{
    return strcmp(status, "ok") == 0 || strcmp(status, "unsupported") == 0;
}

static int remember(struct tkp_results *r, const char *sweep, const char *key)
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
static int layout_matches(hid_t ft, char *why, size_t n)
{
    if (H5Tget_class(ft) != H5T_COMPOUND) {
        snprintf(why, n, "it is not a compound table");
        return 0;
    }
    int members = H5Tget_nmembers(ft);
    struct field fields[MAX_FIELDS];
    const size_t n_fields = row_fields(fields);
    int expected = (int)n_fields;
    for (size_t i = 0; i < n_fields; i++) {
        const struct field *f = &fields[i];
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
        int same = f->kind == STR ? c == H5T_STRING && size == f->size
                   : f->kind == I64 ? c == H5T_INTEGER && size == 8
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

/* What a --resume reads from one sweep; `why` is set (and iteration stops) when the sweep's
 * tables are not this binary's layout. */
struct load_ctx {
    struct tkp_results *r;
    char why[512];
    int64_t rows; /* cells rows over every sweep */
};

static herr_t load_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct load_ctx *x = data;
    struct h5_cells c;
    char why[256] = "";
    const int opened = h5_cells_open(group, name, &c, why, sizeof why);
    if (opened == 0)
        return 0;
    if (opened > 0)
        layout_matches(c.ft, why, sizeof why);
    struct key_status *rows = why[0] ? NULL : calloc((size_t)(c.n > 0 ? c.n : 1), sizeof *rows);
    hid_t t = key_status_type();
    if (!why[0] && !rows)
        snprintf(why, sizeof why, "out of memory for its %lld keys", (long long)c.n);
    else if (!why[0] && c.n > 0 && H5Dread(c.d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
        snprintf(why, sizeof why, "its key and status columns cannot be read");
    for (hssize_t i = 0; !why[0] && i < c.n; i++)
        if (is_final(rows[i].status) && remember(x->r, name, rows[i].key))
            snprintf(why, sizeof why, "out of memory for its keys");
    if (why[0])
        snprintf(x->why, sizeof x->why, "/sweeps/%s/cells is not a topkp results table: %s", name,
                 why);
    else
        x->rows += c.n;
    H5Tclose(t);
    free(rows);
    h5_cells_close(&c);
    return why[0] ? 1 : 0;
}

/* A file access list with HDF5's own file locking off: the run holds flock(LOCK_EX) on the
 * file itself (lock_fd), which HDF5's lock on its own descriptor would conflict with. */
static hid_t unlocked_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    return fapl;
}

/* The first bytes of every HDF5 file (at offset 0 in the files topkp writes). */
static int has_hdf5_signature(int fd)
{
    static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    unsigned char head[8];
    return pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
           memcmp(head, sig, sizeof sig) == 0;
}

/* Does an opened file hold nothing of a run: no /runs, no cells rows, no other object than
 * /config and /sweeps (a run killed before its first run record)? */
static int holds_no_run(hid_t f)
{
    H5G_info_t gi;
    if (H5Gget_info(f, &gi) < 0)
        return 0;
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        char name[64];
        if (H5Lget_name_by_idx(f, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                               H5P_DEFAULT) < 0 ||
            (strcmp(name, "config") != 0 && strcmp(name, "sweeps") != 0))
            return 0;
    }
    return 1;
}

enum existing { EXISTING_RESULTS, EXISTING_PARTIAL, EXISTING_BAD };

/* Classify an existing file before anything is written into it (opened read-only); `why`
 * names what is wrong with a bad one. On EXISTING_RESULTS the done keys are loaded. */
static enum existing classify(struct tkp_results *r, struct stat *st, char *why, size_t n)
{
    if (st->st_size == 0)
        return EXISTING_PARTIAL;
    if (!has_hdf5_signature(r->lock_fd)) {
        snprintf(why, n, "not an HDF5 file (no HDF5 signature at its start)");
        return EXISTING_BAD;
    }
    hid_t fapl = unlocked_fapl();
    hid_t f = H5Fopen(r->path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0) {
        if (st->st_size <= TKP_PARTIAL_CREATE_BYTES)
            return EXISTING_PARTIAL;
        snprintf(why, n, "an HDF5 file that cannot be opened (truncated or corrupt?)");
        return EXISTING_BAD;
    }
    enum existing kind = EXISTING_RESULTS;
    struct load_ctx x = { .r = r, .why = "", .rows = 0 };
    if (h5_exists(f, "/logits")) {
        snprintf(why, n, "it has a /logits dataset: a logits file, not a results file");
        kind = EXISTING_BAD;
    } else if (h5_exists(f, "/sweeps")) {
        hid_t g = H5Gopen2(f, "/sweeps", H5P_DEFAULT);
        if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, load_sweep, &x) < 0 ||
            x.why[0]) {
            snprintf(why, n, "%s", x.why[0] ? x.why : "its /sweeps group cannot be read");
            kind = EXISTING_BAD;
        }
        if (g >= 0)
            H5Gclose(g);
    }
    if (kind == EXISTING_RESULTS && !h5_exists(f, "/runs") && x.rows == 0) {
        if (holds_no_run(f))
            kind = EXISTING_PARTIAL;
        else {
            snprintf(why, n, "it has no /sweeps cells and no /runs: not a topkp results file");
            kind = EXISTING_BAD;
        }
    }
    H5Fclose(f);
    if (kind != EXISTING_RESULTS)
        r->n_done = 0;
    return kind;
}

/* Lock the file (created when missing, then *created is 1) for this process. */
static int lock_file(struct tkp_results *r, int *created, struct tkp_error *err)
{
    *created = 0;
    r->lock_fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (r->lock_fd >= 0) {
        *created = 1;
    } else if (errno != EEXIST) {
        tkp_create_error(err, r->path, errno);
        return TKP_EINVAL;
    } else if ((r->lock_fd = open(r->path, O_RDWR | O_CLOEXEC)) < 0) {
        tkp_error_set(err, "%s: cannot open for writing: %s", r->path, strerror(errno));
        return TKP_EINVAL;
    }
    if (flock(r->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        tkp_error_set(err, "%s is in use by another topkp run (or another program holds it "
                      "open): %s", r->path, errno == EWOULDBLOCK ? "locked" : strerror(errno));
        close(r->lock_fd);
        r->lock_fd = -1;
        return TKP_EINVAL;
    }
    return TKP_OK;
}

static void free_results(struct tkp_results *r)
{
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    free(r->done);
    free(r);
}

/* Create the HDF5 file over the locked (empty or partial) file. */
static int create_file(struct tkp_results *r, struct tkp_error *err)
{
    if (ftruncate(r->lock_fd, 0) != 0) {
        tkp_error_set(err, "%s: cannot truncate: %s", r->path, strerror(errno));
        return TKP_EINVAL;
    }
    hid_t fapl = unlocked_fapl();
    errno = 0;
    r->file = H5Fcreate(r->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (r->file < 0) {
        tkp_error_set(err, "%s: cannot create the HDF5 file: %s", r->path,
                      errno ? strerror(errno) : "HDF5 refused");
        return TKP_EINVAL;
    }
    /* Write the superblock now, so that a full disk fails here, before any cell runs. */
    if (H5Fflush(r->file, H5F_SCOPE_GLOBAL) < 0) {
        tkp_error_set(err, "%s: cannot write: %s", r->path,
                      errno ? strerror(errno) : "HDF5 flush failed");
        r->failed = r->broken = 1;
        return TKP_EINVAL;
    }
    r->fresh = 1;
    return TKP_OK;
}

int tkp_results_open(struct tkp_results **out, const char *path, int resume,
                     struct tkp_error *err)
{
    h5_quiet();
    struct tkp_results *r = calloc(1, sizeof *r);
    if (!r) {
        tkp_error_set(err, "%s: out of host memory", path);
        return TKP_ENOMEM;
    }
    r->file = -1;
    r->lock_fd = -1;
    if (strlen(path) >= sizeof r->path) {
        tkp_error_set(err, "%.64s...: the results path is longer than %zu bytes", path,
                      sizeof r->path - 1);
        free_results(r);
        return TKP_EINVAL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && !resume && st.st_size > TKP_PARTIAL_CREATE_BYTES) {
        tkp_error_set(err, "%s exists: pass --resume to continue it, or remove it", path);
        free_results(r);
        return TKP_EINVAL;
    }
    /* a corrupt file may crash libhdf5 itself: read it in a child first (export.c) */
    struct tkp_error crash;
    if (resume && stat(path, &st) == 0 && st.st_size > TKP_PARTIAL_CREATE_BYTES &&
        tkp_results_read_crashes(path, &crash)) {
        tkp_error_set(err, "%s; not resumed", crash.msg);
        free_results(r);
        return TKP_EINVAL;
    }
    int created;
    if (lock_file(r, &created, err)) {
        free_results(r);
        return TKP_EINVAL;
    }
    int rc = TKP_OK;
    if (!created) {
        char why[600] = "";
        fstat(r->lock_fd, &st);
        enum existing kind = classify(r, &st, why, sizeof why);
        if (kind == EXISTING_BAD) {
            tkp_error_set(err, "%s: refusing to %s it: %s", path, resume ? "resume" : "replace",
                          why);
            rc = TKP_EINVAL;
        } else if (kind == EXISTING_RESULTS && !resume) {
            tkp_error_set(err, "%s exists: pass --resume to continue it, or remove it", path);
            rc = TKP_EINVAL;
        } else if (kind == EXISTING_PARTIAL) {
            fprintf(stderr, "%s holds no cells and no run records (a run stopped before its first "
                    "flush?): starting it afresh\n", path);
            rc = create_file(r, err);
        } else {
            hid_t fapl = unlocked_fapl();
            r->file = H5Fopen(path, H5F_ACC_RDWR, fapl);
            H5Pclose(fapl);
            if (r->file < 0) {
                tkp_error_set(err, "%s: cannot open for writing: %s", path,
                              access(path, W_OK) ? strerror(errno) : "HDF5 refused");
                rc = TKP_EINVAL;
            }
        }
    } else {
        rc = create_file(r, err);
        if (rc)
            unlink(path);
    }
    if (rc) {
        tkp_results_close(r);
        return rc;
    }
    *out = r;
    return TKP_OK;
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
void tkp_results_close(struct tkp_results *r)
{
    if (!r)
        return;
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
    free_results(r);
}

int tkp_results_attr(struct tkp_results *r, const char *name, const char *value)
{
    if (r->failed)
        return -1;
    return h5_set_attr_str(r->file, name, value);
}

int tkp_results_attr_get(struct tkp_results *r, const char *name, char *buf, size_t n)
{
    return h5_get_attr_str(r->file, name, buf, n);
}

int tkp_results_attr_num(struct tkp_results *r, const char *name, double value)
{
    return h5_set_attr_f64(r->file, name, value);
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

int tkp_results_config(struct tkp_results *r, const char *name, const char *text)
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
 * after its samples (README.md, "Results"). Any failed HDF5 call fails the append. */
int tkp_results_append(struct tkp_results *r, const char *sweep, struct tkp_cell_row *row,
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
        else if ((room = reserve_room(r, append_room(0))) != 0)
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
    if (is_final(row->status) && remember(r, sweep, row->key)) {
        tkp_error_set(err, "%s: out of host memory for the done keys", r->path);
        return TKP_ENOMEM;
    }
    return TKP_OK;
}

/* The key of a cell: `identity` itself when it fits the key column with room to spare, else
 * a prefix, '#' and the FNV-1a 64-bit hash of the whole identity. Short keys are exactly the
 * identity (as older files have them); long keys are all exactly KEY_BYTES - 1 long, so no
 * long key equals a short one, and two long identities share a key only if their hashes
 * collide. */
void tkp_results_key(const char *identity, char key[TKP_RESULT_KEY_BYTES])
{
    const size_t len = strlen(identity), room = TKP_RESULT_KEY_BYTES - 1;
    if (len < room) {
        memcpy(key, identity, len + 1);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a offset basis */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)identity[i];
        h *= 0x100000001b3ULL; /* FNV prime */
    }
    const size_t prefix = room - 1 - TKP_RESULT_KEY_HASH_HEX;
    memcpy(key, identity, prefix);
    snprintf(key + prefix, TKP_RESULT_KEY_BYTES - prefix, "#%016llx", (unsigned long long)h);
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
