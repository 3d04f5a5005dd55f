/* peer_worker.c — see peer_worker.h. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu.h"
#include "peer_worker.h"
#include "timing.h"

const char *tkp_peer_python(void)
{
    static char venv[PATH_MAX];
    const char *py = getenv("TOPKP_PYTHON");
    if (py && *py)
        return py;
    struct tkp_error ignored;
    char script[PATH_MAX];
    if (tkp_peer_script(script, sizeof script, &ignored) == 0) {
        /* scripts/install-peers.sh's environment, beside the peers/ folder */
        snprintf(venv, sizeof venv, "%s/../.venv-peers/bin/python", dirname(script));
        if (access(venv, X_OK) == 0)
            return venv;
    }
    return "python3";
}

int tkp_peer_script(char *path, size_t n, struct tkp_error *err)
{
    const char *dir = getenv("TOPKP_PEERS_DIR");
    if (dir && *dir) {
        snprintf(path, n, "%s/worker.py", dir);
        if (access(path, R_OK) == 0)
            return TKP_OK;
        tkp_error_set(err, "TOPKP_PEERS_DIR=%s has no readable worker.py", dir);
        return TKP_EINVAL;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        const char *bin = dirname(exe); /* build/topkp, build/cpu/topkp or build/gpu/topkp */
        const char *ups[] = { "", "/..", "/../.." };
        for (int i = 0; i < 3; i++) {
            snprintf(path, n, "%s%s/peers/worker.py", bin, ups[i]);
            if (access(path, R_OK) == 0)
                return TKP_OK;
        }
    }
    tkp_error_set(err, "cannot find peers/worker.py beside the topkp binary; set TOPKP_PEERS_DIR");
    return TKP_EINVAL;
}

/* The worker's argv: the interpreter's words, "-u", the script (words point into buf). */
static void worker_argv(const char *script, char *buf, size_t n, char *argv[16])
{
    int count = 0;
    snprintf(buf, n, "%s", tkp_peer_python());
    for (char *save, *word = strtok_r(buf, " ", &save); word && count < 13;
         word = strtok_r(NULL, " ", &save))
        argv[count++] = word;
    argv[count++] = "-u";
    argv[count++] = (char *)script;
    argv[count] = NULL;
}

/* In the child, before exec: its own process group (so that stopping it also stops what it
 * spawns), death with the harness, stdin and stdout on the pipes, fd 3 on `report` (closed by
 * a successful exec), and no other descriptor of the harness's (the results file, the pipes
 * of an earlier worker). */
static void child_setup(int in, int out, int report)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        _exit(127); /* the harness is already gone */
    dup2(in, 0);
    dup2(out, 1);
    dup2(report, 3);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    if (syscall(SYS_close_range, 4, ~0U, 0) != 0)
        for (int fd = 4; fd < 4096; fd++)
            close(fd);
}

static void close_pair(int fd[2])
{
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            close(fd[i]);
}

/* With `topkp run --device D`, a peer worker's CUDA device is D too: CUDA_VISIBLE_DEVICES
 * becomes the D-th entry of the list it had (Slurm's, say), or D without one, so that the
 * worker's "cuda" is the harness's device. Set here, before the fork, once: the harness's own
 * CUDA runtime read the variable when it started. */
static void pin_worker_device(void)
{
    static int pinned;
    const int d = tkp_gpu_selected();
    if (pinned || d < 0)
        return;
    pinned = 1;
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    char entry[256];
    snprintf(entry, sizeof entry, "%d", d);
    for (int i = 0; list && *list; i++) {
        const size_t len = strcspn(list, ",");
        if (i == d) {
            snprintf(entry, sizeof entry, "%.*s", (int)len, list);
            break;
        }
        list += len + (list[len] == ',');
    }
    setenv("CUDA_VISIBLE_DEVICES", entry, 1);
}

