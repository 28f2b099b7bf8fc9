/* Seeded random programs against the C ABI, differential (issue #13, first step).
 *
 * Most rounds build a random CSR matrix (odd shapes, empty rows, duplicates, unsorted indices;
 * sometimes an invalid structure; now and then large enough for the thread pool), random inputs and a random spmv/spmm call (N or T, floats
 * or events, f32 or f64, random alpha/beta, sometimes a wrong shape or dtype), and runs it on
 * two CPU contexts: one whose plans choose freely, one forced to the plain reference. Both
 * must return the same status; an accepted call must give the same result within rounding;
 * a rejected one must leave its output untouched. The other rounds do the same with dense
 * mv / mm (W times events or floats). A third of the vector rounds pass a spike list instead
 * (evs_spmv_spikes, evs_dense_mv_spikes: repeated indices, garbage past the count, sometimes
 * an index out of range or a count outside [0, capacity], which both sides must reject). A
 * quarter of the rounds run CSR plasticity (pre or post, events or a spike list) against a
 * model written here, faults included (homogeneous weights, crossed bounds, a wrong trace).
 * A fifth of the rounds run BSR x dense against a model (broken structures, odd block extents,
 * C over B's memory). In an eighth of the sparse rounds one argument is a misused handle (of
 * the wrong kind, made on the other context, or destroyed), which both sides must refuse; now
 * and then alpha or beta is NaN or infinite, and both sides must agree on it too.
 *
 *   fuzz [seconds [seed]]   (seconds of CPU time, default 10; seed default fresh, printed so that
 *                            a failure can be replayed)
 */
#include <evsparse.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t state;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0; }
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static uint64_t seed, round_no, accepted, misuses_refused, bsr_products;
#define FAIL(...)                                                                         \
    do {                                                                                  \
        fprintf(stderr, "fuzz: seed %llu round %llu: ", (unsigned long long)seed,         \
                (unsigned long long)round_no);                                            \
        fprintf(stderr, __VA_ARGS__);                                                     \
        fprintf(stderr, "\n");                                                            \
        exit(1);                                                                          \
    } while (0)

/* One context with its stream. */
typedef struct {
    struct evs_context *ctx;
    struct evs_stream *st;
} Side;

static Side side(const char *forced) {
    Side s;
    if (evs_context_create(EVS_DEVICE_CPU, 0, &s.ctx) || evs_stream_create(s.ctx, &s.st)) FAIL("setup: %s", evs_last_error());
    if (forced && evs_context_set_algorithm(s.ctx, forced)) FAIL("forcing %s: %s", forced, evs_last_error());
    return s;
}

/* A random CSR structure; `broken` says whether one rule was broken on purpose. */
typedef struct {
    int64_t m, k, nnz;
    int64_t *indptr;
    int32_t *indices;
    int broken;
} Pattern;

static Pattern pattern(void) {
    Pattern p;
    int64_t size = below(8) == 0 ? 600 : 40; /* now and then large enough for the thread pool */
    p.m = below(size), p.k = below(size);
    p.indptr = malloc(sizeof(int64_t) * (size_t)(p.m + 1));
    p.indices = malloc(sizeof(int32_t) * (size_t)(p.m * 12 + 1));
    p.indptr[0] = 0;
    for (int64_t i = 0; i < p.m; i++) {
        int64_t len = p.k == 0 || below(4) == 0 ? 0 : below(12);
        for (int64_t j = 0; j < len; j++) {
            int64_t at = p.indptr[i] + j;
            p.indices[at] = j > 0 && below(5) == 0 ? p.indices[at - 1] : (int32_t)below(p.k);
        }
        p.indptr[i + 1] = p.indptr[i] + len;
    }
    p.nnz = p.indptr[p.m];
    p.broken = 0;
    if (below(10) == 0 && p.nnz > 0) { /* an index out of range, or an indptr going down */
        p.broken = 1;
        if (below(2)) p.indices[below(p.nnz)] = (int32_t)(p.k + below(3));
        else if (p.m > 1) p.indptr[1 + below(p.m - 1)] = p.nnz + 1;
        else p.indices[0] = -1;
    }
    return p;
}

