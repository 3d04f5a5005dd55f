/* export.c — `topkp export` and `topkp info`: any results file to TSV (one header line,
 * columns by name, so gnuplot and pandas read it) and its provenance attributes. The reader
 * is generic over the compound members it finds, so older files export too. A corrupt file
 * can crash or hang HDF5 itself, so each command reads the file in a child process and a
 * crash or a hang there is an error naming the file (README.md, "Results"). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "limits_files.h"

#include "h5util.h"
#include "results.h"

struct export_ctx {
    FILE *out;
    const char *only;
    int header_done, failed;
    char header[4096];
};

static void print_value(FILE *out, hid_t member, const char *data)
{
    H5T_class_t c = H5Tget_class(member);
    size_t size = H5Tget_size(member);
    if (c == H5T_STRING) {
        char buf[1024];
        size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
        memcpy(buf, data, n);
        buf[n] = 0;
        for (char *p = buf; *p; p++)
            if (*p == '\t' || *p == '\n')
                *p = ' ';
        fputs(buf, out);
    } else if (c == H5T_INTEGER) {
        long long v = 0;
        if (size == 8)
            memcpy(&v, data, 8);
        else if (size == 4) {
            int32_t w;
            memcpy(&w, data, 4);
            v = w;
        }
        fprintf(out, "%lld", v);
    } else if (c == H5T_FLOAT) {
        double v = 0;
        if (size == 8)
            memcpy(&v, data, 8);
        else {
            float w;
            memcpy(&w, data, 4);
            v = w;
        }
        fprintf(out, "%.9g", v);
    }
}

static herr_t export_sweep(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    struct export_ctx *x = data;
    char path[128];
    snprintf(path, sizeof path, "%s/cells", name);
    if ((x->only && strcmp(x->only, name) != 0) || !h5_exists(group, path))
        return 0;
    hid_t d = H5Dopen2(group, path, H5P_DEFAULT), ft = d < 0 ? -1 : H5Dget_type(d);
    hid_t mt = ft < 0 ? -1 : H5Tget_native_type(ft, H5T_DIR_DEFAULT);
    hid_t s = d < 0 ? -1 : H5Dget_space(d);
    if (d < 0 || ft < 0 || mt < 0 || s < 0 || H5Tget_class(ft) != H5T_COMPOUND) {
        fprintf(stderr, "export: sweep %s: its cells table cannot be opened\n", name);
        x->failed = 1;
        if (s >= 0)
            H5Sclose(s);
        if (mt >= 0)
            H5Tclose(mt);
        if (ft >= 0)
            H5Tclose(ft);
        if (d >= 0)
            H5Dclose(d);
        return 1;
    }
    hssize_t n = H5Sget_simple_extent_npoints(s);
    size_t row_size = H5Tget_size(mt);
    int members = H5Tget_nmembers(mt);
    char header[4096];
    size_t used = (size_t)snprintf(header, sizeof header, "sweep");
    for (int m = 0; m < members && used < sizeof header; m++) {
        char *mn = H5Tget_member_name(mt, (unsigned)m);
        used += (size_t)snprintf(header + used, sizeof header - used, "\t%s", mn);
        H5free_memory(mn);
    }
    if (!x->header_done) {
        fprintf(x->out, "%s\n", header);
        snprintf(x->header, sizeof x->header, "%s", header);
        x->header_done = 1;
    } else if (strcmp(header, x->header) != 0) {
        fprintf(stderr, "export: sweep %s has other columns; export it alone with --sweep\n",
                name);
        x->failed = 1;
    }
    char *rows = n >= 0 && members > 0 && row_size > 0 ? malloc(row_size * (size_t)(n > 0 ? n : 1))
                                                      : NULL;
    if (!rows) {
        fprintf(stderr, "export: sweep %s: its cells table cannot be read\n", name);
        x->failed = 1;
    } else if (!x->failed && n > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
        fprintf(stderr, "export: sweep %s: its cells cannot be read (a corrupt file?)\n", name);
        x->failed = 1;
    } else if (!x->failed && n > 0) {
        for (hssize_t i = 0; i < n; i++) {
            fputs(name, x->out);
            for (int m = 0; m < members; m++) {
                hid_t member = H5Tget_member_type(mt, (unsigned)m);
                fputc('\t', x->out);
                print_value(x->out, member, rows + (size_t)i * row_size +
                                                H5Tget_member_offset(mt, (unsigned)m));
                H5Tclose(member);
            }
            fputc('\n', x->out);
        }
    }
    free(rows);
    H5Sclose(s);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Dclose(d);
    return 0;
}

/* Why H5Fopen failed: the file is locked by a run (flock, results.c) or it is not HDF5. */
static void open_failed(const char *path, struct tkp_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int locked = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    int missing = fd < 0;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (missing)
        tkp_error_set(err, "%s: cannot open: %s", path, strerror(e));
    else if (locked)
        tkp_error_set(err, "%s is in use by another topkp run (locked); read it when the run ends",
                      path);
    else
        tkp_error_set(err, "%s: not a readable HDF5 file", path);
}

