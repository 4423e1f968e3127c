/* harness/base/interrupt.h — SIGINT, SIGTERM and SIGHUP during a run (semantics §1.10). The
 * handler only counts the signals: the first asks the run to stop at the next epoch
 * boundary (the epoch in progress finishes and is recorded, the resume state is
 * written), a second asks it to stop now (executors check between ops; the epoch in
 * progress is lost). A signal that was ignored when the handlers were installed (nohup,
 * a background job of a script, a sweep's run) stays ignored. */
#ifndef PB_INTERRUPT_H
#define PB_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

/* Installs the handlers (saving the previous ones) and clears the count. notice, when
 * not NULL, is written to stderr by the first signal (the second writes that the run
 * stops now). */
void pb_interrupt_install(const char *notice);
/* Restores the previous handlers. */
void pb_interrupt_restore(void);
/* Whether a stop was requested since pb_interrupt_install (at least one signal). */
bool pb_interrupted(void);
/* Whether a stop now was requested (at least two signals). */
bool pb_interrupted_now(void);
/* The signals received since pb_interrupt_install. */
int pb_interrupt_count(void);

#endif
