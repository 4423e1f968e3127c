/* harness/compute/cpu/cpu_backend.c — the CPU backend instance (design §2.5): creation
 * (oneDNN engine, stream, thread count), host memory as device memory, the ops
 * table and the helpers every op file shares. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "harness/compute/cpu/cpu_internal.h"

_Noreturn void pb_cpu_die(const char *file, int line, const char *what, dnnl_status_t st)
{
    fprintf(stderr, "pipebench: internal error at %s:%d: oneDNN returned %s (%d) from %s\n",
            file, line, dnnl_status2str(st), (int)st, what);
    abort();
}

bool pb_cpu_begin(struct pb_backend *be)
{
    omp_set_num_threads(pb_cpu_of(be)->nthreads);
    return !be->failed;
}

void *pb_cpu_scratch(struct pb_backend *be, size_t bytes)
{
    if (!bytes || be->failed)
        return NULL;
    struct pb_err e;
    void *p = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, &e);
    if (!p)
        pb_backend_fail(be, "%s", e.msg);
    return p;
}

void pb_cpu_scratch_free(struct pb_backend *be, void *p)
{
    pb_backend_free(be, p);
}

static void cpu_destroy(struct pb_backend *be)
{
    struct pb_cpu *cpu = pb_cpu_of(be);
    omp_set_num_threads(cpu->nthreads);
    pb_cpu_cache_finish(be);
    dnnl_primitive_attr_destroy(cpu->attr);
    dnnl_stream_destroy(cpu->stream);
    dnnl_engine_destroy(cpu->eng);
    pb_backend_finish_common(be);
    free(cpu);
    free(be);
}

static void cpu_sync(struct pb_backend *be)
{
    (void)be;  /* every op completes before it returns */
}

static bool cpu_supports_op(struct pb_backend *be, enum pb_backend_op op)
{
    (void)be;
    return op >= 0 && op < PB_BOP_NOPS;  /* the reference implements them all */
}

/* Host memory of one process: every CPU instance can use another's blocks. */
static bool cpu_shares_memory(const struct pb_backend *be, const struct pb_backend *other)
{
    return strcmp(be->ops->name, other->ops->name) == 0;
}

static size_t cpu_layout_floats(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    (void)be;
    return pb_layout_count(s, l);
}

/* 64-byte aligned host memory (a cache line; what oneDNN's kernels prefer). */
static void *cpu_alloc(struct pb_backend *be, size_t bytes)
{
    (void)be;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64))
        return NULL;
    return p;
}

static void cpu_free(struct pb_backend *be, void *p)
{
    (void)be;
    free(p);
}

static void cpu_copy(struct pb_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (bytes)
        memmove(dst, src, bytes);
}

static void *cpu_write_begin(struct pb_backend *be, void *dst, size_t bytes)
{
    (void)be, (void)bytes;
    return dst;  /* device memory is host memory */
}

static void cpu_write_end(struct pb_backend *be, void *dst, void *host, size_t bytes)
{
    (void)be, (void)dst, (void)host, (void)bytes;
}

static void cpu_fill(struct pb_backend *be, float *dst, float value, size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            dst[i] = value;
    });
}

