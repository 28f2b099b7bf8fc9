/* Host overhead of one evsparse call: the host time of an evs_spmv on a 64-row matrix on a CUDA
 * context, measured in bursts of BURST calls that start on an idle stream, so the launch queue
 * never fills and the GPU's own time per kernel stays out of the number. Prints the median
 * burst's time per call, and the mean over 10,000 back-to-back calls (which the GPU's launch
 * throughput can bound) for comparison; once as a plain C program (no CUDA context current on
 * the thread: evsparse pushes and pops the device's primary context around each launch) and
 * once with the primary context current, as it is under the CUDA runtime, torch or cupy.
 * Built and run by the GPU check (.ci/gpu-check). */
#define _POSIX_C_SOURCE 199309L
#include <dlfcn.h>

#include "bench_util.h"

enum { N = 64, PER_ROW = 4, BURST = 200, BURSTS = 51, CALLS = 10000 };

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The driver entry points the probe uses, loaded at run time so that it builds without CUDA. */
static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*load)(void **, const void *);
    int (*function)(void **, void *, const char *);
    int (*stream_create)(void **, unsigned);
    int (*synchronize)(void *);
    int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                  void **);
} cu;

static int load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return 0;
    /* POSIX's way to take a function from dlsym without an object-to-function pointer cast */
    *(void **)&cu.init = dlsym(lib, "cuInit");
    *(void **)&cu.device_get = dlsym(lib, "cuDeviceGet");
    *(void **)&cu.retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.set_current = dlsym(lib, "cuCtxSetCurrent");
    *(void **)&cu.load = dlsym(lib, "cuModuleLoadData");
    *(void **)&cu.function = dlsym(lib, "cuModuleGetFunction");
    *(void **)&cu.stream_create = dlsym(lib, "cuStreamCreate");
    *(void **)&cu.synchronize = dlsym(lib, "cuStreamSynchronize");
    *(void **)&cu.launch = dlsym(lib, "cuLaunchKernel");
    return cu.init && cu.device_get && cu.retain && cu.set_current && cu.load && cu.function && cu.stream_create &&
           cu.synchronize && cu.launch;
}

/* Makes device 0's primary context current (what the CUDA runtime does on its first call). */
static int make_primary_context_current(void) {
    int device;
    void *context;
    return cu.init(0) == 0 && cu.device_get(&device, 0) == 0 && cu.retain(&context, device) == 0 &&
           cu.set_current(context) == 0;
}

/* The floor under any library's launch: cuLaunchKernel of an empty kernel whose parameter block
 * has the size of evsparse's (ARGS_BYTES), straight from C, timed the same way. */
enum { ARGS_BYTES = 248 };
static const char EMPTY_PTX[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry empty(.param .align 8 .b8 args[248]) { ret; }\n"
    ".visible .entry empty_small(.param .u64 arg) { ret; }\n";

enum { BLOCKING = 0, NON_BLOCKING = 1 }; /* cuStreamCreate flags */

static void measure_driver_floor(const char *kernel, int bytes, unsigned stream_flags) {
    void *module, *function, *stream;
    if (cu.load(&module, EMPTY_PTX) != 0 || cu.function(&function, module, kernel) != 0 ||
        cu.stream_create(&stream, stream_flags) != 0) {
        printf("driver floor: could not load the empty kernel\n");
        return;
    }
    static double args[ARGS_BYTES / 8];
    void *params[] = {args};
    double per_call[BURSTS];
    for (int b = 0; b < BURSTS; b++) {
        double t0 = now_s();
        for (int i = 0; i < BURST; i++) cu.launch(function, 1, 1, 1, 256, 1, 1, 0, stream, params, NULL);
        per_call[b] = (now_s() - t0) / BURST;
        cu.synchronize(stream);
    }
    qsort(per_call, BURSTS, sizeof *per_call, by_value);
    printf("driver floor: %.2f us per cuLaunchKernel of an empty kernel with a %d-byte parameter block on a %s "
           "stream, from C (median of %d bursts of %d)\n",
           per_call[BURSTS / 2] * 1e6, bytes, stream_flags == NON_BLOCKING ? "non-blocking" : "blocking", BURSTS,
           BURST);
}

static void measure(const char *how, evs_stream *st, evs_csr *a, evs_dense *x, evs_dense *y) {
    for (int i = 0; i < 100; i++) EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y));
    EVS(evs_stream_synchronize(st));

    double per_call[BURSTS];
    for (int b = 0; b < BURSTS; b++) {
        double t0 = now_s();
        for (int i = 0; i < BURST; i++) EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y));
        per_call[b] = (now_s() - t0) / BURST;
        EVS(evs_stream_synchronize(st));
    }
    qsort(per_call, BURSTS, sizeof *per_call, by_value);

    double t0 = now_s();
    for (int i = 0; i < CALLS; i++) EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y));
    double t1 = now_s();
    EVS(evs_stream_synchronize(st));
    printf("host overhead: %.2f us per evs_spmv call from C, %s (%s; median of %d bursts of %d calls on an idle "
           "stream; %.2f us per call over %d back-to-back calls)\n",
           per_call[BURSTS / 2] * 1e6, how, evs_last_plan(), BURSTS, BURST, (t1 - t0) * 1e6 / CALLS, CALLS);
}

int main(void) {
    int32_t indptr[N + 1], indices[N * PER_ROW];
    for (int i = 0; i <= N; i++) indptr[i] = i * PER_ROW;
    for (int j = 0; j < N * PER_ROW; j++) indices[j] = (j * 7) % N;
    evs_context *ctx;
    evs_stream *st;
    evs_csr *a;
    evs_dense *x, *y;
    EVS(evs_context_create(EVS_DEVICE_CUDA, 0, &ctx));
    EVS(evs_stream_create(ctx, &st));
    EVS(evs_csr_create(ctx, N, N, N * PER_ROW, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, NULL, 1.0, &a));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &x));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &y));
    EVS(evs_dense_fill(st, x, 1.0));
    measure("no CUDA context current", st, a, x, y);
    if (load_driver() && make_primary_context_current()) {
        measure("the primary context current (as under the CUDA runtime)", st, a, x, y);
        void *native;
        evs_stream *wrapped;
        if (cu.stream_create(&native, NON_BLOCKING) == 0 && evs_stream_wrap(ctx, native, &wrapped) == EVS_SUCCESS) {
            measure("the primary context current, on a wrapped non-blocking stream", wrapped, a, x, y);
            EVS(evs_stream_destroy(wrapped));
        }
        measure_driver_floor("empty", ARGS_BYTES, BLOCKING);
        measure_driver_floor("empty_small", 8, BLOCKING);
        measure_driver_floor("empty", ARGS_BYTES, NON_BLOCKING);
    } else {
        printf("host overhead: could not make the primary context current through libcuda\n");
    }
    evs_dense_destroy(x);
    evs_dense_destroy(y);
    evs_csr_destroy(a);
    evs_stream_destroy(st);
    evs_context_destroy(ctx);
    return 0;
}
