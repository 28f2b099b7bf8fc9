"""Python ctypes suite: every public function of evsparse through ctypes, with results checked
against naive pure-Python references on random inputs, and the error paths.

EVS_LIBRARY: path of libevsparse.so (default: target/release/libevsparse.so).
EVS_TEST_DEVICE, EVS_TEST_SEED: as for the C suite.
"""
import ctypes as C
import math
import os
import random
import struct
import sys

# The binding's loader and prototype table (python/evsparse/_lib.py, checked against the header
# by its own tests): this suite drives the bare C functions through it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from evsparse import _lib  # noqa: E402

LIB = _lib.load(os.environ.get("EVS_LIBRARY", "target/release/libevsparse.so"))

# Values from include/evsparse.h (the header is the contract; test_header_constants checks them).
SUCCESS, NULL_POINTER, INVALID_ENUM, INVALID_HANDLE, CONTEXT_MISMATCH = 0, 1, 2, 3, 4
SHAPE_MISMATCH, DTYPE_MISMATCH, INVALID_VALUE, INVALID_STRUCTURE, OUT_OF_MEMORY = 5, 6, 7, 8, 9
DEVICE_UNAVAILABLE, NOT_SUPPORTED = 10, 11
F16, BF16, F32, F64, BOOL, I32, I64 = 1, 2, 3, 4, 5, 6, 7
OP_N, OP_T = 0, 1
FLOAT, EVENTS = 0, 1
DEVICE_DEFAULT, DEVICE_CPU, DEVICE_CUDA = 0, 1, 2

I32P = C.POINTER(C.c_int32)

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}", file=sys.stderr)


def ok(status, what):
    check(status == SUCCESS, f"{what} -> {status}: {LIB.evs_last_error().decode()}")


def fails(expected, status, what):
    check(status == expected, f"{what} -> {status}, expected {expected} ({LIB.evs_last_error().decode()})")
    check(status == SUCCESS or LIB.evs_last_error() != b"", f"{what}: no message")


# ------------------------------------------------------------------ dtypes
def bf16_round(v):
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


FORMATS = {F16: "e", F32: "f", F64: "d", BOOL: "B", I32: "i", I64: "q"}
SIZES = {F16: 2, BF16: 2, F32: 4, F64: 8, BOOL: 1, I32: 4, I64: 8}
TOL = {F16: 4e-3, BF16: 2e-2, F32: 1e-5, F64: 1e-12}


def rounded(t, v):
    if t == BF16:
        return bf16_round(v)
    if t in (F16, F32):
        return struct.unpack("<" + FORMATS[t], struct.pack("<" + FORMATS[t], v))[0]
    return v


def encode(t, values):
    if t == BF16:
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", bf16_round(v)))[0])[2:] for v in values)
    if t in (BOOL, I32, I64):
        values = [int(v) for v in values]
    return struct.pack(f"<{len(values)}{FORMATS[t]}", *values)


def decode(t, raw, n):
    if t == BF16:
        return [struct.unpack("<f", b"\0\0" + raw[2 * i:2 * i + 2])[0] for i in range(n)]
    return list(struct.unpack(f"<{n}{FORMATS[t]}", raw[: n * SIZES[t]]))


# ------------------------------------------------------------------ handles
ctx, stream = C.c_void_p(), C.c_void_p()


def handle(fn, *args):
    out = C.c_void_p()
    ok(fn(*args, C.byref(out)), fn.__name__)
    return out


def dense(t, values, rows, cols=None):
    d = handle(LIB.evs_dense_create_vector, ctx, t, rows) if cols is None else handle(LIB.evs_dense_create_matrix, ctx, t, rows, cols)
    buf = C.create_string_buffer(encode(t, values), max(1, len(values) * SIZES[t]))
    ok(LIB.evs_dense_copy_from_host(stream, d, buf, len(values)), "copy_from_host")
    return d


