/* The C11 suite: calls every public function of evsparse through the C ABI, compares every
 * operation with a naive reference on fresh random inputs (odd sizes, empty rows, duplicate
 * indices, nnz = 0, every dtype), and checks every error path.
 *
 * Environment: EVS_TEST_DEVICE=cpu|cuda|default (default cpu), EVS_TEST_SEED=N to replay.
 * `--quick` runs fewer random cases (for valgrind). */
#include "testutil.h"

static evs_context *ctx;
static evs_stream *st;
static int is_cpu;
static int rounds = 12;

/* ================================================================== arrays */

/* A dense array under test, with its host twin when it wraps host memory. Wrapped matrices
 * get a padded leading dimension whose pad must stay untouched. */
typedef struct {
    evs_dense *d;
    void *host;     /* wrapped strided matrix: its padded host image (a copy of the device one on CUDA) */
    evs_dense *owner; /* CUDA: the owned padded matrix whose device memory d wraps */
    evs_dtype t;
    int ndim;
    int64_t rows, cols, ld;
} Arr;

static const double PAD = 777.0;

static Arr arr_new(evs_dtype t, int ndim, int64_t rows, int64_t cols, const double *vals) {
    Arr a = {NULL, NULL, NULL, t, ndim, rows, ndim == 1 ? 1 : cols, ndim == 1 ? 1 : cols};
    size_t n = (size_t)(a.rows * a.cols);
    if (ndim == 2 && rnd_int(2)) {
        /* Wrap a padded row-major array (ld > cols): host memory on the CPU, on CUDA the device
         * memory of an owned rows x ld matrix. */
        a.ld = a.cols + 1 + rnd_int(3);
        size_t span = (size_t)(a.rows * a.ld);
        a.host = xmalloc(span * dtype_size(t));
        for (size_t i = 0; i < span; i++) put(t, a.host, i, t == EVS_DTYPE_BOOL ? 1 : PAD);
        for (int64_t r = 0; r < a.rows; r++)
            for (int64_t c = 0; c < a.cols; c++) put(t, a.host, (size_t)(r * a.ld + c), vals ? vals[r * a.cols + c] : 0);
        void *data = a.host;
        if (!is_cpu) {
            OK(evs_dense_create_matrix(ctx, t, a.rows, a.ld, &a.owner));
            OK(evs_dense_copy_from_host(st, a.owner, a.host, (int64_t)span));
            OK(evs_dense_data(a.owner, &data));
        }
        OK(evs_dense_wrap_matrix(ctx, t, a.rows, a.cols, a.ld, data, &a.d));
        return a;
    }
    if (ndim == 1)
        OK(evs_dense_create_vector(ctx, t, rows, &a.d));
    else
        OK(evs_dense_create_matrix(ctx, t, rows, cols, &a.d));
    if (vals) {
        void *b = pack(t, vals, n);
        OK(evs_dense_copy_from_host(st, a.d, b, (int64_t)n));
        free(b);
    }
    return a;
}

static void arr_read(const Arr *a, double *out) {
    size_t n = (size_t)(a->rows * a->cols);
    void *b = xmalloc(n * dtype_size(a->t));
    OK(evs_dense_copy_to_host(st, a->d, b, (int64_t)n));
    OK(evs_stream_synchronize(st));
    for (size_t i = 0; i < n; i++) out[i] = get(a->t, b, i);
    free(b);
}

/* The padding of a wrapped matrix must be as written. */
static void arr_check_pad(const Arr *a, const char *what) {
    if (!a->host) return;
    if (a->owner) {
        OK(evs_dense_copy_to_host(st, a->owner, a->host, a->rows * a->ld));
        OK(evs_stream_synchronize(st));
    }
    size_t bad = 0;
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t c = a->cols; c < a->ld; c++)
            if (get(a->t, a->host, (size_t)(r * a->ld + c)) != round_to(a->t, a->t == EVS_DTYPE_BOOL ? 1 : PAD)) bad++;
    CHECK(bad == 0, "%s: %zu padding elements were written", what, bad);
}

static void arr_free(Arr *a) {
    OK(evs_dense_destroy(a->d));
    OK(evs_dense_destroy(a->owner));
    free(a->host);
}

/* Memory a context can wrap holding a copy of `bytes` host bytes: the host memory itself on the
 * CPU, on CUDA the device memory of an owned byte vector (kept in *keep, destroyed by the caller). */
static void *wrappable(void *host, size_t bytes, evs_dense **keep) {
    *keep = NULL;
    if (is_cpu) return host;
    void *data = NULL;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, (int64_t)bytes, keep));
    OK(evs_dense_copy_from_host(st, *keep, host, (int64_t)bytes));
    OK(evs_dense_data(*keep, &data));
    return data;
}

/* Refreshes `host` from the memory wrappable() gave for it. */
static void read_back(void *host, size_t bytes, evs_dense *keep) {
    if (!keep) return;
    OK(evs_dense_copy_to_host(st, keep, host, (int64_t)bytes));
    OK(evs_stream_synchronize(st));
}

/* got vs ref elementwise within tol(dtype) * scale; reports the first mismatch. */
static void compare(const char *what, evs_dtype t, const double *got, const double *ref, const double *scale, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        /* plus one f16 subnormal step: below 2^-14, f16 has absolute, not relative, precision */
        double tol = tolerance(t) * (scale ? scale[i] : fabs(ref[i])) + (t == EVS_DTYPE_F16 ? 6e-8 : 1e-30);
        int same = (isnan(ref[i]) && isnan(got[i])) || fabs(got[i] - ref[i]) <= tol;
        if (!same && bad++ == 0) first = i;
    }
    CHECK(bad == 0, "%s [%s]: %zu of %zu differ; first [%zu] got %.9g expected %.9g", what, dtype_name(t), bad, n,
          first, n ? got[first] : 0.0, n ? ref[first] : 0.0);
}

/* Random values of dtype t (exactly representable), a fraction of them zero. */
static double *random_values(evs_dtype t, size_t n, int zero_pct) {
    double *v = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) v[i] = rnd_int(100) < zero_pct ? 0.0 : round_to(t, rnd_unit());
    return v;
}

/* Events of dtype t: bool 0/1, or floats whose positive entries are the active ones. */
static double *random_events(evs_dtype t, size_t n) {
    static const int densities[] = {2, 10, 30, 60}; /* sparse ones take the event-driven paths */
    int pct = densities[rnd_int(4)];
    double *v = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        int on = rnd_int(100) < pct;
        v[i] = t == EVS_DTYPE_BOOL ? on : (on ? round_to(t, 0.25 + fabs(rnd_unit())) : round_to(t, -fabs(rnd_unit()) * rnd_int(2)));
    }
    return v;
}

static double event_value(evs_input_kind kind, double v) { return kind == EVS_INPUT_FLOAT ? v : (v > 0 ? 1.0 : 0.0); }

/* ================================================================== CSR under test */

typedef struct {
    int m, k;
    int64_t nnz;
    int64_t *indptr;
    int32_t *indices;
    double *w; /* per entry (homo: all equal) */
    int homo;
    evs_dtype t, index_type;
    evs_csr *h;
} Csr;

static Csr csr_random(evs_dtype t, int homo, evs_dtype index_type, int max_row) {
    Csr a = {1 + rnd_int(37), 1 + rnd_int(37), 0, NULL, NULL, NULL, homo, t, index_type, NULL};
    a.indptr = xmalloc((size_t)(a.m + 1) * sizeof(int64_t));
    a.indptr[0] = 0;
    for (int i = 0; i < a.m; i++) a.indptr[i + 1] = a.indptr[i] + (rnd_int(4) == 0 ? 0 : rnd_int(max_row + 1));
    a.nnz = a.indptr[a.m];
    a.indices = xmalloc((size_t)a.nnz * sizeof(int32_t));
    a.w = xmalloc((size_t)a.nnz * sizeof(double));
    double homo_w = round_to(t, rnd_unit());
    for (int64_t j = 0; j < a.nnz; j++) {
        /* duplicates: sometimes repeat the previous column of the row */
        a.indices[j] = (j > 0 && rnd_int(5) == 0) ? a.indices[j - 1] : rnd_int(a.k);
        a.w[j] = homo ? homo_w : round_to(t, rnd_unit());
    }
    void *ip = xmalloc((size_t)(a.m + 1) * 8);
    for (int i = 0; i <= a.m; i++) put(index_type, ip, (size_t)i, (double)a.indptr[i]);
    void *wb = homo ? NULL : pack(t, a.w, (size_t)a.nnz);
    OK(evs_csr_create(ctx, a.m, a.k, a.nnz, index_type, ip, a.indices, t, wb, homo_w, &a.h));
    if (rnd_int(2)) OK(evs_csr_analyse(st, a.h));
    free(ip);
    free(wb);
    return a;
}

static void csr_free(Csr *a) {
    OK(evs_csr_destroy(a->h));
    free(a->indptr);
    free(a->indices);
    free(a->w);
}

static int row_of(const Csr *a, int64_t j) {
    int i = 0;
    while (a->indptr[i + 1] <= j) i++;
    return i;
}

/* ================================================================== spmv / spmm */

static void test_spmm_case(evs_dtype t, evs_dtype index_type, int homo, evs_op op, evs_input_kind kind,
                           evs_dtype xtype, int n /* 0: spmv */, double alpha, double beta, int max_row) {
    Csr a = csr_random(t, homo, index_type, max_row);
    int in_len = op == EVS_OP_N ? a.k : a.m, out_len = op == EVS_OP_N ? a.m : a.k, nc = n ? n : 1;
    double *x = kind == EVS_INPUT_FLOAT ? random_values(t, (size_t)in_len * nc, 20) : random_events(xtype, (size_t)in_len * nc);
    double *old = random_values(t, (size_t)out_len * nc, 0);
    double *ref = xmalloc((size_t)out_len * nc * sizeof(double)), *scale = xmalloc((size_t)out_len * nc * sizeof(double));
    double *got = xmalloc((size_t)out_len * nc * sizeof(double));
    for (int i = 0; i < out_len * nc; i++) ref[i] = scale[i] = 0;
    for (int64_t j = 0; j < a.nnz; j++) {
        int r = row_of(&a, j), c = a.indices[j];
        int src = op == EVS_OP_N ? c : r, dst = op == EVS_OP_N ? r : c;
        for (int q = 0; q < nc; q++) {
            double term = a.w[j] * event_value(kind, x[src * nc + q]);
            ref[dst * nc + q] += term;
            scale[dst * nc + q] += fabs(term);
        }
    }
    for (int i = 0; i < out_len * nc; i++) {
        ref[i] = alpha * ref[i] + (beta != 0 ? beta * old[i] : 0);
        scale[i] = fabs(alpha) * scale[i] + fabs(beta * old[i]) + fabs(ref[i]);
        if (beta == 0) old[i] = NAN; /* poison: beta = 0 must not read C */
    }
    Arr ax = arr_new(kind == EVS_INPUT_FLOAT ? t : xtype, n ? 2 : 1, in_len, nc, x);
    Arr ay = arr_new(t, n ? 2 : 1, out_len, nc, old);
    if (n)
        OK(evs_spmm(st, op, kind, alpha, a.h, ax.d, beta, ay.d));
    else
        OK(evs_spmv(st, op, kind, alpha, a.h, ax.d, beta, ay.d));
    arr_read(&ay, got);
    char what[160];
    snprintf(what, sizeof what, "%s op=%c kind=%s x=%s idx=%s %s m=%d k=%d nnz=%lld n=%d alpha=%g beta=%g",
             n ? "spmm" : "spmv", op == EVS_OP_N ? 'N' : 'T', kind == EVS_INPUT_FLOAT ? "float" : "events",
             dtype_name(kind == EVS_INPUT_FLOAT ? t : xtype), dtype_name(index_type), homo ? "homo" : "hetero", a.m,
             a.k, (long long)a.nnz, n, alpha, beta);
    compare(what, t, got, ref, scale, (size_t)out_len * nc);
    arr_check_pad(&ay, what);
    arr_free(&ax);
    arr_free(&ay);
    csr_free(&a);
    free(x), free(old), free(ref), free(scale), free(got);
}

