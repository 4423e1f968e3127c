/* harness/model/profile.c — measured forward + backward time of each block
 * (pb_partition_profile, partition.h), for `--partition time` and `pipebench partition`,
 * and of its forward alone and its split backward's two passes (pb_partition_profile_ops:
 * the simulator's op costs).
 * Block 0 runs on a generated input (token ids below the smallest embedding's vocabulary
 * when the model has embeddings, else uniform values), every later block on the output
 * of the block before it, so what a block carries for later ones (a translation model's
 * ids, packed beside its features) stays valid; the sequences are taken at full length
 * and the last block's labels are one per step for a model that labels steps. */
#include <stdlib.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/compute/registry.h"
#include "harness/model/partition.h"
#include "harness/model/stage.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The data of one block's profile: its input x (the model's generated input for block
 * 0, else the previous block's output on it), the gradient of its output (generated),
 * and the labels for the last block. */
struct probe {
    struct pb_tensor x, dy;
    int32_t *labels;
};

/* n generated floats: token ids below vocab (> 0), else uniform in [-1, 1). */
static int upload_generated(struct pb_backend *be, struct pb_tensor *t, struct pb_shape s,
                            uint64_t stream, int vocab, struct pb_err *e)
{
    if (pb_tensor_alloc(be, t, s, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e))
        return -1;
    size_t n = pb_shape_count(s);
    float *h = pb_xmalloc(n * sizeof *h + 1);
    struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, 1, stream, 0, 0);
    for (size_t i = 0; i < n; i++)
        h[i] = vocab > 0 ? (float)pb_rng_below(key, i, (uint64_t)vocab)
                         : 2 * pb_rng_uniform(key, i) - 1;
    be->ops->upload(be, t->data, h, n * sizeof *h);
    be->ops->sync(be);
    free(h);
    return 0;
}

/* The vocabulary the model's input ids must stay below: the smallest of its
 * embeddings' (a translation model carries its ids through several blocks to the one
 * that embeds them), or 0 for a model of real-valued inputs. */
static int input_vocab(const struct pb_model *m)
{
    int v = 0;
    for (int b = 0; b < m->nblocks; b++)
        for (int i = 0; i < m->blocks[b].nnodes; i++) {
            const struct pb_layer *l = &m->blocks[b].nodes[i];
            if (l->cfg.kind == PB_LAYER_EMBEDDING && (!v || l->cfg.in_features < v))
                v = l->cfg.in_features;
        }
    return v;
}

/* Block i's gradient and labels; its input is set by the caller. */
static int probe_init(struct probe *p, struct pb_backend *be, const struct pb_model *m, int i,
                      struct pb_err *e)
{
    const struct pb_block *b = &m->blocks[i];
    if (i < m->nblocks - 1)
        return upload_generated(be, &p->dy, b->out_shape, 2 * (uint64_t)i + 1, 0, e);
    int n = b->out_shape.n * (m->label_steps ? m->label_steps : 1);
    p->labels = pb_backend_alloc(be, (size_t)n * sizeof(int32_t), PB_MEM_SCRATCH, e);
    if (!p->labels)
        return -1;
    int32_t *h = pb_xmalloc((size_t)n * sizeof *h);
    for (int j = 0; j < n; j++)
        h[j] = m->nclasses > 0 ? j % m->nclasses : 0;
    be->ops->upload(be, p->labels, h, (size_t)n * sizeof *h);
    be->ops->sync(be);
    free(h);
    return 0;
}

static void probe_finish(struct probe *p, struct pb_backend *be)
{
    pb_backend_free(be, p->x.data);
    pb_backend_free(be, p->dy.data);
    pb_backend_free(be, p->labels);
}

/* One forward and backward of stage s on the probe's data: *ms their time, *f_ms the
 * forward's (the backend synchronised between them); the stage's output goes to *out when
 * out is given (a block before the last), else it is freed. */
