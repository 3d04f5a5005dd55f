/* interrupt.c — see interrupt.h. The handler only calls async-signal-safe functions (kill,
 * waitpid, nanosleep, unlink, sigaction, raise, _exit) and lock-free atomics on data written
 * before it is armed. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interrupt.h"
#include "limits_files.h"

#define MAX_CHILDREN 512

static char temp[PATH_MAX + 64];
static volatile sig_atomic_t have_temp;
static volatile pid_t children[MAX_CHILDREN];
static pid_t main_pid;
static void (*volatile calls[4])(void);
/* HOLD_OFF: a signal acts at once; HOLD_ON: a write is in progress; -sig: sig came during it and
 * waits for tkp_interrupt_release. One atomic word, whichever thread the signal lands on. */
enum { HOLD_OFF = 0, HOLD_ON = 1 };
static atomic_int hold_state = HOLD_OFF;
static int hold_depth; /* the main thread's nesting of hold and release */
static atomic_int cleaning; /* 1 once a signal's cleaning began: the process is ending */

/* End the children: SIGTERM (and SIGCONT, for a stopped one), then up to
 * TKP_CHILD_GRACE_SECONDS for them to end, then SIGKILL; every one is reaped, so that its
 * locks are released before this process ends. */
static void end_children(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGTERM);
            kill(children[i], SIGCONT);
        }
    const struct timespec tick = { 0, 10 * 1000 * 1000 };
    for (int t = 0, left = 1; left && t < TKP_CHILD_GRACE_SECONDS * 100; t++) {
        left = 0;
        for (int i = 0; i < MAX_CHILDREN; i++)
            if (children[i] > 0 && waitpid(children[i], NULL, WNOHANG) == 0)
                left = 1;
            else
                children[i] = 0;
        if (left)
            nanosleep(&tick, NULL);
    }
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            while (waitpid(children[i], NULL, 0) < 0 && errno == EINTR)
                ;
        }
}

/* A signal during a held write waits for its release; otherwise the cleaning runs once and
 * ends the process by the signal. A repeat meanwhile (`timeout` signals the command and then
 * its whole process group: two at once) changes nothing: the cleaning is bounded. */
static void on_signal(int sig)
{
    const int saved = errno;
    int held = HOLD_ON;
    if (atomic_compare_exchange_strong(&hold_state, &held, -sig) || held < 0 ||
        atomic_exchange(&cleaning, 1)) {
        errno = saved;
        return;
    }
    for (int i = 0; i < 4; i++)
        if (calls[i])
            calls[i]();
    end_children();
    if (have_temp)
        unlink(temp);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* the default action now, which ends this process */
    _exit(128 + sig); /* where it does not (a PID 1 ignores it) */
}

/* Arm the handler (once). SA_NODEFER: a repeat reaches on_signal, which ignores it. */
static void arm(void)
{
    static int armed;
    if (armed)
        return;
    armed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_NODEFER;
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

void tkp_interrupt_hold(void)
{
    arm();
    if (hold_depth++ == 0) {
        atomic_store(&hold_state, HOLD_ON);
        /* a handler that found the state off before that store is ending the process on
         * another thread: no write begins (seq_cst: it saw HOLD_ON, or this sees it) */
        while (atomic_load(&cleaning))
            pause();
    }
}

void tkp_interrupt_release(void)
{
    if (hold_depth == 0 || --hold_depth > 0)
        return;
    const int was = atomic_exchange(&hold_state, HOLD_OFF);
    if (was < 0)
        on_signal(-was); /* ends the process */
}

void tkp_interrupt_main(void)
{
    main_pid = getpid();
}

void tkp_pause_point(const char *point)
{
    static atomic_int fired; /* once a process: a run continued after SIGSTOP goes on */
    const char *at = getenv("TKP_PAUSE_AT"), *sig = getenv("TKP_PAUSE_SIGNAL");
    if (!at || strcmp(at, point) != 0 || atomic_exchange(&fired, 1))
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
