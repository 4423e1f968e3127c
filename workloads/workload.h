/* workloads/workload.h — the model zoo's registry and the partitioner.
 * A workload builds a model (a chain of blocks) for a dataset's sample shape and
 * class count; the partitioner cuts the chain into D stages of balanced cost. */
#ifndef PB_WORKLOAD_H
#define PB_WORKLOAD_H

#include "harness/model/model.h"

struct pb_workload {
    const char *name, *summary;
    const char *dataset;  /* the dataset it trains on by default */
    int (*build)(struct pb_model *m, struct pb_shape sample, int nclasses, struct pb_err *e);
    /* sequence models: the vocabulary (token ids below it) and the tokens per sample
     * their data is padded or truncated to; 0 for models of images */
    int vocab, steps;
};

/* NULL-terminated registry (workloads/registry.c). */
extern const struct pb_workload *const pb_workloads[];
/* Finds a workload; an unknown name gets a message listing the valid ones. */
const struct pb_workload *pb_workload_find(const char *name, struct pb_err *e);

/* Cuts the finalised model's blocks into `stages` contiguous ranges minimising the
 * largest stage's forward FLOPs, then (among equal largest stages) the sum of the
 * squared stage FLOPs, so the other stages are as even as they can be; bounds[0..stages]:
 * stage k holds blocks [bounds[k], bounds[k+1]). Errors when stages < 1 or the model
 * has fewer blocks than stages. */
int pb_partition_balanced(const struct pb_model *m, int stages, int *bounds, struct pb_err *e);

#endif
