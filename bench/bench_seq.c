/* bench/bench_seq.c — the sequence zoo's training step against PyTorch CPU (Debian's 1.13 and,
 * where $PB_TORCH2_PYTHON names it, PyPI's 2.x: bench_peers.h) on the same architecture, batch,
 * weights and threads, measured in one run (issue 10's benchmark; the
 * machine is shared and noisy: the figures are as measured, and nothing is asserted but that
 * both sides compute the same step).
 *
 * Rows (`rows` below), D = 1, backend threads 1 and 2:
 *   - residual-lstm's small preset at batch 256, gnmt8's and gnmt16's at batch 64 (the
 *     recipes' batches, docs/reproducing.md), each the whole model as one stage with its loss;
 *   - one GNMT-8 layer stack at paper width: the paper gnmt8's encoder LSTMs, blocks encoder1
 *     … encoder4 (a bidirectional LSTM 1024 packed by the source lengths, an LSTM 2048→1024,
 *     two residual LSTMs 1024, dropout 0.2 before each), run as a middle pipeline stage at
 *     batch 8 × 50 tokens, to keep a step to a few seconds (16 × 50 took 9–19 s a step on one
 *     core of the shared 2-core machine at load 7; the recipe's 64 × 50 would take four times
 *     that): its input [B, T, H + 1] holds uniform features and the target ids the blocks
 *     carry (workloads/models/gnmt.c), the gradient of its output is a fixed uniform dy, and its
 *     input's gradient is computed, as a middle stage's.
 * Both sides take the same step:
 *   - pipebench's: the calls and the timed region of the seq executor's worker
 *     (harness/exec/worker.c): pb_stage_forward with the loss, pb_stage_backward,
 *     pb_optim_step, then sync; the input upload is outside the timing;
 *   - PyTorch's: bench/torch_seq.py in a child process per peer (Debian's /usr/bin/python3
 *     with LD_LIBRARY_PATH=OPENBLAS_DIR, Debian's OpenMP OpenBLAS, as bench_zoo's), the
 *     definitions of tests/fixtures/fixtures_seq.py (ResidualLSTM) and fixtures_zoo.py (GNMT,
 *     the encoder stack by its GNMT.encode); torch.set_num_threads(threads);
 *   - the recipe's optimizer, Adam (residual-lstm lr 1e-3; GNMT lr 3e-4 with L2 weight decay
 *     1e-4), torch.optim.Adam on PyTorch's side; the loss: cross-entropy for residual-lstm,
 *     for GNMT the label-smoothed (0.1) cross-entropy per target token with PAD ignored;
 *   - pipebench's initial weights (PyTorch loads them tensor by tensor, each size checked)
 *     and one batch: the first B samples of the model's synthetic stand-in at seed 1
 *     (imdb-like for residual-lstm, wmt16-like for GNMT; lengths as it draws them), the
 *     same token ids, lengths and labels; the bidirectional LSTM packed by the source lengths on
 *     both (pack_padded_sequence in PyTorch).
 * Before the timing, the check: with every dropout at p = 0 on one thread, pipebench's and each
 * peer's loss (the stack's: sum(y · dy)), the sum of the squared parameter gradients and the
 * loss after one Adam step; any of them more than 1e-3 apart relative ends the benchmark
 * (exit 1): a comparison of different computations would be worthless.
 * Each step figure is the median of a row's reps steps after its warmup (the first round warms
 * at least one); over ROUNDS rounds (the order of the sides rotating, bench_side_order) the
 * table shows the median [range] of each side's seconds per step and of the per-round ratios
 * pipebench/each peer, side by side (the goal: ≤ 0.5, never > 1), tokens/s of
 * pipebench and the first peer (residual-lstm: B·T; GNMT: the
 * target tokens the loss counts; the stack: the source tokens) and the 1-minute load average
 * after the row.
 * --check runs the checks alone (no timing), in about a minute.
 *   bench_seq [--openblas DIR] [--row NAME] [--check]
 * with PB_TORCH2_PYTHON=PYTHON in the environment: pb/pt2.x beside pb/pt1.13 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_peers.h"
#include "bench/bench_util.h"
#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/model/stage.h"
#include "harness/optim/optim.h"
#include "workloads/datasets/dataset.h"
#include "workloads/models/workload.h"

#define ROUNDS 5
#define SEED 1
#define CHECK_RTOL 1e-3

static const int thread_counts[] = {1, 2};
enum { NTHREADS = 2 };

/* What PyTorch builds (bench/torch_seq.py's KIND). */
enum seq_kind { SEQ_RLSTM, SEQ_GNMT, SEQ_STACK };
static const char *const kind_names[] = {"rlstm", "gnmt", "stack"};

