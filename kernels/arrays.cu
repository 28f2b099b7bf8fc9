// Whole-array helpers: fill (every dtype) and int64 -> int32 narrowing for csr_to_csc outputs.
#include "common.cuh"

__device__ __forceinline__ void put_value(u8* p, double v) { *p = v != 0.0; }
__device__ __forceinline__ void put_value(int* p, double v) { *p = (int)v; }
__device__ __forceinline__ void put_value(int64_t* p, double v) { *p = (int64_t)v; }
__device__ __forceinline__ void put_value(double* p, double v) { *p = v; }
template <class T> __device__ __forceinline__ void put_value(T* p, double v) { put(p, (float)v); }

// y[r, c] = alpha for every logical element of the m x n array (row stride ldy).
template <class T> __device__ void fill(const Args& a) {
    const int64_t total = a.m * a.n;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x)
        put_value((T*)a.y + (e / a.n) * a.ldy + e % a.n, a.alpha);
}

#define FILL(T, TN) EVS_KERNEL(fill_##TN, (256), fill<T>)
EVS_FOR_FLOATS(FILL)
FILL(u8, bool)
FILL(int, i32)
FILL(int64_t, i64)

// y[e] = (int32) x[e] for e < n; the values are known to fit.
__device__ void narrow(const Args& a) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < a.n; e += (int64_t)gridDim.x * blockDim.x)
        ((int*)a.y)[e] = (int)((const int64_t*)a.x)[e];
}
EVS_KERNEL(narrow_i64_i32, (256), narrow)