def read(d):
    rows, cols, t = C.c_int64(), C.c_int64(), C.c_int32()
    ok(LIB.evs_dense_shape(d, None, C.byref(rows), C.byref(cols), None), "shape")
    ok(LIB.evs_dense_dtype(d, C.byref(t)), "dtype")
    n = rows.value * cols.value
    buf = C.create_string_buffer(max(1, n * SIZES[t.value]))
    ok(LIB.evs_dense_copy_to_host(stream, d, buf, n), "copy_to_host")
    ok(LIB.evs_stream_synchronize(stream), "synchronize")
    return decode(t.value, buf.raw, n)


def close(what, t, got, ref, scale):
    bad = [i for i in range(len(ref)) if abs(got[i] - ref[i]) > TOL[t] * scale[i] + (6e-8 if t == F16 else 1e-30)]
    check(len(got) == len(ref) and not bad, f"{what} [{t}]: {len(bad)} of {len(ref)} differ" + (f", first {got[bad[0]]} vs {ref[bad[0]]}" if bad else ""))


def random_csr(t, homo):
    m, k = random.randint(1, 25), random.randint(1, 25)
    indptr, indices = [0], []
    for _ in range(m):
        indices += [random.randrange(k) for _ in range(random.choice([0, random.randint(0, 8)]))]
        indptr.append(len(indices))
    hw = rounded(t, random.uniform(-1, 1))
    w = [hw if homo else rounded(t, random.uniform(-1, 1)) for _ in indices]
    rows = [i for i in range(m) for _ in range(indptr[i], indptr[i + 1])]
    ip = (C.c_int64 * (m + 1))(*indptr)
    ix = (C.c_int32 * max(1, len(indices)))(*indices)
    wb = None if homo else C.create_string_buffer(encode(t, w), max(1, len(w) * SIZES[t]))
    a = handle(LIB.evs_csr_create, ctx, m, k, len(indices), I64, ip, ix, t, wb, hw)
    return a, m, k, rows, indices, w


def test_products(t):
    for op in (OP_N, OP_T):
        for kind in (FLOAT, EVENTS):
            a, m, k, rows, cols, w = random_csr(t, random.random() < 0.5)
            n_in, n_out = (k, m) if op == OP_N else (m, k)
            n = random.randint(1, 4)
            x = [rounded(t, random.uniform(-1, 1)) if kind == FLOAT else float(random.random() < 0.3) for _ in range(n_in * n)]
            ref, scale = [0.0] * (n_out * n), [0.0] * (n_out * n)
            for j, (r, c) in enumerate(zip(rows, cols)):
                src, dst = (c, r) if op == OP_N else (r, c)
                for q in range(n):
                    term = w[j] * x[src * n + q]
                    ref[dst * n + q] += term
                    scale[dst * n + q] += abs(term)
            xd = dense(t if kind == FLOAT else BOOL, x, n_in, n)
            yd = dense(t, [math.nan] * (n_out * n), n_out, n)
            ok(LIB.evs_spmm(stream, op, kind, 1.0, a, xd, 0.0, yd), "spmm")
            close(f"spmm op={op} kind={kind}", t, read(yd), ref, scale)
            xv = dense(t if kind == FLOAT else BOOL, x[: n_in], n_in)
            yv = dense(t, [1.0] * n_out, n_out)
            refv, scalev = [1.0] * n_out, [1.0] * n_out
            for j, (r, c) in enumerate(zip(rows, cols)):
                src, dst = (c, r) if op == OP_N else (r, c)
                refv[dst] += 0.5 * w[j] * x[src]
                scalev[dst] += abs(0.5 * w[j] * x[src])
            ok(LIB.evs_spmv(stream, op, kind, 0.5, a, xv, 1.0, yv), "spmv")
            close(f"spmv op={op} kind={kind}", t, read(yv), refv, scalev)
            # yw2y, plain and weighted
            y = [rounded(t, random.uniform(-1, 1)) for _ in range(m if op == OP_N else k)]
            bw = [rounded(t, random.uniform(-1, 1)) for _ in w]
            yd1, bwd, out = dense(t, y, len(y)), dense(t, bw, len(bw)), dense(t, [0.0] * len(w), len(w))
            src = rows if op == OP_N else cols
            ok(LIB.evs_yw2y(stream, op, 1.0, a, yd1, 0.0, out), "yw2y")
            ref = [w[j] * y[src[j]] for j in range(len(w))]
            close("yw2y", t, read(out), ref, [abs(v) for v in ref])
            ok(LIB.evs_yw2y_weighted(stream, op, 1.0, a, bwd, yd1, 0.0, out), "yw2y_weighted")
            ref = [bw[j] * y[src[j]] for j in range(len(w))]
            close("yw2y_weighted", t, read(out), ref, [abs(v) for v in ref])
            for d in (xd, yd, xv, yv, yd1, bwd, out):
                ok(LIB.evs_dense_destroy(d), "destroy")
            ok(LIB.evs_csr_destroy(a), "csr_destroy")


