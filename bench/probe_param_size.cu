// What a kernel's parameter block costs a launch (issue #8): the library passes one Args of 328
// bytes to every kernel, the probes ~130; bench/probe_post_rows.cu `lib` measured the same
// kernel body 0.4 graph µs slower on the library's Args. Empty kernels (wait, one read of the
// first word, exit) with parameter blocks of 8 to 4,096 bytes, launched as the library launches
// (programmatic stream serialization), 396 x 512 and 132 x 128; graph and event µs per call.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/probe_param_size.cu -o /tmp/pps && /tmp/pps
#include "probe.cuh"

template <int BYTES> struct Params {
    long long w[BYTES / 8];
};

template <int BYTES> __global__ void __launch_bounds__(512) empty(const Params<BYTES> p, float* out) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (p.w[0] == 12345 && threadIdx.x == 0) out[blockIdx.x] = 1.f;  // never: keeps the read
}

template <int BYTES> void row(cudaStream_t s, int blocks, int threads, float* out) {
    const Params<BYTES> p = {};
    const Timing t = time_call(s, [&] { launch_overlapped(s, empty<BYTES>, dim3(blocks), dim3(threads), p, out); });
    printf("| %d | %d x %d | %.2f | %.2f |\n", BYTES, blocks, threads, t.graph_us, t.event_us);
}

int main() {
    cudaStream_t s = probe_stream();
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float* out = zeroed_floats(4096);
    printf("| parameter bytes | blocks x threads | graph µs | event µs |\n|---|---|---|---|\n");
    for (int round = 0; round < 2; round++)
        for (int shape = 0; shape < 2; shape++) {
            const int blocks = shape ? sms : sms * 3, threads = shape ? 128 : 512;
            row<8>(s, blocks, threads, out);
            row<128>(s, blocks, threads, out);
            row<256>(s, blocks, threads, out);
            row<328>(s, blocks, threads, out);
            row<512>(s, blocks, threads, out);
            row<1024>(s, blocks, threads, out);
            row<4096>(s, blocks, threads, out);
        }
}
