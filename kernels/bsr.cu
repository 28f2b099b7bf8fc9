// bsrmm (SPEC §3.5): C (M x N) = alpha · A_bsr · B + beta · C, accumulating in f32.
// A's block structure: indptr/indices over block rows, values in `weights` (nnzb blocks of
// bm x bk, row-major); B in x (K x N), C in y. m/k hold bm/bk, n the columns N, ldaux the
// number of block rows.
#include "mma_tile.cuh"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper.cuh"
#endif

// Any dtype, any alignment: one thread per output element, 4 rows x 64 columns per block.
template <class T, class TC> __device__ void bsrmm_simt(const Args& a) {
    const int64_t bm = a.m, bk = a.k, row = (int64_t)blockIdx.y * 4 + threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * 64 + threadIdx.x;
    if (row >= a.ldaux * bm || c >= a.n) return;
    const int64_t ib = row / bm, r = row % bm;
    const T* values = (const T*)a.weights;
    const T* b = (const T*)a.x;
    float acc = 0;
    for (int64_t jb = row_start(a, ib); jb < row_start(a, ib + 1); jb++) {
        const T* block_row = values + jb * bm * bk + r * bk;
        const T* b_rows = b + (int64_t)a.indices[jb] * bk * a.ldx + c;
        for (int64_t q = 0; q < bk; q++) acc += to_f(block_row[q]) * to_f(b_rows[q * a.ldx]);
    }
    blend((TC*)a.y + row * a.ldy + c, acc, a);
}

