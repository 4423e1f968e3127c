/* harness/driver/run_epoch.c — one epoch of a run (run_internal.h): the executor over the
 * schedule's programs, validation with the current weights, and the epoch's record
 * (gathered to rank 0 under MPI, then one database transaction). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/store/checkpoint.h"
#include "harness/exec/executor.h"
#include "harness/exec/sim_periodic.h"
#include "harness/base/interrupt.h"
#include "harness/driver/run_internal.h"

static int last_rank(const struct run_state *r)
{
    return r->cfg->stages - 1;
}

/* Runs the local devices' programs with the run's executor. */
static int execute(struct run_state *r, const struct pb_program *progs, struct pb_err *e)
{
    const char *ex = r->cfg->executor;
    int d = r->cfg->stages;
    if (!strcmp(ex, "threads"))
        return pb_exec_threads(r->workers, d, progs, d, e);
    if (!strcmp(ex, "mpi"))
        return pb_exec_mpi(r->dist, &r->workers[r->lo], &progs[r->lo], e);
    return pb_exec_seq(r->workers, d, progs, e);
}

/* Queues on stage 0's loader thread the inputs of the forwards of stage 0's program prog,
 * in program order. */
static void queue_pass(struct run_state *r, const struct pb_program *prog,
                       const struct pb_data_view *view)
{
    int *mbs = pb_xmalloc((size_t)prog->n * sizeof *mbs + 1), n = 0;
    for (int i = 0; i < prog->n; i++)
        if (prog->ops[i].kind == PB_OP_F)
            mbs[n++] = prog->ops[i].mb;
    pb_prefetch_queue(r->prefetch, view->ds, view->order, view->batch, view->key, mbs, n);
    free(mbs);
}

/* The validation view of the epoch. */
static struct pb_data_view val_view(const struct run_state *r, int epoch)
{
    return (struct pb_data_view){&r->val, NULL, r->cfg->microbatch_size,
                                 {r->cfg->seed, epoch, false}, r->prefetch};
}

/* Forward-only pass over the validation set with the current weights W (never
 * predicted), through the same executor and workers as training: batches of the
 * micro-batch size in file order; a last incomplete batch is left out. */
static int validate(struct run_state *r, int epoch, double *loss, double *acc, struct pb_err *e)
{
    int d = r->cfg->stages, b = r->cfg->microbatch_size, nb = r->nval / b;
    struct pb_data_view view = val_view(r, epoch);
    for (int k = r->lo; k < r->hi; k++)
        pb_worker_begin_eval(&r->workers[k], &r->eval_progs[k], view, e);
    pb_dist_barrier(r->dist);
    int rc = execute(r, r->eval_progs, e);
    double res[3] = {0, 0, 0};  /* Σ loss, Σ correct, Σ labels counted */
    if (r->hi == d) {
        res[0] = r->workers[d - 1].eval.loss_sum;
        res[1] = (double)r->workers[d - 1].eval.correct;
        res[2] = (double)r->workers[d - 1].eval.counted;
    }
    pb_dist_bcast(r->dist, res, sizeof res, last_rank(r));
    *loss = res[0] / nb;
    /* a label per sample: the nb·b samples; a loss per token: the tokens not ignored */
    *acc = res[2] > 0 ? res[1] / res[2] : 0.0;
    return rc;
}

/* The epoch on one device per stage (design §6.6), each op taking its stage's median
 * time of this epoch and each message its receiver's copy time per message: the
 * makespan, and each stage's bubble into sr[k].sim_bubble. NaN when a stage ran no op
 * of some kind (nothing to simulate it with). */
static double simulate_epoch(const struct run_state *r, struct pb_stage_record *sr)
{
    int d = r->cfg->stages, n = r->pipe.length;
    struct pb_sim_cost *costs = pb_xcalloc((size_t)d, sizeof *costs);
    bool complete = true;
    for (int k = 0; k < d; k++) {
        int msgs = (k > 0 ? n : 0) + (k + 1 < d ? n : 0);  /* the messages stage k receives */
        double recv = msgs ? sr[k].comm_s / msgs : 0;
        costs[k] = (struct pb_sim_cost){sr[k].op_s[0], sr[k].op_s[1], sr[k].op_s[2], recv};
        complete &= !isnan(costs[k].f) && !isnan(costs[k].b) && !isnan(costs[k].u);
    }
    double makespan = NAN;
    struct pb_sim_result res;
    struct pb_err e;
    if (complete && !pb_simulate_pipe(r->sch, &r->pipe, r->progs, costs, d, false, &res, &e)) {
        makespan = res.makespan_s;
        for (int k = 0; k < d; k++)
            sr[k].sim_bubble = res.bubble[k];
        pb_sim_result_finish(&res);
    }
    free(costs);
    return makespan;
}

