// Dense-weight event products (SPEC §3.3): N C = W · e(S) with W m x k; T C = Wᵀ · e(S) with
// W k x m. W is in aux (row stride ldaux), S in x, C in y; m, k as in the N form, n columns.
#include <cooperative_groups.h>

#include "common.cuh"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper.cuh"
#endif

// W's element for output row i and input row r.
template <class T, class A, bool TRANS> __device__ __forceinline__ A w_at(const Args& a, int64_t i, int64_t r) {
    const T* w = (const T*)a.aux;
    return A(to_f(TRANS ? w[r * a.ldaux + i] : w[i * a.ldaux + r]));
}

// mv reads W only at the live inputs, in one launch: a spike list is read where it lies; an
// event or float vector is listed by each block itself, a window of MV_WINDOW (16,384) inputs at
// a time (`each_window`), so no listing launch comes before. Sums run in list order:
// reproducible.
#define MV_THREADS 512
#define MV_WARPS (MV_THREADS / 32)
#define MV_WINDOW (MV_THREADS * WINDOW_RUN)

// N, n = 1: a block takes MV_ROWS rows, each warp MV_ROWS / MV_WARPS of them side by side; lane
// l adds the listed inputs l, l + 32, ... of each (a gather along W's rows, MV_N_AT_ONCE
// inputs a row in flight together).
#define MV_ROWS 32
#define MV_N_AT_ONCE 4
template <class T, class In> __device__ void mv_n(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int PER_WARP = MV_ROWS / MV_WARPS;
    __shared__ __align__(16) unsigned short window[MV_WINDOW];
    const int warp = threadIdx.x / 32, lane = lane_id();
    const int64_t i0 = (int64_t)blockIdx.x * MV_ROWS + warp;
    A acc[PER_WARP] = {};
    each_window<MV_THREADS, A, In>(a, 0, a.k, window, [&](int count, auto row, auto value) {
        for (int t0 = lane; t0 < count; t0 += 32 * MV_N_AT_ONCE) {
            A w[MV_N_AT_ONCE][PER_WARP], v[MV_N_AT_ONCE];
#pragma unroll
            for (int u = 0; u < MV_N_AT_ONCE; u++) {
                const int t = t0 + 32 * u;
                const int64_t r = t < count ? row(t) : -1;
                v[u] = r >= 0 ? value(r) : A(0);
#pragma unroll
                for (int q = 0; q < PER_WARP; q++)
                    w[u][q] = r >= 0 && i0 + MV_WARPS * q < a.m ? w_at<T, A, false>(a, i0 + MV_WARPS * q, r) : A(0);
            }
#pragma unroll
            for (int u = 0; u < MV_N_AT_ONCE; u++)
#pragma unroll
                for (int q = 0; q < PER_WARP; q++) acc[q] += w[u][q] * v[u];
        }
    });
    for (int q = 0; q < PER_WARP; q++) {
        const A sum = warp_sum(acc[q]);
        if (lane == 0 && i0 + MV_WARPS * q < a.m) blend((T*)a.y + (i0 + MV_WARPS * q) * a.ldy, sum, a);
    }
}

// T, n = 1: a block owns MV_T_COLS consecutive outputs (a lane MV_T_LANE_COLS of them: one
// 16-byte load of an f32 row of W where aligned), its warps share the live input rows, and
// their sums meet in shared memory in warp order (reproducible). A block reads k inputs and the
// live rows' stretches of its outputs: the rows the events select, once.
#define MV_T_LANE_COLS 4
#define MV_T_COLS (32 * MV_T_LANE_COLS)
#define MV_T_ROWS_AT_ONCE 8  // listed rows a warp loads at once (half for f64 W: no spills)

// Adds W's row r at this lane's outputs [c, c + MV_T_LANE_COLS), times v, into acc.
template <class T, class A> struct RowStretch {
    Run<T, MV_T_LANE_COLS> w;
    __device__ void load(const Args& a, int64_t r, int64_t c, bool vector) {
        const T* row = (const T*)a.aux + r * a.ldaux + c;
        if (vector && c + MV_T_LANE_COLS <= a.m) w = *(const Run<T, MV_T_LANE_COLS>*)row;
        else
            for (int j = 0; j < MV_T_LANE_COLS; j++) w.v[j] = c + j < a.m ? row[j] : T(0);
    }
    __device__ void add(A* acc, A v) const {
#pragma unroll
        for (int j = 0; j < MV_T_LANE_COLS; j++) acc[j] += A(to_f(w.v[j])) * v;
    }
};

template <class T, class In> __device__ void mv_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    // the live inputs of a window, from its start; then the warps' sums
    __shared__ __align__(16) unsigned short window[MV_WINDOW];
    static_assert(sizeof(window) >= sizeof(A[MV_WARPS][MV_T_COLS]), "the sums fit where the window was");
    A(*part)[MV_T_COLS] = (A(*)[MV_T_COLS])window;
    const int warp = threadIdx.x / 32, lane = lane_id();
    const int64_t c = (int64_t)blockIdx.x * MV_T_COLS + lane * MV_T_LANE_COLS;
    const bool vector = (uintptr_t)a.aux % sizeof(Run<T, MV_T_LANE_COLS>) == 0 && a.ldaux % MV_T_LANE_COLS == 0;
    A acc[MV_T_LANE_COLS] = {};
    // rows row(t) (-1: none) of t < count, a warp taking every MV_WARPS-th, times value(r)
    each_window<MV_THREADS, A, In>(a, 0, a.k, window, [&](int count, auto row, auto value) {
        constexpr int AT_ONCE = MV_T_ROWS_AT_ONCE / (sizeof(T) / 4 > 1 ? 2 : 1);
        for (int t0 = warp; t0 < count; t0 += MV_WARPS * AT_ONCE) {
            RowStretch<T, A> w[AT_ONCE];
            A v[AT_ONCE];
#pragma unroll
            for (int u = 0; u < AT_ONCE; u++) {
                const int t = t0 + u * MV_WARPS;
                const int64_t r = t < count ? row(t) : -1;
                v[u] = r >= 0 ? value(r) : A(0);
                if (r >= 0) w[u].load(a, r, c, vector);
            }
#pragma unroll
            for (int u = 0; u < AT_ONCE; u++)
                if (v[u] != A(0)) w[u].add(acc, v[u]);
        }
    });
    __syncthreads();  // the window's last readers are done
#pragma unroll
    for (int j = 0; j < MV_T_LANE_COLS; j++) part[warp][lane * MV_T_LANE_COLS + j] = acc[j];
    __syncthreads();
    const int64_t i = (int64_t)blockIdx.x * MV_T_COLS + threadIdx.x;
    if (threadIdx.x < MV_T_COLS && i < a.m) {
        A sum = part[0][threadIdx.x];
        for (int w = 1; w < MV_WARPS; w++) sum += part[w][threadIdx.x];
        blend((T*)a.y + i * a.ldy, sum, a);
    }
}

// mm: a classic shared-memory tiled product. Each 256-thread block computes a 64 x 64 tile of
// C, each thread a 4 x 4 patch, stepping through k in slices of 16.
#define TILE 64
#define SLICE 16
template <class T, class In, bool TRANS> __device__ void mm(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ A ws[SLICE][TILE];  // ws[r][i] = W(i, r) of the tile's rows
    __shared__ A xs[SLICE][TILE];  // xs[r][c] = e(S)(r, c) of the tile's columns
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t i0 = (int64_t)blockIdx.y * TILE, c0 = (int64_t)blockIdx.x * TILE;
    A acc[4][4] = {};
    for (int64_t r0 = 0; r0 < a.k; r0 += SLICE) {
        for (int e = threadIdx.x; e < SLICE * TILE; e += blockDim.x) {
            // W: along r for N (rows of W are contiguous in r), along i for T.
            const int r = TRANS ? e / TILE : e % SLICE, t = TRANS ? e % TILE : e / SLICE;
            const int64_t gi = i0 + t, gr = r0 + r;
            ws[r][t] = (gi < a.m && gr < a.k) ? w_at<T, A, TRANS>(a, gi, gr) : A(0);
            const int xr = e / TILE, xc = e % TILE;
            const int64_t gxr = r0 + xr, gxc = c0 + xc;
            xs[xr][xc] = (gxr < a.k && gxc < a.n) ? input<A>((const In*)a.x, gxr * a.ldx + gxc, a.events) : A(0);
        }
        __syncthreads();
        for (int r = 0; r < SLICE; r++) {
            A wv[4], xv[4];
            for (int q = 0; q < 4; q++) wv[q] = ws[r][ty * 4 + q], xv[q] = xs[r][tx * 4 + q];
            for (int p = 0; p < 4; p++)
                for (int q = 0; q < 4; q++) acc[p][q] += wv[p] * xv[q];
        }
        __syncthreads();
    }
    for (int p = 0; p < 4; p++)
        for (int q = 0; q < 4; q++) {
            const int64_t i = i0 + ty * 4 + p, c = c0 + tx * 4 + q;
            if (i < a.m && c < a.n) blend((T*)a.y + i * a.ldy + c, acc[p][q], a);
        }
}

