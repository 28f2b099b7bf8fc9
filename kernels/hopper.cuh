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

// d (64 x N f32, the warpgroup's fragment) += A (64 x 16, K-major) · B (16 x N, N-major), both
// from shared memory; T is f16 or bf16, N 128 or 256 (64 or 128 accumulators a thread).
#define WGMMA_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WGMMA_M64N128K16(TYPE) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {" \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
                 "}, %64, %65, p, 1, 1, 0, 1;\n}" \
                 : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24), WGMMA_D8(32), WGMMA_D8(40), WGMMA_D8(48), WGMMA_D8(56) \
                 : "l"(a), "l"(b), "r"(1))
#define WGMMA_M64N256K16(TYPE) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {" \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
                 "}, %128, %129, p, 1, 1, 0, 1;\n}" \
                 : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24), WGMMA_D8(32), WGMMA_D8(40), WGMMA_D8(48), WGMMA_D8(56), WGMMA_D8(64), WGMMA_D8(72), WGMMA_D8(80), WGMMA_D8(88), WGMMA_D8(96), WGMMA_D8(104), WGMMA_D8(112), WGMMA_D8(120) \
                 : "l"(a), "l"(b), "r"(1))
template <class T, int N> __device__ __forceinline__ void wgmma_m64k16(float* d, uint64_t a, uint64_t b);
template <> __device__ __forceinline__ void wgmma_m64k16<bf16, 128>(float* d, uint64_t a, uint64_t b) { WGMMA_M64N128K16("bf16"); }
template <> __device__ __forceinline__ void wgmma_m64k16<f16, 128>(float* d, uint64_t a, uint64_t b) { WGMMA_M64N128K16("f16"); }
template <> __device__ __forceinline__ void wgmma_m64k16<bf16, 256>(float* d, uint64_t a, uint64_t b) { WGMMA_M64N256K16("bf16"); }
template <> __device__ __forceinline__ void wgmma_m64k16<f16, 256>(float* d, uint64_t a, uint64_t b) { WGMMA_M64N256K16("f16"); }

// Moves registers from the producer warpgroup to the consumers (counts per thread).
template <int R> __device__ __forceinline__ void registers_up() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
template <int R> __device__ __forceinline__ void registers_down() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }

}  // namespace hopper
