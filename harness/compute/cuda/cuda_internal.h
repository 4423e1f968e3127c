/* harness/compute/cuda/cuda_internal.h — internals shared by the files of the CUDA
 * backend (cuBLAS, cuDNN, kernels of its own): the instance, status checks that fail the
 * instance with a message, and the launch helpers of the kernels in the .cu files, each
 * named after the backend op it serves. Included from .c files (gcc) and .cu files (nvcc). */
#ifndef PB_CUDA_INTERNAL_H
#define PB_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/kernel_fn.h"
#include "harness/compute/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pinned host buffer behind write_begin, released at the sync after its write_end. */
struct pb_cuda_staging {
    void *host;
    size_t bytes;
    bool busy;
    bool queued;   /* write_end enqueued its copy: free again at the next sync */
    bool pinned;   /* false: cudaHostAlloc failed (the instance failed), a malloc to write into */
};

struct pb_cuda_algo_cache;   /* cuda_conv.c: convolution algorithms chosen per shape */

struct pb_cuda {
    int device;
    cudaStream_t stream;       /* every op, upload, download and copy of the instance, in order */
    cublasHandle_t blas;       /* on `stream` */
    cudnnHandle_t dnn;         /* on `stream` */
    bool tf32;                 /* TF32 tensor cores allowed (--tf32) */
    bool deterministic;        /* deterministic cuDNN algorithms only (--deterministic) */
    struct pb_cuda_staging *staging;
    int nstaging, capstaging;
    void *workspace;           /* cuDNN's workspace (PB_MEM_SCRATCH), grown on demand */
    size_t workspace_bytes;
    struct pb_cuda_algo_cache *algos;
    /* ---- device-detected errors (cuda_flags.c; raised by the kernels of cuda_seq.cu,
     * cuda_loss.cu and cuda_attention.cu, read by pb_cuda_check_flags after the sync):
     * error_flag is PB_CUDA_FLAG_INTS ints of device memory (PB_MEM_SCRATCH), allocated at
     * the first kernel that may raise it; flag_seq numbers those kernels since the last
     * check, so that the first one to fail in stream order is the one reported;
     * flag_armed: such a kernel was enqueued since the last check. */
    int *error_flag;
    unsigned flag_seq;
    bool flag_armed;
    /* a fixed-size scratch for reductions of the kernels (softmax-xent's results) */
    void *scratch;
    size_t scratch_bytes;
    /* ---- cuda-core (cuda_backend.c, cuda_memory.c, cuda_gemm.c) ---- */
    void *blas_workspace;      /* cuBLAS's workspace (PB_MEM_SCRATCH), set on `blas` once */
    size_t blas_workspace_bytes;
    float *ones;               /* nones 1.0f (PB_MEM_SCRATCH): bias_add's and bias_grad's vector */
    size_t nones;
};

static inline struct pb_cuda *pb_cuda_of(struct pb_backend *be)
{
    return (struct pb_cuda *)be->impl;
}

/* Every op starts with `if (!pb_cuda_begin(be)) return;`: whether the instance still
 * runs ops (not failed). */
bool pb_cuda_begin(struct pb_backend *be);

/* A failed CUDA, cuBLAS or cuDNN call fails the instance with what was called, where and
 * the library's message (pb_backend_fail), and returns false. */
bool pb_cuda_ok(struct pb_backend *be, cudaError_t st, const char *what, const char *file, int line);
bool pb_cublas_ok(struct pb_backend *be, cublasStatus_t st, const char *what, const char *file,
                  int line);
bool pb_cudnn_ok(struct pb_backend *be, cudnnStatus_t st, const char *what, const char *file,
                 int line);
#define PB_CUDA(be, call) pb_cuda_ok((be), (call), #call, __FILE__, __LINE__)
#define PB_CUBLAS(be, call) pb_cublas_ok((be), (call), #call, __FILE__, __LINE__)
#define PB_CUDNN(be, call) pb_cudnn_ok((be), (call), #call, __FILE__, __LINE__)

/* cuDNN's workspace of at least `bytes` (NULL and the instance failed when out of
 * memory; NULL for 0 bytes). */
void *pb_cuda_workspace(struct pb_backend *be, size_t bytes);

