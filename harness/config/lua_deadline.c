/* lua_deadline.c — the wall-clock limit of a config (TKP_LUA_SECONDS; docs/CONFIGS.md, "Configs":
 * a hostile config fails with an error naming it, never a hang).
 *
 * Why a forked child: the instruction budget (config_sandbox.c's count hook) runs only between Lua
 * instructions, so a C function that takes forever is never stopped by it — string.find,
 * match, gmatch and gsub backtrack over a pattern with several `-`, `*` or `+` items in
 * polynomial time of a large degree (`s:find(".-.-.-.-.-b")` on a 200000-character s). A C
 * function cannot be stopped safely in-process: no hook fires inside it, and a longjmp out of
 * a signal handler would leave Lua's state torn. Refusing patterns whose subject length to the
 * power of their quantifiers passes a budget would cover those four functions only, and refuse
 * patterns that anchors make cheap; a wall-clock limit covers every C function. The sandbox has
 * no I/O and the child runs a copy of the very state the parent then runs (same string-hash
 * and math.random seeds, same heap), so the child's run is the parent's: when the child
 * finishes, the in-process run finishes too, in about the same time. The cost: every config is
 * evaluated twice. A child that crashes (a Lua panic) is reported, and the parent never runs
 * the config itself. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "limits_config.h"
#include "lua_deadline.h"
#include "read_guard.h"

/* Seconds past TKP_LUA_SECONDS after which the parent kills a child whose alarm did not end it. */
#define GRACE_SECONDS 5

/* The child's state and the pipe its SIGALRM handler reports through. */
static lua_State *child_state;
static int child_report = -1;

/* In the child, at the deadline: write "T" (the deadline passed), then the line of the Lua
 * function running (or the one that called the C function running), then exit. "T" goes
 * first so that a handler that fails while reading the stack still reports the deadline. */
static void on_deadline(int sig)
{
    (void)sig;
    char msg[24] = "T";
    ssize_t ignored = write(child_report, msg, 1);
    lua_Debug ar;
    for (int level = 0; level < 8 && lua_getstack(child_state, level, &ar); level++) {
        if (!lua_getinfo(child_state, "l", &ar) || ar.currentline <= 0)
            continue;
        int n = 0;
        for (int v = ar.currentline; v > 0 && n < 20; v /= 10)
            msg[n++] = (char)('0' + v % 10);
        for (int i = 0; i < n / 2; i++) { /* the digits were written last first */
            char c = msg[i];
            msg[i] = msg[n - 1 - i];
            msg[n - 1 - i] = c;
        }
        ignored = write(child_report, msg, (size_t)n);
        break;
    }
    (void)ignored;
    _exit(3);
}

static void run_child(lua_State *L, int report)
{
    child_state = L;
    child_report = report;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_deadline;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    sigprocmask(SIG_UNBLOCK, &alrm, NULL);
    alarm(TKP_LUA_SECONDS);
    lua_pcall(L, 0, 0, 0);
    _exit(0); /* not exit: the parent's atexit handlers and stdio buffers are not the child's */
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Read the child's report until it closes the pipe (it exited) or the grace deadline passes;
 * returns 1 when the parent had to kill it. */
static int read_report(pid_t pid, int fd, char *msg, size_t n)
{
    size_t got = 0;
    const double deadline = now_seconds() + TKP_LUA_SECONDS + GRACE_SECONDS;
    int killed = 0;
    for (;;) {
        double left = deadline - now_seconds();
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r <= 0)
            continue; /* EINTR, or the time is up: checked above */
        ssize_t k = read(fd, msg + got, n - 1 - got);
        if (k > 0)
            got += (size_t)k;
        else if (k == 0 || errno != EINTR)
            break; /* the pipe closed: the child exited (or the report is full) */
    }
    msg[got] = 0;
    return killed;
}

int tkp_lua_finishes_in_time(lua_State *L, const char *path, struct tkp_error *err)
{
    if (tkp_guards_in_process())
        return 0;
    int fds[2];
    if (pipe(fds) != 0) {
        tkp_error_set(err, "%s: cannot start the process that bounds the config's time: %s",
                      path, strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        tkp_error_set(err, "%s: cannot start the process that bounds the config's time: %s",
                      path, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        run_child(L, fds[1]);
    }
    close(fds[1]);
    char msg[32];
    int killed = read_report(pid, fds[0], msg, sizeof msg);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (killed || msg[0] == 'T') {
        char line[40] = "";
        if (msg[0] == 'T' && msg[1])
            snprintf(line, sizeof line, ":%s", msg + 1);
        tkp_error_set(err, "%s%s: the config did not finish within %d s (a string pattern that "
                      "backtracks? find, match, gmatch and gsub run in C, outside the instruction "
                      "budget)", path, line, TKP_LUA_SECONDS);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        tkp_error_set(err, "%s: the config crashed the Lua interpreter (%s)", path,
                      strsignal(WTERMSIG(status)));
    else
        tkp_error_set(err, "%s: the config crashed the Lua interpreter (exit status %d)", path,
                      WEXITSTATUS(status));
    return -1;
}
