// What yw2y N's stream reaches on this GPU (issue #9: >= 90 % of the copy rate): 100,000 rows of
// 1000 f32 entries, out[j] = w[j] * y[row(j)], 8 bytes an entry like a copy. Variants of the
// library's shape (kernels/yw2y.cu, yw2y_n: a warp a row, 16-byte vectors, U in flight a lane):
//   memcpy        cudaMemcpyAsync of the weights (the copy rate the bench's floor uses)
//   copy<U>       a grid-stride float4 copy, U vectors in flight a lane
//   rows<U,H,B>   a warp a row, blocks of B threads, H: streaming hints (ld/st .cs) or plain
//   persist<U,H>  the same warps resident (SMs x 2048 threads), each taking rows in turn
// and with 8 batches (100,000 rows of 100 entries, 8 rows of y: 40 MB read, 320 MB written):
//   memset / fill  the write rate alone: cudaMemsetAsync and a grid-stride float4 store of 320 MB
//   group          the library's shape: a warp a row, the group's 8 y in one load, 8 stores a lane
//   flat           a warp any 32 consecutive vectors (rows found by division: uniform rows only)
//   per_batch      a warp a (row, batch): the row's weights read 8 times (7 from L2)
//   lib            the library's yw2y_n_f32 itself (kernels/yw2y.cu, or the file YW2Y_SOURCE names),
//                  int32 row pointers as the bench passes them, in both sections
// nvcc -O3 -std=c++17 -arch=sm_90a -DEVS_PROBE -I kernels -o probe_yw2y_n bench/probe_yw2y_n.cu && ./probe_yw2y_n
#include "probe.cuh"

#include <string>
#ifndef YW2Y_SOURCE
#define YW2Y_SOURCE "yw2y.cu"
#endif
#include YW2Y_SOURCE

// The library kernel's arguments for m rows of `per_row` entries, `batches` rows of y.
Args lib_args(const int* indptr, const float* w, const float* y, float* out, long m, long per_row, long batches) {
    Args a{};
    a.indptr = indptr, a.weights = (void*)w, a.x = y, a.ldx = m, a.y = out, a.ldy = m * per_row;
    a.m = a.k = m, a.nnz = m * per_row, a.batches = batches, a.alpha = 1, a.beta = 0;
    return a;
}

int* int32_rows(long m, long per_row) {
    std::vector<int> p(m + 1);
    for (long r = 0; r <= m; ++r) p[r] = (int)(r * per_row);
    return upload(p);
}

constexpr long ROWS = 100'000, ROW = 1000, N = ROWS * ROW;

template <bool H> __device__ __forceinline__ float4 load4(const float4* p) { return H ? __ldcs(p) : *p; }
template <bool H> __device__ __forceinline__ void store4(float4* p, float4 v) {
    if (H) __stcs(p, v); else *p = v;
}
__device__ __forceinline__ float4 scale(float4 v, float s) { return make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }

template <int U> __global__ void copy(const float4* w, float4* out, long groups) {
    const long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < groups; i += stride * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (i + u * stride < groups) v[u] = __ldcs(w + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (i + u * stride < groups) __stcs(out + i + u * stride, v[u]);
    }
}

// One row's vectors by one warp (rows here are whole vectors: 1000 = 250 x 4).
template <int U, bool H>
__device__ __forceinline__ void row(const long* indptr, const float4* w, const float* y, float4* out, long r, int lane) {
    const long vb = indptr[r] / 4, ve = indptr[r + 1] / 4;
    const float yv = y[r];
    for (long q0 = vb + lane; q0 < ve; q0 += 32 * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (q0 + 32 * u < ve) v[u] = load4<H>(w + q0 + 32 * u);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (q0 + 32 * u < ve) store4<H>(out + q0 + 32 * u, scale(v[u], yv));
    }
}

template <int U, bool H> __global__ void rows(const long* indptr, const float4* w, const float* y, float4* out) {
    const long r = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    if (r < ROWS) row<U, H>(indptr, w, y, out, r, threadIdx.x % 32);
}

template <int U, bool H> __global__ void persist(const long* indptr, const float4* w, const float* y, float4* out) {
    const long warps = (long)gridDim.x * blockDim.x / 32;
    for (long r = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32; r < ROWS; r += warps)
        row<U, H>(indptr, w, y, out, r, threadIdx.x % 32);
}

