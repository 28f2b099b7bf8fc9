// What yw2y T's y_windows reaches (issue #9: >= 80 % of the copy rate): out[j] = w[j] * y[col(j)]
// on 100,000 rows of 1000 f32 entries over 100,000 columns (12 bytes an entry: index and weight
// in, out written; 1.2 GB, 286 µs at the bench's copy rate). It launches the library's
// yw2y_t_windows_f32 (kernels/yw2y.cu, or the file YW2Y_SOURCE names: bench/probe_yw2y_t.sh makes
// variants with sed) with the y window at `slices` slices of SLICE_OUTPUTS (arguments; 0: as many
// as fit), as many blocks as fit an SM, and prints graph µs and % of the floor per window size;
// the output is poisoned first and checked on the device. Columns: row i's j-th entry in
// [100 j, 100 j + 100) (sorted, uniform in each bucket).
// nvcc -O3 -std=c++17 -arch=sm_90a -DEVS_PROBE -I kernels -o probe_yw2y_t bench/probe_yw2y_t.cu && ./probe_yw2y_t 0 7
#include "probe.cuh"

#ifndef YW2Y_SOURCE
#define YW2Y_SOURCE "yw2y.cu"
#endif
#include YW2Y_SOURCE

constexpr long ROWS = 100'000, ROW = 1000, K = 100'000, NNZ = ROWS * ROW;
constexpr long SLICES = (K + SLICE_OUTPUTS - 1) / SLICE_OUTPUTS, PER_ROW = SLICES + 1;
constexpr double COPY_GBS = 4193;  // the bench's copy rate on the H200 (bench/NOTES.md)

__device__ unsigned mix(unsigned long x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdul, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ul, x ^= x >> 33;
    return (unsigned)x;
}

__global__ void fill(int* indptr, int* col, float* w, float* y) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < NNZ; e += (long)gridDim.x * blockDim.x) {
        col[e] = (int)(e % ROW) * 100 + mix(e) % 100;
        w[e] = (mix(e + NNZ) % 1000) / 1000.f;
        if (e <= ROWS) indptr[e] = (int)(e * ROW);
        if (e < K) y[e] = 1 + (mix(e + 2 * NNZ) % 1000) / 1000.f;
    }
}

// offsets[i][s]: where row i's entries of slice s begin; the row's length last.
__global__ void slice_offsets(const int* col, unsigned* offsets) {
    const long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (t >= ROWS * PER_ROW) return;
    const long i = t / PER_ROW, s = t % PER_ROW;
    const int* c = col + i * ROW;
    int lo = 0, hi = ROW;  // first entry with column >= s * SLICE_OUTPUTS
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (c[mid] < s * SLICE_OUTPUTS) lo = mid + 1; else hi = mid;
    }
    offsets[t] = s == SLICES ? ROW : lo;
}

__device__ unsigned worst;  // largest |out - w y| as float bits (NaN's bits are larger)

__global__ void check(const int* col, const float* w, const float* y, const float* out) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < NNZ; e += (long)gridDim.x * blockDim.x) {
        const float d = fabsf(out[e] - w[e] * y[col[e]]);
        atomicMax(&worst, __float_as_uint(d == d ? d : INFINITY));
    }
}

int main(int argc, char** argv) {
    int* indptr;
    int* col;
    float *w, *y, *out;
    unsigned* offsets;
    CK(cudaMalloc(&indptr, (ROWS + 1) * 4));
    CK(cudaMalloc(&col, NNZ * 4));
    CK(cudaMalloc(&w, NNZ * 4));
    CK(cudaMalloc(&y, K * 4));
    CK(cudaMalloc(&out, NNZ * 4));
    CK(cudaMalloc(&offsets, ROWS * PER_ROW * 4));
    fill<<<4096, 256>>>(indptr, col, w, y);
    slice_offsets<<<(ROWS * PER_ROW + 255) / 256, 256>>>(col, offsets);
    CK(cudaDeviceSynchronize());
    Args a{};
    a.indptr = indptr, a.indices = col, a.weights = w, a.x = y, a.ldx = K, a.y = out, a.ldy = NNZ;
    a.m = ROWS, a.k = K, a.nnz = NNZ, a.batches = 1, a.alpha = 1, a.beta = 0, a.slice_offsets = offsets;
    int sms, optin;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CK(cudaFuncSetAttribute(yw2y_t_windows_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 1024));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, yw2y_t_windows_f32));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int arg = 1; arg < argc; ++arg) {
        long slices = atol(argv[arg]);
        if (slices <= 0) slices = (optin - 1024) / (SLICE_OUTPUTS * 4);
        const size_t shared = std::min(slices, SLICES) * SLICE_OUTPUTS * 4;
        int per_sm;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, yw2y_t_windows_f32, WINDOW_THREADS, shared));
        CK(cudaMemset(out, 0xff, NNZ * 4));  // NaN until written
        const Timing t = time_call(s, [&] { yw2y_t_windows_f32<<<sms * per_sm, WINDOW_THREADS, shared, s>>>(a); });
        unsigned zero = 0, bits;
        CK(cudaMemcpyToSymbol(worst, &zero, 4));
        check<<<4096, 256>>>(col, w, y, out);
        CK(cudaMemcpyFromSymbol(&bits, worst, 4));
        float err;
        memcpy(&err, &bits, 4);
        printf("%-14s threads %4d regs %3d window %2ld slices, %d a SM: graph %7.1f µs (%.1f %% of floor), event %7.1f, err %.1e\n",
               YW2Y_SOURCE, WINDOW_THREADS, fa.numRegs, shared / (SLICE_OUTPUTS * 4), per_sm, t.graph_us,
               100 * NNZ * 12.0 / COPY_GBS / 1e3 / t.graph_us, t.event_us, err);
    }
}