// ---------------------------------------------------------------- mm on events: active lists
// With n > 1 event columns, only the active (row r of S, column c) pairs cost work: W is read
// once, and each active pair adds one element of W per output row. list_events writes, per
// chunk of rows of S (a.lines of them) and per column c, the count of active rows (int32, a.out2
// [chunk][n]) and their offsets in the chunk in ascending order (bytes, a.y
// [chunk][n][chunk rows]), into the stream's scratch; the products then read the offsets from
// a.x and the counts from a.out2. N (lists_n): a block stages LIST_ROWS rows of W one chunk at a
// time in shared memory with the heads of its columns' lists, the next chunk's loads in flight
// while this one adds; lane l of each warp takes row l and the warp 1/8 of the block's LIST_COLS
// columns (128, or 64 where n <= 64: fewer registers), adding the staged W[l, r] of each listed
// r. Blocks of one row strip are adjacent in the grid, so W's strip comes from DRAM once. T
// (lists_t): a thread per output row i (a column of W), LIST_T_COLS columns per block side by
// side, adding W[r, i] of each listed r (rows of W read coalesced). Sums run in list order:
// reproducible.
// Rows of S per list chunk (src/cuda/ops.rs passes the same): N stages a LIST_ROWS x 128 tile
// of W per chunk (256 measured slower on most shapes); T stages nothing and pays per chunk, so
// it takes 256, the most a byte offset holds (bench/NOTES.md, "Dense mm on events").
#define LIST_CHUNK_N 128
#define LIST_CHUNK_T 256
#define LIST_ROWS 32
#define LIST_T_COLS 8

// A warp per (chunk, 32 columns), 32 x 32 tiles of S: lane j reads row j's 32 events into a
// mask, 32 ballots turn the rows' masks into the columns' (lane c keeps column c's), and lane c
// appends the rows whose bits are set.
template <class In> __device__ void list_events(const Args& a) {
    const int64_t groups = (a.n + 31) / 32, chunk = a.lines, chunks = (a.k + chunk - 1) / chunk, w = warp_id();
    if (w >= chunks * groups) return;  // whole warps
    const int lane = lane_id();
    const int64_t ch = w / groups, c0 = (w % groups) * 32, c = c0 + lane;
    u8* rows = (u8*)a.y + (ch * a.n + c) * chunk;  // used where c < n
    int count = 0;
    for (int sub = 0; sub < chunk; sub += 32) {
        const int64_t r = ch * chunk + sub + lane;
        unsigned mask = 0;  // bit j: column c0 + j of row r is active
        if (r < a.k) {
            const In* x = (const In*)a.x + r * a.ldx + c0;
            for (int j = 0; j < 32 && c0 + j < a.n; j++) mask |= (unsigned)active(x[j]) << j;
        }
        unsigned mine = 0;  // bit q: row sub + q is active in column c
        for (int j = 0; j < 32; j++) {
            const unsigned column = __ballot_sync(0xffffffffu, (mask >> j) & 1u);
            if (lane == j) mine = column;
        }
        if (c < a.n)
            for (; mine; mine &= mine - 1) rows[count++] = (u8)(sub + __ffs(mine) - 1);
    }
    if (c < a.n) ((int*)a.out2)[ch * a.n + c] = count;
}

// The listed rows of column c in chunk ch: their count, and their offsets in the chunk (a.x).
template <int CHUNK> __device__ __forceinline__ int listed_rows(const Args& a, int64_t ch, int64_t c, const u8*& rows) {
    rows = (const u8*)a.x + (ch * a.n + c) * CHUNK;
    return ((const int*)a.out2)[ch * a.n + c];
}

// This thread's share of the W tile rows i0 .. i0 + LIST_ROWS, columns r0 .. r0 + CHUNK
// (zero outside W), as raw 16-byte pieces loaded together so that they are in flight at once:
// one vector load each where W's rows are 16-byte aligned (`vec`), else element by element.
template <class T, int CHUNK> struct Tile {
    static constexpr int PER = 16 / sizeof(T), ROW_PIECES = CHUNK / PER;
    static constexpr int PIECES = LIST_ROWS * ROW_PIECES / 256;
    uint4 v[PIECES];

    __device__ void load(const Args& a, int64_t i0, int64_t r0, bool vec) {
#pragma unroll
        for (int u = 0; u < PIECES; u++) {
            const int e = threadIdx.x + 256 * u;
            const int64_t i = i0 + e / ROW_PIECES, r = r0 + (e % ROW_PIECES) * PER;
            const T* src = (const T*)a.aux + i * a.ldaux + r;
            if (vec && i < a.m && r + PER <= a.k) {
                v[u] = __ldg((const uint4*)src);
            } else {
                T* piece = (T*)&v[u];
                for (int j = 0; j < PER; j++) piece[j] = i < a.m && r + j < a.k ? src[j] : T(0.0f);
            }
        }
    }

    template <class A> __device__ void store(A (*ws)[CHUNK + 1]) const {
#pragma unroll
        for (int u = 0; u < PIECES; u++) {
            const int e = threadIdx.x + 256 * u, row = e / ROW_PIECES, r = (e % ROW_PIECES) * PER;
            const T* piece = (const T*)&v[u];
            for (int j = 0; j < PER; j++) ws[row][r + j] = A(to_f(piece[j]));
        }
    }
};

// The head of column c's list in chunk ch: its count and first LIST_HEAD offsets (the offsets
// past them are read from the list itself); count 0 past column n.
#define LIST_HEAD 16
template <int CHUNK>
__device__ __forceinline__ void load_head(const Args& a, int64_t ch, int64_t c, int& count, uint4& head) {
    const u8* rows;
    count = c < a.n ? listed_rows<CHUNK>(a, ch, c, rows) : 0;
    head = count > 0 ? *(const uint4*)rows : make_uint4(0, 0, 0, 0);
}

template <class T, int LIST_COLS> __device__ void lists_n(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int CHUNK = LIST_CHUNK_N;
    __shared__ A ws[LIST_ROWS][CHUNK + 1];  // +1: lanes reading one offset hit distinct banks
    __shared__ int counts[LIST_COLS];
    __shared__ uint4 heads[LIST_COLS];
    const int warp = threadIdx.x / 32, lane = lane_id();
    const int64_t i0 = (int64_t)blockIdx.y * LIST_ROWS, ct = (int64_t)blockIdx.x * LIST_COLS;
    A acc[LIST_COLS / 8];
    for (int q = 0; q < LIST_COLS / 8; q++) acc[q] = 0;
    const bool vec = (uintptr_t)a.aux % 16 == 0 && a.ldaux * sizeof(T) % 16 == 0;
    Tile<T, CHUNK> next;
    int next_count = 0;
    uint4 next_head;
    next.load(a, i0, 0, vec);
    if (threadIdx.x < LIST_COLS) load_head<CHUNK>(a, 0, ct + threadIdx.x, next_count, next_head);
    for (int64_t r0 = 0, ch = 0; r0 < a.k; r0 += CHUNK, ch++) {
        __syncthreads();  // the previous chunk is read
        next.store(ws);
        if (threadIdx.x < LIST_COLS) counts[threadIdx.x] = next_count, heads[threadIdx.x] = next_head;
        __syncthreads();
        if (r0 + CHUNK < a.k) {  // the next chunk's loads are in flight while this one adds
            next.load(a, i0, r0 + CHUNK, vec);
            if (threadIdx.x < LIST_COLS) load_head<CHUNK>(a, ch + 1, ct + threadIdx.x, next_count, next_head);
        }
#pragma unroll
        for (int q = 0; q < LIST_COLS / 8; q++) {
            const int col = warp + 8 * q, count = counts[col];
            const u8* head = (const u8*)&heads[col];
            A sum = 0;
            for (int t = 0; t < min(count, LIST_HEAD); t++) sum += ws[lane][head[t]];
            if (count > LIST_HEAD) {
                const u8* rows;
                listed_rows<CHUNK>(a, ch, ct + col, rows);
                for (int t = LIST_HEAD; t < count; t++) sum += ws[lane][rows[t]];
            }
            acc[q] += sum;
        }
    }
    for (int q = 0; q < LIST_COLS / 8; q++) {
        const int64_t i = i0 + lane, c = ct + warp + 8 * q;
        if (i < a.m && c < a.n) blend((T*)a.y + i * a.ldy + c, acc[q], a);
    }
}

