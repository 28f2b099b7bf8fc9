// Tuning probe for spmm on bool events (issue #8: A 10000² x 200/row, B 10000 x n bool, 10 %
// active), standalone: every variant on the same random matrices in one run, N (CSR rows) and
// T (CSC mirror, weights through perm), hetero and homo weights, checked against a plain
// kernel (bench/NOTES.md, "spmm on events"; the library kept staged2). pack_only times the
// packing pass alone (its error column is meaningless). Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_spmm_events.cu -o /tmp/p && /tmp/p
#include "probe.cuh"

typedef unsigned char u8;

// One product: lines (rows of A for N, CSC columns for T) gather rows of B.
struct Prob {
    int lines, k, n;          // output rows, B rows, columns
    const long* begin;        // line pointers (lines + 1)
    const int* src;           // B row of each entry
    const long* perm;         // T: CSR position of each entry (weights[perm[p]]), N: NULL
    const float* w;           // weights (NULL: homo)
    float homo;
    const u8* b;              // B, k x n, row stride n
    unsigned* bits;           // packed B: k x words
    int words;                // ceil(n / 32)
    float* c;                 // C, lines x n
};

__device__ __forceinline__ float weight(const Prob& p, long e) {
    if (!p.w) return p.homo;
    return p.w[p.perm ? p.perm[e] : e];
}

// Reference: a thread per output element.
__global__ void ref_kernel(Prob p) {
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (t >= (long)p.lines * p.n) return;
    int i = t / p.n, c = t % p.n;
    float acc = 0;
    for (long e = p.begin[i]; e < p.begin[i + 1]; e++)
        if (p.b[(long)p.src[e] * p.n + c]) acc += weight(p, e);
    p.c[t] = acc;
}

// B's events as bits: word w of row r holds columns 32w .. 32w + 31. A warp per word.
__global__ void pack_bits(Prob p) {
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long total = (long)p.k * p.words * 32;
    if (t >= total) return;  // total is a multiple of 32: whole warps leave
    int row = t / (p.words * 32), c = t % (p.words * 32);
    bool live = c < p.n && p.b[(long)row * p.n + c];
    unsigned ballot = __ballot_sync(~0u, live);
    if ((threadIdx.x & 31) == 0) p.bits[(long)row * p.words + c / 32] = ballot;
}

// Baseline (today's kernel): a warp per (line, 64 columns), lane l columns 2l and 2l + 1 read as
// one 2-byte load of B.
__global__ void pairs(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.lines) return;
    int c0 = blockIdx.y * 64 + 2 * lane;
    float a0 = 0, a1 = 0;
    long b = p.begin[i], e = p.begin[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0;
        float w = 0;
        if (base + lane < e) s = p.src[base + lane], w = weight(p, base + lane);
        int cnt = (int)min(32L, e - base);
        for (int q = 0; q < cnt; q++) {
            int j = __shfl_sync(~0u, s, q);
            float we = __shfl_sync(~0u, w, q);
            if (c0 < p.n) {
                uchar2 v = *(const uchar2*)(p.b + (long)j * p.n + c0);
                if (v.x) a0 += we;
                if (v.y) a1 += we;
            }
        }
    }
    if (c0 < p.n) p.c[(long)i * p.n + c0] = a0, p.c[(long)i * p.n + c0 + 1] = a1;
}

// A warp per (line, 128 columns), lane l columns 4l .. 4l + 3: a 4-bit nibble of the packed
// row per entry (BITS) or a 4-byte load of B itself (!BITS).
template <bool BITS> __global__ void quad(Prob p) {
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.lines) return;
    int c0 = blockIdx.y * 128 + 4 * lane;
    int word = c0 / 32, shift = c0 % 32;
    bool has = c0 < p.n;
    float a[4] = {0, 0, 0, 0};
    long b = p.begin[i], e = p.begin[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0;
        float w = 0;
        if (base + lane < e) s = p.src[base + lane], w = weight(p, base + lane);
        int cnt = (int)min(32L, e - base);
#pragma unroll 4
        for (int q = 0; q < cnt; q++) {
            int j = __shfl_sync(~0u, s, q);
            float we = __shfl_sync(~0u, w, q);
            unsigned v = 0;
            if (BITS) {
                if (has) v = (__ldg(p.bits + (long)j * p.words + word) >> shift) & 15u;
                for (int u = 0; u < 4; u++)
                    if (v & (1u << u)) a[u] += we;
            } else {
                if (has) v = __ldg((const unsigned*)(p.b + (long)j * p.n + c0));
                for (int u = 0; u < 4; u++)
                    if (v & (0xffu << 8 * u)) a[u] += we;
            }
        }
    }
    if (has) *(float4*)(p.c + (long)i * p.n + c0) = make_float4(a[0], a[1], a[2], a[3]);
}

