/* bench/bench_step.c — the training step at the hardware's limit: pipebench's whole step
 * against PyTorch's on the same network, and against the sum of its own GEMM and convolution
 * primitives, measured interleaved in one run (the machine is shared and noisy).
 *
 * For every model of the registry (pb_workloads[]) on its dataset's sample shape (the zoo's
 * image models: their `small` preset on synthetic data of its shape and classes; the
 * sequence models are scripts/bench seq's), micro-batch
 * 32, 64 and 128, backend threads 1 and 2, D = 1:
 *   - the step: forward with the loss, backward and the SGD-momentum update (pb_stage_forward,
 *     pb_stage_backward, pb_optim_step, then sync), exactly the calls and the timed region of
 *     the seq executor's worker (harness/exec/worker.c) without data gathering, validation,
 *     schedule bookkeeping or metrics; the input upload of each step is outside the timing;
 *   - the primitives: the be->ops->gemm, conv_fwd, conv_bwd_weights and conv_bwd_data calls
 *     the step makes (the layers' shapes and the layouts a real forward gave their tensors,
 *     the layers' weights), run back to back (bench_prims.h): the roofline view, step /
 *     Σ primitives, and Σ primitives / PyTorch's step, the ratio to PyTorch these kernels
 *     would give if nothing else took time;
 *   - where the step goes: at micro-batch 32, steps with the stage's per-node clocks on
 *     (stage.h, node_s), the time of each layer kind as a share of the step's;
 *   - PyTorch (`step` only): bench/torch_step.py in a child process per peer
 *     (bench_peers.h: Debian's PyTorch 1.13 with LD_LIBRARY_PATH=OPENBLAS_DIR, Debian's OpenMP
 *     OpenBLAS, and PyPI's PyTorch 2.x where $PB_TORCH2_PYTHON names it), which builds the twin
 *     from the model's layer configs (a model with a layer kind it does not know has no twin:
 *     "-"), torch.set_num_threads(threads), zero_grad(set_to_none), forward, cross_entropy,
 *     backward, torch.optim.SGD(lr 0.01, momentum 0.9).step(); with --openblas, one more child:
 *     Debian's PyTorch with the BLAS as installed (for the record).
 * Each measurement is the median of REPS steps after WARMUP (PyTorch as installed, whose
 * reference BLAS is 10-20x slower: 3 after 1); over ROUNDS rounds (the order of the sides
 * rotating, bench_side_order) the tables show per-sample medians and the median [range] of the
 * per-round ratios. Goals of the issue: pipebench ≤ 0.7× PyTorch+OpenBLAS, step ≤ 1.15× Σ
 * primitives. Prints; asserts nothing.
 *   bench_step step [--openblas DIR] [--model NAME]   both tables, PyTorch included
 *   PB_TORCH2_PYTHON=PYTHON bench_step step ...       pb/pt2.x beside pb/pt1.13
 *   bench_step roofline [--model NAME]                the roofline table only */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_peers.h"
#include "bench/bench_prims.h"
#include "bench/bench_util.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/model/stage.h"
#include "harness/optim/optim.h"
#include "workloads/datasets/dataset.h"
#include "workloads/models/workload.h"

#define ROUNDS 5
#define WARMUP 2
#define REPS 5
#define SEED 1
#define PROFILE_BATCH 32  /* the micro-batch whose steps the profile table breaks down */
#define MAX_KINDS 16

static const int batches[] = {32, 64, 128};
static const int thread_counts[] = {1, 2};
enum { NBATCH = 3, NTHREADS = 2 };

static _Noreturn void die(const char *what, const struct pb_err *e)
{
    fprintf(stderr, "bench_step: %s: %s\n", what, e ? e->msg : "failed");
    exit(2);
}

/* ---- the PyTorch children: requests on their stdin, answers on their stdout ---- */

/* The PyTorch sides: the peers (bench_peers.h), and Debian's PyTorch with the BLAS as
 * installed, the record column (its req NULL when not run). */
struct torch_sides {
    struct bench_peers peers;
    struct bench_torch installed;
};

/* Builds the twin KEY in the child; false (with the reason) when it cannot, or when its
 * parameter count is not the stage's (then it is not the same network). */
