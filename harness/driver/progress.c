/* harness/driver/progress.c — the progress display of a batch of runs (progress.h). The ETA
 * extrapolates the time per finished epoch, over all runs, to the epochs left. */
#include "harness/driver/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/clock.h"

#define BAR_WIDTH 20

void pb_progress_init(struct pb_progress *p, const char *what, int runs, long epochs)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->tty = isatty(STDOUT_FILENO);
    p->runs = runs;
    p->epochs = epochs;
    p->t0 = pb_now_s();
}

void pb_progress_epochs(struct pb_progress *p, long n)
{
    p->epochs_finished += n;
    p->t_last = pb_now_s();
}

static void clear(struct pb_progress *p)
{
    if (p->drawn)
        fputs("\r\033[K", stdout);
    p->drawn = false;
}

void pb_progress_line(struct pb_progress *p, const char *fmt, ...)
{
    clear(p);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static int columns(void)
{
    struct winsize w;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40)
        return w.ws_col;
    return 80;
}

/* The time per epoch so far (all runs together, so parallel runs count) times the
 * epochs left, less the time since the last epoch ended: it counts down between epochs. */
static void format_eta(const struct pb_progress *p, char *buf, size_t cap)
{
    if (p->epochs_finished <= 0) {
        snprintf(buf, cap, "ETA --");
        return;
    }
    double per_epoch = (p->t_last - p->t0) / (double)p->epochs_finished;
    double since = pb_now_s() - p->t_last;
    long left = (long)(per_epoch * (double)(p->epochs - p->epochs_finished) - since + 0.5);
    if (left < 0)
        left = 0;
    if (left >= 3600)
        snprintf(buf, cap, "ETA %ldh%02ldm", left / 3600, left / 60 % 60);
    else
        snprintf(buf, cap, "ETA %ldm%02lds", left / 60, left % 60);
}

void pb_progress_draw(struct pb_progress *p, const char *running)
{
    if (!p->tty || p->quiet)
        return;
    char bar[BAR_WIDTH + 1], eta[32], line[1024];
    int fill = p->runs ? (int)((long)BAR_WIDTH * p->runs_finished / p->runs) : BAR_WIDTH;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[BAR_WIDTH] = 0;
    format_eta(p, eta, sizeof eta);
    snprintf(line, sizeof line, "%s [%s] %d/%d runs  %s  %s", p->what, bar, p->runs_finished,
             p->runs, eta, running);
    int cols = columns() - 1;
    if ((int)strlen(line) > cols)
        line[cols] = 0;
    clear(p);
    fputs(line, stdout);
    fflush(stdout);
    p->drawn = true;
}

void pb_progress_finish(struct pb_progress *p)
{
    clear(p);
    fflush(stdout);
}
