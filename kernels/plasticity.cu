// Plasticity, in place on the weights (SPEC §3.4): spikes in x, the trace in aux, the weights
// in `weights` (CSR) or y (dense). Each weight is touched by one thread, so no atomics.
#include "common.cuh"

// CSR pre: one warp per row; rows whose pre-neuron is silent exit after one load.
template <class T, class E> __device__ void csr_pre(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t i = warp_id();
    if (i >= a.m || !active(((const E*)a.x)[i])) return;
    const T* trace = (const T*)a.aux;
    for (int64_t p = row_start(a, i) + lane_id(); p < row_start(a, i + 1); p += 32)
        clip_add((T*)a.weights + p, A(to_f(trace[a.indices[p]])), a);
}

// CSR post: one warp per column of the CSC mirror; only active post-neurons do work.
template <class T, class E> __device__ void csr_post(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t c = warp_id();
    if (c >= a.k || !active(((const E*)a.x)[c])) return;
    const T* trace = (const T*)a.aux;
    for (int64_t p = a.colptr[c] + lane_id(); p < a.colptr[c + 1]; p += 32)
        clip_add((T*)a.weights + a.perm[p], A(to_f(trace[a.rowind[p]])), a);
}

// Dense W (m x k, in y): pre adds trace[c] to row i when spike i is active; post adds trace[i]
// to column c when spike c is active. Blocks cover 256 columns of a stride of rows.
template <class T, class E, bool POST> __device__ void dense_rule(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= a.k) return;
    const E* spikes = (const E*)a.x;
    const T* trace = (const T*)a.aux;
    const bool col_active = POST && active(spikes[c]);
    if (POST && !col_active) return;
    for (int64_t i = blockIdx.y; i < a.m; i += gridDim.y) {
        if (POST) clip_add((T*)a.y + i * a.ldy + c, A(to_f(trace[i])), a);
        else if (active(spikes[i])) clip_add((T*)a.y + i * a.ldy + c, A(to_f(trace[c])), a);
    }
}

#define PLASTICITY(T, TN, E, EN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) csr_pre_##TN##_##EN(Args a) { csr_pre<T, E>(a); }             \
    extern "C" __global__ void __launch_bounds__(256) csr_post_##TN##_##EN(Args a) { csr_post<T, E>(a); }           \
    extern "C" __global__ void __launch_bounds__(256) dense_pre_##TN##_##EN(Args a) { dense_rule<T, E, false>(a); } \
    extern "C" __global__ void __launch_bounds__(256) dense_post_##TN##_##EN(Args a) { dense_rule<T, E, true>(a); }
#define PLASTICITY_ALL(T, TN) EVS_FOR_INPUTS(PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
