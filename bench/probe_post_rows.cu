// CSR plasticity post at high activity (issue #8: 5,000² x 500 a row, 10 % of the columns
// active, target <= 5 graph µs): the library walks the active columns through the CSC mirror,
// one scattered read-modify-write of w per entry (250,000 of them, ~110 G sectors/s of L2
// requests, bench/NOTES.md); the other order walks every row (2.5 M column indices read
// coalesced from L2) and updates the entries whose column is active, a bit of a shared-memory
// mask built by each block from the events or the spike list, so that a warp's writes land in
// the row's own lines. Variants: the column walk (as warp_per_line: warps share the listed
// columns); the row walk on events and on lists, a row split in SPLIT parts a warp each, U runs
// of 32 entries a lane in flight (rows, rows4: 16-byte loads); every entry in even shares, a
// run record giving each lane's row (rows_even); and post_even, the one-launch shape a library
// kernel would take (mask, count, then rows_even or the column walk); ballot_parts, no listing at
// all (32 candidate lines a warp task and a part of each live one, the library's `line_parts`),
// for post and pre. Each variant's w is checked against a CPU pass from the same start; graph
// and event µs per call. The argument is one in how many columns is live (10: 10 %, 40: 2.5 %).
// The runs table of each session is in bench/NOTES.md ("Post by rows", "Plasticity by line parts").
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_post_rows.cu -o /tmp/ppr && /tmp/ppr 10 && /tmp/ppr 40
//   /tmp/ppr 10 mask: what the rows walk pays for its mask (mask_variants)
//   /tmp/ppr 10 lib: only the library's kernel beside the probe's shapes (three rounds), and walk8
//   /tmp/ppr 10 lib 4800: the same on 4,800 rows (a third argument sets the rows)
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "../kernels/plasticity.cu"  // the library's csr_post_even, launched in this harness (`mask`)

#include <functional>
#include <random>

struct Net {
    int m, k;
    const int *indptr, *indices;        // CSR
    const int *colptr, *perm, *rowind;  // its CSC mirror
    const unsigned char* events;        // k bools
    const int *list, *count;            // the active columns
    const float* trace;                 // per row (pre-synaptic)
    float* w;
    int nnz;
    const int3* runs;  // per run of 32 entries: its first entry's row, the lane where the next
                       // non-empty row begins (32: none), that row (rows_even; kept at analysis)
};

__device__ __forceinline__ float clipped(float v) { return fminf(fmaxf(v, -1.f), 1.f); }

// The grid's warps share `count` live columns (parts a column; column t is col(t)), an entry a
// lane at a time.
template <class Col> __device__ void column_walk(const Net& q, int count, Col col) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, parts = count > 0 && warps > count ? warps / count : 1;
    for (int w = warp; w < count * parts; w += warps) {
        const int c = col(w / parts), part = w % parts;
        for (int p = q.colptr[c] + part * 32 + lane; p < q.colptr[c + 1]; p += 32 * parts) {
            float* at = q.w + q.perm[p];
            *at = clipped(*at + q.trace[q.rowind[p]]);
        }
    }
}

// The library's shape on a spike list: the listed columns through the CSC mirror.
__global__ void columns(Net q) {
    column_walk(q, *q.count, [&](int t) { return q.list[t]; });
}

// Bit 0 of each non-zero byte of a word, gathered into 4 bits.
__device__ __forceinline__ unsigned nibble(unsigned word) { return ((__vcmpne4(word, 0) & 0x01010101u) * 0x01020408u) >> 24 & 0xfu; }

// Word wd of the mask of the n events: events 32 wd to 32 wd + 31 (two 16-byte loads).
__device__ __forceinline__ unsigned event_word(const Net& q, int wd, int n) {
    const int e0 = wd * 32;
    unsigned b = 0;
    if (e0 + 32 <= n) {
        const uint4 lo = *(const uint4*)(q.events + e0), hi = *(const uint4*)(q.events + e0 + 16);
        const unsigned v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int j = 0; j < 8; j++) b |= nibble(v[j]) << (4 * j);
    } else {
        for (int j = 0; e0 + j < n; j++) b |= (unsigned)(q.events[e0 + j] != 0) << j;
    }
    return b;
}

// The active columns as bits in shared memory: from the events (32 a thread, two 16-byte loads)
// or from the list.
template <bool EVENTS> __device__ void active_bits(const Net& q, unsigned* bits) {
    const int words = (q.k + 31) / 32;
    if (EVENTS) {
        for (int wd = threadIdx.x; wd < words; wd += blockDim.x) {
            bits[wd] = event_word(q, wd, q.k);
        }
    } else {
        for (int wd = threadIdx.x; wd < words; wd += blockDim.x) bits[wd] = 0;
        __syncthreads();
        const int count = *q.count;
        for (int t = threadIdx.x; t < count; t += blockDim.x) {
            const int c = q.list[t];
            atomicOr(&bits[c >> 5], 1u << (c & 31));
        }
    }
    __syncthreads();
}

// f(begin, end, trace of the row) for this warp's parts of rows, SPLIT parts a row, each
// starting at a multiple of ALIGN entries past the row's start.
template <int SPLIT, int ALIGN, class F> __device__ void each_row_part(const Net& q, F f) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    for (int item = warp; item < q.m * SPLIT; item += warps) {
        const int i = item / SPLIT, part = item % SPLIT;
        const int b = q.indptr[i], e = q.indptr[i + 1], len = ((e - b + SPLIT - 1) / SPLIT + ALIGN - 1) / ALIGN * ALIGN;
        const int pb = b + part * len;
        f(pb, min(e, pb + len), q.trace[i]);
    }
}

