// Plasticity, in place on the weights (SPEC §3.4): spikes in x (an event vector, or a spike
// list: common.cuh), the trace in aux, the weights in `weights` (CSR) or y (dense). Each weight
// is touched by one thread (a neuron listed twice: by two, unordered), so no atomics.
#include "active_lines.cuh"

// CSR pre and post (warp_per_line): w = clip(w + trace) for the entries of the active lines,
// pre along the rows of active pre-neurons (w_p += trace[indices[p]]), post along the CSC
// mirror's columns of active post-neurons (w_perm[p] += trace[rowind[p]]).
template <class T, class Walk> struct AddTrace {
    typedef typename AccOf<T>::type Acc;
    struct Entry {
        int64_t weight;
        Acc delta;
    };
    __device__ Entry load(const Args& a, int64_t p) {
        return {Walk::entry(a, p), Acc(to_f(((const T*)a.aux)[Walk::source(a, p)]))};
    }
    __device__ void apply(const Args& a, const Entry& e, Acc) { clip_add((T*)a.weights + e.weight, e.delta, a); }
};

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
    extern "C" __global__ void __launch_bounds__(256) csr_pre_##TN##_##EN(Args a) {                                 \
        warp_per_line<E, CsrWalk, AddTrace<T, CsrWalk>>(a);                                                         \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) csr_post_##TN##_##EN(Args a) {                                \
        warp_per_line<E, CscWalk, AddTrace<T, CscWalk>>(a);                                                         \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) dense_pre_##TN##_##EN(Args a) { dense_pre<T, E>(a); }         \
    extern "C" __global__ void __launch_bounds__(256) dense_post_##TN##_##EN(Args a) { dense_post<T, E>(a); }
#define PLASTICITY_ALL(T, TN) EVS_FOR_SPIKE_INPUTS(PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
