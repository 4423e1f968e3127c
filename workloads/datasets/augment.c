/* workloads/datasets/augment.c — the image transforms of semantics §1.6 (augment.h).
 * Bilinear resampling follows torch 1.13's CPU upsample_bilinear2d (align_corners=False,
 * no antialias) operation for operation: per axis the scale in float32, the source index
 * in double, clamped at 0, λ1 = its fraction rounded to float32 and λ0 = 1 − λ1; an axis
 * of unchanged size copies. A pixel is fma(r0, λ0_y, r1·λ1_y), each row value r =
 * fma(p0, λ0_x, p1·λ1_x), as torch's AVX2 kernel contracts it, so the samples equal
 * torchvision's bit for bit (tests/workloads/test_image_data.c). */
#include "workloads/datasets/augment.h"

#include <math.h>
#include <string.h>

int pb_aug_init(struct pb_aug *a, enum pb_aug_family family, int c, int h, int w, int side,
                bool flip, const float *mean, const float *std, struct pb_err *e)
{
    memset(a, 0, sizeof *a);
    if (c < 1 || c > PB_AUG_MAX_CHANNELS || h < 1 || w < 1)
        return pb_err_set(e, "image transforms take 1 to %d channels of at least 1x1 pixels "
                             "(got %dx%dx%d)", PB_AUG_MAX_CHANNELS, c, h, w);
    if (side < 1 || side > PB_AUG_MAX_SIDE)
        return pb_err_set(e, "the input side must be between 1 and %d pixels (got %d)",
                          PB_AUG_MAX_SIDE, side);
    a->family = family;
    a->c = c;
    a->h = h;
    a->w = w;
    a->side = side;
    a->flip = flip;
    for (int ch = 0; ch < c; ch++) {
        a->mean[ch] = mean[ch];
        a->std[ch] = std[ch];
        for (int v = 0; v < 256; v++)
            a->table[ch][v] = ((float)v / 255.0f - mean[ch]) / std[ch];
    }
    return 0;
}

/* A uniform integer in [0, n) from one 32-bit word (multiply-shift). */
static int below(uint32_t word, int n)
{
    return (int)(((uint64_t)word * (uint64_t)n) >> 32);
}

static double unit(uint32_t word)
{
    return (double)word * (1.0 / 4294967296.0);
}

void pb_aug_resized_crop_params(int h, int w, struct pb_rng_key key, struct pb_aug_crop *out)
{
    const double rmin = 3.0 / 4.0, rmax = 4.0 / 3.0, smin = 0.08, smax = 1.0;
    double area = (double)h * (double)w, lo = log(rmin), hi = log(rmax);
    for (int attempt = 0; attempt < 10; attempt++) {
        uint32_t wd[4];
        pb_rng_words(key, 1 + (uint64_t)attempt, wd);
        double target = area * (smin + (smax - smin) * unit(wd[0]));
        double ratio = exp(lo + (hi - lo) * unit(wd[1]));
        /* Python's round: half to even, as nearbyint in the default rounding mode */
        int cw = (int)nearbyint(sqrt(target * ratio)), chh = (int)nearbyint(sqrt(target / ratio));
        if (cw > 0 && cw <= w && chh > 0 && chh <= h) {
            out->top = below(wd[2], h - chh + 1);
            out->left = below(wd[3], w - cw + 1);
            out->height = chh;
            out->width = cw;
            return;
        }
    }
    double in_ratio = (double)w / (double)h;
    int cw = w, chh = h;
    if (in_ratio < rmin)
        chh = (int)nearbyint(cw / rmin);
    else if (in_ratio > rmax)
        cw = (int)nearbyint(chh * rmax);
    out->top = (h - chh) / 2;
    out->left = (w - cw) / 2;
    out->height = chh;
    out->width = cw;
}

void pb_aug_draw(const struct pb_aug *a, struct pb_rng_key key, struct pb_aug_crop *out)
{
    uint32_t wd[4];
    pb_rng_words(key, 0, wd);
    if (a->family == PB_AUG_IMAGENET) {
        pb_aug_resized_crop_params(a->h, a->w, key, out);
    } else {
        /* RandomCrop(S) of the image padded by 4 on every side: offsets 0 … 8 */
        out->top = below(wd[0], 2 * PB_AUG_CIFAR_PAD + 1);
        out->left = below(wd[1], 2 * PB_AUG_CIFAR_PAD + 1);
        out->height = out->width = a->side;
    }
    out->flip = a->flip && unit(wd[2]) < 0.5;
}

int pb_aug_val_resize(int side)
{
    return (int)nearbyint((double)side * 256.0 / 224.0);
}

/* torchvision's Resize(R) of an h×w image: the shorter side becomes R, the longer
 * int(R · long / short). */
