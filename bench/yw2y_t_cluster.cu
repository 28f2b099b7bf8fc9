// yw2y T with y held whole by a cluster of two blocks, a variant of kernels/yw2y.cu's y_windows
// for bench/probe_yw2y_t.cu (YW2Y_CLUSTER; issue #9, bench/NOTES.md "yw2y T: y in a cluster's
// shared memory"). y_windows stages y (400 KB at 100,000 f32 columns) a window at a time, two
// windows there, so each row's entries go in two spans, with a restaging and a block barrier
// between. Here block r of a pair stages half r of y and gathers from either half through the
// cluster window (mapa + ld.shared::cluster): one pass, one span a row, half the gathers remote.
// write_run and span below are the kernel's with the gather changed (a probe's copy): if this
// wins, bench/wip/yw2y-y-accessor.patch gives the kernel's own a y accessor instead (its SASS:
// registers renamed and one move more), and the cluster's y becomes one more accessor.
#include "yw2y.cu"

namespace cluster_y {

// y[c] from the half that holds it: this block's (`me`) or its partner's shared memory, both
// through the cluster window, or this block's by a plain shared load with YW2Y_CLUSTER_OWN_LDS.
__device__ __forceinline__ float at(const float* ys, int c, int half, unsigned me) {
    const unsigned r = c >= half;
#ifdef YW2Y_CLUSTER_OWN_LDS
    if (r == me) return ys[c - (int)r * half];
#endif
    float v;
    asm("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(in_block(ys + (c - (int)r * half), r)));
    return v;
}

// write_run of y_windows with every column in y (one window) and the gathers through the cluster.
__device__ __forceinline__ void write_run(const Args& a, float* out, const Entries<float>& e, bool weighted,
                                          const float* ys, int half, unsigned me, int64_t q, int64_t p, int64_t end,
                                          bool whole) {
    float v[RUN];
    unsigned written = 0;
#pragma unroll
    for (int j = 0; j < RUN; ++j) {
        const bool in = q + j >= p && q + j < end;
        written |= (unsigned)in << j;
        v[j] = in ? (weighted ? e.w[j] : (float)a.homo) * at(ys, e.c[j], half, me) : 0.f;
    }
    if (whole && written == (1u << RUN) - 1) {
        Run<float, RUN> r;
#pragma unroll
        for (int j = 0; j < RUN; ++j) r.v[j] = (float)a.alpha * v[j];  // beta 0 (the probe's call)
        *(Run<float, RUN>*)(out + q) = r;
        return;
    }
#pragma unroll
    for (int j = 0; j < RUN; ++j)
        if (written >> j & 1) blend(out + q + j, v[j], a);
}

__device__ void span(const Args& a, const float* w, float* out, const float* ys, int half, unsigned me, int64_t p,
                     int64_t end, bool vectors) {
    constexpr int64_t STEP = 32 * RUN;
    for (int64_t base = p / RUN * RUN; base < end; base += STEP * RUN_STEPS) {
        Entries<float> e[RUN_STEPS];
        bool whole[RUN_STEPS];
#pragma unroll
        for (int s = 0; s < RUN_STEPS; ++s) {
            const int64_t q = base + s * STEP + lane_id() * RUN;
            whole[s] = vectors && q < end && q + RUN <= a.nnz;
            e[s] = load_run(a, w, q, p, end, whole[s]);
        }
#pragma unroll
        for (int s = 0; s < RUN_STEPS; ++s)
            write_run(a, out, e[s], w, ys, half, me, base + s * STEP + lane_id() * RUN, p, end, whole[s]);
    }
}

}  // namespace cluster_y

// One batch, beta 0, f32 (the probe's call); dynamic shared memory: half of y, `half` a multiple
// of 4 columns so that both halves stage by 16-byte vectors.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(WINDOW_THREADS, 1) yw2y_t_cluster_f32(Args a) {
    extern __shared__ __align__(16) unsigned char half_of_y[];
    __shared__ int64_t rows[2];
    __shared__ unsigned long long next;
    float* ys = (float*)half_of_y;
    const int half = (int)((a.k + 7) / 8 * 4);
    const unsigned rank = cluster_rank();
    const int64_t slices = (a.k + SLICE_OUTPUTS - 1) / SLICE_OUTPUTS, per_row = slices + 1;
    const int64_t e0 = a.nnz * blockIdx.x / gridDim.x, e1 = a.nnz * (blockIdx.x + 1) / gridDim.x;
    stage_window(ys, (const float*)a.x + rank * half, min((int64_t)half, a.k - rank * half));  // the partner's too
    const int warp = threadIdx.x / 32;
    if (warp < 2 && e0 < e1) {
        const int64_t row = row_of_entry(a, warp ? e1 - 1 : e0);
        if (lane_id() == 0) rows[warp] = row;
    }
    if (threadIdx.x == 0) next = 0;
    cluster_sync();  // both halves staged, the rows known
    if (e0 < e1) {
        const float* w = batch_weights<float>(a, 0);
        float* out = (float*)a.y;
        const bool vectors = aligned16(a.indices) && (uintptr_t)out % 16 == 0 && (!w || (uintptr_t)w % 16 == 0);
        const int64_t first = rows[0], count = rows[1] + 1 - first;
        int64_t r = take_row(&next);
        Span s = r < count ? row_span(a, first + r, per_row, 0, slices, e0, e1) : Span{};
        while (r < count) {
            const int64_t r_next = take_row(&next);
            const Span s_next = r_next < count ? row_span(a, first + r_next, per_row, 0, slices, e0, e1) : Span{};
            cluster_y::span(a, w, out, ys, half, rank, s.p, s.end, vectors);
            r = r_next, s = s_next;
        }
    }
    cluster_sync();  // the partner's gathers from this block's half are done
}
