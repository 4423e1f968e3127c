/* harness/driver/batch.c — runs configurations in forked processes (batch.h). Each child runs
 * pb_run and reports over its own pipe: one message per epoch (the on_epoch hook) and
 * one at the end; the parent polls the pipes, reaps the children and draws progress.
 * Signals: a child ignores SIGINT and SIGHUP (a Ctrl-C or a closed terminal reaches the
 * whole process group) and the parent passes each signal it gets on to the running
 * children as one SIGTERM, so the first stops them at their epoch boundary and a second
 * stops them now; a child whose parent dies gets SIGTERM too (Linux). */
#include "harness/driver/batch.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/base/err.h"
#include "harness/base/interrupt.h"
#include "harness/driver/batch_mpi.h"
#include "harness/driver/claim.h"
#include "harness/driver/plan.h"
#include "harness/driver/progress.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"

int pb_batch_threads(const struct pb_batch_item *items, int n, int jobs)
{
    int most = 0;
    for (int i = 0; i < n; i++) {
        const struct pb_executor *x = pb_plan_executor(&items[i].cfg);
        int t = x && x->stages_in_turn ? 1 : items[i].cfg.stages;
        most = t > most ? t : most;
    }
    return most * (jobs < n ? jobs : n);
}

int pb_batch_check(const struct pb_run_cfg *c, bool *unsupported, struct pb_err *e)
{
    *unsupported = false;
    if (pb_run_check(c, e) == 0)
        return 0;
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, NULL);
    if (!sch)
        return -1;
    int M = c->microbatches ? c->microbatches : c->stages;
    struct pb_pipe p = {
        .stages = c->stages,
        .length = M,  /* one whole step */
        .microbatches = M,
        .optimizer = c->optim.kind,
        .variant = c->variant,
        .chunks = c->chunks,
    };
    pb_pipe_adopt(&p, sch);
    if (sch->check(&p, NULL) != 0) {
        p.optimizer = PB_OPT_SGD;
        *unsupported = sch->check(&p, NULL) == 0;
    }
    return -1;
}

enum { MSG_EPOCH, MSG_END };

/* What a child tells its parent; small enough for one atomic pipe write. */
struct msg {
    int kind;
    int epoch, epochs;
    double val_acc;
    int exit_status, status, epochs_done;
    int64_t run_id;
    double best_acc, final_acc, seconds;
    char message[1024];
};
_Static_assert(sizeof(struct msg) <= PIPE_BUF, "one atomic write per message");

/* A running child. */
struct slot {
    int item;          /* -1: free */
    pid_t pid;
    int fd;            /* read end of its pipe */
    int epoch;         /* epochs finished */
    size_t have;       /* bytes of buf filled */
    bool ended;        /* its MSG_END arrived */
    char buf[sizeof(struct msg)];
};

static void write_msg(int fd, const struct msg *m)
{
    const char *p = (const char *)m;
    size_t left = sizeof *m;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        left -= (size_t)w;
    }
}

static void child_on_epoch(void *ctx, int epoch, int epochs, double val_acc)
{
    struct msg m = {.kind = MSG_EPOCH, .epoch = epoch, .epochs = epochs, .val_acc = val_acc};
    write_msg(*(int *)ctx, &m);
}

/* The child's signals (the file comment): set before anything else runs in it. A
 * SIGTERM before pb_run installs its handlers, while the run sets up and has no row
 * yet, ends the child (the parent counts it as not started). */
static void child_signals(pid_t parent)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);   /* a parent gone: the messages fail, the run goes on */
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        raise(SIGTERM);
#else
    (void)parent;
#endif
}

static _Noreturn void run_child(struct pb_batch_item *it, int fd)
{
    struct pb_run_cfg c = it->cfg;
    c.quiet = true;
    c.on_epoch = child_on_epoch;
    c.on_epoch_ctx = &fd;
    struct pb_run_summary sum = {0};
    struct pb_err e = {{0}};
    const struct pb_executor *ex = pb_plan_executor(&c);
    int rc = ex && ex->one_rank_per_device ? pb_batch_mpi_run(it, &sum, e.msg, sizeof e.msg)
                                          : pb_run(&c, &sum, &e);
    signal(SIGTERM, SIG_IGN);   /* the run is recorded: its result goes to the parent */
    struct msg m = {
        .kind = MSG_END,
        .exit_status = rc,
        .status = (int)sum.status,
        .epochs_done = sum.epochs_done,
        .run_id = sum.run_id,
        .best_acc = sum.best_acc,
        .final_acc = sum.final_acc,
        .seconds = sum.seconds,
    };
    if (rc != PB_EXIT_OK)
        snprintf(m.message, sizeof m.message, "%s", e.msg);
    write_msg(fd, &m);
    close(fd);
    _exit(rc);
}

