/* harness/driver/plan.c — a run's plan (plan.h), built once before its first epoch: check
 * the configuration and resolve its names, place the stages on their devices, load the
 * data, build and partition the model, build and validate the schedule's programs.
 * Everything the user can get wrong here fails before the run row exists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/args.h"
#include "harness/base/out_path.h"
#include "harness/compute/registry.h"
#include "harness/driver/placement.h"
#include "harness/driver/plan.h"
#include "harness/driver/run_flags.h"
#include "predictors/predictor.h"
#include "schedules/registry.h"
#include "workloads/evaluation/bleu/bleu.h"

/* The checks of c alone, with its executor and backend chosen into p. */
static int check_cfg(struct pb_plan *p, const struct pb_run_cfg *c, struct pb_err *e)
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
    /* the limits alone can say no micro-batch fits: before the data and model are made
       (load_data's checks, in its order) */
    if (c->batch && c->limit_train > 0 && c->limit_train / c->batch < 1)
        return pb_err_set(e, "%d training samples make no batch of %d; lower --batch or raise "
                             "--limit-train", c->limit_train, c->batch);
    if (c->limit_train > 0 && c->limit_train / c->microbatch_size < 1)
        return pb_err_set(e, "%d training samples make no micro-batch of %d; lower "
                             "--microbatch-size or raise --limit-train", c->limit_train,
                          c->microbatch_size);
    if (c->limit_val > 0 && c->limit_val / c->microbatch_size < 1)
        return pb_err_set(e, "%d validation samples make no batch of %d; lower --microbatch-size "
                             "or raise --limit-val", c->limit_val, c->microbatch_size);
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
    p->executor = pb_executor_find(c->executor, NULL);
    bool mpi = p->executor && p->executor->one_rank_per_device;
    if (mpi && c->repeats > 1)
        return pb_err_set(e, PB_REPEAT_MPI_MSG, c->repeats);
    if (c->experiment && (!*c->experiment || strlen(c->experiment) > 64))
        return pb_err_set(e, "--experiment wants a name of 1 to 64 characters (got '%s')",
                          c->experiment);
    if (c->experiment && !pb_bleu_valid_utf8(c->experiment, strlen(c->experiment)))
        return pb_err_set(e, "--experiment: the name is not valid UTF-8 (reports print it in "
                             "JSON and LaTeX); give a name in UTF-8");
    if (c->trace_mb_lo < 0 || c->trace_mb_hi < 0 || (c->trace_mb_hi && c->trace_mb_hi <= c->trace_mb_lo))
        return pb_err_set(e, "--trace-window A:B keeps micro-batches A to B-1 of the traced epochs: "
                             "0 <= A < B (got %d:%d)", c->trace_mb_lo, c->trace_mb_hi);
    if (pb_run_trace_epochs(c->trace_epochs, c->epochs, NULL, e))
        return -1;
    if (c->save && pb_out_path_check("--save", c->save, c->db, e))
        return -1;
    p->backend = pb_backend_find(c->backend, e);
    if (!p->backend)
        return -1;
    if (c->tf32 && !p->backend->has_tf32)
        return pb_err_set(e, "--tf32: the %s backend computes in FP32 only; drop --tf32, or use "
                             "--backend cuda", c->backend);
    if (c->data_dir && c->dataset && !strcmp(c->dataset, "synthetic"))
        return pb_err_set(e, "--data-dir %s: the synthetic dataset is generated, not read; drop "
                             "--data-dir or pick a dataset of files", c->data_dir);
    if (!p->executor) {
        pb_executor_find(c->executor, e);
        return -1;
    }
    if (mpi && !pb_dist_available())
        return pb_err_set(e, "--executor mpi: this pipebench was built without MPI; install "
                             "libopenmpi-dev and openmpi-bin, then reconfigure the build");
    if (pb_optim_cfg_check(&c->optim, e))
        return -1;
    if (c->optim.lr_warmup >= c->epochs && c->optim.lr_warmup > 0)
        return pb_err_set(e, "--lr-warmup %d leaves no epoch at the full rate of --epochs %d: "
                             "give fewer warm-up epochs or more epochs", c->optim.lr_warmup,
                          c->epochs);
    p->devices = pb_xcalloc((size_t)c->stages, sizeof *p->devices);
    return pb_placement_parse(c->devices, c->stages, p->devices, e);
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