template <class T> __device__ void lists_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int CHUNK = LIST_CHUNK_T;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, c0 = (int64_t)blockIdx.y * LIST_T_COLS;
    A acc[LIST_T_COLS];
    for (int q = 0; q < LIST_T_COLS; q++) acc[q] = 0;
    for (int64_t r0 = 0, ch = 0; r0 < a.k; r0 += CHUNK, ch++) {
        // the block's columns side by side, so that their loads of W are in flight together
        const u8* rows[LIST_T_COLS];
        int count[LIST_T_COLS], most = 0;
#pragma unroll
        for (int q = 0; q < LIST_T_COLS; q++) {
            count[q] = c0 + q < a.n ? listed_rows<CHUNK>(a, ch, c0 + q, rows[q]) : 0;
            most = max(most, count[q]);
        }
        if (i >= a.m) continue;
        for (int t = 0; t < most; t++)
#pragma unroll
            for (int q = 0; q < LIST_T_COLS; q++)
                if (t < count[q]) acc[q] += w_at<T, A, true>(a, i, r0 + rows[q][t]);
    }
    for (int q = 0; q < LIST_T_COLS; q++)
        if (i < a.m && c0 + q < a.n) blend((T*)a.y + i * a.ldy + c0 + q, acc[q], a);
}

// ---------------------------------------------------------------- mm on events: tensor cores
// N and T on Hopper (sm_90a). Events are exactly 0 or 1, so a tensor-core product with them is exact:
// a first launch writes e(S) as 0/1 in the MMA's type (E, ep = n rounded up to DW_BOX columns,
// zeros past n) into the stream's scratch, then dense_wgmma streams W through TMA and multiplies
// it by E on wgmma, accumulating in f32. f32 W is split in registers into three bf16 parts (hi +
// mid + lo holds its 24 bits), each multiplied by E: f32 accuracy, the FLOPs still far below W's
// bytes.
//
// Tiles of C are 128 rows by NT = 64, 128 or 256 columns (dense_wgmma_shapes); a tile's K runs
// in steps of DW_K_STEP inputs. N (event_matrix: E k x ep) reads every input: a step of W is
// 128-row boxes of 128 bytes of each row (one box of f16/bf16, two of f32), K-major, fed to
// wgmma from shared memory (f16/bf16) or registers (f32). T (W k x m, its columns the tile's
// rows) reads only the rows of W that some event selects: listed_event_rows lists the rows of S
// with any event and writes E's rows for them alone, and a step is 64 listed rows of W, each
// copied on its own (the tile's 128 columns: bench/NOTES.md, "Dense mm T on listed rows"); A's
// fragments come from registers. The (tile, step) units are split evenly over a persistent grid
// (stream-K): CTA c takes units [c U / G, (c + 1) U / G), so every SM streams the same bytes
// whatever the tile count. A tile that one CTA covers whole is blended into C by it; a tile
// shared by several is summed in order of CTA by its first CTA, for which it is the last
// segment of its share: the later CTAs store their partial sums (a workspace slot per CTA and
// end of its share) and count them in (a counter per tile, zeroed by the first launch) without
// waiting, the first CTA waits for the count (bench/NOTES.md, "Dense mm N: the shared tiles'
// partial sums"). Reproducible. A block of DW_THREADS: warpgroup 0 produces (each step's W and
// E into rings of stages), warpgroups 1 and 2 consume (half of the tile's rows each).
// Arguments: C in y (ldy), m, k, n, alpha, beta; the workspace (f32) in weights, the tile
// counters (int32) in out2; T's lists in live, their counts in spike_count (n_chunks of them);
// W and E through the tensor maps; T's chunks that list a.nnz / DW_LISTED_CHUNK of their rows or
// more are read whole.
#define DW_ROWS 128                // rows of a tile of C
#define DW_BOX 64                  // columns of E per TMA box: 128 bytes
#define DW_K_STEP 64               // columns of W a step: one 128-byte TMA box of f16/bf16, two of f32
#define DW_RING_BYTES (192 * 1024) // W's and E's rings (src/cuda/ops.rs asks this much + 1 KB)
#define DW_E_RING (96 * 1024)      // E's ring at most (2 to 6 stages); W's takes the rest
#define DW_E_RING_F32 (64 * 1024)  // f32 N: four stages of 128 columns, so that W has four
// T with f32 W: a larger ring (src/cuda/ops.rs asks this much + 1 KB): at least four stages of
// W's padded rows, E's stages in the rest (five at 128 columns, six at 64)
#define DW_RING_BYTES_T32 (216 * 1024)
#define DW_W_STAGES_T32 4
#define DW_THREADS 384
// Registers a thread after setmaxnreg: 128 producers and 256 consumers share the 168 x 384 that
// the launch bounds give (T's producers walk the lists and read ahead: 80 keep them from spilling)
#define DW_PRODUCER_REGS (TRANS ? 80 : 56)
#define DW_CONSUMER_REGS (TRANS ? 208 : 224)

// E = e(S) as 0/1 of TE, k rows of a.ldy (= ep) columns, 8 columns (16 bytes) a thread; and
// the product's a.lines tile counters (a.out2) zeroed.
template <class TE, class In> __device__ void event_matrix(const Args& a) {
    let_dependents_launch();  // the product streams W meanwhile (dense_wgmma)
    const int64_t pieces = a.ldy / 8, first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t p = first; p < a.lines; p += (int64_t)gridDim.x * blockDim.x) ((int*)a.out2)[p] = 0;
    for (int64_t p = first; p < a.k * pieces; p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = p / pieces, c0 = p % pieces * 8;
        const In* x = (const In*)a.x + r * a.ldx;
        __align__(16) TE v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = TE(c0 + j < a.n && active(x[c0 + j]) ? 1.0f : 0.0f);
        *(uint4*)((TE*)a.y + r * a.ldy + c0) = *(const uint4*)v;
    }
}

// T lists the rows of S with any event, so that the product reads only the rows of W they
// select. A chunk of DW_LISTED_CHUNK rows of S, from row c * DW_LISTED_CHUNK, lists from that
// same row on its listed rows in order (a.live) and E's rows for them (a.y, a.ldy columns, zero
// rows up to the next multiple of DW_K_STEP), and their count (a.spike_count[c]); the product
// walks the chunks in order (ListedSteps). A chunk that lists a.nnz / DW_LISTED_CHUNK of its
// rows or more lists all its rows instead (E's rows of those with no event zero) and stores its
// count negative: the product reads it whole, as 2-D boxes (bench/NOTES.md, "Dense mm T on
// listed rows": a copy a row moves fewer bytes a second than boxes). A cluster of
// DW_LISTED_SLICES CTAs takes a chunk, a slice of its rows each, so that the
// pass runs on many SMs: each CTA marks its rows with any event, counts them, reads the counts
// of the slices before its own from their shared memory and lists its rows after theirs. Events
// are read as the 16-byte words that hold the slice's rows (and the gaps between rows, whose
// elements are skipped), all of a thread's words in flight at once, and again for E's rows
// (from L1). Also zeroes the product's a.lines tile counters. A CTA has several threads a row:
// with one, its warps waited on each load in turn (ncu: one warp a scheduler, an instruction
// every 6 cycles; bench/NOTES.md, "the listing pass").
#define DW_LISTED_CHUNK 1024
#define DW_LISTED_SLICES 8                                   // CTAs of a chunk's cluster
#define DW_LISTED_SLICE (DW_LISTED_CHUNK / DW_LISTED_SLICES)  // rows of a CTA
#define DW_LISTED_THREADS (4 * DW_LISTED_SLICE)              // threads of a CTA
#define DW_LISTED_WORDS 8                                    // words a thread loads at once