// Every row, SPLIT parts a warp each: U runs of 32 column indices a lane loaded, then the
// active entries' weights, then their stores.
template <bool EVENTS, int SPLIT, int U> __global__ void rows(Net q) {
    extern __shared__ unsigned bits[];
    active_bits<EVENTS>(q, bits);
    const int lane = threadIdx.x & 31;
    each_row_part<SPLIT, 1>(q, [&](int pb, int pe, float t) {
        for (int p0 = pb + lane; p0 < pe; p0 += 32 * U) {
            int c[U];
#pragma unroll
            for (int u = 0; u < U; u++) c[u] = p0 + 32 * u < pe ? q.indices[p0 + 32 * u] : -1;
            bool on[U];
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                on[u] = c[u] >= 0 && (bits[c[u] >> 5] >> (c[u] & 31) & 1);
                if (on[u]) v[u] = q.w[p0 + 32 * u];
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (on[u]) q.w[p0 + 32 * u] = clipped(v[u] + t);
        }
    });
}

// The same with 16-byte loads: a lane takes 4 consecutive entries (U groups of 4, 128 entries
// apart), its weights read and written as one float4 where any of the 4 is active (the others
// written back unchanged: no other thread touches them). Parts of a row start at multiples of 4
// (rows here do: 500 entries).
template <bool EVENTS, int SPLIT, int U> __global__ void rows4(Net q) {
    extern __shared__ unsigned bits[];
    active_bits<EVENTS>(q, bits);
    const int lane = threadIdx.x & 31;
    each_row_part<SPLIT, 4>(q, [&](int pb, int pe, float t) {
        for (int p0 = pb + 4 * lane; p0 < pe; p0 += 128 * U) {
            int4 c[U];
#pragma unroll
            for (int u = 0; u < U; u++) c[u] = p0 + 128 * u < pe ? *(const int4*)(q.indices + p0 + 128 * u) : make_int4(-1, -1, -1, -1);
            unsigned on[U];
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int cs[4] = {c[u].x, c[u].y, c[u].z, c[u].w};
                on[u] = 0;
#pragma unroll
                for (int j = 0; j < 4; j++)
                    on[u] |= (unsigned)(cs[j] >= 0 && p0 + 128 * u + j < pe && (bits[cs[j] >> 5] >> (cs[j] & 31) & 1)) << j;
                if (on[u]) v[u] = *(const float4*)(q.w + p0 + 128 * u);
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (!on[u]) continue;
                float4 r = v[u];
                if (on[u] & 1) r.x = clipped(r.x + t);
                if (on[u] & 2) r.y = clipped(r.y + t);
                if (on[u] & 4) r.z = clipped(r.z + t);
                if (on[u] & 8) r.w = clipped(r.w + t);
                *(float4*)(q.w + p0 + 128 * u) = r;
            }
        }
    });
}

