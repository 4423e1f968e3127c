/* harness/driver/run_setup.c — everything a run does before its first epoch (run_internal.h):
 * check the configuration, load the data, build and partition the model, build and
 * validate the schedule's programs, create the local stages, and write the run row.
 * Everything the user can get wrong fails here, before the row exists. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/args.h"
#include "harness/store/checkpoint.h"
#include "predictors/predictor.h"
#include "harness/driver/run_flags.h"
#include "harness/driver/run_internal.h"

int pb_run_check_cfg(const struct pb_run_cfg *c, struct pb_err *e)
{
    if (c->stages < 1)
        return pb_err_set(e, "--stages must be at least 1 (got %d)", c->stages);
    if (c->microbatch_size < 1)
        return pb_err_set(e, "--microbatch-size must be at least 1 (got %d)", c->microbatch_size);
    if (c->stages > PB_MAX_STAGES)
        return pb_err_set(e, "--stages must be at most %d (got %d)", PB_MAX_STAGES, c->stages);
    if (c->microbatches < 0 || c->microbatches > PB_MAX_MICROBATCHES)
        return pb_err_set(e, "--microbatches must be between 1 and %d (got %d)",
                          PB_MAX_MICROBATCHES, c->microbatches);
    if (c->epochs < 1 || c->epochs > PB_MAX_EPOCHS)
        return pb_err_set(e, "--epochs must be between 1 and %d (got %d)", PB_MAX_EPOCHS,
                          c->epochs);
    if (c->repeats < 1 || c->repeats > PB_MAX_REPEATS)
        return pb_err_set(e, PB_REPEAT_RANGE_MSG, PB_MAX_REPEATS, c->repeats);
    PB_CHECK(c->repeat >= 0 && c->repeat < c->repeats);
    int mb;
    if (c->batch && pb_run_batch_split(c, &mb, e))
        return -1;
    if (c->batch && mb != c->microbatch_size)
        return pb_err_set(e, "--batch %d makes micro-batches of %d under %s, not the "
                          "configuration's %d; leave --microbatch-size out with --batch",
                          c->batch, mb, c->schedule, c->microbatch_size);
    if (c->limit_train < 0 || c->limit_val < 0)
        return pb_err_set(e, "--limit-train and --limit-val must be >= 0 (0 = all)");
    if (c->beam < 0 || c->beam > PB_RUN_MAX_BEAM)
        return pb_err_set(e, "--beam takes 0 (greedy decoding) or a beam width of 1 to %d "
                             "(got %d)", PB_RUN_MAX_BEAM, c->beam);
    if (c->threads < 0)
        return pb_err_set(e, "--threads must be >= 0 (0 = all cores)");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (c->threads > cores && c->threads > c->stages)
        return pb_err_set(e, "--threads %d is more than this machine's %ld cores (and than the %d "
                             "stages, which need one each); use --threads %ld or fewer (0 = all)",
                          c->threads, cores, c->stages, cores > c->stages ? cores : c->stages);
    if (!(c->label_smoothing >= 0.0f && c->label_smoothing < 1.0f))
        return pb_err_set(e, "--label-smoothing must be in [0, 1) (got %g)", c->label_smoothing);
    if (c->checkpoint_every < -1)
        return pb_err_set(e, "--checkpoint-every counts epochs: 1 or more, or 0 for never "
                          "(got %d)", c->checkpoint_every);
    if (!strcmp(c->executor, "mpi") && c->repeats > 1)
        return pb_err_set(e, PB_REPEAT_MPI_MSG, c->repeats);
    if (!strcmp(c->executor, "mpi") && (c->checkpoint_every > 0 || c->resume_run > 0))
        return pb_err_set(e, "resume states are not written under --executor mpi yet; use "
                          "--checkpoint-every 0 with mpi, or the threads executor");
    if (c->experiment && (!*c->experiment || strlen(c->experiment) > 64))
        return pb_err_set(e, "--experiment wants a name of 1 to 64 characters (got '%s')",
                          c->experiment);
    if (c->trace_mb_lo < 0 || c->trace_mb_hi < 0 || (c->trace_mb_hi && c->trace_mb_hi <= c->trace_mb_lo))
        return pb_err_set(e, "--trace-window A:B keeps micro-batches A to B-1 of the traced epochs: "
                             "0 <= A < B (got %d:%d)", c->trace_mb_lo, c->trace_mb_hi);
    if (pb_run_trace_epochs(c->trace_epochs, c->epochs, NULL, e))
        return -1;
    if (pb_backend_check_name(c->backend, e))
        return -1;
    if (c->data_dir && c->dataset && !strcmp(c->dataset, "synthetic"))
        return pb_err_set(e, "--data-dir %s: the synthetic dataset is generated, not read; drop "
                             "--data-dir or pick a dataset of files", c->data_dir);
    if (strcmp(c->executor, "seq") && strcmp(c->executor, "threads") && strcmp(c->executor, "mpi"))
        return pb_err_set(e, "unknown executor '%s'; valid executors: seq, threads, mpi", c->executor);
    if (!strcmp(c->executor, "mpi") && !pb_dist_available())
        return pb_err_set(e, "--executor mpi: this pipebench was built without MPI; install "
                             "libopenmpi-dev and openmpi-bin, then reconfigure the build");
    return pb_optim_cfg_check(&c->optim, e);
}

int pb_run_model(const struct pb_run_cfg *c, const struct pb_workload **w,
                 const struct pb_preset **p, bool *paper_cut, struct pb_err *e)
{
    *w = pb_workload_find(c->model, e);
    if (!*w || pb_workload_preset(*w, c->preset, p, e))
        return -1;
    return pb_partition_choose(*p, c->model, c->partition, c->stages, paper_cut, e);
}

char *pb_run_partition_name(const struct pb_run_cfg *c, bool paper_cut)
{
    enum pb_partition_by by = PB_PARTITION_DEFAULT;
    /* a configuration not checked yet (one read back from JSON) may hold any D */
    bool sized = c->stages >= 1 && c->stages <= PB_MAX_STAGES;
    int *bounds = pb_xcalloc((size_t)(sized ? c->stages : 0) + 1, sizeof *bounds);
    if (c->partition && (!sized || pb_partition_parse(c->partition, c->stages, &by, bounds, NULL)))
        by = PB_PART_NBY;
    char *name = paper_cut              ? pb_xstrdup("paper")
                 : by == PB_PART_BOUNDS ? pb_partition_text(bounds, c->stages)
                 : by == PB_PART_FLOPS  ? pb_xstrdup("balanced")
                 : by == PB_PART_NBY    ? pb_xstrdup(c->partition)
                                        : pb_xstrdup(pb_partition_by_names[by]);
    free(bounds);
    return name;
}

