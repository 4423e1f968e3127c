/* harness/model/layers/lstm_one.c — one layer of an LSTM stack on the backend
 * (lstm_one.h). A unidirectional layer is one lstm_fwd / lstm_bwd. A bidirectional one
 * runs the forward direction over x as it is and the reverse direction over each
 * sequence's real steps in reversed time (then 0), so it starts at the last real token;
 * both outputs are put back into y in time order with the padding zeroed (so padded
 * steps get no gradient either). The reverse input is gathered again in the backward
 * rather than kept. */
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

/* Both directions' backward: dy [B, T, 2H] split into each direction's time order,
 * dx = the forward direction's + the reverse one's put back in time order. */
static int bi_backward(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                       const float *w, const float *dy, float *dx, float *dw, struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    int B = d->batch, T = d->steps, H = d->hidden, I = d->input;
    size_t seq = (size_t)B * T * (size_t)H, xn = (size_t)B * T * (size_t)I;
    /* dy_f, dy_r [B, T, H], then the reverse direction's dx [B, T, I] when dx is wanted */
    float *tmp = pb_backend_alloc(be, (2 * seq + (dx ? xn : 0)) * sizeof(float), PB_MEM_SCRATCH, e);
    if (!tmp)
        return -1;
    float *xr = gather_reverse(be, d, x, o->len, e);
    if (!xr) {
        pb_backend_free(be, tmp);
        return -1;
    }
    float *dy_f = tmp, *dy_r = tmp + seq, *dx_r = dx ? dy_r + seq : NULL;
    be->ops->seq_gather(be, dy, 2 * H, o->len, B, T, H, false, dy_f, H);
    be->ops->seq_gather(be, dy + H, 2 * H, o->len, B, T, H, true, dy_r, H);
    be->ops->lstm_bwd(be, d, x, w, o->yd[0], dy_f, o->ws[0], dx, dw);
    size_t off = pb_lstm_dir_params(I, H);
    be->ops->lstm_bwd(be, d, xr, w + off, o->yd[1], dy_r, o->ws[1], dx_r, dw + off);
    if (dx) {
        be->ops->seq_gather(be, dx_r, I, o->len, B, T, I, true, xr, I);
        be->ops->add(be, dx, xr, dx, xn);
    }
    pb_backend_free(be, xr);
    pb_backend_free(be, tmp);
    return 0;
}

int pb_lstm_one_bwd(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                    const float *w, const float *y, const float *dy, float *dx, float *dw,
                    struct pb_err *e)
{
    if (o->bi)
        return bi_backward(be, o, x, w, dy, dx, dw, e);
    be->ops->lstm_bwd(be, &o->d, x, w, y, dy, o->ws[0], dx, dw);
    return 0;
}