static bool torch_define(struct bench_torch *t, const char *key, struct pb_shape in, int nclasses,
                         float smoothing, const char *spec, size_t nparams)
{
    if (!t->req)
        return false;
    fprintf(t->req, "def %s %d %d %d %d %d %.9g %s\n", key, in.n, in.c, in.h, in.w, nclasses,
            (double)smoothing, spec);
    fflush(t->req);
    char line[512];
    bench_torch_answer(t, line, sizeof line);
    if (strncmp(line, "ok ", 3) != 0) {
        fprintf(stderr, "bench_step: no %s twin of %s: %s\n", t->label, key, line);
        return false;
    }
    if (strtoull(line + 3, NULL, 10) != nparams) {
        fprintf(stderr, "bench_step: the %s twin of %s has %s parameters, pipebench %zu: "
                        "not compared\n", t->label, key, line + 3, nparams);
        return false;
    }
    return true;
}

/* The model as bench/torch_step.py reads it: blocks "/"-separated, each node
 * "kind,args|inputs" from the layer's config; NULL when a layer kind has no twin there. */
static char *twin_spec(const struct pb_model *m)
{
    char *spec = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&spec, &len);
    bool ok = f != NULL;
    for (int b = 0; ok && b < m->nblocks; b++) {
        const struct pb_block *blk = &m->blocks[b];
        fputs(b ? "/" : "", f);
        for (int i = 0; ok && i < blk->nnodes; i++) {
            const struct pb_layer *l = &blk->nodes[i];
            const struct pb_layer_cfg *c = &l->cfg;
            const struct pb_conv_desc *d = &c->conv;
            const struct pb_pool_desc *p = &c->pool;
            fputs(i ? " " : "", f);
            switch (c->kind) {
            case PB_LAYER_LINEAR:
                fprintf(f, "linear,%d,%d,%d", c->in_features, c->out_features, c->bias);
                break;
            case PB_LAYER_CONV2D:
                fprintf(f, "conv,%d,%d,%d,%d,%d,%d,%d,%d,%d", d->cin, d->cout, d->kh, d->kw,
                        d->sh, d->sw, d->ph, d->pw, d->bias);
                break;
            case PB_LAYER_BATCHNORM2D:
                fprintf(f, "bn,%d,%.9g,%.9g,%d", c->channels, (double)c->eps,
                        (double)c->momentum, c->relu);
                break;
            case PB_LAYER_RELU:
                fputs("relu", f);
                break;
            case PB_LAYER_MAXPOOL2D:
                fprintf(f, "maxpool,%d,%d,%d,%d,%d,%d,%d", p->kh, p->kw, p->sh, p->sw, p->ph,
                        p->pw, p->ceil_mode);
                break;
            case PB_LAYER_AVGPOOL2D:
                fprintf(f, "avgpool,%d,%d,%d,%d,%d,%d,%d,%d", p->kh, p->kw, p->sh, p->sw, p->ph,
                        p->pw, p->ceil_mode, p->exclude_pad);
                break;
            case PB_LAYER_GLOBAL_AVGPOOL:
                fputs("gap", f);
                break;
            case PB_LAYER_DROPOUT:
                fprintf(f, "dropout,%.9g", (double)c->p);
                break;
            case PB_LAYER_FLATTEN:
                fputs("flatten", f);
                break;
            case PB_LAYER_ADD:
                fprintf(f, "add,%d", c->relu);
                break;
            case PB_LAYER_CONCAT:
                fputs("concat", f);
                break;
            default:
                ok = false;
            }
            for (int j = 0; j < l->nin; j++)
                fprintf(f, "%c%d", j ? ',' : '|', l->in[j]);
        }
    }
    if (f)
        fclose(f);
    if (!ok) {
        free(spec);
        return NULL;
    }
    return spec;
}

/* ---- pipebench's side ---- */

/* The seconds a kind of layer took in profiled steps (forward and backward). */
struct kind_time {
    const char *kind;
    double s;
};

/* One model at one micro-batch and thread count, and what its runs measured. */
struct config {
    const struct pb_workload *wl;
    int batch, threads;
    struct pb_backend *be;
    struct pb_model model;
    struct pb_stage stage;
    struct pb_optim optim;
    const float *host_x;            /* the first `batch` samples of the dataset */
    int32_t *labels;                /* device [batch] */
    int64_t mb;                     /* micro-batches run so far (dropout keys) */
    struct bench_prims prims;
    double prim_flops;              /* of one run of the primitives */
    char key[64];
    bool twin[BENCH_PEERS_MAX], twin_installed;
    double t_step[ROUNDS], t_prims[ROUNDS];
    double t_torch[BENCH_PEERS_MAX][ROUNDS], t_installed[ROUNDS];  /* 0: not measured */
    struct kind_time kinds[MAX_KINDS];  /* the profiled steps by layer kind, longest first */
    int nkinds;
    double t_profiled;              /* the profiled steps' time (0: not profiled) */
};

