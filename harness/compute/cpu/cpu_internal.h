/* harness/compute/cpu/cpu_internal.h — internals shared by the files of the oneDNN CPU
 * backend (design §2.5): the instance, oneDNN status checks, primitives with
 * their scratchpads, the per-instance primitive cache and the layout helpers. */
#ifndef PB_CPU_INTERNAL_H
#define PB_CPU_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stddef.h>

#include "harness/compute/backend.h"

/* ---- the layouts this backend stores tensors in (tensor.h: private to it) ---- */

/* nChw8c: channels in blocks of 8, zero-padded (AVX2) */
#define PB_LAYOUT_NCHW8C ((enum pb_layout)1)
/* nChw16c: blocks of 16, zero-padded (AVX-512) */
#define PB_LAYOUT_NCHW16C ((enum pb_layout)2)

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

/* ---- the instance ---- */

struct pb_cpu_entry;

struct pb_cpu_cache {
    struct pb_cpu_entry **buckets;
    size_t nbuckets, count;
};

struct pb_cpu {
    int nthreads;                /* the cores this instance splits its kernels over */
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr;  /* user-managed scratchpad */
    struct pb_cpu_cache cache;
};

static inline struct pb_cpu *pb_cpu_of(struct pb_backend *be)
{
    return (struct pb_cpu *)be->impl;
}

/* Every op starts with `if (!pb_cpu_begin(be)) return;`: sets the calling thread's
 * OpenMP team size to the instance's thread count (oneDNN reads it when it creates
 * and runs primitives) and says whether the instance still runs ops (not failed). */
bool pb_cpu_begin(struct pb_backend *be);

