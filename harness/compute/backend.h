/* harness/compute/backend.h — the compute interface a stage runs on (design §4).
 * A backend instance owns device memory, a stream and kernels; backends are created by
 * name from a registry (harness/compute/registry.h). The CPU backend
 * (harness/compute/cpu/) runs on oneDNN; a CUDA backend implements the same table with
 * cuBLAS/cuDNN.
 * - Every pointer passed to an op is device memory of the same instance; the core
 *   never dereferences one. Host memory crosses only through upload/download.
 * - Ops, uploads and downloads are enqueued in order on the instance's stream and may
 *   run asynchronously: a host buffer handed to upload/download, a timer, or a value
 *   downloaded may be used only after `sync` returns (on the CPU every op completes
 *   before it returns and sync is free). An upload reads its source when it runs, so
 *   the source stays untouched until that sync too.
 * - A thread calls `bind` before its first op on an instance (the current device is per
 *   thread on a GPU); an instance is used by one thread at a time.
 * - Errors a device detects while an op runs (a token out of range) surface at `sync`:
 *   read pb_backend_status after the sync that ends the ops, never between them.
 * - A block freed by an instance other than the one that allocated it is fenced: the
 *   allocator records the freeing instance's fence and the home instance's later ops
 *   wait for it before reusing the block (pb_backend_free), so frees need no sync.
 * - Layouts belong to the backend: the core knows PB_LAYOUT_PLAIN and the layouts a
 *   backend hands back (conv_layout), which it passes along without reading them.
 * - Gradient outputs named *_acc are accumulated (+=), never overwritten, so a stage's
 *   flat gradient buffer collects the gradients of several micro-batches.
 * - supports_op says which ops an instance implements: a stage that needs another is
 *   refused when it is built, naming the op and the backend. */
#ifndef PB_BACKEND_H
#define PB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"
#include "harness/base/rng.h"
#include "harness/compute/memory.h"
#include "harness/compute/optim_kernels.h"
#include "harness/compute/tensor.h"

