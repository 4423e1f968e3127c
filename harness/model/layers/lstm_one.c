/* harness/model/layers/lstm_one.c — one layer of an LSTM stack on the backend
 * (lstm_one.h). A unidirectional layer is one lstm_fwd / lstm_bwd. A bidirectional one
 * runs the forward direction over x as it is and the reverse direction over each
 * sequence's real steps in reversed time (then 0), so it starts at the last real token;
 * both outputs are put back into y in time order with the padding zeroed (so padded
 * steps get no gradient either). The reverse input is gathered again in the backward
 * rather than kept (in the split backward, by the weight pass, which reads it). A
 * bidirectional layer's final states are computed as a packed
 * sequence runs (pb_lstm_one_states). */
#include <stdlib.h>

#include "harness/model/layers/lstm_one.h"

size_t pb_lstm_dir_params(int input, int hidden)
{
    return 4 * (size_t)hidden * ((size_t)input + (size_t)hidden + 2);
}

/* The reverse direction's input: each sequence's real steps in reversed time, then 0. */
static float *gather_reverse(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                             const int32_t *len, struct pb_err *e)
{
    size_t bytes = (size_t)d->batch * d->steps * (size_t)d->input * sizeof(float);
    float *xr = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, e);
    if (xr)
        be->ops->seq_gather(be, x, d->input, len, d->batch, d->steps, d->input, true, xr,
                            d->input);
    return xr;
}

int pb_lstm_one_fwd(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                    const float *w, float *y, struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    if (!o->bi) {
        be->ops->lstm_fwd(be, d, x, w, y, o->ws[0], NULL);
        return 0;
    }
    int B = d->batch, T = d->steps, H = d->hidden;
    float *xr = gather_reverse(be, d, x, o->len, e);
    if (!xr)
        return -1;
    be->ops->lstm_fwd(be, d, x, w, o->yd[0], o->ws[0], NULL);
    be->ops->lstm_fwd(be, d, xr, w + pb_lstm_dir_params(d->input, H), o->yd[1], o->ws[1],
                      NULL);
    pb_backend_free(be, xr);
    be->ops->seq_gather(be, o->yd[0], H, o->len, B, T, H, false, y, 2 * H);
    be->ops->seq_gather(be, o->yd[1], H, o->len, B, T, H, true, y + H, 2 * H);
    return 0;
}

/* A sequence's length and its row. */
struct len_row {
    int32_t len;
    int row;
};

/* Longest first, ties by row. */
static int longer_first(const void *a, const void *b)
{
    const struct len_row *p = a, *q = b;
    return p->len != q->len ? (q->len > p->len) - (q->len < p->len) : p->row - q->row;
}

/* Where the segments run: xg [n, steps, I] and yg [n, steps, H] of the largest segment, and
 * two pairs of states h, c [B, H] used in turn (a segment reads one and writes the other). */
struct seg_bufs {
    float *xg, *yg, *h[2], *c[2];
};

/* The largest n·steps of a segment (ord longest first). */
static size_t largest_segment(const struct len_row *ord, int B)
{
    size_t most = 0;
    for (int n = B, from = 0; n > 0;) {
        int upto = ord[n - 1].len;
        size_t f = (size_t)n * (size_t)(upto - from);
        most = f > most ? f : most;
        while (n > 0 && ord[n - 1].len == upto)
            n--;
        from = upto;
    }
    return most;
}

/* One direction's final states into its rows of h_n, c_n [B, H], as a packed sequence
 * runs: the rows ordered longest first, so the sequences still running are the first n;
 * each segment runs those n from step `from` to the shortest one's length, starting
 * from the states the last segment left, and the sequences ending there give theirs. */
static void packed_states(struct pb_backend *be, const struct pb_lstm_desc *d, const float *src,
                          const float *w, const struct len_row *ord, const struct seg_bufs *s,
                          float *h_n, float *c_n)
{
    int T = d->steps, I = d->input, H = d->hidden;
    size_t state = (size_t)H * sizeof(float);
    int cur = 0;
    for (int n = d->batch, from = 0; n > 0;) {
        int upto = ord[n - 1].len, steps = upto - from;
        /* all T steps: every sequence is full, in row order, and src is the segment */
        const float *xg = steps == T ? src : s->xg;
        for (int i = 0; xg != src && i < n; i++)
            be->ops->copy(be, s->xg + (size_t)i * steps * I,
                          src + ((size_t)ord[i].row * T + from) * I,
                          (size_t)steps * I * sizeof(float));
        struct pb_lstm_states st = {from ? s->h[cur] : NULL, from ? s->c[cur] : NULL, s->h[!cur],
                                    s->c[!cur]};
        struct pb_lstm_desc g = {n, steps, I, H};
        be->ops->lstm_fwd(be, &g, xg, w, s->yg, NULL, &st);
        cur = !cur;
        for (; n > 0 && ord[n - 1].len == upto; n--) {
            size_t at = (size_t)ord[n - 1].row * H, i = (size_t)(n - 1) * H;
            be->ops->copy(be, h_n + at, s->h[cur] + i, state);
            be->ops->copy(be, c_n + at, s->c[cur] + i, state);
        }
        from = upto;
    }
}

