/* workloads/evaluation/decode/gnmt_step_decoder.c — the pb_decoder of gnmt_step_decoder.h: the
 * encoder blocks once through the stage forward, then each step one token per row through
 * the decoder's layers on the backend, and select's row gathers. Every op it runs is one
 * a GNMT stage needs already (embedding, LSTM, attention, GEMM, bias, add, sequence
 * gather), so a backend the stage was built on runs it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/decode/gnmt_step_decoder.h"

/* An allocation of the stage's backend; NULL (and e set) when out of memory. */
static void *dev(struct pb_gnmt_step_decoder *gd, size_t floats, struct pb_err *e)
{
    return pb_backend_alloc(gd->s->be, floats * sizeof(float), PB_MEM_SCRATCH, e);
}

/* Layer k's LSTM one step over x [n, in] from (h[k], c[k]) into (h2[k], c2[k]); y [n, H]. */
static void lstm_step(struct pb_gnmt_step_decoder *gd, int k, int n, int in, const float *x,
                      float *y)
{
    struct pb_backend *be = gd->s->be;
    struct pb_lstm_desc d = {n, 1, in, gd->g.hidden};
    struct pb_lstm_states st = {gd->h[k], gd->c[k], gd->h2[k], gd->c2[k]};
    be->ops->lstm_fwd(be, &d, x, gd->s->params + gd->g.lstm_off[k], y, NULL, &st);
}

/* logp [n, V] = the log-softmax of the host logits, in double as stage_decoder.c forms it. */
static void log_softmax(const float *z, int n, int V, float *logp)
{
    for (int i = 0; i < n; i++) {
        const float *r = z + (size_t)i * V;
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++)
            mx = r[v] > mx ? r[v] : mx;
        for (int v = 0; v < V; v++)
            sum += exp((double)r[v] - mx);
        double lse = mx + log(sum);
        for (int v = 0; v < V; v++)
            logp[(size_t)i * V + v] = (float)((double)r[v] - lse);
    }
}

static int gd_step(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                   struct pb_err *e)
{
    struct pb_gnmt_step_decoder *gd = ctx;
    struct pb_backend *be = gd->s->be;
    const struct pb_gnmt_layout *g = &gd->g;
    const float *w = gd->s->params;
    int H = g->hidden, V = g->vocab, T = g->steps, L = g->dec_layers;
    if (n != gd->n)
        return pb_err_set(e, "the decoder holds %d rows, the search stepped %d", gd->n, n);
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= V)
            return pb_err_set(e, "row %d reads token %d, outside the vocabulary [0, %d)", i,
                              (int)tokens[i], V);
        gd->host_rows[i] = (float)tokens[i];
    }
    be->ops->upload(be, gd->idx, gd->host_rows, (size_t)n * sizeof(float));
    be->ops->embedding_fwd(be, gd->idx, (size_t)n, w + g->emb_off, V, H, gd->emb);
    lstm_step(gd, 0, n, H, gd->emb, gd->y[0]);
    struct pb_attn_desc ad = {n, 1, T, H, H, g->attn_units};
    be->ops->attn_fwd_projected(be, &ad, gd->y[0], gd->keys, gd->pk, gd->dev_len,
                                w + g->attn_off, gd->ctx, gd->attn);
    const float *in = gd->y[0];
    for (int k = 1; k < L; k++) {
        float *out = gd->y[k % 2];
        be->ops->seq_gather(be, in, H, NULL, n, 1, H, false, gd->x2, 2 * H);
        be->ops->seq_gather(be, gd->ctx, H, NULL, n, 1, H, false, gd->x2 + H, 2 * H);
        lstm_step(gd, k, n, 2 * H, gd->x2, g->residual[k] ? gd->tmp : out);
        if (g->residual[k])
            be->ops->add(be, gd->tmp, in, out, (size_t)n * H);
        in = out;
    }
    be->ops->gemm(be, false, true, n, V, H, 1.0f, in, H, w + g->cls_off, H, 0.0f, gd->logits, V);
    be->ops->bias_add(be, gd->logits, w + g->cls_off + (size_t)V * H, n, V);
    if (pb_backend_status(be, e))
        return -1;
    be->ops->download(be, gd->host_logits, gd->logits, (size_t)n * V * sizeof(float));
    be->ops->download(be, attn, gd->attn, (size_t)n * T * sizeof *attn);
    be->ops->sync(be);
    log_softmax(gd->host_logits, n, V, logp);
    for (int k = 0; k < L; k++) {
        float *h = gd->h[k], *c = gd->c[k];
        gd->h[k] = gd->h2[k];
        gd->c[k] = gd->c2[k];
        gd->h2[k] = h;
        gd->c2[k] = c;
    }
    return 0;
}