// A warp per (line, 128 columns) as two halves, each taking every other entry; lane l of a half
// owns columns 8l .. 8l + 7, a byte of the packed row. COUNT (homo weights): the byte adds into
// eight 4-bit counters through a table, flushed every 15 entries.
template <bool COUNT> __global__ void octet(Prob p) {
    __shared__ unsigned spread[256];
    for (int t = threadIdx.x; t < 256; t += blockDim.x) {
        unsigned s = 0;
        for (int u = 0; u < 8; u++) s |= ((t >> u) & 1u) << (4 * u);
        spread[t] = s;
    }
    __syncthreads();
    int i = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (i >= p.lines) return;
    int half = lane >> 4, hl = lane & 15;
    int c0 = blockIdx.y * 128 + 8 * hl;
    int word = c0 / 32, shift = c0 % 32;
    bool has = c0 < p.n;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    unsigned nib = 0;
    int pending = 0;
    long b = p.begin[i], e = p.begin[i + 1];
    for (long base = b; base < e; base += 32) {
        int s = 0;
        float w = 0;
        if (base + lane < e) s = p.src[base + lane], w = COUNT ? 0.f : weight(p, base + lane);
        int cnt = (int)min(32L, e - base);
#pragma unroll 2
        for (int q = 0; q < cnt; q += 2) {
            int me = q + half;
            int j = __shfl_sync(~0u, s, me & 31);
            float we = COUNT ? 0.f : __shfl_sync(~0u, w, me & 31);
            unsigned v = 0;
            if (has && me < cnt) v = (__ldg(p.bits + (long)j * p.words + word) >> shift) & 255u;
            if (COUNT) {
                nib += spread[v];
                if (++pending == 15) {
                    for (int u = 0; u < 8; u++) a[u] += (float)((nib >> 4 * u) & 15u);
                    nib = 0, pending = 0;
                }
            } else {
                for (int u = 0; u < 8; u++)
                    if (v & (1u << u)) a[u] += we;
            }
        }
    }
    if (COUNT)
        for (int u = 0; u < 8; u++) a[u] = (a[u] + (float)((nib >> 4 * u) & 15u)) * p.homo;
    for (int u = 0; u < 8; u++) a[u] += __shfl_xor_sync(~0u, a[u], 16);
    if (has && half == 0) {
        float* out = p.c + (long)i * p.n + c0;
        *(float4*)out = make_float4(a[0], a[1], a[2], a[3]);
        *(float4*)(out + 4) = make_float4(a[4], a[5], a[6], a[7]);
    }
}


// B's events as bits, rows padded to `words` (a multiple of 4): a warp per (row, 128 columns),
// lane l reads columns 4l .. 4l + 3 with one 4-byte load, makes their nibble, and eight lanes
// OR theirs into a word.
__global__ void pack_quads(Prob p) {
    const int tiles = p.words / 4;
    const long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= (long)p.k * tiles) return;
    const long row = warp / tiles;
    const int c = (int)(warp % tiles) * 128 + 4 * lane;
    unsigned nib = 0;
    if (c + 3 < p.n) {
        const unsigned x = __vcmpne4(*(const unsigned*)(p.b + row * p.n + c), 0) & 0x01010101u;
        nib = (x * 0x01020408u) >> 24;
    } else {
        for (int u = 0; u < 4; u++) nib |= (unsigned)(c + u < p.n && p.b[row * p.n + c + u]) << u;
    }
    unsigned word = nib << (4 * (lane & 7));
    word |= __shfl_xor_sync(~0u, word, 1);
    word |= __shfl_xor_sync(~0u, word, 2);
    word |= __shfl_xor_sync(~0u, word, 4);
    if ((lane & 7) == 0) p.bits[row * p.words + c / 32] = word;
}