int pb_run_trace_epochs(const char *spec, int epochs, bool *sel, struct pb_err *e)
{
    const char *s = spec ? spec : "first,last";
    for (int i = 0; sel && i < epochs; i++)
        sel[i] = !strcmp(s, "all");
    if (!strcmp(s, "all") || !strcmp(s, "none"))
        return 0;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, ",");
        char item[32];
        if (n == 0 || n >= sizeof item)
            return pb_err_set(e, "--trace-epochs '%s': expected all, none, or a comma-separated "
                                 "list of epoch numbers (1-based), first and last", s);
        memcpy(item, p, n);
        item[n] = 0;
        int ep = 0;
        if (!strcmp(item, "first"))
            ep = 1;
        else if (!strcmp(item, "last"))
            ep = epochs;
        else if (pb_arg_int("--trace-epochs", item, &ep, e))
            return pb_err_prefix(e, "(all, none, first, last or epoch numbers) ");
        if (ep < 1 || ep > epochs)
            return pb_err_set(e, "--trace-epochs: epoch %d is not one of the run's epochs 1 to %d",
                              ep, epochs);
        if (sel)
            sel[ep - 1] = true;
        p += n + (p[n] == ',');
    }
    return 0;
}

int pb_run_setup_schedule(struct run_state *r, int nmb, struct pb_err *e)
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
    if (c->edit_programs)
        c->edit_programs(c->edit_programs_ctx, &r->pipe, r->progs);
    if (pb_programs_validate(&r->pipe, r->progs, 1, e))
        return pb_err_prefix(e, "the %s programs do not validate: ", c->schedule);
    r->eval_progs = pb_xcalloc((size_t)c->stages, sizeof *r->eval_progs);
    for (int k = 0; k < c->stages; k++)
        pb_program_eval(&r->eval_progs[k], k, r->nval / c->microbatch_size);
    r->optim = c->optim;
    r->optim.keep_d_last = false;
    r->optim.keep_g_last = false;
    for (int k = 0; k < c->stages; k++)
        for (int i = 0; i < r->progs[k].n; i++) {
            const struct pb_op *op = &r->progs[k].ops[i];
            bool predicts = op->wsrc == PB_W_PREDICTED || op->wsrc == PB_W_GROUP;
            if (predicts && pb_predictor_check(c->optim.kind, &c->optim, op->pform, e))
                return pb_err_prefix(e, "schedule '%s': ", c->schedule);
            r->optim.keep_d_last |= predicts && pb_predictor_reads_d_last(&c->optim, op->pform);
            r->optim.keep_g_last |= predicts && pb_predictor_reads_g_last(&c->optim, op->pform);
        }
    return 0;
}

