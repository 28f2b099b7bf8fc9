// Does the L2 fetch granularity limit (cudaLimitMaxL2FetchGranularity) change the cost of
// scattered 4-byte reads from DRAM? dense mv N's pattern: W 10000² f32, 1 % of its columns
// live, a warp per row reading the row's live columns (100 sectors a row); dense plasticity
// post's (the same elements updated) and pre's (the live rows updated whole), and an empty
// launch. Build and run on the GPU machine:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/probe_fetch.cu -o /tmp/f && /tmp/f
#include "probe.cuh"

__global__ void rows_at(const float* w, const int* cols, int live, int m, int k, float* y) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= m) return;
    float acc = 0;
    for (int t = lane; t < live; t += 32) acc += w[(long)warp * k + cols[t]];
    for (int o = 16; o; o /= 2) acc += __shfl_xor_sync(~0u, acc, o);
    if (lane == 0) y[warp] = acc;
}

// dense plasticity post's pattern: the same elements updated in place (read, add, write back).
__global__ void rows_update(float* w, const int* cols, int live, int m, int k) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= m) return;
    for (int t = lane; t < live; t += 32) w[(long)warp * k + cols[t]] += 1e-3f;
}

// dense plasticity pre's pattern: the live rows updated whole, a thread per element (every
// update in flight at once: the floor of the touched rows), and an empty launch beside it.
__global__ void whole_rows_update(float* w, const int* rows, int k) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < k) w[(long)rows[blockIdx.y] * k + c] += 1e-3f;
}
__global__ void empty() {}

int main() {
    const int m = 10000, k = 10000;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<float> wh((long)m * k, 1.f);
    float* w = upload(wh);
    float* y;
    CK(cudaMalloc(&y, m * 4));
    size_t def;
    CK(cudaDeviceGetLimit(&def, cudaLimitMaxL2FetchGranularity));
    printf("default L2 fetch granularity: %zu\n", def);
    for (int live : {100, 1000}) {
        // SETS column sets in turn, so that no call finds the previous one's sectors in L2
        const int SETS = 8;
        std::vector<int> cols(live * SETS);
        srand(3);
        for (int q = 0; q < SETS; q++) {
            for (int t = 0; t < live; t++) cols[q * live + t] = rand() % k;
            std::sort(cols.begin() + q * live, cols.begin() + (q + 1) * live);
        }
        int* dc = upload(cols);
        for (int round = 0; round < 2; round++)
            for (size_t g : {0, 32, 64, 128}) {
                CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, g));
                size_t got;
                CK(cudaDeviceGetLimit(&got, cudaLimitMaxL2FetchGranularity));
                for (int update = 0; update < 2; update++) {
                    auto call = [&] {
                        for (int q = 0; q < SETS; q++)
                            if (update) rows_update<<<(m * 32 + 255) / 256, 256, 0, s>>>(w, dc + q * live, live, m, k);
                            else rows_at<<<(m * 32 + 255) / 256, 256, 0, s>>>(w, dc + q * live, live, m, k, y);
                    };
                    const Timing t = time_call(s, call);
                    printf("%s live %d, granularity %zu (reads back %zu): event %.2f graph %.2f us a launch, %.0f MB of sectors\n",
                           update ? "update" : "read  ", live, g, got, t.event_us / SETS, t.graph_us / SETS, (double)m * live * 32 / 1e6);
                }
            }
        CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, def));
        const Timing t = time_call(s, [&] {
            for (int q = 0; q < SETS; q++) whole_rows_update<<<dim3((k + 255) / 256, live), 256, 0, s>>>(w, dc + q * live, k);
        });
        printf("pre    live %d rows updated whole: event %.2f graph %.2f us a launch, %.0f MB read and written\n", live,
               t.event_us / SETS, t.graph_us / SETS, (double)live * k * 4 / 1e6);
        cudaFree(dc);
    }
    const Timing t = time_call(s, [&] { empty<<<1, 32, 0, s>>>(); });
    printf("empty launch: event %.2f graph %.2f us\n", t.event_us, t.graph_us);
    return 0;
}
