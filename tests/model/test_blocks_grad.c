/* tests/model/test_blocks_grad.c — finite-difference gradient checks of the zoo's composite
 * blocks (workloads/models/blocks.h) at tiny widths (block_grad_cases): with L = Σ r ⊙ y for a
 * fixed random r (so dL/dy = r), the block's backward dL/dx and dL/dW must match
 * central differences (L(θ + h) − L(θ − h)) / 2h, with the blocks' ReLUs and max-pools
 * in place. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/model/layers/layer_util.h"
#include "tests/support/block_cases.h"
#include "tests/support/test_util.h"

/* h = 1e-3 and the tolerance atol 5e-3 + rtol 2e-2 are test_layers_grad.c's: L is summed
 * in double from float32 outputs, whose rounding (~6e-8 relative, a few hundred outputs
 * here) divided by 2h gives ~1e-4 absolute noise on O(1) derivatives, and the truncation
 * error h²·L''' is far below that.
 * Kinks: every unit here is BatchNorm → ReLU, so one perturbation moves the batch
 * statistics and with them every ReLU input of the layers after it; a central difference
 * whose two sides see a different ReLU pattern (or a different max-pool argmax) straddles
 * a kink and measures a one-sided slope mixture, not the derivative (test_layers_grad.c
 * explains how often that happens with hundreds of ReLU inputs). Such a sample is
 * detected — the sign of every ReLU input and every max-pool workspace are compared
 * between θ + h and θ − h — and skipped; at least 2/3 of the samples of each kind must
 * be free of kinks, so a block whose check would mostly skip fails instead. */
#define FD_H 1e-3
#define FD_RTOL 2e-2
#define FD_ATOL 5e-3
#define FD_SAMPLES 24

struct probe {
    unsigned char *sig;  /* the forward's kink pattern */
    size_t len, cap;
};

static void fill_normal(float *v, size_t n, uint64_t seed, uint64_t which)
{
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, seed, which, 0, 0);
    for (size_t i = 0; i < n; i++)
        v[i] = pb_rng_normal(k, i);
}

static unsigned char *sig_room(struct probe *p, size_t n)
{
    if (p->len + n > p->cap) {
        p->cap = 2 * (p->len + n);
        p->sig = realloc(p->sig, p->cap);
        ck_assert(p->sig != NULL);
    }
    p->len += n;
    return p->sig + p->len - n;
}

/* Appends the signs of every ReLU's input (of a BN or an add with its ReLU fused, its
 * output's, which are positive where the normalised values or the sums are) and every
 * max-pool's argmax workspace. */
static void kink_pattern(struct case_run *r, const struct pb_stage_act *act, struct probe *p)
{
    struct pb_backend *be = r->be;
    const struct pb_block *blk = &r->model.blocks[0];
    p->len = 0;
    for (int i = 0; i < blk->nnodes; i++) {
        const struct pb_layer *l = &blk->nodes[i];
        const struct pb_tensor *in = l->in[0] < 0 ? &act->input : &act->nodes[l->in[0]].out;
        bool fused = l->cfg.relu;  /* a BN or residual add with its ReLU fused */
        if (l->cfg.kind == PB_LAYER_RELU || fused) {
            struct pb_tensor tmp;
            const struct pb_tensor *plain;
            struct pb_err e;
            ck_assert(pb_plain_view(be, fused ? &act->nodes[i].out : in, &tmp, &plain, &e) == 0);
            size_t n = pb_shape_count(plain->shape);
            float *v = malloc(n * sizeof *v);
            be->ops->download(be, v, plain->data, n * sizeof *v);
            be->ops->sync(be);
            unsigned char *s = sig_room(p, n);
            for (size_t j = 0; j < n; j++)
                s[j] = v[j] > 0;
            free(v);
            pb_plain_release(be, &tmp);
        } else if (l->cfg.kind == PB_LAYER_MAXPOOL2D) {
            size_t ws = be->ops->pool_workspace(be, &l->cfg.pool, in, &act->nodes[i].out);
            ck_assert(ws > 0 && act->nodes[i].aux != NULL);
            be->ops->download(be, sig_room(p, ws), act->nodes[i].aux, ws);
            be->ops->sync(be);
        }
    }
}

static double loss_of(struct case_run *r, const float *x, const float *rr, size_t ny,
                      struct probe *p)
{
    struct pb_stage_act act;
    float *y = case_forward(r, x, true, &act, 0);
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += (double)rr[i] * y[i];
    kink_pattern(r, &act, p);
    pb_stage_act_release(&r->stage, &act);
    free(y);
    return l;
}

struct fd_count {
    int checked, skipped;
};

/* Checks one central difference unless its two sides straddle a kink. */
static void check_fd(const char *cs, const char *what, size_t i, double lp, double lm,
                     const struct probe *pp, const struct probe *pm, double an,
                     struct fd_count *n)
{
    if (pp->len != pm->len || memcmp(pp->sig, pm->sig, pp->len)) {
        n->skipped++;
        return;
    }
    n->checked++;
    double fd = (lp - lm) / (2 * FD_H);
    ck_assert_msg(fabs(fd - an) <= FD_ATOL + FD_RTOL * fabs(an),
                  "%s %s[%zu]: finite difference %.6g, backward %.6g", cs, what, i, fd, an);
}