static void test_spmm(void) {
    static const evs_dtype event_types[] = {EVS_DTYPE_BOOL, EVS_DTYPE_F16, EVS_DTYPE_BF16, EVS_DTYPE_F32, EVS_DTYPE_F64};
    for (int r = 0; r < rounds; r++)
        for (int ti = 0; ti < 4; ti++)
            for (int op = EVS_OP_N; op <= EVS_OP_T; op++)
                for (int kind = EVS_INPUT_FLOAT; kind <= EVS_INPUT_EVENTS; kind++) {
                    evs_dtype t = FLOAT_DTYPES[ti];
                    evs_dtype idx = rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64;
                    evs_dtype xt = event_types[rnd_int(5)];
                    double alpha = rnd_int(3) ? 1.0 : 0.5, beta = rnd_int(2) ? 0.0 : -0.75;
                    int max_row = r == 0 ? 0 : 1 + rnd_int(12); /* round 0: nnz = 0 */
                    test_spmm_case(t, idx, rnd_int(2), op, kind, xt, 0, alpha, beta, max_row);
                    test_spmm_case(t, idx, rnd_int(2), op, kind, xt, 1 + rnd_int(9), alpha, beta, max_row);
                }
}

/* ================================================================== plans */

/* Every spmm algorithm forced in turn (evs_context_set_algorithm): those the context's device
 * runs are checked against the reference and against evs_last_plan, the others must fail with
 * EVS_ERROR_NOT_SUPPORTED; then the error paths of forcing. */
static void test_plans(void) {
    enum { GPU = 1, CPU = 2 };
    static const struct {
        const char *spec;
        int runs;
    } forced[] = {{"spmm_n:thread_per_row", GPU}, {"spmm_n:warp_per_row", GPU}, {"spmm_n:length_classes", GPU},
                  {"spmm_n:row_ranges", CPU},     {"spmm_n:input_blocks", CPU}, {"spmm_n:reference", CPU},
                  {"spmm_t:scatter", GPU | CPU},  {"spmm_t:csc_gather", GPU | CPU}, {"spmm_t:input_blocks", CPU},
                  {"spmm_t:reference", CPU}};
    CHECK(evs_last_plan() != NULL, "last plan never NULL");
    for (size_t f = 0; f < sizeof forced / sizeof *forced; f++) {
        OK(evs_context_set_algorithm(ctx, forced[f].spec));
        evs_op op = strncmp(forced[f].spec, "spmm_n", 6) == 0 ? EVS_OP_N : EVS_OP_T;
        /* scatter runs f32/f64 only on the GPU */
        evs_dtype t = FLOAT_DTYPES[2 + rnd_int(2)];
        if (!(forced[f].runs & (is_cpu ? CPU : GPU))) {
            Csr a = csr_random(t, 0, EVS_DTYPE_I32, 4);
            int64_t in = op == EVS_OP_N ? a.k : a.m, out = op == EVS_OP_N ? a.m : a.k;
            double *xv = random_values(t, (size_t)in, 0), *yv = random_values(t, (size_t)out, 0);
            Arr x = arr_new(t, 1, in, 1, xv), y = arr_new(t, 1, out, 1, yv);
            FAILS(EVS_ERROR_NOT_SUPPORTED, evs_spmv(st, op, EVS_INPUT_FLOAT, 1, a.h, x.d, 0, y.d));
            CHECK(strstr(evs_last_error(), forced[f].spec) != NULL, "message names the plan: %s", evs_last_error());
            csr_free(&a), arr_free(&x), arr_free(&y), free(xv), free(yv);
            continue;
        }
        for (int r = 0; r < 2; r++) {
            test_spmm_case(t, EVS_DTYPE_I32, rnd_int(2), op, EVS_INPUT_FLOAT, t, r ? 1 + rnd_int(70) : 0, 1.0, 0.0,
                           1 + rnd_int(40));
            CHECK(strcmp(evs_last_plan(), forced[f].spec) == 0, "last plan %s, forced %s", evs_last_plan(),
                  forced[f].spec);
        }
    }
    /* a forced algorithm that cannot run the call: scatter has no f16 atomics */
    OK(evs_context_set_algorithm(ctx, "spmm_t:scatter"));
    Csr a = csr_random(EVS_DTYPE_F16, 0, EVS_DTYPE_I32, 4);
    double *xv = random_values(EVS_DTYPE_F16, (size_t)a.m, 0), *yv = random_values(EVS_DTYPE_F16, (size_t)a.k, 0);
    Arr x = arr_new(EVS_DTYPE_F16, 1, a.m, 1, xv), y = arr_new(EVS_DTYPE_F16, 1, a.k, 1, yv);
    if (is_cpu) {
        OK(evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a.h, x.d, 0, y.d));
    } else {
        FAILS(EVS_ERROR_NOT_SUPPORTED, evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a.h, x.d, 0, y.d));
        CHECK(strstr(evs_last_error(), "spmm_t:scatter") != NULL, "message names the plan: %s", evs_last_error());
    }
    /* a rejected spec changes nothing */
    FAILS(EVS_ERROR_INVALID_VALUE, evs_context_set_algorithm(ctx, "spmm_t:csc_gather,spmm_n:fastest"));
    CHECK(strstr(evs_last_error(), "fastest") != NULL, "message names the algorithm: %s", evs_last_error());
    if (!is_cpu) FAILS(EVS_ERROR_NOT_SUPPORTED, evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a.h, x.d, 0, y.d));
    OK(evs_context_set_algorithm(ctx, "spmm_t:auto, spmm_n:auto"));
    OK(evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a.h, x.d, 0, y.d));
    CHECK(strncmp(evs_last_plan(), "spmm_t:", 7) == 0, "last plan %s", evs_last_plan());
    OK(evs_context_set_algorithm(ctx, ""));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_context_set_algorithm(ctx, "spmm_n"));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_context_set_algorithm(ctx, "sparse:warp_per_row"));
    CHECK(strstr(evs_last_error(), "sparse") != NULL, "message names the family: %s", evs_last_error());
    FAILS(EVS_ERROR_INVALID_VALUE, evs_context_set_algorithm(ctx, "spmm_n:\xff"));
    FAILS(EVS_ERROR_NULL_POINTER, evs_context_set_algorithm(NULL, "spmm_n:auto"));
    FAILS(EVS_ERROR_NULL_POINTER, evs_context_set_algorithm(ctx, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_context_set_algorithm((evs_context *)st, "spmm_n:auto"));
    arr_free(&x);
    arr_free(&y);
    csr_free(&a);
    free(xv), free(yv);
}

/* ================================================================== yw2y */

static void test_yw2y_case(evs_dtype t, evs_op op, int homo, int batches /* 0: 1-D */, int weighted) {
    Csr a = csr_random(t, homo, EVS_DTYPE_I32, 1 + rnd_int(9));
    int len = op == EVS_OP_N ? a.m : a.k, b = batches ? batches : 1;
    size_t nout = (size_t)b * (size_t)a.nnz;
    double alpha = rnd_int(2) ? 1.0 : 2.0, beta = rnd_int(2) ? 0.0 : 0.5;
    double *y = random_values(t, (size_t)b * len, 10), *bw = random_values(t, nout, 0), *old = random_values(t, nout, 0);
    double *ref = xmalloc(nout * sizeof(double) + 8), *got = xmalloc(nout * sizeof(double) + 8);
    double *scale = xmalloc(nout * sizeof(double) + 8);
    for (int q = 0; q < b; q++)
        for (int64_t j = 0; j < a.nnz; j++) {
            int src = op == EVS_OP_N ? row_of(&a, j) : a.indices[j];
            double w = weighted ? bw[q * a.nnz + j] : a.w[j], o = old[q * a.nnz + j];
            ref[q * a.nnz + j] = alpha * w * y[q * len + src] + (beta != 0 ? beta * o : 0);
            scale[q * a.nnz + j] = fabs(alpha * w * y[q * len + src]) + fabs(beta * o);
        }
    if (beta == 0)
        for (size_t i = 0; i < nout; i++) old[i] = NAN;
    Arr ay = arr_new(t, batches ? 2 : 1, batches ? b : len, len, y);
    Arr ao = arr_new(t, batches ? 2 : 1, batches ? b : a.nnz, a.nnz, old);
    Arr aw = arr_new(t, batches ? 2 : 1, batches ? b : a.nnz, a.nnz, bw);
    if (weighted)
        OK(evs_yw2y_weighted(st, op, alpha, a.h, aw.d, ay.d, beta, ao.d));
    else
        OK(evs_yw2y(st, op, alpha, a.h, ay.d, beta, ao.d));
    arr_read(&ao, got);
    char what[128];
    snprintf(what, sizeof what, "yw2y op=%c %s batches=%d weighted=%d nnz=%lld", op == EVS_OP_N ? 'N' : 'T',
             homo ? "homo" : "hetero", batches, weighted, (long long)a.nnz);
    compare(what, t, got, ref, scale, nout);
    arr_check_pad(&ao, what);
    arr_free(&ay), arr_free(&ao), arr_free(&aw);
    csr_free(&a);
    free(y), free(bw), free(old), free(ref), free(got), free(scale);
}

static void test_yw2y(void) {
    for (int r = 0; r < rounds; r++)
        for (int ti = 0; ti < 4; ti++)
            for (int op = EVS_OP_N; op <= EVS_OP_T; op++) {
                test_yw2y_case(FLOAT_DTYPES[ti], op, rnd_int(2), 0, 0);
                test_yw2y_case(FLOAT_DTYPES[ti], op, rnd_int(2), 1 + rnd_int(4), rnd_int(2));
                test_yw2y_case(FLOAT_DTYPES[ti], op, rnd_int(2), 0, 1);
            }
}

/* ================================================================== dense event mv / mm */

static void test_dense_mm_case(evs_dtype t, evs_op op, evs_input_kind kind, evs_dtype xtype, int n /* 0: mv */) {
    int m = 1 + rnd_int(29), k = 1 + rnd_int(29), nc = n ? n : 1;
    int wr = op == EVS_OP_N ? m : k, wc = op == EVS_OP_N ? k : m;
    double alpha = rnd_int(2) ? 1.0 : -1.5, beta = rnd_int(2) ? 0.0 : 0.25;
    double *w = random_values(t, (size_t)wr * wc, 5);
    double *s = kind == EVS_INPUT_FLOAT ? random_values(t, (size_t)k * nc, 50) : random_events(xtype, (size_t)k * nc);
    double *old = random_values(t, (size_t)m * nc, 0), *ref = xmalloc((size_t)m * nc * sizeof(double));
    double *scale = xmalloc((size_t)m * nc * sizeof(double)), *got = xmalloc((size_t)m * nc * sizeof(double));
    for (int i = 0; i < m; i++)
        for (int q = 0; q < nc; q++) {
            double acc = 0, sc = 0;
            for (int r = 0; r < k; r++) {
                double wv = op == EVS_OP_N ? w[i * k + r] : w[r * m + i];
                double term = wv * event_value(kind, s[r * nc + q]);
                acc += term, sc += fabs(term);
            }
            double o = old[i * nc + q];
            ref[i * nc + q] = alpha * acc + (beta != 0 ? beta * o : 0);
            scale[i * nc + q] = fabs(alpha) * sc + fabs(beta * o) + fabs(ref[i * nc + q]);
            if (beta == 0) old[i * nc + q] = NAN;
        }
    Arr aw = arr_new(t, 2, wr, wc, w);
    Arr as = arr_new(kind == EVS_INPUT_FLOAT ? t : xtype, n ? 2 : 1, k, nc, s);
    Arr ac = arr_new(t, n ? 2 : 1, m, nc, old);
    if (n)
        OK(evs_dense_mm(st, op, kind, alpha, aw.d, as.d, beta, ac.d));
    else
        OK(evs_dense_mv(st, op, kind, alpha, aw.d, as.d, beta, ac.d));
    arr_read(&ac, got);
    char what[128];
    snprintf(what, sizeof what, "dense_%s op=%c kind=%d x=%s m=%d k=%d n=%d", n ? "mm" : "mv", op == EVS_OP_N ? 'N' : 'T',
             kind, dtype_name(xtype), m, k, n);
    compare(what, t, got, ref, scale, (size_t)m * nc);
    arr_check_pad(&ac, what);
    arr_free(&aw), arr_free(&as), arr_free(&ac);
    free(w), free(s), free(old), free(ref), free(scale), free(got);
}

