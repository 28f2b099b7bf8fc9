// A 64 x 128 tile of C on tensor cores, shared by bsrmm and the dense products: a 256-thread
// block stages 64 x 32 slices of A and 32 x 128 slices of B (f16 or bf16) in shared memory;
// its 8 warps, as 2 x 4, each multiply-accumulate a 32 x 32 part (2 x 2 WMMA fragments of
// 16 x 16 x 16, f32 accumulators). The caller fills the stage and calls `step` per slice,
// then `finish` to hand every C element of the tile to a store function once.
#pragma once

#include <mma.h>
#include "common.cuh"

#define TILE_M 64
#define TILE_N 128
#define TILE_K 32
#define SKEW 8  // padding per shared-memory row: keeps 32-byte fragment alignment, spreads banks

template <class T> struct MmaStage {
    T a[TILE_M][TILE_K + SKEW];
    T b[TILE_K][TILE_N + SKEW];
};

// Shared memory of one tile: the stage while accumulating, then each warp's 32 x 32 part of C.
typedef float MmaShared[8][32 * 32];

template <class T> __device__ MmaStage<T>& mma_stage(MmaShared& smem) { return *reinterpret_cast<MmaStage<T>*>(smem); }

// The accumulators of one thread (registers).
template <class T> struct MmaTile {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[2][2];

    __device__ MmaTile() {
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) nvcuda::wmma::fill_fragment(acc[i][j], 0.0f);
    }

    // Multiplies the staged slices into the accumulators; the stage must be complete (the
    // caller synchronizes before and after).
    __device__ void step(MmaShared& smem) {
        using namespace nvcuda;
        const int warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
        MmaStage<T>& st = mma_stage<T>(smem);
        for (int kk = 0; kk < TILE_K; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(fa[i], &st.a[wm * 32 + i * 16][kk], TILE_K + SKEW);
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(fb[j], &st.b[kk][wn * 32 + j * 16], TILE_N + SKEW);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }

    // Calls store(row, col, value) for every element of the 64 x 128 tile, row and col relative
    // to the tile; lanes walk columns, so global stores coalesce. The stage must be done with.
    template <class Store> __device__ void finish(MmaShared& smem, Store store) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wm = warp / 4, wn = warp % 4;
        float* out = smem[warp];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                nvcuda::wmma::store_matrix_sync(out + i * 16 * 32 + j * 16, acc[i][j], 32, nvcuda::wmma::mem_row_major);
        __syncwarp();
        for (int r = 0; r < 32; r++) store(wm * 32 + r, wn * 32 + lane, out[r * 32 + lane]);
    }
};

static_assert(sizeof(MmaStage<f16>) <= sizeof(MmaShared), "the stage must fit the C tiles' space");
