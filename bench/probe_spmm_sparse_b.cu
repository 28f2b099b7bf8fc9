// Tuning probe for spmm N with a mostly-zero float B (issue #9, item 1: A 10000² x 200/row f32,
// B 10000 x 128 f32 with 10 % (or 100 %) non-zeros), standalone: each variant on the same random
// matrices in one run, checked against a plain kernel. quad_pack / qrows: B's rows packed to the
// 4-column groups that hold a non-zero, lanes owning 4 columns in registers (bench/NOTES.md,
// "spmm on mostly-zero floats: packed quads, predicted"). Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_spmm_sparse_b.cu -o /tmp/q && /tmp/q
#include "probe.cuh"

struct Prob {
    int m, k, n;
    const long* indptr;
    const int* indices;
    const float* w;
    const float* b;          // k x n
    int* counts;             // compacted B: per (row, 128-column tile) its non-zeros
    unsigned char* cols;     // ... their columns within the tile (128 slots)
    float* vals;             // ... and values (128 slots)
    unsigned* qmask;         // packed quads: per (row, 128-column tile) which of its 32 quads hold a non-zero
    float4* quads;           // ... those quads in order (32 slots)
    float* c;                // m x n
};

__global__ void ref_kernel(Prob p) {
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (t >= (long)p.m * p.n) return;
    int i = t / p.n, c = t % p.n;
    float acc = 0;
    for (long e = p.indptr[i]; e < p.indptr[i + 1]; e++) acc += p.w[e] * p.b[(long)p.indices[e] * p.n + c];
    p.c[t] = acc;
}

// Today's gather: a warp per (row, 64 columns), lane l columns 2l, 2l + 1 (one 8-byte load).
__global__ void pairs(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.m) return;
    int c0 = blockIdx.y * 64 + 2 * lane;
    float a0 = 0, a1 = 0;
    long b = p.indptr[i], e = p.indptr[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0;
        float w = 0;
        if (base + lane < e) s = p.indices[base + lane], w = p.w[base + lane];
        int cnt = (int)min(32L, e - base);
        for (int q = 0; q < cnt; q++) {
            int j = __shfl_sync(~0u, s, q);
            float we = __shfl_sync(~0u, w, q);
            float2 v = *(const float2*)(p.b + (long)j * p.n + c0);
            a0 += we * v.x, a1 += we * v.y;
        }
    }
    p.c[(long)i * p.n + c0] = a0, p.c[(long)i * p.n + c0 + 1] = a1;
}

// Dense, half-warps on alternate entries, lane l of a half columns 8l .. 8l + 7 (two 16-byte loads).
__global__ void halves(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.m) return;
    int half = lane >> 4, c0 = blockIdx.y * 128 + 8 * (lane & 15);
    float a[8] = {};
    long b = p.indptr[i], e = p.indptr[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0;
        float w = 0;
        if (base + lane < e) s = p.indices[base + lane], w = p.w[base + lane];
        int cnt = (int)min(32L, e - base);
#pragma unroll 4
        for (int q = 0; q < cnt; q += 2) {
            int me = q + half;
            int j = __shfl_sync(~0u, s, me & 31);
            float we = __shfl_sync(~0u, w, me & 31);
            if (me < cnt) {
                const float4* r = (const float4*)(p.b + (long)j * p.n + c0);
                float4 x = r[0], y = r[1];
                a[0] += we * x.x, a[1] += we * x.y, a[2] += we * x.z, a[3] += we * x.w;
                a[4] += we * y.x, a[5] += we * y.y, a[6] += we * y.z, a[7] += we * y.w;
            }
        }
    }
    for (int u = 0; u < 8; u++) a[u] += __shfl_xor_sync(~0u, a[u], 16);
    if (half == 0)
        for (int u = 0; u < 8; u++) p.c[(long)i * p.n + c0 + u] = a[u];
}