/* ---- cuda-core: the instance's device, memory and staging (cuda_backend.c, cuda_memory.c) ---- */

/* Makes the calling thread's current device the instance's (cudaSetDevice, skipped when
 * the thread's last bind was to that device); false and the instance failed if it fails.
 * pb_cuda_begin binds too, so every op runs on its instance's device whatever thread
 * calls it. Every cudaSetDevice of the backend goes through here (the cache trusts it). */
bool pb_cuda_bind(struct pb_backend *be);

/* The ops of cuda_memory.c (contracts: backend.h). */
void *pb_cuda_alloc(struct pb_backend *be, size_t bytes);
void pb_cuda_free(struct pb_backend *be, void *p);
bool pb_cuda_shares_memory(const struct pb_backend *be, const struct pb_backend *other);
void pb_cuda_upload(struct pb_backend *be, void *dst, const void *src_host, size_t bytes);
void pb_cuda_download(struct pb_backend *be, void *dst_host, const void *src, size_t bytes);
void pb_cuda_copy(struct pb_backend *be, void *dst, const void *src, size_t bytes);
void pb_cuda_copy_peer(struct pb_backend *be, void *dst, struct pb_backend *src_be,
                       const void *src, size_t bytes);
void *pb_cuda_write_begin(struct pb_backend *be, void *dst, size_t bytes);
void pb_cuda_write_end(struct pb_backend *be, void *dst, void *host, size_t bytes);
/* At sync, once the stream is idle: the staging buffers whose write_end was enqueued
 * become free again (a malloc'd stand-in is freed). */
void pb_cuda_staging_release(struct pb_backend *be);
/* At destroy: every staging buffer back to the system. */
void pb_cuda_staging_destroy(struct pb_backend *be);

/* Tests only: the next n cudaMalloc and cudaHostAlloc calls of the process (alloc,
 * staging buffers, cuBLAS's workspace at creation) fail as out of memory, as if the
 * device or the pinned host memory were full. */
void pb_cuda_test_fail_allocs(int n);

/* ---- nccl: device send/recv between processes (cuda_nccl.c; contracts: backend.h's
 * comm_* ops). Failed NCCL calls fail the instance with ncclGetErrorString (PB_NCCL, in
 * cuda_nccl.c). A communicator is a struct of cuda_nccl.c: its ncclComm_t, a stream of
 * its own and the events that order it against the instance's stream. ---- */
int pb_cuda_comm_unique_id(struct pb_backend *be, void *id, struct pb_err *e);
void *pb_cuda_comm_init(struct pb_backend *be, const void *id, int nranks, int rank,
                        struct pb_err *e);
void *pb_cuda_comm_send(struct pb_backend *be, void *comm, const void *buf, size_t bytes, int peer);
void pb_cuda_comm_recv(struct pb_backend *be, void *comm, void *buf, size_t bytes, int peer);
bool pb_cuda_comm_test(struct pb_backend *be, void *ticket, bool wait);
void pb_cuda_comm_finish(struct pb_backend *be, void *comm);
/* NCCL's unique id into buf [cap] without an instance (ncclGetUniqueId needs no GPU):
 * its size (NCCL_UNIQUE_ID_BYTES), or 0 and e. */
size_t pb_cuda_nccl_unique_id(void *buf, size_t cap, struct pb_err *e);

/* ---- the ops, by file (their contracts: backend.h) ---- */

/* cuda_gemm.c: cuBLAS (FP32; TF32 math only with tf32); the bias ops as cuBLAS rank-1
 * update and matrix-vector product against the instance's ones */
void pb_cuda_gemm(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                  float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                  float *c, int ldc);
void pb_cuda_bias_add(struct pb_backend *be, float *y, const float *b, int n, int c);
void pb_cuda_bias_grad(struct pb_backend *be, const float *dy, float *db_acc, int n, int c);

/* cuda_conv.c: cuDNN convolutions, algorithms chosen once per shape and cached */
enum pb_layout pb_cuda_conv_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                   const struct pb_tensor *x);
void pb_cuda_conv_fwd(struct pb_backend *be, const struct pb_conv_desc *d, const struct pb_tensor *x,
                      const float *w, const float *b, struct pb_tensor *y);
void pb_cuda_conv_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                           const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);
void pb_cuda_conv_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                              const struct pb_tensor *x, const struct pb_tensor *dy, float *dw_acc,
                              float *db_acc);
