/* workloads/evaluation/decode/stage_bleu.c — a translation dataset's BLEU decoded with a stage
 * (stage_decoder.h): batches of sentences in file order, each decoded by the GNMT step
 * decoder (gnmt_step_decoder.h, O(T) a sentence) when the model is GNMT's, else by the
 * stage decoder (O(T²), any translation model), hypothesis and reference text by
 * pb_decode_text (or, the reference's way, the hypothesis detokenised against the raw
 * reference line of the same index), and the stand-in's vocabulary of names. */
#include <stdlib.h>
#include <string.h>

#include "workloads/evaluation/decode/gnmt_step_decoder.h"
#include "workloads/evaluation/decode/stage_decoder.h"

void pb_stage_decoder_synthetic_vocab(struct pb_wmt16_vocab *v, int size)
{
    static const char *const special[4] = {"<pad>", "<unk>", "<s>", "<\\s>"};
    memset(v, 0, sizeof *v);
    v->size = size;
    v->tok = pb_xcalloc((size_t)size, sizeof *v->tok);
    for (int i = 0; i < size; i++) {
        char buf[24];
        snprintf(buf, sizeof buf, "w%d", i);
        v->tok[i] = pb_xstrdup(i < 4 ? special[i] : buf);
    }
}

/* How a sentence is scored: raw NULL, against its target ids' text with sacreBLEU's
 * defaults; else detokenised against raw[i] under bo. */
struct scoring {
    const struct pb_bleu_opts *bo;
    char *const *raw;
};

/* Adds the hypothesis and reference texts of sentence i to b (and the files). */
static int add_pair(const struct pb_wmt16_vocab *v, const int32_t *hyp, int hyp_len,
                    const int32_t *ref, int ref_len, const struct scoring *sc, int i,
                    struct pb_bleu *b, FILE *fh, FILE *fr, struct pb_err *e)
{
    char *h = NULL, *r = NULL;
    int rc = pb_decode_text(v, hyp, hyp_len, &h, e);
    if (!rc && sc->raw) {
        char *d = pb_detok(h, sc->bo->detok);
        free(h);
        h = d;
        r = pb_xstrdup(sc->raw[i]);
        struct pb_bleu_opts o = *sc->bo;
        o.merge_bpe = false;
        o.detok = PB_DETOK_NONE;
        pb_bleu_add_opts(b, h, r, &o);
    } else if (!rc) {
        rc = pb_decode_text(v, ref, ref_len, &r, e);
        if (!rc)
            pb_bleu_add(b, h, r);
    }
    if (!rc) {
        if (fh)
            fprintf(fh, "%s\n", h);
        if (fr)
            fprintf(fr, "%s\n", r);
    }
    free(h);
    free(r);
    return rc;
}

static int decode_bleu(struct pb_stage *s, const struct pb_dataset *ds, int count,
                       const struct pb_decode_opts *o, const struct pb_wmt16_vocab *v,
                       const struct scoring *sc, struct pb_bleu *b, FILE *hyp, FILE *ref,
                       struct pb_err *e)
{
    int T = s->model->label_steps, K = o->beam > 0 ? o->beam : 1;
    int B = s->model->batch / K;
    if (!ds->x || !ds->tgt || !ds->len || ds->tgt_steps != T)
        return pb_err_set(e, "decoding needs a translation dataset of %d-token sides, its "
                             "inputs and targets loaded", T);
    if (B < 1)
        return pb_err_set(e, "a model built for %d rows cannot hold beams of %d",
                          s->model->batch, K);
    if (count > ds->n)
        count = ds->n;
    struct pb_decode_opts opts = *o;
    opts.beam = K;
    if (opts.max_len > T)
        opts.max_len = T;
    if (pb_decode_check(&opts, e))
        return -1;
    float *x = pb_xmalloc((size_t)B * 2 * T * sizeof *x);
    int32_t *src = pb_xmalloc((size_t)B * T * sizeof *src);
    int32_t *tgt = pb_xmalloc((size_t)B * T * sizeof *tgt);
    int32_t *len = pb_xmalloc((size_t)B * sizeof *len);
    int rc = 0;
    bool gnmt = pb_gnmt_layout_applies(s->model);
    for (int first = 0; first < count && !rc; first += B) {
        int n = count - first < B ? count - first : B;
        pb_dataset_gather(ds, (struct pb_data_key){0, 0, false}, NULL, first, n, x, NULL);
        pb_dataset_gather_lengths(ds, NULL, first, n, len);
        pb_dataset_gather_targets(ds, NULL, first, n, tgt);
        for (int i = 0; i < n; i++)
            for (int p = 0; p < T; p++)
                src[(size_t)i * T + p] = (int32_t)x[(size_t)i * 2 * T + p];
        struct pb_stage_decoder sd;
        struct pb_gnmt_step_decoder gd;
        struct pb_decoder d;
        struct pb_decoded out = {0};
        if ((rc = gnmt ? pb_gnmt_step_decoder_init(&gd, s, src, len, n, &d, e)
                       : pb_stage_decoder_init(&sd, s, src, len, n, &d, e)))
            break;
        rc = o->beam > 0 ? pb_decode_beam(&d, n, len, &opts, &out, e)
                         : pb_decode_greedy(&d, n, len, opts.max_len, &out, e);
        if (gnmt)
            pb_gnmt_step_decoder_finish(&gd);
        else
            pb_stage_decoder_finish(&sd);
        for (int i = 0; i < n && !rc; i++)
            rc = add_pair(v, out.tokens + (size_t)i * out.max_len, out.len[i],
                          tgt + (size_t)i * T, T, sc, first + i, b, hyp, ref, e);
        pb_decoded_finish(&out);
    }
    free(x);
    free(src);
    free(tgt);
    free(len);
    return rc;
}

int pb_stage_decode_bleu(struct pb_stage *s, const struct pb_dataset *ds, int count,
                         const struct pb_decode_opts *o, const struct pb_wmt16_vocab *v,
                         struct pb_bleu *b, FILE *hyp, FILE *ref, struct pb_err *e)
{
    struct scoring sc = {0};
    return decode_bleu(s, ds, count, o, v, &sc, b, hyp, ref, e);
}

int pb_stage_decode_bleu_raw(struct pb_stage *s, const struct pb_dataset *ds, int count,
                             const struct pb_decode_opts *o, const struct pb_wmt16_vocab *v,
                             const struct pb_bleu_opts *bo, char *const *raw, struct pb_bleu *b,
                             FILE *hyp, FILE *ref, struct pb_err *e)
{
    struct scoring sc = {bo, raw};
    return decode_bleu(s, ds, count, o, v, &sc, b, hyp, ref, e);
}
