// spmv / spmm on CSR, N and T, float or event inputs (SPEC §3.1). One kernel per algorithm of
// src/core/plan.rs:
//   N  thread_per_row   a thread per row
//      warp_per_row     a warp per row (and 64 columns)
//      length_classes   rows binned by length at analysis: a thread, warp or block per row
//   T  csc_gather       a warp per output column, along the cached CSC mirror
//      scatter          (f32/f64) the CSR rows whose input is non-zero add into the output
//                       with atomics after a scaling pass for beta. n = 1: a warp ballots 32
//                       rows and walks the live ones (active_lines.cuh); n > 1: a warp per
//                       row and 32 columns.
//      row_warp_scatter (f32/f64, n = 1) a warp per row (active_lines.cuh, warp_per_line), for
//                       long rows, and a warp per listed row of a spike list (on a small y
//                       scaled by scale_opener: its after-scale form, loading meanwhile)
//      output_slices    (n = 1, events and spike lists, sorted rows) a block per slice of the
//                       output, summed in shared memory and blended once
//   N on spike lists: csc_scatter (f32/f64), a warp per listed column along the CSC mirror
//                       (after-scale form as for T); output_slices for f16/bf16
//   N on events: output_slices (n = 1, up to N_SLICE_INPUTS events) a block per slice of the
//                       output along the CSC mirror, in one launch
//   N and T on events, n > 1: event_bits, B's events packed to bits, then a warp per output
//                       line and 128 columns (64 where n <= 64), parts of it on alternate
//                       entries
//   N and T on floats, n > 1: nonzero_lists, B's rows listed as their nonzeros, then a warp
//                       per output line and 128 columns touching only those, or the gather
//                       where B is mostly nonzero (decided on the device)
#include "active_lines.cuh"

#include <type_traits>

// ---------------------------------------------------------------- shapes
// Launch shapes shared with src/cuda/ops.rs: 256-thread blocks of 8 warps; a warp covers 64
// columns of B and C (lane l owns columns 2l and 2l + 1, so loads and stores coalesce).
#define BLOCK_THREADS 256
#define BLOCK_WARPS 8
#define WARP_COLS 64

// One warp, one output element (n = 1): lanes stride over the entries, then a warp sum. A lane
// takes its next WARP_MV_BATCH entries at once: their indices' loads in flight together, then
// their inputs' (one entry at a time, each waited for two dependent loads in turn; 8 at once
// held more registers for rows of 80-200: bench/NOTES.md, "Batched loads in warp_mv").
#define WARP_MV_BATCH 4
// ONTO_SCALED: y was scaled by beta already (csc_events), so the sum adds onto it.
// LOADS_FIRST: line i's bounds and first batch of sources (the structure, which no kernel
// writes) are loaded before the wait for prior grids (enter_after_loads), which every warp of
// the kernel reaches, i past the lines too.
template <class T, class In, class Walk, bool ONTO_SCALED = false, bool LOADS_FIRST = false>
__device__ void warp_mv(const Args& a, int64_t i, bool line = true) {
    typedef typename AccOf<T>::type A;
    constexpr int BATCH = WARP_MV_BATCH;
    const int64_t end = line ? Walk::end(a, i) : 0;
    int64_t p0 = line ? Walk::begin(a, i) + lane_id() : 0;
    // positions past the line's end read its last entry again (no predicate to wait on), unused
    int64_t source[BATCH];
    auto sources_from = [&](int64_t p0) {
#pragma unroll
        for (int q = 0; q < BATCH; q++) source[q] = Walk::source(a, min(p0 + 32 * q, end - 1));
    };
    if (p0 < end) sources_from(p0);
    if (LOADS_FIRST) enter_after_loads();
    if (!line) return;
    A acc = 0;
    while (p0 < end) {
        A v[BATCH];
#pragma unroll
        for (int q = 0; q < BATCH; q++) v[q] = input<A>((const In*)a.x, source[q] * a.ldx, a.events);
#pragma unroll
        for (int q = 0; q < BATCH; q++)
            if (p0 + 32 * q < end && v[q] != A(0)) acc += weight<T, A>(a, Walk::entry(a, p0 + 32 * q)) * v[q];
        p0 += 32 * BATCH;
        if (p0 < end) sources_from(p0);
    }
    acc = warp_sum(acc);
    if (lane_id() != 0) return;
    T* slot = (T*)a.y + i * a.ldy;
    if (ONTO_SCALED) put(slot, A(a.alpha) * acc + A(to_f(*slot)));
    else blend(slot, acc, a);
}

// One thread, one output element (n = 1) or one row of outputs, walking the entries alone.
template <class T, class In> __device__ void thread_row(const Args& a, int64_t i) {
    typedef typename AccOf<T>::type A;
    const int64_t begin = row_start(a, i), end = row_start(a, i + 1);
    for (int64_t c = 0; c < a.n; c++) {
        A acc = 0;
        for (int64_t p = begin; p < end; p++) {
            A v = input<A>((const In*)a.x, a.indices[p] * a.ldx + c, a.events);
            if (v != A(0)) acc += weight<T, A>(a, p) * v;
        }
        blend((T*)a.y + i * a.ldy + c, acc, a);
    }
}

// A warp's share of entries [begin, end) over 64 columns: lane l owns columns c0 = tile + 2l
// and c0 + 1. Groups of 32 entries, group `first` and then every `stride`-th: the lanes fetch a
// group's row offsets into B and weights (one each, coalesced) and broadcast them by shuffles.
// What is the same for the whole warp is decided once, as template arguments: events or
// floats, and PAIRED (B's rows aligned for one vector load of two columns, n even). Lanes past
// column n read in-bounds columns and their sums are dropped (the stores test c < n), so the
// loop has no branch: 53 instructions per entry before, 12 now (SASS, bench/NOTES.md).
template <class T, class In, class Walk, bool EVENTS, bool PAIRED, class A>
__device__ void columns_of(const Args& a, int64_t begin, int64_t end, int first, int stride, int64_t c0, A& acc0,
                           A& acc1) {
    const int lane = lane_id();
    const int64_t last = a.n - 1, col0 = PAIRED ? (c0 < a.n ? c0 : 0) : min(c0, last);
    const uintptr_t x0 = (uintptr_t)((const In*)a.x + col0), x1 = (uintptr_t)((const In*)a.x + min(c0 + 1, last));
    for (int64_t base = begin + (int64_t)first * 32; base < end; base += (int64_t)stride * 32) {
        uintptr_t offset = 0;  // bytes from a column of B to that column in the entry's row
        A w = 0;
        if (base + lane < end) {
            offset = Walk::source(a, base + lane) * a.ldx * sizeof(In);
            w = weight<T, A>(a, Walk::entry(a, base + lane));
        }
        const int count = (int)min((int64_t)32, end - base);
        for (int e = 0; e < count; e++) {
            const uintptr_t row = __shfl_sync(0xffffffffu, (unsigned long long)offset, e);
            const A we = __shfl_sync(0xffffffffu, w, e);
            A v0, v1;
            if (PAIRED) {
                const Pair<In> pair = *(const Pair<In>*)(x0 + row);
                v0 = value<A>(pair.v[0], EVENTS), v1 = value<A>(pair.v[1], EVENTS);
            } else {
                v0 = value<A>(*(const In*)(x0 + row), EVENTS), v1 = value<A>(*(const In*)(x1 + row), EVENTS);
            }
            if (EVENTS) {  // an inactive event adds nothing, even to an infinite weight
                if (v0 != A(0)) acc0 += we;
                if (v1 != A(0)) acc1 += we;
            } else {
                acc0 += we * v0, acc1 += we * v1;
            }
        }
    }
}

template <class T, class In, class Walk, class A>
__device__ void warp_columns(const Args& a, int64_t begin, int64_t end, int first, int stride, int64_t c0, A& acc0,
                             A& acc1) {
    const bool paired = pairs_aligned<In>(a.x, a.ldx) && a.n % 2 == 0;
    if (sizeof(In) == 1 || a.events) {  // bool inputs are always events
        if (paired) columns_of<T, In, Walk, true, true>(a, begin, end, first, stride, c0, acc0, acc1);
        else columns_of<T, In, Walk, true, false>(a, begin, end, first, stride, c0, acc0, acc1);
    } else if constexpr (sizeof(In) > 1) {
        if (paired) columns_of<T, In, Walk, false, true>(a, begin, end, first, stride, c0, acc0, acc1);
        else columns_of<T, In, Walk, false, false>(a, begin, end, first, stride, c0, acc0, acc1);
    }
}

// One warp per (output row, 64 columns).
template <class T, class In, class Walk> __device__ void warp_mm(const Args& a, int64_t i) {
    typedef typename AccOf<T>::type A;
    const int64_t c0 = (int64_t)blockIdx.y * WARP_COLS + 2 * lane_id();
    A acc0 = 0, acc1 = 0;
    warp_columns<T, In, Walk>(a, Walk::begin(a, i), Walk::end(a, i), 0, 1, c0, acc0, acc1);
    if (c0 < a.n) blend((T*)a.y + i * a.ldy + c0, acc0, a);
    if (c0 + 1 < a.n) blend((T*)a.y + i * a.ldy + c0 + 1, acc1, a);
}