// Every entry in even shares, so that a warp's trips do not repeat per row part: warp w takes R
// runs of 32 entries from run R w, loads all their column indices and run records (one trip),
// then the live entries' weights and their rows' traces (a second), then stores. A run's record
// (kept at analysis, 12 bytes a run here) says which row each lane's entry is in without
// indptr. R trades registers (about 5 a run) against the runs in flight.
template <int R> __device__ void even_runs(const Net& q, const unsigned* bits) {
    const int lane = threadIdx.x & 31, runs = (q.nnz + 31) / 32;
    const int warps = gridDim.x * blockDim.x / 32;
    for (int run0 = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * R; run0 < runs; run0 += warps * R) {
        int c[R];
        int3 run[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            const int p = (run0 + j) * 32 + lane;
            c[j] = p < q.nnz ? q.indices[p] : -1;
            run[j] = run0 + j < runs ? q.runs[run0 + j] : make_int3(0, 32, 0);
        }
        bool on[R];
        float v[R], t[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            on[j] = c[j] >= 0 && (bits[c[j] >> 5] >> (c[j] & 31) & 1);
            if (on[j]) v[j] = q.w[(run0 + j) * 32 + lane], t[j] = q.trace[lane < run[j].y ? run[j].x : run[j].z];
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            if (on[j]) q.w[(run0 + j) * 32 + lane] = clipped(v[j] + t[j]);
    }
}

template <bool EVENTS, int R> __global__ void rows_even(Net q) {
    extern __shared__ unsigned bits[];
    active_bits<EVENTS>(q, bits);
    even_runs<R>(q, bits);
}

// The library's shape of it on an event vector of up to 8,192 neurons (blocks of 256, a word of
// the mask a thread): each block builds the mask, counts it in one scan, and walks the rows in
// even shares where at least k / 16 columns are live, else the live columns through the CSC
// mirror, listed from the mask (fewer than k / 16 <= 512 of them). One launch either way; the
// count never leaves the device.
constexpr int EVEN_THREADS = 256, EVEN_WORDS = EVEN_THREADS, SPARSE_MAX = EVEN_WORDS * 32 / 16;
template <int R> __global__ void __launch_bounds__(EVEN_THREADS) post_even(Net q) {
    __shared__ unsigned bits[EVEN_WORDS];
    __shared__ unsigned short listed[SPARSE_MAX];
    __shared__ int warp_sums[EVEN_THREADS / 32];
    const int t = threadIdx.x, lane = t & 31, warp = t / 32;
    const unsigned word = t < (q.k + 31) / 32 ? event_word(q, t, q.k) : 0;
    bits[t] = word;
    int inclusive = __popc(word);
    for (int o = 1; o < 32; o <<= 1) {
        const int n = __shfl_up_sync(~0u, inclusive, o);
        if (lane >= o) inclusive += n;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    int count = 0, at = inclusive - __popc(word);
    for (int w = 0; w < EVEN_THREADS / 32; w++) count += warp_sums[w], at += w < warp ? warp_sums[w] : 0;
    if (count * 16 >= q.k) {
        even_runs<R>(q, bits);
        return;
    }
    for (unsigned b = word; b; b &= b - 1) listed[at++] = (unsigned short)(t * 32 + __ffs(b) - 1);
    __syncthreads();
    column_walk(q, count, [&](int i) { return (int)listed[i]; });
}

// Pre on the same matrix (events over rows, the trace over columns), for the ≤ 4 µs target of
// pre 5,000² events: the library lists the live rows (windowed, 5.1 graph µs; its list form 3.2).
// pre_list: warps share the listed rows (the list form's shape). pre_even: the rows' mask from
// the events, then every run of 32 entries in even shares, its record giving each lane's row:
// a live lane loads its column and weight (trip 2), its trace (3), then stores; a run of a
// silent row costs its record only.
__global__ void pre_list(Net q) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, count = *q.count, parts = count > 0 && warps > count ? warps / count : 1;
    for (int w = warp; w < count * parts; w += warps) {
        const int i = q.list[w / parts], part = w % parts;
        for (int p = q.indptr[i] + part * 32 + lane; p < q.indptr[i + 1]; p += 32 * parts)
            q.w[p] = clipped(q.w[p] + q.trace[q.indices[p]]);
    }
}

template <int R> __global__ void __launch_bounds__(EVEN_THREADS) pre_even(Net q) {
    __shared__ unsigned bits[EVEN_WORDS];
    bits[threadIdx.x] = threadIdx.x < (q.m + 31) / 32 ? event_word(q, threadIdx.x, q.m) : 0;
    __syncthreads();
    const int lane = threadIdx.x & 31, runs = (q.nnz + 31) / 32, warps = gridDim.x * blockDim.x / 32;
    for (int run0 = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * R; run0 < runs; run0 += warps * R) {
        int3 run[R];
#pragma unroll
        for (int j = 0; j < R; j++) run[j] = run0 + j < runs ? q.runs[run0 + j] : make_int3(0, 32, 0);
        bool on[R];
        int c[R];
        float v[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            const int p = (run0 + j) * 32 + lane, row = lane < run[j].y ? run[j].x : run[j].z;
            on[j] = p < q.nnz && (bits[row >> 5] >> (row & 31) & 1);
            if (on[j]) c[j] = q.indices[p], v[j] = q.w[p];
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            if (on[j]) q.w[(run0 + j) * 32 + lane] = clipped(v[j] + q.trace[c[j]]);
    }
}

// The updates of U entries a lane (at[u]: a CSR entry for pre, a CSC position for post; -1:
// none): their indices, then weights and traces, then stores, so that each step's loads are in
// flight together.
template <bool POST, int U> __device__ __forceinline__ void update_entries(const Net& q, const int (&at)[U]) {
    if (POST) {
        int wp[U], r[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (at[u] >= 0) wp[u] = q.perm[at[u]], r[u] = q.rowind[at[u]];
        float v[U], t[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (at[u] >= 0) v[u] = q.w[wp[u]], t[u] = q.trace[r[u]];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (at[u] >= 0) q.w[wp[u]] = clipped(v[u] + t[u]);
    } else {
        int c[U];
        float v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (at[u] >= 0) c[u] = q.indices[at[u]], v[u] = q.w[at[u]];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (at[u] >= 0) q.w[at[u]] = clipped(v[u] + q.trace[c[u]]);
    }
}

// No listing at all (pre and post on events): warp task t is group t / P of 32 candidate lines
// (rows for pre, columns for post) and part t % P of each; a ballot finds the group's live lines
// (one 32-byte load), each lane takes its own line's bounds and part, a warp scan of the parts'
// lengths lays the warp's entries end to end, and lanes take them U at a time in flight, a
// 5-step shuffle search naming each entry's line. No barrier and no shared memory: trips are
// events, bounds, entries (pre: index and weight; post: perm and rowind), then trace (and post's
// weight), as in the list form.
template <bool POST, int P, int U, bool PDL = false> __global__ void ballot_parts(Net q) {
    if (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");  // as the library's kernels start
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, lines = POST ? q.k : q.m, groups = (lines + 31) / 32;
    const int* ptr = POST ? q.colptr : q.indptr;
    const int parts = P ? P : max(1, min(warps / groups, (POST ? q.nnz / q.k : q.nnz / q.m) / 8));
    for (int task = warp; task < groups * parts; task += warps) {
        const int line = task / parts * 32 + lane, part = task % parts;
        int pb = 0, n = 0;
        if (line < lines && q.events[line]) {
            const int b = ptr[line], len = ptr[line + 1] - b;
            pb = b + len * part / parts;
            n = b + len * (part + 1) / parts - pb;
        }
        int end = n;  // inclusive scan of n
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(~0u, end, o);
            if (lane >= o) end += v;
        }
        const int total = __shfl_sync(~0u, end, 31);
        for (int base = 0; base < total; base += 32 * U) {
            int at[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int idx = base + 32 * u + lane;
                int s = 0;  // first lane whose inclusive end exceeds idx
#pragma unroll
                for (int step = 16; step; step >>= 1)
                    if (__shfl_sync(~0u, end, s + step - 1) <= idx) s += step;
                const int start = __shfl_sync(~0u, end - n, s), first = __shfl_sync(~0u, pb, s);
                at[u] = idx < total ? first + idx - start : -1;
            }
            update_entries<POST, U>(q, at);
        }
    }
}

// Line parts balanced by weight over wider groups (a prepared idea, issue #8): warp task t is
// group t / P of 32 G candidate lines (G consecutive a lane) and share t % P of the group's live
// entries laid end to end (a part of the concatenation, not of each line), so a task carries its
// group's weight / P and wider groups vary less (Poisson: relative spread 1 / sqrt(live lines)).
// An entry's line: a shuffle search for its lane, then that lane's G lengths and starts.
template <bool POST, int G, int P, int U> __global__ void ballot_wide(Net q) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, lines = POST ? q.k : q.m, groups = (lines + 32 * G - 1) / (32 * G);
    const int* ptr = POST ? q.colptr : q.indptr;
    for (int task = warp; task < groups * P; task += warps) {
        const int l0 = task / P * 32 * G + lane * G, part = task % P;
        int b[G], n[G], mine = 0;
#pragma unroll
        for (int i = 0; i < G; i++) {
            b[i] = 0, n[i] = 0;
            if (l0 + i < lines) {
                b[i] = ptr[l0 + i];
                if (q.events[l0 + i]) n[i] = ptr[l0 + i + 1] - b[i];
            }
            mine += n[i];
        }
        int end = mine;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(~0u, end, o);
            if (lane >= o) end += v;
        }
        const int total = __shfl_sync(~0u, end, 31), lo = total * part / P, hi = total * (part + 1) / P;
        for (int base = lo; base < hi; base += 32 * U) {
            int at[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int idx = base + 32 * u + lane;
                int src = 0;
#pragma unroll
                for (int step = 16; step; step >>= 1)
                    if (__shfl_sync(~0u, end, src + step - 1) <= idx) src += step;
                int off = idx - __shfl_sync(~0u, end - mine, src), p = -1;
#pragma unroll
                for (int i = 0; i < G; i++) {
                    const int ni = __shfl_sync(~0u, n[i], src), bi = __shfl_sync(~0u, b[i], src);
                    if (p < 0 && off < ni) p = bi + off;
                    else if (p < 0) off -= ni;
                }
                at[u] = idx < hi ? p : -1;
            }
            update_entries<POST, U>(q, at);
        }
    }
}

// What the library's rows walk (kernels/plasticity.cu csr_post_even, f32: even_runs4 on 16-bit
// column indices) pays ahead of the walk (argument `mask`): each block builds the live columns'
// mask from the k bool events (5 KB a block, all blocks at once), against the mask read from a
// bit vector in global memory (1 KB a block), that bit vector in 16 copies (a block reads copy
// b % 16: the same lines asked for by 16 times fewer blocks), built once by a cluster of 8 (each
// block 1/8 of the words, the rest over DSMEM), and no mask at all (a fixed pattern: the walk
// alone; its error is not a check); blocks of 128 to 1,024 threads; with the grid-uniform sample
// first (the library's: 16 events a lane, spread; 4 a lane; 128 in a row) or the exact count
// from the mask after it. Launched as the library launches (griddepcontrol.wait first).
// The first row of each round is the library's own csr_post_even_f32_bool on the same data, as
// src/cuda/ops.rs launches it (run `mask` at 10: its line-parts branch would need the 64-bit
// CSC mirror this probe does not build). bench/NOTES.md, "Post by rows: 16-bit columns, and
// what the walk's prologue costs".
constexpr int MASK_THREADS = 256, MASK_BLOCKS_PER_SM = 6, MASK_COPIES = 16, MASK_CLUSTER = 8;
struct Walk4 {
    const unsigned short* cols16;
    const int4* runs;   // the library's records: row, lane of the next row's start, that row
    const unsigned* gmask;  // MASK_COPIES copies of MASK_THREADS words
};

// E consecutive entries a lane (4: 128 a warp round, one 8-byte load of their 16-bit columns;
// 8: 256 a round, one 16-byte load, half the rounds and half the records and traces a lane
// loads), the run's record, E / 4 16-byte loads and stores of weights where any is live.
template <int E> __device__ __forceinline__ void walk_runs(const Net& q, const Walk4& k, const unsigned* live) {
    typedef typename std::conditional<E == 4, uint2, uint4>::type Columns;
    const int lane = threadIdx.x & 31, blocks = (q.nnz + 32 * E - 1) / (32 * E);
    const int warps = gridDim.x * blockDim.x / 32, pos = E * (lane % (32 / E));
    for (int b = (blockIdx.x * blockDim.x + threadIdx.x) / 32; b < blocks; b += warps) {
        const int p = b * 32 * E + E * lane;
        if (p >= q.nnz) continue;  // the last round (nnz is a multiple of E here)
        const Columns c = *(const Columns*)(k.cols16 + p);
        const int4 run = k.runs[p / 32];
        const float t0 = q.trace[run.x], t1 = q.trace[run.z];
        const unsigned* words = (const unsigned*)&c;
        unsigned on = 0;
#pragma unroll
        for (int j = 0; j < E; j++) {
            const unsigned col = words[j / 2] >> (16 * (j % 2)) & 0xffff;
            on |= (live[col >> 5] >> (col & 31) & 1) << j;
        }
        if (!on) continue;
        float4* at = (float4*)(q.w + p);
        float vs[E];
#pragma unroll
        for (int i = 0; i < E / 4; i++) *(float4*)(vs + 4 * i) = at[i];
#pragma unroll
        for (int j = 0; j < E; j++)
            if (on >> j & 1) vs[j] = clipped(vs[j] + (pos + j < run.y ? t0 : t1));
#pragma unroll
        for (int i = 0; i < E / 4; i++) at[i] = *(float4*)(vs + 4 * i);
    }
}

enum MaskFrom { FROM_EVENTS, FROM_BITS, FROM_COPIES, FROM_NOTHING, EVENTS_ONLY, EMPTY };
// THREADS a block, PER_SM blocks an SM; every warp first reads SAMPLE events a lane (16: the
// library's rows_pay; 0: none) and counts them, as the library's grid-uniform choice does.
template <int FROM, int THREADS = MASK_THREADS, int PER_SM = MASK_BLOCKS_PER_SM, int SAMPLE = 0, bool CONTIGUOUS = false, bool EIGHT = false>
__global__ void __launch_bounds__(THREADS, PER_SM) masked(Net q, Walk4 k) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (FROM == EMPTY) return;
    if (SAMPLE > 0) {  // 32 SAMPLE events spread over the vector (CONTIGUOUS: 128 in a row), the same for every warp
        const int lane = threadIdx.x & 31, e0 = CONTIGUOUS ? 4 * lane : lane * max(SAMPLE, q.k / 32 / max(SAMPLE, 1) * SAMPLE);
        unsigned bits = 0;
        if (SAMPLE == 16) {
            const uint4 v = *(const uint4*)(q.events + e0);
            bits = nibble(v.x) | nibble(v.y) << 4 | nibble(v.z) << 8 | nibble(v.w) << 12;
        } else {
            bits = nibble(*(const unsigned*)(q.events + e0));
        }
        if (__reduce_add_sync(~0u, __popc(bits)) * 16 < 32 * SAMPLE) return;
    }
    __shared__ unsigned live[MASK_THREADS];
    const int t = threadIdx.x;
    if (FROM == FROM_EVENTS || FROM == EVENTS_ONLY) {  // 16 events a half word, all loads first
        constexpr int HALVES = (2 * MASK_THREADS + THREADS - 1) / THREADS;
        uint4 v[HALVES];
#pragma unroll
        for (int i = 0; i < HALVES; i++) {
            const int h = t + i * THREADS;
            v[i] = h < 2 * MASK_THREADS && 16 * h + 16 <= q.k ? *(const uint4*)(q.events + 16 * h) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < HALVES; i++) {
            const int h = t + i * THREADS;
            unsigned bits = nibble(v[i].x) | nibble(v[i].y) << 4 | nibble(v[i].z) << 8 | nibble(v[i].w) << 12;
            if (16 * h < q.k && 16 * h + 16 > q.k)
                for (int j = 0; 16 * h + j < q.k; j++) bits |= (unsigned)(q.events[16 * h + j] != 0) << j;
            if (h < 2 * MASK_THREADS) ((unsigned short*)live)[h] = (unsigned short)bits;
        }
    }
    if (FROM == FROM_BITS && t < MASK_THREADS) live[t] = k.gmask[t];
    if (FROM == FROM_COPIES && t < MASK_THREADS) live[t] = k.gmask[blockIdx.x % MASK_COPIES * MASK_THREADS + t];
    if (FROM == FROM_NOTHING && t < MASK_THREADS) live[t] = (t * 2654435761u) & (t * 40503u) & 0x11111111u;  // a fixed sparse pattern
    __syncthreads();
    if (FROM == EVENTS_ONLY) {
        if (live[t % MASK_THREADS] == 0xdeadbeefu) q.w[t] = 0;  // keeps the mask
        return;
    }
    if (SAMPLE < 0) {  // the exact count from the mask, by every warp: no sample
        const int lane = threadIdx.x & 31;
        int n = 0;
#pragma unroll
        for (int j = 0; j < MASK_THREADS / 32; j++) n += __popc(live[j * 32 + lane]);
        if (__reduce_add_sync(~0u, n) * 16 < q.k) return;
    }
    walk_runs<EIGHT ? 8 : 4>(q, k, live);
}

// walk8 from the probe's form (bit mask, fminf / fmaxf clip, predicated update, each round's
// record loaded with its indices) towards the library's, one difference at a time (`lib` rows),
// 256 x 4 with the probe's sample: BYTES the mask a byte a column (the events copied as they
// lie), NANCLIP clip_nan, AHEAD the record a round ahead, ALL every entry's clip computed and the
// live ones kept by selects (bench/NOTES.md, "walk8 in the library, measured").
template <bool BYTES, bool NANCLIP, bool AHEAD, bool ALL>
__global__ void __launch_bounds__(256, 4) walk8x(Net q, Walk4 k) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int lane = threadIdx.x & 31, t = threadIdx.x;
    {  // the probe's sample: 16 events a lane, spread
        const uint4 v = *(const uint4*)(q.events + lane * max(16, q.k / 32 / 16 * 16));
        const unsigned b = nibble(v.x) | nibble(v.y) << 4 | nibble(v.z) << 8 | nibble(v.w) << 12;
        if (__reduce_add_sync(~0u, __popc(b)) * 16 < 32 * 16) return;
    }
    __shared__ __align__(16) unsigned char bytes[BYTES ? 8192 : 16];
    __shared__ unsigned bits[BYTES ? 1 : MASK_THREADS];
    for (int h = t; h < 2 * MASK_THREADS; h += 256) {  // 16 events a step
        const uint4 v = 16 * h + 16 <= q.k ? *(const uint4*)(q.events + 16 * h) : make_uint4(0, 0, 0, 0);
        unsigned tail = 0;
        if (16 * h < q.k && 16 * h + 16 > q.k)
            for (int j = 0; 16 * h + j < q.k; j++) tail |= (unsigned)(q.events[16 * h + j] != 0) << j;
        if (BYTES) {
            ((uint4*)bytes)[h] = v;
            if (tail)
                for (int j = 0; j < 16; j++) bytes[16 * h + j] = tail >> j & 1;
        } else {
            ((unsigned short*)bits)[h] = (unsigned short)(nibble(v.x) | nibble(v.y) << 4 | nibble(v.z) << 8 | nibble(v.w) << 12 | tail);
        }
    }
    __syncthreads();
    auto live = [&](unsigned c) { return BYTES ? bytes[c] != 0 : (bits[c >> 5] >> (c & 31) & 1) != 0; };
    auto clip = [&](float x) { return NANCLIP ? clip_nan(x, -1.f, 1.f) : clipped(x); };
    const int blocks = (q.nnz + 255) / 256, warps = gridDim.x * blockDim.x / 32, pos = 8 * (lane % 4);
    int b = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int4 ahead = AHEAD && b < blocks ? k.runs[b * 8 + lane / 4] : make_int4(0, 0, 0, 0);
    for (; b < blocks; b += warps) {
        const int p = b * 256 + 8 * lane;
        const int4 run = AHEAD ? ahead : (p < q.nnz ? k.runs[p / 32] : make_int4(0, 0, 0, 0));
        if (AHEAD) ahead = b + warps < blocks ? k.runs[(b + warps) * 8 + lane / 4] : ahead;
        if (p >= q.nnz) continue;  // the last 256 (nnz is a multiple of 8 here)
        const uint4 c = *(const uint4*)(k.cols16 + p);
        const float t0 = q.trace[run.x], t1 = q.trace[run.z];
        const unsigned pairs[4] = {c.x, c.y, c.z, c.w};
        unsigned on = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) on |= (unsigned)live(pairs[j / 2] >> (16 * (j % 2)) & 0xffff) << j;
        if (!on) continue;
        float4* at = (float4*)(q.w + p);
        const float4 v0 = at[0], v1 = at[1];
        float vs[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (ALL) {
                const float u = clip(vs[j] + (pos + j < run.y ? t0 : t1));
                vs[j] = on >> j & 1 ? u : vs[j];
            } else if (on >> j & 1) {
                vs[j] = clip(vs[j] + (pos + j < run.y ? t0 : t1));
            }
        }
        at[0] = make_float4(vs[0], vs[1], vs[2], vs[3]);
        at[1] = make_float4(vs[4], vs[5], vs[6], vs[7]);
    }
}

