// spmm on a mostly-zero float B by output columns (issue #9, item 1; bench/NOTES.md "spmm by
// output columns"): C = A B (N) or Aᵀ B (T) as sums of A's lines scaled by B's nonzeros. A block
// owns column j of C (and a slice of the k range): C[:, j] += B[k, j] line_k(A) for every k with
// B[k, j] != 0, where line_k is column k of A (N, the CSC mirror) or row k (T, the CSR rows),
// summed in shared memory (m floats) and written once. B's column is read 32 rows at a time and
// balloted, so zeros cost a ballot bit, and A's lines stream coalesced. Variants:
//   walk  : a warp walks each live line in turn, UNROLL loads of 32 entries in flight; NEXT loads
//           the next 32 rows of B before walking these; RACY adds without the CAS loop (wrong
//           sums: what the atomics cost)
//   flat  : a warp's 32 rows of B are one flat run of entries over their live lines (a scan of
//           the lengths, a 5-step search per entry), UNROLL x 32 entries in flight
// Shapes from the arguments: rows per A row (200), columns n (128), B's nonzero share (0.1),
// T (0/1). Checked against a double CPU sum; graph µs of each variant, THREADS and slices.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pc bench/probe_spmm_columns.cu && /tmp/pc 200 128 0.1 0
#include "probe.cuh"

#include <random>

struct P {
    int lines, m, n;  // lines of A walked (k), rows of C, columns of B and C
    const int* ptr;   // line k's entries: [ptr[k], ptr[k + 1])
    const int* idx;   // their rows of C
    const float* val;
    const float* b;   // lines x n
    float* c;         // m x n
    int slices;       // of the k range, a block each; > 1 adds into C with atomics (zeroed first)
};

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

// Block (j, s)'s sums, then column j of C: stored where one slice covers k, else added.
__device__ void write_column(const P& p, const float* acc, int j) {
    __syncthreads();
    for (int r = threadIdx.x; r < p.m; r += blockDim.x) {
        if (p.slices == 1) p.c[(long)r * p.n + j] = acc[r];
        else if (acc[r] != 0) atomicAdd(&p.c[(long)r * p.n + j], acc[r]);
    }
}

