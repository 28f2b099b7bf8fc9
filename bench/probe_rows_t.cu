// Tuning probe for dense mm T on events with few columns (kernels/dense.cu, rows_t): C = Wᵀ·S
// with W 10,000 x 10,000 f32 and S 10 columns at 1 % active, given the active rows of each
// column listed (as the library's listing launch leaves them). A block owns 32 V consecutive
// outputs (lane l outputs [lV, (l + 1) V): one V-wide load of a listed row of W), its WARPS
// warps share the (row, column) pairs in runs, AT_ONCE pairs' loads in flight a warp, and the
// warps' sums meet in shared memory in a fixed order. V = 1 is the library's shape (128-byte
// pieces of a row a warp); wider lanes read longer runs of each row with fewer blocks.
// Standalone; on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_rows_t.cu -o /tmp/pr && /tmp/pr
#include "probe.cuh"

constexpr int COLS_MAX = 16;

struct Problem {
    int m, k, n;           // outputs (W's columns), W's rows, columns of S
    const float* w;        // k x m
    const int* lists;      // column c's active rows at lists + c k
    const int* counts;     // n
    float* y;              // m x n
};

template <int V> struct Piece { float v[V]; };

template <int V> __device__ __forceinline__ Piece<V> load_piece(const float* row, int i, int m) {
    Piece<V> p;
    if (i + V <= m) {
        if constexpr (V == 4) *(float4*)p.v = *(const float4*)(row + i);
        else if constexpr (V == 2) *(float2*)p.v = *(const float2*)(row + i);
        else p.v[0] = row[i];
    } else {
        for (int j = 0; j < V; j++) p.v[j] = i + j < m ? row[i + j] : 0.f;
    }
    return p;
}

template <int V, int WARPS, int AT_ONCE> __global__ void __launch_bounds__(32 * WARPS) rows_t(Problem p) {
    constexpr int OUT = 32 * V;
    __shared__ float part[WARPS / 2][COLS_MAX][OUT];
    __shared__ int first[COLS_MAX + 1];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        first[0] = 0;
        for (int c = 0; c < COLS_MAX; c++) first[c + 1] = first[c] + (c < p.n ? p.counts[c] : 0);
    }
    __syncthreads();
    const int i = blockIdx.x * OUT + lane * V;
    const int pairs = first[COLS_MAX];
    const int run_begin = (int)((long)pairs * warp / WARPS), run_end = (int)((long)pairs * (warp + 1) / WARPS);
    float acc[COLS_MAX][V];
#pragma unroll
    for (int c = 0; c < COLS_MAX; c++) {
#pragma unroll
        for (int j = 0; j < V; j++) acc[c][j] = 0;
        const int begin = max(run_begin, first[c]), end = min(run_end, first[c + 1]);
        if (i < p.m && begin < end) {
            const int* rows = p.lists + c * p.k + (begin - first[c]);
            const int len = end - begin;
            for (int t0 = 0; t0 < len; t0 += AT_ONCE) {
                Piece<V> w[AT_ONCE];
#pragma unroll
                for (int u = 0; u < AT_ONCE; u++)
                    if (t0 + u < len) w[u] = load_piece<V>(p.w + (long)rows[t0 + u] * p.m, i, p.m);
#pragma unroll
                for (int u = 0; u < AT_ONCE; u++)
                    if (t0 + u < len)
#pragma unroll
                        for (int j = 0; j < V; j++) acc[c][j] += w[u].v[j];
            }
        }
    }
#pragma unroll
    for (int half = WARPS / 2; half >= 1; half /= 2) {
        if (warp >= half && warp < 2 * half)
#pragma unroll
            for (int c = 0; c < COLS_MAX; c++)
#pragma unroll
                for (int j = 0; j < V; j++) part[warp - half][c][lane * V + j] = acc[c][j];
        __syncthreads();
        if (warp < half)
#pragma unroll
            for (int c = 0; c < COLS_MAX; c++)
#pragma unroll
                for (int j = 0; j < V; j++) acc[c][j] += part[warp][c][lane * V + j];
        __syncthreads();
    }
    if (warp == 0)
#pragma unroll
        for (int j = 0; j < V; j++)
#pragma unroll
            for (int c = 0; c < COLS_MAX; c++)
                if (i + j < p.m && c < p.n) p.y[(long)(i + j) * p.n + c] = acc[c][j];
}

template <int V, int WARPS, int AT_ONCE>
void run(const char* name, Problem p, cudaStream_t s, const std::vector<float>& ref) {
    const int blocks = (p.m + 32 * V - 1) / (32 * V);
    CK(cudaMemset(p.y, 0xff, (size_t)p.m * p.n * 4));
    auto call = [&] { rows_t<V, WARPS, AT_ONCE><<<blocks, 32 * WARPS, 0, s>>>(p); };
    call();
    CK(cudaStreamSynchronize(s));
    const double err = max_error(p.y, ref);
    const Timing t = time_call(s, call);
    const Timing t2 = time_call(s, call);
    printf("%-34s blocks %5d  graph µs %7.2f / %7.2f  event µs %7.2f  err %.1e\n", name, blocks, t.graph_us, t2.graph_us,
           t.event_us, err);
}

int main() {
    const int m = 10000, k = 10000, n = 10;
    std::vector<float> w((size_t)k * m);
    unsigned seed = 12345;
    auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
    for (auto& x : w) x = (next() >> 8) * (1.0f / 16777216.0f);
    std::vector<int> lists((size_t)n * k, 0), counts(n);
    std::vector<float> ref((size_t)m * n, 0.f);
    for (int c = 0; c < n; c++) {
        int count = 0;
        for (int r = 0; r < k; r++)
            if (next() % 100 == 0) lists[(size_t)c * k + count++] = r;
        counts[c] = count;
        for (int t = 0; t < count; t++) {
            const float* row = &w[(size_t)lists[(size_t)c * k + t] * m];
            for (int i = 0; i < m; i++) ref[(size_t)i * n + c] += row[i];
        }
    }
    Problem p{m, k, n, upload(w), upload(lists), upload(counts), nullptr};
    CK(cudaMalloc(&p.y, (size_t)m * n * 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    int pairs = 0;
    for (int c : counts) pairs += c;
    printf("W %d x %d f32, %d columns, %d pairs: %.1f MB of W's rows\n", k, m, n, pairs, pairs * (double)m * 4 / 1e6);
    run<1, 8, 8>("V1 8 warps 8 at once (library)", p, s, ref);
    run<2, 8, 8>("V2 8 warps 8 at once", p, s, ref);
    run<4, 8, 8>("V4 8 warps 8 at once", p, s, ref);
    run<4, 8, 4>("V4 8 warps 4 at once", p, s, ref);
    run<2, 4, 8>("V2 4 warps 8 at once", p, s, ref);
    run<4, 4, 8>("V4 4 warps 8 at once", p, s, ref);
    run<1, 8, 8>("V1 8 warps 8 at once (library)", p, s, ref);
    return 0;
}
