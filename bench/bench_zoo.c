/* bench/bench_zoo.c — the zoo's image models (the workloads with presets) against PyTorch CPU
 * (Debian's 1.13 and, where $PB_TORCH2_PYTHON names it, PyPI's 2.x: bench_peers.h) on the same
 * architecture, and the loader against the step, measured in one run (the machine is shared and
 * noisy: the figures are as measured, nothing is asserted).
 *
 * Per model, at the `small` preset (its 32×32 inputs, micro-batch 32) and at the `paper` preset
 * (its 224, 299 or 32 inputs, micro-batch 2), D = 1, backend threads 1 and 2:
 *   - pipebench's training step: forward with the loss, backward and the SGD-momentum update
 *     (pb_stage_forward, pb_stage_backward, pb_optim_step, then sync), the calls and the timed
 *     region of the seq executor's worker (harness/exec/worker.c), on one augmented training
 *     batch of the preset's dataset stand-in; the input upload is outside the timing;
 *   - PyTorch's: bench/torch_zoo.py in a child process per peer (Debian's /usr/bin/python3
 *     with LD_LIBRARY_PATH=OPENBLAS_DIR, Debian's OpenMP OpenBLAS; PyPI's as it is), the paper
 *     models of tests/fixtures/fixtures_zoo.py and the small ones written there the same way;
 *     torch.set_num_threads(threads), zero_grad(set_to_none), forward, cross_entropy,
 *     backward, SGD(lr 0.01, momentum 0.9).step(). The parameter counts are printed and a
 *     peer whose count differs from pipebench's is not timed on that model (it is not the same
 *     network);
 *   - the step's GEMMs and convolutions alone (bench_prims.h: the same calls at the shapes
 *     and layouts of a real forward, run back to back) against PyTorch's whole step: the
 *     ratio these kernels would give if everything else took no time;
 *   - the loader: samples/s of pb_dataset_gather on one thread with the training transform of
 *     the preset's dataset stand-in at its input side (bench/bench_loader.h), against the
 *     step's samples/s (loader/step > 1: the loader thread keeps up).
 * Each step figure is the median of `reps` steps after `warmup`; over ROUNDS rounds (the
 * order of the sides rotating, bench_side_order) the table shows per-sample medians and the
 * median [range] of the per-round ratios pipebench/each peer, side by side (the goal:
 * ≤ 0.5, never > 1).
 *   bench_zoo [--openblas DIR] [--model NAME] [--preset small|paper]
 * with PB_TORCH2_PYTHON=PYTHON in the environment: pb/pt2.x beside pb/pt1.13 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_loader.h"
#include "bench/bench_peers.h"
#include "bench/bench_prims.h"
#include "bench/bench_util.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/model/stage.h"
#include "harness/optim/optim.h"
#include "workloads/datasets/dataset.h"
#include "workloads/models/workload.h"

#define ROUNDS 3
#define SEED 1
#define LOADER_REPS 5

static const int thread_counts[] = {1, 2};
enum { NTHREADS = 2 };

/* A preset and how it is timed. */
struct bcase {
    const char *preset;
    int batch, warmup, reps;
};

static const struct bcase cases[] = {
    {"small", 32, 2, 5},
    {"paper", 2, 1, 3},
};
enum { NCASES = 2 };

/* One model at one preset: its stages (one per thread count) and what was measured. */
struct row {
    const struct pb_workload *wl;
    const struct pb_preset *p;
    const struct bcase *bc;
    size_t pb_params, torch_params[BENCH_PEERS_MAX];
    bool timed;                                /* by some peer */
    bool peer_timed[BENCH_PEERS_MAX];          /* its parameter count is pipebench's */
    double t_pb[NTHREADS][ROUNDS], t_torch[BENCH_PEERS_MAX][NTHREADS][ROUNDS];  /* 0: not */
    double t_prims[NTHREADS][ROUNDS];  /* the step's GEMMs and convolutions (bench_prims.h) */
    double loader;            /* samples/s */
};

/* pipebench's side at one thread count. */
struct side {
    struct pb_backend *be;
    struct pb_model model;
    struct pb_stage stage;
    struct pb_optim optim;
    int32_t *labels;          /* device [batch] */
    int64_t mb;               /* micro-batches run so far (dropout keys) */
    struct bench_prims prims;
};

static _Noreturn void die(const char *what, const struct pb_err *e)
{
    fprintf(stderr, "bench_zoo: %s: %s\n", what, e ? e->msg : "failed");
    exit(2);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_zoo [--openblas DIR] [--model NAME] [--preset small|paper]\n"
                    "  NAME: one of the zoo's image models (pipebench list)\n");
    exit(2);
}