static void val_dims(const struct pb_aug *a, int *oh, int *ow)
{
    int r = pb_aug_val_resize(a->side);
    if (a->w <= a->h) {
        *ow = r;
        *oh = (int)((double)r * a->h / a->w);
    } else {
        *oh = r;
        *ow = (int)((double)r * a->w / a->h);
    }
}

/* One axis of a bilinear resize from `in` to `out` samples: source indices and weights. */
struct axis {
    int32_t *i0, *i1;
    float *l0, *l1;
};

static void axis_weights(int in, int out, struct axis *ax)
{
    if (in == out) {
        for (int o = 0; o < out; o++) {
            ax->i0[o] = ax->i1[o] = o;
            ax->l0[o] = 1.0f;
            ax->l1[o] = 0.0f;
        }
        return;
    }
    float scale = (float)in / (float)out;
    for (int o = 0; o < out; o++) {
        double src = (double)scale * ((double)o + 0.5) - 0.5;
        if (src < 0)
            src = 0;
        int k = (int)src;
        double frac = src - k;
        ax->i0[o] = k;
        ax->i1[o] = k + (k < in - 1);
        ax->l1[o] = (float)(frac < 0 ? 0 : frac > 1 ? 1 : frac);
        ax->l0[o] = 1.0f - ax->l1[o];
    }
}

/* The scratch memory of a: two axes of up to `maxo` samples, source rows [h, S], and
 * for CIFAR at another side the resized image [c, S, S]. */
struct scratch {
    struct axis ay, ax;
    float *rows, *img;
};

static int max_out(const struct pb_aug *a)
{
    int m = a->side;
    if (a->family == PB_AUG_IMAGENET) {
        int oh, ow;
        val_dims(a, &oh, &ow);
        m = oh > m ? oh : m;
        m = ow > m ? ow : m;
    }
    return m;
}

static bool cifar_resizes(const struct pb_aug *a)
{
    return a->family == PB_AUG_CIFAR && (a->side != a->h || a->side != a->w);
}

size_t pb_aug_scratch_bytes(const struct pb_aug *a)
{
    size_t m = (size_t)max_out(a), s = (size_t)a->side;
    size_t bytes = 2 * m * (2 * sizeof(int32_t) + 2 * sizeof(float));
    bytes += (size_t)a->h * s * sizeof(float);
    if (cifar_resizes(a))
        bytes += (size_t)a->c * s * s * sizeof(float);
    return bytes;
}

static struct scratch carve(const struct pb_aug *a, void *mem)
{
    size_t m = (size_t)max_out(a), s = (size_t)a->side;
    char *p = mem;
    struct scratch sc;
    struct axis *axes[2] = {&sc.ay, &sc.ax};
    for (int i = 0; i < 2; i++) {
        axes[i]->l0 = (float *)p;
        axes[i]->l1 = axes[i]->l0 + m;
        axes[i]->i0 = (int32_t *)(axes[i]->l1 + m);
        axes[i]->i1 = axes[i]->i0 + m;
        p = (char *)(axes[i]->i1 + m);
    }
    sc.rows = (float *)p;
    sc.img = cifar_resizes(a) ? sc.rows + (size_t)a->h * s : NULL;
    return sc;
}

/* The window [y0, y0 + ny) × [x0, x0 + nx) of the crop (top, left, ch, cw) of src
 * [c, h, w] resized to oh × ow, into out [c, ny, nx]: normalised or in [0, 1], mirrored
 * left to right when flip. Rows of the crop are resampled along x once each, then
 * combined along y. */
struct window {
    int top, left, ch, cw;  /* the crop of the stored image */
    int oh, ow;             /* its resized size */
    int y0, x0, ny, nx;     /* the part of the resized image produced */
};