/* A oneDNN status other than success is an internal error: abort with file:line. */
#define PB_DNNL(call)                                                                  \
    do {                                                                               \
        dnnl_status_t pb_st_ = (call);                                                 \
        if (pb_st_ != dnnl_success)                                                    \
            pb_cpu_die(__FILE__, __LINE__, #call, pb_st_);                             \
    } while (0)
_Noreturn void pb_cpu_die(const char *file, int line, const char *what, dnnl_status_t st);

/* Scratch device memory (accounted as PB_MEM_SCRATCH); out of memory fails the
 * instance (pb_backend_fail) and gives NULL, as does bytes = 0. An op that created
 * buffers checks be->failed before it uses them. */
void *pb_cpu_scratch(struct pb_backend *be, size_t bytes);
void pb_cpu_scratch_free(struct pb_backend *be, void *p);

/* ---- primitives (cpu_prim.c) ---- */

struct pb_cpu_prim {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    void *scratchpad;  /* user scratchpad of this primitive, NULL when none needed */
};

/* An argument of an execution: its data in the format the primitive takes for it. */
struct pb_cpu_arg {
    int arg;  /* DNNL_ARG_* */
    const void *ptr;
};

/* Creates the primitive of an op descriptor (hint: forward pd of a backward op). */
void pb_cpu_prim_create(struct pb_backend *be, struct pb_cpu_prim *p, const_dnnl_op_desc_t desc,
                        const_dnnl_primitive_desc_t hint);
/* Completes p from a primitive descriptor it takes ownership of. */
void pb_cpu_prim_from_pd(struct pb_backend *be, struct pb_cpu_prim *p, dnnl_primitive_desc_t pd);
void pb_cpu_prim_destroy(struct pb_backend *be, struct pb_cpu_prim *p);
const dnnl_memory_desc_t *pb_cpu_prim_md(const struct pb_cpu_prim *p, dnnl_query_t what, int index);
/* Runs p on the given arguments (the scratchpad is added) and waits for it. */
void pb_cpu_prim_exec(struct pb_backend *be, const struct pb_cpu_prim *p, int nargs,
                      const struct pb_cpu_arg *args);

/* ---- the primitive cache (cpu_primcache.c) ---- */

enum pb_cpu_op {
    PB_CPU_OP_REORDER = 1,
    PB_CPU_OP_CONV_FWD,
    PB_CPU_OP_CONV_BWD_DATA,
    PB_CPU_OP_CONV_BWD_WEIGHTS,
    PB_CPU_OP_CONV_S2D,
    PB_CPU_OP_CONV_GEMM,
    PB_CPU_OP_POOL_FWD,
    PB_CPU_OP_POOL_BWD,
    PB_CPU_OP_BN_FWD,
    PB_CPU_OP_BN_BWD,
    PB_CPU_OP_BN_WS,
    PB_CPU_OP_CONCAT,
    PB_CPU_OP_SPLIT,
    PB_CPU_OP_LSTM_FWD,
    PB_CPU_OP_LSTM_BWD,
};

#define PB_CPU_KEY_INTS 72

/* The op and its shapes, layouts and parameters; unused ints stay zero. An op whose
 * parameters do not fit (a concat of very many tensors) is not cached. */
struct pb_cpu_key {
    int op;
    int v[PB_CPU_KEY_INTS];
};

typedef void (*pb_cpu_drop_fn)(struct pb_backend *be, void *val);

void pb_cpu_cache_init(struct pb_cpu_cache *c);
/* The value stored under k, or NULL. */
void *pb_cpu_cache_get(struct pb_backend *be, const struct pb_cpu_key *k);
/* Stores val under k (not present yet); drop frees it when the backend is destroyed. */
void pb_cpu_cache_put(struct pb_backend *be, const struct pb_cpu_key *k, void *val,
                      pb_cpu_drop_fn drop);
void pb_cpu_cache_finish(struct pb_backend *be);

/* ---- layouts and transfers (cpu_layout.c) ---- */

/* The oneDNN descriptor of a tensor of this shape and layout (nchw, nChw8c, nChw16c). */
dnnl_memory_desc_t pb_cpu_md(struct pb_shape s, enum pb_layout l);
/* A 1-D [n] descriptor; a 4-D one of a format tag (dnnl_format_tag_any included). */
dnnl_memory_desc_t pb_cpu_md_1d(int n);
/* The blocked layout this machine's oneDNN kernels run on: nChw16c with AVX-512, else
 * nChw8c (oneDNN 2.6 has no AVX2 kernels for nChw16c and falls back to its reference
 * code there: batch norm 30× slower). */
enum pb_layout pb_cpu_native_layout(void);
dnnl_memory_desc_t pb_cpu_md_tag(int d0, int d1, int d2, int d3, dnnl_format_tag_t tag);

/* A reorder primitive src → dst; sum: onto what dst holds (dst = src + dst). */
void pb_cpu_reorder_create(struct pb_backend *be, struct pb_cpu_prim *p,
                           const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst, bool sum);

/* A reorder between the layout a caller uses and the one a primitive wants, with a
 * scratch buffer in the primitive's format; inactive (no copy) when they are equal. */
struct pb_cpu_xfer {
    bool active;
    struct pb_cpu_prim r;
    void *buf;
};
/* Input side: user_md → prim_md. */
void pb_cpu_xfer_in_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                         const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *prim_md);
/* Returns the pointer the primitive reads: user itself, or buf after the reorder. */
const void *pb_cpu_xfer_in(struct pb_backend *be, const struct pb_cpu_xfer *x, const void *user);
/* Output side: prim_md → user_md. */
void pb_cpu_xfer_out_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                          const dnnl_memory_desc_t *prim_md, const dnnl_memory_desc_t *user_md);
/* Where the primitive writes: user itself, or buf. */
void *pb_cpu_xfer_out_ptr(const struct pb_cpu_xfer *x, void *user);
/* After the primitive ran: reorders buf into user when active. */
void pb_cpu_xfer_out(struct pb_backend *be, const struct pb_cpu_xfer *x, void *user);
/* Output side that adds: prim_md → user_md onto what user holds (a reorder with a sum
 * post-op, one pass over each), for gradients that accumulate. */
void pb_cpu_xfer_acc_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                          const dnnl_memory_desc_t *prim_md, const dnnl_memory_desc_t *user_md);
void pb_cpu_xfer_destroy(struct pb_backend *be, struct pb_cpu_xfer *x);

/* ---- the ops (one file per family) ---- */

void pb_cpu_reorder(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst);

void pb_cpu_gemm(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc);
void pb_cpu_bias_add(struct pb_backend *be, float *y, const float *b, int n, int c);
void pb_cpu_bias_grad(struct pb_backend *be, const float *dy, float *db_acc, int n, int c);

enum pb_layout pb_cpu_conv_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                  const struct pb_tensor *x);
void pb_cpu_conv_fwd(struct pb_backend *be, const struct pb_conv_desc *d,
                     const struct pb_tensor *x, const float *w, const float *b,
                     struct pb_tensor *y);
void pb_cpu_conv_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                          const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);
void pb_cpu_conv_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *dy,
                             float *dw_acc, float *db_acc);

/* The layout the oneDNN convolution primitive (Winograd or direct) writes y in, for x of
 * shape x. */
enum pb_layout pb_cpu_conv_onednn_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                         struct pb_shape x);

/* How the CPU backend convolves x of shape x by d (cpu_conv.c): space to depth
 * (cpu_conv_s2d.c, forward and backward data), as matrix products (cpu_conv_gemm.c),
 * oneDNN's Winograd kernels (all three passes), its direct ones with both backward passes
 * on 8-channel blocks for a thin output, or its direct ones. */