/* Host buffer of `n` values of dtype t (f32, f64, or bool events). */
static void *values(evs_dtype t, int64_t n, int events) {
    size_t size = t == EVS_DTYPE_F64 ? 8 : t == EVS_DTYPE_BOOL ? 1 : 4;
    unsigned char *buf = calloc((size_t)(n > 0 ? n : 1), size);
    for (int64_t i = 0; i < n; i++) {
        double v = events && below(3) ? -fabs(unit()) : unit();
        if (t == EVS_DTYPE_F64) ((double *)buf)[i] = v;
        else if (t == EVS_DTYPE_F32) ((float *)buf)[i] = (float)v;
        else buf[i] = (unsigned char)(below(4) == 0);
    }
    return buf;
}

static double get(evs_dtype t, const void *buf, int64_t i) {
    return t == EVS_DTYPE_F64 ? ((const double *)buf)[i] : ((const float *)buf)[i];
}

/* A spike list over `neurons` as the host arrays to wrap, sometimes broken on purpose. */
typedef struct {
    int32_t *indices, count;
    int64_t capacity;
} List;

static List spike_list(int64_t neurons) {
    List l;
    l.capacity = below(neurons + 3);
    l.indices = malloc(sizeof(int32_t) * (size_t)(l.capacity + 1));
    l.count = (int32_t)below(l.capacity + 1);
    for (int64_t i = 0; i < l.capacity; i++) /* repeats allowed; past the count, garbage */
        l.indices[i] = i < l.count ? (int32_t)below(neurons) : (int32_t)(below(3) ? -5 : neurons + 9);
    switch (below(12)) {
    case 0: if (l.count > 0) l.indices[below(l.count)] = below(2) ? -1 : (int32_t)(neurons + below(3)); break;
    case 1: l.count = (int32_t)(l.capacity + 1 + below(3)); break;
    case 2: l.count = (int32_t)(-1 - below(3)); break;
    }
    return l;
}

/* Wraps a spike list's two arrays. */
static void wrap_list(struct evs_context *ctx, List *l, struct evs_dense **hi, struct evs_dense **hn) {
    if (evs_dense_wrap_vector(ctx, EVS_DTYPE_I32, l->capacity, l->indices, hi) ||
        evs_dense_wrap_vector(ctx, EVS_DTYPE_I32, 1, &l->count, hn))
        FAIL("wrap list: %s", evs_last_error());
}

/* The output of a round: its start value, one copy per side. */
typedef struct {
    evs_dtype t;
    int64_t len;
    size_t bytes;
    void *side[2], *before;
} Output;

static Output output(evs_dtype t, int64_t len) {
    Output o = {t, len, (size_t)(len > 0 ? len : 1) * (t == EVS_DTYPE_F64 ? 8 : 4), {NULL, NULL}, NULL};
    o.side[0] = values(t, len, 0);
    o.side[1] = malloc(o.bytes), o.before = malloc(o.bytes);
    memcpy(o.side[1], o.side[0], o.bytes);
    memcpy(o.before, o.side[0], o.bytes);
    return o;
}

/* Wraps input x (rows_in x n of dtype xt) and output side s as vectors (`vector`) or matrices. */
static void wrap_io(struct evs_context *ctx, int vector, evs_dtype xt, void *x, int64_t rows_in, const Output *o,
                    int s, int64_t rows_out, int64_t n, struct evs_dense **hx, struct evs_dense **hy) {
    evs_status made = vector ? evs_dense_wrap_vector(ctx, xt, rows_in, x, hx) ||
                                   evs_dense_wrap_vector(ctx, o->t, rows_out, o->side[s], hy)
                             : evs_dense_wrap_matrix(ctx, xt, rows_in, n, n, x, hx) ||
                                   evs_dense_wrap_matrix(ctx, o->t, rows_out, n, n, o->side[s], hy);
    if (made) FAIL("wrap: %s", evs_last_error());
}

