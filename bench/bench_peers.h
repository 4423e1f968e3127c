/* bench/bench_peers.h — the PyTorch peers a benchmark compares with, each a child process
 * (bench_torch.h) of its own interpreter, all timed in the same interleaved rounds as
 * pipebench (the sides' order rotating from round to round, bench_side_order):
 *   - Debian's PyTorch 1.13: /usr/bin/python3, with LD_LIBRARY_PATH=OPENBLAS_DIR where the
 *     benchmark is given one (Debian's OpenMP OpenBLAS: the fair BLAS for its "generic" build);
 *   - PyPI's PyTorch 2.x: the interpreter $PB_TORCH2_PYTHON names, with the environment as it
 *     is (its MKL and oneDNN are its own); `scripts/bench --torch2` makes one.
 * Each is labelled "pt" and its version's MAJOR.MINOR (pt1.13, pt2.15); a peer that is absent
 * or does not answer is left out, and the header says why and how to get it. */
#ifndef PB_BENCH_PEERS_H
#define PB_BENCH_PEERS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_torch.h"

#define BENCH_PEERS_MAX 2
#define BENCH_PEERS_DEBIAN_PYTHON "/usr/bin/python3"
#define BENCH_PEERS_TORCH2_ENV "PB_TORCH2_PYTHON"

struct bench_peers {
    int n;                                  /* peers that answered */
    struct bench_torch p[BENCH_PEERS_MAX];  /* the answering ones, Debian's first */
    const char *python[BENCH_PEERS_MAX];    /* each one's interpreter */
    const char *libdir[BENCH_PEERS_MAX];    /* each one's LD_LIBRARY_PATH, NULL: as it is */
    char missing[2][256];                   /* why a peer is not there, "" when it is */
};

/* Starts script under each interpreter of python[] (Debian's, then PyPI's; NULL: not given),
 * the first with LD_LIBRARY_PATH=openblas; false when none answers. */
static inline bool bench_peers_start_with(struct bench_peers *ps, const char *const python[2],
                                          const char *script, const char *openblas,
                                          const char *who)
{
    memset(ps, 0, sizeof *ps);
    const char *libdir[2] = {openblas, NULL};
    for (int k = 0; k < 2; k++) {
        if (!python[k]) {
            snprintf(ps->missing[k], sizeof ps->missing[k],
                     "no PyPI PyTorch 2.x peer (%s unset): `scripts/bench --torch2` makes one "
                     "(a virtual environment with pip install torch torchvision)",
                     BENCH_PEERS_TORCH2_ENV);
            continue;
        }
        struct bench_torch *t = &ps->p[ps->n];
        if (!bench_torch_start(t, python[k], script, libdir[k], who)) {
            snprintf(ps->missing[k], sizeof ps->missing[k], "no PyTorch answered from %s%s",
                     python[k], k ? "" : " (Debian: apt-get install python3-torch "
                                         "python3-torchvision)");
            continue;
        }
        ps->python[ps->n] = python[k];
        ps->libdir[ps->n] = libdir[k];
        ps->n++;
    }
    return ps->n > 0;
}

/* The peers of this machine: Debian's /usr/bin/python3 and $PB_TORCH2_PYTHON. Call it before
 * this process starts any OpenMP team. */
static inline bool bench_peers_start(struct bench_peers *ps, const char *script,
                                     const char *openblas, const char *who)
{
    const char *torch2 = getenv(BENCH_PEERS_TORCH2_ENV);
    const char *const python[2] = {BENCH_PEERS_DEBIAN_PYTHON, torch2 && *torch2 ? torch2 : NULL};
    return bench_peers_start_with(ps, python, script, openblas, who);
}

/* A line per peer: its label, interpreter, LD_LIBRARY_PATH and what its torch reports (version,
 * BLAS, MKL, oneDNN, CPU kernels, default threads: bench/torch_peer.py), then a line per
 * missing peer. */
static inline void bench_peers_print(const struct bench_peers *ps, const char *indent)
{
    for (int k = 0; k < ps->n; k++)
        printf("%s%s: %s%s%s: %s\n", indent, ps->p[k].label, ps->python[k],
               ps->libdir[k] ? " with LD_LIBRARY_PATH=" : "", ps->libdir[k] ? ps->libdir[k] : "",
               ps->p[k].version);
    for (int k = 0; k < 2; k++)
        if (ps->missing[k][0])
            printf("%s%s\n", indent, ps->missing[k]);
}

static inline void bench_peers_stop(struct bench_peers *ps)
{
    for (int k = 0; k < ps->n; k++)
        bench_torch_stop(&ps->p[k]);
}

/* The side that goes i-th in round r of nsides (0: pipebench, k + 1: peer k): the order
 * rotates by one each round (pb pt1.13 pt2, pt1.13 pt2 pb, pt2 pb pt1.13, …), so over
 * nsides rounds every side goes first once; with two sides, they alternate. */
static inline int bench_side_order(int r, int i, int nsides)
{
    return (r + i) % nsides;
}

#endif
