// Multi-block event compaction in one cluster (issue #8): the library's slices (each block counts
// every event before its slice itself: the last of 25 blocks of 100,000 streams 96 KB into one
// SM, of 64 blocks of 500,000 four rounds of 128 KB) against one cluster of CLUSTER blocks that
// each count only their own slice, exchange the counts through distributed shared memory and list
// from the bits they kept: one round of loads in all. A thread owns 16 K consecutive events (K
// 16-byte loads in flight), so one block scan orders its events. Graph and event µs a kernel in a
// chain of 7, each list checked against the library's.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels bench/probe_compact_cluster.cu -o /tmp/pcc && /tmp/pcc
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "../kernels/events.cu"
#include <cooperative_groups.h>

constexpr int CHAIN = 7;

template <int T, int CLUSTER, int K>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(T) cluster_compact(const u8* x, int n, int slice, int* out, int* count) {
    wait_for_prior_grids();
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    __shared__ int warp_sums[T / 32];
    __shared__ int block_total;
    const int rank = (int)cluster.block_rank();
    const int start = rank * slice, stop = min(n, start + slice);
    const int first = start + threadIdx.x * 16 * K;
    unsigned bits[K];
    int mine = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        bits[k] = bits16(x, 1, first + 16 * k, stop, [](u8 v) { return v != 0; });
        mine += __popc(bits[k]);
    }
    int total;
    int at = block_exclusive_sum_in<T>(mine, &total, warp_sums);
    if (threadIdx.x == 0) block_total = total;
    cluster.sync();
    int before = 0, all = 0;
#pragma unroll
    for (int r = 0; r < CLUSTER; r++) {
        const int theirs = *cluster.map_shared_rank(&block_total, r);
        before += r < rank ? theirs : 0;
        all += theirs;
    }
    at += before;
#pragma unroll
    for (int k = 0; k < K; k++)
        for (unsigned b = bits[k]; b; b &= b - 1) out[at++] = first + 16 * k + __ffs(b) - 1;
    if (rank == CLUSTER - 1 && threadIdx.x == 0) *count = all;
    cluster.sync();  // the counts are read before any block exits
}

int main() {
    cudaStream_t s = probe_stream();
    printf("| events | library slices (blocks x 512) | cluster 8 x 512, K 2 | cluster 8 x 512, K 8 | cluster 8 x 256, K 8 |\n|---|---|---|---|---|\n");
    for (int n : {3200, 100000, 500000}) {
        const Compaction c(n, 250);
        int blocks = std::min(std::max((n + 4095) / 4096, 1), 64);
        const int slice = ((n + blocks - 1) / blocks + 511) / 512 * 512;
        blocks = (n + slice - 1) / slice;
        Args a = {};
        a.x = c.x;
        a.ldx = 1;
        a.m = n;
        a.n = slice;
        a.y = c.ref;
        a.out2 = c.ref_count;
        auto lib = [&] { for (int i = 0; i < CHAIN; i++) launch_overlapped(s, compact_bool, blocks, 512, a); };
        const Timing t_lib = time_call(s, lib);
        const int cslice = ((n + 7) / 8 + 15) / 16 * 16;
        bool ok = true;
        auto cl = [&](auto kernel, int threads, int k) {
            if (cslice > threads * 16 * k) return Timing{0, 0};
            c.poison();
            auto call = [&] { for (int i = 0; i < CHAIN; i++) launch_overlapped(s, kernel, 8, threads, (const u8*)c.x, n, cslice, c.out, c.count); };
            const Timing t = time_call(s, call);
            ok = ok && c.same();
            return t;
        };
        const Timing c2 = cl(cluster_compact<512, 8, 2>, 512, 2);
        const Timing c8 = cl(cluster_compact<512, 8, 8>, 512, 8);
        const Timing c8s = cl(cluster_compact<256, 8, 8>, 256, 8);
        printf("| %d (%d blocks)%s |", n, blocks, ok ? "" : " WRONG");
        for (Timing t : {t_lib, c2, c8, c8s}) printf(" %.2f / %.2f |", t.graph_us / CHAIN, t.event_us / CHAIN);
        printf("\n");
    }
}