static struct pb_tensor step_input(struct config *c)
{
    struct pb_backend *be = c->be;
    struct pb_err e;
    struct pb_tensor x;
    if (pb_tensor_alloc(be, &x, c->stage.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e))
        die("device memory", &e);
    be->ops->upload(be, x.data, c->host_x, pb_shape_count(x.shape) * sizeof(float));
    be->ops->sync(be);
    return x;
}

/* One training step as the worker runs it: forward (with the loss), backward, update. */
static void train_step(struct config *c, struct pb_tensor x, struct pb_stage_act *act)
{
    struct pb_stage *s = &c->stage;
    struct pb_err e;
    struct pb_tensor none = {0};
    struct pb_step_ctx sc = {true, SEED, c->mb++, NULL, NULL};
    if (!act->nodes && pb_stage_forward(s, &sc, s->params, x, c->labels, act, &none, &e))
        die("forward", &e);
    if (pb_stage_backward(s, &sc, s->params, act, NULL, &none, &e))
        die("backward", &e);
    pb_optim_step(&c->optim, c->be, s->params, s->grads);
    c->be->ops->sync(c->be);
    if (pb_backend_status(c->be, &e))
        die("update", &e);
}

/* A first step whose forward is also read for the primitives (bench_prims.h). */
static void build_prims(struct config *c)
{
    struct pb_err e;
    struct pb_stage_act act;
    struct pb_tensor none = {0};
    struct pb_step_ctx sc = {true, SEED, c->mb, NULL, NULL};
    if (pb_stage_forward(&c->stage, &sc, c->stage.params, step_input(c), c->labels, &act, &none,
                         &e))
        die("forward", &e);
    bench_prims_build(&c->prims, &c->stage, &act);
    c->prim_flops = c->prims.flops;
    train_step(c, (struct pb_tensor){0}, &act);
}

static double time_step(struct config *c)
{
    double t[REPS];
    for (int i = 0; i < WARMUP + REPS; i++) {
        struct pb_stage_act act = {0};
        struct pb_tensor x = step_input(c);
        double t0 = bench_now();
        train_step(c, x, &act);
        if (i >= WARMUP)
            t[i - WARMUP] = bench_now() - t0;
    }
    return bench_median(t, REPS);
}

static void config_init(struct config *c, const struct pb_workload *wl, const struct pb_dataset *ds,
                        int batch, int threads, struct pb_backend *be)
{
    struct pb_err e;
    c->wl = wl, c->batch = batch, c->threads = threads, c->be = be;
    struct pb_shape sample = {1, ds->c, ds->h, ds->w};
    const struct pb_preset *p;
    if (pb_workload_preset(wl, NULL, &p, &e) ||
        wl->build(&c->model, p, sample, p ? p->classes : ds->nclasses, &e) ||
        pb_model_finalize(&c->model, batch, &e))
        die(wl->name, &e);
    struct pb_optim_cfg oc;
    if (pb_stage_init(&c->stage, be, &c->model, 0, 1, 0, c->model.nblocks, &e) ||
        pb_stage_init_params(&c->stage, SEED, &e) || pb_optim_cfg_from_name(&oc, "sgdm", &e) ||
        pb_optim_init(&c->optim, be, &oc, c->stage.nparams, &e))
        die(wl->name, &e);
    pb_optim_set_epoch(&c->optim, 0);
    c->host_x = ds->x;
    c->labels = pb_backend_alloc(be, (size_t)batch * sizeof *c->labels, PB_MEM_SCRATCH, &e);
    if (!c->labels)
        die("device memory", &e);
    be->ops->upload(be, c->labels, ds->y, (size_t)batch * sizeof *c->labels);
    be->ops->sync(be);
    snprintf(c->key, sizeof c->key, "%s/%d/%d", wl->name, batch, threads);
    build_prims(c);
}

