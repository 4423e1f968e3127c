/* harness/compute/cuda/cuda_plan.c — the cuDNN descriptors of a convolution, a pooling
 * and a batch normalisation for one shape, and the output shape cuDNN computes from
 * them, checked against the caller's (shapes as harness/model/layers/ infers them;
 * cpu_pool.c's pool_out is the reference of the pooling sizes). Host only: cuDNN's
 * descriptor calls run without a device (shared/CUDA.md §3). */
#include "harness/compute/cuda/cuda_plan.h"

#include <string.h>

/* the first failed status of a chain of cuDNN calls */
#define TRY(call)                                                                              \
    do {                                                                                       \
        cudnnStatus_t st_ = (call);                                                            \
        if (st_ != CUDNN_STATUS_SUCCESS)                                                       \
            return st_;                                                                        \
    } while (0)

/* A dense NCHW float descriptor of s. */
static cudnnStatus_t tensor(cudnnTensorDescriptor_t *t, struct pb_shape s)
{
    TRY(cudnnCreateTensorDescriptor(t));
    return cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w);
}

static void destroy_tensor(cudnnTensorDescriptor_t *t)
{
    if (*t)
        cudnnDestroyTensorDescriptor(*t);
    *t = NULL;
}

static cudnnStatus_t conv_build(struct pb_cuda_conv_plan *p, const struct pb_conv_desc *d,
                                struct pb_shape x, struct pb_shape y)
{
    if (x.c != d->cin)
        return CUDNN_STATUS_BAD_PARAM;
    TRY(tensor(&p->x, x));
    TRY(cudnnCreateFilterDescriptor(&p->w));
    TRY(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->cout, d->cin,
                                   d->kh, d->kw));
    TRY(cudnnCreateConvolutionDescriptor(&p->conv));
    TRY(cudnnSetConvolution2dDescriptor(p->conv, d->ph, d->pw, d->sh, d->sw, 1, 1,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TRY(cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH));
    struct pb_shape o;
    TRY(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &o.n, &o.c, &o.h, &o.w));
    p->y_cudnn = o;
    if (!pb_shape_eq(o, y))
        return CUDNN_STATUS_BAD_PARAM;
    TRY(tensor(&p->y, y));
    return tensor(&p->bias, (struct pb_shape){1, d->cout, 1, 1});
}

cudnnStatus_t pb_cuda_conv_plan(struct pb_cuda_conv_plan *p, const struct pb_conv_desc *d,
                                struct pb_shape x, struct pb_shape y)
{
    memset(p, 0, sizeof *p);
    cudnnStatus_t st = conv_build(p, d, x, y);
    if (st != CUDNN_STATUS_SUCCESS) {
        struct pb_shape seen = p->y_cudnn;
        pb_cuda_conv_plan_destroy(p);
        p->y_cudnn = seen;
    }
    return st;
}

void pb_cuda_conv_plan_destroy(struct pb_cuda_conv_plan *p)
{
    destroy_tensor(&p->x);
    destroy_tensor(&p->y);
    destroy_tensor(&p->bias);
    if (p->w)
        cudnnDestroyFilterDescriptor(p->w);
    if (p->conv)
        cudnnDestroyConvolutionDescriptor(p->conv);
    memset(p, 0, sizeof *p);
}

/* PyTorch's pooling output size along one axis (cpu_pool.c's pool_out; 0 when the
 * window does not fit): with ceil_mode the last window must start inside the input or
 * the left padding. */
static int torch_out(int in, int k, int s, int p, bool ceil_mode)
{
    int span = in + 2 * p - k;
    if (span < 0 || s < 1)
        return 0;
    int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p)
        out--;
    return out;
}

/* The rows (columns) appended to x so that cuDNN's size, (in + e + 2p − k) / s + 1
 * rounded down, is PyTorch's `out`: 0 unless ceil_mode adds a window. */
static int extra(int in, int out, int k, int s, int p)
{
    int e = (out - 1) * s + k - (in + 2 * p);
    return e > 0 ? e : 0;
}

