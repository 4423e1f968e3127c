/* harness/base/rng.c — the counter-based generator of rng.h on philox.h's block function, with
 * vector runs of it (AVX-512 or AVX2) that give the same bits. */
#include "harness/base/rng.h"

#include <math.h>
#include <string.h>

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
    pb_philox_block(key, i, out);
}

float pb_rng_uniform(struct pb_rng_key key, uint64_t i)
{
    uint32_t w[4];
    pb_rng_words(key, i, w);
    return pb_philox_unit(w[0]);
}

float pb_rng_uniform4(struct pb_rng_key key, uint64_t i)
{
    return pb_philox_uniform4(key, i);
}

/* pb_rng_uniform of counters first … first + n − 1 one at a time: the tails of the vector
 * runs below, and the runs themselves on a target without AVX2. */
static void uniform_run_scalar(struct pb_rng_key key, uint64_t first, float *restrict out,
                               size_t n)
{
    for (size_t j = 0; j < n; j++)
        out[j] = pb_rng_uniform(key, first + j);
}

#if defined(__AVX512F__) || defined(__AVX2__)
/* Philox4x32-10 of LANES counters at a time, one counter per 32-bit lane: the
 * 32×32→64-bit products of even and odd lanes by vpmuludq, their halves put back in place
 * by shifts and a blend. Integer arithmetic throughout: the same bits as pb_rng_words. */
#include <immintrin.h>

#if defined(__AVX512F__)
enum { LANES = 16 };
typedef __m512i vword;
#define V_SET1(x) _mm512_set1_epi32((int)(x))
#define V_XOR(a, b) _mm512_xor_si512((a), (b))

/* m · c per lane: the high halves into *hi, the low halves returned */
static inline vword mul_hilo(vword c, vword m, vword *hi)
{
    vword even = _mm512_mul_epu32(c, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    return _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* the low and high words of the counters i … i + 15, carried where the low word wraps */
static inline void counters(uint64_t i, vword *c0, vword *c1)
{
    const vword iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    vword lo = V_SET1((uint32_t)i), hi = V_SET1((uint32_t)(i >> 32));
    *c0 = _mm512_add_epi32(lo, iota);
    *c1 = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(*c0, lo), hi, V_SET1(1));
}

static inline void store_unit(float *out, vword w)
{
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w, 8)),
                                        _mm512_set1_ps(1.0f / 16777216.0f)));
}

/* Sixteen blocks' words w[k] (lane l: word k of block l) stored block by block: the 4×4
 * transpose of 32-bit words within each 128-bit lane (u_q, lane L: block 4L + q), then
 * of the 128-bit lanes. */
static inline void store_blocks(float *out, const vword w[4])
{
    vword t0 = _mm512_unpacklo_epi32(w[0], w[1]), t1 = _mm512_unpackhi_epi32(w[0], w[1]);
    vword t2 = _mm512_unpacklo_epi32(w[2], w[3]), t3 = _mm512_unpackhi_epi32(w[2], w[3]);
    vword u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    vword u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    vword v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
    vword v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
    store_unit(out, _mm512_shuffle_i32x4(v0, v1, 0x88));
    store_unit(out + 16, _mm512_shuffle_i32x4(v0, v1, 0xDD));
    store_unit(out + 32, _mm512_shuffle_i32x4(v2, v3, 0x88));
    store_unit(out + 48, _mm512_shuffle_i32x4(v2, v3, 0xDD));
}
#else
enum { LANES = 8 };
typedef __m256i vword;
#define V_SET1(x) _mm256_set1_epi32((int)(x))
#define V_XOR(a, b) _mm256_xor_si256((a), (b))

static inline vword mul_hilo(vword c, vword m, vword *hi)
{
    vword even = _mm256_mul_epu32(c, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* the carry: lanes where c0 < lo unsigned (a signed compare of the words with their top
 * bits flipped) are all ones, and subtracting them adds 1 */
static inline void counters(uint64_t i, vword *c0, vword *c1)
{
    const vword iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), top = V_SET1(0x80000000u);
    vword lo = V_SET1((uint32_t)i), hi = V_SET1((uint32_t)(i >> 32));
    *c0 = _mm256_add_epi32(lo, iota);
    vword carry = _mm256_cmpgt_epi32(V_XOR(lo, top), V_XOR(*c0, top));
    *c1 = _mm256_sub_epi32(hi, carry);
}

static inline void store_unit(float *out, vword w)
{
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)),
                                        _mm256_set1_ps(1.0f / 16777216.0f)));
}

