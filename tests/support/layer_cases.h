/* tests/support/layer_cases.h — the layer test cases shared by the PyTorch parity test and the
 * finite-difference gradient check: each case builds one block that mirrors a module
 * of tests/fixtures/fixtures_layers.py, and runs it as the middle stage of a 3-stage
 * pipeline (so the stage takes dy and returns dx). */
#ifndef PB_LAYER_CASES_H
#define PB_LAYER_CASES_H

#include "harness/model/stage.h"

struct layer_case {
    const char *name;
    struct pb_shape x;   /* input [n, c, h, w] */
    bool train;
    void (*build)(struct pb_model *m, struct pb_block *b);
};

extern const struct layer_case layer_cases[];
extern const int n_layer_cases;
const struct layer_case *layer_case_find(const char *name);

/* A built case: model, backend (1 thread), stage 1 of 3 over block 0. */
struct case_run {
    struct pb_model model;
    struct pb_backend *be;
    struct pb_stage stage;
};

void case_run_init(struct case_run *r, const struct layer_case *c, uint64_t seed);
void case_run_finish(struct case_run *r);

/* Forward of host x [count of c->x]; y (host, plain, [count of stage out]) returned
 * malloc'ed. With backward: dy host → dx host (malloc'ed), grads accumulated. */
float *case_forward(struct case_run *r, const float *x, bool train, struct pb_stage_act *act, int64_t mb);
float *case_backward(struct case_run *r, struct pb_stage_act *act, const float *dy);
/* The same for any stage on be: forward of host x under context c, backward of host dy
 * (seed 7, the forward's micro-batch). */
float *stage_forward_host(struct pb_backend *be, struct pb_stage *s, const struct pb_step_ctx *c,
                          const float *x, struct pb_stage_act *act);
float *stage_backward_host(struct pb_backend *be, struct pb_stage *s, struct pb_stage_act *act,
                           const float *dy);

#endif
