/* tests/schedules/test_schedules.c — the schedules (semantics §4): golden programs at D = 4 with and
 * without versions (every registered schedule and variant must have one), the version
 * rules of §4.1–§4.6 and §4.7, validation of every registered form over a grid of pipes,
 * the validator's negative cases and bad input. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/ir/program.h"
#include "schedules/registry.h"
#include "tests/support/schedule_forms.h"

#define MAXD 8

/* Builds the programs of schedule `name`; fails the test on error. */
static void build(const char *name, int D, int N, int M, const char *variant,
                  enum pb_optim_kind opt, struct pb_pipe *p, struct pb_program *progs)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find(name, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    *p = (struct pb_pipe){.stages = D, .length = N, .microbatches = M, .optimizer = opt,
                          .variant = variant};
    pb_pipe_adopt(p, s);
    ck_assert_msg(pb_programs_build(s, p, progs, &e) == 0, "%s: %s", name, e.msg);
}

/* The text form of all devices of a pipe (caller frees). */
static char *print_all(const struct pb_pipe *p, const struct pb_program *progs, bool versions)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int k = 0; k < pb_pipe_devices(p); k++)
        pb_program_print(f, p, &progs[k], versions);
    fclose(f);
    return buf;
}

/* The text form of all stages (devices, with chunks) of a schedule on D stages (caller
 * frees). */
static char *text(const char *name, int D, int N, int M, const char *variant, bool versions)
{
    struct pb_pipe p;
    struct pb_program progs[MAXD];
    build(name, D, N, M, variant, PB_OPT_SGD, &p, progs);
    char *buf = print_all(&p, progs, versions);
    pb_programs_finish(progs, pb_pipe_devices(&p));
    return buf;
}

static void golden(const char *name, int N, int M, const char *variant, bool versions,
                   const char *expect)
{
    char *got = text(name, 4, N, M, variant, versions);
    ck_assert_msg(!strcmp(got, expect), "%s%s%s%s:\ngot:\n%sexpected:\n%s", name,
                  variant ? " variant " : "", variant ? variant : "",
                  versions ? " --versions" : "", got, expect);
    free(got);
}

/* semantics §4: the 1F1B order that pipedream, pipeoptim and spectrain share. */
static const char order_1f1b[] =
    "stage 0: F0 F1 F2 F3 B0 U F4 B1 U F5 B2 U F6 B3 U F7 B4 U B5 U B6 U B7 U\n"
    "stage 1: F0 F1 F2 B0 U F3 B1 U F4 B2 U F5 B3 U F6 B4 U F7 B5 U B6 U B7 U\n"
    "stage 2: F0 F1 B0 U F2 B1 U F3 B2 U F4 B3 U F5 B4 U F6 B5 U F7 B6 U B7 U\n"
    "stage 3: F0 B0 U F1 B1 U F2 B2 U F3 B3 U F4 B4 U F5 B5 U F6 B6 U F7 B7 U\n";

/* 1F1B with mini-batches of 4 (pipedream-2bw, xpipe): U after B3 and B7. */
static const char order_mb4[] =
    "stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 U F7 B4 B5 B6 B7 U\n"
    "stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 U F6 B4 F7 B5 B6 B7 U\n"
    "stage 2: F0 F1 B0 F2 B1 F3 B2 F4 B3 U F5 B4 F6 B5 F7 B6 B7 U\n"
    "stage 3: F0 B0 F1 B1 F2 B2 F3 B3 U F4 B4 F5 B5 F6 B6 F7 B7 U\n";

/* SpecTrain, D = 4: s_F = 3, 2, 2, 1 and s_B = 0, 0, 1, 1 (semantics §4.3). */
static const char versions_spectrain[] =
    "stage 0: F0:0+3 F1:0+3 F2:0+3 F3:0+3 B0:0 U F4:1+3 B1:1 U F5:2+3 B2:2 U F6:3+3 B3:3 "
    "U F7:4+3 B4:4 U B5:5 U B6:6 U B7:7 U\n"
    "stage 1: F0:0+2 F1:0+2 F2:0+2 B0:0 U F3:1+2 B1:1 U F4:2+2 B2:2 U F5:3+2 B3:3 U "
    "F6:4+2 B4:4 U F7:5+2 B5:5 U B6:6 U B7:7 U\n"
    "stage 2: F0:0+2 F1:0+2 B0:0+1 U F2:1+2 B1:1+1 U F3:2+2 B2:2+1 U F4:3+2 B3:3+1 U "
    "F5:4+2 B4:4+1 U F6:5+2 B5:5+1 U F7:6+2 B6:6+1 U B7:7+1 U\n"
    "stage 3: F0:0+1 B0:0+1 U F1:1+1 B1:1+1 U F2:2+1 B2:2+1 U F3:3+1 B3:3+1 U F4:4+1 "
    "B4:4+1 U F5:5+1 B5:5+1 U F6:6+1 B6:6+1 U F7:7+1 B7:7+1 U\n";

/* A golden program (semantics §4): all D = 4 stages of a schedule form for N micro-batches,
 * M per update where the schedule has mini-batches, with or without versions. */
struct golden_case {
    const char *name, *variant;
    int N, M;
    bool versions;
    const char *expect;
};

