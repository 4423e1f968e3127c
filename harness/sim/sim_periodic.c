/* harness/sim/sim_periodic.c — large pipes simulated by exact steady-state extrapolation
 * (sim_periodic.h, design §6.6).
 *
 * The simulator's times depend on each device's sequence of op kinds and the FIFO
 * channels only: an op starts at max(its device free, its input's arrival) and its device
 * is free at max(its end, the consume of the item `capacity` before its output), a
 * max-plus system invariant under a shift of time. Every schedule's programs repeat in N:
 * P more micro-batches (M for schedules that use it, else 1) insert one block of ops into
 * each device's steady section. So, with N' ≡ N (mod P):
 *  1. build the programs at N' − P and N'; on every device the longer must be the shorter
 *     with one block inserted (lo..hi: where it may go), else the schedule is not
 *     periodic there;
 *  2. pick on every device a cut c in lo..hi, all at the position of the same forward
 *     item F*: the programs at N' + P are those at N' with the block b[c, c + ℓ) repeated;
 *  3. simulate N' recording every op's times, and define the times of N' + P as N''s up
 *     to c + ℓ and N''s from c on shifted by T (device 0's period across its cut);
 *  4. check that these times satisfy the simulator's equation at every op of N' + P whose
 *     dependencies cross a cut: the first op after each cut (its device), and for every
 *     channel the items between its two ends' cuts (arrival) and between the sender's
 *     cut and the receiver's plus `capacity` (back-pressure). Every other op's equation
 *     is N''s, shifted or not, so then they are N' + P's times exactly, and by the same
 *     argument every further period adds T: makespan(N) = makespan(N') + Δ·T with
 *     Δ = (N − N') / P, busy and ops grow by Δ blocks;
 *  5. the peaks (acts, stash, weight copies) must be equal at N' − P and N'.
 * Times are doubles, so "equal" is within 1e-12 of the epoch's length: sums of the same
 * costs taken in another order round differently (a few ulps per op). When a check fails
 * N' is doubled (the transient had not died out), up to a few times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sim/sim_periodic.h"

enum { ATTEMPTS = 4 };
#define REL_TOL 1e-12

/* The programs at N' (b) with their cuts, and the times of N' + P derived from them. */
struct per {
    int D, P, cap, n1;                 /* n1 = N' */
    const struct pb_program *b;        /* [D] at N' */
    const struct pb_sim_cost *costs;
    long *first;                       /* [D] index of device k's first op */
    int *idx;                          /* [ops] an F's or B's item index on its channel */
    int *posf, *posb;                  /* [D·N'] position of F / B item j on device k */
    int *cut, *len;                    /* [D] c and ℓ */
    int *phi, *psi;                    /* [D] F and B items of N' + P before c + ℓ */
    struct pb_op_times *t;             /* [ops] N''s times */
    double T, tol;
};

/* N' + P's op at position x of device k is N''s op img(x), later by shift(x). */
static int img(const struct per *q, int k, int x)
{
    return x < q->cut[k] + q->len[k] ? x : x - q->len[k];
}

static double shift(const struct per *q, int k, int x)
{
    return x < q->cut[k] + q->len[k] ? 0 : q->T;
}

static double t_start(const struct per *q, int k, int x)
{
    return q->t[q->first[k] + img(q, k, x)].start + shift(q, k, x);
}

static double t_free(const struct per *q, int k, int x)
{
    return x < 0 ? 0 : q->t[q->first[k] + img(q, k, x)].free + shift(q, k, x);
}

/* Position in N' + P of F (B) item j of device k. */
static int pos_f(const struct per *q, int k, int j)
{
    const int *pf = q->posf + (size_t)k * q->n1;
    return j < q->phi[k] ? pf[j] : pf[j - q->P] + q->len[k];
}

static int pos_b(const struct per *q, int k, int j)
{
    const int *pb = q->posb + (size_t)k * q->n1;
    return j < q->psi[k] ? pb[j] : pb[j - q->P] + q->len[k];
}

/* Whether the derived times satisfy the simulator's equations at op x of device k of
 * N' + P (the same arithmetic as sim.c's run_device). */
