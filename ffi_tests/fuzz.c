/* Seeded random programs against the C ABI, differential (issue #13, first step).
 *
 * Most rounds build a random CSR matrix (odd shapes, empty rows, duplicates, unsorted indices;
 * sometimes an invalid structure; now and then large enough for the thread pool), random inputs and a random spmv/spmm call (N or T, floats
 * or events, f32 or f64, random alpha/beta, sometimes a wrong shape or dtype), and runs it on
 * two CPU contexts: one whose plans choose freely, one forced to the plain reference. Both
 * must return the same status; an accepted call must give the same result within rounding;
 * a rejected one must leave its output untouched. The other rounds do the same with dense
 * mv / mm (W times events or floats).
 *
 *   fuzz [seconds [seed]]   (seconds of CPU time, default 10; seed default fresh, printed so that
 *                            a failure can be replayed)
 */
#include <evsparse.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t state;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0; }
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static uint64_t seed, round_no, accepted;
#define FAIL(...)                                                                         \
    do {                                                                                  \
        fprintf(stderr, "fuzz: seed %llu round %llu: ", (unsigned long long)seed,         \
                (unsigned long long)round_no);                                            \
        fprintf(stderr, __VA_ARGS__);                                                     \
        fprintf(stderr, "\n");                                                            \
        exit(1);                                                                          \
    } while (0)

/* One context with its stream. */
typedef struct {
    struct evs_context *ctx;
    struct evs_stream *st;
} Side;

static Side side(const char *forced) {
    Side s;
    if (evs_context_create(EVS_DEVICE_CPU, 0, &s.ctx) || evs_stream_create(s.ctx, &s.st)) FAIL("setup: %s", evs_last_error());
    if (forced && evs_context_set_algorithm(s.ctx, forced)) FAIL("forcing %s: %s", forced, evs_last_error());
    return s;
}

/* A random CSR structure; `broken` says whether one rule was broken on purpose. */
typedef struct {
    int64_t m, k, nnz;
    int64_t *indptr;
    int32_t *indices;
    int broken;
} Pattern;

static Pattern pattern(void) {
    Pattern p;
    int64_t size = below(8) == 0 ? 600 : 40; /* now and then large enough for the thread pool */
    p.m = below(size), p.k = below(size);
    p.indptr = malloc(sizeof(int64_t) * (size_t)(p.m + 1));
    p.indices = malloc(sizeof(int32_t) * (size_t)(p.m * 12 + 1));
    p.indptr[0] = 0;
    for (int64_t i = 0; i < p.m; i++) {
        int64_t len = p.k == 0 || below(4) == 0 ? 0 : below(12);
        for (int64_t j = 0; j < len; j++) {
            int64_t at = p.indptr[i] + j;
            p.indices[at] = j > 0 && below(5) == 0 ? p.indices[at - 1] : (int32_t)below(p.k);
        }
        p.indptr[i + 1] = p.indptr[i] + len;
    }
    p.nnz = p.indptr[p.m];
    p.broken = 0;
    if (below(10) == 0 && p.nnz > 0) { /* an index out of range, or an indptr going down */
        p.broken = 1;
        if (below(2)) p.indices[below(p.nnz)] = (int32_t)(p.k + below(3));
        else if (p.m > 1) p.indptr[1 + below(p.m - 1)] = p.nnz + 1;
        else p.indices[0] = -1;
    }
    return p;
}

/* Host buffer of `n` values of dtype t (f32, f64, or bool events). */
static void *values(evs_dtype t, int64_t n, int events) {
    size_t size = t == EVS_DTYPE_F64 ? 8 : t == EVS_DTYPE_BOOL ? 1 : 4;
    unsigned char *buf = malloc(size * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double v = events && below(3) ? -fabs(unit()) : unit();
        if (t == EVS_DTYPE_F64) ((double *)buf)[i] = v;
        else if (t == EVS_DTYPE_F32) ((float *)buf)[i] = (float)v;
        else buf[i] = (unsigned char)(below(4) == 0);
    }
    return buf;
}

static double get(evs_dtype t, const void *buf, int64_t i) {
    return t == EVS_DTYPE_F64 ? ((const double *)buf)[i] : ((const float *)buf)[i];
}

