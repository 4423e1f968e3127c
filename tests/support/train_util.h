/* tests/support/train_util.h — helpers of the training tests: run configurations in a
 * temporary folder, read back saved weights, and a plain training loop (one stage,
 * no pipeline) to compare the schedules with. */
#ifndef PB_TRAIN_UTIL_H
#define PB_TRAIN_UTIL_H

#include "harness/driver/run.h"
#include "harness/base/safetensors.h"
#include "harness/model/stage.h"
#include "workloads/datasets/dataset.h"

/* A fresh temporary folder for the test, removed when the test's process ends. */
const char *tmp_dir(void);
/* tmp_dir()/name, in one of a few rotating buffers */
const char *tmp_path(const char *name);
/* The same, kept until the test's process ends (for configurations that hold it). */
const char *tmp_path_kept(const char *name);

/* A small, fast configuration: mlp on the first 640 Fashion-MNIST samples,
 * micro-batches of 32, 2 epochs, results in tmp_path("runs.db"). */
void small_cfg(struct pb_run_cfg *c);
/* Sends sig to this process, as kill(1) or a terminal does, and waits until the running
 * run's catcher thread has counted it (interrupt.h). */
void signal_the_run(int sig);

/* Runs c, saving to tmp_path(save) and failing the test unless it ends done. */
void run_ok(struct pb_run_cfg *c, const char *save);

/* All F32 tensors of a saved file concatenated in file order (names ignored);
 * *n receives the count. */
float *load_weights(const char *path, size_t *n);

/* Plain training of c's model on one stage: for each mini-batch of `accumulate`
 * micro-batches, forwards in order, backwards in reverse order (as GPipe runs them),
 * the mean gradient, one optimizer step. Writes the weights as run --save would for
 * D = 1 and returns them (concatenated, as load_weights). */
float *plain_training(const struct pb_run_cfg *c, int accumulate, size_t *n);
/* The same with each micro-batch's backward right after its forward (F0 B0 F1 B1 ... U,
 * as a 1F1B schedule runs on one stage): the gradients are summed in that order. */
float *plain_training_1f1b(const struct pb_run_cfg *c, int accumulate, size_t *n);

/* gnmt8's small preset on samples of ds's shape, finalised for micro-batches of `rows`, as
 * one stage on be holding the weights saved in `path` (a run's --save): *m and *s, which
 * the caller finishes. */
void load_saved_gnmt8_small(struct pb_backend *be, const struct pb_dataset *ds, int rows,
                            const char *path, struct pb_model *m, struct pb_stage *s);
/* The same for gnmt8 or gnmt16 (model). */
void load_saved_gnmt_small(const char *model, struct pb_backend *be, const struct pb_dataset *ds,
                           int rows, const char *path, struct pb_model *m, struct pb_stage *s);

/* Bytes of a file (malloc'ed); *len receives its size. */
unsigned char *read_file(const char *path, size_t *len);
/* A copy of file `from` at `to` (replaced). */
void copy_file(const char *from, const char *to);

#endif