static const struct golden_case goldens[] = {
    /* the op order (semantics §4.1–§4.6) */
    {"pipedream", NULL, 8, 4, false, order_1f1b},
    {"pipedream", "vertical", 8, 4, false, order_1f1b},
    {"pipemare", NULL, 8, 4, false, order_1f1b},
    {"pipeoptim", NULL, 8, 4, false, order_1f1b},
    {"pipeoptim", "code", 8, 4, false, order_1f1b},
    {"spectrain", NULL, 8, 4, false, order_1f1b},
    {"spectrain", "code", 8, 4, false, order_1f1b},
    {"pipedream-2bw", NULL, 8, 4, false, order_mb4},
    {"xpipe", NULL, 8, 4, false, order_mb4},
    {"xpipe", "note", 8, 4, false, order_mb4},
    {"gpipe", NULL, 8, 4, false,
     "stage 0: F0 F1 F2 F3 B3 B2 B1 B0 U F4 F5 F6 F7 B7 B6 B5 B4 U\n"
     "stage 1: F0 F1 F2 F3 B3 B2 B1 B0 U F4 F5 F6 F7 B7 B6 B5 B4 U\n"
     "stage 2: F0 F1 F2 F3 B3 B2 B1 B0 U F4 F5 F6 F7 B7 B6 B5 B4 U\n"
     "stage 3: F0 F1 F2 F3 B3 B2 B1 B0 U F4 F5 F6 F7 B7 B6 B5 B4 U\n"},
    {"pipedream-2bw", NULL, 12, 4, false,
     "stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 U F7 B4 F8 B5 F9 B6 F10 B7 U F11 B8 B9 "
     "B10 B11 U\n"
     "stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 U F6 B4 F7 B5 F8 B6 F9 B7 U F10 B8 F11 B9 "
     "B10 B11 U\n"
     "stage 2: F0 F1 B0 F2 B1 F3 B2 F4 B3 U F5 B4 F6 B5 F7 B6 F8 B7 U F9 B8 F10 B9 F11 "
     "B10 B11 U\n"
     "stage 3: F0 B0 F1 B1 F2 B2 F3 B3 U F4 B4 F5 B5 F6 B6 F7 B7 U F8 B8 F9 B9 F10 B10 "
     "F11 B11 U\n"},
    /* 1F1B with flush (semantics §4.9): per step of M, min(D−1−k, M) warm-up forwards,
     * every op reads W^(b) in step b; ZB-H1 and ZB-H2 (§3): I then W, the W's deferred
     * k·c times (c = 1, 2), the warm-up capped at M */
    {"1f1b", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 B1:0 B2:0 B3:0 U F4:1 F5:1 F6:1 F7:1 B4:1 B5:1 B6:1 "
     "B7:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 F3:0 B1:0 B2:0 B3:0 U F4:1 F5:1 F6:1 B4:1 F7:1 B5:1 B6:1 "
     "B7:1 U\n"
     "stage 2: F0:0 F1:0 B0:0 F2:0 B1:0 F3:0 B2:0 B3:0 U F4:1 F5:1 B4:1 F6:1 B5:1 F7:1 B6:1 "
     "B7:1 U\n"
     "stage 3: F0:0 B0:0 F1:0 B1:0 F2:0 B2:0 F3:0 B3:0 U F4:1 B4:1 F5:1 B5:1 F6:1 B6:1 F7:1 "
     "B7:1 U\n"},
    {"zb-h1", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 I0:0 W0:0 I1:0 W1:0 I2:0 W2:0 I3:0 W3:0 U F4:1 F5:1 F6:1 "
     "F7:1 I4:1 W4:1 I5:1 W5:1 I6:1 W6:1 I7:1 W7:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 I0:0 F3:0 I1:0 W0:0 I2:0 W1:0 I3:0 W2:0 W3:0 U F4:1 F5:1 F6:1 "
     "I4:1 F7:1 I5:1 W4:1 I6:1 W5:1 I7:1 W6:1 W7:1 U\n"
     "stage 2: F0:0 F1:0 I0:0 F2:0 I1:0 F3:0 I2:0 W0:0 I3:0 W1:0 W2:0 W3:0 U F4:1 F5:1 I4:1 "
     "F6:1 I5:1 F7:1 I6:1 W4:1 I7:1 W5:1 W6:1 W7:1 U\n"
     "stage 3: F0:0 I0:0 F1:0 I1:0 F2:0 I2:0 F3:0 I3:0 W0:0 W1:0 W2:0 W3:0 U F4:1 I4:1 F5:1 "
     "I5:1 F6:1 I6:1 F7:1 I7:1 W4:1 W5:1 W6:1 W7:1 U\n"},
    /* the quick-start patch: stage 0 never splits, stage k > 0 splits its first k and its
     * last steady iterations and its cool-down, the W's popped oldest first */
    {"zb-h1", "quick-start", 8, 8, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 F4:0 B1:0 F5:0 B2:0 F6:0 B3:0 F7:0 B4:0 B5:0 B6:0 "
     "B7:0 U\n"
     "stage 1: F0:0 F1:0 F2:0 I0:0 F3:0 B1:0 F4:0 B2:0 F5:0 B3:0 F6:0 B4:0 F7:0 I5:0 W0:0 "
     "I6:0 W5:0 I7:0 W6:0 W7:0 U\n"
     "stage 2: F0:0 F1:0 I0:0 F2:0 I1:0 F3:0 B2:0 F4:0 B3:0 F5:0 B4:0 F6:0 B5:0 F7:0 I6:0 "
     "W0:0 I7:0 W1:0 W6:0 W7:0 U\n"
     "stage 3: F0:0 I0:0 F1:0 I1:0 F2:0 I2:0 F3:0 B3:0 F4:0 B4:0 F5:0 B5:0 F6:0 B6:0 F7:0 "
     "I7:0 W0:0 W1:0 W2:0 W7:0 U\n"},
    {"zb-h2", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 I0:0 I1:0 I2:0 W0:0 I3:0 W1:0 W2:0 W3:0 U F4:1 F5:1 F6:1 "
     "F7:1 I4:1 I5:1 I6:1 W4:1 I7:1 W5:1 W6:1 W7:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 F3:0 I0:0 I1:0 I2:0 W0:0 I3:0 W1:0 W2:0 W3:0 U F4:1 F5:1 F6:1 "
     "F7:1 I4:1 I5:1 I6:1 W4:1 I7:1 W5:1 W6:1 W7:1 U\n"
     "stage 2: F0:0 F1:0 F2:0 I0:0 F3:0 I1:0 I2:0 I3:0 W0:0 W1:0 W2:0 W3:0 U F4:1 F5:1 F6:1 "
     "I4:1 F7:1 I5:1 I6:1 I7:1 W4:1 W5:1 W6:1 W7:1 U\n"
     "stage 3: F0:0 I0:0 F1:0 I1:0 F2:0 I2:0 F3:0 I3:0 W0:0 W1:0 W2:0 W3:0 U F4:1 I4:1 F5:1 "
     "I5:1 F6:1 I6:1 F7:1 I7:1 W4:1 W5:1 W6:1 W7:1 U\n"},
    /* interleaved 1F1B at one chunk per device (semantics §4.12): torch's warm-up
     * 2(D−1−k) capped at M, not 1F1B's; looped BFS at one chunk: GPipe's order */
    {"interleaved", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 B1:0 B2:0 B3:0 U F4:1 F5:1 F6:1 F7:1 B4:1 B5:1 B6:1 "
     "B7:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 F3:0 B0:0 B1:0 B2:0 B3:0 U F4:1 F5:1 F6:1 F7:1 B4:1 B5:1 B6:1 "
     "B7:1 U\n"
     "stage 2: F0:0 F1:0 F2:0 B0:0 F3:0 B1:0 B2:0 B3:0 U F4:1 F5:1 F6:1 B4:1 F7:1 B5:1 B6:1 "
     "B7:1 U\n"
     "stage 3: F0:0 B0:0 F1:0 B1:0 F2:0 B2:0 F3:0 B3:0 U F4:1 B4:1 F5:1 B5:1 F6:1 B6:1 F7:1 "
     "B7:1 U\n"},
    {"looped-bfs", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 B5:1 "
     "B4:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 B5:1 "
     "B4:1 U\n"
     "stage 2: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 B5:1 "
     "B4:1 U\n"
     "stage 3: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 B5:1 "
     "B4:1 U\n"},
    /* PipeDream: stage k's F(j) sees max(0, j − (D−1−k)) (semantics §4.1, stage 0:
     * max(0, j−3)); B(j) sees its F's version. */
    {"pipedream", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 U F4:1 B1:0 U F5:2 B2:0 U F6:3 B3:0 U F7:4 B4:1 U "
     "B5:2 U B6:3 U B7:4 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 U F3:1 B1:0 U F4:2 B2:0 U F5:3 B3:1 U F6:4 B4:2 U F7:5 "
     "B5:3 U B6:4 U B7:5 U\n"
     "stage 2: F0:0 F1:0 B0:0 U F2:1 B1:0 U F3:2 B2:1 U F4:3 B3:2 U F5:4 B4:3 U F6:5 B5:4 "
     "U F7:6 B6:5 U B7:6 U\n"
     "stage 3: F0:0 B0:0 U F1:1 B1:1 U F2:2 B2:2 U F3:3 B3:3 U F4:4 B4:4 U F5:5 B5:5 U "
     "F6:6 B6:6 U F7:7 B7:7 U\n"},
    /* Vertical sync, worked by hand: stage 0's F(j) reads max(0, j − 3) (its three warm-up
     * forwards read W^(0), then F(3 + i) follows i updates), and every stage's F(j) and
     * B(j) read that version; a synchronous run reads j, so every stage lags min(j, 3). */
    {"pipedream", "vertical", 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 U F4:1 B1:0 U F5:2 B2:0 U F6:3 B3:0 U F7:4 B4:1 U "
     "B5:2 U B6:3 U B7:4 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 U F3:0 B1:0 U F4:1 B2:0 U F5:2 B3:0 U F6:3 B4:1 U F7:4 "
     "B5:2 U B6:3 U B7:4 U\n"
     "stage 2: F0:0 F1:0 B0:0 U F2:0 B1:0 U F3:0 B2:0 U F4:1 B3:0 U F5:2 B4:1 U F6:3 B5:2 "
     "U F7:4 B6:3 U B7:4 U\n"
     "stage 3: F0:0 B0:0 U F1:0 B1:0 U F2:0 B2:0 U F3:0 B3:0 U F4:1 B4:1 U F5:2 B5:2 U "
     "F6:3 B6:3 U F7:4 B7:4 U\n"},
    /* PipeMare: no stash, both passes read the latest weights when they run: F(j) on
     * stage k reads max(0, j − (D−1−k)) as PipeDream's, B(j) reads W^(j) */
    {"pipemare", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 U F4:1 B1:1 U F5:2 B2:2 U F6:3 B3:3 U F7:4 B4:4 U "
     "B5:5 U B6:6 U B7:7 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 U F3:1 B1:1 U F4:2 B2:2 U F5:3 B3:3 U F6:4 B4:4 U F7:5 "
     "B5:5 U B6:6 U B7:7 U\n"
     "stage 2: F0:0 F1:0 B0:0 U F2:1 B1:1 U F3:2 B2:2 U F4:3 B3:3 U F5:4 B4:4 U F6:5 B5:5 "
     "U F7:6 B6:6 U B7:7 U\n"
     "stage 3: F0:0 B0:0 U F1:1 B1:1 U F2:2 B2:2 U F3:3 B3:3 U F4:4 B4:4 U F5:5 B5:5 U "
     "F6:6 B6:6 U F7:7 B7:7 U\n"},
    /* F: pipedream's base, predicted s = D−1−k ahead; B: the current W^(j) */
    {"pipeoptim", NULL, 8, 4, true,
     "stage 0: F0:0+3 F1:0+3 F2:0+3 F3:0+3 B0:0 U F4:1+3 B1:1 U F5:2+3 B2:2 U F6:3+3 B3:3 "
     "U F7:4+3 B4:4 U B5:5 U B6:6 U B7:7 U\n"
     "stage 1: F0:0+2 F1:0+2 F2:0+2 B0:0 U F3:1+2 B1:1 U F4:2+2 B2:2 U F5:3+2 B3:3 U "
     "F6:4+2 B4:4 U F7:5+2 B5:5 U B6:6 U B7:7 U\n"
     "stage 2: F0:0+1 F1:0+1 B0:0 U F2:1+1 B1:1 U F3:2+1 B2:2 U F4:3+1 B3:3 U F5:4+1 B4:4 "
     "U F6:5+1 B5:5 U F7:6+1 B6:6 U B7:7 U\n"
     "stage 3: F0:0 B0:0 U F1:1 B1:1 U F2:2 B2:2 U F3:3 B3:3 U F4:4 B4:4 U F5:5 B5:5 U "
     "F6:6 B6:6 U F7:7 B7:7 U\n"},
    /* variant code: s = D−k, so the last stage predicts one ahead */
    {"pipeoptim", "code", 8, 4, true,
     "stage 0: F0:0+4 F1:0+4 F2:0+4 F3:0+4 B0:0 U F4:1+4 B1:1 U F5:2+4 B2:2 U F6:3+4 B3:3 "
     "U F7:4+4 B4:4 U B5:5 U B6:6 U B7:7 U\n"
     "stage 1: F0:0+3 F1:0+3 F2:0+3 B0:0 U F3:1+3 B1:1 U F4:2+3 B2:2 U F5:3+3 B3:3 U "
     "F6:4+3 B4:4 U F7:5+3 B5:5 U B6:6 U B7:7 U\n"
     "stage 2: F0:0+2 F1:0+2 B0:0 U F2:1+2 B1:1 U F3:2+2 B2:2 U F4:3+2 B3:3 U F5:4+2 B4:4 "
     "U F6:5+2 B5:5 U F7:6+2 B6:6 U B7:7 U\n"
     "stage 3: F0:0+1 B0:0 U F1:1+1 B1:1 U F2:2+1 B2:2 U F3:3+1 B3:3 U F4:4+1 B4:4 U "
     "F5:5+1 B5:5 U F6:6+1 B6:6 U F7:7+1 B7:7 U\n"},
    /* SpecTrain, D = 4: s_F = 3, 2, 2, 1 and s_B = 0, 0, 1, 1 (semantics §4.3). */
    {"spectrain", NULL, 8, 4, true, versions_spectrain},
    /* variant code: the same versions (the forms it predicts with differ:
     * spectrain_versions) */
    {"spectrain", "code", 8, 4, true, versions_spectrain},
    /* GPipe: mini-batch b reads W^(b); 2BW: micro-batches 0–7 read W^(0), 8–11 W^(1)
     * (semantics §4.4 example). */
    {"gpipe", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 "
     "B5:1 B4:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 "
     "B5:1 B4:1 U\n"
     "stage 2: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 "
     "B5:1 B4:1 U\n"
     "stage 3: F0:0 F1:0 F2:0 F3:0 B3:0 B2:0 B1:0 B0:0 U F4:1 F5:1 F6:1 F7:1 B7:1 B6:1 "
     "B5:1 B4:1 U\n"},
    {"pipedream-2bw", NULL, 8, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 F4:0 B1:0 F5:0 B2:0 F6:0 B3:0 U F7:0 B4:0 B5:0 "
     "B6:0 B7:0 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 F3:0 B1:0 F4:0 B2:0 F5:0 B3:0 U F6:0 B4:0 F7:0 B5:0 "
     "B6:0 B7:0 U\n"
     "stage 2: F0:0 F1:0 B0:0 F2:0 B1:0 F3:0 B2:0 F4:0 B3:0 U F5:0 B4:0 F6:0 B5:0 F7:0 "
     "B6:0 B7:0 U\n"
     "stage 3: F0:0 B0:0 F1:0 B1:0 F2:0 B2:0 F3:0 B3:0 U F4:0 B4:0 F5:0 B5:0 F6:0 B6:0 "
     "F7:0 B7:0 U\n"},
    {"pipedream-2bw", NULL, 12, 4, true,
     "stage 0: F0:0 F1:0 F2:0 F3:0 B0:0 F4:0 B1:0 F5:0 B2:0 F6:0 B3:0 U F7:0 B4:0 F8:1 "
     "B5:0 F9:1 B6:0 F10:1 B7:0 U F11:1 B8:1 B9:1 B10:1 B11:1 U\n"
     "stage 1: F0:0 F1:0 F2:0 B0:0 F3:0 B1:0 F4:0 B2:0 F5:0 B3:0 U F6:0 B4:0 F7:0 B5:0 "
     "F8:1 B6:0 F9:1 B7:0 U F10:1 B8:1 F11:1 B9:1 B10:1 B11:1 U\n"
     "stage 2: F0:0 F1:0 B0:0 F2:0 B1:0 F3:0 B2:0 F4:0 B3:0 U F5:0 B4:0 F6:0 B5:0 F7:0 "
     "B6:0 F8:1 B7:0 U F9:1 B8:1 F10:1 B9:1 F11:1 B10:1 B11:1 U\n"
     "stage 3: F0:0 B0:0 F1:0 B1:0 F2:0 B2:0 F3:0 B3:0 U F4:0 B4:0 F5:0 B5:0 F6:0 B6:0 "
     "F7:0 B7:0 U F8:1 B8:1 F9:1 B9:1 F10:1 B10:1 F11:1 B11:1 U\n"},
    /* XPipe, T = 4: s = ⌈(3−k)/4⌉ = 1, 1, 1, 0 from the base of the mini-batch's first
     * F; variant note: s_F = 2, 1, 1, 1 for the group, s_B = 1 made at each B. */
    {"xpipe", NULL, 8, 4, true,
     "stage 0: F0:0+1 F1:0+1 F2:0+1 F3:0+1 B0:0+1 F4:0+1 B1:0+1 F5:0+1 B2:0+1 F6:0+1 "
     "B3:0+1 U F7:0+1 B4:0+1 B5:0+1 B6:0+1 B7:0+1 U\n"
     "stage 1: F0:0+1 F1:0+1 F2:0+1 B0:0+1 F3:0+1 B1:0+1 F4:0+1 B2:0+1 F5:0+1 B3:0+1 U "
     "F6:0+1 B4:0+1 F7:0+1 B5:0+1 B6:0+1 B7:0+1 U\n"
     "stage 2: F0:0+1 F1:0+1 B0:0+1 F2:0+1 B1:0+1 F3:0+1 B2:0+1 F4:0+1 B3:0+1 U F5:0+1 "
     "B4:0+1 F6:0+1 B5:0+1 F7:0+1 B6:0+1 B7:0+1 U\n"
     "stage 3: F0:0 B0:0 F1:0 B1:0 F2:0 B2:0 F3:0 B3:0 U F4:1 B4:1 F5:1 B5:1 F6:1 B6:1 "
     "F7:1 B7:1 U\n"},
    {"xpipe", "note", 8, 4, true,
     "stage 0: F0:0+2 F1:0+2 F2:0+2 F3:0+2 B0:0+1 F4:0+2 B1:0+1 F5:0+2 B2:0+1 F6:0+2 "
     "B3:0+1 U F7:0+2 B4:1+1 B5:1+1 B6:1+1 B7:1+1 U\n"
     "stage 1: F0:0+1 F1:0+1 F2:0+1 B0:0+1 F3:0+1 B1:0+1 F4:0+1 B2:0+1 F5:0+1 B3:0+1 U "
     "F6:0+1 B4:1+1 F7:0+1 B5:1+1 B6:1+1 B7:1+1 U\n"
     "stage 2: F0:0+1 F1:0+1 B0:0+1 F2:0+1 B1:0+1 F3:0+1 B2:0+1 F4:0+1 B3:0+1 U F5:0+1 "
     "B4:1+1 F6:0+1 B5:1+1 F7:0+1 B6:1+1 B7:1+1 U\n"
     "stage 3: F0:0+1 B0:0+1 F1:0+1 B1:0+1 F2:0+1 B2:0+1 F3:0+1 B3:0+1 U F4:1+1 B4:1+1 "
     "F5:1+1 B5:1+1 F6:1+1 B6:1+1 F7:1+1 B7:1+1 U\n"},
    /* zb-v and dualpipe-v on D = 4 stages: p = 2 devices of 2 chunks in a V (device 1
     * holds stages 1 and 2, the local edge), every op at lag 0 (SCHEDULES.md §4, §5) */
    {"zb-v", NULL, 8, 4, true,
     "device 0: F0@0:0 F1@0:0 F2@0:0 F0@1:0 I0@1:0 W0@1:0 F1@1:0 I1@1:0 W1@1:0 F3@0:0 "
     "I0@0:0 W0@0:0 F2@1:0 I2@1:0 W2@1:0 I1@0:0 W1@0:0 F3@1:0 I3@1:0 W3@1:0 I2@0:0 W2@0:0 "
     "I3@0:0 W3@0:0 U F4@0:1 F5@0:1 F6@0:1 F4@1:1 I4@1:1 W4@1:1 F5@1:1 I5@1:1 W5@1:1 "
     "F7@0:1 I4@0:1 W4@0:1 F6@1:1 I6@1:1 W6@1:1 I5@0:1 W5@0:1 F7@1:1 I7@1:1 W7@1:1 I6@0:1 "
     "W6@0:1 I7@0:1 W7@0:1 U\n"
     "device 1: F0@0:0 F0@1:0 F1@0:0 F1@1:0 I0@1:0 W0@1:0 F2@0:0 I0@0:0 W0@0:0 F2@1:0 "
     "I1@1:0 W1@1:0 F3@0:0 I1@0:0 W1@0:0 F3@1:0 I2@1:0 W2@1:0 I2@0:0 I3@1:0 I3@0:0 W2@0:0 "
     "W3@1:0 W3@0:0 U F4@0:1 F4@1:1 F5@0:1 F5@1:1 I4@1:1 W4@1:1 F6@0:1 I4@0:1 W4@0:1 "
     "F6@1:1 I5@1:1 W5@1:1 F7@0:1 I5@0:1 W5@0:1 F7@1:1 I6@1:1 W6@1:1 I6@0:1 I7@1:1 I7@0:1 "
     "W6@0:1 W7@1:1 W7@0:1 U\n"},
    {"dualpipe-v", NULL, 8, 4, true,
     "device 0: F0@0:0 F1@0:0 F2@0:0 F0@1:0 I0@1:0 W0@1:0 F1@1:0 F3@0:0+B1@1:0 "
     "F2@1:0+B0@0:0 B2@1:0 F3@1:0+B1@0:0 B3@1:0 I2@0:0 W2@0:0 I3@0:0 W3@0:0 U F4@0:1 "
     "F5@0:1 F6@0:1 F4@1:1 I4@1:1 W4@1:1 F5@1:1 F7@0:1+B5@1:1 F6@1:1+B4@0:1 B6@1:1 "
     "F7@1:1+B5@0:1 B7@1:1 I6@0:1 W6@0:1 I7@0:1 W7@0:1 U\n"
     "device 1: F0@0:0 F0@1:0 F1@0:0 F1@1:0 F2@0:0 B0@1:0 F2@1:0+B0@0:0 F3@0:0+B1@1:0 "
     "F3@1:0+B1@0:0 B2@1:0 B2@0:0 I3@1:0 I3@0:0 W3@1:0 W3@0:0 U F4@0:1 F4@1:1 F5@0:1 "
     "F5@1:1 F6@0:1 B4@1:1 F6@1:1+B4@0:1 F7@0:1+B5@1:1 F7@1:1+B5@0:1 B6@1:1 B6@0:1 I7@1:1 "
     "I7@0:1 W7@1:1 W7@0:1 U\n"},
};

