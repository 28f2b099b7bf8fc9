// Tuning probe for spike propagation (spmv T on events and spike lists, homogeneous weights)
// with the output owned by blocks: block s accumulates output slice [s W, (s + 1) W) in shared
// memory, reading only the entries of the live rows that fall in its slice (rows sorted by
// column; the slice bounds of every row computed once, as an analysis would), and writes its
// slice once: no global atomics, no beta pass before. Against the library's shape (a memset,
// then a warp per listed row with global atomics). Standalone; on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_slices.cu -o /tmp/ps && /tmp/ps [uniform]
// (uniform: rows of sorted uniform random columns, as bench.py's; else one column per 1/len of
// the range). "lib" variants copy the library's slice loop, "fit" widths give every SM a slice.
#include "probe.cuh"

#include <string>

typedef unsigned char u8;

struct Net {
    int m, k, len, S, W;  // rows, columns, entries per row, slices of W outputs
    int *indices, *bounds;  // bounds[r (S + 1) + s]: first entry of row r in slice s (absolute)
    int *indptr, *rel;      // row starts, and bounds relative to them (the library's layout)
    u8* spikes;
    int *list, *count, *done;  // spike list, its device-side count, the slices' finished-block count
    float* y;
};

__device__ __host__ inline unsigned hash(unsigned a, unsigned b) {
    unsigned h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
    h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12;
    return h;
}

// Row r's entry j: a column in [j k / len, (j + 1) k / len), so rows are sorted.
__global__ void make_rows(Net n) {
    const long total = (long)n.m * n.len;
    for (long p = blockIdx.x * (long)blockDim.x + threadIdx.x; p < total; p += (long)gridDim.x * blockDim.x) {
        const long r = p / n.len, j = p % n.len;
        const long lo = j * n.k / n.len, hi = (j + 1) * n.k / n.len;
        n.indices[p] = (int)(lo + hash((unsigned)r, (unsigned)j) % max(1L, hi - lo));
    }
}

// Row r: len sorted columns uniform over [0, k) (exponential gaps, normalized), like the bench's
// random rows sorted; segment lengths then vary as they do there.
__global__ void make_rows_uniform(Net n) {
    for (long r = blockIdx.x * (long)blockDim.x + threadIdx.x; r < n.m; r += (long)gridDim.x * blockDim.x) {
        auto gap = [&](int j) { return -logf((hash((unsigned)r, (unsigned)j) + 0.5f) * (1.0f / 4294967296.0f)); };
        double total = 0;
        for (int j = 0; j <= n.len; j++) total += gap(j);
        double at = 0;
        for (int j = 0; j < n.len; j++) {
            at += gap(j);
            n.indices[r * n.len + j] = min(n.k - 1, (int)(at / total * n.k));
        }
    }
}

__global__ void make_bounds(Net n) {
    const long total = (long)n.m * (n.S + 1);
    for (long q = blockIdx.x * (long)blockDim.x + threadIdx.x; q < total; q += (long)gridDim.x * blockDim.x) {
        const long r = q / (n.S + 1), s = q % (n.S + 1);
        int lo = (int)(r * n.len), hi = (int)((r + 1) * n.len);
        const long key = s * (long)n.W;
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (n.indices[mid] < key) lo = mid + 1;
            else hi = mid;
        }
        n.bounds[q] = lo;
    }
}

__global__ void ref_kernel(Net n, float* y) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n.m || !n.spikes[r]) return;
    for (long p = (long)r * n.len; p < (long)(r + 1) * n.len; p++) atomicAdd(y + n.indices[p], 1.0f);
}

__global__ void empty_kernel() {}

// ---------------------------------------------------------------- the library's shape
// parts warps per listed row, each taking every parts-th run of 32 entries; global atomics.
__global__ void row_warps(Net n) {
    const long warps = (long)gridDim.x * blockDim.x / 32, warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    const int count = *n.count, lane = threadIdx.x & 31;
    const long parts = count > 0 && warps > count ? warps / count : 1;
    for (long w = warp; w < count * parts; w += warps) {
        const long r = n.list[w / parts], part = w % parts;
        for (long p = r * n.len + part * 32 + lane; p < (r + 1) * n.len; p += 32 * parts) atomicAdd(n.y + n.indices[p], 1.0f);
    }
}