struct batch {
    struct pb_batch_item *items;
    int n, jobs, next, nrunning;
    int forwarded;     /* signals passed on to the children */
    sigset_t open;     /* the signal mask with SIGINT, SIGTERM and SIGHUP open: the batch
                        * blocks them but while it waits in ppoll, so none comes between
                        * its check and its wait; its children run with this mask */
    struct slot *slots;
    struct pb_progress prog;
    struct pb_batch_totals *totals;
};

/* Item i is held by another process or finished by one (claims): it is skipped. */
static void skip_claimed(struct batch *b, int i, enum pb_claim st)
{
    struct pb_batch_item *it = &b->items[i];
    it->elsewhere = true;
    b->totals->elsewhere++;
    b->prog.runs_finished++;
    pb_progress_epochs(&b->prog, it->cfg.epochs);
    pb_progress_line(&b->prog, "[%d/%d] %s: skipped: %s", i + 1, b->n, it->label,
                     st == PB_CLAIM_BUSY ? "another process is running it"
                                         : "another process has finished it");
}

/* Starts the next item in slot s; false when it did not take the slot (skipped, or no
 * process could be started). */
static bool start(struct batch *b, struct slot *s)
{
    int i = b->next++;
    struct pb_batch_item *it = &b->items[i];
    int fds[2], claim = -1;
    struct pb_err ce;
    int64_t resume_run = 0;
    int threads = 0;
    if (it->claim) {
        int st = pb_claim_take(&it->cfg, &claim, &resume_run, &threads, &ce);
        if (st == PB_CLAIM_BUSY || st == PB_CLAIM_FINISHED) {
            skip_claimed(b, i, (enum pb_claim)st);
            return false;
        }
        if (st < 0) {
            it->exit_status = PB_EXIT_USAGE;
            snprintf(it->message, sizeof it->message, "%s", ce.msg);
            b->totals->errors++;
            b->prog.runs_finished++;
            pb_progress_epochs(&b->prog, it->cfg.epochs);
            pb_progress_line(&b->prog, "[%d/%d] %s: %s", i + 1, b->n, it->label, it->message);
            return false;
        }
        if (resume_run > 0) {   /* continued from its resume state, as it was run */
            it->cfg.resume_run = resume_run;
            it->cfg.threads = threads;
        }
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = -1, parent = getpid();
    int err = 0;
    if (pipe(fds) == 0) {
        pid = fork();
        err = errno;
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
        }
    } else {
        err = errno;
    }
    if (pid < 0) {
        if (claim >= 0)
            close(claim);
        it->exit_status = PB_EXIT_USAGE;
        snprintf(it->message, sizeof it->message, "cannot start a process: %s; free memory "
                 "or lower --jobs", strerror(err));
        b->totals->errors++;
        b->prog.runs_finished++;
        pb_progress_epochs(&b->prog, it->cfg.epochs);
        pb_progress_line(&b->prog, "[%d/%d] %s: %s", i + 1, b->n, it->label, it->message);
        return false;
    }
    if (pid == 0) {
        /* its own signals first, then unblocked: a SIGTERM passed on to it finds the
         * child's handling, never the parent's */
        child_signals(parent);   /* the claim stays open in the child until it exits */
        sigprocmask(SIG_SETMASK, &b->open, NULL);
        close(fds[0]);
        for (int k = 0; k < b->jobs; k++)
            if (b->slots[k].item >= 0)
                close(b->slots[k].fd);
        run_child(it, fds[1]);
    }
    close(fds[1]);
    if (claim >= 0)
        close(claim);
    *s = (struct slot){.item = i, .pid = pid, .fd = fds[0]};
    it->started = true;
    b->nrunning++;
    if (b->prog.quiet)
        ;
    else if (resume_run > 0)
        pb_progress_line(&b->prog, "[%d/%d] %s: resuming run %lld from its resume state", i + 1,
                         b->n, it->label, (long long)resume_run);
    else if (!b->prog.tty)
        pb_progress_line(&b->prog, "[%d/%d] %s: started", i + 1, b->n, it->label);
    return true;
}

