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

// The grid's warps share `count` listed lines (line t is line_at(t), its input value_at(line)):
// warp w takes line w / parts, part w % parts of its entries.
template <class Walk, class Work, class LineAt, class ValueAt>
__device__ void share_lines(const Args& a, Work& work, int count, LineAt line_at, ValueAt value_at) {
    const unsigned warps = (unsigned)warps_in_grid();
    const unsigned parts = count > 0 && warps > (unsigned)count ? warps / count : 1;
    for (unsigned w = (unsigned)warp_id(); w < count * parts; w += warps) {
        const int64_t line = line_at(w / parts);
        const typename Work::Acc v = value_at(line);
        line_entries(Walk::begin(a, line), Walk::end(a, line), w % parts, parts,
                     [&](int64_t p) { work.apply(a, work.load(a, p), v); });
    }
}

// An event vector in one launch: every block lists the whole vector itself, a window of
// LINES_THREADS * WINDOW_RUN neurons at a time (each_window), and the grid's warps share each
// window's live lines as they share a spike list's (warp w: line w / parts, part w % parts of
// its entries). No listing launch before, but each window costs every block a listing round,
// so the host runs it on one window at most (src/cuda/ops.rs, WINDOWED_MAX_NEURONS).
template <class In, class Walk, class Work> __device__ void windowed_lines(const Args& a) {
    typedef typename Work::Acc A;
    __shared__ __align__(16) unsigned short window[LINES_THREADS * WINDOW_RUN];
    Work work;
    each_window<LINES_THREADS, A, In>(a, 0, Walk::count(a), window, [&](int count, auto line_at, auto value_at) {
        share_lines<Walk>(a, work, count, line_at, value_at);
    });
}

// Post on an event vector of up to POST_EVEN_COLUMNS neurons where analysis kept the run records
// (a.runs: every non-empty row has 32 entries or more, src/core/plan.rs `post_runs_kept`), in
// one launch of 8 blocks an SM. Each block builds the live columns' mask (a word a thread) and
// counts it in one scan. With many live (POST_ROWS_SHARE_DIV) it walks every entry in even
// shares (even_runs): a warp loads POST_EVEN_RUNS runs' column indices and records in one trip,
// the live entries' weights and their rows' traces in a second, then stores, and each warp's
// weights are its runs' own lines. Else it lists the live columns from the mask and the grid's
// warps share them through the CSC mirror, as windowed_lines does. The choice is the count's, on
// the device. 5,000² x 500 (bench/probe_post_rows.cu, bench/NOTES.md "Post by rows"): the
// column walk 8.6 graph µs at 10 % live and 3.8 at 2.5 %, a row walk 6.2 and 5.9.
#define POST_EVEN_THREADS 256
#define POST_EVEN_COLUMNS (POST_EVEN_THREADS * 32)  // src/core/plan.rs POST_EVEN_COLUMNS
#define POST_EVEN_RUNS 4
// 32 registers; f64 inputs 48 (at 6 blocks they spilled; f64 weights too keep 8 bytes)
#define POST_EVEN_BLOCKS_PER_SM(In) (sizeof(In) == 8 ? 5 : 8)
#define POST_ROWS_SHARE_DIV 16  // the rows at k / 16 live columns or more

template <class T> __device__ void even_runs(const Args& a, const unsigned* live) {
    typedef typename AccOf<T>::type A;
    constexpr int R = POST_EVEN_RUNS;
    T* w = (T*)a.weights;
    const T* trace = (const T*)a.aux;
    const int lane = lane_id();
    const int64_t runs = (a.nnz + 31) / 32, warps = warps_in_grid();
    for (int64_t run0 = warp_id() * R; run0 < runs; run0 += warps * R) {
        int c[R];
        int4 run[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            const int64_t p = (run0 + j) * 32 + lane;
            c[j] = p < a.nnz ? a.indices[p] : -1;
            run[j] = run0 + j < runs ? a.runs[run0 + j] : make_int4(0, 32, 0, 0);
        }
        bool on[R];
        A v[R], delta[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            on[j] = c[j] >= 0 && (live[c[j] >> 5] >> (c[j] & 31) & 1);
            if (on[j]) {
                v[j] = A(to_f(w[(run0 + j) * 32 + lane]));
                delta[j] = A(to_f(trace[lane < run[j].y ? run[j].x : run[j].z]));
            }
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            if (on[j]) clip_put(w + (run0 + j) * 32 + lane, v[j] + delta[j], a);
    }
}

template <class T, class In> __device__ void csr_post_even(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ unsigned live[POST_EVEN_THREADS];
    __shared__ unsigned short listed[POST_EVEN_COLUMNS / POST_ROWS_SHARE_DIV];
    __shared__ int warp_sums[POST_EVEN_THREADS / 32];
    const int t = threadIdx.x;
    auto on = [&](In v) { return value<A>(v, a.events) != A(0); };
    const In* x = (const In*)a.x;
    const unsigned word = bits16(x, a.ldx, 32 * t, a.k, on) | bits16(x, a.ldx, 32 * t + 16, a.k, on) << 16;
    live[t] = word;
    int count;
    int at = block_exclusive_sum_in<POST_EVEN_THREADS>(__popc(word), &count, warp_sums);  // its barrier publishes live
    if ((int64_t)count * POST_ROWS_SHARE_DIV >= a.k) {  // block-uniform
        even_runs<T>(a, live);
        return;
    }
    for (unsigned b = word; b; b &= b - 1) listed[at++] = (unsigned short)(32 * t + __ffs(b) - 1);
    __syncthreads();
    AddTrace<T, CscWalk> work;
    share_lines<CscWalk>(a, work, count, [&](int i) { return (int64_t)listed[i]; }, [](int64_t) { return A(1); });
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
#define CSR_POST_EVEN(T, TN, E, EN) EVS_WEIGHTS_KERNEL(csr_post_even_##TN##_##EN, (POST_EVEN_THREADS, POST_EVEN_BLOCKS_PER_SM(E)), (csr_post_even<T, E>))
#define DENSE_PLASTICITY(T, TN, E, EN)                                                 \
    EVS_KERNEL(dense_pre_##TN##_##EN, (PLASTICITY_THREADS), (dense_pre<T, E>))         \
    EVS_KERNEL(dense_post_##TN##_##EN, (PLASTICITY_THREADS), (dense_post<T, E>))
#define PLASTICITY_ALL(T, TN)                    \
    EVS_FOR_SPIKE_INPUTS(CSR_PLASTICITY, T, TN)  \
    EVS_FOR_INPUTS(CSR_POST_EVEN, T, TN)         \
    EVS_FOR_SPIKE_INPUTS(DENSE_PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
