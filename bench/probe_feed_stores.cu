// Do C's stores and B's TMA feed share one resource? (issue #11, the 1.5 % rows: without C's
// stores bsrmm b64 1.5 % runs 50 µs, with them 86, and the stores alone take 36 µs:
// bench/probe_stores.cu.) One block an SM, bsrmm's shape: a producer thread loads stages of
// 64 rows x 512 columns of an 8192 x 8192 bf16 B by TMA (8 boxes, at random 64-row offsets,
// walking B's 16 slabs in turn), two consumer warpgroups wait for each stage and free it, and a
// tile is two stages; C (8192 x 8192 bf16, tiles of 64 x 512) is stored 16 bytes a thread in
// the library's shape (a warp instruction: 8 rows x 64 B), either by the consumers after each
// tile's stages (as bsrmm does) or by a fourth warpgroup on its own. Modes: feed alone, stores
// alone, both by the consumers, both with the stores on their own warpgroup. If both take the
// sum of the two alone, they share a resource; if the max, they overlap. Then the same with no
// DRAM traffic (one slab of B, C into a 64 KB region a block): L2 and the crossbar only. Build
// and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_feed_stores.cu -lcuda -o /tmp/fs && /tmp/fs
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "probe_feed.cuh"

using namespace hopper;

#define SIZE 8192
#define ROWS 64
#define COLS 512
#define STAGE_BYTES (ROWS * COLS * 2)  // 64 KB
#define STAGES 3
#define TILE_STAGES 2
#define TILES (SIZE / ROWS * (SIZE / COLS))  // 2,048

enum Mode { FEED = 1, STORE_BY_CONSUMERS = 2, STORE_BY_OWN_WARPS = 4, IN_L2 = 8 };

// Tile b's 64 x 512 of C from 256 threads (thread t of the group): 16 stores of 16 bytes each.
// IN_L2: B's first slab only and each block's C into one 64 KB region, both L2-resident.
__device__ void store_tile(uint8_t* c, int b, int t, int mode) {
    if (mode & IN_L2) b = blockIdx.x % (SIZE / ROWS) * (SIZE / COLS);
    const int w = t / 32, lane = t % 32;
    uint8_t* tile = c + (int64_t)(b / (SIZE / COLS)) * ROWS * SIZE * 2 + (b % (SIZE / COLS)) * COLS * 2;
    const int row = 8 * w + lane / 4;  // warp w: rows 8w..8w+7, 64 B a quad, 16 such slices of a row's 1 KB
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const uint32_t v = (uint32_t)(b * 16 + k) ^ t;
        *(uint4*)(tile + (int64_t)row * SIZE * 2 + 64 * k + 16 * (lane % 4)) = make_uint4(v, v + 1, v + 2, v + 3);
    }
}

__global__ void __launch_bounds__(512, 1) feed_stores(const __grid_constant__ CUtensorMap b_map, uint8_t* c, int mode) {
    extern __shared__ uint8_t raw[];
    uint8_t* ring = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int tiles = (TILES - blockIdx.x + gridDim.x - 1) / gridDim.x, loads = tiles * TILE_STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();
    const int group = threadIdx.x / 128;
    if (group == 3) {  // the stores' own warpgroup
        if (mode & STORE_BY_OWN_WARPS)
            for (int j = 0; j < tiles; j++)
                for (int half = 0; half < 2; half++) store_tile(c, blockIdx.x + j * gridDim.x, threadIdx.x % 128 + 128 * half, mode);
        return;
    }
    if (group == 0) {  // producer
        if (threadIdx.x == 0 && (mode & FEED)) feed_ring<ROWS, STAGES>(ring, b_map, full, empty, loads, mode & IN_L2 ? 1 : SIZE / COLS);
        return;
    }
    const int lane = threadIdx.x % 32;
    for (int j = 0, i = 0; j < tiles; j++) {
        if (mode & FEED)
            for (int k = 0; k < TILE_STAGES; k++, i++) {
                const int s = i % STAGES;
                barrier_wait(&full[s], (i / STAGES) & 1);
                __syncwarp();
                if (lane == 0) barrier_arrive(&empty[s]);
            }
        if (mode & STORE_BY_CONSUMERS) store_tile(c, blockIdx.x + j * gridDim.x, threadIdx.x - 128, mode);
    }
}

int main() {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    void *b, *c;
    CK(cudaMalloc(&b, (size_t)SIZE * SIZE * 2));
    CK(cudaMalloc(&c, (size_t)SIZE * SIZE * 2));
    CK(cudaMemset(b, 0x3c, (size_t)SIZE * SIZE * 2));
    const CUtensorMap map = tensor_map(b, SIZE, SIZE, SIZE * 2, 64, ROWS);
    const int shared = STAGES * STAGE_BYTES + 1024;
    CK(cudaFuncSetAttribute(feed_stores, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
    cudaStream_t st = probe_stream();
    const struct {
        int mode;
        const char* name;
    } modes[] = {{FEED, "feed alone"},
                 {STORE_BY_CONSUMERS, "stores alone"},
                 {FEED | STORE_BY_CONSUMERS, "both, consumers store"},
                 {FEED | STORE_BY_OWN_WARPS, "both, own warps store"},
                 {FEED | IN_L2, "feed alone, in L2"},
                 {STORE_BY_CONSUMERS | IN_L2, "stores alone, in L2"},
                 {FEED | STORE_BY_CONSUMERS | IN_L2, "both, in L2"}};
    for (int round = 0; round < 2; round++)
        for (const auto& m : modes) {
            const Timing t = time_call(st, [&] { feed_stores<<<sms, 512, shared, st>>>(map, (uint8_t*)c, m.mode); });
            CK(cudaGetLastError());
            printf("%-26s %7.1f µs (graph %7.1f)\n", m.name, t.event_us, t.graph_us);
        }
    return 0;
}