/* One row: a model of the workload registry, how it is cut and trained, and how it is timed. */
struct row_def {
    const char *name;               /* the row (--row) */
    const char *workload, *preset;  /* registry names; preset NULL: a workload without presets */
    enum seq_kind kind;
    int batch;                      /* the recipe's; the stack's: the header says why */
    const char *first, *last;       /* a stack: its blocks [first, last) by name */
    float lr, weight_decay, smoothing;
    int warmup, reps;               /* steps per round and side */
};

/* The models by their registry names and presets. */
static const struct row_def rows[] = {
    {"residual-lstm", "residual-lstm", "small", SEQ_RLSTM, 256, NULL, NULL, 1e-3f, 0.0f,
     0.0f, 1, 3},
    {"gnmt8", "gnmt8", "small", SEQ_GNMT, 64, NULL, NULL, 3e-4f, 1e-4f, 0.1f, 1, 3},
    {"gnmt16", "gnmt16", "small", SEQ_GNMT, 64, NULL, NULL, 3e-4f, 1e-4f, 0.1f, 1, 3},
    {"gnmt8-stack", "gnmt8", "paper", SEQ_STACK, 8, "encoder1", "decoder_embedding", 3e-4f,
     1e-4f, 0.0f, 0, 1},
};
enum { NROWS = sizeof rows / sizeof rows[0] };

/* One batch on the host, as each side reads it. */
struct batch {
    int b, t, s;         /* sequences, steps, ids a sample (T; 2T for a translation pair) */
    float *samples;      /* the gathered samples [b, s] (token ids as floats) */
    float *x;            /* pipebench's stage input, [stage in_shape] */
    int32_t *labels;     /* [b] or [b·t] (whole models) */
    int32_t *lengths;    /* [b] (source lengths for GNMT) */
    float *dy;           /* a stack: the gradient of its output, [stage out_shape] */
    int32_t *ids;        /* PyTorch's ids file (torch_seq.py's BATCH) */
    size_t nids;
    float *floats;       /* a stack: PyTorch's x then dy, [2, b, t, H] */
    size_t nfloats;
    double tokens;
};

/* pipebench's side at one thread count. */
struct side {
    struct pb_backend *be;
    struct pb_model model;
    struct pb_stage stage;
    struct pb_optim optim;
    bool stack;
    int32_t *labels, *lengths;   /* device, NULL when the stage reads none */
    struct pb_tensor dy;         /* a stack: device */
    int64_t mb;                  /* micro-batches run so far (dropout keys) */
};

/* What a row measured. */
struct result {
    size_t params;
    double t_pb[NTHREADS][ROUNDS], t_pt[BENCH_PEERS_MAX][NTHREADS][ROUNDS];
    double tokens, load;
    int b, t;
};

static char tmpdir[] = "/tmp/pb_bench_seq.XXXXXX";
static bool have_tmpdir;
static const char *const tmp_files[] = {"weights.f32", "batch.i32", "floats.f32"};

static void tmp_path(char *buf, size_t len, int i)
{
    snprintf(buf, len, "%s/%s", tmpdir, tmp_files[i]);
}

static void remove_tmpdir(void)
{
    if (!have_tmpdir)
        return;
    for (int i = 0; i < 3; i++) {
        char p[128];
        tmp_path(p, sizeof p, i);
        unlink(p);
    }
    rmdir(tmpdir);
}

static _Noreturn void die(const char *what, const struct pb_err *e)
{
    fprintf(stderr, "bench_seq: %s: %s\n", what, e ? e->msg : "failed");
    exit(2);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_seq [--openblas DIR] [--row NAME] [--check]\n  NAME: one of");
    for (int i = 0; i < NROWS; i++)
        fprintf(stderr, " %s", rows[i].name);
    fprintf(stderr, "\n");
    exit(2);
}

static void write_file(int i, const void *data, size_t bytes)
{
    char p[128];
    tmp_path(p, sizeof p, i);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f)) {
        fprintf(stderr, "bench_seq: cannot write %s\n", p);
        exit(2);
    }
}

/* ---- the model ---- */

static int block_index(const struct pb_model *m, const char *name)
{
    for (int b = 0; b < m->nblocks; b++)
        if (!strcmp(m->blocks[b].name, name))
            return b;
    return -1;
}

/* Blocks of [first, last) named prefix then a number (encoder1, decoder3, block2). */
static int count_blocks(const struct pb_model *m, int first, int last, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (int b = first; b < last; b++)
        n += !strncmp(m->blocks[b].name, prefix, k) && m->blocks[b].name[k] >= '0' &&
             m->blocks[b].name[k] <= '9';
    return n;
}

/* The first layer of `kind` in blocks [first, last), NULL when none. */
static const struct pb_layer *find_layer(const struct pb_model *m, int first, int last,
                                         enum pb_layer_kind kind)
{
    for (int b = first; b < last; b++)
        for (int i = 0; i < m->blocks[b].nnodes; i++)
            if (m->blocks[b].nodes[i].cfg.kind == kind)
                return &m->blocks[b].nodes[i];
    return NULL;
}