/* ---- the PyTorch child: requests on its stdin, answers on its stdout ---- */

/* Defines the PyTorch model of row r under `key`; its parameter count, 0 when it has none. */
static size_t torch_define(struct bench_torch *t, const char *key, const struct row *r,
                           float smoothing)
{
    fprintf(t->req, "def %s %s %s %d %d %d %.9g\n", key, r->wl->name, r->p->name, r->bc->batch,
            r->p->input_side, r->p->classes, (double)smoothing);
    fflush(t->req);
    char line[512];
    bench_torch_answer(t, line, sizeof line);
    if (strncmp(line, "ok ", 3) != 0) {
        fprintf(stderr, "bench_zoo: no %s %s (%s): %s\n", t->label, r->wl->name, r->p->name,
                line);
        return 0;
    }
    return strtoull(line + 3, NULL, 10);
}

/* ---- pipebench's side ---- */

static void side_init(struct side *s, struct pb_backend *be, const struct row *r,
                      const int32_t *host_y)
{
    struct pb_err e;
    struct pb_optim_cfg oc;
    memset(s, 0, sizeof *s);
    s->be = be;
    if (r->wl->build(&s->model, r->p, pb_preset_sample(r->p), r->p->classes, &e) ||
        pb_model_finalize(&s->model, r->bc->batch, &e) ||
        pb_stage_init(&s->stage, be, &s->model, 0, 1, 0, s->model.nblocks, &e) ||
        pb_stage_init_params(&s->stage, SEED, &e) || pb_optim_cfg_from_name(&oc, "sgdm", &e) ||
        pb_optim_init(&s->optim, be, &oc, s->stage.nparams, &e))
        die(r->wl->name, &e);
    pb_optim_set_epoch(&s->optim, 0);
    size_t ybytes = (size_t)r->bc->batch * sizeof *s->labels;
    if (!(s->labels = pb_backend_alloc(be, ybytes, PB_MEM_SCRATCH, &e)))
        die("device memory", &e);
    be->ops->upload(be, s->labels, host_y, ybytes);
    be->ops->sync(be);
}

/* The step's primitives, from a training forward on the batch host_x (then released). */
static void side_prims(struct side *s, const float *host_x)
{
    struct pb_backend *be = s->be;
    struct pb_err e;
    struct pb_tensor x, none = {0};
    struct pb_stage_act act = {0};
    struct pb_step_ctx sc = {true, SEED, s->mb++, NULL, NULL};
    if (pb_tensor_alloc(be, &x, s->stage.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e))
        die("device memory", &e);
    be->ops->upload(be, x.data, host_x, pb_shape_count(x.shape) * sizeof(float));
    if (pb_stage_forward(&s->stage, &sc, s->stage.params, x, s->labels, &act, &none, &e))
        die("forward", &e);
    bench_prims_build(&s->prims, &s->stage, &act);
    pb_stage_act_release(&s->stage, &act);
}

static void side_finish(struct side *s)
{
    bench_prims_free(&s->prims);
    pb_backend_free(s->be, s->labels);
    pb_optim_finish(&s->optim, s->be);
    pb_stage_finish(&s->stage);
    pb_model_finish(&s->model);
}

/* The median seconds of one training step as the worker runs it (forward with the loss,
 * backward, update), of reps steps after warmup, on the batch host_x [batch, 3, S, S]. */
static double side_time(struct side *s, const float *host_x, int warmup, int reps)
{
    struct pb_backend *be = s->be;
    struct pb_err e;
    struct pb_tensor none = {0};
    double t[64];
    for (int i = 0; i < warmup + reps; i++) {
        struct pb_tensor x;
        struct pb_stage_act act = {0};
        struct pb_step_ctx sc = {true, SEED, s->mb++, NULL, NULL};
        if (pb_tensor_alloc(be, &x, s->stage.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e))
            die("device memory", &e);
        be->ops->upload(be, x.data, host_x, pb_shape_count(x.shape) * sizeof(float));
        be->ops->sync(be);
        double t0 = bench_now();
        if (pb_stage_forward(&s->stage, &sc, s->stage.params, x, s->labels, &act, &none, &e))
            die("forward", &e);
        if (pb_stage_backward(&s->stage, &sc, s->stage.params, &act, NULL, &none, &e))
            die("backward", &e);
        pb_optim_step(&s->optim, be, s->stage.params, s->stage.grads);
        be->ops->sync(be);
        if (pb_backend_status(be, &e))
            die("update", &e);
        if (i >= warmup)
            t[i - warmup] = bench_now() - t0;
    }
    return bench_median(t, reps);
}

