// yw2y: one value per stored entry, out[b, j] = w_j * y[b, row(j)] (N) or y[b, indices[j]] (T),
// with per-batch weights replacing w_j when given (SPEC §3.2).
#include "common.cuh"

// The weight of entry j in batch b: the per-batch weights (aux) if given, else the CSR's.
template <class T, class A> __device__ __forceinline__ A batch_weight(const Args& a, int64_t b, int64_t j) {
    return a.aux ? A(to_f(((const T*)a.aux)[b * a.ldaux + j])) : weight<T, A>(a, j);
}

// N: one warp per (batch, CSR row); y[b, i] is loaded once and the warp writes the row's entries.
template <class T> __device__ void yw2y_n(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t w = warp_id();
    if (w >= a.m * a.batches) return;
    const int64_t b = w / a.m, i = w % a.m;
    const A yv = A(to_f(((const T*)a.x)[b * a.ldx + i]));
    for (int64_t p = row_start(a, i) + lane_id(); p < row_start(a, i + 1); p += 32)
        blend((T*)a.y + b * a.ldy + p, batch_weight<T, A>(a, b, p) * yv, a);
}

// T: one thread per (batch, entry).
template <class T> __device__ void yw2y_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t total = a.nnz * a.batches;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = e / a.nnz, p = e % a.nnz;
        const A yv = A(to_f(((const T*)a.x)[b * a.ldx + a.indices[p]]));
        blend((T*)a.y + b * a.ldy + p, batch_weight<T, A>(a, b, p) * yv, a);
    }
}

#define YW2Y(T, TN)                                                                        \
    extern "C" __global__ void __launch_bounds__(256) yw2y_n_##TN(Args a) { yw2y_n<T>(a); } \
    extern "C" __global__ void __launch_bounds__(256) yw2y_t_##TN(Args a) { yw2y_t<T>(a); }
EVS_FOR_FLOATS(YW2Y)
