// Dense-weight event products (SPEC §3.3): N C = W · e(S) with W m x k; T C = Wᵀ · e(S) with
// W k x m. W is in aux (row stride ldaux), S in x, C in y; m, k as in the N form, n columns.
#include "common.cuh"

// W's element for output row i and input row r.
template <class T, class A, bool TRANS> __device__ __forceinline__ A w_at(const Args& a, int64_t i, int64_t r) {
    const T* w = (const T*)a.aux;
    return A(to_f(TRANS ? w[r * a.ldaux + i] : w[i * a.ldaux + r]));
}

// N, n = 1: one warp per output row; W is only read where the input is non-zero (at the
// listed columns for a spike list).
template <class T, class In> __device__ void mv_n(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t i = warp_id();
    if (i >= a.m) return;
    A acc = 0;
    Inputs<In>::template each<A>(a, lane_id(), 32, a.k, [&](int64_t r, A v) { acc += w_at<T, A, false>(a, i, r) * v; });
    acc = warp_sum(acc);
    if (lane_id() == 0) blend((T*)a.y + i * a.ldy, acc, a);
}

// T, n = 1: 32 outputs per block (consecutive columns of W, so loads coalesce), the k input
// rows split among the block's 8 warps and summed through shared memory.
template <class T, class In> __device__ void mv_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    __shared__ A part[8][32];
    const int64_t i = (int64_t)blockIdx.x * 32 + threadIdx.x;
    A acc = 0;
    if (i < a.m)
        Inputs<In>::template each<A>(a, threadIdx.y, 8, a.k, [&](int64_t r, A v) { acc += w_at<T, A, true>(a, i, r) * v; });
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && i < a.m) {
        for (int s = 1; s < 8; s++) acc += part[s][threadIdx.x];
        blend((T*)a.y + i * a.ldy, acc, a);
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

#define DENSE_MV(T, TN, In, InN)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) dense_mv_n_##TN##_##InN(Args a) { mv_n<T, In>(a); }         \
    extern "C" __global__ void __launch_bounds__(256) dense_mv_t_##TN##_##InN(Args a) { mv_t<T, In>(a); }
#define DENSE_MM(T, TN, In, InN)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) dense_mm_n_##TN##_##InN(Args a) { mm<T, In, false>(a); }    \
    extern "C" __global__ void __launch_bounds__(256) dense_mm_t_##TN##_##InN(Args a) { mm<T, In, true>(a); }
#define DENSE_ALL(T, TN) EVS_FOR_SPIKE_INPUTS(DENSE_MV, T, TN) EVS_FOR_INPUTS(DENSE_MM, T, TN)
EVS_FOR_FLOATS(DENSE_ALL)