// The mask built once by a cluster: block r builds words 32 r .. 32 r + 31 (its first warp), the
// others are read from their builders over DSMEM.
__global__ void __cluster_dims__(MASK_CLUSTER, 1, 1) __launch_bounds__(MASK_THREADS, MASK_BLOCKS_PER_SM) masked_cluster(Net q, Walk4 k) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    __shared__ unsigned mine[32], live[MASK_THREADS];
    const int t = threadIdx.x, words = (q.k + 31) / 32;
    const unsigned rank = cluster_rank();
    if (t < 32) mine[t] = rank * 32 + t < words ? event_word(q, rank * 32 + t, q.k) : 0;
    cluster_sync();
    unsigned v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(in_block(&mine[t % 32], t / 32)));
    live[t] = v;
    cluster_sync();  // the builders' words are read before any block exits; live[] is complete
    walk_runs<4>(q, k, live);
}

// The library's csr_post_even (f32 weights, bool events) with its pieces swapped one at a time
// (`lib` rows, prepared for the twenty-fifth session): LIB_SAMPLE rows_pay or the probe's sample
// (16 events a lane in 32-bit positions, no scalar fallback); LINE_PARTS the line-parts branch
// compiled into the kernel (as in the library) or a bare return; TAIL even_runs after even_runs4
// (without it the last nnz % 128 entries are skipped: the error column shows them).
template <bool LIB_SAMPLE, bool LINE_PARTS, bool TAIL>
__global__ void __launch_bounds__(POST_EVEN_THREADS, POST_EVEN_BLOCKS_PER_SM(float, u8)) lib_pieces(Args a) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (a.csc_stale && blockIdx.x == 0 && threadIdx.x == 0) *a.csc_stale = 1;  // as EVS_WEIGHTS_KERNEL
    bool rows;
    if (LIB_SAMPLE) {
        rows = rows_pay<u8>(a);
    } else {
        const int k = (int)a.k;
        const uint4 v = *(const uint4*)((const u8*)a.x + (threadIdx.x & 31) * max(16, k / 32 / 16 * 16));
        const unsigned b = nibble(v.x) | nibble(v.y) << 4 | nibble(v.z) << 8 | nibble(v.w) << 12;
        rows = __reduce_add_sync(~0u, __popc(b)) * POST_ROWS_SHARE_DIV >= 512;
    }
    if (!rows) {
        if (LINE_PARTS) line_parts<float, u8, CscWalk, /*ACROSS=*/true>(a);
        return;
    }
    __shared__ __align__(16) u8 live[POST_EVEN_COLUMNS];
    ((uint4*)live)[threadIdx.x] = live_bytes16((const u8*)a.x, a.ldx, 16 * threadIdx.x, a.k, [](u8 e) { return e != 0; });
    __syncthreads();
    auto on = [&](int c) { return live[c] != 0; };
    int first = 0;
    if ((uintptr_t)a.weights % 16 == 0) first = even_runs4(a, on);
    if (TAIL) even_runs<float>(a, on, first);
}