#ifdef __cplusplus   /* the CUDA backend's .cu files call these */
extern "C" {
#endif

/* 2-D convolution, groups = 1, dilation = 1. Weights [cout, cin, kh, kw] (PyTorch
 * OIHW), bias [cout]. Output size: (in + 2p - k) / s + 1. */
struct pb_conv_desc {
    int cin, cout, kh, kw, sh, sw, ph, pw;
    bool bias;
};

enum pb_pool_kind { PB_POOL_MAX, PB_POOL_AVG };

/* 2-D pooling. Average pooling divides by the window clipped to the padded input
 * (PyTorch's count_include_pad = true) unless exclude_pad; ceil_mode rounds the
 * output size up as PyTorch does (a window must start inside the input or left pad). */
struct pb_pool_desc {
    enum pb_pool_kind kind;
    int kh, kw, sh, sw, ph, pw;
    bool ceil_mode, exclude_pad;
};

/* A one-layer unidirectional LSTM over batch-first sequences (torch.nn.LSTM with
 * batch_first = True, zero initial states): x [batch, steps, input], y [batch, steps,
 * hidden]. Its weights are one flat run in PyTorch's order and shapes: weight_ih_l0
 * [4H, input], weight_hh_l0 [4H, H], bias_ih_l0 [4H], bias_hh_l0 [4H], gates i, f, g, o. */
struct pb_lstm_desc {
    int batch, steps, input, hidden;
};

/* The four pieces of an LSTM's flat weight (or gradient) run w, in the order above. */
struct pb_lstm_weights {
    float *w_ih, *w_hh, *b_ih, *b_hh;
};

static inline struct pb_lstm_weights pb_lstm_weights_split(const struct pb_lstm_desc *d,
                                                           const float *w)
{
    size_t g = 4 * (size_t)d->hidden;
    struct pb_lstm_weights s;
    s.w_ih = (float *)w;
    s.w_hh = s.w_ih + g * (size_t)d->input;
    s.b_ih = s.w_hh + g * (size_t)d->hidden;
    s.b_hh = s.b_ih + g;
    return s;
}

/* An LSTM run's recurrent states at its two ends, h and c [batch, hidden] each. h0 and
 * c0 (both or neither; NULL: zeros) start an inference forward — a training forward
 * starts from zeros, as its backward assumes; h_last and c_last (both or neither; NULL:
 * not wanted) receive the states after step steps − 1. A decoder carries them from one
 * call of one step to the next. */
struct pb_lstm_states {
    const float *h0, *c0;
    float *h_last, *c_last;
};

/* GNMT's normalised Bahdanau attention (the MLPerf reference's BahdanauAttention with
 * normalize = True, batch-first): queries q [batch, tq, query], keys k [batch, tk, key],
 * each batch row's keys valid below its length; U = units.
 *   pq = q·W_qᵀ, pk = k·W_kᵀ, v̂ = g·v/‖v‖,
 *   s[b, i, j] = v̂ · tanh(pq[b, i] + pk[b, j] + bias), a = softmax over j < len_b (0 past it),
 *   ctx[b, i] = Σ_j a[b, i, j]·k[b, j]   → ctx [batch, tq, key].
 * Its weights are one flat run in PyTorch's parameters() order: linear_att v [U],
 * normalize_scalar g [1], normalize_bias [U], linear_q.weight W_q [U, query],
 * linear_k.weight W_k [U, key]. */
struct pb_attn_desc {
    int batch, tq, tk, query, key, units;
};

/* The five pieces of an attention's flat weight (or gradient) run w, in the order above. */
struct pb_attn_weights {
    float *v, *g, *bias, *wq, *wk;
};

static inline struct pb_attn_weights pb_attn_weights_split(const struct pb_attn_desc *d,
                                                           const float *w)
{
    struct pb_attn_weights s;
    s.v = (float *)w;
    s.g = s.v + d->units;
    s.bias = s.g + 1;
    s.wq = s.bias + d->units;
    s.wk = s.wq + (size_t)d->units * d->query;
    return s;
}

struct pb_backend;

/* Device memory softmax_xent writes its results to. */
struct pb_xent_out {
    float loss;
    int32_t correct;
    int32_t count;  /* rows the mean is over: those not ignored */
};

/* The ops of the table below, for supports_op and its messages. */
enum pb_backend_op {
    PB_BOP_GEMM, PB_BOP_BIAS, PB_BOP_CONV, PB_BOP_POOL_MAX, PB_BOP_POOL_AVG, PB_BOP_BATCHNORM,
    PB_BOP_RELU, PB_BOP_ADD, PB_BOP_DROPOUT, PB_BOP_CONCAT, PB_BOP_SOFTMAX_XENT,
    PB_BOP_OPTIM_STEP, PB_BOP_PREDICT, PB_BOP_EMBEDDING, PB_BOP_LSTM, PB_BOP_SEQ_MEAN,
    PB_BOP_SEQ_GATHER, PB_BOP_ATTENTION, PB_BOP_NOPS
};
/* "gemm", "bias", "conv", ... (backend.c) */
extern const char *const pb_backend_op_names[PB_BOP_NOPS];

struct pb_backend_ops {
    const char *name;
    void (*destroy)(struct pb_backend *be);
    /* Waits until every op enqueued on the instance's stream is done. */
    void (*sync)(struct pb_backend *be);
    /* Makes the calling thread's current device the instance's; NULL: nothing to bind. */
    void (*bind)(struct pb_backend *be);
    /* fence_record: a fence after every op enqueued on be so far (an event on a GPU);
     * NULL as an op, or a NULL result, where ops complete before they return.
     * fence_wait: be's later ops wait for a fence of another instance of the same
     * address space, which it then releases (a stream wait on a GPU, not a host wait). */
    void *(*fence_record)(struct pb_backend *be);
    void (*fence_wait)(struct pb_backend *be, void *fence);
    /* Op times on the device's own clock (timed events on a GPU); NULL ops where the
     * host's clock around an op and its sync is the op's time (the CPU). timer_mark: a
     * mark after every op enqueued so far (NULL if none could be made); timer_elapsed,
     * after a sync past both: the seconds from one to the other, releasing both
     * (from == to: only releases it, synced or not). */
    void *(*timer_mark)(struct pb_backend *be);
    double (*timer_elapsed)(struct pb_backend *be, void *from, void *to);
    bool (*supports_op)(struct pb_backend *be, enum pb_backend_op op);

    /* memory: raw device allocations (accounting and caching are pb_backend_alloc's) */
    void *(*alloc)(struct pb_backend *be, size_t bytes);  /* NULL when out of memory */
    void (*free)(struct pb_backend *be, void *p);
    /* Whether other may use this instance's allocations as its own (one address space:
     * a tensor then moves between stages without a copy, pb_backend_take). */
    bool (*shares_memory)(const struct pb_backend *be, const struct pb_backend *other);
    /* Device pointers are host addresses (a transport may then send them directly;
     * else it stages through host buffers with download/upload). */
    bool host_visible;
    void (*upload)(struct pb_backend *be, void *dst, const void *src_host, size_t bytes);
    /* Writing device memory from the host without an extra copy where possible:
     * write_begin returns host memory to fill for dst (dst itself on the CPU, a staging
     * buffer of a pool elsewhere) and write_end makes it dst's content (an upload, or
     * nothing). Several may be open before one sync: each staging buffer is released at
     * the sync after its write_end, never earlier. */
    void *(*write_begin)(struct pb_backend *be, void *dst, size_t bytes);
    void (*write_end)(struct pb_backend *be, void *dst, void *host, size_t bytes);
    void (*download)(struct pb_backend *be, void *dst_host, const void *src, size_t bytes);
    void (*copy)(struct pb_backend *be, void *dst, const void *src, size_t bytes);
    /* dst (be's) = bytes of src, memory of src_be, an instance of the same backend on
     * another device of this process, whose ops that wrote src are done (the caller
     * synced them); enqueued on be's stream (a peer copy on a GPU). The block holding src
     * is released with pb_backend_free_read, so src_be waits for the copy before reusing
     * it. NULL: no such copy (a tensor then crosses through host memory). */
    void (*copy_peer)(struct pb_backend *be, void *dst, struct pb_backend *src_be, const void *src,
                      size_t bytes);
    void (*fill)(struct pb_backend *be, float *dst, float value, size_t n);

    /* layouts: floats a tensor of shape s occupies in layout l (blocked layouts pad
     * channels); reorder: dst->shape == src->shape, dst->layout chosen by the caller */
    size_t (*layout_floats)(struct pb_backend *be, struct pb_shape s, enum pb_layout l);
    void (*reorder)(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst);

    /* C[M,N] = alpha * op(A) * op(B) + beta * C, row-major; op(A) is [M,K]. */
    void (*gemm)(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc);
    /* y[N,C] += b[C] per row;  db_acc[C] += sum over rows of dy[N,C] */
    void (*bias_add)(struct pb_backend *be, float *y, const float *b, int n, int c);
    void (*bias_grad)(struct pb_backend *be, const float *dy, float *db_acc, int n, int c);

    /* convolution. conv_layout: the layout the forward writes y in, given x. */
    enum pb_layout (*conv_layout)(struct pb_backend *be, const struct pb_conv_desc *d,
                                  const struct pb_tensor *x);
    void (*conv_fwd)(struct pb_backend *be, const struct pb_conv_desc *d,
                     const struct pb_tensor *x, const float *w, const float *b,
                     struct pb_tensor *y);
    /* dx (shape and layout of x, set by the caller) = conv^T(dy, w) */
    void (*conv_bwd_data)(struct pb_backend *be, const struct pb_conv_desc *d,
                          const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);
    /* dw_acc += dL/dw, db_acc += dL/db (db_acc may be NULL when !d->bias) */
    void (*conv_bwd_weights)(struct pb_backend *be, const struct pb_conv_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *dy,
                             float *dw_acc, float *db_acc);

    /* pooling: y keeps x's layout; the workspace (max pooling) carries the argmax
     * from a training forward to the backward, which also receives x and y (cuDNN's
     * backward reads them). */
    size_t (*pool_workspace)(struct pb_backend *be, const struct pb_pool_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *y);
    void (*pool_fwd)(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, struct pb_tensor *y, void *workspace);
    void (*pool_bwd)(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, const struct pb_tensor *y,
                     const struct pb_tensor *dy, const void *workspace, struct pb_tensor *dx);

    /* batch normalisation over N, H, W per channel; y and dx keep x's layout.
     * Training normalises with the batch statistics, saves what the backward needs in
     * aux (bn_aux_bytes for x's shape, a format of the backend's), and updates the
     * running statistics [C] as PyTorch does: run = (1 − m)·run + m·batch with the
     * unbiased batch variance. Inference normalises with the running statistics.
     * relu: a ReLU fused onto the output, y = max(BN(x), 0), and the backward of both
     * (dy taken where y > 0), as the layers BN then ReLU compute. */
    size_t (*bn_aux_bytes)(struct pb_backend *be, struct pb_shape x, bool relu);
    void (*bn_fwd_train)(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, float *run_mean, float *run_var, float momentum,
                         float eps, bool relu, struct pb_tensor *y, void *aux);
    void (*bn_fwd_infer)(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, const float *run_mean, const float *run_var,
                         float eps, bool relu, struct pb_tensor *y);
    void (*bn_bwd)(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                   const float *gamma, const void *aux, float eps, bool relu,
                   struct pb_tensor *dx, float *dgamma_acc, float *dbeta_acc);

    /* elementwise over n floats (any layout: padded channels stay zero) */
    void (*relu_fwd)(struct pb_backend *be, const float *x, float *y, size_t n);
    /* dx = dy * (y > 0) */
    void (*relu_bwd)(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n);
    /* y = a + b */
    void (*add)(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
    /* y = max(a + b, 0): add then relu_fwd in one pass, the same bits (a residual join) */
    void (*add_relu)(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
    /* y = alpha * x + beta * y */
    void (*axpby)(struct pb_backend *be, float alpha, const float *x, float beta, float *y, size_t n);
    /* y = x * mask / (1 - p), mask[i] = pb_rng_uniform4(key, first + i) >= p; plain layout.
     * The same call with dy, dx is the backward. */
    void (*dropout)(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                    struct pb_rng_key key, uint64_t first);

    /* channel concatenation of k tensors of equal n, h, w into out, and its backward:
     * slices of dout into douts[i]. concat_layout: the layout out is written in, given
     * the inputs (douts[i] take ins[i]'s layouts). */
    enum pb_layout (*concat_layout)(struct pb_backend *be, int k,
                                    const struct pb_tensor *const *ins);
    void (*concat)(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                   struct pb_tensor *out);
    void (*split)(struct pb_backend *be, const struct pb_tensor *dout, int k,
                  struct pb_tensor *const *douts);

    /* Softmax cross-entropy, label smoothing eps_ls as PyTorch: target = (1 - eps_ls) *
     * onehot + eps_ls / C. logits [N,C] plain, labels [N]. Rows labelled `ignore` (>= 0:
     * padding tokens; < 0: none) are left out: the mean is over the M others (PyTorch's
     * ignore_index; the loss per token of a translation model). Writes the mean loss
     * (0 when M = 0), the count of counted rows whose argmax equals the label, and M to
     * device memory (out->loss, out->correct, out->count: read them with download after
     * sync); dlogits [N,C] = (softmax - target) / D when not NULL, 0 on ignored rows, with
     * D = grad_rows when > 0 (the loss summed over each sentence's tokens and averaged over
     * the grad_rows sentences: the objective the paper's GNMT trainer back-propagates),
     * else D = M. */
    void (*softmax_xent)(struct pb_backend *be, const float *logits, const int32_t *labels,
                         int n, int c, float eps_ls, int ignore, int grad_rows,
                         struct pb_xent_out *out, float *dlogits);

    /* embedding lookup: y[n, dim] = table[tok[i]] for n tokens held as floats (whole
     * numbers below 2^24); a token outside [0, vocab) fails the instance. The backward
     * accumulates dtable_acc[tok[i]] += dy[i] for every token but `padding` (< 0: none),
     * touching only the rows seen. */
    void (*embedding_fwd)(struct pb_backend *be, const float *tok, size_t n, const float *table,
                          int vocab, int dim, float *y);
    void (*embedding_bwd)(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                          int vocab, int dim, int padding, float *dtable_acc);

    /* LSTM (struct pb_lstm_desc). lstm_workspace: bytes a training forward leaves for
     * the backward in ws (a format of the backend's); an inference forward passes
     * ws = NULL. st (NULL: zero initial states, no final ones) as struct pb_lstm_states.
     * The backward reads x, w, y and ws, writes dx (NULL: not wanted) and accumulates the
     * four weight gradients into dw_acc (w's layout).
     * The split backward (semantics §4.10) is the same backward in two passes, and the
     * fused lstm_bwd is, bit for bit, lstm_bwd_data then lstm_bwd_weights (the same
     * kernels and sums). lstm_bwd_data reads w, dy [B, T, H] and ws, writes dx [B, T, I]
     * (NULL: not wanted) and into keep what the weight pass reads besides x and y: the
     * gate gradients dA [B, T, 4H] (i, f, g, o per row; a format of the backend's, of
     * lstm_bwd_keep bytes). lstm_bwd_weights reads x [B, T, I], y [B, T, H] (the h_{t−1}
     * of every step) and keep, and accumulates dW_ih += dAᵀ·x, dW_hh += dAᵀ·h_{t−1} and
     * Σ_rows dA into both biases of dw_acc; ws is not read, so it may be freed between the
     * two. */
    size_t (*lstm_workspace)(struct pb_backend *be, const struct pb_lstm_desc *d);
    void (*lstm_fwd)(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, float *y, void *ws, const struct pb_lstm_states *st);
    void (*lstm_bwd)(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, const float *y, const float *dy, const void *ws, float *dx,
                     float *dw_acc);
    size_t (*lstm_bwd_keep)(struct pb_backend *be, const struct pb_lstm_desc *d);
    void (*lstm_bwd_data)(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                          const float *dy, const void *ws, float *dx, void *keep);
    void (*lstm_bwd_weights)(struct pb_backend *be, const struct pb_lstm_desc *d,
                             const float *x, const float *y, const void *keep, float *dw_acc);

    /* mean over time masked by length: y[b, f] = (1/len_b) Σ_{t < len_b} x[b, t, f] for
     * x [batch, steps, f]; lengths [batch] in [1, steps] (device), NULL = all steps. The
     * backward writes dx[b, t, f] = dy[b, f] / len_b for t < len_b, else 0. */
    void (*seq_mean_fwd)(struct pb_backend *be, const float *x, const int32_t *lengths, int batch,
                         int steps, int f, float *y);
    void (*seq_mean_bwd)(struct pb_backend *be, const float *dy, const int32_t *lengths,
                         int batch, int steps, int f, float *dx);
    /* each sequence's steps in time order or against it, padding zeroed: y[b, t, :f] =
     * x[b, reverse ? len_b − 1 − t : t, :f] for t < len_b, else 0, where step (b, t) of x
     * starts (b·steps + t)·x_stride floats in and of y (b·steps + t)·y_stride (so f
     * features of a wider row can be read or written); lengths as seq_mean's. With
     * reverse it is its own inverse on the steps within the lengths. */
    void (*seq_gather)(struct pb_backend *be, const float *x, int x_stride,
                       const int32_t *lengths, int batch, int steps, int f, bool reverse,
                       float *y, int y_stride);

    /* attention (struct pb_attn_desc); lengths [batch] in [1, tk] (device), NULL = all tk.
     * attn_workspace: bytes a training forward leaves for the backward in ws; an
     * inference forward passes ws = NULL. The backward reads q, k, w and ws, writes dq
     * and dk (NULL: not wanted; keys past a length get 0) and accumulates the five
     * weight gradients into dw_acc (w's layout).
     * The split backward: the fused attn_bwd is, bit for bit, attn_bwd_data then
     * attn_bwd_weights. attn_bwd_data reads k, lengths, w, ws and dctx [B, Tq, key],
     * writes dq [B, Tq, query] and dk [B, Tk, key] (NULL: not wanted) and into keep what
     * the weight pass reads besides q and k (a format of the backend's, of attn_bwd_keep
     * bytes): the gradients of the projections dpq [B·Tq, U] and dpk [B·Tk, U], and the
     * increments of linear_att's [U] and normalize_scalar's [1] gradients, formed in the
     * data pass because they read v and g (the weight pass reads no weights).
     * attn_bwd_weights reads q [B, Tq, query], k [B, Tk, key] and keep and accumulates
     * the five weight gradients into dw_acc: v and g's increments, Σ_rows dpk into the
     * bias', dpqᵀ·q into W_q's and dpkᵀ·k into W_k's; ws is not read. */
    size_t (*attn_workspace)(struct pb_backend *be, const struct pb_attn_desc *d);
    void (*attn_fwd)(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws);
    void (*attn_bwd)(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, const void *ws,
                     const float *dctx, float *dq, float *dk, float *dw_acc);
    size_t (*attn_bwd_keep)(struct pb_backend *be, const struct pb_attn_desc *d);
    void (*attn_bwd_data)(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                          const int32_t *lengths, const float *w, const void *ws,
                          const float *dctx, float *dq, float *dk, void *keep);
    void (*attn_bwd_weights)(struct pb_backend *be, const struct pb_attn_desc *d,
                             const float *q, const float *k, const void *keep, float *dw_acc);
    /* the attention weights [batch, tq, tk] (0 at keys past a length) of the forward that
     * left ws, into a (device): what the beam search's coverage penalty adds up */
    void (*attn_weights)(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                         float *a);
    /* A decoder's attention over keys fixed for many calls (one query per row a step, the
     * same k each time), without projecting them every call. attn_project_keys writes
     * pk [batch, tk, units] = k·W_kᵀ, the GEMM attn_fwd projects its keys with inside
     * ([batch·tk, key] × [units, key]ᵀ, only batch, tk, key and units read), so that for
     * the same desc its bits are those attn_fwd scores with. attn_fwd_projected is
     * attn_fwd's inference forward given that pk (its rows may since have been gathered
     * along with k's: row b of pk is row b of k projected): the same ctx [batch, tq, key]
     * and, into a [batch, tq, tk] (device; NULL: not wanted), the weights attn_weights
     * would read, bit for bit those of attn_fwd on the same desc, q, k and lengths when pk
     * is attn_project_keys' on that desc. It leaves nothing for attn_bwd. */
    void (*attn_project_keys)(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *k, const float *w, float *pk);
    void (*attn_fwd_projected)(struct pb_backend *be, const struct pb_attn_desc *d,
                               const float *q, const float *k, const float *pk,
                               const int32_t *lengths, const float *w, float *ctx, float *a);

    /* the optimizer step and the weight prediction over a flat buffer, from plain
     * arguments (optim_kernels.h; harness/optim/ and predictors/ build them) */
    void (*optim_step)(struct pb_backend *be, const struct pb_optim_step_args *a);
    /* a->w_hat = a->w + a->scale * ΔW (semantics §3.1); reads, never writes, the state in a->dw */
    void (*predict)(struct pb_backend *be, const struct pb_predict_args *a);

    /* Device-to-device messages between processes (NCCL on a GPU) for the edges the
     * transport plan (harness/exec/transport.h) marks PB_XFER_DEVICE; NULL (and
     * comm_id_bytes 0) where the backend has none, as on the CPU. A communicator joins
     * nranks processes, each on a device of its own (NCCL refuses two on one GPU); the mpi
     * executor makes one per direction of an edge (rank 0 sends, rank 1 receives), so that
     * a send never queues behind a receive of the same pair.
     * - comm_unique_id writes comm_id_bytes bytes on one rank, which the caller hands to
     *   the others (pb_dist_bcast); comm_init on each joins the communicator (blocking
     *   until all have), its handle or NULL and e.
     * - comm_send enqueues a send of buf [bytes] (device memory of be, whole floats) to
     *   rank peer after be's ops so far, on a stream of the communicator's: be's later ops
     *   never wait for the receiver. buf stays allocated until comm_test of the ticket it
     *   returns says true (wait: blocks until then), which releases the ticket; NULL (buf
     *   free at once) when the instance has failed.
     * - comm_recv enqueues a receive into buf [bytes] from rank peer; be's later ops wait
     *   for it. Messages of one pair arrive in the order sent.
     * - comm_finish waits for the communicator's work and releases it (before destroy).
     * Failures fail the instance, as an op's do. */
    size_t comm_id_bytes;
    int (*comm_unique_id)(struct pb_backend *be, void *id, struct pb_err *e);
    void *(*comm_init)(struct pb_backend *be, const void *id, int nranks, int rank,
                       struct pb_err *e);
    void *(*comm_send)(struct pb_backend *be, void *comm, const void *buf, size_t bytes, int peer);
    void (*comm_recv)(struct pb_backend *be, void *comm, void *buf, size_t bytes, int peer);
    bool (*comm_test)(struct pb_backend *be, void *ticket, bool wait);
    void (*comm_finish)(struct pb_backend *be, void *comm);
};

struct pb_allocator;

struct pb_backend {
    const struct pb_backend_ops *ops;
    void *impl;
    int device;                        /* index among the backend's devices */
    /* bytes in use by kind and their peaks since pb_backend_reset_peaks (cached free
     * blocks count in no kind) */
    size_t mem_cur[PB_MEM_NKINDS];
    size_t mem_peak[PB_MEM_NKINDS];
    struct pb_allocator *allocator;    /* backend.c: accounting and the block cache */
    /* An op that could not run (out of device memory for a kernel's workspace) fails
     * the instance, as a device stream does: later ops do nothing, and the core reads
     * the error with pb_backend_status after the ops it enqueued. */
    bool failed;
    struct pb_err error;
};

/* What creating an instance takes: the device index and, for the CPU backend, its
 * threads (cores it splits kernels over; 0 = all). */
struct pb_backend_cfg {
    int device;
    int threads;
    bool tf32;           /* a GPU's TF32 tensor cores allowed for FP32 GEMM and convolution */
    bool deterministic;  /* deterministic kernels only (a GPU's cuDNN algorithms) */
};

void pb_backend_destroy(struct pb_backend *be);

/* The calling thread binds be before its first op on it (ops->bind, where it has one). */
void pb_backend_bind(struct pb_backend *be);

/* Frees owner's block p, which ops of reader (another instance, the calling thread's)
 * may still read: the block carries reader's fence into its home's cache, as a block
 * freed by another instance does (a peer copy's source). */
void pb_backend_free_read(struct pb_backend *owner, void *p, struct pb_backend *reader);

/* Accounted allocations from the instance's block cache (the device allocator is
 * called only when no cached block of that size is free, so a steady state allocates
 * nothing; when it is out of memory, the cache's free blocks go back to it, after their
 * fences and a sync of the instance, and it is asked once more): NULL and an error naming
 * the kind and size when out of memory. */
void *pb_backend_alloc(struct pb_backend *be, size_t bytes, enum pb_mem_kind kind, struct pb_err *e);
/* Frees into the cache of the instance that allocated the block (also from another
 * thread after pb_backend_take). A block freed by an instance other than its home
 * carries the freeing instance's fence (ops->fence_record) into the home's cache; the
 * home waits for it (ops->fence_wait) when it hands the block out again, so ops of the
 * freeing instance still enqueued may keep reading it. */
void pb_backend_free(struct pb_backend *be, void *p);
/* Allocates a tensor of the given shape and layout. */
int pb_tensor_alloc(struct pb_backend *be, struct pb_tensor *t, struct pb_shape s,
                    enum pb_layout l, enum pb_mem_kind kind, struct pb_err *e);
/* The first failure of an op on be (sticky; implementations call it). */
void pb_backend_fail(struct pb_backend *be, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 0, or -1 with the instance's error when an op failed. */
int pb_backend_status(struct pb_backend *be, struct pb_err *e);

/* Where block p stands in be's allocator: PB_BLOCK_LIVE (allocated by or handed to be),
 * PB_BLOCK_CACHED (free in be's cache), PB_BLOCK_NONE (neither: another instance's, or
 * not a block's start). For backends that check the core's side of the contract. */
enum pb_block_state { PB_BLOCK_NONE, PB_BLOCK_LIVE, PB_BLOCK_CACHED };
enum pb_block_state pb_backend_block_state(struct pb_backend *be, const void *p);

/* Aborts (an internal error) unless a's ΔW formula has the arrays it reads: what every
 * backend's predict checks first. */
void pb_predict_args_check(const struct pb_predict_args *a);

/* Floats t occupies in its layout. */
size_t pb_tensor_floats(struct pb_backend *be, const struct pb_tensor *t);
void pb_backend_reset_peaks(struct pb_backend *be);
/* Counts (add) or uncounts memory the instance did not allocate itself as kind, for
 * the stage's memory record: PB_MEM_HOST, the host buffers a stage uses. */
void pb_backend_account(struct pb_backend *be, enum pb_mem_kind kind, size_t bytes, bool add);
/* Moves allocation p of src (src->ops->shares_memory(src, to)) to instance `to`,
 * accounted there as kind: a zero-copy hand-off between stages. Thread-safe. */
void pb_backend_take(struct pb_backend *to, struct pb_backend *src, void *p, enum pb_mem_kind kind);
/* Copies bytes from src_be's buffer src to dst_be's buffer dst: a copy within one
 * instance, a shared-memory copy, or a download, sync and upload through host memory.
 * Returns -1 when the host buffer cannot be allocated. */
int pb_backend_copy_across(struct pb_backend *dst_be, void *dst, struct pb_backend *src_be,
                           const void *src, size_t bytes, struct pb_err *e);

/* Shared helpers of the backend implementations (harness/compute/backend.c). */
void pb_backend_init_common(struct pb_backend *be, const struct pb_backend_ops *ops, void *impl,
                            int device);
void pb_backend_finish_common(struct pb_backend *be);

#ifdef __cplusplus
}
#endif

#endif