static void test_dense_mm(void) {
    for (int r = 0; r < rounds; r++)
        for (int ti = 0; ti < 4; ti++)
            for (int op = EVS_OP_N; op <= EVS_OP_T; op++)
                for (int kind = EVS_INPUT_FLOAT; kind <= EVS_INPUT_EVENTS; kind++) {
                    evs_dtype xt = rnd_int(2) ? EVS_DTYPE_BOOL : FLOAT_DTYPES[rnd_int(4)];
                    test_dense_mm_case(FLOAT_DTYPES[ti], op, kind, xt, 0);
                    test_dense_mm_case(FLOAT_DTYPES[ti], op, kind, xt, 1 + rnd_int(7));
                }
    if (!is_cpu) return;
    /* Regression (found by ffi_tests/fuzz.c): a W without columns spans no memory. mv T with W
     * 30 x 0 and one active input (so the plan visits the input's nonzeros) has no outputs; mv
     * N with W 3 x 0 gives c = beta·c. */
    float w[1] = {0}, c[3] = {1, 2, -4}, none[1] = {0};
    unsigned char spikes[30] = {0};
    spikes[20] = 1;
    evs_dense *hw, *hs, *hc;
    OK(evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 30, 0, 1, w, &hw));
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_BOOL, 30, spikes, &hs));
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 0, none, &hc));
    OK(evs_dense_mv(st, EVS_OP_T, EVS_INPUT_EVENTS, 1.0, hw, hs, 0.0, hc));
    OK(evs_dense_destroy(hw));
    OK(evs_dense_destroy(hs));
    OK(evs_dense_destroy(hc));
    OK(evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 3, 0, 1, w, &hw));
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_BOOL, 0, spikes, &hs));
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 3, c, &hc));
    OK(evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1.0, hw, hs, 0.5, hc));
    CHECK(c[0] == 0.5f && c[1] == 1.0f && c[2] == -2.0f, "dense mv N, W 3 x 0: c = %g %g %g", c[0], c[1], c[2]);
    OK(evs_dense_destroy(hw));
    OK(evs_dense_destroy(hs));
    OK(evs_dense_destroy(hc));
}

/* ================================================================== plasticity */

static double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static void random_bounds(double *lo, double *hi) {
    *lo = rnd_int(2) ? -INFINITY : -0.5;
    *hi = rnd_int(2) ? INFINITY : 0.6;
}

static void test_csr_plasticity_case(evs_dtype t, int post) {
    Csr a = csr_random(t, 0, rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64, 1 + rnd_int(9));
    evs_dtype spike_t = rnd_int(2) ? EVS_DTYPE_BOOL : FLOAT_DTYPES[rnd_int(4)];
    int spike_len = post ? a.k : a.m, trace_len = post ? a.m : a.k;
    double lo, hi;
    random_bounds(&lo, &hi);
    double *spikes = random_events(spike_t, (size_t)spike_len), *trace = random_values(t, (size_t)trace_len, 10);
    double *ref = xmalloc((size_t)a.nnz * sizeof(double) + 8), *scale = xmalloc((size_t)a.nnz * sizeof(double) + 8);
    double *got = xmalloc((size_t)a.nnz * sizeof(double) + 8);
    for (int64_t j = 0; j < a.nnz; j++) {
        int r = row_of(&a, j), c = a.indices[j];
        int active = post ? spikes[c] > 0 : spikes[r] > 0;
        double tr = post ? trace[r] : trace[c];
        ref[j] = active ? round_to(t, clip(a.w[j] + tr, lo, hi)) : a.w[j];
        scale[j] = active ? fabs(a.w[j]) + fabs(tr) : 0; /* untouched weights must match exactly */
    }
    Arr as = arr_new(spike_t, 1, spike_len, 1, spikes), at = arr_new(t, 1, trace_len, 1, trace);
    if (post)
        OK(evs_csr_plasticity_post(st, a.h, as.d, at.d, lo, hi));
    else
        OK(evs_csr_plasticity_pre(st, a.h, as.d, at.d, lo, hi));
    evs_dense *wv = NULL;
    OK(evs_csr_weights(a.h, &wv));
    Arr aw = {wv, NULL, NULL, t, 1, a.nnz, 1, 1};
    arr_read(&aw, got);
    char what[96];
    snprintf(what, sizeof what, "csr plasticity %s spikes=%s lo=%g hi=%g nnz=%lld", post ? "post" : "pre",
             dtype_name(spike_t), lo, hi, (long long)a.nnz);
    compare(what, t, got, ref, scale, (size_t)a.nnz);
    arr_free(&as), arr_free(&at), arr_free(&aw);
    csr_free(&a);
    free(spikes), free(trace), free(ref), free(scale), free(got);
}

static void test_dense_plasticity_case(evs_dtype t, int post) {
    int m = 1 + rnd_int(23), k = 1 + rnd_int(23);
    evs_dtype spike_t = rnd_int(2) ? EVS_DTYPE_BOOL : FLOAT_DTYPES[rnd_int(4)];
    int spike_len = post ? k : m, trace_len = post ? m : k;
    double lo, hi;
    random_bounds(&lo, &hi);
    double *w = random_values(t, (size_t)m * k, 0), *spikes = random_events(spike_t, (size_t)spike_len);
    double *trace = random_values(t, (size_t)trace_len, 10);
    double *ref = xmalloc((size_t)m * k * sizeof(double)), *scale = xmalloc((size_t)m * k * sizeof(double));
    double *got = xmalloc((size_t)m * k * sizeof(double));
    for (int i = 0; i < m; i++)
        for (int c = 0; c < k; c++) {
            int active = post ? spikes[c] > 0 : spikes[i] > 0;
            double tr = post ? trace[i] : trace[c], wv = w[i * k + c];
            ref[i * k + c] = active ? round_to(t, clip(wv + tr, lo, hi)) : wv;
            scale[i * k + c] = active ? fabs(wv) + fabs(tr) : 0;
        }
    Arr aw = arr_new(t, 2, m, k, w), as = arr_new(spike_t, 1, spike_len, 1, spikes), at = arr_new(t, 1, trace_len, 1, trace);
    if (post)
        OK(evs_dense_plasticity_post(st, aw.d, as.d, at.d, lo, hi));
    else
        OK(evs_dense_plasticity_pre(st, aw.d, as.d, at.d, lo, hi));
    arr_read(&aw, got);
    char what[96];
    snprintf(what, sizeof what, "dense plasticity %s spikes=%s m=%d k=%d", post ? "post" : "pre", dtype_name(spike_t), m, k);
    compare(what, t, got, ref, scale, (size_t)m * k);
    arr_check_pad(&aw, what);
    arr_free(&aw), arr_free(&as), arr_free(&at);
    free(w), free(spikes), free(trace), free(ref), free(scale), free(got);
}

static void test_plasticity(void) {
    for (int r = 0; r < rounds; r++)
        for (int ti = 0; ti < 4; ti++)
            for (int post = 0; post <= 1; post++) {
                test_csr_plasticity_case(FLOAT_DTYPES[ti], post);
                test_dense_plasticity_case(FLOAT_DTYPES[ti], post);
            }
}

/* ================================================================== bsrmm */

static void test_bsrmm_case(evs_dtype t, evs_dtype out_t, int bm, int bk) {
    int mb = 1 + rnd_int(3), kb = 1 + rnd_int(3), n = 1 + rnd_int(13);
    int M = mb * bm, K = kb * bk;
    int32_t *indptr = xmalloc((size_t)(mb + 1) * 4), *indices = xmalloc((size_t)(mb * kb + 1) * 4);
    indptr[0] = 0;
    for (int i = 0; i < mb; i++) {
        int cnt = 0;
        for (int c = 0; c < kb; c++)
            if (rnd_int(3)) indices[indptr[i] + cnt++] = c;
        indptr[i + 1] = indptr[i] + cnt;
    }
    int nnzb = indptr[mb];
    double alpha = rnd_int(2) ? 1.0 : 0.5, beta = rnd_int(2) ? 0.0 : 2.0;
    double *vals = random_values(t, (size_t)nnzb * bm * bk, 10), *b = random_values(t, (size_t)K * n, 10);
    double *old = random_values(out_t, (size_t)M * n, 0), *ref = xmalloc((size_t)M * n * sizeof(double));
    double *scale = xmalloc((size_t)M * n * sizeof(double)), *got = xmalloc((size_t)M * n * sizeof(double));
    for (int i = 0; i < M * n; i++) ref[i] = scale[i] = 0;
    for (int ib = 0; ib < mb; ib++)
        for (int jb = indptr[ib]; jb < indptr[ib + 1]; jb++)
            for (int r = 0; r < bm; r++)
                for (int q = 0; q < bk; q++)
                    for (int c = 0; c < n; c++) {
                        double term = vals[((size_t)jb * bm + r) * bk + q] * b[(indices[jb] * bk + q) * n + c];
                        ref[(ib * bm + r) * n + c] += term;
                        scale[(ib * bm + r) * n + c] += fabs(term);
                    }
    for (int i = 0; i < M * n; i++) {
        ref[i] = alpha * ref[i] + (beta != 0 ? beta * old[i] : 0);
        scale[i] = fabs(alpha) * scale[i] + fabs(beta * old[i]) + fabs(ref[i]);
        if (beta == 0) old[i] = NAN;
    }
    void *vb = pack(t, vals, (size_t)nnzb * bm * bk);
    evs_bsr *a = NULL;
    OK(evs_bsr_create(ctx, mb, kb, bm, bk, nnzb, indptr, indices, t, vb, &a));
    Arr ab = arr_new(t, 2, K, n, b), ac = arr_new(out_t, 2, M, n, old);
    OK(evs_bsrmm(st, alpha, a, ab.d, beta, ac.d));
    arr_read(&ac, got);
    char what[96];
    snprintf(what, sizeof what, "bsrmm %s->%s blocks %dx%d mb=%d kb=%d n=%d", dtype_name(t), dtype_name(out_t), bm, bk, mb, kb, n);
    /* f32 accumulation: the output dtype's rounding dominates, but never finer than f32. */
    compare(what, out_t == EVS_DTYPE_F32 ? t : out_t, got, ref, scale, (size_t)M * n);
    arr_check_pad(&ac, what);
    OK(evs_bsr_destroy(a));
    arr_free(&ab), arr_free(&ac);
    free(indptr), free(indices), free(vals), free(b), free(old), free(ref), free(scale), free(got), free(vb);
}

static void test_bsrmm(void) {
    static const int sizes[] = {16, 32, 64, 128};
    for (int r = 0; r < (rounds + 3) / 4; r++) {
        int bm = sizes[rnd_int(2)], bk = sizes[rnd_int(2)];
        test_bsrmm_case(EVS_DTYPE_F16, EVS_DTYPE_F16, bm, bk);
        test_bsrmm_case(EVS_DTYPE_F16, EVS_DTYPE_F32, bm, bk);
        test_bsrmm_case(EVS_DTYPE_BF16, EVS_DTYPE_BF16, bm, bk);
        test_bsrmm_case(EVS_DTYPE_BF16, EVS_DTYPE_F32, bm, bk);
        test_bsrmm_case(EVS_DTYPE_F32, EVS_DTYPE_F32, bm, bk);
    }
    test_bsrmm_case(EVS_DTYPE_F32, EVS_DTYPE_F32, 64, 128);
    test_bsrmm_case(EVS_DTYPE_BF16, EVS_DTYPE_F32, 128, 64);
}

/* ================================================================== compaction and CSC */

static void test_compact_case(evs_dtype t, int n) {
    double *s = random_events(t, (size_t)n);
    Arr as = arr_new(t, 1, n, 1, s), ai = arr_new(EVS_DTYPE_I32, 1, n + 2, 1, NULL), ac = arr_new(EVS_DTYPE_I32, 1, 1, 1, NULL);
    OK(evs_dense_fill(st, ai.d, -7));
    OK(evs_compact_events(st, as.d, ai.d, ac.d));
    double cnt, *idx = xmalloc((size_t)(n + 2) * sizeof(double));
    arr_read(&ac, &cnt);
    arr_read(&ai, idx);
    int expect = 0, bad = 0;
    for (int i = 0; i < n; i++)
        if (s[i] > 0 && idx[expect++] != i) bad++;
    CHECK(cnt == expect, "compact %s n=%d: count %g, expected %d", dtype_name(t), n, cnt, expect);
    CHECK(bad == 0, "compact %s n=%d: %d indices wrong", dtype_name(t), n, bad);
    CHECK(idx[n] == -7 && idx[n + 1] == -7 && (expect == n || idx[expect] == -7), "compact wrote past count");
    arr_free(&as), arr_free(&ai), arr_free(&ac);
    free(s), free(idx);
}

