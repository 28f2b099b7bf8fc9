// Multi-block event compaction in one cluster (issue #8): the library's slices (each block counts
// every event before its slice itself: the last of 25 blocks of 100,000 streams 96 KB into one
// SM, of 64 blocks of 500,000 four rounds of 128 KB) against one cluster of CLUSTER blocks that
// each count only their own slice, exchange the counts through distributed shared memory and list
// from the bits they kept: one round of loads in all. A thread owns 16 K consecutive events (K
// 16-byte loads in flight), so one block scan orders its events. Beside them the library's
// kernels at sizes between (slices, one block of several tiles, its cluster in rounds). Graph and
// event µs a kernel in a chain of 7, each list checked against the slices'.
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

// The library's three compaction kernels (kernels/events.cu) as src/cuda/ops.rs launches them.
struct Launches {
    const Compaction& c;
    cudaStream_t s;

    Timing slices() const {
        int blocks = std::min(std::max((c.n + 4095) / 4096, 1), 64);
        const int slice = ((c.n + blocks - 1) / blocks + 511) / 512 * 512;
        blocks = (c.n + slice - 1) / slice;
        return chained(compact_bool, blocks, 512, c.ref, c.ref_count, slice);
    }
    Timing one_block() const { return chained(compact_one_block_bool, 1, 256, c.out, c.count, 0); }
    Timing cluster() const { return chained(compact_cluster_bool, 8, 512, c.out, c.count, 0); }

    template <class K> Timing chained(K kernel, int blocks, int threads, int* out, int* count, int slice) const {
        Args a = {};
        a.x = c.x;
        a.ldx = 1;
        a.m = c.n;
        a.n = slice;
        a.y = out;
        a.out2 = count;
        cudaStream_t st = s;
        return time_call(s, [=] { for (int i = 0; i < CHAIN; i++) launch_overlapped(st, kernel, blocks, threads, a); });
    }
};

int main() {
    cudaStream_t s = probe_stream();
    printf("| events | slices | one block | cluster (library) | cluster 8 x 512, K 2 | cluster 8 x 512, K 8 |\n|---|---|---|---|---|---|\n");
    for (int n : {3200, 5000, 8192, 12000, 20000, 50000, 100000, 500000}) {
        const Compaction c(n, 250);
        const Launches lib{c, s};
        const Timing t_slices = lib.slices();
        bool ok = true;
        auto checked = [&](auto run) {
            c.poison();
            const Timing t = run();
            ok = ok && c.same();
            return t;
        };
        const Timing t_one = checked([&] { return lib.one_block(); });
        const Timing t_cluster = checked([&] { return lib.cluster(); });
        const int cslice = ((n + 7) / 8 + 15) / 16 * 16;
        auto cl = [&](auto kernel, int threads, int k) {
            if (cslice > threads * 16 * k) return Timing{0, 0};
            return checked([&] {
                return time_call(s, [&] {
                    for (int i = 0; i < CHAIN; i++) launch_overlapped(s, kernel, 8, threads, (const u8*)c.x, n, cslice, c.out, c.count);
                });
            });
        };
        const Timing c2 = cl(cluster_compact<512, 8, 2>, 512, 2);
        const Timing c8 = cl(cluster_compact<512, 8, 8>, 512, 8);
        printf("| %d%s |", n, ok ? "" : " WRONG");
        for (Timing t : {t_slices, t_one, t_cluster, c2, c8}) printf(" %.2f / %.2f |", t.graph_us / CHAIN, t.event_us / CHAIN);
        printf("\n");
    }
}