/* The dropout probabilities of m, in model order, into p[] (NULL: only counted), or, with
 * set, p[] into m (p NULL: 0 for all); returns how many dropouts there are. */
static int dropout_ps(struct pb_model *m, float *p, bool set)
{
    int n = 0;
    for (int b = 0; b < m->nblocks; b++)
        for (int i = 0; i < m->blocks[b].nnodes; i++) {
            struct pb_layer_cfg *c = &m->blocks[b].nodes[i].cfg;
            if (c->kind != PB_LAYER_DROPOUT)
                continue;
            if (set)
                c->p = p ? p[n] : 0.0f;
            else if (p)
                p[n] = c->p;
            n++;
        }
    return n;
}

/* ---- pipebench's side ---- */

static void side_init(struct side *s, struct pb_backend *be, const struct row_def *d,
                      const struct pb_workload *wl, const struct pb_preset *p,
                      struct pb_shape sample, int nclasses, const struct batch *hb)
{
    struct pb_err e;
    memset(s, 0, sizeof *s);
    s->be = be;
    s->stack = d->kind == SEQ_STACK;
    if (wl->build(&s->model, p, sample, nclasses, &e))
        die(d->name, &e);
    s->model.label_smoothing = d->smoothing;
    if (pb_model_finalize(&s->model, d->batch, &e))
        die(d->name, &e);
    int first = 0, last = s->model.nblocks, index = 0, nstages = 1;
    if (s->stack) {
        first = block_index(&s->model, d->first);
        last = block_index(&s->model, d->last);
        if (first < 0 || last <= first) {
            fprintf(stderr, "bench_seq: %s: no blocks %s … %s in %s\n", d->name, d->first,
                    d->last, d->workload);
            exit(2);
        }
        index = 1, nstages = 3;  /* a middle stage: dy in, dx out */
    }
    struct pb_optim_cfg oc;
    if (pb_stage_init(&s->stage, be, &s->model, index, nstages, first, last, &e) ||
        pb_stage_init_params(&s->stage, SEED, &e) || pb_optim_cfg_from_name(&oc, "adam", &e))
        die(d->name, &e);
    oc.lr = d->lr;
    oc.weight_decay = d->weight_decay;
    if (pb_optim_cfg_check(&oc, &e) || pb_optim_init(&s->optim, be, &oc, s->stage.nparams, &e))
        die(d->name, &e);
    pb_optim_set_epoch(&s->optim, 0);
    if (s->stage.nlabels) {
        size_t bytes = (size_t)s->stage.nlabels * sizeof *s->labels;
        if (!(s->labels = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, &e)))
            die("device memory", &e);
        be->ops->upload(be, s->labels, hb->labels, bytes);
    }
    if (s->stage.needs_lengths) {
        size_t bytes = (size_t)d->batch * sizeof *s->lengths;
        if (!(s->lengths = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, &e)))
            die("device memory", &e);
        be->ops->upload(be, s->lengths, hb->lengths, bytes);
    }
    if (s->stack) {
        if (pb_tensor_alloc(be, &s->dy, s->stage.out_shape, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, &e))
            die("device memory", &e);
        be->ops->upload(be, s->dy.data, hb->dy, pb_shape_count(s->dy.shape) * sizeof(float));
    }
    be->ops->sync(be);
}

static void side_finish(struct side *s)
{
    pb_backend_free(s->be, s->labels);
    pb_backend_free(s->be, s->lengths);
    pb_backend_free(s->be, s->dy.data);
    pb_optim_finish(&s->optim, s->be);
    pb_stage_finish(&s->stage);
    pb_model_finish(&s->model);
}

/* The stage input: host_x uploaded to a new tensor (the forward's act owns it). */
static struct pb_tensor side_input(struct side *s, const float *host_x)
{
    struct pb_err e;
    struct pb_tensor x;
    if (pb_tensor_alloc(s->be, &x, s->stage.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e))
        die("device memory", &e);
    s->be->ops->upload(s->be, x.data, host_x, pb_shape_count(x.shape) * sizeof(float));
    s->be->ops->sync(s->be);
    return x;
}

/* Forward of the batch: the loss of a whole model, a stack's sum(y · dy) (in double over the
 * output's features but the carried ids, whose dy is 0). act is kept when train. */
