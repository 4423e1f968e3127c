/* harness/ir/program.h — the op IR every schedule emits (design §2.1, §2.2).
 * A program is one device's ordered list of ops: F(j) forward, B(j) backward,
 * U optimizer update, and the split backward's I(j) (input gradient: receives dY,
 * sends dX, adds nothing to the gradient buffer) and W(j) (weight gradient from what
 * F(j) and I(j) kept: adds into the gradient buffer, sends nothing). Each F and B names the weight source it reads, so the
 * version every op used is explicit and derivable from the program alone
 * (pb_program_versions). Schedules (schedules/) fill programs; the validator,
 * executors, `pipebench program` and the traces read them. */
#ifndef PB_PROGRAM_H
#define PB_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/base/err.h"
#include "harness/optim/optim.h"

enum pb_op_kind { PB_OP_F, PB_OP_B, PB_OP_U, PB_OP_I, PB_OP_W, PB_OP_NKINDS };

/* The letter of an op kind: F, B, U, I, W. */
static inline char pb_op_letter(int kind) { return "FBUIW"[kind]; }
/* Whether the op receives dY from the next stage and sends dX to the one before (B, I). */
static inline bool pb_op_carries_grad(int kind) { return kind == PB_OP_B || kind == PB_OP_I; }
/* Whether the op adds a micro-batch's gradient into the buffer a U applies (B, W). */
static inline bool pb_op_accumulates(int kind) { return kind == PB_OP_B || kind == PB_OP_W; }

/* The ranges a pipe is checked against before any program is built. */
#define PB_MAX_STAGES 1024
#define PB_MAX_MICROBATCHES 1000000       /* per epoch, and per update (M) */
#define PB_MAX_PROGRAM_OPS 100000000LL    /* F, B and U over all the devices */

/* Where an F or B reads its weights (semantics §4). The version each resolves to is
 * given for a stage that has applied u updates when the op runs. */
enum pb_wsrc {
    PB_W_LATEST,     /* W^(u) */
    PB_W_STASHED,    /* B only: the version its F(j) read (PipeDream weight stashing) */
    PB_W_PREDICTED,  /* Ŵ = W^(u) − lr·s·ΔW, made at this op (PipeOptim, SpecTrain) */
    PB_W_GROUP,      /* XPipe: the Ŵ its mini-batch's first micro-batch predicted at its F
                        with look-ahead s, kept until the mini-batch's update */
    PB_W_BUFFERED,   /* PipeDream-2BW: W^(max(0, b−1)) for mini-batch b = mb / M */
    PB_W_VERTICAL,   /* PipeDream with vertical sync: the version stage 0's F(mb) read in the
                        1F1B order with one U per B, W^(max(0, mb − min(D−1, N))), on every
                        stage and in both passes */
};

struct pb_op {
    uint8_t kind;   /* enum pb_op_kind */
    uint8_t wsrc;   /* enum pb_wsrc (F, B, I, W; I and W read PB_W_LATEST) */
    uint8_t pform;  /* enum pb_predict_variant: the ΔW form of a prediction */
    uint8_t pair;   /* 1 on an F overlapped with the B right after it (DualPipeV's
                       OVERLAP_F_B): without a fused kernel the two run in turn, so the
                       mark shows in the text form ("F7@0+B3@1"), the events and the
                       trace; in the stage programs (pb_programs_stages), where the two
                       sit in different stages' programs, 2 on that B */
    int16_t s;      /* look-ahead of PB_W_PREDICTED / PB_W_GROUP */
    int16_t chunk;  /* model chunk on this device (0 for the seed schedules) */
    int32_t mb;     /* micro-batch index within the epoch (F, B, I, W); -1 for U */
};

struct pb_program {
    int device;
    struct pb_op *ops;
    int n, cap;
};

/* What a schedule is asked to generate. */
struct pb_pipe {
    int stages;        /* D ≥ 1 */
    int length;        /* N: micro-batches in the epoch */
    int microbatches;  /* M: micro-batches per update (gpipe, 1f1b, zb-h1, zb-h2,
                          pipedream-2bw, xpipe) */
    enum pb_optim_kind optimizer;
    const char *variant;  /* NULL or "" for the default; "code", "note", "vertical"
                             (semantics §4.8) */
    int chunks;        /* v: model chunks (stages) per device, 0 or 1 for one; the devices
                          are p = D / v */
    int placement;     /* enum pb_placement: which stage each chunk is */
};

/* Where the v chunks of the p devices sit among the D = p·v stages (semantics §4.12,
 * §4.13). Loop (Megatron, torch's default): chunk c of device r is stage r + c·p. V
 * (ZB-V, DualPipeV; torch's style "v"): chunk c of device r is stage c·p + r for even c
 * and c·p + p−1−r for odd c, so at v = 2 device r holds stages r and 2p−1−r, the loss
 * is on device 0 and the edge between stages p−1 and p stays on device p−1. */
