"""The binding on every framework of conftest.py: each operation against a float64 numpy
reference on random inputs (skewed and empty rows, duplicates), outputs poisoned first; zero-copy
and streams; every error path raising its exception with the library's message."""
import math

import numpy as np
import pytest

import evsparse as evs

TOL = {"float16": 4e-3, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}
POISON = 7.0


def rng(seed=0):
    return np.random.default_rng(seed)


def random_csr(r, m, k, per_row=4):
    """Row lengths from 0 to 3 x per_row (some empty), unsorted columns with duplicates."""
    lengths = r.integers(0, 3 * per_row + 1, m) * (r.random(m) > 0.2)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = r.integers(0, k, indptr[-1]).astype(np.int32)
    weights = r.standard_normal(indptr[-1])
    return indptr, indices, weights


def dense_of(indptr, indices, weights, m, k):
    a = np.zeros((m, k))
    rows = np.repeat(np.arange(m), np.diff(indptr))
    np.add.at(a, (rows, indices), weights)
    return a


def close(got, ref, dtype):
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    np.testing.assert_allclose(got, ref, atol=TOL[dtype] * scale * 4, rtol=0)


def events_of(r, n, cols=None, p=0.3):
    shape = (n,) if cols is None else (n, cols)
    return r.random(shape) < p


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", ["N", "T"])
@pytest.mark.parametrize("homo", [False, True])
def test_spmv_and_spmm(xp, dtype, op, homo):
    if dtype not in xp.dtypes:
        pytest.skip(f"{xp} has no {dtype}")
    r = rng()
    m, k, n = 37, 29, 5
    indptr, indices, weights = random_csr(r, m, k)
    w = xp.to(weights, dtype)
    a = evs.CSR(xp.to(indptr), xp.to(indices), None if homo else w, shape=(m, k), homo_weight=0.5, dtype=dtype)
    assert (a.shape, a.nnz, a.dtype, a.homogeneous) == ((m, k), len(indices), dtype, homo)
    ref_a = dense_of(indptr, indices, np.full(len(indices), 0.5) if homo else xp.host(w).astype(np.float64), m, k)
    ref_a = ref_a if op == "N" else ref_a.T
    rows, cols = ref_a.shape
    for events in (False, True):
        x = xp.to(events_of(r, cols)) if events else xp.to(r.standard_normal(cols), dtype)
        xv = xp.host(x).astype(np.float64)
        y = xp.to(np.full(rows, POISON), dtype)
        assert evs.spmv(a, x, y, op=op, events=events, alpha=2.0) is y
        close(xp.host(y), 2.0 * ref_a @ xv, dtype)
        b = xp.to(events_of(r, cols, n)) if events else xp.to(r.standard_normal((cols, n)), dtype)
        c0 = r.standard_normal((rows, n))
        c = xp.to(c0, dtype)
        c0 = xp.host(c).astype(np.float64)
        evs.spmm(a, b, c, op=op, events=events, beta=0.5)
        close(xp.host(c), ref_a @ xp.host(b).astype(np.float64) + 0.5 * c0, dtype)


def test_spike_lists(xp):
    """compact_events, then the spike-list form of every operation that takes one."""
    r = rng(1)
    m, k = 40, 33
    indptr, indices, weights = random_csr(r, m, k)
    spikes = events_of(r, m)
    idx, count = xp.to(np.full(m, -1, np.int32)), xp.to(np.zeros(1, np.int32))
    spike_list = evs.compact_events(xp.to(spikes), idx, count)
    assert xp.host(count)[0] == spikes.sum()
    np.testing.assert_array_equal(xp.host(idx)[: spikes.sum()], np.flatnonzero(spikes))

    w = xp.to(weights, "float32")
    a = evs.CSR(xp.to(indptr), xp.to(indices), w, shape=(m, k))
    y = xp.to(np.full(k, POISON), "float32")
    evs.spmv(a, spike_list, y, op="T")
    close(xp.host(y), dense_of(indptr, indices, weights, m, k).T @ spikes, "float32")

    wd = r.standard_normal((k, m))
    c = xp.to(np.full(k, POISON), "float32")
    evs.dense_mv(xp.to(wd, "float32"), spike_list, c, op="N")
    close(xp.host(c), wd @ spikes, "float32")