def test_dense_and_plasticity(t):
    lo, hi = -0.5, 0.5
    clip = lambda v: rounded(t, min(max(v, lo), hi))
    for op in (OP_N, OP_T):
        m, k = random.randint(1, 15), random.randint(1, 15)
        wr, wc = (m, k) if op == OP_N else (k, m)
        W = [rounded(t, random.uniform(-1, 1)) for _ in range(wr * wc)]
        s = [float(random.random() < 0.4) for _ in range(k)]
        ref = [sum((W[i * k + r] if op == OP_N else W[r * m + i]) * s[r] for r in range(k)) for i in range(m)]
        scale = [sum(abs(W[i * k + r] if op == OP_N else W[r * m + i]) * s[r] for r in range(k)) for i in range(m)]
        wd, sd, cd = dense(t, W, wr, wc), dense(BOOL, s, k), dense(t, [0.0] * m, m)
        ok(LIB.evs_dense_mv(stream, op, EVENTS, 1.0, wd, sd, 0.0, cd), "dense_mv")
        close("dense_mv", t, read(cd), ref, scale)
        S2 = dense(BOOL, s, k, 1)
        C2 = dense(t, [0.0] * m, m, 1)
        ok(LIB.evs_dense_mm(stream, op, EVENTS, 1.0, wd, S2, 0.0, C2), "dense_mm")
        close("dense_mm", t, read(C2), ref, scale)
        for d in (wd, sd, cd, S2, C2):
            ok(LIB.evs_dense_destroy(d), "destroy")
    for post in (False, True):
        a, m, k, rows, cols, w = random_csr(t, False)
        spikes = [float(random.random() < 0.4) for _ in range(k if post else m)]
        trace = [rounded(t, random.uniform(-1, 1)) for _ in range(m if post else k)]
        ref, scale = list(w), [0.0] * len(w)
        for j, (r, c) in enumerate(zip(rows, cols)):
            if spikes[c if post else r]:
                tr = trace[r if post else c]
                ref[j], scale[j] = clip(w[j] + tr), abs(w[j]) + abs(tr)
        sd, td = dense(F32, spikes, len(spikes)), dense(t, trace, len(trace))
        fn = LIB.evs_csr_plasticity_post if post else LIB.evs_csr_plasticity_pre
        ok(fn(stream, a, sd, td, lo, hi), "csr plasticity")
        view = handle(LIB.evs_csr_weights, a)
        close(f"csr plasticity post={post}", t, read(view), ref, scale)
        W = [rounded(t, random.uniform(-1, 1)) for _ in range(m * k)]
        ref, scale = list(W), [0.0] * (m * k)
        for i in range(m):
            for c in range(k):
                if spikes[c if post else i]:
                    tr = trace[i if post else c]
                    ref[i * k + c], scale[i * k + c] = clip(W[i * k + c] + tr), abs(W[i * k + c]) + abs(tr)
        wd = dense(t, W, m, k)
        fn = LIB.evs_dense_plasticity_post if post else LIB.evs_dense_plasticity_pre
        ok(fn(stream, wd, sd, td, lo, hi), "dense plasticity")
        close(f"dense plasticity post={post}", t, read(wd), ref, scale)
        for d in (sd, td, view, wd):
            ok(LIB.evs_dense_destroy(d), "destroy")
        ok(LIB.evs_csr_destroy(a), "csr_destroy")


