// nonzero_lists' choice on the device (issue #9), two ways, with the products' work made equal so
// that only the launches differ:
//   three: the listing, the lists' product (one wave, 37 KB of shared memory a block) and the
//          gather (a block per 8 lines), as the library launches them today: each product
//          reads the counts' verdict and one of the two returns at once;
//   tail:  the listing and the lists' product, whose first block tail-launches the gather
//          (CUDA dynamic parallelism, cudaStreamTailLaunch) where the lists do not pay, so every
//          call runs two grids.
// On B of 10 % (the lists pay) and dense B (the gather runs), each with the products' work at
// `work` dependent loads a line. Every form is checked first: C poisoned, the call run on the
// stream and from a graph, then a consumer launched with programmatic stream serialization
// (as the library launches every kernel) copies C: it must see the tail-launched gather's C.
// Build (relocatable device code and the device runtime):
//   nvcc -O3 -std=c++17 -rdc=true -gencode=arch=compute_90a,code=sm_90a bench/probe_tail_launch.cu \
//        -lcudadevrt -o /tmp/tail && /tmp/tail
#include "probe.cuh"

constexpr int THREADS = 256, WARPS = THREADS / 32, COLS = 128;
constexpr int LIST_BLOCKS = 1024, LISTS_BLOCKS = 4 * 132;
constexpr int SUMS = 37 * 1024 / 4;  // the lists' shared memory a block
constexpr int ROWS = 10000;

struct Call {
    const float* b;  // ROWS x COLS
    int* counts;     // LIST_BLOCKS
    int* verdict;    // the lists ran
    float* c;        // ROWS: a value a line
    float* copy;     // the consumer's copy of c
    int work;
};

__device__ __forceinline__ void wait_prior() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// Each warp counts the nonzeros of its rows of B; each block leaves its count.
__global__ void __launch_bounds__(THREADS, 8) list_k(Call a) {
    wait_prior();
    int seen = 0;
    for (int r = blockIdx.x * WARPS + threadIdx.x / 32; r < ROWS; r += gridDim.x * WARPS)
        for (int u = 0; u < COLS / 32; u++)
            seen += __popc(__ballot_sync(~0u, a.b[r * COLS + threadIdx.x % 32 + 32 * u] != 0.0f));
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    if (threadIdx.x % 32 == 0) atomicAdd(&total, seen);
    __syncthreads();
    if (threadIdx.x == 0) a.counts[blockIdx.x] = total;
}

// Every block sums the counts: the lists pay where at most 1/7 of B is nonzero.
__device__ bool lists_pay(const Call& a) {
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    int mine = 0;
    for (int i = threadIdx.x; i < LIST_BLOCKS; i += THREADS) mine += a.counts[i];
    atomicAdd(&total, mine);
    __syncthreads();
    return (long long)total * 7 <= (long long)ROWS * COLS;
}

// A product's work on line r: `work` dependent loads of B, its result into c[r].
__device__ void line_work(const Call& a, int r, float bias) {
    float v = bias;
    int at = r * COLS + threadIdx.x % 32;
    for (int k = 0; k < a.work; k++) {
        v = v * 0.5f + a.b[at];
        at = (at * 97 + 31 + (v > 1e30f)) % (ROWS * COLS);
    }
    v = __shfl_sync(~0u, v, 0);
    if (threadIdx.x % 32 == 0) a.c[r] = v + 1.0f;  // finite
}

// The lists' product: one wave striding over the lines, its 37 KB of sums touched.
__device__ void lists_work(const Call& a, float* sums) {
    sums[threadIdx.x] = 0.0f;
    __syncthreads();
    for (int r = blockIdx.x * WARPS + threadIdx.x / 32; r < ROWS; r += gridDim.x * WARPS)
        line_work(a, r, sums[(threadIdx.x + r) % THREADS]);
}

