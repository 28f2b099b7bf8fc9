// Tuning probe for CSR plasticity post (issue #8): w[perm[p]] = clip(w[perm[p]] + trace[rowind[p]])
// over the CSC entries p of 1,000 active columns of a 100,000² matrix with 1,000 entries per
// row (1 M random read-modify-writes in a 400 MB weight array). Variants: the library's shape
// (warps share a column, one entry per lane in flight), the same with a lane's entries loaded
// in batches, and the floor of the access pattern (the same writes with their addresses read
// coalesced, and the same in address order). Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_post.cu -o /tmp/p && /tmp/p
#include "probe.cuh"

#include <random>

struct Post {
    const int *colptr, *perm, *rowind, *list;
    const float* trace;
    float* w;
    int active;
};

__device__ __forceinline__ void clip_add(float* w, float d) { *w = fminf(fmaxf(*w + d, -1.f), 1.f); }

// Warps share the listed columns (parts per column), a lane's entries one at a time.
__global__ void serial(Post q) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, parts = warps > q.active ? warps / q.active : 1;
    for (int w = warp; w < q.active * parts; w += warps) {
        const int c = q.list[w / parts], part = w % parts;
        for (int p = q.colptr[c] + part * 32 + lane; p < q.colptr[c + 1]; p += 32 * parts)
            clip_add(q.w + q.perm[p], q.trace[q.rowind[p]]);
    }
}

// The same with BATCH entries per lane loaded before any is written.
template <int BATCH> __global__ void batched(Post q) {
    const int warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31, parts = warps > q.active ? warps / q.active : 1;
    for (int w = warp; w < q.active * parts; w += warps) {
        const int c = q.list[w / parts], part = w % parts, end = q.colptr[c + 1];
        for (int p0 = q.colptr[c] + part * 32 + lane; p0 < end; p0 += 32 * parts * BATCH) {
            int at[BATCH];
            float v[BATCH], d[BATCH];
#pragma unroll
            for (int u = 0; u < BATCH; u++) {
                const int p = p0 + 32 * parts * u;
                at[u] = p < end ? __ldg(q.perm + p) : -1;
                d[u] = p < end ? __ldg(q.trace + __ldg(q.rowind + p)) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < BATCH; u++) v[u] = at[u] >= 0 ? q.w[at[u]] : 0.f;
#pragma unroll
            for (int u = 0; u < BATCH; u++)
                if (at[u] >= 0) q.w[at[u]] = fminf(fmaxf(v[u] + d[u], -1.f), 1.f);
        }
    }
}

// Floor: the n writes with their addresses (and trace values) read coalesced, 4 per thread.
__global__ void floor_rmw(const int* at, const float* d, int n, float* w) {
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4; i < n; i += gridDim.x * blockDim.x * 4) {
        int a[4];
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) a[u] = i + u < n ? at[i + u] : -1;
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = a[u] >= 0 ? w[a[u]] : 0.f;
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (a[u] >= 0) w[a[u]] = fminf(fmaxf(v[u] + d[i + u], -1.f), 1.f);
    }
}

// What limits the floor: random reads alone, writes alone (addresses read coalesced).
__global__ void gather_only(const int* at, int n, const float* w, float* out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = w[at[i]];
}
__global__ void scatter_only(const int* at, const float* d, int n, float* w) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[at[i]] = d[i];
}

int main() {
    const int m = 100000, per_row = 1000, active = 1000;
    const long nnz = (long)m * per_row;
    std::mt19937 rng(7);
    // The active columns' CSC entries: each row holds a given column with probability
    // per_row / m, at a random slot of the row.
    std::vector<int> colptr{0}, perm, rowind, list;
    std::uniform_real_distribution<double> u01(0, 1);
    std::uniform_int_distribution<int> slot(0, per_row - 1);
    for (int c = 0; c < active; c++) {
        for (int r = 0; r < m; r++)
            if (u01(rng) < (double)per_row / m) perm.push_back((int)((long)r * per_row + slot(rng))), rowind.push_back(r);
        colptr.push_back((int)perm.size());
        list.push_back(c);
    }
    const int entries = (int)perm.size();
    std::vector<float> trace(m), w0(nnz > (1L << 20) ? 1 << 20 : nnz);
    for (auto& t : trace) t = (float)(u01(rng) * 0.01);
    float* w;
    CK(cudaMalloc(&w, nnz * 4));
    CK(cudaMemset(w, 0, nnz * 4));
    std::vector<float> d(entries);
    for (int i = 0; i < entries; i++) d[i] = trace[rowind[i]];
    std::vector<int> sorted_perm = perm;
    std::vector<float> sorted_d(entries);
    {
        std::vector<int> order(entries);
        for (int i = 0; i < entries; i++) order[i] = i;
        std::sort(order.begin(), order.end(), [&](int a, int b) { return perm[a] < perm[b]; });
        for (int i = 0; i < entries; i++) sorted_perm[i] = perm[order[i]], sorted_d[i] = d[order[i]];
    }
    Post q{upload(colptr), upload(perm), upload(rowind), upload(list), upload(trace), w, active};
    int *at = upload(perm), *at_sorted = upload(sorted_perm);
    float *dd = upload(d), *dd_sorted = upload(sorted_d);
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    printf("entries %d (%.1f MB of sectors touched at 32 B)\n", entries, entries * 32e-6);
    auto report = [&](const char* name, auto call) {
        Timing t = time_call(s, call);
        printf("%-28s event %7.1f us  graph %7.1f us  %6.1f G entries/s\n", name, t.event_us, t.graph_us,
               entries / t.graph_us * 1e-3);
    };
    for (int wps : {32, 64})
        for (int rep = 0; rep < 2; rep++) {
            char name[64];
            snprintf(name, sizeof name, "serial %d warps/SM", wps);
            report(name, [&] { serial<<<sms * wps / 8, 256, 0, s>>>(q); });
            snprintf(name, sizeof name, "batched 4, %d warps/SM", wps);
            report(name, [&] { batched<4><<<sms * wps / 8, 256, 0, s>>>(q); });
            snprintf(name, sizeof name, "batched 8, %d warps/SM", wps);
            report(name, [&] { batched<8><<<sms * wps / 8, 256, 0, s>>>(q); });
        }
    for (int rep = 0; rep < 2; rep++) {
        report("floor, column order", [&] { floor_rmw<<<sms * 8, 256, 0, s>>>(at, dd, entries, w); });
        report("floor, address order", [&] { floor_rmw<<<sms * 8, 256, 0, s>>>(at_sorted, dd_sorted, entries, w); });
    }
    float* out;
    CK(cudaMalloc(&out, entries * 4));
    std::vector<int> small(perm);
    for (auto& x : small) x %= 10 << 20;  // a 40 MB slice: L2-resident
    int* at_small = upload(small);
    for (int blocks : {sms * 2, sms * 8}) {
        printf("%d blocks of 256:\n", blocks);
        report("  gather only", [&] { gather_only<<<blocks, 256, 0, s>>>(at, entries, w, out); });
        report("  gather only, address order", [&] { gather_only<<<blocks, 256, 0, s>>>(at_sorted, entries, w, out); });
        report("  scatter only", [&] { scatter_only<<<blocks, 256, 0, s>>>(at, dd, entries, w); });
        report("  rmw, 40 MB slice", [&] { floor_rmw<<<blocks, 256, 0, s>>>(at_small, dd, entries, w); });
        report("  rmw", [&] { floor_rmw<<<blocks, 256, 0, s>>>(at, dd, entries, w); });
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