def test_yw2y(xp):
    r = rng(2)
    m, k = 21, 17
    indptr, indices, weights = random_csr(r, m, k)
    a = evs.CSR(xp.to(indptr), xp.to(indices), xp.to(weights, "float64"), shape=(m, k))
    rows = np.repeat(np.arange(m), np.diff(indptr))
    for op, gather in (("N", rows), ("T", indices)):
        y = r.standard_normal(m if op == "N" else k)
        out = xp.to(np.full(len(indices), POISON), "float64")
        evs.yw2y(a, xp.to(y), out, op=op, alpha=3.0)
        close(xp.host(out), 3.0 * weights * y[gather], "float64")
        batch_w, batch_y = r.standard_normal((2, len(indices))), r.standard_normal((2, len(y)))
        out2 = xp.to(np.full((2, len(indices)), POISON), "float64")
        evs.yw2y(a, xp.to(batch_y), out2, op=op, weights=xp.to(batch_w))
        close(xp.host(out2), batch_w * batch_y[:, gather], "float64")


@pytest.mark.parametrize("op", ["N", "T"])
def test_dense_products(xp, op):
    r = rng(3)
    m, k, n = 19, 23, 6
    w = r.standard_normal((m, k) if op == "N" else (k, m))
    ref_w = w if op == "N" else w.T
    s = events_of(r, k)
    c = xp.to(np.full(m, POISON), "float32")
    evs.dense_mv(xp.to(w, "float32"), xp.to(s), c, op=op, events=True)
    close(xp.host(c), ref_w @ s, "float32")
    s2 = r.standard_normal((k, n))
    c2 = xp.to(np.full((m, n), POISON), "float32")
    evs.dense_mm(xp.to(w, "float32"), xp.to(s2, "float32"), c2, op=op)
    close(xp.host(c2), ref_w @ s2, "float32")


def test_plasticity_in_place(xp):
    """Weights wrapped zero-copy are updated in the caller's own array."""
    r = rng(4)
    m, k = 30, 25
    indptr, indices, weights = random_csr(r, m, k)
    w = xp.to(weights, "float32")
    a = evs.CSR(xp.to(indptr), xp.to(indices), w, shape=(m, k))
    pre, post_trace = events_of(r, m), r.standard_normal(k)
    evs.csr_plasticity_pre(a, xp.to(pre), xp.to(post_trace, "float32"), w_min=-0.5, w_max=0.5)
    rows = np.repeat(np.arange(m), np.diff(indptr))
    expected = np.where(pre[rows], np.clip(weights + post_trace[indices], -0.5, 0.5), weights)
    close(xp.host(w), expected, "float32")

    post, pre_trace = events_of(r, k), r.standard_normal(m)
    evs.csr_plasticity_post(a, xp.to(post), xp.to(pre_trace, "float32"))
    expected = np.where(post[indices], expected + pre_trace[rows], expected)
    close(xp.host(w), expected, "float32")

    wd = r.standard_normal((m, k))
    wd_x = xp.to(wd, "float32")
    spikes = np.flatnonzero(pre).astype(np.int32)
    spike_list = evs.SpikeList(xp.to(spikes), xp.to(np.array([len(spikes)], np.int32)))
    evs.dense_plasticity_pre(wd_x, spike_list, xp.to(post_trace, "float32"))
    wd[pre] += post_trace
    evs.dense_plasticity_post(wd_x, xp.to(post), xp.to(pre_trace, "float32"), w_max=1.0)
    wd[:, post] = np.minimum(wd[:, post] + pre_trace[:, None], 1.0)
    close(xp.host(wd_x), wd, "float32")


def test_copied_csr_weights_view(xp):
    """Host arrays given to a context elsewhere are copied; weights() reads them back."""
    r = rng(5)
    indptr, indices, weights = random_csr(r, 12, 9)
    ctx = evs.Context(xp.device)
    a = evs.CSR(indptr, indices, weights.astype(np.float32), shape=(12, 9), ctx=ctx)
    view, back = a.weights(), np.zeros(len(indices), np.float32)
    assert view.shape == (len(indices),) and view.dtype == "float32"
    stream = ctx.stream()
    view.copy_to_host(back, stream)
    stream.synchronize()
    np.testing.assert_array_equal(back, weights.astype(np.float32))


def test_csr_copy_on_cpu(xp):
    """copy=True copies host arrays on the CPU too; T products follow writes through weights()."""
    if xp.device != "cpu":
        return
    r = rng(8)
    indptr, indices, weights = random_csr(r, 12, 9)
    weights = weights.astype(np.float32)
    ctx = evs.Context("cpu")
    stream = ctx.stream()
    a = evs.CSR(indptr, indices, weights, shape=(12, 9), ctx=ctx, copy=True)
    weights[:] = 0  # copied: the caller's array is not the matrix's
    dense = np.zeros((12, 9))
    for row in range(12):
        np.add.at(dense[row], indices[indptr[row]:indptr[row + 1]], 1.0)
    b = r.standard_normal((12, 3)).astype(np.float32)
    for scale in (1.0, 3.0):
        c = np.full((9, 3), POISON, np.float32)
        evs.spmm(a, b, c, op="T")
        view, w = a.weights(), np.zeros(len(indices), np.float32)
        view.copy_to_host(w, stream)
        want = np.zeros((12, 9))
        for row in range(12):
            np.add.at(want[row], indices[indptr[row]:indptr[row + 1]], w[indptr[row]:indptr[row + 1]])
        close(c, want.T @ b.astype(np.float64), "float32")
        view.copy_from_host(w * 3.0, stream)  # the next product reads the new weights
        del view


