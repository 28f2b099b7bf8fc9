// Plasticity, in place on the weights (SPEC §3.4): spikes in x as a spike list (common.cuh) or
// an event vector (listed in each block; for CSR a long one is listed first: src/cuda/ops.rs),
// the trace in aux, the weights in `weights` (CSR) or y (dense). Each weight is touched by one
// thread (a neuron listed twice: by two, unordered), so no atomics.
#include "active_lines.cuh"

// CSR pre and post: w = clip(w + trace) for the entries of the active lines,
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

// An event vector in one launch: every block lists the whole vector itself, a window of
// LINES_THREADS * WINDOW_RUN neurons at a time (each_window), and the grid's warps share each
// window's live lines as they share a spike list's (warp w: line w / parts, part w % parts of
// its entries). No listing launch before, but each window costs every block a listing round,
// so the host runs it on one window at most (src/cuda/ops.rs, WINDOWED_MAX_NEURONS).
template <class In, class Walk, class Work> __device__ void windowed_lines(const Args& a) {
    typedef typename Work::Acc A;
    __shared__ __align__(16) unsigned short window[LINES_THREADS * WINDOW_RUN];
    Work work;
    const unsigned warps = (unsigned)warps_in_grid();
    each_window<LINES_THREADS, A, In>(a, 0, Walk::count(a), window, [&](int count, auto line_at, auto value_at) {
        const unsigned parts = count > 0 && warps > (unsigned)count ? warps / count : 1;
        for (unsigned w = (unsigned)warp_id(); w < count * parts; w += warps) {
            const int64_t line = line_at(w / parts);
            const A v = value_at(line);
            line_entries(Walk::begin(a, line), Walk::end(a, line), w % parts, parts,
                         [&](int64_t p) { work.apply(a, work.load(a, p), v); });
        }
    });
}

// CSR pre (CsrWalk) or post (CscWalk): a spike list a warp per listed line, an event vector
// windowed (src/cuda/ops.rs lists a long one first and runs the list form).
template <class T, class In, class Walk> __device__ void csr_plasticity(const Args& a) {
    if constexpr (std::is_same<In, SpikeList>::value) warp_per_line<In, Walk, AddTrace<T, Walk>>(a);
    else windowed_lines<In, Walk, AddTrace<T, Walk>>(a);
}

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

#define CSR_PLASTICITY(T, TN, E, EN)                                                                  \
    EVS_WEIGHTS_KERNEL(csr_pre_##TN##_##EN, (LINES_THREADS), (csr_plasticity<T, E, CsrWalk>))          \
    EVS_WEIGHTS_KERNEL(csr_post_##TN##_##EN, (LINES_THREADS), (csr_plasticity<T, E, CscWalk>))
#define DENSE_PLASTICITY(T, TN, E, EN)                                                 \
    EVS_KERNEL(dense_pre_##TN##_##EN, (PLASTICITY_THREADS), (dense_pre<T, E>))         \
    EVS_KERNEL(dense_post_##TN##_##EN, (PLASTICITY_THREADS), (dense_post<T, E>))
#define PLASTICITY_ALL(T, TN)                    \
    EVS_FOR_SPIKE_INPUTS(CSR_PLASTICITY, T, TN)  \
    EVS_FOR_SPIKE_INPUTS(DENSE_PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
