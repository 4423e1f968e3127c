/* harness/driver/run_epoch.c — one epoch of a run (run_epoch.h): the plan's executor over
 * its programs, validation with the current weights, and the epoch's record (gathered to
 * rank 0 under MPI, then one database transaction). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/base/interrupt.h"
#include "harness/driver/run_epoch.h"
#include "harness/sim/sim_periodic.h"

/* The rank holding the last stage (rank 0 under V placement). */
static int last_rank(const struct pb_plan *p)
{
    return p->rank_of[p->cfg->stages - 1];
}

/* The first stage this process holds (its device's chunk 0). */
static int first_held(const struct pb_plan *p)
{
    int k = 0;
    while (!pb_plan_holds(p, k))
        k++;
    return k;
}

/* Runs the local devices' programs with the plan's executor. */
static int execute(struct pb_run_live *r, const struct pb_program *progs, struct pb_err *e)
{
    return r->plan->executor->run(r->stages->workers, r->plan->cfg->stages, r->plan->dist, progs,
                                  r->plan->capacity, e);
}

/* Forward-only pass over the validation set with the current weights W (never
 * predicted), through the same executor and workers as training: batches of the
 * micro-batch size in file order; a last incomplete batch is left out. */
static int validate(struct pb_run_live *r, int epoch, double *loss, double *acc, struct pb_err *e)
{
    const struct pb_plan *p = r->plan;
    struct pb_worker *workers = r->stages->workers;
    int d = p->cfg->stages, b = p->cfg->microbatch_size, nb = p->nval / b;
    struct pb_data_view view = pb_feed_val_view(&p->feed, epoch);
    for (int k = 0; k < d; k++)
        if (pb_plan_holds(p, k))
            pb_worker_begin_eval(&workers[k], &p->eval_stage_progs[k], view, e);
    pb_dist_barrier(p->dist);
    int rc = execute(r, p->eval_progs, e);
    double res[3] = {0, 0, 0};  /* Σ loss, Σ correct, Σ labels counted */
    if (pb_plan_holds(p, d - 1)) {
        res[0] = workers[d - 1].eval.loss_sum;
        res[1] = (double)workers[d - 1].eval.correct;
        res[2] = (double)workers[d - 1].eval.counted;
    }
    pb_dist_bcast(p->dist, res, sizeof res, last_rank(p));
    *loss = res[0] / nb;
    /* a label per sample: the nb·b samples; a loss per token: the tokens not ignored */
    *acc = res[2] > 0 ? res[1] / res[2] : 0.0;
    return rc;
}

/* With chunks the simulator's bubble is a device's: stage k's is 1 − its ops' simulated
 * time over the makespan, as a run records each stage's measured bubble (the device's
 * busy time is its chunks' sum: harness/sim/sim.c). */
static double stage_bubble(const struct pb_plan *r, const struct pb_sim_cost *costs, int k,
                           double makespan)
{
    const struct pb_program *prog = &r->stage_progs[k];
    double busy = 0;
    for (int i = 0; i < prog->n; i++)
        busy += pb_sim_op_cost(&costs[k], prog->ops[i].kind);
    return makespan > 0 ? 1.0 - busy / makespan : 0.0;
}

/* The epoch on the run's devices (design §6.6; one per stage, or with chunks p = D / v
 * of v stages each), each op taking its stage's median time of this epoch and each
 * message its receiver's copy time per message: the makespan, and each stage's bubble
 * into sr[k].sim_bubble. NaN when a stage ran no op
 * of some kind (nothing to simulate it with). */
static double simulate_epoch(const struct pb_plan *r, struct pb_stage_record *sr)
{
    int d = r->cfg->stages, n = r->pipe.length;
    struct pb_sim_cost *costs = pb_xcalloc((size_t)d, sizeof *costs);
    bool complete = true;
    for (int k = 0; k < d; k++) {
        int msgs = (k > 0 ? n : 0) + (k + 1 < d ? n : 0);  /* the messages stage k receives */
        double recv = msgs ? sr[k].comm_s / msgs : 0;
        const double *o = sr[k].op_s;
        /* F and U, and B or the split backward's I and W: a kind the programs lack costs 0 */
        complete &= !isnan(o[PB_OP_F]) && !isnan(o[PB_OP_U]) &&
                    (!isnan(o[PB_OP_B]) || (!isnan(o[PB_OP_I]) && !isnan(o[PB_OP_W])));
        costs[k] = (struct pb_sim_cost){o[PB_OP_F], isnan(o[PB_OP_B]) ? 0 : o[PB_OP_B],
                                        o[PB_OP_U], recv, isnan(o[PB_OP_I]) ? 0 : o[PB_OP_I],
                                        isnan(o[PB_OP_W]) ? 0 : o[PB_OP_W]};
    }
    double makespan = NAN;
    struct pb_sim_result res;
    struct pb_err e;
    /* the executors' capacity: at least D, more where the programs need it */
    int capacity = r->capacity > d ? r->capacity : d;
    if (complete &&
        !pb_simulate_pipe(r->sch, &r->pipe, r->progs, costs, capacity, false, &res, &e)) {
        makespan = res.makespan_s;
        for (int k = 0; k < d; k++)
            sr[k].sim_bubble = pb_pipe_chunks(&r->pipe) == 1 ? res.bubble[k]
                                                             : stage_bubble(r, costs, k, makespan);
        pb_sim_result_finish(&res);
    }
    free(costs);
    return makespan;
}

