// Hopper (sm_90a) building blocks, thin wrappers over their PTX: mbarriers, TMA tile loads,
// shared-memory matrix descriptors and wgmma. Include only where __CUDA_ARCH_FEAT_SM90_ALL is
// defined (the fatbin's sm_90a pass); kernels built for other targets leave their body out.
#pragma once

#include "common.cuh"

namespace hopper {

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// ---------------------------------------------------------------- mbarriers
__device__ __forceinline__ void barrier_init(uint64_t* bar, int arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals));
}
// Makes the initialized barriers visible to the async (TMA) proxy.
__device__ __forceinline__ void barrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// Arrives and expects `bytes` of TMA transactions before the phase completes.
__device__ __forceinline__ void barrier_expect(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void barrier_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// Waits until the phase of parity `phase` has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* bar, uint32_t phase) {
    asm volatile(
        "{\n .reg .pred done;\n WAIT:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra WAIT;\n}" ::"r"(smem_addr(bar)),
        "r"(phase)
        : "memory");
}

// ---------------------------------------------------------------- TMA
// The box of a 2-D tensor map whose first element is (col, row), into shared memory at dst;
// its bytes complete on `bar`. Elements outside the tensor arrive as zeros (and still count).
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, uint64_t* bar, int col, int row) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
            smem_addr(dst)),
        "l"(map), "r"(smem_addr(bar)), "r"(col), "r"(row)
        : "memory");
}
// The same with an L2 cache policy (`l2_evict_first`).
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, uint64_t* bar, int col, int row,
                                            uint64_t policy) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, "
        "%4}], [%2], %5;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(smem_addr(bar)), "r"(col), "r"(row), "l"(policy)
        : "memory");
}

// `bytes` (a multiple of 16) from global src to shared dst, both on 16 bytes, completing on `bar`:
// a bulk copy, no tensor map (rows that are not consecutive, one copy each).
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar, uint64_t policy) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
}
// Orders this thread's earlier shared-memory stores before the async proxy's later accesses
// (a bulk copy that later writes the same bytes).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// An L2 policy for data read once: its lines go first, so that what is read again stays.
__device__ __forceinline__ uint64_t l2_evict_first() {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// ---------------------------------------------------------------- flags between CTAs
// Adds to a counter in global memory, ordered after the stores that the calling thread has seen
// (its own, and its CTA's before a barrier): the release half of a flag.
__device__ __forceinline__ void add_release(int* counter, int value) {
    asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(counter), "r"(value) : "memory");
}
// Waits until a counter in global memory reaches `value`; the stores counted in before it are
// then visible to the calling thread (and to its CTA after a barrier): the acquire half.
__device__ __forceinline__ void wait_acquire(const int* counter, int value) {
    int seen;
    do asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    while (seen < value);
}

// Four 8 x 8 matrices of 16-bit elements, transposed: lane l gives the address of row l % 8 of
// matrix l / 8 (16 bytes), and receives in a[j] the pair (row 2 (l % 4), + 1; column l / 4) of
// matrix j. With rows along K and 8 consecutive M elements each, that is the A fragment of a
// k16 slice (mma.sync's m16n8k16 layout) from a K-rows, M-contiguous tile.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&a)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(smem_addr(row)));
}

// ---------------------------------------------------------------- wgmma
// Descriptor of a wgmma operand in shared memory laid out as TMA's swizzle writes it: rows of
// ROW_BYTES (128, 64 or 32; atoms of 8 rows), `lead` and `stride` byte offsets as the PTX ISA's
// "Matrix Descriptor Format" defines them for the operand's major-ness.
template <int ROW_BYTES> __device__ __forceinline__ uint64_t swizzled_desc(const void* p, uint32_t lead, uint32_t stride) {
    static_assert(ROW_BYTES == 128 || ROW_BYTES == 64 || ROW_BYTES == 32, "128-, 64- and 32-byte swizzles");
    constexpr uint64_t layout = ROW_BYTES == 128 ? 1 : ROW_BYTES == 64 ? 2 : 3;
    return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | (uint64_t)(lead >> 4) << 16 | (uint64_t)(stride >> 4) << 32 |
           layout << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}

