// Random float adds into shared-memory sums, the lists' inner step three ways (issue #9;
// bench/NOTES.md "spmm lists: where the L1 pipe's wavefronts go now"). The lists add each pair
// with a shared load and a store (two L1 pipe wavefronts, more at bank conflicts), since an f32
// atomic on a block's own shared memory is a CAS loop (ATOMS.CAST.SPIN). But
// red.shared::cluster.add.f32 compiles to one ATOM.E.ADD.F32 through the SM-to-SM network (with
// a CAS fallback where the address turns out local): does adding into the other block of a
// cluster of two go faster than the load and store?
//   local  : each warp adds pseudo-random (column, value) pairs into its 4 KB of sums as the lists
//            do at 8 lanes a part (4 parts x 2 copies of 128 columns; a part's 8 columns distinct),
//            two lists' loads, then their stores
//   remote : the same pairs, red.shared::cluster.add.f32 into the partner block's sums (mapa)
//   own    : the same through the cluster window of the block's own sums (mapa to its own rank)
// Checked: each block's sums total against the values its partner (or itself) added. Prints
// the call's µs, adds per ns and per SM clock.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pd bench/probe_dsmem_adds.cu && /tmp/pd
#include "probe.cuh"

constexpr int THREADS = 256, WARPS = THREADS / 32, SUMS = 1024, ITERS = 512;
enum Mode { LOCAL, REMOTE, OWN };

__device__ __forceinline__ unsigned next_random(unsigned& x) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    return x;
}

__device__ __forceinline__ void red_add(unsigned cluster_address, float v) {
    asm volatile("red.shared::cluster.add.f32 [%0], %1;" ::"r"(cluster_address), "f"(v) : "memory");
}

// A lane's column of list `u` in round `it`: 8 lanes of a part hold distinct columns (16 apart
// plus the same random offset), the parts independent, as a list's pairs are.
__device__ __forceinline__ int column(unsigned r, int sub) { return (int)((r % 128 + sub * 16) % 128); }

template <Mode MODE> __global__ void __cluster_dims__(2, 1, 1) adds(float* totals, float* added) {
    __shared__ float sums[WARPS][SUMS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = lane / 8, sub = lane % 8;
    for (int k = threadIdx.x; k < WARPS * SUMS; k += THREADS) (&sums[0][0])[k] = 0;
    cluster_sync();
    const unsigned peer = MODE == REMOTE ? cluster_rank() ^ 1 : cluster_rank();
    unsigned x = 0x9e3779b9u * (blockIdx.x * THREADS + threadIdx.x + 1), shared_r = 0;
    float mine = 0;
    for (int it = 0; it < ITERS; it++) {
        // the part's random offset from its lane 0, so its 8 columns stay distinct
        shared_r = __shfl_sync(0xffffffffu, next_random(x), part * 8);
        const int c0 = column(shared_r, sub), c1 = column(shared_r >> 8, sub);
        const float v0 = (float)(next_random(x) & 1023) / 1024, v1 = (float)(next_random(x) & 1023) / 1024;
        float* row0 = &sums[warp][part * 128 + c0];
        float* row1 = &sums[warp][512 + part * 128 + c1];
        if (MODE == LOCAL) {
            const float old0 = *row0, old1 = *row1;
            *row0 = old0 + v0, *row1 = old1 + v1;
            __syncwarp();
        } else {
            red_add(in_block(row0, peer), v0);
            red_add(in_block(row1, peer), v1);
        }
        mine += v0 + v1;
    }
    cluster_sync();  // the partner's adds are in
    float total = 0;
    for (int k = lane; k < SUMS; k += 32) total += sums[warp][k];
    for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o), mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if (lane == 0) totals[blockIdx.x * WARPS + warp] = total, added[blockIdx.x * WARPS + warp] = mine;
}

template <Mode MODE> void run(const char* name, int blocks, int sms, int clock_khz) {
    float *totals, *added;
    CK(cudaMalloc(&totals, blocks * WARPS * 4));
    CK(cudaMalloc(&added, blocks * WARPS * 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    adds<MODE><<<blocks, THREADS, 0, s>>>(totals, added);
    CK(cudaStreamSynchronize(s));
    std::vector<float> t(blocks * WARPS), a(blocks * WARPS);
    CK(cudaMemcpy(t.data(), totals, t.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(a.data(), added, a.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0;  // block b's sums hold what its partner (REMOTE) or it added
    for (int b = 0; b < blocks; b++)
        for (int w = 0; w < WARPS; w++) {
            const int from = MODE == REMOTE ? (b ^ 1) : b;
            const double want = a[from * WARPS + w], got = t[b * WARPS + w];
            err = std::max(err, fabs(got - want) / (1 + fabs(want)));
        }
    const Timing time = time_call(s, [&] { adds<MODE><<<blocks, THREADS, 0, s>>>(totals, added); });
    const double n = 2.0 * ITERS * THREADS * blocks;
    printf("%-7s %8.1f us graph %8.1f  %6.2f adds/ns  %5.2f adds/SM/clock  err %.1e\n", name, time.event_us, time.graph_us,
           n / (time.graph_us * 1e3), n / (time.graph_us * 1e-6) / sms / (clock_khz * 1e3), err);
    CK(cudaFree(totals));
    CK(cudaFree(added));
    CK(cudaStreamDestroy(s));
}

int main() {
    int sms, clock_khz;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    const int blocks = sms * 4;  // as the lists: 4 blocks of 256 an SM
    run<LOCAL>("local", blocks, sms, clock_khz);
    run<REMOTE>("remote", blocks, sms, clock_khz);
    run<OWN>("own", blocks, sms, clock_khz);
    run<LOCAL>("local", blocks, sms, clock_khz);
}