/* A failed call must say why. */
static void expect_message(evs_status status) {
    if (status != EVS_SUCCESS && strlen(evs_last_error()) == 0) FAIL("status %d without a message", status);
}

/* Both sides must agree: the same status; accepted, the same output within `tol` relative
 * (plus an absolute share of 1); rejected, the output untouched. */
static void compare(const char *what, const evs_status status[2], Output *o, double tol) {
    if (status[0] != status[1]) FAIL("%s: status %d with plans, %d with the reference", what, status[0], status[1]);
    accepted += status[0] == EVS_SUCCESS;
    if (status[0] != EVS_SUCCESS && memcmp(o->side[0], o->before, o->bytes) != 0)
        FAIL("%s: a rejected call changed its output", what);
    for (int64_t i = 0; status[0] == EVS_SUCCESS && i < o->len; i++) {
        double got = get(o->t, o->side[0], i), want = get(o->t, o->side[1], i);
        if (isnan(got) && isnan(want)) continue;
        if (isinf(want) ? got != want : !(fabs(got - want) <= tol * (1.0 + fabs(want))))
            FAIL("%s: [%lld] = %g with plans, %g with the reference", what, (long long)i, got, want);
    }
    free(o->side[0]), free(o->side[1]), free(o->before);
}

/* Now and then NaN or an infinity in place of a scalar: both sides must agree on it too. */
static double odd_scalar(double usual) {
    switch (below(40)) {
    case 0: return NAN;
    case 1: return below(2) ? INFINITY : -INFINITY;
    default: return usual;
    }
}

static double rounding(evs_dtype t) { return t == EVS_DTYPE_F32 ? 1e-4 : 1e-12; }

static const char *type_names(int op, int events, evs_dtype t, char *buf, size_t size) {
    snprintf(buf, size, "%s %s %s", op ? "T" : "N", events ? "events" : "floats", t == EVS_DTYPE_F64 ? "f64" : "f32");
    return buf;
}

/* Handle misuse (SPEC §4): one argument of a call replaced by a handle of the wrong kind, the
 * same array or matrix made on the other side's context, or one already destroyed. */
enum { SOUND, WRONG_KIND, OTHER_CONTEXT, DESTROYED, MISUSES };
enum { ARG_STREAM, ARG_MATRIX, ARG_INPUT, ARG_OUTPUT, ARGS };

/* The same array as d (dtype, shape, memory), wrapped on ctx. */
static struct evs_dense *rewrap(const struct evs_dense *d, struct evs_context *ctx) {
    int32_t ndim;
    int64_t rows, cols, ld;
    evs_dtype t;
    void *data;
    struct evs_dense *out = NULL;
    if (evs_dense_shape(d, &ndim, &rows, &cols, &ld) || evs_dense_dtype(d, &t) || evs_dense_data(d, &data) ||
        (ndim == 1 ? evs_dense_wrap_vector(ctx, t, rows, data, &out) : evs_dense_wrap_matrix(ctx, t, rows, cols, ld, data, &out)))
        FAIL("rewrap: %s", evs_last_error());
    return out;
}

/* Destroys a handle of argument `which`'s kind (NULL: nothing). */
static evs_status destroy_arg(int which, void *handle) {
    return which == ARG_STREAM   ? evs_stream_destroy(handle)
           : which == ARG_MATRIX ? evs_csr_destroy(handle)
                                 : evs_dense_destroy(handle);
}

/* Replaces *arg (argument `which`: a stream, csr or dense handle) as `misuse` says; a handle it
 * made and did not destroy (on the other context) comes back in *made, for destroy_arg after
 * the call. */
