// The C++17 suite: every public function through RAII wrappers, with results checked against
// naive references on random inputs (every float dtype), and a table of error paths.
// EVS_TEST_DEVICE and EVS_TEST_SEED as for the C suite.
#include "testutil.h"

#include <cmath>
#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

template <typename T, evs_status (*Destroy)(T*)>
struct Deleter {
    void operator()(T* p) const noexcept { Destroy(p); }
};
using Context = std::unique_ptr<evs_context, Deleter<evs_context, evs_context_destroy>>;
using Stream = std::unique_ptr<evs_stream, Deleter<evs_stream, evs_stream_destroy>>;
using Dense = std::unique_ptr<evs_dense, Deleter<evs_dense, evs_dense_destroy>>;
using Csr = std::unique_ptr<evs_csr, Deleter<evs_csr, evs_csr_destroy>>;
using Bsr = std::unique_ptr<evs_bsr, Deleter<evs_bsr, evs_bsr_destroy>>;

Context ctx;
Stream st;
std::mt19937_64 gen;

double uniform() { return std::uniform_real_distribution<double>(-1, 1)(gen); }
int below(int n) { return static_cast<int>(gen() % static_cast<uint64_t>(n)); }

// A host matrix of doubles, row-major, with the dtype it is stored in on the device.
struct Host {
    evs_dtype t;
    int rows, cols;
    std::vector<double> v;
    double& at(int r, int c) { return v[static_cast<size_t>(r) * cols + c]; }
};

Host random_host(evs_dtype t, int rows, int cols, int zero_pct = 0) {
    Host h{t, rows, cols, std::vector<double>(static_cast<size_t>(rows) * cols)};
    for (auto& x : h.v) x = below(100) < zero_pct ? 0.0 : round_to(t, uniform());
    return h;
}

Host random_events(evs_dtype t, int n) {
    Host h{t, n, 1, std::vector<double>(n)};
    for (auto& x : h.v) x = below(3) == 0 ? (t == EVS_DTYPE_BOOL ? 1.0 : round_to(t, 0.5 + std::fabs(uniform()))) : 0.0;
    return h;
}

Dense upload(const Host& h, bool vector) {
    evs_dense* d = nullptr;
    if (vector)
        OK(evs_dense_create_vector(ctx.get(), h.t, h.rows, &d));
    else
        OK(evs_dense_create_matrix(ctx.get(), h.t, h.rows, h.cols, &d));
    std::vector<unsigned char> bytes(h.v.size() * dtype_size(h.t) + 1);
    for (size_t i = 0; i < h.v.size(); i++) put(h.t, bytes.data(), i, h.v[i]);
    OK(evs_dense_copy_from_host(st.get(), d, bytes.data(), static_cast<int64_t>(h.v.size())));
    return Dense(d);
}

std::vector<double> download(evs_dense* d) {
    int64_t rows = 0, cols = 0;
    evs_dtype t = 0;
    OK(evs_dense_shape(d, nullptr, &rows, &cols, nullptr));
    OK(evs_dense_dtype(d, &t));
    std::vector<unsigned char> bytes(static_cast<size_t>(rows * cols) * dtype_size(t) + 1);
    OK(evs_dense_copy_to_host(st.get(), d, bytes.data(), rows * cols));
    OK(evs_stream_synchronize(st.get()));
    std::vector<double> out(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < out.size(); i++) out[i] = get(t, bytes.data(), i);
    return out;
}

void expect_close(const std::string& what, evs_dtype t, const std::vector<double>& got, const std::vector<double>& ref,
                  const std::vector<double>& scale) {
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); i++)
        if (std::fabs(got[i] - ref[i]) > tolerance(t) * scale[i] + (t == EVS_DTYPE_F16 ? 6e-8 : 1e-30)) bad++;
    CHECK(got.size() == ref.size() && bad == 0, "%s [%s]: %zu of %zu differ", what.c_str(), dtype_name(t), bad, ref.size());
}

// A random CSR matrix kept on the host as (row, col, weight) triples in CSR order.
struct Triples {
    int m, k;
    std::vector<int32_t> indptr, indices;
    std::vector<double> w;
    bool homo;
    evs_dtype t;
};

Triples random_triples(evs_dtype t, bool homo) {
    Triples a{1 + below(30), 1 + below(30), {0}, {}, {}, homo, t};
    double hw = round_to(t, uniform());
    for (int i = 0; i < a.m; i++) {
        int len = below(4) == 0 ? 0 : below(9);
        for (int q = 0; q < len; q++) {
            a.indices.push_back(below(a.k));
            a.w.push_back(homo ? hw : round_to(t, uniform()));
        }
        a.indptr.push_back(static_cast<int32_t>(a.indices.size()));
    }
    return a;
}