// The gather: the third launch, which returns where the lists ran (TAIL false), or the grid the
// lists' first block tail-launches where they do not pay (TAIL true).
template <bool TAIL> __global__ void __launch_bounds__(THREADS, 8) gather_k(Call a) {
    wait_prior();
    if (!TAIL && *a.verdict) return;
    const int r = blockIdx.x * WARPS + threadIdx.x / 32;
    if (r < ROWS) line_work(a, r, 0.0f);
}

template <bool TAIL> __global__ void __launch_bounds__(THREADS, 4) lists_k(Call a) {
    __shared__ float sums[SUMS];
    wait_prior();
    const bool pay = lists_pay(a);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (!TAIL) *a.verdict = pay;
        else if (!pay) gather_k<true><<<(ROWS + WARPS - 1) / WARPS, THREADS, 0, cudaStreamTailLaunch>>>(a);
    }
    if (pay) lists_work(a, sums);
}

__global__ void __launch_bounds__(THREADS) consume_k(Call a) {  // the next call of a simulation
    wait_prior();
    const int r = blockIdx.x * THREADS + threadIdx.x;
    if (r < ROWS) a.copy[r] = a.c[r];
}

void launch(cudaStream_t s, void (*k)(Call), int blocks, const Call& a) { launch_overlapped(s, k, blocks, THREADS, a); }

void three(cudaStream_t s, const Call& a) {
    launch(s, list_k, LIST_BLOCKS, a);
    launch(s, lists_k<false>, LISTS_BLOCKS, a);
    launch(s, gather_k<false>, (ROWS + WARPS - 1) / WARPS, a);
}

void tail(cudaStream_t s, const Call& a) {
    launch(s, list_k, LIST_BLOCKS, a);
    launch(s, lists_k<true>, LISTS_BLOCKS, a);
}

// C poisoned, the form run (on the stream, or from a graph of one call) and a consumer behind it
// with programmatic serialization: every line's value in both C and the copy.
bool checked(cudaStream_t s, void (*form)(cudaStream_t, const Call&), const Call& a, bool graph) {
    CK(cudaMemsetAsync(a.c, 0xff, ROWS * 4, s));
    CK(cudaMemsetAsync(a.copy, 0xff, ROWS * 4, s));
    if (graph) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        form(s, a);
        launch(s, consume_k, (ROWS + THREADS - 1) / THREADS, a);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    } else {
        form(s, a);
        launch(s, consume_k, (ROWS + THREADS - 1) / THREADS, a);
    }
    CK(cudaStreamSynchronize(s));
    std::vector<float> c(ROWS), copy(ROWS);
    CK(cudaMemcpy(c.data(), a.c, ROWS * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(copy.data(), a.copy, ROWS * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < ROWS; r++)
        if (!std::isfinite(c[r]) || c[r] != copy[r]) return false;
    return true;
}

int main() {
    cudaStream_t s = probe_stream();
    std::vector<float> sparse(ROWS * COLS), dense(ROWS * COLS);
    srand(1);
    for (size_t i = 0; i < sparse.size(); i++) {
        dense[i] = 1.0f + (float)(rand() % 1000) / 1000.0f;
        sparse[i] = rand() % 10 == 0 ? dense[i] : 0.0f;
    }
    Call a = {};
    float* bs = upload(sparse);
    float* bd = upload(dense);
    CK(cudaMalloc(&a.counts, LIST_BLOCKS * 4));
    CK(cudaMalloc(&a.verdict, 4));
    CK(cudaMalloc(&a.c, ROWS * 4));
    CK(cudaMalloc(&a.copy, ROWS * 4));
    printf("| B | work | three: check stream/graph, event / graph µs | tail: check, event / graph µs |\n|---|---|---|---|\n");
    for (float* b : {bs, bd})
        for (int work : {1, 64, 512}) {
            a.b = b;
            a.work = work;
            printf("| %s | %d |", b == bs ? "10 %" : "dense", work);
            for (auto form : {three, tail}) {
                const bool ok = checked(s, form, a, false) && checked(s, form, a, true);
                const Timing t = time_call(s, [&] { form(s, a); });
                printf(" %s, %.2f / %.2f |", ok ? "ok" : "WRONG", t.event_us, t.graph_us);
            }
            printf("\n");
        }
}