def test_bsrmm(xp):
    r = rng(6)
    dtype = "float32" if xp.device == "cpu" else "float16"
    mb, kb, bm, bk, n = 3, 4, 16, 16, 16
    indptr = np.array([0, 2, 2, 4], np.int32)
    indices = np.array([3, 0, 1, 2], np.int32)
    values = r.standard_normal((4, bm, bk))
    v = xp.to(values, dtype)
    a = evs.BSR(v, xp.to(indices), xp.to(indptr), shape=(mb * bm, kb * bk))
    assert (a.shape, a.blocksize, a.nnzb, a.dtype) == ((mb * bm, kb * bk), (bm, bk), 4, dtype)
    dense = np.zeros((mb * bm, kb * bk))
    for row in range(mb):
        for p in range(indptr[row], indptr[row + 1]):
            dense[row * bm:(row + 1) * bm, indices[p] * bk:(indices[p] + 1) * bk] = xp.host(v)[p]
    b = xp.to(r.standard_normal((kb * bk, n)), dtype)
    c = xp.to(np.full((mb * bm, n), POISON), "float32")
    evs.bsrmm(a, b, c)
    close(xp.host(c), dense @ xp.host(b).astype(np.float64), dtype)


def test_csr_to_csc(xp):
    r = rng(7)
    m, k = 15, 11
    indptr, indices, weights = random_csr(r, m, k)
    a = evs.CSR(xp.to(indptr), xp.to(indices), xp.to(weights, "float32"), shape=(m, k))
    colptr, rowind, perm = (xp.to(np.full(n, -1, np.int32)) for n in (k + 1, len(indices), len(indices)))
    evs.csr_to_csc(a, colptr, rowind, perm)
    order = np.argsort(indices, kind="stable")
    np.testing.assert_array_equal(xp.host(perm), order)
    np.testing.assert_array_equal(xp.host(rowind), np.repeat(np.arange(m), np.diff(indptr))[order])
    np.testing.assert_array_equal(xp.host(colptr), np.concatenate([[0], np.cumsum(np.bincount(indices, minlength=k))]))


def test_zero_copy_and_wrapped_handles(xp):
    """A wrapped Dense points at the caller's memory, and a loop of calls on wrapped handles
    reads the caller's current values."""
    r = rng(8)
    x_np = r.standard_normal(10)
    x = xp.to(x_np, "float32")
    ctx = evs.Context(xp.device)
    d = ctx.wrap(x)
    pointer = x.ctypes.data if isinstance(x, np.ndarray) else (x.data_ptr() if hasattr(x, "data_ptr") else x.data.ptr)
    assert d.data_ptr == pointer and d.shape == (10,) and d.dtype == "float32"
    indptr = np.arange(11, dtype=np.int32)
    a = evs.CSR(xp.to(indptr), xp.to(np.arange(10, dtype=np.int32)), shape=(10, 10), ctx=ctx)
    y = ctx.wrap(xp.to(np.zeros(10), "float32"), writable=True)
    evs.spmv(a, d, y)
    d.fill(2.0)
    evs.spmv(a, d, y, beta=1.0)
    out = np.zeros(10, np.float32)
    y.copy_to_host(out)
    ctx.default_stream().synchronize()
    close(out, x_np + 2.0, "float32")
    with ctx.dense((2, 3), "float64") as owned:
        assert owned.shape == (2, 3) and owned.dtype == "float64"
    with pytest.raises(ValueError, match="closed"):
        owned.fill(1.0)


def test_streams(xp):
    """A call runs on the framework's current stream (torch, cupy) unless given one."""
    ctx = evs.Context(xp.device)
    x = xp.to(np.ones(4), "float32")
    if xp.device == "cpu":
        assert evs._core.resolve_stream(ctx, None, [x]) is ctx.default_stream()
        return
    if xp.name.startswith("torch"):
        torch = xp.torch
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            assert evs._core.resolve_stream(ctx, None, [x]).native == side.cuda_stream
        assert ctx.wrap_stream(side) is ctx.wrap_stream(side.cuda_stream)
    else:
        cupy = xp.cupy
        side = cupy.cuda.Stream(non_blocking=True)
        with side:
            assert evs._core.resolve_stream(ctx, None, [x]).native == side.ptr
            a = evs.CSR(xp.to(np.arange(5, dtype=np.int32)), xp.to(np.arange(4, dtype=np.int32)), shape=(4, 4))
            y = xp.to(np.zeros(4), "float32")
            evs.spmv(a, x, y, alpha=3.0)
        side.synchronize()
        close(xp.host(y), np.full(4, 3.0), "float32")