void mask_variants(Net& q, const std::vector<int>& indices, const std::vector<int>& indptr, const std::vector<unsigned char>& events,
                   const std::function<void(const char*, std::function<void()>, int, int)>& measure, cudaStream_t s, int sms,
                   bool only_library) {
    std::vector<unsigned short> c16(indices.begin(), indices.end());
    std::vector<int4> runs((q.nnz + 31) / 32);
    for (int r = 0, i = 0; r < (int)runs.size(); r++) {
        while (indptr[i + 1] <= 32 * r) i++;
        const int next = i + 1;  // no empty rows here
        runs[r] = make_int4(i, next < q.m ? std::min(32, indptr[next] - 32 * r) : 32, next < q.m ? next : i, 0);
    }
    std::vector<unsigned> bits(MASK_COPIES * MASK_THREADS, 0);
    for (int c = 0; c < q.k; c++)
        if (events[c])
            for (int copy = 0; copy < MASK_COPIES; copy++) bits[copy * MASK_THREADS + c / 32] |= 1u << (c % 32);
    Walk4 k{upload(c16), upload(runs), upload(bits)};
    auto go = [&](const char* name, auto kernel, int threads, int per_sm) {
        measure(name, [&, kernel, threads, per_sm] { launch_overlapped(s, kernel, dim3(sms * per_sm), dim3(threads), q, k); }, sms * per_sm, threads);
    };
    // the library's own kernel on the same data, as src/cuda/ops.rs launches it (f32 weights, bool events)
    Args lib = {};
    lib.weights = q.w, lib.aux = (const void*)q.trace, lib.lo = -1.0, lib.hi = 1.0;
    lib.x = q.events, lib.ldx = 1, lib.k = q.k, lib.m = q.m, lib.nnz = q.nnz, lib.events = 1;
    lib.indices = q.indices, lib.indptr = q.indptr;  // no 64-bit CSC mirror here: run `mask` where the rows pay (10)
    lib.runs = k.runs, lib.cols16 = k.cols16;
    auto library = [&](const char* name) {
        const int blocks = sms * POST_EVEN_BLOCKS_PER_SM(float, unsigned char);
        measure(name, [&] { launch_overlapped(s, csr_post_even_f32_bool, dim3(blocks), dim3(POST_EVEN_THREADS), lib); }, blocks,
                POST_EVEN_THREADS);
    };
    if (only_library) {  // `lib`: the library's kernel beside the probe's same shape, three rounds
        auto pieces = [&](const char* name, auto kernel) {
            const int blocks = sms * POST_EVEN_BLOCKS_PER_SM(float, unsigned char);
            measure(name, [&, kernel] { launch_overlapped(s, kernel, dim3(blocks), dim3(POST_EVEN_THREADS), lib); }, blocks, POST_EVEN_THREADS);
        };
        for (int round = 0; round < 3; round++) {
            library("the library's csr_post_even_f32_bool");
            pieces("lib_pieces: as the library", lib_pieces<true, true, true>);
            pieces("lib_pieces: probe sample", lib_pieces<false, true, true>);
            pieces("lib_pieces: no line-parts branch", lib_pieces<true, false, true>);
            pieces("lib_pieces: no tail (error: the last nnz % 128)", lib_pieces<true, true, false>);
            pieces("lib_pieces: none of the three", lib_pieces<false, false, false>);
            go("empty (wait, exit)", masked<EMPTY>, 256, 6);
            go("walk4, no mask, 512 x 3", masked<FROM_NOTHING, 512, 3>, 512, 3);
            go("walk4, events, 512 x 3, sample (the library's shape)", masked<FROM_EVENTS, 512, 3, 16>, 512, 3);
            go("walk8, no mask, 512 x 3", masked<FROM_NOTHING, 512, 3, 0, false, true>, 512, 3);
            go("walk8, events, 512 x 3, sample", masked<FROM_EVENTS, 512, 3, 16, false, true>, 512, 3);
            go("walk8, no mask, 512 x 2", masked<FROM_NOTHING, 512, 2, 0, false, true>, 512, 2);
            go("walk8, events, 512 x 2, sample", masked<FROM_EVENTS, 512, 2, 16, false, true>, 512, 2);
            go("walk8, events, 256 x 4, sample", masked<FROM_EVENTS, 256, 4, 16, false, true>, 256, 4);
            go("walk8x: probe form", walk8x<false, false, false, false>, 256, 4);
            go("walk8x: bytes", walk8x<true, false, false, false>, 256, 4);
            go("walk8x: clip_nan", walk8x<false, true, false, false>, 256, 4);
            go("walk8x: record ahead", walk8x<false, false, true, false>, 256, 4);
            go("walk8x: all computed", walk8x<false, false, false, true>, 256, 4);
            go("walk8x: bytes, clip_nan", walk8x<true, true, false, false>, 256, 4);
            go("walk8x: library form (bytes, clip_nan, ahead, all)", walk8x<true, true, true, true>, 256, 4);
            go("walk8x: library form less ahead", walk8x<true, true, false, true>, 256, 4);
            go("walk8x: library form less all", walk8x<true, true, true, false>, 256, 4);
        }
        return;
    }
    for (int round = 0; round < 2; round++) {
        library("the library's csr_post_even_f32_bool");
        go("empty (wait, exit)", masked<EMPTY>, 256, 6);
        go("mask from the events only, no walk", masked<EVENTS_ONLY>, 256, 6);
        go("mask from the events only, no walk, 512 x 3", masked<EVENTS_ONLY, 512, 3>, 512, 3);
        go("walk4, no mask (fixed pattern; error not a check)", masked<FROM_NOTHING>, 256, 6);
        go("walk4, no mask, 512 x 3", masked<FROM_NOTHING, 512, 3>, 512, 3);
        go("walk4, no mask, 512 x 4", masked<FROM_NOTHING, 512, 4>, 512, 4);
        go("walk4, mask from a bit vector", masked<FROM_BITS>, 256, 6);
        go("walk4, mask from 16 copies of it", masked<FROM_COPIES>, 256, 6);
        go("walk4, events", masked<FROM_EVENTS>, 256, 6);
        go("walk4, events, sample (the library's before: 256 x 6)", masked<FROM_EVENTS, 256, 6, 16>, 256, 6);
        go("walk4, events, 512 x 3", masked<FROM_EVENTS, 512, 3>, 512, 3);
        go("walk4, events, 512 x 3, sample (the library's now)", masked<FROM_EVENTS, 512, 3, 16>, 512, 3);
        go("walk4, events, 512 x 3, sample 4 a lane spread", masked<FROM_EVENTS, 512, 3, 4>, 512, 3);
        go("walk4, events, 512 x 3, sample 128 in a row", masked<FROM_EVENTS, 512, 3, 4, true>, 512, 3);
        go("walk4, events, 512 x 3, exact count from the mask", masked<FROM_EVENTS, 512, 3, -1>, 512, 3);
        go("walk4, events, 512 x 4, sample 4 a lane spread", masked<FROM_EVENTS, 512, 4, 4>, 512, 4);
        go("walk4, events, 768 x 2", masked<FROM_EVENTS, 768, 2>, 768, 2);
        go("walk4, events, 1024 x 1", masked<FROM_EVENTS, 1024, 1>, 1024, 1);
        go("walk4, events, 128 x 12", masked<FROM_EVENTS, 128, 12>, 128, 12);
        go("walk4, mask built by a cluster of 8", masked_cluster, 256, 6);
    }
}

