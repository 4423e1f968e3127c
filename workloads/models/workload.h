/* workloads/models/workload.h — the model zoo's registry, its presets and the partitioners.
 * A workload builds a model (a chain of blocks) for a dataset's sample shape and
 * class count; the zoo's models (semantics §5.1, §5.2) have presets, `paper` and
 * `small`, that fix their widths and depths, default dataset, input (side or sequence
 * length) and head. A preset may carry its 4-stage paper cut; the other partitions are
 * harness/model/'s. */
#ifndef PB_WORKLOAD_H
#define PB_WORKLOAD_H

#include "harness/model/partition.h"

#define PB_PAPER_STAGES 4

/* What one sample of a preset's model is (pb_preset_sample). */
enum pb_sample_kind {
    PB_SAMPLE_IMAGE,   /* 3×S×S pixels (input_side) */
    PB_SAMPLE_TOKENS,  /* a classifier's sequence: steps token ids */
    PB_SAMPLE_PAIR,    /* a translation model's source and target: 2·steps ids (dataset.h) */
};

struct pb_preset {
    const char *name;       /* "paper" or "small" */
    const char *summary;    /* one line for `pipebench list` */
    const char *dataset;    /* the dataset it trains on by default */
    int input_side;         /* S: the model takes 3×S×S inputs (the data pipeline crops or
                               resizes to it); 0 for a sequence model */
    bool no_flip;           /* it trains without the horizontal flip (Inception-V3) */
    int classes;            /* the head's width, whatever the dataset's class count (the
                               paper's 1000-way heads on Tiny-ImageNet's 200 classes) */
    /* the 4-stage cut: the names of the first blocks of stages 1, 2 and 3 (semantics §5.3's
       paper partitions; the small presets' cut the same structure), or NULL */
    const char *cut[PB_PAPER_STAGES - 1];
    const void *arch;       /* the model's widths and depths (its own struct) */
    enum pb_sample_kind sample;  /* what a sample is: an image, or how vocab and steps make
                                    one */
    int vocab, steps;       /* a sequence model: its vocabulary (token ids below it) and the
                               tokens its sequences (a translation model: each side of its
                               pairs) are padded or cut to; 0 for images */
    /* the optimizer a run takes when it names none (NULL: the runs' default, sgdm) and
       its rate (0: that optimizer's default); --optimizer and --lr override them */
    const char *optimizer;
    float lr;
};

struct pb_workload {
    const char *name, *summary;
    const char *dataset;  /* the dataset it trains on by default (its presets' too) */
    /* Builds the model for samples of `sample`'s shape and a head of nclasses; p is
     * one of its presets, NULL for a workload without presets. */
    int (*build)(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                 int nclasses, struct pb_err *e);
    const struct pb_preset *presets;  /* NULL, or an array ended by a NULL name */
    /* sequence models: the vocabulary (token ids below it) and the tokens per sample
     * their data is padded or truncated to; 0 for models of images */
    int vocab, steps;
};

/* The preset every workload with presets takes when none is named. */
#define PB_DEFAULT_PRESET "small"

/* NULL-terminated registry (workloads/models/registry.c). */
extern const struct pb_workload *const pb_workloads[];
/* Finds a workload; an unknown name gets a message listing the valid ones. */
const struct pb_workload *pb_workload_find(const char *name, struct pb_err *e);

/* The preset `name` of w (NULL: PB_DEFAULT_PRESET, or none for a workload without
 * presets) into *out (NULL when none). An unknown preset, or any preset on a workload
 * without presets, is an error saying which presets there are. */
int pb_workload_preset(const struct pb_workload *w, const char *name, const struct pb_preset **out,
                       struct pb_err *e);

/* The preset a run of `model` with --preset `name` (NULL: the default) takes, or NULL
 * where the model is unknown, has no presets or no such preset (the run's checks say
 * which later). */
const struct pb_preset *pb_preset_lookup(const char *model, const char *name);

/* A preset's sample shape: 3×S×S, a classifier's steps token ids or a translation
 * model's 2·steps, as p->sample says. */
struct pb_shape pb_preset_sample(const struct pb_preset *p);

/* Whether a run takes the paper cut: `name` is --partition (harness/model/partition.h's
 * methods or bounds; NULL: the default, paper for the paper preset at D = 4, else
 * PB_PARTITION_DEFAULT). "paper" where there is no 4-stage cut or D != 4 is an error
 * saying what to change, and so is a --partition that does not parse. */
int pb_partition_choose(const struct pb_preset *p, const char *model, const char *name, int stages,
                        bool *paper, struct pb_err *e);

/* The preset's 4-stage cut of the model it built: bounds[0..4] from the block names
 * p->cut (each found after the one before, else an error naming it). */
int pb_partition_paper(const struct pb_model *m, const struct pb_preset *p, int *bounds,
                       struct pb_err *e);

#endif
