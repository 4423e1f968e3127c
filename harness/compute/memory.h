/* harness/compute/memory.h — the kinds every backend allocation is accounted as
 * (design §2.8, semantics §6.7): which memory grows is what separates the schedules. */
#ifndef PB_MEMORY_H
#define PB_MEMORY_H

/* Memory kinds, tracked with their peaks (semantics §6.7 says what counts in each). */
enum pb_mem_kind {
    PB_MEM_PARAMS,    /* the latest weights W */
    PB_MEM_GRADS,     /* the gradient buffer */
    PB_MEM_OPTSTATE,  /* momentum, m, v, square averages */
    PB_MEM_WCOPIES,   /* stashed, predicted and double-buffered weight versions */
    PB_MEM_ACTS,      /* activations cached for backward, per micro-batch in flight */
    PB_MEM_COMM,      /* send/receive buffers at stage boundaries */
    PB_MEM_SCRATCH,   /* kernel workspaces and temporaries */
    PB_MEM_BNSTATS,   /* BatchNorm running statistics (never stashed or predicted) */
    PB_MEM_HOST,      /* host memory beside the backend's: the stage's share of the
                         dataset, staging buffers, the prediction-error probe */
    PB_MEM_NKINDS
};
extern const char *const pb_mem_kind_names[PB_MEM_NKINDS];

#endif