// The accumulators of an m64nNk16 wgmma as asm operands: N / 2 f32 registers a thread, listed
// as "%0, ..." (WG_REGS_<count>) and as "+f" constraints (WG_OUTS_<count>); the operands that
// follow them are numbered from <count> on.
#define WG_REGS_32 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_REGS_36 WG_REGS_32 ", %32, %33, %34, %35"
#define WG_REGS_40 WG_REGS_36 ", %36, %37, %38, %39"
#define WG_REGS_44 WG_REGS_40 ", %40, %41, %42, %43"
#define WG_REGS_48 WG_REGS_44 ", %44, %45, %46, %47"
#define WG_REGS_52 WG_REGS_48 ", %48, %49, %50, %51"
#define WG_REGS_56 WG_REGS_52 ", %52, %53, %54, %55"
#define WG_REGS_60 WG_REGS_56 ", %56, %57, %58, %59"
#define WG_REGS_64 WG_REGS_60 ", %60, %61, %62, %63"
#define WG_REGS_128 WG_REGS_64 ", " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_OUTS_32 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
#define WG_OUTS_36 WG_OUTS_32, WG_D4(32)
#define WG_OUTS_40 WG_OUTS_32, WG_D8(32)
#define WG_OUTS_44 WG_OUTS_40, WG_D4(40)
#define WG_OUTS_48 WG_OUTS_40, WG_D8(40)
#define WG_OUTS_52 WG_OUTS_48, WG_D4(48)
#define WG_OUTS_56 WG_OUTS_48, WG_D8(48)
#define WG_OUTS_60 WG_OUTS_56, WG_D4(56)
#define WG_OUTS_64 WG_OUTS_56, WG_D8(56)
#define WG_OUTS_128 WG_OUTS_64, WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88), WG_D8(96), WG_D8(104), WG_D8(112), WG_D8(120)

// d (64 x N f32, the warpgroup's fragment) += A (64 x 16) · B (16 x N, N-major), B from shared
// memory and A from shared memory (SS: descriptor a, K-major, or M-major where A_MN) or from
// registers (RS: four 32-bit registers a thread holding its 8 elements, rows lane / 4 (+ 8) of
// the warp's 16, columns 2 (lane % 4) (+ 1, + 8, + 9) as in mma.sync's m16n8k16 A fragment). T
// is f16 or bf16. A, B and P name the operands of A, B and the flag that sets scale-d (always 1:
// d accumulates); TA is A's transpose bit (1: M-major).
#define WGMMA_SS(N, TYPE, REGS, OUTS, A, B, P, TA)                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                                 \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, " A ", " B        \
                 ", p, 1, 1, " #TA ", 1;\n}"                                                                     \
                 : OUTS                                                                                         \
                 : "l"(a), "l"(b), "r"(1))
#define WGMMA_RS(N, TYPE, REGS, OUTS, A, B, P)                                                                  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                                 \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, " A ", " B        \
                 ", p, 1, 1, 1;\n}"                                                                              \
                 : OUTS                                                                                         \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
#define WGMMA_SS_SHAPES(TYPE, T, A_MN, TA)                                                                     \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 64, A_MN>(float* d, uint64_t a, uint64_t b) {    \
        WGMMA_SS(64, TYPE, WG_REGS_32, WG_OUTS_32, "%32", "%33", "%34", TA);                                       \
    }                                                                                                              \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 128, A_MN>(float* d, uint64_t a, uint64_t b) {   \
        WGMMA_SS(128, TYPE, WG_REGS_64, WG_OUTS_64, "%64", "%65", "%66", TA);                                      \
    }                                                                                                              \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 256, A_MN>(float* d, uint64_t a, uint64_t b) {   \
        WGMMA_SS(256, TYPE, WG_REGS_128, WG_OUTS_128, "%128", "%129", "%130", TA);                                 \
    }
