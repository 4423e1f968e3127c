/* harness/compute/cpu/cpu_conv_s2d.c — forward and backward data of strided convolutions on few
 * input channels (AlexNet's 11x11/4 conv1 on RGB) in space-to-depth form, where oneDNN
 * has no blocked kernel for them and would fall back to im2col + gemm. */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

/* x [n, c, h, w] becomes x' [n, c·sh·sw, h', w'] with
 * x'[c·sh·sw + a·sw + b][I][J] = xpad[c][I·sh + a][J·sw + b], and the kernel a stride-1
 * ⌈kh/sh⌉ x ⌈kw/sw⌉ one (zero-padded taps), which oneDNN runs in its blocked formats at
 * about the sgemm rate despite the padded taps, writing y blocked. The backward weights
 * stays direct: oneDNN has a blocked kernel for it that takes plain x with blocked dy. */

/* x' has at most this many channels (more would rather suit the direct kernels). */
#define S2D_MAX_CHANNELS 64

struct pb_cpu_s2d {
    bool use;
    struct pb_conv_desc d, d2;  /* the convolution; its stride-1 form on x' */
    struct pb_shape x, x2;      /* x [n, cin, h, w]; x' [n, cin·sh·sw, h', w'] */
    enum pb_layout l2;          /* layout of x', dx' and y (the inner primitive's) */
    float *xbuf, *dxbuf;        /* x', dx' in l2 */
    float *w2;                  /* w' [cout, cin·sh·sw, kh', kw'] OIHW */
};

static void drop_plan(struct pb_backend *be, void *val)
{
    struct pb_cpu_s2d *s = val;
    pb_cpu_scratch_free(be, s->xbuf);
    pb_cpu_scratch_free(be, s->dxbuf);
    pb_cpu_scratch_free(be, s->w2);
    free(s);
}

static bool applicable(const struct pb_conv_desc *d)
{
    return (d->sh > 1 || d->sw > 1) && d->kh >= d->sh && d->kw >= d->sw &&
           d->cin * d->sh * d->sw <= S2D_MAX_CHANNELS;
}

static size_t nw2(const struct pb_cpu_s2d *s)
{
    return (size_t)s->d2.cout * (size_t)s->d2.cin * (size_t)s->d2.kh * (size_t)s->d2.kw;
}

/* Fills s with the space-to-depth form of d on x; false when it would not run blocked. */
static bool plan_init(struct pb_backend *be, struct pb_cpu_s2d *s, const struct pb_conv_desc *d,
                      struct pb_shape x)
{
    if (!applicable(d) || pb_cpu_conv_onednn_layout(be, d, x) != PB_LAYOUT_PLAIN)
        return false;
    int oh = (x.h + 2 * d->ph - d->kh) / d->sh + 1, ow = (x.w + 2 * d->pw - d->kw) / d->sw + 1;
    int kh2 = (d->kh + d->sh - 1) / d->sh, kw2 = (d->kw + d->sw - 1) / d->sw;
    s->d = *d;
    s->d2 = (struct pb_conv_desc){d->cin * d->sh * d->sw, d->cout, kh2, kw2, 1, 1, 0, 0, d->bias};
    s->x = x;
    s->x2 = (struct pb_shape){x.n, s->d2.cin, oh + kh2 - 1, ow + kw2 - 1};
    s->l2 = pb_cpu_conv_onednn_layout(be, &s->d2, s->x2);
    if (s->l2 == PB_LAYOUT_PLAIN)
        return false;
    size_t nx2 = pb_layout_count(s->x2, s->l2);
    s->xbuf = pb_cpu_scratch(be, nx2 * sizeof(float));
    if (s->xbuf)
        memset(s->xbuf, 0, nx2 * sizeof(float));  /* padded channels stay zero */
    s->w2 = pb_cpu_scratch(be, nw2(s) * sizeof(float));
    return true;
}

const struct pb_cpu_s2d *pb_cpu_s2d_plan(struct pb_backend *be, const struct pb_conv_desc *d,
                                         struct pb_shape x)
{
    struct pb_cpu_key k = {.op = PB_CPU_OP_CONV_S2D,
                           .v = {x.n, x.c, x.h, x.w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph,
                                 d->pw, d->bias}};
    struct pb_cpu_s2d *s = pb_cpu_cache_get(be, &k);
    if (!s) {
        s = pb_xcalloc(1, sizeof *s);
        s->use = plan_init(be, s, d, x);
        pb_cpu_cache_put(be, &k, s, drop_plan);
    }
    return s->use ? s : NULL;
}

enum pb_layout pb_cpu_s2d_layout(const struct pb_cpu_s2d *s)
{
    return s->l2;
}

/* x [n, cin, h, w] (any layout) → x' in s->xbuf, one row of a channel block at a time
 * (the writes are then contiguous; the columns every channel reads inside x are copied
 * without tests) */
