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

// The same elements in other orders, to find whether the DRAM access rate depends on which
// requests are in flight together: each lane's loads issued before any add (unrolled); a lane
// per row (a warp reads one column of 32 neighbouring rows at a time); rows in a shuffled order
// (no neighbouring rows in flight together).
__global__ void rows_at_unrolled(const float* w, const int* cols, int live, int m, int k, float* y) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= m) return;
    float v[4] = {0, 0, 0, 0};
    for (int t0 = 0; t0 < live; t0 += 128) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int t = t0 + u * 32 + lane;
            if (t < live) v[u] += w[(long)warp * k + cols[t]];
        }
    }
    float acc = v[0] + v[1] + v[2] + v[3];
    for (int o = 16; o; o /= 2) acc += __shfl_xor_sync(~0u, acc, o);
    if (lane == 0) y[warp] = acc;
}

__global__ void lane_per_row(const float* w, const int* cols, int live, int m, int k, float* y) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    float acc = 0;
#pragma unroll 4
    for (int t = 0; t < live; t++) acc += w[(long)row * k + cols[t]];
    y[row] = acc;
}

__global__ void rows_shuffled(const float* w, const int* cols, int live, int m, int k, float* y, const int* order) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= m) return;
    const int row = order[warp];
    float acc = 0;
    for (int t = lane; t < live; t += 32) acc += w[(long)row * k + cols[t]];
    for (int o = 16; o; o /= 2) acc += __shfl_xor_sync(~0u, acc, o);
    if (lane == 0) y[row] = acc;
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
        std::vector<int> order(m);
        for (int r = 0; r < m; r++) order[r] = r;
        for (int r = m - 1; r > 0; r--) std::swap(order[r], order[rand() % (r + 1)]);
        int* dorder = upload(order);
        for (int round = 0; round < 2; round++)
            for (int form = 0; form < 4; form++) {
                const char* names[] = {"warp a row", "unrolled", "lane a row", "rows shuffled"};
                const Timing t = time_call(s, [&] {
                    for (int q = 0; q < SETS; q++) {
                        const int* c = dc + q * live;
                        if (form == 0) rows_at<<<(m * 32 + 255) / 256, 256, 0, s>>>(w, c, live, m, k, y);
                        if (form == 1) rows_at_unrolled<<<(m * 32 + 255) / 256, 256, 0, s>>>(w, c, live, m, k, y);
                        if (form == 2) lane_per_row<<<(m + 127) / 128, 128, 0, s>>>(w, c, live, m, k, y);
                        if (form == 3) rows_shuffled<<<(m * 32 + 255) / 256, 256, 0, s>>>(w, c, live, m, k, y, dorder);
                    }
                });
                printf("form   live %d, %-13s: event %.2f graph %.2f us a launch\n", live, names[form], t.event_us / SETS,
                       t.graph_us / SETS);
            }
        cudaFree(dorder);
        cudaFree(dc);
    }
    const Timing t = time_call(s, [&] { empty<<<1, 32, 0, s>>>(); });
    printf("empty launch: event %.2f graph %.2f us\n", t.event_us, t.graph_us);
    return 0;
}