// Bit j: element j of a 16-byte word of events is active.
template <class In> __device__ __forceinline__ unsigned active_bits(uint4 word) {
    const uint32_t q[4] = {word.x, word.y, word.z, word.w};
    unsigned on = 0;
#pragma unroll
    for (int j = 0; j < 16 / (int)sizeof(In); j++) {
        bool live;
        if constexpr (sizeof(In) == 1) live = (q[j / 4] >> (8 * (j % 4)) & 0xffu) != 0;
        else if constexpr (sizeof(In) == 2) {
            const unsigned short bits = (unsigned short)(q[j / 2] >> (16 * (j % 2)));
            In v;
            memcpy(&v, &bits, 2);
            live = active(v);
        } else if constexpr (sizeof(In) == 4) live = active(__uint_as_float(q[j]));
        else live = active(__hiloint2double((int)q[2 * j + 1], (int)q[2 * j]));
        on |= (unsigned)live << j;
    }
    return on;
}

// live[r] = 1 for each row r0 + r (r < here) of S with any event, by a block of THREADS.
template <class In, int THREADS> __device__ void mark_live_rows(const Args& a, int64_t r0, int64_t here, unsigned char* live) {
    constexpr int PER = 16 / sizeof(In);
    const In* x = (const In*)a.x;
    // the rows' elements [begin, end) from x, in words aligned on 16 bytes (`skew` elements
    // past a word's start), the first and the last word read an element at a time
    const int64_t skew = (uintptr_t)x % 16 / sizeof(In), begin = r0 * a.ldx, end = (r0 + here - 1) * a.ldx + a.n;
    const int64_t w0 = (begin + skew) / PER, w1 = (end + skew + PER - 1) / PER;
    // marks the rows of the word's active elements (bits of `on`), the gaps' skipped
    auto mark = [&](int64_t w, unsigned on) {
        const int64_t e0 = w * PER - skew, row0 = e0 / a.ldx, col0 = e0 - row0 * a.ldx;
        for (; on; on &= on - 1) {
            const int j = __ffs(on) - 1;
            if (e0 + j < begin || e0 + j >= end) continue;
            int64_t row = row0, col = col0 + j;
            while (col >= a.ldx) col -= a.ldx, row++;
            if (col < a.n) live[row - r0] = 1;
        }
    };
    if (threadIdx.x < 2) {
        const int64_t w = threadIdx.x ? w1 - 1 : w0, e = w * PER - skew;
        unsigned on = 0;
        for (int j = 0; j < PER; j++) on |= (unsigned)(e + j >= begin && e + j < end && active(x[e + j])) << j;
        mark(w, on);
    }
    for (int64_t base = w0 + 1 + threadIdx.x; base < w1 - 1; base += (int64_t)DW_LISTED_WORDS * THREADS) {
        uint4 v[DW_LISTED_WORDS];
#pragma unroll
        for (int u = 0; u < DW_LISTED_WORDS; u++) {
            const int64_t w = base + u * THREADS;
            v[u] = w < w1 - 1 ? *(const uint4*)(x + w * PER - skew) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < DW_LISTED_WORDS; u++)
            if ((v[u].x | v[u].y | v[u].z | v[u].w) != 0) mark(base + u * THREADS, active_bits<In>(v[u]));
    }
}

template <class TE, class In> __device__ void listed_event_rows(const Args& a) {
#if __CUDA_ARCH__ >= 900
    let_dependents_launch();  // the product's CTAs start meanwhile and wait for the lists
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    __shared__ unsigned char live[DW_LISTED_SLICE];
    __shared__ int rows[DW_LISTED_SLICE];
    __shared__ int listed;  // this slice's count, read by the cluster's other CTAs
    const int rank = (int)cluster.block_rank(), me = threadIdx.x;
    const bool row_thread = me < DW_LISTED_SLICE;  // the thread of slice row `me`
    const int64_t chunk = blockIdx.x / DW_LISTED_SLICES, c0 = chunk * DW_LISTED_CHUNK;
    const int64_t r0 = c0 + rank * DW_LISTED_SLICE, here = min((int64_t)DW_LISTED_SLICE, a.k - r0);
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + me; p < a.lines; p += (int64_t)gridDim.x * blockDim.x)
        ((int*)a.out2)[p] = 0;
    if (row_thread) live[me] = 0;
    __syncthreads();
    if (here > 0) mark_live_rows<In, DW_LISTED_THREADS>(a, r0, here, live);
    __syncthreads();
    int count;
    const int at = block_exclusive_sum<DW_LISTED_THREADS>(row_thread ? live[me] : 0, &count);
    if (me == 0) listed = count;
    cluster.sync();  // the slices' counts, seen across the cluster
    int before = 0, total = 0;
    for (int r = 0; r < DW_LISTED_SLICES; r++) {
        const int theirs = *cluster.map_shared_rank(&listed, r);
        total += theirs, before += r < rank ? theirs : 0;
    }
    cluster.sync();  // read before any CTA exits
    // a chunk that lists a.nnz / DW_LISTED_CHUNK of its rows or more is read whole: every row
    // listed (zero rows of E for the rows with no event), its count negative
    const int64_t chunk_rows = min((int64_t)DW_LISTED_CHUNK, a.k - c0);
    const bool whole = total > 0 && (int64_t)total * DW_LISTED_CHUNK >= a.nnz * chunk_rows;
    if (whole) {
        count = (int)max((int64_t)0, here), before = rank * DW_LISTED_SLICE, total = (int)chunk_rows;
        if (me < count) rows[me] = (int)(r0 + me), ((int*)a.live)[r0 + me] = (int)(r0 + me);
    } else if (row_thread && live[me]) {
        rows[at] = (int)(r0 + me), ((int*)a.live)[c0 + before + at] = (int)(r0 + me);
    }
    if (rank == 0 && me == 0) ((int*)a.spike_count)[chunk] = whole ? -total : total;
    __syncthreads();
    // E's rows of this slice's listed rows, from the chunk's row `before` on, and (the last
    // slice's CTA) the chunk's zero rows from `total` up to a multiple of DW_K_STEP; 8 columns
    // (16 bytes) an item, its 8 events loaded before any is tested
    const int pieces = (int)(a.ldy / 8), padded = (total + DW_K_STEP - 1) / DW_K_STEP * DW_K_STEP;
    const int mine = count + (rank == DW_LISTED_SLICES - 1 ? padded - total : 0);
    for (int i = me; i < mine * pieces; i += DW_LISTED_THREADS) {
        const int j = i / pieces;
        const int64_t col = (int64_t)(i % pieces) * 8;
        const bool row = j < count && (!whole || live[j]);  // a whole chunk's rows with no event: zeros
        const In* x = (const In*)a.x + (row ? rows[j] * a.ldx : 0) + col;
        In e[8];
#pragma unroll
        for (int q = 0; q < 8; q++) e[q] = row && col + q < a.n ? x[q] : In(0);
        __align__(16) TE v[8];
#pragma unroll
        for (int q = 0; q < 8; q++) v[q] = TE(active(e[q]) ? 1.0f : 0.0f);
        *(uint4*)((TE*)a.y + (c0 + (j < count ? before + j : total + j - count)) * a.ldy + col) = *(const uint4*)v;
    }
#endif
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Units split over `ctas` CTAs (the grid, or fewer where T's listed steps leave fewer units than
// CTAs: every share then holds a unit at least, and CTAs past `ctas` have none): the first unit
// of CTA c's share, and the CTA whose share holds unit x.
struct Shares {
    int64_t units, ctas;
    __device__ Shares(int64_t units_) : units(units_), ctas(min((int64_t)gridDim.x, units_)) {}
    __device__ int64_t start(int64_t c) const { return min(units, c * units / ctas); }
    __device__ int64_t of(int64_t x) const { return ((x + 1) * ctas + units - 1) / units - 1; }
};

// Each run of consecutive steps of one tile in this CTA's share: f(tile, first step, end step).
template <class F> __device__ __forceinline__ void each_segment(int64_t steps, const Shares& shares, F f) {
    for (int64_t x = shares.start(blockIdx.x), end = shares.start(blockIdx.x + 1); x < end;) {
        const int64_t tile = x / steps, k0 = x % steps, k1 = min(steps, k0 + end - x);
        f(tile, k0, k1);
        x += k1 - k0;
    }
}

// Splits two f32 values into their bf16 rounding (returned as a bf16x2 register) and what is
// left (in v, exact).
__device__ __forceinline__ uint32_t split_bf16(float2& v) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    const float2 back = __bfloat1622float2(h);
    v.x -= back.x, v.y -= back.y;
    return *(const uint32_t*)&h;
}

