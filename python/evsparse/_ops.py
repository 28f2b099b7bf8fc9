"""The operations. Each takes evsparse handles (CSR, BSR, Dense) or any DLPack arrays, writes its
output in place (zero-copy) and returns it. Work is queued on `stream` (a Stream, a native
handle or a torch/cupy stream), else on the current stream of the arrays' framework (torch,
cupy), else on the context's default stream; nothing waits for it."""
import math

from ._core import Context, Dense, Handle, SpikeList, Stream, call, resolve_stream
from . import _dlpack, _lib

C = _lib.CONSTANTS
OPS = {"N": C["OP_N"], "T": C["OP_T"]}


def op_code(op):
    try:
        return OPS[op.upper()]
    except (KeyError, AttributeError):
        raise ValueError(f"op {op!r}: expected 'N' (as stored) or 'T' (transposed)") from None


def input_kind(events):
    return C["INPUT_EVENTS"] if events else C["INPUT_FLOAT"]


def context_of(objects):
    """The context of the first handle among `objects`, else the shared one of the first
    array's device."""
    arrays = []
    for obj in objects:
        if hasattr(obj, "ctx"):
            return obj.ctx
        arrays.append(obj.indices if isinstance(obj, SpikeList) else obj)
    return Context.for_device(*_dlpack.device_of(arrays[0]))


class Operation:
    """One call in the making: its context and stream, and the views of the arrays it was given
    (released when the call has been queued)."""

    def __init__(self, *operands, stream):
        self.ctx = context_of(operands)
        if not isinstance(stream, Stream):  # else a loop's call on its own stream: nothing to look up
            flat = [x for obj in operands for x in (obj if isinstance(obj, SpikeList) else (obj,))]
            stream = resolve_stream(self.ctx, stream, flat)
        self.stream, self.views = stream, []

    def operand(self, obj, out=False):
        """The handle to pass for an operand: a handle as it is, an array wrapped for this call."""
        if isinstance(obj, Handle):
            return obj
        view = Dense.wrap(self.ctx, obj, self.stream, writable=out)
        self.views.append(view)
        return view

    def spikes(self, spike_list):
        return self.operand(spike_list.indices), self.operand(spike_list.count)

    def run(self, name, *args):
        try:
            call(name, self.stream, *args)
        finally:
            for view in self.views:
                view.close()


def product(name, a, x, y, op, events, alpha, beta, stream, spikes_name=None):
    o = Operation(a, x, y, stream=stream)
    if isinstance(x, SpikeList):
        if spikes_name is None:
            raise TypeError(f"{name} takes no spike list; pass events as an array")
        o.run(spikes_name, op_code(op), float(alpha), o.operand(a), *o.spikes(x), float(beta), o.operand(y, out=True))
    else:
        o.run(name, op_code(op), input_kind(events), float(alpha), o.operand(a), o.operand(x), float(beta),
              o.operand(y, out=True))
    return y


def spmv(a, x, y, *, op="N", events=False, alpha=1.0, beta=0.0, stream=None):
    """Sparse matrix × vector: N `y = alpha·A·x + beta·y` (x length k, y length m), T
    `y = alpha·Aᵀ·x + beta·y`. events=True reads x as events (bool, or float > 0), each active
    one counting as 1; x may also be a SpikeList. With beta = 0, y is not read."""
    return product("evs_spmv", a, x, y, op, events, alpha, beta, stream, "evs_spmv_spikes")


def spmm(a, b, c, *, op="N", events=False, alpha=1.0, beta=0.0, stream=None):
    """Sparse matrix × dense matrix: N `C(m x n) = alpha·A·B(k x n) + beta·C`, T
    `C(k x n) = alpha·Aᵀ·B(m x n) + beta·C`; events as for spmv."""
    return product("evs_spmm", a, b, c, op, events, alpha, beta, stream)


def dense_mv(w, s, c, *, op="N", events=False, alpha=1.0, beta=0.0, stream=None):
    """Dense weights × vector: N `c = alpha·W·s + beta·c` (W m x k), T `c = alpha·Wᵀ·s + beta·c`
    (W k x m); events as for spmv, s may be a SpikeList."""
    return product("evs_dense_mv", w, s, c, op, events, alpha, beta, stream, "evs_dense_mv_spikes")


def dense_mm(w, s, c, *, op="N", events=False, alpha=1.0, beta=0.0, stream=None):
    """Dense weights × matrix: N `C(m x n) = alpha·W(m x k)·S(k x n) + beta·C`, T with W k x m."""
    return product("evs_dense_mm", w, s, c, op, events, alpha, beta, stream)


