/* harness/base/rng.h — counter-based random numbers (design §2.3).
 * Every random draw is a pure function of a key and a counter, never of a shared
 * stream, so every executor and thread count draws the same numbers. The key is
 * built from the run seed and a position, e.g. (seed, micro-batch, layer)
 * for dropout (semantics §1.7). Philox4x32-10 (Salmon et al., SC'11). */
#ifndef PB_RNG_H
#define PB_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/philox.h"  /* struct pb_rng_key, the block function */

/* Domains keep keys of different purposes apart. */
enum pb_rng_domain {
    PB_RNG_INIT = 1,     /* parameter initialisation: (seed, stage-independent layer id) */
    PB_RNG_SHUFFLE = 2,  /* epoch permutation: (seed, epoch) */
    PB_RNG_DROPOUT = 3,  /* dropout masks: (seed, global micro-batch, layer) */
    PB_RNG_DATA = 4,     /* synthetic datasets: (seed, sample) */
    PB_RNG_AUGMENT = 5,  /* training transforms of image samples: (seed, epoch, sample) */
};

/* Key from a domain, a seed and up to three position coordinates. */
struct pb_rng_key pb_rng_key(enum pb_rng_domain d, uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

/* Four 32-bit words for counter i of the stream. */
void pb_rng_words(struct pb_rng_key key, uint64_t i, uint32_t out[4]);

/* Uniform float in [0, 1) for element i (24 random bits). */
float pb_rng_uniform(struct pb_rng_key key, uint64_t i);

/* out[j] = pb_rng_uniform(key, first + j) for j < n, vectorised. */
void pb_rng_uniform_run(struct pb_rng_key key, uint64_t first, float *out, size_t n);

/* Uniform float in [0, 1) for element i of a stream that uses all four words of each
 * counter: word i mod 4 of counter ⌊i/4⌋ (as cuRAND's curand_uniform4 does), a quarter of
 * the work per element of pb_rng_uniform. Dropout draws from it. */
float pb_rng_uniform4(struct pb_rng_key key, uint64_t i);

/* out[j] = pb_rng_uniform4(key, first + j) for j < n, vectorised. */
void pb_rng_uniform4_run(struct pb_rng_key key, uint64_t first, float *out, size_t n);

/* Fills out[0..n) with uniforms in [lo, hi) for elements first..first+n. */
void pb_rng_fill_uniform(struct pb_rng_key key, uint64_t first, float *out, uint64_t n, float lo, float hi);

/* Standard normal for element i (Box–Muller on the words of counter i). */
float pb_rng_normal(struct pb_rng_key key, uint64_t i);

/* Uniform integer in [0, n) for element i (n > 0; 64-bit multiply-shift). */
uint64_t pb_rng_below(struct pb_rng_key key, uint64_t i, uint64_t n);

#endif