#define NGOLDENS ((int)(sizeof goldens / sizeof *goldens))

START_TEST(golden_programs)
{
    const struct golden_case *g = &goldens[_i];
    golden(g->name, g->N, g->M, g->variant, g->versions, g->expect);
}
END_TEST

/* Every registered schedule, in each of its forms, has a golden program with versions:
 * a new schedule or variant fails here until its expected text is in goldens[]. */
START_TEST(golden_coverage)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        bool found = false;
        for (int g = 0; g < NGOLDENS; g++)
            found |= goldens[g].versions &&
                     sched_form_is(&forms[i], goldens[g].name, goldens[g].variant);
        ck_assert_msg(found, "%s has no golden program with versions in goldens[] "
                      "(tests/schedules/test_schedules.c)", forms[i].label);
    }
}
END_TEST

/* Per-op versions of stage k: base/ahead (the version plan; -1 for U) and u, the updates
 * applied before the op. Arrays have room for MAXOPS ops. */
#define MAXOPS 256
struct vers {
    int base[MAXOPS], ahead[MAXOPS], u[MAXOPS];
    int f[64], b[64]; /* op index of F(j), B(j) */
};

static void versions_of(const struct pb_pipe *p, const struct pb_program *prog, struct vers *v)
{
    ck_assert_int_le(prog->n, MAXOPS);
    struct pb_version_plan vp;
    pb_version_plan_init(&vp, p, prog);
    for (int i = 0; i < prog->n; i++) {
        v->base[i] = prog->ops[i].kind == PB_OP_U ? -1 : vp.ops[i].base;
        v->ahead[i] = prog->ops[i].kind == PB_OP_U ? -1 : vp.ops[i].ahead;
    }
    pb_version_plan_finish(&vp);
    for (int i = 0, u = 0; i < prog->n; i++) {
        v->u[i] = u;
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U)
            u++;
        else
            (op->kind == PB_OP_F ? v->f : v->b)[op->mb] = i;
    }
}

