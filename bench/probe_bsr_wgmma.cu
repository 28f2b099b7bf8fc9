// Tuning probe for bsrmm on Hopper (issue #11): bf16 BSR x dense B with wgmma from shared
// memory, TMA loads into a 4-stage mbarrier pipeline, a producer warpgroup and two consumer
// warpgroups; the first form of the library's kernel (kernels/bsr.cu, bsrmm_wgmma: a block per
// tile, 64 x 256 and 128 x 128 tiles), kept to try changes on. Checked against a plain f32
// kernel, timed in TFLOP/s of useful FLOPs. Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_bsr_wgmma.cu -lcuda -o /tmp/p && /tmp/p
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"
#include "probe_tma.cuh"

#include <cuda_bf16.h>

#include <random>

#include "../kernels/hopper.cuh"  // the library's PTX wrappers: mbarriers, TMA, wgmma

using namespace hopper;

// ------------------------------------------------------------------ the kernel
#define STAGES 4
#define BK 64           // K per stage: one 128-byte swizzle row of bf16
#define TILE_ELEMS 16384  // TILE_M x TILE_N
#define GROUP_COLS 512  // columns of C the concurrent blocks share (B's slab stays in L2)

struct Bsr {
    const int *indptr, *indices;
    int block_rows, bm, bk, n, ldc;
    bf16* c;
};

// TILE_M = 64 (blocks of 64 rows): a 64 x 256 tile, consumer g takes columns 128g..
// TILE_M = 128: a 128 x 128 tile, consumer g takes rows 64g..
template <int TILE_M> __global__ void __launch_bounds__(384, 1)
    bsrmm_wgmma(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, Bsr p) {
    constexpr int TILE_N = TILE_ELEMS / TILE_M, A_BYTES = TILE_M * BK * 2, B_BYTES = BK * TILE_N * 2;
    constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    extern __shared__ uint8_t raw[];
    uint8_t* stage = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    __shared__ uint64_t full[STAGES], empty[STAGES];

    // Rasterize: groups of GROUP_COLS columns; within a group, strips vary slowest.
    const int strips_per_row = p.bm / TILE_M, strips = p.block_rows * strips_per_row;
    const int tiles_n = (p.n + TILE_N - 1) / TILE_N, group = GROUP_COLS / TILE_N;
    const int g0 = blockIdx.x / (strips * group) * group, in_group = min(group, tiles_n - g0);
    const int rem = blockIdx.x - g0 * strips;
    const int strip = rem / in_group, tile_n = g0 + rem % in_group;
    const int ib = strip / strips_per_row, r0 = (strip % strips_per_row) * TILE_M, c0 = tile_n * TILE_N;
    const int jb_begin = p.indptr[ib], jb_end = p.indptr[ib + 1], k_steps = (jb_end - jb_begin) * (p.bk / BK);

    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();

    if (wg == 0) {  // producer
        registers_down<40>();
        if (threadIdx.x == 0) {
            for (int t = 0; t < k_steps; t++) {
                const int s = t % STAGES, jb = jb_begin + t / (p.bk / BK), q = (t % (p.bk / BK)) * BK;
                if (t >= STAGES) barrier_wait(&empty[s], ((t / STAGES) - 1) & 1);
                uint8_t* st = stage + s * STAGE_BYTES;
                barrier_expect(&full[s], STAGE_BYTES);
                tma_load_2d(st, (const TensorMap*)&a_map, &full[s], q, jb * p.bm + r0);
                const int b_row = p.indices[jb] * p.bk + q;
                for (int i = 0; i < TILE_N / 64; i++) tma_load_2d(st + A_BYTES + i * 8192, (const TensorMap*)&b_map, &full[s], c0 + i * 64, b_row);
            }
        }
        return;
    }
    registers_up<232>();
    const int g = wg - 1;
    const int a_off = TILE_M == 128 ? g * 64 * 128 : 0;  // bytes: 64 rows of 128 B
    const int b_off = TILE_M == 128 ? 0 : g * 2 * 8192;  // two 64-column boxes
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.f;
    for (int t = 0; t < k_steps; t++) {
        const int s = t % STAGES;
        barrier_wait(&full[s], (t / STAGES) & 1);
        const uint8_t* st = stage + s * STAGE_BYTES;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK / 16; k++)
            wgmma_m64k16<bf16, 128>(d, swizzled_desc<128>(st + a_off + k * 32, 16, 1024),
                             swizzled_desc<128>(st + A_BYTES + b_off + k * 16 * 128, 8192, 1024));
        wgmma_commit();
        wgmma_wait<0>();
        if (threadIdx.x % 32 == 0) barrier_arrive(&empty[s]);
    }
    // Epilogue: fragment row = 16 warp + lane / 4 (+ 8), column = 8 i + 2 (lane % 4) (+ 1).
    const int w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int row0 = ib * p.bm + r0 + (TILE_M == 128 ? g * 64 : 0) + w * 16 + lane / 4;
    const int col0 = c0 + (TILE_M == 128 ? 0 : g * 128) + 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < 16; i++) {
        const int col = col0 + 8 * i;
        if (col >= p.n) continue;
#pragma unroll
        for (int h = 0; h < 2; h++)
            *(__nv_bfloat162*)(p.c + (int64_t)(row0 + 8 * h) * p.ldc + col) = __floats2bfloat162_rn(d[4 * i + 2 * h], d[4 * i + 2 * h + 1]);
    }
}

