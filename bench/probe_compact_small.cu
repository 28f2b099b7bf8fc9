// What a one-block event compaction costs in a chain (issue #8: the whole step 4,000 spent 1.7
// graph µs on each of its two compactions of 3,200 and 800 bool events, against ~0.6 for a
// chained kernel that reads and writes one word). A chain of 7 dependent kernels, each waiting
// for its predecessor (griddepcontrol.wait) as the library's kernels do:
//   before<T>: the listing as it was (4 events a thread, byte loads, a three-barrier scan),
//              T = 1024 as the library launched it;
//   lib:       the library's compact_one_block_bool (kernels/events.cu: 256 threads, 16 events a
//              thread in one 16-byte load, a one-barrier scan);
//   empty<T>:  wait, one byte read, one int written, T threads (what the block size costs).
// Measured on the H200 (2026-11-30, graph µs a kernel at 800 / 3,200 events): before<1024> 1.68 /
// 1.70; the same tile loop at 256 threads and 16 byte loads 1.56 / 1.67; one 16-byte load a
// thread with a two-barrier scan 1.12 / 1.20 at 256 threads, 1.27 / 1.33 at 1024, 1.12 / 1.69 at
// 128; with one barrier and the bytes tested four at a time 0.96 / 1.05 (256 threads); empty
// 0.62 at any size. This probe as it stands (the variants above folded into the library's kernel)
// printed before<1024> 1.32 / 1.38, lib 1.20 / 1.32, empty 0.61: before<1024> here holds fewer
// registers than the library's old compact_bool (64, the whole register file at 1024 threads),
// which chained at 1.70; in the library the step 4,000 moved 10.83 -> 9.58 for its two
// compactions. Each list is checked against before<1024>'s.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels bench/probe_compact_small.cu -o /tmp/pc && /tmp/pc
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "../kernels/events.cu"

constexpr int CHAIN = 7, BEFORE_RUN = 4;

template <int T> __global__ void __launch_bounds__(T) empty(const u8* x, int* out) {
    wait_for_prior_grids();
    if (threadIdx.x == 0) out[0] = x[0];
}

template <int T> __global__ void __launch_bounds__(T) before(Args a) {
    wait_for_prior_grids();
    const u8* x = (const u8*)a.x;
    int* out = (int*)a.y;
    int listed = 0;
    for (int base = 0; base < a.m; base += T * BEFORE_RUN) {
        const int first = base + threadIdx.x * BEFORE_RUN;
        unsigned live = 0;
#pragma unroll
        for (int j = 0; j < BEFORE_RUN; j++) live |= (unsigned)(first + j < a.m && x[first + j] != 0) << j;
        int total;
        int at = block_exclusive_sum<T>(__popc(live), &total);
        for (; live; live &= live - 1) out[listed + at++] = first + __ffs(live) - 1;
        listed += total;
    }
    if (threadIdx.x == 0) *(int*)a.out2 = listed;
}

int main() {
    cudaStream_t s = probe_stream();
    printf("| events | before, 1024 threads | lib (one block, 256) | empty 1024 | empty 256 |\n|---|---|---|---|---|\n");
    for (int n : {800, 3200}) {
        const Compaction c(n, 200);
        Args a = {};
        a.x = c.x;
        a.ldx = 1;
        a.m = n;
        a.y = c.ref;
        a.out2 = c.ref_count;
        Args b = a;
        b.y = c.out;
        b.out2 = c.count;
        auto chain = [&](auto kernel, int threads, auto... args) {
            return [=] { for (int i = 0; i < CHAIN; i++) launch_overlapped(s, kernel, 1, threads, args...); };
        };
        const Timing old = time_call(s, chain(before<1024>, 1024, a));
        c.poison();
        const Timing lib = time_call(s, chain(compact_one_block_bool, 256, b));
        const Timing e1024 = time_call(s, chain(empty<1024>, 1024, (const u8*)c.x, c.count + 1));
        const Timing e256 = time_call(s, chain(empty<256>, 256, (const u8*)c.x, c.count + 1));
        printf("| %d%s |", n, c.same() ? "" : " WRONG");
        for (Timing t : {old, lib, e1024, e256}) printf(" %.2f / %.2f |", t.graph_us / CHAIN, t.event_us / CHAIN);
        printf("\n");
    }
}
