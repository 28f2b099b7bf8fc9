// What a stream of yw2y T's bytes reaches on this GPU, without yw2y's structure
// (bench/NOTES.md, "yw2y T through windows of y"): 10^8 entries of int32 indices and f32
// weights read, f32 out written (12 bytes an entry), in the access patterns y_windows uses.
//   copy     out = w (8 bytes an entry: the copy rate)
//   flat     out = w * idx, a grid-stride walk of 16-byte groups (STEPS groups a lane in flight)
//   shares   each block an even share, its warps taking turns of 32 * STEPS groups
//   windows  shares, over rows of 1000 entries in two passes (56 % then 44 % of each row)
//   gather   windows, out = w * ys[idx] from a 224 KB table in shared memory
//   cluster  one pass, out = w * ys[idx] from a table of CL x 128 KB spread over a cluster's
//            shared memory (gathers from the other blocks' through distributed shared memory)
// nvcc -O3 -arch=sm_90a -o probe_stream bench/probe_stream.cu && ./probe_stream
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

constexpr long N = 100'000'000, ROW = 1000, SPLIT = 560;  // entries, a row, a row's first pass
constexpr int TABLE = 57344;                              // f32 columns in 224 KB

__global__ void copy(const float4* w, float4* out, long groups) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < groups; i += (long)gridDim.x * blockDim.x)
        out[i] = w[i];
}

template <int STEPS> __global__ void flat(const int4* idx, const float4* w, float4* out, long groups) {
    const long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < groups; i += stride * STEPS) {
        int4 c[STEPS];
        float4 v[STEPS];
#pragma unroll
        for (int s = 0; s < STEPS; ++s)
            if (i + s * stride < groups) c[s] = idx[i + s * stride], v[s] = w[i + s * stride];
#pragma unroll
        for (int s = 0; s < STEPS; ++s)
            if (i + s * stride < groups)
                out[i + s * stride] = make_float4(v[s].x * c[s].x, v[s].y * c[s].y, v[s].z * c[s].z, v[s].w * c[s].w);
    }
}

// Group g of a pass (0: each row's first SPLIT entries, 1: the rest, -1: all) as a group index.
__device__ __forceinline__ long group_of(long g, int pass) {
    if (pass < 0) return g;
    const long per_row = pass == 0 ? SPLIT / 4 : (ROW - SPLIT) / 4;
    return g / per_row * (ROW / 4) + (pass ? SPLIT / 4 : 0) + g % per_row;
}

template <int STEPS, bool GATHER>
__global__ void shares(const int4* idx, const float4* w, float4* out, int passes) {
    extern __shared__ float ys[];
    const long rows = N / ROW, r0 = rows * blockIdx.x / gridDim.x, r1 = rows * (blockIdx.x + 1) / gridDim.x;
    if (GATHER)
        for (int i = threadIdx.x; i < TABLE; i += blockDim.x) ys[i] = i;
    __syncthreads();
    const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
    for (int pass = passes > 1 ? 0 : -1; pass < (passes > 1 ? 2 : 0); ++pass) {
        const long per_row = pass < 0 ? ROW / 4 : pass == 0 ? SPLIT / 4 : (ROW - SPLIT) / 4;
        const long total = (r1 - r0) * per_row, base = r0 * per_row;
        for (long g0 = threadIdx.x / 32 * 32 * STEPS; g0 < total; g0 += warps * 32 * STEPS) {
            long q[STEPS];
            int4 c[STEPS];
            float4 v[STEPS];
#pragma unroll
            for (int s = 0; s < STEPS; ++s) {
                const long g = g0 + s * 32 + lane;
                q[s] = g < total ? group_of(base + g, pass) : -1;
                if (q[s] >= 0) c[s] = idx[q[s]], v[s] = w[q[s]];
            }
#pragma unroll
            for (int s = 0; s < STEPS; ++s) {
                if (q[s] < 0) continue;
                float4 o;
                if (GATHER)
                    o = make_float4(v[s].x * ys[c[s].x], v[s].y * ys[c[s].y], v[s].z * ys[c[s].z], v[s].w * ys[c[s].w]);
                else
                    o = make_float4(v[s].x * c[s].x, v[s].y * c[s].y, v[s].z * c[s].z, v[s].w * c[s].w);
                out[q[s]] = o;
            }
        }
        __syncthreads();
    }
}


constexpr int PART = 32768;  // f32 columns a block of a cluster holds (128 KB)

