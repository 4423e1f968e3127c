/* harness/driver/run.c — one training run end to end (run.h), as a story: start MPI when
 * the executor asks for it, build the plan (plan.h: every name resolved, the data, the
 * model and its partition, the programs), create the stages this process holds on their
 * devices (local_stages.h), take a resume state up, write the run's row (run_row.h),
 * train the epochs (run_epoch.h) with resume states at their boundaries (run_resume.h),
 * save, and record how the run ended. Everything the user can get wrong is checked
 * before the run's row is written, so a bad configuration leaves nothing in the
 * results; once the row exists, every way out records a status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/clock.h"
#include "harness/base/err.h"
#include "harness/base/interrupt.h"
#include "harness/driver/run_epoch.h"
#include "harness/driver/run_resume.h"
#include "harness/driver/run_row.h"

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

/* A run in this process: its plan, its stages, how its BLEU is scored, its row. */
struct run {
    struct pb_plan plan;
    struct pb_local_stages stages;
    struct pb_run_bleu bleu;
    struct pb_results *db;        /* the writer's */
    int64_t run_id;
    int start_epoch;              /* 0, or the first epoch a resumed run trains */
};

/* The boundary after epochs_done epochs (start_epoch < epochs_done < epochs): writes the
 * resume state when --checkpoint-every makes it due, or when a first signal asks the run
 * to stop here (whatever --checkpoint-every says; not after a second signal, which stops
 * now), and sets *stop, every rank agreeing (under mpi rank 0 writes the state of every
 * rank's stage). A signal that comes while the state is written stops the run here too. */
static int boundary(struct run *r, int epochs_done, bool *stop, bool *saved, struct pb_err *e)
{
    const struct pb_dist *dist = r->plan.dist;
    int every = r->plan.checkpoint_every;
    bool due = every > 0 && epochs_done % every == 0;
    *saved = false;
    for (;;) {
        *stop = pb_dist_any(dist, pb_interrupted());
        bool now = *stop && pb_dist_any(dist, pb_interrupted_now());
        if (*saved || now || (!due && !*stop))
            return 0;
        if (pb_run_save_state(&r->plan, &r->stages, r->run_id, epochs_done, e))
            return -1;
        *saved = true;
    }
}

/* Why the run stops before epoch `epoch` when a signal asked it to (stop), -1 with the
 * message; 0 when it goes on. An mpi run is resumed under mpirun, one rank per device. */
static int stop_before(const struct run *r, int epoch, bool stop, bool saved, struct pb_err *e)
{
    bool first = epoch == r->start_epoch;
    if (!stop)
        return 0;
    char how[96] = "";
    if (r->plan.dist)
        snprintf(how, sizeof how, "mpirun -np %d ", r->plan.cfg->stages);
    if (saved)
        return pb_err_set(e, "interrupted after epoch %d; its resume state is written: "
                          "`%spipebench resume %lld` continues the run", epoch, how,
                          (long long)r->run_id);
    if (!first)
        return pb_err_set(e, "interrupted by a second signal after epoch %d; `%spipebench "
                          "resume %lld` continues from the last resume state", epoch, how,
                          (long long)r->run_id);
    return pb_err_set(e, "interrupted before epoch %d began; `%spipebench resume %lld` "
                      "continues from the last resume state, or from the start when "
                      "there is none", epoch + 1, how, (long long)r->run_id);
}

/* A repeat (index > 0) has trained what the first finished training of its configuration
 * and seed did: every epoch's losses and accuracy the very same numbers (the executors
 * are deterministic, so a difference is a bug). Every rank agrees on the outcome. */
