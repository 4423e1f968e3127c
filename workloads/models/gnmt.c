/* workloads/models/gnmt.c — GNMT-8 and GNMT-16 (docs/reproducing.md #8, #9; the MLPerf GNMT reference's
 * seq2seq/models: ResidualRecurrentEncoder, RecurrentAttention, ResidualRecurrentDecoder),
 * trained with teacher forcing on wmt16-de-en (or its synthetic stand-in).
 * Encoder: embedding V×H (padding 0), a bidirectional LSTM H→2H packed by the source
 * lengths, an LSTM 2H→H, then LSTMs H→H with residual. Decoder: embedding V×H, the
 * recurrent attention (an LSTM H→H over the whole target, then the normalised Bahdanau
 * attention of its outputs over the encoder's, masked by the source lengths), LSTMs
 * [output; context] 2H→H with residual from the second on, the classifier H→V per step.
 * Dropout 0.2 before every LSTM, on its input; none before the classifier.
 * Init as the reference: U(−0.1, 0.1) for the embeddings, the LSTMs (bias_hh 0,
 * init_lstm_) and the classifier's weight and bias; the attention's is its own.
 * The reference's default shares one embedding between encoder and decoder; the paper's
 * partition puts them on different stages, so here they are two (its share_embedding=False).
 *
 * Teacher forcing: a sample is [2T] ids (dataset.h), source then target, each side
 * BOS … EOS padded with 0. The decoder reads target id t at step t and its label is id
 * t + 1 (pb_dataset_gather_next_tokens: PAD at step T − 1), so the decoder has T steps
 * and T labels per sentence, the padding ones ignored in the loss per token.
 *
 * One tensor crosses each block boundary (and so each stage boundary), so a block packs
 * what the later blocks need beside its own output as extra features, [B, T, F, 1]:
 *   embedding, encoder1 … encoderE: [encoder state; the decoder's input ids as floats]
 *     (F = H + 1, 2H + 1 after the bidirectional layer)
 *   decoder_embedding: [encoder output; decoder embedding] (2H)
 *   decoder1 … decoder(L−1): [decoder output; attention context] (2H)
 *   decoderL: the decoder output (H); classifier: the logits [B, T, V, 1]
 * and the next block slices them apart. Packing over features keeps every boundary
 * one plain tensor (the executors, channels and checkpoints unchanged) at the cost of
 * a copy of the carried parts per block, small beside an LSTM's work; the ids are exact
 * in float32 (V < 2^24) and get a zero gradient.
 * Blocks: embedding, encoder1 … encoderE, decoder_embedding, decoder1 … decoderL,
 * classifier (11 for GNMT-8, 19 for GNMT-16), each of the definition's top-level modules, so
 * the checkpoint keys are the state_dict's of tests/fixtures/fixtures_zoo.py's GNMT:
 * enc_embedder, enc_layers.<i>, dec_embedder, att_rnn, attn, dec_layers.<i>, classifier
 * (older checkpoints: "stage<k>.<block>.embedding|lstm|attn|classifier.*", legacy_name). */
#include <stdio.h>

#include "workloads/datasets/dataset.h"
#include "workloads/models/archs.h"
#include "workloads/models/workload.h"

#define GNMT_INIT 0.1f
#define GNMT_DROPOUT 0.2f

/* A node reading one node (-1: the block input). */
static int node1(struct pb_model *m, struct pb_block *b, const char *name,
                 struct pb_layer_cfg cfg, int in)
{
    return pb_block_node(m, b, name, &cfg, 1, &in);
}

static int concat2(struct pb_model *m, struct pb_block *b, const char *name, int x, int y)
{
    int in[2] = {x, y};
    return pb_block_feature_concat(m, b, name, 2, in);
}

