/* Host overhead of one evsparse call: the host time of an evs_spmv on a 64-row matrix on a CUDA
 * context, beside the driver's own cuLaunchKernel of a kernel as small, all in one process.
 * Each case is timed in bursts of BURST calls that start on an idle stream (so the launch queue
 * never fills and the GPU's time per kernel stays out of the number), and the bursts of all
 * cases are interleaved, round after round, so that the host's drift falls on every case alike.
 * Prints each case's median burst time per call, then the mean over 10,000 back-to-back calls
 * (which the GPU's launch throughput can bound). evsparse is timed as a plain C program calls it
 * (no CUDA context current on the thread: it pushes and pops the device's primary context around
 * each launch), with the primary context current (as under the CUDA runtime, torch or cupy), and
 * on a wrapped non-blocking stream. Built and run by the GPU check (.ci/gpu-check). */
#define _POSIX_C_SOURCE 199309L
#include <dlfcn.h>

#include "bench_util.h"

enum { N = 64, PER_ROW = 4, BURST = 200, ROUNDS = 101, CALLS = 10000 };

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

/* Device 0's primary context (the one the CUDA runtime and evsparse use), or NULL. */
static void *primary_context(void) {
    int device;
    void *context;
    return cu.init(0) == 0 && cu.device_get(&device, 0) == 0 && cu.retain(&context, device) == 0 ? context : NULL;
}

/* The floor under any library's launch: cuLaunchKernel straight from C of a kernel whose
 * parameter block has the size of evsparse's (ARGS_BYTES): an empty one, and one that spins
 * about as long as the 64-row spmv runs, so that the GPU is as busy as under evsparse. */
enum { ARGS_BYTES = 248 };
static const char FLOOR_PTX[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry empty(.param .align 8 .b8 args[248]) { ret; }\n"
    ".visible .entry spin(.param .align 8 .b8 args[248]) {\n"
    "  .reg .u64 %t<3>; .reg .pred %p;\n"
    "  mov.u64 %t0, %globaltimer;\n"
    "again:\n"
    "  mov.u64 %t1, %globaltimer; sub.u64 %t2, %t1, %t0; setp.lt.u64 %p, %t2, 2000;\n"
    "  @%p bra again;\n"
    "  ret;\n}\n";

enum { BLOCKING = 0, NON_BLOCKING = 1 }; /* cuStreamCreate flags */

/* One way to launch a tiny kernel: an evsparse call on `evs`, or a raw cuLaunchKernel of
 * `function` on `stream`; with the primary context current on the thread or not. */
typedef struct {
    const char *what;
    int context_current;
    evs_stream *evs;
    void *function, *stream;
    double per_call[ROUNDS];
} launch_case;

static evs_csr *a;
static evs_dense *x, *y;
static void *primary;

static void spmv(evs_stream *st) { EVS(evs_spmv(st, EVS_OP_N, EVS_INPUT_FLOAT, 1, a, x, 0, y)); }

/* The host time per call of one burst of `c`, which then waits for its stream. */
static double burst(const launch_case *c) {
    static double args[ARGS_BYTES / 8];
    void *params[] = {args};
    cu.set_current(c->context_current ? primary : NULL);
    double t0 = now_s();
    for (int i = 0; i < BURST; i++) {
        if (c->evs) {
            spmv(c->evs);
        } else {
            cu.launch(c->function, 1, 1, 1, 256, 1, 1, 0, c->stream, params, NULL);
        }
    }
    double per_call = (now_s() - t0) / BURST;
    if (c->evs) {
        EVS(evs_stream_synchronize(c->evs));
    } else {
        cu.synchronize(c->stream);
    }
    return per_call;
}

/* The mean host time of CALLS back-to-back calls, which the GPU's launch throughput can bound. */
static double back_to_back(evs_stream *st) {
    double t0 = now_s();
    for (int i = 0; i < CALLS; i++) spmv(st);
    double t1 = now_s();
    EVS(evs_stream_synchronize(st));
    return (t1 - t0) / CALLS;
}

static void *new_stream(unsigned flags) {
    void *s = NULL;
    return cu.stream_create(&s, flags) == 0 ? s : NULL;
}

int main(void) {
    int32_t indptr[N + 1], indices[N * PER_ROW];
    for (int i = 0; i <= N; i++) indptr[i] = i * PER_ROW;
    for (int j = 0; j < N * PER_ROW; j++) indices[j] = (j * 7) % N;
    evs_context *ctx;
    evs_stream *st, *wrapped;
    EVS(evs_context_create(EVS_DEVICE_CUDA, 0, &ctx));
    EVS(evs_stream_create(ctx, &st));
    EVS(evs_csr_create(ctx, N, N, N * PER_ROW, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, NULL, 1.0, &a));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &x));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, N, &y));
    EVS(evs_dense_fill(st, x, 1.0));
    void *module, *empty, *spin;
    if (!load_driver() || !(primary = primary_context()) || cu.set_current(primary) != 0 ||
        cu.load(&module, FLOOR_PTX) != 0 || cu.function(&empty, module, "empty") != 0 ||
        cu.function(&spin, module, "spin") != 0) {
        fprintf(stderr, "host overhead: could not load the floor kernels through libcuda\n");
        return 1;
    }
    void *blocking = new_stream(BLOCKING), *non_blocking = new_stream(NON_BLOCKING);
    EVS(evs_stream_wrap(ctx, non_blocking, &wrapped));
    launch_case cases[] = {
        {"evs_spmv from C, no CUDA context current", 0, st, NULL, NULL, {0}},
        {"evs_spmv from C, the primary context current (as under the CUDA runtime)", 1, st, NULL, NULL, {0}},
        {"evs_spmv from C, the primary context current, on a wrapped non-blocking stream", 1, wrapped, NULL, NULL, {0}},
        {"driver floor: cuLaunchKernel of an empty kernel, blocking stream", 1, NULL, empty, blocking, {0}},
        {"driver floor: cuLaunchKernel of an empty kernel, non-blocking stream", 1, NULL, empty, non_blocking, {0}},
        {"driver floor: cuLaunchKernel of a 2 us kernel, blocking stream", 1, NULL, spin, blocking, {0}},
        {"driver floor: cuLaunchKernel of a 2 us kernel, non-blocking stream", 1, NULL, spin, non_blocking, {0}},
    };
    enum { CASES = sizeof cases / sizeof *cases };
    for (int c = 0; c < CASES; c++) burst(&cases[c]); /* warm-up */
    for (int r = 0; r < ROUNDS; r++) {
        for (int c = 0; c < CASES; c++) cases[c].per_call[r] = burst(&cases[c]);
    }
    printf("host overhead (%s; median of %d interleaved bursts of %d calls on an idle stream; %d-byte parameter "
           "blocks):\n",
           evs_last_plan(), ROUNDS, BURST, ARGS_BYTES);
    for (int c = 0; c < CASES; c++) {
        qsort(cases[c].per_call, ROUNDS, sizeof(double), by_value);
        printf("  %.2f us  %s\n", cases[c].per_call[ROUNDS / 2] * 1e6, cases[c].what);
    }
    cu.set_current(NULL);
    printf("  %.2f us  evs_spmv from C, no CUDA context current, mean of %d back-to-back calls\n",
           back_to_back(st) * 1e6, CALLS);
    EVS(evs_stream_destroy(wrapped));
    evs_dense_destroy(x);
    evs_dense_destroy(y);
    evs_csr_destroy(a);
    evs_stream_destroy(st);
    evs_context_destroy(ctx);
    return 0;
}