Csr upload(const Triples& a) {
    std::vector<unsigned char> wb(a.w.size() * dtype_size(a.t) + 1);
    for (size_t j = 0; j < a.w.size(); j++) put(a.t, wb.data(), j, a.w[j]);
    evs_csr* h = nullptr;
    OK(evs_csr_create(ctx.get(), a.m, a.k, static_cast<int64_t>(a.w.size()), EVS_DTYPE_I32, a.indptr.data(),
                      a.indices.data(), a.t, a.homo ? nullptr : wb.data(), a.homo && !a.w.empty() ? a.w[0] : 0.0, &h));
    return Csr(h);
}

// Calls f(row, col, j) for every stored entry.
template <typename F>
void for_entries(const Triples& a, F f) {
    for (int i = 0; i < a.m; i++)
        for (int j = a.indptr[i]; j < a.indptr[i + 1]; j++) f(i, a.indices[j], j);
}

void test_sparse_products(evs_dtype t) {
    for (evs_op op : {EVS_OP_N, EVS_OP_T})
        for (evs_input_kind kind : {EVS_INPUT_FLOAT, EVS_INPUT_EVENTS}) {
            Triples a = random_triples(t, below(2));
            Csr A = upload(a);
            int in = op == EVS_OP_N ? a.k : a.m, out = op == EVS_OP_N ? a.m : a.k, n = 1 + below(6);
            for (bool vector : {true, false}) {
                int nc = vector ? 1 : n;
                Host x = kind == EVS_INPUT_FLOAT ? random_host(t, in, nc, 30) : random_events(EVS_DTYPE_BOOL, in * nc);
                x.rows = in, x.cols = nc;
                std::vector<double> ref(static_cast<size_t>(out) * nc), scale(ref.size());
                for_entries(a, [&](int r, int c, int j) {
                    int src = op == EVS_OP_N ? c : r, dst = op == EVS_OP_N ? r : c;
                    for (int q = 0; q < nc; q++) {
                        double term = a.w[j] * x.at(src, q);
                        ref[static_cast<size_t>(dst) * nc + q] += 2 * term;
                        scale[static_cast<size_t>(dst) * nc + q] += 2 * std::fabs(term);
                    }
                });
                Dense X = upload(x, vector), Y = upload(Host{t, out, nc, std::vector<double>(ref.size(), NAN)}, vector);
                if (vector)
                    OK(evs_spmv(st.get(), op, kind, 2.0, A.get(), X.get(), 0.0, Y.get()));
                else
                    OK(evs_spmm(st.get(), op, kind, 2.0, A.get(), X.get(), 0.0, Y.get()));
                expect_close(std::string(vector ? "spmv" : "spmm") + (op == EVS_OP_N ? " N" : " T"), t, download(Y.get()), ref, scale);
            }
            // yw2y and its weighted form, 1-D
            int len = op == EVS_OP_N ? a.m : a.k;
            Host y = random_host(t, len, 1), bw = random_host(t, static_cast<int>(a.w.size()), 1);
            std::vector<double> ref(a.w.size()), refw(a.w.size()), scale(a.w.size()), scalew(a.w.size());
            for_entries(a, [&](int r, int c, int j) {
                double yv = y.v[op == EVS_OP_N ? r : c];
                ref[j] = a.w[j] * yv, refw[j] = bw.v[j] * yv;
                scale[j] = std::fabs(ref[j]), scalew[j] = std::fabs(refw[j]);
            });
            Dense Yd = upload(y, true), W = upload(bw, true), O = upload(Host{t, static_cast<int>(a.w.size()), 1, ref}, true);
            OK(evs_yw2y(st.get(), op, 1.0, A.get(), Yd.get(), 0.0, O.get()));
            expect_close("yw2y", t, download(O.get()), ref, scale);
            OK(evs_yw2y_weighted(st.get(), op, 1.0, A.get(), W.get(), Yd.get(), 0.0, O.get()));
            expect_close("yw2y_weighted", t, download(O.get()), refw, scalew);
        }
}