int pb_run_epoch_length(const struct pb_run_cfg *c, int ntrain)
{
    if (!c->batch)
        return ntrain / c->microbatch_size;
    return ntrain / c->batch * (c->batch / c->microbatch_size);
}

/* Every rank fails when one does. Only rank 0 says why when it failed too (the
 * ranks check the same configuration), else the ranks that failed do. */
static int collective(struct run_state *r, int rc, struct pb_err *e)
{
    if (!pb_dist_any(r->dist, rc != 0))
        return 0;
    int root_failed = rc != 0;
    pb_dist_bcast(r->dist, &root_failed, sizeof root_failed, 0);
    if (!rc || (root_failed && r->dist && r->dist->rank != 0))
        e->msg[0] = 0;
    return -1;
}

const char *pb_run_data_opts(const struct run_state *r, struct pb_dataset_opts *opts)
{
    const struct pb_run_cfg *c = r->cfg;
    const char *own = r->preset ? r->preset->dataset : r->workload->dataset;
    const char *ds = c->dataset ? c->dataset : own;
    *opts = c->synthetic;
    opts->crop = r->input_side;
    opts->no_flip = r->no_flip;
    const struct pb_dataset_opts *s = &c->synthetic;
    if (!strcmp(ds, "synthetic") && !s->like && !s->c && !s->h && !s->w && !s->nclasses &&
        (pb_dataset_is_image(own) || pb_dataset_is_sequence(own)))
        opts->like = own;
    opts->vocab = r->preset && r->preset->vocab ? r->preset->vocab : r->workload->vocab;
    opts->steps = r->preset && r->preset->steps ? r->preset->steps : r->workload->steps;
    return ds;
}

/* The first stage reads the inputs and the last the labels: a process loads only the
 * parts its stages read; the others learn the size and shape from rank 0. */
static int load_data(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    struct pb_dataset_opts opts;
    const char *ds = r->dataset = pb_run_data_opts(r, &opts);
    int rc = 0;
    opts.parts = (r->lo == 0 ? PB_DATA_INPUTS : 0) | (r->hi == c->stages ? PB_DATA_LABELS : 0);
    if (opts.parts)
        rc = pb_dataset_load_opts(&r->train, ds, c->data_dir, PB_SPLIT_TRAIN, c->limit_train,
                                  c->seed, &opts, e) ||
             pb_dataset_load_opts(&r->val, ds, c->data_dir, PB_SPLIT_TEST, c->limit_val, c->seed,
                                  &opts, e);
    if (collective(r, rc, e))
        return -1;
    int info[6] = {r->train.n, r->val.n, r->train.c, r->train.h, r->train.w, r->train.nclasses};
    pb_dist_bcast(r->dist, info, sizeof info, 0);
    r->ntrain = info[0];
    r->nval = info[1];
    r->train.c = info[2];
    r->train.h = info[3];
    r->train.w = info[4];
    r->train.nclasses = info[5];
    if (c->batch && r->ntrain / c->batch < 1)
        return pb_err_set(e, "%d training samples make no batch of %d; lower --batch or raise "
                             "--limit-train", r->ntrain, c->batch);
    if (r->ntrain / c->microbatch_size < 1)
        return pb_err_set(e, "%d training samples make no micro-batch of %d; lower "
                             "--microbatch-size or raise --limit-train",
                          r->ntrain, c->microbatch_size);
    if (r->nval / c->microbatch_size < 1)
        return pb_err_set(e, "%d validation samples make no batch of %d; lower --microbatch-size "
                             "or raise --limit-val", r->nval, c->microbatch_size);
    return 0;
}

/* Cores per stage: the same under every executor, so kernels split their work the
 * same way and all executors give the same bits (design §2.3). */