// Dense, a warp per (row, 128 columns), lane l columns 4l .. 4l + 3 (one 16-byte load); row
// offsets shuffled as bytes.
__global__ void quads(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.m) return;
    int c0 = blockIdx.y * 128 + 4 * lane;
    float4 acc = make_float4(0, 0, 0, 0);
    const char* x = (const char*)(p.b + c0);
    long b = p.indptr[i], e = p.indptr[i + 1];
    for (long base = b; base < e; base += 32) {
        unsigned long long off = 0;
        float w = 0;
        if (base + lane < e) off = (unsigned long long)p.indices[base + lane] * p.n * 4, w = p.w[base + lane];
        int cnt = (int)min(32L, e - base);
        for (int q = 0; q < cnt; q++) {
            unsigned long long o = __shfl_sync(~0u, off, q);
            float we = __shfl_sync(~0u, w, q);
            float4 v = *(const float4*)(x + o);
            acc.x += we * v.x, acc.y += we * v.y, acc.z += we * v.z, acc.w += we * v.w;
        }
    }
    *(float4*)(p.c + (long)i * p.n + c0) = acc;
}

// The packing warp's tile (row of B, 128 columns) and its lane's first column (4 a lane); false
// past the last tile.
__device__ bool warp_tile(const Prob& p, long& warp, long& row, int& c) {
    int tiles = (p.n + 127) / 128;
    warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
    if (warp >= (long)p.k * tiles) return false;
    row = warp / tiles;
    c = (warp % tiles) * 128 + 4 * (threadIdx.x & 31);
    return true;
}

// Compacts each (row of B, 128 columns) to its non-zeros: a warp each, lane l columns 4l .. 4l + 3,
// a warp scan of the counts.
__global__ void pack_nonzeros(Prob p) {
    long warp, row;
    int c, lane = threadIdx.x & 31;
    if (!warp_tile(p, warp, row, c)) return;
    float v[4];
    int mine = 0;
    for (int u = 0; u < 4; u++) {
        v[u] = c + u < p.n ? p.b[row * p.n + c + u] : 0.f;
        mine += v[u] != 0.f;
    }
    int before = mine;
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(~0u, before, o);
        if (lane >= o) before += t;
    }
    int total = __shfl_sync(~0u, before, 31);
    before -= mine;
    long slot = warp * 128;
    for (int u = 0; u < 4; u++)
        if (v[u] != 0.f) p.cols[slot + before] = 4 * lane + u, p.vals[slot + before] = v[u], before++;
    if (lane == 0) p.counts[warp] = total;
}

// A warp per (row, 128 columns), C's row in shared memory: for each entry in turn, the lanes
// take the entry's non-zeros of B (one per lane) and add w * value into their columns (distinct
// within an entry, so no atomics). UNROLL entries' loads in flight.
template <int UNROLL> __global__ void __launch_bounds__(256) rounds(Prob p) {
    __shared__ float acc[8][128];
    int wib = threadIdx.x / 32, lane = threadIdx.x & 31;
    int i = blockIdx.x * 8 + wib;
    for (int u = lane; u < 128; u += 32) acc[wib][u] = 0;
    __syncwarp();
    if (i >= p.m) return;
    int tiles = (p.n + 127) / 128;
    long b = p.indptr[i], e = p.indptr[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0, cnt_mine = 0;
        float w = 0;
        if (base + lane < e) {
            s = p.indices[base + lane], w = p.w[base + lane];
            cnt_mine = p.counts[(long)s * tiles + blockIdx.y];
        }
        int cnt = (int)min(32L, e - base);
        for (int q0 = 0; q0 < cnt; q0 += UNROLL) {
            unsigned char col[UNROLL];
            float val[UNROLL], we[UNROLL];
            int nz[UNROLL], j[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                int q = min(q0 + u, 31);
                j[u] = __shfl_sync(~0u, s, q);
                we[u] = __shfl_sync(~0u, w, q);
                nz[u] = q0 + u < cnt ? __shfl_sync(~0u, cnt_mine, q) : 0;
                long slot = ((long)j[u] * tiles + blockIdx.y) * 128 + lane;
                if (lane < nz[u]) col[u] = p.cols[slot], val[u] = p.vals[slot];
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                if (lane < nz[u]) acc[wib][col[u]] += we[u] * val[u];
                for (int t = lane + 32; t < nz[u]; t += 32) {  // rows with more than 32 non-zeros
                    long slot = ((long)j[u] * tiles + blockIdx.y) * 128 + t;
                    acc[wib][p.cols[slot]] += we[u] * p.vals[slot];
                }
                __syncwarp();
            }
        }
    }
    __syncwarp();
    for (int u = lane; u < 128; u += 32)
        if (blockIdx.y * 128 + u < p.n) p.c[(long)i * p.n + blockIdx.y * 128 + u] = acc[wib][u];
}

