/* harness/compute/cuda/cuda_backend.c — the CUDA backend instance: the device probe and
 * creation (one non-blocking stream, cuBLAS and cuDNN handles on it), sync, bind, fences
 * as CUDA events, supports_op from the table, plain layouts and the ops table. Its
 * reference is harness/compute/cpu/cpu_backend.c (the same contracts, backend.h). */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/compute/cuda/cuda_backend.h"
#include "harness/compute/cuda/cuda_internal.h"

/* The device the calling thread last bound (cudaSetDevice is per thread); -1: none yet. */
static _Thread_local int bound_device = -1;

bool pb_cuda_bind(struct pb_backend *be)
{
    int dev = pb_cuda_of(be)->device;
    if (bound_device == dev)
        return true;
    if (!PB_CUDA(be, cudaSetDevice(dev)))
        return false;
    bound_device = dev;
    return true;
}

static void cuda_bind(struct pb_backend *be)
{
    pb_cuda_bind(be);
}

/* Waits for the stream; an error of an op that ran on the device (an illegal address, a
 * kernel's trap) is returned here and becomes the instance's. Staging buffers whose copies
 * were enqueued are free again afterwards. */
static void cuda_sync(struct pb_backend *be)
{
    if (PB_CUDA(be, cudaStreamSynchronize(pb_cuda_of(be)->stream)))
        pb_cuda_check_flags(be);  /* bad inputs the kernels found surface here */
    pb_cuda_staging_release(be);
}

/* An event after every op enqueued on be so far (no timing: the cheapest kind). */
static void *cuda_fence_record(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    cudaEvent_t ev = NULL;
    if (!pb_cuda_bind(be) ||
        !PB_CUDA(be, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)))
        return NULL;
    if (!PB_CUDA(be, cudaEventRecord(ev, cu->stream))) {
        cudaEventDestroy(ev);
        return NULL;
    }
    return ev;
}

/* be's later ops wait for the fence of another instance on the same device (a wait on the
 * device, not on the host); the event is then released (CUDA frees it once it completed). */
static void cuda_fence_wait(struct pb_backend *be, void *fence)
{
    cudaEvent_t ev = fence;
    if (pb_cuda_bind(be))
        PB_CUDA(be, cudaStreamWaitEvent(pb_cuda_of(be)->stream, ev, 0));
    PB_CUDA(be, cudaEventDestroy(ev));
}

/* Whether every entry point of the table that op needs exists: the one map from the ops of
 * enum pb_backend_op to the table's functions. */
static bool table_has(const struct pb_backend_ops *o, enum pb_backend_op op)
{
    switch (op) {
    case PB_BOP_GEMM: return o->gemm;
    case PB_BOP_BIAS: return o->bias_add && o->bias_grad;
    case PB_BOP_CONV:
        return o->conv_layout && o->conv_fwd && o->conv_bwd_data && o->conv_bwd_weights;
    case PB_BOP_POOL_MAX:
    case PB_BOP_POOL_AVG: return o->pool_workspace && o->pool_fwd && o->pool_bwd;
    case PB_BOP_BATCHNORM:
        return o->bn_aux_bytes && o->bn_fwd_train && o->bn_fwd_infer && o->bn_bwd;
    case PB_BOP_RELU: return o->relu_fwd && o->relu_bwd;
    case PB_BOP_ADD: return o->add && o->add_relu;
    case PB_BOP_DROPOUT: return o->dropout;
    case PB_BOP_CONCAT: return o->concat_layout && o->concat && o->split;
    case PB_BOP_SOFTMAX_XENT: return o->softmax_xent;
    case PB_BOP_OPTIM_STEP: return o->optim_step;
    case PB_BOP_PREDICT: return o->predict;
    case PB_BOP_EMBEDDING: return o->embedding_fwd && o->embedding_bwd;
    case PB_BOP_LSTM:
        return o->lstm_workspace && o->lstm_fwd && o->lstm_bwd && o->lstm_bwd_keep &&
               o->lstm_bwd_data && o->lstm_bwd_weights;
    case PB_BOP_SEQ_MEAN: return o->seq_mean_fwd && o->seq_mean_bwd;
    case PB_BOP_SEQ_GATHER: return o->seq_gather;
    case PB_BOP_ATTENTION:
        return o->attn_workspace && o->attn_fwd && o->attn_bwd && o->attn_bwd_keep &&
               o->attn_bwd_data && o->attn_bwd_weights && o->attn_weights &&
               o->attn_project_keys && o->attn_fwd_projected;
    case PB_BOP_NOPS: break;
    }
    return false;
}

