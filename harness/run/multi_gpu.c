/* multi_gpu.c — see multi_gpu.h. The children are this executable (/proc/self/exe, so that
 * their shard files carry one binary_id) started with fork and exec before anything here
 * touches CUDA but cudaGetDeviceCount; each writes its stderr to FILE.shard-I.log and its
 * progress ("cells DONE TOTAL", progress.h) to a pipe that the parent reads with poll and
 * folds into one line on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../algos/common/gate.h"
#include "gpu.h"
#include "interrupt.h"
#include "merge.h"
#include "multi_gpu.h"
#include "progress.h"


struct child {
    int device; /* -1: the CPU backend, or the default GPU */
    char file[1100], log[1100];
    pid_t pid;
    int fd;                /* the progress pipe's read end (-1 once it closed) */
    long long done, total; /* its last progress report (total -1: none yet) */
    char pending[128];     /* a progress line not yet ended */
    int status;
};

int tkp_gpus_parse(const char *spec, int *devices, struct tkp_error *err)
{
    if (strcmp(spec, "all") == 0)
        return 0;
    const char *at = spec;
    for (int n = 0; n < TKP_MAX_CHILDREN; n++) {
        char *end;
        errno = 0;
        const long d = strtol(at, &end, 10);
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= devices[i] == d;
        if (end == at || errno || d < 0 || d > 1023 || dup || (*end && *end != ','))
            break;
        devices[n] = (int)d;
        if (!*end)
            return n + 1;
        at = end + 1;
    }
    tkp_error_set(err, "--gpus '%s': expected all or at most %d distinct device numbers 0-1023 "
                  "separated by commas (e.g. --gpus 0,1)", tkp_gate_shown(spec), TKP_MAX_CHILDREN);
    return -1;
}

/* --gpus all|G,...: the devices, each once and present; the count, or -1 with err set. */
static int gpu_list(const char *spec, int *devices, struct tkp_error *err)
{
    const int present = tkp_gpu_count();
    if (present == 0) {
        tkp_error_set(err, "--gpus %s: no CUDA device here (cudaGetDeviceCount finds none; a "
                      "CPU-only build has none): --workers N runs CPU processes", spec);
        return -1;
    }
    int n = tkp_gpus_parse(spec, devices, err);
    if (n == 0)
        for (; n < present && n < TKP_MAX_CHILDREN; n++)
            devices[n] = n;
    for (int i = 0; i < n; i++)
        if (devices[i] >= present) {
            tkp_error_set(err, "--gpus '%s': no device %d (this machine has %d CUDA device%s, "
                          "0-%d)", tkp_gate_shown(spec), devices[i], present, present == 1 ? "" : "s",
                          present - 1);
            return -1;
        }
    return n;
}

/* FILE.h5 -> FILE.shard-I.h5 and FILE.shard-I.log. */
static void child_paths(const char *output, int i, struct child *c)
{
    const size_t len = strlen(output);
    const int stem = (int)(len > 3 && strcmp(output + len - 3, ".h5") == 0 ? len - 3 : len);
    snprintf(c->file, sizeof c->file, "%.*s.shard-%d.h5", stem, output, i);
    snprintf(c->log, sizeof c->log, "%.*s.shard-%d.log", stem, output, i);
}

/* The child: `topkp run CONFIG --shard I/N -o FILE.shard-I.h5 --backend B [--device G]` with
 * the flags passed through; never returns. */
static void exec_child(const struct tkp_run_args *a, const struct child *c, int i, int n, int wfd)
{
    char shard[32], device[16], fd[16];
    snprintf(shard, sizeof shard, "%d/%d", i, n);
    snprintf(device, sizeof device, "%d", c->device);
    snprintf(fd, sizeof fd, "%d", wfd);
    const char *argv[24];
    int k = 0;
    argv[k++] = "topkp", argv[k++] = "run", argv[k++] = a->config, argv[k++] = "--shard";
    argv[k++] = shard, argv[k++] = "-o", argv[k++] = c->file, argv[k++] = "--backend";
    argv[k++] = a->backend == TKP_GPU ? "gpu" : "cpu";
    if (c->device >= 0)
        argv[k++] = "--device", argv[k++] = device;
    if (a->only)
        argv[k++] = "--only", argv[k++] = a->only;
    if (a->sweeps)
        argv[k++] = "--sweep", argv[k++] = a->sweeps;
    if (a->resume)
        argv[k++] = "--resume";
    if (a->force)
        argv[k++] = "--force";
    argv[k] = NULL;
    const int log = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
    }
    setenv(TKP_PROGRESS_FD_ENV, fd, 1);
    execv("/proc/self/exe", (char *const *)argv);
    fprintf(stderr, "topkp run: cannot start shard %s: %s\n", shard, strerror(errno));
    _exit(127);
}

