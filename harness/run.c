/* harness/run.c — one training run end to end (run.h). Everything the user can get
 * wrong is checked before the run's row is written, so a bad configuration leaves
 * nothing in the results; once the row exists, every way out records a status. */
#include "run.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "cli.h"
#include "executor.h"
#include "interrupt.h"
#include "predictor.h"
#include "program.h"
#include "workload.h"

void pb_run_cfg_defaults(struct pb_run_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->model = "mlp";
    c->schedule = "pipedream";
    c->executor = "seq";
    c->db = PB_RESULTS_DEFAULT_DB;
    c->optimizer = "sgdm";
    pb_optim_cfg_defaults(&c->optim, PB_OPT_SGD);
    c->optim.momentum = 0.9f;
    c->stages = 4;
    c->microbatch_size = 64;
    c->epochs = 1;
    c->seed = 1;
    c->shuffle = true;
}

char *pb_run_cfg_json(const struct pb_run_cfg *c)
{
    cJSON *o = cJSON_CreateObject();
    const struct pb_optim_cfg *oc = &c->optim;
    cJSON_AddStringToObject(o, "model", c->model);
    cJSON_AddStringToObject(o, "dataset", c->dataset ? c->dataset : "");
    cJSON_AddStringToObject(o, "data_dir", c->data_dir ? c->data_dir : "");
    cJSON_AddStringToObject(o, "schedule", c->schedule);
    cJSON_AddStringToObject(o, "variant", c->variant ? c->variant : "");
    cJSON_AddStringToObject(o, "executor", c->executor);
    cJSON_AddStringToObject(o, "optimizer", c->optimizer);
    cJSON_AddNumberToObject(o, "lr", oc->lr);
    cJSON_AddNumberToObject(o, "momentum", oc->momentum);
    cJSON_AddNumberToObject(o, "dampening", oc->dampening);
    cJSON_AddBoolToObject(o, "nesterov", oc->nesterov);
    cJSON_AddNumberToObject(o, "weight_decay", oc->weight_decay);
    cJSON_AddNumberToObject(o, "beta1", oc->beta1);
    cJSON_AddNumberToObject(o, "beta2", oc->beta2);
    cJSON_AddNumberToObject(o, "eps", oc->eps);
    cJSON_AddNumberToObject(o, "alpha", oc->alpha);
    cJSON *steps = cJSON_AddArrayToObject(o, "lr_steps");
    for (int i = 0; i < oc->n_lr_steps; i++)
        cJSON_AddItemToArray(steps, cJSON_CreateNumber(oc->lr_steps[i]));
    cJSON_AddNumberToObject(o, "lr_gamma", oc->lr_gamma);
    cJSON_AddNumberToObject(o, "stages", c->stages);
    cJSON_AddNumberToObject(o, "microbatch_size", c->microbatch_size);
    cJSON_AddNumberToObject(o, "microbatches", c->microbatches);
    cJSON_AddNumberToObject(o, "epochs", c->epochs);
    cJSON_AddNumberToObject(o, "limit_train", c->limit_train);
    cJSON_AddNumberToObject(o, "limit_val", c->limit_val);
    cJSON_AddNumberToObject(o, "threads", c->threads);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    cJSON_AddStringToObject(o, "seed", seed);
    cJSON_AddBoolToObject(o, "shuffle", c->shuffle);
    cJSON_AddNumberToObject(o, "label_smoothing", c->label_smoothing);
    cJSON_AddStringToObject(o, "init", c->init ? c->init : "");
    cJSON_AddStringToObject(o, "save", c->save ? c->save : "");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Everything a run holds. */
struct run_state {
    const struct pb_run_cfg *cfg;
    const struct pb_schedule *sch;
    const struct pb_workload *workload;
    const char *dataset;          /* --dataset, or the workload's own */
    struct pb_pipe pipe;
    struct pb_dataset train, val;
    struct pb_model model;
    int *bounds;
    struct pb_backend **be;
    struct pb_stage *stages;
    struct pb_worker *workers;
    struct pb_program *progs;
    int nstages_ready, nworkers_ready;
    bool progs_ready;
    struct pb_results *db;
    int64_t run_id;
};

static int check_cfg(const struct pb_run_cfg *c, struct pb_err *e)
{
    if (c->stages < 1)
        return pb_err_set(e, "--stages must be at least 1 (got %d)", c->stages);
    if (c->microbatch_size < 1)
        return pb_err_set(e, "--microbatch-size must be at least 1 (got %d)", c->microbatch_size);
    if (c->microbatches < 0)
        return pb_err_set(e, "--microbatches must be at least 1 (got %d)", c->microbatches);
    if (c->epochs < 1)
        return pb_err_set(e, "--epochs must be at least 1 (got %d)", c->epochs);
    if (c->limit_train < 0 || c->limit_val < 0)
        return pb_err_set(e, "--limit-train and --limit-val must be >= 0 (0 = all)");
    if (c->threads < 0)
        return pb_err_set(e, "--threads must be >= 0 (0 = all cores)");
    if (!(c->label_smoothing >= 0.0f && c->label_smoothing < 1.0f))
        return pb_err_set(e, "--label-smoothing must be in [0, 1) (got %g)", c->label_smoothing);
    if (strcmp(c->executor, "seq") && strcmp(c->executor, "threads"))
        return pb_err_set(e, "unknown executor '%s'; valid executors: seq, threads", c->executor);
    return pb_optim_cfg_check(&c->optim, e);
}

/* The schedule, its pipe and the predictor forms its ops will use. */
static int setup_schedule(struct run_state *r, int nmb, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    r->sch = pb_schedule_find(c->schedule, e);
    if (!r->sch)
        return -1;
    r->pipe = (struct pb_pipe){
        .stages = c->stages,
        .length = nmb,
        .microbatches = c->microbatches ? c->microbatches : c->stages,
        .optimizer = c->optim.kind,
        .variant = c->variant,
    };
    r->progs = pb_xcalloc((size_t)c->stages, sizeof *r->progs);
    if (pb_programs_build(r->sch, &r->pipe, r->progs, e))
        return -1;
    r->progs_ready = true;
    PB_CHECK(pb_programs_validate(&r->pipe, r->progs, 1, e) == 0);
    for (int k = 0; k < c->stages; k++)
        for (int i = 0; i < r->progs[k].n; i++) {
            const struct pb_op *op = &r->progs[k].ops[i];
            bool predicts = op->wsrc == PB_W_PREDICTED || op->wsrc == PB_W_GROUP;
            if (predicts && pb_predictor_check(c->optim.kind, &c->optim, op->pform, e))
                return pb_err_prefix(e, "schedule '%s': ", c->schedule);
        }
    return 0;
}

static int load_data(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    r->workload = pb_workload_find(c->model, e);
    if (!r->workload)
        return -1;
    const char *ds = r->dataset = c->dataset ? c->dataset : r->workload->dataset;
    if (pb_dataset_load_opts(&r->train, ds, c->data_dir, PB_SPLIT_TRAIN, c->limit_train, c->seed,
                             &c->synthetic, e) ||
        pb_dataset_load_opts(&r->val, ds, c->data_dir, PB_SPLIT_TEST, c->limit_val, c->seed,
                             &c->synthetic, e))
        return -1;
    if (r->train.n / c->microbatch_size < 1)
        return pb_err_set(e, "%d training samples make no micro-batch of %d; lower "
                             "--microbatch-size or raise --limit-train",
                          r->train.n, c->microbatch_size);
    if (r->val.n / c->microbatch_size < 1)
        return pb_err_set(e, "%d validation samples make no batch of %d; lower --microbatch-size "
                             "or raise --limit-val", r->val.n, c->microbatch_size);
    return 0;
}

static int build_model(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    const struct pb_workload *wl = r->workload;
    struct pb_shape sample = {1, r->train.c, r->train.h, r->train.w};
    if (wl->build(&r->model, sample, r->train.nclasses, e))
        return -1;
    r->model.label_smoothing = c->label_smoothing;
    if (pb_model_finalize(&r->model, c->microbatch_size, e))
        return -1;
    r->bounds = pb_xcalloc((size_t)c->stages + 1, sizeof *r->bounds);
    return pb_partition_balanced(&r->model, c->stages, r->bounds, e);
}

static int stage_threads(const struct pb_run_cfg *c)
{
    int cores = c->threads > 0 ? c->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int t = cores / c->stages;
    return t > 0 ? t : 1;
}

static int build_stages(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages;
    r->be = pb_xcalloc((size_t)d, sizeof *r->be);
    r->stages = pb_xcalloc((size_t)d, sizeof *r->stages);
    r->workers = pb_xcalloc((size_t)d, sizeof *r->workers);
    for (int k = 0; k < d; k++) {
        r->be[k] = pb_backend_create("cpu", stage_threads(c), e);
        if (!r->be[k])
            return -1;
        if (pb_stage_init(&r->stages[k], r->be[k], &r->model, k, d, r->bounds[k], r->bounds[k + 1], e))
            return -1;
        r->nstages_ready++;
        pb_stage_init_params(&r->stages[k], c->seed, e);
    }
    if (c->init && pb_checkpoint_load(r->stages, d, c->init, e))
        return -1;
    for (int k = 0; k < d; k++) {
        if (pb_worker_init(&r->workers[k], &r->stages[k], &c->optim, &r->pipe, c->seed, e))
            return -1;
        r->nworkers_ready++;
    }
    return 0;
}

static void run_state_finish(struct run_state *r)
{
    for (int k = 0; k < r->nworkers_ready; k++)
        pb_worker_finish(&r->workers[k]);
    for (int k = 0; k < r->nstages_ready; k++)
        pb_stage_finish(&r->stages[k]);
    if (r->be)
        for (int k = 0; k < r->cfg->stages; k++)
            pb_backend_destroy(r->be[k]);
    if (r->progs_ready)
        pb_programs_finish(r->progs, r->cfg->stages);
    free(r->progs);
    free(r->be);
    free(r->stages);
    free(r->workers);
    free(r->bounds);
    pb_model_finish(&r->model);
    pb_dataset_finish(&r->train);
    pb_dataset_finish(&r->val);
    pb_results_close(r->db);
}

/* Forward-only pass over the validation set with the current weights W. Batches of
 * the micro-batch size; a last incomplete batch is left out (SPEC §1's rule). */
static int validate(struct run_state *r, double *loss, double *acc, struct pb_err *e)
{
    int d = r->cfg->stages, b = r->cfg->microbatch_size, nb = r->val.n / b;
    struct pb_stage *first = &r->stages[0], *last = &r->stages[d - 1];
    float *hx = pb_xmalloc(pb_shape_count(first->in_shape) * sizeof(float));
    int32_t *hy = pb_xmalloc((size_t)b * sizeof(int32_t));
    double loss_sum = 0;
    long correct = 0;
    int rc = 0;
    for (int j = 0; j < nb && !rc; j++) {
        pb_dataset_gather(&r->val, NULL, j * b, b, hx, hy);
        last->be->ops->upload(last->be, r->workers[d - 1].labels, hy, (size_t)b * sizeof(int32_t));
        struct pb_tensor x;
        rc = pb_tensor_alloc(first->be, &x, first->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
        if (rc)
            break;
        first->be->ops->upload(first->be, x.data, hx, pb_shape_count(x.shape) * sizeof(float));
        struct pb_step_ctx c = {false, r->cfg->seed, j};
        for (int k = 0; k < d && !rc; k++) {
            struct pb_stage *s = &r->stages[k];
            struct pb_stage_act act;
            struct pb_tensor y = {0};
            rc = pb_stage_forward(s, &c, s->params, x, r->workers[k].labels, &act, &y, e);
            if (rc || k == d - 1) {
                loss_sum += act.loss;
                correct += act.correct;
                break;
            }
            struct pb_stage *next = &r->stages[k + 1];
            rc = pb_tensor_alloc(next->be, &x, next->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
            if (!rc)
                next->be->ops->upload(next->be, x.data, y.data, pb_shape_count(y.shape) * sizeof(float));
            pb_backend_free(s->be, y.data);
        }
    }
    free(hx);
    free(hy);
    *loss = loss_sum / nb;
    *acc = (double)correct / ((double)nb * b);
    return rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One epoch: train, validate, record. Returns 0, or -1 (e set) with *diverged. */
static int run_epoch(struct run_state *r, int epoch, int32_t *order, struct pb_run_summary *sum,
                     bool *diverged, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages;
    pb_epoch_order(c->seed, epoch, r->train.n, c->shuffle, order);
    struct pb_data_view view = {&r->train, order, c->microbatch_size};
    for (int k = 0; k < d; k++) {
        pb_worker_begin_epoch(&r->workers[k], epoch, &r->progs[k], view);
        r->workers[k].epoch_t0 = r->workers[0].epoch_t0;  /* one time origin for events */
    }
    double t0 = now_s();
    int rc = !strcmp(c->executor, "threads") ? pb_exec_threads(r->workers, d, r->progs, d, e)
                                             : pb_exec_seq(r->workers, d, r->progs, e);
    double wall = now_s() - t0;
    *diverged = r->workers[d - 1].diverged;
    if (rc)
        return -1;
    double vloss, vacc;
    if (validate(r, &vloss, &vacc, e))
        return -1;
    const struct pb_worker *lw = &r->workers[d - 1];
    struct pb_stage_record *sr = pb_xcalloc((size_t)d, sizeof *sr);
    int nev = 0;
    for (int k = 0; k < d; k++) {
        pb_worker_record(&r->workers[k], &sr[k]);
        sr[k].bubble_frac = wall > 0 ? 1.0 - sr[k].busy_s / wall : 0;
        nev += r->workers[k].st.nevents;
    }
    struct pb_event_record *ev = pb_xcalloc((size_t)nev + 1, sizeof *ev);
    nev = 0;
    for (int k = 0; k < d; k++) {
        memcpy(ev + nev, r->workers[k].st.events, (size_t)r->workers[k].st.nevents * sizeof *ev);
        nev += r->workers[k].st.nevents;
    }
    long samples = (long)r->pipe.length * c->microbatch_size;
    struct pb_epoch_record rec = {
        .epoch = epoch,
        .train_loss = lw->st.loss_count ? lw->st.loss_sum / (double)lw->st.loss_count : NAN,
        .val_loss = vloss,
        .val_acc = vacc,
        .samples = samples,
        .wall_s = wall,
        .throughput = wall > 0 ? (double)samples / wall : 0,
        .lr = r->workers[0].optim.lr,
        .nstages = d,
        .stages = sr,
        .nevents = nev,
        .events = ev,
    };
    rc = pb_results_epoch(r->db, r->run_id, &rec, e);
    free(sr);
    free(ev);
    if (rc)
        return -1;
    sum->epochs_done = epoch + 1;
    sum->final_acc = vacc;
    sum->final_train_loss = rec.train_loss;
    if (vacc > sum->best_acc)
        sum->best_acc = vacc;
    if (c->on_epoch)
        c->on_epoch(c->on_epoch_ctx, epoch, c->epochs, vacc);
    if (!c->quiet)
        printf("epoch %d: train loss %.4f, val loss %.4f, val acc %.2f%%, %.1f samples/s, %.2f s\n",
               epoch + 1, rec.train_loss, vloss, 100 * vacc, rec.throughput, wall);
    return 0;
}

static int begin_run(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    if (pb_results_open(&r->db, c->db, e))
        return -1;
    char *json = pb_run_cfg_json(c);
    struct pb_run_info info = {
        .config_json = json,
        .model = c->model,
        .dataset = r->dataset,
        .schedule = c->schedule,
        .variant = c->variant,
        .optimizer = c->optimizer,
        .executor = c->executor,
        .stages = c->stages,
        .microbatch_size = c->microbatch_size,
        .microbatches = r->pipe.microbatches,
        .epochs = c->epochs,
        .seed = c->seed,
        .lr = c->optim.lr,
    };
    r->run_id = pb_results_run_begin(r->db, &info, e);
    free(json);
    return r->run_id > 0 ? 0 : -1;
}

static int train(struct run_state *r, struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int32_t *order = pb_xmalloc((size_t)r->train.n * sizeof *order);
    double t0 = now_s();
    int rc = 0;
    bool diverged = false;
    for (int epoch = 0; epoch < c->epochs && !rc; epoch++)
        rc = run_epoch(r, epoch, order, sum, &diverged, e);
    free(order);
    sum->seconds = now_s() - t0;
    if (!rc && c->save) {
        char meta[512];
        snprintf(meta, sizeof meta, "{\"model\":\"%s\",\"stages\":\"%d\",\"schedule\":\"%s\"}",
                 c->model, c->stages, c->schedule);
        rc = pb_checkpoint_save(r->stages, c->stages, c->save, meta, e);
    }
    enum pb_run_status st = !rc           ? PB_RUN_DONE
                            : diverged      ? PB_RUN_DIVERGED
                            : pb_interrupted() ? PB_RUN_INTERRUPTED
                                            : PB_RUN_FAILED;
    sum->status = st;
    struct pb_err e2;
    if (pb_results_run_end(r->db, r->run_id, st, rc ? e->msg : NULL, &e2) && !rc) {
        *e = e2;
        rc = -1;
    }
    return rc;
}

int pb_run_check(const struct pb_run_cfg *c, struct pb_err *e)
{
    if (check_cfg(c, e) || !pb_workload_find(c->model, e))
        return -1;
    if (c->dataset && !pb_dataset_summary(c->dataset))
        return pb_err_set(e, "unknown dataset '%s'; `pipebench list` shows the datasets",
                          c->dataset);
    /* two mini-batches' worth of micro-batches: every op kind the schedule emits */
    struct run_state r = {.cfg = c};
    int m = c->microbatches > c->stages ? c->microbatches : c->stages;
    int rc = setup_schedule(&r, 2 * m, e);
    if (r.progs_ready)
        pb_programs_finish(r.progs, c->stages);
    free(r.progs);
    return rc;
}

int pb_run(const struct pb_run_cfg *c, struct pb_run_summary *out, struct pb_err *e)
{
    struct run_state r = {.cfg = c};
    struct pb_run_summary sum = {.status = PB_RUN_FAILED};
    int status = PB_EXIT_USAGE;
    if (check_cfg(c, e) || load_data(&r, e) || build_model(&r, e) ||
        setup_schedule(&r, r.train.n / c->microbatch_size, e) || build_stages(&r, e) ||
        begin_run(&r, e))
        goto done;
    sum.run_id = r.run_id;
    if (pb_results_run_started(r.db, r.run_id, e)) {
        struct pb_err e2;
        pb_results_run_end(r.db, r.run_id, PB_RUN_FAILED, e->msg, &e2);
        goto done;
    }
    pb_interrupt_install();
    status = train(&r, &sum, e) ? PB_EXIT_RUN : PB_EXIT_OK;
    pb_interrupt_restore();
done:
    run_state_finish(&r);
    if (out)
        *out = sum;
    return status;
}