static bool cuda_supports_op(struct pb_backend *be, enum pb_backend_op op)
{
    return table_has(be->ops, op);
}

/* Every tensor of this backend is plain NCHW (cuDNN's NCHW descriptors). */
static size_t cuda_layout_floats(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    (void)be;
    PB_CHECK(l == PB_LAYOUT_PLAIN);
    return pb_shape_count(s);
}

/* plain to plain: a device copy */
static void cuda_reorder(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst)
{
    PB_CHECK(src->layout == PB_LAYOUT_PLAIN && dst->layout == PB_LAYOUT_PLAIN);
    PB_CHECK(pb_shape_count(src->shape) == pb_shape_count(dst->shape));
    if (src->data != dst->data)
        pb_cuda_copy(be, dst->data, src->data, pb_shape_count(src->shape) * sizeof(float));
}

/* Waits for the stream, releases the handles, then the memory: the blocks of the instance
 * (its own and those other instances freed into its cache, after their fences) and the
 * staging pool. */
static void cuda_destroy(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (cu->stream) {
        pb_cuda_bind(be);
        cudaStreamSynchronize(cu->stream);
    }
    pb_cuda_algo_cache_destroy(cu->algos);
    if (cu->dnn)
        cudnnDestroy(cu->dnn);
    if (cu->blas)
        cublasDestroy(cu->blas);
    pb_backend_free(be, cu->workspace);
    pb_backend_free(be, cu->scratch);
    pb_backend_free(be, cu->ones);
    pb_backend_free(be, cu->blas_workspace);
    pb_cuda_flags_release(be);
    pb_backend_finish_common(be);
    pb_cuda_staging_destroy(be);
    if (cu->stream)
        cudaStreamDestroy(cu->stream);
    free(cu);
    free(be);
}

/* A timed event after every op enqueued so far: an op's time on the device. */
static void *cuda_timer_mark(struct pb_backend *be)
{
    cudaEvent_t ev = NULL;
    if (!pb_cuda_bind(be) || !PB_CUDA(be, cudaEventCreate(&ev)))
        return NULL;
    if (!PB_CUDA(be, cudaEventRecord(ev, pb_cuda_of(be)->stream))) {
        cudaEventDestroy(ev);
        return NULL;
    }
    return ev;
}

static double cuda_timer_elapsed(struct pb_backend *be, void *from, void *to)
{
    float ms = 0.0f;
    if (from != to)
        PB_CUDA(be, cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to));
    cudaEventDestroy((cudaEvent_t)from);
    if (to != from)
        cudaEventDestroy((cudaEvent_t)to);
    return 1e-3 * (double)ms;
}

