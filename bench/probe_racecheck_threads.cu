// Does compute-sanitizer racecheck hang on threads without evsparse (issue #13)? THREADS host
// threads, each with its own stream, loop: a stream-ordered allocation, a kernel that sums
// through shared memory, a pageable copy of the result, a synchronize and a free ordered on the
// legacy stream, as evsparse's calls do. Prints "done" when every thread finished.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_racecheck_threads.cu -o /tmp/p
//   timeout 60 compute-sanitizer --tool racecheck /tmp/p [CALLS] [FREE_ON_LEGACY]
#include "probe.cuh"

#include <thread>

constexpr int THREADS = 8, BLOCK = 256, N = 500;

// y[0] = sum of x[0 .. N): a block's warps add through shared memory.
__global__ void block_sum(const float* x, float* y) {
    __shared__ float part[BLOCK / 32];
    float v = 0;
    for (int i = threadIdx.x; i < N; i += BLOCK) v += x[i];
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0;
        for (int w = 0; w < BLOCK / 32; w++) s += part[w];
        y[0] = s;
    }
}

int main(int argc, char** argv) {
    const int calls = argc > 1 ? atoi(argv[1]) : 400;
    const bool legacy_free = argc > 2 ? atoi(argv[2]) != 0 : true;
    const float* x = upload(std::vector<float>(N, 1.0f));
    std::vector<std::thread> workers;
    for (int t = 0; t < THREADS; t++)
        workers.emplace_back([=] {
            cudaStream_t s;
            CK(cudaStreamCreate(&s));
            for (int i = 0; i < calls; i++) {
                float* y;
                CK(cudaMallocAsync(&y, 4 * N, s));
                block_sum<<<1, BLOCK, 0, s>>>(x, y);
                float got = 0;
                CK(cudaMemcpyAsync(&got, y, 4, cudaMemcpyDeviceToHost, s));
                CK(cudaStreamSynchronize(s));
                CK(cudaFreeAsync(y, legacy_free ? cudaStreamLegacy : s));
                if (got != N) printf("thread %d call %d: %g\n", t, i, got), exit(1);
            }
            CK(cudaStreamSynchronize(s));
            CK(cudaStreamDestroy(s));
        });
    for (auto& w : workers) w.join();
    printf("done: %d threads x %d calls\n", THREADS, calls);
}
