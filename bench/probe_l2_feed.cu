// How fast TMA feeds the SMs from L2 (issue #11): bsrmm's 64-row tiles stage, for every stored
// block, B's rows of its block column across the tile's 512 columns (8 boxes of 64 columns,
// 128-byte swizzled rows) while the blocks running at once share one 512-column slab of B in
// L2. This probe does only that feed, with no MMA and no stores: a producer thread per block
// loads stages of ROWS rows x 512 columns at random ROWS-aligned rows of an 8192 x 8192 bf16 B,
// two consumer warpgroups wait for each stage and free it. Its TB/s bound what any kernel that
// stages B per block (bsrmm:wgmma) can reach: useful FLOP/s <= TB/s x 2 ROWS / 2 bytes.
// `hold` as argument: the 64-row case only, back to back for a few seconds. Build and run on the
// GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_l2_feed.cu -lcuda -o /tmp/f && /tmp/f
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "probe_feed.cuh"

using namespace hopper;

#define SIZE 8192          // B is SIZE x SIZE bf16
#define SLAB_COLS 512      // columns of a stage (the tile's), and of the slab the blocks share
#define BOX_COLS 64        // 128-byte rows: one swizzle atom wide
#define RING_BYTES (192 * 1024)

// Each block makes `loads` stages; stage i of block b reads ROWS rows at a pseudo-random
// ROWS-aligned row, in slab (i * slabs / loads): slabs = 1 keeps one 8 MB slab (L2-resident),
// slabs = 16 walks all of B once as the library's groups of columns do.
template <int ROWS> __global__ void __launch_bounds__(384, 1) feed(const __grid_constant__ CUtensorMap b_map, int loads, int slabs) {
    constexpr int STAGE_BYTES = ROWS * SLAB_COLS * 2, STAGES = RING_BYTES / STAGE_BYTES;
    extern __shared__ uint8_t raw[];
    uint8_t* ring = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    __shared__ uint64_t full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x < 128) {  // producer
        if (threadIdx.x == 0) feed_ring<ROWS, STAGES>(ring, b_map, full, empty, loads, slabs);
        return;
    }
    const int lane = threadIdx.x % 32;
    for (int i = 0; i < loads; i++) {
        const int s = i % STAGES;
        barrier_wait(&full[s], (i / STAGES) & 1);
        __syncwarp();
        if (lane == 0) barrier_arrive(&empty[s]);
    }
}

template <int ROWS> void run(const void* b, int sms, int slabs, cudaStream_t st) {
    constexpr int STAGE_BYTES = ROWS * SLAB_COLS * 2, LOADS = 48 * 1024 * 1024 / STAGE_BYTES;  // 48 MB a block
    const CUtensorMap map = tensor_map(b, SIZE, SIZE, SIZE * 2, BOX_COLS, ROWS);
    const int shared = RING_BYTES + 1024;
    CK(cudaFuncSetAttribute(feed<ROWS>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
    const Timing t = time_call(st, [&] { feed<ROWS><<<sms, 384, shared, st>>>(map, LOADS, slabs); });
    CK(cudaGetLastError());
    const double bytes = (double)sms * LOADS * STAGE_BYTES;
    printf("stages of %2d rows x %d, %2d slab(s): %8.1f µs (graph %8.1f) %5.2f TB/s -> bsrmm b%d <= %.0f TFLOP/s\n", ROWS,
           SLAB_COLS, slabs, t.event_us, t.graph_us, bytes / t.graph_us / 1e6, ROWS,
           bytes / t.graph_us / 1e6 * ROWS);
}

int main(int argc, char** argv) {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    void* b;
    CK(cudaMalloc(&b, (size_t)SIZE * SIZE * 2));
    CK(cudaMemset(b, 0x3c, (size_t)SIZE * SIZE * 2));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (argc > 1) {  // `hold`: the 64-row feed back to back for about 3 s (clocks and power beside it)
        for (int r = 0; r < 12; r++) run<64>(b, sms, 1, st);
        return 0;
    }
    for (int slabs : {1, 16}) {
        run<64>(b, sms, slabs, st);
        run<32>(b, sms, slabs, st);
        run<16>(b, sms, slabs, st);
    }
    return 0;
}
