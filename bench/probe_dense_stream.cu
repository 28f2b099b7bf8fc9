// What rate W's stream alone reaches in dense_mm:wgmma's shape (bench/NOTES.md, "Dense mm N: the
// W stream, the consumers and the fixed costs"): a persistent grid of one 384-thread CTA per SM,
// a producer thread loading ROWS-row TMA boxes of 128 bytes (BOXES of them side by side a step:
// ROWS x 128 x BOXES bytes) into a ring, eight consumer warps waiting for each stage and freeing
// it, the (row band, step) units split evenly over the CTAs as the kernel does. No MMA. EMODE
// adds E's stages (TMA boxes of a k x 128 bf16 matrix, or built from S by three producer
// warps); FRAGMENTS has the consumers load the f32 A fragments as the kernel does. Beside it, a
// plain 16-byte-load sum of W (W.sum's pattern). TRANS walks W as dense_mm:wgmma's T does: units
// of (strip of 32 x BOXES columns, step of ROWS rows), a CTA's share down its strips. GATHER=1
// streams only listed rows of W the same way (bench/NOTES.md, "Dense mm T on the rows the events
// select"): a copy per listed row (`cp.async.bulk`, 512 bytes of the strip) from 64 producer
// threads into rows padded to 528 bytes, against the 2-D boxes over every row.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_dense_stream.cu -lcuda -o /tmp/ps && /tmp/ps
//   (TRANS=1, PROMOTION=0|128|256, GATHER=1: see below)
#define EVS_PROBE  // no module flag (kernels/common.cuh)
#include "probe.cuh"

#include <cuda.h>

#include "../kernels/hopper.cuh"

using namespace hopper;

constexpr int RING = 192 * 1024, NT = 128;  // shared memory for the rings; E's columns (n = 100 padded)
enum EMode { NO_E, E_TMA, E_FROM_S };

// E's 0/1 values for rows [r0, r0 + rows) of S (bool, k x n, row stride n) as TMA writes a
// 128-byte-swizzled box of 64 bf16 columns: warps 1-3 of the producer warpgroup, lane l columns
// 4l .. 4l + 3 (one 4-byte load of S where its rows are 4-byte aligned), a row per warp in turn.
__device__ void e_from_s(uint8_t* e, const uint8_t* s, int k, int n, int r0, int rows) {
    const int lane = threadIdx.x % 32, c = 4 * lane, box = c / 64, chunk = c % 64 / 8, half = c % 8 / 4;
    for (int r = threadIdx.x / 32 - 1; r < rows; r += 3) {
        const int64_t row = r0 + r;
        uint32_t bits = 0;
        if (row < k) {
            if (n % 4 == 0 && c + 4 <= n) bits = *(const uint32_t*)(s + row * n + c);
            else for (int j = 0; j < 4; j++) bits |= (uint32_t)(c + j < n ? s[row * n + c + j] : 0) << (8 * j);
        }
        uint2 v;  // four bf16 ones or zeros
        v.x = (bits & 0xff ? 0x3f80u : 0) | (bits & 0xff00 ? 0x3f800000u : 0);
        v.y = (bits & 0xff0000 ? 0x3f80u : 0) | (bits & 0xff000000 ? 0x3f800000u : 0);
        *(uint2*)(e + box * rows * 128 + r * 128 + ((chunk ^ r % 8) << 4) + half * 8) = v;
    }
}