static int add2(struct pb_model *m, struct pb_block *b, const char *name, int x, int y)
{
    int in[2] = {x, y};
    return pb_block_node(m, b, name, &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
}

static int dropout(struct pb_model *m, struct pb_block *b, int in)
{
    return node1(m, b, "dropout", (struct pb_layer_cfg){.kind = PB_LAYER_DROPOUT, .p = GNMT_DROPOUT},
                 in);
}

static int lstm(struct pb_model *m, struct pb_block *b, const char *name, int in, int in_f,
                int hidden, bool bidirectional)
{
    int x = node1(m, b, name,
                  (struct pb_layer_cfg){.kind = PB_LAYER_LSTM, .in_features = in_f,
                                        .out_features = hidden, .bidirectional = bidirectional,
                                        .num_layers = 1},
                  in);
    return pb_block_legacy_name(b, x, "lstm");
}

static int embedding(struct pb_model *m, struct pb_block *b, const char *name, int in, int vocab,
                     int dim)
{
    int x = node1(m, b, name,
                  (struct pb_layer_cfg){.kind = PB_LAYER_EMBEDDING, .in_features = vocab,
                                        .out_features = dim, .padding_idx = PB_WMT16_PAD},
                  in);
    return pb_block_legacy_name(b, x, "embedding");
}

/* Encoder layer k (1-based) over [x; ids] of in_f + 1 features: the LSTM of dropout(x),
 * plus x from the third layer on, then [y; ids]. */
static void encoder_layer(struct pb_model *m, int k, int in_f, int hidden)
{
    char name[24], layer[24];
    snprintf(name, sizeof name, "encoder%d", k);
    snprintf(layer, sizeof layer, "enc_layers.%d", k - 1);
    struct pb_block *b = pb_model_top_block(m, name);
    int x = pb_block_slice(m, b, "state", -1, 2, 0, in_f);
    int ids = pb_block_slice(m, b, "ids", -1, 2, in_f, in_f + 1);
    int y = lstm(m, b, layer, dropout(m, b, x), in_f, hidden, k == 1);
    if (k >= 3)
        y = add2(m, b, "add", y, x);
    concat2(m, b, "pack", y, ids);
}

/* Decoder layer k >= 2 over [x; context] (2H): the LSTM of dropout([x; context]), plus x
 * from the third layer on, then [y; context] except on the last layer. */
static void decoder_layer(struct pb_model *m, int k, bool last, int hidden)
{
    char name[24], layer[24];
    snprintf(name, sizeof name, "decoder%d", k);
    snprintf(layer, sizeof layer, "dec_layers.%d", k - 2);
    struct pb_block *b = pb_model_top_block(m, name);
    int y = lstm(m, b, layer, dropout(m, b, -1), 2 * hidden, hidden, false);
    if (k >= 3)
        y = add2(m, b, "add", y, pb_block_slice(m, b, "residual", -1, 2, 0, hidden));
    if (!last)
        concat2(m, b, "pack", y, pb_block_slice(m, b, "context", -1, 2, hidden, 2 * hidden));
}

static int gnmt_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                      int nclasses, struct pb_err *e, const char *name)
{
    const struct gnmt_arch *a = p->arch;
    int T = p->steps, H = a->hidden, V = nclasses;
    if (sample.c != 2 * T || sample.h != 1 || sample.w != 1)
        return pb_err_set(e, "%s (preset %s) takes pairs of %d-token sentences, %d ids a sample "
                             "(the wmt16-de-en dataset, or synthetic as its stand-in), not "
                             "samples of %dx%dx%d", name, p->name, T, 2 * T, sample.c, sample.h,
                          sample.w);
    if (V < 4)
        return pb_err_set(e, "%s needs a vocabulary of at least the 4 special tokens (got %d)",
                          name, V);
    pb_model_init(m, name, sample, V);
    m->label_steps = T;
    m->ignore_label = PB_WMT16_PAD;
    m->grad_per_sentence = a->per_sentence;

    struct pb_block *b = pb_model_top_block(m, "embedding");
    int src = pb_block_slice(m, b, "source", -1, 1, 0, T);
    int ids = pb_block_slice(m, b, "target", -1, 1, T, 2 * T);
    concat2(m, b, "pack", embedding(m, b, "enc_embedder", src, V, H), ids);
    encoder_layer(m, 1, H, H);
    encoder_layer(m, 2, 2 * H, H);
    for (int k = 3; k <= a->enc_layers; k++)
        encoder_layer(m, k, H, H);

    b = pb_model_top_block(m, "decoder_embedding");
    int enc = pb_block_slice(m, b, "encoder", -1, 2, 0, H);
    ids = pb_block_slice(m, b, "ids", -1, 2, H, H + 1);
    concat2(m, b, "pack", enc, embedding(m, b, "dec_embedder", ids, V, H));

    b = pb_model_top_block(m, "decoder1");  /* the recurrent attention */
    enc = pb_block_slice(m, b, "encoder", -1, 2, 0, H);
    int emb = pb_block_slice(m, b, "embedding", -1, 2, H, 2 * H);
    int q = lstm(m, b, "att_rnn", dropout(m, b, emb), H, H, false);
    int att = pb_block_legacy_name(b, pb_block_attention(m, b, "attn", q, enc, H, H, H), "attn");
    concat2(m, b, "pack", q, att);
    for (int k = 2; k <= a->dec_layers; k++)
        decoder_layer(m, k, k == a->dec_layers, H);

    b = pb_model_top_block(m, "classifier");
    int cls = node1(m, b, "classifier",
                    (struct pb_layer_cfg){.kind = PB_LAYER_LINEAR, .in_features = H,
                                          .out_features = V, .bias = true},
                    -1);
    pb_block_legacy_name(b, cls, "classifier");

    struct pb_init_spec u = {.kind = PB_INIT_UNIFORM, .lo = -GNMT_INIT, .hi = GNMT_INIT};
    pb_model_set_init(m, PB_LAYER_EMBEDDING, u);
    pb_model_set_init(m, PB_LAYER_LINEAR, u);
    u.zero_bias = true;  /* bias_hh */
    pb_model_set_init(m, PB_LAYER_LSTM, u);
    return 0;
}

