/* tests/support/layer_run.h — one layer run on its own on a CPU backend, for the sequence layers'
 * tests (tests/workloads/test_gnmt_layers.c, tests/model/test_lstm_layers.c): its inputs, parameters
 * (initialised by the layer with seed 5) and gradients on the backend, the sequences'
 * lengths, and a forward and backward from host memory under the context
 * {seed 7, stage 0, micro-batch r->mb}. */
#ifndef PB_LAYER_RUN_H
#define PB_LAYER_RUN_H

#include "harness/model/layer.h"

struct lrun {
    struct pb_layer l;
    struct pb_backend *be;
    struct pb_tensor in[2];
    float *params, *grads;
    int32_t *lengths;  /* device [batch] or NULL */
    size_t np;
    int64_t mb;        /* the micro-batch of the forward and backward (0) */
};

/* The layer of cfg (uid 3) over nin inputs of shapes in; host_len [in[0].n] or NULL. */
void lrun_init_threads(struct lrun *r, struct pb_layer_cfg cfg, int nin, const struct pb_shape *in,
                       const int32_t *host_len, int threads);
void lrun_init(struct lrun *r, struct pb_layer_cfg cfg, int nin, const struct pb_shape *in,
               const int32_t *host_len);
void lrun_finish(struct lrun *r);
/* Uploads the host inputs x[0 .. nin). */
void set_inputs(struct lrun *r, float *const *x);
void act_release(struct lrun *r, struct pb_node_act *act);
/* Forward of the uploaded inputs; y (host, malloc'ed). act kept when train. */
float *lforward(struct lrun *r, bool train, struct pb_node_act *act);
/* Backward of host dy with grads zeroed first: dx[i] host (malloc'ed) for every input;
 * releases act. */
void lbackward(struct lrun *r, struct pb_node_act *act, const float *dy, float **dx);
/* The same as the split backward's I then W (the layer's backward_weights), checking
 * that I adds nothing to the gradients and keeps something in act->kept, and freeing dY,
 * the output and the aux before W as the stage does; *kept_bytes: the PB_MEM_ACTS bytes
 * held between the two besides the inputs. */
void lbackward_split(struct lrun *r, struct pb_node_act *act, const float *dy, float **dx,
                     size_t *kept_bytes);

#endif
