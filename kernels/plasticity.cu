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

// An event vector in one launch, listed nowhere: warp task t is group t / parts of 32 candidate
// lines and part t % parts of each live one. A lane tests its own line (one coalesced load a
// group) and takes its part's bounds, a warp scan of the parts' lengths lays the task's entries
// end to end, and the lanes take PART_AT_ONCE of them each at a time (a shuffle search names
// each one's line): indices and traces, then weights, then stores. No barrier: where each block
// listed the vector first (windowed_lines), its warps waited ~2 µs on that listing (pre 5,000²
// x 500, 10 % live: bench/NOTES.md, "Plasticity by line parts"). A part is about PART_ENTRIES
// entries of a mean line, parts at most about the grid's warps over the groups. The host runs
// it on up to 8,192 lines and 2^31 - 1 entries (src/cuda/ops.rs, LINE_PARTS_MAX_LINES), so
// positions are ints. The walk of active_lines.cuh's each_part_entries, written out here: the
// shared form made ptxas spill in csr_post_even's rows walk (bench/NOTES.md, "N on events by line
// parts"). PART_ENTRIES and PART_AT_ONCE are that walk's.

template <class T, class In, class Walk, bool ACROSS = false> __device__ void line_parts(const Args& a) {
    typedef typename AccOf<T>::type A;
    T* w = (T*)a.weights;
    const T* trace = (const T*)a.aux;
    const A lo = A(a.lo), hi = A(a.hi);
    const int lines = (int)Walk::count(a), groups = (lines + 31) / 32, lane = lane_id(), warps = (int)warps_in_grid();
    // parts a power of two near the ideal, so that a task's parts cost shifts, not divisions; the
    // ideal in float arithmetic, since a 64-bit division in every thread cost as many
    // instructions as the walk itself (ncu: 1.79 M against the probe's 0.98 M)
    const float mean_line = __fdividef((float)a.nnz, (float)max(lines, 1));
    const int ideal = max(1, min((int)__fdividef((float)warps, (float)max(groups, 1)), (int)(mean_line / PART_ENTRIES)));
    const int shift = 31 - __clz(ideal + ideal / 2), parts = 1 << shift;
    // ACROSS (csr_post_even's resident grid of 512-thread blocks): tasks dealt block-minor (a
    // block's warp w takes tasks w * blocks + block, ...), so that where tasks are fewer than
    // warps every block holds its share of them (post 5,000² 1 %: 4.9 -> 3.2 graph µs). Else in
    // warp order: a group's parts on one SM share their loads of its bounds in L1 (pre 10 %:
    // 3.3 graph µs where dealt block-minor took 4.2).
    const int first_task = ACROSS ? (int)(threadIdx.x / 32 * gridDim.x + blockIdx.x) : (int)warp_id();
    for (int task = first_task; task < groups << shift; task += warps) {
        const int line = (task >> shift) * 32 + lane, part = task & (parts - 1);
        int first = 0, n = 0, b = 0, len = 0;
        int64_t unused;
        A v;
        if (line < lines) b = (int)Walk::begin(a, line), len = (int)Walk::end(a, line) - b;  // with the input: a trip less
        if (line < lines && InputLines<In>::live(a, line, unused, v)) {
            const int chunk = (len + parts - 1) >> shift, skip = min(len, part * chunk);
            first = b + skip;
            n = min(chunk, len - skip);
        }
        const int end = warp_inclusive_sum(n, lane), total = __shfl_sync(0xffffffffu, end, 31);
        for (int base = 0; base < total; base += 32 * PART_AT_ONCE) {
            // in phases, each one's loads issued together: positions, then entries and sources
            // (pre: its weights too, at known positions), then traces and weights, then stores.
            // A source's trace loaded beside its own search kept the next entry's loads a trip
            // behind (pre 5,000² 10 %: bench/NOTES.md, "Line parts in phases").
            int p[PART_AT_ONCE], at[PART_AT_ONCE], from[PART_AT_ONCE];
            A delta[PART_AT_ONCE], old[PART_AT_ONCE];
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++) {
                const int idx = base + 32 * u + lane;
                int src = 0;  // the first lane whose parts end past idx
#pragma unroll
                for (int step = 16; step; step >>= 1)
                    if (__shfl_sync(0xffffffffu, end, src + step - 1) <= idx) src += step;
                const int start = __shfl_sync(0xffffffffu, end - n, src), at0 = __shfl_sync(0xffffffffu, first, src);
                p[u] = idx < total ? at0 + idx - start : -1;
            }
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++)
                if (p[u] >= 0) at[u] = (int)Walk::entry(a, p[u]), from[u] = (int)Walk::source(a, p[u]);
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++)
                if (p[u] >= 0) old[u] = A(to_f(w[at[u]]));
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++)
                if (p[u] >= 0) delta[u] = A(to_f(trace[from[u]]));
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++)
                if (p[u] >= 0) clip_put(w + at[u], old[u] + delta[u], lo, hi);
        }
    }
}