/* The epoch's row at rank 0: stage records and events of every stage, the training
 * loss of the last. */
static int record(struct run_state *r, int epoch, double wall, double vloss, double vacc,
                  double vbleu, struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages, nlocal = r->hi - r->lo;
    struct pb_stage_record *sr = pb_xcalloc((size_t)d, sizeof *sr);
    size_t nev = 0;
    double ops = 0;
    for (int k = r->lo; k < r->hi; k++) {
        pb_worker_record(&r->workers[k], &sr[k]);
        nev += (size_t)r->workers[k].st.nevents;
        ops += (double)r->workers[k].st.ops;
    }
    struct pb_event_record *ev = pb_xcalloc(nev + 1, sizeof *ev);
    nev = 0;
    for (int k = r->lo; k < r->hi; k++) {
        size_t n = (size_t)r->workers[k].st.nevents;
        if (n)   /* events is NULL when none are kept: memcpy's source must not be */
            memcpy(ev + nev, r->workers[k].events, n * sizeof *ev);
        nev += n;
    }
    if (r->dist) {
        struct pb_stage_record mine = sr[r->lo];
        pb_dist_gather(r->dist, &mine, sizeof mine * (size_t)nlocal, sr, 0);
        void *all = NULL;
        size_t bytes = 0;
        pb_dist_gatherv(r->dist, ev, nev * sizeof *ev, &all, &bytes, 0);
        free(ev);
        ev = all;
        nev = bytes / sizeof *ev;
    }
    pb_dist_sum(r->dist, &ops);
    double loss[2] = {0, 0};
    if (r->hi == d) {
        loss[0] = r->workers[d - 1].st.loss_sum;
        loss[1] = (double)r->workers[d - 1].st.loss_count;
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
        .lr = r->workers[r->lo].optim.lr,
        .nstages = d,
        .stages = sr,
        .ops = (int64_t)ops,
        .nevents = (int)nev,
        .events = ev,
    };
    if (run_writer(r)) {
        for (int k = 0; k < d; k++)
            sr[k].bubble_frac = wall > 0 ? 1.0 - sr[k].busy_s / wall : 0;
        rec.sim_wall_s = simulate_epoch(r, sr);
        rec.sim_throughput = rec.sim_wall_s > 0 ? (double)samples / rec.sim_wall_s : NAN;
        rc = pb_results_epoch(r->db, r->run_id, &rec, e);
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
    if (!c->quiet && run_writer(r)) {
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

int pb_run_epoch(struct run_state *r, int epoch, int32_t *order, struct pb_run_summary *sum,
              bool *diverged, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages;
    if (pb_dataset_has_inputs(&r->train) || r->train.y)
        pb_dataset_epoch_order(&r->train, c->seed, epoch, c->shuffle,
                               c->microbatch_size *
                                   (r->sch->uses_microbatches ? r->pipe.microbatches : 1),
                               order);
    struct pb_data_view view = {&r->train, order, c->microbatch_size, {c->seed, epoch, true},
                                r->prefetch};
    if (r->prefetch) {
        /* the thread prepares the training micro-batches, then the validation batches */
        struct pb_data_view val = val_view(r, epoch);
        queue_pass(r, &r->progs[0], &view);
        queue_pass(r, &r->eval_progs[0], &val);
    }
    pb_dist_barrier(r->dist);
    int rc = 0;
    for (int k = r->lo; k < r->hi && !rc; k++) {
        r->workers[k].trace = (struct pb_worker_trace){r->trace_epochs[epoch], c->trace_mb_lo,
                                                       c->trace_mb_hi ? c->trace_mb_hi : INT_MAX};
        rc = pb_worker_begin_epoch(&r->workers[k], epoch, &r->progs[k], view, e);
        r->workers[k].epoch_t0 = r->workers[r->lo].epoch_t0;  /* one time origin for events */
    }
    if (pb_dist_any(r->dist, rc != 0))
        return -1;
    double t0 = pb_now_s();
    rc = execute(r, r->progs, e);
    pb_dist_barrier(r->dist);
    double wall = pb_now_s() - t0;
    int div = r->hi == d && r->workers[d - 1].diverged;
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
    if (pb_dist_any(r->dist, validate(r, epoch, &vloss, &vacc, e) != 0))
        return -1;
    double vbleu;
    if (pb_run_val_bleu(r, &vbleu, e))
        return -1;
    return record(r, epoch, wall, vloss, vacc, vbleu, sum, e);
}

/* ps[k], bs[k], lay[k] of the D stages at rank 0, D returned there; 0 elsewhere */
static int gather_weights(struct run_state *r, struct pb_stage *lay, float **ps, float **bs)
{
    int d = r->cfg->stages;
    bool local = !r->dist;
    for (int k = r->lo; k < r->hi; k++) {
        struct pb_stage *mine = &r->stages[k];
        float *p = pb_xmalloc(mine->nparams * sizeof(float) + 1);
        float *b = pb_xmalloc(mine->nbuffers * sizeof(float) + 1);
        mine->be->ops->download(mine->be, p, mine->params, mine->nparams * sizeof(float));
        mine->be->ops->download(mine->be, b, mine->buffers, mine->nbuffers * sizeof(float));
        mine->be->ops->sync(mine->be);
        if (run_writer(r)) {
            ps[k] = p;
            bs[k] = b;
        } else {
            pb_dist_send(r->dist, p, mine->nparams * sizeof(float), 0, PB_TAG_WEIGHTS);
            pb_dist_send(r->dist, b, mine->nbuffers * sizeof(float), 0, PB_TAG_WEIGHTS);
            free(p);
            free(b);
        }
    }
    if (!run_writer(r))
        return 0;
    for (int k = 0; k < d; k++) {
        pb_stage_layout(&lay[k], &r->model, k, d, r->bounds[k], r->bounds[k + 1]);
        if (local || k < r->hi)
            continue;
        ps[k] = pb_xmalloc(lay[k].nparams * sizeof(float) + 1);
        bs[k] = pb_xmalloc(lay[k].nbuffers * sizeof(float) + 1);
        pb_dist_recv(r->dist, ps[k], lay[k].nparams * sizeof(float), k, PB_TAG_WEIGHTS);
        pb_dist_recv(r->dist, bs[k], lay[k].nbuffers * sizeof(float), k, PB_TAG_WEIGHTS);
    }
    return d;
}

static void weights_free(struct pb_stage *lay, float **ps, float **bs, int n)
{
    for (int k = 0; k < n; k++) {
        free(ps[k]);
        free(bs[k]);
        pb_stage_finish(&lay[k]);
    }
}

int pb_run_with_weights(struct run_state *r, pb_run_weights_fn use, void *ctx, struct pb_err *e)
{
    int d = r->cfg->stages;
    struct pb_stage *lay = pb_xcalloc((size_t)d, sizeof *lay);
    float **ps = pb_xcalloc((size_t)d, sizeof *ps), **bs = pb_xcalloc((size_t)d, sizeof *bs);
    int n = gather_weights(r, lay, ps, bs), rc = 0;
    if (n)
        rc = use(r, lay, ps, bs, ctx, e);
    weights_free(lay, ps, bs, n);
    free(lay);
    free(ps);
    free(bs);
    if (pb_dist_any(r->dist, rc != 0)) {
        if (!rc)
            e->msg[0] = 0;
        return -1;
    }
    return 0;
}

struct save_to {
    const char *path, *meta;
};

static int save_host(struct run_state *r, struct pb_stage *lay, float *const *ps,
                     float *const *bs, void *ctx, struct pb_err *e)
{
    const struct save_to *to = ctx;
    return pb_checkpoint_save_host(lay, r->cfg->stages, ps, bs, to->path, to->meta, e);
}

int pb_run_save(struct run_state *r, const char *path, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    char meta[512];
    snprintf(meta, sizeof meta, "{\"model\":\"%s\",\"stages\":\"%d\",\"schedule\":\"%s\"}", c->model,
             c->stages, c->schedule);
    if (!r->dist)
        return pb_checkpoint_save(r->stages, c->stages, path, meta, e);
    /* gather every stage's weights to rank 0, which knows their layouts */
    struct save_to save = {path, meta};
    return pb_run_with_weights(r, save_host, &save, e);
}