int pb_run_stage_threads(const struct pb_run_cfg *c)
{
    int cores = c->threads > 0 ? c->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int t = cores / c->stages;
    return t > 0 ? t : 1;
}

/* The model for the loaded data's sample shape and classes, finalised for the micro-batch. */
static int make_model(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    struct pb_shape sample = {1, r->train.c, r->train.h, r->train.w};
    /* a preset fixes the head; a dataset with fewer classes uses its first outputs. The
       model checks the sample shape first: a dataset of the wrong kind hears that. */
    int nclasses = r->preset ? r->preset->classes : r->train.nclasses;
    if (r->workload->build(&r->model, r->preset, sample, nclasses, e))
        return -1;
    if (r->train.nclasses > nclasses)
        return pb_err_set(e, "model '%s' preset %s has a %d-way head, but dataset %s has %d "
                             "classes; pick a dataset of at most %d classes", c->model,
                          r->preset->name, nclasses, r->dataset, r->train.nclasses, nclasses);
    r->model.label_smoothing = c->label_smoothing;
    return pb_model_finalize(&r->model, c->microbatch_size, e);
}

/* A process whose stages read the sequences' lengths but loaded no part (a middle stage
 * of a translation model, the attention's) loads the labels part: the lengths come with
 * it (dataset.h), read from the same files as the other stages read them. */
static int load_lengths(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    bool need = false;
    for (int k = r->lo; k < r->hi; k++)
        need |= pb_model_reads_lengths(&r->model, r->bounds[k], r->bounds[k + 1]);
    if (!need || r->train.len)
        return 0;
    struct pb_dataset_opts opts;
    const char *ds = pb_run_data_opts(r, &opts);
    opts.parts = PB_DATA_LABELS;
    pb_dataset_finish(&r->train);
    pb_dataset_finish(&r->val);
    return pb_dataset_load_opts(&r->train, ds, c->data_dir, PB_SPLIT_TRAIN, c->limit_train,
                                c->seed, &opts, e) ||
                   pb_dataset_load_opts(&r->val, ds, c->data_dir, PB_SPLIT_TEST, c->limit_val,
                                        c->seed, &opts, e)
               ? -1
               : 0;
}

static int build_model(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    if (make_model(r, e))
        return -1;
    r->bounds = pb_xcalloc((size_t)c->stages + 1, sizeof *r->bounds);
    /* under MPI rank 0 measures the blocks for --partition time; the others take its cut */
    return pb_run_partition(c, &r->model, r->paper_cut ? r->preset : NULL, run_writer(r),
                            r->bounds, e);
}

int pb_run_model_build(const struct pb_run_cfg *c, struct pb_model *m,
                       const struct pb_preset **paper, struct pb_err *e)
{
    struct run_state r = {.cfg = c};
    *paper = NULL;
    if (pb_run_check_cfg(c, e) || pb_run_model(c, &r.workload, &r.preset, &r.paper_cut, e))
        return -1;
    r.input_side = r.preset ? r.preset->input_side : 0;
    r.no_flip = r.preset && r.preset->no_flip;
    struct pb_dataset_opts opts;
    const char *ds = r.dataset = pb_run_data_opts(&r, &opts);
    if (strcmp(ds, "synthetic") && !pb_dataset_summary(ds))
        return pb_err_set(e, "unknown dataset '%s'; `pipebench list` shows the datasets", ds);
    /* the shape and classes of a dataset are its stand-in's: nothing is read */
    if (strcmp(ds, "synthetic") && (pb_dataset_is_image(ds) || pb_dataset_is_sequence(ds)))
        opts.like = ds;
    int rc = pb_dataset_load_opts(&r.train, "synthetic", NULL, PB_SPLIT_TRAIN, 1, c->seed, &opts,
                                  e) ||
             make_model(&r, e);
    pb_dataset_finish(&r.train);
    if (rc) {
        pb_model_finish(&r.model);
        return -1;
    }
    *m = r.model;
    *paper = r.paper_cut ? r.preset : NULL;
    return 0;
}