void test_dense_products(evs_dtype t) {
    for (evs_op op : {EVS_OP_N, EVS_OP_T}) {
        int m = 1 + below(20), k = 1 + below(20), n = 1 + below(5);
        Host w = op == EVS_OP_N ? random_host(t, m, k) : random_host(t, k, m);
        Host s = random_events(EVS_DTYPE_BOOL, k * n);
        s.rows = k, s.cols = n;
        std::vector<double> ref(static_cast<size_t>(m) * n), scale(ref.size());
        for (int i = 0; i < m; i++)
            for (int q = 0; q < n; q++)
                for (int r = 0; r < k; r++) {
                    double term = (op == EVS_OP_N ? w.at(i, r) : w.at(r, i)) * s.at(r, q);
                    ref[static_cast<size_t>(i) * n + q] += term, scale[static_cast<size_t>(i) * n + q] += std::fabs(term);
                }
        Dense W = upload(w, false), S = upload(s, false), C = upload(Host{t, m, n, ref}, false);
        OK(evs_dense_mm(st.get(), op, EVS_INPUT_EVENTS, 1.0, W.get(), S.get(), 0.0, C.get()));
        expect_close("dense_mm", t, download(C.get()), ref, scale);
        Host s1 = random_host(t, k, 1, 40);
        std::vector<double> ref1(m), scale1(m, 0.0);
        for (int i = 0; i < m; i++)
            for (int r = 0; r < k; r++) {
                double term = (op == EVS_OP_N ? w.at(i, r) : w.at(r, i)) * s1.v[r];
                ref1[i] += term, scale1[i] += std::fabs(term);
            }
        for (int i = 0; i < m; i++) ref1[i] = 0.5 * ref1[i] + 1.0, scale1[i] = 0.5 * scale1[i] + 1.0;
        Dense S1 = upload(s1, true), C1 = upload(Host{t, m, 1, std::vector<double>(m, 1.0)}, true);
        OK(evs_dense_mv(st.get(), op, EVS_INPUT_FLOAT, 0.5, W.get(), S1.get(), 1.0, C1.get()));
        expect_close("dense_mv", t, download(C1.get()), ref1, scale1);
    }
}

void test_plasticity(evs_dtype t) {
    const double lo = -0.5, hi = 0.5;
    auto clip = [&](double v) { return round_to(t, v < lo ? lo : v > hi ? hi : v); };
    for (bool post : {false, true}) {
        Triples a = random_triples(t, false);
        Csr A = upload(a);
        Host spikes = random_events(EVS_DTYPE_F32, post ? a.k : a.m), trace = random_host(t, post ? a.m : a.k, 1);
        std::vector<double> ref = a.w, scale(a.w.size(), 0.0);
        for_entries(a, [&](int r, int c, int j) {
            if (spikes.v[post ? c : r] > 0) {
                double tr = trace.v[post ? r : c];
                ref[j] = clip(a.w[j] + tr), scale[j] = std::fabs(a.w[j]) + std::fabs(tr);
            }
        });
        Dense S = upload(spikes, true), T = upload(trace, true);
        if (post)
            OK(evs_csr_plasticity_post(st.get(), A.get(), S.get(), T.get(), lo, hi));
        else
            OK(evs_csr_plasticity_pre(st.get(), A.get(), S.get(), T.get(), lo, hi));
        evs_dense* view = nullptr;
        OK(evs_csr_weights(A.get(), &view));
        Dense V(view);
        expect_close(post ? "csr plasticity post" : "csr plasticity pre", t, download(V.get()), ref, scale);

        int m = 1 + below(15), k = 1 + below(15);
        Host w = random_host(t, m, k), sp = random_events(EVS_DTYPE_BOOL, post ? k : m), tr = random_host(t, post ? m : k, 1);
        std::vector<double> dref = w.v, dscale(w.v.size(), 0.0);
        for (int i = 0; i < m; i++)
            for (int c = 0; c < k; c++)
                if (sp.v[post ? c : i] > 0) {
                    double d = tr.v[post ? i : c];
                    dref[static_cast<size_t>(i) * k + c] = clip(w.at(i, c) + d);
                    dscale[static_cast<size_t>(i) * k + c] = std::fabs(w.at(i, c)) + std::fabs(d);
                }
        Dense W = upload(w, false), SP = upload(sp, true), TR = upload(tr, true);
        if (post)
            OK(evs_dense_plasticity_post(st.get(), W.get(), SP.get(), TR.get(), lo, hi));
        else
            OK(evs_dense_plasticity_pre(st.get(), W.get(), SP.get(), TR.get(), lo, hi));
        expect_close(post ? "dense plasticity post" : "dense plasticity pre", t, download(W.get()), dref, dscale);
    }
}

