// Tuning probe for spmv N on events by gathering (issue #8): y[i] = sum of w[p] over the entries
// p of row i whose column's event is set, a warp per row. Workload: A 10,000² with 200 uniform
// random columns per row, heterogeneous f32 weights, bool events 1 % active (the bench's "spmv N
// events" row), and 100,000² x 50 at 1 %. ncu put the library's kernel (`v1`) at 54 instructions
// per 32 entries, busy 54 % of its cycles, waiting on dependent loads (bench/NOTES.md). Variants:
//   v1  the library's shape: one entry per lane per step, 64-bit positions
//   v2  8 entries per lane in flight (their indices, then their events)
//   v3  int4 loads of the indices (4 entries per lane per load; head and tail scalar), 32-bit offsets
//   v4  v3 with the events packed to bits in shared memory by each block first (a thread a word)
//   v5  v4 packing by ballots; v6 a packing node first, each block copying the mask's words;
//   v7  v1 reading the packed mask from global memory (after the packing node)
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_gather.cu -o /tmp/g && /tmp/g
#include "probe.cuh"

#include <cstdint>
#include <random>

struct Gather {
    const int* indptr;
    const int* indices;
    const float* w;
    const unsigned char* events;
    float* y;
    int m, k;
};

// This warp's row (a warp per row).
__device__ __forceinline__ int warp_row() { return (blockIdx.x * blockDim.x + threadIdx.x) >> 5; }

// The warp's lanes' sums added and stored as y[i].
__device__ __forceinline__ void store_row(const Gather& g, int i, float acc) {
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) g.y[i] = acc;
}

__global__ void v1(Gather g) {
    const int i = warp_row();
    if (i >= g.m) return;
    float acc = 0;
    for (int64_t p = g.indptr[i] + (threadIdx.x & 31); p < g.indptr[i + 1]; p += 32)
        if (g.events[g.indices[p]]) acc += g.w[p];
    store_row(g, i, acc);
}

__global__ void v2(Gather g) {
    const int i = warp_row();
    if (i >= g.m) return;
    const int end = g.indptr[i + 1];
    float acc = 0;
    for (int p0 = g.indptr[i] + (threadIdx.x & 31); p0 < end; p0 += 32 * 8) {
        int c[8];
#pragma unroll
        for (int u = 0; u < 8; u++) c[u] = p0 + 32 * u < end ? g.indices[p0 + 32 * u] : -1;
        bool on[8];
#pragma unroll
        for (int u = 0; u < 8; u++) on[u] = c[u] >= 0 && g.events[c[u]];
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (on[u]) acc += g.w[p0 + 32 * u];
    }
    store_row(g, i, acc);
}

// The row's entries [begin, end): a scalar head up to the indices' first 16-byte boundary, int4
// groups (lane l: group l, l + 32, ...), a scalar tail. Active(c) says whether column c fires.
template <class Active> __device__ float row_sum_int4(const Gather& g, int begin, int end, Active active) {
    const int lane = threadIdx.x & 31;
    const int head = min(end, (begin + 3) & ~3);  // indices are 16-byte aligned (cudaMalloc)
    const int body_end = head + ((end - head) & ~3);
    float acc = 0;
    if (begin + lane < head && active(g.indices[begin + lane])) acc += g.w[begin + lane];
    for (int q = head + 4 * lane; q < body_end; q += 128) {
        const int4 c = *(const int4*)(g.indices + q);
        if (active(c.x)) acc += g.w[q];
        if (active(c.y)) acc += g.w[q + 1];
        if (active(c.z)) acc += g.w[q + 2];
        if (active(c.w)) acc += g.w[q + 3];
    }
    if (body_end + lane < end && active(g.indices[body_end + lane])) acc += g.w[body_end + lane];
    return acc;
}

__global__ void v3(Gather g) {
    const int i = warp_row();
    if (i >= g.m) return;
    store_row(g, i, row_sum_int4(g, g.indptr[i], g.indptr[i + 1], [&](int c) { return g.events[c] != 0; }));
}

// v4-v6 after their mask of the events (bit c of word c / 32: column c fires) is in place.
__device__ void masked_row(const Gather& g, const unsigned* mask) {
    const int i = warp_row();
    if (i >= g.m) return;
    store_row(g, i, row_sum_int4(g, g.indptr[i], g.indptr[i + 1], [&](int c) { return (mask[c >> 5] >> (c & 31)) & 1u; }));
}

