/* workloads/residual_lstm.c — the zoo's recurrent classifier (semantics §5):
 * an embedding V×E (padding index 0), then 4 blocks x + Linear H→H(LSTM H(x)), the mean
 * over time masked by length, Linear H→2. Blocks: embedding, block1 … block4, head (6),
 * so D = 1 … 6 cut at block boundaries; the balanced cut at D = 4 is the paper's,
 * embedding + block1 / block2 / block3 / block4 + head, since the LSTM blocks dominate the
 * cost and any other 4-stage cut puts two of them on one stage (tests/test_seq_model.c).
 * Two workloads until presets exist: `residual-lstm` the paper's sizes (V 10 000,
 * E = H = 128, 200 tokens), `residual-lstm-small` (V 2 000, E = H = 32, 64 tokens).
 * Sequences [B, T, F] travel as [B, T, F, 1] (harness/model/layer.h). */
#include <stdio.h>

#include "workloads/workload.h"

#define RLSTM_BLOCKS 4

static int rlstm_build(struct pb_model *m, const char *name, int vocab, int dim, int steps,
                       struct pb_shape sample, int nclasses, struct pb_err *e)
{
    if (sample.c != steps || sample.h != 1 || sample.w != 1)
        return pb_err_set(e, "%s takes sequences of %d token ids (the imdb dataset, or synthetic "
                             "as its stand-in), not samples of %dx%dx%d", name, steps, sample.c,
                          sample.h, sample.w);
    pb_model_init(m, name, sample, nclasses);
    pb_block_embedding(m, pb_model_block(m, "embedding"), "embedding", vocab, dim, 0);
    for (int i = 0; i < RLSTM_BLOCKS; i++) {
        char bn[16];
        snprintf(bn, sizeof bn, "block%d", i + 1);
        struct pb_block *b = pb_model_block(m, bn);
        pb_block_lstm(m, b, "lstm", dim, dim);
        int fc = pb_block_linear(m, b, "linear", dim, dim);
        int in[2] = {fc, -1};
        pb_block_node(m, b, "add", &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
    }
    struct pb_block *h = pb_model_block(m, "head");
    pb_block_seq_mean(m, h, "mean");
    pb_block_linear(m, h, "linear", dim, nclasses);
    return 0;
}

static int paper_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                       int nclasses, struct pb_err *e)
{
    (void)p;   /* no presets: its sizes are two models */
    return rlstm_build(m, "residual-lstm", 10000, 128, 200, sample, nclasses, e);
}

static int small_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                       int nclasses, struct pb_err *e)
{
    (void)p;
    return rlstm_build(m, "residual-lstm-small", 2000, 32, 64, sample, nclasses, e);
}

const struct pb_workload pb_workload_residual_lstm = {
    .name = "residual-lstm",
    .summary = "embedding 10000x128, 4 residual LSTM-128 blocks, mean over time, fc 2 (IMDb, "
               "200 tokens), 6 blocks",
    .dataset = "imdb",
    .build = paper_build,
    .vocab = 10000,
    .steps = 200,
};

const struct pb_workload pb_workload_residual_lstm_small = {
    .name = "residual-lstm-small",
    .summary = "residual-lstm scaled down: vocabulary 2000, hidden 32, 64 tokens, 6 blocks",
    .dataset = "imdb",
    .build = small_build,
    .vocab = 2000,
    .steps = 64,
};