enum pb_cpu_conv_algo { PB_CPU_CONV_DIRECT, PB_CPU_CONV_WINOGRAD, PB_CPU_CONV_GEMM,
                        PB_CPU_CONV_S2D, PB_CPU_CONV_THIN };
enum pb_cpu_conv_algo pb_cpu_conv_algorithm(struct pb_backend *be, const struct pb_conv_desc *d,
                                            struct pb_shape x);

/* Convolutions of few output pixels as matrix products on OIHW weights (cpu_conv_gemm.c):
 * the plan NULL where the shape has too many. */
struct pb_cpu_conv_gemm;
const struct pb_cpu_conv_gemm *pb_cpu_conv_gemm_plan(struct pb_backend *be,
                                                     const struct pb_conv_desc *d,
                                                     struct pb_shape x);
enum pb_layout pb_cpu_conv_gemm_layout(const struct pb_cpu_conv_gemm *g);
void pb_cpu_conv_gemm_fwd(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                          const struct pb_tensor *x, const float *w, const float *b,
                          struct pb_tensor *y);
void pb_cpu_conv_gemm_bwd_data(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                               const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);
void pb_cpu_conv_gemm_bwd_weights(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                                  const struct pb_tensor *x, const struct pb_tensor *dy,
                                  float *dw_acc, float *db_acc);

/* Space-to-depth form of the forward and backward data of a strided convolution on few
 * input channels (cpu_conv_s2d.c): NULL when the direct convolution is used for x of
 * this shape. */
struct pb_cpu_s2d;
const struct pb_cpu_s2d *pb_cpu_s2d_plan(struct pb_backend *be, const struct pb_conv_desc *d,
                                         struct pb_shape x);
enum pb_layout pb_cpu_s2d_layout(const struct pb_cpu_s2d *s);
void pb_cpu_s2d_fwd(struct pb_backend *be, const struct pb_cpu_s2d *s, const struct pb_tensor *x,
                    const float *w, const float *b, struct pb_tensor *y);
void pb_cpu_s2d_bwd_data(struct pb_backend *be, const struct pb_cpu_s2d *s,
                         const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);

size_t pb_cpu_pool_workspace(struct pb_backend *be, const struct pb_pool_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *y);
void pb_cpu_pool_fwd(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, struct pb_tensor *y, void *workspace);
void pb_cpu_pool_bwd(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, const struct pb_tensor *y,
                     const struct pb_tensor *dy, const void *workspace, struct pb_tensor *dx);

size_t pb_cpu_bn_aux_bytes(struct pb_backend *be, struct pb_shape x, bool relu);
void pb_cpu_bn_fwd_train(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, float *run_mean, float *run_var, float momentum,
                         float eps, bool relu, struct pb_tensor *y, void *aux);
void pb_cpu_bn_fwd_infer(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, const float *run_mean, const float *run_var,
                         float eps, bool relu, struct pb_tensor *y);
void pb_cpu_bn_bwd(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                   const float *gamma, const void *aux, float eps, bool relu,
                   struct pb_tensor *dx, float *dgamma_acc, float *dbeta_acc);

void pb_cpu_relu_fwd(struct pb_backend *be, const float *x, float *y, size_t n);
void pb_cpu_relu_bwd(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n);
void pb_cpu_add(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
void pb_cpu_add_relu(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
void pb_cpu_axpby(struct pb_backend *be, float alpha, const float *x, float beta, float *y,
                  size_t n);
void pb_cpu_dropout(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                    struct pb_rng_key key, uint64_t first);

enum pb_layout pb_cpu_concat_layout(struct pb_backend *be, int k,
                                    const struct pb_tensor *const *ins);
void pb_cpu_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                   struct pb_tensor *out);
void pb_cpu_split(struct pb_backend *be, const struct pb_tensor *dout, int k,
                  struct pb_tensor *const *douts);

void pb_cpu_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels,
                         int n, int c, float eps_ls, int ignore, int grad_rows,
                         struct pb_xent_out *out, float *dlogits);

void pb_cpu_embedding_fwd(struct pb_backend *be, const float *tok, size_t n, const float *table,
                          int vocab, int dim, float *y);
void pb_cpu_embedding_bwd(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                          int vocab, int dim, int padding, float *dtable_acc);
void pb_cpu_seq_mean_fwd(struct pb_backend *be, const float *x, const int32_t *lengths, int batch,
                         int steps, int f, float *y);
void pb_cpu_seq_mean_bwd(struct pb_backend *be, const float *dy, const int32_t *lengths,
                         int batch, int steps, int f, float *dx);