#define WGMMA_SHAPES(TYPE, T)                                                                                  \
    WGMMA_SS_SHAPES(TYPE, T, false, 0)                                                                         \
    WGMMA_SS_SHAPES(TYPE, T, true, 1)                                                                          \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 64>(float* d, const uint32_t(&a)[4], uint64_t b) {  \
        WGMMA_RS(64, TYPE, WG_REGS_32, WG_OUTS_32, "{%32, %33, %34, %35}", "%36", "%37");                          \
    }                                                                                                              \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 128>(float* d, const uint32_t(&a)[4], uint64_t b) { \
        WGMMA_RS(128, TYPE, WG_REGS_64, WG_OUTS_64, "{%64, %65, %66, %67}", "%68", "%69");                         \
    }                                                                                                              \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, 256>(float* d, const uint32_t(&a)[4], uint64_t b) { \
        WGMMA_RS(256, TYPE, WG_REGS_128, WG_OUTS_128, "{%128, %129, %130, %131}", "%132", "%133");                 \
    }
// RS shapes between 64 and 128 columns (N a multiple of 8, R = N / 2 accumulators; A's
// registers and the descriptor numbered from R on): f32 dense mm's bf16 parts at n's width.
#define WGMMA_RS_NARROW(TYPE, T, N, R, A0, A1, A2, A3, B, P)                                                 \
    template <> __device__ __forceinline__ void wgmma_m64k16<T, N>(float* d, const uint32_t(&a)[4], uint64_t b) { \
        WGMMA_RS(N, TYPE, WG_REGS_##R, WG_OUTS_##R, "{%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}", "%" #B, "%" #P); \
    }
template <class T, int N, bool A_MN = false> __device__ __forceinline__ void wgmma_m64k16(float* d, uint64_t a, uint64_t b);
template <class T, int N> __device__ __forceinline__ void wgmma_m64k16(float* d, const uint32_t (&a)[4], uint64_t b);
WGMMA_SHAPES("f16", f16)
WGMMA_SHAPES("bf16", bf16)
// d (64 x N f32) += A (64 x 16, M-major) · B (16 x N, K-major), both from shared memory: the
// transposed product of bsrmm's short blocks (C^T = B^T A^T: B's box as A, the block's N rows as
// B). N = 32.
#define WG_REGS_16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define WG_OUTS_16 WG_D8(0), WG_D8(8)
#define WGMMA_MK(N, TYPE, T, R, A, B, P)                                                                    \
    template <> __device__ __forceinline__ void wgmma_m64k16_mk<T, N>(float* d, uint64_t a, uint64_t b) {    \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                          \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" WG_REGS_##R "}, " A  \
                     ", " B ", p, 1, 1, 1, 0;\n}"                                                             \
                     : WG_OUTS_##R                                                                            \
                     : "l"(a), "l"(b), "r"(1));                                                               \
    }
template <class T, int N> __device__ __forceinline__ void wgmma_m64k16_mk(float* d, uint64_t a, uint64_t b);
WGMMA_MK(32, "f16", f16, 16, "%16", "%17", "%18")
WGMMA_MK(32, "bf16", bf16, 16, "%16", "%17", "%18")
WGMMA_RS_NARROW("bf16", bf16, 72, 36, 36, 37, 38, 39, 40, 41)
WGMMA_RS_NARROW("bf16", bf16, 80, 40, 40, 41, 42, 43, 44, 45)
WGMMA_RS_NARROW("bf16", bf16, 88, 44, 44, 45, 46, 47, 48, 49)
WGMMA_RS_NARROW("bf16", bf16, 96, 48, 48, 49, 50, 51, 52, 53)
WGMMA_RS_NARROW("bf16", bf16, 104, 52, 52, 53, 54, 55, 56, 57)
WGMMA_RS_NARROW("bf16", bf16, 112, 56, 56, 57, 58, 59, 60, 61)
WGMMA_RS_NARROW("bf16", bf16, 120, 60, 60, 61, 62, 63, 64, 65)

