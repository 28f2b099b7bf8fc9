// Tuning probe for spmm N on a mostly-zero float B of 32 to 128 columns (issue #9: the 32 and 64
// column rows at 10 %, ≥ 3x cuSPARSE): the sums in registers, lane l owning columns l + 32 w,
// instead of the lists' shared-memory sums. `pack` leaves per row of B its NW 32-bit masks of
// nonzero columns and the nonzeros in column order at the row's own offset (row k at k * n, so
// no scan); `lanes` takes a warp per row of A and, per entry, the lane whose column is live loads
// its value at rank popc(mask & lanes below). Per entry: one broadcast header (masks, the row's
// offset, A's weight) and NW predicated loads, all within the row's first sectors.
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_spmm_lanes.cu -o /tmp/sl && /tmp/sl
#include <random>

#include "probe.cuh"

struct Prob {
    int m, n;
    const int* indptr;
    const int* indices;
    const float* w;
    const float* b;      // k x n, dense
    unsigned* masks;     // k x NW
    float* packed;       // k x n: row k's nonzeros from k * n on
    float* c;            // m x n
};

// A warp per row of B: its masks and its nonzeros packed to the row's front.
template <int NW> __global__ void pack(Prob p, int rows) {
    const int k = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (k >= rows) return;
    int before = 0;
#pragma unroll
    for (int w = 0; w < NW; w++) {
        const float v = p.b[(long)k * p.n + 32 * w + lane];
        const unsigned mask = __ballot_sync(~0u, v != 0.f);
        if (lane == 0) p.masks[k * NW + w] = mask;
        if (v != 0.f) p.packed[(long)k * p.n + before + __popc(mask & ((1u << lane) - 1))] = v;
        before += __popc(mask);
    }
}

// The header of one entry of A, staged by the lane that loaded it.
template <int NW> struct __align__(16) Header {
    unsigned mask[NW];
    int base;
    float a;
};

// STAGE: headers through the warp's shared memory (one broadcast load an entry); else by shuffles.
template <int NW, bool STAGE> __global__ void __launch_bounds__(256, 4) lanes(Prob p) {
    __shared__ Header<NW> stage[8][32];
    const int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    if (i >= p.m) return;
    const unsigned below = (1u << lane) - 1;
    float acc[NW] = {};
    const int end = p.indptr[i + 1];
    for (int e0 = p.indptr[i]; e0 < end; e0 += 32) {
        const int count = min(32, end - e0);
        Header<NW> h = {};
        if (lane < count) {
            const int k = p.indices[e0 + lane];
            h.a = p.w[e0 + lane];
            h.base = k * p.n;
#pragma unroll
            for (int w = 0; w < NW; w++) h.mask[w] = p.masks[k * NW + w];
        }
        if (STAGE) {
            stage[warp][lane] = h;
            __syncwarp();
        }
#pragma unroll 8
        for (int j = 0; j < count; j++) {
            Header<NW> g;
            if (STAGE) {
                g = stage[warp][j];
            } else {
#pragma unroll
                for (int w = 0; w < NW; w++) g.mask[w] = __shfl_sync(~0u, h.mask[w], j);
                g.base = __shfl_sync(~0u, h.base, j);
                g.a = __shfl_sync(~0u, h.a, j);
            }
            int at = g.base;
#pragma unroll
            for (int w = 0; w < NW; w++) {
                if (g.mask[w] >> lane & 1) acc[w] += g.a * p.packed[at + __popc(g.mask[w] & below)];
                at += __popc(g.mask[w]);
            }
        }
        if (STAGE) __syncwarp();
    }
#pragma unroll
    for (int w = 0; w < NW; w++) p.c[(long)i * p.n + 32 * w + lane] = acc[w];
}

// lanes with more loads in flight: CH batches of 32 entries' headers loaded (all their indices,
// then all their masks) and staged before any value, then U entries' values loaded at once.
template <int NW, int CH, int U> __global__ void __launch_bounds__(256, 2) lanes_deep(Prob p) {
    __shared__ Header<NW> stage[8][CH * 32];
    const int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    if (i >= p.m) return;
    const unsigned below = (1u << lane) - 1;
    float acc[NW] = {};
    const int end = p.indptr[i + 1];
    for (int e0 = p.indptr[i]; e0 < end; e0 += CH * 32) {
        const int count = min(CH * 32, end - e0);
        int k[CH];
        float a[CH];
#pragma unroll
        for (int c = 0; c < CH; c++) {
            const int e = e0 + 32 * c + lane;
            k[c] = e < end ? p.indices[e] : -1;
            a[c] = e < end ? p.w[e] : 0.f;
        }
#pragma unroll
        for (int c = 0; c < CH; c++) {
            Header<NW> h = {};
            if (k[c] >= 0) {
                h.a = a[c], h.base = k[c] * p.n;
#pragma unroll
                for (int w = 0; w < NW; w++) h.mask[w] = p.masks[k[c] * NW + w];
            }
            stage[warp][32 * c + lane] = h;
        }
        __syncwarp();
        for (int j0 = 0; j0 < count; j0 += U) {
            float v[U][NW], wt[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const Header<NW> g = stage[warp][min(j0 + u, CH * 32 - 1)];
                const bool in = j0 + u < count;
                wt[u] = in ? g.a : 0.f;
                int at = g.base;
#pragma unroll
                for (int w = 0; w < NW; w++) {
                    v[u][w] = in && (g.mask[w] >> lane & 1) ? p.packed[at + __popc(g.mask[w] & below)] : 0.f;
                    at += __popc(g.mask[w]);
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int w = 0; w < NW; w++) acc[w] += wt[u] * v[u][w];
        }
        __syncwarp();
    }
#pragma unroll
    for (int w = 0; w < NW; w++) p.c[(long)i * p.n + 32 * w + lane] = acc[w];
}

// Today's dense gather for comparison: a warp per row, lane l columns l + 32 w.
template <int NW> __global__ void __launch_bounds__(256, 4) gather(Prob p) {
    const int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.m) return;
    float acc[NW] = {};
    const int end = p.indptr[i + 1];
    for (int e0 = p.indptr[i]; e0 < end; e0 += 32) {
        const int count = min(32, end - e0);
        int k = 0;
        float a = 0;
        if (lane < count) k = p.indices[e0 + lane], a = p.w[e0 + lane];
#pragma unroll 8
        for (int j = 0; j < count; j++) {
            const int kj = __shfl_sync(~0u, k, j);
            const float aj = __shfl_sync(~0u, a, j);
#pragma unroll
            for (int w = 0; w < NW; w++) acc[w] += aj * p.b[(long)kj * p.n + 32 * w + lane];
        }
    }
#pragma unroll
    for (int w = 0; w < NW; w++) p.c[(long)i * p.n + 32 * w + lane] = acc[w];
}