/* semantics §4.1: B reads its F's version; F(j) on stage k reads max(0, j − (D−1−k));
 * steady-state staleness D−1−k; stage k keeps up to D−k versions. */
START_TEST(pipedream_versions)
{
    int D = 4, N = 16;
    struct pb_pipe p;
    struct pb_program pr[MAXD];
    build("pipedream", D, N, D, NULL, PB_OPT_SGD, &p, pr);
    for (int k = 0; k < D; k++) {
        struct vers v;
        versions_of(&p, &pr[k], &v);
        int w = D - 1 - k, most = 0;
        for (int j = 0; j < N; j++) {
            int fb = v.base[v.f[j]], bb = v.base[v.b[j]];
            ck_assert_int_eq(fb, j > w ? j - w : 0);
            ck_assert_int_eq(bb, fb);
            ck_assert_int_eq(v.ahead[v.f[j]] + v.ahead[v.b[j]], 0);
            if (j >= w)
                ck_assert_int_eq(v.u[v.b[j]] - bb, w);
        }
        /* live versions after each op: W^(u) and the stash of every F whose B is pending */
        for (int i = 0; i < pr[k].n; i++) {
            int u = v.u[i] + (pr[k].ops[i].kind == PB_OP_U), live[64], nlive = 0;
            live[nlive++] = u;
            for (int j = 0; j < N; j++) {
                if (v.f[j] > i || v.b[j] <= i)
                    continue;
                bool seen = false;
                for (int q = 0; q < nlive; q++)
                    seen |= live[q] == v.base[v.f[j]];
                if (!seen)
                    live[nlive++] = v.base[v.f[j]];
            }
            if (nlive > most)
                most = nlive;
        }
        ck_assert_msg(most == D - k, "stage %d keeps %d versions, expected %d", k, most, D - k);
    }
    pb_programs_finish(pr, D);
}
END_TEST