// Packs each (row of B, 128 columns) to the quads (4 columns) that hold a non-zero: lane l takes
// quad l, a ballot gives the tile's mask, each live quad goes to its rank.
__global__ void pack_quads(Prob p) {
    long warp, row;
    int c, lane = threadIdx.x & 31;
    if (!warp_tile(p, warp, row, c)) return;
    float4 v = make_float4(0, 0, 0, 0);
    if (c + 3 < p.n) v = *(const float4*)(p.b + row * p.n + c);  // the probe's n is a multiple of 4
    unsigned live = __ballot_sync(~0u, v.x != 0.f || v.y != 0.f || v.z != 0.f || v.w != 0.f);
    if (live >> lane & 1) p.quads[warp * 32 + __popc(live & ((1u << lane) - 1))] = v;
    if (lane == 0) p.qmask[warp] = live;
}

// A warp per (row, 128 columns), lane l columns 4l .. 4l + 3 in registers (as `quads`): each entry's
// tile mask says whether lane l's quad is live and its rank among the packed quads; live lanes
// load it (one 16-byte load), the others idle. No shared memory, no atomics, B's zero quads never
// read. The batch's sources, weights and masks load while the previous batch is added; UNROLL
// entries' quads in flight.
template <int UNROLL> __global__ void __launch_bounds__(256) quad_rows(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.m) return;
    int tiles = (p.n + 127) / 128;
    const float4* quads = p.quads + blockIdx.y * 32;  // row s's tile at quads + s * stride
    const unsigned* masks = p.qmask + blockIdx.y;
    unsigned stride = 32u * tiles;  // the probe's quads stay under 2^32 of them
    unsigned below = (1u << lane) - 1;
    asm("" : "+l"(quads), "+r"(below));  // kept in registers: ptxas rebuilt both for every entry
    float4 acc = make_float4(0, 0, 0, 0);
    long b = p.indptr[i], e = p.indptr[i + 1];
    auto fetch = [&](long base, int& src, float& w, unsigned& mask) {  // past the row: mask 0
        src = 0, w = 0, mask = 0;
        if (base + lane < e) src = p.indices[base + lane], w = p.w[base + lane], mask = masks[(long)src * tiles];
    };
    int src;
    float w;
    unsigned mask;
    fetch(b, src, w, mask);
    for (long base = b; base < e; base += 32) {
        int next_src;
        float next_w;
        unsigned next_mask;
        fetch(base + 32, next_src, next_w, next_mask);
        int cnt = (int)min(32L, e - base);
        for (int q0 = 0; q0 < cnt; q0 += UNROLL) {
            float4 v[UNROLL];
            float we[UNROLL];
            bool live[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                int q = min(q0 + u, 31);  // past cnt: a lane past the row, mask 0
                int s = __shfl_sync(~0u, src, q);
                unsigned m = __shfl_sync(~0u, mask, q);
                we[u] = __shfl_sync(~0u, w, q);
                live[u] = m >> lane & 1;
                if (live[u]) v[u] = __ldg(quads + (unsigned)s * stride + __popc(m & below));
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                if (live[u]) acc.x += we[u] * v[u].x, acc.y += we[u] * v[u].y, acc.z += we[u] * v[u].z, acc.w += we[u] * v[u].w;
        }
        src = next_src, w = next_w, mask = next_mask;
    }
    int c = blockIdx.y * 128 + 4 * lane;
    if (c + 3 < p.n) *(float4*)(p.c + (long)i * p.n + c) = acc;
}