// The block's threads share entries [begin, end) (n = 1); warp sums, then the warps' sums
// through shared memory; thread 0 returns the total.
template <class T, class In, class A> __device__ A block_dot(const Args& a, int64_t begin, int64_t end) {
    __shared__ A part[BLOCK_WARPS];
    A acc = 0;
    for (int64_t p = begin + threadIdx.x; p < end; p += BLOCK_THREADS) {
        A v = input<A>((const In*)a.x, a.indices[p] * a.ldx, a.events);
        if (v != A(0)) acc += weight<T, A>(a, p) * v;
    }
    acc = warp_sum(acc);
    if (lane_id() == 0) part[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < BLOCK_WARPS; w++) acc += part[w];
    return acc;
}

// One block per long row (n = 1), storing through the BLAS blend.
template <class T, class In> __device__ void block_mv(const Args& a, int64_t i) {
    typedef typename AccOf<T>::type A;
    const A sum = block_dot<T, In, A>(a, row_start(a, i), row_start(a, i + 1));
    if (threadIdx.x == 0) blend((T*)a.y + i * a.ldy, sum, a);
}

// One block per chunk of a long row (n = 1), adding alpha * its sum with an atomic (see
// chunk_mm).
template <class T, class In> __device__ void chunk_mv(const Args& a, int64_t chunk) {
    typedef typename AccOf<T>::type A;
    const int64_t* piece = a.chunks + 3 * chunk;
    const A sum = block_dot<T, In, A>(a, piece[1], piece[2]);
    if (threadIdx.x == 0) atomicAdd((T*)a.y + piece[0] * a.ldy, A(a.alpha) * sum);
}

// The block's 8 warps share entries [begin, end) of row i over 64 columns; returns the sum for
// column tile lane `threadIdx.x` (threads 0..63), summed through shared memory.
template <class T, class In, class A> __device__ A block_columns(const Args& a, int64_t begin, int64_t end) {
    __shared__ A part[BLOCK_WARPS][WARP_COLS];
    const int warp = threadIdx.x / 32, lane = lane_id();
    A acc0 = 0, acc1 = 0;
    const int64_t c0 = (int64_t)blockIdx.y * WARP_COLS + 2 * lane;
    warp_columns<T, In, CsrWalk>(a, begin, end, warp, BLOCK_WARPS, c0, acc0, acc1);
    part[warp][2 * lane] = acc0;
    part[warp][2 * lane + 1] = acc1;
    __syncthreads();
    A sum = 0;
    if (threadIdx.x < WARP_COLS)
        for (int w = 0; w < BLOCK_WARPS; w++) sum += part[w][threadIdx.x];
    return sum;
}

// One block per (long row, 64 columns), storing through the BLAS blend.
template <class T, class In> __device__ void block_mm(const Args& a, int64_t i) {
    typedef typename AccOf<T>::type A;
    const A sum = block_columns<T, In, A>(a, row_start(a, i), row_start(a, i + 1));
    const int64_t c = (int64_t)blockIdx.y * WARP_COLS + threadIdx.x;
    if (threadIdx.x < WARP_COLS && c < a.n) blend((T*)a.y + i * a.ldy + c, sum, a);
}

// One block per (chunk of a long row, 64 columns), adding alpha * its sum into C with atomics;
// C's long rows were scaled by beta first (scale_long_rows). A chunk is (row, begin, end) in
// a.chunks, cut at analysis so that a long row spreads over many SMs (an SM's load
// throughput, shared by its blocks, bounds a block's gather).
template <class T, class In> __device__ void chunk_mm(const Args& a, int64_t chunk) {
    typedef typename AccOf<T>::type A;
    const int64_t* piece = a.chunks + 3 * chunk;
    const int64_t i = piece[0];
    const A sum = block_columns<T, In, A>(a, piece[1], piece[2]);
    const int64_t c = (int64_t)blockIdx.y * WARP_COLS + threadIdx.x;
    if (threadIdx.x < WARP_COLS && c < a.n) atomicAdd((T*)a.y + i * a.ldy + c, A(a.alpha) * sum);
}

// *slot = beta * *slot, rounded once; beta = 0 writes zero without reading the slot.
template <class T> __device__ __forceinline__ void scale_slot(T* slot, const Args& a) {
    typedef typename AccOf<T>::type A;
    put(slot, a.beta == 0.0 ? A(0) : A(a.beta) * A(to_f(*slot)));
}

// C[r, :] = beta * C[r, :] for the long rows r (the first pass of chunked length_classes).
template <class T> __device__ void scale_long_rows(const Args& a) {
    const int64_t r = a.order[a.class_rows[0] + a.class_rows[1] + blockIdx.y];
    const int64_t c = (int64_t)blockIdx.x * BLOCK_THREADS + threadIdx.x;
    if (c >= a.n) return;
    scale_slot((T*)a.y + r * a.ldy + c, a);
}

// ---------------------------------------------------------------- nonzero_lists' choice
// nonzero_lists (below) lists B's nonzeros, then runs the lists' product or the gather, chosen on
// the device from what the listing saw: list_nonzeros leaves a count of the nonzeros per block in
// a.out2 (a.lines of them), and every block of lists_mm (one wave) sums them and takes the same
// branch.
// The lists pay while at most 1/7 of B's entries are nonzero, 1/8 for f16 and bf16 (whose gather
// reads half the bytes) and with 33 to 64 columns, where the gather reads 256-byte rows. Past the
// share the call pays the listing before the gather (H200, 64 columns, f32 N at 12 %: lists 53.5
// graph µs, listing + gather 60.6, the gather alone 51.7), so the share errs towards the lists
// (bench/NOTES.md, "spmm lists: the share at 64 columns"). A block's threads all call it.
#define LISTS_NONZERO_SHARE 7
#define LISTS_NONZERO_SHARE_NARROW 8

// The nonzeros list_nonzeros saw, in every thread of the block.
__device__ int64_t nonzeros_listed(const Args& a) {
    __shared__ unsigned long long listed;
    if (threadIdx.x == 0) listed = 0;
    __syncthreads();
    int64_t mine = 0;
    for (int64_t b = threadIdx.x; b < a.lines; b += blockDim.x) mine += ((const int*)a.out2)[b];
    for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if (lane_id() == 0 && mine) atomicAdd(&listed, (unsigned long long)mine);
    __syncthreads();
    return (int64_t)listed;
}

template <class T> __device__ bool lists_pay(const Args& a, int64_t nonzeros, int64_t b_rows) {
    const bool narrow = sizeof(T) == 2 || (a.n > 32 && a.n <= 64);
    const int share = narrow ? LISTS_NONZERO_SHARE_NARROW : LISTS_NONZERO_SHARE;
    return nonzeros * share <= b_rows * a.n;
}

// The gathers below run as nonzero_lists' last launch too (a.out2 set), where they give way to
// the lists: lists_mm's first block leaves its choice after the counts, so that each block of
// the gather's grid (a warp per line) reads one word.
__device__ __forceinline__ bool lists_ran(const Args& a) { return a.out2 && ((const int*)a.out2)[a.lines]; }

// ---------------------------------------------------------------- spmm N variants
// warp_per_row: one warp per row (n = 1), or per row and 64 columns.
template <class T, class In> __device__ void spmv_n_warp(const Args& a) {
    const int64_t i = warp_id();
    warp_mv<T, In, CsrWalk, false, true>(a, i, i < a.m);
}
template <class T, class In> __device__ void spmm_n_warp(const Args& a) {
    if (lists_ran(a)) return;
    const int64_t i = (int64_t)blockIdx.x * BLOCK_WARPS + threadIdx.x / 32;
    if (i < a.m) warp_mm<T, In, CsrWalk>(a, i);  // whole warps only: the shuffles need every lane
}

// thread_per_row: one thread per row, for any n.
template <class T, class In> __device__ void spmm_n_thread(const Args& a) {
    const int64_t i = (int64_t)blockIdx.x * BLOCK_THREADS + threadIdx.x;
    if (i < a.m) thread_row<T, In>(a, i);
}

// f32 and f64 outputs take atomic adds at their own precision; f16/bf16 would lose the f32 sum.
template <class T> struct AtomicOut { static constexpr bool value = sizeof(T) >= 4; };