template <int CL> __global__ void cluster_gather(const int4* idx, const float4* w, float4* out) {
    extern __shared__ float part[];
    cg::cluster_group cluster = cg::this_cluster();
    const long rows = N / ROW, r0 = rows * blockIdx.x / gridDim.x, r1 = rows * (blockIdx.x + 1) / gridDim.x;
    for (int i = threadIdx.x; i < PART; i += blockDim.x) part[i] = i;
    cluster.sync();
    const unsigned own = (unsigned)__cvta_generic_to_shared(part);
    const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
    const long total = (r1 - r0) * (ROW / 4), base = r0 * (ROW / 4);
    auto y = [&](int c) {
        c &= CL * PART - 1;
        unsigned at;
        float v;
        asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(own + (c % PART) * 4), "r"(c / PART));
        asm("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(at));
        return v;
    };
    for (long g0 = threadIdx.x / 32 * 64; g0 < total; g0 += warps * 64) {
        long q[2];
        int4 c[2];
        float4 v[2];
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            const long g = g0 + s * 32 + lane;
            q[s] = g < total ? base + g : -1;
            if (q[s] >= 0) c[s] = idx[q[s]], v[s] = w[q[s]];
        }
#pragma unroll
        for (int s = 0; s < 2; ++s)
            if (q[s] >= 0)
                out[q[s]] = make_float4(v[s].x * y(c[s].x), v[s].y * y(c[s].y), v[s].z * y(c[s].z), v[s].w * y(c[s].w));
    }
    cluster.sync();  // no block leaves while the others may read its part
}

template <int CL> void launch_cluster(int sms, const int4* idx, const float4* w, float4* out) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = CL, attribute.val.clusterDim.y = 1, attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(sms / CL * CL), config.blockDim = dim3(1024), config.dynamicSmemBytes = PART * 4;
    config.attrs = &attribute, config.numAttrs = 1;
    cudaLaunchKernelEx(&config, cluster_gather<CL>, idx, w, out);
}

template <class F> float median_us(F launch) {
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i) launch();
    std::vector<float> t;
    for (int i = 0; i < 21; ++i) {
        cudaEventRecord(a);
        launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms * 1000);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int4* idx;
    float4 *w, *out;
    cudaMalloc(&idx, N * 4), cudaMalloc(&w, N * 4), cudaMalloc(&out, N * 4);
    std::vector<int> h(N);
    unsigned x = 1;
    for (long i = 0; i < N; ++i) x = x * 1664525u + 1013904223u, h[i] = (x >> 8) % TABLE;
    cudaMemcpy(idx, h.data(), N * 4, cudaMemcpyHostToDevice);
    cudaMemset(w, 0, N * 4);
    const long groups = N / 4;
    const int smem = TABLE * 4;
    cudaFuncSetAttribute(shares<2, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(cluster_gather<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, PART * 4);
    cudaFuncSetAttribute(cluster_gather<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, PART * 4);
    cudaFuncSetAttribute(cluster_gather<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, PART * 4);
    auto row = [&](const char* name, double bytes, float us) {
        printf("%-34s %8.1f us  %6.0f GB/s  %5.1f%% of 12-byte floor at 2978 GB/s\n", name, us, bytes / us / 1e3,
               100.0 * (12.0 * N / 2978e3) / us);
    };
    row("copy (8 B an entry)", 8.0 * N, median_us([&] { copy<<<sms * 8, 256>>>(w, out, groups); }));
    for (int rep = 0; rep < 2; ++rep) {
        row("flat, 1 group a lane", 12.0 * N, median_us([&] { flat<1><<<sms * 8, 256>>>(idx, w, out, groups); }));
        row("flat, 2 groups", 12.0 * N, median_us([&] { flat<2><<<sms * 8, 256>>>(idx, w, out, groups); }));
        row("flat, 2 groups, 1024-thread blocks", 12.0 * N, median_us([&] { flat<2><<<sms, 1024>>>(idx, w, out, groups); }));
        row("shares, 2 groups, 1 pass", 12.0 * N, median_us([&] { shares<2, false><<<sms, 1024>>>(idx, w, out, 1); }));
        row("windows, 2 groups, 2 passes", 12.0 * N, median_us([&] { shares<2, false><<<sms, 1024>>>(idx, w, out, 2); }));
        row("gather, 2 groups, 2 passes", 12.0 * N, median_us([&] { shares<2, true><<<sms, 1024, smem>>>(idx, w, out, 2); }));
        row("gather, 2 groups, 1 pass", 12.0 * N, median_us([&] { shares<2, true><<<sms, 1024, smem>>>(idx, w, out, 1); }));
        row("cluster 1 (128 KB), 1 pass", 12.0 * N, median_us([&] { launch_cluster<1>(sms, idx, w, out); }));
        row("cluster 2 (256 KB), 1 pass", 12.0 * N, median_us([&] { launch_cluster<2>(sms, idx, w, out); }));
        row("cluster 4 (512 KB), 1 pass", 12.0 * N, median_us([&] { launch_cluster<4>(sms, idx, w, out); }));
    }
    const cudaError_t e = cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