void pb_cpu_seq_gather(struct pb_backend *be, const float *x, int x_stride,
                       const int32_t *lengths, int batch, int steps, int f, bool reverse,
                       float *y, int y_stride);
/* the LSTM ops (cpu_lstm.c) and the four weight tensors of their flat run w (or of its
 * gradient), backend.h's layout: W_ih [4H, I], W_hh [4H, H], b_ih [4H], b_hh [4H] */
/* Products of a few rows by a matrix packed once into panels (cpu_panels.c): usable for
 * m rows where the machine has the kernel (AVX2 and FMA) and m ≤ PB_CPU_PANEL_ROWS_MAX;
 * panels of op(B) [k × n] take pb_cpu_panels_floats(k, n) floats; both _in_team calls
 * share their work out inside a parallel region and end at its barrier. */
#define PB_CPU_PANEL_ROWS_MAX 16
bool pb_cpu_panels_usable(int m);
size_t pb_cpu_panels_floats(int k, int n);
void pb_cpu_pack_panels_in_team(const float *b, int ldb, bool trans_b, int k, int n,
                                float *panels);
void pb_cpu_gemm_panels_in_team(int m, int n, int k, const float *a, int lda,
                                const float *panels, bool beta, float *c, int ldc);

size_t pb_cpu_lstm_workspace(struct pb_backend *be, const struct pb_lstm_desc *d);
void pb_cpu_lstm_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, float *y, void *ws, const struct pb_lstm_states *st);
void pb_cpu_lstm_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, const float *y, const float *dy, const void *ws, float *dx,
                     float *dw_acc);
size_t pb_cpu_lstm_bwd_keep(struct pb_backend *be, const struct pb_lstm_desc *d);
void pb_cpu_lstm_bwd_data(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                          const float *dy, const void *ws, float *dx, void *keep);
void pb_cpu_lstm_bwd_weights(struct pb_backend *be, const struct pb_lstm_desc *d,
                             const float *x, const float *y, const void *keep, float *dw_acc);
size_t pb_cpu_attn_workspace(struct pb_backend *be, const struct pb_attn_desc *d);
void pb_cpu_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                         float *a);
void pb_cpu_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws);
void pb_cpu_attn_project_keys(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *k, const float *w, float *pk);
void pb_cpu_attn_fwd_projected(struct pb_backend *be, const struct pb_attn_desc *d,
                               const float *q, const float *k, const float *pk,
                               const int32_t *lengths, const float *w, float *ctx, float *a);
void pb_cpu_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, const void *ws,
                     const float *dctx, float *dq, float *dk, float *dw_acc);
size_t pb_cpu_attn_bwd_keep(struct pb_backend *be, const struct pb_attn_desc *d);
void pb_cpu_attn_bwd_data(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                          const int32_t *lengths, const float *w, const void *ws,
                          const float *dctx, float *dq, float *dk, void *keep);
void pb_cpu_attn_bwd_weights(struct pb_backend *be, const struct pb_attn_desc *d,
                             const float *q, const float *k, const void *keep, float *dw_acc);

void pb_cpu_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a);
void pb_cpu_predict(struct pb_backend *be, const struct pb_predict_args *a);

/* Elements per parallel chunk of the elementwise loops. */
#define PB_CPU_CHUNK ((size_t)1 << 14)

/* Runs body(lo, hi) over [0, n) in fixed chunks of PB_CPU_CHUNK on the instance's
 * threads: an element's chunk never depends on the thread count. */
#define PB_CPU_CHUNKED(be, n, lo, hi, body)                                            \
    do {                                                                               \
        size_t nch_ = ((n) + PB_CPU_CHUNK - 1) / PB_CPU_CHUNK;                         \
        _Pragma("omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)") \
        for (size_t ch_ = 0; ch_ < nch_; ch_++) {                                      \
            size_t lo = ch_ * PB_CPU_CHUNK;                                            \
            size_t hi = lo + PB_CPU_CHUNK < (n) ? lo + PB_CPU_CHUNK : (n);             \
            body;                                                                      \
        }                                                                              \
    } while (0)

/* Offset of element (n, c, h, w) of a tensor of shape s stored in layout l. */
static inline size_t pb_cpu_offset(struct pb_shape s, enum pb_layout l, int n, int c, int h, int w)
{
    size_t b = (size_t)pb_layout_block(l), cb = ((size_t)s.c + b - 1) / b;
    size_t blk = ((size_t)n * cb + (size_t)c / b) * (size_t)s.h + (size_t)h;
    return (blk * (size_t)s.w + (size_t)w) * b + (size_t)c % b;
}

#endif