// length_classes: rows binned by length at analysis, listed in a.order as [thread class |
// warp class | block class] with a.class_rows[] rows each. The first blocks take the long
// rows, so the longest work starts first: a block per row for f16/bf16, a block per chunk of
// a row for f32/f64 (a.chunks, a.n_chunks; added with atomics). The next blocks take the warp
// class, eight rows per block, and n = 1 the thread class last, 256 rows per block; n > 1
// runs the thread class with the warp class.
template <class T, class In> __device__ void spmv_n_classes(const Args& a) {
    const int64_t n_thread = a.class_rows[0], n_warp = a.class_rows[1];
    const int64_t n_block = AtomicOut<T>::value ? a.n_chunks : a.class_rows[2];
    const int64_t warp_blocks = (n_warp + BLOCK_WARPS - 1) / BLOCK_WARPS;
    const int64_t b = blockIdx.x;
    if (b < n_block) {
        if constexpr (AtomicOut<T>::value) chunk_mv<T, In>(a, b);
        else block_mv<T, In>(a, a.order[n_thread + n_warp + b]);
    } else if (b < n_block + warp_blocks) {
        const int64_t r = (b - n_block) * BLOCK_WARPS + threadIdx.x / 32;
        if (r < n_warp) warp_mv<T, In, CsrWalk>(a, a.order[n_thread + r]);
    } else {
        const int64_t r = (b - n_block - warp_blocks) * BLOCK_THREADS + threadIdx.x;
        if (r < n_thread) thread_row<T, In>(a, a.order[r]);
    }
}
template <class T, class In> __device__ void spmm_n_classes(const Args& a) {
    const int64_t n_warp = a.class_rows[0] + a.class_rows[1];
    const int64_t long_blocks = AtomicOut<T>::value ? a.n_chunks : a.class_rows[2];
    const int64_t b = blockIdx.x;
    if (b < long_blocks) {
        if constexpr (AtomicOut<T>::value) chunk_mm<T, In>(a, b);
        else block_mm<T, In>(a, a.order[n_warp + b]);
    } else {
        const int64_t r = (b - long_blocks) * BLOCK_WARPS + threadIdx.x / 32;
        if (r < n_warp) warp_mm<T, In, CsrWalk>(a, a.order[r]);
    }
}

// T, csc_gather: one warp per output column (n = 1), or per column and 64 columns of C.
// The plain gathers (spmv_n_warp above too) load their structure first (EVS_KERNEL_LOADS_FIRST);
// the CSC copy's wait first, since they test the copy's flag, which plasticity writes.
template <class T, class In, bool LOADS_FIRST> __device__ void spmv_t_gather(const Args& a) {
    const int64_t c = warp_id();
    warp_mv<T, In, CscWalk, false, LOADS_FIRST>(a, c, c < a.k);
}
template <class T, class In> __device__ void spmm_t_gather(const Args& a) {
    if (lists_ran(a)) return;
    const int64_t c = (int64_t)blockIdx.x * BLOCK_WARPS + threadIdx.x / 32;
    if (c < a.k) warp_mm<T, In, CscWalk>(a, c);
}

// y = beta * y over m x n (beta = 0 writes zeros without reading y): the first pass of scatter.
template <class T> __device__ void scale(const Args& a) {
    const int64_t total = a.m * a.n;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x)
        scale_slot((T*)a.y + (a.n == 1 ? e * a.ldy : (e / a.n) * a.ldy + e % a.n), a);  // vectors skip the division
}
// The same, opening a scatter (the *_after_scale kernels below): the scatter launches at once
// and loads while y is scaled. Its grid is a block an SM (src/cuda/ops.rs, OPENER_BLOCKS_PER_SM),
// so a contiguous y to zero is written in 16-byte stores, a quarter of the stores and their
// index arithmetic (f32): spmv T on 400,000 events, whose warps reach their wait before the
// scaling ends, 5.0 -> 4.6 graph µs (bench/NOTES.md, "Three one-trip changes").
template <class T> __device__ void scale_opener(const Args& a) {
    let_dependents_launch();
    const bool contiguous = a.n == 1 ? a.ldy == 1 : a.ldy == a.n;
    if (a.beta != 0.0 || !contiguous || (uintptr_t)a.y % 16 != 0) return scale<T>(a);
    constexpr int PER_STORE = 16 / sizeof(T);
    const int64_t total = a.m * a.n, stores = total / PER_STORE, stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t q = first; q < stores; q += stride) ((uint4*)a.y)[q] = make_uint4(0, 0, 0, 0);
    for (int64_t e = stores * PER_STORE + first; e < total; e += stride) put((T*)a.y + e, 0.f);
}

// ---------------------------------------------------------------- event-driven spmv
// Entries of live lines add alpha * x[line] * w into the output along the walk: T along the
// CSR rows (y[indices[p]]), N on spike lists along the CSC mirror (y[rowind[p]]); y was scaled
// by beta before.
// AFTER_OPENER: launched right after the scaling in its call (scale_opener below), so a thread
// waits for it only before its first add, its loads of the list and the entries done meanwhile.
template <class T, class Walk, bool AFTER_OPENER = false> struct AddInto {
    typedef T Acc;
    struct Entry {
        int target;  // a row or column index: 32-bit arrays (a.indices, a.rowind)
        T w;
    };
    bool scaled = !AFTER_OPENER;
    __device__ Entry load(const Args& a, int64_t p) { return {(int)Walk::source(a, p), weight<T, T>(a, Walk::entry(a, p))}; }
    __device__ void apply(const Args& a, const Entry& e, T v) {
        if (!scaled) wait_for_prior_grids(), scaled = true;
        atomicAdd((T*)a.y + e.target * a.ldy, T(a.alpha) * v * e.w);
    }
};

// N on an event vector (csc_scatter, f32/f64), two launches. The census scales y by beta (as
// `scale`) and counts the active events, a count per block into a.out2. Then every block of
// csc_events (a warp per row) sums those a.lines counts and takes the same branch: where the
// active columns are few (under k / CSC_SCATTER_SHARE, so under that share of the entries for
// columns of equal length), its first a.n_chunks blocks walk the active columns' entries along
// the CSC mirror (common.cuh, each_line) and add alpha * w into y with atomics, as on a spike
// list; else the warps gather rows as warp_per_row does, onto the scaled y (one wave of blocks,
// its warps striding over the rows: every block sums the counts first). The count never
// reaches the host.
#define CENSUS_THREADS 256
#define CSC_SCATTER_SHARE 8

// A thread per element of y and of x where the grid covers them (at most CENSUS_BLOCKS_MAX
// blocks, src/cuda/ops.rs): one round of loads.
template <class T, class In> __device__ void census(const Args& a) {
    const int64_t stride = (int64_t)gridDim.x * CENSUS_THREADS, first = (int64_t)blockIdx.x * CENSUS_THREADS + threadIdx.x;
    if (a.beta != 1.0)
        for (int64_t i = first; i < a.m; i += stride) scale_slot((T*)a.y + i * a.ldy, a);
    int live = 0;
    for (int64_t e = first; e < a.k; e += stride) live += active(((const In*)a.x)[e * a.ldx]);
    int total;
    block_exclusive_sum<CENSUS_THREADS>(live, &total);
    if (threadIdx.x == 0) ((int*)a.out2)[blockIdx.x] = total;
}

template <class T, class In> __device__ void csc_events(const Args& a) {
    int counted = 0, live;
    for (int64_t b = threadIdx.x; b < a.lines; b += BLOCK_THREADS) counted += ((const int*)a.out2)[b];
    block_exclusive_sum<BLOCK_THREADS>(counted, &live);
    if ((int64_t)live * CSC_SCATTER_SHARE < a.k) {
        // the first a.n_chunks blocks share the columns (more only wait on their prologue)
        if (blockIdx.x >= a.n_chunks) return;
        Inputs<In>::template each_line<T>(a, a.k, [&](int64_t c, T v, int64_t part, int64_t parts) {
            line_entries(CscWalk::begin(a, c), CscWalk::end(a, c), part, parts, [&](int64_t p) {
                atomicAdd((T*)a.y + CscWalk::source(a, p) * a.ldy, T(a.alpha) * v * weight<T, T>(a, CscWalk::entry(a, p)));
            });
        }, a.n_chunks);
    } else {
        for (int64_t i = warp_id(); i < a.m; i += warps_in_grid()) warp_mv<T, In, CsrWalk, true>(a, i);
    }
}

// T with n columns, one warp per (CSR row, 32 columns); the warp skips rows with no live input.
template <class T, class In> __device__ void scatter_mm(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int64_t c = (int64_t)blockIdx.y * 32 + lane_id();
    if (r >= a.m) return;
    const A v = c < a.n ? input<A>((const In*)a.x, r * a.ldx + c, a.events) : A(0);
    if (!__any_sync(0xffffffffu, v != A(0))) return;
    const A scaled = A(a.alpha) * v;
    for (int64_t p = row_start(a, r); p < row_start(a, r + 1); p++)
        if (v != A(0)) atomicAdd((T*)a.y + (int64_t)a.indices[p] * a.ldy + c, scaled * weight<T, A>(a, p));
}

// ---------------------------------------------------------------- T on events: output slices
// output_slices (n = 1; event vectors and spike lists; rows sorted by column): block s owns the
// outputs [s SLICE_OUTPUTS, (s + 1) SLICE_OUTPUTS) and sums them in shared memory, reading only
// the entries of the live rows that fall in its slice, then blends its slice into y once: no
// global atomics, and no beta pass before. a.slice_offsets says where each row's entries of the
// slice begin (common.cuh). A block stages the segments of a window of live rows at a time (all 48 KB of static
// shared memory: 2,048 rows, 1,024 for f64's wider sums); SLICE_LANES lanes
// walk a segment, a lane group SLICE_ROWS_AT_ONCE segments with their loads in flight together.
// Homogeneous weights count hits in integers (native shared atomics: a float add in shared memory
// is a compare-and-swap loop) and multiply once, so their sums are the same every run. The live
// rows come from a spike list (SpikeRows), or from an event vector listed first by live_rows
// (BlockRows: no count to zero before, so no memset node). bench/probe_slices.cu and
// bench/NOTES.md, "Output slices", measure the shapes.
#define SLICE_THREADS 1024
#define SLICE_LANES 16
#define SLICE_ROWS_AT_ONCE 8

