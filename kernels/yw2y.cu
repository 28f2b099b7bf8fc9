// yw2y: one value per stored entry, out[b, j] = w_j * y[b, row(j)] (N) or y[b, indices[j]] (T),
// with per-batch weights replacing w_j when given (SPEC §3.2).
//
// N is a pure stream (weights in, out written): it moves 16-byte vectors of V entries, several
// in flight per lane, wherever the bases allow it (checked on the device: a vector starting at a
// multiple of V is aligned iff its bases are); the rest goes element by element. Plain loads and
// stores: evict-first hints (.cs) cost 2 % on the H200 (bench/probe_yw2y_n.cu). T is bound by its
// gathers of y (below).
#include "common.cuh"

constexpr int YW2Y_UNROLL = 4;  // 16-byte vectors in flight per lane (N)

// V entries of T in one 16-byte vector.
template <class T> struct alignas(16) Pack {
    static constexpr int V = 16 / sizeof(T);
    T e[V];
};

template <class T> __device__ __forceinline__ Pack<T> load_pack(const T* p) { return *reinterpret_cast<const Pack<T>*>(p); }

__device__ __forceinline__ bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

// The weights of batch b: its per-batch row (aux) if given, the CSR's, or NULL (homogeneous).
template <class T> __device__ __forceinline__ const T* batch_weights(const Args& a, int64_t b) {
    return a.aux ? (const T*)a.aux + b * a.ldaux : (const T*)a.weights;
}

template <class T, class A> __device__ __forceinline__ A weight_at(const Args& a, const T* w, int64_t p) {
    return w ? A(to_f(w[p])) : A(a.homo);
}

// out[0..V) = alpha * w[0..V) * y[0..V) + beta * out[0..V), one vector (BETA: beta may be nonzero).
template <class T, class A, bool BETA>
__device__ __forceinline__ void blend_pack(T* out, const Pack<T>& w, bool homo, const A (&yv)[Pack<T>::V], const Args& a) {
    Pack<T> old, r;
    if (BETA && a.beta != 0.0) old = *reinterpret_cast<const Pack<T>*>(out);
#pragma unroll
    for (int j = 0; j < Pack<T>::V; ++j) {
        A v = A(a.alpha) * ((homo ? A(a.homo) : A(to_f(w.e[j]))) * yv[j]);
        if (BETA && a.beta != 0.0) v += A(a.beta) * A(to_f(old.e[j]));
        put(&r.e[j], v);
    }
    *reinterpret_cast<Pack<T>*>(out) = r;
}

// The batches of one group: a thread reads an entry's weight and index once and writes the
// group's outputs (per-batch weights are read per batch).
constexpr int64_t YW2Y_BATCH_GROUP = 8;

__device__ __forceinline__ int64_t group_end(const Args& a, int64_t b0) { return min(a.batches, b0 + YW2Y_BATCH_GROUP); }

// Whether batch b's vectors can move whole: its bases 16-byte aligned.
template <class T> __device__ __forceinline__ bool vectors_fit(const Args& a, int64_t b) {
    const T* w = batch_weights<T>(a, b);
    return aligned16((T*)a.y + b * a.ldy) && (!w || aligned16(w));
}

// The vectors of a group: whole vectors for all its batches, or none.
template <class T> __device__ __forceinline__ bool group_vectors(const Args& a, int64_t b0) {
    bool fit = true;
    for (int64_t b = b0; b < group_end(a, b0); ++b) fit = fit && vectors_fit<T>(a, b);
    return fit;
}