int main() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const char* names[] = {"pairs", "halves", "rounds1", "rounds4", "rounds8", "pack_only", "quads", "quad_pack", "qrows4", "qrows8"};
    struct Case { int m, per_row, n; double nz; } cases[] = {{10000, 200, 128, 0.02}, {10000, 200, 128, 0.10}, {10000, 200, 128, 0.30}, {10000, 200, 128, 1.0}, {10000, 1000, 128, 0.10}};
    printf("%-28s %-10s %10s %10s %8s\n", "case", "variant", "event_us", "graph_us", "maxerr");
    for (auto c : cases) {
        srand(2);
        int m = c.m, k = c.m, n = c.n, tiles = (n + 127) / 128;
        long nnz = (long)m * c.per_row;
        std::vector<long> ip(m + 1);
        std::vector<int> ix(nnz);
        std::vector<float> w(nnz), bh((long)k * n);
        for (int r = 0; r <= m; r++) ip[r] = (long)r * c.per_row;
        for (long q = 0; q < nnz; q++) ix[q] = rand() % k, w[q] = (rand() % 1000) / 1000.f;
        for (auto& v : bh) v = (rand() / (double)RAND_MAX) < c.nz ? (rand() % 2000) / 1000.f - 1.f + 1e-3f : 0.f;
        Prob p;
        p.m = m, p.k = k, p.n = n;
        p.indptr = upload(ip), p.indices = upload(ix), p.w = upload(w), p.b = upload(bh);
        CK(cudaMalloc(&p.counts, (long)k * tiles * 4));
        CK(cudaMalloc(&p.cols, (long)k * tiles * 128));
        CK(cudaMalloc(&p.vals, (long)k * tiles * 128 * 4));
        CK(cudaMalloc(&p.qmask, (long)k * tiles * 4));
        CK(cudaMalloc(&p.quads, (long)k * tiles * 32 * 16));
        float* ref;
        CK(cudaMalloc(&p.c, (long)m * n * 4));
        CK(cudaMalloc(&ref, (long)m * n * 4));
        Prob rp = p;
        rp.c = ref;
        ref_kernel<<<((long)m * n + 255) / 256, 256>>>(rp);
        CK(cudaDeviceSynchronize());
        std::vector<float> href((long)m * n);
        CK(cudaMemcpy(href.data(), ref, href.size() * 4, cudaMemcpyDeviceToHost));
        for (int v = 0; v < 10; v++) {
            auto call = [&] {
                dim3 grid((m + 7) / 8, tiles);
                if (v == 0) pairs<<<dim3((m + 7) / 8, (n + 63) / 64), 256, 0, s>>>(p);
                if (v == 1) halves<<<grid, 256, 0, s>>>(p);
                if (v == 6) quads<<<grid, 256, 0, s>>>(p);
                if (v >= 2 && v <= 5) pack_nonzeros<<<((long)k * tiles + 7) / 8, 256, 0, s>>>(p);
                if (v == 2) rounds<1><<<grid, 256, 0, s>>>(p);
                if (v == 3) rounds<4><<<grid, 256, 0, s>>>(p);
                if (v == 4) rounds<8><<<grid, 256, 0, s>>>(p);
                if (v >= 7) pack_quads<<<((long)k * tiles + 7) / 8, 256, 0, s>>>(p);
                if (v == 8) quad_rows<4><<<grid, 256, 0, s>>>(p);
                if (v == 9) quad_rows<8><<<grid, 256, 0, s>>>(p);
            };
            CK(cudaMemsetAsync(p.c, 0xff, (long)m * n * 4, s));
            call();
            CK(cudaStreamSynchronize(s));
            CK(cudaGetLastError());
            const double err = max_error(p.c, href);
            const Timing t = time_call(s, call);
            char label[64];
            snprintf(label, sizeof label, "%d x%d n%d %.0f%% nz", m, c.per_row, n, c.nz * 100);
            printf("%-28s %-10s %10.2f %10.2f %8.1e\n", label, names[v], t.event_us, t.graph_us, err);
        }
        cudaFree((void*)p.indptr), cudaFree((void*)p.indices), cudaFree((void*)p.w), cudaFree((void*)p.b);
        cudaFree(p.counts), cudaFree(p.cols), cudaFree(p.vals), cudaFree(p.c), cudaFree(ref);
        cudaFree(p.qmask), cudaFree(p.quads);
    }
    return 0;
}
