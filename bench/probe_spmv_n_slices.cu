// Tuning probe for spmv N on an event vector in one launch (issue #8): block s owns the outputs
// [s W, (s + 1) W), reads the whole event vector itself (no census launch before it), and for
// each live column adds only that column's entries that fall in its slice (the CSC mirror's rows
// sorted within a column; bounds[c (S + 1) + s] = first entry of column c in slice s, absolute,
// as an analysis would keep them); then it writes its slice once (no beta pass, no global
// atomics). A 10000² CSR of 200 uniform random sorted columns a row, hetero f32, bool events.
// Forms: "thread" (a thread per 16 events walks its live columns' segments alone), "list" (the
// block lists its live columns in shared memory, then 8-lane groups walk a segment each).
// Standalone; on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_spmv_n_slices.cu -o /tmp/pn && /tmp/pn
#include "probe.cuh"

#include <string>

typedef unsigned char u8;
static const long* g_perm;
static const float* g_w_csr;
constexpr int THREADS = 1024, LIST_MAX = 10240, GROUP = 8;

struct Csc {
    int k, S;            // columns (= events), slices
    const int* bounds;   // k (S + 1)
    const int* rows;     // row of each entry, column-major
    const float* w;      // weight of each entry
    const long* perm;    // CSR position of each entry (the library's borrowed weights)
    const float* w_csr;  // weights in CSR order
};

// Events [base, base + 16) as 16 bytes (zero past k); byte j of them.
__device__ __forceinline__ uint4 events16(const u8* x, int base, int k) {
    if (base + 16 <= k) return *(const uint4*)(x + base);
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < 16; j++)
        if (base + j < k) w[j / 4] |= (unsigned)x[base + j] << 8 * (j % 4);
    return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ unsigned byte_of(uint4 v, int j) {
    const unsigned word = j < 4 ? v.x : j < 8 ? v.y : j < 12 ? v.z : v.w;
    return word >> 8 * (j % 4) & 0xff;
}

template <int W> __device__ void blend(const Csc& a, float* sums, float* y, int m) {
    __syncthreads();
    for (int i = threadIdx.x; i < W && blockIdx.x * W + i < m; i += THREADS) y[blockIdx.x * W + i] = sums[i];
}

template <int W> __device__ void add_segment(const Csc& a, float* sums, int c, int first, int step) {
    const int* b = a.bounds + (long)c * (a.S + 1) + blockIdx.x;
    const int end = b[1], r0 = blockIdx.x * W;
    for (int p = b[0] + first; p < end; p += step) atomicAdd(sums + (a.rows[p] - r0), a.w[p]);
}

template <int W> __global__ void __launch_bounds__(THREADS) thread_form(Csc a, const u8* x, float* y, int m) {
    __shared__ float sums[W];
    for (int i = threadIdx.x; i < W; i += THREADS) sums[i] = 0;
    __syncthreads();
    for (int base = threadIdx.x * 16; base < a.k; base += THREADS * 16) {
        const uint4 v = events16(x, base, a.k);
#pragma unroll
        for (int j = 0; j < 16; j++)
            if (byte_of(v, j)) add_segment<W>(a, sums, base + j, 0, 1);
    }
    blend<W>(a, sums, y, m);
}

template <int W> __global__ void __launch_bounds__(THREADS) list_form(Csc a, const u8* x, float* y, int m) {
    __shared__ float sums[W];
    __shared__ int live[LIST_MAX];
    __shared__ int count;
    for (int i = threadIdx.x; i < W; i += THREADS) sums[i] = 0;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    for (int base = threadIdx.x * 16; base < a.k; base += THREADS * 16) {
        const uint4 v = events16(x, base, a.k);
#pragma unroll
        for (int j = 0; j < 16; j++)
            if (byte_of(v, j)) live[atomicAdd(&count, 1)] = base + j;
    }
    __syncthreads();
    const int group = threadIdx.x / GROUP, sub = threadIdx.x % GROUP;
    for (int g = group; g < count; g += THREADS / GROUP) add_segment<W>(a, sums, live[g], sub, GROUP);
    blend<W>(a, sums, y, m);
}