// N: one warp per (CSR row, group of batches); each y[b, i] is loaded once and the warp streams
// the row's entries: a scalar head up to the first whole vector, the vectors, a scalar tail. The
// stream is latency-bound on the warps an SM holds: at 61 registers (f32, 4 blocks an SM) it runs
// 5 % faster than at 68 (3 blocks), and bounds that force 6 blocks spill and lose 25 %
// (bench/probe_yw2y_n.cu, `lib` rows). PLAIN (no per-batch weights, beta 0: the common call) drops
// what those need from the vector loop: 46 registers (5 blocks), 22 % faster with 8 batches.
template <class T, bool PLAIN> __device__ void yw2y_n_rows(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int V = Pack<T>::V;
    const int64_t groups = (a.batches + YW2Y_BATCH_GROUP - 1) / YW2Y_BATCH_GROUP, warp = warp_id();
    if (warp >= a.m * groups) return;
    const int64_t i = warp / groups, b0 = warp % groups * YW2Y_BATCH_GROUP, b1 = group_end(a, b0);
    const int64_t begin = row_start(a, i), end = row_start(a, i + 1);
    const bool vectors = group_vectors<T>(a, b0);
    // [begin, vb): head, [vb, ve): whole vectors, [ve, end): tail (all of it without vectors)
    const int64_t vb = vectors ? min(end, (begin + V - 1) / V * V) : begin;
    const int64_t ve = vectors ? max(vb, end / V * V) : begin;
    const int lane = lane_id();
    // the group's y[b, i] in registers: one load (lane j holding batch b0 + j's), then shuffled
    // to every lane, where a load per batch after the last batch's stores waited one trip each
    // (out may alias y for all the compiler knows)
    const A y_lane = lane < b1 - b0 ? A(to_f(((const T*)a.x)[(b0 + lane) * a.ldx + i])) : A(0);
    A ys[YW2Y_BATCH_GROUP];
#pragma unroll
    for (int j = 0; j < YW2Y_BATCH_GROUP; ++j) ys[j] = __shfl_sync(0xffffffffu, y_lane, j);
    const bool per_batch = !PLAIN && a.aux;
    // batch b0 + j's weights
    auto weights_of = [&](int j) { return per_batch ? batch_weights<T>(a, b0 + j) : (const T*)a.weights; };
#pragma unroll
    for (int j = 0; j < YW2Y_BATCH_GROUP; ++j) {
        if (b0 + j >= b1) break;
        const T* w = weights_of(j);
        T* out = (T*)a.y + (b0 + j) * a.ldy;
        if (begin + lane < vb) blend(out + begin + lane, weight_at<T, A>(a, w, begin + lane) * ys[j], a);
        for (int64_t p = ve + lane; p < end; p += 32) blend(out + p, weight_at<T, A>(a, w, p) * ys[j], a);
    }
    const T* shared_w = per_batch ? nullptr : (const T*)a.weights;  // read once for the group
    for (int64_t q0 = vb / V + lane; q0 < ve / V; q0 += 32 * YW2Y_UNROLL) {
        Pack<T> wp[YW2Y_UNROLL] = {};
#pragma unroll
        for (int u = 0; u < YW2Y_UNROLL; ++u)
            if (shared_w && q0 + 32 * u < ve / V) wp[u] = load_pack(shared_w + (q0 + 32 * u) * V);
#pragma unroll
        for (int j = 0; j < YW2Y_BATCH_GROUP; ++j) {
            if (b0 + j >= b1) break;
            A yv[V];
#pragma unroll
            for (int e = 0; e < V; ++e) yv[e] = ys[j];
            const T* w = weights_of(j);
#pragma unroll
            for (int u = 0; u < YW2Y_UNROLL; ++u) {
                const int64_t q = q0 + 32 * u;
                if (q >= ve / V) continue;
                const Pack<T> wv = per_batch ? load_pack(w + q * V) : wp[u];
                blend_pack<T, A, !PLAIN>((T*)a.y + (b0 + j) * a.ldy + q * V, wv, !w, yv, a);
            }
        }
    }
}

template <class T> __device__ void yw2y_n(const Args& a) { yw2y_n_rows<T, false>(a); }
template <class T> __device__ void yw2y_n_plain(const Args& a) { yw2y_n_rows<T, true>(a); }