int pb_run_partition(const struct pb_run_cfg *c, const struct pb_model *m,
                     const struct pb_preset *paper, bool measure, int *bounds, struct pb_err *e)
{
    if (paper)
        return pb_partition_paper(m, paper, bounds, e);
    enum pb_partition_by by = PB_PARTITION_DEFAULT;
    if (c->partition && pb_partition_parse(c->partition, c->stages, &by, bounds, e))
        return -1;
    if (by == PB_PART_BOUNDS)
        return pb_partition_check_bounds(m, bounds, c->stages, e);
    double *cost = pb_xcalloc((size_t)m->nblocks + 1, sizeof *cost);
    int rc = 0;
    if (by != PB_PART_TIME)
        pb_partition_costs(m, by, cost);
    else if (measure)
        rc = pb_partition_profile(m, c->backend, pb_run_stage_threads(c), PB_RUN_PROFILE_REPS, cost, e);
    if (!rc && (by != PB_PART_TIME || measure))
        rc = pb_partition_min_max(cost, m->nblocks, c->stages, bounds, e);
    free(cost);
    return rc ? pb_err_prefix(e, "model '%s': ", m->name) : 0;
}


/* The host memory of the loaded data, counted as PB_MEM_HOST of the stage that reads
 * it: the inputs for the first stage, the labels for the last. */
static void account_data(struct run_state *r)
{
    int d = r->cfg->stages;
    const struct pb_dataset *sets[2] = {&r->train, &r->val};
    for (int i = 0; i < 2; i++) {
        const struct pb_dataset *ds = sets[i];
        if (pb_dataset_has_inputs(ds) && r->lo == 0)
            pb_backend_account(r->be[0], PB_MEM_HOST, pb_dataset_input_bytes(ds), true);
        if (ds->y && r->hi == d)
            pb_backend_account(r->be[d - 1], PB_MEM_HOST, pb_dataset_label_bytes(ds), true);
    }
}

static int build_stages(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int d = c->stages;
    r->be = pb_xcalloc((size_t)d, sizeof *r->be);
    r->stages = pb_xcalloc((size_t)d, sizeof *r->stages);
    r->workers = pb_xcalloc((size_t)d, sizeof *r->workers);
    for (int k = r->lo; k < r->hi; k++) {
        struct pb_backend_cfg bc = {.device = 0, .threads = pb_run_stage_threads(c)};
        r->be[k] = pb_backend_create(c->backend, &bc, e);
        if (!r->be[k])
            return -1;
        if (pb_stage_init(&r->stages[k], r->be[k], &r->model, k, d, r->bounds[k], r->bounds[k + 1], e))
            return -1;
        r->nstages_ready++;
        pb_stage_init_params(&r->stages[k], c->seed, e);
    }
    account_data(r);
    /* stage 0's inputs come from the loader thread; PIPEBENCH_SYNC_LOADER=1 (for tests
     * only) gathers them in the worker instead, which must give the same bits */
    const char *sync = getenv("PIPEBENCH_SYNC_LOADER");
    if (r->lo == 0 && !(sync && !strcmp(sync, "1")))
        r->prefetch = pb_prefetch_create(r->be[0], pb_shape_count(r->stages[0].in_shape));
    if (c->init && pb_checkpoint_load(r->stages + r->lo, r->hi - r->lo, c->init, e))
        return -1;
    for (int k = r->lo; k < r->hi; k++) {
        if (pb_worker_init(&r->workers[k], &r->stages[k], &r->optim, &r->pipe, c->seed, e))
            return -1;
        r->nworkers_ready++;
    }
    return 0;
}

int pb_run_setup(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    r->lo = r->dist ? r->dist->rank : 0;
    r->hi = r->dist ? r->dist->rank + 1 : c->stages;
    int rc = pb_run_check_cfg(c, e);
    if (!rc) {
        r->trace_epochs = pb_xcalloc((size_t)c->epochs, sizeof *r->trace_epochs);
        PB_CHECK(pb_run_trace_epochs(c->trace_epochs, c->epochs, r->trace_epochs, e) == 0);
        rc = pb_run_model(c, &r->workload, &r->preset, &r->paper_cut, e);
        r->input_side = r->preset ? r->preset->input_side : 0;
        r->no_flip = r->preset && r->preset->no_flip;
    }
    if (collective(r, rc, e) || load_data(r, e))
        return -1;
    if (collective(r, build_model(r, e), e))
        return -1;
    pb_dist_bcast(r->dist, r->bounds, (size_t)(c->stages + 1) * sizeof *r->bounds, 0);
    if (collective(r, load_lengths(r, e), e))
        return -1;
    if (collective(r, pb_run_setup_schedule(r, pb_run_epoch_length(c, r->ntrain), e), e))
        return -1;
    return collective(r, build_stages(r, e), e);
}