def test_bsrmm(t):
    bm, bk, mb, kb, n = 16, 16, 2, 2, random.randint(1, 5)
    indptr, indices = [0], []
    for _ in range(mb):
        indices += [c for c in range(kb) if random.random() < 0.7]
        indptr.append(len(indices))
    vals = [rounded(t, random.uniform(-1, 1)) for _ in range(len(indices) * bm * bk)]
    B = [rounded(t, random.uniform(-1, 1)) for _ in range(kb * bk * n)]
    ref, scale = [0.0] * (mb * bm * n), [0.0] * (mb * bm * n)
    for ib in range(mb):
        for jb in range(indptr[ib], indptr[ib + 1]):
            for r in range(bm):
                for q in range(bk):
                    for c in range(n):
                        term = vals[(jb * bm + r) * bk + q] * B[(indices[jb] * bk + q) * n + c]
                        ref[(ib * bm + r) * n + c] += term
                        scale[(ib * bm + r) * n + c] += abs(term)
    ip, ix = (C.c_int32 * 3)(*indptr), (C.c_int32 * max(1, len(indices)))(*indices)
    vb = C.create_string_buffer(encode(t, vals), max(1, len(vals) * SIZES[t]))
    a = handle(LIB.evs_bsr_create, ctx, mb, kb, bm, bk, len(indices), ip, ix, t, vb)
    ok(LIB.evs_bsr_validate(stream, a), "bsr_validate")
    shape = [C.c_int64() for _ in range(5)]
    ok(LIB.evs_bsr_shape(a, *[C.byref(s) for s in shape], None), "bsr_shape")
    check([s.value for s in shape] == [mb * bm, kb * bk, bm, bk, len(indices)], "bsr_shape values")
    bd, cd = dense(t, B, kb * bk, n), dense(F32, [0.0] * (mb * bm * n), mb * bm, n)
    ok(LIB.evs_bsrmm(stream, 1.0, a, bd, 0.0, cd), "bsrmm")
    close("bsrmm", t, read(cd), ref, scale)
    for d in (bd, cd):
        ok(LIB.evs_dense_destroy(d), "destroy")
    ok(LIB.evs_bsr_destroy(a), "bsr_destroy")