/* semantics §4.1, variant vertical: on every stage F(j) and B(j) read v(j) =
 * max(0, j − min(D−1, N)), the version stage 0's F(j) reads, so the lag behind a
 * synchronous run is min(j, D−1) everywhere; the version exists (v(j) ≤ u); an op
 * reads W itself exactly when v(j) = u, else a copy kept at the U that replaced v(j),
 * counted once per backward; in the steady state every stage keeps D − 1 copies. */
START_TEST(vertical_versions)
{
    static const int Ds[] = {1, 2, 3, 4, 6}, Ns[] = {1, 3, 8, 24};
    for (int di = 0; di < 5; di++)
        for (int ni = 0; ni < 4; ni++) {
            int D = Ds[di], N = Ns[ni], w0 = D - 1 < N ? D - 1 : N;
            struct pb_pipe p;
            struct pb_program pr[MAXD];
            build("pipedream", D, N, D, "vertical", PB_OPT_ADAM, &p, pr);
            struct pb_err e;
            ck_assert_msg(pb_programs_validate(&p, pr, 1, &e) == 0, "%s", e.msg);
            for (int k = 0; k < D; k++) {
                struct pb_version_plan vp;
                pb_version_plan_init(&vp, &p, &pr[k]);
                int kept[64] = {0}, reads[64] = {0}, u = 0;
                for (int i = 0; i < pr[k].n; i++) {
                    const struct pb_op *op = &pr[k].ops[i];
                    if (op->kind == PB_OP_U) {
                        kept[u++] += vp.keep[i];
                        continue;
                    }
                    int v = op->mb > w0 ? op->mb - w0 : 0;
                    ck_assert_int_eq(op->wsrc, PB_W_VERTICAL);
                    ck_assert_msg(vp.ops[i].base == v && vp.ops[i].ahead == 0,
                                  "D=%d N=%d stage %d op %d: version %d, expected %d", D, N, k,
                                  i, vp.ops[i].base, v);
                    ck_assert_int_eq(vp.ops[i].sync - vp.ops[i].base,
                                     op->mb < D - 1 ? op->mb : D - 1);
                    ck_assert_int_le(v, u);
                    ck_assert(vp.ops[i].live == (v == u));
                    if (op->kind == PB_OP_B && v < u)
                        reads[v]++;
                }
                for (int v = 0; v < 64; v++)
                    ck_assert_msg(kept[v] == reads[v], "D=%d N=%d stage %d: version %d kept "
                                  "for %d backwards, read by %d", D, N, k, v, kept[v], reads[v]);
                if (N == 24)
                    ck_assert_msg(vp.stash_slots == D - 1, "D=%d stage %d: %d copies, "
                                  "expected %d", D, k, vp.stash_slots, D - 1);
                pb_version_plan_finish(&vp);
            }
            pb_programs_finish(pr, D);
        }
}
END_TEST

/* semantics §4.11: PipeMare reschedules stage k's rate by its delay τ_k = D−1−k, the
 * updates between its F(j) and B(j) in the steady state; no other schedule reschedules. */
START_TEST(pipemare_delays)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find("pipemare", &e);
    ck_assert_msg(s && s->lr_delay, "%s", e.msg);
    for (int D = 1; D <= 6; D++) {
        struct pb_pipe p;
        struct pb_program pr[MAXD];
        build("pipemare", D, 4 * D, D, NULL, PB_OPT_ADAM, &p, pr);
        for (int k = 0; k < D; k++) {
            ck_assert_int_eq(s->lr_delay(&p, k), D - 1 - k);
            struct vers v;
            versions_of(&p, &pr[k], &v);
            for (int j = D; j < 4 * D; j++)
                ck_assert_int_eq(v.u[v.b[j]] - v.u[v.f[j]], D - 1 - k);
        }
        pb_programs_finish(pr, D);
    }
    for (int i = 0; pb_schedules[i]; i++)
        ck_assert_msg(!pb_schedules[i]->lr_delay || pb_schedules[i] == s, "%s reschedules",
                      pb_schedules[i]->name);
}
END_TEST

/* The family `pipebench list` shows: synchronous where every op reads the synchronous
 * version (GPipe), asynchronous where some op lags (every other seed schedule, PipeMare);
 * a schedule that accepts no pipe of D = 4 has none. */
static int refuse_all(const struct pb_pipe *p, struct pb_err *e)
{
    (void)p;
    return pb_err_set(e, "refused");
}

START_TEST(families)
{
    for (int i = 0; pb_schedules[i]; i++) {
        /* the family its versions show is the one it declares */
        bool sync = pb_schedules[i]->synchronous;
        ck_assert_msg(pb_schedule_family(pb_schedules[i]) ==
                          (sync ? PB_FAMILY_SYNC : PB_FAMILY_ASYNC),
                      "%s: family %d, declared %s", pb_schedules[i]->name,
                      (int)pb_schedule_family(pb_schedules[i]),
                      sync ? "synchronous" : "asynchronous");
    }
    struct pb_schedule none = *pb_schedules[0];
    none.check = refuse_all;
    ck_assert_int_eq(pb_schedule_family(&none), PB_FAMILY_UNKNOWN);
}
END_TEST

/* semantics §4.2: F reads W^(u) predicted s = D−1−k ahead (the last stage reads W);
 * B reads the current W. Variant code: s = D−k, ΔW form CODE. */
START_TEST(pipeoptim_versions)
{
    int D = 4, N = 16;
    for (int code = 0; code < 2; code++) {
        struct pb_pipe p;
        struct pb_program pr[MAXD];
        build("pipeoptim", D, N, D, code ? "code" : NULL, PB_OPT_ADAM, &p, pr);
        for (int k = 0; k < D; k++) {
            struct vers v;
            versions_of(&p, &pr[k], &v);
            int s = code ? D - k : D - 1 - k;
            for (int j = 0; j < N; j++) {
                const struct pb_op *f = &pr[k].ops[v.f[j]], *b = &pr[k].ops[v.b[j]];
                ck_assert_int_eq(v.base[v.f[j]], v.u[v.f[j]]);
                ck_assert_int_eq(v.ahead[v.f[j]], s);
                ck_assert_int_eq(f->wsrc, s ? PB_W_PREDICTED : PB_W_LATEST);
                if (s)
                    ck_assert_int_eq(f->pform, code ? PB_PREDICT_CODE : PB_PREDICT_PAPER);
                ck_assert_int_eq(b->wsrc, PB_W_LATEST);
                ck_assert_int_eq(v.base[v.b[j]], j);
            }
        }
        pb_programs_finish(pr, D);
    }
}
END_TEST

/* semantics §4.3, D = 4: s_F = 3, 2, 2, 1; s_B = 0, 0, 1, 1, both from the current W;
 * variant code: F form SPECTRAIN, B form MOMENTUM. */
