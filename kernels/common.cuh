// Helpers shared by every evsparse kernel: the argument block, dtype conversions, how inputs
// are read (floats or events), the BLAS-style store and the plasticity clip.
//
// Every kernel takes one `Args` by value. The Rust side (src/cuda/launch.rs) mirrors it field
// for field; all fields are 8 bytes so both sides agree on the layout without padding rules.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

typedef __half f16;
typedef __nv_bfloat16 bf16;
typedef unsigned char u8;

// Programmatic dependent launch: on sm_90 the library launches every kernel with programmatic
// stream serialization (src/cuda/launch.rs), so a kernel's blocks may start while the kernel
// before it in the stream is still finishing, which hides most of the launch gap between the
// small kernels of a simulation step. Every kernel therefore begins by waiting until the grids
// before it have completed and their memory is visible: kernels are declared only through
// EVS_KERNEL / EVS_MAPS_KERNEL, which put that wait first. The one exception,
// EVS_MAPS_KERNEL_AFTER_OPENER, is for the second kernel of a call whose first kernel (its
// opener) signals its dependents early: see there.
__device__ __forceinline__ void wait_for_prior_grids() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream launch before this one's blocks exit. Called by an opener
// after its wait: once every block of the opener has called it, every grid before the opener
// has completed.
__device__ __forceinline__ void let_dependents_launch() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Entry of a kernel that loads before the wait what no kernel writes (the matrix's structure,
// uploaded by analysis before any call that reads it), then waits and lets its successor launch:
// a successor that does the same loads its structure while this one still runs (on the H200
// 1.65-1.69 graph µs a call where waiting first takes 1.94; triggering without such loads cost
// 0.23: bench/NOTES.md, "Loads before the wait"). Triggering after the wait keeps what
// EVS_MAPS_KERNEL_AFTER_OPENER relies on: a launch implies every grid before its predecessor
// has completed. Every thread calls it, those with nothing to do too.
__device__ __forceinline__ void enter_after_loads() {
    wait_for_prior_grids();
    let_dependents_launch();
}

// Read by the host when it loads the module (src/cuda/driver.rs): 1 where the image the driver
// picked for this device has the waits above, so launches may overlap their predecessors.
// Standalone probes that borrow these headers (bench/probe_*.cu, EVS_PROBE) load no module.
#if defined(EVS_PROBE)
#elif __CUDA_ARCH__ >= 900
extern "C" __device__ int evs_kernels_wait_for_prior_grids = 1;
#else
extern "C" __device__ int evs_kernels_wait_for_prior_grids = 0;
#endif

// A kernel `name(Args a)` with launch bounds `bounds` (parenthesised) that runs `body(a)`.
#define EVS_KERNEL(name, bounds, body) \
    extern "C" __global__ void __launch_bounds__ bounds name(Args a) { wait_for_prior_grids(); body(a); }
// A kernel whose body calls enter_after_loads itself, after loading only the matrix's structure.
#define EVS_KERNEL_LOADS_FIRST(name, bounds, body) \
    extern "C" __global__ void __launch_bounds__ bounds name(Args a) { body(a); }
// A product along the CSC mirror that reads the weights (in_csc_order).
#define EVS_CSC_KERNEL(name, bounds, body) \
    extern "C" __global__ void __launch_bounds__ bounds name(Args a) { wait_for_prior_grids(); body(in_csc_order(a)); }
// A kernel that writes the CSR weights: it marks their CSC-ordered copy stale first.
#define EVS_WEIGHTS_KERNEL(name, bounds, body)                                           \
    extern "C" __global__ void __launch_bounds__ bounds name(Args a) {                   \
        wait_for_prior_grids();                                                          \
        if (a.csc_stale && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *a.csc_stale = 1; \
        body(a);                                                                         \
    }
// EVS_KERNEL in clusters of `cluster` CTAs (sm_90 and later; elsewhere a plain kernel, for code
// that runs only on sm_90).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EVS_CLUSTER_DIMS(cluster) __cluster_dims__(cluster, 1, 1)
#else
#define EVS_CLUSTER_DIMS(cluster)
#endif
#define EVS_CLUSTER_KERNEL(name, bounds, cluster, body)                                  \
    extern "C" __global__ void EVS_CLUSTER_DIMS(cluster) __launch_bounds__ bounds name(Args a) { \
        wait_for_prior_grids();                                                          \
        body(a);                                                                         \
    }
// A kernel launched only right after its opener in the same call (a kernel that waits, then
// calls let_dependents_launch): it starts while the opener still runs, and `body` calls
// wait_for_prior_grids itself before it touches anything the opener writes. Its threads may
// read before that wait what the opener does not write: every grid before the opener has
// completed by then. Every thread waits before it exits too, so that the kernel never
// completes before its opener (the kernel after it waits for this one only).
#define EVS_KERNEL_AFTER_OPENER(name, bounds, body) \
    extern "C" __global__ void __launch_bounds__ bounds name(Args a) { body(a); wait_for_prior_grids(); }
// The same for kernels that take two TMA tensor maps before their Args.
#define EVS_MAPS_KERNEL(name, bounds, body)                                                            \
    extern "C" __global__ void __launch_bounds__ bounds name(const __grid_constant__ TensorMap map0,    \
                                                             const __grid_constant__ TensorMap map1, Args a) { \
        wait_for_prior_grids();                                                                        \
        body(&map0, &map1, a);                                                                         \
    }
// A maps kernel launched only right after its opener in the same call (a kernel that waits, then
// calls let_dependents_launch): it starts while the opener still runs, and `body` calls
// wait_for_prior_grids itself before it touches anything the opener writes. Its threads may
// read before that wait what no kernel of the call writes (the call's inputs): every grid
// before the opener has completed by then.
#define EVS_MAPS_KERNEL_AFTER_OPENER(name, bounds, body)                                               \
    extern "C" __global__ void __launch_bounds__ bounds name(const __grid_constant__ TensorMap map0,    \
                                                             const __grid_constant__ TensorMap map1, Args a) { \
        body(&map0, &map1, a);                                                                         \
    }

struct Args {
    const void* indptr;     // CSR/BSR row pointers (int32, or int64 when idx64)
    const int* indices;     // CSR/BSR column indices
    void* weights;          // CSR heterogeneous weights (NULL: homogeneous), BSR values
    const int64_t* colptr;  // CSC mirror: column pointers (k + 1)
    const int* rowind;      // CSC mirror: row of each entry
    const int64_t* perm;    // CSC mirror: CSR position of each entry
    const void* csc_weights;  // the hetero weights in CSC order (analysis' copy; NULL: none)
    unsigned* csc_stale;    // set once anything wrote the weights since that copy (in_csc_order)
    const int* order;       // rows ordered by length class (thread, warp, block); bsrmm: OrderedRow entries
    int64_t class_rows[3];  // rows in each length class
    const int64_t* chunks;  // (row, begin, end) of each chunk of the long rows
    int64_t n_chunks;
    const unsigned* slice_offsets;  // per row, where its entries of each output slice begin (below)
    int64_t slice_width;    // outputs of a slice where it is not SLICE_OUTPUTS (N's column slices)
    const int2* runs;       // per run of 32 CSR entries: its first entry's row, the next
                            // non-empty row (csr_post_even)
    const unsigned short* cols16;  // the column indices as uint16, the top bit set where the entry
                                   // lies in its run's next row (csr_post_even: k <= 8,192)
    const void* x;          // input (vector = one column)
    int64_t ldx;
    void* y;                // output
    int64_t ldy;
    const void* aux;        // traces, per-batch weights, dense weights
    int64_t ldaux;
    void* out2;             // second output (the count of event compaction)
    int64_t lines;          // candidate lines of an event-driven launch (input length)
    const int* spike_count; // spike lists: the device-side count of the indices in x (or of each list in live)
    const int* live;        // the active rows of each column of x, listed by a first launch (dense T)
    int64_t m, k, n;        // matrix rows and columns, columns of x and y
    int64_t nnz, batches;
    int64_t idx64;          // indptr is int64
    int64_t events;         // x holds events (active -> 1), not floats
    int64_t variant;        // a variant of the algorithm, where one kernel holds several (BSRMM_PAIRS)
    double alpha, beta, homo, lo, hi;
};

// A TMA tensor map (the driver's CUtensorMap: 128 opaque bytes), passed by value to the kernels
// that take one, as a __grid_constant__ parameter before their Args.
struct alignas(64) TensorMap {
    uint64_t opaque[16];
};

// Rows sorted by column, long enough, keep at analysis where their entries of each slice of
// SLICE_OUTPUTS columns begin, relative to the row's start: uint32, one per slice and the row's
// length last (src/core/csr.rs). output_slices and yw2y's y_windows read them.
#define SLICE_OUTPUTS 4096

// ---------------------------------------------------------------- dtypes
// f16/bf16 accumulate in f32, f64 in f64 (SPEC §3).
template <class T> struct AccOf { typedef float type; };
template <> struct AccOf<double> { typedef double type; };

__device__ __forceinline__ float to_f(f16 v) { return __half2float(v); }
__device__ __forceinline__ float to_f(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ double to_f(double v) { return v; }
__device__ __forceinline__ float to_f(u8 v) { return v ? 1.0f : 0.0f; }

// Stores an accumulator value, rounding once to the element type.
__device__ __forceinline__ void put(f16* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void put(bf16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
__device__ __forceinline__ void put(double* p, double v) { *p = v; }

// Active events: a bool byte != 0, a float > 0.
__device__ __forceinline__ bool active(u8 v) { return v != 0; }
template <class E> __device__ __forceinline__ bool active(E v) { return to_f(v) > 0.0f; }
__device__ __forceinline__ bool active(double v) { return v > 0.0; }

// An input value in accumulator precision: the value, or 1/0 for events.
template <class A, class In> __device__ __forceinline__ A value(In v, bool events) {
    if (events) return active(v) ? A(1) : A(0);
    return A(to_f(v));
}

// One input element in accumulator precision.
template <class A, class In> __device__ __forceinline__ A input(const In* x, int64_t i, bool events) {
    return value<A>(x[i], events);
}

// V adjacent elements, loaded with one vector load where aligned; a Pair is two.
template <class T, int V> struct alignas(V * sizeof(T)) Run { T v[V]; };
template <class In> using Pair = Run<In, 2>;

// Whether every row of a matrix at x with row stride ld starts on a Run<In, V> boundary.
template <class In, int V> __device__ __forceinline__ bool runs_aligned(const void* x, int64_t ld) {
    return (uintptr_t)x % sizeof(Run<In, V>) == 0 && ld % V == 0;
}
template <class In> __device__ __forceinline__ bool pairs_aligned(const void* x, int64_t ld) {
    return runs_aligned<In, 2>(x, ld);
}

// ---------------------------------------------------------------- spike inputs
// How event-driven kernels visit their live inputs. Inputs<In>: the entries of x (ldx apart),
// live where non-zero (floats as they are, events as 1). Inputs<SpikeList>: x holds int32
// indices, *a.spike_count of them, clamped to [0, a.lines] (the list's capacity); indices
// outside [0, limit) are skipped, so a bad list never reads or writes out of bounds.
struct SpikeList {};

// Global index of this warp, this thread's lane and the grid's warps.
__device__ __forceinline__ int64_t warp_id() { return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int64_t warps_in_grid() { return ((int64_t)gridDim.x * blockDim.x) >> 5; }

__device__ __forceinline__ int64_t listed(const Args& a) {
    const int64_t count = *a.spike_count;
    return count < 0 ? 0 : (count > a.lines ? a.lines : count);
}

// The t-th listed index, or -1 when it lies outside [0, limit) (a bad entry is skipped).
__device__ __forceinline__ int64_t listed_at(const Args& a, int64_t t, int64_t limit) {
    const int64_t r = ((const int*)a.x)[t];
    return r >= 0 && r < limit ? r : -1;
}

// each: f(r, v) for every live input r < limit among the candidates first, first + stride, ...
// each_line, for kernels whose warp walks a line: f(r, v, part, parts), the line's entries
// shared by `parts` warps of which this one is `part` (line_entries), so that a few live lines,
// long or not, still fill the GPU. An input vector: each block takes a run of candidates (a
// thread each, runs just long enough for the grid to cover them once, at most a block), lists
// the live ones in order from its warps' ballots, and its warps share every listed line. The
// host sizes the grid to fill the GPU (src/cuda/ops.rs, line_blocks). A spike list shares the
// grid's warps evenly among the listed lines.
#define EACH_LINE_THREADS 256
template <class In> struct Inputs {
    template <class A, class F> __device__ static void each(const Args& a, int64_t first, int64_t stride, int64_t limit, F f) {
        for (int64_t r = first; r < limit; r += stride) {
            const A v = value<A>(((const In*)a.x)[r * a.ldx], a.events);
            if (v != A(0)) f(r, v);
        }
    }
    // `blocks`: the first blocks of the grid that share the candidates (the others call it not).
    template <class A, class F> __device__ static void each_line(const Args& a, int64_t limit, F f, int64_t blocks = 0) {
        __shared__ unsigned live[EACH_LINE_THREADS / 32];
        __shared__ A values[EACH_LINE_THREADS];
        const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
        if (blocks == 0) blocks = gridDim.x;
        const int64_t cover = (limit + blocks - 1) / blocks, run = cover < blockDim.x ? cover : blockDim.x;
        for (int64_t base = blockIdx.x * run; base < limit; base += blocks * run) {
            const int64_t r = base + threadIdx.x;
            const A v = threadIdx.x < run && r < limit ? value<A>(((const In*)a.x)[r * a.ldx], a.events) : A(0);
            const unsigned ballot = __ballot_sync(0xffffffffu, v != A(0));
            if (lane_id() == 0) live[warp] = ballot;
            values[threadIdx.x] = v;
            __syncthreads();
            for (int w = 0; w < warps; w++)
                for (unsigned b = live[w]; b; b &= b - 1) {
                    const int t = w * 32 + __ffs(b) - 1;
                    f(base + t, values[t], warp, warps);
                }
            __syncthreads();
        }
    }
};
template <> struct Inputs<SpikeList> {
    template <class A, class F> __device__ static void each(const Args& a, int64_t first, int64_t stride, int64_t limit, F f) {
        const int64_t count = listed(a);
        for (int64_t t = first; t < count; t += stride) {
            const int64_t r = listed_at(a, t, limit);
            if (r >= 0) f(r, A(1));
        }
    }
    // Lane l loads slot l (inside the list's capacity) beside the count, so that the first 32
    // listed lines cost no round of loads after it (a short list's every line). Where a line
    // gets INTERLEAVED_PARTS_MIN warps or more (more than its entries need), warp w takes line
    // w % count, so that the parts with entries sit in the grid's first blocks, which start
    // first; else warp w takes line w / parts (bench/NOTES.md, "A short spike list read beside
    // its count").
    template <class A, class F> __device__ static void each_line(const Args& a, int64_t limit, F f) {
        constexpr unsigned INTERLEAVED_PARTS_MIN = 8;
        const int early = lane_id() < a.lines ? ((const int*)a.x)[lane_id()] : -1;
        // 32-bit: the count is an int32, and count * parts is at most the grid's warps or the count
        const unsigned count = (unsigned)listed(a), warps = (unsigned)warps_in_grid();
        const unsigned parts = count > 0 && warps > count ? warps / count : 1;
        const bool interleaved = parts >= INTERLEAVED_PARTS_MIN;
        for (unsigned w = (unsigned)warp_id(); w < count * parts; w += warps) {
            const unsigned t = interleaved ? w % count : w / parts, part = interleaved ? w / count : w % parts;
            const int r = t < 32 ? __shfl_sync(0xffffffffu, early, (int)t) : ((const int*)a.x)[t];
            if (r >= 0 && r < limit) f(r, A(1), part, parts);  // a bad entry is skipped
        }
    }
};

// The sum of v over lane `lane` and the lanes below it (the whole warp calls it).
__device__ __forceinline__ int warp_inclusive_sum(int v, int lane) {
    for (int o = 1; o < 32; o <<= 1) {
        const int up = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += up;
    }
    return v;
}

// block_exclusive_sum (below) with one barrier: the warp sums go to `warp_sums` (THREADS / 32
// ints of shared memory), then every warp scans them itself. The buffer may be written again
// only past another barrier: callers in a loop alternate two. (The scans of each_window keep
// block_exclusive_sum: with this one, more registers live across the barrier spilled in 9
// dense_mv kernels.)
template <int THREADS> __device__ int block_exclusive_sum_in(int v, int* total, int* warp_sums) {
    constexpr int WARPS = THREADS / 32;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int inclusive = warp_inclusive_sum(v, lane);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    const int sum = lane < WARPS ? warp_sums[lane] : 0;
    const int sums = warp_inclusive_sum(sum, lane);
    *total = __shfl_sync(0xffffffffu, sums, WARPS - 1);
    return __shfl_sync(0xffffffffu, sums - sum, warp) + inclusive - v;
}

// The sum of v over the block's threads before this one (a block of THREADS threads calls it,
// THREADS <= 1024), and their total in *total: warp sums, then one warp sums the warps' sums.
template <int THREADS> __device__ int block_exclusive_sum(int v, int* total) {
    constexpr int WARPS = THREADS / 32;
    __shared__ int warp_sums[WARPS];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int inclusive = warp_inclusive_sum(v, lane);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const int sum = warp_inclusive_sum(lane < WARPS ? warp_sums[lane] : 0, lane);
        if (lane < WARPS) warp_sums[lane] = sum;
    }
    __syncthreads();
    const int below = (warp ? warp_sums[warp - 1] : 0) + inclusive - v;
    *total = warp_sums[WARPS - 1];
    __syncthreads();  // warp_sums is rewritten by the next call
    return below;
}

// Whether events e0 to e0 + 15 lie in one aligned 16-byte stretch (bits16_vector reads them).
template <class In> __device__ __forceinline__ bool vector16(const In* x, int64_t ldx, int64_t e0, int64_t limit) {
    return ldx == 1 && e0 + 16 <= limit && (uintptr_t)(x + e0) % 16 == 0;
}

// Bit j set where byte j of q is non-zero.
__device__ __forceinline__ unsigned nonzero_bytes(uint4 q) {
    const unsigned words[4] = {q.x, q.y, q.z, q.w};
    unsigned bits = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)  // bit 0 of each non-zero byte; the product gathers them into bits 24-27
        bits |= (((__vcmpne4(words[k], 0) & 0x01010101u) * 0x01020408u) >> 24 & 0xfu) << (4 * k);
    return bits;
}

// The n < 16 bytes at x (16-byte aligned), zeros after them, none read past x + n: one aligned
// load for each power of two in n, all issued at once. Byte by byte, ptxas issued the loads a
// few at a time, each wave after the last one's tests, and the block-wide mask copy of post by
// rows waited for its one thread: 0.5 graph µs at 5,000 columns (bench/NOTES.md, "The tail of
// an event vector").
__device__ __forceinline__ uint4 head_bytes(const u8* x, int n) {
    const int at = n & 8;  // where the part under 8 bytes starts
    unsigned long long whole = 0, part = 0;
    if (n & 8) whole = *(const unsigned long long*)x;
    if (n & 4) part = *(const unsigned*)(x + at);
    if (n & 2) part |= (unsigned long long)*(const unsigned short*)(x + at + (n & 4)) << 8 * (n & 4);
    if (n & 1) part |= (unsigned long long)x[at + (n & 6)] << 8 * (n & 6);
    const unsigned long long lo = at ? whole : part, hi = at ? part : 0;
    return make_uint4((unsigned)lo, (unsigned)(lo >> 32), (unsigned)hi, (unsigned)(hi >> 32));
}

// Whether events from e0 on are contiguous and start 16-byte aligned.
template <class In> __device__ __forceinline__ bool aligned16(const In* x, int64_t ldx, int64_t e0) {
    return ldx == 1 && (uintptr_t)(x + e0) % 16 == 0;
}

// The live bits of the 16 events at x (16-byte aligned), in 16-byte loads.
template <class In, class Live> __device__ __forceinline__ unsigned bits16_vector(const In* x, Live live) {
    constexpr int PER_LOAD = 16 / sizeof(In);
    unsigned bits = 0;
    if constexpr (std::is_same<In, u8>::value) {
        bits = nonzero_bytes(*(const uint4*)x);
    } else {
        Run<In, PER_LOAD> v[16 / PER_LOAD];
#pragma unroll
        for (int q = 0; q < 16 / PER_LOAD; q++) v[q] = ((const Run<In, PER_LOAD>*)x)[q];
#pragma unroll
        for (int j = 0; j < 16; j++) bits |= (unsigned)live(v[j / PER_LOAD].v[j % PER_LOAD]) << j;
    }
    return bits;
}

// Bits of the inputs among the 16 from x[e0 * ldx] that pass `live` (bit j: input e0 + j), none
// at or past limit: 16-byte loads where they are contiguous and aligned, one load each otherwise
// (a window's threads past the limit would otherwise spend ~150 instructions each on
// predicated-off loads). Bytes are tested four at a time (__vcmpne4), as every test the kernels
// make of a u8 input (a bool event) is "non-zero".
template <class In, class Live>
__device__ unsigned bits16(const In* x, int64_t ldx, int64_t e0, int64_t limit, Live live) {
    if (e0 >= limit) return 0;
    if (vector16(x, ldx, e0, limit)) return bits16_vector(x + e0, live);
    if constexpr (std::is_same<In, u8>::value)  // the short stretch at the end of an aligned vector
        if (aligned16(x, ldx, e0)) return nonzero_bytes(head_bytes(x + e0, (int)(limit - e0)));
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < 16; j++) bits |= (unsigned)(e0 + j < limit && live(x[(e0 + j) * ldx])) << j;
    return bits;
}

// The 16 events from x[e0 * ldx] as 16 bytes, non-zero where `live` holds (none at or past limit):
// bool events that lie aligned as they are, other inputs' bits spread one to a byte.
template <class In, class Live>
__device__ uint4 live_bytes16(const In* x, int64_t ldx, int64_t e0, int64_t limit, Live live) {
    if constexpr (std::is_same<In, u8>::value)
        if (vector16(x, ldx, e0, limit)) return *(const uint4*)(x + e0);
    const unsigned bits = bits16(x, ldx, e0, limit, live);
    auto spread = [](unsigned nibble) { return (nibble & 0xfu) * 0x00204081u & 0x01010101u; };  // bit i to byte i
    return make_uint4(spread(bits), spread(bits >> 4), spread(bits >> 8), spread(bits >> 12));
}

// The active events among [start, stop) (event e at x[e * ldx]) listed in order into out, by a
// block of THREADS threads; returns how many. A tile gives each thread 16 consecutive events
// (bits16: one 16-byte load of bools) and a scan of one barrier places the actives (the tiles
// alternate two buffers of warp sums): the whole step 4,000 10.83 -> 9.58 graph µs for its two
// one-block compactions against byte loads and three barriers (bench/NOTES.md, "One-block
// compaction").
template <int THREADS, class E>
__device__ int64_t list_active(const E* x, int64_t ldx, int64_t start, int64_t stop, int* out) {
    __shared__ int warp_sums[2][THREADS / 32];
    int64_t listed = 0;
    int tile = 0;
    for (int64_t base = start; base < stop; base += THREADS * 16, tile ^= 1) {
        const int64_t first = base + threadIdx.x * 16;
        unsigned live = bits16(x, ldx, first, stop, [](E v) { return active(v); });
        int total;
        int at = block_exclusive_sum_in<THREADS>(__popc(live), &total, warp_sums[tile]);
        for (; live; live &= live - 1) out[listed + at++] = (int)(first + __ffs(live) - 1);
        listed += total;
    }
    return listed;
}

// f(count, row(t), value(r)) for the live inputs r < limit, a block of THREADS threads calling
// it whole: a spike list as it lies (t < count: row(t) its t-th entry, -1 where out of range),
// or the inputs [begin, limit) of an event or float vector (begin a multiple of WINDOW_RUN, so
// that the loads stay 16 bytes) a window of THREADS * WINDOW_RUN inputs at a time (WINDOW_RUN
// consecutive ones a thread, their loads in flight together, one block scan), listed in
// `window` (that many entries) as offsets from the window's start.
#define WINDOW_RUN 32
template <int THREADS, class A, class In, class F>
__device__ void each_window(const Args& a, int64_t begin, int64_t limit, unsigned short* window, F f) {
    static_assert(THREADS * WINDOW_RUN <= 65536, "offsets fit in 16 bits");
    if constexpr (std::is_same<In, SpikeList>::value) {
        f((int)listed(a), [&](int t) { return listed_at(a, t, limit); }, [](int64_t) { return A(1); });
    } else {
        for (int64_t base = begin; base < limit; base += THREADS * WINDOW_RUN) {
            constexpr int HALVES_AT_ONCE = sizeof(In) < 8 ? 2 : 1;  // f64 inputs: fewer spills
            unsigned live = 0;
#pragma unroll HALVES_AT_ONCE
            for (int h = 0; h < 2; h++)
                live |= bits16((const In*)a.x, a.ldx, base + threadIdx.x * WINDOW_RUN + 16 * h, limit,
                               [&](In v) { return value<A>(v, a.events) != A(0); })
                        << (16 * h);
            int count;
            int at = block_exclusive_sum<THREADS>(__popc(live), &count);
            for (; live; live &= live - 1) window[at++] = (unsigned short)(threadIdx.x * WINDOW_RUN + __ffs(live) - 1);
            __syncthreads();
            f(count, [&](int t) { return base + window[t]; },
              [&](int64_t r) { return a.events ? A(1) : A(to_f(((const In*)a.x)[r * a.ldx])); });
            __syncthreads();  // the next window overwrites this one's list
        }
    }
}

// g(p) for the entries p of [begin, end) this lane takes when `parts` warps share them: runs
// of 32 (one per lane, coalesced), warp `part` taking every parts-th run.
template <class G>
__device__ __forceinline__ void line_entries(int64_t begin, int64_t end, int64_t part, int64_t parts, G g) {
    for (int64_t p = begin + part * 32 + lane_id(); p < end; p += 32 * parts) g(p);
}

// The CSR row range [begin, end) of row i.
__device__ __forceinline__ int64_t row_start(const Args& a, int64_t i) {
    return a.idx64 ? ((const int64_t*)a.indptr)[i] : (int64_t)((const int*)a.indptr)[i];
}

// Weight of stored entry j in accumulator precision.
template <class T, class A> __device__ __forceinline__ A weight(const Args& a, int64_t j) {
    return a.weights ? A(to_f(((const T*)a.weights)[j])) : A(a.homo);
}

// C = alpha * result + beta * C, rounded once; beta == 0 never reads C (it may hold NaN).
template <class T, class A> __device__ __forceinline__ void blend(T* slot, A result, const Args& a) {
    A v = A(a.alpha) * result;
    if (a.beta != 0.0) v += A(a.beta) * A(to_f(*slot));
    put(slot, v);
}

// *w = clip(v, lo, hi); NaN passes through as on the CPU (its comparisons are false): two
// selects, no branch. Loops over many entries convert the bounds once and pass them.
template <class T, class A> __device__ __forceinline__ void clip_put(T* w, A v, A lo, A hi) {
    v = v < lo ? lo : v;
    put(w, v > hi ? hi : v);
}
template <class T, class A> __device__ __forceinline__ void clip_put(T* w, A v, const Args& a) {
    clip_put(w, v, A(a.lo), A(a.hi));
}
// clip(v, lo, hi) as clip_put's selects give it (a NaN passes; lo <= hi and neither is NaN:
// core/ops.rs) in two instructions, not four.
__device__ __forceinline__ float clip_nan(float v, float lo, float hi) {
    asm("max.NaN.f32 %0, %0, %1;\n\tmin.NaN.f32 %0, %0, %2;" : "+f"(v) : "f"(lo), "f"(hi));
    return v;
}

// w = clip(w + delta, lo, hi), in accumulator precision.
template <class T, class A> __device__ __forceinline__ void clip_add(T* w, A delta, const Args& a) {
    clip_put(w, A(to_f(*w)) + delta, a);
}

// The lines of a matrix a kernel walks. CsrWalk: row i, whose entry p reads input
// indices[p] (N) or adds into output indices[p] (T). CscWalk: column c of the cached CSC
// mirror, whose entry p is row rowind[p] and CSR entry perm[p].
struct CsrWalk {
    __device__ static int64_t count(const Args& a) { return a.m; }
    __device__ static int64_t sources(const Args& a) { return a.k; }  // the range of source()
    __device__ static int64_t begin(const Args& a, int64_t i) { return row_start(a, i); }
    __device__ static int64_t end(const Args& a, int64_t i) { return row_start(a, i + 1); }
    __device__ static int64_t source(const Args& a, int64_t p) { return a.indices[p]; }
    __device__ static int64_t entry(const Args&, int64_t p) { return p; }
};
struct CscWalk {
    __device__ static int64_t count(const Args& a) { return a.k; }
    __device__ static int64_t sources(const Args& a) { return a.m; }
    __device__ static int64_t begin(const Args& a, int64_t c) { return a.colptr[c]; }
    __device__ static int64_t end(const Args& a, int64_t c) { return a.colptr[c + 1]; }
    __device__ static int64_t source(const Args& a, int64_t p) { return a.rowind[p]; }
    // without perm the weights are in CSC order (in_csc_order)
    __device__ static int64_t entry(const Args& a, int64_t p) { return a.perm ? a.perm[p] : p; }
};

// The arguments of a product along the CSC mirror, reading analysis' CSC-ordered copy of the
// weights (entry p is weight p: one run per column, no perm) unless something wrote the weights
// since. The test is on the device, after the wait for prior grids, so that a captured graph
// replayed after plasticity (which sets csc_stale) or a weights view reads the weights themselves.
__device__ __forceinline__ Args in_csc_order(Args a) {
    if (a.csc_weights && !*a.csc_stale) a.weights = (void*)a.csc_weights, a.perm = nullptr;
    return a;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// ---------------------------------------------------------------- instantiation
// Kernels are C templates instantiated under stable names: <family>_<T> or <family>_<T>_<In>,
// with dtype names as in the C API (f16, bf16, f32, f64, bool). The Rust side builds the same
// names (src/cuda/kernels.rs).
#define EVS_FOR_FLOATS(X) X(f16, f16) X(bf16, bf16) X(float, f32) X(double, f64)
#define EVS_FOR_INPUTS(X, T, TN) X(T, TN, u8, bool) X(T, TN, f16, f16) X(T, TN, bf16, bf16) \
    X(T, TN, float, f32) X(T, TN, double, f64)
// ... and spike lists, named for their int32 indices.
#define EVS_FOR_SPIKE_INPUTS(X, T, TN) EVS_FOR_INPUTS(X, T, TN) X(T, TN, SpikeList, i32)
