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
#include <sys/wait.h>
#include <unistd.h>

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
        const char *dir = dirname(exe); /* build/topkp, build/cpu/topkp or build/gpu/topkp */
        const char *ups[] = { "", "/..", "/../.." };
        for (int i = 0; i < 3; i++) {
            snprintf(path, n, "%s%s/peers/worker.py", dir, ups[i]);
            if (access(path, R_OK) == 0)
                return TKP_OK;
        }
    }
    tkp_error_set(err, "cannot find peers/worker.py beside the topkp binary; set TOPKP_PEERS_DIR");
    return TKP_EINVAL;
}

static int worker_start(struct tkp_peer_worker *w, struct tkp_error *err)
{
    char script[PATH_MAX];
    int rc = tkp_peer_script(script, sizeof script, err);
    if (rc)
        return rc;
    int in[2], out[2], alive[2];
    if (pipe(in) || pipe(out) || pipe2(alive, O_CLOEXEC)) {
        tkp_error_set(err, "cannot create pipes for the peer worker: %s", strerror(errno));
        return TKP_EDEVICE;
    }
    signal(SIGPIPE, SIG_IGN); /* a dead worker is an error reply, not the harness's death */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        close(alive[0]);
        char words[512], *argv[16];
        int n = 0;
        snprintf(words, sizeof words, "%s", tkp_peer_python());
        for (char *save, *w = strtok_r(words, " ", &save); w && n < 13; w = strtok_r(NULL, " ", &save))
            argv[n++] = w;
        argv[n++] = "-u";
        argv[n++] = script;
        argv[n] = NULL;
        execvp(argv[0], argv);
        int e = errno;
        if (write(alive[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(alive[1]);
    int child_errno = 0;
    ssize_t got = pid > 0 ? read(alive[0], &child_errno, sizeof child_errno) : 0;
    close(alive[0]);
    if (pid < 0 || got > 0) {
        tkp_error_set(err, "cannot start the peer worker `%s %s`: %s", tkp_peer_python(), script,
                      strerror(pid < 0 ? errno : child_errno));
        close(in[1]);
        close(out[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return TKP_EDEVICE;
    }
    w->pid = pid;
    w->to = in[1];
    w->from = out[0];
    w->used = 0;
    return TKP_OK;
}

void tkp_peer_worker_stop(struct tkp_peer_worker *w)
{
    if (!w->pid)
        return;
    close(w->to);
    close(w->from);
    for (int i = 0; i < 20 && waitpid(w->pid, NULL, WNOHANG) == 0; i++)
        usleep(10000); /* EOF on its stdin ends it; give it 0.2 s */
    if (kill(w->pid, SIGKILL) == 0)
        waitpid(w->pid, NULL, 0);
    w->pid = 0;
}

/* Why the worker went away, for the error message. */
static void death_message(struct tkp_peer_worker *w, const char *what, struct tkp_error *err)
{
    int status = 0;
    char how[64] = "it closed its output";
    pid_t gone = 0;
    for (int i = 0; i < 100 && gone == 0; i++) { /* a closed pipe comes just before the exit */
        gone = waitpid(w->pid, &status, WNOHANG);
        if (gone == 0)
            usleep(10000);
    }
    if (gone == w->pid) {
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
        else if (WIFEXITED(status))
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
        w->pid = 0; /* reaped: stop only closes the pipes */
        close(w->to);
        close(w->from);
        tkp_error_set(err, "the peer worker died during `%s` (%s); it is restarted for the next cell",
                      what, how);
        return;
    }
    tkp_error_set(err, "the peer worker failed during `%s` (%s); it is restarted for the next cell",
                  what, how);
    tkp_peer_worker_stop(w);
}

/* The next line of the worker's output into line[], waiting until deadline_us. */
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
        struct pollfd pfd = { .fd = w->from, .events = POLLIN };
        int ready = left_ms > 0 ? poll(&pfd, 1, left_ms > 1e9 ? 1000000000 : (int)left_ms + 1) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            tkp_error_set(err, "the peer did not answer `%s` within the cell's time limit "
                          "(timing.timeout); the worker was killed and is restarted for the next cell",
                          what);
            tkp_peer_worker_stop(w);
            return TKP_EDEVICE;
        }
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