// f16/bf16 on tensor cores (mma.sync through WMMA 16x16x16 fragments). Each warp computes 16
// rows x 64 columns of C: the 16-row strip of one block row, times four 16-column fragments.
// Needs N, ldx and every block offset in multiples of 16 elements and 32-byte aligned bases
// (checked on the host); fragments are loaded straight from global memory.
template <class T, class TC> __device__ void bsrmm_wmma(const Args& a) {
    using namespace nvcuda;
    __shared__ float staged[4][16 * 64];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t bm = a.m, bk = a.k, strip = (int64_t)blockIdx.y * 4 + warp;
    const int64_t c0 = (int64_t)blockIdx.x * 64;
    if (strip * 16 >= a.ldaux * bm) return;
    const int64_t ib = (strip * 16) / bm, r0 = (strip * 16) % bm;
    const int frags = (int)min((int64_t)4, (a.n - c0) / 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
    for (int f = 0; f < 4; f++) wmma::fill_fragment(acc[f], 0.0f);
    const T* values = (const T*)a.weights;
    const T* b = (const T*)a.x;
    for (int64_t jb = row_start(a, ib); jb < row_start(a, ib + 1); jb++) {
        const T* block = values + jb * bm * bk + r0 * bk;
        const T* b_rows = b + (int64_t)a.indices[jb] * bk * a.ldx + c0;
        for (int64_t q = 0; q < bk; q += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
            wmma::load_matrix_sync(fa, block + q, (unsigned)bk);
            for (int f = 0; f < frags; f++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
                wmma::load_matrix_sync(fb, b_rows + q * a.ldx + f * 16, (unsigned)a.ldx);
                wmma::mma_sync(acc[f], fa, fb, acc[f]);
            }
        }
    }
    for (int f = 0; f < frags; f++) wmma::store_matrix_sync(&staged[warp][f * 16], acc[f], 64, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 16 * frags * 16; e += 32) {
        const int r = e / (frags * 16), c = e % (frags * 16);
        blend((TC*)a.y + (ib * bm + r0 + r) * a.ldy + c0 + c, staged[warp][r * 64 + c], a);
    }
}

// f16/bf16 on tensor cores for blocks of at least 64 rows and 32 columns, staged through shared
// memory (mma_tile.cuh): a block computes a 64 x 128 tile of C for one 64-row strip of a block
// row; for every stored block of the row and every 32-wide slice of it, the A slice (64 x 32)
// and the matching B slice (32 x 128) are copied to shared memory in 16-byte vectors, then
// multiplied. Same alignment needs as above.
template <class T, class TC> __device__ void bsrmm_tiled(const Args& a) {
    __shared__ __align__(128) MmaShared smem;
    MmaStage<T>& st = mma_stage<T>(smem);
    MmaTile<T> tile;
    const int tid = threadIdx.x;
    const int64_t bm = a.m, bk = a.k, strips = bm / TILE_M;
    const int64_t ib = blockIdx.y / strips, r0 = (blockIdx.y % strips) * TILE_M, c0 = (int64_t)blockIdx.x * TILE_N;
    const T* values = (const T*)a.weights;
    const T* b = (const T*)a.x;
    for (int64_t jb = row_start(a, ib); jb < row_start(a, ib + 1); jb++) {
        const T* block = values + jb * bm * bk + r0 * bk;
        const T* b_rows = b + (int64_t)a.indices[jb] * bk * a.ldx;
        for (int64_t q = 0; q < bk; q += TILE_K) {
            {  // A slice: 64 rows x 32 = 256 vectors of 8, one per thread
                const int r = tid / 4, c = (tid % 4) * 8;
                *reinterpret_cast<uint4*>(&st.a[r][c]) = *reinterpret_cast<const uint4*>(block + r * bk + q + c);
            }
            for (int e = tid; e < TILE_K * TILE_N / 8; e += 256) {  // B slice: 32 x 128, two per thread
                const int r = e / (TILE_N / 8), c = (e % (TILE_N / 8)) * 8;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (c0 + c < a.n) v = *reinterpret_cast<const uint4*>(b_rows + (q + r) * a.ldx + c0 + c);
                *reinterpret_cast<uint4*>(&st.b[r][c]) = v;
            }
            __syncthreads();
            tile.step(smem);
            __syncthreads();
        }
    }
    tile.finish(smem, [&](int r, int c, float v) {
        if (c0 + c < a.n) blend((TC*)a.y + (ib * bm + r0 + r) * a.ldy + c0 + c, v, a);
    });
}

// f16/bf16 on Hopper's tensor cores (sm_90a; blocks of 32 to 128 rows and columns; B and A's
// values addressed by TMA tensor maps, src/cuda/ops.rs). A block of 384 threads computes tiles of
// C of 128 x 256 (128-row blocks, and pairs of 64 x 64+ blocks' rows) or 64 x 512 (others: only a
// 32- or 16-row block's own rows of A are loaded; the MMA's other rows read whatever the slot held
// before and are dropped), so that every staged byte of B feeds 64 rows or more and each
// consumer's wgmmas are m64n256. The grid is persistent (a block per SM). Warpgroup 0 is the
// producer: one thread walks its tiles' block rows' stored blocks in slices of KS columns (64, or
// the block's 32 or 16) and loads each slice of A (TILE_ROWS x KS) and the B rows it meets (KS x
// TILE_COLS, in 64-column boxes) into a ring of stages of 64 of K (narrow blocks: 2 or 4 blocks of
// the row a stage), swizzled (B's rows 128 bytes, A's 2 KS bytes): 4 stages of 48 KB, or 3 of 72
// KB for 64-row tiles. Warpgroups 1 and 2 consume: each multiplies its part (of a 128-row tile
// rows 64g, of a 64-row one columns 256g) with up to four m64n256k16 wgmmas per stage, then frees
// the stage.
// full[s] completes when a stage's bytes have landed, empty[s] when both consumers are done
// with it.
// PAIRS (bsrmm:wgmma_pairs; 64-row blocks, 64 columns or more): a tile is block rows 2p and
// 2p + 1, one a consumer, and the producer walks the union of their block columns: each B slice
// is loaded once for both rows where both hold its block (where only one does, the other
// consumer skips the stage), so a staged byte of B feeds up to 128 rows, as for 128-row blocks.
// The producer tells the consumers which rows a stage holds, and which is a tile's last, in
// info[s].
// 16-bit C without beta keeps each tile in registers, rounded, and stores a quarter of it after
// issuing each of the next tile's first four stages (HeldTile, hopper.cuh), in whole 32-byte
// sectors: C's writes overlap the MMAs instead of stalling both consumers after every tile.
#define WG_STAGE_K 64         // K of a stage: a slice of 64 columns, or 2 or 4 whole blocks
#define WG_RING_BYTES (216 * 1024)  // the ring: as many stages as fit (4 of 48 KB, 3 of 72 KB)
#define WG_N 256              // columns of C a consumer's wgmmas cover
#define WG_BOX 64             // columns of one TMA box of B (128 bytes)
#define WG_THREADS 384
#define WG_TILE_QUEUE 4       // tiles the producer may draw ahead of the consumers (COUNTER; its
                              // barriers and tiles take 128 bytes after the ring)

// What a pair's stage holds (info[s]): bit h where block row 2p + h has its block, and
// STAGE_LAST on its tile's last stage.
#define STAGE_LAST 4u
#define BSRMM_PAIRS 1         // a.variant of bsrmm:wgmma_pairs

// Columns of C that concurrently running blocks share (a group, below): 512 for 64 x 512 tiles,
// so that the group's slab of B stays in L2 beside C's stream; 1024 for 128 x 256 tiles, whose
// block rows of A (32 KB a block, 34-67 MB at 25-50 %) L2 then serves to four column tiles
// instead of two (bench/NOTES.md, "group widths": 128-row blocks at 25 / 50 % 4 % faster,
// pairs at 50 % 2 %; wider groups for 64 x 512 tiles lost 2-11 %).
template <int TILE_COLS> __device__ constexpr int wg_group_cols() { return TILE_COLS == WG_N ? 1024 : 512; }

// Which tile the b-th one is: groups of wg_group_cols columns in turn, and within a group the
// strips (ROWS block rows) vary slowest, so that the blocks running at once read the same slab
// of B (held in L2) while A streams. The counter's tiles (I = uint32_t: the counter's width, and
// no 64-bit division call in the producer) take the strip as a position in a.order.
struct WgTile {
    int64_t block_row, col;  // first block row (or position in a.order), first column of C
};
template <int ROWS, int TILE_COLS, class I = int64_t> __device__ WgTile wg_tile(const Args& a, I b) {
    constexpr int GROUP = wg_group_cols<TILE_COLS>() / TILE_COLS;
    const I strips = (I)((a.ldaux + ROWS - 1) / ROWS);
    const I tiles_n = (I)((a.n + TILE_COLS - 1) / TILE_COLS), first = b / (strips * GROUP) * GROUP;
    const I width = min((I)GROUP, tiles_n - first), rest = b - first * strips;
    return {(int64_t)(rest / width) * ROWS, (int64_t)((first + rest % width) * TILE_COLS)};
}

// a.order's entries (src/core/bsr.rs, `ordered_row`), block rows most stored blocks first, so
// that each group's last tiles are its shortest: a drawn tile is one 16-byte load.
struct __align__(16) OrderedRow {
    int block_row, first, blocks, first_col;  // first: its first stored block; first_col: that block's column
};

// A tile drawn from the counter and decoded by the producer, as the consumers take it from the
// queue (int32: bsrmm_tma keeps C's columns and A's stored blocks within it).
struct QueuedTile {
    int block_row, col, first, blocks;  // blocks < 0: no more tiles
};

// BM (32: blocks of 32 rows): C^T = B^T A^T, so that no MMA row is wasted: each of a consumer's boxes
// of B is an M-major A operand, and the block's BM rows are the N of an m64nBMk16 (an m64 over a
// 32-row block multiplies 32 rows of stale shared memory; half the wgmmas took b32 10 % from 209
// to 237 TFLOP/s at the board's power limit: bench/NOTES.md, "b32's wasted MMA rows").
template <class T, class TC, int TILE_ROWS, int KS, bool PAIRS, bool COUNTER = false, int BM = 0>
__device__ __forceinline__ void bsrmm_wgmma(const TensorMap* a_map, const TensorMap* b_map, const Args& a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using namespace hopper;
    static_assert(!PAIRS || (TILE_ROWS == 128 && KS == 64), "pairs of 64 x 64+ blocks' rows");
    constexpr int N = WG_N, TILE_COLS = TILE_ROWS == 128 ? N : 2 * N, ROWS = PAIRS ? 2 : 1;
    // A stage holds WG_STAGE_K of K: SLOTS slices of KS columns, each its own A region
    // (TILE_ROWS rows of A_ROW bytes) and its KS rows of the B boxes (64 columns, 128-byte rows).
    constexpr int SLOTS = WG_STAGE_K / KS, A_ROW = KS * 2, A_SLOT = TILE_ROWS * A_ROW, A_HALF = 64 * A_ROW;
    constexpr int A_BYTES = SLOTS * A_SLOT, BOX_BYTES = WG_STAGE_K * WG_BOX * 2, B_SLOT = KS * TILE_COLS * 2;
    constexpr int STAGE_BYTES = A_BYTES + WG_STAGE_K * TILE_COLS * 2, WG_STAGES = WG_RING_BYTES / STAGE_BYTES;
    extern __shared__ uint8_t raw[];
    uint8_t* ring = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);  // swizzle atoms: 1024 B
    __shared__ uint64_t full[WG_STAGES], empty[WG_STAGES];
    __shared__ uint32_t info[WG_STAGES];
    // COUNTER (unpaired block rows, kernels of their own): tiles from a.out2's counter, rows
    // longest first; the producer passes each to the consumers through a queue after the ring
    static_assert(!COUNTER || !PAIRS, "the counter serves unpaired block rows");
    uint64_t* tile_full = (uint64_t*)(ring + WG_STAGES * STAGE_BYTES);
    uint64_t* tile_empty = tile_full + WG_TILE_QUEUE;
    QueuedTile* queue = (QueuedTile*)(tile_empty + WG_TILE_QUEUE);

    auto tiles = [&] { return (a.ldaux + ROWS - 1) / ROWS * ((a.n + TILE_COLS - 1) / TILE_COLS); };
    // Unpaired rows: a step fills one stage, a KS-wide slice of a block (KS = 64 <= bk) or SLOTS
    // blocks whole, the last step of a row `filled` of them. (Computed after setmaxnreg where
    // used: values live across it go through local memory.)
    auto steps_of = [&](int64_t blocks) { return SLOTS == 1 ? blocks * (a.k / KS) : (blocks + SLOTS - 1) / SLOTS; };
    auto filled = [&](int64_t blocks, int64_t step) { return SLOTS == 1 ? 1 : (int)min((int64_t)SLOTS, blocks - step * SLOTS); };
    const int warpgroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < WG_STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        if (COUNTER)
            for (int q = 0; q < WG_TILE_QUEUE; q++) barrier_init(&tile_full[q], 1), barrier_init(&tile_empty[q], 8);
        barrier_init_fence();
    }
    __syncthreads();

    // The grid is persistent: block b takes tiles b, b + gridDim.x, ...; the ring's step count t
    // runs on across tiles, so the producer loads the next tile while the consumers store.
    if (warpgroup == 0) {  // producer
        registers_down<56>();
        if (threadIdx.x != 0) return;
        int64_t t = 0;
        // Takes stage t's slot once free, says what it will hold and expects its bytes.
        auto open_stage = [&](uint32_t what, uint32_t bytes) {
            const int s = t % WG_STAGES;
            if (t >= WG_STAGES) barrier_wait(&empty[s], (t / WG_STAGES - 1) & 1);
            if (PAIRS) info[s] = what;  // visible to the consumers through full[s] (arrive releases)
            barrier_expect(&full[s], bytes);
            return s;
        };
        // B's rows of K slice q of block column `block_col` for slot `slot` of stage s.
        auto load_b = [&](int s, int slot, int64_t block_col, int64_t q, int64_t col) {
            uint8_t* stage = ring + s * STAGE_BYTES;
            for (int i = 0; i < TILE_COLS / WG_BOX; i++)
                tma_load_2d(stage + A_BYTES + i * BOX_BYTES + slot * KS * 128, b_map, &full[s], (int)(col + i * WG_BOX),
                            (int)(block_col * a.k + q));
        };
        // An unpaired row's stages: a KS-wide slice of a block or SLOTS blocks whole each. A
        // block shorter than the tile brings only its own rows (A's box, src/cuda/ops.rs). The
        // next SLOTS blocks' columns load before the current ones' stages wait for their slots,
        // so their latency hides there; the first block's comes decoded with the tile.
        const int a_loaded = (int)min(a.m, (int64_t)TILE_ROWS) * A_ROW;
        const int slices = SLOTS == 1 ? (int)(a.k / KS) : 1;  // stages a block takes (KS-wide slices)
        auto produce_row = [&](int first, int blocks, int first_col, int64_t col) {
            const int row_end = first + blocks;
            auto column = [&](int jb) { return jb < row_end ? a.indices[jb] : 0; };
            int cols[SLOTS];
#pragma unroll
            for (int slot = 0; slot < SLOTS; slot++) cols[slot] = slot ? column(first + slot) : first_col;
            for (int jb = first; jb < row_end; jb += SLOTS) {
                int next[SLOTS];
#pragma unroll
                for (int slot = 0; slot < SLOTS; slot++) next[slot] = column(jb + SLOTS + slot);
                const int used = min(SLOTS, row_end - jb);
                for (int q = 0; q < slices * KS; q += KS, t++) {
                    const int s = open_stage(0, used * (a_loaded + B_SLOT));
                    for (int slot = 0; slot < used; slot++) {
                        tma_load_2d(ring + s * STAGE_BYTES + slot * A_SLOT, a_map, &full[s], q, (int)((jb + slot) * a.m));
                        load_b(s, slot, cols[slot], q, col);
                    }
                }
#pragma unroll
                for (int slot = 0; slot < SLOTS; slot++) cols[slot] = next[slot];
            }
        };
        const int64_t end = tiles();
        if constexpr (COUNTER) {
            // Block b takes tile b, then gridDim.x plus each next count of a.out2 (the stream's
            // tile counter, zero at the start), so blocks that drew short tiles take more. Each
            // block draws until it draws past the end, once: `end` draws in all, so the count
            // wraps back to zero at the last one and the next launch finds it there. The
            // producer draws and decodes a tile one ahead of the one it loads (the atomic's and
            // the row's latencies hide behind a tile's loads).
            struct Drawn {
                QueuedTile tile;
                int first_col;
            };
            auto tile_at = [&](int64_t b) {
                if (b >= end) return Drawn{{0, 0, 0, -1}, 0};
                const WgTile w = wg_tile<1, TILE_COLS>(a, (uint32_t)b);
                const OrderedRow r = ((const OrderedRow*)a.order)[w.block_row];
                return Drawn{{r.block_row, (int)w.col, r.first, r.blocks}, r.first_col};
            };
            auto draw = [&] { return (int64_t)gridDim.x + (int64_t)atomicInc((unsigned*)a.out2, (unsigned)(end - 1)); };
            Drawn drawn_tile = tile_at(blockIdx.x);
            int64_t drawn = draw();
            for (int j = 0;; j++) {
                const int q = j % WG_TILE_QUEUE;
                const QueuedTile& tile = drawn_tile.tile;
                if (j >= WG_TILE_QUEUE) barrier_wait(&tile_empty[q], (j / WG_TILE_QUEUE - 1) & 1);
                queue[q] = tile;
                barrier_arrive(&tile_full[q]);
                if (tile.blocks < 0) break;
                const Drawn next = tile_at(drawn);  // issued now, needed after this tile's loads
                if (drawn < end) drawn = draw();
                produce_row(tile.first, tile.blocks, drawn_tile.first_col, tile.col);
                drawn_tile = next;
            }
        } else {
            for (int64_t b = blockIdx.x; b < end; b += gridDim.x) {
                const WgTile tile = wg_tile<ROWS, TILE_COLS>(a, b);
                if constexpr (PAIRS) {
                    // Two-pointer walk of both rows' blocks: each stored block is met once (in any
                    // order); a column both rows hold in turn is one stage for both.
                    int64_t i0 = row_start(a, tile.block_row), i1 = row_start(a, tile.block_row + 1);
                    const int64_t e0 = i1, e1 = tile.block_row + 1 < a.ldaux ? row_start(a, tile.block_row + 2) : i1;
                    constexpr int PAST = 0x7fffffff;  // the column of a row's end
                    bool done;
                    do {
                        const int c0 = i0 < e0 ? a.indices[i0] : PAST, c1 = i1 < e1 ? a.indices[i1] : PAST;
                        const int rows = (i0 < e0 && c0 <= c1) | (i1 < e1 && c1 <= c0) << 1;  // 0: an empty pair
                        const int64_t j0 = i0, j1 = i1;
                        i0 += rows & 1, i1 += rows >> 1;
                        done = i0 == e0 && i1 == e1;
                        for (int64_t q = 0, slices = rows ? a.k / KS : 1; q < slices; q++, t++) {
                            const int s = open_stage(rows | (done && q == slices - 1 ? STAGE_LAST : 0),
                                                     __popc(rows) * A_HALF + (rows ? B_SLOT : 0));
                            if (rows & 1) tma_load_2d(ring + s * STAGE_BYTES, a_map, &full[s], (int)(q * KS), (int)(j0 * a.m));
                            if (rows & 2)
                                tma_load_2d(ring + s * STAGE_BYTES + A_HALF, a_map, &full[s], (int)(q * KS), (int)(j1 * a.m));
                            if (rows) load_b(s, 0, min(c0, c1), q * KS, tile.col);
                        }
                    } while (!done);
                } else {
                    const int first = (int)row_start(a, tile.block_row), blocks = (int)row_start(a, tile.block_row + 1) - first;
                    produce_row(first, blocks, blocks ? a.indices[first] : 0, tile.col);
                }
            }
        }
        return;
    }

    registers_up<224>();
    const int g = warpgroup - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int a_part = TILE_ROWS == 128 ? g * A_HALF : 0;            // bytes: 64 rows
    const int b_part = TILE_ROWS == 128 ? 0 : g * N / WG_BOX * BOX_BYTES;  // boxes of 64 columns
    const bool pairs = pairs_aligned<TC>(a.y, a.ldy);
    // 16-bit C without beta: a tile's C waits in registers and is stored in the shadow of the
    // next tile's wgmmas (HeldTile), so stores and MMAs overlap; else it is stored after the tile.
    constexpr bool HOLDS = sizeof(TC) == 2 && !BM;
    const bool holding = HOLDS && a.beta == 0.0 && pairs, octs = runs_aligned<TC, 8>(a.y, a.ldy);
    HeldTile<TC, N> held;
    held.next = held.CHUNKS;  // nothing held yet
    int64_t t = 0;
    // One tile: its stages, then its C held or stored.
    auto consume = [&](const WgTile& tile, int64_t blocks) {  // blocks: an unpaired row's
        // a pair's stages run until the producer's last one; an unpaired row's are known from it
        int64_t steps = PAIRS ? INT64_MAX : steps_of(blocks);
        constexpr int D_REGS = BM ? N / WG_BOX * BM / 2 : N / 2;  // BM: a 64 x BM fragment a box
        float d[D_REGS];
#pragma unroll
        for (int i = 0; i < D_REGS; i++) d[i] = 0.f;
        for (int64_t step = 0; step < steps; step++, t++) {
            const int s = t % WG_STAGES;
            barrier_wait(&full[s], (t / WG_STAGES) & 1);
            const uint8_t* stage = ring + s * STAGE_BYTES;
            int used = filled(blocks, step);
            if constexpr (PAIRS) {
                // this consumer's row's block or none: lane 0 reads what the stage holds (the
                // thread that frees it) and the warp votes (a condition ptxas cannot tell
                // uniform serializes the wgmmas, C7520)
                const uint32_t what = __shfl_sync(~0u, lane == 0 ? info[s] : 0, 0);
                used = __any_sync(~0u, what >> g & 1);
                if (what & STAGE_LAST) steps = step + 1;
            }
            // A: 16 columns (32 B) of a slot; B: 16 rows (2 KB)
            auto mma = [&](int k) {
                const uint8_t* a_k = stage + k * 16 / KS * A_SLOT + a_part + k * 16 % KS * 2;
                const uint8_t* b_k = stage + A_BYTES + b_part + k * 16 * 128;
                if constexpr (BM) {
#pragma unroll
                    for (int i = 0; i < N / WG_BOX; i++)
                        wgmma_m64k16_mk<T, BM>(d + i * BM / 2, swizzled_desc<128>(b_k + i * BOX_BYTES, BOX_BYTES, 1024),
                                               swizzled_desc<A_ROW>(a_k, 16, 8 * A_ROW));
                } else {
                    wgmma_m64k16<T, N>(d, swizzled_desc<A_ROW>(a_k, 16, 8 * A_ROW), swizzled_desc<128>(b_k, BOX_BYTES, 1024));
                }
            };
            wgmma_fence();
            if (used * KS >= WG_STAGE_K) {  // a full stage: its wgmmas in one run, no branch between them
#pragma unroll
                for (int k = 0; k < WG_STAGE_K / 16; k++) mma(k);
            } else {
#pragma unroll
                for (int k = 0; k < WG_STAGE_K / 16; k++) {
                    if (k * 16 >= used * KS) break;
                    mma(k);
                }
            }
            wgmma_commit();
            if constexpr (HOLDS) {
                if (holding) held.store_next();  // in the shadow of this stage's wgmmas
            }
            // one group stays in flight: the previous stage's wgmmas are done, free its slot
            wgmma_wait<1>();
            if (lane == 0 && step > 0) barrier_arrive(&empty[(t - 1) % WG_STAGES]);
        }
        wgmma_wait<0>();
        if (lane == 0 && steps > 0) barrier_arrive(&empty[(t - 1) % WG_STAGES]);
        if constexpr (BM) {
            // d[i BM / 2 + 4j + 2h + e] holds C's column 64 i + 16 warp + lane / 4 + 8 h of the
            // consumer's, row 8 j + 2 (lane % 4) + e of the block row
            const int64_t row0 = tile.block_row * a.m, col0 = tile.col + g * N + 16 * warp + lane / 4;
#pragma unroll
            for (int i = 0; i < N / WG_BOX; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int64_t col = col0 + WG_BOX * i + 8 * h;
                    if (col >= a.n) continue;
#pragma unroll
                    for (int j = 0; j < BM / 8; j++)
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            blend((TC*)a.y + (row0 + 8 * j + 2 * (lane % 4) + e) * a.ldy + col,
                                  d[i * BM / 2 + 4 * j + 2 * h + e], a);
                }
            return;
        }
        // d[4i + 2h + e] holds row 16 warp + lane / 4 + 8 h, column 8 i + 2 (lane % 4) + e.
        // Rows past a 16-row block hold the slot's stale rows, and past a pair's rows no block:
        // dropped.
        const int local = (TILE_ROWS == 128 ? g * 64 : 0) + warp * 16 + lane / 4;
        const int64_t row = tile.block_row * a.m + local, row_end = (PAIRS ? a.ldaux : tile.block_row + 1) * a.m;
        const int64_t col = tile.col + (TILE_ROWS == 128 ? 0 : g * N) + 2 * (lane % 4);
        if constexpr (HOLDS) {
            if (holding) {
                held.store_rest();
                const int64_t warp_rows = row_end - (row - lane / 4), part_cols = a.n - (col - 2 * (lane % 4));
                held.hold(d, (TC*)a.y + row * a.ldy + col, a.ldy, row_end - row, a.n - col, (float)a.alpha,
                          octs && warp_rows >= 16 && part_cols >= N);
                return;
            }
        }
        if (row >= row_end) return;
        store_fragment<TC, N>(d, (TC*)a.y + row * a.ldy + col, a.ldy, row_end - row, a.n - col, pairs, a);
    };
    if constexpr (COUNTER) {
        for (int j = 0;; j++) {  // lane 0 takes each tile (the thread that frees its slot) and passes it on
            const int q = j % WG_TILE_QUEUE;
            barrier_wait(&tile_full[q], (j / WG_TILE_QUEUE) & 1);
            QueuedTile queued{};
            if (lane == 0) queued = queue[q], barrier_arrive(&tile_empty[q]);
            const int blocks = __shfl_sync(~0u, queued.blocks, 0);
            if (blocks < 0) break;
            consume({__shfl_sync(~0u, queued.block_row, 0), __shfl_sync(~0u, queued.col, 0)}, blocks);
        }
    } else {
        for (int64_t b = blockIdx.x, end = tiles(); b < end; b += gridDim.x) {
            const WgTile tile = wg_tile<ROWS, TILE_COLS>(a, b);
            consume(tile, PAIRS ? 0 : row_start(a, tile.block_row + 1) - row_start(a, tile.block_row));
        }
    }
    if constexpr (HOLDS) {
        if (holding) held.store_rest();
    }
