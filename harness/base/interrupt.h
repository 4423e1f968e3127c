/* harness/base/interrupt.h — SIGINT, SIGTERM, SIGHUP and SIGUSR2 (the stop request a batch
 * passes to mpirun, which forwards it to every rank) during a run (semantics §1.10). The
 * handler only counts the signals: the first asks the run to stop at the next epoch
 * boundary (the epoch in progress finishes and is recorded, the resume state is
 * written), a second asks it to stop now (executors check between ops; the epoch in
 * progress is lost). A signal that was ignored when the handlers were installed (nohup,
 * a background job of a script, a sweep's run) stays ignored. */
#ifndef PB_INTERRUPT_H
#define PB_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

/* Keeps the four signals off the calling thread and every thread it starts from now on
 * (they are blocked there) and starts a catcher thread that alone receives them, with
 * whatever disposition they have: the default action until pb_interrupt_install, the
 * counting handler after it. A run does this first, before any compute thread (an
 * OpenMP team, MPI's, a stage's) exists, so that every one inherits the block:
 * oneDNN's JIT GEMM points rsp into the heap while it runs (oneDNN issue #4845), so a
 * signal frame pushed on a compute thread corrupts the heap. Signals are then taken
 * asynchronously: one sent to the process (kill, a terminal's Ctrl-C) is counted by the
 * catcher soon after; one sent to a thread that blocks it (raise) waits there. */
void pb_interrupt_route(void);
/* Stops the catcher and restores the calling thread's signal mask. */
void pb_interrupt_unroute(void);
/* Installs the handlers (saving the previous ones) and clears the count. notice, when
 * not NULL, is written to stderr by the first signal (the second writes that the run
 * stops now). */
void pb_interrupt_install(const char *notice);
/* Counts the handled signals still pending (sent before this call, not yet taken by the
 * catcher, or raised on the calling thread), then restores the previous handlers: a
 * signal sent during the run never meets the default action after it. */
void pb_interrupt_restore(void);
/* Whether a stop was requested since pb_interrupt_install (at least one signal). */
bool pb_interrupted(void);
/* Whether a stop now was requested (at least two signals). */
bool pb_interrupted_now(void);
/* The signals received since pb_interrupt_install. */
int pb_interrupt_count(void);

#endif