static void test_csc_case(evs_dtype colptr_t, evs_dtype perm_t) {
    Csr a = csr_random(EVS_DTYPE_F32, 0, rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64, rnd_int(10));
    size_t nnz = (size_t)a.nnz;
    Arr cp = arr_new(colptr_t, 1, a.k + 1, 1, NULL), ri = arr_new(EVS_DTYPE_I32, 1, a.nnz, 1, NULL);
    Arr pm = arr_new(perm_t, 1, a.nnz, 1, NULL);
    OK(evs_csr_to_csc(st, a.h, cp.d, ri.d, pm.d));
    double *gcp = xmalloc((size_t)(a.k + 1) * sizeof(double)), *gri = xmalloc(nnz * 8 + 8), *gpm = xmalloc(nnz * 8 + 8);
    arr_read(&cp, gcp), arr_read(&ri, gri), arr_read(&pm, gpm);
    /* Reference: walk columns in order, rows in order within each column (stable). */
    int bad = 0;
    size_t p = 0;
    for (int c = 0; c < a.k; c++) {
        if (gcp[c] != (double)p) bad++;
        for (int i = 0; i < a.m; i++)
            for (int64_t j = a.indptr[i]; j < a.indptr[i + 1]; j++)
                if (a.indices[j] == c) {
                    if (gri[p] != i || gpm[p] != (double)j) bad++;
                    p++;
                }
    }
    if (gcp[a.k] != (double)nnz) bad++;
    CHECK(bad == 0, "csr_to_csc colptr=%s perm=%s m=%d k=%d nnz=%zu: %d mismatches", dtype_name(colptr_t),
          dtype_name(perm_t), a.m, a.k, nnz, bad);
    arr_free(&cp), arr_free(&ri), arr_free(&pm);
    csr_free(&a);
    free(gcp), free(gri), free(gpm);
}

static void test_compact_and_csc(void) {
    for (int r = 0; r < rounds; r++) {
        test_compact_case(rnd_int(2) ? EVS_DTYPE_BOOL : FLOAT_DTYPES[rnd_int(4)], rnd_int(300));
        test_csc_case(rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64, rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64);
    }
}

/* ================================================================== handles */

static void test_version_and_status(void) {
    CHECK(strcmp(evs_version(), EVS_VERSION_STRING) == 0, "evs_version %s vs header %s", evs_version(), EVS_VERSION_STRING);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", EVS_VERSION_MAJOR, EVS_VERSION_MINOR, EVS_VERSION_PATCH);
    CHECK(strcmp(evs_version(), expect) == 0, "version macros %s vs %s", expect, evs_version());
    CHECK(strcmp(evs_status_string(EVS_SUCCESS), "EVS_SUCCESS") == 0, "status string");
    CHECK(strcmp(evs_status_string(EVS_ERROR_SHAPE_MISMATCH), "EVS_ERROR_SHAPE_MISMATCH") == 0, "status string");
    CHECK(strcmp(evs_status_string(EVS_ERROR_INTERNAL), "EVS_ERROR_INTERNAL") == 0, "status string");
    CHECK(strcmp(evs_status_string(12345), "EVS_UNKNOWN_STATUS") == 0, "unknown status");
    CHECK(strcmp(evs_status_string(-1), "EVS_UNKNOWN_STATUS") == 0, "negative status");
    for (evs_status s = EVS_SUCCESS; s <= EVS_ERROR_INTERNAL; s++)
        CHECK(strncmp(evs_status_string(s), "EVS_", 4) == 0 && strcmp(evs_status_string(s), "EVS_UNKNOWN_STATUS") != 0,
              "status %d has no name", s);
    CHECK(evs_last_error() != NULL, "last error never NULL");
}

static void test_context_and_stream(void) {
    evs_context *c = (evs_context *)0x1;
    /* no driver, no kernels, or no such GPU: unavailable in every build */
    FAILS(EVS_ERROR_DEVICE_UNAVAILABLE, evs_context_create(EVS_DEVICE_CUDA, 4096, &c));
    CHECK(c == (evs_context *)0x1, "failed create must leave out untouched");
    CHECK(strstr(evs_last_error(), "CUDA") != NULL, "message names CUDA: %s", evs_last_error());
    FAILS(EVS_ERROR_INVALID_ENUM, evs_context_create(99, 0, &c));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_context_create(EVS_DEVICE_CPU, -1, &c));
    FAILS(EVS_ERROR_NULL_POINTER, evs_context_create(EVS_DEVICE_CPU, 0, NULL));
    CHECK(c == (evs_context *)0x1, "out untouched");

    evs_context *dflt = NULL;
    OK(evs_context_create(EVS_DEVICE_DEFAULT, 0, &dflt));
    evs_device_kind kind = -1;
    int32_t ordinal = -1;
    OK(evs_context_device(dflt, &kind, &ordinal));
    CHECK(kind == EVS_DEVICE_CPU || kind == EVS_DEVICE_CUDA, "default device kind %d", kind);
    OK(evs_context_device(dflt, NULL, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_context_device(NULL, &kind, &ordinal));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_context_device((evs_context *)st, &kind, &ordinal));
    CHECK(strstr(evs_last_error(), "stream") != NULL, "wrong-kind message names the kind: %s", evs_last_error());

    evs_stream *s2 = NULL;
    OK(evs_stream_create(dflt, &s2));
    OK(evs_stream_synchronize(s2));
    OK(evs_stream_destroy(s2));
    /* a destroyed handle is rejected, not read after free (the library keeps its slot) */
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_synchronize(s2));
    CHECK(strstr(evs_last_error(), "destroyed") != NULL, "destroyed-handle message: %s", evs_last_error());
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_destroy(s2));
    FAILS(EVS_ERROR_NULL_POINTER, evs_stream_create(NULL, &s2));
    FAILS(EVS_ERROR_NULL_POINTER, evs_stream_create(dflt, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_create((evs_context *)st, &s2));
    FAILS(EVS_ERROR_NULL_POINTER, evs_stream_synchronize(NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_synchronize((evs_stream *)ctx));
    FAILS(EVS_ERROR_NULL_POINTER, evs_stream_wrap(NULL, NULL, &s2));
    FAILS(EVS_ERROR_NULL_POINTER, evs_stream_wrap(dflt, NULL, NULL));
    if (kind == EVS_DEVICE_CPU) FAILS(EVS_ERROR_NOT_SUPPORTED, evs_stream_wrap(dflt, (void *)0x10, &s2));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_destroy((evs_stream *)ctx));
    OK(evs_stream_destroy(NULL));
    OK(evs_context_destroy(dflt));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_context_destroy(dflt));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_stream_create(dflt, &s2));
    OK(evs_context_destroy(NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_context_destroy((evs_context *)st));
}

static void test_dense_handles(void) {
    static const evs_dtype all[] = {EVS_DTYPE_F16, EVS_DTYPE_BF16, EVS_DTYPE_F32, EVS_DTYPE_F64, EVS_DTYPE_BOOL, EVS_DTYPE_I32, EVS_DTYPE_I64};
    for (int ti = 0; ti < 7; ti++) {
        evs_dtype t = all[ti];
        int rows = 1 + rnd_int(9), cols = 1 + rnd_int(9);
        double *v = xmalloc((size_t)rows * cols * sizeof(double)), *back = xmalloc((size_t)rows * cols * sizeof(double));
        for (int i = 0; i < rows * cols; i++) v[i] = round_to(t, t == EVS_DTYPE_BOOL ? rnd_int(2) : rnd_int(200) - 100);
        Arr a = arr_new(t, 2, rows, cols, v);
        arr_read(&a, back);
        compare("dense round trip", EVS_DTYPE_F64, back, v, NULL, (size_t)rows * cols);
        OK(evs_dense_fill(st, a.d, 3));
        arr_read(&a, back);
        int bad = 0;
        for (int i = 0; i < rows * cols; i++) bad += back[i] != (t == EVS_DTYPE_BOOL ? 1 : 3);
        CHECK(bad == 0, "fill %s: %d wrong", dtype_name(t), bad);
        arr_check_pad(&a, "fill");
        int32_t ndim = 0;
        int64_t r = 0, c = 0, ld = 0;
        evs_dtype got_t = 0;
        void *data = NULL;
        OK(evs_dense_shape(a.d, &ndim, &r, &c, &ld));
        CHECK(ndim == 2 && r == rows && c == cols && ld == a.ld, "shape %d %lld %lld %lld", ndim, (long long)r, (long long)c, (long long)ld);
        OK(evs_dense_shape(a.d, NULL, NULL, NULL, NULL));
        OK(evs_dense_dtype(a.d, &got_t));
        CHECK(got_t == t, "dtype %d", got_t);
        OK(evs_dense_data(a.d, &data));
        void *wrapped = a.host;
        if (a.owner) OK(evs_dense_data(a.owner, &wrapped));
        CHECK(data != NULL && (!a.host || data == wrapped), "data pointer");
        arr_free(&a);
        Arr vec = arr_new(t, 1, rows, 1, v);
        OK(evs_dense_shape(vec.d, &ndim, &r, &c, &ld));
        CHECK(ndim == 1 && r == rows && c == 1 && ld == 1, "vector shape");
        arr_free(&vec);
        free(v), free(back);
    }
    /* empty arrays are valid */
    evs_dense *e = NULL;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 0, &e));
    OK(evs_dense_fill(st, e, 1));
    OK(evs_dense_destroy(e));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 0, 5, &e));
    OK(evs_dense_destroy(e));

    evs_dense *d = (evs_dense *)0x1, *good = NULL;
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_create_vector(NULL, EVS_DTYPE_F32, 4, &d));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_create_vector((evs_context *)st, EVS_DTYPE_F32, 4, &d));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_create_vector(ctx, 42, 4, &d));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_create_matrix(ctx, 0, 4, 4, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_create_vector(ctx, EVS_DTYPE_F32, -1, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 3, -2, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 1LL << 40, 4, &d));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 2, 2, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_create_matrix(NULL, EVS_DTYPE_F32, 2, 2, &d));
    if (is_cpu) {
        FAILS(EVS_ERROR_OUT_OF_MEMORY, evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 1LL << 30, 1LL << 28, &d));
        CHECK(strstr(evs_last_error(), "allocate") != NULL, "OOM message: %s", evs_last_error());
    }
    CHECK(d == (evs_dense *)0x1, "failed create must leave out untouched");

    float host[12] = {0};
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, NULL, &d));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, host, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_vector(NULL, EVS_DTYPE_F32, 4, host, &d));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_wrap_vector(ctx, -3, 4, host, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, -4, host, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, (char *)host + 1, &d));
    if (!is_cpu) {
        FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, host, &d));
        CHECK(strstr(evs_last_error(), "device pointers") != NULL, "host pointer message: %s", evs_last_error());
        evs_dense *small = NULL;
        void *data = NULL;
        OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &small));
        OK(evs_dense_data(small, &data));
        FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 1LL << 20, 1LL << 10, 1LL << 10, data, &d));
        CHECK(strstr(evs_last_error(), "past the end") != NULL, "allocation bound message: %s", evs_last_error());
        OK(evs_dense_destroy(small));
    }
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 3, 4, 3, host, &d));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 3, 4, 4, NULL, &d));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 3, 4, 4, host, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_wrap_matrix(NULL, EVS_DTYPE_F32, 3, 4, 4, host, &d));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_wrap_matrix(ctx, 77, 3, 4, 4, host, &d));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, -3, 4, 4, host, &d));
    CHECK(d == (evs_dense *)0x1, "failed wrap must leave out untouched");

    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &good));
    float src[4] = {1, 2, 3, 4}, dst[4] = {9, 9, 9, 9};
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_copy_from_host(st, good, src, 3));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_copy_from_host(st, good, src, -4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_from_host(st, good, NULL, 4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_from_host(NULL, good, src, 4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_from_host(st, NULL, src, 4));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_copy_from_host(st, (evs_dense *)ctx, src, 4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_copy_to_host(st, good, dst, 5));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_copy_to_host(st, good, dst, -1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_to_host(st, good, NULL, 4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_to_host(NULL, good, dst, 4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_copy_to_host(st, NULL, dst, 4));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_copy_to_host((evs_stream *)good, good, dst, 4));
    CHECK(dst[0] == 9 && dst[3] == 9, "failed copy_to_host must not write");
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_fill(NULL, good, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_fill(st, NULL, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_fill(st, (evs_dense *)st, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_shape(NULL, NULL, NULL, NULL, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_shape((evs_dense *)ctx, NULL, NULL, NULL, NULL));
    evs_dtype t = -5;
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_dtype(NULL, &t));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_dtype(good, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_dtype((evs_dense *)st, &t));
    CHECK(t == -5, "failed getter must leave out untouched");
    void *data = (void *)0x1;
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_data(NULL, &data));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_data(good, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_data((evs_dense *)ctx, &data));
    CHECK(data == (void *)0x1, "failed getter must leave out untouched");
    evs_dense *i32 = NULL;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 2, &i32));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_fill(st, i32, NAN));
    OK(evs_dense_destroy(i32));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_destroy((evs_dense *)st));
    OK(evs_dense_destroy(good));
    OK(evs_dense_destroy(NULL));
}

/* Creates a CSR from the given host arrays, expecting `status`. */
static void expect_csr(evs_status status, int64_t m, int64_t k, int64_t nnz, evs_dtype it, const void *indptr,
                       const int32_t *indices, const char *needle) {
    evs_csr *a = (evs_csr *)0x1;
    float w[16] = {0};
    FAILS(status, evs_csr_create(ctx, m, k, nnz, it, indptr, indices, EVS_DTYPE_F32, w, 0, &a));
    CHECK(a == (evs_csr *)0x1, "failed create must leave out untouched");
    CHECK(!needle || strstr(evs_last_error(), needle), "message '%s' lacks '%s'", evs_last_error(), needle);
}