template <int NW> void run(int m, int per_row, double rate, cudaStream_t s) {
    const int n = 32 * NW;
    std::mt19937 rng(11);
    std::vector<int> indptr(m + 1), indices;
    std::vector<float> w;
    for (int i = 0; i < m; i++) {
        std::vector<char> used(m, 0);
        std::vector<int> row;
        while ((int)row.size() < per_row) {
            const int c = rng() % m;
            if (!used[c]) used[c] = 1, row.push_back(c);
        }
        std::sort(row.begin(), row.end());
        for (int c : row) indices.push_back(c), w.push_back((rng() % 2000) / 1000.f - 1.f);
        indptr[i + 1] = (int)indices.size();
    }
    std::vector<float> b((size_t)m * n);
    for (auto& v : b) v = (rng() % 1000000) < rate * 1e6 ? (rng() % 2000) / 1000.f - 1.f : 0.f;
    std::vector<float> ref((size_t)m * n, 0.f);
    for (int i = 0; i < m; i++)
        for (int e = indptr[i]; e < indptr[i + 1]; e++)
            for (int c = 0; c < n; c++) ref[(size_t)i * n + c] += w[e] * b[(size_t)indices[e] * n + c];
    Prob p{m, n, upload(indptr), upload(indices), upload(w), upload(b), nullptr, nullptr, nullptr};
    CK(cudaMalloc(&p.masks, (size_t)m * NW * 4));
    CK(cudaMalloc(&p.packed, (size_t)m * n * 4));
    CK(cudaMalloc(&p.c, (size_t)m * n * 4));
    const int blocks = (m + 7) / 8;
    auto measure = [&](const char* name, auto call) {
        CK(cudaMemsetAsync(p.c, 0xff, (size_t)m * n * 4, s));  // NaN: a row never written shows
        call();
        CK(cudaStreamSynchronize(s));
        const double err = max_error(p.c, ref);
        const Timing t = time_call(s, call);
        printf("| %d cols | %.0f %% | %s | %.2f | %.2f | %.1e |\n", n, rate * 100, name, t.graph_us, t.event_us, err);
    };
    auto packed = [&] { pack<NW><<<blocks, 256, 0, s>>>(p, m); };
    measure("dense gather", [&] { gather<NW><<<blocks, 256, 0, s>>>(p); });
    measure("pack + lanes, staged", [&] { packed(); lanes<NW, true><<<blocks, 256, 0, s>>>(p); });
    measure("lanes alone, staged (packed once)", [&] { lanes<NW, true><<<blocks, 256, 0, s>>>(p); });
    constexpr int CH = NW == 4 ? 2 : 4;
    measure("lanes_deep U 8 alone", [&] { lanes_deep<NW, CH, 8><<<blocks, 256, 0, s>>>(p); });
    measure("lanes_deep U 16 alone", [&] { lanes_deep<NW, CH, 16><<<blocks, 256, 0, s>>>(p); });
    measure("pack + lanes_deep U 16", [&] { packed(); lanes_deep<NW, CH, 16><<<blocks, 256, 0, s>>>(p); });
    CK(cudaFree(p.masks));
    CK(cudaFree(p.packed));
    CK(cudaFree(p.c));
}

int main(int argc, char** argv) {
    const int m = argc > 1 ? atoi(argv[1]) : 10000, per_row = argc > 2 ? atoi(argv[2]) : 200;
    cudaStream_t s = probe_stream();
    printf("A %d² x %d a row, f32; graph µs, event µs, max error\n", m, per_row);
    printf("| B | nonzero | variant | graph µs | event µs | max error |\n|---|---|---|---|---|---|\n");
    for (double rate : {0.02, 0.05, 0.1, 0.2, 1.0}) {
        run<1>(m, per_row, rate, s);
        run<2>(m, per_row, rate, s);
        run<4>(m, per_row, rate, s);
    }
}