int pb_lstm_one_states(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                       const float *w, const int32_t *len, float *h_n, float *c_n,
                       struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    int B = d->batch, I = d->input, H = d->hidden;
    PB_CHECK(o->bi);
    struct len_row *ord = pb_xmalloc((size_t)B * sizeof *ord);
    for (int b = 0; b < B; b++)
        ord[b] = (struct len_row){len[b], b};
    qsort(ord, (size_t)B, sizeof *ord, longer_first);
    size_t seg = largest_segment(ord, B), st = (size_t)B * H;
    float *xr = gather_reverse(be, d, x, o->len, e);
    float *tmp = xr ? pb_backend_alloc(be, (seg * (I + H) + 4 * st) * sizeof(float),
                                       PB_MEM_SCRATCH, e)
                    : NULL;
    if (tmp) {
        struct seg_bufs s = {tmp, tmp + seg * I, {tmp + seg * (I + H), tmp + seg * (I + H) + st},
                             {tmp + seg * (I + H) + 2 * st, tmp + seg * (I + H) + 3 * st}};
        packed_states(be, d, x, w, ord, &s, h_n, c_n);
        packed_states(be, d, xr, w + pb_lstm_dir_params(I, H), ord, &s, h_n + st, c_n + st);
    }
    pb_backend_free(be, tmp);
    pb_backend_free(be, xr);
    free(ord);
    return tmp ? 0 : -1;
}

/* Both directions' backward: dy [B, T, 2H] split into each direction's time order,
 * dx = the forward direction's + the reverse one's put back in time order. split: the
 * data passes only, into o's keeps (x and dw not read). */
static int bi_backward(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                       const float *w, const float *dy, float *dx, float *dw, bool split,
                       struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    int B = d->batch, T = d->steps, H = d->hidden, I = d->input;
    size_t seq = (size_t)B * T * (size_t)H, xn = (size_t)B * T * (size_t)I;
    /* dy_f, dy_r [B, T, H], then the reverse direction's dx [B, T, I] when dx is wanted,
     * then (split) room for it put back in time order [B, T, I] */
    size_t floats = 2 * seq + (dx ? xn : 0) + (split && dx ? xn : 0);
    float *tmp = pb_backend_alloc(be, floats * sizeof(float), PB_MEM_SCRATCH, e);
    if (!tmp)
        return -1;
    float *xr = split ? (dx ? tmp + 2 * seq + xn : NULL) : gather_reverse(be, d, x, o->len, e);
    if (!split && !xr) {
        pb_backend_free(be, tmp);
        return -1;
    }
    float *dy_f = tmp, *dy_r = tmp + seq, *dx_r = dx ? dy_r + seq : NULL;
    be->ops->seq_gather(be, dy, 2 * H, o->len, B, T, H, false, dy_f, H);
    be->ops->seq_gather(be, dy + H, 2 * H, o->len, B, T, H, true, dy_r, H);
    size_t off = pb_lstm_dir_params(I, H);
    if (split) {
        be->ops->lstm_bwd_data(be, d, w, dy_f, o->ws[0], dx, o->keep[0]);
        be->ops->lstm_bwd_data(be, d, w + off, dy_r, o->ws[1], dx_r, o->keep[1]);
    } else {
        be->ops->lstm_bwd(be, d, x, w, o->yd[0], dy_f, o->ws[0], dx, dw);
        be->ops->lstm_bwd(be, d, xr, w + off, o->yd[1], dy_r, o->ws[1], dx_r, dw + off);
    }
    if (dx) {
        be->ops->seq_gather(be, dx_r, I, o->len, B, T, I, true, xr, I);
        be->ops->add(be, dx, xr, dx, xn);
    }
    if (!split)
        pb_backend_free(be, xr);
    pb_backend_free(be, tmp);
    return 0;
}

int pb_lstm_one_bwd(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                    const float *w, const float *y, const float *dy, float *dx, float *dw,
                    struct pb_err *e)
{
    if (o->bi)
        return bi_backward(be, o, x, w, dy, dx, dw, false, e);
    be->ops->lstm_bwd(be, &o->d, x, w, y, dy, o->ws[0], dx, dw);
    return 0;
}

int pb_lstm_one_bwd_data(struct pb_backend *be, const struct pb_lstm_one *o, const float *w,
                         const float *dy, float *dx, struct pb_err *e)
{
    if (o->bi)
        return bi_backward(be, o, NULL, w, dy, dx, NULL, true, e);
    be->ops->lstm_bwd_data(be, &o->d, w, dy, o->ws[0], dx, o->keep[0]);
    return 0;
}

int pb_lstm_one_bwd_weights(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                            const float *y, float *dw, struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    if (!o->bi) {
        be->ops->lstm_bwd_weights(be, d, x, y, o->keep[0], dw);
        return 0;
    }
    float *xr = gather_reverse(be, d, x, o->len, e);
    if (!xr)
        return -1;
    be->ops->lstm_bwd_weights(be, d, x, o->yd[0], o->keep[0], dw);
    be->ops->lstm_bwd_weights(be, d, xr, o->yd[1], o->keep[1],
                              dw + pb_lstm_dir_params(d->input, d->hidden));
    pb_backend_free(be, xr);
    return 0;
}