def test_errors(xp):
    """Every kind of failure raises its exception, with the library's message."""
    r = rng(9)
    indptr, indices, weights = random_csr(r, 8, 6)
    a = evs.CSR(xp.to(indptr), xp.to(indices), xp.to(weights, "float32"), shape=(8, 6))
    x, y = xp.to(np.ones(6), "float32"), xp.to(np.zeros(8), "float32")
    with pytest.raises(evs.ShapeMismatchError, match="evs_spmv: .*length") as e:
        evs.spmv(a, y, x)
    assert e.value.status == 5 and e.value.status_name == "EVS_ERROR_SHAPE_MISMATCH"
    assert isinstance(e.value, ValueError)
    with pytest.raises(evs.DtypeMismatchError):
        evs.spmv(a, xp.to(np.ones(6), "float64"), y)
    with pytest.raises(ValueError, match="op"):
        evs.spmv(a, x, y, op="X")
    bad = indices.copy()
    if len(bad):
        bad[0] = 6
        with pytest.raises(evs.InvalidStructureError, match="out of range"):
            evs.CSR(xp.to(indptr), xp.to(bad), xp.to(weights, "float32"), shape=(8, 6))
    with pytest.raises(ValueError, match="indptr has"):
        evs.CSR(xp.to(indptr), xp.to(indices), shape=(9, 6))
    with pytest.raises(TypeError, match="indices must be int32"):
        evs.CSR(xp.to(indptr), xp.to(indices.astype(np.int64)), shape=(8, 6))
    with pytest.raises(ValueError, match="unit stride"):
        evs.dense_mv(xp.to(np.ones((6, 8)), "float32")[:, ::2], x[:4], xp.to(np.zeros(6), "float32"))
    with pytest.raises(TypeError, match="DLPack"):
        evs.spmv(a, [1.0] * 6, y)
    with pytest.raises(evs.InvalidValueError, match="no algorithm"):
        a.ctx.set_algorithm("spmm_n:no_such_algorithm")
    a.ctx.set_algorithm("spmm_n:reference" if xp.device == "cpu" else "spmm_n:warp_per_row")
    evs.spmv(a, x, y)
    assert evs.last_plan() in ("spmm_n:reference", "spmm_n:warp_per_row")
    a.ctx.set_algorithm("spmm_n:auto")
    with pytest.raises(ValueError, match="device"):
        evs.Context("tpu")
    if xp.device == "cuda":
        with pytest.raises(ValueError, match="move the array"):
            evs.spmv(a, np.ones(6, np.float32), y)
    else:
        ro = np.zeros(8, np.float32)
        ro.flags.writeable = False
        with pytest.raises((ValueError, BufferError)):
            evs.spmv(a, x, ro)


def test_library_loading(tmp_path):
    with pytest.raises(OSError, match="not found"):
        evs._lib.load(str(tmp_path / "libevsparse.so"))
    assert evs.version().startswith(f"{evs._lib.ABI_MAJOR}.")


def test_infinite_bounds_default():
    import inspect
    assert inspect.signature(evs.csr_plasticity_pre).parameters["w_min"].default == -math.inf


def test_jax_inputs():
    """JAX arrays (immutable) as inputs, read zero-copy; the output comes from a framework whose
    arrays can be written (numpy on the CPU, torch or cupy on a GPU)."""
    jax = pytest.importorskip("jax")
    from conftest import BACKENDS
    device = jax.devices()[0]
    place = "cuda" if device.platform == "gpu" else "cpu"
    writer = next((b for b in BACKENDS if b.device == place), None)
    if writer is None:
        pytest.skip(f"no writable framework on {place}")
    r = rng(10)
    indptr, indices, weights = random_csr(r, 14, 10)
    put = lambda a: jax.device_put(a, device)  # noqa: E731
    a = evs.CSR(put(indptr), put(indices), put(weights.astype(np.float32)), shape=(14, 10))
    x = r.standard_normal(10).astype(np.float32)
    y = writer.to(np.full(14, POISON), "float32")
    evs.spmv(a, put(x), y)
    close(writer.host(y), dense_of(indptr, indices, weights, 14, 10) @ x, "float32")