static int gnmt8_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                       int nclasses, struct pb_err *e)
{
    return gnmt_build(m, p, sample, nclasses, e, "gnmt8");
}

static int gnmt16_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                        int nclasses, struct pb_err *e)
{
    return gnmt_build(m, p, sample, nclasses, e, "gnmt16");
}

/* the paper presets train the paper's objective; the small ones the mean per token, which
 * tests/fixtures' PyTorch trajectories use */
static const struct gnmt_arch gnmt8_paper = {1024, 4, 4, true}, gnmt8_small = {64, 4, 4, false};
static const struct gnmt_arch gnmt16_paper = {1024, 8, 8, true}, gnmt16_small = {64, 8, 8, false};

/* small: hidden 64 over the synthetic stand-in's 256-id vocabulary and 20-token sides
 * (sources of 8.4 ids on average), which two cores train in about a minute an epoch
 * of 2000 pairs */
#define SMALL_VOCAB 256
#define SMALL_STEPS 20

static const struct pb_preset gnmt8_presets[] = {
    {.name = "paper",
     .summary = "hidden 1024, 4 + 4 layers, vocabulary 32320, 50 tokens a side",
     .dataset = "wmt16-de-en", .classes = PB_WMT16_VOCAB, .vocab = PB_WMT16_VOCAB, .steps = 50,
     .sample = PB_SAMPLE_PAIR, .cut = {"encoder3", "decoder2", "decoder4"}, .arch = &gnmt8_paper},
    {.name = "small",
     .summary = "hidden 64, 4 + 4 layers, vocabulary 256, 20 tokens a side",
     .dataset = "wmt16-de-en", .classes = SMALL_VOCAB, .vocab = SMALL_VOCAB, .steps = SMALL_STEPS,
     .sample = PB_SAMPLE_PAIR, .cut = {"encoder3", "decoder2", "decoder4"}, .arch = &gnmt8_small},
    {0},
};

static const struct pb_preset gnmt16_presets[] = {
    {.name = "paper",
     .summary = "hidden 1024, 8 + 8 layers, vocabulary 32320, 50 tokens a side",
     .dataset = "wmt16-de-en", .classes = PB_WMT16_VOCAB, .vocab = PB_WMT16_VOCAB, .steps = 50,
     .sample = PB_SAMPLE_PAIR, .cut = {"encoder6", "decoder3", "decoder7"}, .arch = &gnmt16_paper},
    {.name = "small",
     .summary = "hidden 64, 8 + 8 layers, vocabulary 256, 20 tokens a side",
     .dataset = "wmt16-de-en", .classes = SMALL_VOCAB, .vocab = SMALL_VOCAB, .steps = SMALL_STEPS,
     .sample = PB_SAMPLE_PAIR, .cut = {"encoder6", "decoder3", "decoder7"}, .arch = &gnmt16_small},
    {0},
};

const struct pb_workload pb_workload_gnmt8 = {
    .name = "gnmt8",
    .summary = "GNMT: bidirectional + 3 residual LSTM encoder, recurrent attention + 3 LSTM "
               "decoder, loss per token (WMT16 En-De), 11 blocks",
    .dataset = "wmt16-de-en",
    .build = gnmt8_build,
    .presets = gnmt8_presets,
    .vocab = PB_WMT16_VOCAB,
    .steps = 50,
};

const struct pb_workload pb_workload_gnmt16 = {
    .name = "gnmt16",
    .summary = "GNMT with 8 encoder and 8 decoder layers (WMT16 En-De), 19 blocks",
    .dataset = "wmt16-de-en",
    .build = gnmt16_build,
    .presets = gnmt16_presets,
    .vocab = PB_WMT16_VOCAB,
    .steps = 50,
};
