/* harness/base/philox.h — the Philox4x32-10 block function (Salmon et al., SC'11) and the
 * float it makes of a word, as per-element functions (kernel_fn.h) that rng.c and the
 * kernels (dropout, harness/compute/kernels/dropout.h) share: counter [4] words, key [2]. */
#ifndef PB_PHILOX_H
#define PB_PHILOX_H

#include <stdint.h>

#include "harness/base/kernel_fn.h"

#define PB_PHILOX_M0 0xD2511F53u
#define PB_PHILOX_M1 0xCD9E8D57u
#define PB_PHILOX_W0 0x9E3779B9u
#define PB_PHILOX_W1 0xBB67AE85u

/* A stream of Philox blocks: its key and the upper half of its counter (rng.h). */
struct pb_rng_key {
    uint32_t k[2];       /* Philox key */
    uint32_t ctr_hi[2];  /* the upper half of the counter: fixes the stream */
};

/* out[4] = Philox4x32-10 of the counter (i, key.ctr_hi) under key.k: ten rounds of two
 * 32×32→64-bit products, the key bumped by the Weyl constants after each. */
PB_KERNEL void pb_philox_block(struct pb_rng_key key, uint64_t i, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)i, c1 = (uint32_t)(i >> 32), c2 = key.ctr_hi[0], c3 = key.ctr_hi[1];
    uint32_t k0 = key.k[0], k1 = key.k[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PB_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PB_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += PB_PHILOX_W0;
        k1 += PB_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* A uniform float in [0, 1) from the top 24 bits of w (exact: 24 bits fit a float). */
PB_KERNEL float pb_philox_unit(uint32_t w)
{
    return (float)(w >> 8) * (1.0f / 16777216.0f);
}

/* Element i of the four-words-per-counter stream: word i mod 4 of block ⌊i/4⌋, as a
 * uniform in [0, 1) (rng.h's pb_rng_uniform4, dropout's draw). */
PB_KERNEL float pb_philox_uniform4(struct pb_rng_key key, uint64_t i)
{
    uint32_t w[4];
    pb_philox_block(key, i >> 2, w);
    return pb_philox_unit(w[i & 3]);
}

#endif
