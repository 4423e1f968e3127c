/* harness/base/rng.c — Philox4x32-10 counter-based generator (rng.h). */
#include "harness/base/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

struct pb_rng_key pb_rng_key(enum pb_rng_domain d, uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = splitmix64(seed ^ splitmix64((uint64_t)d));
    h = splitmix64(h ^ a);
    uint64_t g = splitmix64(h ^ splitmix64(b + 0x632BE59BD9B4E019ull));
    g = splitmix64(g ^ c);
    struct pb_rng_key k = {
        .k = {(uint32_t)h, (uint32_t)(h >> 32)},
        .ctr_hi = {(uint32_t)g, (uint32_t)(g >> 32)},
    };
    return k;
}

void pb_rng_words(struct pb_rng_key key, uint64_t i, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)i, c1 = (uint32_t)(i >> 32), c2 = key.ctr_hi[0], c3 = key.ctr_hi[1];
    uint32_t k0 = key.k[0], k1 = key.k[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

float pb_rng_uniform(struct pb_rng_key key, uint64_t i)
{
    uint32_t w[4];
    pb_rng_words(key, i, w);
    return (float)(w[0] >> 8) * (1.0f / 16777216.0f);
}

void pb_rng_fill_uniform(struct pb_rng_key key, uint64_t first, float *out, uint64_t n, float lo, float hi)
{
    for (uint64_t j = 0; j < n; j++)
        out[j] = lo + (hi - lo) * pb_rng_uniform(key, first + j);
}

float pb_rng_normal(struct pb_rng_key key, uint64_t i)
{
    uint32_t w[4];
    pb_rng_words(key, i, w);
    double u1 = ((double)(w[0] >> 8) + 1.0) / 16777217.0; /* (0, 1] */
    double u2 = (double)(w[1] >> 8) / 16777216.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint64_t pb_rng_below(struct pb_rng_key key, uint64_t i, uint64_t n)
{
    uint32_t w[4];
    pb_rng_words(key, i, w);
    uint64_t x = ((uint64_t)w[0] << 32) | w[1];
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}
