/* harness/driver/run_bleu.c — a translation model's validation BLEU at the end of an
 * epoch (run_bleu.h): every stage's weights gathered to rank 0 into a one-stage copy
 * of the model (the same workload and preset, all blocks, built for B·K rows), the
 * validation split decoded on a backend of its own (stage 0's kind and threads; the
 * stages' memory records stay theirs) by pb_stage_decode_bleu (workloads/evaluation/decode/
 * stage_decoder.h: GNMT's O(T) step decoder; greedy for --beam 0, else the paper's beam
 * search of K: length normalisation and coverage penalty), and
 * scored the MLPerf reference's way when the data folder has the raw newstest2014.de
 * (BPE merged, detokenised, against the raw line, lowercased, intl tokenisation), else as
 * BPE-merged text against the split's targets. The numbers depend on the weights only,
 * not on the executor or D. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/driver/run_bleu.h"
#include "workloads/evaluation/decode/stage_decoder.h"

/* The validation split with inputs and targets: r->val when it holds both, else one
 * loaded once for decoding. */
static int bleu_data(struct pb_run_bleu *b, const struct pb_dataset **out, struct pb_err *e)
{
    const struct pb_plan *r = b->plan;
    if (r->val.x && r->val.tgt) {
        *out = &r->val;
        return 0;
    }
    if (!b->val.n) {
        struct pb_dataset_opts opts;
        const char *ds = pb_plan_data_opts(r, &opts);
        opts.parts = 0;
        if (pb_dataset_load_opts(&b->val, ds, r->cfg->data_dir, PB_SPLIT_TEST,
                                 r->cfg->limit_val, r->cfg->seed, &opts, e))
            return -1;
    }
    *out = &b->val;
    return 0;
}

/* The ids' text: the wmt16 vocabulary of the data folder, or the stand-in's names. */
static int bleu_vocab(const struct pb_run_bleu *b, struct pb_wmt16_vocab *v, struct pb_err *e)
{
    if (b->wmt16)
        return pb_wmt16_vocab_load(v, b->vocab_path, e);
    pb_stage_decoder_synthetic_vocab(v, b->plan->model.nclasses);
    return 0;
}

/* Decodes with the gathered weights ps, bs of the D stages' layouts lay. */
/* The score's destination beside the run's BLEU state. */
struct decode_to {
    struct pb_run_bleu *b;
    double *bleu;
};

static int decode(void *ctx, struct pb_stage *lay, float *const *ps, float *const *bs,
                  struct pb_err *e)
{
    struct decode_to *to = ctx;
    double *bleu = to->bleu;
    const struct pb_plan *r = to->b->plan;
    const struct pb_run_cfg *c = r->cfg;
    int K = c->beam > 0 ? c->beam : 1;
    const struct pb_dataset *ds;
    struct pb_wmt16_vocab v = {0};
    struct pb_model m = {0};
    struct pb_stage s = {0};
    struct pb_backend *be = NULL;
    bool built = false, staged = false;
    int rc = bleu_data(to->b, &ds, e) || bleu_vocab(to->b, &v, e);
    if (!rc)
        rc = r->workload->build(&m, r->preset, r->model.input, r->model.nclasses, e);
    built = !rc;
    if (!rc)
        rc = pb_model_finalize(&m, c->microbatch_size * K, e);
    if (!rc) {
        struct pb_backend_cfg bc = {.device = r->devices[0], .threads = r->stage_threads,
                                    .tf32 = r->cfg->tf32, .deterministic = r->cfg->deterministic};
        be = r->backend->create(&bc, e);
        rc = be ? 0 : -1;
    }
    /* index 0 of 2: not the last stage, so the forward gives the logits */
    if (!rc)
        rc = pb_stage_init(&s, be, &m, 0, 2, 0, m.nblocks, e);
    staged = !rc;
    size_t po = 0, bo = 0;
    for (int k = 0; !rc && k < c->stages; k++) {
        s.be->ops->upload(s.be, s.params + po, ps[k], lay[k].nparams * sizeof(float));
        s.be->ops->upload(s.be, s.buffers + bo, bs[k], lay[k].nbuffers * sizeof(float));
        po += lay[k].nparams;
        bo += lay[k].nbuffers;
    }
    PB_CHECK(rc || (po == s.nparams && bo == s.nbuffers));
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    o.beam = c->beam;
    struct pb_bleu b = {0};
    struct pb_bleu_opts mlperf;
    pb_bleu_opts_mlperf(&mlperf);
    if (!rc && to->b->raw.n)
        rc = pb_stage_decode_bleu_raw(&s, ds, r->nval, &o, &v, &mlperf, to->b->raw.line, &b,
                                      NULL, NULL, e);
    else if (!rc)
        rc = pb_stage_decode_bleu(&s, ds, r->nval, &o, &v, &b, NULL, NULL, e);
    if (!rc) {
        struct pb_bleu_score sc;
        pb_bleu_score(&b, &sc);
        *bleu = sc.bleu;
    }
    if (staged)
        pb_stage_finish(&s);
    if (be)
        pb_backend_destroy(be);
    if (built)
        pb_model_finish(&m);
    pb_wmt16_vocab_finish(&v);
    return rc ? pb_err_prefix(e, "validation BLEU: ") : 0;
}