static double side_forward(struct side *s, const struct batch *hb, bool train,
                           struct pb_stage_act *act)
{
    struct pb_err e;
    struct pb_tensor none = {0}, out = {0};
    struct pb_step_ctx sc = {train, SEED, s->mb++, s->lengths, NULL};
    if (pb_stage_forward(&s->stage, &sc, s->stage.params, side_input(s, hb->x), s->labels, act,
                         s->stack ? &out : &none, &e))
        die("forward", &e);
    if (!s->stack)
        return act->loss;
    size_t n = pb_shape_count(out.shape);
    float *y = pb_xmalloc(n * sizeof *y);
    s->be->ops->download(s->be, y, out.data, n * sizeof *y);
    s->be->ops->sync(s->be);
    double dot = 0.0;
    for (size_t i = 0; i < n; i++)
        dot += (double)y[i] * (double)hb->dy[i];
    free(y);
    pb_backend_free(s->be, out.data);
    return dot;
}

static void side_backward(struct side *s, struct pb_stage_act *act)
{
    struct pb_err e;
    struct pb_tensor none = {0}, dx = {0};
    struct pb_step_ctx sc = {true, SEED, act->mb, NULL, NULL};
    if (pb_stage_backward(&s->stage, &sc, s->stage.params, act, s->stack ? &s->dy : NULL,
                          s->stack ? &dx : &none, &e))
        die("backward", &e);
    pb_backend_free(s->be, dx.data);
}

static void side_update(struct side *s)
{
    struct pb_err e;
    pb_optim_step(&s->optim, s->be, s->stage.params, s->stage.grads);
    s->be->ops->sync(s->be);
    if (pb_backend_status(s->be, &e))
        die("update", &e);
}

/* The check on pipebench's side: loss, sum of squared gradients, loss after the update. */
static void side_check(struct side *s, const struct batch *hb, double res[3])
{
    float *keep = pb_xcalloc((size_t)dropout_ps(&s->model, NULL, false) + 1, sizeof *keep);
    dropout_ps(&s->model, keep, false);
    dropout_ps(&s->model, NULL, true);
    struct pb_stage_act act = {0};
    res[0] = side_forward(s, hb, true, &act);
    side_backward(s, &act);
    float *g = pb_xmalloc(s->stage.nparams * sizeof *g);
    s->be->ops->download(s->be, g, s->stage.grads, s->stage.nparams * sizeof *g);
    s->be->ops->sync(s->be);
    res[1] = 0.0;
    for (size_t i = 0; i < s->stage.nparams; i++)
        res[1] += (double)g[i] * (double)g[i];
    free(g);
    side_update(s);
    res[2] = side_forward(s, hb, false, &act);
    dropout_ps(&s->model, keep, true);
    free(keep);
}

/* The median seconds of one training step as the worker runs it (forward with the loss,
 * backward, update), of reps steps after warmup. */
static double side_time(struct side *s, const struct batch *hb, int warmup, int reps)
{
    struct pb_err e;
    double t[64];
    for (int i = 0; i < warmup + reps; i++) {
        struct pb_tensor x = side_input(s, hb->x), none = {0}, out = {0}, dx = {0};
        struct pb_stage_act act = {0};
        struct pb_step_ctx sc = {true, SEED, s->mb++, s->lengths, NULL};
        double t0 = bench_now();
        if (pb_stage_forward(&s->stage, &sc, s->stage.params, x, s->labels, &act,
                             s->stack ? &out : &none, &e))
            die("forward", &e);
        sc.lengths = NULL;
        if (pb_stage_backward(&s->stage, &sc, s->stage.params, &act, s->stack ? &s->dy : NULL,
                              s->stack ? &dx : &none, &e))
            die("backward", &e);
        side_update(s);
        if (i >= warmup)
            t[i - warmup] = bench_now() - t0;
        pb_backend_free(s->be, out.data);
        pb_backend_free(s->be, dx.data);
    }
    return bench_median(t, reps);
}

/* ---- the batch ---- */

/* The first B samples of the model's dataset stand-in (the file order: lengths as the
 * stand-in draws them, not one length bucket), as both sides read them
 * (a stack's floats come with its width, stack_inputs); the dataset's sample shape and the
 * head's width into *sample, *nclasses. */
