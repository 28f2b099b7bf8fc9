/* Host overhead of one evsparse call: the mean wall time of 10,000 back-to-back evs_spmv calls
 * on a 64-row matrix on a CUDA context (no synchronisation between calls), printed in µs.
 * Built and run by the GPU check (.ci/gpu-check). */
#define _POSIX_C_SOURCE 199309L
#include "bench_util.h"

int main(void) {
    enum { N = 64, PER_ROW = 4, CALLS = 10000 };
    int32_t indptr[N + 1], indices[N * PER_ROW];
    for (int i = 0; i <= N; i++) indptr[i] = i * PER_ROW;
    for (int j = 0; j < N * PER_ROW; j++) indices[j] = (j * 7) % N;
    evs_context *ctx;
    evs_stream *st;
    evs_csr *a;
    evs_dense *x, *y;
    EVS(evs_context_create(EVS_DEVICE_CUDA, 0, &ctx));
    EVS(evs_stream_create(ctx, &st));
    EVS(evs_csr_create(ctx, N, N, N * PER_ROW, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, NULL, 1.0, &a));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &x));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &y));
    for (int i = 0; i < 100; i++) EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y));
    EVS(evs_stream_synchronize(st));
    double t0 = now_s();
    for (int i = 0; i < CALLS; i++) EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y));
    double t1 = now_s();
    EVS(evs_stream_synchronize(st));
    double t2 = now_s();
    printf("host overhead: %.2f us per evs_spmv call from C (%d calls; %.2f us per call including the final sync)\n",
           (t1 - t0) * 1e6 / CALLS, CALLS, (t2 - t0) * 1e6 / CALLS);
    evs_dense_destroy(x);
    evs_dense_destroy(y);
    evs_csr_destroy(a);
    evs_stream_destroy(st);
    evs_context_destroy(ctx);
    return 0;
}