int pb_run_val_bleu(struct pb_run_bleu *b, struct pb_local_stages *ls, double *bleu,
                    struct pb_err *e)
{
    *bleu = NAN;
    if (!b->plan->model.label_steps || b->plan->nval < 1)
        return 0;
    struct decode_to to = {b, bleu};
    return pb_local_stages_weights(ls, b->plan, decode, &to, e);
}

/* The lines of the file at path ('\n'-ended; a last line needs none), or -1. */
static long count_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long n = 0;
    int c, last = '\n';
    while ((c = getc(f)) != EOF) {
        n += c == '\n';
        last = c;
    }
    fclose(f);
    return n + (last != '\n');
}

int pb_run_bleu_prepare(struct pb_run_bleu *b, const struct pb_plan *r, struct pb_err *e)
{
    b->plan = r;
    if (!r->model.label_steps || r->nval < 1)
        return 0;
    b->scoring = "bpe-merged";
    b->wmt16 = !strcmp(r->dataset, "wmt16-de-en");
    if (!b->wmt16)
        return 0;
    const char *origin;
    const char *dir = pb_dataset_dir(r->dataset, r->cfg->data_dir, &origin);
    pb_wmt16_path(b->vocab_path, sizeof b->vocab_path, dir, "vocab.bpe.32000");
    char raw[4200], tok[4200];
    pb_wmt16_path(raw, sizeof raw, dir, "newstest2014.de");
    pb_wmt16_path(tok, sizeof tok, dir, "newstest2014.tok.bpe.32000.de");
    struct stat st;
    if (stat(raw, &st) || !S_ISREG(st.st_mode))
        return 0;
    if (pb_bleu_read_lines(raw, "raw reference", &b->raw, e))
        return pb_err_prefix(e, "validation BLEU: ");
    long n = count_lines(tok);
    if (n != b->raw.n) {
        pb_err_set(e, "validation BLEU: the raw reference %s has %ld lines but the test split "
                      "%s has %ld: line i of one must be the reference of line i of the "
                      "other (MLPerf's download_dataset.sh leaves both); fix or remove %s "
                      "to score BPE-merged text instead", raw, b->raw.n, tok, n, raw);
        pb_bleu_lines_finish(&b->raw);
        return -1;
    }
    b->scoring = "detok-raw";
    return 0;
}

void pb_run_bleu_finish(struct pb_run_bleu *b)
{
    pb_dataset_finish(&b->val);
    pb_bleu_lines_finish(&b->raw);
}
