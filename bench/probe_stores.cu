// How fast an SM's threads store C (issue #11): bsrmm's consumers store each 128 x 256 (or
// 64 x 512) bf16 tile of C from registers with 16-byte stores, a quad of threads covering 64
// bytes of a row, so that one warp instruction writes 8 rows x 64 bytes (HeldTile's `whole`
// path). Without those stores the 1.5 % rows run in half the time; with them aimed at an
// L2-resident region instead of C, nearly as slow as with them (bench/NOTES.md, thirtieth
// session): the cost is in the store path, not DRAM. This probe does only the stores: 132
// blocks of 256 threads (the two consumer warpgroups) store the 2,048 tiles of an 8192 x 8192
// bf16 C, 16 16-byte stores a thread a tile, in three shapes of a warp instruction:
//   quad: 8 rows x 64 B (the library's), oct: 4 rows x 128 B, row: 1 row x 512 B
// and each once into C and once into a 64 KB region per block (L2-resident); then rows of 512 B
// by 512 and 1024 threads a block, and the tiles as TMA tensor stores from shared memory (four
// 128-row boxes of 64 columns a tile, two tiles' buffers, no thread storing). Prints event µs
// (median of 25), graph µs, and TB/s by graph time. Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_stores.cu -lcuda -o /tmp/s && /tmp/s
#include "probe.cuh"
#include "probe_tma.cuh"

#include <cstdint>

#define SIZE 8192        // C is SIZE x SIZE bf16
#define TILE_ROWS 128
#define TILE_BYTES 512   // a tile row: 256 bf16
#define ROW_BYTES (SIZE * 2)

enum Shape { QUAD, OCT, ROW };

// Thread t's k-th store of a tile: (row, byte column) within the tile, for the shape. Each of the
// two warpgroups covers 64 rows, each warp 16 of them, each thread 16 stores of 16 bytes.
template <int S> __device__ void slot(int k, int& row, int& col) {
    const int g = threadIdx.x / 128, w = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int base = g * 64 + 16 * w;
    if (S == QUAD) row = base + lane / 4 + 8 * (k / 8), col = 64 * (k % 8) + 16 * (lane % 4);
    if (S == OCT) row = base + lane / 8 + 4 * (k / 4), col = 128 * (k % 4) + 16 * (lane % 8);
    if (S == ROW) row = base + k, col = 16 * lane;
}

template <int S> __global__ void __launch_bounds__(256, 1) stores(uint8_t* c, int resident) {
    const int tiles_n = SIZE * 2 / TILE_BYTES, tiles = SIZE / TILE_ROWS * tiles_n;
    for (int b = blockIdx.x; b < tiles; b += gridDim.x) {
        const int64_t tile_row = resident ? blockIdx.x % (SIZE / TILE_ROWS) : b / tiles_n;
        const int64_t tile_col = resident ? 0 : b % tiles_n;
        uint8_t* tile = c + tile_row * TILE_ROWS * ROW_BYTES + tile_col * TILE_BYTES;
#pragma unroll
        for (int k = 0; k < 16; k++) {
            int row, col;
            slot<S>(k, row, col);
            const uint32_t v = (uint32_t)(b * 16 + k) ^ threadIdx.x;
            *(uint4*)(tile + (int64_t)row * ROW_BYTES + col) = make_uint4(v, v + 1, v + 2, v + 3);
        }
    }
}

// Rows of 512 B by THREADS threads: each warp stores whole tile rows, 128 / warps of them a tile.
template <int THREADS> __global__ void __launch_bounds__(THREADS, 1) row_stores(uint8_t* c) {
    const int tiles_n = SIZE * 2 / TILE_BYTES, tiles = SIZE / TILE_ROWS * tiles_n;
    constexpr int ROWS = TILE_ROWS / (THREADS / 32);
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int b = blockIdx.x; b < tiles; b += gridDim.x) {
        uint8_t* tile = c + (int64_t)(b / tiles_n) * TILE_ROWS * ROW_BYTES + (b % tiles_n) * TILE_BYTES;
#pragma unroll
        for (int k = 0; k < ROWS; k++) {
            const uint32_t v = (uint32_t)(b * 16 + k) ^ threadIdx.x;
            *(uint4*)(tile + (int64_t)(w * ROWS + k) * ROW_BYTES + 16 * lane) = make_uint4(v, v + 1, v + 2, v + 3);
        }
    }
}

// Each tile as four TMA stores (64 columns x 128 rows, 16 KB each) from one of two 64 KB buffers
// in shared memory, by one thread; a buffer is reused once its stores have read it.
__global__ void __launch_bounds__(128, 1) tma_stores(const __grid_constant__ CUtensorMap c_map) {
    extern __shared__ uint8_t raw[];
    uint8_t* buf = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    const int tiles_n = SIZE * 2 / TILE_BYTES, tiles = SIZE / TILE_ROWS * tiles_n;
    if (threadIdx.x != 0) return;
    int j = 0;
    for (int b = blockIdx.x; b < tiles; b += gridDim.x, j++) {
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        const uint32_t src = (uint32_t)__cvta_generic_to_shared(buf + (j % 2) * 65536);
        const int row = b / tiles_n * TILE_ROWS, col = b % tiles_n * (TILE_BYTES / 2);
        for (int box = 0; box < 4; box++)
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&c_map),
                         "r"(col + 64 * box), "r"(row), "r"(src + box * 16384)
                         : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

void print(const char* shape, const char* where, Timing t, double bytes, int sms) {
    printf("%-22s %-13s %7.1f us (graph %7.1f)  %5.2f TB/s  %5.1f GB/s an SM\n", shape, where, t.event_us, t.graph_us,
           bytes / t.graph_us / 1e6, bytes / t.graph_us / 1e3 / sms);
}

int main() {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    uint8_t* c;
    CK(cudaMalloc(&c, (size_t)SIZE * ROW_BYTES));
    cudaStream_t st = probe_stream();
    const double bytes = (double)SIZE * ROW_BYTES;
    const char* names[] = {"quad 8 rows x 64 B", "oct 4 rows x 128 B", "row 1 row x 512 B"};
    for (int resident = 0; resident < 2; resident++)
        for (int s = 0; s < 3; s++) {
            const Timing t = time_call(st, [&] {
                if (s == QUAD) stores<QUAD><<<sms, 256, 0, st>>>(c, resident);
                if (s == OCT) stores<OCT><<<sms, 256, 0, st>>>(c, resident);
                if (s == ROW) stores<ROW><<<sms, 256, 0, st>>>(c, resident);
            });
            print(names[s], resident ? "L2 region" : "into C", t, bytes, sms);
        }
    print("row 1 row x 512 B", "512 threads", time_call(st, [&] { row_stores<512><<<sms, 512, 0, st>>>(c); }), bytes, sms);
    print("row 1 row x 512 B", "1024 threads", time_call(st, [&] { row_stores<1024><<<sms, 1024, 0, st>>>(c); }), bytes, sms);
    const CUtensorMap c_map = tensor_map(c, SIZE, SIZE, ROW_BYTES, 64, TILE_ROWS);
    const int smem = 2 * 65536 + 1024;
    CK(cudaFuncSetAttribute(tma_stores, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    print("TMA 4 boxes 64 x 128", "1 thread", time_call(st, [&] { tma_stores<<<sms, 128, smem, st>>>(c_map); }), bytes, sms);
    CK(cudaGetLastError());
    return 0;
}
