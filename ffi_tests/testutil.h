/* Helpers shared by the C test programs: checks, a seeded RNG, f16/bf16 conversions, and
 * conversion of double test data to and from every evsparse dtype. */
#ifndef EVS_TESTUTIL_H
#define EVS_TESTUTIL_H

#include "evsparse.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_passed, g_failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            g_passed++;                                                    \
        } else {                                                           \
            g_failed++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
        }                                                                  \
    } while (0)

/* A call must succeed. */
#define OK(call)                                                                       \
    do {                                                                               \
        evs_status st_ = (call);                                                       \
        CHECK(st_ == EVS_SUCCESS, "%s -> %s: %s", #call, evs_status_string(st_), evs_last_error()); \
    } while (0)

/* A call must fail with `expected` and leave a non-empty message. */
#define FAILS(expected, call)                                                          \
    do {                                                                               \
        evs_status st_ = (call);                                                       \
        CHECK(st_ == (expected), "%s -> %s (%s), expected %s", #call, evs_status_string(st_), \
              evs_last_error(), evs_status_string(expected));                          \
        CHECK(st_ == EVS_SUCCESS || evs_last_error()[0] != '\0', "%s left no message", #call); \
    } while (0)

static inline int report(const char *suite) {
    printf("%s %d passed, %d failed\n", suite, g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ RNG */
static uint64_t g_rng;

static inline void seed_rng(void) {
    const char *s = getenv("EVS_TEST_SEED");
    g_rng = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    if (g_rng == 0) g_rng = 1;
    printf("seed: EVS_TEST_SEED=%llu\n", (unsigned long long)g_rng);
}

static inline uint64_t rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ULL;
}

static inline int rnd_int(int n) { return n <= 0 ? 0 : (int)(rnd() % (uint64_t)n); }
static inline double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

/* ------------------------------------------------------------------ f16 / bf16 */
static inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e8 = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    int32_t e = (int32_t)e8 - 127 + 15;
    if (e8 == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), h = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)h;
}

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (e == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    x = e == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((e - 15 + 127) << 23) | (mant << 13));
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ------------------------------------------------------------------ dtypes */
static const evs_dtype FLOAT_DTYPES[] = {EVS_DTYPE_F16, EVS_DTYPE_BF16, EVS_DTYPE_F32, EVS_DTYPE_F64};

static inline size_t dtype_size(evs_dtype t) {
    switch (t) {
    case EVS_DTYPE_BOOL: return 1;
    case EVS_DTYPE_F16: case EVS_DTYPE_BF16: return 2;
    case EVS_DTYPE_F32: case EVS_DTYPE_I32: return 4;
    default: return 8;
    }
}

static inline const char *dtype_name(evs_dtype t) {
    switch (t) {
    case EVS_DTYPE_F16: return "f16";
    case EVS_DTYPE_BF16: return "bf16";
    case EVS_DTYPE_F32: return "f32";
    case EVS_DTYPE_F64: return "f64";
    case EVS_DTYPE_BOOL: return "bool";
    case EVS_DTYPE_I32: return "i32";
    default: return "i64";
    }
}

/* Writes v into element i of a buffer of dtype t (rounding to nearest even). */
static inline void put(evs_dtype t, void *buf, size_t i, double v) {
    switch (t) {
    case EVS_DTYPE_F16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
    case EVS_DTYPE_BF16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case EVS_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case EVS_DTYPE_F64: ((double *)buf)[i] = v; break;
    case EVS_DTYPE_BOOL: ((uint8_t *)buf)[i] = v != 0.0; break;
    case EVS_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    default: ((int64_t *)buf)[i] = (int64_t)v; break;
    }
}

static inline double get(evs_dtype t, const void *buf, size_t i) {
    switch (t) {
    case EVS_DTYPE_F16: return f16_to_f32(((const uint16_t *)buf)[i]);
    case EVS_DTYPE_BF16: return bf16_to_f32(((const uint16_t *)buf)[i]);
    case EVS_DTYPE_F32: return ((const float *)buf)[i];
    case EVS_DTYPE_F64: return ((const double *)buf)[i];
    case EVS_DTYPE_BOOL: return ((const uint8_t *)buf)[i];
    case EVS_DTYPE_I32: return ((const int32_t *)buf)[i];
    default: return (double)((const int64_t *)buf)[i];
    }
}

/* The value v takes once stored in dtype t. */
static inline double round_to(evs_dtype t, double v) {
    unsigned char tmp[8];
    put(t, tmp, 0, v);
    return get(t, tmp, 0);
}

/* Relative tolerance for a result of dtype t, against the sum of |terms|. */
static inline double tolerance(evs_dtype t) {
    switch (t) {
    case EVS_DTYPE_F16: return 4e-3;
    case EVS_DTYPE_BF16: return 2e-2;
    case EVS_DTYPE_F32: return 1e-5;
    default: return 1e-12;
    }
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* Packs doubles into a fresh buffer of dtype t. */
static inline void *pack(evs_dtype t, const double *v, size_t n) {
    void *buf = xmalloc(n * dtype_size(t));
    for (size_t i = 0; i < n; i++) put(t, buf, i, v[i]);
    return buf;
}

#endif