START_TEST(spectrain_versions)
{
    static const int sf[4] = {3, 2, 2, 1}, sb[4] = {0, 0, 1, 1};
    for (int code = 0; code < 2; code++) {
        struct pb_pipe p;
        struct pb_program pr[MAXD];
        build("spectrain", 4, 8, 4, code ? "code" : NULL, PB_OPT_SGD, &p, pr);
        for (int k = 0; k < 4; k++) {
            struct vers v;
            versions_of(&p, &pr[k], &v);
            for (int j = 0; j < 8; j++) {
                const struct pb_op *f = &pr[k].ops[v.f[j]], *b = &pr[k].ops[v.b[j]];
                ck_assert_int_eq(v.ahead[v.f[j]], sf[k]);
                ck_assert_int_eq(v.ahead[v.b[j]], sb[k]);
                ck_assert_int_eq(v.base[v.f[j]], v.u[v.f[j]]);
                ck_assert_int_eq(v.base[v.b[j]], v.u[v.b[j]]);
                ck_assert_int_eq(f->pform, code ? PB_PREDICT_SPECTRAIN : PB_PREDICT_PAPER);
                ck_assert_int_eq(b->wsrc, sb[k] ? PB_W_PREDICTED : PB_W_LATEST);
                if (sb[k])
                    ck_assert_int_eq(b->pform, code ? PB_PREDICT_MOMENTUM : PB_PREDICT_PAPER);
            }
        }
        pb_programs_finish(pr, 4);
    }
}
END_TEST

/* semantics §4.4–§4.6 over N = 16: 2BW mini-batch b reads W^(max(0, b−1)); GPipe W^(b);
 * XPipe the base of its first F predicted s = ⌈(D−1−k)/T⌉ ahead, and once the
 * pipeline is full (b ≥ s) base + s is exactly the version the mini-batch updates. */
START_TEST(minibatch_versions)
{
    int D = 4, N = 16;
    for (int M = D; M <= D + 2; M++) {
        struct pb_pipe p;
        struct pb_program bw[MAXD], gp[MAXD], xp[MAXD];
        build("pipedream-2bw", D, N, M, NULL, PB_OPT_ADAM, &p, bw);
        build("gpipe", D, N, M, NULL, PB_OPT_ADAM, &p, gp);
        build("xpipe", D, N, M, NULL, PB_OPT_ADAM, &p, xp);
        for (int k = 0; k < D; k++) {
            struct vers a, g, x;
            versions_of(&p, &bw[k], &a);
            versions_of(&p, &gp[k], &g);
            versions_of(&p, &xp[k], &x);
            int s = (D - 1 - k + M - 1) / M;
            for (int j = 0; j < N; j++) {
                int b = j / M;
                ck_assert_int_eq(a.base[a.f[j]], b > 0 ? b - 1 : 0);
                ck_assert_int_eq(a.base[a.b[j]], b > 0 ? b - 1 : 0);
                ck_assert_int_eq(g.base[g.f[j]], b);
                ck_assert_int_eq(g.base[g.b[j]], b);
                int bell = x.base[x.f[b * M]];
                ck_assert_int_eq(x.base[x.f[j]], bell);
                ck_assert_int_eq(x.base[x.b[j]], bell);
                ck_assert_int_eq(x.ahead[x.f[j]], s);
                ck_assert_int_eq(x.ahead[x.b[j]], s);
                if (b >= s)
                    ck_assert_int_eq(bell + s, b);
            }
        }
        pb_programs_finish(bw, D);
        pb_programs_finish(gp, D);
        pb_programs_finish(xp, D);
    }
}
END_TEST

/* Every registered schedule in each of its forms builds and validates (channel
 * capacity 1) over the grid, with the first optimizer it accepts (SGD unless refused). */
START_TEST(all_validate)
{
    static const int Ds[] = {1, 2, 3, 4, 8}, Ns[] = {1, 5, 8, 16};
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int fi = 0; fi < nforms; fi++)
        for (int di = 0; di < 5; di++)
            for (int ni = 0; ni < 4; ni++)
                for (int M = Ds[di]; M <= Ds[di] + 1; M++) {
                    struct pb_err e;
                    struct pb_pipe p;
                    sched_pipe(forms[fi].sch, Ds[di], Ns[ni], M, &p);
                    p.variant = forms[fi].variant;
                    struct pb_program pr[MAXD];
                    int rc = -1;
                    for (int k = 0; rc && k < PB_OPT_NKINDS; k++) {
                        p.optimizer = (enum pb_optim_kind)k;
                        rc = pb_programs_build(forms[fi].sch, &p, pr, &e);
                    }
                    ck_assert_msg(rc == 0, "%s D=%d N=%d M=%d: %s", forms[fi].label, p.stages,
                                  p.length, M, e.msg);
                    ck_assert_msg(pb_programs_validate(&p, pr, 1, &e) == 0,
                                  "%s D=%d N=%d M=%d: %s", forms[fi].label, p.stages, p.length,
                                  M, e.msg);
                    pb_programs_finish(pr, pb_pipe_devices(&p));
                }
}
END_TEST

/* D = 1 (semantics §4.7), N = 5, M = 2: F B U per micro-batch, or per mini-batch, reading
 * W^(u); PipeOptim's code form still predicts one update ahead. */
static const char d1_per_mb[] =
    "stage 0: F0:0 B0:0 U F1:1 B1:1 U F2:2 B2:2 U F3:3 B3:3 U F4:4 B4:4 U\n";
static const char d1_mb2[] =
    "stage 0: F0:0 B0:0 F1:0 B1:0 U F2:1 B2:1 F3:1 B3:1 U F4:2 B4:2 U\n";
static const char d1_split[] =
    "stage 0: F0:0 I0:0 W0:0 F1:0 I1:0 W1:0 U F2:1 I2:1 W2:1 F3:1 I3:1 W3:1 U F4:2 I4:2 W4:2 "
    "U\n";
static const struct {
    const char *name, *variant, *expect;
} single_stage_programs[] = {
    {"gpipe", NULL, "stage 0: F0:0 F1:0 B1:0 B0:0 U F2:1 F3:1 B3:1 B2:1 U F4:2 B4:2 U\n"},
    {"1f1b", NULL, d1_mb2},
    {"zb-h1", NULL, d1_split},
    {"zb-h1", "quick-start", d1_mb2},
    {"zb-h2", NULL, d1_split},
    {"interleaved", NULL, d1_mb2},
    {"looped-bfs", NULL, "stage 0: F0:0 F1:0 B1:0 B0:0 U F2:1 F3:1 B3:1 B2:1 U F4:2 B4:2 U\n"},
    /* one device of 2 chunks; dualpipe-v needs M >= 2p in every step, the last too, so
     * steps of 3 and 2 (sched_pipe) */
    {"zb-v", NULL,
     "device 0: F0@0:0 F0@1:0 I0@1:0 W0@1:0 F1@0:0 I0@0:0 W0@0:0 F1@1:0 I1@1:0 W1@1:0 "
     "I1@0:0 W1@0:0 U F2@0:1 F2@1:1 I2@1:1 W2@1:1 F3@0:1 I2@0:1 W2@0:1 F3@1:1 I3@1:1 "
     "W3@1:1 I3@0:1 W3@0:1 U F4@0:2 F4@1:2 I4@1:2 W4@1:2 I4@0:2 W4@0:2 U\n"},
    {"dualpipe-v", NULL,
     "device 0: F0@0:0 F0@1:0 F1@0:0 B0@1:0 F1@1:0+B0@0:0 F2@0:0+B1@1:0 F2@1:0+B1@0:0 "
     "B2@1:0 I2@0:0 W2@0:0 U F3@0:1 F3@1:1 F4@0:1 B3@1:1 F4@1:1+B3@0:1 B4@1:1 I4@0:1 "
     "W4@0:1 U\n"},
    {"pipedream", NULL, d1_per_mb},
    {"pipedream", "vertical", d1_per_mb},
    {"pipedream-2bw", NULL, d1_mb2},
    {"spectrain", NULL, d1_per_mb},
    {"spectrain", "code", d1_per_mb},
    {"xpipe", NULL, d1_mb2},
    {"xpipe", "note", d1_mb2},
    {"pipeoptim", NULL, d1_per_mb},
    {"pipemare", NULL, d1_per_mb},
    {"pipeoptim", "code",
     "stage 0: F0:0+1 B0:0 U F1:1+1 B1:1 U F2:2+1 B2:2 U F3:3+1 B3:3 U F4:4+1 B4:4 U\n"},
};