enum pb_placement { PB_PLACE_LOOP, PB_PLACE_V };

/* v (at least 1), the devices p = D / v, the stage of a device's local chunk and the
 * device of a stage. */
static inline int pb_pipe_chunks(const struct pb_pipe *p) { return p->chunks > 1 ? p->chunks : 1; }
static inline int pb_pipe_devices(const struct pb_pipe *p) { return p->stages / pb_pipe_chunks(p); }
static inline int pb_pipe_stage_of(const struct pb_pipe *p, int device, int chunk)
{
    int np = pb_pipe_devices(p);
    if (p->placement == PB_PLACE_V && chunk % 2)
        return chunk * np + np - 1 - device;
    return device + chunk * np;
}
/* The device holding stage k (the inverse of pb_pipe_stage_of), -1 where none does. */
static inline int pb_pipe_device_of(const struct pb_pipe *p, int stage)
{
    for (int d = 0; d < pb_pipe_devices(p); d++)
        for (int c = 0; c < pb_pipe_chunks(p); c++)
            if (pb_pipe_stage_of(p, d, c) == stage)
                return d;
    return -1;
}

struct pb_schedule {
    const char *name, *summary;
    const char *variants;          /* comma-separated accepted variants, "" if none */
    bool uses_microbatches;        /* M matters (else one update per micro-batch) */
    bool synchronous;              /* every op reads the version a synchronous run reads
                                      (lag 0: the family `pipebench list` shows) */
    bool chunked;                  /* runs v > 1 model chunks per device (--chunks) */
    int chunks;                    /* the v it runs, exactly (0: any, as --chunks gives) */
    int placement;                 /* enum pb_placement of its chunks */
    int step_min;                  /* micro-batches per device every step needs: M and the
                                      epoch's last step at least step_min·p (0: any) */
    /* Rejects pipes the schedule cannot run, with a message saying what to change. */
    int (*check)(const struct pb_pipe *p, struct pb_err *e);
    /* Appends device d's program for one epoch. */
    void (*emit)(const struct pb_pipe *p, int device, struct pb_program *out);
    /* PipeMare's learning-rate rescheduling (semantics §4.12): the delay τ of stage k, whose
       rate is lr / τ^(1 − min((t+1)/K, 1)) at its step t (none where τ <= 1); NULL: the
       schedule keeps the optimizer's rate. */
    int (*lr_delay)(const struct pb_pipe *p, int stage);
};

/* A schedule's family, as `pipebench list` shows it: synchronous when every F and B of its
 * default form, at D = 4, N = 8, M = 4 with the first optimizer it accepts, reads the
 * version a synchronous run reads (lag 0, semantics §6.2), asynchronous otherwise;
 * PB_FAMILY_UNKNOWN when it accepts no such pipe. */
enum pb_family { PB_FAMILY_UNKNOWN, PB_FAMILY_SYNC, PB_FAMILY_ASYNC };
enum pb_family pb_schedule_family(const struct pb_schedule *sch);

void pb_program_init(struct pb_program *p, int device);
void pb_program_finish(struct pb_program *p);
void pb_program_push(struct pb_program *p, struct pb_op op);
/* Convenience emitters */
void pb_program_f(struct pb_program *p, int mb, enum pb_wsrc w, int s, enum pb_predict_variant form);
void pb_program_b(struct pb_program *p, int mb, enum pb_wsrc w, int s, enum pb_predict_variant form);
void pb_program_u(struct pb_program *p);
/* The split backward's two passes, reading the latest weights. */
void pb_program_i(struct pb_program *p, int mb);
void pb_program_w(struct pb_program *p, int mb);
/* An F, B, I or W on the device's local chunk c (pb_program_f … on chunk 0). */
void pb_program_pass(struct pb_program *p, int kind, int mb, int chunk);
/* DualPipeV's overlapped pair: F(fmb) on chunk fc marked as a pair, then B(bmb) on chunk bc. */
void pb_program_pair(struct pb_program *p, int fmb, int fc, int bmb, int bc);
/* The forward-only program of a validation pass on one device with v chunks: F0@0 …
 * F0@(v−1), F1@0 …, each reading the latest weights (semantics §1.4: validation never
 * uses predicted weights). */
void pb_program_eval(struct pb_program *p, int device, int nbatches, int chunks);

/* Gives a pipe what its schedule fixes: the schedule's v where --chunks was left out
 * (chunks 0) and its placement. Whoever builds a pipe for a schedule calls it first. */
