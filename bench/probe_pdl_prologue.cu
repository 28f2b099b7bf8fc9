// Programmatic dependent launch with a prologue (issue #8): does a small kernel gain when it
// loads what no kernel writes (the matrix's structure) before griddepcontrol.wait, while its
// predecessor still runs? The library's kernels wait first and never trigger early, so a
// successor launches only as its predecessor's blocks exit (bench/NOTES.md, "Programmatic
// dependent launch": an early trigger alone gained nothing there, with nothing to do before the
// wait). The kernel is spmv T's csc_gather on the bench's 4,000 x 80 network at 0.5 % (a warp per
// output column: colptr, then rowind, then the events, then a warp sum), in four forms:
//   wait         wait first (the library today)
//   wait+trig    wait first, then let the next kernel launch
//   pro          colptr and rowind loaded before the wait, the events after it
//   pro+trig     the same, the next kernel let launch right after the wait
// Graph µs per call (20 calls a graph, each launched with the programmatic attribute), two
// rounds; results checked. Standalone; on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_pdl_prologue.cu -o /tmp/pp && /tmp/pp
#include "probe.cuh"

typedef unsigned char u8;
constexpr int N = 4000, PER_ROW = 80, THREADS = 256, AT_ONCE = 4;  // a lane's first entries in flight
enum Mode { WAIT, WAIT_TRIGGER, PROLOGUE, PROLOGUE_TRIGGER };
const char* NAMES[] = {"wait", "wait+trig", "pro", "pro+trig"};

__device__ __forceinline__ void wait_for_prior_grids() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void let_dependents_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

template <Mode M>
__global__ void __launch_bounds__(THREADS) gather(const long* colptr, const int* rowind, const u8* x, float* y) {
    constexpr bool EARLY_LOADS = M == PROLOGUE || M == PROLOGUE_TRIGGER;
    constexpr bool TRIGGER = M == WAIT_TRIGGER || M == PROLOGUE_TRIGGER;
    const int lane = threadIdx.x % 32;
    const long j = ((long)blockIdx.x * THREADS + threadIdx.x) / 32;
    if (!EARLY_LOADS) {
        wait_for_prior_grids();
        if (TRIGGER) let_dependents_launch();
    }
    long begin = 0, end = 0;
    if (j < N) begin = colptr[j], end = colptr[j + 1];
    int rows[AT_ONCE];
#pragma unroll
    for (int u = 0; u < AT_ONCE; u++) rows[u] = begin + lane + 32 * u < end ? rowind[begin + lane + 32 * u] : -1;
    if (EARLY_LOADS) {
        wait_for_prior_grids();  // the events and y may be another kernel's
        if (TRIGGER) let_dependents_launch();
    }
    float sum = 0;
#pragma unroll
    for (int u = 0; u < AT_ONCE; u++)
        if (rows[u] >= 0) sum += x[rows[u]] ? 1.0f : 0.0f;
    for (long p = begin + lane + 32 * AT_ONCE; p < end; p += 32) sum += x[rowind[p]] ? 1.0f : 0.0f;
    for (int o = 16; o; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0 && j < N) y[j] = sum;
}

template <Mode M> void launch(cudaStream_t s, const long* colptr, const int* rowind, const u8* x, float* y) {
    launch_overlapped(s, gather<M>, (N * 32 + THREADS - 1) / THREADS, THREADS, colptr, rowind, x, y);
}

int main() {
    srand(11);
    std::vector<std::vector<int>> columns(N);
    for (int i = 0; i < N; i++)
        for (int e = 0; e < PER_ROW; e++) columns[rand() % N].push_back(i);
    std::vector<long> colptr(N + 1, 0);
    std::vector<int> rowind;
    for (int j = 0; j < N; j++) {
        rowind.insert(rowind.end(), columns[j].begin(), columns[j].end());
        colptr[j + 1] = (long)rowind.size();
    }
    std::vector<u8> x(N);
    for (auto& v : x) v = rand() % 1000 < 5;
    std::vector<float> ref(N);
    for (int j = 0; j < N; j++)
        for (int i : columns[j]) ref[j] += x[i];
    const long* d_colptr = upload(colptr);
    const int* d_rowind = upload(rowind);
    const u8* d_x = upload(x);
    float* d_y;
    CK(cudaMalloc(&d_y, N * 4));
    cudaStream_t s = probe_stream();
    auto each = [&](auto f) {
        f(std::integral_constant<Mode, WAIT>());
        f(std::integral_constant<Mode, WAIT_TRIGGER>());
        f(std::integral_constant<Mode, PROLOGUE>());
        f(std::integral_constant<Mode, PROLOGUE_TRIGGER>());
    };
    for (int round = 0; round < 2; round++) {
        printf("round %d:", round);
        each([&](auto m) {
            constexpr Mode M = decltype(m)::value;
            CK(cudaMemset(d_y, 0xff, N * 4));  // NaN: a column never written shows
            Timing t = time_call(s, [&] { launch<M>(s, d_colptr, d_rowind, d_x, d_y); });
            CK(cudaStreamSynchronize(s));
            printf("  %s %.2f (err %.0e)", NAMES[M], t.graph_us, max_error(d_y, ref));
        });
        printf("\n");
    }
}
