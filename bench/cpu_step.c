/* Per-call cost of a simulator's step on the CPU backend: spmv T on events (spikes in, synaptic
 * currents added into the output, beta = 1), through the C API as a simulator calls it, the
 * same with the matrix stored the other way round (N, through the CSC mirror), and the
 * plasticity of the spiking neurons' synapses (CSR, pre and post, on the same spike vectors).
 * Networks: 4,000 neurons x 80 synapses with about 20 spikes per step, and 400,000 x 80 with
 * 0.5% spiking. Each step draws fresh spikes; the time per call is the median over bursts of
 * STEPS calls (the spike vectors are drawn beforehand), with EVS_NUM_THREADS threads (default:
 * all cores). Prints one markdown row per network. Run by `make bench-cpu`. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <string.h>

#include "bench_util.h"

enum { STEPS = 200, BURSTS = 31, VECTORS = 16 };

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t next(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

enum Call { PROPAGATE, PLASTICITY_PRE, PLASTICITY_POST };

static void step_cost(enum Call call, evs_op op, int neurons, int per_row, double active_fraction, const char *threads) {
    long long nnz = (long long)neurons * per_row;
    int32_t *indptr = malloc((neurons + 1) * sizeof *indptr), *indices = malloc(nnz * sizeof *indices);
    float *w = malloc(nnz * sizeof *w);
    for (int i = 0; i <= neurons; i++) indptr[i] = i * per_row;
    for (long long j = 0; j < nnz; j++) indices[j] = (int32_t)(next() % neurons), w[j] = (float)(next() % 1000) * 1e-3f;
    evs_context *ctx;
    evs_stream *st;
    evs_csr *a;
    EVS(evs_context_create(EVS_DEVICE_CPU, 0, &ctx));
    EVS(evs_stream_create(ctx, &st));
    EVS(evs_csr_create(ctx, neurons, neurons, nnz, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, w, 0, &a));
    EVS(evs_csr_analyse(st, a));

    /* VECTORS spike vectors of fresh random spikes, used in turn */
    evs_dense *spikes[VECTORS], *current;
    uint8_t *host = calloc(neurons, 1);
    long long spiking = 0;
    for (int v = 0; v < VECTORS; v++) {
        memset(host, 0, neurons);
        for (int i = 0; i < neurons; i++) host[i] = (next() % 1000000) < active_fraction * 1e6;
        for (int i = 0; i < neurons; i++) spiking += host[i];
        EVS(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, neurons, &spikes[v]));
        EVS(evs_dense_copy_from_host(st, spikes[v], host, neurons));
    }
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, neurons, &current));
    EVS(evs_dense_fill(st, current, 0.0));

    double per_call[BURSTS];
    for (int b = -1; b < BURSTS; b++) { /* burst -1 warms up */
        double t0 = now_s();
        for (int s = 0; s < STEPS; s++) {
            evs_dense *fired = spikes[s % VECTORS];
            if (call == PROPAGATE) EVS(evs_spmv(st, op, EVS_INPUT_EVENTS, 1.0, a, fired, 1.0, current));
            else if (call == PLASTICITY_PRE) EVS(evs_csr_plasticity_pre(st, a, fired, current, 0.0, 1.0));
            else EVS(evs_csr_plasticity_post(st, a, fired, current, 0.0, 1.0));
        }
        if (b >= 0) per_call[b] = (now_s() - t0) / STEPS;
    }
    qsort(per_call, BURSTS, sizeof *per_call, by_value);
    char what[32];
    if (call == PROPAGATE) snprintf(what, sizeof what, "spmv %c events", op == EVS_OP_N ? 'N' : 'T');
    else snprintf(what, sizeof what, "csr plasticity %s events", call == PLASTICITY_PRE ? "pre" : "post");
    printf("| %s %d neurons x %d/row, %.1f spikes per step%s | %s | %s | %.2f |\n", what, neurons, per_row,
           (double)spiking / VECTORS, call == PROPAGATE ? ", beta = 1" : "", threads ? threads : "all", evs_last_plan(),
           per_call[BURSTS / 2] * 1e6);

    for (int v = 0; v < VECTORS; v++) EVS(evs_dense_destroy(spikes[v]));
    EVS(evs_dense_destroy(current));
    EVS(evs_csr_destroy(a));
    EVS(evs_stream_destroy(st));
    EVS(evs_context_destroy(ctx));
    free(indptr), free(indices), free(w), free(host);
}

int main(void) {
    const char *threads = getenv("EVS_NUM_THREADS");
    for (evs_op op = EVS_OP_T; op >= EVS_OP_N; op--) {
        step_cost(PROPAGATE, op, 4000, 80, 20.0 / 4000, threads);
        step_cost(PROPAGATE, op, 400000, 80, 0.005, threads);
    }
    for (enum Call call = PLASTICITY_PRE; call <= PLASTICITY_POST; call++) {
        step_cost(call, EVS_OP_N, 4000, 80, 20.0 / 4000, threads);
        step_cost(call, EVS_OP_N, 400000, 80, 0.005, threads);
    }
    return 0;
}