// Stores a warpgroup's 64 x N f32 fragment d into C through blend (alpha, beta, rounding once):
// d[4i + 2h + e] is row lane / 4 + 8h of the warp's 16, column 8i + 2 (lane % 4) + e. `c` is
// this thread's first element (h = 0, i = e = 0); `rows` and `cols` count the valid rows and
// columns from there (rows past `rows`, columns past `cols` are dropped). Two elements a store
// where `pairs` says C's rows are Pair-aligned.
template <class TC, int N>
__device__ __forceinline__ void store_fragment(const float* d, TC* c, int64_t ldc, int64_t rows, int64_t cols, bool pairs,
                                               const Args& a) {
#pragma unroll
    for (int i = 0; i < N / 8; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (8 * h >= rows) continue;
            TC* slot = c + 8 * h * ldc + 8 * i;
            const int64_t left = cols - 8 * i;
            if (pairs && left >= 2) {
                Pair<TC> p = a.beta != 0.0 ? *(const Pair<TC>*)slot : Pair<TC>{};
                blend(&p.v[0], d[4 * i + 2 * h], a), blend(&p.v[1], d[4 * i + 2 * h + 1], a);
                *(Pair<TC>*)slot = p;
            } else {
                for (int e = 0; e < 2 && e < left; e++) blend(slot + e, d[4 * i + 2 * h + e], a);
            }
        }
}

