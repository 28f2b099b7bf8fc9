/* CPU timing of the reference spmm of issue #2: A = 10000 x 10000 with 200 entries per row
 * (uniform random columns, heterogeneous f32 weights), B = 10000 x 128 f32 (dense random).
 * Prints the median of 11 runs after one warm-up, for N and T, on a CPU context with
 * EVS_NUM_THREADS threads (default: all cores). The GPU harness is bench/ (issue #3). */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include "bench_util.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    enum { M = 10000, K = 10000, PER_ROW = 200, N = 128, RUNS = 11 };
    const long long nnz = (long long)M * PER_ROW;
    int32_t *indptr = malloc((M + 1) * sizeof *indptr), *indices = malloc(nnz * sizeof *indices);
    float *w = malloc(nnz * sizeof *w), *b = malloc((size_t)K * N * sizeof *b);
    srand(1);
    for (int i = 0; i <= M; i++) indptr[i] = i * PER_ROW;
    for (long long j = 0; j < nnz; j++) indices[j] = rand() % K, w[j] = (float)rand() / RAND_MAX;
    for (long long i = 0; i < (long long)K * N; i++) b[i] = (float)rand() / RAND_MAX;

    evs_context *ctx;
    evs_stream *st;
    evs_csr *a;
    evs_dense *B, *C;
    EVS(evs_context_create(EVS_DEVICE_CPU, 0, &ctx));
    EVS(evs_stream_create(ctx, &st));
    EVS(evs_csr_create(ctx, M, K, nnz, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, w, 0, &a));
    EVS(evs_csr_analyse(st, a));
    EVS(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, K, N, &B));
    EVS(evs_dense_create_matrix(ctx, EVS_DTYPE_F32, M, N, &C));
    EVS(evs_dense_copy_from_host(st, B, b, (long long)K * N));

    const char *threads = getenv("EVS_NUM_THREADS");
    printf("evsparse %s CPU spmm: A %d x %d, %d per row (nnz %lld), B %d x %d f32, threads %s\n", evs_version(), M, K,
           PER_ROW, nnz, K, N, threads ? threads : "all cores");
    for (evs_op op = EVS_OP_N; op <= EVS_OP_T; op++) {
        double t[RUNS];
        EVS(evs_spmm(st, op, EVS_INPUT_FLOAT, 1.0, a, B, 0.0, C)); /* warm-up */
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            EVS(evs_spmm(st, op, EVS_INPUT_FLOAT, 1.0, a, B, 0.0, C));
            EVS(evs_stream_synchronize(st));
            t[r] = now_s() - t0;
        }
        qsort(t, RUNS, sizeof t[0], cmp);
        printf("spmm %c: median %.1f ms (min %.1f, max %.1f) over %d runs, %.2f GFLOP/s\n", op == EVS_OP_N ? 'N' : 'T',
               t[RUNS / 2] * 1e3, t[0] * 1e3, t[RUNS - 1] * 1e3, RUNS, 2.0 * nnz * N / t[RUNS / 2] * 1e-9);
    }
    EVS(evs_dense_destroy(B));
    EVS(evs_dense_destroy(C));
    EVS(evs_csr_destroy(a));
    EVS(evs_stream_destroy(st));
    EVS(evs_context_destroy(ctx));
    free(indptr), free(indices), free(w), free(b);
    return 0;
}