/* Eight blocks' words stored block by block: the 4×4 transpose within each 128-bit lane
 * (u_q, lane L: block 4L + q), then the lanes paired. */
static inline void store_blocks(float *out, const vword w[4])
{
    vword t0 = _mm256_unpacklo_epi32(w[0], w[1]), t1 = _mm256_unpackhi_epi32(w[0], w[1]);
    vword t2 = _mm256_unpacklo_epi32(w[2], w[3]), t3 = _mm256_unpackhi_epi32(w[2], w[3]);
    vword u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    vword u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    store_unit(out, _mm256_permute2x128_si256(u0, u1, 0x20));
    store_unit(out + 8, _mm256_permute2x128_si256(u2, u3, 0x20));
    store_unit(out + 16, _mm256_permute2x128_si256(u0, u1, 0x31));
    store_unit(out + 24, _mm256_permute2x128_si256(u2, u3, 0x31));
}
#endif

/* Philox4x32-10 of the counters i … i + LANES − 1: the four words of each, lane by lane */
static inline void philox_lanes(struct pb_rng_key key, uint64_t i, vword w[4])
{
    const vword m0 = V_SET1(PB_PHILOX_M0), m1 = V_SET1(PB_PHILOX_M1);
    vword c0, c1, c2 = V_SET1(key.ctr_hi[0]), c3 = V_SET1(key.ctr_hi[1]);
    counters(i, &c0, &c1);
    uint32_t k0 = key.k[0], k1 = key.k[1];
    for (int r = 0; r < 10; r++) {
        vword h0, h1;
        vword l0 = mul_hilo(c0, m0, &h0), l1 = mul_hilo(c2, m1, &h1);
        c0 = V_XOR(V_XOR(h1, c1), V_SET1(k0));
        c2 = V_XOR(V_XOR(h0, c3), V_SET1(k1));
        c1 = l1;
        c3 = l0;
        k0 += PB_PHILOX_W0;
        k1 += PB_PHILOX_W1;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

void pb_rng_uniform_run(struct pb_rng_key key, uint64_t first, float *restrict out, size_t n)
{
    size_t j = 0;
    for (; j + LANES <= n; j += LANES) {
        vword w[4];
        philox_lanes(key, first + j, w);
        store_unit(out + j, w[0]);
    }
    uniform_run_scalar(key, first + j, out + j, n - j);
}

/* Elements in aligned blocks of LANES counters (4·LANES elements); a block the run covers
 * in part is drawn whole into a buffer and its part copied. */
void pb_rng_uniform4_run(struct pb_rng_key key, uint64_t first, float *restrict out, size_t n)
{
    enum { ELEMS = 4 * LANES };
    for (size_t j = 0; j < n;) {
        uint64_t i = first + j, base = i & ~(uint64_t)(ELEMS - 1);
        size_t off = (size_t)(i - base), m = ELEMS - off < n - j ? ELEMS - off : n - j;
        vword w[4];
        philox_lanes(key, base >> 2, w);
        if (m == ELEMS) {
            store_blocks(out + j, w);
        } else {
            float part[ELEMS];
            store_blocks(part, w);
            memcpy(out + j, part + off, m * sizeof(float));
        }
        j += m;
    }
}
#else
/* pb_rng_uniform4 of elements first … first + n − 1, one block of four words at a time */
static void uniform4_run_scalar(struct pb_rng_key key, uint64_t first, float *restrict out,
                                size_t n)
{
    for (size_t j = 0; j < n;) {
        uint64_t i = first + j;
        uint32_t w[4];
        pb_rng_words(key, i >> 2, w);
        for (unsigned k = (unsigned)(i & 3); k < 4 && j < n; k++)
            out[j++] = pb_philox_unit(w[k]);
    }
}

void pb_rng_uniform_run(struct pb_rng_key key, uint64_t first, float *restrict out, size_t n)
{
    uniform_run_scalar(key, first, out, n);
}

void pb_rng_uniform4_run(struct pb_rng_key key, uint64_t first, float *restrict out, size_t n)
{
    uniform4_run_scalar(key, first, out, n);
}
#endif

void pb_rng_fill_uniform(struct pb_rng_key key, uint64_t first, float *out, uint64_t n, float lo, float hi)
{
    pb_rng_uniform_run(key, first, out, n);
    for (uint64_t j = 0; j < n; j++)
        out[j] = lo + (hi - lo) * out[j];
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