constexpr long BROWS = 100'000, BROW = 100, BN = BROWS * BROW, BATCHES = 8;

__global__ void fill(float4* out, long groups) {
    const long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < groups; i += stride) out[i] = make_float4(1, 2, 3, 4);
}

__global__ void group(const long* indptr, const float4* w, const float* y, float4* out) {
    const long r = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (r >= BROWS) return;
    const float y_lane = lane < BATCHES ? y[lane * BROWS + r] : 0.f;
    const long vb = indptr[r] / 4, ve = indptr[r + 1] / 4;
    for (long qb = vb; qb < ve; qb += 32) {
        const long q = qb + lane;
        const float4 v = q < ve ? w[q] : float4{};
#pragma unroll
        for (int b = 0; b < BATCHES; ++b) {
            const float yb = __shfl_sync(0xffffffffu, y_lane, b);
            if (q < ve) out[b * BN / 4 + q] = scale(v, yb);
        }
    }
}

__global__ void flat(const float4* w, const float* y, float4* out) {
    const long q = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (q >= BN / 4) return;
    const long r = q * 4 / BROW;
    const float4 v = w[q];
    float yb[BATCHES];
#pragma unroll
    for (int b = 0; b < BATCHES; ++b) yb[b] = y[b * BROWS + r];
#pragma unroll
    for (int b = 0; b < BATCHES; ++b) out[b * BN / 4 + q] = scale(v, yb[b]);
}

__global__ void per_batch(const long* indptr, const float4* w, const float* y, float4* out) {
    const long t = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32, r = t / BATCHES, b = t % BATCHES;
    if (r >= BROWS) return;
    const float yb = y[b * BROWS + r];
    const long vb = indptr[r] / 4, ve = indptr[r + 1] / 4;
    for (long q = vb + threadIdx.x % 32; q < ve; q += 32) out[b * BN / 4 + q] = scale(w[q], yb);
}

void batched(cudaStream_t s, int sms, bool lib_only) {
    std::vector<long> indptr(BROWS + 1);
    for (long r = 0; r <= BROWS; ++r) indptr[r] = r * BROW;
    std::vector<float> w(BN), y(BATCHES * BROWS);
    for (long j = 0; j < BN; ++j) w[j] = (float)((j * 2654435761u) % 1000) * 1e-3f;
    for (long i = 0; i < BATCHES * BROWS; ++i) y[i] = 1.0f + (float)(i % 7);
    long* d_indptr = upload(indptr);
    float *d_w = upload(w), *d_y = upload(y), *d_out;
    CK(cudaMalloc(&d_out, BATCHES * BN * 4));
    const float4* w4 = (const float4*)d_w;
    float4* o4 = (float4*)d_out;
    auto check = [&](const char* name) {
        std::vector<float> got(BATCHES * BN);
        CK(cudaMemcpy(got.data(), d_out, got.size() * 4, cudaMemcpyDeviceToHost));
        for (long i = 0; i < BATCHES * BN; i += 9973)
            if (got[i] != w[i % BN] * y[i / BN * BROWS + i % BN / BROW]) { printf("%s: wrong at %ld\n", name, i); exit(1); }
    };
    auto report = [&](const char* name, Timing t) {
        printf("%-24s event %8.1f  graph %8.1f us  %6.0f GB/s (graph, 360 MB)\n", name, t.event_us, t.graph_us, 9.0 * 4 * BN / t.graph_us / 1e3);
    };
    auto poison = [&] { CK(cudaMemset(d_out, 0xff, BATCHES * BN * 4)); };
    if (!lib_only) {
    report("memset 320 MB", time_call(s, [&] { CK(cudaMemsetAsync(d_out, 0, BATCHES * BN * 4, s)); }));
    report("fill 320 MB", time_call(s, [&] { fill<<<sms * 8, 256, 0, s>>>(o4, BATCHES * BN / 4); }));
    poison();
    report("group", time_call(s, [&] { group<<<BROWS / 8, 256, 0, s>>>(d_indptr, w4, d_y, o4); }));
    check("group");
    poison();
    report("flat", time_call(s, [&] { flat<<<(BN / 4 + 255) / 256, 256, 0, s>>>(w4, d_y, o4); }));
    check("flat");
    poison();
    report("per_batch", time_call(s, [&] { per_batch<<<BROWS * BATCHES / 8, 256, 0, s>>>(d_indptr, w4, d_y, o4); }));
    check("per_batch");
    }
    poison();
    const Args la = lib_args(int32_rows(BROWS, BROW), d_w, d_y, d_out, BROWS, BROW, BATCHES);
    report("lib", time_call(s, [&] { yw2y_n_f32<<<BROWS / 8, 256, 0, s>>>(la); }));
    check("lib");
    CK(cudaFree(d_out));
}

