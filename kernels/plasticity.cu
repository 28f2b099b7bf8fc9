// Plasticity, in place on the weights (SPEC §3.4): spikes in x as a spike list (common.cuh; for
// CSR an event vector is listed first, but for pre on few neurons: src/cuda/ops.rs; the dense
// rules list it in each block) or an event vector, the trace in aux,
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

// Dense W (m x k, in y), in one launch: the live neurons in a spike list, read where it lies
// (broadcast loads, cached), or an event vector that each block lists itself a window at a time
// (`each_window`). Pre adds trace[c] to the live rows, a thread per column of the block's
// PLASTICITY_THREADS, the block's y index taking every gridDim.y-th listed row of a spike list
// or listing its own slice of an event vector's rows (a few hundred at 1 %: one load a thread,
// not the whole vector per block); each row's stretch of W coalesced. Post adds trace[i] to the
// live columns of the block's DENSE_POST_ROWS rows, a thread per (row, live column) pair.
#define PLASTICITY_THREADS 256
#define PLASTICITY_WINDOW (PLASTICITY_THREADS * WINDOW_RUN)
#define DENSE_POST_ROWS 32
template <class T, class In> __device__ void dense_pre(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr bool LIST = std::is_same<In, SpikeList>::value;
    __shared__ __align__(16) unsigned short window[PLASTICITY_WINDOW];
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const A delta = c < a.k ? A(to_f(((const T*)a.aux)[c])) : A(0);
    const int64_t slice = LIST ? a.m : (a.m + gridDim.y * WINDOW_RUN - 1) / (gridDim.y * WINDOW_RUN) * WINDOW_RUN;
    const int64_t begin = LIST ? 0 : blockIdx.y * slice;
    const int first = LIST ? blockIdx.y : 0, step = LIST ? gridDim.y : 1;
    each_window<PLASTICITY_THREADS, A, In>(a, begin, min(a.m, begin + slice), window, [&](int count, auto row, auto) {
        if (c >= a.k) return;
        // unrolled, though each store still orders the next row's load after it: eight rows
        // loaded before any was written measured no faster (bench/NOTES.md, "Dense plasticity
        // and mv: floors measured")
#pragma unroll 4
        for (int t = first; t < count; t += step) {
            const int64_t r = row(t);
            if (r >= 0) clip_add((T*)a.y + r * a.ldy + c, delta, a);
        }
    });
}
template <class T, class In> __device__ void dense_post(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ __align__(16) unsigned short window[PLASTICITY_WINDOW];
    const T* trace = (const T*)a.aux;
    const int64_t i0 = (int64_t)blockIdx.x * DENSE_POST_ROWS;
    const int rows = (int)min((int64_t)DENSE_POST_ROWS, a.m - i0);
    each_window<PLASTICITY_THREADS, A, In>(a, 0, a.k, window, [&](int count, auto column, auto) {
        for (int q = threadIdx.x; q < rows * count; q += blockDim.x) {
            const int64_t i = i0 + q / count, c = column(q % count);
            if (c >= 0) clip_add((T*)a.y + i * a.ldy + c, A(to_f(trace[i])), a);
        }
    });
}

// CSR post reads spike lists only: an event vector is listed first; CSR pre reads an event
// vector of few neurons directly (src/cuda/ops.rs, csr_plasticity); the dense rules read every
// kind.
#define CSR_PRE(T, TN, E, EN) \
    EVS_WEIGHTS_KERNEL(csr_pre_##TN##_##EN, (256), (warp_per_line<E, CsrWalk, AddTrace<T, CsrWalk>>))
#define DENSE_PLASTICITY(T, TN, E, EN)                                                 \
    EVS_KERNEL(dense_pre_##TN##_##EN, (PLASTICITY_THREADS), (dense_pre<T, E>))         \
    EVS_KERNEL(dense_post_##TN##_##EN, (PLASTICITY_THREADS), (dense_post<T, E>))
#define PLASTICITY_ALL(T, TN)                                                                        \
    EVS_FOR_SPIKE_INPUTS(CSR_PRE, T, TN)                                                             \
    EVS_WEIGHTS_KERNEL(csr_post_##TN##_i32, (256), (warp_per_line<SpikeList, CscWalk, AddTrace<T, CscWalk>>)) \
    EVS_FOR_SPIKE_INPUTS(DENSE_PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
