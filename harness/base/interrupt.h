/* harness/base/interrupt.h — SIGINT and SIGTERM during a run: the handler only sets a
 * flag; executors check it between ops and stop, and the driver records the run as
 * 'interrupted' with its finished epochs intact (each epoch is one transaction). */
#ifndef PB_INTERRUPT_H
#define PB_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

/* Installs the handlers (saving the previous ones) and clears the flag. */
void pb_interrupt_install(void);
/* Restores the previous handlers. */
void pb_interrupt_restore(void);
/* Whether a stop was requested since pb_interrupt_install. */
bool pb_interrupted(void);

#endif
