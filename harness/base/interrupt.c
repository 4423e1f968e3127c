/* harness/base/interrupt.c — the stop flag set by SIGINT, SIGTERM and SIGHUP (interrupt.h). */
#include "harness/base/interrupt.h"

#include <string.h>

static volatile sig_atomic_t flag;
static struct sigaction old_int, old_term, old_hup;

static void on_signal(int sig)
{
    (void)sig;
    flag = 1;
}

void pb_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    flag = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);   /* a closed terminal stops the run the same way */
}

void pb_interrupt_restore(void)
{
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
}

bool pb_interrupted(void)
{
    return flag != 0;
}