static int start_child(const struct tkp_run_args *a, struct child *c, int i, int n,
                       struct tkp_error *err)
{
    int p[2];
    if (pipe(p) != 0) {
        tkp_error_set(err, "cannot make a pipe for shard %d/%d: %s", i, n, strerror(errno));
        return TKP_EINVAL;
    }
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    c->pid = fork();
    if (c->pid == 0) {
        close(p[0]);
        exec_child(a, c, i, n, p[1]);
    }
    close(p[1]);
    if (c->pid < 0) {
        close(p[0]);
        tkp_error_set(err, "cannot start shard %d/%d: %s", i, n, strerror(errno));
        return TKP_EINVAL;
    }
    tkp_interrupt_child(c->pid); /* a signal to this process ends it too (interrupt.h) */
    c->fd = p[0];
    c->total = -1;
    return TKP_OK;
}

/* "[workers] 37/120 cells  shard 0: 12/40  shard 1: ..." on stderr (overwritten on a
 * terminal, else a line every 10 s); "?" for a shard that has not reported yet. */
static void print_progress(const struct child *c, int n, const char *what, int last)
{
    long long done = 0, total = 0;
    char line[4096] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof line - 64; i++) {
        char t[24] = "?";
        if (c[i].total >= 0)
            snprintf(t, sizeof t, "%lld", c[i].total);
        used += (size_t)snprintf(line + used, sizeof line - used, "  shard %d: %lld/%s", i,
                                 c[i].done, t);
        done += c[i].done;
        total += c[i].total > 0 ? c[i].total : 0;
    }
    const int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%s[%s] %lld/%lld cells%s%s", tty ? "\r" : "", what, done, total, line,
            tty && !last ? "" : "\n");
    fflush(stderr);
}

/* Read what a child reported; 1 when its pipe closed. */
static int read_progress(struct child *c)
{
    char buf[512];
    const ssize_t got = read(c->fd, buf, sizeof buf - 1);
    if (got <= 0) {
        close(c->fd);
        c->fd = -1;
        return 1;
    }
    buf[got] = 0;
    for (char *at = buf; *at;) {
        const size_t len = strcspn(at, "\n");
        const size_t have = strlen(c->pending);
        snprintf(c->pending + have, sizeof c->pending - have, "%.*s", (int)len, at);
        if (at[len] == '\n') {
            long long d, t;
            if (sscanf(c->pending, "cells %lld %lld", &d, &t) == 2)
                c->done = d, c->total = t;
            if (c->done > 0)
                tkp_pause_point("worker-running");
            c->pending[0] = 0;
        }
        at += len + (at[len] == '\n');
    }
    return 0;
}