static void misuse_arg(int misuse, int which, void **arg, Side own, Side other, const Pattern *p, evs_dtype t,
                       void **made) {
    *made = NULL;
    void *fresh = NULL;
    if (misuse == WRONG_KIND) { /* a stream where an array or matrix goes, else the stream itself */
        *arg = which == ARG_STREAM ? (void *)own.ctx : (void *)own.st;
        return;
    }
    struct evs_context *ctx = misuse == OTHER_CONTEXT ? other.ctx : own.ctx;
    if (which == ARG_STREAM) {
        if (evs_stream_create(ctx, (struct evs_stream **)&fresh)) FAIL("stream: %s", evs_last_error());
    } else if (which == ARG_MATRIX) {
        if (evs_csr_create(ctx, p->m, p->k, p->nnz, EVS_DTYPE_I64, p->indptr, p->indices, t, NULL, 1.0,
                           (struct evs_csr **)&fresh))
            FAIL("csr: %s", evs_last_error());
    } else {
        fresh = rewrap(*arg, ctx);
    }
    *arg = fresh;
    if (misuse == OTHER_CONTEXT) {
        *made = fresh;
        return;
    }
    if (destroy_arg(which, fresh)) FAIL("destroy: %s", evs_last_error());
}

/* One spmv / spmm round: the same call on both sides, compared. */
static void round_sparse(Side fast, Side ref) {
    Pattern p = pattern();
    evs_dtype t = below(2) ? EVS_DTYPE_F32 : EVS_DTYPE_F64;
    int homo = (int)below(2), op = (int)below(2), events = (int)below(2), vector = (int)below(2);
    int64_t n = vector ? 1 : 1 + below(20);
    int64_t rows_in = op == EVS_OP_N ? p.k : p.m, rows_out = op == EVS_OP_N ? p.m : p.k;
    int spikes = vector && below(3) == 0;
    List l = spike_list(rows_in);
    if (below(12) == 0) rows_in += 1; /* a wrong shape */
    evs_dtype xt = events ? (below(2) ? EVS_DTYPE_BOOL : t) : t;
    if (below(12) == 0) xt = xt == EVS_DTYPE_F32 ? EVS_DTYPE_F64 : EVS_DTYPE_F32; /* a wrong dtype */
    void *w = values(t, p.nnz, 0), *x = values(xt, rows_in * n, events);
    Output y = output(t, rows_out * n);
    double alpha = odd_scalar((double)(below(5) - 2) * 0.5), beta = odd_scalar((double)(below(3)) * 0.5);
    int misuse = p.broken || below(8) ? SOUND : 1 + (int)below(MISUSES - 1), which = (int)below(ARGS);
    evs_status status[2];
    Side sides[2] = {fast, ref};
    for (int s = 0; s < 2; s++) {
        struct evs_csr *a = NULL;
        struct evs_dense *hx = NULL, *hy = NULL;
        evs_status made = evs_csr_create(sides[s].ctx, p.m, p.k, p.nnz, EVS_DTYPE_I64, p.indptr, p.indices, t,
                                         homo ? NULL : w, 0.75, &a);
        if (made != EVS_SUCCESS) {
            if (!p.broken) FAIL("csr_create refused a valid matrix: %s", evs_last_error());
            status[s] = made;
            continue;
        }
        if (p.broken) FAIL("csr_create accepted a broken matrix");
        struct evs_dense *hi = NULL, *hn = NULL;
        wrap_io(sides[s].ctx, vector, xt, x, rows_in, &y, s, rows_out, n, &hx, &hy);
        wrap_list(sides[s].ctx, &l, &hi, &hn);
        void *args[ARGS] = {sides[s].st, a, spikes ? hi : hx, hy}, *spare = NULL;
        if (misuse) misuse_arg(misuse, which, &args[which], sides[s], sides[1 - s], &p, t, &spare);
        if (spikes) status[s] = evs_spmv_spikes(args[ARG_STREAM], op, alpha, args[ARG_MATRIX], args[ARG_INPUT], hn, beta, args[ARG_OUTPUT]);
        else if (vector) status[s] = evs_spmv(args[ARG_STREAM], op, events, alpha, args[ARG_MATRIX], args[ARG_INPUT], beta, args[ARG_OUTPUT]);
        else status[s] = evs_spmm(args[ARG_STREAM], op, events, alpha, args[ARG_MATRIX], args[ARG_INPUT], beta, args[ARG_OUTPUT]);
        expect_message(status[s]);
        if (misuse && status[s] == EVS_SUCCESS) FAIL("a call took a misused handle (%d, argument %d)", misuse, which);
        misuses_refused += misuse != SOUND;
        destroy_arg(which, spare);
        evs_stream_synchronize(sides[s].st);
        evs_dense_destroy(hx), evs_dense_destroy(hy), evs_dense_destroy(hi), evs_dense_destroy(hn);
        evs_csr_destroy(a);
    }
    char types[32], what[96];
    snprintf(what, sizeof what, "%s %s n=%lld %lldx%lld", spikes ? "spmv spike list" : "spmm",
             type_names(op, events, t, types, sizeof types), (long long)n, (long long)p.m, (long long)p.k);
    compare(what, status, &y, rounding(t));
    free(w), free(x), free(p.indptr), free(p.indices), free(l.indices);
}