int main(int argc, char** argv) {
    // rows (argument 3, default 5,000): at 4,800 every warp of the 512 x 3 rows walk takes exactly
    // 3 rounds of 128 entries (at 5,000, 8 % of them take a fourth)
    const int M = argc > 3 ? atoi(argv[3]) : 5000, K = 5000, ROW = 500, ONE_IN = argc > 1 ? atoi(argv[1]) : 10;
    std::mt19937 rng(7);
    std::vector<int> indptr(M + 1), indices;
    for (int i = 0; i < M; i++) {
        std::vector<char> used(K, 0);
        std::vector<int> row;
        while ((int)row.size() < ROW) {
            const int c = rng() % K;
            if (!used[c]) used[c] = 1, row.push_back(c);
        }
        std::sort(row.begin(), row.end());
        indices.insert(indices.end(), row.begin(), row.end());
        indptr[i + 1] = (int)indices.size();
    }
    const int nnz = (int)indices.size();
    std::vector<int> colptr(K + 1, 0), perm(nnz), rowind(nnz);
    for (int c : indices) colptr[c + 1]++;
    for (int c = 0; c < K; c++) colptr[c + 1] += colptr[c];
    std::vector<int> fill(colptr.begin(), colptr.end() - 1);
    for (int i = 0; i < M; i++)
        for (int p = indptr[i]; p < indptr[i + 1]; p++) perm[fill[indices[p]]] = p, rowind[fill[indices[p]]++] = i;
    // the run records of rows_even: rows of 500 entries meet at most one row start a run
    std::vector<int3> runs((nnz + 31) / 32);
    for (int r = 0, i = 0; r < (int)runs.size(); r++) {
        while (indptr[i + 1] <= 32 * r) i++;
        int next = i + 1;
        while (next < M && indptr[next + 1] == indptr[next]) next++;  // past empty rows
        runs[r] = make_int3(i, next < M ? std::min(32, indptr[next] - 32 * r) : 32, next < M ? next : i);
    }
    std::vector<unsigned char> events(K + 64, 0);
    std::vector<int> list;
    for (int c = 0; c < K; c++)
        if (rng() % ONE_IN == 0) events[c] = 1, list.push_back(c);
    const int count = (int)list.size();
    std::vector<float> trace(M), w0(nnz);
    for (auto& t : trace) t = (rng() % 1000) / 1e4f;
    for (auto& v : w0) v = (rng() % 1000) / 1e3f - 0.5f;
    std::vector<float> ref(w0);
    for (int i = 0; i < M; i++)
        for (int p = indptr[i]; p < indptr[i + 1]; p++)
            if (events[indices[p]]) ref[p] = std::min(std::max(w0[p] + trace[i], -1.f), 1.f);
    std::vector<float> ref_pre(w0);  // pre: the same events over rows, the trace over columns
    for (int i = 0; i < M; i++)
        for (int p = indptr[i]; p < indptr[i + 1]; p++)
            if (events[i]) ref_pre[p] = std::min(std::max(w0[p] + trace[indices[p]], -1.f), 1.f);

    Net q{M, K, upload(indptr), upload(indices), upload(colptr), upload(perm), upload(rowind), upload(events),
          upload(list), upload(std::vector<int>{count}), upload(trace), upload(w0), nnz, upload(runs)};
    cudaStream_t s = probe_stream();
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("post %d² x %d a row, %d active columns (1 in %d), %d entries to update\n", M, ROW, count, ONE_IN,
           colptr.back() ? (int)std::count_if(indices.begin(), indices.end(), [&](int c) { return events[c]; }) : 0);
    printf("| variant | blocks x threads | graph µs | event µs | max error |\n|---|---|---|---|---|\n");
    const std::vector<float>* expect = &ref;  // the post reference; pre's for the pre rows
    // a call's check against the reference from the same start, then its timings
    auto measure = [&](const char* name, auto call, int blocks, int threads) {
        // on s: a pageable cudaMemcpy returns before its DMA lands and the non-blocking s does
        // not wait for it (the kernel then read the last variant's weights: errors of 1.0)
        CK(cudaMemcpyAsync(q.w, w0.data(), nnz * 4, cudaMemcpyHostToDevice, s));
        call();
        CK(cudaStreamSynchronize(s));
        const double err = max_error(q.w, *expect);
        const Timing t = time_call(s, call);
        printf("| %s | %d x %d | %.2f | %.2f | %.1e |\n", name, blocks, threads, t.graph_us, t.event_us, err);
    };
    auto run = [&](const char* name, auto kernel, int blocks, int threads, size_t shared) {
        measure(name, [&] { kernel<<<blocks, threads, shared, s>>>(q); }, blocks, threads);
    };
    // the same launched as the library launches on sm_90: programmatic stream serialization
    auto run_pdl = [&](const char* name, auto kernel, int blocks, int threads) {
        measure(name, [&] { launch_overlapped(s, kernel, dim3(blocks), dim3(threads), q); }, blocks, threads);
    };
    if (argc > 2 && (!strcmp(argv[2], "mask") || !strcmp(argv[2], "lib")))
        return mask_variants(q, indices, indptr, events, measure, s, sms, !strcmp(argv[2], "lib")), 0;
    for (int round = 0; round < 2; round++) {
        run("ballot_parts P 32 U 2", ballot_parts<true, 32, 2>, sms * 8, 256, 0);
        run_pdl("ballot_parts P 32 U 2, launched as the library does", ballot_parts<true, 32, 2, true>, sms * 8, 256);
        run("columns (list)", columns, sms * 8, 256, 0);
        expect = &ref_pre;
        run("pre: rows (list)", pre_list, sms * 8, 256, 0);
        run("pre: ballot_parts P 32 U 2", ballot_parts<false, 32, 2>, sms * 8, 256, 0);
        run_pdl("pre: ballot_parts P 32 U 2, launched as the library does", ballot_parts<false, 32, 2, true>, sms * 8, 256);
        expect = &ref;
    }
}
