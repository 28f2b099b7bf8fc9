// Tuning probe for event-driven spmv T (spike propagation), standalone: every variant on the
// same random networks in one run, CUDA-event and graph-replayed times, checked against a
// plain kernel. Build and run on the GPU machine:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/probe_events.cu -o /tmp/probe && /tmp/probe
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

struct Net { int m, k; int *indptr, *indices; float *w; unsigned char *spikes; float *y; };

// Reference: a thread per row, atomics.
__global__ void ref_kernel(Net n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n.m || !n.spikes[r]) return;
    for (int p = n.indptr[r]; p < n.indptr[r + 1]; p++) atomicAdd(n.y + n.indices[p], n.w[p]);
}

// A warp per ROWS rows: lanes < ROWS load the spikes, a ballot lists the live rows, then all 32
// lanes walk each live row (UNROLL loads in flight per lane).
template <int ROWS, int UNROLL, bool SHARED> __device__ void warp_rows(const Net& n, float* acc, int warp, int warps) {
    const int lane = threadIdx.x & 31;
    for (long base = (long)warp * ROWS; base < n.m; base += (long)warps * ROWS) {
        const long r = base + lane;
        const bool live = lane < ROWS && r < n.m && n.spikes[r];
        unsigned ballot = __ballot_sync(~0u, live);
        int begin = 0, end = 0;
        if (live) begin = n.indptr[r], end = n.indptr[r + 1];
        while (ballot) {
            const int src = __ffs(ballot) - 1;
            ballot &= ballot - 1;
            const int b = __shfl_sync(~0u, begin, src), e = __shfl_sync(~0u, end, src);
            for (int p0 = b + lane; p0 < e; p0 += 32 * UNROLL) {
                int idx[UNROLL];
                float w[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; u++) {
                    const int p = p0 + 32 * u;
                    idx[u] = p < e ? __ldg(n.indices + p) : -1;
                    w[u] = p < e ? __ldg(n.w + p) : 0.f;
                }
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    if (idx[u] >= 0) atomicAdd((SHARED ? acc : n.y) + idx[u], w[u]);
            }
        }
    }
}

template <int ROWS, int UNROLL> __global__ void grid_warp_rows(Net n) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    warp_rows<ROWS, UNROLL, false>(n, nullptr, warp, warps);
}

// One block: outputs in shared memory, blended once (beta = 0 here: plain store).
template <int ROWS, int UNROLL> __global__ void __launch_bounds__(1024) block_warp_rows(Net n) {
    extern __shared__ float acc[];
    for (int i = threadIdx.x; i < n.k; i += blockDim.x) acc[i] = 0;
    __syncthreads();
    warp_rows<ROWS, UNROLL, true>(n, acc, threadIdx.x / 32, blockDim.x / 32);
    __syncthreads();
    for (int i = threadIdx.x; i < n.k; i += blockDim.x) n.y[i] = acc[i];
}

// A thread per row: loads its spike, walks its row alone.
__global__ void grid_thread_rows(Net n) {
    for (long r = blockIdx.x * (long)blockDim.x + threadIdx.x; r < n.m; r += (long)gridDim.x * blockDim.x) {
        if (!n.spikes[r]) continue;
        const int b = n.indptr[r], e = n.indptr[r + 1];
#pragma unroll 4
        for (int p = b; p < e; p++) atomicAdd(n.y + __ldg(n.indices + p), __ldg(n.w + p));
    }
}

__global__ void zero(float* y, int k) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += gridDim.x * blockDim.x) y[i] = 0;
}

struct Variant { const char* name; void (*launch)(const Net&, cudaStream_t, int sms); bool zeroes; };

template <int ROWS, int UNROLL, int PER_SM> void launch_warp_rows(const Net& n, cudaStream_t s, int sms) {
    long warps = (n.m + ROWS - 1) / ROWS;
    long blocks = std::min<long>((warps + 7) / 8, (long)sms * PER_SM);
    grid_warp_rows<ROWS, UNROLL><<<blocks, 256, 0, s>>>(n);
}
template <int ROWS, int UNROLL> void launch_block(const Net& n, cudaStream_t s, int) {
    block_warp_rows<ROWS, UNROLL><<<1, 1024, n.k * 4, s>>>(n);
}
void launch_thread_rows(const Net& n, cudaStream_t s, int sms) {
    long blocks = std::min<long>((n.m + 255) / 256, (long)sms * 8);
    grid_thread_rows<<<blocks, 256, 0, s>>>(n);
}

