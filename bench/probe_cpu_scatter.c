// CPU probe (issue #12, the 400,000-neuron step): spmv T on events, one thread. 2,000 live rows
// (0.5 %) of 400,000 x 80 (int32 columns, f32 weights) add into 400,000 f32 outputs (1.6 MB:
// past a 1 MB L2). `direct`: each entry adds into its output at once (the library's
// scatter_in_place: rows 4 ahead and outputs 8 entries ahead prefetched). `buckets`: a first
// pass appends each entry's (column, weight) to one of BUCKETS buffers by column range, a
// second adds each buffer into its range (which stays in L2); the buffers keep the entries'
// order, so each output receives its additions in the same order as `direct` (bit for bit).
// `TWO=1`: the two-core form below instead (checked bit for bit against `direct` first).
//   gcc -O2 -march=native -pthread bench/probe_cpu_scatter.c -o /tmp/s && /tmp/s
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#define NEURONS 400000
#define PER_ROW 80
#define LIVE 2000
#define STEPS 50
#define BURSTS 21
#define ROWS_AHEAD 4
#define AHEAD 8
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static uint64_t s = 88172645463325252ull;
static uint64_t rnd(void) { s ^= s << 13, s ^= s >> 7, s ^= s << 17; return s; }
static int32_t *col; static float *w, *out; static int32_t live[STEPS][LIVE];
static int32_t *bcol; static float *bw; static int bcount[64];

// Asks for the entries (columns and weights) of live row i, if any.
static void fetch_row(const int32_t *rows, int i) {
    if (i >= LIVE) return;
    const long r = rows[i] * (long)PER_ROW;
    for (int q = 0; q < PER_ROW * 4; q += 64) __builtin_prefetch((char *)(col + r) + q), __builtin_prefetch((char *)(w + r) + q);
}

static void direct(const int32_t *rows) {
    for (int i = 0; i < LIVE; i++) {
        fetch_row(rows, i + ROWS_AHEAD);
        const int32_t *c = col + rows[i] * (long)PER_ROW; const float *x = w + rows[i] * (long)PER_ROW;
        for (int p = 0; p < PER_ROW; p++) {
            if (p + AHEAD < PER_ROW) __builtin_prefetch(out + c[p + AHEAD], 1);
            out[c[p]] += x[p];
        }
    }
}

static void buckets(const int32_t *rows, int shift, int nb, long cap) {
    memset(bcount, 0, sizeof bcount);
    for (int i = 0; i < LIVE; i++) {
        fetch_row(rows, i + ROWS_AHEAD);
        const int32_t *c = col + rows[i] * (long)PER_ROW; const float *x = w + rows[i] * (long)PER_ROW;
        for (int p = 0; p < PER_ROW; p++) {
            const int b = c[p] >> shift, at = bcount[b]++;
            bcol[b * cap + at] = c[p], bw[b * cap + at] = x[p];
        }
    }
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < bcount[b]; t++) out[bcol[b * cap + t]] += bw[b * cap + t];
}

// The live rows' entries read and summed, nothing scattered: what fetching the rows costs.
static float rows_only(const int32_t *rows) {
    float sum = 0;
    for (int i = 0; i < LIVE; i++) {
        fetch_row(rows, i + ROWS_AHEAD);
        const int32_t *c = col + rows[i] * (long)PER_ROW; const float *x = w + rows[i] * (long)PER_ROW;
        for (int p = 0; p < PER_ROW; p++) sum += x[p] * (float)(c[p] & 1);
    }
    return sum;
}

// `two cores`: the live rows split in two halves, one a thread; each thread appends its
// entries' (column, weight) to one of two queues by output half, then (after a barrier) each
// thread adds the queues of its half, the first thread's queue first: every output receives its
// additions in the order of `direct` (bit for bit), the rows' fetches overlap on two cores and
// each half of the output (800 KB) stays in its core's L2.
#include <pthread.h>
#include <stdatomic.h>
static int32_t *qcol[2][2]; static float *qw[2][2]; static int qn[2][2];
static atomic_int arrived; static atomic_int generation;
static void barrier2(void) {
    const int g = atomic_load(&generation);
    if (atomic_fetch_add(&arrived, 1) == 1) atomic_store(&arrived, 0), atomic_fetch_add(&generation, 1);
    else while (atomic_load(&generation) == g) __builtin_ia32_pause();
}
static void two_cores_step(const int32_t *rows, int t) {
    const int first = t * LIVE / 2, last = (t + 1) * LIVE / 2;
    qn[t][0] = qn[t][1] = 0;
    for (int i = first; i < last; i++) {
        if (i + ROWS_AHEAD < last) fetch_row(rows, i + ROWS_AHEAD);
        const int32_t *c = col + rows[i] * (long)PER_ROW; const float *x = w + rows[i] * (long)PER_ROW;
        for (int p = 0; p < PER_ROW; p++) {
            const int h = c[p] >= NEURONS / 2, at = qn[t][h]++;
            qcol[t][h][at] = c[p], qw[t][h][at] = x[p];
        }
    }
    barrier2();
    for (int from = 0; from < 2; from++) {
        const int32_t *qc = qcol[from][t]; const float *qx = qw[from][t]; const int n = qn[from][t];
        for (int e = 0; e < n; e++) {
            if (e + AHEAD < n) __builtin_prefetch(out + qc[e + AHEAD], 1);
            out[qc[e]] += qx[e];
        }
    }
    barrier2();
}
static void *second_core(void *arg) {
    (void)arg;
    for (int burst = 0; burst < 1 + 3 * BURSTS; burst++)  // main's check, then its three rounds
        for (int step = 0; step < STEPS; step++) two_cores_step(live[step], 1);
    return NULL;
}