/* Every registered form's D = 1 program; a form missing from the table fails. */
START_TEST(single_stage)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    size_t ntab = sizeof single_stage_programs / sizeof *single_stage_programs;
    for (int fi = 0; fi < nforms; fi++) {
        const char *expect = NULL;
        for (size_t t = 0; t < ntab; t++)
            if (sched_form_is(&forms[fi], single_stage_programs[t].name,
                              single_stage_programs[t].variant))
                expect = single_stage_programs[t].expect;
        ck_assert_msg(expect != NULL, "%s has no D = 1 program in single_stage_programs[] "
                      "(tests/schedules/test_schedules.c)", forms[fi].label);
        struct pb_pipe p;
        struct pb_program progs[MAXD];
        struct pb_err e;
        sched_pipe(forms[fi].sch, 1, 5, 2, &p);
        p.variant = forms[fi].variant;
        p.optimizer = PB_OPT_SGD;
        ck_assert_msg(pb_programs_build(forms[fi].sch, &p, progs, &e) == 0, "%s: %s",
                      forms[fi].label, e.msg);
        char *got = print_all(&p, progs, true);
        pb_programs_finish(progs, 1);
        ck_assert_msg(!strcmp(got, expect), "%s: got %sexpected %s", forms[fi].label, got,
                      expect);
        free(got);
    }
}
END_TEST

/* A hand-made program: tokens F<j>, B<j>, I<j>, W<j>, U; suffix s = STASHED, g = GROUP (s 0),
 * b = BUFFERED (default LATEST). */
static void parse(struct pb_program *pr, int device, const char *src)
{
    pb_program_init(pr, device);
    for (const char *c = src; *c;) {
        if (*c == ' ') {
            c++;
            continue;
        }
        char kind = *c++;
        if (kind == 'U') {
            pb_program_u(pr);
            continue;
        }
        int mb = (int)strtol(c, (char **)&c, 10);
        enum pb_wsrc w = *c == 's' ? PB_W_STASHED : *c == 'g' ? PB_W_GROUP
                       : *c == 'b' ? PB_W_BUFFERED : PB_W_LATEST;
        if (w != PB_W_LATEST)
            c++;
        if (kind == 'I' || kind == 'W')
            pb_program_push(pr, (struct pb_op){.kind = kind == 'I' ? PB_OP_I : PB_OP_W,
                                               .wsrc = (uint8_t)w, .mb = mb});
        else
            (kind == 'F' ? pb_program_f : pb_program_b)(pr, mb, w, 0, PB_PREDICT_PAPER);
    }
}

/* Validates the hand-made programs and expects an error containing `expect`. */
static void invalid(int D, int N, int M, const char *const *src, const char *expect)
{
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD};
    struct pb_program pr[MAXD];
    for (int k = 0; k < D; k++)
        parse(&pr[k], k, src[k]);
    struct pb_err e;
    ck_assert_msg(pb_programs_validate(&p, pr, 1, &e) != 0, "expected an error: %s", expect);
    ck_assert_msg(strstr(e.msg, expect) != NULL, "message '%s' lacks '%s'", e.msg, expect);
    pb_programs_finish(pr, D);
}

START_TEST(validator_rejects)
{
    invalid(1, 2, 1, (const char *[]){"B0 F0 U F1 B1 U"},
            "stage 0 op 0 (B0): backward before its forward F0");
    invalid(1, 2, 1, (const char *[]){"F0 B0 U F1 U"},
            "stage 0: micro-batch 1 has no backward B1 (F1 is op 3)");
    invalid(1, 2, 1, (const char *[]){"F0 B0 U F0 B1 U"},
            "stage 0 op 3 (F0): F0 appears twice (also op 0)");
    invalid(2, 2, 1, (const char *[]){"F0 F1 B0 U B1 U", "F1 B1 U F0 B0 U"},
            "forward order differs between stages 0 and 1: forward #0 is F0 on stage 0 (op 0) "
            "but F1 on stage 1 (op 0)");
    invalid(2, 2, 1, (const char *[]){"F0 F1 B1 U B0 U", "F0 B0 U F1 B1 U"},
            "backward order differs between stages 0 and 1: backward #0 is B1 on stage 0 (op 2) "
            "but B0 on stage 1 (op 1)");
    invalid(2, 2, 1, (const char *[]){"F0 B0 U F1 B1 U", "F0 F1 B0 U B1 U"},
            "deadlock with channel capacity 1; stage 0 at op 1 (B0) waits for the gradient of "
            "stage 1; stage 1 at op 1 (F1) waits for the activation of stage 0");
    invalid(1, 2, 1, (const char *[]){"B0s F0 U F1 B1s U"},
            "stage 0 op 0 (B0): reads the stash of F0, which has not run");
    invalid(1, 4, 2, (const char *[]){"F0b B0b U F1b B1b U F2b B2b U F3b B3b U"},
            "stage 0 op 6 (F2): reads W^(0) but after 2 updates the two buffers hold W^(1) and "
            "W^(2)");
    invalid(1, 2, 2, (const char *[]){"F0g B0g U F1g B1g U"},
            "stage 0 op 3 (F1): its mini-batch's update already ran");
    invalid(1, 2, 2, (const char *[]){"F1g F0g B0g B1g U"},
            "stage 0 op 0 (F1): reads the prediction of its mini-batch's first forward F0, which "
            "has not run");
    invalid(1, 1, 1, (const char *[]){"F0 B0"},
            "stage 0 op 1 (B0): its gradient is never applied");
    /* the split backward (semantics §4.10) */
    invalid(1, 1, 1, (const char *[]){"F0 W0 I0 U"},
            "stage 0 op 1 (W0): weight gradient before its input gradient I0; W comes after "
            "its I");
    invalid(1, 1, 1, (const char *[]){"F0 I0"},
            "stage 0: micro-batch 0 has I0 (op 1) but no W0");
    invalid(1, 1, 1, (const char *[]){"F0 I0 W0 B0 U"},
            "stage 0 op 3 (B0): micro-batch 0 already has I0 (op 1); a micro-batch has one B, "
            "or one I and one W");
    invalid(1, 1, 1, (const char *[]){"F0 B0 W0 U"},
            "stage 0 op 2 (W0): micro-batch 0 already has B0 (op 1)");
    invalid(1, 1, 1, (const char *[]){"F0 I0 W0 W0 U"},
            "stage 0 op 3 (W0): micro-batch 0 already has W0 (op 2)");
    invalid(1, 1, 1, (const char *[]){"I0 F0 W0 U"},
            "stage 0 op 0 (I0): backward before its forward F0");
    invalid(1, 1, 1, (const char *[]){"F0 I0s W0 U"},
            "stage 0 op 1 (I0): a split backward reads the latest weights");
    invalid(1, 1, 1, (const char *[]){"F0 I0 W0"},
            "stage 0 op 2 (W0): its gradient is never applied");
    invalid(1, 1, 1, (const char *[]){"F0 I0 U W0 U"},
            "stage 0 op 2 (U): an update between I0 (op 1) and W0");
    /* I carries the gradient: its order across stages is FIFO like B's */
    invalid(2, 2, 1, (const char *[]){"F0 F1 I1 W1 I0 W0 U", "F0 I0 W0 F1 I1 W1 U"},
            "backward order differs between stages 0 and 1: backward #0 is I1 on stage 0 (op 2) "
            "but I0 on stage 1 (op 1)");
    invalid(2, 2, 1, (const char *[]){"F0 I0 W0 F1 I1 W1 U", "F0 F1 I0 W0 I1 W1 U"},
            "deadlock with channel capacity 1; stage 0 at op 1 (I0) waits for the gradient of "
            "stage 1");
}
END_TEST