static void make_batch(const struct row_def *d, const struct pb_workload *wl,
                       const struct pb_preset *p, struct batch *hb, struct pb_shape *sample,
                       int *nclasses)
{
    struct pb_err e;
    int B = d->batch;
    struct pb_dataset_opts o = {.like = p ? p->dataset : wl->dataset, .n = B,
                                .vocab = p && p->vocab ? p->vocab : wl->vocab,
                                .steps = p && p->steps ? p->steps : wl->steps};
    struct pb_dataset ds;
    if (pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, SEED, &o, &e))
        die(d->name, &e);
    *sample = (struct pb_shape){1, ds.c, ds.h, ds.w};
    *nclasses = p ? p->classes : ds.nclasses;
    memset(hb, 0, sizeof *hb);
    hb->b = B;
    hb->t = ds.tgt_steps ? ds.tgt_steps : ds.c;
    hb->s = ds.c;
    int T = hb->t, S = hb->s;
    hb->samples = pb_xcalloc((size_t)B * S, sizeof *hb->samples);
    hb->lengths = pb_xcalloc((size_t)B, sizeof *hb->lengths);
    struct pb_data_key key = {SEED, 0, true};
    pb_dataset_gather(&ds, key, NULL, 0, B, hb->samples, NULL);
    pb_dataset_gather_lengths(&ds, NULL, 0, B, hb->lengths);
    if (d->kind == SEQ_RLSTM) {  /* ids: tokens [B, T], lengths [B], labels [B] */
        hb->labels = pb_xcalloc((size_t)B, sizeof *hb->labels);
        pb_dataset_gather(&ds, key, NULL, 0, B, NULL, hb->labels);
        hb->nids = (size_t)B * T + 2 * (size_t)B;
        hb->ids = pb_xcalloc(hb->nids, sizeof *hb->ids);
        for (size_t i = 0; i < (size_t)B * T; i++)
            hb->ids[i] = (int32_t)hb->samples[i];
        memcpy(hb->ids + (size_t)B * T, hb->lengths, (size_t)B * sizeof *hb->ids);
        memcpy(hb->ids + (size_t)B * (T + 1), hb->labels, (size_t)B * sizeof *hb->ids);
        hb->tokens = (double)B * T;
    } else if (d->kind == SEQ_GNMT) {  /* ids: source [B, T], target [B, T], lengths, labels */
        hb->labels = pb_xcalloc((size_t)B * T, sizeof *hb->labels);
        pb_dataset_gather_next_tokens(&ds, NULL, 0, B, hb->labels);
        hb->nids = 3 * (size_t)B * T + (size_t)B;
        hb->ids = pb_xcalloc(hb->nids, sizeof *hb->ids);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                hb->ids[(size_t)b * T + t] = (int32_t)hb->samples[(size_t)b * S + t];
                hb->ids[(size_t)(B + b) * T + t] = (int32_t)hb->samples[(size_t)b * S + T + t];
            }
        memcpy(hb->ids + 2 * (size_t)B * T, hb->lengths, (size_t)B * sizeof *hb->ids);
        memcpy(hb->ids + 2 * (size_t)B * T + B, hb->labels, (size_t)B * T * sizeof *hb->ids);
        for (size_t i = 0; i < (size_t)B * T; i++)
            hb->tokens += hb->labels[i] != PB_WMT16_PAD;
    } else {  /* ids: source lengths [B] */
        hb->nids = (size_t)B;
        hb->ids = pb_xcalloc(hb->nids, sizeof *hb->ids);
        memcpy(hb->ids, hb->lengths, (size_t)B * sizeof *hb->ids);
        for (int b = 0; b < B; b++)
            hb->tokens += hb->lengths[b];
    }
    if (d->kind != SEQ_STACK) {  /* a whole model's input: the samples */
        hb->x = pb_xmalloc((size_t)B * S * sizeof *hb->x);
        memcpy(hb->x, hb->samples, (size_t)B * S * sizeof *hb->x);
    }
    pb_dataset_finish(&ds);
}

/* A stack of width H over the encoder's states and the carried target ids: x [B, T, H + 1]
 * and dy [B, T, H + 1] for pipebench (uniform in [-1, 1), the pair's target id in the last
 * feature, its dy 0), and the same x and dy [B, T, H] for PyTorch (floats: x then dy). */
static void stack_inputs(struct batch *hb, int H)
{
    int B = hb->b, T = hb->t, F = H + 1;
    size_t n = (size_t)B * T * H;
    hb->nfloats = 2 * n;
    hb->floats = pb_xmalloc(hb->nfloats * sizeof *hb->floats);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, SEED, 101, 0, 0), 0, hb->floats, n, -1.0f, 1.0f);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, SEED, 102, 0, 0), 0, hb->floats + n, n, -1.0f,
                        1.0f);
    hb->x = pb_xmalloc((size_t)B * T * F * sizeof *hb->x);
    hb->dy = pb_xmalloc((size_t)B * T * F * sizeof *hb->dy);
    for (size_t r = 0; r < (size_t)B * T; r++) {
        memcpy(hb->x + r * F, hb->floats + r * H, (size_t)H * sizeof(float));
        memcpy(hb->dy + r * F, hb->floats + n + r * H, (size_t)H * sizeof(float));
        hb->x[r * F + H] = hb->samples[(r / T) * hb->s + T + r % T];
        hb->dy[r * F + H] = 0.0f;
    }
}

static void batch_finish(struct batch *hb)
{
    free(hb->samples);
    free(hb->x);
    free(hb->labels);
    free(hb->lengths);
    free(hb->dy);
    free(hb->ids);
    free(hb->floats);
}

/* ---- the PyTorch child ---- */

struct counts {
    size_t n, cap;
    size_t *v;
};

