/* harness/driver/run.c — one training run end to end (run.h). Everything the user can get
 * wrong is checked before the run's row is written, so a bad configuration leaves
 * nothing in the results; once the row exists, every way out records a status. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/clock.h"
#include "harness/base/err.h"
#include "harness/base/interrupt.h"
#include "harness/driver/run_internal.h"

void pb_run_cfg_defaults(struct pb_run_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->model = "mlp";
    c->schedule = "pipedream";
    c->executor = "seq";
    c->backend = "cpu";
    c->db = PB_RESULTS_DEFAULT_DB;
    c->optimizer = "sgdm";
    pb_optim_cfg_defaults(&c->optim, PB_OPT_SGD);
    c->optim.momentum = 0.9f;
    c->stages = 4;
    c->microbatch_size = 64;
    c->epochs = 1;
    c->seed = 1;
    c->repeats = 1;
    c->shuffle = true;
    c->checkpoint_every = -1;
}

/* The shortest decimal that reads back as f (0.01f is stored as 0.01, not as
 * 0.00999999977648258), so the configuration reads as it was typed. */
double pb_run_decimal(float f)
{
    char buf[32];
    for (int prec = 6; prec < 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    snprintf(buf, sizeof buf, "%.9g", (double)f);
    return strtod(buf, NULL);
}

char *pb_run_cfg_json(const struct pb_run_cfg *c)
{
    cJSON *o = cJSON_CreateObject();
    const struct pb_optim_cfg *oc = &c->optim;
    cJSON_AddStringToObject(o, "model", c->model);
    /* the preset and partition the run takes (resolved, so leaving the default out and
     * naming it give the same configuration; a preset that does not resolve is kept as
     * given, so the record reads back to itself and the run's checks still refuse it) */
    const struct pb_workload *w;
    const struct pb_preset *p = NULL;
    bool paper_cut = false;
    if (pb_run_model(c, &w, &p, &paper_cut, NULL))
        p = NULL;
    cJSON_AddStringToObject(o, "preset", p ? p->name : c->preset ? c->preset : "");
    char *partition = pb_run_partition_name(c, paper_cut);
    cJSON_AddStringToObject(o, "partition", partition);
    free(partition);
    cJSON_AddStringToObject(o, "dataset", c->dataset ? c->dataset : "");
    cJSON_AddStringToObject(o, "data_dir", c->data_dir ? c->data_dir : "");
    cJSON_AddStringToObject(o, "schedule", c->schedule);
    cJSON_AddStringToObject(o, "variant", c->variant ? c->variant : "");
    cJSON_AddStringToObject(o, "executor", c->executor);
    cJSON_AddStringToObject(o, "backend", c->backend);
    cJSON_AddStringToObject(o, "optimizer", c->optimizer);
    cJSON_AddNumberToObject(o, "lr", pb_run_decimal(oc->lr));
    cJSON_AddNumberToObject(o, "momentum", pb_run_decimal(oc->momentum));
    cJSON_AddNumberToObject(o, "dampening", pb_run_decimal(oc->dampening));
    cJSON_AddBoolToObject(o, "nesterov", oc->nesterov);
    cJSON_AddNumberToObject(o, "weight_decay", pb_run_decimal(oc->weight_decay));
    cJSON_AddNumberToObject(o, "beta1", pb_run_decimal(oc->beta1));
    cJSON_AddNumberToObject(o, "beta2", pb_run_decimal(oc->beta2));
    cJSON_AddNumberToObject(o, "eps", pb_run_decimal(oc->eps));
    cJSON_AddNumberToObject(o, "alpha", pb_run_decimal(oc->alpha));
    cJSON *steps = cJSON_AddArrayToObject(o, "lr_steps");
    for (int i = 0; i < oc->n_lr_steps; i++)
        cJSON_AddItemToArray(steps, cJSON_CreateNumber(oc->lr_steps[i]));
    cJSON_AddNumberToObject(o, "lr_gamma", pb_run_decimal(oc->lr_gamma));
    cJSON_AddNumberToObject(o, "stages", c->stages);
    if (c->batch > 0)   /* the micro-batch size follows from it and the schedule */
        cJSON_AddNumberToObject(o, "batch", c->batch);
    else
        cJSON_AddNumberToObject(o, "microbatch_size", c->microbatch_size);
    cJSON_AddNumberToObject(o, "microbatches", c->microbatches);
    cJSON_AddNumberToObject(o, "epochs", c->epochs);
    cJSON_AddNumberToObject(o, "limit_train", c->limit_train);
    cJSON_AddNumberToObject(o, "limit_val", c->limit_val);
    if (c->beam > 0)   /* beside greedy decoding only: older runs keep their identity */
        cJSON_AddNumberToObject(o, "beam", c->beam);
    cJSON_AddNumberToObject(o, "threads", c->threads);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    cJSON_AddStringToObject(o, "seed", seed);
    cJSON_AddBoolToObject(o, "shuffle", c->shuffle);
    cJSON_AddNumberToObject(o, "label_smoothing", pb_run_decimal(c->label_smoothing));
    cJSON_AddStringToObject(o, "init", c->init ? c->init : "");
    cJSON_AddStringToObject(o, "save", c->save ? c->save : "");
    cJSON_AddStringToObject(o, "trace_epochs", c->trace_epochs ? c->trace_epochs : "first,last");
    cJSON_AddNumberToObject(o, "trace_mb_lo", c->trace_mb_lo);
    cJSON_AddNumberToObject(o, "trace_mb_hi", c->trace_mb_hi);
    if (c->experiment)
        cJSON_AddStringToObject(o, "experiment", c->experiment);
    cJSON_AddNumberToObject(o, "checkpoint_every", c->checkpoint_every);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The boundary after epochs_done epochs (start_epoch < epochs_done < epochs): writes the
 * resume state when --checkpoint-every makes it due, or when a first signal asks the run
 * to stop here (whatever --checkpoint-every says; not under mpi, which writes none, nor
 * after a second signal, which stops now), and sets *stop, every rank agreeing. A
 * signal that comes while the state is written stops the run here too. */
static int boundary(struct run_state *r, int epochs_done, bool *stop, bool *saved,
                    struct pb_err *e)
{
    int every = pb_run_checkpoint_every(r->cfg);
    bool due = every > 0 && epochs_done % every == 0;
    *saved = false;
    for (;;) {
        *stop = pb_dist_any(r->dist, pb_interrupted());
        bool now = *stop && pb_dist_any(r->dist, pb_interrupted_now());
        if (*saved || now || r->dist || (!due && !*stop))
            return 0;
        if (pb_run_save_state(r, epochs_done, e))
            return -1;
        *saved = true;
    }
}

/* A repeat (index > 0) has trained what the first finished training of its configuration
 * and seed did: every epoch's losses and accuracy the very same numbers (the executors
 * are deterministic, so a difference is a bug). Every rank agrees on the outcome. */
static int check_repeat(struct run_state *r, struct pb_err *e)
{
    if (r->cfg->repeat == 0)
        return 0;
    struct pb_repeat_check chk = {.epoch = -1};
    int rc = run_writer(r) ? pb_results_repeat_check(r->db, r->run_id, &chk, e) : 0;
    if (!rc && chk.ref_id && chk.epoch >= 0)
        rc = pb_err_set(e, "repeat %d is not the same training as repeat %d (run %lld): epoch "
                        "%d's losses or accuracy differ, though training is deterministic "
                        "(design §2.3); this is a bug: please report it with both runs "
                        "(`pipebench show`)", r->cfg->repeat, chk.ref_repeat,
                        (long long)chk.ref_id, chk.epoch + 1);
    if (!pb_dist_any(r->dist, rc != 0))
        return 0;
    if (!rc)
        e->msg[0] = 0;   /* rank 0 says why */
    return -1;
}

static int train(struct run_state *r, struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int32_t *order = pb_xmalloc((size_t)r->ntrain * sizeof *order + 1);
    double t0 = pb_now_s();
    int rc = 0;
    bool diverged = false;
    for (int epoch = r->start_epoch; epoch < c->epochs && !rc; epoch++) {
        bool stop = false, saved = false;
        if (epoch > r->start_epoch)
            rc = boundary(r, epoch, &stop, &saved, e);
        else   /* a signal while the run started: no epoch begins */
            stop = pb_dist_any(r->dist, pb_interrupted());
        if (!rc && stop && saved)
            rc = pb_err_set(e, "interrupted after epoch %d; its resume state is written: "
                            "`pipebench resume %lld` continues the run", epoch,
                            (long long)r->run_id);
        else if (!rc && stop && r->dist)
            rc = pb_err_set(e, "interrupted %s epoch %d (no resume state under mpi)",
                            epoch > r->start_epoch ? "after" : "before",
                            epoch > r->start_epoch ? epoch : epoch + 1);
        else if (!rc && stop && epoch > r->start_epoch)
            rc = pb_err_set(e, "interrupted by a second signal after epoch %d; `pipebench "
                            "resume %lld` continues from the last resume state", epoch,
                            (long long)r->run_id);
        else if (!rc && stop)
            rc = pb_err_set(e, "interrupted before epoch %d began; `pipebench resume %lld` "
                            "continues from the last resume state, or from the start when "
                            "there is none", epoch + 1, (long long)r->run_id);
        if (!rc)
            rc = pb_run_epoch(r, epoch, order, sum, &diverged, e);
    }
    free(order);
    char state[4096];
    pb_run_state_path(c->db, r->run_id, state, sizeof state);
    if (!rc && run_writer(r))
        unlink(state);   /* done: nothing left to resume */
    sum->seconds = pb_now_s() - t0;
    if (!rc && c->save)
        rc = pb_run_save(r, c->save, e);
    if (!rc)
        rc = check_repeat(r, e);
    enum pb_run_status st = !rc                             ? PB_RUN_DONE
                            : diverged                      ? PB_RUN_DIVERGED
                            : pb_dist_any(r->dist, pb_interrupted()) ? PB_RUN_INTERRUPTED
                                                            : PB_RUN_FAILED;
    sum->status = st;
    struct pb_err e2;
    if (run_writer(r) && pb_results_run_end(r->db, r->run_id, st, rc ? e->msg : NULL, &e2) && !rc) {
        *e = e2;
        rc = -1;
    }
    return rc;
}

int pb_run_check(const struct pb_run_cfg *c, struct pb_err *e)
{
    const struct pb_workload *w;
    const struct pb_preset *p;
    bool paper_cut;
    if (pb_run_check_cfg(c, e) || pb_run_model(c, &w, &p, &paper_cut, e))
        return -1;
    if (c->dataset && !pb_dataset_summary(c->dataset))
        return pb_err_set(e, "unknown dataset '%s'; `pipebench list` shows the datasets",
                          c->dataset);
    /* two mini-batches' worth of micro-batches: every op kind the schedule emits (M
     * only for the schedules it matters to) */
    struct run_state r = {.cfg = c};
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, e);
    if (!sch)
        return -1;
    int m = sch->uses_microbatches && c->microbatches > c->stages ? c->microbatches : c->stages;
    if (3LL * 2 * m * c->stages > PB_MAX_PROGRAM_OPS)
        return pb_err_set(e, "%d stages with mini-batches of %d micro-batches make programs of "
                             "over %lld ops; use fewer --stages or --microbatches", c->stages, m,
                          PB_MAX_PROGRAM_OPS);
    int rc = pb_run_setup_schedule(&r, 2 * m, e);
    if (r.progs_ready)
        pb_programs_finish(r.progs, c->stages);
    if (r.eval_progs)
        pb_programs_finish(r.eval_progs, c->stages);
    free(r.progs);
    free(r.eval_progs);
    return rc;
}

/* MPI: one rank per stage. */
static int start_dist(struct run_state *r, struct pb_dist *dist, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    if (strcmp(c->executor, "mpi"))
        return 0;
    if (!pb_dist_available())
        return pb_run_check_cfg(c, e);
    if (pb_dist_init(dist, e))
        return -1;
    r->dist = dist;
    if (dist->size != c->stages) {
        if (dist->rank == 0)
            return pb_err_set(e, "--executor mpi runs one rank per stage: start it as "
                                 "`mpirun -np %d pipebench run ... --stages %d` (got %d ranks)",
                              c->stages, c->stages, dist->size);
        e->msg[0] = 0;
        return -1;
    }
    return 0;
}

/* What the first signal prints (the run's writer, unless --quiet). */
static const char stop_notice[] =
    "pipebench: stopping after the current epoch: it finishes, is recorded and the resume "
    "state is written; a second signal stops now\n";
static const char stop_notice_mpi[] =
    "pipebench: stopping after the current epoch (every rank agreeing): it finishes and is "
    "recorded; a second signal stops at the end of its training pass\n";

int pb_run(const struct pb_run_cfg *c, struct pb_run_summary *out, struct pb_err *e)
{
    struct run_state r = {.cfg = c};
    struct pb_run_summary sum = {.status = PB_RUN_FAILED};
    struct pb_dist dist;
    int status = PB_EXIT_USAGE;
    bool handlers = false;
    pb_interrupt_route();
    if (start_dist(&r, &dist, e) || pb_run_setup(&r, e) ||
        (c->resume_run > 0 && pb_run_load_state(&r, e)))
        goto done;
    /* from here a signal is counted (a signal during setup ends the process, with
     * nothing written); one that comes while the run row is written stops the run
     * before its first epoch */
    pb_interrupt_install(c->quiet || !run_writer(&r) ? NULL : r.dist ? stop_notice_mpi
                                                                     : stop_notice);
    handlers = true;
    if (pb_run_begin(&r, e)) {
        if (r.run_id > 0) {
            struct pb_err e2;
            pb_results_run_end(r.db, r.run_id, PB_RUN_FAILED, e->msg, &e2);
        }
        goto done;
    }
    sum.run_id = r.run_id;
    status = !train(&r, &sum, e)                 ? PB_EXIT_OK
             : sum.status == PB_RUN_INTERRUPTED ? PB_EXIT_INTERRUPTED
                                                : PB_EXIT_RUN;
done:
    if (handlers)
        pb_interrupt_restore();
    pb_run_state_finish(&r);
    if (r.dist)
        pb_dist_finish(r.dist);
    pb_interrupt_unroute();
    if (out)
        *out = sum;
    return status;
}