// Live rows a block stages at a time, beside its sums of type A.
template <class A> __host__ __device__ constexpr int slice_window() { return sizeof(A) == 8 ? 1024 : 2048; }

// What one entry adds to its output: a hit (homogeneous weights, counted) or its weight.
template <class T, class Acc> __device__ __forceinline__ Acc slice_term(const Args& a, int64_t p) {
    if constexpr (std::is_integral<Acc>::value) return 1u;
    else return weight<T, Acc>(a, p);
}
template <class A> __device__ __forceinline__ A slice_total(unsigned hits, const Args& a) { return A(hits) * A(a.homo); }
template <class A> __device__ __forceinline__ A slice_total(A sum, const Args&) { return sum; }

// The entries of the staged segments [0, rows) added into the slice's sums (outputs from c0).
// A round issues every lane's loads, decides from the positions alone whether any was due, and
// only then adds: this form ran the 500,000-neuron step 25 % faster than one deciding after the
// adds (bench/NOTES.md, "Output slices: the round's form").
template <class T, class Acc>
__device__ void add_segments(const Args& a, Acc* sums, const int64_t* begin, const unsigned* len, int rows, int64_t c0) {
    constexpr int GROUPS = SLICE_THREADS / SLICE_LANES, U = SLICE_ROWS_AT_ONCE / (sizeof(Acc) / 4);  // f64: 4, no spills
    const int group = threadIdx.x / SLICE_LANES, sub = threadIdx.x % SLICE_LANES;
    for (int j0 = group; j0 < rows; j0 += GROUPS * U) {
        int64_t p[U], end[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int j = j0 + u * GROUPS;
            p[u] = j < rows ? begin[j] + sub : 0;
            end[u] = j < rows ? begin[j] + len[j] : 0;
        }
        while (true) {
            int out[U];
            Acc term[U];
            bool any = false;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const bool on = p[u] < end[u];
                out[u] = on ? __ldcs(a.indices + p[u]) : -1;
                term[u] = on ? slice_term<T, Acc>(a, p[u]) : Acc(0);
                any |= on;
            }
            if (!any) break;
#pragma unroll
            for (int u = 0; u < U; u++)  // in the slice even if the structure changed
                if ((uint64_t)(out[u] - c0) < SLICE_OUTPUTS) atomicAdd(sums + (out[u] - c0), term[u]);
#pragma unroll
            for (int u = 0; u < U; u++) p[u] += SLICE_LANES;
        }
    }
}

// Where output_slices finds the live rows: count() (the whole block calls it), then row(g) for
// g < count, or -1 to skip. SpikeRows: a spike list. BlockRows: the lists of live_rows, a.lines
// of them, list b at a.x + b a.ldx with its length at a.spike_count[b], concatenated through
// their starts, summed in shared memory.
#define LIVE_LISTS_MAX 512
struct SpikeRows {
    __device__ int64_t count(const Args& a) { return listed(a); }
    __device__ int64_t row(const Args& a, int64_t g) { return listed_at(a, g, a.m); }
};
struct BlockRows {
    int start[LIVE_LISTS_MAX + 1];  // where each list begins in the concatenation, the total last
    __device__ int64_t count(const Args& a) {
        const int i = threadIdx.x;
        int total;
        const int before = block_exclusive_sum<SLICE_THREADS>(i < a.lines ? a.spike_count[i] : 0, &total);
        if (i <= a.lines) start[i] = before;
        __syncthreads();
        return total;
    }
    __device__ int64_t row(const Args& a, int64_t g) {
        int lo = 0, hi = (int)a.lines - 1;  // the last list that starts at or before g holds it
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (start[mid] <= g) lo = mid;
            else hi = mid - 1;
        }
        return ((const int*)a.x)[lo * a.ldx + g - start[lo]];
    }
};

template <class T, class Acc, class Rows>
__device__ void slice_sums(const Args& a, Rows& live, Acc* sums, int64_t* begin, unsigned* len) {
    constexpr int WINDOW = slice_window<typename AccOf<T>::type>();
    const int64_t s = blockIdx.x, c0 = s * SLICE_OUTPUTS, per_row = gridDim.x + 1;
    const unsigned* bounds = a.slice_offsets;
    for (int i = threadIdx.x; i < SLICE_OUTPUTS; i += SLICE_THREADS) sums[i] = Acc(0);
    const int64_t count = live.count(a);
    for (int64_t w0 = 0; w0 < count; w0 += WINDOW) {
        const int rows = (int)min((int64_t)WINDOW, count - w0);
        for (int t = threadIdx.x; t < rows; t += SLICE_THREADS) {
            const int64_t r = live.row(a, w0 + t);
            begin[t] = 0, len[t] = 0;
            if (r >= 0) {
                const unsigned* b = bounds + r * per_row + s;
                begin[t] = row_start(a, r) + b[0], len[t] = b[1] - b[0];
            }
        }
        __syncthreads();
        add_segments<T, Acc>(a, sums, begin, len, rows, c0);
        __syncthreads();  // the window is restaged next
    }
    __syncthreads();
    typedef typename AccOf<T>::type A;
    for (int64_t i = threadIdx.x; i < SLICE_OUTPUTS && c0 + i < a.k; i += SLICE_THREADS)
        blend((T*)a.y + (c0 + i) * a.ldy, slice_total<A>(sums[i], a), a);
}

template <class T, class Rows> __device__ void output_slices(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ __align__(8) unsigned char sums[SLICE_OUTPUTS * sizeof(A)];
    __shared__ int64_t begin[slice_window<A>()];
    __shared__ unsigned len[slice_window<A>()];
    __shared__ Rows live;
    if (a.weights) slice_sums<T, A>(a, live, (A*)sums, begin, len);
    else slice_sums<T, unsigned>(a, live, (unsigned*)sums, begin, len);
}

// ---------------------------------------------------------------- N on events: output slices
// N's output_slices (n = 1, event vectors of up to N_SLICE_INPUTS elements), one launch: every
// block lists the live columns itself (each_window, one window), so no census runs before it.
// Where they are few (under 1/N_SLICE_GATHER_SHARE), block s < slices sums the outputs
// [s w, (s + 1) w) (w = a.slice_width) in shared memory from the live columns' entries in that
// slice (the CSC mirror's rows are sorted; a.slice_offsets: per column, its entries' offset at
// each slice start from the column's start, its length last) and blends them once: no beta
// pass, no global atomics, any dtype. Else every warp of the grid gathers rows as warp_per_row
// does (a bitmask of the live columns in shared memory instead of x, without warp_mv's
// batched loads, ran 15-20 % slower).
#define N_SLICE_THREADS 512
#define N_SLICE_INPUTS (N_SLICE_THREADS * WINDOW_RUN)
#define N_SLICE_WIDTH_MAX 1024
#define N_SLICE_LANES 4          // lanes walking one column's segment (~2-10 entries at the plan's widths)
#define N_SLICE_GATHER_SHARE 32  // the rows are gathered from 1/32 of the columns live

// The outputs of slice s from the `count` live columns column(t), summed into `sums`.
template <class T, class Acc, class Column>
__device__ void add_column_segments(const Args& a, Acc* sums, int count, Column column, int64_t s, int64_t slices) {
    const int64_t width = a.slice_width, r0 = s * width;
    const int group = threadIdx.x / N_SLICE_LANES, sub = threadIdx.x % N_SLICE_LANES;
    for (int t = group; t < count; t += N_SLICE_THREADS / N_SLICE_LANES) {
        const int64_t c = column(t);
        if (c < 0) continue;  // a spike list's entry out of range
        const int64_t start = CscWalk::begin(a, c);
        const unsigned* at = a.slice_offsets + c * (slices + 1) + s;
        const int64_t end = start + at[1];
        for (int64_t p = start + at[0] + sub; p < end; p += N_SLICE_LANES) {
            const int64_t r = CscWalk::source(a, p) - r0;
            if ((uint64_t)r < (uint64_t)width) atomicAdd(sums + r, slice_term<T, Acc>(a, CscWalk::entry(a, p)));
        }
    }
}

template <class T, class In, class Acc>
__device__ void column_slices(const Args& raw, Acc* sums, unsigned short* window) {
    typedef typename AccOf<T>::type A;
    const Args a = in_csc_order(raw);
    const int64_t width = a.slice_width, slices = (a.m + width - 1) / width, s = blockIdx.x, r0 = s * width;
    for (int i = threadIdx.x; i < width; i += N_SLICE_THREADS) sums[i] = Acc(0);
    __syncthreads();  // each_window hands a spike list over without a barrier of its own
    // one window (a.k <= N_SLICE_INPUTS): count is every live column, the same in every block
    each_window<N_SLICE_THREADS, A, In>(a, 0, a.k, window, [&](int count, auto column, auto) {
        if constexpr (!std::is_same<In, SpikeList>::value) {  // a spike list has no x to gather
            if ((int64_t)count * N_SLICE_GATHER_SHARE >= a.k) {
                for (int64_t i = warp_id(); i < a.m; i += warps_in_grid()) warp_mv<T, In, CsrWalk>(raw, i);
                return;
            }
        }
        if (s >= slices) return;
        add_column_segments<T>(a, sums, count, column, s, slices);
        __syncthreads();
        for (int64_t i = threadIdx.x; i < width && r0 + i < a.m; i += N_SLICE_THREADS)
            blend((T*)a.y + (r0 + i) * a.ldy, slice_total<A>(sums[i], a), a);
    });
}