static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(void) {
    // HUGE=1: the matrix in 2 MB pages (transparent huge pages on request), so that a live row
    // costs no TLB walk
    const size_t bytes = sizeof(float) * NEURONS * (long)PER_ROW;
    col = aligned_alloc(2 << 20, bytes), w = aligned_alloc(2 << 20, bytes);
    if (getenv("HUGE") && atoi(getenv("HUGE"))) madvise(col, bytes, MADV_HUGEPAGE), madvise(w, bytes, MADV_HUGEPAGE);
    out = calloc(NEURONS, sizeof(float));
    for (long e = 0; e < NEURONS * (long)PER_ROW; e++) col[e] = rnd() % NEURONS, w[e] = (rnd() % 1000) * 1e-6f;
    for (int t = 0; t < STEPS; t++)
        for (int i = 0; i < LIVE; i++) live[t][i] = rnd() % NEURONS;
    const long cap = LIVE * (long)PER_ROW;  // a bucket's room: every entry of a step
    bcol = malloc(sizeof(int32_t) * 64 * cap), bw = malloc(sizeof(float) * 64 * cap);
    memset(bcol, 0, sizeof(int32_t) * 64 * cap), memset(bw, 0, sizeof(float) * 64 * cap);
    const int shifts[] = {-1, 0, 16, 15};  // -1: rows only; 0: direct; else ranges of 2^shift outputs
    if (getenv("TWO")) {  // two cores against direct, and the outputs compared bit for bit
        for (int t = 0; t < 2; t++)
            for (int h = 0; h < 2; h++)
                qcol[t][h] = calloc(cap, sizeof(int32_t)), qw[t][h] = calloc(cap, sizeof(float));
        float *serial = calloc(NEURONS, sizeof(float));
        for (int step = 0; step < STEPS; step++) direct(live[step]);
        memcpy(serial, out, NEURONS * sizeof(float)), memset(out, 0, NEURONS * sizeof(float));
        pthread_t other;
        pthread_create(&other, NULL, second_core, NULL);
        for (int step = 0; step < STEPS; step++) two_cores_step(live[step], 0);
        printf("two cores %s direct bit for bit\n", memcmp(serial, out, NEURONS * sizeof(float)) ? "DIFFER from" : "match");
        for (int round = 0; round < 3; round++) {
            double t[BURSTS];
            for (int burst = 0; burst < BURSTS; burst++) {
                const double t0 = now();
                for (int step = 0; step < STEPS; step++) two_cores_step(live[step], 0);
                t[burst] = (now() - t0) / STEPS;
            }
            qsort(t, BURSTS, sizeof *t, by_value);
            printf("round %d: two cores %.0f µs (min %.0f)\n", round, t[BURSTS / 2] * 1e6, t[0] * 1e6);
        }
        pthread_join(other, NULL);
        return 0;
    }
    volatile float sink = 0;
    for (int round = 0; round < 3; round++) {
        printf("round %d:", round);
        for (unsigned v = 0; v < sizeof shifts / sizeof *shifts; v++) {
            const int shift = shifts[v], nb = shift > 0 ? (NEURONS >> shift) + 1 : 0;
            double t[BURSTS];
            for (int burst = 0; burst < BURSTS; burst++) {
                const double t0 = now();
                for (int step = 0; step < STEPS; step++) {
                    if (shift < 0) sink += rows_only(live[step]);
                    else if (shift > 0) buckets(live[step], shift, nb, cap);
                    else direct(live[step]);
                }
                t[burst] = (now() - t0) / STEPS;
            }
            qsort(t, BURSTS, sizeof *t, by_value);
            if (shift < 0) printf(" rows only %.0f µs |", t[BURSTS / 2] * 1e6);
            else if (shift) printf(" | %d buckets of %d KB: %.0f µs", nb, (1 << shift) * 4 >> 10, t[BURSTS / 2] * 1e6);
            else printf(" direct %.0f µs", t[BURSTS / 2] * 1e6);
        }
        printf("\n");
        fflush(stdout);
    }
    double sum = 0;
    for (int i = 0; i < NEURONS; i++) sum += out[i];
    printf("(checksum %g)\n", sum);
    return 0;
}