static void test_csr_handles(void) {
    int32_t ip[4] = {0, 2, 2, 4}, ix[4] = {1, 0, 2, 2};
    int64_t ip64[4] = {0, 2, 2, 4};
    float w[4] = {1, 2, 3, 4};
    evs_csr *a = NULL;
    OK(evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    int64_t m = 0, k = 0, nnz = 0;
    evs_dtype t = 0, it = 0;
    int32_t homo = -1;
    OK(evs_csr_shape(a, &m, &k, &nnz));
    CHECK(m == 3 && k == 3 && nnz == 4, "csr shape");
    OK(evs_csr_shape(a, NULL, NULL, NULL));
    OK(evs_csr_types(a, &t, &it, &homo));
    CHECK(t == EVS_DTYPE_F32 && it == EVS_DTYPE_I32 && homo == 0, "csr types");
    OK(evs_csr_types(a, NULL, NULL, NULL));
    OK(evs_csr_validate(st, a));
    OK(evs_csr_analyse(st, a));
    OK(evs_csr_analyse(st, a)); /* idempotent */
    evs_dense *wv = NULL;
    OK(evs_csr_weights(a, &wv));
    OK(evs_csr_destroy(a)); /* the view keeps the weights alive */
    float back[4] = {0};
    OK(evs_dense_copy_to_host(st, wv, back, 4));
    CHECK(back[0] == 1 && back[3] == 4, "weights view");
    OK(evs_dense_destroy(wv));

    OK(evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I64, ip64, ix, EVS_DTYPE_F16, NULL, 0.1, &a));
    OK(evs_csr_types(a, &t, &it, &homo));
    CHECK(t == EVS_DTYPE_F16 && it == EVS_DTYPE_I64 && homo == 1, "homo csr types");
    wv = (evs_dense *)0x1;
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_weights(a, &wv));
    CHECK(wv == (evs_dense *)0x1, "out untouched");
    OK(evs_csr_destroy(a));

    /* nnz = 0 and m = 0 are valid */
    int32_t zero[1] = {0};
    OK(evs_csr_create(ctx, 0, 5, 0, EVS_DTYPE_I32, zero, NULL, EVS_DTYPE_F32, NULL, 1, &a));
    OK(evs_csr_destroy(a));

    /* structure errors, each with its own message */
    int32_t bad0[4] = {1, 2, 2, 4}, dec[4] = {0, 3, 2, 4}, end[4] = {0, 2, 2, 3}, oob[4] = {1, 0, 7, 2}, neg[4] = {1, -1, 2, 2};
    expect_csr(EVS_ERROR_INVALID_STRUCTURE, 3, 3, 4, EVS_DTYPE_I32, bad0, ix, "indptr[0] = 1");
    expect_csr(EVS_ERROR_INVALID_STRUCTURE, 3, 3, 4, EVS_DTYPE_I32, dec, ix, "non-decreasing");
    expect_csr(EVS_ERROR_INVALID_STRUCTURE, 3, 3, 4, EVS_DTYPE_I32, end, ix, "expected nnz = 4");
    expect_csr(EVS_ERROR_INVALID_STRUCTURE, 3, 3, 4, EVS_DTYPE_I32, ip, oob, "indices[2] = 7 out of range for 3 columns");
    expect_csr(EVS_ERROR_INVALID_STRUCTURE, 3, 3, 4, EVS_DTYPE_I32, ip, neg, "indices[1] = -1");
    expect_csr(EVS_ERROR_INVALID_VALUE, -1, 3, 4, EVS_DTYPE_I32, ip, ix, "m = -1");
    expect_csr(EVS_ERROR_INVALID_VALUE, 3, -3, 4, EVS_DTYPE_I32, ip, ix, "k = -3");
    expect_csr(EVS_ERROR_INVALID_VALUE, 3, 3, -4, EVS_DTYPE_I32, ip, ix, "nnz = -4");
    expect_csr(EVS_ERROR_INVALID_VALUE, 3, 3, 3000000000LL, EVS_DTYPE_I32, ip, ix, "int32");
    expect_csr(EVS_ERROR_INVALID_VALUE, 3, 1LL << 33, 4, EVS_DTYPE_I32, ip, ix, "k =");
    expect_csr(EVS_ERROR_INVALID_ENUM, 3, 3, 4, 99, ip, ix, "index_type");
    expect_csr(EVS_ERROR_DTYPE_MISMATCH, 3, 3, 4, EVS_DTYPE_F32, ip, ix, "indptr type");
    expect_csr(EVS_ERROR_NULL_POINTER, 3, 3, 4, EVS_DTYPE_I32, NULL, ix, "indptr");
    expect_csr(EVS_ERROR_NULL_POINTER, 3, 3, 4, EVS_DTYPE_I32, ip, NULL, "indices");
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_BOOL, w, 0, &a));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, 1234, w, 0, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_create(NULL, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_create((evs_context *)st, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, NULL));

    /* wrapping trusts the structure until validate is asked */
    {
        evs_dense *keep[4];
        int32_t *dip = wrappable(ip, sizeof ip, &keep[0]), *doob = wrappable(oob, sizeof oob, &keep[1]);
        int32_t *dix = wrappable(ix, sizeof ix, &keep[2]);
        float *dw = wrappable(w, sizeof w, &keep[3]);
        OK(evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, dip, doob, EVS_DTYPE_F32, dw, 0, &a));
        /* an operation checks a wrapped structure once, before any kernel reads it */
        evs_dense *x3 = NULL, *y3 = NULL;
        OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &x3));
        OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &y3));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a, x3, 0, y3));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_csr_analyse(st, a));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_csr_plasticity_pre(st, a, x3, y3, -1, 1));
        OK(evs_dense_destroy(x3));
        OK(evs_dense_destroy(y3));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_csr_validate(st, a));
        CHECK(strstr(evs_last_error(), "indices[2] = 7") != NULL, "validate message: %s", evs_last_error());
        OK(evs_csr_destroy(a));
        OK(evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, dip, dix, EVS_DTYPE_F32, dw, 0, &a));
        OK(evs_csr_validate(st, a));
        OK(evs_csr_weights(a, &wv));
        float two[4] = {5, 6, 7, 8};
        OK(evs_dense_copy_from_host(st, wv, two, 4));
        read_back(w, sizeof w, keep[3]);
        CHECK(w[0] == 5 && w[3] == 8, "a wrapped csr's weights view writes the caller's memory");
        OK(evs_dense_destroy(wv));
        OK(evs_csr_destroy(a));
        read_back(w, sizeof w, keep[3]);
        CHECK(w[0] == 5, "destroying a wrapped csr leaves the memory alone");
        OK(evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, dip, dix, EVS_DTYPE_F32, NULL, 0.5, &a));
        OK(evs_csr_types(a, NULL, NULL, &homo));
        CHECK(homo == 1, "wrapped homo");
        OK(evs_csr_destroy(a));
        for (int i = 0; i < 4; i++) OK(evs_dense_destroy(keep[i]));
    }
    if (!is_cpu) { /* a CUDA context wraps device memory only */
        FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, NULL, 1, &a));
        CHECK(strstr(evs_last_error(), "device pointers") != NULL, "host pointer message: %s", evs_last_error());
    }
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, NULL, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, NULL, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_wrap(NULL, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_wrap(ctx, 3, 3, 3000000000LL, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_csr_wrap(ctx, 3, 3, 4, 0, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_wrap(ctx, 3, 3, 4, EVS_DTYPE_I64, (char *)ip64 + 4, ix, EVS_DTYPE_F32, w, 0, &a));

    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_validate(NULL, a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_validate(st, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_validate(st, (evs_csr *)st));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_analyse(NULL, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_analyse(st, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_analyse(st, (evs_csr *)ctx));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_shape(NULL, &m, &k, &nnz));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_shape((evs_csr *)st, &m, &k, &nnz));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_types(NULL, &t, &it, &homo));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_types((evs_csr *)st, &t, &it, &homo));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_weights(NULL, &wv));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_weights((evs_csr *)st, &wv));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_destroy((evs_csr *)st));
    OK(evs_csr_destroy(NULL));

    /* handles from another context */
    evs_context *other = NULL;
    evs_stream *other_st = NULL;
    OK(evs_context_create(EVS_DEVICE_CPU, 0, &other));
    OK(evs_stream_create(other, &other_st));
    OK(evs_csr_create(ctx, 3, 3, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_validate(other_st, a));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_analyse(other_st, a));
    OK(evs_csr_weights(a, &wv));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_fill(other_st, wv, 0));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_copy_to_host(other_st, wv, back, 4));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_copy_from_host(other_st, wv, back, 4));
    OK(evs_dense_destroy(wv));
    OK(evs_csr_destroy(a));
    OK(evs_stream_destroy(other_st));
    OK(evs_context_destroy(other));
}

static void test_bsr_handles(void) {
    int32_t ip[3] = {0, 1, 2}, ix[2] = {1, 0}, oob[2] = {1, 5};
    float *v = xmalloc(2 * 16 * 32 * sizeof(float));
    for (int i = 0; i < 2 * 16 * 32; i++) v[i] = (float)i;
    evs_bsr *a = (evs_bsr *)0x1;
    OK(evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    int64_t rows = 0, cols = 0, bm = 0, bk = 0, nnzb = 0;
    evs_dtype t = 0;
    OK(evs_bsr_shape(a, &rows, &cols, &bm, &bk, &nnzb, &t));
    CHECK(rows == 32 && cols == 64 && bm == 16 && bk == 32 && nnzb == 2 && t == EVS_DTYPE_F32, "bsr shape");
    OK(evs_bsr_shape(a, NULL, NULL, NULL, NULL, NULL, NULL));
    OK(evs_bsr_validate(st, a));
    OK(evs_bsr_destroy(a));
    a = (evs_bsr *)0x1;
    FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, oob, EVS_DTYPE_F32, v, &a));
    CHECK(strstr(evs_last_error(), "indices[1] = 5") != NULL, "bsr message: %s", evs_last_error());
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsr_create(ctx, 2, 2, 24, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsr_create(ctx, 2, 2, 16, 0, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsr_create(ctx, -2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsr_create(ctx, 2, 2, 16, 32, -1, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F64, v, &a));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, ix, 55, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_create(ctx, 2, 2, 16, 32, 2, NULL, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, NULL, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, NULL, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_create(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_create(NULL, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_bsr_create((evs_context *)st, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    CHECK(a == (evs_bsr *)0x1, "failed create must leave out untouched");
    {
        evs_dense *keep[3];
        int32_t *dip = wrappable(ip, sizeof ip, &keep[0]), *doob = wrappable(oob, sizeof oob, &keep[1]);
        float *dv = wrappable(v, 2 * 16 * 32 * sizeof(float), &keep[2]);
        OK(evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, dip, doob, EVS_DTYPE_F32, dv, &a));
        evs_dense *b = NULL, *c = NULL;
        OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 64, 3, &b));
        OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 32, 3, &c));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_bsrmm(st, 1, a, b, 0, c));
        OK(evs_dense_destroy(b));
        OK(evs_dense_destroy(c));
        FAILS(EVS_ERROR_INVALID_STRUCTURE, evs_bsr_validate(st, a));
        OK(evs_bsr_destroy(a));
        for (int i = 0; i < 3; i++) OK(evs_dense_destroy(keep[i]));
    }
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, NULL, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, ip, NULL, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, NULL, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, NULL));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_wrap(NULL, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsr_wrap(ctx, 2, 2, 16, 48, 2, ip, ix, EVS_DTYPE_F32, v, &a));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_bsr_wrap(ctx, 2, 2, 16, 32, 2, ip, ix, EVS_DTYPE_I32, v, &a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_validate(NULL, a));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_validate(st, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_bsr_validate(st, (evs_bsr *)st));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsr_shape(NULL, &rows, NULL, NULL, NULL, NULL, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_bsr_shape((evs_bsr *)ctx, &rows, NULL, NULL, NULL, NULL, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_bsr_destroy((evs_bsr *)st));
    OK(evs_bsr_destroy(NULL));
    free(v);
}

/* ================================================================== operation error paths */

/* A rejected call must change nothing: the output keeps its sentinel values. */
static void expect_untouched(evs_dense *d, int64_t n, const char *what) {
    double *v = xmalloc((size_t)n * sizeof(double) + 8);
    evs_dtype t;
    OK(evs_dense_dtype(d, &t));
    Arr a = {d, NULL, NULL, t, 1, n, 1, 1};
    arr_read(&a, v);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += v[i] != 5;
    CHECK(bad == 0, "%s: a rejected call wrote %d elements", what, bad);
    free(v);
}

