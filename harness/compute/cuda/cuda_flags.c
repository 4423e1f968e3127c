/* harness/compute/cuda/cuda_flags.c — errors the kernels detect (a token outside the
 * vocabulary, a length or a label out of range), surfaced at sync through the instance's
 * device flag; the messages are the CPU's checks' (cpu_seq.c token_row, seq_len; cpu_loss.c;
 * cpu_attention.c check_lengths). */
#include "harness/compute/cuda/cuda_internal.h"

#include <stdio.h>
#include <string.h>

#define FLAG_BYTES (PB_CUDA_FLAG_INTS * sizeof(int))

bool pb_cuda_flag_arm(struct pb_backend *be, struct pb_cuda_flag_ref *ref)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (!cu->error_flag) {
        struct pb_err e;
        cu->error_flag = pb_backend_alloc(be, FLAG_BYTES, PB_MEM_SCRATCH, &e);
        if (!cu->error_flag) {
            pb_backend_fail(be, "%s", e.msg);
            return false;
        }
        if (!PB_CUDA(be, cudaMemsetAsync(cu->error_flag, 0, FLAG_BYTES, cu->stream)))
            return false;
    }
    if (++cu->flag_seq == 0)
        cu->flag_seq = 1;
    cu->flag_armed = true;
    *ref = (struct pb_cuda_flag_ref){cu->error_flag, cu->flag_seq};
    return true;
}

bool pb_cuda_flag_message(const int *f, char *msg, size_t cap)
{
    if (f[0] == 0)
        return false;
    uint64_t key;
    memcpy(&key, f + 4, sizeof key);
    key = ~key;
    unsigned index = (unsigned)(key >> 32);
    uint32_t value = (uint32_t)key;
    int32_t ivalue;
    float fvalue;
    memcpy(&ivalue, &value, sizeof ivalue);
    memcpy(&fvalue, &value, sizeof fvalue);
    int limit = f[2];
    switch (f[1]) {
    case PB_CUDA_FLAG_TOKEN:
        snprintf(msg, cap, "embedding: token %g (position %u) is not a whole number in [0, %d) "
                           "(the dataset's vocabulary is larger than the model's?)",
                 (double)fvalue, index, limit);
        break;
    case PB_CUDA_FLAG_SEQ_MEAN:
    case PB_CUDA_FLAG_SEQ_GATHER:
        snprintf(msg, cap, "%s: sequence %u has length %d, outside [1, %d]",
                 f[1] == PB_CUDA_FLAG_SEQ_MEAN ? "seq_mean" : "seq_gather", index, (int)ivalue,
                 limit);
        break;
    case PB_CUDA_FLAG_LABEL:
        snprintf(msg, cap, "softmax_xent: row %u has label %d, outside the %d classes [0, %d)",
                 index, (int)ivalue, limit, limit);
        break;
    case PB_CUDA_FLAG_ATTN_LEN:
        snprintf(msg, cap, "attention: source %u has length %d, outside [1, %d]", index,
                 (int)ivalue, limit);
        break;
    default:
        snprintf(msg, cap, "cuda backend: a kernel raised the unknown error code %d", f[1]);
        break;
    }
    return true;
}

bool pb_cuda_check_flags(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (!cu->flag_armed || be->failed)
        return !be->failed;
    int f[PB_CUDA_FLAG_INTS];
    if (!PB_CUDA(be, cudaMemcpyAsync(f, cu->error_flag, FLAG_BYTES, cudaMemcpyDeviceToHost,
                                     cu->stream)) ||
        !PB_CUDA(be, cudaStreamSynchronize(cu->stream)))
        return false;
    cu->flag_armed = false;
    cu->flag_seq = 0;
    char msg[256];
    if (!pb_cuda_flag_message(f, msg, sizeof msg))
        return true;
    pb_backend_fail(be, "%s", msg);
    /* cleared for the instance's next ops (the instance itself stays failed) */
    PB_CUDA(be, cudaMemsetAsync(cu->error_flag, 0, FLAG_BYTES, cu->stream));
    return false;
}

void pb_cuda_flags_release(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (cu->error_flag)
        pb_backend_free(be, cu->error_flag);
    cu->error_flag = NULL;
    cu->flag_armed = false;
}