static void add_count(void *ctx, const struct pb_stage_tensor *t)
{
    struct counts *c = ctx;
    if (t->is_buffer)
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        if (!c->v)
            die("host memory", NULL);
    }
    c->v[c->n++] = t->count;
}

/* torch_seq.py's DIMS of the stage's model. */
static void torch_dims(const struct row_def *d, const struct pb_stage *st, char *buf, size_t len)
{
    const struct pb_model *m = st->model;
    const struct pb_layer *emb = find_layer(m, 0, m->nblocks, PB_LAYER_EMBEDDING);
    const struct pb_layer *lstm = find_layer(m, st->first, st->last, PB_LAYER_LSTM);
    if (!emb || !lstm) {
        fprintf(stderr, "bench_seq: %s: no embedding or LSTM in %s\n", d->name, m->name);
        exit(2);
    }
    int V = emb->cfg.in_features, H = emb->cfg.out_features;
    if (d->kind == SEQ_RLSTM)
        snprintf(buf, len, "%d,%d,%d,%d", V, H, count_blocks(m, 0, m->nblocks, "block"),
                 m->nclasses);
    else if (d->kind == SEQ_GNMT)
        snprintf(buf, len, "%d,%d,%d,%d", V, H, count_blocks(m, 0, m->nblocks, "encoder"),
                 count_blocks(m, 0, m->nblocks, "decoder"));
    else
        snprintf(buf, len, "%d,%d", lstm->cfg.out_features,
                 count_blocks(m, st->first, st->last, "encoder"));
}

/* Defines row d in the child under `key` with the stage's weights and the batch; exits
 * unless PyTorch's parameters are pipebench's, tensor by tensor. */
static void torch_define(struct bench_torch *tp, const char *key, const struct row_def *d,
                         const struct side *s, const struct batch *hb)
{
    const struct pb_stage *st = &s->stage;
    float *w = pb_xmalloc(st->nparams * sizeof *w);
    s->be->ops->download(s->be, w, st->params, st->nparams * sizeof *w);
    s->be->ops->sync(s->be);
    write_file(0, w, st->nparams * sizeof *w);
    free(w);
    write_file(1, hb->ids, hb->nids * sizeof *hb->ids);
    if (hb->floats)
        write_file(2, hb->floats, hb->nfloats * sizeof *hb->floats);
    struct counts c = {0};
    pb_stage_tensors(st, add_count, &c);
    char dims[128];
    torch_dims(d, st, dims, sizeof dims);
    fprintf(tp->req, "def %s %s %d %d %.9g %.9g %.9g %s ", key, kind_names[d->kind], hb->b,
            hb->t, (double)d->lr, (double)d->weight_decay, (double)d->smoothing, dims);
    for (size_t i = 0; i < c.n; i++)
        fprintf(tp->req, "%s%zu", i ? "," : "", c.v[i]);
    free(c.v);
    char p[128];
    for (int i = 0; i < (hb->floats ? 3 : 2); i++) {
        tmp_path(p, sizeof p, i);
        fprintf(tp->req, " %s", p);
    }
    fprintf(tp->req, "\n");
    fflush(tp->req);
    char line[4096];
    bench_torch_answer(tp, line, sizeof line);
    if (strncmp(line, "ok ", 3) != 0 || strtoull(line + 3, NULL, 10) != st->nparams) {
        fprintf(stderr, "bench_seq: %s: %s's model is not pipebench's (%zu parameters): "
                        "%s\n", d->name, tp->label, st->nparams, line);
        exit(1);
    }
}

static void torch_check(struct bench_torch *tp, const char *key, double res[3])
{
    fprintf(tp->req, "check %s\n", key);
    fflush(tp->req);
    char line[256];
    bench_torch_answer(tp, line, sizeof line);
    if (sscanf(line, "%lf %lf %lf", &res[0], &res[1], &res[2]) != 3) {
        fprintf(stderr, "bench_seq: %s's check of %s answered '%s'\n", tp->label, key, line);
        exit(2);
    }
}

static bool close_rel(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return fabs(a - b) <= CHECK_RTOL * (m > 0 ? m : 1.0);
}

/* ---- one row ---- */