static void test_op_errors(void) {
    int32_t ip[4] = {0, 2, 2, 4}, ix[4] = {1, 0, 2, 1};
    float w[4] = {1, 2, 3, 4};
    evs_csr *a = NULL, *homo = NULL;
    OK(evs_csr_create(ctx, 3, 4, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a)); /* 3 x 4 */
    OK(evs_csr_create(ctx, 3, 4, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, NULL, 1, &homo));
    evs_dense *x4, *x3, *y3, *y4, *xb, *x64, *i32, *B, *C, *Cbad, *W, *out, *out2;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &x4));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &x3));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &y3));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &y4));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, 4, &xb));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F64, 4, &x64));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 4, &i32));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 4, 2, &B));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 3, 2, &C));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 3, 5, &Cbad));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 3, 4, &W));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &out));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 5, &out2));
    evs_context *other = NULL;
    evs_dense *foreign = NULL;
    OK(evs_context_create(EVS_DEVICE_CPU, 0, &other));
    OK(evs_dense_create_vector(other, EVS_DTYPE_F32, 4, &foreign));
    OK(evs_dense_fill(st, y3, 5));
    OK(evs_dense_fill(st, out, 5));
    evs_dense *Wi32 = NULL;
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_I32, 3, 4, &Wi32));
    /* Overlapping views of one host buffer, to check that aliased outputs are refused. */
    float shared_host[16] = {0}, *shared;
    evs_dense *ov_x4 = NULL, *ov_y3 = NULL, *ov_B = NULL, *ov_C = NULL, *ov_keep = NULL;
    shared = wrappable(shared_host, sizeof shared_host, &ov_keep);
    {
        OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, shared, &ov_x4));
        OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 3, shared + 1, &ov_y3));
        OK(evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 4, 2, 2, shared, &ov_B));
        OK(evs_dense_wrap_matrix(ctx, EVS_DTYPE_F32, 3, 2, 2, shared + 6, &ov_C));
    }

    /* spmv */
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv(NULL, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x4, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, NULL, x4, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, NULL, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x4, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_spmv(st, 2, EVS_INPUT_FLOAT, 1, a, x4, 0, y3));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_spmv(st, EVS_OP_N, 7, 1, a, x4, 0, y3));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, (evs_csr *)x4, x4, 0, y3));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, (evs_dense *)a, 0, y3));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_spmv((evs_stream *)a, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x4, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x3, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a, x4, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x64, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, xb, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, a, i32, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a, y3, 0, x64));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, foreign, 0, y3));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, ov_x4, 0, ov_y3));
    expect_untouched(y3, 3, "spmv");
    OK(evs_spmv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, a, xb, 0, y3));
    OK(evs_spmv(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, homo, x3, 0, y4));

    /* spmm */
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmm(NULL, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, NULL, B, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, NULL, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_spmm(st, -1, EVS_INPUT_FLOAT, 1, a, B, 0, C));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_spmm(st, EVS_OP_N, 2, 1, a, B, 0, C));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, (evs_dense *)st));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, Cbad));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x4, 0, C));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmm(st, EVS_OP_T, EVS_INPUT_FLOAT, 1, a, B, 0, C));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, B, 0, foreign));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_spmm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, ov_B, 0, ov_C));

    /* yw2y */
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y(NULL, EVS_OP_N, 1, a, y3, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y(st, EVS_OP_N, 1, NULL, y3, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y(st, EVS_OP_N, 1, a, NULL, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y(st, EVS_OP_N, 1, a, y3, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_yw2y(st, 9, 1, a, y3, 0, out));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_yw2y(st, EVS_OP_N, 1, a, (evs_dense *)ctx, 0, out));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_yw2y(st, EVS_OP_N, 1, a, x4, 0, out));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_yw2y(st, EVS_OP_N, 1, a, y3, 0, out2));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_yw2y(st, EVS_OP_T, 1, a, x64, 0, out));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_yw2y(st, EVS_OP_T, 1, a, x4, 0, i32));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_yw2y(st, EVS_OP_T, 1, a, x4, 0, foreign));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_yw2y(st, EVS_OP_N, 1, a, ov_y3, 0, ov_x4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y_weighted(st, EVS_OP_N, 1, a, NULL, y3, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y_weighted(NULL, EVS_OP_N, 1, a, x4, y3, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y_weighted(st, EVS_OP_N, 1, NULL, x4, y3, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y_weighted(st, EVS_OP_N, 1, a, x4, NULL, 0, out));
    FAILS(EVS_ERROR_NULL_POINTER, evs_yw2y_weighted(st, EVS_OP_N, 1, a, x4, y3, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_yw2y_weighted(st, 3, 1, a, x4, y3, 0, out));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_yw2y_weighted(st, EVS_OP_N, 1, a, x3, y3, 0, out));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_yw2y_weighted(st, EVS_OP_N, 1, a, x64, y3, 0, out));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_yw2y_weighted(st, EVS_OP_N, 1, a, foreign, y3, 0, out));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_yw2y_weighted(st, EVS_OP_N, 1, a, (evs_dense *)a, y3, 0, out));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_yw2y_weighted(st, EVS_OP_N, 1, a, out, y3, 0, out));
    OK(evs_dense_fill(st, y3, 5));
    expect_untouched(out, 4, "yw2y");

    /* dense mv / mm: W is 3 x 4 */
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv(NULL, EVS_OP_N, EVS_INPUT_EVENTS, 1, W, xb, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, NULL, xb, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, W, NULL, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, W, xb, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_mv(st, 5, EVS_INPUT_EVENTS, 1, W, xb, 0, y3));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_mv(st, EVS_OP_N, 5, 1, W, xb, 0, y3));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, (evs_dense *)a, xb, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, x4, xb, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mv(st, EVS_OP_T, EVS_INPUT_EVENTS, 1, W, xb, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, W, xb, 0, y4));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_EVENTS, 1, W, i32, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, x64, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, Wi32, x4, 0, y3));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, foreign, 0, y3));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_mv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, ov_x4, 0, ov_y3));
    expect_untouched(y3, 3, "dense_mv");
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mm(NULL, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, NULL, B, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, NULL, 0, C));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_mm(st, 4, EVS_INPUT_FLOAT, 1, W, B, 0, C));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_mm(st, EVS_OP_N, 4, 1, W, B, 0, C));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, Cbad));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, x4, 0, C));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, foreign));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, (evs_dense *)a));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, ov_B, 0, ov_C));
    OK(evs_dense_mm(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, W, B, 0, C));

    /* csr plasticity: pre spikes length m = 3, post trace length k = 4 */
    evs_dense *pre3 = NULL;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, 3, &pre3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_pre(NULL, a, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_pre(st, NULL, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_pre(st, a, NULL, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_pre(st, a, pre3, NULL, -1, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_plasticity_pre(st, (evs_csr *)x4, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_pre(st, homo, pre3, x4, -1, 1));
    CHECK(strstr(evs_last_error(), "homogeneous") != NULL, "homo message: %s", evs_last_error());
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_pre(st, a, pre3, x4, 1, -1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_pre(st, a, pre3, x4, NAN, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_pre(st, a, xb, x4, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_pre(st, a, pre3, x3, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_plasticity_pre(st, a, pre3, x64, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_plasticity_pre(st, a, i32, x4, -1, 1));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_plasticity_pre(st, a, pre3, foreign, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_post(NULL, a, xb, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_post(st, NULL, xb, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_post(st, a, NULL, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_post(st, a, xb, NULL, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_post(st, homo, xb, x3, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_post(st, a, xb, x3, 2, NAN));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_post(st, a, pre3, x3, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_post(st, a, xb, x4, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_plasticity_post(st, a, i32, x3, -1, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_plasticity_post(st, a, xb, (evs_dense *)st, -1, 1));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_plasticity_post(st, a, foreign, x3, -1, 1));
    {
        evs_dense *wv = NULL;
        float now[4] = {0};
        OK(evs_csr_weights(a, &wv));
        OK(evs_dense_copy_to_host(st, wv, now, 4));
        OK(evs_stream_synchronize(st));
        CHECK(memcmp(now, w, sizeof now) == 0, "rejected plasticity calls changed the weights");
        OK(evs_dense_destroy(wv));
    }
    OK(evs_csr_plasticity_pre(st, a, pre3, x4, -INFINITY, INFINITY));
    OK(evs_csr_plasticity_post(st, a, xb, x3, -INFINITY, INFINITY));

    /* dense plasticity: W 3 x 4 */
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_pre(NULL, W, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_pre(st, NULL, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_pre(st, W, NULL, x4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_pre(st, W, pre3, NULL, -1, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_plasticity_pre(st, (evs_dense *)a, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_plasticity_pre(st, x4, pre3, x4, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_plasticity_pre(st, W, xb, x4, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_plasticity_pre(st, W, pre3, x64, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_plasticity_pre(st, W, pre3, x4, 0.5, 0.25));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_plasticity_pre(st, W, pre3, foreign, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_post(NULL, W, xb, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_post(st, NULL, xb, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_post(st, W, NULL, x3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_post(st, W, xb, NULL, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_plasticity_post(st, W, pre3, x3, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_plasticity_post(st, Wi32, xb, x3, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_plasticity_post(st, W, xb, x3, NAN, NAN));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_plasticity_post(st, W, foreign, x3, -1, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_plasticity_post(st, W, (evs_dense *)ctx, x3, -1, 1));
    OK(evs_dense_plasticity_pre(st, W, pre3, x4, -1, 1));
    OK(evs_dense_plasticity_post(st, W, xb, x3, -1, 1));

    /* bsrmm: 32 x 32 of 16 x 16 blocks */
    int32_t bip[3] = {0, 1, 1}, bix[1] = {1};
    float *bv = xmalloc(256 * sizeof(float));
    for (int i = 0; i < 256; i++) bv[i] = 1;
    evs_bsr *bsr = NULL;
    OK(evs_bsr_create(ctx, 2, 2, 16, 16, 1, bip, bix, EVS_DTYPE_F32, bv, &bsr));
    evs_dense *bB, *bC, *bC16, *bBbad;
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 32, 3, &bB));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 32, 3, &bC));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F16, 32, 3, &bC16));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 31, 3, &bBbad));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsrmm(NULL, 1, bsr, bB, 0, bC));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsrmm(st, 1, NULL, bB, 0, bC));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsrmm(st, 1, bsr, NULL, 0, bC));
    FAILS(EVS_ERROR_NULL_POINTER, evs_bsrmm(st, 1, bsr, bB, 0, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_bsrmm(st, 1, (evs_bsr *)a, bB, 0, bC));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_bsrmm(st, 1, bsr, bBbad, 0, bC));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_bsrmm(st, 1, bsr, bB, 0, C));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_bsrmm(st, 1, bsr, bB, 0, bC16));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_bsrmm(st, 1, bsr, bB, 0, foreign));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_bsrmm(st, 1, bsr, bB, 0, bB));
    OK(evs_bsrmm(st, 1, bsr, bB, 0, bC));

    /* compaction */
    evs_dense *cnt, *idx2, *cnt2;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 2, &cnt2));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 3, &idx2));
    FAILS(EVS_ERROR_NULL_POINTER, evs_compact_events(NULL, xb, i32, cnt));
    FAILS(EVS_ERROR_NULL_POINTER, evs_compact_events(st, NULL, i32, cnt));
    FAILS(EVS_ERROR_NULL_POINTER, evs_compact_events(st, xb, NULL, cnt));
    FAILS(EVS_ERROR_NULL_POINTER, evs_compact_events(st, xb, i32, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_compact_events(st, xb, i32, (evs_dense *)a));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_compact_events(st, xb, idx2, cnt));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_compact_events(st, xb, i32, cnt2));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_compact_events(st, W, i32, cnt));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_compact_events(st, xb, x4, cnt));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_compact_events(st, i32, i32, cnt));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_compact_events(st, foreign, i32, cnt));
    {
        /* 2^31 neurons: more than int32 indices reach (views on a CPU context that claim the
           lengths; the call is refused before it reads, and before it sees them overlap) */
        static uint8_t spike_byte;
        static int32_t index_word;
        evs_context *cpu;
        evs_stream *cpu_st;
        evs_dense *huge_spikes, *huge_idx, *cpu_cnt;
        OK(evs_context_create(EVS_DEVICE_CPU, 0, &cpu));
        OK(evs_stream_create(cpu, &cpu_st));
        OK(evs_dense_wrap_vector(cpu, EVS_DTYPE_BOOL, (int64_t)1 << 31, &spike_byte, &huge_spikes));
        OK(evs_dense_wrap_vector(cpu, EVS_DTYPE_I32, (int64_t)1 << 31, &index_word, &huge_idx));
        OK(evs_dense_create_vector(cpu, EVS_DTYPE_I32, 1, &cpu_cnt));
        FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_compact_events(cpu_st, huge_spikes, huge_idx, cpu_cnt));
        evs_dense_destroy(cpu_cnt), evs_dense_destroy(huge_idx), evs_dense_destroy(huge_spikes);
        evs_stream_destroy(cpu_st), evs_context_destroy(cpu);
    }
    {
        int32_t ibuf_host[4], *ibuf;
        evs_dense *ov_idx = NULL, *ov_cnt = NULL, *keep = NULL;
        ibuf = wrappable(ibuf_host, sizeof ibuf_host, &keep);
        OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_I32, 4, ibuf, &ov_idx));
        OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_I32, 1, ibuf + 3, &ov_cnt));
        FAILS(EVS_ERROR_INVALID_VALUE, evs_compact_events(st, xb, ov_idx, ov_cnt));
        OK(evs_dense_destroy(ov_idx));
        OK(evs_dense_destroy(ov_cnt));
        OK(evs_dense_destroy(keep));
    }
    OK(evs_compact_events(st, xb, i32, cnt));

    /* csr -> csc: k = 4, nnz = 4 */
    evs_dense *cp5, *ri4, *pm4, *cp64;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 5, &cp5));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I64, 5, &cp64));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 4, &ri4));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 4, &pm4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_to_csc(NULL, a, cp5, ri4, pm4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_to_csc(st, NULL, cp5, ri4, pm4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_to_csc(st, a, NULL, ri4, pm4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_to_csc(st, a, cp5, NULL, pm4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_to_csc(st, a, cp5, ri4, NULL));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_csr_to_csc(st, (evs_csr *)cp5, cp5, ri4, pm4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_to_csc(st, a, i32, ri4, pm4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_to_csc(st, a, cp5, idx2, pm4));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_to_csc(st, a, out2, ri4, pm4));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_to_csc(st, a, cp5, x4, pm4));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_to_csc(st, a, cp5, ri4, foreign));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_to_csc(st, a, cp5, ri4, ri4));
    OK(evs_csr_to_csc(st, a, cp64, ri4, pm4));

    evs_dense *all[] = {Wi32, ov_x4, ov_y3, ov_B, ov_C, x4, x3, y3, y4, xb, x64, i32, B, C, Cbad, W, out, out2, foreign, pre3, bB, bC, bC16, bBbad, cnt, cnt2, idx2, cp5, cp64, ri4, pm4, ov_keep};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) OK(evs_dense_destroy(all[i]));
    OK(evs_bsr_destroy(bsr));
    OK(evs_csr_destroy(a));
    OK(evs_csr_destroy(homo));
    OK(evs_context_destroy(other));
    free(bv);
}