/* Measures row r: every side interleaved over the rounds, then the loader. */
static void measure(struct row *r, struct pb_backend **be, struct bench_peers *ps)
{
    const struct bcase *bc = r->bc;
    struct pb_err e;
    int side = r->p->input_side;
    /* the preset's dataset stand-in, stored as the real one, gathered at the input side */
    struct pb_dataset_opts o = {.like = r->p->dataset, .n = 256, .crop = side,
                                .no_flip = r->p->no_flip};
    struct pb_dataset ds;
    if (pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, SEED, &o, &e))
        die(r->p->dataset, &e);
    float *x = pb_xcalloc((size_t)bc->batch * 3 * side * side, sizeof *x);
    int32_t *y = pb_xcalloc((size_t)bc->batch, sizeof *y);
    pb_dataset_gather(&ds, (struct pb_data_key){SEED, 0, true}, NULL, 0, bc->batch, x, y);

    struct side sd[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        side_init(&sd[t], be[t], r, y);
        side_prims(&sd[t], x);
    }
    r->pb_params = sd[0].stage.nparams;
    char key[64];
    snprintf(key, sizeof key, "%s/%s", r->wl->name, r->p->name);
    printf("  %-11s %-5s parameters: pipebench %zu", r->wl->name, r->p->name, r->pb_params);
    for (int p = 0; p < ps->n; p++) {
        r->torch_params[p] = torch_define(&ps->p[p], key, r, sd[0].model.label_smoothing);
        r->peer_timed[p] = r->torch_params[p] == r->pb_params;
        r->timed |= r->peer_timed[p];
        printf(", %s %zu%s", ps->p[p].label, r->torch_params[p],
               r->peer_timed[p] ? "" : " (not the same network: not timed)");
    }
    printf("\n");
    fflush(stdout);
    int nsides = 1 + ps->n;
    for (int k = 0; r->timed && k < ROUNDS; k++)
        for (int t = 0; t < NTHREADS; t++)
            for (int j = 0; j < nsides; j++) {
                int side = bench_side_order(k + t, j, nsides);
                if (side == 0) {
                    r->t_pb[t][k] = side_time(&sd[t], x, bc->warmup, bc->reps);
                    r->t_prims[t][k] = bench_prims_time(&sd[t].prims, bc->warmup, bc->reps);
                } else if (r->peer_timed[side - 1]) {
                    r->t_torch[side - 1][t][k] = bench_torch_time(&ps->p[side - 1], key,
                                                                  thread_counts[t], bc->warmup,
                                                                  bc->reps);
                }
            }
    for (int p = 0; p < ps->n; p++)
        bench_torch_drop(&ps->p[p], key);
    for (int t = 0; t < NTHREADS; t++)
        side_finish(&sd[t]);
    /* about a tenth of a second per timing: 1280 samples at 32×32, fewer at larger sides */
    int samples = 1280 * 32 * 32 / (side * side);
    int batches = samples / bc->batch > 1 ? samples / bc->batch : 1;
    if (r->timed)
        r->loader = bench_loader_rate(&ds, bc->batch, true, batches, LOADER_REPS);
    free(x);
    free(y);
    pb_dataset_finish(&ds);
}

