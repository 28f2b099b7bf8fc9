// yw2y: one value per stored entry, out[b, j] = w_j * y[b, row(j)] (N) or y[b, indices[j]] (T),
// with per-batch weights replacing w_j when given (SPEC §3.2).
//
// N is a pure stream (weights in, out written): it moves 16-byte vectors of V entries with
// streaming (evict-first) loads and stores, several in flight per lane, wherever the bases allow
// it (checked on the device: a vector starting at a multiple of V is aligned iff its bases are);
// the rest goes element by element. T is bound by its gathers of y (below).
#include "common.cuh"

constexpr int YW2Y_UNROLL = 4;  // 16-byte vectors in flight per lane (N)

// V entries of T in one 16-byte vector.
template <class T> struct alignas(16) Pack {
    static constexpr int V = 16 / sizeof(T);
    T e[V];
};

template <class T> __device__ __forceinline__ Pack<T> load_stream(const T* p) {
    const uint4 raw = __ldcs((const uint4*)p);
    return *reinterpret_cast<const Pack<T>*>(&raw);
}

template <class T> __device__ __forceinline__ void store_stream(T* p, const Pack<T>& v) {
    __stcs((uint4*)p, *reinterpret_cast<const uint4*>(&v));
}

__device__ __forceinline__ bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

// The weights of batch b: its per-batch row (aux) if given, the CSR's, or NULL (homogeneous).
template <class T> __device__ __forceinline__ const T* batch_weights(const Args& a, int64_t b) {
    return a.aux ? (const T*)a.aux + b * a.ldaux : (const T*)a.weights;
}

template <class T, class A> __device__ __forceinline__ A weight_at(const Args& a, const T* w, int64_t p) {
    return w ? A(to_f(w[p])) : A(a.homo);
}

// out[0..V) = alpha * w[0..V) * y[0..V) + beta * out[0..V), one vector.
template <class T, class A>
__device__ __forceinline__ void blend_pack(T* out, const Pack<T>& w, bool homo, const A (&yv)[Pack<T>::V], const Args& a) {
    Pack<T> old, r;
    if (a.beta != 0.0) old = *reinterpret_cast<const Pack<T>*>(out);
#pragma unroll
    for (int j = 0; j < Pack<T>::V; ++j) {
        A v = A(a.alpha) * ((homo ? A(a.homo) : A(to_f(w.e[j]))) * yv[j]);
        if (a.beta != 0.0) v += A(a.beta) * A(to_f(old.e[j]));
        put(&r.e[j], v);
    }
    store_stream(out, r);
}

// The batches of one group: a thread reads an entry's weight and index once and writes the
// group's outputs (per-batch weights are read per batch).
constexpr int64_t YW2Y_BATCH_GROUP = 8;

__device__ __forceinline__ int64_t group_end(const Args& a, int64_t b0) { return min(a.batches, b0 + YW2Y_BATCH_GROUP); }

// Whether batch b's vectors can move whole: its bases 16-byte aligned.
template <class T> __device__ __forceinline__ bool vectors_fit(const Args& a, int64_t b) {
    const T* w = batch_weights<T>(a, b);
    return aligned16((T*)a.y + b * a.ldy) && (!w || aligned16(w));
}

// The vectors of a group: whole vectors for all its batches, or none.
template <class T> __device__ __forceinline__ bool group_vectors(const Args& a, int64_t b0) {
    bool fit = true;
    for (int64_t b = b0; b < group_end(a, b0); ++b) fit = fit && vectors_fit<T>(a, b);
    return fit;
}

