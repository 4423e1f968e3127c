/* harness/model/layers/lstm_one.c — one layer of an LSTM stack on the backend
 * (lstm_one.h). A unidirectional layer is one lstm_fwd / lstm_bwd. A bidirectional one
 * runs the forward direction over x as it is and the reverse direction over each
 * sequence's real steps in reversed time (then 0), so it starts at the last real token;
 * both outputs are put back into y in time order with the padding zeroed (so padded
 * steps get no gradient either). The reverse input is gathered again in the backward
 * rather than kept. The final states of a bidirectional layer run each group of
 * sequences of one length on its own, as many steps as that length. */
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

/* Floats of a group's scratch: xg [n, L, I], yg [n, L, H], hg and cg [n, H]. */
static size_t group_floats(const struct pb_lstm_desc *d, int n, int L)
{
    return (size_t)n * ((size_t)L * ((size_t)d->input + (size_t)d->hidden) + 2 * (size_t)d->hidden);
}

/* Both directions' final states of the n rows of length L: the first L steps of each
 * row of src[r] (x for the forward direction, the reverse input for the other) copied to
 * xg, one run of L steps from zero states, its last states copied to the rows of h_n and
 * c_n [2, B, H]. */
static void group_states(struct pb_backend *be, const struct pb_lstm_desc *d,
                         const float *const src[2], const float *w, const int *rows, int n, int L,
                         float *tmp, float *h_n, float *c_n)
{
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden;
    struct pb_lstm_desc g = {n, L, I, H};
    float *xg = tmp, *yg = xg + (size_t)n * L * I, *hg = yg + (size_t)n * L * H;
    float *cg = hg + (size_t)n * H;
    struct pb_lstm_states st = {.h_last = hg, .c_last = cg};
    size_t row = (size_t)L * I * sizeof(float), state = (size_t)H * sizeof(float);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < n; i++)
            be->ops->copy(be, xg + (size_t)i * L * I, src[r] + (size_t)rows[i] * T * I, row);
        be->ops->lstm_fwd(be, &g, xg, w + r * pb_lstm_dir_params(I, H), yg, NULL, &st);
        for (int i = 0; i < n; i++) {
            size_t at = ((size_t)r * B + (size_t)rows[i]) * H;
            be->ops->copy(be, h_n + at, hg + (size_t)i * H, state);
            be->ops->copy(be, c_n + at, cg + (size_t)i * H, state);
        }
    }
}

/* The rows of length L into rows; returns how many. */
static int rows_of(const int32_t *len, int B, int L, int *rows)
{
    int n = 0;
    for (int b = 0; b < B; b++)
        if (len[b] == L)
            rows[n++] = b;
    return n;
}

int pb_lstm_one_states(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                       const float *w, const int32_t *len, float *h_n, float *c_n,
                       struct pb_err *e)
{
    const struct pb_lstm_desc *d = &o->d;
    int B = d->batch, T = d->steps;
    PB_CHECK(o->bi);
    int *rows = pb_xmalloc((size_t)B * sizeof *rows);
    size_t most = 0;
    for (int L = 1; L <= T; L++) {
        size_t f = group_floats(d, rows_of(len, B, L, rows), L);
        most = f > most ? f : most;
    }
    float *xr = gather_reverse(be, d, x, o->len, e);
    float *tmp = xr ? pb_backend_alloc(be, most * sizeof(float), PB_MEM_SCRATCH, e) : NULL;
    if (tmp) {
        const float *src[2] = {x, xr};
        for (int L = 1; L <= T; L++) {
            int n = rows_of(len, B, L, rows);
            if (n)
                group_states(be, d, src, w, rows, n, L, tmp, h_n, c_n);
        }
    }
    pb_backend_free(be, tmp);
    pb_backend_free(be, xr);
    free(rows);
    return tmp ? 0 : -1;
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