// ---------------------------------------------------------------- unordered compaction
__global__ void compact_unordered(Net n) {
    const int lane = threadIdx.x & 31;
    for (long base = (blockIdx.x * (long)blockDim.x + threadIdx.x) & ~31L; base < n.m; base += (long)gridDim.x * blockDim.x) {
        const long r = base + lane;
        const bool on = r < n.m && n.spikes[r];
        const unsigned ballot = __ballot_sync(~0u, on);
        if (!ballot) continue;
        int at = 0;
        if (lane == 0) at = atomicAdd(n.count, __popc(ballot));
        at = __shfl_sync(~0u, at, 0);
        if (on) n.list[at + __popc(ballot & ((1u << lane) - 1))] = (int)r;
    }
}

// ---------------------------------------------------------------- output slices
#define WIN 2048

// The entries of listed rows seg [0, nwin) in this slice, G lanes per row, U rows a group in
// flight, added into acc (slice-relative).
template <int T, int G, int U, class Acc> __device__ void add_segments(const Net& n, const int* seg_b, const int* seg_e, int nwin, Acc* acc, int c0) {
    const int groups = T / G, group = threadIdx.x / G, sub = threadIdx.x % G;
    for (int j0 = group; j0 < nwin; j0 += groups * U) {
        int b[U], e[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int j = j0 + u * groups;
            b[u] = j < nwin ? seg_b[j] + sub : 0, e[u] = j < nwin ? seg_e[j] : 0;
        }
        while (true) {
            int idx[U];
            bool any = false;
#pragma unroll
            for (int u = 0; u < U; u++) {
                idx[u] = b[u] < e[u] ? __ldcs(n.indices + b[u]) : -1;
                any |= b[u] < e[u];
            }
            if (!any) break;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (idx[u] >= 0) atomicAdd(acc + idx[u] - c0, Acc(1));
#pragma unroll
            for (int u = 0; u < U; u++) b[u] += G;
        }
    }
}