// T with several batches (yw2y_t_by_column) gathers each entry's y from a copy of y by column
// (a.out2, written by yw2y_columns): each column's group of YW2Y_BATCH_GROUP batches side by
// side, so one entry's gathers for a group are one 32-byte sector (f32), not one a batch.
template <class T> using Column = Run<T, YW2Y_BATCH_GROUP>;

template <class T> __device__ void yw2y_columns(const Args& a) {
    const int64_t groups = (a.batches + YW2Y_BATCH_GROUP - 1) / YW2Y_BATCH_GROUP;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < groups * a.k; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t g = t / a.k, c = t % a.k, b0 = g * YW2Y_BATCH_GROUP;
        Column<T> column;
#pragma unroll
        for (int j = 0; j < YW2Y_BATCH_GROUP; ++j)
            column.v[j] = b0 + j < a.batches ? ((const T*)a.x)[(b0 + j) * a.ldx + c] : T(0);
        ((Column<T>*)a.out2)[t] = column;
    }
}

// T: threads over the entries (grid-stride), a grid row per group of batches: an entry's weight
// and column are read once for the group, then each batch gathers y and writes out. The gathers
// bound it (one 32-byte L2 sector for 4 useful bytes: y is larger than L1 can keep), not DRAM:
// 16-byte vectors with fewer, fuller threads ran 10-15 % slower (bench/NOTES.md). Each thread
// keeps T_ENTRIES entries (a grid's stride apart) in flight: their columns, then their gathers
// (5-8 % faster on the H200; the same in yw2y_t_by_column lost 2 %: its thread holds 8 batches).
template <class T> constexpr int T_ENTRIES = sizeof(T) >= 8 ? 2 : 4;

template <class T> __device__ void yw2y_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int U = T_ENTRIES<T>;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    const T* shared_w = a.aux ? nullptr : (const T*)a.weights;
    for (int64_t b0 = blockIdx.y * YW2Y_BATCH_GROUP; b0 < a.batches; b0 += gridDim.y * YW2Y_BATCH_GROUP) {
        const int64_t b1 = group_end(a, b0);
        for (int64_t p0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p0 < a.nnz; p0 += threads * U) {
            int c[U];
            A w[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int64_t p = p0 + u * threads;
                c[u] = p < a.nnz ? a.indices[p] : 0;
                w[u] = p < a.nnz ? weight_at<T, A>(a, shared_w, p) : A(0);
            }
            for (int64_t b = b0; b < b1; ++b) {
                A ys[U];
#pragma unroll
                for (int u = 0; u < U; ++u) ys[u] = A(to_f(((const T*)a.x)[b * a.ldx + c[u]]));
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int64_t p = p0 + u * threads;
                    if (p >= a.nnz) break;
                    const A wb = a.aux ? weight_at<T, A>(a, batch_weights<T>(a, b), p) : w[u];
                    blend((T*)a.y + b * a.ldy + p, wb * ys[u], a);
                }
            }
        }
    }
}

// The same for several batches, gathering a group's y at once from the copy by column.
template <class T> __device__ void yw2y_t_by_column(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    const T* shared_w = a.aux ? nullptr : (const T*)a.weights;
    for (int64_t b0 = blockIdx.y * YW2Y_BATCH_GROUP; b0 < a.batches; b0 += gridDim.y * YW2Y_BATCH_GROUP) {
        const Column<T>* columns = (const Column<T>*)a.out2 + b0 / YW2Y_BATCH_GROUP * a.k;
        for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < a.nnz; p += threads) {
            const Column<T> ys = columns[a.indices[p]];
            const A w = weight_at<T, A>(a, shared_w, p);
#pragma unroll
            for (int j = 0; j < YW2Y_BATCH_GROUP; ++j) {
                const int64_t b = b0 + j;
                if (b >= a.batches) break;
                const A wb = a.aux ? weight_at<T, A>(a, batch_weights<T>(a, b), p) : w;
                blend((T*)a.y + b * a.ldy + p, wb * A(to_f(ys.v[j])), a);
            }
        }
    }
}