static int export_file(const char *path, const char *sweep, FILE *out, struct tkp_error *err)
{
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        open_failed(path, err);
        return TKP_EINVAL;
    }
    struct export_ctx x = { out, sweep, 0, 0, "" };
    if (h5_exists(f, "/sweeps")) {
        hid_t g = H5Gopen2(f, "/sweeps", H5P_DEFAULT);
        if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, export_sweep, &x) < 0)
            x.failed = 1;
        if (g >= 0)
            H5Gclose(g);
    }
    H5Fclose(f);
    if (x.failed) {
        tkp_error_set(err, "%s: not every sweep could be exported (a corrupt file? see above)",
                      path);
        return TKP_EINVAL;
    }
    if (!x.header_done) {
        tkp_error_set(err, "%s: no sweep%s%s with cells", path, sweep ? " named " : "",
                      sweep ? sweep : "");
        return TKP_EINVAL;
    }
    return TKP_OK;
}

static herr_t print_attr(hid_t obj, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    char value[4096];
    if (h5_get_attr_str(obj, name, value, sizeof value) == 0)
        fprintf((FILE *)data, "%s\t%s\n", name, value);
    return 0;
}

/* One run record (/runs/<n>, run_record.h): its attributes as "run <n> name<TAB>value". */
static herr_t print_run(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    hid_t g = H5Gopen2(group, name, H5P_DEFAULT);
    if (g < 0)
        return 0;
    FILE *out = data;
    fprintf(out, "run %s\n", name);
    H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_attr, out);
    H5Gclose(g);
    return 0;
}

static int info_file(const char *path, const char *sweep, FILE *out, struct tkp_error *err)
{
    (void)sweep;
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        open_failed(path, err);
        return TKP_EINVAL;
    }
    hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    if (root < 0 || H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, NULL, print_attr, out) < 0) {
        if (root >= 0)
            H5Gclose(root);
        H5Fclose(f);
        tkp_error_set(err, "%s: its root attributes cannot be read (a corrupt file?)", path);
        return TKP_EINVAL;
    }
    H5Gclose(root);
    if (h5_exists(f, "/runs")) { /* every run into the file (names 0, 1, ...; by name) */
        hid_t g = H5Gopen2(f, "/runs", H5P_DEFAULT);
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, print_run, out);
        H5Gclose(g);
    }
    H5Fclose(f);
    return TKP_OK;
}

typedef int (*read_fn)(const char *path, const char *sweep, FILE *out, struct tkp_error *err);

/* Run fn in a child process (limited to TKP_READ_SECONDS) and return its status; a child that
 * crashed or hung is an error naming the file (*crashed = 1). The child's error message comes
 * back through a pipe. */
static int read_guarded(read_fn fn, const char *path, const char *sweep, FILE *out,
                        struct tkp_error *err, int *crashed)
{
    *crashed = 0;
    int fds[2];
    fflush(out);
    if (pipe(fds) != 0)
        return fn(path, sweep, out, err);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return fn(path, sweep, out, err);
    }
    if (pid == 0) {
        close(fds[0]);
        signal(SIGALRM, SIG_DFL);
        /* a crash inside libhdf5 on a corrupt file ends this child by its signal, which the
         * parent reports; a sanitizer's handler would turn it into a plain exit status */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        alarm(TKP_READ_SECONDS);
        int rc = fn(path, sweep, out, err);
        fflush(out);
        if (rc && write(fds[1], err->msg, strlen(err->msg)) < 0)
            rc = TKP_EINVAL;
        _exit(rc ? 1 : 0);
    }
    close(fds[1]);
    char msg[sizeof err->msg] = "";
    size_t got = 0;
    for (ssize_t n; got < sizeof msg - 1 && (n = read(fds[0], msg + got, sizeof msg - 1 - got)) != 0;)
        if (n > 0)
            got += (size_t)n;
        else if (errno != EINTR)
            break;
    msg[got] = 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    *crashed = WIFSIGNALED(status);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        tkp_error_set(err, "%s: reading it did not finish within %d s (a corrupt results file?)",
                      path, TKP_READ_SECONDS);
        return TKP_EINVAL;
    }
    if (WIFSIGNALED(status)) {
        tkp_error_set(err, "%s: a corrupt results file (HDF5 crashed reading it: %s)", path,
                      strsignal(WTERMSIG(status)));
        return TKP_EINVAL;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return TKP_OK;
    tkp_error_set(err, "%s", msg[0] ? msg : "reading failed");
    return TKP_EINVAL;
}

int tkp_results_export(const char *path, const char *sweep, FILE *out, struct tkp_error *err)
{
    int crashed;
    return read_guarded(export_file, path, sweep, out, err, &crashed);
}

int tkp_results_info(const char *path, FILE *out, struct tkp_error *err)
{
    int crashed;
    return read_guarded(info_file, path, NULL, out, err, &crashed);
}

int tkp_results_read_crashes(const char *path, struct tkp_error *err)
{
    FILE *sink = fopen("/dev/null", "w");
    if (!sink)
        return 0;
    struct tkp_error ignored;
    int crashed;
    read_guarded(export_file, path, NULL, sink, &ignored, &crashed);
    fclose(sink);
    if (crashed)
        tkp_error_set(err, "%s", ignored.msg);
    return crashed;
}
