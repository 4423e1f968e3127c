/* harness/driver/local_stages.c — a process's stages (local_stages.h): created from the
 * plan, each on its device, and their weights gathered for saving and decoding. */
#include "harness/driver/local_stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/checkpoint.h"

/* The host memory of the loaded data, counted as PB_MEM_HOST of the stage that reads
 * it: the inputs for the first stage, the labels for the last. */
static void account_data(struct pb_local_stages *ls, const struct pb_plan *p)
{
    int d = p->cfg->stages;
    const struct pb_dataset *sets[2] = {&p->train, &p->val};
    for (int i = 0; i < 2; i++) {
        const struct pb_dataset *ds = sets[i];
        if (pb_dataset_has_inputs(ds) && pb_plan_holds(p, 0))
            pb_backend_account(ls->be[0], PB_MEM_HOST, pb_dataset_input_bytes(ds), true);
        if (ds->y && pb_plan_holds(p, d - 1))
            pb_backend_account(ls->be[d - 1], PB_MEM_HOST, pb_dataset_label_bytes(ds), true);
    }
}

/* Stage k's backend, on its device. */
static struct pb_backend *create_backend(const struct pb_plan *p, int k, struct pb_err *e)
{
    struct pb_backend_cfg bc = {.device = p->devices[k], .threads = p->stage_threads,
                                .tf32 = p->cfg->tf32, .deterministic = p->cfg->deterministic};
    struct pb_backend *be = p->backend->create(&bc, e);
    if (!be && bc.device != 0)
        pb_err_prefix(e, "--devices %s: stage %d's device %d: ",
                      p->cfg->devices ? p->cfg->devices : "0", k, bc.device);
    if (!be && bc.device != 0) {
        size_t n = strlen(e->msg);
        snprintf(e->msg + n, sizeof e->msg - n, "; give --devices indices of devices the %s "
                 "backend has (--devices 0 puts every stage on device 0)", p->backend->name);
    }
    return be;
}

static int create(struct pb_local_stages *ls, struct pb_plan *p, struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    int d = c->stages;
    ls->be = pb_xcalloc((size_t)d, sizeof *ls->be);
    ls->stages = pb_xcalloc((size_t)d, sizeof *ls->stages);
    ls->workers = pb_xcalloc((size_t)d, sizeof *ls->workers);
    ls->stage_ready = pb_xcalloc((size_t)d, sizeof *ls->stage_ready);
    ls->worker_ready = pb_xcalloc((size_t)d, sizeof *ls->worker_ready);
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(p, k))
            continue;
        ls->be[k] = create_backend(p, k, e);
        if (!ls->be[k])
            return -1;
        if (pb_stage_init(&ls->stages[k], ls->be[k], &p->model, k, d, p->bounds[k],
                          p->bounds[k + 1], e))
            return -1;
        ls->stage_ready[k] = true;
        if (pb_stage_init_params(&ls->stages[k], c->seed, e))
            return -1;
    }
    account_data(ls, p);
    /* stage 0's inputs come from the loader thread; PIPEBENCH_SYNC_LOADER=1 (for tests
     * only) gathers them in the worker instead, which must give the same bits */
    const char *sync = getenv("PIPEBENCH_SYNC_LOADER");
    if (pb_plan_holds(p, 0) && !(sync && !strcmp(sync, "1")))
        pb_feed_start_loader(&p->feed, ls->be[0], pb_shape_count(ls->stages[0].in_shape));
    /* --init: each run of neighbouring held stages at once (a device's chunks are not
       neighbours) */
    for (int k = 0, run = 0; c->init && k < d; k += run ? run : 1) {
        for (run = 0; k + run < d && pb_plan_holds(p, k + run);)
            run++;
        if (run && pb_checkpoint_load(&ls->stages[k], run, c->init, e))
            return -1;
    }
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(p, k))
            continue;
        /* the stage's own delay where the schedule reschedules the rate (semantics §4.11) */
        struct pb_optim_cfg oc = p->optim;
        oc.lr_delay = p->sch->lr_delay ? p->sch->lr_delay(&p->pipe, k) : 0;
        if (pb_worker_init(&ls->workers[k], &ls->stages[k], &oc, &p->pipe, c->seed, e))
            return -1;
        ls->worker_ready[k] = true;
    }
    return 0;
}

int pb_local_stages_create(struct pb_local_stages *ls, struct pb_plan *p, struct pb_err *e)
{
    memset(ls, 0, sizeof *ls);
    return pb_plan_collective(p, create(ls, p, e), e);
}

