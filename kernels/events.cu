// Event compaction (SPEC §3.6): the sorted indices of active events into y, their count into
// out2, without a host round trip, in one launch. The same kernel lists the active rows of each
// column of an event matrix for the dense products and plasticity, which read the lists instead
// of every event (src/cuda/ops.rs): column blockIdx.y (its a.m events a.ldx apart from
// x + blockIdx.y) is listed at y + blockIdx.y * a.m, its count at out2[blockIdx.y]. Block
// blockIdx.x owns the rows [blockIdx.x * a.n, (blockIdx.x + 1) * a.n): it counts the actives
// before its slice itself (every block reads the events before its own, at most
// COMPACT_BLOCKS_MAX slices of them, so no scratch and no inter-block wait), then lists its
// slice's actives in order (common.cuh, list_active). The last block writes the count. Columns
// of up to one tile of a small block (COMPACT_ONE_BLOCK_THREADS x 16 events) are listed by one
// such block each, with no slices (compact_one_block). On sm_90, longer columns are listed by
// one cluster each (compact_cluster), whose blocks read only their own events.
#include "common.cuh"

#include <cooperative_groups.h>

#define COMPACT_THREADS 512            // 1024 spilled list_active's strided loads (64 registers)
#define COMPACT_ONE_BLOCK_THREADS 256  // at 1024 the tiles chained slower (bench/probe_compact_small.cu)
#define COUNT_BATCH 32                 // events a thread counts at once before its slice: loads with no predicate

// This thread's share of count_before's count, for a spike vector of bytes on a 16-byte
// boundary: 16 events a load, so the last of 64 blocks of 500,000 waits for 4 rounds, not 30.
__device__ int64_t count_spike_bytes(const u8* x, int64_t end) {
    const uint4* words = (const uint4*)x;
    const int64_t whole = end / 16;
    int64_t mine = 0;
    for (int64_t base = threadIdx.x; base < whole; base += (int64_t)COUNT_BATCH / 2 * COMPACT_THREADS) {
        uint4 q[COUNT_BATCH / 2];
#pragma unroll
        for (int j = 0; j < COUNT_BATCH / 2; j++) {
            const int64_t w = base + j * COMPACT_THREADS;
            q[j] = w < whole ? words[w] : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < COUNT_BATCH / 2; j++)  // __vcmpne4: 0xff in each non-zero byte
            mine += (__popc(__vcmpne4(q[j].x, 0)) + __popc(__vcmpne4(q[j].y, 0)) + __popc(__vcmpne4(q[j].z, 0)) +
                     __popc(__vcmpne4(q[j].w, 0))) / 8;
    }
    for (int64_t e = whole * 16 + threadIdx.x; e < end; e += COMPACT_THREADS) mine += x[e] != 0;
    return mine;
}

// This thread's share of count_before's count, any event type and stride: batches of
// COUNT_BATCH x COMPACT_THREADS events.
template <class E> __device__ int64_t count_events(const E* x, int64_t ldx, int64_t end) {
    constexpr int64_t BATCH_EVENTS = (int64_t)COUNT_BATCH * COMPACT_THREADS;
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
    return mine;
}

// Active events among [0, end) of x (ldx apart), summed over the block (the same in every
// thread): every load of a batch is issued before any is tested (with a test per load the
// compiler kept 5 loads in flight, and the last block of 500,000 events counted 3x slower). The
// threads' counts meet in a block scan: a 64-bit shared atomic, which Hopper runs as a
// compare-and-swap loop, serialized the block's 32 warps. Counts fit int32, as the list does.
template <class E> __device__ int64_t count_before(const E* x, int64_t ldx, int64_t end) {
    int64_t mine = 0;
    if constexpr (std::is_same<E, u8>::value) {
        if (ldx == 1 && ((uintptr_t)x & 15) == 0) mine = count_spike_bytes(x, end);
        else mine = count_events(x, ldx, end);
    } else {
        mine = count_events(x, ldx, end);
    }
    int total;
    block_exclusive_sum<COMPACT_THREADS>((int)mine, &total);
    return total;
}

