// Kernel parameters read before griddepcontrol.wait (issue #8): ncu put 13 % of spmv_n_slices'
// stall samples on constant-cache misses at its prologue's first parameter reads, which come
// after the wait. A chain of small dependent kernels whose parameter block is laid out as the
// library's Args (39 words, 312 bytes from c[0x0][0x210]), each kernel reading one word of each of
// its six 64-byte lines (the words kernels/common.cuh's args_lines_sum reads in `params`):
//   after:  the wait, then the reads (as the library's kernels do now);
//   before: the wait predicated both ways on the words' sum (`@p wait; @!p wait`, the `params`
//           variant's wait_after_params), so the reads issue, and miss, ahead of it: ptxas sank
//           reads that were only the wait asm's inputs past ACQBULK (SASS checked).
// Graph and event µs per kernel, for grids of 1 to 528 blocks.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_param_prefetch.cu -o /tmp/pp && /tmp/pp
#include "probe.cuh"

constexpr int CHAIN = 7, WORDS = 39;

struct Params {
    long long w[WORDS];
};

template <bool BEFORE> __global__ void __launch_bounds__(256) link(Params p, float* buf, int i) {
    const long long sum = p.w[0] + p.w[6] + p.w[14] + p.w[22] + p.w[30] + p.w[38];  // one a 64-byte line
    if (BEFORE)
        asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.s64 p, %0, 0;\n\t@p griddepcontrol.wait;\n\t@!p griddepcontrol.wait;\n\t}"
                     ::"l"(sum)
                     : "memory");
    else
        asm volatile("griddepcontrol.wait;" ::: "memory");
    const float v = buf[i] + (float)(sum & 1);
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) buf[i + 1] = v;
}

template <bool BEFORE> void chain(cudaStream_t s, const Params& p, float* buf, int blocks) {
    for (int i = 0; i < CHAIN; i++) launch_overlapped(s, link<BEFORE>, blocks, 256, p, buf, i);
}

int main() {
    cudaStream_t s = probe_stream();
    float* buf = zeroed_floats(4096);
    Params p = {};
    for (int k = 0; k < WORDS; k++) p.w[k] = 2 * k;
    printf("| blocks | parameters read after the wait: event / graph µs a kernel | before it |\n|---|---|---|\n");
    for (int blocks : {1, 16, 132, 528}) {
        const Timing after = time_call(s, [&] { chain<false>(s, p, buf, blocks); });
        const Timing before = time_call(s, [&] { chain<true>(s, p, buf, blocks); });
        printf("| %d | %.2f / %.2f | %.2f / %.2f |\n", blocks, after.event_us / CHAIN, after.graph_us / CHAIN,
               before.event_us / CHAIN, before.graph_us / CHAIN);
    }
}
