// Plasticity, in place on the weights (SPEC §3.4): spikes in x as a spike list (common.cuh; an
// event vector is listed first, but for pre on few neurons: src/cuda/ops.rs), the trace in aux,
// the weights in `weights` (CSR) or y (dense). Each weight is touched by one thread (a neuron
// listed twice: by two, unordered), so no atomics.
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

// Dense W (m x k, in y), the live neurons in a spike list (an event vector is listed by a
// first launch), read where it lies (broadcast loads, cached). Pre adds trace[c] to the listed
// rows, a thread per column of the block's 256 and the block's y index taking every
// gridDim.y-th listed row (each row's stretch of W coalesced); post adds trace[i] to the listed
// columns of the block's DENSE_POST_ROWS rows, a thread per (row, listed column) pair.
#define DENSE_POST_ROWS 32
template <class T> __device__ void dense_pre(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= a.k) return;
    const A delta = A(to_f(((const T*)a.aux)[c]));
    const int count = (int)listed(a);
#pragma unroll 4  // four rows' updates in flight
    for (int t = blockIdx.y; t < count; t += gridDim.y) {
        const int64_t r = listed_at(a, t, a.m);
        if (r >= 0) clip_add((T*)a.y + r * a.ldy + c, delta, a);
    }
}
template <class T> __device__ void dense_post(const Args& a) {
    typedef typename AccOf<T>::type A;
    const T* trace = (const T*)a.aux;
    const int64_t i0 = (int64_t)blockIdx.x * DENSE_POST_ROWS;
    const int rows = (int)min((int64_t)DENSE_POST_ROWS, a.m - i0), count = (int)listed(a);
    for (int q = threadIdx.x; q < rows * count; q += blockDim.x) {
        const int64_t i = i0 + q / count, c = listed_at(a, q % count, a.k);
        if (c >= 0) clip_add((T*)a.y + i * a.ldy + c, A(to_f(trace[i])), a);
    }
}

// Post and the dense rules read spike lists only: an event vector is listed first; pre reads
// an event vector of few neurons directly (src/cuda/ops.rs, csr_plasticity).
#define CSR_PRE(T, TN, E, EN) \
    EVS_WEIGHTS_KERNEL(csr_pre_##TN##_##EN, (256), (warp_per_line<E, CsrWalk, AddTrace<T, CsrWalk>>))
#define PLASTICITY_ALL(T, TN)                                                                        \
    EVS_FOR_SPIKE_INPUTS(CSR_PRE, T, TN)                                                             \
    EVS_WEIGHTS_KERNEL(csr_post_##TN##_i32, (256), (warp_per_line<SpikeList, CscWalk, AddTrace<T, CscWalk>>)) \
    EVS_KERNEL(dense_pre_##TN##_i32, (256), dense_pre<T>)                                            \
    EVS_KERNEL(dense_post_##TN##_i32, (256), dense_post<T>)
EVS_FOR_FLOATS(PLASTICITY_ALL)
