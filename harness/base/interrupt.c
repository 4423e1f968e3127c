/* harness/base/interrupt.c — the signal count set by SIGINT, SIGTERM, SIGHUP and SIGUSR2
 * (interrupt.h), and the catcher thread that alone receives them during a run. The
 * handler is async-signal-safe: it counts and write(2)s a fixed text. */
#include "harness/base/interrupt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/err.h"

/* SIGHUP: a closed terminal; SIGUSR2: the stop request mpirun passes on to every rank
 * (a SIGTERM to mpirun ends the job, its ranks killed a second later) */
static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR2};
#define NSIG_HANDLED (int)(sizeof signals / sizeof signals[0])

static atomic_int count;   /* lock-free: read by the run's thread, set in the catcher */
static const char *volatile notice;
static struct sigaction old[NSIG_HANDLED];
static bool installed[NSIG_HANDLED];
static pthread_t catcher;
static sigset_t caller_mask;   /* the routing thread's mask before pb_interrupt_route */

static void say(const char *text)
{
    size_t left = strlen(text);
    while (left) {
        ssize_t w = write(STDERR_FILENO, text, left);
        if (w <= 0)
            return;
        text += w;
        left -= (size_t)w;
    }
}

static void on_signal(int sig)
{
    (void)sig;
    int n = atomic_load(&count);
    if (n < 1000)
        atomic_store(&count, ++n);
    if (notice && n == 1)
        say(notice);
    else if (notice && n == 2)
        say("pipebench: a second signal: stopping now (the epoch in progress is lost; the "
            "last resume state stays)\n");
}

static void handled_set(sigset_t *set)
{
    sigemptyset(set);
    for (int i = 0; i < NSIG_HANDLED; i++)
        sigaddset(set, signals[i]);
}

/* The catcher: the signals open, nothing else to do; the handler (or the default
 * action, before pb_interrupt_install) runs here. pause() is a cancellation point. */
static void *catcher_main(void *arg)
{
    (void)arg;
    sigset_t set;
    handled_set(&set);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    for (;;)
        pause();
    return NULL;
}

void pb_interrupt_route(void)
{
    sigset_t set;
    handled_set(&set);
    PB_CHECK(pthread_sigmask(SIG_BLOCK, &set, &caller_mask) == 0);
    PB_CHECK(pthread_create(&catcher, NULL, catcher_main, NULL) == 0);
}

void pb_interrupt_unroute(void)
{
    pthread_cancel(catcher);
    pthread_join(catcher, NULL);
    pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
}

void pb_interrupt_install(const char *text)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* a system call that the signal interrupts on the thread taking it (the catcher's
     * pause() aside, which always returns) resumes, whoever made it: a sweep's parent,
     * which does not route, takes them on its own thread */
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIG_HANDLED; i++)
        sigaddset(&sa.sa_mask, signals[i]);
    atomic_store(&count, 0);
    notice = text;
    for (int i = 0; i < NSIG_HANDLED; i++) {
        struct sigaction cur;
        sigaction(signals[i], NULL, &cur);
        installed[i] = cur.sa_handler != SIG_IGN;
        if (installed[i])
            sigaction(signals[i], &sa, &old[i]);
    }
}

/* Takes the handled signals sent to the process that no thread has taken yet (the
 * catcher not yet scheduled): counted now, they cannot reach the restored disposition,
 * whose default action for all four ends the process. Only signals this thread blocks
 * can be pending for it. */
static void drain_pending(void)
{
    sigset_t mask, pending;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    const struct timespec now = {0, 0};
    for (;;) {
        sigemptyset(&pending);
        sigpending(&pending);
        sigset_t take;
        sigemptyset(&take);
        for (int i = 0; i < NSIG_HANDLED; i++)
            if (installed[i] && sigismember(&mask, signals[i]) &&
                sigismember(&pending, signals[i]))
                sigaddset(&take, signals[i]);
        if (sigisemptyset(&take))
            return;
        int sig = sigtimedwait(&take, NULL, &now);
        if (sig <= 0)
            return;
        on_signal(sig);
    }
}

void pb_interrupt_restore(void)
{
    drain_pending();
    for (int i = 0; i < NSIG_HANDLED; i++)
        if (installed[i])
            sigaction(signals[i], &old[i], NULL);
    notice = NULL;
}

bool pb_interrupted(void)
{
    return atomic_load(&count) >= 1;
}

bool pb_interrupted_now(void)
{
    return atomic_load(&count) >= 2;
}

int pb_interrupt_count(void)
{
    return atomic_load(&count);
}