def test_compact_csc_and_handles():
    spikes = [float(random.random() < 0.3) for _ in range(random.randint(1, 100))]
    sd, idx, cnt = dense(F32, spikes, len(spikes)), dense(I32, [-1] * len(spikes), len(spikes)), dense(I32, [0], 1)
    ok(LIB.evs_compact_events(stream, sd, idx, cnt), "compact")
    expect = [i for i, s in enumerate(spikes) if s > 0]
    check(read(cnt) == [len(expect)] and read(idx)[: len(expect)] == expect, "compact result")
    a, m, k, rows, cols, w = random_csr(F32, False)
    nnz = len(cols)
    cp, ri, pm = dense(I32, [0] * (k + 1), k + 1), dense(I32, [0] * nnz, nnz), dense(I64, [0] * nnz, nnz)
    ok(LIB.evs_csr_analyse(stream, a), "analyse")
    ok(LIB.evs_csr_validate(stream, a), "validate")
    ok(LIB.evs_csr_to_csc(stream, a, cp, ri, pm), "csr_to_csc")
    order = sorted((c, r, j) for j, (r, c) in enumerate(zip(rows, cols)))
    check(read(ri) == [o[1] for o in order] and read(pm) == [o[2] for o in order], "csc rows and permutation")
    check(read(cp)[-1] == nnz, "csc colptr")
    sh = [C.c_int64() for _ in range(3)]
    ok(LIB.evs_csr_shape(a, *[C.byref(s) for s in sh]), "csr_shape")
    check([s.value for s in sh] == [m, k, nnz], "csr_shape values")
    ty = [C.c_int32() for _ in range(3)]
    ok(LIB.evs_csr_types(a, *[C.byref(s) for s in ty]), "csr_types")
    check([s.value for s in ty] == [F32, I64, 0], "csr_types values")
    for d in (sd, idx, cnt, cp, ri, pm):
        ok(LIB.evs_dense_destroy(d), "destroy")
    ok(LIB.evs_csr_destroy(a), "csr_destroy")

    # zero-copy wrapping of memory Python owns: host memory on CPU contexts, device memory on CUDA
    kind = C.c_int32()
    ok(LIB.evs_context_device(ctx, C.byref(kind), None), "context_device")
    if kind.value == DEVICE_CPU:
        host = (C.c_float * 6)(*range(6))
        v = handle(LIB.evs_dense_wrap_vector, ctx, F32, 6, host)
        mview = handle(LIB.evs_dense_wrap_matrix, ctx, F32, 2, 2, 3, host)
        ok(LIB.evs_dense_fill(stream, mview, 9.0), "fill")
        check(list(host) == [9, 9, 2, 9, 9, 5], f"wrapped fill respects ld: {list(host)}")
        data = C.c_void_p()
        ok(LIB.evs_dense_data(v, C.byref(data)), "dense_data")
        check(data.value == C.addressof(host), "zero-copy data pointer")
        ip, ix = (C.c_int32 * 3)(0, 1, 2), (C.c_int32 * 2)(0, 1)
        wr = handle(LIB.evs_csr_wrap, ctx, 2, 2, 2, I32, ip, ix, F32, host, 0.0)
        ok(LIB.evs_csr_validate(stream, wr), "wrapped validate")
        ok(LIB.evs_csr_destroy(wr), "csr destroy")
        bv = (C.c_float * 256)()
        bip, bix = (C.c_int32 * 2)(0, 1), (C.c_int32 * 1)(0)
        b = handle(LIB.evs_bsr_wrap, ctx, 1, 1, 16, 16, 1, bip, bix, F32, bv)
        ok(LIB.evs_bsr_destroy(b), "bsr destroy")
        for d in (v, mview):
            ok(LIB.evs_dense_destroy(d), "destroy")
        out = C.c_void_p()
        fails(NOT_SUPPORTED, LIB.evs_stream_wrap(ctx, C.c_void_p(16), C.byref(out)), "stream_wrap on CPU")
    else:
        # CUDA: wrap the device memory of an owned array; host memory is refused
        host = (C.c_float * 6)(*range(6))
        out = C.c_void_p()
        fails(INVALID_VALUE, LIB.evs_dense_wrap_vector(ctx, F32, 6, host, C.byref(out)), "host pointer on CUDA")
        owner = dense(F32, list(range(6)), 6)
        data = C.c_void_p()
        ok(LIB.evs_dense_data(owner, C.byref(data)), "dense_data")
        mview = handle(LIB.evs_dense_wrap_matrix, ctx, F32, 2, 2, 3, data)
        ok(LIB.evs_dense_fill(stream, mview, 9.0), "fill")
        check(read(owner) == [9, 9, 2, 9, 9, 5], "wrapped device fill respects ld")
        for d in (mview, owner):
            ok(LIB.evs_dense_destroy(d), "destroy")


