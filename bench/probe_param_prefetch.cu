// Kernel parameters read before griddepcontrol.wait (issue #8): ncu put 13 % of spmv_n_slices'
// stall samples on constant-cache misses at its prologue's first parameter reads, which come
// after the wait. A chain of small dependent kernels with a parameter block the size of the
// library's Args (576 bytes, 9 lines of 64), each kernel reading one word of every line:
//   after:  the wait, then the reads (as the library's kernels do now);
//   before: the reads summed into a shared word before the wait (its memory clobber keeps the
//           store, and so the reads, ahead of it; inputs of the wait's asm alone were sunk past
//           it by ptxas), so they issue (and miss) while the predecessor finishes.
// Graph and event µs per kernel, for grids of 1 to 528 blocks.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_param_prefetch.cu -o /tmp/pp && /tmp/pp
#include "probe.cuh"

constexpr int CHAIN = 7, WORDS = 72, STRIDE = 8;  // 72 x 8 bytes; a word of every 64-byte line

struct Params {
    long long w[WORDS];
};

template <bool BEFORE> __global__ void __launch_bounds__(256) link(Params p, float* buf, int i) {
    long long sum = 0;
#pragma unroll
    for (int k = 0; k < WORDS; k += STRIDE) sum += p.w[k];
    if (BEFORE) {  // a shared store of their sum, which the wait's memory clobber keeps before it
        __shared__ volatile long long sink;
        if (threadIdx.x == 0) sink = sum;
    }
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
