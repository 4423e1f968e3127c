/* harness/base/interrupt.c — the signal count set by SIGINT, SIGTERM and SIGHUP
 * (interrupt.h). The handler is async-signal-safe: it counts and write(2)s a fixed text. */
#include "harness/base/interrupt.h"

#include <string.h>
#include <unistd.h>

static const int signals[] = {SIGINT, SIGTERM, SIGHUP};   /* SIGHUP: a closed terminal */
#define NSIG_HANDLED (int)(sizeof signals / sizeof signals[0])

static volatile sig_atomic_t count;
static const char *volatile notice;
static struct sigaction old[NSIG_HANDLED];
static bool installed[NSIG_HANDLED];

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
    if (count < 1000)
        count++;
    if (notice && count == 1)
        say(notice);
    else if (notice && count == 2)
        say("pipebench: a second signal: stopping now (the epoch in progress is lost; the "
            "last resume state stays)\n");
}

void pb_interrupt_install(const char *text)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIG_HANDLED; i++)
        sigaddset(&sa.sa_mask, signals[i]);
    count = 0;
    notice = text;
    for (int i = 0; i < NSIG_HANDLED; i++) {
        struct sigaction cur;
        sigaction(signals[i], NULL, &cur);
        installed[i] = cur.sa_handler != SIG_IGN;
        if (installed[i])
            sigaction(signals[i], &sa, &old[i]);
    }
}

void pb_interrupt_restore(void)
{
    for (int i = 0; i < NSIG_HANDLED; i++)
        if (installed[i])
            sigaction(signals[i], &old[i], NULL);
    notice = NULL;
}

bool pb_interrupted(void)
{
    return count >= 1;
}

bool pb_interrupted_now(void)
{
    return count >= 2;
}

int pb_interrupt_count(void)
{
    return count;
}
