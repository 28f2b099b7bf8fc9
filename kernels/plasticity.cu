// Plasticity, in place on the weights (SPEC §3.4): spikes in x (an event vector, or a spike
// list: common.cuh), the trace in aux, the weights in `weights` (CSR) or y (dense). Each weight
// is touched by one thread (a neuron listed twice: by two, unordered), so no atomics.
#include "common.cuh"

// CSR pre: warps over the rows of active pre-neurons (a warp per row of an event vector, whose
// silent rows exit after one load; the grid's warps shared among the rows of a spike list),
// lanes over the row's entries.
template <class T, class In> __device__ void csr_pre(const Args& a) {
    typedef typename AccOf<T>::type A;
    const T* trace = (const T*)a.aux;
    Inputs<In>::template each_line<A>(a, a.m, [&](int64_t i, A, int64_t part, int64_t parts) {
        line_entries(row_start(a, i), row_start(a, i + 1), part, parts,
                     [&](int64_t p) { clip_add((T*)a.weights + p, A(to_f(trace[a.indices[p]])), a); });
    });
}

// CSR post: the same over the CSC mirror's columns of active post-neurons.
template <class T, class In> __device__ void csr_post(const Args& a) {
    typedef typename AccOf<T>::type A;
    const T* trace = (const T*)a.aux;
    Inputs<In>::template each_line<A>(a, a.k, [&](int64_t c, A, int64_t part, int64_t parts) {
        line_entries(a.colptr[c], a.colptr[c + 1], part, parts,
                     [&](int64_t p) { clip_add((T*)a.weights + a.perm[p], A(to_f(trace[a.rowind[p]])), a); });
    });
}

// Dense W (m x k, in y). Pre adds trace[c] to the rows of active pre-neurons: blocks cover 256
// columns, their y index strides over the candidate rows. Post adds trace[i] to the columns of
// active post-neurons: threads take candidate columns, their block's y index strides over rows.
template <class T, class In> __device__ void dense_pre(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= a.k) return;
    const A delta = A(to_f(((const T*)a.aux)[c]));
    Inputs<In>::template each<A>(a, blockIdx.y, gridDim.y, a.m, [&](int64_t i, A) {
        clip_add((T*)a.y + i * a.ldy + c, delta, a);
    });
}
template <class T, class In> __device__ void dense_post(const Args& a) {
    typedef typename AccOf<T>::type A;
    const T* trace = (const T*)a.aux;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    Inputs<In>::template each<A>(a, first, (int64_t)gridDim.x * blockDim.x, a.k, [&](int64_t c, A) {
        for (int64_t i = blockIdx.y; i < a.m; i += gridDim.y) clip_add((T*)a.y + i * a.ldy + c, A(to_f(trace[i])), a);
    });
}

#define PLASTICITY(T, TN, E, EN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) csr_pre_##TN##_##EN(Args a) { csr_pre<T, E>(a); }             \
    extern "C" __global__ void __launch_bounds__(256) csr_post_##TN##_##EN(Args a) { csr_post<T, E>(a); }           \
    extern "C" __global__ void __launch_bounds__(256) dense_pre_##TN##_##EN(Args a) { dense_pre<T, E>(a); }         \
    extern "C" __global__ void __launch_bounds__(256) dense_post_##TN##_##EN(Args a) { dense_post<T, E>(a); }
#define PLASTICITY_ALL(T, TN) EVS_FOR_SPIKE_INPUTS(PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