// RACY: plain adds in place of the CAS loop (wrong sums; what the atomics cost). NEXT: the next
// 32 rows' B values and bounds loaded before this chunk's lines are walked.
template <int UNROLL, bool RACY = false, bool NEXT = false> __global__ void __launch_bounds__(1024) walk(P p) {
    extern __shared__ float acc[];
    const int j = blockIdx.x % p.n, s = blockIdx.x / p.n, lane = lane_id();
    for (int r = threadIdx.x; r < p.m; r += blockDim.x) acc[r] = 0;
    __syncthreads();
    const int k_begin = (long)s * p.lines / p.slices, k_end = (long)(s + 1) * p.lines / p.slices;
    auto chunk = [&](int k0, float& v, int& lo, int& hi) {
        const int k = k0 + lane;
        v = 0, lo = 0, hi = 0;
        if (k < k_end) v = p.b[(long)k * p.n + j], lo = p.ptr[k], hi = p.ptr[k + 1];
    };
    float nv;
    int nlo, nhi;
    if (NEXT) chunk(k_begin + threadIdx.x / 32 * 32, nv, nlo, nhi);
    for (int k0 = k_begin + threadIdx.x / 32 * 32; k0 < k_end; k0 += blockDim.x) {
        float v;
        int lo, hi;
        if (NEXT) {
            v = nv, lo = nlo, hi = nhi;
            chunk(k0 + blockDim.x, nv, nlo, nhi);
        } else {
            chunk(k0, v, lo, hi);
        }
        for (unsigned live = __ballot_sync(~0u, v != 0); live; live &= live - 1) {
            const int l = __ffs(live) - 1;
            const float vk = __shfl_sync(~0u, v, l);
            const int b = __shfl_sync(~0u, lo, l), e = __shfl_sync(~0u, hi, l);
            for (int q = b + lane; q < e; q += 32 * UNROLL) {
                int r[UNROLL];
                float a[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    if (q + 32 * u < e) r[u] = p.idx[q + 32 * u], a[u] = p.val[q + 32 * u];
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    if (q + 32 * u < e) {
                        if (RACY) acc[r[u]] += a[u] * vk;
                        else atomicAdd(&acc[r[u]], a[u] * vk);
                    }
            }
        }
    }
    write_column(p, acc, j);
}

template <int UNROLL> __global__ void __launch_bounds__(1024) flat(P p) {
    extern __shared__ float acc[];
    const int j = blockIdx.x % p.n, s = blockIdx.x / p.n, lane = lane_id();
    for (int r = threadIdx.x; r < p.m; r += blockDim.x) acc[r] = 0;
    __syncthreads();
    const int k_begin = (long)s * p.lines / p.slices, k_end = (long)(s + 1) * p.lines / p.slices;
    for (int k0 = k_begin + threadIdx.x / 32 * 32; k0 < k_end; k0 += blockDim.x) {
        const int k = k0 + lane;
        float v = 0;
        int lo = 0, len = 0;
        if (k < k_end) {
            v = p.b[(long)k * p.n + j];
            if (v != 0) lo = p.ptr[k], len = p.ptr[k + 1] - lo;
        }
        int end = len;  // inclusive scan of the lengths over the lanes
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int t = __shfl_up_sync(~0u, end, o);
            if (lane >= o) end += t;
        }
        const int total = __shfl_sync(~0u, end, 31), start = end - len;
        for (int f0 = 0; f0 < total; f0 += 32 * UNROLL) {
            int r[UNROLL];
            float a[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                const int f = f0 + 32 * u + lane;
                int seg = 0;  // the last lane whose run starts at or before f
#pragma unroll
                for (int step = 16; step; step >>= 1)
                    if (__shfl_sync(~0u, start, seg + step) <= f) seg += step;
                const int pos = __shfl_sync(~0u, lo, seg) + f - __shfl_sync(~0u, start, seg);
                const float vk = __shfl_sync(~0u, v, seg);
                if (f < total) r[u] = p.idx[pos], a[u] = p.val[pos] * vk;
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                if (f0 + 32 * u + lane < total) atomicAdd(&acc[r[u]], a[u]);
        }
    }
    write_column(p, acc, j);
}

int main(int argc, char** argv) {
    const int per_row = argc > 1 ? atoi(argv[1]) : 200, n = argc > 2 ? atoi(argv[2]) : 128;
    const double share = argc > 3 ? atof(argv[3]) : 0.1;
    const bool t = argc > 4 && atoi(argv[4]);
    const int M = 10000;  // A is M x M
    std::mt19937 rng(7);
    std::vector<int> rowptr(M + 1), col((long)M * per_row);
    std::vector<float> w(col.size());
    for (int i = 0; i < M; i++) {
        rowptr[i + 1] = (i + 1) * per_row;
        std::vector<int> cs(per_row);
        for (auto& c : cs) c = rng() % M;
        std::sort(cs.begin(), cs.end());
        for (int q = 0; q < per_row; q++) col[(long)i * per_row + q] = cs[q], w[(long)i * per_row + q] = (rng() % 2001) / 1000.f - 1;
    }
    std::vector<float> b((long)M * n);
    for (auto& x : b) x = (rng() % 1000000) < share * 1e6 ? (rng() % 2001) / 1000.f - 1 : 0;
    // the walked lines: N the CSC mirror (k = column of A, rows of C = rows of A), T the CSR rows
    std::vector<int> ptr(M + 1, 0), idx(col.size());
    std::vector<float> val(col.size());
    if (t) {
        ptr = rowptr, idx = col, val = w;
    } else {
        for (int c : col) ptr[c + 1]++;
        for (int k = 0; k < M; k++) ptr[k + 1] += ptr[k];
        std::vector<int> next(ptr.begin(), ptr.end() - 1);
        for (int i = 0; i < M; i++)
            for (int q = rowptr[i]; q < rowptr[i + 1]; q++) idx[next[col[q]]] = i, val[next[col[q]]++] = w[q];
    }
    std::vector<double> ref_d((long)M * n, 0);
    for (int k = 0; k < M; k++)
        for (int c = 0; c < n; c++) {
            const float v = b[(long)k * n + c];
            if (v != 0)
                for (int q = ptr[k]; q < ptr[k + 1]; q++) ref_d[(long)idx[q] * n + c] += (double)val[q] * v;
        }
    std::vector<float> ref(ref_d.begin(), ref_d.end());
    long live = 0;
    for (float x : b) live += x != 0;
    const double entries = (double)live * per_row;
    printf("%s 10000² x %d/row, B %d cols, %.1f %% nonzero: %.1f M entries (%.0f MB of A's lines read)\n",
           t ? "T" : "N", per_row, n, 100.0 * live / b.size(), entries / 1e6, entries * 8 / 1e6);

    P p{M, M, n, upload(ptr), upload(idx), upload(val), upload(b), nullptr, 1};
    CK(cudaMalloc(&p.c, (long)M * n * 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    const size_t shared = (size_t)M * 4;
    auto run = [&](const char* name, auto kernel, int threads, int slices) {
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
        P q = p;
        q.slices = slices;
        auto call = [&] {
            if (slices > 1) CK(cudaMemsetAsync(q.c, 0, (long)M * n * 4, s));
            kernel<<<n * slices, threads, shared, s>>>(q);
        };
        CK(cudaMemset(q.c, 0xff, (long)M * n * 4));
        call();
        CK(cudaStreamSynchronize(s));
        const double err = max_error(q.c, ref);
        const Timing tm = time_call(s, call);
        int per_sm;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared));
        printf("%-8s threads %4d slices %d (%d a SM): graph %7.1f µs, event %7.1f, err %.1e\n", name, threads, slices,
               per_sm, tm.graph_us, tm.event_us, err);
    };
    for (int threads : {512, 1024})
        for (int slices : {1, 2, 4}) {
            run("walk4", walk<4>, threads, slices);
            run("walk8", walk<8>, threads, slices);
            run("next4", walk<4, false, true>, threads, slices);
            run("next8", walk<8, false, true>, threads, slices);
            run("racy4", walk<4, true>, threads, slices);
            run("racy8n", walk<8, true, true>, threads, slices);
            run("flat4", flat<4>, threads, slices);
        }
}
