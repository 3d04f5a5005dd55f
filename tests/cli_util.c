/* cli_util.c — see cli_util.h. */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results.h"
#include "cli_util.h"

const char *topkp_bin(void)
{
    const char *bin = getenv("TOPKP");
    return bin && *bin ? bin : "build/topkp";
}

static char scratch[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* At exit: the scratch folder goes, unless TOPKP_KEEP_SCRATCH is set (to look at the files of
 * a failing case). */
static void remove_scratch(void)
{
    if (getenv("TOPKP_KEEP_SCRATCH"))
        fprintf(stderr, "scratch files kept in %s\n", scratch);
    else
        nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *scratch_dir(void)
{
    if (!scratch[0]) {
        snprintf(scratch, sizeof scratch, "/tmp/topkp-tests-XXXXXX");
        if (!mkdtemp(scratch)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(remove_scratch);
    }
    return scratch;
}

int run_cmd(char *out, size_t n, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t used = 0, got;
    char sink[4096];
    while ((got = fread(out && used + 1 < n ? out + used : sink, 1,
                        out && used + 1 < n ? n - used - 1 : sizeof sink, p)) > 0)
        if (out && used + 1 < n)
            used += got;
    if (out && n)
        out[used] = 0;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_argv(char *out, size_t n, const char *const argv[])
{
    int fd[2];
    char bin[4096];
    if (!realpath(argv[0], bin) || pipe(fd) != 0)
        return -1;
    const char *dir = scratch_dir();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        if (chdir(dir) != 0)
            _exit(127);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    ssize_t got;
    char sink[4096];
    while ((got = read(fd[0], used + 1 < n ? out + used : sink,
                       used + 1 < n ? n - used - 1 : sizeof sink)) > 0)
        if (used + 1 < n)
            used += (size_t)got;
    out[n ? used : 0] = 0;
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    long len = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = len >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    if (buf)
        buf[got] = 0;
    if (n)
        *n = got;
    if (f)
        fclose(f);
    return buf;
}

int run_into(const char *cfg, const char *name, const char *args, char *path, size_t len)
{
    static char out[1 << 16];
    snprintf(path, len, "%s/%s.h5", scratch_dir(), name);
    unlink(path);
    const int rc = run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu %s", topkp_bin(), cfg,
                           path, args);
    if (rc)
        fprintf(stderr, "%s: exit %d\n%s\n", path, rc, out);
    return rc;
}

const char *write_scratch(const char *name, const char *text)
{
    static char paths[8][512];
    static int slot;
    char *path = paths[slot++ % 8];
    snprintf(path, 512, "%s/%s", scratch_dir(), name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

int tsv_column(const char *header, const char *name)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", header);
    buf[strcspn(buf, "\n")] = 0;
    int i = 0;
    for (char *save, *tok = strtok_r(buf, "\t", &save); tok; tok = strtok_r(NULL, "\t", &save), i++)
        if (strcmp(tok, name) == 0)
            return i;
    return -1;
}

void tsv_field(const char *line, int col, char *out, size_t n)
{
    const char *p = line;
    for (int i = 0; i < col && p; i++) {
        p = strchr(p, '\t');
        if (p)
            p++;
    }
    size_t len = p ? strcspn(p, "\t\n") : 0;
    snprintf(out, n, "%.*s", (int)len, p ? p : "");
}

static int listed(const char *const *names, const char *name, size_t len)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return 1;
    return 0;
}

int export_without(const char *h5, const char *const *drop, char *out, size_t n)
{
    static char tsv[1 << 20];
    if (run_cmd(tsv, sizeof tsv, "%s export %s", topkp_bin(), h5) != 0) {
        snprintf(out, n, "%s", tsv);
        return -1;
    }
    enum { MAX_COLS = 256 };
    char keep[MAX_COLS] = { 0 };
    int cols = 0, rows = -1;
    for (const char *f = tsv; cols < MAX_COLS; cols++) { /* the header names the columns */
        const size_t len = strcspn(f, "\t\n");
        keep[cols] = !listed(drop, f, len);
        if (f[len] != '\t')
            break;
        f += len + 1;
    }
    size_t used = 0;
    out[0] = 0;
    for (const char *line = tsv; *line; rows++) {
        const size_t end = strcspn(line, "\n");
        int c = 0;
        for (const char *f = line; f <= line + end && used + 1 < n; c++) {
            const size_t len = strcspn(f, "\t\n");
            if (c >= MAX_COLS || keep[c])
                used += (size_t)snprintf(out + used, n - used, "%.*s\t", (int)len, f);
            f += len + 1;
        }
        if (used + 1 < n)
            used += (size_t)snprintf(out + used, n - used, "\n");
        line += end + (line[end] == '\n');
    }
    return rows;
}

const char *const timing_columns[] = { "median_us", "q1_us",          "q3_us",     "min_us",
                                       "max_us",    "mean_us",        "stdev_us",  "samples_offset",
                                       "throttled", "gbps",           "bw_fraction",
                                       "cell_seconds", "noisy",       "run",       NULL };

/* Lines of `log` that start with '[' (a cell's progress line). */
static int progress_lines(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += line[0] == '[';
    if (f)
        fclose(f);
    return n;
}

int kill_after_progress(const char *log, int lines, const char *fmt, ...)
{
    char cmd[4096] = "exec "; /* the shell becomes the command: the pid killed is its */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd + 5, sizeof cmd - 5, fmt, ap);
    va_end(ap);
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        const int err = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int null = open("/dev/null", O_WRONLY);
        if (err < 0 || null < 0 || dup2(err, 2) < 0 || dup2(null, 1) < 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    int seen = 0, status;
    for (int waited = 0; waited < 600 && seen < lines; waited++) {
        usleep(20000);
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "'%s' ended (status %#x) before %d progress lines in %s\n", cmd,
                    status, lines, log);
            return -1;
        }
        seen = progress_lines(log);
    }
    if (kill(pid, SIGKILL) != 0 || waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status)) {
        fprintf(stderr, "'%s' could not be killed (status %#x)\n", cmd, status);
        return -1;
    }
    return progress_lines(log);
}