static void resample(const struct pb_aug *a, const uint8_t *src, const struct window *wd,
                     bool normalise, bool flip, struct scratch *sc, float *out)
{
    PB_CHECK(wd->top >= 0 && wd->left >= 0 && wd->ch >= 1 && wd->cw >= 1 &&
             wd->top + wd->ch <= a->h && wd->left + wd->cw <= a->w);
    PB_CHECK(wd->y0 >= 0 && wd->x0 >= 0 && wd->y0 + wd->ny <= wd->oh && wd->x0 + wd->nx <= wd->ow);
    axis_weights(wd->ch, wd->oh, &sc->ay);
    axis_weights(wd->cw, wd->ow, &sc->ax);
    const int32_t *yi0 = sc->ay.i0, *yi1 = sc->ay.i1, *xi0 = sc->ax.i0 + wd->x0, *xi1 = sc->ax.i1 + wd->x0;
    const float *yl0 = sc->ay.l0, *yl1 = sc->ay.l1, *xl0 = sc->ax.l0 + wd->x0, *xl1 = sc->ax.l1 + wd->x0;
    int lo = yi0[wd->y0], hi = yi1[wd->y0 + wd->ny - 1], nx = wd->nx;
    float unit01[256];
    for (int v = 0; v < 256; v++)
        unit01[v] = (float)v / 255.0f;
    for (int c = 0; c < a->c; c++) {
        const uint8_t *plane = src + (size_t)c * a->h * a->w;
        for (int r = lo; r <= hi; r++) {
            const uint8_t *row = plane + (size_t)(wd->top + r) * a->w + wd->left;
            float *t = sc->rows + (size_t)(r - lo) * nx;
            for (int x = 0; x < nx; x++)
                t[x] = fmaf(unit01[row[xi0[x]]], xl0[x], unit01[row[xi1[x]]] * xl1[x]);
        }
        float mean = a->mean[c], std = a->std[c];
        for (int y = 0; y < wd->ny; y++) {
            int yy = wd->y0 + y;
            const float *t0 = sc->rows + (size_t)(yi0[yy] - lo) * nx;
            const float *t1 = sc->rows + (size_t)(yi1[yy] - lo) * nx;
            float l0 = yl0[yy], l1 = yl1[yy];
            float *o = out + ((size_t)c * wd->ny + y) * nx;
            for (int x = 0; x < nx; x++) {
                float v = fmaf(t0[x], l0, t1[x] * l1);
                if (normalise)
                    v = (v - mean) / std;
                o[flip ? nx - 1 - x : x] = v;
            }
        }
    }
}

/* CIFAR's RandomCrop(S, padding 4) of src [c, S, S] (bytes, through the tables) or of
 * img [c, S, S] (values in [0, 1], normalised here), zeros outside, then the flip. */
static void pad_crop(const struct pb_aug *a, const uint8_t *src, const float *img,
                     const struct pb_aug_crop *p, float *out)
{
    int s = a->side, pad = PB_AUG_CIFAR_PAD;
    PB_CHECK(p->top >= 0 && p->top <= 2 * pad && p->left >= 0 && p->left <= 2 * pad);
    PB_CHECK(p->height == s && p->width == s);
    for (int c = 0; c < a->c; c++) {
        const float *tab = a->table[c];
        float mean = a->mean[c], std = a->std[c];
        for (int y = 0; y < s; y++) {
            int sy = p->top + y - pad;
            float *o = out + ((size_t)c * s + y) * s;
            for (int x = 0; x < s; x++) {
                int sx = p->left + x - pad;
                bool in = sy >= 0 && sy < s && sx >= 0 && sx < s;
                size_t at = ((size_t)c * s + (size_t)(in ? sy : 0)) * s + (size_t)(in ? sx : 0);
                float v = img ? ((in ? img[at] : 0.0f) - mean) / std : tab[in ? src[at] : 0];
                o[p->flip ? s - 1 - x : x] = v;
            }
        }
    }
}

/* CIFAR at another side than the stored one: the whole image resized to S × S. */
static void cifar_resize(const struct pb_aug *a, const uint8_t *src, bool normalise,
                         struct scratch *sc, float *out)
{
    struct window wd = {0, 0, a->h, a->w, a->side, a->side, 0, 0, a->side, a->side};
    resample(a, src, &wd, normalise, false, sc, out);
}

void pb_aug_train(const struct pb_aug *a, const uint8_t *src, const struct pb_aug_crop *p,
                  void *scratch, float *out)
{
    struct scratch sc = carve(a, scratch);
    if (a->family == PB_AUG_CIFAR) {
        if (cifar_resizes(a))
            cifar_resize(a, src, false, &sc, sc.img);
        pad_crop(a, src, sc.img, p, out);
        return;
    }
    PB_CHECK(a->family == PB_AUG_IMAGENET);
    struct window wd = {p->top, p->left, p->height, p->width, a->side, a->side,
                        0, 0, a->side, a->side};
    resample(a, src, &wd, true, p->flip, &sc, out);
}

void pb_aug_val(const struct pb_aug *a, const uint8_t *src, void *scratch, float *out)
{
    struct scratch sc = carve(a, scratch);
    if (a->family == PB_AUG_CIFAR) {
        if (cifar_resizes(a)) {
            cifar_resize(a, src, true, &sc, out);
            return;
        }
        size_t per = (size_t)a->h * a->w;
        for (int c = 0; c < a->c; c++)
            for (size_t i = 0; i < per; i++)
                out[(size_t)c * per + i] = a->table[c][src[(size_t)c * per + i]];
        return;
    }
    PB_CHECK(a->family == PB_AUG_IMAGENET);
    int oh, ow;
    val_dims(a, &oh, &ow);
    /* CenterCrop(S): torchvision's int(round((R − S) / 2)), half to even */
    int top = (int)nearbyint((oh - a->side) / 2.0), left = (int)nearbyint((ow - a->side) / 2.0);
    struct window wd = {0, 0, a->h, a->w, oh, ow, top, left, a->side, a->side};
    resample(a, src, &wd, true, false, &sc, out);
}