/* Follow the children until every pipe closed, then reap them. */
static void follow(struct child *c, int n, const char *what)
{
    struct pollfd fds[TKP_MAX_CHILDREN];
    time_t shown = 0;
    const int every = isatty(STDERR_FILENO) ? 1 : 10; /* seconds between lines (a log: fewer) */
    for (int open_pipes = n; open_pipes > 0;) {
        for (int i = 0; i < n; i++)
            fds[i] = (struct pollfd){ c[i].fd, POLLIN, 0 };
        if (poll(fds, (nfds_t)n, 1000) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++)
            if (c[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                open_pipes -= read_progress(&c[i]);
        if (time(NULL) - shown >= every) {
            shown = time(NULL);
            print_progress(c, n, what, 0);
        }
    }
    for (int i = 0; i < n; i++) {
        while (waitpid(c[i].pid, &c[i].status, 0) < 0 && errno == EINTR)
            ;
        tkp_interrupt_forget(c[i].pid);
    }
    print_progress(c, n, what, 1);
}

/* The last `lines` lines of a log on stderr, indented. */
static void print_tail(const char *path, int lines)
{
    FILE *f = fopen(path, "r");
    char ring[8][512];
    long n = 0;
    if (!f) {
        fprintf(stderr, "  (%s cannot be read)\n", path);
        return;
    }
    while (fgets(ring[n % 8], sizeof ring[0], f))
        n++;
    fclose(f);
    for (long i = n > lines ? n - lines : 0; i < n; i++)
        fprintf(stderr, "  %s%s", ring[i % 8], strchr(ring[i % 8], '\n') ? "" : "\n");
}

/* Name each failed child with the end of its log; the number that failed. */
static int report_failures(const struct child *c, int n, const char *what)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const int st = c[i].status;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        failed++;
        char dev[32] = "";
        if (c[i].device >= 0)
            snprintf(dev, sizeof dev, ", GPU %d", c[i].device);
        fprintf(stderr, "topkp run: shard %d/%d (%s%s) failed (%s %d); its log %s ends:\n", i, n,
                what, dev, WIFEXITED(st) ? "exit status" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), c[i].log);
        print_tail(c[i].log, 5);
    }
    return failed;
}

/* Before any child starts: the merged file may be written, and without --resume no shard
 * file of an earlier run is in the way. */
static int outputs_allowed(const struct tkp_run_args *a, const struct child *c, int n,
                           struct tkp_error *err)
{
    struct stat st;
    if (stat(a->output, &st) == 0 && !a->force) {
        tkp_error_set(err, "%s exists; pass --force to write the merged shards over it",
                      a->output);
        return TKP_EINVAL;
    }
    for (int i = 0; i < n && !a->resume; i++)
        if (stat(c[i].file, &st) == 0) {
            tkp_error_set(err, "%s exists (an earlier split run?): pass --resume to continue "
                          "it, or remove it", c[i].file);
            return TKP_EINVAL;
        }
    return TKP_OK;
}

int tkp_run_multi(const struct tkp_run_args *a, const struct tkp_multi_args *m,
                  struct tkp_error *err)
{
    int devices[TKP_MAX_CHILDREN], n = m->workers;
    if (m->gpus && a->backend != TKP_GPU) {
        tkp_error_set(err, "--gpus runs on the GPU backend; --workers N runs processes on the "
                      "CPU backend");
        return TKP_EINVAL;
    }
    if (m->gpus && (n = gpu_list(m->gpus, devices, err)) < 0)
        return TKP_EINVAL;
    struct child *c = calloc((size_t)n, sizeof *c);
    const char *what = m->gpus ? "gpus" : "workers";
    if (!c) {
        tkp_error_set(err, "out of host memory for %d processes", n);
        return TKP_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        c[i].device = m->gpus ? devices[i] : -1;
        child_paths(a->output, i, &c[i]);
    }
    int rc = outputs_allowed(a, c, n, err), started = 0;
    for (; rc == TKP_OK && started < n; started++)
        rc = start_child(a, &c[started], started, n, err);
    if (started)
        follow(c, started, what);
    const int failed = report_failures(c, started, what);
    const char **files = calloc((size_t)n, sizeof *files);
    for (int i = 0; files && i < n; i++)
        files[i] = c[i].file;
    if (rc == TKP_OK && failed)
        tkp_error_set(err, "%d of %d shards failed; their files are kept: run the same command "
                      "with --resume to finish them", failed, n), rc = TKP_EINVAL;
    else if (rc == TKP_OK && files) {
        const struct tkp_merge_args ma = { a->output, files, n, a->force, a->argc, a->argv };
        rc = tkp_merge(&ma, err);
        if (rc == TKP_OK)
            fprintf(stderr, "wrote %s (the shard files %.*s.shard-*.h5 and their logs are kept)\n",
                    a->output, (int)(strlen(c[0].file) - strlen(".shard-0.h5")), c[0].file);
    }
    free(files);
    free(c);
    return rc;
}
