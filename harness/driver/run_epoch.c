/* harness/driver/run_epoch.c — one epoch of a run (run_internal.h): the executor over the
 * schedule's programs, validation with the current weights, and the epoch's record
 * (gathered to rank 0 under MPI, then one database transaction). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness/store/checkpoint.h"
#include "harness/exec/executor.h"
#include "harness/base/interrupt.h"
#include "harness/driver/run_internal.h"

double run_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int last_rank(const struct run_state *r)
{
    return r->cfg->stages - 1;
}

/* The input of validation batch j for local stage lo: the data, or stage lo − 1's
 * output from the previous rank. */
static int val_input(struct run_state *r, int j, float *hx, int32_t *hy, struct pb_tensor *x,
                     struct pb_err *e)
{
    struct pb_stage *s = &r->stages[r->lo];
    int b = r->cfg->microbatch_size;
    if (r->hi == r->cfg->stages) {
        struct pb_stage *last = &r->stages[r->hi - 1];
        pb_dataset_gather(&r->val, NULL, j * b, b, NULL, hy);
        last->be->ops->upload(last->be, r->workers[r->hi - 1].labels, hy, (size_t)b * sizeof *hy);
    }
    if (r->lo == 0)
        pb_dataset_gather(&r->val, NULL, j * b, b, hx, NULL);
    else
        pb_dist_recv(r->dist, hx, pb_shape_count(s->in_shape) * sizeof *hx, r->lo - 1, PB_TAG_VAL);
    if (pb_tensor_alloc(s->be, x, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    s->be->ops->upload(s->be, x->data, hx, pb_shape_count(s->in_shape) * sizeof *hx);
    return 0;
}

/* Forward-only pass over the validation set with the current weights W (never
 * predicted). Batches of the micro-batch size; a last incomplete batch is left out. */
static int validate(struct run_state *r, double *loss, double *acc, struct pb_err *e)
{
    int d = r->cfg->stages, b = r->cfg->microbatch_size, nb = r->nval / b;
    size_t maxin = 0;
    for (int k = r->lo; k < r->hi; k++) {
        size_t n = pb_shape_count(r->stages[k].in_shape), m = pb_shape_count(r->stages[k].out_shape);
        maxin = n > maxin ? n : maxin;
        maxin = m > maxin ? m : maxin;
    }
    float *hx = pb_xmalloc(maxin * sizeof(float));
    int32_t *hy = pb_xmalloc((size_t)b * sizeof(int32_t));
    double res[2] = {0, 0};  /* Σ loss, Σ correct */
    int rc = 0;
    for (int j = 0; j < nb && !rc; j++) {
        struct pb_tensor x;
        rc = val_input(r, j, hx, hy, &x, e);
        struct pb_step_ctx c = {false, r->cfg->seed, j};
        for (int k = r->lo; k < r->hi && !rc; k++) {
            struct pb_stage *s = &r->stages[k];
            struct pb_stage_act act;
            struct pb_tensor y = {0};
            rc = pb_stage_forward(s, &c, s->params, x, r->workers[k].labels, &act, &y, e);
            if (rc)
                break;
            if (k == d - 1) {
                res[0] += act.loss;
                res[1] += act.correct;
            } else if (k == r->hi - 1) {
                s->be->ops->download(s->be, hx, y.data, pb_shape_count(y.shape) * sizeof *hx);
                pb_dist_send(r->dist, hx, pb_shape_count(y.shape) * sizeof *hx, k + 1, PB_TAG_VAL);
            } else {
                struct pb_stage *next = &r->stages[k + 1];
                rc = pb_tensor_alloc(next->be, &x, next->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
                if (!rc)
                    next->be->ops->upload(next->be, x.data, y.data,
                                          pb_shape_count(y.shape) * sizeof(float));
            }
            pb_backend_free(s->be, y.data);
        }
    }
    free(hx);
    free(hy);
    pb_dist_bcast(r->dist, res, sizeof res, last_rank(r));
    *loss = res[0] / nb;
    *acc = res[1] / ((double)nb * b);
    return rc;
}

static int execute(struct run_state *r, struct pb_err *e)
{
    const char *ex = r->cfg->executor;
    int d = r->cfg->stages;
    if (!strcmp(ex, "threads"))
        return pb_exec_threads(r->workers, d, r->progs, d, e);
    if (!strcmp(ex, "mpi"))
        return pb_exec_mpi(r->dist, &r->workers[r->lo], &r->progs[r->lo], e);
    return pb_exec_seq(r->workers, d, r->progs, e);
}

/* The epoch's row at rank 0: stage records and events of every stage, the training
 * loss of the last. */
static int record(struct run_state *r, int epoch, double wall, double vloss, double vacc,
                  struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages, nlocal = r->hi - r->lo;
    struct pb_stage_record *sr = pb_xcalloc((size_t)d, sizeof *sr);
    size_t nev = 0;
    for (int k = r->lo; k < r->hi; k++) {
        pb_worker_record(&r->workers[k], &sr[k]);
        nev += (size_t)r->workers[k].st.nevents;
    }
    struct pb_event_record *ev = pb_xcalloc(nev + 1, sizeof *ev);
    nev = 0;
    for (int k = r->lo; k < r->hi; k++) {
        memcpy(ev + nev, r->workers[k].st.events, (size_t)r->workers[k].st.nevents * sizeof *ev);
        nev += (size_t)r->workers[k].st.nevents;
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
        .samples = samples,
        .wall_s = wall,
        .throughput = wall > 0 ? (double)samples / wall : 0,
        .lr = r->workers[r->lo].optim.lr,
        .nstages = d,
        .stages = sr,
        .nevents = (int)nev,
        .events = ev,
    };
    if (run_writer(r)) {
        for (int k = 0; k < d; k++)
            sr[k].bubble_frac = wall > 0 ? 1.0 - sr[k].busy_s / wall : 0;
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
    if (!c->quiet && run_writer(r))
        printf("epoch %d: train loss %.4f, val loss %.4f, val acc %.2f%%, %.1f samples/s, %.2f s\n",
               epoch + 1, rec.train_loss, vloss, 100 * vacc, rec.throughput, wall);
    return 0;
}

int run_epoch(struct run_state *r, int epoch, int32_t *order, struct pb_run_summary *sum,
              bool *diverged, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages;
    if (r->train.x || r->train.y)
        pb_epoch_order(c->seed, epoch, r->train.n, c->shuffle, order);
    struct pb_data_view view = {&r->train, order, c->microbatch_size};
    pb_dist_barrier(r->dist);
    for (int k = r->lo; k < r->hi; k++) {
        pb_worker_begin_epoch(&r->workers[k], epoch, &r->progs[k], view);
        r->workers[k].epoch_t0 = r->workers[r->lo].epoch_t0;  /* one time origin for events */
    }
    double t0 = run_now_s();
    int rc = execute(r, e);
    pb_dist_barrier(r->dist);
    double wall = run_now_s() - t0;
    int div = r->hi == d && r->workers[d - 1].diverged;
    pb_dist_bcast(r->dist, &div, sizeof div, last_rank(r));
    *diverged = div;
    if (!rc && r->dist && div)
        rc = pb_err_set(e, "the loss is not finite: the run diverged (try a smaller --lr)");
    if (!rc && pb_dist_any(r->dist, pb_interrupted()))
        rc = pb_err_set(e, "interrupted");
    if (rc)
        return -1;
    double vloss, vacc;
    if (pb_dist_any(r->dist, validate(r, &vloss, &vacc, e) != 0))
        return -1;
    return record(r, epoch, wall, vloss, vacc, sum, e);
}

int run_save(struct run_state *r, const char *path, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    char meta[512];
    snprintf(meta, sizeof meta, "{\"model\":\"%s\",\"stages\":\"%d\",\"schedule\":\"%s\"}", c->model,
             c->stages, c->schedule);
    if (!r->dist)
        return pb_checkpoint_save(r->stages, c->stages, path, meta, e);
    /* gather every stage's weights to rank 0, which knows their layouts */
    struct pb_stage *mine = &r->stages[r->lo];
    float *p = pb_xmalloc(mine->nparams * sizeof(float) + 1);
    float *b = pb_xmalloc(mine->nbuffers * sizeof(float) + 1);
    mine->be->ops->download(mine->be, p, mine->params, mine->nparams * sizeof(float));
    mine->be->ops->download(mine->be, b, mine->buffers, mine->nbuffers * sizeof(float));
    int rc = 0;
    if (r->dist->rank != 0) {
        pb_dist_send(r->dist, p, mine->nparams * sizeof(float), 0, PB_TAG_WEIGHTS);
        pb_dist_send(r->dist, b, mine->nbuffers * sizeof(float), 0, PB_TAG_WEIGHTS);
    } else {
        int d = c->stages;
        struct pb_stage *lay = pb_xcalloc((size_t)d, sizeof *lay);
        float **ps = pb_xcalloc((size_t)d, sizeof *ps), **bs = pb_xcalloc((size_t)d, sizeof *bs);
        for (int k = 0; k < d; k++) {
            pb_stage_layout(&lay[k], &r->model, k, d, r->bounds[k], r->bounds[k + 1]);
            ps[k] = k ? pb_xmalloc(lay[k].nparams * sizeof(float) + 1) : p;
            bs[k] = k ? pb_xmalloc(lay[k].nbuffers * sizeof(float) + 1) : b;
            if (k) {
                pb_dist_recv(r->dist, ps[k], lay[k].nparams * sizeof(float), k, PB_TAG_WEIGHTS);
                pb_dist_recv(r->dist, bs[k], lay[k].nbuffers * sizeof(float), k, PB_TAG_WEIGHTS);
            }
        }
        rc = pb_checkpoint_save_host(lay, d, ps, bs, path, meta, e);
        for (int k = 0; k < d; k++) {
            if (k) {
                free(ps[k]);
                free(bs[k]);
            }
            pb_stage_finish(&lay[k]);
        }
        free(lay);
        free(ps);
        free(bs);
    }
    free(p);
    free(b);
    if (pb_dist_any(r->dist, rc != 0)) {
        if (!rc)
            e->msg[0] = 0;
        return -1;
    }
    return 0;
}