// T's W stage: a step's DW_K_STEP listed rows of W, each the tile's DW_ROWS columns (a bulk copy
// a row), LISTED_PITCH bytes apart: 16 bytes of padding put the 8 rows an f32 fragment load or an
// ldmatrix phase reads on distinct banks.
template <class T> __host__ __device__ constexpr int listed_pitch() { return DW_ROWS * sizeof(T) + 16; }

// One stage's wgmmas of a consumer warpgroup: its 64 rows of the stage's W (`w`) times the first MW
// columns of the stage's E boxes (`e`, DW_K_STEP rows of DW_BOX columns each). N: `w` is boxes of
// 128-byte swizzled rows (DW_ROWS rows each; a row's 16-byte chunk j sits at chunk j ^ (row % 8));
// T: the warpgroup's columns of the listed rows (listed_pitch), so a slice of A (64 outputs by 16
// inputs) is 16 rows of W, or (`boxed`: a chunk read whole) the warpgroup's swizzled boxes of
// DW_K_STEP rows by 128 bytes. f16/bf16 boxes (N, and T's where HALF_BOXED) feed A to wgmma from
// shared memory (T's as an M-major operand), into d[0], a stage one group; f16/bf16 T's padded rows
// are loaded by ldmatrix (transposed: A's pairs run along W's columns). f32 W: the thread's A
// fragments (rows r, r + 8, columns c, c + 1, c + 8, c + 9 of each k16 slice) split into bf16
// parts, the largest summed into d[0] and the two others into d[1]. The tensor cores' sums truncate
// what falls below their accumulator's last bit: sums of the 8-bit large parts alone stay exact,
// and the small parts' truncation is 2^-8 smaller (one accumulator for all three: 2.7e-6 relative
// error against float64 at 10000² x 100, 1 %). A-from-registers commits each k16 slice as a group,
// one in flight, so that the next slice's split overlaps this one's MMAs. A slice's registers are
// written again only by the same slice of the next stage, whose group is long complete (PTX forbids
// writing the A registers of a pending wgmma; with a group a stage in flight, the next stage's
// split once overwrote them: bench/NOTES.md). `loaded()` runs once the stage's W is in registers
// (never for f16/bf16 boxes), `previous_done()` once the previous stage's wgmmas are complete.
template <class T, int MW, bool TRANS, bool HALF_BOXED, class F, class G>
__device__ __forceinline__ void dense_stage(float (*d)[MW / 2], const uint8_t* w, bool boxed, const uint8_t* e,
                                            F loaded, G previous_done) {
    using namespace hopper;
    constexpr int SLICES = DW_K_STEP / 16, BOX_COLS = 128 / sizeof(T), BOX_SLICES = BOX_COLS / 16;
    constexpr int PITCH = listed_pitch<T>();
    auto b_desc = [&](int kq) { return swizzled_desc<128>(e + kq * 16 * 128, DW_K_STEP * 128, 1024); };
    // N: slice kq's 128-byte rows, and its byte offset in them
    auto w_box = [&](int kq) { return w + kq / BOX_SLICES * DW_ROWS * 128; };
    auto w_col = [&](int kq) { return kq % BOX_SLICES * 16 * (int)sizeof(T); };
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
    if constexpr (sizeof(T) == 2 && (!TRANS || HALF_BOXED)) {
        wgmma_fence();
#pragma unroll
        for (int kq = 0; kq < SLICES; kq++) {
            if constexpr (TRANS)  // the box as an M-major operand
                wgmma_m64k16<T, MW, true>(d[0], swizzled_desc<128>(w + kq * 16 * 128, DW_K_STEP * 128, 1024), b_desc(kq));
            else
                wgmma_m64k16<T, MW>(d[0], swizzled_desc<128>(w_box(kq) + w_col(kq), 16, 1024), b_desc(kq));
        }
        wgmma_commit();
        wgmma_wait<1>();
        previous_done();
    } else if constexpr (sizeof(T) == 2) {
        // lanes 8j to 8j + 7 give matrix j's rows: inputs kq * 16 + lane % 8 (+ 8 for j = 2, 3),
        // outputs warp * 16 (+ 8 for j = 1, 3). The stage is one group, complete before the
        // next stage's loads rewrite a (ptxas serializes every wgmma otherwise).
        const uint8_t* row = w + (lane % 8 + lane / 16 * 8) * PITCH + (warp * 16 + lane / 8 % 2 * 8) * 2;
        uint32_t a[SLICES][4];
#pragma unroll
        for (int kq = 0; kq < SLICES; kq++) ldmatrix_x4_trans(a[kq], row + kq * 16 * PITCH);
        __syncwarp();  // the warp's loads are done before its lane 0 frees the slot
        loaded();
        wgmma_fence();
#pragma unroll
        for (int kq = 0; kq < SLICES; kq++) wgmma_m64k16<T, MW>(d[0], a[kq], b_desc(kq));
        wgmma_commit();
        wgmma_wait<0>();
        previous_done();
    } else {
        const int r = warp * 16 + lane / 4;
        auto at = [&](int kq, int row, int col) {
            if constexpr (TRANS) {  // rows k, k + 1 of W at column `row` (boxed: box row / 32, chunk row % 32 / 4)
                auto elem = [&](int k) {
                    return *(const float*)(boxed ? w + row / BOX_COLS * DW_K_STEP * 128 + k * 128 +
                                                       ((row % BOX_COLS / 4 ^ k % 8) << 4) + row % 4 * 4
                                                 : w + k * PITCH + row * 4);
                };
                return make_float2(elem(kq * 16 + col), elem(kq * 16 + col + 1));
            } else {
                col += w_col(kq) / 4;
                return *(const float2*)(w_box(kq) + row * 128 + ((col / 4 ^ row % 8) << 4) + col % 4 * 4);
            }
        };
        float2 v[SLICES][4];
#pragma unroll
        for (int kq = 0; kq < SLICES; kq++) {
            const int c = 2 * (lane % 4);
            v[kq][0] = at(kq, r, c), v[kq][1] = at(kq, r + 8, c);
            v[kq][2] = at(kq, r, c + 8), v[kq][3] = at(kq, r + 8, c + 8);
        }
        __syncwarp();  // the warp's loads are done before its lane 0 frees the slot
        loaded();
#pragma unroll
        for (int kq = 0; kq < SLICES; kq++) {
            uint32_t part[3][4];  // hi, mid, lo
#pragma unroll
            for (int q = 0; q < 3; q++)
#pragma unroll
                for (int j = 0; j < 4; j++) part[q][j] = split_bf16(v[kq][j]);
            wgmma_fence();  // the parts, written here, are read by the wgmmas
            wgmma_m64k16<bf16, MW>(d[1], part[2], b_desc(kq));
            wgmma_m64k16<bf16, MW>(d[1], part[1], b_desc(kq));
            wgmma_m64k16<bf16, MW>(d[0], part[0], b_desc(kq));
            wgmma_commit();
            wgmma_wait<1>();
            if (kq == 0) previous_done();
        }
    }
}

// The consumers' named barrier (warpgroups 1 and 2).
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