int main() {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Variant variants[] = {
        {"warp32_u4_sm8", launch_warp_rows<32, 4, 8>, false},
        {"warp32_u4_sm32", launch_warp_rows<32, 4, 32>, false},
        {"warp32_u8_sm8", launch_warp_rows<32, 8, 8>, false},
        {"warp8_u4_sm8", launch_warp_rows<8, 4, 8>, false},
        {"warp8_u4_sm32", launch_warp_rows<8, 4, 32>, false},
        {"warp1_u4_sm32", launch_warp_rows<1, 4, 32>, false},
        {"thread_rows", launch_thread_rows, false},
        {"block_w32_u4", launch_block<32, 4>, true},
        {"block_w8_u2", launch_block<8, 2>, true},
    };
    struct Case { int n, per_row; double rate; } cases[] = {{4000, 80, 0.005}, {400000, 80, 0.005}, {500000, 2000, 0.004}, {5000, 500, 0.10}, {100000, 1000, 0.01}};
    printf("%-22s %-14s %10s %10s %8s\n", "case", "variant", "event_us", "graph_us", "maxerr");
    for (auto c : cases) {
        srand(1);
        Net n;
        n.m = n.k = c.n;
        long nnz = (long)c.n * c.per_row;
        std::vector<int> ip(c.n + 1), ix(nnz);
        std::vector<float> w(nnz);
        std::vector<unsigned char> sp(c.n);
        for (int r = 0; r <= c.n; r++) ip[r] = (int)((long)r * c.per_row);
        for (long p = 0; p < nnz; p++) ix[p] = rand() % c.n, w[p] = (rand() % 1000) / 1000.f;
        for (int r = 0; r < c.n; r++) sp[r] = (rand() / (double)RAND_MAX) < c.rate;
        CK(cudaMalloc(&n.indptr, ip.size() * 4));
        CK(cudaMalloc(&n.indices, nnz * 4));
        CK(cudaMalloc(&n.w, nnz * 4));
        CK(cudaMalloc(&n.spikes, c.n));
        CK(cudaMalloc(&n.y, c.n * 4));
        float* ref;
        CK(cudaMalloc(&ref, c.n * 4));
        CK(cudaMemcpy(n.indptr, ip.data(), ip.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(n.indices, ix.data(), nnz * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(n.w, w.data(), nnz * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(n.spikes, sp.data(), c.n, cudaMemcpyHostToDevice));
        Net rn = n;
        rn.y = ref;
        CK(cudaMemset(ref, 0, c.n * 4));
        ref_kernel<<<(c.n + 255) / 256, 256>>>(rn);
        std::vector<float> href(c.n), got(c.n);
        CK(cudaMemcpy(href.data(), ref, c.n * 4, cudaMemcpyDeviceToHost));
        for (auto& v : variants) {
            if (v.zeroes && (long)c.n * 4 > 48 * 1024) continue;
            auto call = [&] {
                if (!v.zeroes) zero<<<std::min(c.n / 256 + 1, sms * 4), 256, 0, s>>>(n.y, c.n);
                v.launch(n, s, sms);
            };
            CK(cudaMemsetAsync(n.y, 0xff, c.n * 4, s));  // poison
            call();
            CK(cudaStreamSynchronize(s));
            CK(cudaGetLastError());
            CK(cudaMemcpy(got.data(), n.y, c.n * 4, cudaMemcpyDeviceToHost));
            double err = 0;
            for (int i = 0; i < c.n; i++) err = std::max(err, (double)fabsf(got[i] - href[i]));
            cudaEvent_t a, b;
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&b));
            std::vector<float> ev;
            for (int r = 0; r < 25; r++) {
                CK(cudaEventRecord(a, s));
                call();
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float ms;
                CK(cudaEventElapsedTime(&ms, a, b));
                ev.push_back(ms);
            }
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int r = 0; r < 100; r++) call();
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            std::vector<float> gv;
            for (int r = 0; r < 15; r++) {
                CK(cudaEventRecord(a, s));
                CK(cudaGraphLaunch(ge, s));
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float ms;
                CK(cudaEventElapsedTime(&ms, a, b));
                gv.push_back(ms / 100);
            }
            std::sort(ev.begin(), ev.end());
            std::sort(gv.begin(), gv.end());
            char label[64];
            snprintf(label, sizeof label, "%d x%d %.1f%%", c.n, c.per_row, c.rate * 100);
            printf("%-22s %-14s %10.2f %10.2f %8.1e\n", label, v.name, ev[ev.size() / 2] * 1e3, gv[gv.size() / 2] * 1e3, err);
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
        }
        cudaFree(n.indptr), cudaFree(n.indices), cudaFree(n.w), cudaFree(n.spikes), cudaFree(n.y), cudaFree(ref);
    }
    return 0;
}