template <class T, class In> __device__ void n_output_slices(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ __align__(8) unsigned char sums[N_SLICE_WIDTH_MAX * sizeof(A)];
    __shared__ unsigned short window[N_SLICE_INPUTS];
    if (a.weights) column_slices<T, In, A>(a, (A*)sums, window);
    else column_slices<T, In, unsigned>(a, (unsigned*)sums, window);
}

// The live rows of an event vector (a.m of them, a.ldx apart) listed per block for BlockRows:
// block b lists rows [b a.n, (b + 1) a.n) in order at y + b a.n (common.cuh, list_active), and
// its count at out2[b]. Rows in order make the slices' walk faster than in ballot order: bench/NOTES.md.
template <class In> __device__ void live_rows(const Args& a) {
    const int64_t first = blockIdx.x * a.n, stop = min(a.m, first + a.n);
    const int64_t count = list_active<BLOCK_THREADS>((const In*)a.x, a.ldx, first, stop, (int*)a.y + first);
    if (threadIdx.x == 0) ((int*)a.out2)[blockIdx.x] = (int)count;
}

// ---------------------------------------------------------------- spmm on events
// B's events as bits: pack_events writes each row of B as BITS_WORDS 32-bit words per 128
// columns (bit b of word w: column 32w + b) into the stream's scratch (a.aux, a.ldaux words per
// row). Then bits_mm: a warp per (output line, 128 columns, or 64 where n <= 64). Each batch of
// 32 entries, lane e loads entry e's source, weight and 16 bytes of bits (32 loads in flight)
// into a shared stage; then the warp's halves (quarters where n <= 64) take alternate entries,
// lane l of a part reading byte l of the entry's bits (columns 8l .. 8l + 7) and adding the
// weight where a bit is set: 7.5 instructions per entry and 128 columns, no atomics, the same
// sum order every run (bench/NOTES.md, "spmm on events").
#define BITS_COLS 128
#define BITS_WORDS 4

// A warp per (row of B, 128 columns): lane l makes the nibble of columns 4l .. 4l + 3, and
// eight lanes OR theirs into a word. a.lines rows of B, a.n columns.
template <class In> __device__ void pack_events(const Args& a) {
    const int64_t tiles = a.ldaux / BITS_WORDS, w = warp_id();
    if (w >= a.lines * tiles) return;  // whole warps
    const int lane = lane_id();
    const int64_t row = w / tiles, c = (w % tiles) * BITS_COLS + 4 * lane;
    const In* x = (const In*)a.x + row * a.ldx;
    unsigned word = 0;
    for (int u = 0; u < 4; u++) word |= (unsigned)(c + u < a.n && active(x[c + u])) << (4 * (lane & 7) + u);
    for (int o = 1; o < 8; o <<= 1) word |= __shfl_xor_sync(0xffffffffu, word, o);
    if ((lane & 7) == 0) ((unsigned*)a.y)[row * a.ldaux + c / 32] = word;
}

// One batch of entries [base, base + count) of a line into the stage: lane e's source row's
// bits of this warp's 128 columns, and (hetero) its weight, returned; zero past the batch.
template <class T, class Walk, class A>
__device__ __forceinline__ A stage_batch(const Args& a, int64_t base, int count, uint4* stage) {
    const int lane = lane_id();
    A w = 0;
    uint4 bits = make_uint4(0, 0, 0, 0);
    if (lane < count) {
        const int64_t p = base + lane;
        if (a.weights) w = weight<T, A>(a, Walk::entry(a, p));
        bits = __ldg((const uint4*)((const unsigned*)a.aux + Walk::source(a, p) * a.ldaux) + blockIdx.y);
    }
    __syncwarp();  // the previous batch's reads are done
    stage[lane] = bits;
    __syncwarp();
    return w;
}

// LANES lanes per entry (16: 128 columns a warp, two entries a step; 8 where n <= 64: 64
// columns, four entries a step, so that narrow B leaves no lane idle).
template <class T, class Walk, bool HOMO, int LANES>
__device__ void bits_line(const Args& a, int64_t i, uint4* stage) {
    typedef typename AccOf<T>::type A;
    constexpr int PARTS = 32 / LANES;
    const int part = lane_id() / LANES, byte = lane_id() % LANES;
    const u8* my_bytes = (const u8*)stage + 16 * part + byte;
    A acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    // entry e + part of the stage: its byte's set bits add the entry's weight
    auto step = [&](int e, A w) {
        const A we = HOMO ? A(a.homo) : __shfl_sync(0xffffffffu, w, e + part);
        const unsigned v = my_bytes[16 * e];
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (v & (1u << u)) acc[u] += we;
    };
    const int64_t end = Walk::end(a, i);
    for (int64_t base = Walk::begin(a, i); base < end; base += 32) {
        const int count = (int)min((int64_t)32, end - base);
        const A w = stage_batch<T, Walk, A>(a, base, count, stage);
        if (count == 32) {
#pragma unroll
            for (int e = 0; e < 32; e += PARTS) step(e, w);
        } else {
            for (int e = 0; e < count; e += PARTS) step(e, w);  // e + part < 32 reads a zero slot past count
        }
    }
    for (int o = LANES; o < 32; o <<= 1)
        for (int u = 0; u < 8; u++) acc[u] += __shfl_xor_sync(0xffffffffu, acc[u], o);
    const int64_t c0 = (int64_t)blockIdx.y * 8 * LANES + 8 * byte;
    if (part == 0)
        for (int u = 0; u < 8 && c0 + u < a.n; u++) blend((T*)a.y + i * a.ldy + c0 + u, acc[u], a);
}

template <class T, class Walk> __device__ void bits_mm(const Args& a) {
    __shared__ uint4 stage[BLOCK_WARPS][32];
    const int warp = threadIdx.x / 32;
    const int64_t i = (int64_t)blockIdx.x * BLOCK_WARPS + warp;
    if (i >= Walk::count(a)) return;  // whole warps
    uint4* mine = stage[warp];
    if (a.n <= BITS_COLS / 2) {
        if (a.weights) bits_line<T, Walk, false, 8>(a, i, mine);
        else bits_line<T, Walk, true, 8>(a, i, mine);
    } else {
        if (a.weights) bits_line<T, Walk, false, 16>(a, i, mine);
        else bits_line<T, Walk, true, 16>(a, i, mine);
    }
}

// ---------------------------------------------------------------- spmm on mostly-zero floats
// nonzero_lists (float B, n > 1): list_nonzeros writes each row of B, per 128 columns, as a list
// of its nonzeros: a slot of NONZERO_SLOT_PAIRS (column, value) pairs in the stream's scratch
// (a.aux, a.ldaux slots per row of B), pair 0's column holding the count, or DENSE where they
// do not fit (more than 31 of the 128). Then lists_mm: a warp per (output line, 128
// columns), 32 entries at a time. Parts of LANES lanes (at least half as many as the mean list
// has pairs: lists_in_parts) take alternate entries, adding weight x value at the listed
// columns into the part's sums in shared memory (the columns of one list are distinct, so no
// atomics); an entry whose tile is DENSE is added by its part from B's row as it is. The same
// order every run. Where B is mostly nonzero (lists_pay, above) lists_mm returns at once and the
// gather's launch after it runs the product instead.
#define NONZERO_COLS 128
#define NONZERO_SLOT_PAIRS 32
#define LISTS_AT_ONCE 4         // lists a part loads at once (8 was slower)
// Blocks an SM of the lists' product, N and T: 4 (64 registers a thread; f64 3, 80 registers).
// With the lists addressed by 32-bit offsets (listed_batch) N fits 64 registers too, and its
// fourth block took 10 % off N at 2-5 % and 2-4 % at 256 columns and 1000 a row, the same at 10 %
// (bench/NOTES.md, "spmm lists' chunk loop in fewer instructions").
#define LISTS_BLOCKS_PER_SM(T) (sizeof(T) == 8 ? 3 : 4)
#define LISTS_NEAR_BYTES (24 << 20)  // slots that stay in L2 (50 MB) beside A and C
#define LISTS_SUMS_BYTES 4096  // a warp's sums
#define LISTS_SUMS (LISTS_SUMS_BYTES / sizeof(typename AccOf<T>::type))
#define LISTS_SUMS_PAD 64  // and the rows' pads (lists_row): 32 words a copy, 2 copies at most