void test_bsrmm(evs_dtype t) {
    const int bm = 16, bk = 32, mb = 2, kb = 3, n = 1 + below(9);
    std::vector<int32_t> indptr{0}, indices;
    for (int i = 0; i < mb; i++) {
        for (int c = 0; c < kb; c++)
            if (below(2)) indices.push_back(c);
        indptr.push_back(static_cast<int32_t>(indices.size()));
    }
    Host vals = random_host(t, static_cast<int>(indices.size()) * bm * bk, 1), b = random_host(t, kb * bk, n);
    std::vector<double> ref(static_cast<size_t>(mb) * bm * n), scale(ref.size());
    for (int ib = 0; ib < mb; ib++)
        for (int jb = indptr[ib]; jb < indptr[ib + 1]; jb++)
            for (int r = 0; r < bm; r++)
                for (int q = 0; q < bk; q++)
                    for (int c = 0; c < n; c++) {
                        double term = vals.v[(static_cast<size_t>(jb) * bm + r) * bk + q] * b.at(indices[jb] * bk + q, c);
                        ref[static_cast<size_t>(ib * bm + r) * n + c] += term;
                        scale[static_cast<size_t>(ib * bm + r) * n + c] += std::fabs(term);
                    }
    std::vector<unsigned char> vb(vals.v.size() * dtype_size(t) + 1);
    for (size_t i = 0; i < vals.v.size(); i++) put(t, vb.data(), i, vals.v[i]);
    evs_bsr* raw = nullptr;
    OK(evs_bsr_create(ctx.get(), mb, kb, bm, bk, static_cast<int64_t>(indices.size()), indptr.data(), indices.data(), t, vb.data(), &raw));
    Bsr A(raw);
    OK(evs_bsr_validate(st.get(), A.get()));
    int64_t rows = 0, cols = 0;
    OK(evs_bsr_shape(A.get(), &rows, &cols, nullptr, nullptr, nullptr, nullptr));
    CHECK(rows == mb * bm && cols == kb * bk, "bsr shape");
    Dense B = upload(b, false), C = upload(Host{EVS_DTYPE_F32, mb * bm, n, ref}, false);
    OK(evs_bsrmm(st.get(), 1.0, A.get(), B.get(), 0.0, C.get()));
    expect_close("bsrmm", t, download(C.get()), ref, scale);
}

void test_compact_and_csc() {
    Host s = random_events(EVS_DTYPE_F32, 1 + below(200));
    Dense S = upload(s, true), I = upload(Host{EVS_DTYPE_I32, s.rows, 1, std::vector<double>(s.rows, -1)}, true);
    Dense N = upload(Host{EVS_DTYPE_I32, 1, 1, {0}}, true);
    OK(evs_compact_events(st.get(), S.get(), I.get(), N.get()));
    std::vector<double> expect;
    for (int i = 0; i < s.rows; i++)
        if (s.v[i] > 0) expect.push_back(i);
    auto got = download(I.get());
    got.resize(expect.size());
    CHECK(download(N.get())[0] == static_cast<double>(expect.size()) && got == expect, "compact");

    Triples a = random_triples(EVS_DTYPE_F64, false);
    Csr A = upload(a);
    OK(evs_csr_validate(st.get(), A.get()));
    OK(evs_csr_analyse(st.get(), A.get()));
    int nnz = static_cast<int>(a.w.size());
    Dense CP = upload(Host{EVS_DTYPE_I64, a.k + 1, 1, std::vector<double>(a.k + 1)}, true);
    Dense RI = upload(Host{EVS_DTYPE_I32, nnz, 1, std::vector<double>(nnz)}, true);
    Dense PM = upload(Host{EVS_DTYPE_I32, nnz, 1, std::vector<double>(nnz)}, true);
    OK(evs_csr_to_csc(st.get(), A.get(), CP.get(), RI.get(), PM.get()));
    // Reference by sorting (col, row, position) triples: stable in rows by construction.
    std::vector<std::array<int, 3>> order;
    for_entries(a, [&](int r, int c, int j) { order.push_back({c, r, j}); });
    std::sort(order.begin(), order.end());
    auto ri = download(RI.get()), pm = download(PM.get()), cp = download(CP.get());
    bool same = cp.back() == nnz;
    for (int p = 0; p < nnz; p++) same = same && ri[p] == order[p][1] && pm[p] == order[p][2];
    CHECK(same, "csr_to_csc");
}