void pb_local_stages_finish(struct pb_local_stages *ls, struct pb_plan *p)
{
    pb_feed_finish(&p->feed);
    for (int k = 0; ls->worker_ready && k < p->cfg->stages; k++)
        if (ls->worker_ready[k])
            pb_worker_finish(&ls->workers[k]);
    for (int k = 0; ls->stage_ready && k < p->cfg->stages; k++)
        if (ls->stage_ready[k])
            pb_stage_finish(&ls->stages[k]);
    if (ls->be)
        for (int k = 0; k < p->cfg->stages; k++)
            pb_backend_destroy(ls->be[k]);
    free(ls->stage_ready);
    free(ls->worker_ready);
    free(ls->be);
    free(ls->stages);
    free(ls->workers);
    memset(ls, 0, sizeof *ls);
}

/* ps[k], bs[k], lay[k] of the D stages at the writer, D returned there; 0 elsewhere */
static int gather_weights(struct pb_local_stages *ls, const struct pb_plan *p,
                          struct pb_stage *lay, float **ps, float **bs)
{
    int d = p->cfg->stages;
    bool local = !p->dist;
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(p, k))
            continue;
        struct pb_stage *mine = &ls->stages[k];
        float *w = pb_xmalloc(mine->nparams * sizeof(float) + 1);
        float *b = pb_xmalloc(mine->nbuffers * sizeof(float) + 1);
        pb_backend_bind(mine->be);  /* this thread may not have run the stage */
        mine->be->ops->download(mine->be, w, mine->params, mine->nparams * sizeof(float));
        mine->be->ops->download(mine->be, b, mine->buffers, mine->nbuffers * sizeof(float));
        mine->be->ops->sync(mine->be);
        if (pb_plan_writer(p)) {
            ps[k] = w;
            bs[k] = b;
        } else {
            pb_dist_send(p->dist, w, mine->nparams * sizeof(float), 0, PB_TAG_WEIGHTS);
            pb_dist_send(p->dist, b, mine->nbuffers * sizeof(float), 0, PB_TAG_WEIGHTS);
            free(w);
            free(b);
        }
    }
    if (!pb_plan_writer(p))
        return 0;
    for (int k = 0; k < d; k++) {
        pb_stage_layout(&lay[k], &p->model, k, d, p->bounds[k], p->bounds[k + 1]);
        if (local || pb_plan_holds(p, k))
            continue;
        /* in stage order, as each rank sent its stages: FIFO per rank and tag */
        ps[k] = pb_xmalloc(lay[k].nparams * sizeof(float) + 1);
        bs[k] = pb_xmalloc(lay[k].nbuffers * sizeof(float) + 1);
        pb_dist_recv(p->dist, ps[k], lay[k].nparams * sizeof(float), p->rank_of[k],
                     PB_TAG_WEIGHTS);
        pb_dist_recv(p->dist, bs[k], lay[k].nbuffers * sizeof(float), p->rank_of[k],
                     PB_TAG_WEIGHTS);
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

int pb_local_stages_weights(struct pb_local_stages *ls, const struct pb_plan *p,
                            pb_weights_fn use, void *ctx, struct pb_err *e)
{
    int d = p->cfg->stages;
    struct pb_stage *lay = pb_xcalloc((size_t)d, sizeof *lay);
    float **ps = pb_xcalloc((size_t)d, sizeof *ps), **bs = pb_xcalloc((size_t)d, sizeof *bs);
    int n = gather_weights(ls, p, lay, ps, bs), rc = 0;
    if (n)
        rc = use(ctx, lay, ps, bs, e);
    weights_free(lay, ps, bs, n);
    free(lay);
    free(ps);
    free(bs);
    if (pb_dist_any(p->dist, rc != 0)) {
        if (!rc)
            e->msg[0] = 0;
        return -1;
    }
    return 0;
}

struct save_to {
    const struct pb_plan *plan;
    const char *path, *meta;
};

static int save_host(void *ctx, struct pb_stage *lay, float *const *ps, float *const *bs,
                     struct pb_err *e)
{
    const struct save_to *to = ctx;
    return pb_checkpoint_save_host(lay, to->plan->cfg->stages, ps, bs, to->path, to->meta, e);
}

int pb_local_stages_save(struct pb_local_stages *ls, const struct pb_plan *p, const char *path,
                         struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    char meta[512];
    snprintf(meta, sizeof meta, "{\"model\":\"%s\",\"stages\":\"%d\",\"schedule\":\"%s\"}", c->model,
             c->stages, c->schedule);
    if (!p->dist)
        return pb_checkpoint_save(ls->stages, c->stages, path, meta, e);
    /* gather every stage's weights to rank 0, which knows their layouts */
    struct save_to save = {p, path, meta};
    return pb_local_stages_weights(ls, p, save_host, &save, e);
}