/* A send blocks until its channel holds at most `capacity` items: 1F1B with warm-up
 * needs buffered sends, a rendezvous (capacity 0) deadlocks it. */
START_TEST(validator_capacity)
{
    struct pb_pipe p;
    struct pb_program pr[MAXD];
    struct pb_err e;
    build("pipedream", 4, 8, 4, NULL, PB_OPT_SGD, &p, pr);
    ck_assert_int_eq(pb_programs_validate(&p, pr, 1, &e), 0);
    ck_assert_int_ne(pb_programs_validate(&p, pr, 0, &e), 0);
    ck_assert_msg(strstr(e.msg, "deadlock with channel capacity 0") != NULL, "%s", e.msg);
    pb_programs_finish(pr, 4);
    build("gpipe", 4, 8, 4, NULL, PB_OPT_SGD, &p, pr);
    ck_assert_int_eq(pb_programs_validate(&p, pr, 0, &e), 0);
    pb_programs_finish(pr, 4);
}
END_TEST

/* Expects check to fail with a message containing each of the `need` strings. */
static void rejects(const char *name, int D, int N, int M, const char *variant,
                    enum pb_optim_kind opt, const char *const *need)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find(name, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = opt,
                        .variant = variant};
    ck_assert_msg(s->check(&p, &e) != 0, "%s D=%d N=%d M=%d accepted", name, D, N, M);
    for (; *need; need++)
        ck_assert_msg(strstr(e.msg, *need) != NULL, "message '%s' lacks '%s'", e.msg, *need);
}

START_TEST(bad_input)
{
    struct pb_err e;
    ck_assert_ptr_null(pb_schedule_find("pipedreem", &e));
    for (int i = 0; pb_schedules[i]; i++)
        ck_assert_msg(strstr(e.msg, pb_schedules[i]->name) != NULL, "'%s' lacks %s", e.msg,
                      pb_schedules[i]->name);
    ck_assert_msg(strstr(e.msg, "pipedreem") != NULL, "%s", e.msg);
    rejects("pipedream-2bw", 4, 8, 3, NULL, PB_OPT_SGD, (const char *[]){"M >= D", "4", NULL});
    rejects("spectrain", 4, 8, 4, NULL, PB_OPT_ADAM, (const char *[]){"SGD", NULL});
    rejects("spectrain", 4, 8, 4, NULL, PB_OPT_RMSPROP, (const char *[]){"SGD", NULL});
    for (int i = 0; pb_schedules[i]; i++) {
        const char *name = pb_schedules[i]->name;
        rejects(name, 0, 8, 4, NULL, PB_OPT_SGD, (const char *[]){"--stages", NULL});
        rejects(name, 4, 0, 4, NULL, PB_OPT_SGD, (const char *[]){"--length", NULL});
    }
    rejects("gpipe", 4, 8, 0, NULL, PB_OPT_SGD, (const char *[]){"--microbatches", NULL});
    rejects("pipeoptim", 4, 8, 4, "paper2", PB_OPT_SGD,
            (const char *[]){"unknown variant 'paper2'", "code", NULL});
    rejects("xpipe", 4, 8, 4, "code", PB_OPT_SGD, (const char *[]){"note", NULL});
    rejects("pipedream", 4, 8, 4, "vertcal", PB_OPT_SGD,
            (const char *[]){"unknown variant 'vertcal'", "vertical", NULL});
    rejects("gpipe", 4, 8, 4, "code", PB_OPT_SGD, (const char *[]){"no variants", NULL});
}
END_TEST

/* Runs `pipebench program ARGS` (the binary named by $PB_PIPEBENCH); returns its
 * exit status and its stdout in out. */
static int run_cli(const char *args, char *out, size_t cap)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (tests/meson.build sets it)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' program %s 2>/dev/null", bin, args);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(cli)
{
    char out[8192];
    /* `pipebench list`: each schedule's family and what it needs beside its summary */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' list", getenv("PB_PIPEBENCH"));
    FILE *lf = popen(cmd, "r");
    ck_assert_ptr_nonnull(lf);
    size_t ln = fread(out, 1, sizeof out - 1, lf);
    out[ln] = 0;
    ck_assert_int_eq(pclose(lf), 0);
    static const char *const listed[] = {
        "  gpipe          [synchronous; D, N, M] fill and drain",
        "  pipedream      [asynchronous; D, N] asynchronous 1F1B; B reads the weights its F "
        "stashed (semantics §4.1) (variants: vertical)",
        "  pipemare       [asynchronous; D, N] asynchronous 1F1B without stashing",
    };
    for (size_t i = 0; i < sizeof listed / sizeof *listed; i++)
        ck_assert_msg(strstr(out, listed[i]) != NULL, "no '%s' in:\n%s", listed[i], out);
    ck_assert_int_eq(run_cli("--schedule pipedream --stages 4", out, sizeof out), 0);
    ck_assert_str_eq(out, order_1f1b);
    ck_assert_int_eq(run_cli("--schedule pipeoptim --stages 4 --length 8 --versions", out,
                             sizeof out), 0);
    ck_assert_msg(strstr(out, "stage 0: F0:0+3 F1:0+3 F2:0+3 F3:0+3 B0:0 U F4:1+3 B1:1 U") != NULL,
                  "%s", out);
    /* vertical sync, worked by hand: stage 3 reads max(0, j − 3) where a synchronous run
     * reads j */
    ck_assert_int_eq(run_cli("--schedule pipedream --variant vertical --stages 4 --length 6 "
                             "--versions --sync", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "stage 3: F0:0|0 B0:0|0 U F1:0|1 B1:0|1 U F2:0|2 B2:0|2 U F3:0|3 "
                              "B3:0|3 U F4:1|4 B4:1|4 U F5:2|5 B5:2|5 U\n") != NULL, "%s", out);
    ck_assert_int_eq(run_cli("--schedule pipedream --variant vertcal --stages 4", out,
                             sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule pipemare --variant vertical --stages 4", out,
                             sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule xpipe --stages 4 --microbatches 4", out, sizeof out), 0);
    ck_assert_str_eq(out, order_mb4);
    ck_assert_int_eq(run_cli("--schedule nope --stages 4", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 0", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 4 --length 0", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 4 --microbatches 0", out, sizeof out), 2);
    /* sizes are checked before anything is allocated (exit 2, not an abort) */
    ck_assert_int_eq(run_cli("--schedule gpipe --stages -1", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 2147483647", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 4 --length 2147483647", out, sizeof out),
                     2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 1000 --length 900000", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule pipeoptim --stages 4 --variant x", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule spectrain --stages 4 --optimizer adam", out, sizeof out),
                     2);
    ck_assert_int_eq(run_cli("--schedule pipedream-2bw --stages 4 --microbatches 2", out,
                             sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages 4 --optimizer lbfgs", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--schedule gpipe --stages four", out, sizeof out), 2);
    ck_assert_int_eq(run_cli("--help", out, sizeof out), 0);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("schedules");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, golden_programs, 0, NGOLDENS);
    tcase_add_test(tc, golden_coverage);
    tcase_add_test(tc, pipedream_versions);
    tcase_add_test(tc, vertical_versions);
    tcase_add_test(tc, pipemare_delays);
    tcase_add_test(tc, families);
    tcase_add_test(tc, pipeoptim_versions);
    tcase_add_test(tc, spectrain_versions);
    tcase_add_test(tc, minibatch_versions);
    tcase_add_test(tc, all_validate);
    tcase_add_test(tc, single_stage);
    tcase_add_test(tc, validator_rejects);
    tcase_add_test(tc, validator_capacity);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, cli);
    suite_add_tcase(s, tc);
    return s;
}