#endif
}

// K slices of the blocks' columns up to 64.
template <class T, class TC, int TILE_ROWS, bool COUNTER, int BM = 0>
__device__ __forceinline__ void bsrmm_wgmma_by_k(const TensorMap* a_map, const TensorMap* b_map, const Args& a) {
    if (a.k >= 64) bsrmm_wgmma<T, TC, TILE_ROWS, 64, false, COUNTER, BM>(a_map, b_map, a);
    else if (a.k == 32) bsrmm_wgmma<T, TC, TILE_ROWS, 32, false, COUNTER, BM>(a_map, b_map, a);
    else bsrmm_wgmma<T, TC, TILE_ROWS, 16, false, COUNTER, BM>(a_map, b_map, a);
}

// The instantiation for the blocks' shape: pairs of 64-row blocks' rows in 128-row tiles
// (bsrmm:wgmma_pairs, a.variant), or one block row a tile (of 64 rows, 32-row blocks transposed).
// 128-row blocks run in bsrmm_wgmma_counter; their tiles in fixed order stay compiled here
// because without them ptxas schedules the pairs 5-10 % slower, and the pairs built as a kernel
// of their own ran 7-9 % slower (bench/NOTES.md, "bsrmm: two block rows a tile" and "bsrmm:
// 128-row tiles from a counter").
template <class T, class TC> __device__ __forceinline__ void bsrmm_wgmma_shapes(const TensorMap* a_map, const TensorMap* b_map, const Args& a) {
    if (a.m == 128) bsrmm_wgmma_by_k<T, TC, 128, false>(a_map, b_map, a);
    else if (a.variant == BSRMM_PAIRS) bsrmm_wgmma<T, TC, 128, 64, true>(a_map, b_map, a);
    else if (a.m == 32) bsrmm_wgmma_by_k<T, TC, 64, false, 32>(a_map, b_map, a);
    else bsrmm_wgmma_by_k<T, TC, 64, false>(a_map, b_map, a);
}