// Post on an event vector of up to POST_EVEN_COLUMNS neurons where analysis kept the run records
// (a.runs: every non-empty row has 32 entries or more, src/core/plan.rs `post_runs_kept`), in
// one launch of POST_EVEN_BLOCKS_PER_SM blocks an SM. Where a sample says many columns are live
// (POST_ROWS_SHARE_DIV, rows_pay) each block builds the live columns' mask in shared memory, a
// byte a column (16 events a thread; bool events copied as they lie, so that a lookup is one
// LDS.U8, not a word's load, shift and mask: -0.2 to -0.5 graph µs from 5 % live on,
// bench/NOTES.md, "The library's walk against the probe's"), and walks every entry in even
// shares (even_runs, even_runs4): a warp loads its runs' column indices and records in one trip,
// the live entries' weights and their rows' traces in a second, then stores, and each warp's
// weights are its runs' own lines. Else it walks the live columns by line parts, as on other
// event vectors. 5,000² x 500, H200 graph µs (bench/NOTES.md, "Plasticity by
// line parts", "Line parts in phases", "Post by rows: 16-bit columns"): 10 % live 10.1 -> 5.6
// against the columns, 40 % 32 -> 6.4.
#define POST_EVEN_THREADS 512
#define POST_EVEN_COLUMNS (POST_EVEN_THREADS * 16)  // a thread 16 bytes of the mask; src/core/plan.rs POST_EVEN_COLUMNS
#define POST_EVEN_RUNS 4
// Each block reads the whole event vector for its mask (5,000 columns: 5 KB), all blocks at once:
// 512-thread blocks read half the bytes of 256-thread ones (bench/probe_post_rows.cu `mask`:
// 5.8 -> 5.25 graph µs at 10 %). 40 registers with f32 (3 blocks, as 6 of 256): at 8 blocks of
// 256 (32) ptxas sank the run record's load into the live branch, a trip after the indices'
// (bench/NOTES.md, "Line parts in phases"); up to 64 with f64 weights or inputs (at 40 those spill).
// src/cuda/ops.rs POST_EVEN_BLOCKS_PER_SM.
#define POST_EVEN_BLOCKS_PER_SM(T, In) (sizeof(T) == 8 || sizeof(In) == 8 ? 2 : 3)
// The rows from k / 24 live columns on: line parts cost 4.2 at 2.5 % and 7.1 at 5 %, the rows 5.8
// at 5 % and more (8,000² x 100: 3.3 / 4.2 against 3.45), so they cross near 3.5 %.
#define POST_ROWS_SHARE_DIV 24

// cols16's top bit: the entry lies in its run's next row (run.y), else in its first (run.x);
// src/core/csr.rs POST_NEXT_ROW. The columns below it take 13 bits (POST_EVEN_COLUMNS).
#define POST_NEXT_ROW 0x8000