// T's steps over the listed rows (listed_event_rows): chunk c of S's rows listed counts[c] rows
// of W, ceil(counts[c] / DW_K_STEP) steps, and the steps run chunk after chunk. total and seek
// are called by whole warps (shuffles), next by each thread; the walk keeps its chunk's count,
// so that a step costs no load but where a chunk begins.
struct ListedSteps {
    const int* counts;  // negative: the chunk is read whole
    int64_t chunks, chunk = 0;
    int step = 0, count = 0;
    bool whole = false;
    __device__ explicit ListedSteps(const Args& a) : counts(a.spike_count), chunks(a.n_chunks) {}
    static __device__ int steps_of(int count) { return (abs(count) + DW_K_STEP - 1) / DW_K_STEP; }
    __device__ void enter(int stored) { count = abs(stored), whole = stored < 0; }
    // All the steps; one where no row is listed (its W rows zero, its E rows past E's extent:
    // zeros), so that C is still written.
    __device__ int64_t total() const {
        int64_t sum = 0;
        for (int64_t c = lane_id(); c < chunks; c += 32) sum += steps_of(counts[c]);
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        return max(sum, (int64_t)1);
    }
    // Moves to step g.
    __device__ void seek(int64_t g) {
        const int lane = lane_id();
        int64_t before = 0;  // steps of the chunks before `base`
        for (int64_t base = 0; base < chunks; base += 32) {
            const int mine = base + lane < chunks ? counts[base + lane] : 0;
            const int upto = warp_inclusive_sum(steps_of(mine), lane);
            const unsigned past = __ballot_sync(0xffffffffu, g < before + upto);
            if (past) {
                const int l = __ffs(past) - 1;
                chunk = base + l, enter(__shfl_sync(0xffffffffu, mine, l));
                step = (int)(g - before - (__shfl_sync(0xffffffffu, upto, l) - steps_of(count)));
                return;
            }
            before += __shfl_sync(0xffffffffu, upto, 31);
        }
        chunk = chunks, step = 0, enter(0);
    }
    __device__ void next() {
        if (chunk >= chunks || ++step * DW_K_STEP < count) return;
        step = 0;
        do enter(++chunk < chunks ? counts[chunk] : 0);
        while (chunk < chunks && count == 0);
    }
    // The step's first listed row (and E's row), and how many rows it lists.
    __device__ int64_t first() const { return chunk * DW_LISTED_CHUNK + step * DW_K_STEP; }
    __device__ int rows() const { return max(0, min(DW_K_STEP, count - step * DW_K_STEP)); }
};

// A step of T's listed rows as a producer thread uses it: E's row (and W's, where the chunk is
// read whole), how many rows, and the W producer thread's own listed row (-1: none).
#define DW_LOOKAHEAD 4
struct ListedStep {
    int64_t first;
    int rows, mine;
    bool whole;  // rows first .. first + rows - 1 of a chunk read whole
    __device__ ListedStep() {}
    __device__ ListedStep(const Args& a, const ListedSteps& walk, bool loads_w)
        : first(walk.first()), rows(walk.rows()),
          mine(loads_w && !walk.whole && (int)threadIdx.x < rows ? a.live[first + threadIdx.x] : -1), whole(walk.whole) {}
};

// T's W producer, one step of listed rows: thread `me` of 64 copies its listed row (the tile's
// columns from col0: a bulk copy of its 16-byte pieces, the last elements past them by hand)
// into its padded row of stage `w`, or zeroes that row where the step lists fewer rows (E's rows
// there are zero, but W's stale values could be infinite). Each of the 64 threads arrives on
// `full` after its stores by hand (thread 0 with the step's bytes), which the arrival releases
// to the consumers. (16-byte cp.async copies by the warps ran at half the rate: bench/NOTES.md,
// "Dense mm T on listed rows".)
template <class T>
__device__ __forceinline__ void copy_listed_rows(const Args& a, const ListedStep& step, int64_t col0, uint8_t* w,
                                                 uint64_t* full, uint64_t policy) {
    const int me = threadIdx.x;
    const int width = (int)min((int64_t)DW_ROWS, a.m - col0) * sizeof(T), bulk = width & ~15;
    uint8_t* dst = w + me * listed_pitch<T>();
    if (step.mine >= 0) {
        const T* src = (const T*)a.aux + step.mine * a.ldaux + col0;
        if (bulk > 0) hopper::bulk_load(dst, src, bulk, full, policy);
        for (int j = bulk / sizeof(T); j < width / sizeof(T); j++) ((T*)dst)[j] = src[j];
    } else {
        for (int j = 0; j < DW_ROWS * (int)sizeof(T) / 16; j++) ((uint4*)dst)[j] = make_uint4(0, 0, 0, 0);
    }
    if (step.mine < 0 || bulk < width) hopper::fence_proxy_async();  // before a later copy into these bytes
    if (me == 0) hopper::barrier_expect(full, step.rows * bulk);
    else hopper::barrier_arrive(full);
}