static int step(struct pb_stage *s, const struct probe *p, int64_t mb, double *ms,
                double *f_ms, struct pb_tensor *out, struct pb_err *e)
{
    struct pb_backend *be = s->be;
    struct pb_tensor x, y = {0}, dx = {0};
    if (pb_tensor_alloc(be, &x, p->x.shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    be->ops->copy(be, x.data, p->x.data, pb_shape_count(x.shape) * sizeof(float));
    be->ops->sync(be);
    struct pb_step_ctx c = {true, 1, mb, NULL, NULL};
    struct pb_stage_act act;
    double t0 = (1e3 * pb_now_s());
    if (pb_stage_forward(s, &c, s->params, x, p->labels, &act, &y, e))
        return -1;
    be->ops->sync(be);
    *f_ms = (1e3 * pb_now_s()) - t0;
    bool last = s->index == s->nstages - 1;
    int rc = pb_stage_backward(s, &c, s->params, &act, last ? NULL : &p->dy, &dx, e);
    be->ops->sync(be);
    *ms = (1e3 * pb_now_s()) - t0;
    if (out && !rc)
        *out = y;
    else
        pb_backend_free(be, y.data);
    pb_backend_free(be, dx.data);
    return rc;
}

/* One forward (untimed) and the split backward of stage s on the probe's data:
 * *i_ms the input-gradient pass, *w_ms the weight-gradient pass, the backend
 * synchronised around each. */
static int step_split(struct pb_stage *s, const struct probe *p, int64_t mb, double *i_ms,
                      double *w_ms, struct pb_err *e)
{
    struct pb_backend *be = s->be;
    struct pb_tensor x, y = {0}, dx = {0};
    if (pb_tensor_alloc(be, &x, p->x.shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    be->ops->copy(be, x.data, p->x.data, pb_shape_count(x.shape) * sizeof(float));
    struct pb_step_ctx c = {true, 1, mb, NULL, NULL};
    struct pb_stage_act act;
    if (pb_stage_forward(s, &c, s->params, x, p->labels, &act, &y, e))
        return -1;
    be->ops->sync(be);
    bool last = s->index == s->nstages - 1;
    double t0 = 1e3 * pb_now_s();
    int rc = pb_stage_backward_input(s, &c, s->params, &act, last ? NULL : &p->dy, &dx, e);
    be->ops->sync(be);
    double t1 = 1e3 * pb_now_s();
    if (!rc) {
        rc = pb_stage_backward_weights(s, &c, &act, e);
        be->ops->sync(be);
    } else {
        pb_stage_act_release(s, &act);
    }
    *i_ms = t1 - t0;
    *w_ms = 1e3 * pb_now_s() - t1;
    pb_backend_free(be, y.data);
    pb_backend_free(be, dx.data);
    return rc;
}

/* The median of times[reps] (sorted here). */
static double median(double *times, int reps)
{
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    return reps % 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2;
}

/* Block i on input *x (taken over: freed here), its output on it into *next for the
 * following block; times holds 2 · reps values. The medians of block i go to out
 * (ms, f_ms, and i_ms and w_ms where out has them). */
static int profile_block(struct pb_backend *be, const struct pb_model *m, int i, int reps,
                         double *times, const struct pb_block_times *out, struct pb_tensor *x,
                         struct pb_tensor *next, struct pb_err *e)
{
    double *t1 = times, *t2 = times + reps;
    struct pb_stage s;
    struct probe p = {.x = *x};
    *x = (struct pb_tensor){0};
    if (pb_stage_init(&s, be, m, i, m->nblocks, i, i + 1, e)) {
        probe_finish(&p, be);
        return -1;
    }
    int rc = pb_stage_init_params(&s, 1, e) || probe_init(&p, be, m, i, e);
    /* the first, untimed: primitive creation, and the next block's input */
    for (int r = 0; !rc && r <= reps; r++)
        rc = step(&s, &p, r, &t1[r > 0 ? r - 1 : 0], &t2[r > 0 ? r - 1 : 0],
                  r == 0 && i < m->nblocks - 1 ? next : NULL, e);
    if (!rc) {
        out->ms[i] = median(t1, reps);
        if (out->f_ms)
            out->f_ms[i] = median(t2, reps);
    }
    for (int r = 0; !rc && out->i_ms && r <= reps; r++)
        rc = step_split(&s, &p, reps + 1 + r, &t1[r > 0 ? r - 1 : 0], &t2[r > 0 ? r - 1 : 0], e);
    if (!rc && out->i_ms) {
        out->i_ms[i] = median(t1, reps);
        out->w_ms[i] = median(t2, reps);
    }
    probe_finish(&p, be);
    pb_stage_finish(&s);
    return rc ? pb_err_prefix(e, "profiling block %d ('%s'): ", i, m->blocks[i].name) : 0;
}

int pb_partition_profile(const struct pb_model *m, const char *backend, int device, int threads,
                         int reps, double *ms, struct pb_err *e)
{
    return pb_partition_profile_ops(m, backend, device, threads, reps,
                                    &(struct pb_block_times){.ms = ms}, e);
}

int pb_partition_profile_ops(const struct pb_model *m, const char *backend, int device,
                             int threads, int reps, const struct pb_block_times *out,
                             struct pb_err *e)
{
    PB_CHECK(reps >= 1 && m->batch > 0 && out->ms && !out->i_ms == !out->w_ms);
    struct pb_backend_cfg bc = {.device = device, .threads = threads};
    struct pb_backend *be = pb_backend_create(backend, &bc, e);
    if (!be)
        return -1;
    double *times = pb_xcalloc((size_t)reps * 2, sizeof *times);
    struct pb_tensor x = {0}, next = {0};
    int rc = upload_generated(be, &x, m->blocks[0].in_shape, 0, input_vocab(m), e);
    for (int i = 0; i < m->nblocks && !rc; i++) {
        rc = profile_block(be, m, i, reps, times, out, &x, &next, e);
        x = next;
        next = (struct pb_tensor){0};
    }
    pb_backend_free(be, x.data);
    free(times);
    pb_backend_destroy(be);
    return rc;
}
