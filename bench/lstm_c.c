/* bench/lstm_c.c — bench_lstm's baseline: the CPU backend's former one-layer LSTM
 * (torch.nn.LSTM, batch_first, zero initial states), replaced by oneDNN's LSTM
 * primitive and kept here only to be timed against it. C over the backend's sgemm:
 * the input projection of every step is one gemm, each step adds h_{t-1}·W_hhᵀ and
 * applies the gates i, f, g, o (PyTorch's order) pointwise; the backward runs the steps
 * in reverse and forms the weight gradients as three gemms and two bias sums.
 * x [B, T, I], y [B, T, H] batch-first; gates [B, T, 4H]; weights as backend.h says.
 * The training forward's workspace holds the activated gates [B, T, 4H] and the cell
 * states [B, T, H]. */
#include <math.h>
#include <string.h>

#include "bench/lstm_c.h"
#include "harness/compute/cpu/cpu_internal.h"

/* The four weight tensors in the flat run w. */
struct lstm_w {
    const float *w_ih, *w_hh, *b_ih, *b_hh;
};

static struct lstm_w lstm_split(const struct pb_lstm_desc *d, const float *w)
{
    size_t g = 4 * (size_t)d->hidden;
    struct lstm_w s;
    s.w_ih = w;
    s.w_hh = s.w_ih + g * (size_t)d->input;
    s.b_ih = s.w_hh + g * (size_t)d->hidden;
    s.b_hh = s.b_ih + g;
    return s;
}

static float sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

size_t bench_lstm_c_workspace(const struct pb_lstm_desc *d)
{
    return (size_t)d->batch * d->steps * 5 * (size_t)d->hidden * sizeof(float);
}

void bench_lstm_c_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, float *y, void *ws)
{
    if (!pb_cpu_begin(be))
        return;
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden, G = 4 * H;
    struct lstm_w p = lstm_split(d, w);
    void *tmp = ws ? NULL : pb_cpu_scratch(be, bench_lstm_c_workspace(d));
    float *gates = ws ? (float *)ws : (float *)tmp;
    if (!gates)
        return;
    float *cell = gates + (size_t)B * T * G;
    /* pre-activations of every step from the inputs: [B·T, 4H] = x · W_ihᵀ */
    pb_cpu_gemm(be, false, true, B * T, G, I, 1.0f, x, I, p.w_ih, I, 0.0f, gates, G);
    for (int t = 0; t < T; t++) {
        float *gt = gates + (size_t)t * G;
        if (t > 0)  /* += h_{t-1} · W_hhᵀ, rows b at stride T·4H */
            pb_cpu_gemm(be, false, true, B, G, H, 1.0f, y + (size_t)(t - 1) * H, T * H, p.w_hh,
                        H, 1.0f, gt, T * G);
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
        for (int b = 0; b < B; b++) {
            float *a = gt + (size_t)b * T * G;
            float *c = cell + ((size_t)b * T + t) * H;
            float *h = y + ((size_t)b * T + t) * H;
            for (int j = 0; j < H; j++) {
                float i = sigmoid(a[j] + p.b_ih[j] + p.b_hh[j]);
                float f = sigmoid(a[H + j] + p.b_ih[H + j] + p.b_hh[H + j]);
                float g = tanhf(a[2 * H + j] + p.b_ih[2 * H + j] + p.b_hh[2 * H + j]);
                float o = sigmoid(a[3 * H + j] + p.b_ih[3 * H + j] + p.b_hh[3 * H + j]);
                float cp = t > 0 ? c[j - H] : 0.0f;
                c[j] = f * cp + i * g;
                h[j] = o * tanhf(c[j]);
                a[j] = i;
                a[H + j] = f;
                a[2 * H + j] = g;
                a[3 * H + j] = o;
            }
        }
    }
    pb_cpu_scratch_free(be, tmp);
}

void bench_lstm_c_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, const float *y, const float *dy, const void *ws, float *dx,
                      float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden, G = 4 * H;
    size_t bt = (size_t)B * T;
    struct lstm_w p = lstm_split(d, w);
    const float *gates = ws, *cell = gates + bt * G;
    /* dA [B, T, 4H] (pre-activation gradients), dh and dc carried to step t-1 [B, H],
     * h_{t-1} per step [B, T, H] for the recurrent weights' gradient */
    float *da = pb_cpu_scratch(be, (bt * G + 2 * (size_t)B * H + bt * H) * sizeof(float));
    if (!da)
        return;
    float *dh_next = da + bt * G, *dc_next = dh_next + (size_t)B * H, *hprev = dc_next + (size_t)B * H;
    memset(dc_next, 0, (size_t)B * H * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
        if (t < T - 1)  /* dh_{t} from step t+1: dA_{t+1} · W_hh */
            pb_cpu_gemm(be, false, false, B, H, G, 1.0f, da + (size_t)(t + 1) * G, T * G, p.w_hh,
                        H, 0.0f, dh_next, H);
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
        for (int b = 0; b < B; b++) {
            size_t row = (size_t)b * T + t;
            const float *a = gates + row * G, *c = cell + row * H, *dyr = dy + row * H;
            float *dar = da + row * G, *dhn = dh_next + (size_t)b * H, *dcn = dc_next + (size_t)b * H;
            for (int j = 0; j < H; j++) {
                float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
                float cp = t > 0 ? c[j - H] : 0.0f;
                float tc = tanhf(c[j]);
                float dh = dyr[j] + (t < T - 1 ? dhn[j] : 0.0f);
                float dc = dcn[j] + dh * o * (1.0f - tc * tc);
                dar[j] = dc * g * i * (1.0f - i);
                dar[H + j] = dc * cp * f * (1.0f - f);
                dar[2 * H + j] = dc * i * (1.0f - g * g);
                dar[3 * H + j] = dh * tc * o * (1.0f - o);
                dcn[j] = dc * f;
            }
        }
    }
    for (int b = 0; b < B; b++) {
        float *hp = hprev + (size_t)b * T * H;
        memset(hp, 0, (size_t)H * sizeof(float));
        memcpy(hp + H, y + (size_t)b * T * H, (size_t)(T - 1) * H * sizeof(float));
    }
    float *dw_ih = dw_acc, *dw_hh = dw_ih + (size_t)G * I, *db_ih = dw_hh + (size_t)G * H;
    float *db_hh = db_ih + G;
    pb_cpu_gemm(be, true, false, G, I, B * T, 1.0f, da, G, x, I, 1.0f, dw_ih, I);
    pb_cpu_gemm(be, true, false, G, H, B * T, 1.0f, da, G, hprev, H, 1.0f, dw_hh, H);
    pb_cpu_bias_grad(be, da, db_ih, B * T, G);
    pb_cpu_bias_grad(be, da, db_hh, B * T, G);
    if (dx)
        pb_cpu_gemm(be, false, false, B * T, I, G, 1.0f, da, G, p.w_ih, I, 0.0f, dx, I);
    pb_cpu_scratch_free(be, da);
}