// Reference: a thread per element of C, f32.
__global__ void reference(const int* indptr, const int* indices, const bf16* values, const bf16* b, int bm, int bk,
                          int rows, int n, float* c) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (col >= n || row >= rows) return;
    const int ib = row / bm, r = row % bm;
    float acc = 0;
    for (int jb = indptr[ib]; jb < indptr[ib + 1]; jb++)
        for (int q = 0; q < bk; q++)
            acc += __bfloat162float(values[((int64_t)jb * bm + r) * bk + q]) *
                   __bfloat162float(b[((int64_t)indices[jb] * bk + q) * n + col]);
    c[(int64_t)row * n + col] = acc;
}

struct Problem {
    int m, k, n, bm, bk;
    double density;
};

void run(Problem pr, bool time_it) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1, 1);
    const int block_rows = pr.m / pr.bm, block_cols = pr.k / pr.bk;
    std::vector<int> indptr{0}, indices;
    std::bernoulli_distribution keep(pr.density);
    for (int i = 0; i < block_rows; i++) {
        if (i == 1) {  // an empty block row
            indptr.push_back((int)indices.size());
            continue;
        }
        for (int j = 0; j < block_cols; j++)
            if (keep(rng) || i == 2) indices.push_back(j);  // row 2 full
        indptr.push_back((int)indices.size());
    }
    const int64_t nnzb = indices.size();
    std::vector<bf16> values(nnzb * pr.bm * pr.bk), b((int64_t)pr.k * pr.n);
    for (auto& v : values) v = __float2bfloat16(u(rng));
    for (auto& v : b) v = __float2bfloat16(u(rng));
    int *d_indptr = upload(indptr), *d_indices = upload(indices);
    bf16 *d_values = upload(values), *d_b = upload(b), *d_c;
    float* d_ref;
    CK(cudaMalloc(&d_c, (int64_t)pr.m * pr.n * 2));
    CK(cudaMalloc(&d_ref, (int64_t)pr.m * pr.n * 4));
    CK(cudaMemset(d_c, 0xFF, (int64_t)pr.m * pr.n * 2));  // poison: NaN
    reference<<<dim3((pr.n + 127) / 128, pr.m), 128>>>(d_indptr, d_indices, d_values, d_b, pr.bm, pr.bk, pr.m, pr.n, d_ref);
    const int tile_m = pr.bm % 128 == 0 ? 128 : 64, tile_n = TILE_ELEMS / tile_m;
    const CUtensorMap a_map = tensor_map(d_values, pr.bk, nnzb * pr.bm, pr.bk * 2, BK, tile_m);
    const CUtensorMap b_map = tensor_map(d_b, pr.n, pr.k, (uint64_t)pr.n * 2, 64, BK);
    Bsr p{d_indptr, d_indices, block_rows, pr.bm, pr.bk, pr.n, pr.n, d_c};
    const int smem_bytes = STAGES * (tile_m * BK * 2 + BK * tile_n * 2) + 1024;
    const int blocks = (pr.m / tile_m) * ((pr.n + tile_n - 1) / tile_n);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    auto call = [&] {
        if (tile_m == 128) bsrmm_wgmma<128><<<blocks, 384, smem_bytes, s>>>(a_map, b_map, p);
        else bsrmm_wgmma<64><<<blocks, 384, smem_bytes, s>>>(a_map, b_map, p);
    };
    CK(cudaFuncSetAttribute(bsrmm_wgmma<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    CK(cudaFuncSetAttribute(bsrmm_wgmma<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    call();
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    std::vector<bf16> got((int64_t)pr.m * pr.n);
    std::vector<float> ref(got.size());
    CK(cudaMemcpy(got.data(), d_c, got.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ref.data(), d_ref, ref.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    int64_t worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double e = fabs(__bfloat162float(got[i]) - ref[i]) / (1 + fabs(ref[i]));
        if (!(e <= err)) err = e, worst = i;
    }
    printf("M %d K %d N %d blocks %dx%d density %.3f (%ld blocks): max rel err %.2e at (%ld, %ld)", pr.m, pr.k, pr.n, pr.bm,
           pr.bk, pr.density, (long)nnzb, err, (long)(worst / pr.n), (long)(worst % pr.n));
    if (time_it) {
        Timing t = time_call(s, call);
        const double flops = 2.0 * nnzb * pr.bm * pr.bk * pr.n;
        printf("  %8.1f us  %6.1f TFLOP/s", t.event_us, flops / t.event_us * 1e-6);
    }
    printf("\n");
    CK(cudaFree(d_c));
    CK(cudaFree(d_ref));
    CK(cudaFree(d_values));
    CK(cudaFree(d_b));
}

int main() {
    run({512, 1024, 384, 64, 64, 0.3}, false);
    run({512, 1024, 320, 128, 128, 0.3}, false);
    run({512, 1024, 256, 128, 64, 0.3}, false);
    run({512, 1024, 200, 64, 128, 0.3}, false);
    for (int bs : {64, 128})
        for (double density : {0.015, 0.10, 0.25, 0.50}) run({8192, 8192, 8192, bs, bs, density}, true);
    return 0;
}
