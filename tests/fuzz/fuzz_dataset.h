/* tests/fuzz/fuzz_dataset.h — the checks every dataset target runs on what a loader
 * accepted: its counts and shapes, labels below the class count, sequence lengths in
 * range, and every sample gathered (train and val transforms) finite. */
#ifndef PB_FUZZ_DATASET_H
#define PB_FUZZ_DATASET_H

#include "workloads/datasets/dataset.h"

/* ds was loaded with `parts` (PB_DATA_*) and `limit` (0: all); aborts on a broken
 * invariant. */
void pb_fuzz_check_dataset(const struct pb_dataset *ds, int parts, int limit);

/* The options of a load drawn from two bytes: parts (bits 0-1 of a, 0 = all), the crop
 * side (bits 2-4 of a, from a table of sides, some that a dataset refuses) and the
 * sample limit (b, 0 = all). */
void pb_fuzz_dataset_opts(uint8_t a, uint8_t b, struct pb_dataset_opts *o, int *limit);

#endif
