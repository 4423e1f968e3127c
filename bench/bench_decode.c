/* bench/bench_decode.c — decoding time of GNMT's two decoders (workloads/evaluation/decode/): the
 * O(T²) stage decoder (the whole prefix through the stage forward every step) against the
 * O(T) step decoder (the encoder once, one token a row a step), greedy and beam 5, on
 * gnmt8's small preset (64 sentences of the stand-in's test split, at most T = 20 tokens)
 * and its paper preset (4 sentences, at most 20 of its 50 tokens, greedy), the models'
 * own initialisation, one run each on `threads` cores (argument 1, default 1: on a
 * shared machine two threads' spinning made one run of the stage decoder 18 times slower
 * than the next): seconds, the ratio old / new, and whether the two searches chose the
 * same tokens; then the attention op of one step at the paper width (T = 50, H = U = 1024;
 * 4 and 20 rows) as attn_fwd runs it, projecting the keys, against attn_fwd_projected on
 * keys projected once, as the step decoder runs it, milliseconds a call (the best of 3
 * runs of 10). `bench_decode small` (or `bench_decode 2 small`) skips the paper width.
 * Prints; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "workloads/evaluation/decode/gnmt_step_decoder.h"
#include "workloads/evaluation/decode/stage_decoder.h"
#include "workloads/models/workload.h"

struct setup {
    struct pb_model m;
    struct pb_stage s;
    int T, n;
    int32_t *src, *len;
};

static void die(const char *what, const struct pb_err *e)
{
    fprintf(stderr, "bench_decode: %s: %s\n", what, e->msg);
    exit(1);
}

/* gnmt8 at preset for n sentences of beam K on be, initialised from seed 1. */
static void build(struct setup *u, struct pb_backend *be, const char *preset, int n, int K)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find("gnmt8", &e);
    const struct pb_preset *p;
    if (!w || pb_workload_preset(w, preset, &p, &e))
        die("gnmt8", &e);
    struct pb_dataset ds;
    struct pb_dataset_opts opts = {.vocab = p->vocab, .steps = p->steps};
    if (pb_dataset_synthetic_wmt16(&ds, PB_SPLIT_TEST, n, 1, &opts, &e))
        die("data", &e);
    if (w->build(&u->m, p, (struct pb_shape){1, ds.c, 1, 1}, p->classes, &e) ||
        pb_model_finalize(&u->m, n * K, &e) ||
        pb_stage_init(&u->s, be, &u->m, 0, 2, 0, u->m.nblocks, &e) ||
        pb_stage_init_params(&u->s, 1, &e))
        die("model", &e);
    u->T = p->steps;
    u->n = n;
    float *x = pb_xmalloc((size_t)n * 2 * u->T * sizeof *x);
    u->src = pb_xmalloc((size_t)n * u->T * sizeof *u->src);
    u->len = pb_xmalloc((size_t)n * sizeof *u->len);
    pb_dataset_gather(&ds, (struct pb_data_key){0}, NULL, 0, n, x, NULL);
    pb_dataset_gather_lengths(&ds, NULL, 0, n, u->len);
    for (int i = 0; i < n * u->T; i++)
        u->src[i] = (int32_t)x[(size_t)(i / u->T) * 2 * u->T + i % u->T];
    free(x);
    pb_dataset_finish(&ds);
}

static void drop(struct setup *u)
{
    pb_stage_finish(&u->s);
    pb_model_finish(&u->m);
    free(u->src);
    free(u->len);
}

/* Seconds of one search (init included: the step decoder's encoder runs there). */
static double decode(struct setup *u, bool step, int beam, int max_len, struct pb_decoded *out)
{
    struct pb_err e;
    struct pb_stage_decoder sd;
    struct pb_gnmt_step_decoder gd;
    struct pb_decoder d;
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    o.beam = beam;
    o.max_len = max_len;
    double t0 = bench_now();
    if (step ? pb_gnmt_step_decoder_init(&gd, &u->s, u->src, u->len, u->n, &d, &e)
             : pb_stage_decoder_init(&sd, &u->s, u->src, u->len, u->n, &d, &e))
        die("decoder", &e);
    int rc = beam ? pb_decode_beam(&d, u->n, u->len, &o, out, &e)
                  : pb_decode_greedy(&d, u->n, u->len, max_len, out, &e);
    if (rc)
        die("search", &e);
    double t = bench_now() - t0;
    if (step)
        pb_gnmt_step_decoder_finish(&gd);
    else
        pb_stage_decoder_finish(&sd);
    return t;
}