def test_errors():
    out = C.c_void_p(1)
    fails(DEVICE_UNAVAILABLE, LIB.evs_context_create(DEVICE_CUDA, 4096, C.byref(out)), "no such CUDA device")
    fails(INVALID_ENUM, LIB.evs_context_create(7, 0, C.byref(out)), "unknown device kind")
    fails(NULL_POINTER, LIB.evs_context_create(DEVICE_CPU, 0, None), "NULL out")
    fails(INVALID_ENUM, LIB.evs_dense_create_vector(ctx, 99, 3, C.byref(out)), "unknown dtype")
    fails(INVALID_VALUE, LIB.evs_dense_create_matrix(ctx, F32, -1, 3, C.byref(out)), "negative rows")
    fails(NULL_POINTER, LIB.evs_stream_synchronize(None), "NULL stream")
    d = dense(F32, [5.0] * 4, 4)
    fails(INVALID_HANDLE, LIB.evs_stream_synchronize(d), "dense as stream")
    fails(INVALID_HANDLE, LIB.evs_csr_shape(d, None, None, None), "dense as csr")
    ip, ix = (C.c_int32 * 3)(0, 2, 1), (C.c_int32 * 2)(0, 5)
    fails(INVALID_STRUCTURE, LIB.evs_csr_create(ctx, 2, 3, 2, I32, ip, ix, F32, None, 1.0, C.byref(out)), "decreasing indptr")
    check(b"indptr[2] = 1" in LIB.evs_last_error(), "message names the position: " + LIB.evs_last_error().decode())
    ip2 = (C.c_int32 * 3)(0, 1, 2)
    fails(INVALID_STRUCTURE, LIB.evs_csr_create(ctx, 2, 3, 2, I32, ip2, ix, F32, None, 1.0, C.byref(out)), "index out of range")
    check(LIB.evs_last_error() == b"csr: indices[1] = 5 out of range for 3 columns", LIB.evs_last_error().decode())
    a = handle(LIB.evs_csr_create, ctx, 2, 4, 0, I32, (C.c_int32 * 3)(0, 0, 0), None, F32, None, 1.0)
    y = dense(F32, [5.0] * 3, 3)
    fails(SHAPE_MISMATCH, LIB.evs_spmv(stream, OP_N, FLOAT, 1.0, a, d, 0.0, y), "spmv shape")
    fails(DTYPE_MISMATCH, LIB.evs_spmv(stream, OP_T, FLOAT, 1.0, a, dense(F64, [1, 2], 2), 0.0, d), "spmv dtype")
    fails(INVALID_ENUM, LIB.evs_spmv(stream, 5, FLOAT, 1.0, a, d, 0.0, y), "spmv op")
    fails(INVALID_VALUE, LIB.evs_csr_plasticity_pre(stream, a, dense(BOOL, [1, 0], 2), d, -1.0, 1.0), "homo plasticity")
    check(read(y) == [5.0] * 3, "rejected calls leave the output alone")
    other = handle(LIB.evs_context_create, DEVICE_CPU, 0)
    foreign = handle(LIB.evs_dense_create_vector, other, F32, 2)
    fails(CONTEXT_MISMATCH, LIB.evs_spmv(stream, OP_N, FLOAT, 1.0, a, d, 0.0, foreign), "context mismatch")
    check(LIB.evs_status_string(SHAPE_MISMATCH) == b"EVS_ERROR_SHAPE_MISMATCH", "status string")
    check(LIB.evs_status_string(999) == b"EVS_UNKNOWN_STATUS", "unknown status string")
    for h in (d, y, foreign):
        ok(LIB.evs_dense_destroy(h), "destroy")
    ok(LIB.evs_csr_destroy(a), "csr destroy")
    ok(LIB.evs_context_destroy(other), "context destroy")
    ok(LIB.evs_context_destroy(None), "destroy NULL")