// A slice per block; the live rows from the spike list (or, SCAN, from the block's own sweep of
// the spikes). RESET: the last block zeroes the list's count (an unordered compaction feeds it).
template <int W, int T, int G, int U, bool SCAN, bool RESET, class Acc = float> __global__ void __launch_bounds__(T) slices(Net n) {
    __shared__ Acc acc[W];
    __shared__ int seg_b[WIN], seg_e[WIN];
    __shared__ int live;
    const int s = blockIdx.x, c0 = s * n.W;  // n.W <= W
    for (int i = threadIdx.x; i < n.W; i += T) acc[i] = 0;
    if (SCAN) {
        if (threadIdx.x == 0) live = 0;
        __syncthreads();
        for (long r = threadIdx.x; r < n.m; r += T) {
            if (!n.spikes[r]) continue;
            const int at = atomicAdd(&live, 1);
            if (at < WIN) seg_b[at] = n.bounds[r * (n.S + 1) + s], seg_e[at] = n.bounds[r * (n.S + 1) + s + 1];
        }
        __syncthreads();
        add_segments<T, G, U, Acc>(n, seg_b, seg_e, min(live, WIN), acc, c0);
    } else {
        const int count = *n.count;
        if (RESET) {
            __syncthreads();
            if (threadIdx.x == 0 && atomicAdd(n.done, 1) == (int)gridDim.x - 1) *n.count = 0, *n.done = 0;
        }
        for (int w0 = 0; w0 < count; w0 += WIN) {
            const int nwin = min(WIN, count - w0);
            for (int t = threadIdx.x; t < nwin; t += T) {
                const long r = n.list[w0 + t];
                seg_b[t] = n.bounds[r * (n.S + 1) + s], seg_e[t] = n.bounds[r * (n.S + 1) + s + 1];
            }
            __syncthreads();
            add_segments<T, G, U, Acc>(n, seg_b, seg_e, nwin, acc, c0);
            __syncthreads();
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n.W && c0 + i < n.k; i += T) n.y[c0 + i] = (float)acc[i];
}

// Flat: a window's segments laid end to end; each piece of PIECE entries has its absolute
// positions written into shared memory first (16 lanes a segment, contiguous stores), then
// thread t loads entries t, t + T, ... of the piece: PIECE / T loads in flight, no per-segment
// rounds (slower than the segment walk: bench/NOTES.md, "Output slices: the round's form").
template <int W, int T, int PIECE> __global__ void __launch_bounds__(T) flat_slices(Net n) {
    constexpr int U = PIECE / T, G = 16;
    __shared__ unsigned acc[W];
    __shared__ int seg_b[WIN], pre[WIN + 1];
    __shared__ int warp_sums[T / 32];
    extern __shared__ int pos[];
    const int s = blockIdx.x, c0 = s * n.W, lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    for (int i = threadIdx.x; i < n.W; i += T) acc[i] = 0;
    const int count = *n.count;
    for (int w0 = 0; w0 < count; w0 += WIN) {
        const int nwin = min(WIN, count - w0);
        // K consecutive segments a thread, their lengths summed in order
        constexpr int K = WIN / T;
        int lens[K], mine = 0;
#pragma unroll
        for (int q = 0; q < K; q++) {
            const int t = K * threadIdx.x + q;
            lens[q] = 0;
            if (t < nwin) {
                const long r = n.list[w0 + t];
                const int b = n.bounds[r * (n.S + 1) + s];
                seg_b[t] = b, lens[q] = n.bounds[r * (n.S + 1) + s + 1] - b;
            }
            mine += lens[q];
        }
        int incl = mine;
        for (int d = 1; d < 32; d *= 2) {
            const int v = __shfl_up_sync(~0u, incl, d);
            if (lane >= d) incl += v;
        }
        if (lane == 31) warp_sums[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            int v = lane < T / 32 ? warp_sums[lane] : 0, vi = v;
            for (int d = 1; d < 32; d *= 2) {
                const int o = __shfl_up_sync(~0u, vi, d);
                if (lane >= d) vi += o;
            }
            if (lane < T / 32) warp_sums[lane] = vi - v;
        }
        __syncthreads();
        int at = warp_sums[warp] + incl - mine;
#pragma unroll
        for (int q = 0; q < K; q++) pre[K * threadIdx.x + q] = at, at += lens[q];
        if (threadIdx.x == T - 1) pre[WIN] = at;
        __syncthreads();
        const int total = pre[nwin] ;
        for (int p0 = 0; p0 < total; p0 += PIECE) {
            const int group = threadIdx.x / G, sub = threadIdx.x % G;
            for (int j = group; j < nwin; j += T / G) {
                const int lo = max(pre[j], p0), hi = min(pre[j + 1], p0 + PIECE);
                for (int f = lo + sub; f < hi; f += G) pos[f - p0] = seg_b[j] + (f - pre[j]);
            }
            __syncthreads();
            const int here = min(PIECE, total - p0);
            int idx[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int f = threadIdx.x + u * T;
                idx[u] = f < here ? __ldcs(n.indices + pos[f]) - c0 : W;
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if ((unsigned)idx[u] < (unsigned)W) atomicAdd(acc + idx[u], 1u);
            __syncthreads();
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n.W && c0 + i < n.k; i += T) n.y[c0 + i] = (float)acc[i];
}

// The library's shape (kernels/sparse.cu, add_segments / slice_sums at 2026-11-27): row starts
// from indptr plus offsets relative to them, positions in P (int64_t there).
__global__ void make_rel(Net n) {
    const long total = (long)n.m * (n.S + 1);
    for (long q = blockIdx.x * (long)blockDim.x + threadIdx.x; q < total; q += (long)gridDim.x * blockDim.x)
        n.rel[q] = n.bounds[q] - n.indptr[q / (n.S + 1)];
}
template <class P, bool ABS = false, bool PROBE_LOOP = false> __global__ void __launch_bounds__(1024) lib_slices(Net n) {
    constexpr int T = 1024, G = 16, U = 8, GROUPS = T / G;
    __shared__ unsigned acc[4096];
    __shared__ P begin[WIN];
    __shared__ unsigned len[WIN];
    const int s = blockIdx.x, c0 = s * n.W, per_row = gridDim.x + 1;
    for (int i = threadIdx.x; i < n.W; i += T) acc[i] = 0;
    const int count = *n.count;
    for (int w0 = 0; w0 < count; w0 += WIN) {
        const int rows = min(WIN, count - w0);
        for (int t = threadIdx.x; t < rows; t += T) {
            const long r = n.list[w0 + t];
            const int* b = (ABS ? n.bounds : n.rel) + r * per_row + s;
            begin[t] = (ABS ? 0 : (P)n.indptr[r]) + b[0], len[t] = b[1] - b[0];
        }
        __syncthreads();
        const int group = threadIdx.x / G, sub = threadIdx.x % G;
        for (int j0 = group; j0 < rows; j0 += GROUPS * U) {
            P p[U], end[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int j = j0 + u * GROUPS;
                p[u] = j < rows ? begin[j] + sub : 0;
                end[u] = j < rows ? begin[j] + len[j] : 0;
            }
            if (PROBE_LOOP) {
                while (true) {
                    int idx[U];
                    bool any = false;
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        idx[u] = p[u] < end[u] ? __ldcs(n.indices + p[u]) : -1;
                        any |= p[u] < end[u];
                    }
                    if (!any) break;
#pragma unroll
                    for (int u = 0; u < U; u++)
                        if (idx[u] >= 0) atomicAdd(acc + idx[u] - c0, 1u);
#pragma unroll
                    for (int u = 0; u < U; u++) p[u] += G;
                }
            } else {
                for (bool any = true; any;) {
                    any = false;
                    unsigned out[U];
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        const bool on = p[u] < end[u];
                        out[u] = on ? (unsigned)(__ldcs(n.indices + p[u]) - c0) : 4096u;
                        any |= on;
                        p[u] += G;
                    }
#pragma unroll
                    for (int u = 0; u < U; u++)
                        if (out[u] < 4096u) atomicAdd(acc + out[u], 1u);
                }
            }
        }
        __syncthreads();
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n.W && c0 + i < n.k; i += T) n.y[c0 + i] = (float)acc[i];
}

struct Variant {
    const char* name;
    bool events;  // input: the spike vector (else the list)
    int W;        // slice width (0: not a slice kernel; -1: as many slices as SMs, at most 4,096 wide)
    bool scan;    // the slice kernel sweeps the spikes itself
    void (*launch)(Net&, cudaStream_t, int sms);
};

void launch_row_warps(Net& n, cudaStream_t s, int sms) {
    CK(cudaMemsetAsync(n.y, 0, n.k * 4, s));
    row_warps<<<sms * 8, 256, 0, s>>>(n);
}
// The slice kernel with sums of type Acc; COMPACT lists the events first (unordered), SCAN has
// every block sweep the spikes itself.
template <int W, int T, int G, int U, class Acc, bool COMPACT = false, bool SCAN = false>
void launch_slices(Net& n, cudaStream_t s, int sms) {
    if (COMPACT) compact_unordered<<<std::min((n.m + 255) / 256, sms * 8), 256, 0, s>>>(n);
    slices<W, T, G, U, SCAN, COMPACT, Acc><<<n.S, T, 0, s>>>(n);
}
template <class P, bool ABS = false, bool PROBE_LOOP = false> void launch_lib(Net& n, cudaStream_t s, int) {
    lib_slices<P, ABS, PROBE_LOOP><<<n.S, 1024, 0, s>>>(n);
}
void launch_empty(Net&, cudaStream_t s, int) { empty_kernel<<<1, 32, 0, s>>>(); }
template <int T, int PIECE> void launch_flat(Net& n, cudaStream_t s, int) {
    static bool once = [] {
        CK(cudaFuncSetAttribute(flat_slices<4096, T, PIECE>, cudaFuncAttributeMaxDynamicSharedMemorySize, PIECE * 4));
        return true;
    }();
    (void)once;
    flat_slices<4096, T, PIECE><<<n.S, T, PIECE * 4, s>>>(n);
}

int main(int argc, char** argv) {
    const bool uniform = argc > 1 && std::string(argv[1]) == "uniform";  // else one column per 1/len of the range
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Variant variants[] = {
        {"empty kernel", false, 0, false, launch_empty},
        {"list row_warps+memset", false, 0, false, launch_row_warps},
        {"list count 4k/1024 g16 u4", false, 4096, false, launch_slices<4096, 1024, 16, 4, unsigned>},
        {"list count 4k/1024 g16 u8", false, 4096, false, launch_slices<4096, 1024, 16, 8, unsigned>},
        {"list count 4k/1024 g8 u8", false, 4096, false, launch_slices<4096, 1024, 8, 8, unsigned>},
        {"list count 4k/1024 g32 u8", false, 4096, false, launch_slices<4096, 1024, 32, 8, unsigned>},
        {"list count 2k/512 g16 u8", false, 2048, false, launch_slices<2048, 512, 16, 8, unsigned>},
        {"list count 8k/1024 g16 u8", false, 8192, false, launch_slices<8192, 1024, 16, 8, unsigned>},
        {"ev compact+count 4k g16 u8", true, 4096, false, launch_slices<4096, 1024, 16, 8, unsigned, true>},
        {"ev compact+count 2k g16 u8", true, 2048, false, launch_slices<2048, 512, 16, 8, unsigned, true>},
        {"list slices 4k/1024 g16 u4", false, 4096, false, launch_slices<4096, 1024, 16, 4, float>},
        {"list slices 4k/1024 g16 u8", false, 4096, false, launch_slices<4096, 1024, 16, 8, float>},
        {"ev compact+slices 4k g16 u8", true, 4096, false, launch_slices<4096, 1024, 16, 8, float, true>},
        {"ev compact+slices 2k g16 u8", true, 2048, false, launch_slices<2048, 512, 16, 8, float, true>},
        {"ev scan slices 4k g16 u8", true, 4096, true, launch_slices<4096, 1024, 16, 8, float, false, true>},
        {"list count fit/1024 g16 u8", false, -1, false, launch_slices<4096, 1024, 16, 8, unsigned>},
        {"list lib int64 4k", false, 4096, false, launch_lib<long long>},
        {"list lib int32 4k", false, 4096, false, launch_lib<int>},
        {"list lib int64 fit", false, -1, false, launch_lib<long long>},
        {"list lib int32 fit", false, -1, false, launch_lib<int>},
        {"list lib int32 4k abs", false, 4096, false, launch_lib<int, true>},
        {"list lib int32 4k probe-loop", false, 4096, false, launch_lib<int, false, true>},
        {"list lib int32 4k abs probe-loop", false, 4096, false, launch_lib<int, true, true>},
        {"list lib int64 4k probe-loop", false, 4096, false, launch_lib<long long, false, true>},
    };
    struct Case { int n, len; double rate; } cases[] = {
        {4000, 80, 0.005}, {400000, 80, 0.005}, {500000, 2000, 0.004}, {100000, 1000, 0.01}};
    printf("%-24s %-30s %10s %10s %9s\n", "case", "variant", "event_us", "graph_us", "rel_err");
    for (auto c : cases) {
        Net n{};
        n.m = n.k = c.n, n.len = c.len;
        const long nnz = (long)c.n * c.len;
        CK(cudaMalloc(&n.indices, nnz * 4));
        if (uniform) make_rows_uniform<<<sms * 16, 256>>>(n);
        else make_rows<<<sms * 16, 256>>>(n);
        std::vector<u8> sp(c.n);
        std::vector<int> list;
        srand(7);
        for (int r = 0; r < c.n; r++)
            if ((sp[r] = (rand() / (double)RAND_MAX) < c.rate)) list.push_back(r);
        const int count = (int)list.size();
        n.spikes = upload(sp);
        n.list = upload(list.empty() ? std::vector<int>{0} : list);
        n.count = upload(std::vector<int>{count});
        n.done = upload(std::vector<int>{0});
        int* scratch_list;
        CK(cudaMalloc(&scratch_list, (size_t)c.n * 4));
        CK(cudaMalloc(&n.y, (size_t)c.n * 4 + 64 * 1024));
        float* ref;
        CK(cudaMalloc(&ref, (size_t)c.n * 4));
        CK(cudaMemset(ref, 0, (size_t)c.n * 4));
        ref_kernel<<<(c.n + 255) / 256, 256>>>(n, ref);
        std::vector<float> href(c.n);
        CK(cudaMemcpy(href.data(), ref, (size_t)c.n * 4, cudaMemcpyDeviceToHost));
        std::vector<std::pair<int, int*>> bounds_for, rel_for;  // by slice width
        {
            std::vector<int> ip(c.n + 1);
            for (int r = 0; r <= c.n; r++) ip[r] = r * c.len;
            n.indptr = upload(ip);
        }
        for (auto& v : variants) {
            Net vn = n;
            if (v.W) {
                const int w = v.W > 0 ? v.W : std::min(4096, (c.n + sms - 1) / sms + 31 & ~31);
                vn.W = w, vn.S = (c.n + w - 1) / w;
                auto hit = std::find_if(bounds_for.begin(), bounds_for.end(), [&](auto& b) { return b.first == w; });
                if (hit == bounds_for.end()) {
                    CK(cudaMalloc(&vn.bounds, (size_t)c.n * (vn.S + 1) * 4));
                    make_bounds<<<sms * 16, 256>>>(vn);
                    CK(cudaDeviceSynchronize());
                    bounds_for.push_back({w, vn.bounds});
                    CK(cudaMalloc(&vn.rel, (size_t)c.n * (vn.S + 1) * 4));
                    make_rel<<<sms * 16, 256>>>(vn);
                    CK(cudaDeviceSynchronize());
                    rel_for.push_back({w, vn.rel});
                } else {
                    vn.bounds = hit->second;
                    vn.rel = rel_for[hit - bounds_for.begin()].second;
                }
            }
            if (v.events && !v.scan) {
                vn.list = scratch_list;
                CK(cudaMalloc(&vn.count, 8));
                CK(cudaMemset(vn.count, 0, 8));
                vn.done = vn.count + 1;
            }
            if (v.scan && count > WIN) continue;
            CK(cudaMemsetAsync(vn.y, 0xff, (size_t)c.n * 4, s));  // poison
            v.launch(vn, s, sms);
            CK(cudaStreamSynchronize(s));
            CK(cudaGetLastError());
            const double err = v.launch == launch_empty ? 0 : max_error(vn.y, href);
            const Timing t = time_call(s, [&] { v.launch(vn, s, sms); });
            CK(cudaGetLastError());
            const double err2 = v.launch == launch_empty ? 0 : max_error(vn.y, href);
            char label[64];
            snprintf(label, sizeof label, "%d x%d %.1f%%", c.n, c.len, c.rate * 100);
            printf("%-24s %-30s %10.2f %10.2f %9.1e\n", label, v.name, t.event_us, t.graph_us, std::max(err, err2));
        }
        for (auto b : bounds_for) cudaFree(b.second);
        for (auto b : rel_for) cudaFree(b.second);
        cudaFree(n.indptr);
        cudaFree(n.indices), cudaFree(n.spikes), cudaFree(n.list), cudaFree(n.count), cudaFree(n.y), cudaFree(ref);
        cudaFree(scratch_list);
    }
    return 0;
}