void pb_cuda_algo_cache_destroy(struct pb_cuda_algo_cache *c);

/* cuda_pool.c: cuDNN pooling */
size_t pb_cuda_pool_workspace(struct pb_backend *be, const struct pb_pool_desc *d,
                              const struct pb_tensor *x, const struct pb_tensor *y);
void pb_cuda_pool_fwd(struct pb_backend *be, const struct pb_pool_desc *d, const struct pb_tensor *x,
                      struct pb_tensor *y, void *workspace);
void pb_cuda_pool_bwd(struct pb_backend *be, const struct pb_pool_desc *d, const struct pb_tensor *x,
                      const struct pb_tensor *y, const struct pb_tensor *dy, const void *workspace,
                      struct pb_tensor *dx);

/* cuda_bn.c (+ cuda_bn.cu): batch normalisation with the fused ReLU */
size_t pb_cuda_bn_aux_bytes(struct pb_backend *be, struct pb_shape x, bool relu);
void pb_cuda_bn_fwd_train(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                          const float *beta, float *run_mean, float *run_var, float momentum,
                          float eps, bool relu, struct pb_tensor *y, void *aux);
void pb_cuda_bn_fwd_infer(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                          const float *beta, const float *run_mean, const float *run_var, float eps,
                          bool relu, struct pb_tensor *y);
void pb_cuda_bn_bwd(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                    const float *gamma, const void *aux, float eps, bool relu, struct pb_tensor *dx,
                    float *dgamma_acc, float *dbeta_acc);

/* cuda_eltwise.cu: elementwise ops, dropout, fill */
void pb_cuda_fill(struct pb_backend *be, float *dst, float value, size_t n);
void pb_cuda_relu_fwd(struct pb_backend *be, const float *x, float *y, size_t n);
void pb_cuda_relu_bwd(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n);
void pb_cuda_add(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
void pb_cuda_add_relu(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
void pb_cuda_axpby(struct pb_backend *be, float alpha, const float *x, float beta, float *y,
                   size_t n);
void pb_cuda_dropout(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                     struct pb_rng_key key, uint64_t first);

/* cuda_concat.cu: channel concatenation and its backward (plain NCHW) */
enum pb_layout pb_cuda_concat_layout(struct pb_backend *be, int k, const struct pb_tensor *const *ins);
void pb_cuda_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                    struct pb_tensor *out);
void pb_cuda_split(struct pb_backend *be, const struct pb_tensor *dout, int k,
                   struct pb_tensor *const *douts);

/* cuda_loss.cu: softmax cross-entropy */
void pb_cuda_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels, int n,
                          int c, float eps_ls, int ignore, int grad_rows,
                          struct pb_xent_out *out, float *dlogits);

/* cuda_seq.cu: embedding and the sequence ops */
void pb_cuda_embedding_fwd(struct pb_backend *be, const float *tok, size_t n, const float *table,
                           int vocab, int dim, float *y);
void pb_cuda_embedding_bwd(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                           int vocab, int dim, int padding, float *dtable_acc);
void pb_cuda_seq_mean_fwd(struct pb_backend *be, const float *x, const int32_t *lengths, int batch,
                          int steps, int f, float *y);
void pb_cuda_seq_mean_bwd(struct pb_backend *be, const float *dy, const int32_t *lengths, int batch,
                          int steps, int f, float *dx);
void pb_cuda_seq_gather(struct pb_backend *be, const float *x, int x_stride, const int32_t *lengths,
                        int batch, int steps, int f, bool reverse, float *y, int y_stride);

/* ---- device-detected errors (cuda_flags.c) ----
 * A kernel that finds a bad input (a token outside the vocabulary, a length outside
 * [1, steps] or an attention's outside [1, tk], a label outside [0, C)) cannot fail the
 * instance itself: it raises the instance's flag (cuda_kernels.cuh's pb_cu_raise), and
 * the backend's sync calls pb_cuda_check_flags, which reads it and fails the instance
 * with the message the CPU backend gives, naming the first bad element of the first
 * failing op. */