void pb_pipe_adopt(struct pb_pipe *p, const struct pb_schedule *sch);

/* Builds the p = D / v device programs after schedule->check (and the checks that v
 * divides D, that the schedule has chunks where v > 1, that v is the one it fixes and
 * the pipe's placement its own); programs[] has p entries. */
int pb_programs_build(const struct pb_schedule *sch, const struct pb_pipe *p,
                      struct pb_program *programs, struct pb_err *e);
void pb_programs_finish(struct pb_program *programs, int d);
/* Splits the p device programs into the D stage programs (stages[k].device = k, each
 * op's chunk 0, in the device's order): what a stage's worker, version plan and the
 * per-stage checks read; the B of an overlapped pair is marked there (pair 2), so each
 * stage's worker knows both halves. -1 with a message when an op names a chunk outside
 * 0..v−1. */
int pb_programs_stages(const struct pb_pipe *p, const struct pb_program *devices,
                       struct pb_program *stages, struct pb_err *e);
/* The smallest channel capacity (1 … N) with which the device programs run without
 * deadlock (semantics §4.12): what an executor with bounded channels must give them.
 * -1 with the deadlock at capacity N when none does. */
int pb_programs_capacity(const struct pb_pipe *p, const struct pb_program *devices,
                         struct pb_err *e);

/* The weight version of one op (semantics §6.1), counted in the updates the stage
 * has applied since the epoch began (the pipeline fills and drains every epoch). This
 * is the one place versions are derived: the worker resolves weights from it, logs it
 * with every event, and `pipebench program --versions` prints it. */
struct pb_op_version {
    int base;   /* F, B: the version its weights start from (LATEST u, STASHED its F's,
                   GROUP the bellwether F's u, BUFFERED max(0, b−1), VERTICAL
                   max(0, mb − min(D−1, N))); -1 when the program
                   cannot supply it. U: the version it produces. */
    int ahead;  /* F, B: look-ahead s of a prediction (0 when none); U: 0 */
    int sync;   /* the version a synchronous run reads at this op: F, B mb / update_every;
                   U: its base */
    bool live;  /* a STASHED B whose F's version is still the latest when it runs (no U
                   between them): it reads W itself and its F keeps no copy; a VERTICAL F
                   or B whose version is the latest: it reads W itself */
};

/* What a stage's program asks of its weight store, derived once per program. */
struct pb_version_plan {
    int n;                      /* ops in the program */
    struct pb_op_version *ops;  /* [n] */
    int update_every;           /* micro-batches per update: backwards before the first U */
    bool *stash;                /* [n]: this F keeps a copy of its weights for its B
                                   (STASHED with an update between them) */
    int *keep;                  /* [n]: at a U, the VERTICAL backwards after it that read
                                   the version it replaces (a copy kept for them); 0 else */
    int stash_slots;            /* most distinct stashed or kept versions held at once */
    int group_slots;            /* XPipe: most mini-batch predictions held at once */
    bool buffered;              /* some op reads the older buffer (2BW) */
};

/* Derives the plan of one program; finish frees it. */
void pb_version_plan_init(struct pb_version_plan *vp, const struct pb_pipe *p,
                          const struct pb_program *prog);
void pb_version_plan_finish(struct pb_version_plan *vp);

/* Checks the p device programs (programs[] has p = D / v entries): every micro-batch has
 * on every stage (pb_programs_stages) exactly one F and either one B or one
 * I and one W (semantics §4.10), B or I after its F, W after its I, I and W reading
 * the latest weights; forward order on stage k+1 equals that on stage k and the order
 * of the gradient-carrying ops (B, I) on stage k equals that on stage k+1 (FIFO
 * channels, one per edge between stages); no deadlock when each
 * device runs its program with blocking sends into channels of capacity `capacity`;
 * every weight version read exists when read. */
int pb_programs_validate(const struct pb_pipe *p, const struct pb_program *programs,
                         int capacity, struct pb_err *e);

/* What pb_program_print adds to each F and B (flags, or-ed). */
enum { PB_PRINT_VERSIONS = 1, PB_PRINT_SYNC = 2 };

/* Text form (semantics §4): "stage 0: F0 F1 B0 U ...", "I3", "W3" for the split
 * backward, "F3@1" for an op on local chunk 1 where v > 1 ("device 0: ...", an
 * overlapped pair "F7@0+B3@1"; versions are
 * then those of the op's stage); with PB_PRINT_VERSIONS the version
 * plan's read version, "F4:1+3 B1:0" (":?" where the program cannot supply it); with
 * PB_PRINT_SYNC also the version a synchronous run reads, "F4:1|4". */
void pb_program_print(FILE *f, const struct pb_pipe *p, const struct pb_program *prog,
                      int flags);

#endif
