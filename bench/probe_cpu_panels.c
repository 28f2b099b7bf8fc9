// spmm N on one core: B's rows gathered in panels of columns, as the library's row_ranges does
// (kernel N = 128 columns, AVX-512 accumulators in registers), against the variants that decide
// its shape. Same shape as the bench: A 10000² x PER_ROW sorted random columns a row, f32
// weights, B 10000 x 128 f32; products as mul then add (the library's rounding).
//   gP[_aD]     one pass over A per panel of P columns (the panel loop outside the row loop),
//               each entry's next row D entries on prefetched (its panel's lines)
//   inner64_a8  each row's two 64-column panels back to back (the library from the thirteenth
//               session), 8 entries ahead
// B starts OFF bytes past a 64-byte boundary (numpy and malloc give 16 or 48). Prints the median
// of 15 calls of each, ms; every variant must give the first one's bits.
//   cc -O3 -ffp-contract=off -mavx512f -mavx512vl [-DOFF=16] [-DPER_ROW=1000] bench/probe_cpu_panels.c -o /tmp/panels && /tmp/panels
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef OFF
#define OFF 0
#endif
#ifndef PER_ROW
#define PER_ROW 200
#endif
enum { M = 10000, K = 10000, N = 128, CALLS = 15 };

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int64_t indptr[M + 1];
static int *indices;
static float *weights, *B, *C, *C_ref;

// Row i's columns c0 .. c0 + 16 V, its entries' rows AHEAD entries on prefetched.
static inline void row_panel(int i, int c0, int V, int AHEAD) {
    const int64_t nnz = indptr[M];
    __m512 acc[8];
    for (int v = 0; v < V; v++) acc[v] = _mm512_setzero_ps();
    for (int64_t p = indptr[i]; p < indptr[i + 1]; p++) {
        if (AHEAD && p + AHEAD < nnz) {
            const char *next = (const char *)(B + (int64_t)indices[p + AHEAD] * N + c0);
            for (int l = 0; l < V; l++) _mm_prefetch(next + 64 * l, _MM_HINT_T0);
        }
        const float *row = B + (int64_t)indices[p] * N + c0;
        const __m512 w = _mm512_set1_ps(weights[p]);
        for (int v = 0; v < V; v++) acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(w, _mm512_loadu_ps(row + 16 * v)));
    }
    for (int v = 0; v < V; v++) _mm512_storeu_ps(C + (int64_t)i * N + c0 + 16 * v, acc[v]);
}

// Panels outside the row loop (constant V and AHEAD, so the accumulators stay in registers).
#define OUTER(V, AHEAD)                                                          \
    static void g##V##_a##AHEAD(void) {                                          \
        for (int c0 = 0; c0 < N; c0 += 16 * V)                                   \
            for (int i = 0; i < M; i++) row_panel(i, c0, V, AHEAD);              \
    }
OUTER(8, 0)
OUTER(8, 8)
OUTER(8, 16)
OUTER(4, 0)
OUTER(4, 8)
OUTER(2, 16)
OUTER(1, 0)

static void inner64_a8(void) {
    for (int i = 0; i < M; i++)
        for (int c0 = 0; c0 < N; c0 += 64) row_panel(i, c0, 4, 8);
}

static const struct {
    const char *name;
    void (*run)(void);
} variants[] = {
    {"g8_a0 (128 columns)", g8_a0}, {"g8_a8", g8_a8}, {"g8_a16", g8_a16}, {"g4_a0 (64 columns)", g4_a0},
    {"g4_a8", g4_a8}, {"g2_a16 (32 columns)", g2_a16}, {"g1_a0 (16 columns)", g1_a0}, {"inner64_a8", inner64_a8},
};

int main(void) {
    srand(7);
    indices = malloc(sizeof(int) * M * PER_ROW);
    weights = malloc(sizeof(float) * M * PER_ROW);
    B = (float *)((char *)aligned_alloc(64, sizeof(float) * K * N + 64) + OFF);
    C = aligned_alloc(64, sizeof(float) * M * N);
    C_ref = aligned_alloc(64, sizeof(float) * M * N);
    for (int i = 0; i <= M; i++) indptr[i] = (int64_t)i * PER_ROW;
    for (int i = 0; i < M; i++) {
        int *row = indices + (int64_t)i * PER_ROW;
        for (int p = 0; p < PER_ROW; p++) row[p] = rand() % K;
        qsort(row, PER_ROW, sizeof(int), cmp_int);
    }
    for (int64_t p = 0; p < (int64_t)M * PER_ROW; p++) weights[p] = (float)rand() / RAND_MAX;
    for (int64_t e = 0; e < (int64_t)K * N; e++) B[e] = (float)rand() / RAND_MAX - 0.5f;
    variants[0].run();
    memcpy(C_ref, C, sizeof(float) * M * N);
    for (int round = 0; round < 2; round++)
        for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
            double t[CALLS];
            for (int c = 0; c < CALLS; c++) {
                double t0 = now_ms();
                variants[k].run();
                t[c] = now_ms() - t0;
            }
            qsort(t, CALLS, sizeof(double), cmp_double);
            const int same = memcmp(C, C_ref, sizeof(float) * M * N) == 0;
            printf("round %d, B at +%d bytes, %-20s %6.2f ms (min %6.2f)%s\n", round, OFF, variants[k].name, t[CALLS / 2],
                   t[0], same ? "" : ", DIFFERENT BITS");
        }
    return 0;
}
