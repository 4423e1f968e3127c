/* harness/sim/sim.c — discrete-event simulation of an epoch's programs (sim.h).
 * Each device runs its program in order (an op on local chunk c costs its stage's op
 * cost, pb_pipe_stage_of; a U every chunk's); a device that cannot go on (its input has not
 * been sent, or its output channel is full) waits on that channel and is woken by the
 * neighbour that changes it, so every op is visited a constant number of times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sim/sim.h"

/* One direction between two neighbours: item i's arrival and receive (consume) times, in
 * rings of capacity + 1 slots (item i at i % ring): a sender never gets more than
 * `capacity` items ahead of its receiver, so an arrival is read before its slot comes
 * round again, and a send reads the consume time of the item `capacity` before it (the
 * slot after its own: both times of a slot side by side keep the two in one cache line). */
struct slot {
    double arrive, consume;
};

struct chan {
    struct slot *slot;
    int sent, taken;
    int sent_at, taken_at;           /* sent % ring, taken % ring */
    int waiting_recv, waiting_send;  /* device blocked on it, or -1 */
};

struct dev {
    int pc;
    bool sending;        /* the op at pc ran; its output waits for room */
    double t;            /* when the device is free */
    double start, end;   /* start and end of the op at pc once it ran */
};

struct sim {
    const struct pb_pipe *p;
    const struct pb_program *progs;
    const struct pb_sim_cost *costs;
    int capacity, ring;           /* ring = capacity + 1 */
    long *first;             /* [D] index of device k's first event: events are by device */
    struct chan *fwd, *bwd;  /* fwd[k]: k → k+1; bwd[k]: k+1 → k */
    struct dev *dev;
    int *ready, nready;      /* devices to visit */
    bool *queued;
    struct pb_op_times *times;  /* [ops] when asked for */
    struct pb_sim_result *r;
};

static void wake(struct sim *s, int d)
{
    if (d >= 0 && !s->queued[d]) {
        s->queued[d] = true;
        s->ready[s->nready++] = d;
    }
}

double pb_sim_op_cost(const struct pb_sim_cost *c, int kind)
{
    switch (kind) {
    case PB_OP_F: return c->f;
    case PB_OP_B: return c->b;
    case PB_OP_I: return c->i;
    case PB_OP_W: return c->w;
    default: return c->u;
    }
}

static void record(struct sim *s, int k, const struct pb_op *op, double start, double end)
{
    if (!s->r->events)
        return;
    s->r->events[s->first[k] + s->dev[k].pc] = (struct pb_event_record){
        .device = k, .seq = s->dev[k].pc, .kind = pb_op_letter(op->kind),
        .mb = op->kind == PB_OP_U ? -1 : op->mb, .start_s = start, .end_s = end};
}

/* Advances device k until it finishes or must wait. */
static void run_device(struct sim *s, int k)
{
    int D = s->p->stages;
    const struct pb_program *prog = &s->progs[k];
    struct dev *d = &s->dev[k];
    while (d->pc < prog->n) {
        const struct pb_op *op = &prog->ops[d->pc];
        bool f = op->kind == PB_OP_F, b = pb_op_carries_grad(op->kind);
        int st = pb_pipe_stage_of(s->p, k, op->kind == PB_OP_U ? 0 : op->chunk);
        struct chan *in = f && st > 0 ? &s->fwd[st - 1] : b && st + 1 < D ? &s->bwd[st] : NULL;
        struct chan *out = f && st + 1 < D ? &s->fwd[st] : b && st > 0 ? &s->bwd[st - 1] : NULL;
        if (!d->sending) {
            double start = d->t;
            if (in) {
                if (in->taken == in->sent) {
                    in->waiting_recv = k;
                    return;
                }
                int i = in->taken_at;
                in->taken++;
                in->taken_at = i + 1 == s->ring ? 0 : i + 1;
                if (in->slot[i].arrive > start)
                    start = in->slot[i].arrive;
                in->slot[i].consume = start;
                wake(s, in->waiting_send);
                in->waiting_send = -1;
            }
            double c = 0;  /* a U updates every chunk of the device */
            for (int q = 0; q < pb_pipe_chunks(s->p); q++)
                if (op->kind == PB_OP_U || q == op->chunk)
                    c += pb_sim_op_cost(&s->costs[pb_pipe_stage_of(s->p, k, q)], op->kind);
            d->start = start;
            d->end = start + c;
            s->r->busy_s[k] += c;
            record(s, k, op, start, d->end);
            s->r->ops++;
            d->sending = true;
        }
        double free_at = d->end;
        if (out) {
            int i = out->sent;
            if (i >= s->capacity) {
                if (out->taken <= i - s->capacity) {
                    out->waiting_send = k;
                    return;
                }
                /* item i − capacity is at (i + 1) % ring: ring = capacity + 1 */
                int next = out->sent_at + 1 == s->ring ? 0 : out->sent_at + 1;
                double room = out->slot[next].consume;
                if (room > free_at)
                    free_at = room;
            }
            out->slot[out->sent_at].arrive = free_at + s->costs[f ? st + 1 : st - 1].recv;
            out->sent++;
            out->sent_at = out->sent_at + 1 == s->ring ? 0 : out->sent_at + 1;
            wake(s, out->waiting_recv);
            out->waiting_recv = -1;
        }
        d->t = free_at;
        if (s->times)
            s->times[s->first[k] + d->pc] = (struct pb_op_times){d->start, free_at};
        d->sending = false;
        d->pc++;
    }
}

