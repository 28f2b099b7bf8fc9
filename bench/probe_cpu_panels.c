// spmm N on one core: B's rows gathered whole (the library's row_ranges: 128 columns, eight
// 16-wide accumulators) against column panels of B (P columns a pass over A, the panel's rows
// small enough to stay in L2, the row's accumulators in registers). Same shape as the bench:
// A 10000² x 200 sorted random columns a row, f32 weights, B 10000 x 128 f32; products as mul
// then add (the library's rounding). Prints the median of 15 calls of each, ms, and the largest
// difference from the row gather (0: the same bits).
//   cc -O3 -ffp-contract=off -mavx512f -mavx512vl bench/probe_cpu_panels.c -o /tmp/panels && /tmp/panels
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { M = 10000, K = 10000, PER_ROW = 200, N = 128, CALLS = 15 };

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

// C[i, c0 .. c0 + 16 V) for every row i, B's columns from c0 (V 16-wide vectors a row).
#define PANEL(V)                                                                                  \
    static void panel_##V(int c0) {                                                               \
        for (int i = 0; i < M; i++) {                                                             \
            __m512 acc[V];                                                                        \
            for (int v = 0; v < V; v++) acc[v] = _mm512_setzero_ps();                             \
            for (int64_t p = indptr[i]; p < indptr[i + 1]; p++) {                                 \
                const float *row = B + (int64_t)indices[p] * N + c0;                              \
                const __m512 w = _mm512_set1_ps(weights[p]);                                      \
                for (int v = 0; v < V; v++)                                                       \
                    acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(w, _mm512_loadu_ps(row + 16 * v))); \
            }                                                                                     \
            for (int v = 0; v < V; v++) _mm512_storeu_ps(C + (int64_t)i * N + c0 + 16 * v, acc[v]); \
        }                                                                                         \
    }
PANEL(1)
PANEL(2)
PANEL(4)
PANEL(8)

static void run(int width) {
    for (int c0 = 0; c0 < N; c0 += width) switch (width) {
        case 16: panel_1(c0); break;
        case 32: panel_2(c0); break;
        case 64: panel_4(c0); break;
        default: panel_8(c0); break;
        }
}

int main(void) {
    srand(7);
    indices = malloc(sizeof(int) * M * PER_ROW);
    weights = malloc(sizeof(float) * M * PER_ROW);
    B = aligned_alloc(64, sizeof(float) * K * N);
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
    run(128);
    memcpy(C_ref, C, sizeof(float) * M * N);
    const int widths[] = {128, 64, 32, 16};
    for (int round = 0; round < 4; round++)
        for (int w = 0; w < 4; w++) {
            double t[CALLS];
            for (int c = 0; c < CALLS; c++) {
                double t0 = now_ms();
                run(widths[w]);
                t[c] = now_ms() - t0;
            }
            qsort(t, CALLS, sizeof(double), cmp_double);
            double diff = 0;
            for (int64_t e = 0; e < (int64_t)M * N; e++) {
                double d = C[e] > C_ref[e] ? C[e] - C_ref[e] : C_ref[e] - C[e];
                if (d > diff) diff = d;
            }
            printf("round %d, panels of %3d columns: %6.2f ms (min %6.2f), largest difference %g\n", round,
                   widths[w], t[CALLS / 2], t[0], diff);
        }
    return 0;
}