static const struct pb_backend_ops cuda_ops = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .sync = cuda_sync,
    .bind = cuda_bind,
    .fence_record = cuda_fence_record,
    .fence_wait = cuda_fence_wait,
    .timer_mark = cuda_timer_mark,
    .timer_elapsed = cuda_timer_elapsed,
    .supports_op = cuda_supports_op,
    .alloc = pb_cuda_alloc,
    .free = pb_cuda_free,
    .shares_memory = pb_cuda_shares_memory,
    .host_visible = false,
    .upload = pb_cuda_upload,
    .write_begin = pb_cuda_write_begin,
    .write_end = pb_cuda_write_end,
    .download = pb_cuda_download,
    .copy = pb_cuda_copy,
    .copy_peer = pb_cuda_copy_peer,
    .fill = pb_cuda_fill,
    .layout_floats = cuda_layout_floats,
    .reorder = cuda_reorder,
    .gemm = pb_cuda_gemm,
    .bias_add = pb_cuda_bias_add,
    .bias_grad = pb_cuda_bias_grad,
    .conv_layout = pb_cuda_conv_layout,
    .conv_fwd = pb_cuda_conv_fwd,
    .conv_bwd_data = pb_cuda_conv_bwd_data,
    .conv_bwd_weights = pb_cuda_conv_bwd_weights,
    .pool_workspace = pb_cuda_pool_workspace,
    .pool_fwd = pb_cuda_pool_fwd,
    .pool_bwd = pb_cuda_pool_bwd,
    .bn_aux_bytes = pb_cuda_bn_aux_bytes,
    .bn_fwd_train = pb_cuda_bn_fwd_train,
    .bn_fwd_infer = pb_cuda_bn_fwd_infer,
    .bn_bwd = pb_cuda_bn_bwd,
    .relu_fwd = pb_cuda_relu_fwd,
    .relu_bwd = pb_cuda_relu_bwd,
    .add = pb_cuda_add,
    .add_relu = pb_cuda_add_relu,
    .axpby = pb_cuda_axpby,
    .dropout = pb_cuda_dropout,
    .concat_layout = pb_cuda_concat_layout,
    .concat = pb_cuda_concat,
    .split = pb_cuda_split,
    .softmax_xent = pb_cuda_softmax_xent,
    .embedding_fwd = pb_cuda_embedding_fwd,
    .embedding_bwd = pb_cuda_embedding_bwd,
    .lstm_workspace = pb_cuda_lstm_workspace,
    .lstm_fwd = pb_cuda_lstm_fwd,
    .lstm_bwd = pb_cuda_lstm_bwd,
    .lstm_bwd_keep = pb_cuda_lstm_bwd_keep,
    .lstm_bwd_data = pb_cuda_lstm_bwd_data,
    .lstm_bwd_weights = pb_cuda_lstm_bwd_weights,
    .attn_workspace = pb_cuda_attn_workspace,
    .attn_fwd = pb_cuda_attn_fwd,
    .attn_bwd = pb_cuda_attn_bwd,
    .attn_bwd_keep = pb_cuda_attn_bwd_keep,
    .attn_bwd_data = pb_cuda_attn_bwd_data,
    .attn_bwd_weights = pb_cuda_attn_bwd_weights,
    .attn_weights = pb_cuda_attn_weights,
    .attn_project_keys = pb_cuda_attn_project_keys,
    .attn_fwd_projected = pb_cuda_attn_fwd_projected,
    .seq_mean_fwd = pb_cuda_seq_mean_fwd,
    .seq_mean_bwd = pb_cuda_seq_mean_bwd,
    .seq_gather = pb_cuda_seq_gather,
    .optim_step = pb_cuda_optim_step,
    .predict = pb_cuda_predict,
    .comm_id_bytes = NCCL_UNIQUE_ID_BYTES,
    .comm_unique_id = pb_cuda_comm_unique_id,
    .comm_init = pb_cuda_comm_init,
    .comm_send = pb_cuda_comm_send,
    .comm_recv = pb_cuda_comm_recv,
    .comm_test = pb_cuda_comm_test,
    .comm_finish = pb_cuda_comm_finish,
};

/* "CUDA 13.0 (driver 13.0); cuBLAS 13.1.0; cuDNN 9.19.0; NCCL 2.28.9": the libraries the
 * process loaded, asked at run time (the driver only where one is installed). */
void pb_backend_cuda_libraries(char *buf, size_t cap)
{
    int rt = 0, drv = 0, bmaj = 0, bmin = 0, bpat = 0, nccl = 0;
    cudaRuntimeGetVersion(&rt);
    if (cudaDriverGetVersion(&drv) != cudaSuccess)
        drv = 0;
    cublasGetProperty(MAJOR_VERSION, &bmaj);
    cublasGetProperty(MINOR_VERSION, &bmin);
    cublasGetProperty(PATCH_LEVEL, &bpat);
    size_t dnn = cudnnGetVersion();
    ncclGetVersion(&nccl);
    char driver[48] = "";
    if (drv > 0)
        snprintf(driver, sizeof driver, " (driver %d.%d)", drv / 1000, drv % 1000 / 10);
    snprintf(buf, cap, "CUDA %d.%d%s; cuBLAS %d.%d.%d; cuDNN %zu.%zu.%zu; NCCL %d.%d.%d",
             rt / 1000, rt % 1000 / 10, driver, bmaj, bmin, bpat, dnn / 10000, dnn % 10000 / 100,
             dnn % 100, nccl / 10000, nccl % 10000 / 100, nccl % 100);
}