// A warp's shared memory in the lists' product: its sums (4 KB), and the sources and weights of
// the batch it adds, which a part reads LISTS_AT_ONCE at a time in one 16-byte load each (a
// shuffle an entry and value cost as many wavefronts of the L1's pipe as a load of four).
template <class A> struct alignas(16) ListsWarp {
    A sums[LISTS_SUMS_BYTES / sizeof(A) + LISTS_SUMS_PAD];
    int src[32];
    A w[32];
};
template <class V> struct alignas(16) AtOnce {
    V v[LISTS_AT_ONCE];
};

// One listed nonzero: its column within the 128 with its list's count above it, so that each
// lane reads the count from its own pairs, and its value (16-bit columns beside 16-bit values, so
// a pair is 4 bytes).
template <class T> struct alignas(2 * sizeof(T)) Listed {
    typedef typename std::conditional<sizeof(T) == 2, unsigned short, unsigned>::type Col;
    static constexpr int COUNT_SHIFT = 8;  // columns < 128 below, the count (up to 63) above
    static constexpr int DENSE = 63;       // the count of a tile read from B as it is
    static constexpr int MAX = NONZERO_SLOT_PAIRS;
    Col col;
    T val;
    __device__ int column() const { return col & ((1 << COUNT_SHIFT) - 1); }
    __device__ int count() const { return col >> COUNT_SHIFT; }
};

// Slot w = (row of B, 128 columns) by one warp: a ballot per 32 columns finds the nonzeros (NaN
// counts, -0 does not), and each lane writes its own at its rank in bank order (column % 32,
// then column): the lanes of a part that add a list's every other pair at once then meet
// distinct banks of the sums but where three of its columns share one (a Monte-Carlo of the
// rounds: 3.23 -> 3.03 wavefronts a list at 10 %; bench/NOTES.md). The positions past them (all
// of a DENSE slot's) hold just the count. Returns their count.
template <class T> __device__ int list_slot(const Args& a, int64_t w) {
    typedef typename Listed<T>::Col Col;
    const int lane = lane_id();
    const int64_t row = w / a.ldaux, c0 = (w % a.ldaux) * NONZERO_COLS;
    const T* x = (const T*)a.x + row * a.ldx + c0;
    Listed<T>* slot = (Listed<T>*)a.y + w * NONZERO_SLOT_PAIRS;
    T v[4];
    unsigned live[4];
    int count = 0;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int c = lane + 32 * u;
        const bool in = c0 + c < a.n;
        if (in) v[u] = x[c];
        live[u] = __ballot_sync(0xffffffffu, in && to_f(v[u]) != 0);
        count += __popc(live[u]);
    }
    const bool fits = count <= Listed<T>::MAX;
    const Col tag = Col((fits ? count : Listed<T>::DENSE) << Listed<T>::COUNT_SHIFT);
    if (!fits || lane >= count) slot[lane] = {tag, T(0)};
    if (!fits) return count;
    const unsigned below = (1u << lane) - 1;
    int rank = 0;  // the columns of lower banks, then this bank's of lower groups of 32
#pragma unroll
    for (int u = 0; u < 4; u++) rank += __popc(live[u] & below);
#pragma unroll
    for (int u = 0; u < 4; u++)
        if (live[u] >> lane & 1) slot[rank++] = {Col(tag | (lane + 32 * u)), v[u]};
    return count;
}

// The warps stride over the a.lines x a.ldaux slots; each block leaves the nonzeros it saw in
// a.out2[blockIdx.x] (lists_pay).
template <class T> __device__ void list_nonzeros(const Args& a) {
    int seen = 0;
    for (int64_t w = warp_id(); w < a.lines * a.ldaux; w += warps_in_grid()) seen += list_slot<T>(a, w);
    int total;
    block_exclusive_sum<BLOCK_THREADS>(lane_id() == 0 ? seen : 0, &total);
    if (threadIdx.x == 0) ((int*)a.out2)[blockIdx.x] = total;
}

// Entry e's tile read from B as it is (its list is DENSE): the part's lanes add weight x B's
// row at columns sub, sub + LANES, ... of the tile into the part's sums.
template <class T, int LANES, int COLS, class A>
__device__ __forceinline__ void dense_list(const Args& a, int64_t src, A w, A* mine) {
    const int64_t c0 = (int64_t)blockIdx.y * NONZERO_COLS;
    const T* row = (const T*)a.x + src * a.ldx + c0;
    for (int k = lane_id() % LANES; k < COLS && c0 + k < a.n; k += LANES) mine[k] += w * A(to_f(row[k]));
}

// A part's row of sums in shared memory: COLS and a pad of LANES words (32 / parts), so that
// part q's column c sits in bank (c + q LANES) % 32: the parts' lanes, which hold a list's
// columns in bank order (list_slot), start at different banks. Monte-Carlo of the rounds at
// 10 %, 8 lanes: 3.23 wavefronts a list (column order) -> 3.03 (bank order) -> 2.98 (and the pads);
// 5 %, 4 lanes: 1.75 -> 1.78 -> 1.70 (bench/NOTES.md).
template <int LANES, int COLS> __host__ __device__ constexpr int lists_row() { return COLS + LANES; }

// Copies of a part's sums that a warp's 4 KB hold, up to 2: lists u and u + 1 of a round add
// into different copies, so both loads of the sums go before both stores.
template <class T, int LANES, int COLS> __host__ __device__ constexpr int lists_copies() {
    return 2 * (32 / LANES) * COLS <= (int)LISTS_SUMS ? 2 : 1;
}

// Adds pair p[u] of each list u where take[u], COPIES lists at a time, list u0 + c into copy c
// (COPY_STRIDE sums apart) of the part's sums: the copies' loads, then their stores.
template <int COPIES, int COPY_STRIDE, class T, class A>
__device__ __forceinline__ void add_listed(const Listed<T> (&p)[LISTS_AT_ONCE], const A (&we)[LISTS_AT_ONCE],
                                           const bool (&take)[LISTS_AT_ONCE], A* mine) {
#pragma unroll
    for (int u0 = 0; u0 < LISTS_AT_ONCE; u0 += COPIES) {
        A old[COPIES];
#pragma unroll
        for (int c = 0; c < COPIES; c++)
            if (take[u0 + c]) old[c] = mine[c * COPY_STRIDE + p[u0 + c].column()];
#pragma unroll
        for (int c = 0; c < COPIES; c++)
            if (take[u0 + c]) mine[c * COPY_STRIDE + p[u0 + c].column()] = old[c] + we[u0 + c] * A(to_f(p[u0 + c].val));
        __syncwarp();  // the next lists may hold the same columns
    }
}

// The pairs one load brings a lane: a list's first chunk comes in one such load a lane, 16 bytes
// (8 for f16 and bf16, whose 4 pairs a lane spilled: 16 registers of unpacked halves).
template <class T> struct alignas(sizeof(T) == 2 ? 8 : 16) HeadPairs {
    static constexpr int N = (sizeof(T) == 2 ? 8 : 16) / sizeof(Listed<T>);
    Listed<T> q[N];
};

// A batch of entries: part q of the warp takes LISTS_AT_ONCE adjacent entries a round (q
// LISTS_AT_ONCE on, then PARTS LISTS_AT_ONCE further), adding weight x value at the listed
// columns into its row of the warp's sums; lane e of the batch holds entry e's source and weight,
// staged in the warp's shared memory so that a part reads a round's in one load each. A round
// loads its lists' heads (LANES x HEAD pairs, one load a lane: HeadPairs) at once, each pair
// bringing its list's count; the round's longest count bounds the chunks of LANES pairs after
// the heads, each chunk of all the lists loaded at once, so a round waits one memory trip for
// the heads and one per chunk after them (bench/NOTES.md, "the lists in chunks", "spmm lists'
// heads in one load").
// The slots are `slots` from pair `first` on (this block's 128 columns), `stride` pairs a row of B.
template <class T, int LANES, int COLS, class A>
__device__ __forceinline__ void listed_batch(const Args& a, int count, const Listed<T>* slots, unsigned first,
                                             int64_t stride, int src, A w, ListsWarp<A>& warp) {
    constexpr int PARTS = 32 / LANES, COPIES = lists_copies<T, LANES, COLS>(), HEAD = HeadPairs<T>::N;
    const int part = lane_id() / LANES, sub = lane_id() % LANES;
    A* mine = warp.sums + part * lists_row<LANES, COLS>();
    __syncwarp();  // the last batch's sources are read
    warp.src[lane_id()] = src;
    warp.w[lane_id()] = w;
    __syncwarp();
    for (int e0 = 0; e0 < count; e0 += PARTS * LISTS_AT_ONCE) {
        const int e = e0 + part * LISTS_AT_ONCE;  // the part's first entry; < 32: PARTS LISTS_AT_ONCE divides 32
        const AtOnce<int> sources = *(const AtOnce<int>*)&warp.src[e];
        const AtOnce<A> weights = *(const AtOnce<A>*)&warp.w[e];
        int s[LISTS_AT_ONCE];
        A we[LISTS_AT_ONCE];
        Listed<T> p[HEAD][LISTS_AT_ONCE];
        unsigned at[LISTS_AT_ONCE];  // where list u's slot lies in `slots`: one IMAD.WIDE a load (lists_mm)
#pragma unroll
        for (int u = 0; u < LISTS_AT_ONCE; u++) {
            s[u] = sources.v[u];
            we[u] = weights.v[u];
            at[u] = (unsigned)s[u] * (unsigned)stride + first;
            HeadPairs<T> head = {};  // count 0 past the batch
            if (e + u < count) head = *(const HeadPairs<T>*)&slots[at[u] + sub * HEAD];
#pragma unroll
            for (int k = 0; k < HEAD; k++) p[k][u] = head.q[k];
        }
        int h[LISTS_AT_ONCE], most = 0;
#pragma unroll
        for (int u = 0; u < LISTS_AT_ONCE; u++) {
            h[u] = p[0][u].count();
            if (h[u] == Listed<T>::DENSE) {  // lane sub adds the same columns in every dense_list
                dense_list<T, LANES, COLS>(a, s[u], we[u], mine);
                h[u] = 0;
            }
            most = max(most, h[u]);
        }
        __syncwarp();
        bool take[LISTS_AT_ONCE];
#pragma unroll
        for (int k = 0; k < HEAD; k++) {
#pragma unroll
            for (int u = 0; u < LISTS_AT_ONCE; u++) take[u] = sub * HEAD + k < h[u];
            add_listed<COPIES, PARTS * lists_row<LANES, COLS>()>(p[k], we, take, mine);
        }
        most = __reduce_max_sync(0xffffffffu, most);
        for (int j = LANES * HEAD + sub; j - sub < most; j += LANES) {
#pragma unroll
            for (int u = 0; u < LISTS_AT_ONCE; u++) {
                take[u] = j < h[u];
                if (take[u]) p[0][u] = slots[at[u] + j];
            }
            add_listed<COPIES, PARTS * lists_row<LANES, COLS>()>(p[0], we, take, mine);
        }
    }
}

