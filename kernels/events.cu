// Event compaction (SPEC §3.6): the sorted indices of active events into y, their count into
// out2, without a host round trip, in one launch. Block b owns the spikes [b * a.n, (b + 1) *
// a.n): it counts the actives before its slice itself (every block reads the spikes before
// its own, at most COMPACT_BLOCKS_MAX of them, so no scratch and no inter-block wait), then
// sweeps its slice in tiles of its size; warp ballots rank the actives inside a tile, so
// indices come out in order. The last block writes the count.
#include "common.cuh"

#define COMPACT_THREADS 1024

// Actives among spikes [0, end), summed over the block (the same in every thread).
template <class E> __device__ int64_t count_before(const Args& a, int64_t end) {
    __shared__ int64_t total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    int64_t mine = 0;
    for (int64_t e = threadIdx.x; e < min(end, a.m); e += COMPACT_THREADS) mine += active(((const E*)a.x)[e]);
    for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd((unsigned long long*)&total, (unsigned long long)mine);
    __syncthreads();
    return total;
}

template <class E> __device__ void compact(const Args& a) {
    __shared__ int warp_base[COMPACT_THREADS / 32 + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int* out = (int*)a.y;
    const int64_t start = blockIdx.x * a.n, stop = min(a.m, start + a.n);
    int64_t written = count_before<E>(a, start);  // uniform across the block
    for (int64_t base = start; base < stop; base += COMPACT_THREADS) {
        const int64_t e = base + threadIdx.x;
        const bool on = e < stop && active(((const E*)a.x)[e]);
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
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *(int*)a.out2 = (int)written;
}

#define COMPACT(E, EN) EVS_KERNEL(compact_##EN, (COMPACT_THREADS), compact<E>)
COMPACT(u8, bool)
COMPACT(f16, f16)
COMPACT(bf16, bf16)
COMPACT(float, f32)
COMPACT(double, f64)
