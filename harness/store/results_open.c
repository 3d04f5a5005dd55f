/* results_open.c — opening a results file for writing (results.h, tkp_results_open): locked
 * with flock, created afresh, or, for --resume, an existing file classified before anything
 * is written into it (this binary's layout, its done keys; docs/RESULTS.md, "Results":
 * hostile files and disks). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_error.h"
#include "h5util.h"
#include "interrupt.h"
#include "limits_files.h"
#include "results_parts.h"

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
        results_layout_matches(c.ft, why, sizeof why);
    struct key_status *rows = why[0] ? NULL : calloc((size_t)(c.n > 0 ? c.n : 1), sizeof *rows);
    hid_t t = key_status_type();
    if (!why[0] && !rows)
        snprintf(why, sizeof why, "out of memory for its %lld keys", (long long)c.n);
    else if (!why[0] && c.n > 0 && H5Dread(c.d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
        snprintf(why, sizeof why, "its key and status columns cannot be read");
    for (hssize_t i = 0; !why[0] && i < c.n; i++)
        if (results_is_final(rows[i].status) && results_remember(x->r, name, rows[i].key))
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
    /* Until its first row is flushed the file holds nothing to keep, and a signal in that
     * window (a run stopped within its first second) could leave it half written and
     * unreadable: the signal removes it instead, and a --resume starts afresh
     * (docs/ROBUSTNESS.md, "Signals"; tkp_results_append ends the window). */
    tkp_interrupt_remove(r->path);
    r->removable = 1;
    tkp_pause_point("results-created");
    return TKP_OK;
}

static int open_file(struct tkp_results **out, const char *path, int resume,
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
        results_free(r);
        return TKP_EINVAL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && !resume && st.st_size > TKP_PARTIAL_CREATE_BYTES) {
        tkp_error_set(err, "%s exists: pass --resume to continue it, or remove it", path);
        results_free(r);
        return TKP_EINVAL;
    }
    int created;
    if (lock_file(r, &created, err)) {
        results_free(r);
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
            if (st.st_size > 0 || resume) /* else a name out_file.h reserved (merge) */
                fprintf(stderr, "%s holds no cells and no run records (a run stopped before "
                        "its first flush?): starting it afresh\n", path);
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

/* The store's writes hold signals (interrupt.h): a stop mid-write would tear the file. */
int tkp_results_open(struct tkp_results **out, const char *path, int resume,
                     struct tkp_error *err)
{
    tkp_interrupt_hold();
    const int rc = open_file(out, path, resume, err);
    tkp_interrupt_release();
    return rc;
}
