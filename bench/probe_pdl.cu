// Programmatic dependent launch (Hopper): what a chain of small dependent kernels costs per
// kernel, in a stream and replayed from a graph, launched plainly or with the programmatic
// stream serialization attribute (each kernel waits for its predecessor's memory with
// griddepcontrol.wait; `trigger` kernels also let their dependents launch early).
#include "probe.cuh"

constexpr int CHAIN = 7;

enum Mode { PLAIN, WAIT, WAIT_TRIGGER };

// Every block reads the previous kernel's value and writes its own: a true dependency chain.
template <Mode M> __global__ void link(float* buf, int i, int work) {
    if (M == WAIT_TRIGGER) asm volatile("griddepcontrol.launch_dependents;");
    if (M != PLAIN) asm volatile("griddepcontrol.wait;" ::: "memory");
    float v = buf[i] + 1.0f;
    for (int r = 0; r < work; r++) v = v * 0.999f + buf[(threadIdx.x + r * 97) & 1023];
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) buf[i + 1] = v;
}

template <Mode M> void chain(cudaStream_t s, float* buf, int blocks, int work) {
    for (int i = 0; i < CHAIN; i++) {
        if (M != PLAIN) {
            launch_overlapped(s, link<M>, blocks, 256, buf, i, work);
            continue;
        }
        link<M><<<blocks, 256, 0, s>>>(buf, i, work);
        CK(cudaGetLastError());
    }
}

int main() {
    cudaStream_t s = probe_stream();
    float* buf = zeroed_floats(4096);
    CK(cudaDeviceSynchronize());
    printf("| blocks | work | plain stream/graph µs per kernel | wait | wait + early trigger |\n|---|---|---|---|---|\n");
    for (int blocks : {1, 16, 132, 528})
        for (int work : {0, 64}) {
            Timing t[3] = {time_call(s, [&] { chain<PLAIN>(s, buf, blocks, work); }),
                           time_call(s, [&] { chain<WAIT>(s, buf, blocks, work); }),
                           time_call(s, [&] { chain<WAIT_TRIGGER>(s, buf, blocks, work); })};
            printf("| %d | %d |", blocks, work);
            for (auto& x : t) printf(" %.2f / %.2f |", x.event_us / CHAIN, x.graph_us / CHAIN);
            printf("\n");
        }
}