// Line i over COLS columns from blockIdx.y 128 (all of n where n <= 64), in parts of LANES
// lanes: batches of 32 entries, the next batch's sources and weights loading while one is added.
template <class T, class Walk, int LANES, int COLS>
__device__ void lists_line(const Args& a, int64_t i, ListsWarp<typename AccOf<T>::type>& warp) {
    typedef typename AccOf<T>::type A;
    A* sums = warp.sums;
    constexpr int SUM_ROWS = 32 / LANES * lists_copies<T, LANES, COLS>();  // rows of sums: parts x copies
    constexpr int ROW = lists_row<LANES, COLS>();
    const int lane = lane_id();
    const int64_t c0 = (int64_t)blockIdx.y * NONZERO_COLS;
    const Listed<T>* slots = (const Listed<T>*)a.aux + blockIdx.y * NONZERO_SLOT_PAIRS;
    const int64_t stride = a.ldaux * NONZERO_SLOT_PAIRS;  // pairs of slots per row of B
    for (int k = lane; k < SUM_ROWS * ROW; k += 32) sums[k] = A(0);
    __syncwarp();
    const int64_t begin = Walk::begin(a, i), end = Walk::end(a, i);
    // N with slots past L2's reach: the fetch, a batch ahead, asks L2 for each entry's chunk 0
    // (measured with N at 3 blocks an SM; T's registers would spill with it).
    const bool far = std::is_same<Walk, CsrWalk>::value && Walk::sources(a) * stride * (int64_t)sizeof(Listed<T>) > LISTS_NEAR_BYTES;
    auto fetch = [&](int64_t base, int& src, A& w) {  // lane e: entry base + e; sources are int indices
        src = 0, w = 0;
        if (base + lane < end) {
            src = (int)Walk::source(a, base + lane);
            w = weight<T, A>(a, Walk::entry(a, base + lane));
            if (far) asm volatile("prefetch.global.L2 [%0];" ::"l"(slots + src * stride));
        }
    };
    int src;
    A w;
    fetch(begin, src, w);
    for (int64_t base = begin; base < end; base += 32) {
        int next_src;
        A next_w;
        fetch(base + 32, next_src, next_w);
        const int count = (int)min((int64_t)32, end - base);
        listed_batch<T, LANES, COLS>(a, count, (const Listed<T>*)a.aux, blockIdx.y * NONZERO_SLOT_PAIRS, stride, src, w, warp);
        src = next_src, w = next_w;
    }
    __syncwarp();
    for (int k = lane; k < COLS && c0 + k < a.n; k += 32) {
        A sum = 0;
        for (int q = 0; q < SUM_ROWS; q++) sum += sums[q * ROW + k];
        blend((T*)a.y + i * a.ldy + c0 + k, sum, a);
    }
}

// The warp's lines, striding by the grid (one wave of blocks). The part width is chosen outside
// the loop: three lists_line bodies inside it spilled (ptxas, f32: 8 bytes stored, 24 loaded).
template <class T, class Walk, int LANES, int COLS> __device__ void lists_lines(const Args& a, ListsWarp<typename AccOf<T>::type>& warp) {
    static_assert(32 / LANES * COLS <= LISTS_SUMS, "a part's sums past the warp's");
    static_assert(32 / LANES * lists_copies<T, LANES, COLS>() * LANES <= LISTS_SUMS_PAD, "the rows' pads past the warp's");
    for (int64_t i = (int64_t)blockIdx.x * BLOCK_WARPS + threadIdx.x / 32; i < Walk::count(a); i += (int64_t)gridDim.x * BLOCK_WARPS) {
        __syncwarp();  // the last line's sums are read
        lists_line<T, Walk, LANES, COLS>(a, i, warp);
    }
}

// The narrowest parts that the lists fit: LANES lanes while the mean list is at most 2 LANES
// pairs long (two chunks), up to COLS / 16 lanes: where the lists pay (lists_pay), a list holds
// at most 16 pairs on average at 128 columns and 4 at 64. f32, 128 columns: 4, 4 and 8 lanes
// at 2, 5 and 10 % (2.6, 6.4 and 12.8 pairs a list) take 49, 66 and 86 µs; parts of at least
// 8/7 the mean took 50, 67 and 87.5 (bench/NOTES.md, "the lists in chunks"). The f64 sums of 8
// parts of 128 columns do not fit their 4 KB, so f64 there takes 8 lanes.
template <class T, class Walk, int LANES, int COLS>
__device__ void lists_in_parts(const Args& a, ListsWarp<typename AccOf<T>::type>& warp, int64_t nonzeros, int64_t lists) {
    if constexpr (32 / LANES * COLS > LISTS_SUMS) {
        lists_in_parts<T, Walk, 2 * LANES, COLS>(a, warp, nonzeros, lists);
    } else if constexpr (LANES < COLS / 16) {
        if (nonzeros > 2 * LANES * lists) lists_in_parts<T, Walk, 2 * LANES, COLS>(a, warp, nonzeros, lists);
        else lists_lines<T, Walk, LANES, COLS>(a, warp);
    } else {
        lists_lines<T, Walk, LANES, COLS>(a, warp);
    }
}

// Tiles of 32 columns where n <= 32, of 64 where n <= 64, else of 128.
template <class T, class Walk> __device__ void lists_mm(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ ListsWarp<A> warps[BLOCK_WARPS];
    const int64_t nonzeros = nonzeros_listed(a), b_rows = Walk::sources(a);
    // listed_batch addresses the slots by 32-bit offsets: past them (B of some 134 M rows) the gather runs
    const bool addressable = b_rows * a.ldaux * NONZERO_SLOT_PAIRS <= (int64_t)UINT32_MAX;
    const bool pay = addressable && lists_pay<T>(a, nonzeros, b_rows);
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) ((int*)a.out2)[a.lines] = pay;  // lists_ran
    if (!pay) return;  // the gather's launch runs the product
    ListsWarp<A>& mine = warps[threadIdx.x / 32];
    const int64_t lists = b_rows * ((a.n + NONZERO_COLS - 1) / NONZERO_COLS);
    if (a.n <= 32) lists_in_parts<T, Walk, 4, 32>(a, mine, nonzeros, lists);
    else if (a.n <= 64) lists_in_parts<T, Walk, 4, 64>(a, mine, nonzeros, lists);
    else lists_in_parts<T, Walk, 4, 128>(a, mine, nonzeros, lists);
}