/* One round of dense mv / mm (N: C = W·S with W m x k; T: C = Wᵀ·S with W k x m), whose CPU
 * plans visit only the input's non-zeros or call a GEMM. */
static void round_dense(Side fast, Side ref) {
    evs_dtype t = below(2) ? EVS_DTYPE_F32 : EVS_DTYPE_F64;
    int op = (int)below(2), events = (int)below(2), vector = (int)below(2);
    int64_t size = below(8) == 0 ? 300 : 30;
    int64_t m = below(size), k = below(size), n = vector ? 1 : 1 + below(20);
    int64_t w_rows = op == EVS_OP_N ? m : k, w_cols = op == EVS_OP_N ? k : m, s_rows = k;
    int spikes = vector && below(3) == 0;
    List l = spike_list(k);
    if (below(12) == 0) s_rows += 1; /* a wrong shape */
    evs_dtype st = events ? (below(2) ? EVS_DTYPE_BOOL : t) : t;
    void *w = values(t, w_rows * w_cols, 0), *x = values(st, s_rows * n, events);
    Output c = output(t, m * n);
    double alpha = odd_scalar((double)(below(5) - 2) * 0.5), beta = odd_scalar((double)(below(3)) * 0.5);
    evs_status status[2];
    Side sides[2] = {fast, ref};
    for (int s = 0; s < 2; s++) {
        struct evs_dense *hw = NULL, *hs = NULL, *hc = NULL;
        if (evs_dense_wrap_matrix(sides[s].ctx, t, w_rows, w_cols, w_cols > 0 ? w_cols : 1, w, &hw))
            FAIL("wrap W: %s", evs_last_error());
        struct evs_dense *hi = NULL, *hn = NULL;
        wrap_io(sides[s].ctx, vector, st, x, s_rows, &c, s, m, n, &hs, &hc);
        wrap_list(sides[s].ctx, &l, &hi, &hn);
        if (spikes) status[s] = evs_dense_mv_spikes(sides[s].st, op, alpha, hw, hi, hn, beta, hc);
        else if (vector) status[s] = evs_dense_mv(sides[s].st, op, events, alpha, hw, hs, beta, hc);
        else status[s] = evs_dense_mm(sides[s].st, op, events, alpha, hw, hs, beta, hc);
        expect_message(status[s]);
        evs_stream_synchronize(sides[s].st);
        evs_dense_destroy(hw), evs_dense_destroy(hs), evs_dense_destroy(hc);
        evs_dense_destroy(hi), evs_dense_destroy(hn);
    }
    char types[32], what[96];
    snprintf(what, sizeof what, "dense%s %s n=%lld W %lldx%lld", spikes ? " spike list" : "",
             type_names(op, events, t, types, sizeof types), (long long)n, (long long)w_rows, (long long)w_cols);
    /* sums of up to 300 products: the GEMM path may add in another order */
    compare(what, status, &c, rounding(t) * (1.0 + (double)k / 16));
    free(w), free(x), free(l.indices);
}