/* *t [old n, dim] becomes its rows gd->idx [n] (the embedding lookup is a row gather),
 * through *spare, which receives the old rows' buffer. */
static void gather(struct pb_gnmt_step_decoder *gd, int n, float **t, float **spare, int dim)
{
    struct pb_backend *be = gd->s->be;
    be->ops->embedding_fwd(be, gd->idx, (size_t)n, *t, gd->n, dim, *spare);
    float *old = *t;
    *t = *spare;
    *spare = old;
}

static int gd_select(void *ctx, const int32_t *rows, int n, struct pb_err *e)
{
    struct pb_gnmt_step_decoder *gd = ctx;
    struct pb_backend *be = gd->s->be;
    int H = gd->g.hidden;
    if (n < 1 || n > gd->rows)
        return pb_err_set(e, "the decoder holds at most %d rows (asked for %d)", gd->rows, n);
    int32_t *len = pb_xmalloc((size_t)gd->rows * sizeof *len);
    for (int i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= gd->n) {
            free(len);
            return pb_err_set(e, "select: row %d of %d does not exist", (int)rows[i], gd->n);
        }
        gd->host_rows[i] = (float)rows[i];
        len[i] = gd->src_len[rows[i]];
    }
    for (int i = n; i < gd->rows; i++)
        len[i] = len[0];
    memcpy(gd->src_len, len, (size_t)gd->rows * sizeof *len);
    free(len);
    be->ops->upload(be, gd->idx, gd->host_rows, (size_t)n * sizeof(float));
    be->ops->upload(be, gd->dev_len, gd->src_len, (size_t)gd->rows * sizeof(int32_t));
    gather(gd, n, &gd->keys, &gd->keys2, gd->g.steps * H);
    gather(gd, n, &gd->pk, &gd->pk2, gd->g.steps * gd->g.attn_units);
    for (int k = 0; k < gd->g.dec_layers; k++) {
        gather(gd, n, &gd->h[k], &gd->h2[k], H);
        gather(gd, n, &gd->c[k], &gd->c2[k], H);
    }
    be->ops->sync(be);
    gd->n = n;
    return pb_backend_status(be, e);
}

/* The encoder blocks' forward over the rows' sources (rows past n repeat row 0), its
 * output's first H features of every step into gd->keys and their projection into gd->pk. */
static int run_encoder(struct pb_gnmt_step_decoder *gd, const int32_t *src, int n,
                       struct pb_err *e)
{
    struct pb_stage *s = gd->s;
    struct pb_backend *be = s->be;
    int T = gd->g.steps, H = gd->g.hidden, rows = gd->rows;
    struct pb_stage enc;
    pb_stage_layout(&enc, s->model, 0, 2, 0, gd->g.enc_blocks);
    /* blocks [0, E + 1) start the full stage, so their weights are its first ones */
    enc.be = be;
    enc.buffers = s->buffers;
    float *x = pb_xcalloc((size_t)rows * 2 * T, sizeof *x);
    for (int i = 0; i < rows; i++)
        for (int p = 0; p < T; p++)
            x[(size_t)i * 2 * T + p] = (float)src[(size_t)(i < n ? i : 0) * T + p];
    struct pb_tensor in = {0}, out = {0};
    int rc = pb_tensor_alloc(be, &in, enc.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, e);
    if (!rc) {
        be->ops->upload(be, in.data, x, pb_shape_count(enc.in_shape) * sizeof(float));
        struct pb_step_ctx c = {false, 0, 0, enc.needs_lengths ? gd->dev_len : NULL, NULL};
        struct pb_stage_act act;
        rc = pb_stage_forward(&enc, &c, s->params, in, NULL, &act, &out, e);
    }
    if (!rc) {
        be->ops->seq_gather(be, out.data, H + 1, NULL, rows, T, H, false, gd->keys, H);
        struct pb_attn_desc ad = {rows, 1, T, H, H, gd->g.attn_units};
        be->ops->attn_project_keys(be, &ad, gd->keys, s->params + gd->g.attn_off, gd->pk);
        rc = pb_backend_status(be, e);
        pb_backend_free(be, out.data);
    }
    be->ops->sync(be);
    free(x);
    enc.be = NULL;  /* lent: the layout-only stage frees none of it */
    enc.buffers = NULL;
    pb_stage_finish(&enc);
    return rc;
}