/* Most micro-batches held between F and B or W, in program order (timing does not
 * change it: a device runs its ops in order). */
int pb_sim_acts_peak(const struct pb_program *prog)
{
    int live = 0, peak = 0;
    for (int i = 0; i < prog->n; i++) {
        int kind = prog->ops[i].kind;
        live += kind == PB_OP_F ? 1 : pb_op_accumulates(kind) ? -1 : 0;
        peak = live > peak ? live : peak;
    }
    return peak;
}

/* The weight copies a stage's store holds at most, as the worker makes them
 * (harness/exec/worker.c, harness/store/wstore.c): the stash ring, XPipe's ring of
 * mini-batch predictions, 2BW's older buffer, and one Ŵ buffer when an op predicts with
 * a look-ahead (s = 0 reads W itself). */
static int wcopies_peak_of(const struct pb_program *prog, const struct pb_version_plan *vp)
{
    bool predicts = false;
    for (int i = 0; i < prog->n && !predicts; i++)
        predicts = prog->ops[i].kind != PB_OP_U && prog->ops[i].wsrc == PB_W_PREDICTED &&
                   prog->ops[i].s != 0;
    return vp->stash_slots + vp->group_slots + vp->buffered + predicts;
}

void pb_sim_peaks(const struct pb_pipe *p, const struct pb_program *prog, int *acts,
                  int *stash, int *wcopies)
{
    *acts = pb_sim_acts_peak(prog);
    struct pb_version_plan vp;
    pb_version_plan_init(&vp, p, prog);
    *stash = vp.stash_slots;
    *wcopies = wcopies_peak_of(prog, &vp);
    pb_version_plan_finish(&vp);
}

/* pb_simulate and pb_sim_times: the peaks when `peaks`, the op times when `times`. */
static int run(const struct pb_pipe *p, const struct pb_program *progs,
               const struct pb_sim_cost *costs, int capacity, bool keep_events, bool peaks,
               struct pb_op_times *times, struct pb_sim_result *r, struct pb_err *e)
{
    int D = p->stages;
    memset(r, 0, sizeof *r);
    if (capacity < 1)
        return pb_err_set(e, "simulate: the channel capacity must be at least 1 (got %d)",
                          capacity);
    long total = 0;
    int ND = pb_pipe_devices(p);
    for (int k = 0; k < D; k++) {
        const struct pb_sim_cost *c = &costs[k];
        if (!(isfinite(c->f) && isfinite(c->b) && isfinite(c->u) && isfinite(c->recv) &&
              isfinite(c->i) && isfinite(c->w)) ||
            c->f < 0 || c->b < 0 || c->u < 0 || c->recv < 0 || c->i < 0 || c->w < 0)
            return pb_err_set(e, "simulate: stage %d's costs must be finite and non-negative "
                              "(got F %g, B %g, U %g, recv %g, I %g, W %g s)", k, c->f, c->b,
                              c->u, c->recv, c->i, c->w);
    }
    for (int k = 0; k < ND; k++)
        total += progs[k].n;
    pb_sim_result_init(r, D);
    if (keep_events)
        r->events = pb_xcalloc((size_t)(total > 0 ? total : 1), sizeof *r->events);

