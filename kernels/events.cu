// Event compaction (SPEC §3.6): the sorted indices of active events into y, their count into
// out2, without a host round trip, in one launch. Block b owns the spikes [b * a.n, (b + 1) *
// a.n): it counts the actives before its slice itself (every block reads the spikes before
// its own, at most COMPACT_BLOCKS_MAX of them, so no scratch and no inter-block wait), then
// lists its slice's actives in order (common.cuh, list_active). The last block writes the count.
#include "common.cuh"

#define COMPACT_THREADS 1024
#define COMPACT_RUN 4  // consecutive spikes a thread tests per tile, their loads in flight together

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
    const int64_t start = blockIdx.x * a.n, stop = min(a.m, start + a.n);
    const int64_t before = count_before<E>(a, start);  // uniform across the block
    const int64_t mine = list_active<COMPACT_THREADS, COMPACT_RUN>((const E*)a.x, 1, start, stop, (int*)a.y + before);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *(int*)a.out2 = (int)(before + mine);
}

#define COMPACT(E, EN) EVS_KERNEL(compact_##EN, (COMPACT_THREADS), compact<E>)
COMPACT(u8, bool)
COMPACT(f16, f16)
COMPACT(bf16, bf16)
COMPACT(float, f32)
COMPACT(double, f64)
