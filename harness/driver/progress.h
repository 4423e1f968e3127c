/* harness/driver/progress.h — progress of a batch of runs on stdout: on a terminal a one-line
 * bar (runs finished / total, what is running, ETA) redrawn in place with \r, with
 * messages printed above it; elsewhere plain lines only. */
#ifndef PB_PROGRESS_H
#define PB_PROGRESS_H

#include <stdbool.h>

struct pb_progress {
    const char *what;          /* "sweep", "compare" */
    bool tty;                  /* stdout is a terminal */
    bool quiet;                /* only what went wrong: no bar, no lines of runs starting,
                                  of their epochs or of runs done (--quiet) */
    int runs, runs_finished;
    long epochs, epochs_finished;   /* over all runs: the basis of the ETA */
    double t0;                 /* monotonic seconds at init */
    double t_last;             /* when epochs_finished last grew (pb_progress_epochs) */
    bool drawn;                /* a bar is on the screen */
};

void pb_progress_init(struct pb_progress *p, const char *what, int runs, long epochs);
/* Prints one line (above the bar on a terminal). */
void pb_progress_line(struct pb_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Counts n more epochs finished (an epoch ended, or a run ended early). */
void pb_progress_epochs(struct pb_progress *p, long n);
/* Redraws the bar on a terminal, `running` describing the current runs; no-op else. */
void pb_progress_draw(struct pb_progress *p, const char *running);
/* Clears the bar. */
void pb_progress_finish(struct pb_progress *p);

#endif