static bool op_holds(const struct per *q, int k, int x)
{
    int i = img(q, k, x);
    const struct pb_op *op = &q->b[k].ops[i];
    bool f = op->kind == PB_OP_F, b = pb_op_carries_grad(op->kind);
    int j = f || b ? q->idx[q->first[k] + i] + (i == x ? 0 : q->P) : -1;
    double start = t_free(q, k, x - 1);
    if (f && k > 0) {
        double a = t_free(q, k - 1, pos_f(q, k - 1, j)) + q->costs[k].recv;
        start = a > start ? a : start;
    }
    if (b && k + 1 < q->D) {
        double a = t_free(q, k + 1, pos_b(q, k + 1, j)) + q->costs[k].recv;
        start = a > start ? a : start;
    }
    double free_at = start + pb_sim_op_cost(&q->costs[k], op->kind);
    if (f && k + 1 < q->D && j >= q->cap) {
        double room = t_start(q, k + 1, pos_f(q, k + 1, j - q->cap));
        free_at = room > free_at ? room : free_at;
    }
    if (b && k > 0 && j >= q->cap) {
        double room = t_start(q, k - 1, pos_b(q, k - 1, j - q->cap));
        free_at = room > free_at ? room : free_at;
    }
    return fabs(start - t_start(q, k, x)) <= q->tol && fabs(free_at - t_free(q, k, x)) <= q->tol;
}

/* Checks, for items j in [min(u, v), max(u, v)) ∩ [from, items), the op at(j) of device k. */
static bool range_holds(const struct per *q, int k, int u, int v, int from, int items,
                        bool forward)
{
    int lo = u < v ? u : v, hi = u < v ? v : u;
    lo = lo > from ? lo : from;
    hi = hi < items ? hi : items;
    for (int j = lo; j < hi; j++)
        if (!op_holds(q, k, forward ? pos_f(q, k, j) : pos_b(q, k, j)))
            return false;
    return true;
}

/* Step 4: every op of N' + P whose dependencies cross a cut. */
static bool seams_hold(const struct per *q)
{
    int items = q->n1 + q->P;
    for (int k = 0; k < q->D; k++)
        if (!op_holds(q, k, q->cut[k] + q->len[k]))
            return false;
    for (int k = 0; k + 1 < q->D; k++) {
        /* fwd[k]: k → k+1 (F items); bwd[k]: k+1 → k (B items) */
        if (!range_holds(q, k + 1, q->phi[k], q->phi[k + 1], 0, items, true) ||
            !range_holds(q, k, q->phi[k], q->phi[k + 1] + q->cap, q->cap, items, true) ||
            !range_holds(q, k, q->psi[k + 1], q->psi[k], 0, items, false) ||
            !range_holds(q, k + 1, q->psi[k + 1], q->psi[k] + q->cap, q->cap, items, false))
            return false;
    }
    return true;
}

/* Steps 1 and 2 on device k: a = programs at N' − P, b at N'. The cut range lo..hi in b,
 * or false when b is not a with one block inserted. */
static bool block_range(const struct pb_program *a, const struct pb_program *b, int *lo, int *hi)
{
    int na = a->n, nb = b->n, pre = 0, suf = 0;
    if (nb <= na)
        return false;
    while (pre < na && a->ops[pre].kind == b->ops[pre].kind)
        pre++;
    while (suf < na && a->ops[na - 1 - suf].kind == b->ops[nb - 1 - suf].kind)
        suf++;
    *lo = na - suf;
    *hi = pre;
    return *lo <= *hi;
}