/* The backend buffers of gd->rows rows, the states zero; -1 when out of memory. */
static int alloc_buffers(struct pb_gnmt_step_decoder *gd, struct pb_err *e)
{
    struct pb_backend *be = gd->s->be;
    size_t R = (size_t)gd->rows, H = (size_t)gd->g.hidden, T = (size_t)gd->g.steps;
    size_t U = (size_t)gd->g.attn_units;
    gd->dev_len = pb_backend_alloc(be, R * sizeof(int32_t), PB_MEM_SCRATCH, e);
    if (!gd->dev_len || !(gd->keys = dev(gd, R * T * H, e)) ||
        !(gd->keys2 = dev(gd, R * T * H, e)) || !(gd->pk = dev(gd, R * T * U, e)) ||
        !(gd->pk2 = dev(gd, R * T * U, e)) || !(gd->idx = dev(gd, R, e)) ||
        !(gd->emb = dev(gd, R * H, e)) || !(gd->ctx = dev(gd, R * H, e)) ||
        !(gd->y[0] = dev(gd, R * H, e)) || !(gd->y[1] = dev(gd, R * H, e)) ||
        !(gd->tmp = dev(gd, R * H, e)) || !(gd->x2 = dev(gd, R * 2 * H, e)) ||
        !(gd->logits = dev(gd, R * (size_t)gd->g.vocab, e)) || !(gd->attn = dev(gd, R * T, e)))
        return -1;
    for (int k = 0; k < gd->g.dec_layers; k++) {
        if (!(gd->h[k] = dev(gd, R * H, e)) || !(gd->c[k] = dev(gd, R * H, e)) ||
            !(gd->h2[k] = dev(gd, R * H, e)) || !(gd->c2[k] = dev(gd, R * H, e)))
            return -1;
        be->ops->fill(be, gd->h[k], 0.0f, R * H);
        be->ops->fill(be, gd->c[k], 0.0f, R * H);
    }
    return 0;
}

int pb_gnmt_step_decoder_init(struct pb_gnmt_step_decoder *gd, struct pb_stage *s,
                              const int32_t *src, const int32_t *src_len, int n,
                              struct pb_decoder *d, struct pb_err *e)
{
    memset(gd, 0, sizeof *gd);
    if (pb_gnmt_layout_find(s, &gd->g, e))
        return -1;
    int rows = s->model->batch, T = gd->g.steps;
    if (n < 1 || n > rows)
        return pb_err_set(e, "decoding %d sentences on a model built for %d rows", n, rows);
    for (int i = 0; i < n; i++)
        if (src_len[i] < 1 || src_len[i] > T)
            return pb_err_set(e, "sentence %d has a source length of %d, outside [1, %d]", i,
                              (int)src_len[i], T);
    gd->s = s;
    gd->rows = rows;
    gd->n = n;
    gd->src_len = pb_xcalloc((size_t)rows, sizeof *gd->src_len);
    gd->host_rows = pb_xcalloc((size_t)rows, sizeof *gd->host_rows);
    gd->host_logits = pb_xcalloc((size_t)rows * gd->g.vocab, sizeof *gd->host_logits);
    for (int i = 0; i < rows; i++)
        gd->src_len[i] = src_len[i < n ? i : 0];
    if (alloc_buffers(gd, e)) {
        pb_gnmt_step_decoder_finish(gd);
        return -1;
    }
    s->be->ops->upload(s->be, gd->dev_len, gd->src_len, (size_t)rows * sizeof(int32_t));
    if (run_encoder(gd, src, n, e)) {
        pb_gnmt_step_decoder_finish(gd);
        return -1;
    }
    *d = (struct pb_decoder){.ctx = gd, .vocab = gd->g.vocab, .src_steps = T, .step = gd_step,
                             .select = gd_select};
    return 0;
}

void pb_gnmt_step_decoder_finish(struct pb_gnmt_step_decoder *gd)
{
    if (gd->s) {
        struct pb_backend *be = gd->s->be;
        void *bufs[] = {gd->dev_len, gd->keys, gd->keys2, gd->pk, gd->pk2, gd->idx, gd->emb,
                        gd->ctx, gd->y[0], gd->y[1], gd->tmp, gd->x2, gd->logits, gd->attn};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
            pb_backend_free(be, bufs[i]);
        for (int k = 0; k < PB_GNMT_MAX_DEC; k++) {
            pb_backend_free(be, gd->h[k]);
            pb_backend_free(be, gd->c[k]);
            pb_backend_free(be, gd->h2[k]);
            pb_backend_free(be, gd->c2[k]);
        }
    }
    free(gd->src_len);
    free(gd->host_rows);
    free(gd->host_logits);
    memset(gd, 0, sizeof *gd);
}