#define PB_CUDA_FLAG_INTS 8
enum pb_cuda_flag_code {
    PB_CUDA_FLAG_NONE,
    PB_CUDA_FLAG_TOKEN,       /* embedding: value = the token's float bits, limit = vocab */
    PB_CUDA_FLAG_SEQ_MEAN,    /* seq_mean: value = the length, limit = steps */
    PB_CUDA_FLAG_SEQ_GATHER,  /* seq_gather: value = the length, limit = steps */
    PB_CUDA_FLAG_LABEL,       /* softmax_xent: value = the label, limit = C */
    PB_CUDA_FLAG_ATTN_LEN,    /* attention: value = the source's length, limit = tk */
};
/* What a kernel that may raise the flag is launched with. */
struct pb_cuda_flag_ref {
    int *flag;      /* the instance's error_flag */
    unsigned seq;   /* this launch's number (never 0) */
};
/* The flag's ints: [0] the seq of the first launch that raised it (0: none), [1] its code,
 * [2] its limit, [4..5] the largest key of its raises (64 bits). A raise at element `index`
 * with `value` (32 bits) has the key below: the largest is the lowest index's, so the
 * report does not depend on which thread ran first. */
PB_KERNEL uint64_t pb_cuda_flag_key(unsigned index, uint32_t value)
{
    return ~(((uint64_t)index << 32) | value);
}
/* The message a raised flag f [PB_CUDA_FLAG_INTS] (downloaded) stands for, the CPU
 * backend's for the same input ("embedding: token 7 (position 3) is not ..."); false
 * when f is not raised. */
bool pb_cuda_flag_message(const int *f, char *msg, size_t cap);
/* The flag for the next launch (allocated on first use); false, the instance failed,
 * when it cannot be allocated. */
bool pb_cuda_flag_arm(struct pb_backend *be, struct pb_cuda_flag_ref *ref);
/* Called by the backend's sync once the stream is idle: whether no kernel raised the
 * flag since the last check; when one did, fails the instance ("embedding: token 7 ..."),
 * clears the flag and returns false. Returns !failed at once when nothing was armed. */
bool pb_cuda_check_flags(struct pb_backend *be);
/* Frees the flag (the backend's destroy, before pb_backend_finish_common). */
void pb_cuda_flags_release(struct pb_backend *be);

/* cuda_optim.cu: the optimizer steps and predictions, one kernel per flat buffer */
void pb_cuda_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a);
void pb_cuda_predict(struct pb_backend *be, const struct pb_predict_args *a);

/* cuda_lstm.c (+ cuda_lstm.cu) */
size_t pb_cuda_lstm_workspace(struct pb_backend *be, const struct pb_lstm_desc *d);
void pb_cuda_lstm_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, float *y, void *ws, const struct pb_lstm_states *st);
void pb_cuda_lstm_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, const float *y, const float *dy, const void *ws, float *dx,
                      float *dw_acc);
size_t pb_cuda_lstm_bwd_keep(struct pb_backend *be, const struct pb_lstm_desc *d);
void pb_cuda_lstm_bwd_data(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                           const float *dy, const void *ws, float *dx, void *keep);
void pb_cuda_lstm_bwd_weights(struct pb_backend *be, const struct pb_lstm_desc *d,
                              const float *x, const float *y, const void *keep, float *dw_acc);

/* cuda_attention.c (+ cuda_attention.cu) */
size_t pb_cuda_attn_workspace(struct pb_backend *be, const struct pb_attn_desc *d);
void pb_cuda_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                      const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws);
void pb_cuda_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                      const float *k, const int32_t *lengths, const float *w, const void *ws,
                      const float *dctx, float *dq, float *dk, float *dw_acc);
size_t pb_cuda_attn_bwd_keep(struct pb_backend *be, const struct pb_attn_desc *d);
void pb_cuda_attn_bwd_data(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                           const int32_t *lengths, const float *w, const void *ws,
                           const float *dctx, float *dq, float *dk, void *keep);
void pb_cuda_attn_bwd_weights(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *q, const float *k, const void *keep, float *dw_acc);
void pb_cuda_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                          float *a);
void pb_cuda_attn_project_keys(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                               const float *w, float *pk);
void pb_cuda_attn_fwd_projected(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                                const float *k, const float *pk, const int32_t *lengths,
                                const float *w, float *ctx, float *a);

#ifdef __cplusplus
}
#endif

#endif