/* One round: the same call on both sides, compared. */
static void round_once(Side fast, Side ref) {
    Pattern p = pattern();
    evs_dtype t = below(2) ? EVS_DTYPE_F32 : EVS_DTYPE_F64;
    int homo = (int)below(2), op = (int)below(2), events = (int)below(2), vector = (int)below(2);
    int64_t n = vector ? 1 : 1 + below(20);
    int64_t rows_in = op == EVS_OP_N ? p.k : p.m, rows_out = op == EVS_OP_N ? p.m : p.k;
    if (below(12) == 0) rows_in += 1; /* a wrong shape */
    evs_dtype xt = events ? (below(2) ? EVS_DTYPE_BOOL : t) : t;
    if (below(12) == 0) xt = xt == EVS_DTYPE_F32 ? EVS_DTYPE_F64 : EVS_DTYPE_F32; /* a wrong dtype */
    void *w = values(t, p.nnz, 0), *x = values(xt, rows_in * n, events);
    size_t out_bytes = (size_t)(rows_out * n > 0 ? rows_out * n : 1) * (t == EVS_DTYPE_F64 ? 8 : 4);
    void *y[2] = {values(t, rows_out * n, 0), malloc(out_bytes)}, *before = malloc(out_bytes);
    memcpy(y[1], y[0], out_bytes);
    memcpy(before, y[0], out_bytes);
    double alpha = (double)(below(5) - 2) * 0.5, beta = (double)(below(3)) * 0.5;
    evs_status status[2];
    Side sides[2] = {fast, ref};
    for (int s = 0; s < 2; s++) {
        struct evs_csr *a = NULL;
        struct evs_dense *hx = NULL, *hy = NULL;
        evs_status made = evs_csr_create(sides[s].ctx, p.m, p.k, p.nnz, EVS_DTYPE_I64, p.indptr, p.indices, t,
                                         homo ? NULL : w, 0.75, &a);
        if (made != EVS_SUCCESS) {
            if (!p.broken) FAIL("csr_create refused a valid matrix: %s", evs_last_error());
            status[s] = made;
            continue;
        }
        if (p.broken) FAIL("csr_create accepted a broken matrix");
        if (vector) {
            if (evs_dense_wrap_vector(sides[s].ctx, xt, rows_in, x, &hx) ||
                evs_dense_wrap_vector(sides[s].ctx, t, rows_out, y[s], &hy))
                FAIL("wrap: %s", evs_last_error());
            status[s] = evs_spmv(sides[s].st, op, events, alpha, a, hx, beta, hy);
        } else {
            if (evs_dense_wrap_matrix(sides[s].ctx, xt, rows_in, n, n, x, &hx) ||
                evs_dense_wrap_matrix(sides[s].ctx, t, rows_out, n, n, y[s], &hy))
                FAIL("wrap: %s", evs_last_error());
            status[s] = evs_spmm(sides[s].st, op, events, alpha, a, hx, beta, hy);
        }
        if (status[s] != EVS_SUCCESS && strlen(evs_last_error()) == 0) FAIL("status %d without a message", status[s]);
        evs_stream_synchronize(sides[s].st);
        evs_dense_destroy(hx), evs_dense_destroy(hy), evs_csr_destroy(a);
    }
    if (status[0] != status[1]) FAIL("status %d with plans, %d with the reference", status[0], status[1]);
    accepted += status[0] == EVS_SUCCESS;
    for (int64_t i = 0; i < rows_out * n; i++) {
        double got = get(t, y[0], i), want = get(t, y[1], i), old = get(t, before, i);
        double tol = (t == EVS_DTYPE_F32 ? 1e-4 : 1e-12) * (1.0 + fabs(want));
        if (status[0] != EVS_SUCCESS && memcmp(y[0], before, out_bytes) != 0)
            FAIL("a rejected call changed its output ([%lld] %g -> %g)", (long long)i, old, got);
        if (status[0] == EVS_SUCCESS && !(fabs(got - want) <= tol))
            FAIL("%s %s %s n=%lld %lldx%lld: [%lld] = %g with plans, %g with the reference", op ? "T" : "N",
                 events ? "events" : "floats", t == EVS_DTYPE_F64 ? "f64" : "f32", (long long)n, (long long)p.m,
                 (long long)p.k, (long long)i, got, want);
    }
    free(w), free(x), free(y[0]), free(y[1]), free(before), free(p.indptr), free(p.indices);
}

/* One round of dense mv / mm (N: C = W·S with W m x k; T: C = Wᵀ·S with W k x m), whose CPU
 * plans visit only the input's non-zeros or call a GEMM. */