// Positions are ints: the host runs it on up to 2^31 - 257 entries (plan::post_runs_kept), so
// that a warp's last batch of runs, past nnz, stays in range. Runs from `first` on (even_runs4
// takes the ones before where it applies).
template <class T, class Live> __device__ void even_runs(const Args& a, Live live, int first = 0) {
    typedef typename AccOf<T>::type A;
    constexpr int R = POST_EVEN_RUNS;
    T* w = (T*)a.weights;
    const T* trace = (const T*)a.aux;
    const A lo = A(a.lo), hi = A(a.hi);
    const int lane = lane_id(), nnz = (int)a.nnz, runs = (nnz + 31) / 32, warps = (int)warps_in_grid();
    for (int run0 = first + (int)warp_id() * R; run0 < runs; run0 += warps * R) {
        int c[R];
        int2 run[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            const int p = (run0 + j) * 32 + lane;
            c[j] = p < nnz ? a.cols16[p] : -1;
            run[j] = run0 + j < runs ? a.runs[run0 + j] : make_int2(0, 0);
        }
        bool on[R];
        A v[R], delta[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            on[j] = c[j] >= 0 && live(c[j] & ~POST_NEXT_ROW);
            if (on[j]) {
                v[j] = A(to_f(w[(run0 + j) * 32 + lane]));
                delta[j] = A(to_f(trace[c[j] & POST_NEXT_ROW ? run[j].y : run[j].x]));
            }
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            if (on[j]) clip_put(w + (run0 + j) * 32 + lane, v[j] + delta[j], lo, hi);
    }
}

// even_runs for f32 weights 16-byte aligned: a lane takes 4 consecutive entries of a warp's 128
// (one 8-byte load of their 16-bit column indices with the run's record, one of their weights
// where any is live with the traces of the run's two rows, one store): about a third of the
// instructions of the one-entry form; the clip in two NaN-passing min / max (clip_nan). Returns
// the runs it leaves (past the last whole 128) to even_runs.
template <class Live> __device__ int even_runs4(const Args& a, Live live) {
    float* w = (float*)a.weights;
    const float* trace = (const float*)a.aux;
    const float lo = (float)a.lo, hi = (float)a.hi;
    const int lane = lane_id(), blocks = (int)(a.nnz / 128), warps = (int)warps_in_grid();
    for (int b = (int)warp_id(); b < blocks; b += warps) {
        const ushort4 c = *(const ushort4*)(a.cols16 + b * 128 + 4 * lane);  // 8 bytes, not 16: fewer L2 bytes
        const int2 run = a.runs[b * 4 + lane / 8];
        // the traces named here, before the test, keep the record's load beside the indices'
        const float t0 = trace[run.x], t1 = trace[run.y];
        const int cs[4] = {c.x, c.y, c.z, c.w};
        unsigned on = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) on |= live(cs[j] & ~POST_NEXT_ROW) << j;
        if (!on) continue;
        float4* at = (float4*)(w + b * 128 + 4 * lane);
        const float4 v = *at;
        float vs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (on >> j & 1) vs[j] = clip_nan(vs[j] + (cs[j] & POST_NEXT_ROW ? t1 : t0), lo, hi);
        *at = make_float4(vs[0], vs[1], vs[2], vs[3]);  // the silent ones unchanged: only this lane owns them
    }
    return blocks * 4;
}

// Contiguous, aligned bool events into a block's mask as they lie (no byte past k is written or
// read): thread t the 16 at 16t where they are whole, the last, short stretch the first thread
// of the next warp where the block has one, so that no warp's lanes diverge on it (the short
// stretch's loads then waited for its warp's 16-byte ones, a trip: 0.25 graph µs at 5,000
// columns, bench/NOTES.md "The tail of an event vector").
__device__ void copy_bool_events(const u8* x, int k, u8* live) {
    const int whole = k / 16, tail = min((whole + 31) / 32 * 32, POST_EVEN_THREADS - 1), t = threadIdx.x;
    if (t < whole) ((uint4*)live)[t] = *(const uint4*)(x + 16 * t);
    else if (t == tail && k % 16) ((uint4*)live)[whole] = head_bytes(x + 16 * whole, k % 16);
}