static int check_repeat(struct run *r, struct pb_err *e)
{
    if (r->plan.cfg->repeat == 0)
        return 0;
    struct pb_repeat_check chk = {.epoch = -1};
    int rc = pb_plan_writer(&r->plan) ? pb_results_repeat_check(r->db, r->run_id, &chk, e) : 0;
    if (!rc && chk.ref_id && chk.epoch >= 0)
        rc = pb_err_set(e, "repeat %d is not the same training as repeat %d (run %lld): epoch "
                        "%d's losses or accuracy differ, though training is deterministic "
                        "(design §2.3); this is a bug: please report it with both runs "
                        "(`pipebench show`)", r->plan.cfg->repeat, chk.ref_repeat,
                        (long long)chk.ref_id, chk.epoch + 1);
    if (!pb_dist_any(r->plan.dist, rc != 0))
        return 0;
    if (!rc)
        e->msg[0] = 0;   /* rank 0 says why */
    return -1;
}

/* The epochs from start_epoch on, then the final weights and the run's end. */
static int train(struct run *r, struct pb_run_summary *sum, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->plan.cfg;
    struct pb_run_live live = {&r->plan, &r->stages, &r->bleu, r->db, r->run_id};
    int32_t *order = pb_xmalloc((size_t)r->plan.ntrain * sizeof *order + 1);
    double t0 = pb_now_s();
    int rc = 0;
    bool diverged = false;
    for (int epoch = r->start_epoch; epoch < c->epochs && !rc; epoch++) {
        bool stop = false, saved = false;
        if (epoch > r->start_epoch)
            rc = boundary(r, epoch, &stop, &saved, e);
        else   /* a signal while the run started: no epoch begins */
            stop = pb_dist_any(r->plan.dist, pb_interrupted());
        if (!rc)
            rc = stop_before(r, epoch, stop, saved, e);
        if (!rc)
            rc = pb_run_epoch(&live, epoch, order, sum, &diverged, e);
    }
    free(order);
    char state[4096];
    pb_run_state_path(c->db, r->run_id, state, sizeof state);
    if (!rc && pb_plan_writer(&r->plan))
        unlink(state);   /* done: nothing left to resume */
    sum->seconds += pb_now_s() - t0;
    if (!rc && c->save)
        rc = pb_local_stages_save(&r->stages, &r->plan, c->save, e);
    if (!rc)
        rc = check_repeat(r, e);
    enum pb_run_status st = !rc        ? PB_RUN_DONE
                            : diverged ? PB_RUN_DIVERGED
                            : pb_dist_any(r->plan.dist, pb_interrupted()) ? PB_RUN_INTERRUPTED
                                                                          : PB_RUN_FAILED;
    sum->status = st;
    struct pb_err e2;
    if (pb_plan_writer(&r->plan) &&
        pb_results_run_end(r->db, r->run_id, st, rc ? e->msg : NULL, &e2) && !rc) {
        *e = e2;
        rc = -1;
    }
    /* no rank ends before the writer has recorded the run: mpirun ends the job when the
     * first rank exits non-zero (an interrupted run's 130), the writer with it */
    pb_dist_barrier(r->plan.dist);
    return rc;
}

/* MPI, when the executor runs one rank per device: *dist, NULL otherwise. A configuration
 * the plan refuses is refused before the rank count is judged (rank 0 says why), so the
 * count asked for is the one its chunks make. */