// The library's shape, to find what separates it from list_form: weights through perm (PERM);
// SCAN: the library's listing (512 threads, 32 events a thread, a block scan placing them in a
// u16 window) and 4 lanes a column; blocks past the slices exit.
template <int W, bool PERM, bool SCAN, int T>
__global__ void __launch_bounds__(T, 1) lib_form(Csc a, const u8* x, float* y, int m) {
    __shared__ float sums[W];
    __shared__ unsigned short window[16384];
    __shared__ int warp_sums[32];
    __shared__ int count;
    for (int i = threadIdx.x; i < W; i += T) sums[i] = 0;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    int n;
    if (SCAN) {
        const int base = threadIdx.x * 32;
        const uint4 lo = events16(x, base, a.k), hi = events16(x, base + 16, a.k);
        unsigned live = 0;
#pragma unroll
        for (int j = 0; j < 16; j++) live |= (byte_of(lo, j) != 0) << j | (byte_of(hi, j) != 0) << (16 + j);
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, v = __popc(live);
        int inc = v;
        for (int o = 1; o < 32; o <<= 1) { const int up = __shfl_up_sync(~0u, inc, o); if (lane >= o) inc += up; }
        if (lane == 31) warp_sums[warp] = inc;
        __syncthreads();
        if (warp == 0) {
            int w = lane < T / 32 ? warp_sums[lane] : 0;
            for (int o = 1; o < 32; o <<= 1) { const int up = __shfl_up_sync(~0u, w, o); if (lane >= o) w += up; }
            if (lane < T / 32) warp_sums[lane] = w;
        }
        __syncthreads();
        int at = (warp ? warp_sums[warp - 1] : 0) + inc - v;
        n = warp_sums[T / 32 - 1];
        for (; live; live &= live - 1) window[at++] = (unsigned short)(base + __ffs(live) - 1);
    } else {
        for (int base = threadIdx.x * 16; base < a.k; base += T * 16) {
            const uint4 v = events16(x, base, a.k);
#pragma unroll
            for (int j = 0; j < 16; j++)
                if (byte_of(v, j)) window[atomicAdd(&count, 1)] = base + j;
        }
        __syncthreads();
        n = count;
    }
    __syncthreads();
    if (blockIdx.x >= a.S) return;
    constexpr int LANES = SCAN ? 4 : GROUP;
    const int group = threadIdx.x / LANES, sub = threadIdx.x % LANES;
    for (int g = group; g < n; g += T / LANES) {
        const int c = window[g];
        const int* b = a.bounds + (long)c * (a.S + 1) + blockIdx.x;
        const int end = b[1], r0 = blockIdx.x * W;
        for (int p = b[0] + sub; p < end; p += LANES)
            atomicAdd(sums + (a.rows[p] - r0), PERM ? a.w_csr[a.perm[p]] : a.w[p]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < W && blockIdx.x * W + i < m; i += T) y[blockIdx.x * W + i] = sums[i];
}

__global__ void empty_kernel() {}

template <int W> void run(const char* form, int m, const std::vector<int>& colptr, const std::vector<int>& rows,
                          const int* d_rows, const float* d_w, const u8* d_x, float* d_y, const std::vector<float>& ref,
                          cudaStream_t s, double rate) {
    const int k = (int)colptr.size() - 1, S = (m + W - 1) / W;
    std::vector<int> bounds((long)k * (S + 1));
    for (int c = 0; c < k; c++)
        for (int q = 0; q <= S; q++)
            bounds[(long)c * (S + 1) + q] =
                (int)(std::lower_bound(rows.begin() + colptr[c], rows.begin() + colptr[c + 1], q * W) - rows.begin());
    int* d_bounds = upload(bounds);
    const Csc a{k, S, d_bounds, d_rows, d_w, g_perm, g_w_csr};
    const std::string f = form;
    auto call = [&] {
        if (f == "list") list_form<W><<<S, THREADS, 0, s>>>(a, d_x, d_y, m);
        else if (f == "thread") thread_form<W><<<S, THREADS, 0, s>>>(a, d_x, d_y, m);
        else if (f == "perm") lib_form<W, true, false, 1024><<<S, 1024, 0, s>>>(a, d_x, d_y, m);
        else if (f == "scan") lib_form<W, false, true, 512><<<S, 512, 0, s>>>(a, d_x, d_y, m);
        else if (f == "scanperm") lib_form<W, true, true, 512><<<S, 512, 0, s>>>(a, d_x, d_y, m);
        else if (f == "scangrid") lib_form<W, true, true, 512><<<264, 512, 0, s>>>(a, d_x, d_y, m);
    };
    CK(cudaMemset(d_y, 0xff, m * 4));  // NaN: every output must be written
    call();
    CK(cudaStreamSynchronize(s));
    const double err = max_error(d_y, ref);
    const Timing t = time_call(s, call);
    printf("%-8s rate %5.3f W %4d (%3d blocks, bounds %.1f MB): event %.2f graph %.2f us, err %.1e\n", form, rate, W,
           S, bounds.size() * 4e-6, t.event_us, t.graph_us, err);
    cudaFree(d_bounds);
}

int main() {
    const int m = 10000, k = 10000, per_row = 200;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    srand(7);
    // CSR rows of distinct uniform random columns, then the CSC mirror (rows sorted in a column)
    std::vector<std::vector<int>> by_col(k);
    std::vector<std::vector<float>> w_col(k);
    for (int r = 0; r < m; r++) {
        std::vector<int> cols;
        while ((int)cols.size() < per_row) {
            const int c = rand() % k;
            if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
        }
        for (int c : cols) by_col[c].push_back(r), w_col[c].push_back(rand() / (float)RAND_MAX);
    }
    std::vector<int> colptr(k + 1, 0), rows;
    std::vector<float> w;
    for (int c = 0; c < k; c++) {
        rows.insert(rows.end(), by_col[c].begin(), by_col[c].end());
        w.insert(w.end(), w_col[c].begin(), w_col[c].end());
        colptr[c + 1] = (int)rows.size();
    }
    int* d_rows = upload(rows);
    float* d_w = upload(w);
    {  // CSR positions of the CSC entries (rows in order, a row's entries in column order)
        std::vector<long> row_start(m + 1, 0), perm(rows.size());
        for (int r : rows) row_start[r + 1]++;
        for (int r = 0; r < m; r++) row_start[r + 1] += row_start[r];
        std::vector<long> next(row_start.begin(), row_start.end() - 1);
        std::vector<float> w_csr(rows.size());
        for (int c = 0; c < k; c++)
            for (int p = colptr[c]; p < colptr[c + 1]; p++) perm[p] = next[rows[p]]++, w_csr[perm[p]] = w[p];
        g_perm = upload(perm);
        g_w_csr = upload(w_csr);
    }
    float* d_y;
    CK(cudaMalloc(&d_y, m * 4));
    for (double rate : {0.01, 0.05}) {
        std::vector<u8> x(k);
        for (int c = 0; c < k; c++) x[c] = rand() < rate * RAND_MAX;
        std::vector<float> ref(m, 0.f);
        for (int c = 0; c < k; c++)
            if (x[c])
                for (int p = colptr[c]; p < colptr[c + 1]; p++) ref[rows[p]] += w[p];
        u8* d_x = upload(x);
        for (int round = 0; round < 2; round++)
            for (const char* form : {"list", "perm", "scan", "scanperm", "scangrid"})
                run<128>(form, m, colptr, rows, d_rows, d_w, d_x, d_y, ref, s, rate);
        cudaFree(d_x);
    }
    const Timing t = time_call(s, [&] { empty_kernel<<<1, 32, 0, s>>>(); });
    printf("empty launch: event %.2f graph %.2f us\n", t.event_us, t.graph_us);
    return 0;
}