// ---------------------------------------------------------------- T through windows of y
// y_windows: each block takes an even share of the entries and stages y in shared memory a window
// of whole output slices at a time (a window fills the block's shared memory), so every gather
// is a shared-memory load and only the stream (indices, weights, out) moves through L2 and DRAM.
// The slice offsets kept at analysis (rows sorted by column) give each row's run of entries in a
// window exactly: no entry is read twice. Warps take the block's rows in turn, each loading its
// next row's bounds while it writes the current one.
constexpr int WINDOW_THREADS = 1024;
constexpr int RUN = 4;        // entries a lane moves at once: 16 bytes of indices
constexpr int RUN_STEPS = 2;  // runs a lane loads before it writes any (bytes in flight)

__device__ __forceinline__ unsigned dynamic_shared_bytes() {
    unsigned bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}

// The row that holds entry e (the last row starting at or before it), a warp: each round the
// lanes probe 32 evenly spaced rows of the interval left, so 100,000 rows take 4 rounds.
__device__ int64_t row_of_entry(const Args& a, int64_t e) {
    int64_t lo = 0, hi = a.m;  // row_start(lo) <= e < row_start(hi)
    while (hi - lo > 1) {
        const int64_t step = (hi - lo + 31) / 32, probe = lo + lane_id() * step;
        const unsigned below = __ballot_sync(0xffffffffu, probe < hi && row_start(a, probe) <= e);
        lo += (31 - __clz(below)) * step;  // lane 0 probes lo itself, so below is never 0
        hi = min(hi, lo + step);
    }
    return lo;
}

// len elements of y into shared memory, 16 bytes at a time where aligned.
template <class T> __device__ void stage_window(T* ys, const T* y, int64_t len) {
    constexpr int V = Pack<T>::V;
    const int64_t vectors = aligned16(y) ? len / V : 0;
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < vectors; i += blockDim.x) ((uint4*)ys)[i] = ((const uint4*)y)[i];
    for (int64_t i = vectors * V + threadIdx.x; i < len; i += blockDim.x) ys[i] = y[i];
}

// RUN entries from position q: their columns and weights, all of them where `whole` (aligned,
// inside the arrays and reaching into [p, end)), else only those in [p, end).
template <class T> struct Entries {
    int c[RUN];
    T w[RUN];
};

template <class T>
__device__ __forceinline__ Entries<T> load_run(const Args& a, const T* w, int64_t q, int64_t p, int64_t end, bool whole) {
    Entries<T> e;
    if (whole) {
        const int4 c = *(const int4*)(a.indices + q);
        e.c[0] = c.x, e.c[1] = c.y, e.c[2] = c.z, e.c[3] = c.w;
        if (w) *reinterpret_cast<Run<T, RUN>*>(e.w) = *(const Run<T, RUN>*)(w + q);
        return e;
    }
#pragma unroll
    for (int j = 0; j < RUN; ++j) {
        const bool in = q + j >= p && q + j < end;
        e.c[j] = in ? a.indices[q + j] : 0;
        e.w[j] = in && w ? w[q + j] : T(0);
    }
    return e;
}

