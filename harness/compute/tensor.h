/* harness/compute/tensor.h — float32 tensors as the backend sees them.
 * A tensor is a view: device pointer, logical NCHW shape and the memory layout the
 * backend stores it in. Images are NCHW; a matrix [N, C] is n = N, c = C, h = w = 1.
 * The core knows one layout, PB_LAYOUT_PLAIN; other values are private to the backend
 * that made the tensor (oneDNN's blocked formats on the CPU, design §2.5): they
 * stay inside a stage, and are reordered to plain only where a tensor leaves the
 * backend (stage boundaries, losses, checkpoints). */
#ifndef PB_TENSOR_H
#define PB_TENSOR_H

#include <stddef.h>
#include <stdint.h>

enum pb_layout {
    PB_LAYOUT_PLAIN = 0,  /* row-major NCHW (PyTorch's contiguous layout) */
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

#endif
