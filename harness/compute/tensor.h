/* harness/compute/tensor.h — float32 tensors as the backend sees them.
 * A tensor is a view: device pointer, logical NCHW shape and the memory layout the
 * backend stores it in. Images are NCHW; a matrix [N, C] is n = N, c = C, h = w = 1.
 * Layouts other than PB_LAYOUT_PLAIN are the blocked formats oneDNN prefers
 * (DESIGN principle 5): they stay inside a stage, and are reordered to plain only
 * where a tensor leaves the backend (stage boundaries, losses, checkpoints). */
#ifndef PB_TENSOR_H
#define PB_TENSOR_H

#include <stddef.h>
#include <stdint.h>

enum pb_layout {
    PB_LAYOUT_PLAIN = 0,  /* row-major NCHW (PyTorch's contiguous layout) */
    PB_LAYOUT_NCHW8C,     /* nChw8c: channels in blocks of 8, zero-padded (AVX2) */
    PB_LAYOUT_NCHW16C,    /* nChw16c: channels in blocks of 16, zero-padded (AVX-512) */
};

struct pb_shape {
    int n, c, h, w;
};

struct pb_tensor {
    float *data;           /* device memory */
    struct pb_shape shape;
    enum pb_layout layout;
};

static inline size_t pb_shape_count(struct pb_shape s)
{
    return (size_t)s.n * (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

static inline int pb_shape_eq(struct pb_shape a, struct pb_shape b)
{
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

/* Channel block of a layout (1 for plain). */
static inline int pb_layout_block(enum pb_layout l)
{
    return l == PB_LAYOUT_NCHW8C ? 8 : l == PB_LAYOUT_NCHW16C ? 16 : 1;
}

/* Number of floats a tensor of this shape occupies in this layout (channels padded
 * up to the block). */
static inline size_t pb_layout_count(struct pb_shape s, enum pb_layout l)
{
    int b = pb_layout_block(l);
    size_t c = (size_t)((s.c + b - 1) / b) * (size_t)b;
    return (size_t)s.n * c * (size_t)s.h * (size_t)s.w;
}

#endif