// N: one warp per (CSR row, group of batches); each y[b, i] is loaded once and the warp streams
// the row's entries: a scalar head up to the first whole vector, the vectors, a scalar tail.
template <class T> __device__ void yw2y_n(const Args& a) {
    typedef typename AccOf<T>::type A;
    constexpr int V = Pack<T>::V;
    const int64_t groups = (a.batches + YW2Y_BATCH_GROUP - 1) / YW2Y_BATCH_GROUP, warp = warp_id();
    if (warp >= a.m * groups) return;
    const int64_t i = warp / groups, b0 = warp % groups * YW2Y_BATCH_GROUP, b1 = group_end(a, b0);
    const int64_t begin = row_start(a, i), end = row_start(a, i + 1);
    const bool vectors = group_vectors<T>(a, b0);
    // [begin, vb): head, [vb, ve): whole vectors, [ve, end): tail (all of it without vectors)
    const int64_t vb = vectors ? min(end, (begin + V - 1) / V * V) : begin;
    const int64_t ve = vectors ? max(vb, end / V * V) : begin;
    const int lane = lane_id();
    for (int64_t b = b0; b < b1; ++b) {
        const A yv = A(to_f(((const T*)a.x)[b * a.ldx + i]));
        const T* w = batch_weights<T>(a, b);
        T* out = (T*)a.y + b * a.ldy;
        if (begin + lane < vb) blend(out + begin + lane, weight_at<T, A>(a, w, begin + lane) * yv, a);
        for (int64_t p = ve + lane; p < end; p += 32) blend(out + p, weight_at<T, A>(a, w, p) * yv, a);
    }
    const T* shared_w = a.aux ? nullptr : (const T*)a.weights;  // read once for the group
    for (int64_t q0 = vb / V + lane; q0 < ve / V; q0 += 32 * YW2Y_UNROLL) {
        Pack<T> wp[YW2Y_UNROLL] = {};
#pragma unroll
        for (int u = 0; u < YW2Y_UNROLL; ++u)
            if (shared_w && q0 + 32 * u < ve / V) wp[u] = load_stream(shared_w + (q0 + 32 * u) * V);
        for (int64_t b = b0; b < b1; ++b) {
            const A yv = A(to_f(((const T*)a.x)[b * a.ldx + i]));
            A ys[V];
#pragma unroll
            for (int j = 0; j < V; ++j) ys[j] = yv;
            const T* w = batch_weights<T>(a, b);
#pragma unroll
            for (int u = 0; u < YW2Y_UNROLL; ++u) {
                const int64_t q = q0 + 32 * u;
                if (q >= ve / V) continue;
                const Pack<T> wv = a.aux ? load_stream(w + q * V) : wp[u];
                blend_pack<T, A>((T*)a.y + b * a.ldy + q * V, wv, !w, ys, a);
            }
        }
    }
}

// T: one thread per entry (grid-stride), a grid row per group of batches: the entry's weight
// and column are read once for the group, then each batch gathers y and writes out. The gathers
// bound it (one 32-byte L2 sector for 4 useful bytes: y is larger than L1 can keep), not DRAM:
// 16-byte vectors with fewer, fuller threads ran 10-15 % slower (bench/NOTES.md).
template <class T> __device__ void yw2y_t(const Args& a) {
    typedef typename AccOf<T>::type A;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    const T* shared_w = a.aux ? nullptr : (const T*)a.weights;
    for (int64_t b0 = blockIdx.y * YW2Y_BATCH_GROUP; b0 < a.batches; b0 += gridDim.y * YW2Y_BATCH_GROUP) {
        const int64_t b1 = group_end(a, b0);
        for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < a.nnz; p += threads) {
            const int c = a.indices[p];
            const A w = weight_at<T, A>(a, shared_w, p);
            for (int64_t b = b0; b < b1; ++b) {
                const A wb = a.aux ? weight_at<T, A>(a, batch_weights<T>(a, b), p) : w;
                blend((T*)a.y + b * a.ldy + p, wb * A(to_f(((const T*)a.x)[b * a.ldx + c])), a);
            }
        }
    }
}

#define YW2Y(T, TN) EVS_KERNEL(yw2y_n_##TN, (256), yw2y_n<T>) EVS_KERNEL(yw2y_t_##TN, (256), yw2y_t<T>)
EVS_FOR_FLOATS(YW2Y)