// octet with the batch's bits staged: lane q loads entry q's 128 bits (16 bytes) of the packed
// row into shared memory, all 32 loads in flight, then the halves read their bytes from there.
template <bool COUNT> __global__ void __launch_bounds__(256) staged(Prob p) {
    __shared__ unsigned spread[256];
    __shared__ uint4 stage[8][32];
    for (int t = threadIdx.x; t < 256; t += blockDim.x) {
        unsigned s = 0;
        for (int u = 0; u < 8; u++) s |= ((t >> u) & 1u) << (4 * u);
        spread[t] = s;
    }
    __syncthreads();
    const int wib = threadIdx.x / 32, lane = threadIdx.x & 31;
    const int i = blockIdx.x * 8 + wib;
    if (i >= p.lines) return;
    const int half = lane >> 4, hl = lane & 15;
    const int c0 = blockIdx.y * 128 + 8 * hl;
    const int sub = hl >> 2, shift = 8 * (hl & 3);
    const bool has = c0 < p.n;
    const unsigned* staged_words = (const unsigned*)stage[wib];
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    unsigned nib = 0;
    int pending = 0;
    const long b = p.begin[i], e = p.begin[i + 1];
    for (long base = b; base < e; base += 32) {
        float w = 0;
        uint4 bits = make_uint4(0, 0, 0, 0);
        if (base + lane < e) {
            const int j = p.src[base + lane];
            if (!COUNT) w = weight(p, base + lane);
            bits = __ldg((const uint4*)(p.bits + (long)j * p.words) + blockIdx.y);
        }
        __syncwarp();
        stage[wib][lane] = bits;
        __syncwarp();
        const int cnt = (int)min(32L, e - base);
#pragma unroll 4
        for (int q = 0; q < cnt; q += 2) {
            const int me = q + half;
            const float we = COUNT ? 0.f : __shfl_sync(~0u, w, me & 31);
            unsigned v = me < cnt ? (staged_words[4 * me + sub] >> shift) & 255u : 0u;
            if (!has) v = 0;
            if (COUNT) {
                nib += spread[v];
                if (++pending == 15) {
                    for (int u = 0; u < 8; u++) a[u] += (float)((nib >> 4 * u) & 15u);
                    nib = 0, pending = 0;
                }
            } else {
                for (int u = 0; u < 8; u++)
                    if (v & (1u << u)) a[u] += we;
            }
        }
    }
    if (COUNT)
        for (int u = 0; u < 8; u++) a[u] = (a[u] + (float)((nib >> 4 * u) & 15u)) * p.homo;
    for (int u = 0; u < 8; u++) a[u] += __shfl_xor_sync(~0u, a[u], 16);
    if (has && half == 0) {
        float* out = p.c + (long)i * p.n + c0;
        *(float4*)out = make_float4(a[0], a[1], a[2], a[3]);
        *(float4*)(out + 4) = make_float4(a[4], a[5], a[6], a[7]);
    }
}


