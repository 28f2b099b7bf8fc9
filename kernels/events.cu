// Event compaction (SPEC §3.6): the sorted indices of active events into y, their count into
// out2, without a host round trip, in one launch. The same kernel lists the active rows of each
// column of an event matrix for the dense products and plasticity, which read the lists instead
// of every event (src/cuda/ops.rs): column blockIdx.y (its a.m events a.ldx apart from
// x + blockIdx.y) is listed at y + blockIdx.y * a.m, its count at out2[blockIdx.y]. Block
// blockIdx.x owns the rows [blockIdx.x * a.n, (blockIdx.x + 1) * a.n): it counts the actives
// before its slice itself (every block reads the events before its own, at most
// COMPACT_BLOCKS_MAX slices of them, so no scratch and no inter-block wait), then lists its
// slice's actives in order (common.cuh, list_active). The last block writes the count.
#include "common.cuh"

#define COMPACT_THREADS 1024
#define COMPACT_RUN 4     // events a thread tests per tile of its slice, their loads in flight together
#define COUNT_BATCH 16    // events a thread counts at once before its slice: loads with no predicate

// Active events among [0, end) of x (ldx apart), summed over the block (the same in every
// thread), in batches of COUNT_BATCH x COMPACT_THREADS events, every load of a batch issued
// before any is tested (with a test per load the compiler kept 5 in flight: the last block of
// 500,000 events counted 3x slower).
template <class E> __device__ int64_t count_before(const E* x, int64_t ldx, int64_t end) {
    constexpr int64_t BATCH_EVENTS = (int64_t)COUNT_BATCH * COMPACT_THREADS;
    __shared__ int64_t total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    int64_t mine = 0;
    const int64_t batched = end / BATCH_EVENTS * BATCH_EVENTS;
    for (int64_t base = threadIdx.x; base < end; base += BATCH_EVENTS) {
        E v[COUNT_BATCH];
        if (base < batched) {
#pragma unroll
            for (int j = 0; j < COUNT_BATCH; j++) v[j] = x[(base + j * COMPACT_THREADS) * ldx];
        } else {  // the last, partial batch
#pragma unroll
            for (int j = 0; j < COUNT_BATCH; j++) {
                const int64_t e = base + j * COMPACT_THREADS;
                v[j] = e < end ? x[e * ldx] : E(0);
            }
        }
#pragma unroll
        for (int j = 0; j < COUNT_BATCH; j++) mine += active(v[j]);
    }
    for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd((unsigned long long*)&total, (unsigned long long)mine);
    __syncthreads();
    return total;
}

template <class E> __device__ void compact(const Args& a) {
    const int64_t column = blockIdx.y, start = blockIdx.x * a.n, stop = min(a.m, start + a.n);
    const E* x = (const E*)a.x + column;
    const int64_t before = count_before(x, a.ldx, start);  // uniform across the block
    const int64_t mine = list_active<COMPACT_THREADS, COMPACT_RUN>(x, a.ldx, start, stop, (int*)a.y + column * a.m + before);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) ((int*)a.out2)[column] = (int)(before + mine);
}

#define COMPACT(E, EN) EVS_KERNEL(compact_##EN, (COMPACT_THREADS), compact<E>)
COMPACT(u8, bool)
COMPACT(f16, f16)
COMPACT(bf16, bf16)
COMPACT(float, f32)
COMPACT(double, f64)
