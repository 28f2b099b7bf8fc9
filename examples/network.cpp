// network: evsparse from C++17 through small RAII wrappers.
//
// Simulates a few timesteps of a leaky integrate-and-fire population driven by a random
// CSR network: spikes propagate with spmv T on events, compaction lists who fired, and
// yw2y gives the per-synapse drive of the last step.
#include <evsparse.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace evs {

// Throws with evsparse's message when a call fails.
inline void check(evs_status status, const char* what) {
    if (status != EVS_SUCCESS)
        throw std::runtime_error(std::string(what) + ": " + evs_status_string(status) + ": " + evs_last_error());
}

template <typename T, evs_status (*Destroy)(T*)>
struct Deleter {
    void operator()(T* p) const noexcept { Destroy(p); }
};
using Context = std::unique_ptr<evs_context, Deleter<evs_context, evs_context_destroy>>;
using Stream = std::unique_ptr<evs_stream, Deleter<evs_stream, evs_stream_destroy>>;
using Dense = std::unique_ptr<evs_dense, Deleter<evs_dense, evs_dense_destroy>>;
using Csr = std::unique_ptr<evs_csr, Deleter<evs_csr, evs_csr_destroy>>;

inline Context make_context(evs_device_kind kind = EVS_DEVICE_DEFAULT) {
    evs_context* c = nullptr;
    check(evs_context_create(kind, 0, &c), "evs_context_create");
    return Context(c);
}

inline Stream make_stream(evs_context* ctx) {
    evs_stream* s = nullptr;
    check(evs_stream_create(ctx, &s), "evs_stream_create");
    return Stream(s);
}

template <typename T>
Dense make_vector(evs_context* ctx, evs_stream* s, evs_dtype dtype, const std::vector<T>& host) {
    evs_dense* d = nullptr;
    check(evs_dense_create_vector(ctx, dtype, static_cast<int64_t>(host.size()), &d), "evs_dense_create_vector");
    Dense owned(d);
    check(evs_dense_copy_from_host(s, d, host.data(), static_cast<int64_t>(host.size())), "evs_dense_copy_from_host");
    return owned;
}

template <typename T>
std::vector<T> to_host(evs_stream* s, evs_dense* d, size_t n) {
    std::vector<T> out(n);
    check(evs_dense_copy_to_host(s, d, out.data(), static_cast<int64_t>(n)), "evs_dense_copy_to_host");
    check(evs_stream_synchronize(s), "evs_stream_synchronize");
    return out;
}

}  // namespace evs

int main() try {
    const int n = 2000, per_row = 50, steps = 20;
    auto ctx = evs::make_context();
    auto stream = evs::make_stream(ctx.get());

    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> target(0, n - 1);
    std::vector<int32_t> indptr(n + 1), indices(static_cast<size_t>(n) * per_row);
    for (int i = 0; i <= n; i++) indptr[i] = i * per_row;
    for (auto& c : indices) c = target(rng);
    evs_csr* raw = nullptr;
    evs::check(evs_csr_create(ctx.get(), n, n, static_cast<int64_t>(indices.size()), EVS_DTYPE_I32, indptr.data(),
                              indices.data(), EVS_DTYPE_F32, nullptr, 0.3, &raw),
               "evs_csr_create");
    evs::Csr net(raw);
    evs::check(evs_csr_analyse(stream.get(), net.get()), "evs_csr_analyse");

    std::vector<float> v(n, 0.0f);
    std::vector<uint8_t> spikes(n, 0);
    for (int i = 0; i < n; i += 97) spikes[i] = 1;  // an initial volley
    auto d_spikes = evs::make_vector(ctx.get(), stream.get(), EVS_DTYPE_BOOL, spikes);
    auto d_input = evs::make_vector(ctx.get(), stream.get(), EVS_DTYPE_F32, v);
    auto d_fired = evs::make_vector(ctx.get(), stream.get(), EVS_DTYPE_I32, std::vector<int32_t>(n));
    auto d_count = evs::make_vector(ctx.get(), stream.get(), EVS_DTYPE_I32, std::vector<int32_t>(1));

    for (int t = 0; t < steps; t++) {
        evs::check(evs_spmv(stream.get(), EVS_OP_T, EVS_INPUT_EVENTS, 1.0, net.get(), d_spikes.get(), 0.0, d_input.get()),
                   "evs_spmv");
        auto input = evs::to_host<float>(stream.get(), d_input.get(), n);
        for (int i = 0; i < n; i++) {
            v[i] = 0.9f * v[i] + input[i];
            spikes[i] = v[i] > 1.0f;
            if (spikes[i]) v[i] = 0.0f;
        }
        evs::check(evs_dense_copy_from_host(stream.get(), d_spikes.get(), spikes.data(), n), "copy spikes");
        evs::check(evs_compact_events(stream.get(), d_spikes.get(), d_fired.get(), d_count.get()), "evs_compact_events");
        auto count = evs::to_host<int32_t>(stream.get(), d_count.get(), 1)[0];
        auto fired = evs::to_host<int32_t>(stream.get(), d_fired.get(), n);
        std::printf("step %2d: %4d neurons fired", t, count);
        if (count > 0) std::printf(" (first: %d)", fired[0]);
        std::printf("\n");
    }

    // Per-synapse drive of the last step: out[j] = w_j * v[row(j)].
    auto d_v = evs::make_vector(ctx.get(), stream.get(), EVS_DTYPE_F32, v);
    evs_dense* drive_raw = nullptr;
    evs::check(evs_dense_create_vector(ctx.get(), EVS_DTYPE_F32, static_cast<int64_t>(indices.size()), &drive_raw), "create");
    evs::Dense drive(drive_raw);
    evs::check(evs_yw2y(stream.get(), EVS_OP_N, 1.0, net.get(), d_v.get(), 0.0, drive.get()), "evs_yw2y");
    auto per_synapse = evs::to_host<float>(stream.get(), drive.get(), indices.size());
    double sum = 0;
    for (float x : per_synapse) sum += x;
    std::printf("mean per-synapse drive after %d steps: %.5f\n", steps, sum / per_synapse.size());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