/* w + add in the weights' precision, clipped to [lo, hi]. */
static double clip_add(evs_dtype t, double w, double add, double lo, double hi) {
    double v = t == EVS_DTYPE_F32 ? (double)((float)w + (float)add) : w + add;
    return v < lo ? lo : v > hi ? hi : v;
}

/* One CSR plasticity round (pre or post, on events or a spike list) against a model in this
 * file: each stored weight gets clip(w + trace) once per occurrence of its row (pre) or column
 * (post) among the active neurons. A homogeneous matrix, crossed bounds, a trace of the wrong
 * length or (CPU) a bad list must be rejected, the weights untouched. */
static void round_plasticity(Side fast) {
    Pattern p = pattern();
    evs_dtype t = below(2) ? EVS_DTYPE_F32 : EVS_DTYPE_F64;
    int post = (int)below(2), spikes = (int)below(2), homo = below(16) == 0, crossed = below(16) == 0;
    int64_t neurons = post ? p.k : p.m, trace_len = (post ? p.m : p.k) + (below(16) == 0);
    double w_min = below(3) == 0 ? -INFINITY : -0.5, w_max = below(3) == 0 ? INFINITY : 0.5;
    if (crossed) w_min = 0.5, w_max = -0.5;
    evs_dtype et = below(2) ? EVS_DTYPE_BOOL : t;
    void *w = values(t, p.nnz, 0), *trace = values(t, trace_len, 0), *events = values(et, neurons, 1);
    List l = spike_list(neurons);
    int64_t *times = calloc((size_t)neurons + 1, sizeof(int64_t)); /* occurrences of each neuron */
    int list_ok = !spikes || (l.count >= 0 && l.count <= l.capacity);
    for (int64_t i = 0; spikes && list_ok && i < l.count; i++) {
        if (l.indices[i] < 0 || l.indices[i] >= neurons) list_ok = 0;
        else times[l.indices[i]]++;
    }
    for (int64_t i = 0; !spikes && i < neurons; i++)
        times[i] = et == EVS_DTYPE_BOOL ? ((unsigned char *)events)[i] != 0 : get(et, events, i) > 0;
    int faults = homo + crossed + (trace_len != (post ? p.m : p.k)) + !list_ok;
    Output o = output(t, p.nnz); /* side[1]: the model; before: the weights as created */
    memcpy(o.side[0], w, o.bytes), memcpy(o.side[1], w, o.bytes), memcpy(o.before, w, o.bytes);
    for (int64_t i = 0; !p.broken && i < p.m; i++)
        for (int64_t j = p.indptr[i]; j < p.indptr[i + 1]; j++) {
            int64_t neuron = post ? p.indices[j] : i, source = post ? i : p.indices[j];
            double v = get(t, o.side[1], j);
            for (int64_t r = 0; r < times[neuron]; r++) v = clip_add(t, v, get(t, trace, source), w_min, w_max);
            if (t == EVS_DTYPE_F64) ((double *)o.side[1])[j] = v;
            else ((float *)o.side[1])[j] = (float)v;
        }
    struct evs_csr *a = NULL;
    evs_status made = evs_csr_create(fast.ctx, p.m, p.k, p.nnz, EVS_DTYPE_I64, p.indptr, p.indices, t,
                                     homo ? NULL : w, 0.75, &a);
    if ((made != EVS_SUCCESS) != p.broken) FAIL("csr_create: status %d for a %s matrix", made, p.broken ? "broken" : "valid");
    if (made == EVS_SUCCESS) {
        struct evs_dense *ht = NULL, *he = NULL, *hi = NULL, *hn = NULL, *view = NULL;
        if (evs_dense_wrap_vector(fast.ctx, t, trace_len, trace, &ht) ||
            evs_dense_wrap_vector(fast.ctx, et, neurons, events, &he))
            FAIL("wrap: %s", evs_last_error());
        wrap_list(fast.ctx, &l, &hi, &hn);
        evs_status status =
            spikes ? (post ? evs_csr_plasticity_post_spikes : evs_csr_plasticity_pre_spikes)(fast.st, a, hi, hn, ht, w_min, w_max)
                   : (post ? evs_csr_plasticity_post : evs_csr_plasticity_pre)(fast.st, a, he, ht, w_min, w_max);
        expect_message(status);
        if ((status == EVS_SUCCESS) != (faults == 0))
            FAIL("csr plasticity %s%s: status %d with %d faults (%s)", post ? "post" : "pre", spikes ? " spike list" : "",
                 status, faults, evs_last_error());
        accepted += status == EVS_SUCCESS;
        if (!homo) {
            if (evs_csr_weights(a, &view) || evs_dense_copy_to_host(fast.st, view, o.side[0], p.nnz))
                FAIL("reading the weights: %s", evs_last_error());
            if (status != EVS_SUCCESS) memcpy(o.side[1], o.before, o.bytes); /* rejected: untouched */
            for (int64_t j = 0; j < p.nnz; j++)
                if (!(fabs(get(t, o.side[0], j) - get(t, o.side[1], j)) <= rounding(t) * 1e-2))
                    FAIL("csr plasticity %s: w[%lld] = %g, the model %g", post ? "post" : "pre", (long long)j,
                         get(t, o.side[0], j), get(t, o.side[1], j));
        }
        evs_dense_destroy(ht), evs_dense_destroy(he), evs_dense_destroy(hi), evs_dense_destroy(hn);
        evs_dense_destroy(view), evs_csr_destroy(a);
    }
    free(o.side[0]), free(o.side[1]), free(o.before);
    free(w), free(trace), free(events), free(times), free(p.indptr), free(p.indices), free(l.indices);
}

