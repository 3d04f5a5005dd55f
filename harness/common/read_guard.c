/* read_guard.c — see read_guard.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interrupt.h"
#include "limits_files.h"
#include "read_guard.h"

#define AT_BYTES 4096 /* the page a guarded child names the file it reads in */

/* In a guarded child: the parent's page for the file being read (tkp_read_guard_at). */
static char *at_page;

void tkp_read_open_failed(const char *path, struct tkp_error *err)
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

/* The CPU seconds a child may spend reading `path`: TKP_READ_CPU_SECONDS plus one second for
 * every TKP_READ_CPU_BYTES_PER_S of the file. libhdf5 looping on a corrupt file spins the
 * CPU, so it is stopped within seconds; a reader blocked on a slow consumer of its output
 * (`topkp export F | less`) spends none, and only the wall-clock alarm bounds it. */
static long cpu_seconds_for(const struct tkp_guard *g)
{
    long long bytes = 0;
    struct stat st;
    for (int i = 0; i < g->n; i++)
        bytes += stat(g->paths[i], &st) == 0 ? (long long)st.st_size : 0;
    const int factor = g->cpu_factor > 0 ? g->cpu_factor : 1;
    return TKP_READ_CPU_SECONDS + (long)(factor * bytes / TKP_READ_CPU_BYTES_PER_S);
}

/* The child: run fn under an alarm and a CPU-time limit; its error message goes to the pipe.
 * Never returns. */
static void run_child(const struct tkp_guard *g, const void *arg, FILE *out,
                      struct tkp_error *err, int fd)
{
    const char *path = g->paths[0];
    signal(SIGALRM, SIG_DFL);
    /* an interrupt ends the child at once; its parent cleans up (interrupt.h) */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    /* a crash inside libhdf5 on a corrupt file ends this child by its signal, which the
     * parent reports; a sanitizer's handler would turn it into a plain exit status */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGXCPU, SIG_DFL);
    const long cpu = cpu_seconds_for(g);
    const struct rlimit limit = { (rlim_t)cpu, (rlim_t)cpu + 5 };
    setrlimit(RLIMIT_CPU, &limit);
    alarm(TKP_READ_SECONDS);
    int rc = g->fn(path, arg, out, err);
    if (fflush(out) != 0 && !rc) {
        tkp_error_set(err, "%s: cannot write what was read: %s", path, strerror(errno));
        rc = TKP_EINVAL;
    }
    if (rc && write(fd, err->msg, strlen(err->msg)) < 0)
        rc = TKP_EINVAL;
    _exit(rc ? 1 : 0);
}

/* The child's message from the pipe (up to n - 1 bytes). */
static void read_message(int fd, char *msg, size_t n)
{
    size_t got = 0;
    for (ssize_t r; got < n - 1 && (r = read(fd, msg + got, n - 1 - got)) != 0;)
        if (r > 0)
            got += (size_t)r;
        else if (errno != EINTR)
            break;
    msg[got] = 0;
}

int tkp_guards_in_process(void)
{
    const char *v = getenv("TKP_GUARDS_IN_PROCESS");
    return v && *v;
}

void tkp_read_guard_at(const char *path)
{
    if (!at_page)
        return;
    snprintf(at_page, AT_BYTES, "%s", path);
    const char *at = getenv("TKP_PAUSE_AT"); /* the pause point "reading:PATH" (interrupt.h) */
    if (at && strncmp(at, "reading:", 8) == 0 && strcmp(at + 8, path) == 0)
        tkp_pause_point(at);
}

/* The guarded child's end (status) as this function's return and err; `path` names the file. */
static int child_status(const struct tkp_guard *g, const char *path, int status, const char *msg,
                        struct tkp_error *err, int *crashed)
{
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    *crashed = !sig || sig == SIGPIPE ? 0 : sig == SIGALRM || sig == SIGXCPU ? 2 : 1;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) { /* `topkp export F | head` */
        tkp_error_set(err, "%s: the output was closed before all of it was written", path);
        return TKP_EINVAL;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        tkp_error_set(err, "%s: reading it did not finish within %d s (a corrupt file?)",
                      path, TKP_READ_SECONDS);
        return TKP_EINVAL;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
        tkp_error_set(err, "%s: reading it spent more than %ld s of CPU time (a corrupt file?)",
                      path, cpu_seconds_for(g));
        return TKP_EINVAL;
    }
    if (WIFSIGNALED(status)) {
        tkp_error_set(err, "%s: a corrupt file (HDF5 crashed reading it: %s)", path,
                      strsignal(WTERMSIG(status)));
        return TKP_EINVAL;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return TKP_OK;
    if (msg[0])
        tkp_error_set(err, "%s", msg);
    else
        tkp_error_set(err, "%s: reading it failed (the reading process exited with status %d)",
                      path, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return TKP_EINVAL;
}

int tkp_run_guarded(const struct tkp_guard *g, const void *arg, FILE *out,
                    struct tkp_error *err, int *crashed)
{
    *crashed = 0;
    int fds[2];
    fflush(out);
    if (tkp_guards_in_process() || pipe(fds) != 0)
        return g->fn(g->paths[0], arg, out, err);
    char *page = mmap(NULL, AT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        page = NULL;
    else
        page[0] = 0;
    char *const outer = at_page;
    at_page = page;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run_child(g, arg, out, err, fds[1]);
    }
    at_page = outer;
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        if (page)
            munmap(page, AT_BYTES);
        return g->fn(g->paths[0], arg, out, err);
    }
    tkp_interrupt_child(pid);
    char msg[sizeof err->msg], path[AT_BYTES];
    read_message(fds[0], msg, sizeof msg);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    tkp_interrupt_forget(pid);
    snprintf(path, sizeof path, "%s", page && page[0] ? page : g->paths[0]);
    if (page)
        munmap(page, AT_BYTES);
    return child_status(g, path, status, msg, err, crashed);
}

int tkp_read_guarded(tkp_read_fn fn, const char *path, const void *arg, FILE *out,
                     struct tkp_error *err, int *crashed)
{
    const struct tkp_guard g = { fn, &path, 1, 1 };
    return tkp_run_guarded(&g, arg, out, err, crashed);
}