static void config_finish(struct config *c)
{
    bench_prims_free(&c->prims);
    pb_backend_free(c->be, c->labels);
    pb_optim_finish(&c->optim, c->be);
    pb_stage_finish(&c->stage);
    pb_model_finish(&c->model);
}

static int cmp_kind_time(const void *a, const void *b)
{
    double x = ((const struct kind_time *)a)->s, y = ((const struct kind_time *)b)->s;
    return (x < y) - (x > y);
}

/* Where the step's time goes: REPS steps after WARMUP with the stage's per-node clocks on
 * (stage.h, node_s), each node's forward and backward summed by its layer's kind. What no
 * node ran (the loss, the update, the backward's sums of fanned-out gradients, the frees)
 * is the profiled time less the kinds' sum. The clocks sync the backend around every node,
 * so these steps are not the timed ones. */
static void profile(struct config *c)
{
    struct pb_stage *s = &c->stage;
    int nodes = 0;
    for (int b = s->first; b < s->last; b++)
        nodes += c->model.blocks[b].nnodes;
    s->node_s = pb_xcalloc((size_t)nodes * 2, sizeof *s->node_s);
    c->t_profiled = 0.0;
    for (int i = 0; i < WARMUP + REPS; i++) {
        if (i == WARMUP)
            memset(s->node_s, 0, (size_t)nodes * 2 * sizeof *s->node_s);
        struct pb_stage_act act = {0};
        struct pb_tensor x = step_input(c);
        double t0 = bench_now();
        train_step(c, x, &act);
        if (i >= WARMUP)
            c->t_profiled += bench_now() - t0;
    }
    c->nkinds = 0;
    int idx = 0;
    for (int b = s->first; b < s->last; b++)
        for (int i = 0; i < c->model.blocks[b].nnodes; i++, idx++) {
            const char *kind = c->model.blocks[b].nodes[i].ops->kind;
            int k = 0;
            while (k < c->nkinds && strcmp(c->kinds[k].kind, kind))
                k++;
            if (k == c->nkinds && c->nkinds < MAX_KINDS)
                c->kinds[c->nkinds++] = (struct kind_time){kind, 0.0};
            if (k < c->nkinds)
                c->kinds[k].s += s->node_s[2 * idx] + s->node_s[2 * idx + 1];
        }
    qsort(c->kinds, (size_t)c->nkinds, sizeof *c->kinds, cmp_kind_time);
    free(s->node_s);
    s->node_s = NULL;
}

/* The rounds of one model's configurations: its step and primitives against the PyTorch
 * children, the order of the sides rotating (pipebench, each peer, the record column). A
 * model's configurations are measured together and freed before the next model's are built,
 * so the largest model bounds the memory, not the registry. */
static void measure(struct config *cfgs, int ncfg, struct torch_sides *ts, const char *name)
{
    int npeers = ts->peers.n, nsides = 1 + npeers + (ts->installed.req != NULL);
    for (int r = 0; r < ROUNDS; r++) {
        fprintf(stderr, "bench_step: %s, round %d of %d\n", name, r + 1, ROUNDS);
        for (int i = 0; i < ncfg; i++) {
            struct config *c = &cfgs[i];
            for (int j = 0; j < nsides; j++) {
                int side = bench_side_order(r, j, nsides);
                if (side == 0) {
                    c->t_step[r] = time_step(c);
                    c->t_prims[r] = bench_prims_time(&c->prims, WARMUP, REPS);
                } else if (side <= npeers) {
                    int k = side - 1;
                    c->t_torch[k][r] = !c->twin[k] ? 0.0
                                       : bench_torch_time(&ts->peers.p[k], c->key, c->threads,
                                                          WARMUP, REPS);
                } else {  /* the record column: 3 steps after 1 */
                    c->t_installed[r] = !c->twin_installed ? 0.0
                                        : bench_torch_time(&ts->installed, c->key, c->threads,
                                                           1, 3);
                }
            }
        }
    }
    for (int i = 0; i < ncfg; i++)
        if (cfgs[i].batch == PROFILE_BATCH)
            profile(&cfgs[i]);
}

/* The step against each PyTorch side: per-sample medians and the per-round ratios, a peer's
 * beside the other's, the primitives against the first peer's step. */
