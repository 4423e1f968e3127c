/* harness/driver/run_row.c — a run's row in the results database (run_row.h). */
#include "harness/driver/run_row.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run_json.h"
#include "harness/model/partition.h"

int pb_run_row_begin(const struct pb_plan *r, struct pb_run_bleu *bleu, int start_epoch,
                     struct pb_results **db, int64_t *run_id, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int rc = 0;
    if (pb_plan_writer(r)) {
        rc = pb_run_bleu_prepare(bleu, r, e);
        if (!rc)
            rc = pb_results_open(db, c->db, e);
        /* runs left 'running' by a process of this host that no longer exists */
        if (!rc && pb_results_mark_orphans(*db, e) < 0)
            rc = -1;
        if (c->resume_run > 0) {
            if (!rc && !pb_results_run_resume(*db, c->resume_run, start_epoch, e))
                *run_id = c->resume_run;
            else
                rc = -1;
            return pb_plan_collective(r, rc, e);
        }
        char *json = rc ? NULL : pb_plan_cfg_json(r);
        char *cut = pb_partition_text(r->bounds, c->stages);
        char libs[160] = "";
        if (r->backend->libraries)
            r->backend->libraries(libs, sizeof libs);
        struct pb_run_info info = {
            .config_json = json,
            .model = c->model,
            .dataset = r->dataset_label,
            .schedule = c->schedule,
            .variant = c->variant,
            .optimizer = c->optimizer,
            .executor = c->executor,
            .stages = c->stages,
            .microbatch_size = c->microbatch_size,
            .microbatches = r->pipe.microbatches,
            .epochs = c->epochs,
            .seed = c->seed,
            .lr = pb_run_decimal(c->optim.lr),
            .samples_per_update = r->samples_per_update,
            .updates_per_epoch = r->updates_per_epoch,
            .partition_cut = cut,
            .repeat = c->repeat,
            .bleu_scoring = bleu->scoring,
            .backend_libraries = libs,
        };
        pb_plan_machine(r, &info);
        if (info.oversubscribed && !c->quiet)
            fprintf(stderr, "pipebench: warning: %d stages × %d threads on %d cores: the measured "
                    "throughput and bubble are not those of a pipeline with one device per "
                    "stage; the simulated ones beside them are (design §6.6)\n", c->stages,
                    info.threads_per_stage, info.cores);
        if (!rc) {
            *run_id = pb_results_run_begin(*db, &info, e);
            rc = *run_id > 0 ? pb_results_run_started(*db, *run_id, e) : -1;
        }
        free(json);
        free(cut);
    }
    return pb_plan_collective(r, rc, e);
}