static void row(struct pb_backend *be, const char *preset, int n, int beam, int max_len)
{
    struct setup u;
    build(&u, be, preset, n, beam ? beam : 1);
    struct pb_decoded a, b;
    double old = decode(&u, false, beam, max_len, &a);
    double now = decode(&u, true, beam, max_len, &b);
    bool same = a.batch == b.batch;
    for (int s = 0; same && s < a.batch; s++)
        same = a.len[s] == b.len[s] &&
               !memcmp(a.tokens + (size_t)s * a.max_len, b.tokens + (size_t)s * b.max_len,
                       (size_t)a.max_len * sizeof *a.tokens);
    char what[32];
    snprintf(what, sizeof what, beam ? "beam %d" : "greedy", beam);
    printf("gnmt8 %-6s %3d sentences %-7s max %2d  stage %9.3f s  step %8.3f s  ratio %7.1f  "
           "tokens %s\n", preset, n, what, max_len, old, now, old / now,
           same ? "equal" : "DIFFER");
    fflush(stdout);
    pb_decoded_finish(&a);
    pb_decoded_finish(&b);
    drop(&u);
}

/* The attention of one decoder step over R rows at the paper width, both ways. */
static void attn_row(struct pb_backend *be, int R)
{
    struct pb_err e;
    int T = 50, H = 1024, U = 1024, n = 10;
    struct pb_attn_desc d = {R, 1, T, H, H, U};
    size_t nw = (size_t)U * (2 + 2 * H) + 1, nk = (size_t)R * T * H;
    float *q, *k, *pk, *w, *ctx, *a;
    void *ws;
    if (!(q = pb_backend_alloc(be, (size_t)R * H * 4, PB_MEM_SCRATCH, &e)) ||
        !(k = pb_backend_alloc(be, nk * 4, PB_MEM_SCRATCH, &e)) ||
        !(pk = pb_backend_alloc(be, (size_t)R * T * U * 4, PB_MEM_SCRATCH, &e)) ||
        !(w = pb_backend_alloc(be, nw * 4, PB_MEM_SCRATCH, &e)) ||
        !(ctx = pb_backend_alloc(be, (size_t)R * H * 4, PB_MEM_SCRATCH, &e)) ||
        !(a = pb_backend_alloc(be, (size_t)R * T * 4, PB_MEM_SCRATCH, &e)) ||
        !(ws = pb_backend_alloc(be, be->ops->attn_workspace(be, &d), PB_MEM_SCRATCH, &e)))
        die("attention buffers", &e);
    be->ops->fill(be, q, 0.1f, (size_t)R * H);
    be->ops->fill(be, k, 0.2f, nk);
    be->ops->fill(be, w, 0.01f, nw);
    be->ops->attn_project_keys(be, &d, k, w, pk);
    double old = 1e30, now = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < n; i++) {
            be->ops->attn_fwd(be, &d, q, k, NULL, w, ctx, ws);
            be->ops->attn_weights(be, &d, ws, a);
        }
        double t1 = bench_now();
        for (int i = 0; i < n; i++)
            be->ops->attn_fwd_projected(be, &d, q, k, pk, NULL, w, ctx, a);
        double t2 = bench_now();
        old = (t1 - t0) / n < old ? (t1 - t0) / n : old;
        now = (t2 - t1) / n < now ? (t2 - t1) / n : now;
    }
    if (pb_backend_status(be, &e))
        die("attention", &e);
    printf("attention of one step, paper width, %2d rows: projecting the keys %7.2f ms, keys "
           "projected once %6.2f ms, ratio %5.1f\n", R, old * 1e3, now * 1e3, old / now);
    void *bufs[] = {q, k, pk, w, ctx, a, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        pb_backend_free(be, bufs[i]);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 && strcmp(argv[1], "small") ? atoi(argv[1]) : 1;
    bool paper = !(argc > 1 && !strcmp(argv[argc - 1], "small"));
    struct pb_err e;
    threads = threads > 0 ? threads : 1;
    struct pb_backend *be = pb_backend_cpu_create(threads, &e);
    if (!be)
        die("backend", &e);
    printf("decoding, old (stage decoder, O(T^2)) against new (GNMT step decoder, O(T)), "
           "%d thread(s)\n", threads);
    row(be, "small", 64, 0, 20);
    row(be, "small", 64, 5, 20);
    if (paper) {
        row(be, "paper", 4, 0, 20);
        attn_row(be, 4);
        attn_row(be, 20);
    }
    pb_backend_destroy(be);
    return 0;
}
