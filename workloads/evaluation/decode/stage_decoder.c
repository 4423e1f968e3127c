/* workloads/evaluation/decode/stage_decoder.c — the pb_decoder of stage_decoder.h: the whole prefix
 * through the stage's eval forward at every step, and a dataset's BLEU decoded with it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/evaluation/decode/stage_decoder.h"

/* Writes the rows' samples [rows, 2T]: source ids, then BOS y1 … (the t tokens read
 * and the one read now at position t), PAD after; rows past n repeat row 0 (their
 * outputs are not read). */
static void fill_input(struct pb_stage_decoder *sd)
{
    int T = sd->T;
    for (int i = 0; i < sd->rows; i++) {
        int r = i < sd->n ? i : 0;
        float *x = sd->host_in + (size_t)i * 2 * T;
        for (int p = 0; p < T; p++) {
            x[p] = (float)sd->src[(size_t)r * T + p];
            x[T + p] = p <= sd->t ? (float)sd->prefix[(size_t)r * T + p] : (float)PB_WMT16_PAD;
        }
    }
}

static int sd_step(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                   struct pb_err *e)
{
    struct pb_stage_decoder *sd = ctx;
    struct pb_stage *s = sd->s;
    struct pb_backend *be = s->be;
    int T = sd->T, V = sd->V;
    if (n != sd->n)
        return pb_err_set(e, "the decoder holds %d rows, the search stepped %d", sd->n, n);
    if (sd->t >= T)
        return pb_err_set(e, "the model reads at most %d target tokens (its preset's steps); "
                             "decode with a max length of at most %d", T, T);
    for (int i = 0; i < n; i++)
        sd->prefix[(size_t)i * T + sd->t] = tokens[i];
    fill_input(sd);
    struct pb_tensor x = {0}, y = {0};
    if (pb_tensor_alloc(be, &x, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, e))
        return -1;
    be->ops->upload(be, x.data, sd->host_in, pb_shape_count(s->in_shape) * sizeof(float));
    struct pb_step_ctx c = {false, 0, 0, s->needs_lengths ? sd->dev_len : NULL,
                            sd->dev_attn};
    struct pb_stage_act act;
    if (pb_stage_forward(s, &c, s->params, x, NULL, &act, &y, e))
        return -1;
    /* y: the logits [rows, T, V, 1]; row i's at position t */
    for (int i = 0; i < n; i++) {
        be->ops->download(be, sd->row, (const float *)y.data + ((size_t)i * T + sd->t) * V,
                          (size_t)V * sizeof(float));
        be->ops->sync(be);
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++)
            mx = sd->row[v] > mx ? sd->row[v] : mx;
        for (int v = 0; v < V; v++)
            sum += exp((double)sd->row[v] - mx);
        double lse = mx + log(sum);
        for (int v = 0; v < V; v++)
            logp[(size_t)i * V + v] = (float)((double)sd->row[v] - lse);
    }
    pb_backend_free(be, y.data);
    /* row i's attention over the source at query position t */
    for (int i = 0; i < n; i++)
        be->ops->download(be, attn + (size_t)i * T, sd->dev_attn + ((size_t)i * T + sd->t) * T,
                          (size_t)T * sizeof *attn);
    be->ops->sync(be);
    sd->t++;
    return 0;
}

static int sd_select(void *ctx, const int32_t *rows, int n, struct pb_err *e)
{
    struct pb_stage_decoder *sd = ctx;
    int T = sd->T;
    if (n > sd->rows)
        return pb_err_set(e, "the decoder holds at most %d rows (asked for %d)", sd->rows, n);
    int32_t *tmp = sd->scratch;
    for (int k = 0; k < 2; k++) {
        int32_t *a = k ? sd->prefix : sd->src;
        for (int i = 0; i < n; i++)
            memcpy(tmp + (size_t)i * T, a + (size_t)rows[i] * T, (size_t)T * sizeof *tmp);
        memcpy(a, tmp, (size_t)n * T * sizeof *tmp);
    }
    for (int i = 0; i < n; i++)
        tmp[i] = sd->src_len[rows[i]];
    memcpy(sd->src_len, tmp, (size_t)n * sizeof *tmp);
    for (int i = n; i < sd->rows; i++)
        sd->src_len[i] = sd->src_len[0];
    sd->n = n;
    sd->s->be->ops->upload(sd->s->be, sd->dev_len, sd->src_len, (size_t)sd->rows * sizeof(int32_t));
    sd->s->be->ops->sync(sd->s->be);
    return 0;
}

int pb_stage_decoder_init(struct pb_stage_decoder *sd, struct pb_stage *s, const int32_t *src,
                          const int32_t *src_len, int n, struct pb_decoder *d, struct pb_err *e)
{
    const struct pb_model *m = s->model;
    int T = m->label_steps, rows = m->batch;
    memset(sd, 0, sizeof *sd);
    if (!T || s->first != 0 || s->last != m->nblocks || s->index == s->nstages - 1 ||
        s->in_shape.c != 2 * T)
        return pb_err_set(e, "decoding needs a stage of every block of a translation model, "
                             "not the last of its pipeline");
    if (n < 1 || n > rows)
        return pb_err_set(e, "decoding %d sentences on a model built for %d rows", n, rows);
    sd->s = s;
    sd->rows = rows;
    sd->T = T;
    sd->V = s->out_shape.h;
    sd->n = n;
    sd->src = pb_xcalloc((size_t)rows * T, sizeof *sd->src);
    sd->src_len = pb_xcalloc((size_t)rows, sizeof *sd->src_len);
    sd->prefix = pb_xcalloc((size_t)rows * T, sizeof *sd->prefix);
    sd->scratch = pb_xcalloc((size_t)rows * T, sizeof *sd->scratch);
    sd->host_in = pb_xcalloc((size_t)rows * 2 * T, sizeof *sd->host_in);
    sd->row = pb_xcalloc((size_t)sd->V, sizeof *sd->row);
    memcpy(sd->src, src, (size_t)n * T * sizeof *src);
    memcpy(sd->src_len, src_len, (size_t)n * sizeof *src_len);
    for (int i = n; i < rows; i++)
        sd->src_len[i] = src_len[0];
    sd->dev_len = pb_backend_alloc(s->be, (size_t)rows * sizeof(int32_t), PB_MEM_SCRATCH, e);
    if (sd->dev_len)
        sd->dev_attn = pb_backend_alloc(s->be, (size_t)rows * T * T * sizeof(float),
                                        PB_MEM_SCRATCH, e);
    if (!sd->dev_attn) {
        pb_stage_decoder_finish(sd);
        return -1;
    }
    s->be->ops->upload(s->be, sd->dev_len, sd->src_len, (size_t)rows * sizeof(int32_t));
    s->be->ops->sync(s->be);
    *d = (struct pb_decoder){.ctx = sd, .vocab = sd->V, .src_steps = T, .step = sd_step,
                             .select = sd_select};
    return 0;
}

void pb_stage_decoder_finish(struct pb_stage_decoder *sd)
{
    if (sd->dev_len)
        pb_backend_free(sd->s->be, sd->dev_len);
    if (sd->dev_attn)
        pb_backend_free(sd->s->be, sd->dev_attn);
    free(sd->src);
    free(sd->src_len);
    free(sd->prefix);
    free(sd->scratch);
    free(sd->host_in);
    free(sd->row);
    memset(sd, 0, sizeof *sd);
}