/* Every rank's stage records into sr[D] at rank 0: each rank sends those of the stages it
 * holds (as many on every rank: its device's chunks) in stage order. */
static void gather_records(const struct pb_plan *r, struct pb_stage_record *sr)
{
    int d = r->cfg->stages, size = r->dist->size, v = d / size;
    struct pb_stage_record *mine = pb_xcalloc((size_t)v, sizeof *mine);
    struct pb_stage_record *all = pb_xcalloc((size_t)d, sizeof *all);
    for (int k = 0, j = 0; k < d; k++)
        if (pb_plan_holds(r, k))
            mine[j++] = sr[k];
    pb_dist_gather(r->dist, mine, (size_t)v * sizeof *mine, all, 0);
    if (pb_plan_writer(r)) {
        int *next = pb_xcalloc((size_t)size, sizeof *next);
        for (int k = 0; k < d; k++) {
            int q = r->rank_of[k];
            sr[k] = all[q * v + next[q]++];
        }
        free(next);
    }
    free(all);
    free(mine);
}

/* The events ev[n] in stage order, each stage's in the order it kept them (as one
 * process lists them): a rank's stages arrive together, a device's chunks apart. */
static void events_by_stage(struct pb_event_record *ev, size_t n, int d)
{
    struct pb_event_record *sorted = pb_xcalloc(n + 1, sizeof *sorted);
    size_t at = 0;
    for (int k = 0; k < d; k++)
        for (size_t i = 0; i < n; i++)
            if (ev[i].device == k)
                sorted[at++] = ev[i];
    PB_CHECK(at == n);
    memcpy(ev, sorted, n * sizeof *ev);
    free(sorted);
}

/* The epoch's row at rank 0: stage records and events of every stage, the training
 * loss of the last. */
static int record(struct pb_run_live *live, int epoch, double wall, double vloss, double vacc,
                  double vbleu, struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_plan *r = live->plan;
    const struct pb_run_cfg *c = r->cfg;
    struct pb_worker *workers = live->stages->workers;
    int d = c->stages;
    struct pb_stage_record *sr = pb_xcalloc((size_t)d, sizeof *sr);
    size_t nev = 0;
    double ops = 0;
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(r, k))
            continue;
        pb_worker_record(&workers[k], &sr[k]);
        nev += (size_t)workers[k].st.nevents;
        ops += (double)workers[k].st.ops;
    }
    struct pb_event_record *ev = pb_xcalloc(nev + 1, sizeof *ev);
    nev = 0;
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(r, k))
            continue;
        size_t n = (size_t)workers[k].st.nevents;
        if (n)   /* events is NULL when none are kept: memcpy's source must not be */
            memcpy(ev + nev, workers[k].events, n * sizeof *ev);
        nev += n;
    }
    if (r->dist) {
        gather_records(r, sr);
        void *all = NULL;
        size_t bytes = 0;
        pb_dist_gatherv(r->dist, ev, nev * sizeof *ev, &all, &bytes, 0);
        free(ev);
        ev = all;
        nev = bytes / sizeof *ev;
        if (pb_plan_writer(r))
            events_by_stage(ev, nev, d);
    }
    pb_dist_sum(r->dist, &ops);
    double loss[2] = {0, 0};
    if (pb_plan_holds(r, d - 1)) {
        loss[0] = workers[d - 1].st.loss_sum;
        loss[1] = (double)workers[d - 1].st.loss_count;
    }
    pb_dist_bcast(r->dist, loss, sizeof loss, last_rank(r));
    int rc = 0;
    long samples = (long)r->pipe.length * c->microbatch_size;
    struct pb_epoch_record rec = {
        .epoch = epoch,
        .train_loss = loss[1] > 0 ? loss[0] / loss[1] : NAN,
        .val_loss = vloss,
        .val_acc = vacc,
        .has_bleu = !isnan(vbleu),
        .val_bleu = vbleu,
        .samples = samples,
        .wall_s = wall,
        .throughput = wall > 0 ? (double)samples / wall : 0,
        .lr = workers[first_held(r)].optim.lr,
        .nstages = d,
        .stages = sr,
        .ops = (int64_t)ops,
        .nevents = (int)nev,
        .events = ev,
    };
    if (pb_plan_writer(r)) {
        for (int k = 0; k < d; k++)
            sr[k].bubble_frac = wall > 0 ? 1.0 - sr[k].busy_s / wall : 0;
        rec.sim_wall_s = simulate_epoch(r, sr);
        rec.sim_throughput = rec.sim_wall_s > 0 ? (double)samples / rec.sim_wall_s : NAN;
        rc = pb_results_epoch(live->db, live->run_id, &rec, e);
    }
    free(sr);
    free(ev);
    if (pb_dist_any(r->dist, rc != 0)) {
        if (!rc)
            e->msg[0] = 0;
        return -1;
    }
    sum->epochs_done = epoch + 1;
    sum->final_acc = vacc;
    sum->final_train_loss = rec.train_loss;
    if (vacc > sum->best_acc)
        sum->best_acc = vacc;
    if (c->on_epoch)
        c->on_epoch(c->on_epoch_ctx, epoch, c->epochs, vacc);
    if (!c->quiet && pb_plan_writer(r)) {
        char bleu[32] = "";
        if (!isnan(vbleu))
            snprintf(bleu, sizeof bleu, ", val BLEU %.2f", vbleu);
        printf("epoch %d: train loss %.4f, val loss %.4f, val acc %.2f%%%s, %.1f samples/s, "
               "%.2f s\n", epoch + 1, rec.train_loss, vloss, 100 * vacc, bleu, rec.throughput,
               wall);
        fflush(stdout);   /* each epoch's line when it ends, also through a pipe or tee */
    }
    return 0;
}