// out[q, q + RUN) for the entries of one run in [p, end) whose column is in the window at w0 (all
// of them unless the structure changed since analysis), one vector store where whole.
template <class T, class A>
__device__ __forceinline__ void write_run(const Args& a, T* out, const Entries<T>& e, bool weighted, const T* ys,
                                          int64_t w0, int64_t window, int64_t q, int64_t p, int64_t end, bool whole) {
    A v[RUN];
    unsigned written = 0;
#pragma unroll
    for (int j = 0; j < RUN; ++j) {
        const bool in = q + j >= p && q + j < end && (uint64_t)(e.c[j] - w0) < (uint64_t)window;
        written |= (unsigned)in << j;
        v[j] = in ? (weighted ? A(to_f(e.w[j])) : A(a.homo)) * A(to_f(ys[e.c[j] - w0])) : A(0);
    }
    if (whole && written == (1u << RUN) - 1) {
        Run<T, RUN> old, r;
        if (a.beta != 0.0) old = *(const Run<T, RUN>*)(out + q);
#pragma unroll
        for (int j = 0; j < RUN; ++j) {
            A x = A(a.alpha) * v[j];
            if (a.beta != 0.0) x += A(a.beta) * A(to_f(old.v[j]));
            put(&r.v[j], x);
        }
        *(Run<T, RUN>*)(out + q) = r;
        return;
    }
#pragma unroll
    for (int j = 0; j < RUN; ++j)
        if (written >> j & 1) blend(out + q + j, v[j], a);
}

constexpr int64_t ROUND = 32 * RUN * RUN_STEPS;  // entries a warp loads before it writes any

// Asks L2 for the indices and weights of entries [q, end), at most 16 lines of each (lanes 0-15
// the indices', 16-31 the weights'): a round's worth, so that the warp's loads of the round hit
// L2. Without it the stream's bytes in flight are capped by the registers of 32 warps (DRAM 61 %
// busy in ncu); one round ahead, asked right after the current round's loads, took the probe
// from 396 to 359 µs; asked before those loads 372, two rounds ahead 393, a whole span ahead
// 470 (bench/NOTES.md, "yw2y T: the next round asked of L2").
template <class T> __device__ __forceinline__ void prefetch_entries(const Args& a, const T* w, int64_t q, int64_t end) {
    if (q >= end) return;
    const int lane = lane_id();
    const bool weights = lane >= 16;
    if (weights && !w) return;
    const char* from = weights ? (const char*)(w + q) : (const char*)(a.indices + q);
    const char* to = weights ? (const char*)(w + end) : (const char*)(a.indices + end);
    const char* line = (const char*)((uintptr_t)from & ~(uintptr_t)127) + (lane & 15) * 128;
    if (line < to) asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
}

// One row's entries [p, end) of the window at w0, a warp: RUN_STEPS runs of RUN entries a lane
// loaded, the next round asked of L2 (past end: the first of the warp's next span [np, nend)),
// then the runs written.
template <class T, class A>
__device__ void window_run(const Args& a, const T* w, T* out, const T* ys, int64_t w0, int64_t window, int64_t p,
                           int64_t end, bool vectors, int64_t np, int64_t nend) {
    constexpr int64_t STEP = 32 * RUN;
    for (int64_t base = p / RUN * RUN; base < end; base += ROUND) {
        Entries<T> e[RUN_STEPS];
        bool whole[RUN_STEPS];
#pragma unroll
        for (int s = 0; s < RUN_STEPS; ++s) {
            const int64_t q = base + s * STEP + lane_id() * RUN;
            whole[s] = vectors && q < end && q + RUN <= a.nnz;  // lanes past the run load nothing
            e[s] = load_run(a, w, q, p, end, whole[s]);
        }
        if (base + ROUND < end) prefetch_entries(a, w, base + ROUND, min(end, base + 2 * ROUND));
        else prefetch_entries(a, w, np, min(nend, np + ROUND));
#pragma unroll
        for (int s = 0; s < RUN_STEPS; ++s)
            write_run<T, A>(a, out, e[s], w, ys, w0, window, base + s * STEP + lane_id() * RUN, p, end, whole[s]);
    }
}

// The block's next row for this warp (an index into the block's rows).
__device__ __forceinline__ int64_t take_row(unsigned* next) {
    unsigned r = 0;  // 32 bits: a native shared atomic (a 64-bit one is a CAS loop on sm_90)
    if (lane_id() == 0) r = atomicAdd(next, 1u);
    return (int64_t)__shfl_sync(0xffffffffu, r, 0);
}