#define MASK_WORDS_MAX 4096  // 131,072 events
__global__ void v4(Gather g) {
    __shared__ unsigned mask[MASK_WORDS_MAX];
    const int words = (g.k + 31) / 32;
    for (int wd = threadIdx.x; wd < words; wd += blockDim.x) {
        unsigned bits = 0;
        for (int b = 0; b < 32 && wd * 32 + b < g.k; b++) bits |= (unsigned)(g.events[wd * 32 + b] != 0) << b;
        mask[wd] = bits;
    }
    __syncthreads();
    masked_row(g, mask);
}

// v5: v4 with the mask packed by ballots (a warp per 32 events, each lane one byte, coalesced).
__device__ void pack_mask(const unsigned char* events, int k, unsigned* mask) {
    const int words = (k + 31) / 32, lane = threadIdx.x & 31;
    for (int wd = threadIdx.x >> 5; wd < words; wd += blockDim.x >> 5) {
        const int e = wd * 32 + lane;
        const unsigned bits = __ballot_sync(0xffffffffu, e < k && events[e]);
        if (lane == 0) mask[wd] = bits;
    }
}
__global__ void v5(Gather g) {
    __shared__ unsigned mask[MASK_WORDS_MAX];
    pack_mask(g.events, g.k, mask);
    __syncthreads();
    masked_row(g, mask);
}

// v6: one block packs the mask into global memory first (a node of its own); the gather's blocks
// copy its words into shared memory (one load per thread).
__global__ void pack_global(Gather g, unsigned* mask) { pack_mask(g.events, g.k, mask); }
__global__ void v6(Gather g, const unsigned* global_mask) {
    __shared__ unsigned mask[MASK_WORDS_MAX];
    for (int wd = threadIdx.x; wd < (g.k + 31) / 32; wd += blockDim.x) mask[wd] = global_mask[wd];
    __syncthreads();
    masked_row(g, mask);
}

// v7: v1's loop reading the global mask instead of the bytes (one node before it, as v6).
__global__ void v7(Gather g, const unsigned* mask) {
    const int i = warp_row();
    if (i >= g.m) return;
    float acc = 0;
    for (int64_t p = g.indptr[i] + (threadIdx.x & 31); p < g.indptr[i + 1]; p += 32) {
        const int c = g.indices[p];
        if ((__ldg(mask + (c >> 5)) >> (c & 31)) & 1u) acc += g.w[p];
    }
    store_row(g, i, acc);
}

static void run(int m, int per_row, double rate) {
    std::mt19937 rng(7);
    std::vector<int> indptr(m + 1), indices((size_t)m * per_row);
    std::vector<float> w(indices.size());
    std::vector<unsigned char> events(m);
    for (int i = 0; i <= m; i++) indptr[i] = i * per_row;
    for (auto& c : indices) c = rng() % m;
    for (auto& v : w) v = (rng() % 1000) / 1000.0f;
    for (auto& e : events) e = (rng() % 100000) < rate * 100000;
    std::vector<float> ref(m, 0.0f);
    for (int i = 0; i < m; i++)
        for (int p = indptr[i]; p < indptr[i + 1]; p++)
            if (events[indices[p]]) ref[i] += w[p];
    Gather g{upload(indptr), upload(indices), upload(w), upload(events), nullptr, m, m};
    CK(cudaMalloc(&g.y, m * 4));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int blocks = (m + 7) / 8;
    auto report = [&](const char* name, auto kernel) {
        CK(cudaMemset(g.y, 0xff, m * 4));
        Timing t = time_call(s, [&] { kernel<<<blocks, 256, 0, s>>>(g); });
        CK(cudaStreamSynchronize(s));
        printf("%-6d x %-4d %-4s event %7.2f us  graph %7.2f us  err %.1e\n", m, per_row, name, t.event_us, t.graph_us,
               max_error(g.y, ref));
    };
    unsigned* mask;
    CK(cudaMalloc(&mask, MASK_WORDS_MAX * 4));
    auto report_two = [&](const char* name, auto kernel) {  // the packing node, then the gather
        CK(cudaMemset(g.y, 0xff, m * 4));
        Timing t = time_call(s, [&] {
            pack_global<<<1, 1024, 0, s>>>(g, mask);
            kernel<<<blocks, 256, 0, s>>>(g, mask);
        });
        CK(cudaStreamSynchronize(s));
        printf("%-6d x %-4d %-4s event %7.2f us  graph %7.2f us  err %.1e\n", m, per_row, name, t.event_us, t.graph_us,
               max_error(g.y, ref));
    };
    for (int round = 0; round < 2; round++) {
        report("v1", v1);
        report("v2", v2);
        report("v3", v3);
        if (m <= 20000) report("v4", v4);
        if (m <= 20000) report("v5", v5);
        report_two("v6", v6);
        report_two("v7", v7);
    }
}

int main() {
    run(10000, 200, 0.01);
    run(100000, 50, 0.01);
    return 0;
}