int pb_plan_programs(struct pb_plan *p, int nmb, struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    p->pipe = (struct pb_pipe){
        .stages = c->stages,
        .length = nmb,
        .microbatches = c->microbatches ? c->microbatches : c->stages,
        .optimizer = c->optim.kind,
        .variant = c->variant,
        .chunks = c->chunks,
    };
    pb_pipe_adopt(&p->pipe, p->sch);
    int np = c->stages, v = pb_pipe_chunks(&p->pipe);
    p->progs = pb_xcalloc((size_t)c->stages, sizeof *p->progs);
    p->stage_progs = pb_xcalloc((size_t)c->stages, sizeof *p->stage_progs);
    p->eval_progs = pb_xcalloc((size_t)c->stages, sizeof *p->eval_progs);
    p->eval_stage_progs = pb_xcalloc((size_t)c->stages, sizeof *p->eval_stage_progs);
    if (pb_programs_build(p->sch, &p->pipe, p->progs, e))
        return -1;
    np = pb_pipe_devices(&p->pipe);
    p->progs_ready = true;
    if (c->edit_programs)
        c->edit_programs(c->edit_programs_ctx, &p->pipe, p->progs);
    p->capacity = pb_programs_capacity(&p->pipe, p->progs, e);
    if (p->capacity < 0 || pb_programs_validate(&p->pipe, p->progs, p->capacity, e))
        return pb_err_prefix(e, "the %s programs do not validate: ", c->schedule);
    if (pb_programs_stages(&p->pipe, p->progs, p->stage_progs, e))
        return -1;
    for (int k = 0; k < np; k++)
        pb_program_eval(&p->eval_progs[k], k, p->nval / c->microbatch_size, v);
    if (pb_programs_stages(&p->pipe, p->eval_progs, p->eval_stage_progs, e))
        return -1;
    p->optim = c->optim;
    p->optim.lr_epochs = c->epochs;
    p->optim.keep_d_last = false;
    p->optim.keep_g_last = false;
    for (int k = 0; k < np; k++)
        for (int i = 0; i < p->progs[k].n; i++) {
            const struct pb_op *op = &p->progs[k].ops[i];
            bool predicts = op->wsrc == PB_W_PREDICTED || op->wsrc == PB_W_GROUP;
            if (predicts && pb_predictor_check(c->optim.kind, &c->optim, op->pform, e))
                return pb_err_prefix(e, "schedule '%s': ", c->schedule);
            p->optim.keep_d_last |= predicts && pb_predictor_reads_d_last(&c->optim, op->pform);
            p->optim.keep_g_last |= predicts && pb_predictor_reads_g_last(&c->optim, op->pform);
        }
    for (int i = 0; i < p->stage_progs[0].n; i++)
        p->updates_per_epoch += p->stage_progs[0].ops[i].kind == PB_OP_U;
    /* the rescheduling length K in updates (each stage's delay: local_stages.c) */
    int E = c->lr_reschedule_epochs ? c->lr_reschedule_epochs : PB_LR_RESCHEDULE_EPOCHS;
    p->optim.lr_reschedule = p->sch->lr_delay ? (long)E * p->updates_per_epoch : 0;
    p->samples_per_update = c->microbatch_size * (p->sch->uses_microbatches ? p->pipe.microbatches : 1);
    return 0;
}

int pb_run_epoch_length(const struct pb_run_cfg *c, int ntrain)
{
    if (!c->batch)
        return ntrain / c->microbatch_size;
    return ntrain / c->batch * (c->batch / c->microbatch_size);
}

int pb_plan_collective(const struct pb_plan *r, int rc, struct pb_err *e)
{
    if (!pb_dist_any(r->dist, rc != 0))
        return 0;
    int root_failed = rc != 0;
    pb_dist_bcast(r->dist, &root_failed, sizeof root_failed, 0);
    if (!rc || (root_failed && r->dist && r->dist->rank != 0))
        e->msg[0] = 0;
    return -1;
}