static void expect_enough(const char *cs, const char *what, const struct fd_count *n)
{
    ck_assert_msg(3 * n->checked >= 2 * (n->checked + n->skipped),
                  "%s %s: %d of %d samples straddle a kink", cs, what, n->skipped,
                  n->checked + n->skipped);
}

static void grad_case(const char *cs)
{
    const struct block_case *c = block_case_find(block_grad_cases, n_block_grad_cases, cs);
    struct case_run r;
    block_run_init(&r, c, 3);
    struct pb_stage *s = &r.stage;
    struct pb_backend *be = r.be;
    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape), np = s->nparams;
    float *x = malloc(nx * sizeof *x), *rr = malloc(ny * sizeof *rr);
    fill_normal(x, nx, 11, 0);
    fill_normal(rr, ny, 11, 1);
    struct probe pp = {0}, pm = {0};

    struct pb_stage_act act;
    float *y = case_forward(&r, x, true, &act, 0);
    float *dx = case_backward(&r, &act, rr);
    float *g = malloc((np + 1) * sizeof *g), *w = malloc((np + 1) * sizeof *w);
    be->ops->download(be, g, s->grads, np * sizeof(float));
    be->ops->download(be, w, s->params, np * sizeof(float));

    struct fd_count nxc = {0}, nwc = {0};
    size_t step = nx / FD_SAMPLES + 1;
    for (size_t i = 0; i < nx; i += step) {
        float keep = x[i];
        x[i] = keep + (float)FD_H;
        double lp = loss_of(&r, x, rr, ny, &pp);
        x[i] = keep - (float)FD_H;
        double lm = loss_of(&r, x, rr, ny, &pm);
        x[i] = keep;
        check_fd(cs, "dx", i, lp, lm, &pp, &pm, dx[i], &nxc);
    }
    expect_enough(cs, "dx", &nxc);
    /* spread over every parameter tensor: an odd step visits weights and biases alike */
    step = np / FD_SAMPLES + 1;
    step += step % 2 == 0;
    for (size_t i = 0; i < np; i += step) {
        float keep = w[i];
        w[i] = keep + (float)FD_H;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        double lp = loss_of(&r, x, rr, ny, &pp);
        w[i] = keep - (float)FD_H;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        double lm = loss_of(&r, x, rr, ny, &pm);
        w[i] = keep;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        check_fd(cs, "dW", i, lp, lm, &pp, &pm, g[i], &nwc);
    }
    expect_enough(cs, "dW", &nwc);
    printf("%-12s dx: %d checked, %d skipped; dW: %d checked, %d skipped (of %zu)\n", cs,
           nxc.checked, nxc.skipped, nwc.checked, nwc.skipped, np);
    fflush(stdout);
    free(pp.sig);
    free(pm.sig);
    free(x);
    free(rr);
    free(y);
    free(dx);
    free(g);
    free(w);
    case_run_finish(&r);
}

/* The kink detector sees kinks: a ReLU pattern differs between two inputs of opposite
 * sign, and equals itself. */
START_TEST(test_kink_pattern)
{
    const struct block_case *c = block_case_find(block_grad_cases, n_block_grad_cases,
                                                 "googlenet");
    struct case_run r;
    block_run_init(&r, c, 3);
    size_t nx = pb_shape_count(r.stage.in_shape), ny = pb_shape_count(r.stage.out_shape);
    float *x = malloc(nx * sizeof *x), *rr = calloc(ny, sizeof *rr);
    fill_normal(x, nx, 5, 0);
    struct probe a = {0}, b = {0};
    loss_of(&r, x, rr, ny, &a);
    loss_of(&r, x, rr, ny, &b);
    ck_assert(a.len > 0 && a.len == b.len && !memcmp(a.sig, b.sig, a.len));
    for (size_t i = 0; i < nx; i++)
        x[i] = -x[i];
    loss_of(&r, x, rr, ny, &b);
    ck_assert(a.len == b.len && memcmp(a.sig, b.sig, a.len));
    free(a.sig);
    free(b.sig);
    free(x);
    free(rr);
    case_run_finish(&r);
}
END_TEST

#define GRAD_TEST(nm)                                                                          \
    START_TEST(test_##nm) { grad_case(#nm); }                                                  \
    END_TEST

GRAD_TEST(bneck_proj)
GRAD_TEST(bneck_id)
GRAD_TEST(incep_a)
GRAD_TEST(incep_b)
GRAD_TEST(incep_c)
GRAD_TEST(incep_d)
GRAD_TEST(incep_e)
GRAD_TEST(googlenet)
GRAD_TEST(dense_layer)
GRAD_TEST(transition)

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("blocks_grad");
    TCase *tc = tcase_create("finite_differences");
    tcase_add_test(tc, test_kink_pattern);
    tcase_add_test(tc, test_bneck_proj);
    tcase_add_test(tc, test_bneck_id);
    tcase_add_test(tc, test_incep_a);
    tcase_add_test(tc, test_incep_b);
    tcase_add_test(tc, test_incep_c);
    tcase_add_test(tc, test_incep_d);
    tcase_add_test(tc, test_incep_e);
    tcase_add_test(tc, test_googlenet);
    tcase_add_test(tc, test_dense_layer);
    tcase_add_test(tc, test_transition);
    suite_add_tcase(s, tc);
    return s;
}