// Every function rejects NULL handles and handles of the wrong kind; a table keeps it short.
void test_error_table() {
    evs_dense* d = nullptr;
    OK(evs_dense_create_vector(ctx.get(), EVS_DTYPE_F32, 4, &d));
    Dense D(d);
    auto* wrong_csr = reinterpret_cast<evs_csr*>(d);
    auto* wrong_bsr = reinterpret_cast<evs_bsr*>(d);
    auto* wrong_stream = reinterpret_cast<evs_stream*>(d);
    auto* wrong_ctx = reinterpret_cast<evs_context*>(d);
    evs_stream* s = st.get();
    void* p = nullptr;
    int64_t i64 = 0;
    const std::vector<std::pair<std::string, std::function<evs_status()>>> wrong_kind = {
        {"context_device", [&] { return evs_context_device(wrong_ctx, nullptr, nullptr); }},
        {"context_set_algorithm", [&] { return evs_context_set_algorithm(wrong_ctx, "spmm_n:auto"); }},
        {"stream_create", [&] { return evs_stream_create(wrong_ctx, &s); }},
        {"stream_wrap", [&] { return evs_stream_wrap(wrong_ctx, nullptr, &s); }},
        {"stream_synchronize", [&] { return evs_stream_synchronize(wrong_stream); }},
        {"dense_create_vector", [&] { return evs_dense_create_vector(wrong_ctx, EVS_DTYPE_F32, 1, &d); }},
        {"dense_create_matrix", [&] { return evs_dense_create_matrix(wrong_ctx, EVS_DTYPE_F32, 1, 1, &d); }},
        {"dense_wrap_vector", [&] { return evs_dense_wrap_vector(wrong_ctx, EVS_DTYPE_F32, 1, &i64, &d); }},
        {"dense_wrap_matrix", [&] { return evs_dense_wrap_matrix(wrong_ctx, EVS_DTYPE_F32, 1, 1, 1, &i64, &d); }},
        {"dense_fill", [&] { return evs_dense_fill(wrong_stream, D.get(), 0); }},
        {"dense_data", [&] { return evs_dense_data(reinterpret_cast<evs_dense*>(st.get()), &p); }},
        {"csr_validate", [&] { return evs_csr_validate(s, wrong_csr); }},
        {"csr_analyse", [&] { return evs_csr_analyse(s, wrong_csr); }},
        {"csr_shape", [&] { return evs_csr_shape(wrong_csr, nullptr, nullptr, nullptr); }},
        {"csr_types", [&] { return evs_csr_types(wrong_csr, nullptr, nullptr, nullptr); }},
        {"csr_weights", [&] { return evs_csr_weights(wrong_csr, &d); }},
        {"csr_destroy", [&] { return evs_csr_destroy(wrong_csr); }},
        {"bsr_validate", [&] { return evs_bsr_validate(s, wrong_bsr); }},
        {"bsr_shape", [&] { return evs_bsr_shape(wrong_bsr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr); }},
        {"bsr_destroy", [&] { return evs_bsr_destroy(wrong_bsr); }},
        {"spmv", [&] { return evs_spmv(s, EVS_OP_N, EVS_INPUT_FLOAT, 1, wrong_csr, D.get(), 0, D.get()); }},
        {"spmm", [&] { return evs_spmm(s, EVS_OP_N, EVS_INPUT_FLOAT, 1, wrong_csr, D.get(), 0, D.get()); }},
        {"yw2y", [&] { return evs_yw2y(s, EVS_OP_N, 1, wrong_csr, D.get(), 0, D.get()); }},
        {"yw2y_weighted", [&] { return evs_yw2y_weighted(s, EVS_OP_N, 1, wrong_csr, D.get(), D.get(), 0, D.get()); }},
        {"csr_plasticity_pre", [&] { return evs_csr_plasticity_pre(s, wrong_csr, D.get(), D.get(), 0, 1); }},
        {"csr_plasticity_post", [&] { return evs_csr_plasticity_post(s, wrong_csr, D.get(), D.get(), 0, 1); }},
        {"bsrmm", [&] { return evs_bsrmm(s, 1, wrong_bsr, D.get(), 0, D.get()); }},
        {"csr_to_csc", [&] { return evs_csr_to_csc(s, wrong_csr, D.get(), D.get(), D.get()); }},
        {"dense_mv", [&] { return evs_dense_mv(wrong_stream, EVS_OP_N, EVS_INPUT_FLOAT, 1, D.get(), D.get(), 0, D.get()); }},
        {"dense_mm", [&] { return evs_dense_mm(wrong_stream, EVS_OP_N, EVS_INPUT_FLOAT, 1, D.get(), D.get(), 0, D.get()); }},
        {"dense_plasticity_pre", [&] { return evs_dense_plasticity_pre(wrong_stream, D.get(), D.get(), D.get(), 0, 1); }},
        {"dense_plasticity_post", [&] { return evs_dense_plasticity_post(wrong_stream, D.get(), D.get(), D.get(), 0, 1); }},
        {"compact_events", [&] { return evs_compact_events(wrong_stream, D.get(), D.get(), D.get()); }},
        {"dense_copy_from_host", [&] { return evs_dense_copy_from_host(wrong_stream, D.get(), &i64, 1); }},
        {"dense_copy_to_host", [&] { return evs_dense_copy_to_host(wrong_stream, D.get(), &i64, 1); }},
        {"stream_destroy", [&] { return evs_stream_destroy(wrong_stream); }},
        {"context_destroy", [&] { return evs_context_destroy(wrong_ctx); }},
    };
    for (const auto& [name, call] : wrong_kind) {
        evs_status status = call();
        CHECK(status == EVS_ERROR_INVALID_HANDLE, "%s with a wrong handle kind -> %s", name.c_str(), evs_status_string(status));
    }
    const std::vector<std::pair<std::string, std::function<evs_status()>>> nulls = {
        {"dense_shape", [&] { return evs_dense_shape(nullptr, nullptr, nullptr, nullptr, nullptr); }},
        {"dense_dtype", [&] { return evs_dense_dtype(D.get(), nullptr); }},
        {"csr_create", [&] { return evs_csr_create(ctx.get(), 1, 1, 0, EVS_DTYPE_I32, nullptr, nullptr, EVS_DTYPE_F32, nullptr, 1, nullptr); }},
        {"csr_wrap", [&] { return evs_csr_wrap(nullptr, 1, 1, 0, EVS_DTYPE_I32, nullptr, nullptr, EVS_DTYPE_F32, nullptr, 1, nullptr); }},
        {"bsr_create", [&] { return evs_bsr_create(ctx.get(), 1, 1, 16, 16, 0, nullptr, nullptr, EVS_DTYPE_F32, nullptr, nullptr); }},
        {"bsr_wrap", [&] { return evs_bsr_wrap(ctx.get(), 1, 1, 16, 16, 0, nullptr, nullptr, EVS_DTYPE_F32, nullptr, nullptr); }},
        {"context_create", [&] { return evs_context_create(EVS_DEVICE_CPU, 0, nullptr); }},
        {"context_set_algorithm", [&] { return evs_context_set_algorithm(ctx.get(), nullptr); }},
    };
    for (const auto& [name, call] : nulls) {
        evs_status status = call();
        CHECK(status == EVS_ERROR_NULL_POINTER, "%s with NULL -> %s", name.c_str(), evs_status_string(status));
    }
    OK(evs_dense_destroy(nullptr));
    CHECK(std::string(evs_status_string(EVS_ERROR_NULL_POINTER)) == "EVS_ERROR_NULL_POINTER", "status string");
    CHECK(std::string(evs_version()) == EVS_VERSION_STRING, "version");
    CHECK(evs_last_plan() != nullptr, "last plan never NULL");
}

}  // namespace

int main() {
    seed_rng();
    gen.seed(g_rng);
    const char* dev = std::getenv("EVS_TEST_DEVICE");
    evs_device_kind kind = !dev || std::string(dev) == "cpu" ? EVS_DEVICE_CPU
                           : std::string(dev) == "cuda"    ? EVS_DEVICE_CUDA
                                                           : EVS_DEVICE_DEFAULT;
    evs_context* c = nullptr;
    if (evs_context_create(kind, 0, &c) != EVS_SUCCESS) {
        std::fprintf(stderr, "cannot create the test context: %s\n", evs_last_error());
        return 1;
    }
    ctx.reset(c);
    evs_stream* s = nullptr;
    OK(evs_stream_create(ctx.get(), &s));
    st.reset(s);
    for (int round = 0; round < 6; round++)
        for (evs_dtype t : FLOAT_DTYPES) {
            test_sparse_products(t);
            test_dense_products(t);
            test_plasticity(t);
            if (t != EVS_DTYPE_F64) test_bsrmm(t);
        }
    test_compact_and_csc();
    test_error_table();
    st.reset();
    ctx.reset();
    return report("test_cpp:");
}
