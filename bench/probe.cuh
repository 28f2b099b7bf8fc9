// What the standalone tuning probes (bench/probe_*.cu) share: the error check, uploads, the
// relative error against a reference, and the two timings of a call (median CUDA-event time of
// 25 calls after 3 warm-ups, and the per-call time of a CUDA graph of 20 captured calls).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                \
    do {                                                                     \
        cudaError_t e = (x);                                                 \
        if (e != cudaSuccess) {                                              \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

template <class T> T* upload(const std::vector<T>& v) {
    T* d;
    CK(cudaMalloc(&d, v.size() * sizeof(T) + 16));
    CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

// Largest |got - ref| / (1 + |ref|) over `len` device floats (1e30 for NaN).
inline double max_error(const float* got_device, const std::vector<float>& ref) {
    std::vector<float> got(ref.size());
    CK(cudaMemcpy(got.data(), got_device, got.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (size_t i = 0; i < got.size(); i++) err = std::max(err, (double)fabsf(got[i] - ref[i]) / (1 + fabsf(ref[i])));
    return err < 1e30 ? err : 1e30;
}

// A non-blocking stream for a probe's calls.
inline cudaStream_t probe_stream() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

// n floats of device memory, zeroed.
inline float* zeroed_floats(size_t n) {
    float* p;
    CK(cudaMalloc(&p, n * sizeof(float)));
    CK(cudaMemset(p, 0, n * sizeof(float)));
    return p;
}

// Queues kernel<<<blocks, threads, 0, s>>>(args...) with programmatic stream serialization, as
// the library launches every kernel on sm_90 (the kernel waits for its predecessor itself).
template <class... Params, class... Args>
void launch_overlapped(cudaStream_t s, void (*kernel)(Params...), dim3 blocks, dim3 threads, Args... args) {
    cudaLaunchConfig_t config = {};
    config.gridDim = blocks;
    config.blockDim = threads;
    config.stream = s;
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CK(cudaLaunchKernelEx(&config, kernel, args...));
}

struct Timing { double event_us, graph_us; };

template <class Call> Timing time_call(cudaStream_t s, Call call) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    auto elapsed = [&] {
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        return ms;
    };
    std::vector<float> ev, gv;
    for (int r = 0; r < 3; r++) call();
    for (int r = 0; r < 25; r++) {
        CK(cudaEventRecord(a, s));
        call();
        CK(cudaEventRecord(b, s));
        ev.push_back(elapsed());
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int r = 0; r < 20; r++) call();
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < 10; r++) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        gv.push_back(elapsed() / 20);
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(ev.begin(), ev.end());
    std::sort(gv.begin(), gv.end());
    return {ev[ev.size() / 2] * 1e3, gv[gv.size() / 2] * 1e3};
}

// A compaction probe's buffers: n random bools (one in `one_in` active, zero padding past them),
// the reference's list and count, and the list and count of the variant under test.
struct Compaction {
    int n;
    unsigned char* x;
    int *ref, *ref_count, *out, *count;

    Compaction(int events, int one_in) : n(events) {
        std::vector<unsigned char> h(n + 64, 0);
        srand(n);
        for (int i = 0; i < n; i++) h[i] = rand() % one_in == 0;
        x = upload(h);
        for (int** list : {&ref, &out}) CK(cudaMalloc(list, 4 * n + 64));
        for (int** c : {&ref_count, &count}) CK(cudaMalloc(c, 64));
    }

    // Poisons the variant's list before its run.
    void poison() const { CK(cudaMemset(out, 0xff, 4 * n)); }

    // Whether the variant's list and count are the reference's.
    bool same() const {
        int c0, c1;
        CK(cudaMemcpy(&c0, ref_count, 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&c1, count, 4, cudaMemcpyDeviceToHost));
        if (c0 != c1 || c0 < 0 || c0 > n) return false;
        std::vector<int> r(c0), o(c1);
        CK(cudaMemcpy(r.data(), ref, 4 * c0, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(o.data(), out, 4 * c1, cudaMemcpyDeviceToHost));
        return r == o;
    }
};

#if defined(__CUDACC__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900)
// Clusters (sm_90): this block's rank in its cluster, and a barrier of all the cluster's threads
// that orders their shared-memory accesses (release, then acquire).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The cluster address of `p` (this block's shared memory) in block `rank` of the cluster.
__device__ __forceinline__ unsigned in_block(const void* p, unsigned rank) {
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}
#endif