static const struct pb_backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .sync = cpu_sync,
    .supports_op = cpu_supports_op,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .shares_memory = cpu_shares_memory,
    .host_visible = true,
    .upload = cpu_copy,
    .write_begin = cpu_write_begin,
    .write_end = cpu_write_end,
    .download = cpu_copy,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .layout_floats = cpu_layout_floats,
    .reorder = pb_cpu_reorder,
    .gemm = pb_cpu_gemm,
    .bias_add = pb_cpu_bias_add,
    .bias_grad = pb_cpu_bias_grad,
    .conv_layout = pb_cpu_conv_layout,
    .conv_fwd = pb_cpu_conv_fwd,
    .conv_bwd_data = pb_cpu_conv_bwd_data,
    .conv_bwd_weights = pb_cpu_conv_bwd_weights,
    .pool_workspace = pb_cpu_pool_workspace,
    .pool_fwd = pb_cpu_pool_fwd,
    .pool_bwd = pb_cpu_pool_bwd,
    .bn_aux_bytes = pb_cpu_bn_aux_bytes,
    .bn_fwd_train = pb_cpu_bn_fwd_train,
    .bn_fwd_infer = pb_cpu_bn_fwd_infer,
    .bn_bwd = pb_cpu_bn_bwd,
    .relu_fwd = pb_cpu_relu_fwd,
    .relu_bwd = pb_cpu_relu_bwd,
    .add = pb_cpu_add,
    .add_relu = pb_cpu_add_relu,
    .axpby = pb_cpu_axpby,
    .dropout = pb_cpu_dropout,
    .concat_layout = pb_cpu_concat_layout,
    .concat = pb_cpu_concat,
    .split = pb_cpu_split,
    .softmax_xent = pb_cpu_softmax_xent,
    .embedding_fwd = pb_cpu_embedding_fwd,
    .embedding_bwd = pb_cpu_embedding_bwd,
    .lstm_workspace = pb_cpu_lstm_workspace,
    .lstm_fwd = pb_cpu_lstm_fwd,
    .lstm_bwd = pb_cpu_lstm_bwd,
    .lstm_bwd_keep = pb_cpu_lstm_bwd_keep,
    .lstm_bwd_data = pb_cpu_lstm_bwd_data,
    .lstm_bwd_weights = pb_cpu_lstm_bwd_weights,
    .seq_mean_fwd = pb_cpu_seq_mean_fwd,
    .seq_mean_bwd = pb_cpu_seq_mean_bwd,
    .seq_gather = pb_cpu_seq_gather,
    .attn_workspace = pb_cpu_attn_workspace,
    .attn_fwd = pb_cpu_attn_fwd,
    .attn_bwd = pb_cpu_attn_bwd,
    .attn_bwd_keep = pb_cpu_attn_bwd_keep,
    .attn_bwd_data = pb_cpu_attn_bwd_data,
    .attn_bwd_weights = pb_cpu_attn_bwd_weights,
    .attn_weights = pb_cpu_attn_weights,
    .attn_project_keys = pb_cpu_attn_project_keys,
    .attn_fwd_projected = pb_cpu_attn_fwd_projected,
    .optim_step = pb_cpu_optim_step,
    .predict = pb_cpu_predict,
};

void pb_backend_cpu_libraries(char *buf, size_t cap)
{
    const dnnl_version_t *d = dnnl_version();
    int hash = d->hash && *d->hash && strcmp(d->hash, "N/A");
    snprintf(buf, cap, "oneDNN %d.%d.%d%s%s", d->major, d->minor, d->patch, hash ? " " : "",
             hash ? d->hash : "");
}

struct pb_backend *pb_backend_cpu_create(int nthreads, struct pb_err *e)
{
    if (nthreads <= 0)
        nthreads = omp_get_num_procs();
    struct pb_cpu *cpu = pb_xcalloc(1, sizeof *cpu);
    cpu->nthreads = nthreads;
    if (dnnl_engine_create(&cpu->eng, dnnl_cpu, 0) != dnnl_success) {
        free(cpu);
        pb_err_set(e, "cpu backend: oneDNN could not create a CPU engine (is libdnnl2 "
                      "installed and the CPU supported?)");
        return NULL;
    }
    PB_DNNL(dnnl_stream_create(&cpu->stream, cpu->eng, dnnl_stream_default_flags));
    PB_DNNL(dnnl_primitive_attr_create(&cpu->attr));
    PB_DNNL(dnnl_primitive_attr_set_scratchpad_mode(cpu->attr, dnnl_scratchpad_mode_user));
    pb_cpu_cache_init(&cpu->cache);
    struct pb_backend *be = pb_xcalloc(1, sizeof *be);
    pb_backend_init_common(be, &cpu_ops, cpu, 0);
    return be;
}