static int start_dist(const struct pb_run_cfg *c, struct pb_dist *dist, struct pb_dist **out,
                      struct pb_err *e)
{
    *out = NULL;
    const struct pb_executor *ex = pb_plan_executor(c);
    if (!ex || !ex->one_rank_per_device)
        return 0;
    if (!pb_dist_available()) {   /* the plan's checks say so */
        struct pb_plan refused = {0};
        PB_CHECK(pb_plan_choose(&refused, c, e) != 0);
        pb_plan_finish(&refused);
        return -1;
    }
    if (pb_dist_init(dist, e))
        return -1;
    *out = dist;
    int ranks = 0;
    if (!pb_run_check(c, e)) {
        ranks = pb_plan_ranks(c);
        PB_CHECK(ranks > 0);   /* the programs were built: v divides D */
        if (dist->size != ranks) {
            int v = c->stages / ranks;
            char chunks[64] = "";
            if (v > 1)
                snprintf(chunks, sizeof chunks, " (D / v = %d / %d: %d chunks per device)",
                         c->stages, v, v);
            if (c->resume_run > 0)
                pb_err_set(e, "run %lld ran under --executor mpi, one rank per device: resume "
                              "it as `mpirun -np %d pipebench resume %lld`%s (got %d ranks)",
                           (long long)c->resume_run, ranks, (long long)c->resume_run, chunks,
                           dist->size);
            else
                pb_err_set(e, "--executor mpi runs one rank per device: start it as `mpirun "
                              "-np %d pipebench run ... --stages %d`%s (got %d ranks)", ranks,
                           c->stages, chunks, dist->size);
            ranks = 0;
        }
    }
    if (ranks)
        return 0;
    /* every rank refuses alike; rank 0 says why before any leaves, for mpirun ends the job
     * (rank 0 with it, its message unwritten) as soon as one rank exits non-zero */
    if (dist->rank == 0) {
        fprintf(stderr, "pipebench: %s\n", e->msg);
        fflush(stderr);
    }
    e->msg[0] = 0;
    pb_dist_barrier(dist);
    return -1;
}

/* What the first signal prints (the run's writer, unless --quiet). */
static const char stop_notice[] =
    "pipebench: stopping after the current epoch: it finishes, is recorded and the resume "
    "state is written; a second signal stops now\n";
static const char stop_notice_mpi[] =
    "pipebench: stopping after the current epoch (every rank agreeing): it finishes, is "
    "recorded and the resume state is written; a second signal stops at the end of its "
    "training pass\n";

int pb_run(const struct pb_run_cfg *c, struct pb_run_summary *out, struct pb_err *e)
{
    struct run r = {.bleu = {.plan = &r.plan}};
    struct pb_run_summary sum = {.status = PB_RUN_FAILED};
    struct pb_dist dist, *d = NULL;
    int status = PB_EXIT_USAGE;
    bool handlers = false;
    pb_interrupt_route();
    if (start_dist(c, &dist, &d, e) || pb_plan_build(&r.plan, c, d, e) ||
        pb_local_stages_create(&r.stages, &r.plan, e) ||
        (c->resume_run > 0 && pb_run_load_state(&r.plan, &r.stages, &r.start_epoch, e)))
        goto done;
    /* from here a signal is counted (a signal during setup ends the process, with
     * nothing written); one that comes while the run row is written stops the run
     * before its first epoch */
    bool writer = pb_plan_writer(&r.plan);
    pb_interrupt_install(c->quiet || !writer ? NULL : d ? stop_notice_mpi : stop_notice);
    handlers = true;
    if (pb_run_row_begin(&r.plan, &r.bleu, r.start_epoch, &r.db, &r.run_id, e)) {
        if (r.run_id > 0) {
            struct pb_err e2;
            pb_results_run_end(r.db, r.run_id, PB_RUN_FAILED, e->msg, &e2);
        }
        goto done;
    }
    sum.run_id = r.run_id;
    /* a resumed run's summary counts its earlier epochs too: their training time and
     * their best accuracy */
    if (c->resume_run > 0 && writer &&
        pb_results_run_so_far(r.db, r.run_id, &sum.seconds, &sum.best_acc, e)) {
        struct pb_err e2;
        pb_results_run_end(r.db, r.run_id, PB_RUN_FAILED, e->msg, &e2);
        goto done;
    }
    status = !train(&r, &sum, e)                 ? PB_EXIT_OK
             : sum.status == PB_RUN_INTERRUPTED ? PB_EXIT_INTERRUPTED
                                                : PB_EXIT_RUN;
done:
    if (handlers)
        pb_interrupt_restore();
    pb_local_stages_finish(&r.stages, &r.plan);
    pb_run_bleu_finish(&r.bleu);
    pb_plan_finish(&r.plan);
    pb_results_close(r.db);
    if (d)
        pb_dist_finish(d);
    pb_interrupt_unroute();
    if (out)
        *out = sum;
    return status;
}
