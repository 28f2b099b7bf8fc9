// spmv / spmm on CSR, N and T, float or event inputs (SPEC §3.1).
//
// Gather kernels compute one output row per warp from a list of entries: CSR row i for N, CSC
// column c (through the cached mirror) for T. Scatter kernels (T, f32/f64 only) walk the CSR
// rows whose input is non-zero and add into the output with atomics, after a scaling pass that
// applies beta: inactive events cost one load, which is what spike propagation needs.
#include "common.cuh"

// Entries feeding output row i, for N: CSR row i reading x[indices[p]].
struct CsrWalk {
    __device__ static int64_t rows(const Args& a) { return a.m; }
    __device__ static int64_t begin(const Args& a, int64_t i) { return row_start(a, i); }
    __device__ static int64_t end(const Args& a, int64_t i) { return row_start(a, i + 1); }
    __device__ static int64_t source(const Args& a, int64_t p) { return a.indices[p]; }
    __device__ static int64_t entry(const Args&, int64_t p) { return p; }
};

// For T: CSC column c, reading x[rowind[p]] with the weight of CSR entry perm[p].
struct CscWalk {
    __device__ static int64_t rows(const Args& a) { return a.k; }
    __device__ static int64_t begin(const Args& a, int64_t c) { return a.colptr[c]; }
    __device__ static int64_t end(const Args& a, int64_t c) { return a.colptr[c + 1]; }
    __device__ static int64_t source(const Args& a, int64_t p) { return a.rowind[p]; }
    __device__ static int64_t entry(const Args& a, int64_t p) { return a.perm[p]; }
};

// One warp per output element: lanes stride over the entries, then a warp sum.
template <class T, class In, class Walk> __device__ void gather_mv(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t i = warp_id();
    if (i >= Walk::rows(a)) return;
    A acc = 0;
    for (int64_t p = Walk::begin(a, i) + lane_id(); p < Walk::end(a, i); p += 32) {
        A v = input<A>((const In*)a.x, Walk::source(a, p) * a.ldx, a.events);
        if (v != A(0)) acc += weight<T, A>(a, Walk::entry(a, p)) * v;
    }
    acc = warp_sum(acc);
    if (lane_id() == 0) blend((T*)a.y + i * a.ldy, acc, a);
}

// One warp per (output row, 64 columns): lane l owns columns l and l + 32, so loads of x and
// stores of y coalesce. The warp fetches 32 entries at a time (one per lane, coalesced) and
// broadcasts each entry's source row and weight with shuffles.
template <class T, class In, class Walk> __device__ void gather_mm(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t i = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (i >= Walk::rows(a)) return;  // whole warps only: the shuffles below need every lane
    const int lane = lane_id();
    const int64_t c0 = (int64_t)blockIdx.y * 64 + lane, c1 = c0 + 32;
    const int64_t end = Walk::end(a, i);
    A acc0 = 0, acc1 = 0;
    for (int64_t base = Walk::begin(a, i); base < end; base += 32) {
        int64_t src = 0;
        A w = 0;
        if (base + lane < end) {
            src = Walk::source(a, base + lane);
            w = weight<T, A>(a, Walk::entry(a, base + lane));
        }
        const int count = (int)min((int64_t)32, end - base);
        for (int e = 0; e < count; e++) {
            const In* x = (const In*)a.x + __shfl_sync(0xffffffffu, src, e) * a.ldx;
            const A we = __shfl_sync(0xffffffffu, w, e);
            if (c0 < a.n) {
                A v = input<A>(x, c0, a.events);
                if (v != A(0)) acc0 += we * v;
            }
            if (c1 < a.n) {
                A v = input<A>(x, c1, a.events);
                if (v != A(0)) acc1 += we * v;
            }
        }
    }
    if (c0 < a.n) blend((T*)a.y + i * a.ldy + c0, acc0, a);
    if (c1 < a.n) blend((T*)a.y + i * a.ldy + c1, acc1, a);
}

// y = beta * y over m x n (beta = 0 writes zeros without reading y): the first pass of scatter.
template <class T> __device__ void scale(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t total = a.m * a.n;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        T* slot = (T*)a.y + (e / a.n) * a.ldy + e % a.n;
        put(slot, a.beta == 0.0 ? A(0) : A(a.beta) * A(to_f(*slot)));
    }
}

// T, one warp per CSR row r whose input is non-zero: y[indices[p]] += alpha * w_p * x[r].
template <class T, class In> __device__ void scatter_mv(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t r = warp_id();
    if (r >= a.m) return;
    const A v = input<A>((const In*)a.x, r * a.ldx, a.events);
    if (v == A(0)) return;
    const A scaled = A(a.alpha) * v;
    for (int64_t p = row_start(a, r) + lane_id(); p < row_start(a, r + 1); p += 32)
        atomicAdd((T*)a.y + (int64_t)a.indices[p] * a.ldy, scaled * weight<T, A>(a, p));
}

// T with n columns, one warp per (CSR row, 32 columns); the warp skips rows with no live input.
template <class T, class In> __device__ void scatter_mm(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int64_t c = (int64_t)blockIdx.y * 32 + lane_id();
    if (r >= a.m) return;
    const A v = c < a.n ? input<A>((const In*)a.x, r * a.ldx + c, a.events) : A(0);
    if (!__any_sync(0xffffffffu, v != A(0))) return;
    const A scaled = A(a.alpha) * v;
    for (int64_t p = row_start(a, r); p < row_start(a, r + 1); p++)
        if (v != A(0)) atomicAdd((T*)a.y + (int64_t)a.indices[p] * a.ldy + c, scaled * weight<T, A>(a, p));
}

#define GATHER(T, TN, In, InN)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) spmv_n_##TN##_##InN(Args a) { gather_mv<T, In, CsrWalk>(a); } \
    extern "C" __global__ void __launch_bounds__(256) spmv_t_##TN##_##InN(Args a) { gather_mv<T, In, CscWalk>(a); } \
    extern "C" __global__ void __launch_bounds__(256) spmm_n_##TN##_##InN(Args a) { gather_mm<T, In, CsrWalk>(a); } \
    extern "C" __global__ void __launch_bounds__(256) spmm_t_##TN##_##InN(Args a) { gather_mm<T, In, CscWalk>(a); }
#define GATHER_ALL(T, TN) EVS_FOR_INPUTS(GATHER, T, TN)
EVS_FOR_FLOATS(GATHER_ALL)

#define SCATTER(T, TN, In, InN)                                                                                 \
    extern "C" __global__ void __launch_bounds__(256) spmv_scatter_##TN##_##InN(Args a) { scatter_mv<T, In>(a); } \
    extern "C" __global__ void __launch_bounds__(256) spmm_scatter_##TN##_##InN(Args a) { scatter_mm<T, In>(a); }
EVS_FOR_INPUTS(SCATTER, float, f32)
EVS_FOR_INPUTS(SCATTER, double, f64)

#define SCALE(T, TN) extern "C" __global__ void __launch_bounds__(256) scale_##TN(Args a) { scale<T>(a); }
EVS_FOR_FLOATS(SCALE)
