/* harness/compute/cuda/cuda_concat.cu — channel concatenation of plain NCHW tensors and its
 * backward (the split into channel slices): copies, the inputs' bits. Reference: cpu_concat.c
 * copy_plain. Up to CAT_MAX parts per launch, one grid row (blockIdx.y) per part. */
#include "harness/compute/cuda/cuda_kernels.cuh"

#define CAT_MAX 32

/* The parts of one launch: part p has floats[p] = c_p·h·w floats per sample, which start
 * at float offset[p] of each sample's whole_floats in the whole. */
struct cat_parts {
    float *part[CAT_MAX];
    size_t floats[CAT_MAX], offset[CAT_MAX];
};

/* whole [n, C, h, w], part p [n, c_p, h, w] (p = blockIdx.y): to_whole copies the part into
 * its channels of the whole (concat), else those channels into the part (split) */
static __global__ void concat_kernel(struct cat_parts parts, float *whole, size_t whole_floats,
                                     int n, bool to_whole)
{
    int p = blockIdx.y;
    size_t per = parts.floats[p], total = per * (size_t)n;
    float *part = parts.part[p];
    for (size_t e = pb_cu_index(); e < total; e += (size_t)gridDim.x * blockDim.x) {
        size_t b = e / per, k = e - b * per;
        float *w = whole + b * whole_floats + parts.offset[p] + k;
        if (to_whole)
            *w = part[e];
        else
            part[e] = *w;
    }
}

/* The parts' shapes against the whole's, as the CPU's check_parts; plain layouts only. */
static void check_parts(const struct pb_tensor *whole, int k, const struct pb_tensor *const *ts)
{
    int c = 0;
    PB_CHECK(k > 0 && whole->layout == PB_LAYOUT_PLAIN);
    for (int i = 0; i < k; i++) {
        struct pb_shape s = ts[i]->shape;
        PB_CHECK(s.n == whole->shape.n && s.h == whole->shape.h && s.w == whole->shape.w &&
                 s.c > 0 && ts[i]->layout == PB_LAYOUT_PLAIN);
        c += s.c;
    }
    PB_CHECK(c == whole->shape.c);
}

/* Copies between whole and its k parts (to_whole: parts → whole), CAT_MAX parts a launch. */
static void copy_parts(struct pb_backend *be, const struct pb_tensor *whole, int k,
                       const struct pb_tensor *const *ts, bool to_whole)
{
    struct pb_shape ws = whole->shape;
    size_t hw = (size_t)ws.h * ws.w, whole_floats = (size_t)ws.c * hw, c0 = 0;
    for (int i0 = 0; i0 < k; i0 += CAT_MAX) {
        int m = k - i0 < CAT_MAX ? k - i0 : CAT_MAX;
        struct cat_parts parts;
        size_t most = 0;
        for (int p = 0; p < m; p++) {
            const struct pb_tensor *t = ts[i0 + p];
            parts.part[p] = t->data;
            parts.floats[p] = (size_t)t->shape.c * hw;
            parts.offset[p] = c0 * hw;
            c0 += (size_t)t->shape.c;
            most = parts.floats[p] > most ? parts.floats[p] : most;
        }
        size_t total = most * (size_t)ws.n;
        if (total == 0)
            continue;
        /* grid-stride: at most 4096 blocks per part */
        unsigned blocks = pb_cu_blocks(total);
        blocks = blocks > 4096 ? 4096 : blocks;
        concat_kernel<<<dim3(blocks, (unsigned)m), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(
            parts, whole->data, whole_floats, ws.n, to_whole);
        if (!PB_CUDA(be, cudaGetLastError()))
            return;
    }
}

/* Every tensor of this backend is plain. */
enum pb_layout pb_cuda_concat_layout(struct pb_backend *be, int k, const struct pb_tensor *const *ins)
{
    (void)be;
    (void)k;
    (void)ins;
    return PB_LAYOUT_PLAIN;
}

/* ins[i] [n, c_i, h, w] → out [n, Σ c_i, h, w], all plain */
void pb_cuda_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                    struct pb_tensor *out)
{
    if (!pb_cuda_begin(be))
        return;
    check_parts(out, k, ins);
    copy_parts(be, out, k, ins, true);
}

/* dout [n, Σ c_i, h, w] → douts[i] [n, c_i, h, w], all plain */
void pb_cuda_split(struct pb_backend *be, const struct pb_tensor *dout, int k,
                   struct pb_tensor *const *douts)
{
    if (!pb_cuda_begin(be))
        return;
    const struct pb_tensor *const *parts = (const struct pb_tensor *const *)douts;
    check_parts(dout, k, parts);
    copy_parts(be, dout, k, parts, false);
}
