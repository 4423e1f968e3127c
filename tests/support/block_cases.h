/* tests/support/block_cases.h — the composite-block test cases shared by the PyTorch parity test
 * (test_blocks.c, mirroring tests/fixtures/fixtures_blocks.py) and the finite-difference
 * gradient check (test_blocks_grad.c): each case builds one block of workloads/models/blocks.h
 * named after the case, run as the middle stage of a 3-stage pipeline with the runner
 * of tests/support/layer_cases.h. */
#ifndef PB_BLOCK_CASES_H
#define PB_BLOCK_CASES_H

#include "tests/support/layer_cases.h"

struct block_case {
    const char *name;
    struct pb_shape x;  /* input [n, c, h, w] */
    void (*build)(struct pb_model *m, const char *name, int cin);
};

/* The cases of fixtures_blocks.py (blocks.safetensors). */
extern const struct block_case block_fixture_cases[];
extern const int n_block_fixture_cases;
/* Tinier instances of every builder for the finite-difference check. */
extern const struct block_case block_grad_cases[];
extern const int n_block_grad_cases;
const struct block_case *block_case_find(const struct block_case *cases, int n, const char *name);

/* Builds the case's one-block model and runs it as stage 1 of 3 (1 CPU thread), with
 * PyTorch's default initialisation from seed. */
void block_run_init(struct case_run *r, const struct block_case *c, uint64_t seed);

#endif