// A consumer thread's f32 A fragments of a stage as dense_mm:wgmma reads them (ROWS = 128, two
// 128-byte boxes a step; 16 8-byte loads through the 128-byte swizzle), summed.
__device__ float fragments(const uint8_t* w) {
    const int lane = threadIdx.x % 32, r = (threadIdx.x / 128 - 1) * 64 + threadIdx.x / 32 % 4 * 16 + lane / 4;
    auto at = [&](int kq, int row, int col) {
        col += kq % 2 * 16;
        return *(const float2*)(w + kq / 2 * 128 * 128 + row * 128 + ((col / 4 ^ row % 8) << 4) + col % 4 * 4);
    };
    float2 sum = {0, 0};
#pragma unroll
    for (int kq = 0; kq < 4; kq++) {
        const int c = 2 * (lane % 4);
        const float2 v[4] = {at(kq, r, c), at(kq, r + 8, c), at(kq, r, c + 8), at(kq, r + 8, c + 8)};
        for (int j = 0; j < 4; j++) sum.x += v[j].x, sum.y += v[j].y;
    }
    return sum.x + sum.y;
}

template <int ROWS, int BOXES, int EMODE, int W_RING, bool FRAGMENTS = false, bool TRANS = false>
__global__ void __launch_bounds__(384, 1)
    stream_w(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap e_map, const uint8_t* spikes, int m,
             int k, int n, float* sink) {
    constexpr int STAGE = ROWS * 128 * BOXES, STAGES = W_RING / STAGE, STEP_COLS = 32 * BOXES;
    constexpr int E_STAGE = STEP_COLS * NT * 2, E_STAGES = EMODE == NO_E ? 1 : (RING - W_RING) / E_STAGE;
    static_assert(EMODE == NO_E || E_STAGES >= 2, "two E stages");
    extern __shared__ uint8_t raw[];
    uint8_t* ring = (uint8_t*)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    uint8_t* e_ring = ring + W_RING;
    __shared__ uint64_t full[STAGES], empty[STAGES], e_full[E_STAGES], e_empty[E_STAGES];
    const int64_t steps = TRANS ? (k + ROWS - 1) / ROWS : (k + STEP_COLS - 1) / STEP_COLS;
    const int64_t units = (int64_t)(TRANS ? (m + STEP_COLS - 1) / STEP_COLS : (m + ROWS - 1) / ROWS) * steps;
    const int64_t begin = blockIdx.x * units / gridDim.x, end = (blockIdx.x + 1) * units / gridDim.x;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        for (int s = 0; s < E_STAGES; s++) barrier_init(&e_full[s], EMODE == E_FROM_S ? 3 : 1), barrier_init(&e_empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
        const bool w_thread = threadIdx.x == 0;
        if (!w_thread && (EMODE == NO_E || (EMODE == E_TMA && threadIdx.x != 32) || (EMODE == E_FROM_S && threadIdx.x < 32)))
            return;
        for (int64_t x = begin, t = 0; x < end; x++, t++) {
            const int row = (int)(TRANS ? x % steps * ROWS : x / steps * ROWS);
            const int col = (int)(TRANS ? x / steps * STEP_COLS : x % steps * STEP_COLS);
            if (w_thread) {
                const int s = t % STAGES;
                if (t >= STAGES) barrier_wait(&empty[s], (t / STAGES - 1) & 1);
                barrier_expect(&full[s], STAGE);
                for (int b = 0; b < BOXES; b++)
                    tma_load_2d(ring + s * STAGE + b * ROWS * 128, (const TensorMap*)&map, &full[s], col + 32 * b, row);
                continue;
            }
            const int s = t % E_STAGES;
            if (t >= E_STAGES) barrier_wait(&e_empty[s], (t / E_STAGES - 1) & 1);
            if (EMODE == E_TMA) {
                barrier_expect(&e_full[s], E_STAGE);
                for (int b = 0; b < NT / 64; b++)
                    tma_load_2d(e_ring + s * E_STAGE + b * STEP_COLS * 128, (const TensorMap*)&e_map, &e_full[s], 64 * b, col);
            } else {
                e_from_s(e_ring + s * E_STAGE, spikes, k, n, col, STEP_COLS);
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // for wgmma's reads
                __syncwarp();
                if (threadIdx.x % 32 == 0) barrier_arrive(&e_full[s]);
            }
        }
        return;
    }
    float keep = 0;
    for (int64_t x = begin, t = 0; x < end; x++, t++) {
        const int s = t % STAGES, se = t % E_STAGES;
        barrier_wait(&full[s], (t / STAGES) & 1);
        if (EMODE != NO_E) barrier_wait(&e_full[se], (t / E_STAGES) & 1);
        keep += FRAGMENTS ? fragments(ring + s * STAGE) : ((const float*)(ring + s * STAGE))[threadIdx.x];
        if (EMODE != NO_E) keep += ((const float*)(e_ring + se * E_STAGE))[threadIdx.x];
        __syncwarp();
        if (threadIdx.x % 32 == 0) {
            barrier_arrive(&empty[s]);
            if (EMODE != NO_E) barrier_arrive(&e_empty[se]);
        }
    }
    if (keep == 12345.f) *sink = keep;  // never: keeps the reads
}