def yw2y(a, y, out, *, op="N", weights=None, alpha=1.0, beta=0.0, stream=None):
    """Per-synapse product: N `out[j] = alpha·w_j·y[row(j)] + beta·out[j]`, T with
    y[indices[j]]. y is 1-D with out of length nnz, or batched (b x m or k, out b x nnz).
    `weights` (nnz, or b x nnz) replaces A's weights."""
    o = Operation(a, y, out, stream=stream)
    if weights is None:
        o.run("evs_yw2y", op_code(op), float(alpha), a, o.operand(y), float(beta), o.operand(out, out=True))
    else:
        o.run("evs_yw2y_weighted", op_code(op), float(alpha), a, o.operand(weights), o.operand(y), float(beta),
              o.operand(out, out=True))
    return out


def plasticity(name, target, spikes, trace, w_min, w_max, stream):
    o = Operation(target, spikes, trace, stream=stream)
    target_handle = o.operand(target, out=True)
    if isinstance(spikes, SpikeList):
        o.run(name + "_spikes", target_handle, *o.spikes(spikes), o.operand(trace), float(w_min), float(w_max))
    else:
        o.run(name, target_handle, o.operand(spikes), o.operand(trace), float(w_min), float(w_max))
    return target


def csr_plasticity_pre(a, pre_spikes, post_trace, *, w_min=-math.inf, w_max=math.inf, stream=None):
    """For every active pre-neuron i and entry j of row i: `w_j = clip(w_j + post_trace[indices[j]],
    w_min, w_max)`, on A's heterogeneous weights. pre_spikes: events (length m) or a SpikeList."""
    return plasticity("evs_csr_plasticity_pre", a, pre_spikes, post_trace, w_min, w_max, stream)


def csr_plasticity_post(a, post_spikes, pre_trace, *, w_min=-math.inf, w_max=math.inf, stream=None):
    """For every active post-neuron c and entry j with indices[j] = c:
    `w_j = clip(w_j + pre_trace[row(j)], w_min, w_max)`. post_spikes: length k, or a SpikeList."""
    return plasticity("evs_csr_plasticity_post", a, post_spikes, pre_trace, w_min, w_max, stream)


def dense_plasticity_pre(w, pre_spikes, post_trace, *, w_min=-math.inf, w_max=math.inf, stream=None):
    """`W[i,:] = clip(W[i,:] + post_trace, w_min, w_max)` for every active pre-neuron i (W m x k)."""
    return plasticity("evs_dense_plasticity_pre", w, pre_spikes, post_trace, w_min, w_max, stream)


def dense_plasticity_post(w, post_spikes, pre_trace, *, w_min=-math.inf, w_max=math.inf, stream=None):
    """`W[:,c] = clip(W[:,c] + pre_trace, w_min, w_max)` for every active post-neuron c."""
    return plasticity("evs_dense_plasticity_post", w, post_spikes, pre_trace, w_min, w_max, stream)


def bsrmm(a, b, c, *, alpha=1.0, beta=0.0, stream=None):
    """Block-sparse × dense: `C(M x N) = alpha·A(M x K)·B(K x N) + beta·C`, accumulating in f32;
    B has A's dtype, C A's dtype or float32."""
    o = Operation(a, b, c, stream=stream)
    o.run("evs_bsrmm", float(alpha), a, o.operand(b), float(beta), o.operand(c, out=True))
    return c


def compact_events(spikes, indices, count, *, stream=None):
    """Writes the indices of the active entries of `spikes` (increasing) to `indices` (int32, at
    least as long) and their number to `count` (int32, length 1, never read back to the host);
    returns them as a SpikeList."""
    o = Operation(spikes, indices, count, stream=stream)
    o.run("evs_compact_events", o.operand(spikes), o.operand(indices, out=True), o.operand(count, out=True))
    return SpikeList(indices, count)


def csr_to_csc(a, colptr, rowind, perm, *, stream=None):
    """CSR → CSC: `colptr` (k + 1), `rowind` (nnz, int32) and `perm` (nnz): the CSC entry p is
    the CSR entry perm[p]. Stable: rows stay in increasing order within a column."""
    o = Operation(a, colptr, rowind, perm, stream=stream)
    o.run("evs_csr_to_csc", a, o.operand(colptr, out=True), o.operand(rowind, out=True), o.operand(perm, out=True))
    return colptr, rowind, perm


def last_plan():
    """The algorithm the last operation on this thread ran ("spmm_t:csc_gather")."""
    return _lib.get().evs_last_plan().decode()


def version():
    """The loaded library's version ("0.1.0")."""
    return _lib.get().evs_version().decode()