const char *pb_plan_data_opts(const struct pb_plan *r, struct pb_dataset_opts *opts)
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
static int load_data(struct pb_plan *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    struct pb_dataset_opts opts;
    const char *ds = r->dataset = pb_plan_data_opts(r, &opts);
    if (opts.noise > 0 && strcmp(ds, "synthetic"))
        return pb_err_set(e, "--synthetic-noise: %s is read from files, its noise is its own; "
                             "drop --synthetic-noise, or add --dataset synthetic", ds);
    if (opts.noise > 0 && opts.like && pb_dataset_is_sequence(opts.like))
        return pb_err_set(e, "--synthetic-noise: the stand-in of %s is sequences of ids, not "
                             "a prototype plus noise; drop --synthetic-noise", opts.like);
    int n = snprintf(r->dataset_label, sizeof r->dataset_label, opts.like ? "synthetic:%s" : "%s",
                     opts.like ? opts.like : ds);
    if (opts.noise > 0 && opts.noise != 1)
        snprintf(r->dataset_label + n, sizeof r->dataset_label - (size_t)n, " (noise %g)",
                 opts.noise);
    int rc = 0;
    opts.parts = (pb_plan_holds(r, 0) ? PB_DATA_INPUTS : 0) |
                 (pb_plan_holds(r, c->stages - 1) ? PB_DATA_LABELS : 0);
    if (opts.parts)
        rc = pb_dataset_load_opts(&r->train, ds, c->data_dir, PB_SPLIT_TRAIN, c->limit_train,
                                  c->seed, &opts, e) ||
             pb_dataset_load_opts(&r->val, ds, c->data_dir, PB_SPLIT_TEST, c->limit_val, c->seed,
                                  &opts, e);
    /* a translation model decodes ids of its whole head at validation: a vocabulary
       smaller than the head would meet an id it cannot spell after the epoch's training,
       so setup, which knows the vocabulary now, refuses it */
    const struct pb_dataset *v = opts.parts & PB_DATA_INPUTS ? &r->train : &r->val;
    if (!rc && opts.parts && r->preset && r->preset->sample == PB_SAMPLE_PAIR && v->vocab &&
        v->vocab < opts.vocab)
        rc = pb_err_set(e, "%s: the vocabulary of %s holds %d tokens, fewer than the %d the "
                           "model %s (preset %s) decodes into; give a folder whose "
                           "vocab.bpe.32000 holds at least %d tokens, or a preset of a smaller "
                           "vocabulary", ds, c->data_dir ? c->data_dir : "the dataset", v->vocab,
                        opts.vocab, c->model, r->preset->name, opts.vocab);
    if (pb_plan_collective(r, rc, e))
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
static int make_model(struct pb_plan *r, struct pb_err *e)
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
static int load_lengths(struct pb_plan *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    bool need = false;
    for (int k = 0; k < c->stages; k++)
        need |= pb_plan_holds(r, k) &&
                pb_model_reads_lengths(&r->model, r->bounds[k], r->bounds[k + 1]);
    if (!need || r->train.len)
        return 0;
    struct pb_dataset_opts opts;
    const char *ds = pb_plan_data_opts(r, &opts);
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

static int build_model(struct pb_plan *r, struct pb_err *e)
{
    const struct pb_run_cfg *c = r->cfg;
    if (make_model(r, e))
        return -1;
    r->bounds = pb_xcalloc((size_t)c->stages + 1, sizeof *r->bounds);
    /* under MPI rank 0 measures the blocks for --partition time; the others take its cut */
    return pb_run_partition(c, &r->model, r->paper_cut ? r->preset : NULL, pb_plan_writer(r),
                            r->devices[0], r->bounds, e);
}

/* r chosen for c, with one training sample of its dataset's stand-in in r->train: the
 * shape and classes of a dataset are its stand-in's, and nothing is read. */
static int plan_standin(struct pb_plan *r, const struct pb_run_cfg *c, struct pb_err *e)
{
    if (pb_plan_choose(r, c, e))
        return -1;
    struct pb_dataset_opts opts;
    const char *ds = r->dataset = pb_plan_data_opts(r, &opts);
    if (strcmp(ds, "synthetic") && !pb_dataset_summary(ds))
        return pb_err_set(e, "unknown dataset '%s'; `pipebench list` shows the datasets", ds);
    if (strcmp(ds, "synthetic") && (pb_dataset_is_image(ds) || pb_dataset_is_sequence(ds)))
        opts.like = ds;
    return pb_dataset_load_opts(&r->train, "synthetic", NULL, PB_SPLIT_TRAIN, 1, c->seed, &opts,
                                e);
}

int pb_run_data_classes(const struct pb_run_cfg *c, int *nclasses, struct pb_err *e)
{
    struct pb_plan r = {0};
    int rc = plan_standin(&r, c, e);
    if (!rc)
        *nclasses = r.train.nclasses;
    pb_plan_finish(&r);
    return rc ? -1 : 0;
}

int pb_run_model_build(const struct pb_run_cfg *c, struct pb_model *m,
                       const struct pb_preset **paper, struct pb_err *e)
{
    struct pb_plan r = {0};
    *paper = NULL;
    int rc = plan_standin(&r, c, e) || make_model(&r, e);
    if (!rc) {
        *m = r.model;
        *paper = r.paper_cut ? r.preset : NULL;
        r.model = (struct pb_model){0};
    }
    pb_plan_finish(&r);
    return rc ? -1 : 0;
}

int pb_run_partition(const struct pb_run_cfg *c, const struct pb_model *m,
                     const struct pb_preset *paper, bool measure, int device, int *bounds,
                     struct pb_err *e)
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
    /* a static cost is taken at the samples per update of --batch (semantics §5.3), so
     * the schedules of one comparison get one cut whether they sum M micro-batches of
     * B / M or take micro-batches of B */
    if (by != PB_PART_TIME)
        pb_partition_costs(m, by, c->batch ? c->batch : c->microbatch_size, cost);
    else if (measure)
        rc = pb_partition_profile(m, c->backend, device, pb_run_stage_threads(c),
                                  PB_RUN_PROFILE_REPS, cost, e);
    if (!rc && (by != PB_PART_TIME || measure))
        rc = pb_partition_min_max(cost, m->nblocks, c->stages, bounds, e);
    free(cost);
    return rc ? pb_err_prefix(e, "model '%s': ", m->name) : 0;
}


const struct pb_executor *pb_plan_executor(const struct pb_run_cfg *c)
{
    return pb_executor_find(c->executor, NULL);
}

int pb_plan_choose(struct pb_plan *p, const struct pb_run_cfg *c, struct pb_err *e)
{
    p->cfg = c;
    if (check_cfg(p, c, e) || pb_run_model(c, &p->workload, &p->preset, &p->paper_cut, e))
        return -1;
    p->sch = pb_schedule_find(c->schedule, e);
    if (!p->sch)
        return -1;
    if (c->lr_reschedule_epochs < 0 || c->lr_reschedule_epochs > PB_MAX_EPOCHS)
        return pb_err_set(e, "--lr-reschedule-epochs counts epochs: 1 to %d (got %d)",
                          PB_MAX_EPOCHS, c->lr_reschedule_epochs);
    if (c->lr_reschedule_epochs && !p->sch->lr_delay)
        return pb_err_set(e, "--lr-reschedule-epochs: %s keeps the optimizer's rate; only "
                             "pipemare reschedules it (drop the flag, or use --schedule "
                             "pipemare)", c->schedule);
    p->input_side = p->preset ? p->preset->input_side : 0;
    p->no_flip = p->preset && p->preset->no_flip;
    p->stage_threads = pb_run_stage_threads(c);
    p->checkpoint_every = c->checkpoint_every >= 0 ? c->checkpoint_every : 1;
    p->trace_epochs = pb_xcalloc((size_t)c->epochs, sizeof *p->trace_epochs);
    PB_CHECK(pb_run_trace_epochs(c->trace_epochs, c->epochs, p->trace_epochs, e) == 0);
    return 0;
}

int pb_run_check(const struct pb_run_cfg *c, struct pb_err *e)
{
    struct pb_plan p = {0};
    int rc = pb_plan_choose(&p, c, e);
    if (!rc && c->dataset && !pb_dataset_summary(c->dataset))
        rc = pb_err_set(e, "unknown dataset '%s'; `pipebench list` shows the datasets",
                        c->dataset);
    /* two mini-batches' worth of micro-batches: every op kind the schedule emits (M
     * only for the schedules it matters to) */
    int m = !rc && p.sch->uses_microbatches && c->microbatches > c->stages ? c->microbatches
                                                                          : c->stages;
    if (!rc && 3LL * 2 * m * c->stages > PB_MAX_PROGRAM_OPS)
        rc = pb_err_set(e, "%d stages with mini-batches of %d micro-batches make programs of "
                           "over %lld ops; use fewer --stages or --microbatches", c->stages, m,
                        PB_MAX_PROGRAM_OPS);
    if (!rc)
        rc = pb_plan_programs(&p, 2 * m, e);
    pb_plan_finish(&p);
    return rc;
}

int pb_plan_ranks(const struct pb_run_cfg *c)
{
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, NULL);
    int v = c->chunks > 1 ? c->chunks : !c->chunks && sch && sch->chunks > 1 ? sch->chunks : 1;
    return c->stages % v ? 0 : c->stages / v;
}