// T's stream over the listed rows only: units of (strip of 128 f32 columns, step of 64 listed
// rows), split over the CTAs as the kernel does; producer warps 0-1 copy a step's rows, one
// row's strip a thread, into rows GATHER_ROW_BYTES + 16 apart (the padding a fragment read
// needs for distinct banks).
constexpr int GATHER_STEP = 64, GATHER_ROW_BYTES = 512, GATHER_PITCH = GATHER_ROW_BYTES + 16;
__global__ void __launch_bounds__(384, 1)
    gather_w(const float* w, int m, const int* rows, int listed, float* sink) {
    constexpr int STAGE = GATHER_STEP * GATHER_PITCH, STAGES = RING / STAGE;
    extern __shared__ uint8_t raw[];
    uint8_t* ring = (uint8_t*)(((uintptr_t)raw + 127) & ~(uintptr_t)127);
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int64_t steps = (listed + GATHER_STEP - 1) / GATHER_STEP, strips = (int64_t)m * 4 / GATHER_ROW_BYTES;
    const int64_t units = strips * steps;
    const int64_t begin = blockIdx.x * units / gridDim.x, end = (blockIdx.x + 1) * units / gridDim.x;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) barrier_init(&full[s], 1), barrier_init(&empty[s], 8);
        barrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
        if (threadIdx.x >= GATHER_STEP) return;
        for (int64_t x = begin, t = 0; x < end; x++, t++) {
            const int s = t % STAGES;
            const int64_t strip = x / steps, first = x % steps * GATHER_STEP;
            const int here = (int)min((int64_t)GATHER_STEP, listed - first);
            if (t >= STAGES) barrier_wait(&empty[s], (t / STAGES - 1) & 1);
            if (threadIdx.x == 0) barrier_expect(&full[s], here * GATHER_ROW_BYTES);
            if (threadIdx.x < here) {
                const float* src = w + (int64_t)rows[first + threadIdx.x] * m + strip * (GATHER_ROW_BYTES / 4);
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                        smem_addr(ring + s * STAGE + threadIdx.x * GATHER_PITCH)),
                    "l"(src), "r"(GATHER_ROW_BYTES), "r"(smem_addr(&full[s]))
                    : "memory");
            }
        }
        return;
    }
    float keep = 0;
    for (int64_t x = begin, t = 0; x < end; x++, t++) {
        const int s = t % STAGES;
        barrier_wait(&full[s], (t / STAGES) & 1);
        keep += ((const float*)(ring + s * STAGE))[threadIdx.x];
        __syncwarp();
        if (threadIdx.x % 32 == 0) barrier_arrive(&empty[s]);
    }
    if (keep == 12345.f) *sink = keep;  // never: keeps the reads
}

// Random-looking floats in [-1, 1) (a hash of the index): zeros would stream faster than real data.
__global__ void fill(float* w, int64_t len) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < len; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32);
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        w[i] = (float)(h >> 8) / 8388608.0f - 1.0f;
    }
}