int pb_run_epoch(struct pb_run_live *live, int epoch, int32_t *order, struct pb_run_summary *sum,
                 bool *diverged, struct pb_err *e)
{
    const struct pb_plan *r = live->plan;
    const struct pb_run_cfg *c = r->cfg;
    struct pb_worker *workers = live->stages->workers;
    int d = c->stages;
    if (pb_dataset_has_inputs(&r->train) || r->train.y)
        pb_dataset_epoch_order(&r->train, c->seed, epoch, c->shuffle, r->samples_per_update,
                               order);
    struct pb_data_view view = pb_feed_train_view(&r->feed, epoch, order);
    /* the loader thread prepares the training micro-batches, then the validation batches */
    struct pb_data_view val = pb_feed_val_view(&r->feed, epoch);
    pb_feed_queue(&r->feed, &view, &r->stage_progs[0]);
    pb_feed_queue(&r->feed, &val, &r->eval_stage_progs[0]);
    pb_dist_barrier(r->dist);
    int rc = 0;
    int first = first_held(r);
    for (int k = 0; k < d && !rc; k++) {
        if (!pb_plan_holds(r, k))
            continue;
        workers[k].trace = (struct pb_worker_trace){r->trace_epochs[epoch], c->trace_mb_lo,
                                                    c->trace_mb_hi ? c->trace_mb_hi : INT_MAX};
        rc = pb_worker_begin_epoch(&workers[k], epoch, &r->stage_progs[k], view, e);
        workers[k].epoch_t0 = workers[first].epoch_t0;  /* one time origin for events */
    }
    if (pb_dist_any(r->dist, rc != 0))
        return -1;
    double t0 = pb_now_s();
    rc = execute(live, r->progs, e);
    pb_dist_barrier(r->dist);
    double wall = pb_now_s() - t0;
    int div = pb_plan_holds(r, d - 1) && workers[d - 1].diverged;
    pb_dist_bcast(r->dist, &div, sizeof div, last_rank(r));
    *diverged = div;
    if (!rc && r->dist && div)
        rc = pb_err_set(e, "the loss is not finite: the run diverged (try a smaller --lr)");
    /* a second signal stops the run now (mpi: here, the ranks agreeing; the others
     * between ops), the epoch lost; a first lets it finish (run.c) */
    if (!rc && pb_dist_any(r->dist, pb_interrupted_now()))
        rc = pb_err_set(e, "interrupted by a second signal during epoch %d", epoch + 1);
    if (rc)
        return -1;
    double vloss, vacc;
    if (pb_dist_any(r->dist, validate(live, epoch, &vloss, &vacc, e) != 0))
        return -1;
    double vbleu;
    if (pb_run_val_bleu(live->bleu, live->stages, &vbleu, e))
        return -1;
    return record(live, epoch, wall, vloss, vacc, vbleu, sum, e);
}