int pb_run_updates_per_epoch(const struct run_state *r)
{
    int n = 0;
    for (int i = 0; i < r->progs[0].n; i++)
        n += r->progs[0].ops[i].kind == PB_OP_U;
    return n;
}

/* --save's folder takes a file (its temporary, which the save renames): found out
 * now, not after training. */
static int probe_save_path(const char *path, struct pb_err *e)
{
    size_t n = strlen(path);
    char *probe = pb_xmalloc(n + 16);
    snprintf(probe, n + 16, "%s.tmp", path);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
    int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    if (fd < 0 && err != EEXIST)
        return pb_err_set(e, "--save %s: cannot write there (%s); give a path in a writable "
                             "folder", path, strerror(err));
    return 0;
}

void pb_run_machine(const struct pb_run_cfg *c, struct pb_run_info *info)
{
    double load[1] = {NAN};
    info->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    info->threads_per_stage = pb_run_stage_threads(c);
    info->load_avg = getloadavg(load, 1) == 1 ? load[0] : NAN;
    info->oversubscribed = strcmp(c->executor, "seq") &&
                           (long)c->stages * info->threads_per_stage > info->cores;
}

int pb_run_begin(struct run_state *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    int rc = 0;
    if (run_writer(r)) {
        rc = c->save ? probe_save_path(c->save, e) : 0;
        if (!rc)
            rc = pb_run_bleu_prepare(r, e);
        if (!rc)
            rc = pb_results_open(&r->db, c->db, e);
        /* runs left 'running' by a process of this host that no longer exists */
        if (!rc && pb_results_mark_orphans(r->db, e) < 0)
            rc = -1;
        if (c->resume_run > 0) {
            if (!rc && !pb_results_run_resume(r->db, c->resume_run, r->start_epoch, e))
                r->run_id = c->resume_run;
            else
                rc = -1;
            return collective(r, rc, e);
        }
        char *json = rc ? NULL : pb_run_cfg_json(c);
        char *cut = pb_partition_text(r->bounds, c->stages);
        char libs[128];
        pb_backend_libraries(c->backend, libs, sizeof libs);
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
            .lr = pb_run_decimal(c->optim.lr),
            .samples_per_update = c->microbatch_size *
                                  (r->sch->uses_microbatches ? r->pipe.microbatches : 1),
            .updates_per_epoch = pb_run_updates_per_epoch(r),
            .partition_cut = cut,
            .repeat = c->repeat,
            .bleu_scoring = r->bleu_scoring,
            .backend_libraries = libs,
        };
        pb_run_machine(c, &info);
        if (info.oversubscribed && !c->quiet)
            fprintf(stderr, "pipebench: warning: %d stages × %d threads on %d cores: the measured "
                    "throughput and bubble are not those of a pipeline with one device per "
                    "stage; the simulated ones beside them are (design §6.6)\n", c->stages,
                    info.threads_per_stage, info.cores);
        if (!rc) {
            r->run_id = pb_results_run_begin(r->db, &info, e);
            rc = r->run_id > 0 ? pb_results_run_started(r->db, r->run_id, e) : -1;
        }
        free(json);
        free(cut);
    }
    return collective(r, rc, e);
}

void pb_run_state_finish(struct run_state *r)
{
    pb_prefetch_destroy(r->prefetch);
    r->prefetch = NULL;
    for (int k = r->lo; k < r->lo + r->nworkers_ready; k++)
        pb_worker_finish(&r->workers[k]);
    for (int k = r->lo; k < r->lo + r->nstages_ready; k++)
        pb_stage_finish(&r->stages[k]);
    if (r->be)
        for (int k = 0; k < r->cfg->stages; k++)
            pb_backend_destroy(r->be[k]);
    if (r->progs_ready)
        pb_programs_finish(r->progs, r->cfg->stages);
    if (r->eval_progs)
        pb_programs_finish(r->eval_progs, r->cfg->stages);
    free(r->eval_progs);
    free(r->progs);
    free(r->be);
    free(r->stages);
    free(r->workers);
    free(r->bounds);
    free(r->trace_epochs);
    pb_model_finish(&r->model);
    pb_dataset_finish(&r->train);
    pb_dataset_finish(&r->val);
    pb_dataset_finish(&r->bleu_val);
    pb_bleu_lines_finish(&r->bleu_raw);
    pb_results_close(r->db);
}