/* One BSR x dense round (f32, C f32) against a model in this file: random block extents and
 * structure (empty block rows, repeated and unsorted block columns), sometimes broken (a block
 * extent that is not 16, 32, 64 or 128, a block column out of range, an indptr going down), a
 * wrong shape of B, or C over B's own memory, all of which must be refused. */
static void round_bsr(Side fast) {
    static const int extents[] = {16, 32, 64, 128};
    int bm = extents[below(2) ? below(2) : below(4)], bk = extents[below(2) ? below(2) : below(4)];
    int64_t mb = below(bm >= 64 ? 3 : 5), kb = below(bk >= 64 ? 3 : 5), n = 1 + below(20);
    int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(mb + 1)), *indices = malloc(sizeof(int32_t) * (size_t)(mb * 6 + 1));
    indptr[0] = 0;
    for (int64_t i = 0; i < mb; i++) {
        int64_t len = kb == 0 || below(4) == 0 ? 0 : below(6);
        for (int64_t j = 0; j < len; j++) indices[indptr[i] + j] = (int32_t)below(kb);
        indptr[i + 1] = indptr[i] + (int32_t)len;
    }
    int64_t nnzb = indptr[mb], M = mb * bm, K = kb * bk;
    int broken = 0;
    switch (below(16)) {
    case 0: bm = 24, broken = 1; break;
    case 1: if (nnzb) indices[below(nnzb)] = (int32_t)(kb + below(3)), broken = 1; break;
    case 2: if (mb > 1) indptr[1 + below(mb - 1)] = (int32_t)nnzb + 1, broken = 1; break;
    }
    float *blocks = values(EVS_DTYPE_F32, nnzb * bm * bk, 0), *b = values(EVS_DTYPE_F32, K * n, 0);
    int64_t b_rows = below(12) == 0 ? K + 1 : K;
    if (b_rows != K) b = realloc(b, sizeof(float) * (size_t)(b_rows * n + 1));
    Output c = output(EVS_DTYPE_F32, M * n);
    double alpha = (double)(below(5) - 2) * 0.5, beta = (double)below(3) * 0.5;
    struct evs_bsr *a = NULL;
    evs_status made = evs_bsr_create(fast.ctx, mb, kb, bm, bk, nnzb, indptr, indices, EVS_DTYPE_F32, blocks, &a);
    if ((made == EVS_SUCCESS) == broken) FAIL("bsr_create %s a %s matrix", made ? "refused" : "accepted", broken ? "broken" : "valid");
    if (made == EVS_SUCCESS) {
        int alias = M > 0 && M <= b_rows && below(12) == 0; /* C over B: refused */
        struct evs_dense *hb = NULL, *hc = NULL;
        if (evs_dense_wrap_matrix(fast.ctx, EVS_DTYPE_F32, b_rows, n, n, b, &hb) ||
            evs_dense_wrap_matrix(fast.ctx, EVS_DTYPE_F32, M, n, n, alias ? (void *)b : c.side[0], &hc))
            FAIL("wrap: %s", evs_last_error());
        evs_status status = evs_bsrmm(fast.st, alpha, a, hb, beta, hc);
        expect_message(status);
        evs_stream_synchronize(fast.st);
        if ((status == EVS_SUCCESS) != (b_rows == K && !alias))
            FAIL("bsrmm %dx%d blocks, B %lld rows, alias %d: status %d", bm, bk, (long long)b_rows, alias, status);
        float *want = c.side[1]; /* the model: beta C + alpha A B, in double */
        for (int64_t i = 0; status == EVS_SUCCESS && i < M; i++)
            for (int64_t col = 0; col < n; col++) {
                double acc = 0;
                for (int32_t p = indptr[i / bm]; p < indptr[i / bm + 1]; p++)
                    for (int64_t r = 0; r < bk; r++)
                        acc += (double)blocks[((int64_t)p * bm + i % bm) * bk + r] * b[((int64_t)indices[p] * bk + r) * n + col];
                float *slot = &want[i * n + col];
                *slot = (float)(alpha * acc + (beta == 0 ? 0.0 : beta * *slot));
            }
        evs_dense_destroy(hb), evs_dense_destroy(hc), evs_bsr_destroy(a);
        evs_status both[2] = {status, status};
        bsr_products += status == EVS_SUCCESS;
        char what[64];
        snprintf(what, sizeof what, "bsrmm %dx%d blocks, %lldx%lld, n=%lld", bm, bk, (long long)M, (long long)K, (long long)n);
        compare(what, both, &c, 1e-4);
    } else {
        expect_message(made);
        free(c.side[0]), free(c.side[1]), free(c.before);
    }
    free(indptr), free(indices), free(blocks), free(b);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    seed = argc > 2 ? strtoull(argv[2], NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    state = seed;
    printf("fuzz: seed %llu, %g s\n", (unsigned long long)seed, seconds);
    Side fast = side(NULL), ref = side("spmm_n:reference,spmm_t:reference,dense_mm:reference");
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    for (round_no = 0; clock() < end; round_no++) {
        switch (below(5)) {
        case 0: round_dense(fast, ref); break;
        case 1: round_plasticity(fast); break;
        case 2: round_bsr(fast); break;
        default: round_sparse(fast, ref);
        }
    }
    printf("fuzz: %llu rounds passed (%llu calls accepted, the others rejected; %llu misused handles refused, "
           "%llu BSR products checked)\n",
           (unsigned long long)round_no, (unsigned long long)accepted, (unsigned long long)misuses_refused,
           (unsigned long long)bsr_products);
    evs_stream_destroy(fast.st), evs_stream_destroy(ref.st);
    evs_context_destroy(fast.ctx), evs_context_destroy(ref.ctx);
    return 0;
}