static int worker_start(struct tkp_peer_worker *w, struct tkp_error *err)
{
    char script[PATH_MAX], words[512], *argv[16];
    int rc = tkp_peer_script(script, sizeof script, err);
    if (rc)
        return rc;
    worker_argv(script, words, sizeof words, argv);
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, alive[2] = { -1, -1 };
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(alive, O_CLOEXEC)) {
        tkp_error_set(err, "cannot create pipes for the peer worker: %s", strerror(errno));
        close_pair(in);
        close_pair(out);
        close_pair(alive);
        return TKP_EDEVICE;
    }
    signal(SIGPIPE, SIG_IGN); /* a dead worker is an error reply, not the harness's death */
    pin_worker_device();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child_setup(in[0], out[1], alive[1]);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t ignored = write(3, &e, sizeof e);
        (void)ignored;
        _exit(127);
    }
    int fork_errno = errno, child_errno = 0;
    close(in[0]);
    close(out[1]);
    close(alive[1]);
    ssize_t got = pid > 0 ? read(alive[0], &child_errno, sizeof child_errno) : 0;
    close(alive[0]);
    if (pid < 0 || got > 0) {
        tkp_error_set(err, "cannot start the peer worker `%s %s`: %s", tkp_peer_python(), script,
                      strerror(pid < 0 ? fork_errno : child_errno));
        close(in[1]);
        close(out[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return TKP_EDEVICE;
    }
    w->pid = pid;
    w->reaped = w->status = 0;
    w->to = in[1];
    w->from = out[0];
    w->used = 0;
    return TKP_OK;
}

/* Has the worker exited? Reaps it once and remembers that it did, and its status. */
static int worker_gone(struct tkp_peer_worker *w)
{
    if (!w->reaped && waitpid(w->pid, &w->status, WNOHANG) == w->pid)
        w->reaped = 1;
    return w->reaped;
}

void tkp_peer_worker_stop(struct tkp_peer_worker *w)
{
    if (!w->pid)
        return;
    close(w->to);
    close(w->from);
    for (int i = 0; i < 20 && !worker_gone(w); i++)
        usleep(10000); /* EOF on its stdin ends it; give it 0.2 s */
    kill(-w->pid, SIGKILL); /* its process group: what it spawned goes too */
    if (!w->reaped)
        waitpid(w->pid, NULL, 0);
    w->pid = 0;
}

/* Why the worker went away, for the error message; it is stopped. */
static void death_message(struct tkp_peer_worker *w, const char *what, struct tkp_error *err)
{
    char how[64] = "it closed its output";
    for (int i = 0; i < 100 && !worker_gone(w); i++)
        usleep(10000); /* a closed pipe comes just before the exit */
    if (w->reaped && WIFSIGNALED(w->status))
        snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(w->status));
    else if (w->reaped && WIFEXITED(w->status))
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(w->status));
    tkp_error_set(err, "the peer worker %s during `%s` (%s); it is restarted for the next cell",
                  w->reaped ? "died" : "failed", what, how);
    tkp_peer_worker_stop(w);
}

/* The next line of the worker's output into line[], waiting until deadline_us. The wait is cut
 * into slices so that a worker that died while something it spawned keeps the pipe open is
 * noticed at once. */
static int read_line(struct tkp_peer_worker *w, char *line, size_t n, double deadline_us,
                     const char *what, struct tkp_error *err)
{
    for (;;) {
        char *nl = memchr(w->buf, '\n', w->used);
        if (nl) {
            size_t len = (size_t)(nl - w->buf);
            snprintf(line, n, "%.*s", (int)len, w->buf);
            memmove(w->buf, nl + 1, w->used - len - 1);
            w->used -= len + 1;
            return TKP_OK;
        }
        if (w->used == sizeof w->buf)
            w->used = 0; /* an over-long line: drop it rather than stall */
        double left_ms = (deadline_us - tkp_now_us()) / 1e3;
        if (left_ms <= 0) {
            tkp_error_set(err, "the peer did not answer `%s` within the cell's time limit "
                          "(timing.timeout); the worker was killed and is restarted for the next cell",
                          what);
            tkp_peer_worker_stop(w);
            return TKP_EDEVICE;
        }
        struct pollfd pfd = { .fd = w->from, .events = POLLIN };
        int ready = poll(&pfd, 1, left_ms > 500 ? 500 : (int)left_ms + 1);
        if (ready == 0 && worker_gone(w)) {
            death_message(w, what, err);
            return TKP_EDEVICE;
        }
        if (ready <= 0)
            continue; /* EINTR or a slice without output */
        ssize_t got = read(w->from, w->buf + w->used, sizeof w->buf - w->used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            death_message(w, what, err);
            return TKP_EDEVICE;
        }
        w->used += (size_t)got;
    }
}

static void parse_reply(struct tkp_peer_reply *r)
{
    r->n = 0;
    r->status = r->line;
    char *save = NULL, *word = strtok_r(r->line, "\t", &save);
    r->status = word ? word : r->line;
    while ((word = strtok_r(NULL, "\t", &save)) && r->n < 32) {
        char *eq = strchr(word, '=');
        if (!eq)
            continue;
        *eq = 0;
        r->keys[r->n] = word;
        r->values[r->n++] = eq + 1;
    }
}

const char *tkp_peer_field(const struct tkp_peer_reply *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->keys[i], key) == 0)
            return r->values[i];
    return NULL;
}

int tkp_peer_request(struct tkp_peer_worker *w, const char *request, double deadline_us,
                     void (*on_peer)(const struct tkp_peer_reply *, void *), void *ctx,
                     struct tkp_peer_reply *reply, struct tkp_error *err)
{
    if (!w->pid) {
        int rc = worker_start(w, err);
        if (rc)
            return rc;
    }
    char what[64];
    snprintf(what, sizeof what, "%.*s", (int)strcspn(request, "\t"), request);
    size_t len = strlen(request);
    if (write(w->to, request, len) != (ssize_t)len || write(w->to, "\n", 1) != 1) {
        death_message(w, what, err);
        return TKP_EDEVICE;
    }
    for (;;) {
        int rc = read_line(w, reply->line, sizeof reply->line, deadline_us, what, err);
        if (rc)
            return rc;
        parse_reply(reply);
        if (strcmp(reply->status, "peer") != 0)
            return TKP_OK;
        if (on_peer)
            on_peer(reply, ctx);
    }
}