// Unpaired block rows with tiles drawn from a counter, block rows longest first: 128-row
// tiles, and 64-row ones in a kernel of their own (instantiations sharing a kernel slowed each
// other: bench/NOTES.md, "bsrmm: 128-row tiles from a counter").
template <class T, class TC, int TILE_ROWS>
__device__ __forceinline__ void bsrmm_wgmma_counter(const TensorMap* a_map, const TensorMap* b_map, const Args& a) {
    if constexpr (TILE_ROWS == 64) {
        if (a.m == 32) return bsrmm_wgmma_by_k<T, TC, TILE_ROWS, true, 32>(a_map, b_map, a);
    }
    bsrmm_wgmma_by_k<T, TC, TILE_ROWS, true>(a_map, b_map, a);
}

#define BSRMM(T, TN, TC, TCN) EVS_KERNEL(bsrmm_simt_##TN##_##TCN, (256), (bsrmm_simt<T, TC>))
#define BSRMM_TC(T, TN, TC, TCN)                                         \
    EVS_KERNEL(bsrmm_wmma_##TN##_##TCN, (128), (bsrmm_wmma<T, TC>))     \
    EVS_KERNEL(bsrmm_tiled_##TN##_##TCN, (256), (bsrmm_tiled<T, TC>))   \
    EVS_MAPS_KERNEL(bsrmm_wgmma_##TN##_##TCN, (WG_THREADS, 1), (bsrmm_wgmma_shapes<T, TC>)) \
    EVS_MAPS_KERNEL(bsrmm_wgmma_counter_##TN##_##TCN, (WG_THREADS, 1), (bsrmm_wgmma_counter<T, TC, 128>)) \
    EVS_MAPS_KERNEL(bsrmm_wgmma_counter64_##TN##_##TCN, (WG_THREADS, 1), (bsrmm_wgmma_counter<T, TC, 64>))
#define BSRMM_OUTS(X, T, TN) X(T, TN, T, TN) X(T, TN, float, f32)
BSRMM_OUTS(BSRMM, f16, f16)
BSRMM_OUTS(BSRMM, bf16, bf16)
BSRMM(float, f32, float, f32)
BSRMM_OUTS(BSRMM_TC, f16, f16)
BSRMM_OUTS(BSRMM_TC, bf16, bf16)