static void space_to_depth(struct pb_backend *be, const struct pb_cpu_s2d *s,
                           const struct pb_tensor *x)
{
    const struct pb_conv_desc *d = &s->d;
    struct pb_shape x2 = s->x2;
    int db = pb_layout_block(s->l2), nblk = (x2.c + db - 1) / db;
    size_t sb = (size_t)pb_layout_block(x->layout);
    int rows = x2.n * nblk * x2.h;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < rows; r++) {
        int n = r / (nblk * x2.h), blk = r / x2.h % nblk, i = r % x2.h;
        const float *src[16];  /* per channel of the block: its source row, NULL if none */
        int off[16];           /* per channel: iw = j·sw + off */
        bool all_rows = true;
        int lo = 0, hi = x2.w;  /* columns j whose iw is inside x for every channel */
        for (int k = 0; k < db; k++) {
            int c2 = blk * db + k, c = c2 / (d->sh * d->sw);
            int a = c2 / d->sw % d->sh, ih = i * d->sh + a - d->ph;
            src[k] = c2 < x2.c && ih >= 0 && ih < s->x.h
                         ? x->data + pb_cpu_offset(s->x, x->layout, n, c, ih, 0)
                         : NULL;
            all_rows = all_rows && src[k];
            off[k] = c2 % d->sw - d->pw;
            int first = off[k] >= 0 ? 0 : (-off[k] + d->sw - 1) / d->sw;
            int last = s->x.w - 1 - off[k] < 0 ? -1 : (s->x.w - 1 - off[k]) / d->sw;
            lo = first > lo ? first : lo;
            hi = last + 1 < hi ? last + 1 : hi;
        }
        if (!all_rows || hi < lo)
            lo = hi = 0;
        float *dst = s->xbuf + pb_cpu_offset(x2, s->l2, n, blk * db, i, 0);
        for (int j = 0; j < x2.w; j++) {
            float *o = dst + (size_t)j * db;
            if (j >= lo && j < hi) {
                for (int k = 0; k < db; k++)
                    o[k] = src[k][(size_t)(j * d->sw + off[k]) * sb];
                continue;
            }
            for (int k = 0; k < db; k++) {
                int iw = j * d->sw + off[k];
                o[k] = src[k] && iw >= 0 && iw < s->x.w ? src[k][(size_t)iw * sb] : 0.0f;
            }
        }
    }
}

/* w [cout, cin, kh, kw] → w' [cout, cin·sh·sw, kh', kw'] (zero where kh·kw has no tap) */
static void weights_to_depth(const struct pb_cpu_s2d *s, const float *w)
{
    const struct pb_conv_desc *d = &s->d, *d2 = &s->d2;
    float *w2 = s->w2;
    for (int o = 0; o < d2->cout; o++)
        for (int c2 = 0; c2 < d2->cin; c2++) {
            int c = c2 / (d->sh * d->sw), a = c2 / d->sw % d->sh, b = c2 % d->sw;
            for (int i = 0; i < d2->kh; i++)
                for (int j = 0; j < d2->kw; j++) {
                    int u = i * d->sh + a, v = j * d->sw + b;
                    *w2++ = u < d->kh && v < d->kw
                                ? w[(((size_t)o * d->cin + c) * d->kh + u) * d->kw + v]
                                : 0.0f;
                }
        }
}

/* x [n, cin, h, w] (any layout), w OIHW, b [cout] or NULL → y [n, cout, oh, ow] in s->l2 */
void pb_cpu_s2d_fwd(struct pb_backend *be, const struct pb_cpu_s2d *s, const struct pb_tensor *x,
                    const float *w, const float *b, struct pb_tensor *y)
{
    if (be->failed)
        return;
    space_to_depth(be, s, x);
    weights_to_depth(s, w);
    struct pb_tensor x2 = {s->xbuf, s->x2, s->l2};
    pb_cpu_conv_fwd(be, &s->d2, &x2, s->w2, b, y);
}

/* dy [n, cout, oh, ow] (any layout), w OIHW → dx [n, cin, h, w] (layout set by the caller);
 * the rows and columns no window reaches get 0, padded channels too */
void pb_cpu_s2d_bwd_data(struct pb_backend *be, const struct pb_cpu_s2d *cs,
                         const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    struct pb_cpu_s2d *s = (struct pb_cpu_s2d *)cs;
    if (!s->dxbuf)
        s->dxbuf = pb_cpu_scratch(be, pb_layout_count(s->x2, s->l2) * sizeof(float));
    if (be->failed)
        return;
    weights_to_depth(s, w);
    struct pb_tensor dx2 = {s->dxbuf, s->x2, s->l2};
    pb_cpu_conv_bwd_data(be, &s->d2, dy, s->w2, &dx2);

    const struct pb_conv_desc *d = &s->d;
    struct pb_shape xs = s->x, x2 = s->x2;
    int blk = pb_layout_block(dx->layout), cpad = (xs.c + blk - 1) / blk * blk;
    size_t db = (size_t)blk, sb = (size_t)pb_layout_block(s->l2);
    int rows = xs.n * cpad;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < rows; r++) {
        int n = r / cpad, c = r % cpad;
        for (int ih = 0; ih < xs.h; ih++) {
            float *dst = dx->data + pb_cpu_offset(xs, dx->layout, n, c, ih, 0);
            int u = ih + d->ph, i = u / d->sh, a = u % d->sh;
            if (c >= xs.c || i >= x2.h) {
                for (int iw = 0; iw < xs.w; iw++)
                    dst[iw * db] = 0.0f;
                continue;
            }
            const float *src[S2D_MAX_CHANNELS];  /* row i of channel (c·sh + a)·sw + b */
            for (int b = 0; b < d->sw; b++)
                src[b] = s->dxbuf + pb_cpu_offset(x2, s->l2, n, (c * d->sh + a) * d->sw + b, i, 0);
            /* iw = j·sw + b − pw for j < w', the columns past them get no window */
            int covered = x2.w * d->sw - d->pw;
            covered = covered < 0 ? 0 : covered < xs.w ? covered : xs.w;
            for (int j = 0; j < x2.w; j++)
                for (int b = 0; b < d->sw; b++) {
                    int iw = j * d->sw + b - d->pw;
                    if (iw >= 0 && iw < xs.w)
                        dst[iw * db] = src[b][j * sb];
                }
            for (int iw = covered; iw < xs.w; iw++)
                dst[iw * db] = 0.0f;
        }
    }
}