int main(int argc, char** argv) {
    std::vector<long> indptr(ROWS + 1);
    for (long r = 0; r <= ROWS; ++r) indptr[r] = r * ROW;
    std::vector<float> w(N), y(ROWS);
    for (long j = 0; j < N; ++j) w[j] = (float)((j * 2654435761u) % 1000) * 1e-3f;
    for (long r = 0; r < ROWS; ++r) y[r] = 1.0f + (float)(r % 7);
    long* d_indptr = upload(indptr);
    float *d_w = upload(w), *d_y = upload(y), *d_out;
    CK(cudaMalloc(&d_out, N * 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const std::string mode = argc > 1 ? argv[1] : "";  // `batched`: that section only; `lib`: only the lib rows
    if (mode == "batched") return batched(s, sms, false), 0;
    const float4 *w4 = (const float4*)d_w;
    float4* o4 = (float4*)d_out;
    // out's reference for the row kernels, checked on a sample
    auto check = [&](const char* name) {
        std::vector<float> got(N);
        CK(cudaMemcpy(got.data(), d_out, N * 4, cudaMemcpyDeviceToHost));
        for (long j = 0; j < N; j += 9973)
            if (got[j] != w[j] * y[j / ROW]) { printf("%s: wrong at %ld\n", name, j); exit(1); }
    };
    auto report = [&](const char* name, Timing t) {
        printf("%-24s event %8.1f  graph %8.1f us  %6.0f GB/s (graph)\n", name, t.event_us, t.graph_us, 8.0 * N / t.graph_us / 1e3);
    };
    auto poison = [&] { CK(cudaMemset(d_out, 0xff, N * 4)); };
    if (mode != "lib") {
    report("memcpy", time_call(s, [&] { CK(cudaMemcpyAsync(d_out, d_w, N * 4, cudaMemcpyDeviceToDevice, s)); }));
#define COPY(U) report("copy<" #U ">", time_call(s, [&] { copy<U><<<sms * 8, 256, 0, s>>>(w4, o4, N / 4); }));
    COPY(2) COPY(4) COPY(8)
#define ROWS_(U, H, B)                                                                        \
    poison();                                                                                 \
    report("rows<" #U "," #H "," #B ">", time_call(s, [&] { rows<U, H><<<(ROWS * 32 + B - 1) / B, B, 0, s>>>(d_indptr, w4, d_y, o4); })); \
    check("rows");
    ROWS_(4, true, 256) ROWS_(4, false, 256) ROWS_(8, true, 256) ROWS_(8, false, 256) ROWS_(2, true, 256)
    ROWS_(4, true, 512) ROWS_(4, true, 1024) ROWS_(4, true, 128)
#define PERSIST(U, H)                                                                         \
    poison();                                                                                 \
    report("persist<" #U "," #H ">", time_call(s, [&] { persist<U, H><<<sms * 8, 256, 0, s>>>(d_indptr, w4, d_y, o4); })); \
    check("persist");
    PERSIST(4, true) PERSIST(4, false) PERSIST(8, true) PERSIST(2, true)
    report("memcpy (again)", time_call(s, [&] { CK(cudaMemcpyAsync(d_out, d_w, N * 4, cudaMemcpyDeviceToDevice, s)); }));
    ROWS_(4, true, 256)
    }
    poison();
    const Args la = lib_args(int32_rows(ROWS, ROW), d_w, d_y, d_out, ROWS, ROW, 1);
    report("lib", time_call(s, [&] { yw2y_n_f32<<<ROWS / 8, 256, 0, s>>>(la); }));
    check("lib");
    if (mode == "lib") batched(s, sms, true);
    return 0;
}