template <class E> __device__ void compact(const Args& a) {
    const int64_t column = blockIdx.y, start = blockIdx.x * a.n, stop = min(a.m, start + a.n);
    const E* x = (const E*)a.x + column;
    // uniform across the block; the first block has nothing before it (one-block lists: no scan)
    const int64_t before = start > 0 ? count_before(x, a.ldx, start) : 0;
    const int64_t mine = list_active<COMPACT_THREADS>(x, a.ldx, start, stop, (int*)a.y + column * a.m + before);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) ((int*)a.out2)[column] = (int)(before + mine);
}

// A column listed by one block, in tiles of COMPACT_ONE_BLOCK_THREADS x 16 events (the host
// sends it columns of one tile).
template <class E> __device__ void compact_one_block(const Args& a) {
    const int64_t column = blockIdx.y;
    const int64_t listed = list_active<COMPACT_ONE_BLOCK_THREADS>((const E*)a.x + column, a.ldx, 0, a.m, (int*)a.y + column * a.m);
    if (threadIdx.x == 0) ((int*)a.out2)[column] = (int)listed;
}

// A column listed by one cluster of COMPACT_CLUSTER blocks, in rounds of COMPACT_CLUSTER_ROUND
// events: in each, block b takes the round's b-th run of COMPACT_CLUSTER_THREADS x 32 events, 32
// consecutive ones a thread (two 16-byte loads of bools), counts its actives, and reads the
// counts of the blocks before it from their shared memory; the list is written from the bits the
// threads kept. No block reads another's events: the slices' last block of 100,000 bools counted
// 96 KB before its own (3.46 graph µs chained, a cluster 2.78; bench/probe_compact_cluster.cu).
// Thirty-two events a thread, not 128: a warp's loads then span 1 KB, not 4 (4.38 µs).
#define COMPACT_CLUSTER 8
#define COMPACT_CLUSTER_THREADS 512
#define COMPACT_CLUSTER_ROUND (COMPACT_CLUSTER * COMPACT_CLUSTER_THREADS * 32)
template <class E> __device__ void compact_cluster(const Args& a) {
#if __CUDA_ARCH__ >= 900
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    __shared__ int warp_sums[2][COMPACT_CLUSTER_THREADS / 32];
    __shared__ int block_count[2];  // this block's actives in a round, read by the cluster's blocks
    const int rank = (int)cluster.block_rank();
    const int64_t column = blockIdx.y;
    const E* x = (const E*)a.x + column;
    int* out = (int*)a.y + column * a.m;
    auto is_active = [](E v) { return active(v); };
    int64_t listed = 0;  // by the rounds before this one, the same in every block
    int round = 0;       // the buffers alternate between rounds: one barrier a round each
    for (int64_t base = 0; base < a.m; base += COMPACT_CLUSTER_ROUND, round ^= 1) {
        const int64_t first = base + ((int64_t)rank * COMPACT_CLUSTER_THREADS + threadIdx.x) * 32;
        unsigned live = bits16(x, a.ldx, first, a.m, is_active) | bits16(x, a.ldx, first + 16, a.m, is_active) << 16;
        int total;
        int at = block_exclusive_sum_in<COMPACT_CLUSTER_THREADS>(__popc(live), &total, warp_sums[round]);
        if (threadIdx.x == 0) block_count[round] = total;
        cluster.sync();
        int64_t before = listed;
#pragma unroll
        for (int r = 0; r < COMPACT_CLUSTER; r++) {
            const int theirs = *cluster.map_shared_rank(&block_count[round], r);
            before += r < rank ? theirs : 0;
            listed += theirs;
        }
        for (; live; live &= live - 1) out[before + at++] = (int)(first + __ffs(live) - 1);
    }
    if (rank == COMPACT_CLUSTER - 1 && threadIdx.x == 0) ((int*)a.out2)[column] = (int)listed;
    cluster.sync();  // no block exits while another may still read its counts
#endif
}

#define COMPACT(E, EN)                                                                    \
    EVS_KERNEL(compact_##EN, (COMPACT_THREADS), compact<E>)                               \
    EVS_KERNEL(compact_one_block_##EN, (COMPACT_ONE_BLOCK_THREADS), compact_one_block<E>) \
    EVS_CLUSTER_KERNEL(compact_cluster_##EN, (COMPACT_CLUSTER_THREADS), COMPACT_CLUSTER, compact_cluster<E>)
COMPACT(u8, bool)
COMPACT(f16, f16)
COMPACT(bf16, bf16)
COMPACT(float, f32)
COMPACT(double, f64)