/* ================================================================== spike lists */

/* The spikes of a bool event vector as a spike list on the test device, through
 * evs_compact_events (the indices have room for every neuron). */
static void spike_list_of(const Arr *events, evs_dense **indices, evs_dense **count) {
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, events->rows, indices));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, count));
    OK(evs_compact_events(st, events->d, *indices, *count));
}

/* 1 + |v| per element: sums of the same terms in another order agree within tol(dtype) of it. */
static double *loose_scale(const double *v, size_t n) {
    double *s = xmalloc(n * sizeof(double) + 8);
    for (size_t i = 0; i < n; i++) s[i] = 1 + fabs(v[i]);
    return s;
}

/* Reads y and y2 and checks that y2 (from a spike list) matches y (from the event vector). */
static void compare_arrays(const char *what, evs_dtype t, const Arr *from_events, const Arr *from_list, size_t n) {
    double *want = xmalloc(n * sizeof(double) + 8), *got = xmalloc(n * sizeof(double) + 8);
    arr_read(from_events, want);
    arr_read(from_list, got);
    double *scale = loose_scale(want, n);
    compare(what, t, got, want, scale, n);
    free(want), free(got), free(scale);
}

/* spmv and dense mv on a spike list against the same call on the event vector it was compacted
 * from; the GPU refuses f16/bf16 spmv on spike lists (no f32-accurate atomics) but where
 * output_slices sums in shared memory: N on matrices whose column slice offsets analysis keeps
 * (tests/backends.rs checks which), T on long sorted rows (none here). */
static void test_spike_list_products(evs_dtype t, evs_op op) {
    Csr a = csr_random(t, rnd_int(2), rnd_int(2) ? EVS_DTYPE_I32 : EVS_DTYPE_I64, 1 + rnd_int(12));
    int n_in = op == EVS_OP_N ? a.k : a.m, n_out = op == EVS_OP_N ? a.m : a.k;
    double *ev = random_events(EVS_DTYPE_BOOL, (size_t)n_in), *y0 = random_values(t, (size_t)n_out, 0);
    double alpha = rnd_int(2) ? 1.0 : -0.5, beta = rnd_int(2) ? 0.0 : 0.5;
    Arr events = arr_new(EVS_DTYPE_BOOL, 1, n_in, 1, ev);
    evs_dense *indices, *count;
    spike_list_of(&events, &indices, &count);
    Arr y = arr_new(t, 1, n_out, 1, y0), y2 = arr_new(t, 1, n_out, 1, y0);
    char what[96];
    snprintf(what, sizeof what, "spmv spikes %s %dx%d", op == EVS_OP_N ? "N" : "T", a.m, a.k);
    OK(evs_spmv(st, op, EVS_INPUT_EVENTS, alpha, a.h, events.d, beta, y.d));
    evs_status s = evs_spmv_spikes(st, op, alpha, a.h, indices, count, beta, y2.d);
    int halves = !is_cpu && (t == EVS_DTYPE_F16 || t == EVS_DTYPE_BF16);
    if (halves && (op == EVS_OP_T || s == EVS_ERROR_NOT_SUPPORTED)) {
        CHECK(s == EVS_ERROR_NOT_SUPPORTED, "%s: %s", what, evs_status_string(s));
    } else {
        CHECK(s == EVS_SUCCESS, "%s: %s", what, evs_last_error());
        compare_arrays(what, t, &y, &y2, (size_t)n_out);
    }
    /* dense: W n_out x n_in for N, n_in x n_out for T */
    double *w = random_values(t, (size_t)n_in * n_out, 5);
    Arr W = op == EVS_OP_N ? arr_new(t, 2, n_out, n_in, w) : arr_new(t, 2, n_in, n_out, w);
    Arr c = arr_new(t, 1, n_out, 1, y0), c2 = arr_new(t, 1, n_out, 1, y0);
    snprintf(what, sizeof what, "dense mv spikes %s %dx%d", op == EVS_OP_N ? "N" : "T", n_out, n_in);
    OK(evs_dense_mv(st, op, EVS_INPUT_EVENTS, alpha, W.d, events.d, beta, c.d));
    OK(evs_dense_mv_spikes(st, op, alpha, W.d, indices, count, beta, c2.d));
    compare_arrays(what, t, &c, &c2, (size_t)n_out);
    arr_free(&events), arr_free(&y), arr_free(&y2), arr_free(&W), arr_free(&c), arr_free(&c2);
    OK(evs_dense_destroy(indices));
    OK(evs_dense_destroy(count));
    csr_free(&a);
    free(ev), free(y0), free(w);
}

/* The four plasticity rules on a spike list against the same rule on the event vector it was
 * compacted from, each on its own copy of the weights: the results are the same. */
static void test_spike_list_plasticity(evs_dtype t, int post) {
    Csr a = csr_random(t, 0, EVS_DTYPE_I64, 1 + rnd_int(9));
    evs_csr *copy = NULL;
    void *wb = pack(t, a.w, (size_t)a.nnz);
    OK(evs_csr_create(ctx, a.m, a.k, a.nnz, EVS_DTYPE_I64, a.indptr, a.indices, t, wb, 0, &copy));
    int spike_len = post ? a.k : a.m, trace_len = post ? a.m : a.k;
    double *ev = random_events(EVS_DTYPE_BOOL, (size_t)spike_len), *trace = random_values(t, (size_t)trace_len, 10);
    Arr events = arr_new(EVS_DTYPE_BOOL, 1, spike_len, 1, ev), tr = arr_new(t, 1, trace_len, 1, trace);
    evs_dense *indices, *count, *w1, *w2;
    spike_list_of(&events, &indices, &count);
    if (post) {
        OK(evs_csr_plasticity_post(st, a.h, events.d, tr.d, -0.5, 0.5));
        OK(evs_csr_plasticity_post_spikes(st, copy, indices, count, tr.d, -0.5, 0.5));
    } else {
        OK(evs_csr_plasticity_pre(st, a.h, events.d, tr.d, -0.5, 0.5));
        OK(evs_csr_plasticity_pre_spikes(st, copy, indices, count, tr.d, -0.5, 0.5));
    }
    OK(evs_csr_weights(a.h, &w1));
    OK(evs_csr_weights(copy, &w2));
    Arr r1 = {w1, NULL, NULL, t, 1, a.nnz, 1, 1}, r2 = {w2, NULL, NULL, t, 1, a.nnz, 1, 1};
    compare_arrays(post ? "csr plasticity post spikes" : "csr plasticity pre spikes", t, &r1, &r2, (size_t)a.nnz);
    arr_free(&r1), arr_free(&r2);
    /* dense W: m x k */
    double *w = random_values(t, (size_t)a.m * a.k, 0);
    Arr W1 = arr_new(t, 2, a.m, a.k, w), W2 = arr_new(t, 2, a.m, a.k, w);
    if (post) {
        OK(evs_dense_plasticity_post(st, W1.d, events.d, tr.d, -INFINITY, 0.5));
        OK(evs_dense_plasticity_post_spikes(st, W2.d, indices, count, tr.d, -INFINITY, 0.5));
    } else {
        OK(evs_dense_plasticity_pre(st, W1.d, events.d, tr.d, -INFINITY, 0.5));
        OK(evs_dense_plasticity_pre_spikes(st, W2.d, indices, count, tr.d, -INFINITY, 0.5));
    }
    compare_arrays(post ? "dense plasticity post spikes" : "dense plasticity pre spikes", t, &W1, &W2,
                   (size_t)a.m * a.k);
    arr_check_pad(&W2, "dense plasticity spikes");
    arr_free(&W1), arr_free(&W2), arr_free(&events), arr_free(&tr);
    OK(evs_dense_destroy(indices));
    OK(evs_dense_destroy(count));
    OK(evs_csr_destroy(copy));
    csr_free(&a);
    free(wb), free(ev), free(trace), free(w);
}