/* The first index in sorted pos[0..n) whose value is >= v. */
static int lower_bound(const int *pos, int n, int v)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (pos[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One attempt at N' = n1: 0 done (r filled), 1 not verified (reason in e), -1 failed. */
static int attempt(const struct pb_schedule *sch, const struct pb_pipe *p,
                   const struct pb_sim_cost *costs, int capacity, int n1, int P,
                   struct pb_sim_result *r, struct pb_err *e)
{
    int D = p->stages, status = 1;
    struct pb_pipe pa = *p, pb = *p;
    pa.length = n1 - P;
    pb.length = n1;
    struct pb_program a;
    struct pb_program *b = pb_xcalloc((size_t)D, sizeof *b);
    struct per q = {.D = D, .P = P, .cap = capacity, .n1 = n1, .b = b, .costs = costs};
    q.first = pb_xcalloc((size_t)D, sizeof *q.first);
    q.cut = pb_xcalloc((size_t)D * 4, sizeof *q.cut);
    q.len = q.cut + D;
    q.phi = q.len + D;
    q.psi = q.phi + D;
    int *lo = pb_xcalloc((size_t)D * 2, sizeof *lo), *hi = lo + D;
    int *peaks = pb_xcalloc((size_t)D * 3, sizeof *peaks);  /* [D][3] at N' */
    struct pb_sim_result rs = {0};
    /* device by device, so that a transient found on stage 0 costs one stage's programs */
    long total = 0;
    for (int k = 0; k < D; k++) {
        pb_program_init(&a, k);
        pb_program_init(&b[k], k);
        sch->emit(&pa, k, &a);
        sch->emit(&pb, k, &b[k]);
        q.first[k] = total;
        total += b[k].n;
        bool block = block_range(&a, &b[k], &lo[k], &hi[k]);
        int pa_acts, pa_stash, pa_w, *pk = &peaks[3 * k];
        if (block) {
            pb_sim_peaks(&pa, &a, &pa_acts, &pa_stash, &pa_w);
            pb_sim_peaks(&pb, &b[k], &pk[0], &pk[1], &pk[2]);
        }
        q.len[k] = b[k].n - a.n;
        pb_program_finish(&a);
        if (!block) {
            pb_err_set(e, "stage %d's programs at %d and %d micro-batches differ by more "
                       "than one inserted block", k, n1 - P, n1);
            goto out;
        }
        if (pa_acts != pk[0] || pa_stash != pk[1] || pa_w != pk[2]) {
            pb_err_set(e, "stage %d's peaks differ at %d and %d micro-batches", k, n1 - P, n1);
            goto out;
        }
    }
    q.idx = pb_xmalloc((size_t)total * sizeof *q.idx);
    q.posf = pb_xmalloc((size_t)D * n1 * 2 * sizeof *q.posf);
    q.posb = q.posf + (size_t)D * n1;
    int fstar = n1, fmin = 0;  /* F*: the latest F item every device can cut at */
    for (int k = 0; k < D; k++) {
        int nf = 0, nbk = 0;
        int *pf = q.posf + (size_t)k * n1, *pbk = q.posb + (size_t)k * n1;
        for (int i = 0; i < b[k].n; i++) {
            int kind = b[k].ops[i].kind, *id = &q.idx[q.first[k] + i];
            if (kind == PB_OP_F) {
                *id = nf;
                pf[nf++] = i;
            } else if (pb_op_carries_grad(kind)) {
                *id = nbk;
                pbk[nbk++] = i;
            } else {
                *id = -1;
            }
        }
        int jlo = lower_bound(pf, n1, lo[k]), jhi = lower_bound(pf, n1, hi[k] + 1) - 1;
        fmin = jlo > fmin ? jlo : fmin;
        fstar = jhi < fstar ? jhi : fstar;
    }
    if (fstar < fmin) {
        pb_err_set(e, "the steady sections of the stages at %d micro-batches do not overlap",
                   n1);
        goto out;
    }
    for (int k = 0; k < D; k++) {
        q.cut[k] = q.posf[(size_t)k * n1 + fstar];
        q.phi[k] = fstar + P;
        q.psi[k] = lower_bound(q.posb + (size_t)k * n1, n1, q.cut[k]) + P;
    }
    q.t = pb_xmalloc((size_t)total * sizeof *q.t);
    if (pb_sim_times(&pb, b, costs, capacity, q.t, &rs, e)) {
        status = -1;
        goto out;
    }
    q.T = q.t[q.first[0] + q.cut[0] + q.len[0] - 1].free -
          (q.cut[0] ? q.t[q.first[0] + q.cut[0] - 1].free : 0);
    q.tol = REL_TOL * (rs.makespan_s + fabs(q.T));
    if (!(q.T >= 0) || !seams_hold(&q)) {
        pb_err_set(e, "the times at %d micro-batches are not yet periodic", n1);
        goto out;
    }

    long delta = (p->length - n1) / P;
    pb_sim_result_init(r, D);
    r->makespan_s = rs.makespan_s + (double)delta * q.T;
    r->ops = rs.ops;
    for (int k = 0; k < D; k++) {
        double block = 0;
        for (int i = q.cut[k]; i < q.cut[k] + q.len[k]; i++)
            block += pb_sim_op_cost(&costs[k], b[k].ops[i].kind);
        r->busy_s[k] = rs.busy_s[k] + (double)delta * block;
        r->ops += delta * q.len[k];
        r->acts_peak[k] = peaks[3 * k];
        r->stash_peak[k] = peaks[3 * k + 1];
        r->wcopies_peak[k] = peaks[3 * k + 2];
    }
    for (int k = 0; k < D; k++)
        r->bubble[k] = r->makespan_s > 0 ? 1.0 - r->busy_s[k] / r->makespan_s : 0.0;
    r->extrapolated = true;
    r->from_length = n1;
    r->from_ops = rs.ops;
    r->period_mbs = P;
    r->period_s = q.T;
    status = 0;
out:
    pb_sim_result_finish(&rs);
    pb_programs_finish(b, D);
    free(b);
    free(peaks);
    free(q.first);
    free(q.cut);
    free(q.idx);
    free(q.posf);
    free(q.t);
    free(lo);
    return status;
}

/* The steady-state path: 0 done, 1 refused (reason in e), -1 failed. */
static int periodic(const struct pb_schedule *sch, const struct pb_pipe *p,
                    const struct pb_sim_cost *costs, int capacity, struct pb_sim_result *r,
                    struct pb_err *e)
{
    int P = sch->uses_microbatches ? p->microbatches : 1, N = p->length;
    long long base = (long long)p->stages + 1LL * P + 16;
    pb_err_set(e, "%d micro-batches are too few to extrapolate", N);
    for (int i = 0; i < ATTEMPTS; i++, base *= 2) {
        if (base >= N)
            return 1;
        int n1 = (int)(base + (N - base) % P);
        if (n1 >= N)
            return 1;
        int rc = attempt(sch, p, costs, capacity, n1, P, r, e);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

static int full(const struct pb_schedule *sch, const struct pb_pipe *p,
                const struct pb_program *given, const struct pb_sim_cost *costs, int capacity,
                bool keep_events, struct pb_sim_result *r, struct pb_err *e)
{
    if (given)
        return pb_simulate(p, given, costs, capacity, keep_events, r, e);
    struct pb_program *progs = pb_xcalloc((size_t)p->stages, sizeof *progs);
    int rc = pb_programs_build(sch, p, progs, e) || pb_programs_validate(p, progs, capacity, e) ||
             pb_simulate(p, progs, costs, capacity, keep_events, r, e) ? -1 : 0;
    pb_programs_finish(progs, p->stages);
    free(progs);
    return rc;
}

int pb_simulate_pipe_above(const struct pb_schedule *sch, const struct pb_pipe *p,
                           const struct pb_program *progs, const struct pb_sim_cost *costs, int capacity, bool keep_events,
                           long long full_ops, struct pb_sim_result *r, struct pb_err *e)
{
    memset(r, 0, sizeof *r);
    if (sch->check(p, e))
        return -1;
    if (capacity < 1)
        return pb_err_set(e, "simulate: the channel capacity must be at least 1 (got %d)",
                          capacity);
    long long ops = 3LL * p->stages * p->length;
    if (keep_events && ops > PB_MAX_PROGRAM_OPS)
        return pb_err_set(e, "simulate: keeping every op's event (--record) needs the whole "
                          "programs, and %d stages of %d micro-batches are over %lld ops; use "
                          "fewer stages or a shorter --length", p->stages, p->length,
                          PB_MAX_PROGRAM_OPS);
    if (keep_events || ops <= full_ops || pb_pipe_chunks(p) > 1)  /* chunks: op by op */
        return full(sch, p, progs, costs, capacity, keep_events, r, e);
    struct pb_err why;
    int rc = periodic(sch, p, costs, capacity, r, &why);
    if (rc < 0) {
        *e = why;
        return -1;
    }
    if (rc == 0)
        return 0;
    if (ops > PB_MAX_PROGRAM_OPS)
        return pb_err_set(e, "simulate: %d stages of %d micro-batches are over the %lld ops "
                          "simulated op by op, and the steady state could not be extrapolated "
                          "(%s); use fewer stages or a shorter --length", p->stages, p->length,
                          PB_MAX_PROGRAM_OPS, why.msg);
    return full(sch, p, progs, costs, capacity, keep_events, r, e);
}

int pb_simulate_pipe(const struct pb_schedule *sch, const struct pb_pipe *p,
                     const struct pb_program *progs, const struct pb_sim_cost *costs,
                     int capacity, bool keep_events, struct pb_sim_result *r, struct pb_err *e)
{
    return pb_simulate_pipe_above(sch, p, progs, costs, capacity, keep_events, PB_SIM_FULL_OPS, r, e);
}