#define KERNEL(name, body) EVS_KERNEL(name, (BLOCK_THREADS), body)
// Kernels along the CSC mirror that read the weights' CSC-ordered copy while it is fresh
// (EVS_CSC_KERNEL). The T gathers have such kernels apart from their plain ones, since testing
// the copy's flag costs them 8 registers (48 warps an SM instead of 64), which the gather through
// perm would pay.
#define CSC_KERNEL(name, body) EVS_CSC_KERNEL(name, (BLOCK_THREADS), body)
#define GATHER(T, TN, In, InN)                                         \
    EVS_KERNEL_LOADS_FIRST(spmv_n_##TN##_##InN, (BLOCK_THREADS), (spmv_n_warp<T, In>)) \
    KERNEL(spmm_n_##TN##_##InN, (spmm_n_warp<T, In>))           \
    KERNEL(spmm_n_thread_##TN##_##InN, (spmm_n_thread<T, In>))         \
    KERNEL(spmv_n_classes_##TN##_##InN, (spmv_n_classes<T, In>))       \
    KERNEL(spmm_n_classes_##TN##_##InN, (spmm_n_classes<T, In>)) \
    EVS_KERNEL_LOADS_FIRST(spmv_t_##TN##_##InN, (BLOCK_THREADS), (spmv_t_gather<T, In, true>)) \
    KERNEL(spmm_t_##TN##_##InN, (spmm_t_gather<T, In>))                \
    CSC_KERNEL(spmv_t_csc_copy_##TN##_##InN, (spmv_t_gather<T, In, false>)) \
    CSC_KERNEL(spmm_t_csc_copy_##TN##_##InN, (spmm_t_gather<T, In>))
#define GATHER_ALL(T, TN) EVS_FOR_INPUTS(GATHER, T, TN)
EVS_FOR_FLOATS(GATHER_ALL)

// spmv_scatter_after_scale: the same right after scale_opener in its call (src/cuda/ops.rs,
// active_lines), its warps loading their first events, extents and first live row's entries
// while y is scaled (AddInto waits at the first add). Two blocks an SM fewer (40 registers): at
// the plain form's 8 (32 registers) and at 7 it spilled 16 bytes and lost to the plain form
// after the opener (T events 400,000: 5.74 against 5.50 graph µs); at 6, 5.5 -> 5.15, and 5.0
// with the entries before the wait (bench/NOTES.md, "Openers a block an SM", "Three one-trip
// changes").
#define SCATTER(T, TN, In, InN)                                                                       \
    EVS_KERNEL(spmv_scatter_##TN##_##InN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T)),                    \
               (active_lines<InputLines<In>, CsrWalk, AddInto<T, CsrWalk>>))                          \
    EVS_KERNEL_AFTER_OPENER(spmv_scatter_after_scale_##TN##_##InN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T) - 2), \
                            (active_lines<InputLines<In>, CsrWalk, AddInto<T, CsrWalk, true>>))       \
    KERNEL(spmm_scatter_##TN##_##InN, (scatter_mm<T, In>))
#define ROW_WARP_SCATTER(T, TN, In, InN) \
    KERNEL(spmv_row_warp_scatter_##TN##_##InN, (warp_per_line<In, CsrWalk, AddInto<T, CsrWalk>>))
EVS_FOR_INPUTS(SCATTER, float, f32)
EVS_FOR_INPUTS(SCATTER, double, f64)
EVS_FOR_SPIKE_INPUTS(ROW_WARP_SCATTER, float, f32)
EVS_FOR_SPIKE_INPUTS(ROW_WARP_SCATTER, double, f64)
// spmv T and N on a spike list right after scale_opener in the same call (src/cuda/ops.rs,
// scaled_by_kernel): their warps read the list and their lines' entries while the scaling runs.
// N reads the weights in CSC order as CSC_KERNEL does (the flag it tests is written by kernels
// before the opener).
template <class T> __device__ void csc_list_scatter_after_scale(const Args& a) {
    warp_per_line<SpikeList, CscWalk, AddInto<T, CscWalk, true>>(in_csc_order(a));
}
#define LIST_SCATTER_AFTER_SCALE(T, TN)                                                                \
    EVS_KERNEL_AFTER_OPENER(spmv_list_scatter_after_scale_##TN, (BLOCK_THREADS),                       \
                            (warp_per_line<SpikeList, CsrWalk, AddInto<T, CsrWalk, true>>))            \
    EVS_KERNEL_AFTER_OPENER(spmv_csc_list_scatter_after_scale_##TN, (BLOCK_THREADS), csc_list_scatter_after_scale<T>)
LIST_SCATTER_AFTER_SCALE(float, f32)
LIST_SCATTER_AFTER_SCALE(double, f64)
// N on event vectors: the census, then the active columns along the CSC mirror or the rows.
#define CSC_EVENTS(T, TN, In, InN)                                             \
    EVS_KERNEL(census_##TN##_##InN, (CENSUS_THREADS), (census<T, In>))        \
    KERNEL(spmv_csc_events_##TN##_##InN, (csc_events<T, In>))
EVS_FOR_INPUTS(CSC_EVENTS, float, f32)
EVS_FOR_INPUTS(CSC_EVENTS, double, f64)
// N on an event vector by line parts along the CSC mirror (csc_scatter where the columns are
// few enough: src/cuda/ops.rs, csc_events): the live columns' entries add alpha * x[c] * w into
// y[rowind[p]] with atomics, y scaled by beta before; AFTER_OPENER: launched right after the
// scaling (scale_opener), its threads load inputs, bounds, rows and weights while it runs and
// wait only before their first add. Weights in CSC order as CSC_KERNEL reads them.
template <class T, class In, bool AFTER_OPENER> __device__ void csc_parts(const Args& raw) {
    const Args a = in_csc_order(raw);
    bool scaled = !AFTER_OPENER;
    each_part_entries<In, CscWalk, T>(a, [&](const int (&p)[PART_AT_ONCE], const int (&src)[PART_AT_ONCE], T v) {
        int row[PART_AT_ONCE];
        T term[PART_AT_ONCE];
#pragma unroll
        for (int u = 0; u < PART_AT_ONCE; u++) {
            const T line_value = __shfl_sync(0xffffffffu, v, src[u]);
            if (p[u] >= 0) row[u] = a.rowind[p[u]], term[u] = T(a.alpha) * line_value * weight<T, T>(a, CscWalk::entry(a, p[u]));
        }
        if (!scaled) wait_for_prior_grids(), scaled = true;
#pragma unroll
        for (int u = 0; u < PART_AT_ONCE; u++)
            if (p[u] >= 0) atomicAdd((T*)a.y + row[u] * a.ldy, term[u]);
    });
}
#define CSC_PARTS(T, TN, In, InN)                                                                                  \
    EVS_KERNEL(spmv_csc_parts_##TN##_##InN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T)), (csc_parts<T, In, false>)) \
    EVS_KERNEL_AFTER_OPENER(spmv_csc_parts_after_scale_##TN##_##InN, (LINES_THREADS, LINES_BLOCKS_PER_SM(T)),    \
                            (csc_parts<T, In, true>))
EVS_FOR_INPUTS(CSC_PARTS, float, f32)
EVS_FOR_INPUTS(CSC_PARTS, double, f64)
// N on spike lists: a warp per listed column, along the CSC mirror.
CSC_KERNEL(spmv_csc_scatter_f32_i32, (warp_per_line<SpikeList, CscWalk, AddInto<float, CscWalk>>))
CSC_KERNEL(spmv_csc_scatter_f64_i32, (warp_per_line<SpikeList, CscWalk, AddInto<double, CscWalk>>))

#define BITS(T, TN)                                       \
    KERNEL(spmm_n_bits_##TN, (bits_mm<T, CsrWalk>)) \
    CSC_KERNEL(spmm_t_bits_##TN, (bits_mm<T, CscWalk>))
EVS_FOR_FLOATS(BITS)
#define LISTS(T, TN)                                        \
    KERNEL(list_nonzeros_##TN, list_nonzeros<T>)            \
    EVS_KERNEL(spmm_n_lists_##TN, (BLOCK_THREADS, LISTS_BLOCKS_PER_SM(T)), (lists_mm<T, CsrWalk>)) \
    EVS_CSC_KERNEL(spmm_t_lists_##TN, (BLOCK_THREADS, LISTS_BLOCKS_PER_SM(T)), (lists_mm<T, CscWalk>))
EVS_FOR_FLOATS(LISTS)
#define PACK(In, InN) KERNEL(pack_events_##InN, pack_events<In>)
PACK(u8, bool) PACK(f16, f16) PACK(bf16, bf16) PACK(float, f32) PACK(double, f64)

#define SLICES(T, TN)                                                                   \
    EVS_KERNEL(spmv_t_slices_##TN, (SLICE_THREADS), (output_slices<T, BlockRows>)) \
    EVS_KERNEL(spmv_t_slices_##TN##_i32, (SLICE_THREADS), (output_slices<T, SpikeRows>))
EVS_FOR_FLOATS(SLICES)
// (N_SLICE_THREADS, 2): two blocks an SM (src/cuda/ops.rs launches that many for the gather);
// with the thread bound alone ptxas held 40 registers and spilled
#define N_SLICES(T, TN, In, InN) EVS_KERNEL(spmv_n_slices_##TN##_##InN, (N_SLICE_THREADS, 2), (n_output_slices<T, In>))
#define N_SLICES_ALL(T, TN) EVS_FOR_SPIKE_INPUTS(N_SLICES, T, TN)
EVS_FOR_FLOATS(N_SLICES_ALL)
#define LIVE_ROWS(In, InN) KERNEL(live_rows_##InN, live_rows<In>)
LIVE_ROWS(u8, bool) LIVE_ROWS(f16, f16) LIVE_ROWS(bf16, bf16) LIVE_ROWS(float, f32) LIVE_ROWS(double, f64)

#define SCALE(T, TN) KERNEL(scale_##TN, scale<T>) KERNEL(scale_opener_##TN, scale_opener<T>)
EVS_FOR_FLOATS(SCALE)
KERNEL(scale_long_rows_f32, scale_long_rows<float>)
KERNEL(scale_long_rows_f64, scale_long_rows<double>)