static void round_dense(Side fast, Side ref) {
    evs_dtype t = below(2) ? EVS_DTYPE_F32 : EVS_DTYPE_F64;
    int op = (int)below(2), events = (int)below(2), vector = (int)below(2);
    int64_t size = below(8) == 0 ? 300 : 30;
    int64_t m = below(size), k = below(size), n = vector ? 1 : 1 + below(20);
    int64_t w_rows = op == EVS_OP_N ? m : k, w_cols = op == EVS_OP_N ? k : m, s_rows = k;
    if (below(12) == 0) s_rows += 1; /* a wrong shape */
    evs_dtype st = events ? (below(2) ? EVS_DTYPE_BOOL : t) : t;
    void *w = values(t, w_rows * w_cols, 0), *x = values(st, s_rows * n, events);
    size_t out_bytes = (size_t)(m * n > 0 ? m * n : 1) * (t == EVS_DTYPE_F64 ? 8 : 4);
    void *c[2] = {values(t, m * n, 0), malloc(out_bytes)}, *before = malloc(out_bytes);
    memcpy(c[1], c[0], out_bytes);
    memcpy(before, c[0], out_bytes);
    double alpha = (double)(below(5) - 2) * 0.5, beta = (double)(below(3)) * 0.5;
    evs_status status[2];
    Side sides[2] = {fast, ref};
    for (int s = 0; s < 2; s++) {
        struct evs_dense *hw = NULL, *hs = NULL, *hc = NULL;
        if (evs_dense_wrap_matrix(sides[s].ctx, t, w_rows, w_cols, w_cols > 0 ? w_cols : 1, w, &hw)) FAIL("wrap W: %s", evs_last_error());
        if (vector) {
            if (evs_dense_wrap_vector(sides[s].ctx, st, s_rows, x, &hs) ||
                evs_dense_wrap_vector(sides[s].ctx, t, m, c[s], &hc))
                FAIL("wrap: %s", evs_last_error());
            status[s] = evs_dense_mv(sides[s].st, op, events, alpha, hw, hs, beta, hc);
        } else {
            if (evs_dense_wrap_matrix(sides[s].ctx, st, s_rows, n, n, x, &hs) ||
                evs_dense_wrap_matrix(sides[s].ctx, t, m, n, n, c[s], &hc))
                FAIL("wrap: %s", evs_last_error());
            status[s] = evs_dense_mm(sides[s].st, op, events, alpha, hw, hs, beta, hc);
        }
        if (status[s] != EVS_SUCCESS && strlen(evs_last_error()) == 0) FAIL("status %d without a message", status[s]);
        evs_stream_synchronize(sides[s].st);
        evs_dense_destroy(hw), evs_dense_destroy(hs), evs_dense_destroy(hc);
    }
    if (status[0] != status[1]) FAIL("dense: status %d with plans, %d with the reference", status[0], status[1]);
    accepted += status[0] == EVS_SUCCESS;
    if (status[0] != EVS_SUCCESS && memcmp(c[0], before, out_bytes) != 0) FAIL("a rejected dense call changed C");
    for (int64_t i = 0; status[0] == EVS_SUCCESS && i < m * n; i++) {
        double got = get(t, c[0], i), want = get(t, c[1], i);
        /* sums of up to 300 products: the GEMM path may add in another order */
        double tol = (t == EVS_DTYPE_F32 ? 1e-4 : 1e-12) * (1.0 + fabs(want)) * (1.0 + (double)k / 16);
        if (!(fabs(got - want) <= tol))
            FAIL("dense %s %s %s n=%lld W %lldx%lld: [%lld] = %g with plans, %g with the reference", op ? "T" : "N",
                 events ? "events" : "floats", t == EVS_DTYPE_F64 ? "f64" : "f32", (long long)n, (long long)w_rows,
                 (long long)w_cols, (long long)i, got, want);
    }
    free(w), free(x), free(c[0]), free(c[1]), free(before);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    seed = argc > 2 ? strtoull(argv[2], NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    state = seed;
    printf("fuzz: seed %llu, %g s\n", (unsigned long long)seed, seconds);
    Side fast = side(NULL), ref = side("spmm_n:reference,spmm_t:reference,dense_mm:reference");
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    for (round_no = 0; clock() < end; round_no++) {
        if (below(3) == 0) round_dense(fast, ref);
        else round_once(fast, ref);
    }
    printf("fuzz: %llu rounds passed (%llu calls accepted, the others rejected)\n", (unsigned long long)round_no,
           (unsigned long long)accepted);
    evs_stream_destroy(fast.st), evs_stream_destroy(ref.st);
    evs_context_destroy(fast.ctx), evs_context_destroy(ref.ctx);
    return 0;
}