// Whether to walk the rows: every warp counts the same sample of the event vector (16 events a
// lane, spread over it: 512 of them where k is larger; 8 a lane where the vector is strided or
// unaligned) and compares, so the choice agrees across the grid with no barrier, and the line
// parts branch pays nothing for it but one load.
template <class In> __device__ bool rows_pay(const Args& a) {
    auto on = [&](In v) { return value<float>(v, a.events) != 0.f; };
    const In* x = (const In*)a.x;
    const int64_t stride = max((int64_t)16, a.k / 32 / 16 * 16), e0 = lane_id() * stride;
    int live = 0, seen = 0;
    if (vector16(x, a.ldx, e0, a.k)) {
        live = __popc(bits16_vector(x + e0, on)), seen = 16;
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (e0 + j < a.k) seen++, live += on(x[(e0 + j) * a.ldx]);
    }
    return __reduce_add_sync(0xffffffffu, live) * POST_ROWS_SHARE_DIV >= __reduce_add_sync(0xffffffffu, seen);
}

// The rows walk with live(c) telling whether column c is live.
template <class T, class Live> __device__ void post_rows(const Args& a, Live live) {
    int first = 0;
    if constexpr (std::is_same<T, float>::value)
        if ((uintptr_t)a.weights % 16 == 0) first = even_runs4(a, live);
    even_runs<T>(a, live, first);
}

template <class T, class In> __device__ void csr_post_even(const Args& a) {
    typedef typename AccOf<T>::type A;
    if (!rows_pay<In>(a)) return line_parts<T, In, CscWalk, /*ACROSS=*/true>(a);  // grid-uniform
    __shared__ __align__(16) u8 live[POST_EVEN_COLUMNS];
    auto on = [&](In v) { return value<A>(v, a.events) != A(0); };
    if (std::is_same<In, u8>::value && aligned16((const u8*)a.x, a.ldx, 0))
        copy_bool_events((const u8*)a.x, (int)a.k, live);
    else
        ((uint4*)live)[threadIdx.x] = live_bytes16((const In*)a.x, a.ldx, 16 * threadIdx.x, a.k, on);
    __syncthreads();
    post_rows<T>(a, [&](int c) { return live[c] != 0; });
}

// CSR pre (CsrWalk) or post (CscWalk): a spike list a warp per listed line, an event vector by
// line parts (src/cuda/ops.rs lists a long one first and runs the list form).
template <class T, class In, class Walk> __device__ void csr_plasticity(const Args& a) {
    if constexpr (std::is_same<In, SpikeList>::value) warp_per_line<In, Walk, AddTrace<T, Walk>>(a);
    else line_parts<T, In, Walk>(a);
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

#define CSR_PLASTICITY(T, TN, E, EN)                                                                                  \
    EVS_WEIGHTS_KERNEL(csr_pre_##TN##_##EN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T)), (csr_plasticity<T, E, CsrWalk>)) \
    EVS_WEIGHTS_KERNEL(csr_post_##TN##_##EN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T)), (csr_plasticity<T, E, CscWalk>))
#define CSR_POST_EVEN(T, TN, E, EN) EVS_WEIGHTS_KERNEL(csr_post_even_##TN##_##EN, (POST_EVEN_THREADS, POST_EVEN_BLOCKS_PER_SM(T, E)), (csr_post_even<T, E>))
#define DENSE_PLASTICITY(T, TN, E, EN)                                                 \
    EVS_KERNEL(dense_pre_##TN##_##EN, (PLASTICITY_THREADS), (dense_pre<T, E>))         \
    EVS_KERNEL(dense_post_##TN##_##EN, (PLASTICITY_THREADS), (dense_post<T, E>))
#define PLASTICITY_ALL(T, TN)                    \
    EVS_FOR_SPIKE_INPUTS(CSR_PLASTICITY, T, TN)  \
    EVS_FOR_INPUTS(CSR_POST_EVEN, T, TN)         \
    EVS_FOR_SPIKE_INPUTS(DENSE_PLASTICITY, T, TN)
EVS_FOR_FLOATS(PLASTICITY_ALL)