static void print_table(const struct row *rows, int nrows, const struct bench_peers *ps,
                        const char *openblas)
{
    printf("\nzoo training step per sample, D = 1, SGD momentum: pipebench (CPU backend, oneDNN, "
           "seq) vs PyTorch; medians of %d interleaved rounds, the sides' order rotating (small: "
           "%d steps after %d; paper: %d after %d); loader: one thread, training transform, "
           "median of %d timings\n", ROUNDS, cases[0].reps, cases[0].warmup, cases[1].reps,
           cases[1].warmup, LOADER_REPS);
    bench_peers_print(ps, "  ");
    if (!openblas)
        printf("  (no --openblas: Debian's PyTorch with the BLAS as installed, not a fair peer)\n");
    const char *first = ps->p[0].label;
    char head[48], buf[32];
    printf("  %-11s %-6s %3s %3s %2s %11s %10s", "model", "preset", "S", "mb", "th", "pb params",
           "pb us");
    for (int p = 0; p < ps->n; p++) {
        snprintf(head, sizeof head, "pb/%s [range]", ps->p[p].label);
        printf(" %7s us  %-18s", ps->p[p].label, head);
    }
    snprintf(head, sizeof head, "prims/%s [range]", first);
    printf("  %-21s %9s %9s %7s\n", head, "step sa/s", "load sa/s", "load/st");
    for (int i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        for (int t = 0; t < NTHREADS; t++) {
            printf("  %-11s %-6s %3d %3d %2d %11zu", r->wl->name, r->p->name, r->p->input_side,
                   r->bc->batch, thread_counts[t], r->pb_params);
            if (!r->timed) {
                printf("  not timed: no peer's parameter count is pipebench's\n");
                continue;
            }
            double n = r->bc->batch, pb = bench_median(r->t_pb[t], ROUNDS);
            printf(" %10.1f", 1e6 * pb / n);
            for (int p = 0; p < ps->n; p++)
                printf(" %10.1f  %-18s", 1e6 * bench_median(r->t_torch[p][t], ROUNDS) / n,
                       bench_ratio_str(r->t_pb[t], r->t_torch[p][t], ROUNDS, buf, sizeof buf));
            printf("  %-21s %9.1f %9.1f %7.2f\n",
                   bench_ratio_str(r->t_prims[t], r->t_torch[0][t], ROUNDS, buf, sizeof buf),
                   n / pb, r->loader, r->loader * pb / n);
        }
    }
    printf("  goal of the issue: pb/%s <= 0.5, never > 1; load/st > 1: the loader keeps up\n"
           "  prims/%s: pipebench's GEMMs and convolutions of the step alone, run back to back "
           "(bench_prims.h), against %s's\n  whole step: where it passes 0.5, no step built "
           "on these kernels meets the goal\n", first, first, first);
}

int main(int argc, char **argv)
{
    const char *openblas = NULL, *only = NULL, *preset = NULL;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--openblas"))
            openblas = argv[i + 1];
        else if (!strcmp(argv[i], "--model"))
            only = argv[i + 1];
        else if (!strcmp(argv[i], "--preset"))
            preset = argv[i + 1];
        else
            usage();
    }
    if (preset && strcmp(preset, "small") && strcmp(preset, "paper"))
        usage();
    struct row rows[64];
    int nrows = 0;
    for (int i = 0; pb_workloads[i]; i++) {
        const struct pb_workload *wl = pb_workloads[i];
        if (!wl->presets || (only && strcmp(only, wl->name)))
            continue;
        for (int c = 0; c < NCASES; c++) {
            struct pb_err e;
            const struct pb_preset *p;
            if (preset && strcmp(preset, cases[c].preset))
                continue;
            if (pb_workload_preset(wl, cases[c].preset, &p, &e) || nrows == 64)
                die(wl->name, nrows == 64 ? NULL : &e);
            if (!p->input_side)
                continue;  /* a sequence model: scripts/bench seq times it */
            rows[nrows++] = (struct row){.wl = wl, .p = p, .bc = &cases[c]};
        }
    }
    if (!nrows) {
        fprintf(stderr, "bench_zoo: no zoo image model named '%s' (pipebench list shows them)\n",
                only ? only : "");
        return 2;
    }

    /* the PyTorch children first, before this process starts any OpenMP team */
    struct bench_peers ps;
    if (!openblas)
        fprintf(stderr, "bench_zoo: no --openblas DIR: Debian's PyTorch with the BLAS as "
                        "installed (scripts/bench zoo passes Debian's OpenMP OpenBLAS)\n");
    if (!bench_peers_start(&ps, PB_BENCH_TORCH_ZOO_SCRIPT, openblas, "bench_zoo"))
        return 2;
    struct pb_backend *be[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        struct pb_err e;
        struct pb_backend_cfg bcfg = {.device = 0, .threads = thread_counts[t]};
        if (!(be[t] = pb_backend_create("cpu", &bcfg, &e)))
            die("cpu backend", &e);
    }
    printf("bench_zoo: PyTorch peers\n");
    bench_peers_print(&ps, "  ");
    for (int i = 0; i < nrows; i++) {
        fprintf(stderr, "bench_zoo: %s (%s), %d of %d\n", rows[i].wl->name, rows[i].p->name,
                i + 1, nrows);
        measure(&rows[i], be, &ps);
    }
    print_table(rows, nrows, &ps, openblas);
    for (int t = 0; t < NTHREADS; t++)
        pb_backend_destroy(be[t]);
    bench_peers_stop(&ps);
    return 0;
}