static void measure(const struct row_def *d, struct result *r, struct pb_backend **be,
                    struct bench_peers *ps, bool check_only)
{
    struct pb_err e;
    const struct pb_workload *wl = pb_workload_find(d->workload, &e);
    const struct pb_preset *p = NULL;
    if (!wl || pb_workload_preset(wl, d->preset, &p, &e))
        die(d->name, &e);
    struct batch hb;
    struct pb_shape sample;
    int nclasses;
    make_batch(d, wl, p, &hb, &sample, &nclasses);
    struct side sd[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        if (d->kind == SEQ_STACK && t == 0) {  /* the width comes with the model */
            struct pb_model m;
            if (wl->build(&m, p, sample, nclasses, &e))
                die(d->name, &e);
            const struct pb_layer *l = find_layer(&m, 0, m.nblocks, PB_LAYER_EMBEDDING);
            stack_inputs(&hb, l ? l->cfg.out_features : 0);
            pb_model_finish(&m);
        }
        side_init(&sd[t], be[t], d, wl, p, sample, nclasses, &hb);
    }
    r->params = sd[0].stage.nparams;
    r->tokens = hb.tokens;
    r->b = hb.b;
    r->t = hb.t;
    char key[32];
    snprintf(key, sizeof key, "%s", d->name);
    for (int p = 0; p < ps->n; p++)
        torch_define(&ps->p[p], key, d, &sd[0], &hb);
    double cp[3], ct[BENCH_PEERS_MAX][3];
    side_check(&sd[0], &hb, cp);
    for (int p = 0; p < ps->n; p++)
        torch_check(&ps->p[p], key, ct[p]);
    double mean_len = 0.0;
    for (int b = 0; b < hb.b; b++)
        mean_len += hb.lengths[b] / (double)hb.b;
    printf("  %-12s %s%s%s: %zu parameters both sides; batch %d x %d, mean %s length %.1f, "
           "%.0f tokens\n", d->name, d->workload, p ? " --preset " : "", p ? p->name : "",
           r->params, hb.b, hb.t, d->kind == SEQ_RLSTM ? "sequence" : "source", mean_len,
           hb.tokens);
    for (int p = 0; p < ps->n; p++) {
        const char *pt = ps->p[p].label;
        printf("  %-12s check (dropout 0, 1 thread): loss pb %.7g %s %.7g; sum g^2 pb %.7g %s "
               "%.7g; loss after one Adam step pb %.7g %s %.7g\n", "", cp[0], pt, ct[p][0],
               cp[1], pt, ct[p][1], cp[2], pt, ct[p][2]);
        fflush(stdout);
        if (!close_rel(cp[0], ct[p][0]) || !close_rel(cp[1], ct[p][1]) ||
            !close_rel(cp[2], ct[p][2])) {
            fprintf(stderr, "bench_seq: %s: pipebench and %s do not compute the same step "
                            "(more than %g apart relative; the check line above): comparing "
                            "their times would be worthless\n", d->name, pt, CHECK_RTOL);
            exit(1);
        }
    }
    int nsides = 1 + ps->n;
    for (int k = 0; k < ROUNDS && !check_only; k++) {
        int warm = k == 0 && d->warmup < 1 ? 1 : d->warmup;
        for (int t = 0; t < NTHREADS; t++)
            for (int j = 0; j < nsides; j++) {
                int side = bench_side_order(k + t, j, nsides);
                if (side == 0)
                    r->t_pb[t][k] = side_time(&sd[t], &hb, warm, d->reps);
                else
                    r->t_pt[side - 1][t][k] = bench_torch_time(&ps->p[side - 1], key,
                                                               thread_counts[t], warm, d->reps);
            }
    }
    double load[1];
    r->load = getloadavg(load, 1) == 1 ? load[0] : NAN;
    for (int p = 0; p < ps->n; p++)
        bench_torch_drop(&ps->p[p], key);
    for (int t = 0; t < NTHREADS; t++)
        side_finish(&sd[t]);
    batch_finish(&hb);
}

/* "median [min-max]" of v[ROUNDS] seconds. */
static const char *secs_str(const double *v, char *buf, size_t len)
{
    double lo = v[0], hi = v[0];
    for (int i = 1; i < ROUNDS; i++)
        lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
    snprintf(buf, len, "%.4f [%.4f-%.4f]", bench_median(v, ROUNDS), lo, hi);
    return buf;
}