// A tile is DW_ROWS rows (64 a consumer warpgroup) by NT columns; a step takes DW_K_STEP
// inputs. W and E stream through rings of their own: W's from DRAM wants many steps in flight,
// E's from L2 few, and W's slot is free as soon as the consumers hold its fragments in
// registers (f32, and T). N reads a step of W in boxes of 128 bytes of DW_ROWS rows (a TMA
// thread); T a step of listed rows (64 threads, copy_listed_rows), E's rows where they are listed.
// The MMAs are MW columns wide (MW <= NT; E's columns past MW are never read: a tile narrower
// than its boxes).
template <class T, int NT, bool TRANS, int MW = NT>
__device__ __forceinline__ void dense_wgmma(const TensorMap* w_map, const TensorMap* e_map, const Args& a) {
    using namespace hopper;
    constexpr int BOX_COLS = 128 / sizeof(T);  // elements of a 128-byte box row
    constexpr int WB = DW_K_STEP / BOX_COLS;   // N: W boxes a step
    constexpr int T_BOXES = DW_ROWS / BOX_COLS;  // T, a chunk read whole: boxes of DW_K_STEP rows a step
    constexpr int W_BYTES = TRANS ? DW_K_STEP * listed_pitch<T>() : WB * DW_ROWS * 128;
    constexpr bool T32 = TRANS && sizeof(T) == 4;
    constexpr int RING = T32 ? DW_RING_BYTES_T32 : DW_RING_BYTES, E_BYTES = NT / DW_BOX * DW_K_STEP * 128;
    constexpr int E_RING = T32 ? RING - DW_W_STAGES_T32 * W_BYTES : sizeof(T) == 4 ? DW_E_RING_F32 : DW_E_RING;
    constexpr int E_STAGES = E_RING / E_BYTES < 2 ? 2 : E_RING / E_BYTES > 6 ? 6 : E_RING / E_BYTES;
    constexpr int W_STAGES = (RING - E_STAGES * E_BYTES) / W_BYTES;
    constexpr int REGS = MW / 2;                    // accumulators a thread
    constexpr int SETS = sizeof(T) == 4 ? 2 : 1;    // accumulator sets (f32: large and small parts)
    constexpr int PART = REGS / 4 * 256;            // float4s of a partial tile
    static_assert(W_STAGES >= 2, "two W stages at least");
    static_assert(W_BYTES % 1024 == 0, "E's swizzled boxes start on 1024 bytes");
    extern __shared__ uint8_t raw[];
    uint8_t* w_ring = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);  // swizzle atoms: 1024 B
    uint8_t* e_ring = w_ring + W_STAGES * W_BYTES;
    __shared__ uint64_t w_full[W_STAGES], w_empty[W_STAGES], e_full[E_STAGES], e_empty[E_STAGES];
    __shared__ int w_whole[W_STAGES];  // T: the stage holds boxes of a chunk read whole, not padded rows
    // (computed after setmaxnreg: values live across it would go through local memory)
    auto col_tiles = [&] { return (a.n + NT - 1) / NT; };
    // T: after the wait for the lists, by whole warps
    auto steps = [&] { return TRANS ? ListedSteps(a).total() : (a.k + DW_K_STEP - 1) / DW_K_STEP; };
    auto shares = [&](int64_t steps) { return Shares((a.m + DW_ROWS - 1) / DW_ROWS * col_tiles() * steps); };
    if (threadIdx.x == 0) {
        // T's W stage: an arrival from each of its 64 producer threads (copy_listed_rows)
        for (int s = 0; s < W_STAGES; s++) barrier_init(&w_full[s], TRANS ? 64 : 1), barrier_init(&w_empty[s], 8);
        for (int s = 0; s < E_STAGES; s++) barrier_init(&e_full[s], 1), barrier_init(&e_empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();

    // producers: N, lane 0 of warp 0 loads W, of warp 1 E; T, warps 0 and 1 W, warp 2 E. Each
    // ring's step count t runs on across segments.
    if (threadIdx.x < 128) {
        registers_down<DW_PRODUCER_REGS>();
        const bool loads_w = TRANS ? threadIdx.x < 64 : threadIdx.x == 0;
        if (TRANS ? threadIdx.x >= 96 : threadIdx.x % 32 != 0 || threadIdx.x >= 64) return;
        if (TRANS || !loads_w) wait_for_prior_grids();  // the lists and E: written by the first launch
        const int stages = loads_w ? W_STAGES : E_STAGES;
        uint64_t *full = loads_w ? w_full : e_full, *empty = loads_w ? w_empty : e_empty;
        const int64_t cols = col_tiles(), all_steps = steps();
        // W is read once: its lines leave L2 first, so that E and the partial sums stay there
        const uint64_t w_policy = l2_evict_first();
        ListedSteps walk(a);
        int64_t t = 0;
        each_segment(all_steps, shares(all_steps), [&](int64_t tile, int64_t k0, int64_t k1) {
            const int row0 = (int)(tile / cols * DW_ROWS), col0 = (int)(tile % cols * NT);
            if (TRANS) walk.seek(k0);
            // T: the listed rows of the next DW_LOOKAHEAD steps are read ahead, their loads in
            // flight while earlier steps wait and copy (a read from L2 under the stream's load
            // takes about as long as a step's copies)
            ListedStep ahead[DW_LOOKAHEAD];
#pragma unroll
            for (int i = 0; i < DW_LOOKAHEAD; i++)
                if (TRANS && k0 + i < k1) {
                    if (i > 0) walk.next();
                    ahead[i] = ListedStep(a, walk, loads_w);
                }
            for (int64_t kk = k0; kk < k1; kk++, t++) {
                const ListedStep now = ahead[0];
#pragma unroll
                for (int i = 0; i + 1 < DW_LOOKAHEAD; i++) ahead[i] = ahead[i + 1];
                if (TRANS && kk + DW_LOOKAHEAD < k1) walk.next(), ahead[DW_LOOKAHEAD - 1] = ListedStep(a, walk, loads_w);
                const int s = t % stages;
                if (t >= stages) barrier_wait(&empty[s], (t / stages - 1) & 1);
                const int e_row = TRANS ? (int)now.first : (int)(kk * DW_K_STEP);
                if (TRANS && loads_w && now.whole) {  // a chunk read whole: boxes of its rows, swizzled
                    if (threadIdx.x == 0) {
                        w_whole[s] = 1;
                        barrier_expect(&full[s], T_BOXES * DW_K_STEP * 128);
                        for (int b = 0; b < T_BOXES; b++)
                            tma_load_2d(w_ring + s * W_BYTES + b * DW_K_STEP * 128, w_map, &full[s], row0 + b * BOX_COLS, e_row, w_policy);
                    } else {
                        barrier_arrive(&full[s]);
                    }
                } else if (TRANS && loads_w) {
                    if (threadIdx.x == 0) w_whole[s] = 0;
                    copy_listed_rows<T>(a, now, row0, w_ring + s * W_BYTES, &full[s], w_policy);
                } else if (loads_w) {
                    barrier_expect(&full[s], W_BYTES);
                    for (int b = 0; b < WB; b++)
                        tma_load_2d(w_ring + s * W_BYTES + b * DW_ROWS * 128, w_map, &full[s], e_row + b * BOX_COLS, row0, w_policy);
                } else if (threadIdx.x % 32 == 0) {
                    barrier_expect(&full[s], E_BYTES);
                    for (int i = 0; i < NT / DW_BOX; i++)
                        tma_load_2d(e_ring + s * E_BYTES + i * DW_K_STEP * 128, e_map, &full[s], col0 + i * DW_BOX, e_row);
                }
            }
        });
        return;
    }

    registers_up<DW_CONSUMER_REGS>();
    wait_for_prior_grids();  // E, the counters (and T's lists), the workspace and C
    const int64_t cols = col_tiles(), all_steps = steps();
    const Shares all = shares(all_steps);
    const int g = threadIdx.x / 128 - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32, me = threadIdx.x - 128;
    const bool pairs = pairs_aligned<T>(a.y, a.ldy);
    float4* workspace = (float4*)a.weights;
    // workspace slot of CTA c's partial sums of `tile`: one for the first tile of its share, one
    // for the last (tiles between are whole)
    auto slot = [&](int64_t c, int64_t tile) {
        return workspace + (2 * c + (tile == all.start(c) / all_steps ? 0 : 1)) * PART;
    };
    // frees step u's slots once its wgmmas are done (W's slot is freed earlier where it is read
    // into registers)
    auto release = [&](int64_t u, bool w_in_mma) {
        if (lane != 0) return;
        if (w_in_mma) barrier_arrive(&w_empty[u % W_STAGES]);
        barrier_arrive(&e_empty[u % E_STAGES]);
    };
    int64_t t = 0;
    bool previous_w_in_mma = false;  // the previous step's W slot is freed with its E slot
    each_segment(all_steps, all, [&](int64_t tile, int64_t k0, int64_t k1) {
        float d[SETS][REGS];
#pragma unroll
        for (int q = 0; q < SETS; q++)
#pragma unroll
            for (int i = 0; i < REGS; i++) d[q][i] = 0.f;
        for (int64_t kk = k0; kk < k1; kk++, t++) {
            const int sw = t % W_STAGES, se = t % E_STAGES;
            barrier_wait(&w_full[sw], (t / W_STAGES) & 1);
            barrier_wait(&e_full[se], (t / E_STAGES) & 1);
            // the warpgroup's 64 rows of the tile: N within each box, T its boxes or its columns
            // of the padded rows
            // (lane 0 reads the flag: it is the lane that frees the slot, so racecheck sees its
            // read ordered before the producer's next write)
            const bool boxed = TRANS && __shfl_sync(0xffffffffu, lane == 0 ? w_whole[sw] : 0, 0);
            const int w_rows = !TRANS ? g * 64 * 128 : boxed ? g * (64 / BOX_COLS) * DW_K_STEP * 128 : g * 64 * (int)sizeof(T);
            // half-precision W from shared memory (N, T's boxes) holds its slot until its wgmmas
            // are done; W read into registers frees it then
            const bool w_in_mma = sizeof(T) == 2 && (!TRANS || boxed);
            auto stage = [&](auto half_boxed) {
                dense_stage<T, MW, TRANS, decltype(half_boxed)::value>(
                    d, w_ring + sw * W_BYTES + w_rows, boxed, e_ring + se * E_BYTES,
                    [&] { if (!w_in_mma && lane == 0) barrier_arrive(&w_empty[sw]); },
                    [&] { if (kk > k0) release(t - 1, previous_w_in_mma); });
            };
            // f16/bf16: two instruction paths; f32: one, its addresses picked by `boxed`
            if (w_in_mma && TRANS) stage(std::true_type{});
            else stage(std::false_type{});
            previous_w_in_mma = w_in_mma;
        }
        wgmma_wait<0>();
        release(t - 1, previous_w_in_mma);
        if constexpr (sizeof(T) == 4) {
#pragma unroll
            for (int i = 0; i < REGS; i++) d[0][i] += d[1][i];
        }

        // A shared tile: its first CTA, which runs the tile's head as the last segment of its
        // share, adds the others' partials to its own in CTA order (reproducible); the others
        // run their parts as the first segment of theirs, store them and count them in without
        // waiting. The first CTA waits only for CTAs after it, which never wait for it.
        const int64_t first = all.of(tile * all_steps), last = all.of(tile * all_steps + all_steps - 1);
        int* stored = (int*)a.out2 + tile;  // partials stored (zeroed by event_matrix)
        if (first != last && blockIdx.x != first) {
            float4* mine = slot(blockIdx.x, tile) + me;
#pragma unroll
            for (int i = 0; i < REGS / 4; i++)
                __stcg(mine + i * 256, make_float4(d[0][4 * i], d[0][4 * i + 1], d[0][4 * i + 2], d[0][4 * i + 3]));
            consumers_sync();
            if (me == 0) add_release(stored, 1);  // orders the warpgroups' stores before the count
            return;  // on to the next segment
        }
        if (first != last) {
            if (me == 0) wait_acquire(stored, (int)(last - first));
            consumers_sync();
            for (int64_t c = first + 1; c <= last; c++) {
                const float4* part = slot(c, tile) + me;
#pragma unroll
                for (int i = 0; i < REGS / 4; i++) {
                    const float4 v = __ldcg(part + i * 256);
                    d[0][4 * i] += v.x, d[0][4 * i + 1] += v.y, d[0][4 * i + 2] += v.z, d[0][4 * i + 3] += v.w;
                }
            }
        }
        const int64_t row = tile / cols * DW_ROWS + g * 64 + warp * 16 + lane / 4;
        const int64_t col = tile % cols * NT + 2 * (lane % 4);
        if (row < a.m) store_fragment<T, MW>(d[0], (T*)a.y + row * a.ldy + col, a.ldy, a.m - row, a.n - col, pairs, a);
    });
}

// f32 N over 64 columns: MMAs n rounded up to 8 wide (MW from 128 down; 128 for several column
// tiles). Three bf16 passes a slice make these products partly MMA-bound at 128 columns on the
// H200: 10,000² x 100 on m64n104 runs 5 % faster, x 72 12 %. T keeps 128 (its copies bind it:
// the widths gained it 3 % at n = 100 and their instantiations cost it 35 % at n = 256;
// bench/NOTES.md, "Dense mm N f32: MMAs as wide as n").
template <class T, int MW>
__device__ __forceinline__ void dense_wgmma_narrow(const TensorMap* w_map, const TensorMap* e_map, const Args& a) {
    if constexpr (MW == 72) dense_wgmma<T, 128, false, MW>(w_map, e_map, a);
    else if (a.n > MW - 8) dense_wgmma<T, 128, false, MW>(w_map, e_map, a);
    else dense_wgmma_narrow<T, MW - 8>(w_map, e_map, a);
}
#endif

// Tiles by n (src/cuda/ops.rs, dense_wgmma_cols, mirrors this): DW_ROWS rows by 64, 128 or 256
// columns; f32 W (two accumulator sets) at most 128 columns, wider products in several column
// tiles.
template <class T, bool TRANS>
__device__ __forceinline__ void dense_wgmma_shapes(const TensorMap* w_map, const TensorMap* e_map, const Args& a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (a.n <= 64) dense_wgmma<T, 64, TRANS>(w_map, e_map, a);
    else if constexpr (sizeof(T) == 4 && !TRANS) dense_wgmma_narrow<T, 128>(w_map, e_map, a);
    else if (a.n <= 128 || sizeof(T) == 4) dense_wgmma<T, 128, TRANS>(w_map, e_map, a);
    else if constexpr (sizeof(T) == 2) dense_wgmma<T, 256, TRANS>(w_map, e_map, a);
#endif
}

// ---------------------------------------------------------------- T on events, few columns
// T with 2 to ROWS_T_COLS columns of events: only the active rows of S select rows of W (with
// 10 columns at 1 %, a tenth of them). A first launch lists the active rows of each column of S
// in order (kernels/events.cu: column c's at a.live + c * a.k, their count at a.spike_count[c]).
// Each block takes 32 outputs (lane l output i, so a row's read is one 128-byte piece) and
// every active (row, column) pair, one load of W[r, i] and one add each: the lists one after
// the other, each of its 8 warps a run of an eighth of them (a column with most of the events
// is shared as evenly as the others). The warps' sums meet in shared memory in a fixed order:
// reproducible.
#define ROWS_T_COLS 16
template <class T> __device__ void rows_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ A part[4][ROWS_T_COLS][32];
    __shared__ int first[ROWS_T_COLS + 1];  // column c's pairs: [first[c], first[c + 1])
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        first[0] = 0;
        for (int c = 0; c < ROWS_T_COLS; c++) first[c + 1] = first[c] + (c < a.n ? a.spike_count[c] : 0);
    }
    __syncthreads();
    const int64_t i = (int64_t)blockIdx.x * 32 + threadIdx.x;
    const int pairs = first[ROWS_T_COLS];
    const int run_begin = (int)((int64_t)pairs * threadIdx.y / 8), run_end = (int)((int64_t)pairs * (threadIdx.y + 1) / 8);
    A acc[ROWS_T_COLS];
