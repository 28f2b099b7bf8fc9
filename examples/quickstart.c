/* quickstart: a random spiking network on the default device.
 *
 * Builds a random network as a CSR matrix (pre-synaptic neurons x post-synaptic neurons),
 * propagates a spike vector with spmv T on events, applies pre- and post-synaptic
 * plasticity, and reads the results back, timing each step. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <evsparse.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Aborts with evsparse's message when a call fails. */
#define EVS(call)                                                                          \
    do {                                                                                   \
        evs_status s_ = (call);                                                            \
        if (s_ != EVS_SUCCESS) {                                                           \
            fprintf(stderr, "%s failed: %s: %s\n", #call, evs_status_string(s_), evs_last_error()); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
    const int n_pre = 4000, n_post = 4000, per_row = 80;
    const int64_t nnz = (int64_t)n_pre * per_row;
    printf("evsparse %s\n", evs_version());

    evs_context *ctx;
    evs_stream *stream;
    EVS(evs_context_create(EVS_DEVICE_DEFAULT, 0, &ctx));
    EVS(evs_stream_create(ctx, &stream));
    evs_device_kind kind;
    EVS(evs_context_device(ctx, &kind, NULL));
    printf("device: %s\n", kind == EVS_DEVICE_CUDA ? "CUDA" : "CPU");

    /* A random network: every pre-neuron projects to `per_row` random post-neurons. */
    int32_t *indptr = malloc((n_pre + 1) * sizeof *indptr), *indices = malloc(nnz * sizeof *indices);
    float *weights = malloc(nnz * sizeof *weights);
    srand(42);
    for (int i = 0; i <= n_pre; i++) indptr[i] = i * per_row;
    for (int64_t j = 0; j < nnz; j++) {
        indices[j] = rand() % n_post;
        weights[j] = 0.5f * rand() / RAND_MAX;
    }
    double t0 = now_us();
    evs_csr *net;
    EVS(evs_csr_create(ctx, n_pre, n_post, nnz, EVS_DTYPE_I32, indptr, indices, EVS_DTYPE_F32, weights, 0.0, &net));
    EVS(evs_csr_analyse(stream, net));
    printf("network: %d x %d, %lld synapses, built and analysed in %.0f us\n", n_pre, n_post, (long long)nnz, now_us() - t0);

    /* 0.5 % of the pre-neurons spike; traces decay elsewhere in a real simulator. */
    uint8_t *spikes = calloc(n_pre, 1);
    float *post_trace = malloc(n_post * sizeof *post_trace), *pre_trace = malloc(n_pre * sizeof *pre_trace);
    for (int i = 0; i < n_pre; i++) spikes[i] = rand() % 200 == 0, pre_trace[i] = 0.01f;
    for (int c = 0; c < n_post; c++) post_trace[c] = -0.005f;
    evs_dense *d_spikes, *d_current, *d_post_spikes, *d_post_trace, *d_pre_trace;
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, n_pre, &d_spikes));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, n_post, &d_current));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_BOOL, n_post, &d_post_spikes));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, n_post, &d_post_trace));
    EVS(evs_dense_create_vector(ctx, EVS_DTYPE_F32, n_pre, &d_pre_trace));
    EVS(evs_dense_copy_from_host(stream, d_spikes, spikes, n_pre));
    EVS(evs_dense_copy_from_host(stream, d_post_trace, post_trace, n_post));
    EVS(evs_dense_copy_from_host(stream, d_pre_trace, pre_trace, n_pre));

    /* Spike propagation: current[c] = sum of the weights from spiking pre-neurons. */
    t0 = now_us();
    EVS(evs_spmv(stream, EVS_OP_T, EVS_INPUT_EVENTS, 1.0, net, d_spikes, 0.0, d_current));
    EVS(evs_stream_synchronize(stream));
    double t_prop = now_us() - t0;

    /* Post-neurons whose current crosses a threshold spike back. */
    float *current = malloc(n_post * sizeof *current);
    EVS(evs_dense_copy_to_host(stream, d_current, current, n_post));
    EVS(evs_stream_synchronize(stream));
    uint8_t *post_spikes = calloc(n_post, 1);
    int n_spiking_pre = 0, n_spiking_post = 0;
    for (int i = 0; i < n_pre; i++) n_spiking_pre += spikes[i];
    for (int c = 0; c < n_post; c++) n_spiking_post += post_spikes[c] = current[c] > 0.4f;
    EVS(evs_dense_copy_from_host(stream, d_post_spikes, post_spikes, n_post));

    /* STDP-like plasticity, clipped to [0, 0.5]. */
    t0 = now_us();
    EVS(evs_csr_plasticity_pre(stream, net, d_spikes, d_post_trace, 0.0, 0.5));
    EVS(evs_csr_plasticity_post(stream, net, d_post_spikes, d_pre_trace, 0.0, 0.5));
    EVS(evs_stream_synchronize(stream));
    double t_plast = now_us() - t0;

    evs_dense *w_view;
    EVS(evs_csr_weights(net, &w_view));
    EVS(evs_dense_copy_to_host(stream, w_view, weights, nnz));
    EVS(evs_stream_synchronize(stream));
    double total = 0, max_current = 0;
    for (int64_t j = 0; j < nnz; j++) total += weights[j];
    for (int c = 0; c < n_post; c++) max_current = current[c] > max_current ? current[c] : max_current;

    printf("spikes: %d pre, %d post\n", n_spiking_pre, n_spiking_post);
    printf("propagation (spmv T, events): %8.1f us, max current %.3f\n", t_prop, max_current);
    printf("plasticity (pre + post):      %8.1f us, mean weight %.5f\n", t_plast, total / nnz);

    evs_dense *all[] = {d_spikes, d_current, d_post_spikes, d_post_trace, d_pre_trace, w_view};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) EVS(evs_dense_destroy(all[i]));
    EVS(evs_csr_destroy(net));
    EVS(evs_stream_destroy(stream));
    EVS(evs_context_destroy(ctx));
    free(indptr), free(indices), free(weights), free(spikes), free(post_trace), free(pre_trace), free(current),
        free(post_spikes);
    return 0;
}