static void print_table(const bool *run, const struct result *res, const struct bench_peers *ps,
                        const char *openblas)
{
    printf("\nsequence zoo training step, D = 1, Adam (residual-lstm lr 1e-3; GNMT lr 3e-4, L2 "
           "1e-4, label smoothing 0.1): pipebench (CPU backend, oneDNN, the seq worker's stage "
           "calls) vs PyTorch; medians [ranges] of %d interleaved rounds, the sides' order "
           "rotating\n", ROUNDS);
    bench_peers_print(ps, "  ");
    if (!openblas)
        printf("  (no --openblas: Debian's PyTorch with the BLAS as installed, not a fair peer)\n");
    printf("  gnmt8-stack: the paper gnmt8's encoder LSTMs (blocks encoder1-encoder4: "
           "bidirectional 1024 packed, 2048->1024, 2 residual 1024; dropout 0.2) as a middle "
           "stage, dy fixed; tokens = source tokens\n");
    const char *first = ps->p[0].label;
    char head[2][48];
    printf("  %-12s %-12s %2s %-26s", "row", "B x T", "th", "pb s/step [range]");
    for (int p = 0; p < ps->n; p++) {
        snprintf(head[0], sizeof head[0], "%s s/step [range]", ps->p[p].label);
        snprintf(head[1], sizeof head[1], "pb/%s [range]", ps->p[p].label);
        printf(" %-26s %-18s", head[0], head[1]);
    }
    snprintf(head[0], sizeof head[0], "%s tok/s", first);
    printf(" %9s %12s %5s\n", "pb tok/s", head[0], "load");
    for (int i = 0; i < NROWS; i++) {
        if (!run[i])
            continue;
        const struct result *r = &res[i];
        for (int t = 0; t < NTHREADS; t++) {
            char bt[24], a[48], q[32];
            double pb = bench_median(r->t_pb[t], ROUNDS);
            double pt = bench_median(r->t_pt[0][t], ROUNDS);
            bool met = true, slower = false;
            snprintf(bt, sizeof bt, "%d x %d", r->b, r->t);
            printf("  %-12s %-12s %2d %-26s", rows[i].name, bt, thread_counts[t],
                   secs_str(r->t_pb[t], a, sizeof a));
            for (int p = 0; p < ps->n; p++) {
                double ratios[ROUNDS];
                for (int k = 0; k < ROUNDS; k++)
                    ratios[k] = r->t_pb[t][k] / r->t_pt[p][t][k];
                double med = bench_median(ratios, ROUNDS);
                met &= med <= 0.5;
                slower |= med > 1.0;
                printf(" %-26s %-18s", secs_str(r->t_pt[p][t], a, sizeof a),
                       bench_ratio_str(r->t_pb[t], r->t_pt[p][t], ROUNDS, q, sizeof q));
            }
            printf(" %9.0f %12.0f %5.2f %s\n", r->tokens / pb, r->tokens / pt, r->load,
                   met ? "goal met" : slower ? "SLOWER" : "");
        }
    }
    printf("  goal of the issue: pb/pt <= 0.5 against every peer (\"goal met\"), never > 1 "
           "(\"SLOWER\": against some peer); load: the 1-minute load average after the row\n");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool loaded = false;
    for (int i = 0; i < NROWS; i++)
        loaded |= run[i] && res[i].load > (double)cores;
    if (loaded)
        printf("  a load above the %ld cores: other work shared them during that row, so its "
               "figures (the 2-thread ones above all) measure the contention too\n", cores);
}

int main(int argc, char **argv)
{
    const char *openblas = NULL, *only = NULL;
    bool check_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check_only = true;
        else if (!strcmp(argv[i], "--openblas") && i + 1 < argc)
            openblas = argv[++i];
        else if (!strcmp(argv[i], "--row") && i + 1 < argc)
            only = argv[++i];
        else
            usage();
    }
    bool run[NROWS];
    int nrun = 0;
    for (int i = 0; i < NROWS; i++)
        nrun += run[i] = !only || !strcmp(only, rows[i].name);
    if (!nrun)
        usage();

    /* the PyTorch children first, before this process starts any OpenMP team */
    struct bench_peers ps;
    if (!openblas)
        fprintf(stderr, "bench_seq: no --openblas DIR: Debian's PyTorch with the BLAS as "
                        "installed (scripts/bench seq passes Debian's OpenMP OpenBLAS)\n");
    if (!bench_peers_start(&ps, PB_BENCH_TORCH_SEQ_SCRIPT, openblas, "bench_seq"))
        return 2;
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "bench_seq: cannot make a folder in /tmp for PyTorch's inputs\n");
        return 2;
    }
    have_tmpdir = true;
    atexit(remove_tmpdir);
    struct pb_backend *be[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        struct pb_err e;
        struct pb_backend_cfg bcfg = {.device = 0, .threads = thread_counts[t]};
        if (!(be[t] = pb_backend_create("cpu", &bcfg, &e)))
            die("cpu backend", &e);
    }
    printf("bench_seq: PyTorch peers\n");
    bench_peers_print(&ps, "  ");
    double t0 = bench_now();
    struct result res[NROWS];
    memset(res, 0, sizeof res);
    for (int i = 0, k = 0; i < NROWS; i++) {
        if (!run[i])
            continue;
        fprintf(stderr, "bench_seq: %s, %d of %d (%.0f s so far)\n", rows[i].name, ++k, nrun,
                bench_now() - t0);
        measure(&rows[i], &res[i], be, &ps, check_only);
    }
    if (check_only)
        printf("bench_seq: pipebench and PyTorch compute the same steps (%.0f s)\n",
               bench_now() - t0);
    else
        print_table(run, res, &ps, openblas);
    for (int t = 0; t < NTHREADS; t++)
        pb_backend_destroy(be[t]);
    bench_peers_stop(&ps);
    return 0;
}
