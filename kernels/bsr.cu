// bsrmm (SPEC §3.5): C (M x N) = alpha · A_bsr · B + beta · C, accumulating in f32.
// A's block structure: indptr/indices over block rows, values in `weights` (nnzb blocks of
// bm x bk, row-major); B in x (K x N), C in y. m/k hold bm/bk, n the columns N, ldaux the
// number of block rows.
#include "mma_tile.cuh"

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

#define BSRMM(T, TN, TC, TCN)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) bsrmm_simt_##TN##_##TCN(Args a) { bsrmm_simt<T, TC>(a); }
#define BSRMM_TC(T, TN, TC, TCN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(128) bsrmm_wmma_##TN##_##TCN(Args a) { bsrmm_wmma<T, TC>(a); }   \
    extern "C" __global__ void __launch_bounds__(256) bsrmm_tiled_##TN##_##TCN(Args a) { bsrmm_tiled<T, TC>(a); }
#define BSRMM_OUTS(X, T, TN) X(T, TN, T, TN) X(T, TN, float, f32)
BSRMM_OUTS(BSRMM, f16, f16)
BSRMM_OUTS(BSRMM, bf16, bf16)
BSRMM(float, f32, float, f32)
BSRMM_OUTS(BSRMM_TC, f16, f16)
BSRMM_OUTS(BSRMM_TC, bf16, bf16)
