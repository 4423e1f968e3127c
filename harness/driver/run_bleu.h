/* harness/driver/run_bleu.h — a translation model's validation BLEU at the end of each
 * epoch (run_bleu.c): how it is scored, chosen once before the run is recorded, and the
 * score of the current weights. */
#ifndef PB_RUN_BLEU_H
#define PB_RUN_BLEU_H

#include "harness/driver/local_stages.h"
#include "workloads/evaluation/bleu/bleu.h"

struct pb_run_bleu {
    const struct pb_plan *plan;
    const char *scoring;          /* "detok-raw", "bpe-merged" or NULL (no BLEU) */
    bool wmt16;                   /* the ids' text is the wmt16 folder's vocabulary, */
    char vocab_path[4200];        /* this file */
    struct pb_dataset val;        /* the validation split with inputs and targets, when
                                     the plan's lacks a part (loaded at the first epoch) */
    struct pb_bleu_lines raw;     /* the raw reference (newstest2014.de) when the wmt16
                                     folder has it, else empty */
};

/* How plan p's validation BLEU will be scored (rank 0, before the run is recorded): with
 * the wmt16 folder's raw newstest2014.de, read here, "detok-raw" (the MLPerf reference's
 * way); else "bpe-merged"; NULL for other models. -1 with a message for a raw file that
 * cannot be read or is not line-aligned with the test split. b starts zeroed (other ranks
 * only set b->plan). */
int pb_run_bleu_prepare(struct pb_run_bleu *b, const struct pb_plan *p, struct pb_err *e);
void pb_run_bleu_finish(struct pb_run_bleu *b);

/* The validation BLEU (0 to 100) of the local stages' weights, decoded on a one-stage
 * copy of the model at rank 0 (--beam); NaN for other models and on the other ranks. A
 * collective. */
int pb_run_val_bleu(struct pb_run_bleu *b, struct pb_local_stages *ls, double *bleu,
                    struct pb_err *e);

#endif