    struct sim s = {.p = p, .progs = progs, .costs = costs, .capacity = capacity,
                    .ring = capacity + 1, .times = times, .r = r};
    s.first = pb_xcalloc((size_t)D, sizeof *s.first);
    for (int k = 1; k < ND; k++)
        s.first[k] = s.first[k - 1] + progs[k - 1].n;
    s.fwd = pb_xcalloc((size_t)D, sizeof *s.fwd);
    s.bwd = pb_xcalloc((size_t)D, sizeof *s.bwd);
    for (int k = 0; k < D; k++)
        for (int dir = 0; dir < 2; dir++) {
            struct chan *c = dir ? &s.bwd[k] : &s.fwd[k];
            c->slot = pb_xcalloc((size_t)s.ring, sizeof *c->slot);
            c->waiting_recv = c->waiting_send = -1;
        }
    s.dev = pb_xcalloc((size_t)D, sizeof *s.dev);
    s.ready = pb_xcalloc((size_t)D, sizeof *s.ready);
    s.queued = pb_xcalloc((size_t)D, sizeof *s.queued);
    for (int k = ND - 1; k >= 0; k--)
        wake(&s, k);
    while (s.nready) {
        int k = s.ready[--s.nready];
        s.queued[k] = false;
        run_device(&s, k);
    }

    int rc = 0;
    for (int k = 0; k < ND && !rc; k++)
        if (s.dev[k].pc < progs[k].n)
            rc = pb_err_set(e, "simulate: the programs deadlock (device %d stops at op %d); "
                            "validate them with `pipebench program`", k, s.dev[k].pc);
    for (int k = 0; k < ND; k++) {
        if (s.dev[k].t > r->makespan_s)
            r->makespan_s = s.dev[k].t;
        if (!peaks)
            continue;
        r->acts_peak[k] = pb_sim_acts_peak(&progs[k]);
        if (ND < D)  /* chunks: activations in chunk units; one version per chunk */
            continue;
        /* one plan at a time: a plan is as long as its program */
        struct pb_version_plan vp;
        pb_version_plan_init(&vp, p, &progs[k]);
        r->stash_peak[k] = vp.stash_slots;
        r->wcopies_peak[k] = wcopies_peak_of(&progs[k], &vp);
        for (int i = 0; r->events && i < progs[k].n; i++) {
            struct pb_event_record *ev = &r->events[s.first[k] + i];
            ev->version = vp.ops[i].base;
            ev->ahead = vp.ops[i].ahead;
            ev->sync_version = vp.ops[i].sync;
        }
        pb_version_plan_finish(&vp);
    }
    for (int k = 0; k < ND; k++)
        r->bubble[k] = r->makespan_s > 0 ? 1.0 - r->busy_s[k] / r->makespan_s : 0.0;
    for (int k = 0; k < D; k++) {
        free(s.fwd[k].slot);
        free(s.bwd[k].slot);
    }
    free(s.first);
    free(s.fwd);
    free(s.bwd);
    free(s.dev);
    free(s.ready);
    free(s.queued);
    if (rc)
        pb_sim_result_finish(r);
    return rc;
}

int pb_simulate(const struct pb_pipe *p, const struct pb_program *progs,
                const struct pb_sim_cost *costs, int capacity, bool keep_events,
                struct pb_sim_result *r, struct pb_err *e)
{
    return run(p, progs, costs, capacity, keep_events, true, NULL, r, e);
}

int pb_sim_times(const struct pb_pipe *p, const struct pb_program *progs,
                 const struct pb_sim_cost *costs, int capacity, struct pb_op_times *times,
                 struct pb_sim_result *r, struct pb_err *e)
{
    return run(p, progs, costs, capacity, false, false, times, r, e);
}

void pb_sim_result_init(struct pb_sim_result *r, int stages)
{
    memset(r, 0, sizeof *r);
    int D = stages;
    r->stages = D;
    r->busy_s = pb_xcalloc((size_t)D, sizeof *r->busy_s);
    r->bubble = pb_xcalloc((size_t)D, sizeof *r->bubble);
    r->acts_peak = pb_xcalloc((size_t)D, sizeof *r->acts_peak);
    r->stash_peak = pb_xcalloc((size_t)D, sizeof *r->stash_peak);
    r->wcopies_peak = pb_xcalloc((size_t)D, sizeof *r->wcopies_peak);
}

void pb_sim_result_finish(struct pb_sim_result *r)
{
    free(r->busy_s);
    free(r->bubble);
    free(r->acts_peak);
    free(r->stash_peak);
    free(r->wcopies_peak);
    free(r->events);
    memset(r, 0, sizeof *r);
}
