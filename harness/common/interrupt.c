/* interrupt.c — see interrupt.h. The handler only calls async-signal-safe functions (kill,
 * waitpid, unlink, raise) on data written before it is armed. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interrupt.h"

#define MAX_CHILDREN 512

static char temp[PATH_MAX + 64];
static volatile sig_atomic_t have_temp;
static volatile pid_t children[MAX_CHILDREN];
static pid_t main_pid;
static void (*volatile calls[4])(void);

static void on_signal(int sig)
{
    const int saved = errno;
    for (int i = 0; i < 4; i++)
        if (calls[i])
            calls[i]();
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0)
            kill(children[i], SIGTERM);
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0)
            while (waitpid(children[i], NULL, 0) < 0 && errno == EINTR)
                ;
    if (have_temp)
        unlink(temp);
    errno = saved;
    raise(sig); /* SA_RESETHAND: the default action now, which ends this process */
}

/* Arm the handler (once): reset to the default on entry, so a second signal ends at once. */
static void arm(void)
{
    static int armed;
    if (armed)
        return;
    armed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup, a shell's `&`) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

void tkp_interrupt_remove(const char *path)
{
    have_temp = 0;
    if (!path || strlen(path) >= sizeof temp)
        return;
    memcpy(temp, path, strlen(path) + 1);
    arm();
    have_temp = 1;
}

void tkp_interrupt_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] <= 0) {
            children[i] = pid;
            arm();
            return;
        }
}

void tkp_interrupt_forget(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

void tkp_interrupt_call(void (*fn)(void))
{
    for (int i = 0; fn && i < 4; i++)
        if (!calls[i] || calls[i] == fn) {
            calls[i] = fn;
            arm();
            return;
        }
}

void tkp_interrupt_main(void)
{
    main_pid = getpid();
}

void tkp_pause_point(const char *point)
{
    const char *at = getenv("TKP_PAUSE_AT"), *sig = getenv("TKP_PAUSE_SIGNAL");
    if (!at || strcmp(at, point) != 0)
        return;
    const int s = sig && *sig ? atoi(sig) : SIGTERM;
    fprintf(stderr, "topkp: pause point %s: signal %d\n", point, s);
    const char *to_self = getenv("TKP_PAUSE_SELF");
    const pid_t self = getpid();
    const pid_t top = to_self && *to_self ? self : main_pid > 0 ? main_pid : self;
    kill(top, s);
    if (top != self)
        for (;;)
            pause(); /* a child: its parent ends it */
}