static cudnnStatus_t pool_build(struct pb_cuda_pool_plan *p, const struct pb_pool_desc *d,
                                struct pb_shape x, struct pb_shape y, bool deterministic)
{
    int oh = torch_out(x.h, d->kh, d->sh, d->ph, d->ceil_mode);
    int ow = torch_out(x.w, d->kw, d->sw, d->pw, d->ceil_mode);
    if (oh < 1 || ow < 1)
        return CUDNN_STATUS_BAD_PARAM;
    int eh = extra(x.h, oh, d->kh, d->sh, d->ph), ew = extra(x.w, ow, d->kw, d->sw, d->pw);
    p->padded = eh > 0 || ew > 0;
    p->rescale = p->padded && d->kind == PB_POOL_AVG;
    cudnnPoolingMode_t mode;
    if (d->kind == PB_POOL_MAX)
        mode = deterministic ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_MAX;
    else if (d->exclude_pad && !p->padded)
        mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    else
        mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    TRY(cudnnCreatePoolingDescriptor(&p->pool));
    TRY(cudnnSetPooling2dDescriptor(p->pool, mode, CUDNN_PROPAGATE_NAN, d->kh, d->kw, d->ph,
                                    d->pw, d->sh, d->sw));
    TRY(tensor(&p->x, x));
    cudnnTensorDescriptor_t in = p->x;
    if (p->padded) {
        struct pb_shape s = {x.n, x.c, x.h + eh, x.w + ew};
        p->xp_shape = s;
        TRY(tensor(&p->xp, s));
        TRY(cudnnCreateTensorDescriptor(&p->xin));
        TRY(cudnnSetTensor4dDescriptorEx(p->xin, CUDNN_DATA_FLOAT, x.n, x.c, x.h, x.w,
                                         s.c * s.h * s.w, s.h * s.w, s.w, 1));
        in = p->xp;
    }
    struct pb_shape o;
    TRY(cudnnGetPooling2dForwardOutputDim(p->pool, in, &o.n, &o.c, &o.h, &o.w));
    p->y_cudnn = o;
    if (!pb_shape_eq(o, y) || o.h != oh || o.w != ow)
        return CUDNN_STATUS_BAD_PARAM;
    return tensor(&p->y, y);
}

cudnnStatus_t pb_cuda_pool_plan(struct pb_cuda_pool_plan *p, const struct pb_pool_desc *d,
                                struct pb_shape x, struct pb_shape y, bool deterministic)
{
    memset(p, 0, sizeof *p);
    cudnnStatus_t st = pool_build(p, d, x, y, deterministic);
    if (st != CUDNN_STATUS_SUCCESS) {
        struct pb_shape seen = p->y_cudnn;
        pb_cuda_pool_plan_destroy(p);
        p->y_cudnn = seen;
    }
    return st;
}

void pb_cuda_pool_plan_destroy(struct pb_cuda_pool_plan *p)
{
    destroy_tensor(&p->x);
    destroy_tensor(&p->y);
    destroy_tensor(&p->xp);
    destroy_tensor(&p->xin);
    if (p->pool)
        cudnnDestroyPoolingDescriptor(p->pool);
    memset(p, 0, sizeof *p);
}

cudnnStatus_t pb_cuda_bn_plan(struct pb_cuda_bn_plan *p, struct pb_shape x)
{
    memset(p, 0, sizeof *p);
    cudnnStatus_t st = tensor(&p->x, x);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnCreateTensorDescriptor(&p->param);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnDeriveBNTensorDescriptor(p->param, p->x, CUDNN_BATCHNORM_SPATIAL);
    if (st != CUDNN_STATUS_SUCCESS)
        pb_cuda_bn_plan_destroy(p);
    return st;
}

void pb_cuda_bn_plan_destroy(struct pb_cuda_bn_plan *p)
{
    destroy_tensor(&p->x);
    destroy_tensor(&p->param);
}