/* The number of devices, or -1 and e saying what is wrong and what to do instead. */
static int probe_devices(struct pb_err *e)
{
    int n = 0;
    cudaError_t st = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (st == cudaErrorInsufficientDriver && access("/dev/nvidiactl", F_OK) == 0) {
        int drv = 0, rt = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        return pb_err_set(e, "cuda backend: the NVIDIA driver here (CUDA %d.%d) is older than "
                             "this build's CUDA %d.%d runtime needs (cudaGetDeviceCount: %s); "
                             "update the driver (CUDA 13 needs 580 or newer) or run with "
                             "--backend cpu",
                          drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10,
                          cudaGetErrorString(st));
    }
    if (st == cudaErrorInsufficientDriver || st == cudaErrorNoDevice ||
        st == cudaErrorStubLibrary || (st == cudaSuccess && n == 0))
        return pb_err_set(e, "cuda backend: no NVIDIA GPU or driver is usable here "
                             "(cudaGetDeviceCount: %s); run with --backend cpu",
                          st == cudaSuccess ? "no devices" : cudaGetErrorString(st));
    if (st != cudaSuccess)
        return pb_err_set(e, "cuda backend: cudaGetDeviceCount failed: %s (%s); run with "
                             "--backend cpu", cudaGetErrorString(st), cudaGetErrorName(st));
    return n;
}

/* Checks device d exists and is supported; its compute capability (major * 10 + minor). */
static int check_device(int d, int n, struct pb_err *e)
{
    if (d < 0 || d >= n)
        return pb_err_set(e, "--devices: the cuda backend has %d device%s, 0..%d (got %d)", n,
                          n == 1 ? "" : "s", n - 1, d);
    struct cudaDeviceProp prop;
    cudaError_t st = cudaGetDeviceProperties(&prop, d);
    if (st != cudaSuccess)
        return pb_err_set(e, "cuda backend: cudaGetDeviceProperties(%d) failed: %s", d,
                          cudaGetErrorString(st));
    if (prop.major * 10 + prop.minor < 75)
        return pb_err_set(e, "cuda backend: device %d (%s) has compute capability %d.%d; CUDA 13 "
                             "and this backend need 7.5 or newer; run with --backend cpu",
                          d, prop.name, prop.major, prop.minor);
    return prop.major * 10 + prop.minor;
}

/* cuBLAS on the stream: FP32 math unless tf32 (set explicitly, so a default that changes
 * cannot turn TF32 on), scalars from the host, no atomics (its reductions then do not
 * depend on timing), and a workspace of its own from the allocator (32 MiB on sm_90 and
 * newer, 4 MiB before, as the cuBLAS documentation recommends): accounted as scratch, and
 * with one handle per stream cuBLAS's results do not depend on a shared workspace pool
 * (CUBLAS_WORKSPACE_CONFIG, process-wide, is then not needed for determinism). */
static bool setup_blas(struct pb_backend *be, int cc, struct pb_err *e)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (!PB_CUBLAS(be, cublasCreate(&cu->blas)) ||
        !PB_CUBLAS(be, cublasSetStream(cu->blas, cu->stream)) ||
        !PB_CUBLAS(be, cublasSetMathMode(cu->blas, cu->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                           : CUBLAS_DEFAULT_MATH)) ||
        !PB_CUBLAS(be, cublasSetPointerMode(cu->blas, CUBLAS_POINTER_MODE_HOST)) ||
        !PB_CUBLAS(be, cublasSetAtomicsMode(cu->blas, CUBLAS_ATOMICS_NOT_ALLOWED)))
        return false;
    size_t bytes = (size_t)(cc >= 90 ? 32 : 4) << 20;
    cu->blas_workspace = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, e);
    if (!cu->blas_workspace)
        return pb_err_prefix(e, "cuda backend, device %d: cuBLAS's workspace: ", cu->device), false;
    cu->blas_workspace_bytes = bytes;
    return PB_CUBLAS(be, cublasSetWorkspace(cu->blas, cu->blas_workspace, bytes));
}

struct pb_backend *pb_backend_cuda_create(const struct pb_backend_cfg *c, struct pb_err *e)
{
    int n = probe_devices(e);
    if (n < 0)
        return NULL;
    int cc = check_device(c->device, n, e);
    if (cc < 0)
        return NULL;
    struct pb_cuda *cu = pb_xcalloc(1, sizeof *cu);
    cu->device = c->device;
    cu->tf32 = c->tf32;
    cu->deterministic = c->deterministic;
    struct pb_backend *be = pb_xcalloc(1, sizeof *be);
    pb_backend_init_common(be, &cuda_ops, cu, c->device);
    bool ok = pb_cuda_bind(be) &&
              PB_CUDA(be, cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking));
    ok = ok && setup_blas(be, cc, e);
    ok = ok && PB_CUDNN(be, cudnnCreate(&cu->dnn)) &&
         PB_CUDNN(be, cudnnSetStream(cu->dnn, cu->stream));
    if (!ok) {
        if (be->failed)
            *e = be->error;
        cuda_destroy(be);
        return NULL;
    }
    return be;
}
