// Event compaction (SPEC §3.6): the sorted indices of active events into y, their count into
// out2, without a host round trip. One block sweeps the spikes in tiles of its size; warp
// ballots rank the actives inside a tile, so indices come out in order.
#include "common.cuh"

#define COMPACT_THREADS 1024

template <class E> __device__ void compact(const Args& a) {
    __shared__ int warp_base[COMPACT_THREADS / 32 + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int* out = (int*)a.y;
    int64_t written = 0;  // uniform across the block
    for (int64_t base = 0; base < a.m; base += COMPACT_THREADS) {
        const int64_t e = base + threadIdx.x;
        const bool on = e < a.m && active(((const E*)a.x)[e]);
        const unsigned ballot = __ballot_sync(0xffffffffu, on);
        if (lane == 0) warp_base[warp] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {  // exclusive scan of the 32 warp counts; the total goes last
            int sum = 0;
            for (int w = 0; w < COMPACT_THREADS / 32; w++) {
                const int count = warp_base[w];
                warp_base[w] = sum;
                sum += count;
            }
            warp_base[COMPACT_THREADS / 32] = sum;
        }
        __syncthreads();
        if (on) out[written + warp_base[warp] + __popc(ballot & ((1u << lane) - 1))] = (int)e;
        written += warp_base[COMPACT_THREADS / 32];
        __syncthreads();  // warp_base is rewritten by the next tile
    }
    if (threadIdx.x == 0) *(int*)a.out2 = (int)written;
}

#define COMPACT(E, EN) \
    extern "C" __global__ void __launch_bounds__(COMPACT_THREADS) compact_##EN(Args a) { compact<E>(a); }
COMPACT(u8, bool)
COMPACT(f16, f16)
COMPACT(bf16, bf16)
COMPACT(float, f32)
COMPACT(double, f64)
