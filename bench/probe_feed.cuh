// The feed probes' producer (bench/probe_l2_feed.cu, bench/probe_feed_stores.cu): one thread
// loads `loads` stages of ROWS rows x 512 columns of an 8192 x 8192 bf16 B by TMA (8 boxes of 64
// columns, 128-byte swizzled), stage i at a pseudo-random ROWS-aligned row of slab
// i * slabs / loads (slabs = 1: one 8 MB slab, L2-resident; 16: all of B in turn, as bsrmm's
// groups of columns walk it), into a ring of STAGES that the consumers free through `empty`.
#pragma once
#include "probe_tma.cuh"

#include "../kernels/hopper.cuh"

template <int ROWS, int STAGES>
__device__ void feed_ring(uint8_t* ring, const CUtensorMap& b_map, uint64_t* full, uint64_t* empty, int loads, int slabs) {
    using namespace hopper;
    constexpr int SIZE_ROWS = 8192, SLAB_COLS = 512, STAGE_BYTES = ROWS * SLAB_COLS * 2;
    uint32_t h = blockIdx.x * 2654435761u + 12345u;
    for (int i = 0; i < loads; i++) {
        const int s = i % STAGES;
        if (i >= STAGES) barrier_wait(&empty[s], (i / STAGES - 1) & 1);
        barrier_expect(&full[s], STAGE_BYTES);
        h = h * 1664525u + 1013904223u;
        const int row = (int)((h >> 8) % (SIZE_ROWS / ROWS)) * ROWS, col = (int)((int64_t)i * slabs / loads) * SLAB_COLS;
        for (int box = 0; box < SLAB_COLS / 64; box++)
            tma_load_2d(ring + s * STAGE_BYTES + box * ROWS * 128, (const TensorMap*)&b_map, &full[s], col + box * 64, row);
    }
}
