/* bench/bench_prims.h — the roofline view of a training step: the GEMM and convolution
 * primitive calls one step of a stage makes (linear.c's three products, conv2d.c's forward,
 * weight and data gradients), at the shapes and in the layouts a real forward gave the
 * layers' tensors, with the layers' own weights, run back to back on tensors of their own.
 * A step's time against theirs says what everything else (normalisation, pooling,
 * concatenation, elementwise layers, the loss, the update, the executor) costs; PyTorch's
 * step against theirs bounds what a ratio to PyTorch can reach with these kernels. Shared
 * by bench_step and bench_zoo. */
#ifndef PB_BENCH_PRIMS_H
#define PB_BENCH_PRIMS_H

#include "harness/model/stage.h"

struct bench_prim;

struct bench_prims {
    struct pb_backend *be;
    struct bench_prim *prims;
    int nprims;
    struct pb_tensor *tensors;  /* the primitives' own tensors */
    int ntensors;
    void **mem;                 /* every device buffer they own */
    int nmem;
    double flops;               /* of one run of them all */
};

/* The primitives of stage s (D = 1 or any stage) from the activations act of one of its
 * training forwards (read only: the layouts and shapes its layers' tensors took). A layer
 * computes dx unless it reads the input of the pipeline's first block. */
void bench_prims_build(struct bench_prims *bp, const struct pb_stage *s,
                       const struct pb_stage_act *act);

/* Every primitive once, in the step's order, then sync. */
void bench_prims_run(const struct bench_prims *bp);

/* The median seconds of bench_prims_run, of reps runs (1 to 64) after warmup. */
double bench_prims_time(const struct bench_prims *bp, int warmup, int reps);

void bench_prims_free(struct bench_prims *bp);

#endif