#pragma unroll
    for (int c = 0; c < ROWS_T_COLS; c++) {
        acc[c] = 0;
        const int begin = max(run_begin, first[c]), end = min(run_end, first[c + 1]);
        if (i < a.m && begin < end) {
            const int* rows = a.live + c * a.k + (begin - first[c]);
#pragma unroll 8  // eight pairs' loads in flight (4 and 16 measured the same or slower)
            for (int t = 0; t < end - begin; t++) acc[c] += w_at<T, A, true>(a, i, rows[t]);
        }
    }
    // warps 4-7 hand their sums to 0-3, then 2-3 to 0-1, then 1 to 0
#pragma unroll
    for (int half = 4; half >= 1; half /= 2) {
        if (threadIdx.y >= half && threadIdx.y < 2 * half)
#pragma unroll
            for (int c = 0; c < ROWS_T_COLS; c++) part[threadIdx.y - half][c][threadIdx.x] = acc[c];
        __syncthreads();
        if (threadIdx.y < half)
#pragma unroll
            for (int c = 0; c < ROWS_T_COLS; c++) acc[c] += part[threadIdx.y][c][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && i < a.m)
#pragma unroll
        for (int c = 0; c < ROWS_T_COLS; c++)
            if (c < a.n) blend((T*)a.y + i * a.ldy + c, acc[c], a);
}

#define DENSE_MV_N(T, TN, In, InN) EVS_KERNEL(dense_mv_n_##TN##_##InN, (MV_THREADS), (mv_n<T, In>))
#define DENSE_MV_T(T, TN, In, InN) EVS_KERNEL(dense_mv_t_##TN##_##InN, (MV_THREADS), (mv_t<T, In>))
#define DENSE_MM(T, TN, In, InN)                                           \
    EVS_KERNEL(dense_mm_n_##TN##_##InN, (256), (mm<T, In, false>)) \
    EVS_KERNEL(dense_mm_t_##TN##_##InN, (256), (mm<T, In, true>))
#define DENSE_LISTS(T, TN)                                                 \
    EVS_KERNEL(dense_mm_lists_n_##TN, (256), (lists_n<T, 128>))           \
    EVS_KERNEL(dense_mm_lists_n_narrow_##TN, (256), (lists_n<T, 64>))     \
    EVS_KERNEL(dense_mm_lists_t_##TN, (256), lists_t<T>)
#define DENSE_ROWS_T(T, TN) EVS_KERNEL(dense_mm_rows_t_##TN, (256), rows_t<T>)
#define DENSE_ALL(T, TN) EVS_FOR_SPIKE_INPUTS(DENSE_MV_N, T, TN) EVS_FOR_SPIKE_INPUTS(DENSE_MV_T, T, TN) \
    EVS_FOR_INPUTS(DENSE_MM, T, TN) DENSE_LISTS(T, TN) DENSE_ROWS_T(T, TN)
EVS_FOR_FLOATS(DENSE_ALL)
// The first launch opens the call: N streams W in while event_matrix writes E (the W producer
// reads before the wait only W, an input of the call); T's producers wait for the lists.
#define DENSE_WGMMA(T, TN)                                                                                 \
    EVS_MAPS_KERNEL_AFTER_OPENER(dense_mm_wgmma_##TN, (DW_THREADS, 1), (dense_wgmma_shapes<T, false>))  \
    EVS_MAPS_KERNEL_AFTER_OPENER(dense_mm_wgmma_t_##TN, (DW_THREADS, 1), (dense_wgmma_shapes<T, true>))
DENSE_WGMMA(f16, f16) DENSE_WGMMA(bf16, bf16) DENSE_WGMMA(float, f32)
// listed_event_rows runs in clusters of DW_LISTED_SLICES CTAs (sm_90; the product that reads its
// lists runs only there)
#define EVENT_MATRIX(TE, TEN, In, InN)                                                \
    EVS_KERNEL(event_matrix_##TEN##_##InN, (256), (event_matrix<TE, In>))            \
    EVS_CLUSTER_KERNEL(listed_event_rows_##TEN##_##InN, (DW_LISTED_THREADS), DW_LISTED_SLICES, \
                       (listed_event_rows<TE, In>))
EVS_FOR_INPUTS(EVENT_MATRIX, f16, f16) EVS_FOR_INPUTS(EVENT_MATRIX, bf16, bf16)
#define LIST_EVENTS(In, InN) EVS_KERNEL(list_events_##InN, (256), list_events<In>)
LIST_EVENTS(u8, bool) LIST_EVENTS(f16, f16) LIST_EVENTS(bf16, bf16) LIST_EVENTS(float, f32) LIST_EVENTS(double, f64)