// staged, fewer instructions per step: the stage has a zero slot past the batch (entries past
// the batch read zero bits, so no bounds test), each lane loads its own byte (ld.shared.u8),
// full batches run unrolled.
template <bool HOMO> __global__ void __launch_bounds__(256) staged2(Prob p) {
    __shared__ uint4 stage[8][33];
    const int wib = threadIdx.x / 32, lane = threadIdx.x & 31;
    const int i = blockIdx.x * 8 + wib;
    if (lane == 0) stage[wib][32] = make_uint4(0, 0, 0, 0);
    if (i >= p.lines) return;
    const int half = lane >> 4, hl = lane & 15;
    const int c0 = blockIdx.y * 128 + 8 * hl;
    const unsigned char* my_bytes = (const unsigned char*)stage[wib] + 16 * half + hl;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const long b = p.begin[i], e = p.begin[i + 1];
    auto step = [&](int q, float w) {
        const float we = HOMO ? p.homo : __shfl_sync(~0u, w, (q + half) & 31);
        const unsigned v = my_bytes[16 * q];
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (v & (1u << u)) a[u] += we;
    };
    for (long base = b; base < e; base += 32) {
        float w = 0;
        uint4 bits = make_uint4(0, 0, 0, 0);
        if (base + lane < e) {
            const int j = p.src[base + lane];
            if (!HOMO) w = weight(p, base + lane);
            bits = __ldg((const uint4*)(p.bits + (long)j * p.words) + blockIdx.y);
        }
        __syncwarp();
        stage[wib][lane] = bits;
        __syncwarp();
        const int cnt = (int)min(32L, e - base);
        if (cnt == 32) {
#pragma unroll
            for (int q = 0; q < 32; q += 2) step(q, w);
        } else {
            for (int q = 0; q < cnt; q += 2) step(q, w);
        }
    }
    for (int u = 0; u < 8; u++) a[u] += __shfl_xor_sync(~0u, a[u], 16);
    if (c0 < p.n && half == 0) {
        float* out = p.c + (long)i * p.n + c0;
        *(float4*)out = make_float4(a[0], a[1], a[2], a[3]);
        *(float4*)(out + 4) = make_float4(a[4], a[5], a[6], a[7]);
    }
}

struct Variant { const char* name; int kind; };  // 0 pairs, 1 quad bits, 2 quad bytes, 3 octet, 4 octet count

void launch(const Prob& p, int kind, cudaStream_t s) {
    unsigned rows = (p.lines + 7) / 8;
    if (kind == 0) { pairs<<<dim3(rows, (p.n + 63) / 64), 256, 0, s>>>(p); return; }
    if (kind >= 5) {
        long warps = (long)p.k * (p.words / 4);
        pack_quads<<<(warps + 7) / 8, 256, 0, s>>>(p);
    } else if (kind != 2) {
        long total = (long)p.k * p.words * 32;
        pack_bits<<<(total + 255) / 256, 256, 0, s>>>(p);
    }
    dim3 grid(rows, (p.n + 127) / 128);
    if (kind == 1) quad<true><<<grid, 256, 0, s>>>(p);
    if (kind == 2) quad<false><<<grid, 256, 0, s>>>(p);
    if (kind == 3) octet<false><<<grid, 256, 0, s>>>(p);
    if (kind == 4) octet<true><<<grid, 256, 0, s>>>(p);
    if (kind == 5) staged<false><<<grid, 256, 0, s>>>(p);
    if (kind == 6) staged<true><<<grid, 256, 0, s>>>(p);
    if (kind == 7) { if (p.w) staged2<false><<<grid, 256, 0, s>>>(p); else staged2<true><<<grid, 256, 0, s>>>(p); }
    if (kind == 8) {}
}

