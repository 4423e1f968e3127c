/* workloads/datasets/augment.h — the transforms of the image datasets (semantics §1.6):
 * a uint8 image [c, h, w] becomes a normalised float sample [c, S, S] at gather time.
 * CIFAR trains with RandomCrop(S, padding 4) and a horizontal flip, Tiny-ImageNet with
 * torchvision's RandomResizedCrop(S) and a flip; validation takes CIFAR as it is and
 * Tiny-ImageNet through Resize(round(S·256/224)) and CenterCrop(S). Resampling is
 * bilinear as torch.nn.functional.interpolate(align_corners=False, antialias=False)
 * computes it on the CPU (torchvision 0.14's tensor path), bit for bit. The random
 * parameters of sample i in epoch e are drawn from the counter-based key (seed, e, i). */
#ifndef PB_AUGMENT_H
#define PB_AUGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"
#include "harness/base/rng.h"

#define PB_AUG_MAX_CHANNELS 3
/* The largest side S a transform produces. */
#define PB_AUG_MAX_SIDE 1024
/* CIFAR's RandomCrop padding. */
#define PB_AUG_CIFAR_PAD 4

enum pb_aug_family {
    PB_AUG_NONE,      /* a float dataset: samples are copied as stored */
    PB_AUG_CIFAR,     /* train: [Resize(S)] RandomCrop(S, padding 4) + flip; val: [Resize(S)] */
    PB_AUG_IMAGENET,  /* train: RandomResizedCrop(S) + flip; val: Resize + CenterCrop(S) */
};

/* A dataset's transforms: the stored image shape, the side S of the samples, the
 * flip policy and the per-channel normalisation. */
struct pb_aug {
    enum pb_aug_family family;
    int c, h, w;            /* the stored image [c, h, w] */
    int side;               /* S: samples come out [c, S, S] */
    bool flip;              /* training flips (p 0.5) */
    float mean[PB_AUG_MAX_CHANNELS], std[PB_AUG_MAX_CHANNELS];
    /* ((v / 255) − mean) / std in float32: the normalised value of byte v per channel */
    float table[PB_AUG_MAX_CHANNELS][256];
};

/* The parameters of one training transform. CIFAR: the S×S window at (top, left) of
 * the image padded by 4 (height = width = S). Tiny-ImageNet: the crop resized to S×S.
 * flip: mirror the result left to right. */
struct pb_aug_crop {
    int top, left, height, width;
    bool flip;
};

/* Sets up the transforms of `family` for stored images [c, h, w] and samples of side
 * `side` (1 … PB_AUG_MAX_SIDE); -1 with a message for a side or channel count it cannot
 * take. */
int pb_aug_init(struct pb_aug *a, enum pb_aug_family family, int c, int h, int w, int side,
                bool flip, const float *mean, const float *std, struct pb_err *e);

/* The random parameters of a training sample from its key (pb_rng_key(PB_RNG_AUGMENT,
 * seed, epoch, sample index, 0)): counter 0 gives CIFAR's offsets and every flip,
 * counters 1 … 10 RandomResizedCrop's attempts. */
void pb_aug_draw(const struct pb_aug *a, struct pb_rng_key key, struct pb_aug_crop *out);

/* torchvision 0.14's RandomResizedCrop.get_params(scale (0.08, 1), ratio (3/4, 4/3)) on
 * an h×w image: up to 10 attempts (counters 1 … 10 of key), then the central-crop
 * fallback. Sets top, left, height, width; leaves flip. */
void pb_aug_resized_crop_params(int h, int w, struct pb_rng_key key, struct pb_aug_crop *out);

/* Bytes of scratch memory pb_aug_train and pb_aug_val need for a. */
size_t pb_aug_scratch_bytes(const struct pb_aug *a);

/* The training transform of src [c, h, w] with explicit parameters into out [c, S, S]. */
void pb_aug_train(const struct pb_aug *a, const uint8_t *src, const struct pb_aug_crop *p,
                  void *scratch, float *out);
/* The validation transform of src [c, h, w] into out [c, S, S]. */
void pb_aug_val(const struct pb_aug *a, const uint8_t *src, void *scratch, float *out);

/* Tiny-ImageNet's validation resize: round(S·256/224), half to even as Python's round. */
int pb_aug_val_resize(int side);

#endif