__global__ void sum_w(const float4* w, int64_t groups, float* sink) {
    float4 acc = {0, 0, 0, 0};
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < groups; i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = w[i];
        acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    if (acc.x + acc.y + acc.z + acc.w == 12345.f) *sink = acc.x;
}

// PROMOTION=0 / 128 / 256 (the default): the bytes each L2 miss is widened to
static CUtensorMapL2promotion promotion() {
    const char* p = getenv("PROMOTION");
    const int bytes = p ? atoi(p) : 256;
    return bytes == 0 ? CU_TENSOR_MAP_L2_PROMOTION_NONE : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                                        : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
}

static CUtensorMap map_of(const void* p, CUtensorMapDataType type, int rows, int cols, int row_bytes, int box_rows,
                          int box_cols) {
    CUtensorMap map;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)row_bytes};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows}, unit[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&map, type, 2, (void*)p, dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_128B, promotion(),
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) printf("cuTensorMapEncodeTiled: %d\n", (int)r), exit(1);
    return map;
}

int sms;
struct Problem {
    const float* w;
    const uint8_t* s;  // S, k x n bool
    const void* e;     // E, k x NT bf16
    int m, k, n;
    float* sink;
    cudaStream_t stream;
};

template <int ROWS, int BOXES, int EMODE = NO_E, int W_RING = RING, bool FRAGMENTS = false, bool TRANS = false>
void run(const char* name, const Problem& p) {
    const CUtensorMap map = map_of(p.w, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, p.m, p.k, p.k * 4, ROWS, 32);
    const CUtensorMap e_map = map_of(p.e, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, NT, NT * 2, 32 * BOXES, 64);
    auto kernel = stream_w<ROWS, BOXES, EMODE, W_RING, FRAGMENTS, TRANS>;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, RING + 1024));
    const Timing t = time_call(p.stream, [&] { kernel<<<sms, 384, RING + 1024, p.stream>>>(map, e_map, p.s, p.m, p.k, p.n, p.sink); });
    CK(cudaGetLastError());
    printf("  %-40s %7.1f us  %5.0f GB/s\n", name, t.graph_us, (double)p.m * p.k * 4 / t.graph_us / 1e3);
}

// GATHER=1: W 10000² f32 streamed down strips of 128 columns over every row by 2-D boxes, then
// by row copies over every row, 63 % and 9.5 % of them (the rows that S 10000 x 100 selects at
// 1 % and 0.1 %), picked at random and listed in order.
void gather_rows(const Problem& p) {
    const int m = p.m;
    run<64, 4, NO_E, 96 * 1024, false, true>("2-D boxes 64 x 512 B, every row", p);
    auto kernel = gather_w;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, RING + 128));
    srand(1);
    for (double share : {1.0, 0.634, 0.095}) {
        std::vector<int> rows;
        for (int r = 0; r < m; r++)
            if (share == 1.0 || rand() < share * RAND_MAX) rows.push_back(r);
        int* listed = upload(rows);
        const int count = (int)rows.size();
        const Timing t = time_call(p.stream, [&] { kernel<<<sms, 384, RING + 128, p.stream>>>(p.w, m, listed, count, p.sink); });
        CK(cudaGetLastError());
        char name[64];
        snprintf(name, sizeof name, "row copies, %d rows listed", count);
        printf("  %-40s %7.1f us  %5.0f GB/s\n", name, t.graph_us, (double)count * m * 4 / t.graph_us / 1e3);
        CK(cudaFree(listed));
    }
}