def test_plans():
    """Forcing algorithms and reading back the plan that ran."""
    a = handle(LIB.evs_csr_create, ctx, 2, 3, 3, I32, (C.c_int32 * 3)(0, 2, 3), (C.c_int32 * 3)(0, 2, 1), F32, None, 2.0)
    x, y = dense(F32, [1.0, 2.0, 3.0], 3), dense(F32, [9.0, 9.0], 2)
    kind = C.c_int32()
    ok(LIB.evs_context_device(ctx, C.byref(kind), None), "context_device")
    runs_here = (b"row_ranges", b"input_blocks", b"reference") if kind.value == DEVICE_CPU else (
        b"thread_per_row", b"warp_per_row", b"length_classes")
    for alg in (b"thread_per_row", b"warp_per_row", b"length_classes", b"row_ranges", b"input_blocks", b"reference"):
        ok(LIB.evs_context_set_algorithm(ctx, b"spmm_n:" + alg), "force " + alg.decode())
        if alg not in runs_here:
            fails(NOT_SUPPORTED, LIB.evs_spmv(stream, OP_N, FLOAT, 1.0, a, x, 0.0, y), "forced elsewhere")
            continue
        ok(LIB.evs_spmv(stream, OP_N, FLOAT, 1.0, a, x, 0.0, y), "spmv forced")
        check(read(y) == [8.0, 4.0], "spmv forced %s: %s" % (alg.decode(), read(y)))
        plan = LIB.evs_last_plan()
        check(plan == b"spmm_n:" + alg, "last plan " + plan.decode())
    fails(INVALID_VALUE, LIB.evs_context_set_algorithm(ctx, b"spmm_n:nope"), "unknown algorithm")
    check(b"nope" in LIB.evs_last_error(), "message names the algorithm: " + LIB.evs_last_error().decode())
    fails(INVALID_VALUE, LIB.evs_context_set_algorithm(ctx, b"nope:auto"), "unknown family")
    fails(NULL_POINTER, LIB.evs_context_set_algorithm(ctx, None), "NULL spec")
    fails(INVALID_HANDLE, LIB.evs_context_set_algorithm(stream, b"spmm_n:auto"), "stream as context")
    ok(LIB.evs_context_set_algorithm(ctx, b"spmm_n:auto"), "auto")
    ok(LIB.evs_csr_destroy(a), "csr destroy")
    for h in (x, y):
        ok(LIB.evs_dense_destroy(h), "destroy")


def test_header_constants():
    """The constants above must be the header's."""
    header = open(os.path.join(os.path.dirname(__file__), "..", "include", "evsparse.h")).read()
    for name, value in [("EVS_ERROR_SHAPE_MISMATCH", SHAPE_MISMATCH), ("EVS_DTYPE_BF16", BF16), ("EVS_DTYPE_I64", I64),
                        ("EVS_INPUT_EVENTS", EVENTS), ("EVS_DEVICE_CUDA", DEVICE_CUDA), ("EVS_OP_T", OP_T),
                        ("EVS_ERROR_NOT_SUPPORTED", NOT_SUPPORTED), ("EVS_ERROR_OUT_OF_MEMORY", OUT_OF_MEMORY)]:
        check(f"#define {name} {value}\n" in header, f"header defines {name} {value}")
    major = int(header.split("#define EVS_VERSION_MAJOR ")[1].split()[0])
    check(LIB.evs_version().decode().split(".")[0] == str(major), "library major version matches the header")


def main():
    seed = int(os.environ.get("EVS_TEST_SEED", random.randrange(1 << 62)))
    print(f"seed: EVS_TEST_SEED={seed}")
    random.seed(seed)
    device = {"cuda": DEVICE_CUDA, "default": DEVICE_DEFAULT}.get(os.environ.get("EVS_TEST_DEVICE", "cpu"), DEVICE_CPU)
    ok(LIB.evs_context_create(device, 0, C.byref(ctx)), "context_create")
    ok(LIB.evs_stream_create(ctx, C.byref(stream)), "stream_create")
    for _ in range(3):
        for t in (F16, BF16, F32, F64):
            test_products(t)
            test_dense_and_plasticity(t)
            if t != F64:
                test_bsrmm(t)
    test_compact_csc_and_handles()
    test_errors()
    test_plans()
    test_header_constants()
    ok(LIB.evs_stream_destroy(stream), "stream_destroy")
    ok(LIB.evs_context_destroy(ctx), "context_destroy")
    print(f"test_ctypes: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