// A warpgroup's 64 x N tile of 16-bit C, scaled by alpha and rounded (the whole of blend where
// beta = 0), held in registers while the next tile's wgmmas run: its stores are issued a chunk
// of N / 4 columns at a time in the MMA loop's shadow instead of in a burst after it. v[2i + h]
// holds row lane / 4 + 8h, columns 8i + 2 (lane % 4) + {0, 1} (store_fragment's layout, packed
// in pairs); C's rows must be Pair-aligned. Where the warp's 16 rows x N are all inside C and
// rows start on 16 bytes (`whole`), the four lanes of a quad swap words once so that each holds,
// in v[2i + h] for i = 4g .. 4g + 3, the 8 columns 8 (4g + lane % 4) of its row: then every
// store fills whole 32-byte sectors (pairs fill half a sector each, and cost L2 and DRAM twice
// the write operations).
template <class TC, int N> struct HeldTile {
    static constexpr int CHUNKS = 4;
    static_assert(N / 8 % CHUNKS == 0, "whole chunks");
    uint32_t v[N / 4];
    TC* c;           // this thread's first element (row lane / 4, column 2 (lane % 4))
    int64_t ldc;
    int rows, cols;  // valid from c
    int next;        // chunks stored
    bool whole;      // warp-uniform: every row and column valid, rows 16-byte aligned

    __device__ __forceinline__ void hold(const float* d, TC* c_, int64_t ldc_, int64_t rows_, int64_t cols_, float alpha,
                                         bool whole_) {
#pragma unroll
        for (int i = 0; i < N / 8; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                v[2 * i + h] = rounded_bits(alpha * d[4 * i + 2 * h]) | rounded_bits(alpha * d[4 * i + 2 * h + 1]) << 16;
        c = c_, ldc = ldc_, next = 0, whole = whole_ && N / 8 / CHUNKS % 4 == 0;
        rows = (int)min(rows_, (int64_t)16), cols = (int)max(min(cols_, (int64_t)N), (int64_t)0);
        // (shuffles outside any branch: in one, ptxas serializes the next tile's wgmmas)
#pragma unroll
        for (int i = 0; i < N / 8; i += 4)
#pragma unroll
            for (int h = 0; h < 2; h++)
                swap_in_quad(v[2 * i + h], v[2 * i + 2 + h], v[2 * i + 4 + h], v[2 * i + 6 + h], whole);
    }
    // Stores chunk K (a template argument: v is indexed by constants and stays in registers).
    template <int K> __device__ __forceinline__ void store_chunk() {
        constexpr int I0 = K * N / 8 / CHUNKS, I1 = (K + 1) * N / 8 / CHUNKS;  // its 8-column groups
        if (whole) {
            const int q = threadIdx.x % 4;
#pragma unroll
            for (int i = I0; i < I1; i += 4)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const uint4 run = {v[2 * i + h], v[2 * i + 2 + h], v[2 * i + 4 + h], v[2 * i + 6 + h]};
                    *(uint4*)(c - 2 * q + 8 * h * ldc + 8 * (i + q)) = run;  // columns 8 (i + q) ..
                }
            return;
        }
#pragma unroll
        for (int i = I0; i < I1; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                if (8 * h >= rows || 8 * i >= cols) continue;
                TC* slot = c + 8 * h * ldc + 8 * i;
                if (8 * i + 2 <= cols) *(uint32_t*)slot = v[2 * i + h];
                else *(uint16_t*)slot = (uint16_t)v[2 * i + h];  // the last column alone
            }
    }
    // Stores the next chunk (none once all are out).
    __device__ __forceinline__ void store_next() {
        switch (next++) {
            case 0: store_chunk<0>(); break;
            case 1: store_chunk<1>(); break;
            case 2: store_chunk<2>(); break;
            case 3: store_chunk<3>(); break;
        }
    }
    // Stores every chunk not yet out.
    __device__ __forceinline__ void store_rest() {
        switch (next) {
            case 0: store_chunk<0>(); [[fallthrough]];
            case 1: store_chunk<1>(); [[fallthrough]];
            case 2: store_chunk<2>(); [[fallthrough]];
            case 3: store_chunk<3>();
        }
        next = CHUNKS;
    }

  private:
    // w_j holds lane q's pair of columns 2q, 2q + 1 of group j (of four); after, where `swap`,
    // lane q holds group q's pairs of lanes j = 0 .. 3 in w_j. Round k: lane q sends its pair of
    // group (q - k) & 3 and receives lane (q + k) & 3's pair of group q.
    static __device__ __forceinline__ void swap_in_quad(uint32_t& w0, uint32_t& w1, uint32_t& w2, uint32_t& w3,
                                                        bool swap) {
        const int q = threadIdx.x % 4;
        const uint32_t r0 = pick(w0, w1, w2, w3, q);
        const uint32_t r1 = __shfl_sync(~0u, pick(w0, w1, w2, w3, (q + 3) & 3), (q + 1) & 3, 4);
        const uint32_t r2 = __shfl_sync(~0u, pick(w0, w1, w2, w3, (q + 2) & 3), (q + 2) & 3, 4);
        const uint32_t r3 = __shfl_sync(~0u, pick(w0, w1, w2, w3, (q + 1) & 3), (q + 3) & 3, 4);
        // lane j's pair is r[(j - q) & 3]
        if (swap) {
            w0 = pick(r0, r3, r2, r1, q), w1 = pick(r1, r0, r3, r2, q);
            w2 = pick(r2, r1, r0, r3, q), w3 = pick(r3, r2, r1, r0, q);
        }
    }
    // x[j] of four registers, by selects (an array indexed by a lane's value would go to memory).
    static __device__ __forceinline__ uint32_t pick(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, int j) {
        return j == 0 ? x0 : j == 1 ? x1 : j == 2 ? x2 : x3;
    }
    // The bits of v rounded to TC (no address taken: v stays in registers).
    static __device__ __forceinline__ uint32_t rounded_bits(float v) {
        if constexpr (std::is_same_v<TC, bf16>) return __bfloat16_as_ushort(__float2bfloat16_rn(v));
        else return __half_as_ushort(__float2half_rn(v));
    }
};

// Moves registers from the producer warpgroup to the consumers (counts per thread).
template <int R> __device__ __forceinline__ void registers_up() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
template <int R> __device__ __forceinline__ void registers_down() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }

}  // namespace hopper