/* Each stage's process: under MPI its device's rank (the pipe's placement, known from
 * the configuration and schedule before the programs are built), else this one. The
 * rank count was checked (pb_plan_ranks), so v divides D. */
static void place_stages(struct pb_plan *p)
{
    const struct pb_run_cfg *c = p->cfg;
    struct pb_pipe pipe = {.stages = c->stages, .chunks = c->chunks};
    pb_pipe_adopt(&pipe, p->sch);
    p->rank_of = pb_xcalloc((size_t)c->stages, sizeof *p->rank_of);
    for (int k = 0; p->dist && k < c->stages; k++)
        p->rank_of[k] = pb_pipe_device_of(&pipe, k);
}

int pb_plan_build(struct pb_plan *p, const struct pb_run_cfg *c, const struct pb_dist *dist,
                  struct pb_err *e)
{
    p->dist = dist;
    p->rank = dist ? dist->rank : 0;
    if (pb_plan_collective(p, pb_plan_choose(p, c, e), e))
        return -1;
    place_stages(p);
    if (load_data(p, e))
        return -1;
    if (pb_plan_collective(p, build_model(p, e), e))
        return -1;
    pb_dist_bcast(p->dist, p->bounds, (size_t)(c->stages + 1) * sizeof *p->bounds, 0);
    if (pb_plan_collective(p, load_lengths(p, e), e))
        return -1;
    if (pb_plan_collective(p, pb_plan_programs(p, pb_run_epoch_length(c, p->ntrain), e), e))
        return -1;
    p->feed = (struct pb_feed){&p->train, &p->val, c->microbatch_size, c->seed, NULL};
    return 0;
}

void pb_plan_machine(const struct pb_plan *p, struct pb_run_info *info)
{
    double load[1] = {NAN};
    info->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    info->threads_per_stage = p->stage_threads;
    info->load_avg = getloadavg(load, 1) == 1 ? load[0] : NAN;
    info->oversubscribed = !p->executor->stages_in_turn &&
                           (long)p->cfg->stages * info->threads_per_stage > info->cores;
}

void pb_plan_finish(struct pb_plan *p)
{
    int d = p->cfg ? p->cfg->stages : 0;
    pb_feed_finish(&p->feed);
    struct pb_program *all[4] = {p->progs, p->stage_progs, p->eval_progs, p->eval_stage_progs};
    for (int i = 0; i < 4; i++) {
        if (all[i])
            pb_programs_finish(all[i], d);  /* [D]; the device ones' tail is empty */
        free(all[i]);
    }
    free(p->bounds);
    free(p->rank_of);
    free(p->devices);
    free(p->trace_epochs);
    pb_model_finish(&p->model);
    pb_dataset_finish(&p->train);
    pb_dataset_finish(&p->val);
    memset(p, 0, sizeof *p);
}