int results_with_added_rows(const char *src, const char *dst, const char *export_args,
                                   row_adder add)
{
    char tsv[600], out[4096], header[8192], line[8192];
    snprintf(tsv, sizeof tsv, "%s.source.tsv", dst);
    if (run_cmd(out, sizeof out, "cp %s %s && %s export %s %s > %s", src, dst, topkp_bin(), src,
                export_args, tsv) != 0) {
        fprintf(stderr, "  copy/export failed: %s\n", out);
        return -1;
    }
    struct tkp_results *r = NULL;
    struct tkp_error err = { { 0 } };
    FILE *f = fopen(tsv, "r");
    int rc = !f || !fgets(header, sizeof header, f) || tkp_results_open(&r, dst, 1, &err);
    while (!rc && fgets(line, sizeof line, f))
        rc = add(r, header, line, &err);
    if (r)
        tkp_results_close(r);
    if (f)
        fclose(f);
    if (rc)
        fprintf(stderr, "  cannot write %s: %s\n", dst, err.msg);
    return rc ? -1 : 0;
}

int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

/* Does `path` hold exactly `want` (n bytes)? */
int same_bytes(const char *path, const char *want, size_t n)
{
    size_t m = 0;
    char *now = slurp(path, &m);
    int same = now && m == n && memcmp(now, want, n) == 0;
    free(now);
    return same;
}

/* Is `out` a sanitizer's report (the SAN=1 build) whose first frame outside the sanitizer is in
 * libhdf5: the library's own error on a corrupt file, which the plain build turns into an
 * error naming the file (export.c reads in a child process)? */
int libhdf5_sanitizer_report(const char *out)
{
    if (!strstr(out, "Sanitizer"))
        return 0;
    for (const char *line = strstr(out, "    #"); line; line = strstr(line + 1, "    #")) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char frame[512];
        snprintf(frame, sizeof frame, "%.*s", (int)(len < sizeof frame ? len : sizeof frame - 1),
                 line);
        if (strstr(frame, "sanitizer") || strstr(frame, "interceptor"))
            continue;
        return strstr(frame, "libhdf5") != NULL;
    }
    return 0;
}

/* Trial `trial` of a corruption loop: a copy of good[0..n) written to `path`, truncated at a
 * random byte *at (every third trial) or with 1-16 random bits flipped (rand(), seeded by the
 * caller). 0, or -1 when the file cannot be written. */
int write_corrupt_copy(const char *path, const char *good, char *copy, size_t n,
                              int trial, size_t *at)
{
    memcpy(copy, good, n);
    size_t len = n;
    *at = (size_t)rand() % n;
    if (trial % 3 == 0)
        len = *at;
    else
        for (int flips = 1 + rand() % 16; flips-- > 0;)
            copy[(size_t)rand() % n] ^= (char)(1 << (rand() % 8));
    return write_file(path, copy, len);
}