static void print_torch_table(const struct config *cfgs, int ncfg, const struct torch_sides *ts)
{
    const struct bench_peers *ps = &ts->peers;
    const char *first = ps->n ? ps->p[0].label : "pt";
    char head[48], r[32];
    printf("training step per sample, D = 1, SGD momentum; pipebench (CPU backend, oneDNN) vs "
           "PyTorch; each the median of %d steps after %d (as installed: 3 after 1), %d "
           "interleaved rounds, the sides' order rotating\n", REPS, WARMUP, ROUNDS);
    bench_peers_print(ps, "  ");
    if (ts->installed.req)
        printf("  %s as installed (the record column): %s: %s\n", ts->installed.label,
               BENCH_PEERS_DEBIAN_PYTHON, ts->installed.version);
    printf("  %-9s th   mb   pb us", "model");
    for (int k = 0; k < ps->n; k++) {
        snprintf(head, sizeof head, "pb/%s [range]", ps->p[k].label);
        printf("  %7s us  %-18s", ps->p[k].label, head);
    }
    snprintf(head, sizeof head, "prims/%s [range]", first);
    printf("  %-21s", head);
    if (ts->installed.req)
        printf("  installed us  pb/installed [range]");
    printf("\n");
    for (int i = 0; i < ncfg; i++) {
        const struct config *c = &cfgs[i];
        double n = c->batch;
        printf("  %-9s %2d  %3d %7.1f", c->wl->name, c->threads, c->batch,
               1e6 * bench_median(c->t_step, ROUNDS) / n);
        for (int k = 0; k < ps->n; k++)
            printf("  %10.1f  %-18s", 1e6 * bench_median(c->t_torch[k], ROUNDS) / n,
                   bench_ratio_str(c->t_step, c->t_torch[k], ROUNDS, r, sizeof r));
        printf("  %-21s", ps->n ? bench_ratio_str(c->t_prims, c->t_torch[0], ROUNDS, r, sizeof r)
                                : "-");
        if (ts->installed.req)
            printf("  %12.1f  %20s", 1e6 * bench_median(c->t_installed, ROUNDS) / n,
                   bench_ratio_str(c->t_step, c->t_installed, ROUNDS, r, sizeof r));
        printf("\n");
    }
    printf("  goal: pb/%s <= 0.70 on every row. prims/%s: pipebench's GEMMs and convolutions "
           "alone\n  (the roofline's prims) against PyTorch's whole step: where it passes 0.70, no "
           "step built on these kernels meets the goal\n\n", first, first);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_step step [--openblas DIR] [--model NAME]\n"
                    "       bench_step roofline [--model NAME]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "step") && strcmp(argv[1], "roofline")))
        usage();
    bool with_torch = !strcmp(argv[1], "step");
    const char *openblas = NULL, *only = NULL;
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--openblas"))
            openblas = argv[i + 1];
        else if (!strcmp(argv[i], "--model"))
            only = argv[i + 1];
        else
            usage();
    }

    /* PyTorch children first, before this process starts any OpenMP team */
    struct torch_sides ts = {0};
    if (with_torch) {
        if (!openblas)
            fprintf(stderr, "bench_step: no --openblas DIR: Debian's PyTorch with the BLAS as "
                            "installed (scripts/bench step passes Debian's OpenMP OpenBLAS)\n");
        bench_peers_start(&ts.peers, PB_BENCH_TORCH_STEP_SCRIPT, openblas, "bench_step");
        if (openblas)
            bench_torch_start(&ts.installed, BENCH_PEERS_DEBIAN_PYTHON,
                              PB_BENCH_TORCH_STEP_SCRIPT, NULL, "bench_step");
    }

    int nmodels = 0;
    for (int i = 0; pb_workloads[i]; i++)
        nmodels++;
    struct pb_dataset *ds = pb_xcalloc((size_t)nmodels, sizeof *ds);
    struct config *cfgs = pb_xcalloc((size_t)nmodels * NBATCH * NTHREADS, sizeof *cfgs);
    struct pb_backend *be[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        struct pb_err e;
        struct pb_backend_cfg bc = {.device = 0, .threads = thread_counts[t]};
        if (!(be[t] = pb_backend_create("cpu", &bc, &e)))
            die("cpu backend", &e);
    }
    int ncfg = 0;
    for (int i = 0; pb_workloads[i]; i++) {
        const struct pb_workload *wl = pb_workloads[i];
        if (only && strcmp(only, wl->name))
            continue;
        int first = ncfg;
        struct pb_err e;
        const struct pb_preset *p;
        if (pb_workload_preset(wl, NULL, &p, &e))
            die(wl->name, &e);
        if (wl->vocab || (p && p->vocab)) {
            if (only)
                fprintf(stderr, "bench_step: %s is a sequence model: scripts/bench seq "
                                "times it\n", wl->name);
            continue;
        }
        struct pb_shape in = p ? pb_preset_sample(p) : (struct pb_shape){0};
        struct pb_dataset_opts synth = {.c = in.c, .h = in.h, .w = in.w,
                                        .nclasses = p ? p->classes : 0, .n = batches[NBATCH - 1]};
        if (pb_dataset_load_opts(&ds[i], p ? "synthetic" : wl->dataset, NULL, PB_SPLIT_TRAIN,
                                 batches[NBATCH - 1], SEED, p ? &synth : NULL, &e))
            die(wl->dataset, &e);
        for (int t = 0; t < NTHREADS; t++)
            for (int b = 0; b < NBATCH; b++) {
                struct config *c = &cfgs[ncfg++];
                config_init(c, wl, &ds[i], batches[b], thread_counts[t], be[t]);
                char *spec = with_torch ? twin_spec(&c->model) : NULL;
                for (int k = 0; k < ts.peers.n + 1 && spec; k++) {
                    struct bench_torch *t = k < ts.peers.n ? &ts.peers.p[k] : &ts.installed;
                    bool twin = t->req && torch_define(t, c->key, c->stage.in_shape,
                                                       c->model.nclasses,
                                                       c->model.label_smoothing, spec,
                                                       c->stage.nparams);
                    *(k < ts.peers.n ? &c->twin[k] : &c->twin_installed) = twin;
                }
                free(spec);
            }
        measure(cfgs + first, ncfg - first, &ts, wl->name);
        for (int k = first; k < ncfg; k++)
            config_finish(&cfgs[k]);
        pb_dataset_finish(&ds[i]);
    }
    if (!ncfg) {
        fprintf(stderr, "bench_step: no model named '%s'\n", only ? only : "");
        return 2;
    }

    char r1[32];
    if (with_torch)
        print_torch_table(cfgs, ncfg, &ts);
    printf("roofline: the step against the sum of its GEMM and convolution primitives at the "
           "same shapes, same run\n");
    printf("  %-9s th   mb  step ms  prims ms  step/prims [range]  step GFLOP/s  prims GFLOP/s\n",
           "model");
    for (int i = 0; i < ncfg; i++) {
        struct config *c = &cfgs[i];
        double ts = bench_median(c->t_step, ROUNDS), tpr = bench_median(c->t_prims, ROUNDS);
        printf("  %-9s %2d  %3d %8.3f  %8.3f  %19s  %12.1f  %13.1f\n", c->wl->name, c->threads,
               c->batch, 1e3 * ts, 1e3 * tpr,
               bench_ratio_str(c->t_step, c->t_prims, ROUNDS, r1, sizeof r1),
               1e-9 * c->prim_flops / ts, 1e-9 * c->prim_flops / tpr);
    }
    printf("  goal: step/prims <= 1.15 on every row\n\n");
    printf("where the step goes at micro-batch %d: %d steps with a clock around every layer, "
           "%% of their time by layer kind\n(forward + backward; other: the loss, the update, "
           "the sums of fanned-out gradients, the frees)\n", PROFILE_BATCH, REPS);
    for (int i = 0; i < ncfg; i++) {
        const struct config *c = &cfgs[i];
        if (!(c->t_profiled > 0))
            continue;
        double rest = c->t_profiled;
        printf("  %-11s %dt ", c->wl->name, c->threads);
        for (int k = 0; k < c->nkinds; k++) {
            rest -= c->kinds[k].s;
            if (100.0 * c->kinds[k].s / c->t_profiled >= 0.05)
                printf(" %s %.1f", c->kinds[k].kind, 100.0 * c->kinds[k].s / c->t_profiled);
        }
        printf("  other %.1f\n", 100.0 * rest / c->t_profiled);
    }

    for (int t = 0; t < NTHREADS; t++)
        pb_backend_destroy(be[t]);
    free(ds);
    free(cfgs);
    bench_peers_stop(&ts.peers);
    bench_torch_stop(&ts.installed);
    return 0;
}