int main() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const Variant variants[] = {{"pairs", 0},     {"quad_bits", 1},    {"quad_bytes", 2}, {"octet_bits", 3}, {"octet_count", 4},
                                {"staged", 5},    {"staged_count", 6}, {"staged2", 7},    {"pack_only", 8}};
    struct Case { int m, per_row, n; double rate; } cases[] = {{10000, 200, 128, 0.10}, {10000, 200, 64, 0.10}, {10000, 200, 256, 0.10}, {100000, 50, 128, 0.10}};
    printf("%-26s %-4s %-6s %-12s %10s %10s %8s\n", "case", "op", "w", "variant", "event_us", "graph_us", "maxerr");
    for (auto c : cases) {
        srand(1);
        int m = c.m, k = c.m, n = c.n;
        long nnz = (long)m * c.per_row;
        std::vector<long> ip(m + 1);
        std::vector<int> ix(nnz);
        std::vector<float> w(nnz);
        for (int r = 0; r <= m; r++) ip[r] = (long)r * c.per_row;
        for (long p = 0; p < nnz; p++) ix[p] = rand() % k, w[p] = (rand() % 1000) / 1000.f;
        for (int r = 0; r < m; r++) std::sort(ix.begin() + ip[r], ix.begin() + ip[r + 1]);
        // CSC mirror
        std::vector<long> cp(k + 1, 0), perm(nnz);
        std::vector<int> ri(nnz);
        for (long p = 0; p < nnz; p++) cp[ix[p] + 1]++;
        for (int j = 0; j < k; j++) cp[j + 1] += cp[j];
        std::vector<long> fill(cp.begin(), cp.end() - 1);
        for (int r = 0; r < m; r++)
            for (long p = ip[r]; p < ip[r + 1]; p++) { long q = fill[ix[p]]++; ri[q] = r, perm[q] = p; }
        std::vector<u8> bh((long)std::max(m, k) * n);
        for (auto& v : bh) v = (rand() / (double)RAND_MAX) < c.rate;
        long* d_ip = upload(ip); int* d_ix = upload(ix); float* d_w = upload(w);
        long* d_cp = upload(cp); int* d_ri = upload(ri); long* d_perm = upload(perm);
        u8* d_b = upload(bh);
        int words = (n + 31) / 32;
        unsigned* d_bits; CK(cudaMalloc(&d_bits, (long)std::max(m, k) * ((n + 127) / 128 * 4) * 4));
        float *d_c, *d_ref;
        CK(cudaMalloc(&d_c, (long)std::max(m, k) * n * 4));
        CK(cudaMalloc(&d_ref, (long)std::max(m, k) * n * 4));
        for (int op = 0; op < 2; op++)
            for (int homo = 0; homo < 2; homo++) {
                Prob p;
                p.n = n, p.b = d_b, p.bits = d_bits, p.words = words, p.homo = 0.5f;
                p.w = homo ? nullptr : d_w;
                if (op == 0) p.lines = m, p.k = k, p.begin = d_ip, p.src = d_ix, p.perm = nullptr;
                else p.lines = k, p.k = m, p.begin = d_cp, p.src = d_ri, p.perm = d_perm;
                long outs = (long)p.lines * n;
                Prob rp = p; rp.c = d_ref;
                ref_kernel<<<(outs + 255) / 256, 256>>>(rp);
                CK(cudaDeviceSynchronize());
                std::vector<float> href(outs);
                CK(cudaMemcpy(href.data(), d_ref, outs * 4, cudaMemcpyDeviceToHost));
                p.c = d_c;
                for (auto& v : variants) {
                    if ((v.kind == 4 || v.kind == 6) && !homo) continue;  // counters: homo only
                    p.words = v.kind >= 5 ? (n + 127) / 128 * 4 : words;
                    auto call = [&] { launch(p, v.kind, s); };
                    CK(cudaMemsetAsync(d_c, 0xff, outs * 4, s));
                    call();
                    CK(cudaStreamSynchronize(s));
                    CK(cudaGetLastError());
                    const double err = max_error(d_c, href);
                    const Timing t = time_call(s, call);
                    char label[64];
                    snprintf(label, sizeof label, "%d x%d n%d %.0f%%", m, c.per_row, n, c.rate * 100);
                    printf("%-26s %-4s %-6s %-12s %10.2f %10.2f %8.1e\n", label, op ? "T" : "N", homo ? "homo" : "het", v.name,
                           t.event_us, t.graph_us, err);
                }
            }
        // the packing passes alone
        {
            Prob p;
            p.k = k, p.n = n, p.b = d_b, p.bits = d_bits, p.words = words;
            const long total = (long)k * words * 32;
            printf("pack alone k=%d n=%d: %.2f us\n", k, n, time_call(s, [&] { pack_bits<<<(total + 255) / 256, 256, 0, s>>>(p); }).event_us);
            p.words = (n + 127) / 128 * 4;
            const long warps = (long)k * (p.words / 4);
            printf("pack_quads alone k=%d n=%d: %.2f us\n", k, n, time_call(s, [&] { pack_quads<<<(warps + 7) / 8, 256, 0, s>>>(p); }).event_us);
        }
        cudaFree(d_ip); cudaFree(d_ix); cudaFree(d_w); cudaFree(d_cp); cudaFree(d_ri); cudaFree(d_perm);
        cudaFree(d_b); cudaFree(d_bits); cudaFree(d_c); cudaFree(d_ref);
    }
    return 0;
}