int main() {
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Problem p;
    CK(cudaStreamCreate(&p.stream));
    CK(cudaMalloc(&p.sink, 4));
    if (getenv("GATHER")) {  // T's strips over listed rows of W 10000² f32
        p.m = p.k = 10000, p.n = 100;
        float* w;
        CK(cudaMalloc(&w, (size_t)p.m * p.m * 4));
        fill<<<sms * 8, 256, 0, p.stream>>>(w, (int64_t)p.m * p.m);
        p.w = w, p.s = nullptr, p.e = w;  // E unused (NO_E)
        printf("W %d x %d f32, listed rows, graph us per call:\n", p.m, p.m);
        gather_rows(p);
        return 0;
    }
    for (int m : {10000, 5000, 20000}) {
        p.m = p.k = m, p.n = 100;
        float* w;
        uint8_t* s;
        void* emat;
        CK(cudaMalloc(&w, (size_t)m * m * 4));
        if (getenv("ZEROS")) CK(cudaMemset(w, 0, (size_t)m * m * 4));
        else fill<<<sms * 8, 256, 0, p.stream>>>(w, (int64_t)m * m);
        CK(cudaMalloc(&s, (size_t)m * p.n));
        CK(cudaMemset(s, 1, (size_t)m * p.n));
        CK(cudaMalloc(&emat, (size_t)m * NT * 2));
        CK(cudaMemset(emat, 0, (size_t)m * NT * 2));
        p.w = w, p.s = s, p.e = emat;
        printf("W %d x %d f32 (%.0f MB), graph us per call:\n", m, m, (double)m * m * 4 / 1e6);
        const Timing t = time_call(p.stream, [&] { sum_w<<<sms * 8, 256, 0, p.stream>>>((const float4*)w, (int64_t)m * m / 4, p.sink); });
        printf("  %-40s %7.1f us  %5.0f GB/s\n", "16-byte load sum", t.graph_us, (double)m * m * 4 / t.graph_us / 1e3);
        if (getenv("TRANS")) {
            run<128, 2, NO_E, 96 * 1024>("N 128 x 256 B, 3 stages", p);
            run<64, 4, NO_E, 96 * 1024, false, true>("T 64 x 512 B, 3 stages (kernel)", p);
            run<64, 4, NO_E, 128 * 1024, false, true>("T 64 x 512 B, 4 stages", p);
            run<128, 4, NO_E, 128 * 1024, false, true>("T 128 x 512 B, 2 stages", p);
            run<32, 8, NO_E, 96 * 1024, false, true>("T 32 x 1 KB, 3 stages", p);
            run<64, 8, NO_E, 128 * 1024, false, true>("T 64 x 1 KB, 2 stages", p);
            run<64, 2, NO_E, 96 * 1024, false, true>("T 64 x 256 B, 6 stages", p);
            run<128, 2, NO_E, 96 * 1024, false, true>("T 128 x 256 B, 3 stages", p);
            CK(cudaFree(w));
            CK(cudaFree(s));
            CK(cudaFree(emat));
            continue;
        }
        run<128, 2>("128 x 256 B, 6 stages", p);
        run<128, 2, NO_E, 128 * 1024>("128 x 256 B, 4 stages", p);
        run<128, 2, NO_E, 96 * 1024>("128 x 256 B, 3 stages", p);
        run<128, 2, E_TMA, 128 * 1024>("128 x 256 B, 4 + E TMA 4", p);
        run<128, 2, E_TMA, 96 * 1024>("128 x 256 B, 3 + E TMA 6 (kernel)", p);
        run<128, 2, E_TMA, 96 * 1024, true>("the same, consumers read fragments", p);
        run<128, 2, E_FROM_S, 128 * 1024>("128 x 256 B, 4 + E from S 4", p);
        run<128, 4, E_TMA, 128 * 1024>("128 x 512 B, 2 + E TMA 2", p);
        run<64, 4, NO_E, 128 * 1024>("64 x 512 B, 4 stages", p);
        run<64, 4, E_TMA, 128 * 1024>("64 x 512 B, 4 + E TMA 2", p);
        run<32, 8>("32 x 1 KB, 6 stages", p);
        CK(cudaFree(w));
        CK(cudaFree(s));
        CK(cudaFree(emat));
    }
    return 0;
}