/* Every error path of the spike-list entry points; a rejected call changes nothing. */
static void test_spike_list_errors(void) {
    int32_t ip[4] = {0, 2, 2, 4}, ix[4] = {1, 0, 2, 1};
    float w[4] = {1, 2, 3, 4};
    evs_csr *a = NULL;
    OK(evs_csr_create(ctx, 3, 4, 4, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, w, 0, &a)); /* 3 x 4 */
    const int32_t listed[3] = {2, 0, 2}, one = 1, two = 2, too_many = 4, negative = -1, bad_index[2] = {1, 3};
    evs_dense *idx, *cnt, *cnt_two, *cnt4, *cnt_neg, *bad_idx, *cnt2, *idx2d, *f32v, *y3, *y4, *W, *t3, *t4, *foreign;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 3, &idx));
    OK(evs_dense_copy_from_host(st, idx, listed, 3));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt));
    OK(evs_dense_copy_from_host(st, cnt, &one, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt_two));
    OK(evs_dense_copy_from_host(st, cnt_two, &two, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt4));
    OK(evs_dense_copy_from_host(st, cnt4, &too_many, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt_neg));
    OK(evs_dense_copy_from_host(st, cnt_neg, &negative, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 2, &bad_idx)); /* 3 is out of range for 3 rows */
    OK(evs_dense_copy_from_host(st, bad_idx, bad_index, 2));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 2, &cnt2));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_I32, 3, 1, &idx2d));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &f32v));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &y3));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &y4));
    OK(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, 3, 4, &W));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 3, &t3));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, 4, &t4));
    evs_context *other = NULL;
    OK(evs_context_create(EVS_DEVICE_CPU, 0, &other));
    OK(evs_dense_create_vector(other, EVS_DTYPE_I32, 3, &foreign));
    OK(evs_dense_fill(st, y4, 5));
    OK(evs_dense_fill(st, y3, 5));
    /* an output over the same memory as the indices */
    int32_t shared_host[8] = {0};
    evs_dense *keep = NULL, *ov_idx = NULL, *ov_y = NULL;
    void *shared = wrappable(shared_host, sizeof shared_host, &keep);
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_I32, 4, shared, &ov_idx));
    OK(evs_dense_wrap_vector(ctx, EVS_DTYPE_F32, 4, (int32_t *)shared + 2, &ov_y));

    /* spmv T: the list indexes A's 3 rows, y has 4 elements */
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv_spikes(NULL, EVS_OP_T, 1, a, idx, cnt, 0, y4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv_spikes(st, EVS_OP_T, 1, NULL, idx, cnt, 0, y4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv_spikes(st, EVS_OP_T, 1, a, NULL, cnt, 0, y4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, NULL, 0, y4));
    FAILS(EVS_ERROR_NULL_POINTER, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt, 0, NULL));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_spmv_spikes(st, 5, 1, a, idx, cnt, 0, y4));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_spmv_spikes(st, EVS_OP_T, 1, a, (evs_dense *)a, cnt, 0, y4));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, f32v, cnt, 0, y4));
    CHECK(strstr(evs_last_error(), "spike indices") != NULL, "message names the indices: %s", evs_last_error());
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, t3, 0, y4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx2d, cnt, 0, y4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt2, 0, y4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_spmv_spikes(st, EVS_OP_N, 1, a, idx, cnt, 0, y4));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_spmv_spikes(st, EVS_OP_T, 1, a, foreign, cnt, 0, y4));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv_spikes(st, EVS_OP_T, 1, a, ov_idx, cnt, 0, ov_y));
    if (is_cpu) {
        /* the CPU checks the list itself; a GPU skips bad indices and clamps the count */
        FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt4, 0, y4));
        CHECK(strstr(evs_last_error(), "spike count = 4") != NULL, "count message: %s", evs_last_error());
        FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt_neg, 0, y4));
        FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv_spikes(st, EVS_OP_T, 1, a, bad_idx, cnt_two, 0, y4));
        FAILS(EVS_ERROR_INVALID_VALUE, evs_spmv_spikes(st, EVS_OP_T, 1, a, bad_idx, cnt4, 0, y4));
        CHECK(strstr(evs_last_error(), "spike") != NULL, "list message: %s", evs_last_error());
    }
    expect_untouched(y4, 4, "spmv spikes");
    OK(evs_spmv_spikes(st, EVS_OP_T, 1, a, idx, cnt, 0, y4));
    OK(evs_spmv_spikes(st, EVS_OP_N, 1, a, idx, cnt, 1, y3)); /* the list indexes A's 4 columns */

    /* dense mv: W 3 x 4 */
    OK(evs_dense_fill(st, y3, 5));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv_spikes(st, EVS_OP_N, 1, NULL, idx, cnt, 0, y3));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_mv_spikes(st, EVS_OP_N, 1, W, idx, NULL, 0, y3));
    FAILS(EVS_ERROR_INVALID_ENUM, evs_dense_mv_spikes(st, -1, 1, W, idx, cnt, 0, y3));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mv_spikes(st, EVS_OP_N, 1, W, idx, cnt, 0, y4));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_mv_spikes(st, EVS_OP_N, 1, y4, idx, cnt, 0, y3));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_mv_spikes(st, EVS_OP_N, 1, W, f32v, cnt, 0, y3));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_dense_mv_spikes(st, EVS_OP_N, 1, W, idx, foreign, 0, y3));
    if (is_cpu) FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_mv_spikes(st, EVS_OP_T, 1, W, bad_idx, cnt_two, 0, y4));
    expect_untouched(y3, 3, "dense mv spikes");
    OK(evs_dense_mv_spikes(st, EVS_OP_N, 1, W, idx, cnt, 0, y3));
    OK(evs_dense_mv_spikes(st, EVS_OP_T, 1, W, idx, cnt, 0, y4));

    /* plasticity: pre lists index A's (W's) 3 rows with a trace over 4 columns; post the reverse */
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_pre_spikes(st, a, NULL, cnt, t4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_csr_plasticity_post_spikes(st, a, idx, cnt, NULL, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_csr_plasticity_pre_spikes(st, a, f32v, cnt, t4, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_pre_spikes(st, a, idx, cnt, t3, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_csr_plasticity_post_spikes(st, a, idx, cnt2, t3, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_post_spikes(st, a, idx, cnt, t3, 1, -1));
    FAILS(EVS_ERROR_CONTEXT_MISMATCH, evs_csr_plasticity_post_spikes(st, a, foreign, cnt, t3, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_pre_spikes(st, NULL, idx, cnt, t4, -1, 1));
    FAILS(EVS_ERROR_NULL_POINTER, evs_dense_plasticity_post_spikes(st, W, idx, NULL, t3, -1, 1));
    FAILS(EVS_ERROR_DTYPE_MISMATCH, evs_dense_plasticity_pre_spikes(st, W, idx, f32v, t4, -1, 1));
    FAILS(EVS_ERROR_SHAPE_MISMATCH, evs_dense_plasticity_post_spikes(st, W, idx, cnt, t4, -1, 1));
    FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_plasticity_pre_spikes(st, W, idx, cnt, t4, NAN, 1));
    FAILS(EVS_ERROR_INVALID_HANDLE, evs_dense_plasticity_post_spikes(st, W, idx, (evs_dense *)st, t3, -1, 1));
    if (is_cpu) {
        FAILS(EVS_ERROR_INVALID_VALUE, evs_csr_plasticity_pre_spikes(st, a, bad_idx, cnt_two, t4, -1, 1));
        FAILS(EVS_ERROR_INVALID_VALUE, evs_dense_plasticity_post_spikes(st, W, idx, cnt_neg, t3, -1, 1));
    }
    {
        float now[4] = {0};
        evs_dense *wv = NULL;
        OK(evs_csr_weights(a, &wv));
        OK(evs_dense_copy_to_host(st, wv, now, 4));
        OK(evs_stream_synchronize(st));
        CHECK(memcmp(now, w, sizeof now) == 0, "rejected spike-list plasticity calls changed the weights");
        OK(evs_dense_destroy(wv));
    }
    OK(evs_csr_plasticity_pre_spikes(st, a, idx, cnt, t4, -1, 1));
    OK(evs_csr_plasticity_post_spikes(st, a, idx, cnt, t3, -1, 1));
    OK(evs_dense_plasticity_pre_spikes(st, W, idx, cnt, t4, -1, 1));
    OK(evs_dense_plasticity_post_spikes(st, W, idx, cnt, t3, -1, 1));
    OK(evs_stream_synchronize(st));

    evs_dense *all[] = {idx, cnt, cnt_two, cnt4, cnt_neg, bad_idx, cnt2, idx2d, f32v, y3, y4, W, t3, t4, foreign, ov_idx, ov_y, keep};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) OK(evs_dense_destroy(all[i]));
    OK(evs_csr_destroy(a));
    OK(evs_context_destroy(other));
}

/* The plan a spike list runs (evs_last_plan) and forced plans that cannot take a list. */
static void test_spike_list_plans(void) {
    Csr a = csr_random(EVS_DTYPE_F32, 0, EVS_DTYPE_I32, 6);
    const int32_t first = 0, one = 1;
    evs_dense *idx, *cnt, *ym, *yk;
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &idx));
    OK(evs_dense_copy_from_host(st, idx, &first, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_I32, 1, &cnt));
    OK(evs_dense_copy_from_host(st, cnt, &one, 1));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, a.m, &ym));
    OK(evs_dense_create_vector(ctx, EVS_DTYPE_F32, a.k, &yk));
    static const struct {
        const char *force, *gpu, *cpu; /* the plan that runs, or NULL: EVS_ERROR_NOT_SUPPORTED */
        evs_op op;
    } cases[] = {
        {"spmm_t:auto", "spmm_t:row_warp_scatter", "spmm_t:scatter", EVS_OP_T},
        {"spmm_n:auto", "spmm_n:csc_scatter", "spmm_n:csc_scatter", EVS_OP_N},
        {"spmm_t:reference", NULL, "spmm_t:reference", EVS_OP_T},
        {"spmm_t:csc_gather", NULL, NULL, EVS_OP_T},
        {"spmm_n:warp_per_row", NULL, NULL, EVS_OP_N},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *want = is_cpu ? cases[c].cpu : cases[c].gpu;
        OK(evs_context_set_algorithm(ctx, cases[c].force));
        evs_dense *y = cases[c].op == EVS_OP_N ? ym : yk;
        evs_status got = evs_spmv_spikes(st, cases[c].op, 1, a.h, idx, cnt, 0, y);
        if (want) {
            CHECK(got == EVS_SUCCESS && strcmp(evs_last_plan(), want) == 0, "forced %s: %s, plan %s, expected %s",
                  cases[c].force, evs_status_string(got), evs_last_plan(), want);
        } else {
            CHECK(got == EVS_ERROR_NOT_SUPPORTED, "forced %s: %s", cases[c].force, evs_status_string(got));
        }
        OK(evs_context_set_algorithm(ctx, cases[c].op == EVS_OP_N ? "spmm_n:auto" : "spmm_t:auto"));
    }
    OK(evs_stream_synchronize(st));
    evs_dense *all[] = {idx, cnt, ym, yk};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) OK(evs_dense_destroy(all[i]));
    csr_free(&a);
}

static void test_spike_lists(void) {
    test_spike_list_errors();
    test_spike_list_plans();
    for (int r = 0; r < rounds; r++)
        for (int ti = 0; ti < 4; ti++)
            for (int k = 0; k <= 1; k++) {
                test_spike_list_products(FLOAT_DTYPES[ti], k ? EVS_OP_T : EVS_OP_N);
                test_spike_list_plasticity(FLOAT_DTYPES[ti], k);
            }
}

/* Many threads share one context, each with its own stream (SPEC §2). */
#include <pthread.h>
static void *thread_body(void *arg) {
    (void)arg;
    evs_stream *s = NULL;
    if (evs_stream_create(ctx, &s) != EVS_SUCCESS) return (void *)1;
    int32_t ip[3] = {0, 2, 3}, ix[3] = {0, 1, 1};
    evs_csr *a = NULL;
    evs_dense *x = NULL, *y = NULL;
    float xs[2] = {1, 2}, ys[2];
    int bad = evs_csr_create(ctx, 2, 2, 3, EVS_DTYPE_I32, ip, ix, EVS_DTYPE_F32, NULL, 2.0, &a) != EVS_SUCCESS;
    bad |= evs_dense_create_vector(ctx, EVS_DTYPE_F32, 2, &x) || evs_dense_create_vector(ctx, EVS_DTYPE_F32, 2, &y);
    bad |= evs_dense_copy_from_host(s, x, xs, 2) != EVS_SUCCESS;
    for (int i = 0; i < 50 && !bad; i++) {
        bad |= evs_spmv(s, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y) != EVS_SUCCESS;
        bad |= evs_dense_copy_to_host(s, y, ys, 2) != EVS_SUCCESS || evs_stream_synchronize(s) != EVS_SUCCESS;
        bad |= ys[0] != 6 || ys[1] != 4;
        bad |= evs_spmv(s, 7, EVS_INPUT_FLOAT, 1, a, x, 0, y) != EVS_ERROR_INVALID_ENUM; /* thread-local message */
        bad |= strstr(evs_last_error(), "op") == NULL;
    }
    evs_dense_destroy(x), evs_dense_destroy(y), evs_csr_destroy(a), evs_stream_destroy(s);
    return (void *)(intptr_t)bad;
}

static void test_threads(void) {
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, thread_body, NULL);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        CHECK(r == NULL, "thread %d saw a wrong result", i);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) rounds = 2;
    seed_rng();
    const char *dev = getenv("EVS_TEST_DEVICE");
    evs_device_kind kind = !dev || strcmp(dev, "cpu") == 0 ? EVS_DEVICE_CPU
                           : strcmp(dev, "cuda") == 0      ? EVS_DEVICE_CUDA
                                                           : EVS_DEVICE_DEFAULT;
    if (evs_context_create(kind, 0, &ctx) != EVS_SUCCESS) {
        fprintf(stderr, "cannot create the test context: %s\n", evs_last_error());
        return 1;
    }
    OK(evs_stream_create(ctx, &st));
    evs_device_kind got;
    OK(evs_context_device(ctx, &got, NULL));
    is_cpu = got == EVS_DEVICE_CPU;
    printf("device: %s\n", is_cpu ? "cpu" : "cuda");

    test_version_and_status();
    test_context_and_stream();
    test_dense_handles();
    test_csr_handles();
    test_bsr_handles();
    test_op_errors();
    test_spmm();
    test_plans();
    test_yw2y();
    test_dense_mm();
    test_plasticity();
    test_spike_lists();
    test_bsrmm();
    test_compact_and_csc();
    test_threads();

    OK(evs_stream_destroy(st));
    OK(evs_context_destroy(ctx));
    return report("test_c:");
}