// Row i's entries in slices [s0, s1) (offsets `per_row` apart), inside the block's [e0, e1).
struct Span {
    int64_t p, end;
};

__device__ __forceinline__ Span row_span(const Args& a, int64_t i, int64_t per_row, int64_t s0, int64_t s1, int64_t e0,
                                         int64_t e1) {
    const int64_t start = row_start(a, i);
    const unsigned* offsets = a.slice_offsets + i * per_row;
    return {max(start + offsets[s0], e0), min(start + offsets[s1], e1)};
}

template <class T> __device__ void yw2y_t_windows(const Args& a) {
    typedef typename AccOf<T>::type A;
    extern __shared__ __align__(16) unsigned char shared[];
    __shared__ int64_t rows[2];
    __shared__ unsigned next;
    T* ys = (T*)shared;
    const int64_t slices = (a.k + SLICE_OUTPUTS - 1) / SLICE_OUTPUTS, per_row = slices + 1;
    const int64_t window_slices = dynamic_shared_bytes() / (SLICE_OUTPUTS * sizeof(T));
    const int64_t e0 = a.nnz * blockIdx.x / gridDim.x, e1 = a.nnz * (blockIdx.x + 1) / gridDim.x;
    if (e0 >= e1) return;
    const int warp = threadIdx.x / 32;
    if (warp < 2) {
        const int64_t row = row_of_entry(a, warp ? e1 - 1 : e0);
        if (lane_id() == 0) rows[warp] = row;
    }
    __syncthreads();
    const int64_t first = rows[0], count = rows[1] + 1 - first;
    for (int64_t b = 0; b < a.batches; ++b) {
        const T* w = batch_weights<T>(a, b);
        T* out = (T*)a.y + b * a.ldy;
        // whole runs where every base is aligned to RUN entries
        const bool vectors = aligned16(a.indices) && (uintptr_t)out % sizeof(Run<T, RUN>) == 0 &&
                             (!w || (uintptr_t)w % sizeof(Run<T, RUN>) == 0);
        for (int64_t s0 = 0; s0 < slices; s0 += window_slices) {
            const int64_t s1 = min(slices, s0 + window_slices), w0 = s0 * SLICE_OUTPUTS;
            const int64_t window = min(a.k, s1 * SLICE_OUTPUTS) - w0;
            __syncthreads();  // the last window's gathers are done
            stage_window(ys, (const T*)a.x + b * a.ldx + w0, window);
            if (threadIdx.x == 0) next = 0;
            __syncthreads();
            int64_t r = take_row(&next);
            Span span = r < count ? row_span(a, first + r, per_row, s0, s1, e0, e1) : Span{};
            while (r < count) {
                const int64_t r_next = take_row(&next);
                const Span next_span = r_next < count ? row_span(a, first + r_next, per_row, s0, s1, e0, e1) : Span{};
                window_run<T, A>(a, w, out, ys, w0, window, span.p, span.end, vectors, next_span.p, next_span.end);
                r = r_next, span = next_span;
            }
        }
    }
}

#define YW2Y(T, TN)                                                                                    \
    EVS_KERNEL(yw2y_n_##TN, (256), yw2y_n<T>) EVS_KERNEL(yw2y_n_plain_##TN, (256), yw2y_n_plain<T>)    \
    EVS_KERNEL(yw2y_t_##TN, (256, 4), yw2y_t<T>)                                                       \
    EVS_KERNEL(yw2y_columns_##TN, (256), yw2y_columns<T>)                                              \
    EVS_KERNEL(yw2y_t_by_column_##TN, (256), yw2y_t_by_column<T>)                                      \
    EVS_KERNEL(yw2y_t_windows_##TN, (WINDOW_THREADS, 1), yw2y_t_windows<T>)
EVS_FOR_FLOATS(YW2Y)