static void on_msg(struct batch *b, struct slot *s, const struct msg *m)
{
    struct pb_batch_item *it = &b->items[s->item];
    if (m->kind == MSG_EPOCH) {
        s->epoch = m->epoch + 1;
        pb_progress_epochs(&b->prog, 1);
        if (!b->prog.tty && !b->prog.quiet)
            pb_progress_line(&b->prog, "[%d/%d] %s: epoch %d/%d, val acc %.2f%%", s->item + 1,
                             b->n, it->label, m->epoch + 1, m->epochs, 100 * m->val_acc);
        return;
    }
    s->ended = true;
    it->exit_status = m->exit_status;
    it->run_id = m->run_id;
    it->status = (enum pb_run_status)m->status;
    it->epochs_done = m->epochs_done;
    it->best_acc = m->best_acc;
    it->final_acc = m->final_acc;
    it->seconds = m->seconds;
    snprintf(it->message, sizeof it->message, "%s", m->message);
}

/* Reads what is there; returns false at end of file. */
static bool drain(struct batch *b, struct slot *s)
{
    for (;;) {
        ssize_t r = read(s->fd, s->buf + s->have, sizeof s->buf - s->have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        s->have += (size_t)r;
        if (s->have == sizeof s->buf) {
            struct msg m;
            memcpy(&m, s->buf, sizeof m);
            s->have = 0;
            on_msg(b, s, &m);
        }
        return true;
    }
}

/* The child closed its pipe: reap it and report the outcome. */
static void finish(struct batch *b, struct slot *s)
{
    struct pb_batch_item *it = &b->items[s->item];
    int st = 0;
    close(s->fd);
    while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!s->ended && b->forwarded > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM) {
        /* stopped by the SIGTERM passed on while it set up: it wrote no run row */
        it->exit_status = PB_EXIT_INTERRUPTED;
        it->status = PB_RUN_INTERRUPTED;
        snprintf(it->message, sizeof it->message, "not started: interrupted while it set up");
    } else if (!s->ended) {
        it->exit_status = -1;
        if (WIFSIGNALED(st))
            snprintf(it->message, sizeof it->message, "the run's process died (%s)",
                     strsignal(WTERMSIG(st)));
        else
            snprintf(it->message, sizeof it->message, "the run's process ended without a "
                     "result (exit status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    pb_progress_epochs(&b->prog, it->cfg.epochs - s->epoch);
    b->prog.runs_finished++;
    struct pb_batch_totals *t = b->totals;
    if (it->exit_status == PB_EXIT_OK) {
        t->done++;
        if (!b->prog.quiet)
            pb_progress_line(&b->prog, "[%d/%d] %s: done, run %lld: best val acc %.2f%%, final "
                             "%.2f%%, %.1f s", s->item + 1, b->n, it->label,
                             (long long)it->run_id, 100 * it->best_acc, 100 * it->final_acc,
                             it->seconds);
    } else if (it->exit_status == PB_EXIT_INTERRUPTED && it->run_id == 0) {
        t->not_started++;
        pb_progress_line(&b->prog, "[%d/%d] %s: %s", s->item + 1, b->n, it->label, it->message);
    } else if (it->exit_status == PB_EXIT_RUN || it->exit_status == PB_EXIT_INTERRUPTED) {
        if (it->status == PB_RUN_DIVERGED)
            t->diverged++;
        else if (it->status == PB_RUN_INTERRUPTED)
            t->interrupted++;
        else
            t->failed++;
        pb_progress_line(&b->prog, "[%d/%d] %s: %s, run %lld: %s", s->item + 1, b->n,
                         it->label, pb_run_status_names[it->status], (long long)it->run_id,
                         it->message);
    } else if (it->exit_status == -1) {
        t->failed++;
        pb_progress_line(&b->prog, "[%d/%d] %s: crashed: %s", s->item + 1, b->n, it->label,
                         it->message);
    } else {
        t->errors++;
        pb_progress_line(&b->prog, "[%d/%d] %s: error: %s", s->item + 1, b->n, it->label,
                         it->message);
    }
    s->item = -1;
    b->nrunning--;
}

static void draw(struct batch *b)
{
    char running[512] = "";
    size_t len = 0;
    for (int k = 0; k < b->jobs && len < sizeof running; k++) {
        const struct slot *s = &b->slots[k];
        if (s->item < 0)
            continue;
        const struct pb_batch_item *it = &b->items[s->item];
        int epoch = s->epoch < it->cfg.epochs ? s->epoch + 1 : it->cfg.epochs;
        if (b->nrunning == 1)
            len += (size_t)snprintf(running + len, sizeof running - len, "[%d] %s: epoch %d/%d",
                                    s->item + 1, it->label, epoch, it->cfg.epochs);
        else
            len += (size_t)snprintf(running + len, sizeof running - len, "%s[%d] epoch %d/%d",
                                    len ? ", " : "", s->item + 1, epoch, it->cfg.epochs);
    }
    pb_progress_draw(&b->prog, running);
}

/* Passes the signals the batch got since the last call on to the running runs, one
 * SIGTERM each (the first two only: a run stops at its epoch boundary after one, now
 * after two), and says so. */
static void forward_signals(struct batch *b)
{
    int n = pb_interrupt_count();
    for (; b->forwarded < n && b->forwarded < 2; b->forwarded++) {
        for (int k = 0; k < b->jobs; k++)
            if (b->slots[k].item >= 0)
                kill(b->slots[k].pid, SIGTERM);
        if (b->forwarded == 0)
            pb_progress_line(&b->prog, "%s: stopping: no other run starts; the running runs "
                             "finish their epoch, record it and write their resume state; a "
                             "second signal stops them now", b->prog.what);
        else
            pb_progress_line(&b->prog, "%s: stopping the running runs now (the epochs in "
                             "progress are lost)", b->prog.what);
    }
}

/* Marks failed the rows of runs whose process crashed (still 'running'). */
static void mark_crashed(const struct pb_batch_item *items, int n)
{
    for (int i = 0; i < n; i++) {
        if (items[i].exit_status != -1)
            continue;
        struct pb_results *db;
        struct pb_err e;
        if (pb_results_open_existing(&db, items[i].cfg.db, &e) == 0) {
            pb_results_mark_orphans(db, &e);
            pb_results_close(db);
        }
    }
}

void pb_batch_run(struct pb_batch_item *items, int n, int jobs, const char *what,
                  struct pb_batch_totals *totals)
{
    long epochs = 0;
    for (int i = 0; i < n; i++)
        epochs += items[i].cfg.epochs;
    *totals = (struct pb_batch_totals){0};
    struct batch b = {.items = items, .n = n, .jobs = jobs < 1 ? 1 : jobs, .totals = totals};
    b.slots = pb_xcalloc((size_t)b.jobs, sizeof *b.slots);
    for (int k = 0; k < b.jobs; k++)
        b.slots[k].item = -1;
    pb_progress_init(&b.prog, what, n, epochs);
    b.prog.quiet = n > 0 && items[0].cfg.quiet;
    struct pollfd *pfd = pb_xcalloc((size_t)b.jobs, sizeof *pfd);
    pb_interrupt_install(NULL);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigset_t saved;
    sigprocmask(SIG_BLOCK, &stop, &saved);
    b.open = saved;
    sigdelset(&b.open, SIGINT);
    sigdelset(&b.open, SIGTERM);
    sigdelset(&b.open, SIGHUP);
    while ((!pb_interrupted() && b.next < n) || b.nrunning > 0) {
        forward_signals(&b);
        for (int k = 0; k < b.jobs; k++)
            while (b.slots[k].item < 0 && b.next < n && !pb_interrupted())
                start(&b, &b.slots[k]);
        draw(&b);
        int np = 0;
        for (int k = 0; k < b.jobs; k++)
            if (b.slots[k].item >= 0)
                pfd[np++] = (struct pollfd){.fd = b.slots[k].fd, .events = POLLIN};
        if (np == 0)
            continue;
        struct timespec second = {1, 0};
        int r = ppoll(pfd, (nfds_t)np, &second, &b.open);
        if (r <= 0)
            continue;
        for (int j = 0; j < np; j++) {
            if (!pfd[j].revents)
                continue;
            for (int k = 0; k < b.jobs; k++) {
                struct slot *s = &b.slots[k];
                if (s->item >= 0 && s->fd == pfd[j].fd) {
                    if (!drain(&b, s))
                        finish(&b, s);
                    break;
                }
            }
        }
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
    totals->stopped = pb_interrupted();
    pb_interrupt_restore();
    for (int i = b.next; i < n; i++) {
        items[i].exit_status = -1;
        snprintf(items[i].message, sizeof items[i].message, "not started: interrupted");
        totals->not_started++;
    }
    pb_progress_finish(&b.prog);
    mark_crashed(items, b.next);
    free(pfd);
    free(b.slots);
}
