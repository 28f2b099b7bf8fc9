//! Entry points of the operations of SPEC §3. Each checks its handles here and its shapes,
//! dtypes and contexts in `core::ops` before any work; a rejected call changes nothing.

use super::guard;
use super::handles::{evs_bsr, evs_csr, evs_dense, evs_stream, get};
use crate::core::spikes::{SpikeList, Spikes};
use crate::core::{evs_input_kind, evs_op, ops, InputKind, Op};
use crate::error::evs_status;

/// Sparse matrix × vector: N `y = alpha·A·x + beta·y` (x length k, y length m), T
/// `y = alpha·Aᵀ·x + beta·y` (x length m, y length k). `kind` is `EVS_INPUT_FLOAT` (x has A's
/// dtype) or `EVS_INPUT_EVENTS` (x is bool or float; active entries count as 1). With
/// beta = 0, y is not read.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param op     `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param kind   `EVS_INPUT_FLOAT` (values multiply as they are) or `EVS_INPUT_EVENTS` (active entries count as 1)
/// @param alpha  scale of the product
/// @param a      the CSR matrix A (m x k)
/// @param x      input vector: length k (N) or m (T); A's dtype for float input, bool or a float type for events
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param y      output vector of A's dtype: length m (N) or k (T)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op` or `kind`
/// @retval EVS_ERROR_SHAPE_MISMATCH x or y has the wrong length, or is not 1-D
/// @retval EVS_ERROR_DTYPE_MISMATCH x or y has the wrong dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup spmv
#[no_mangle]
pub unsafe extern "C" fn evs_spmv(
    stream: *mut evs_stream,
    op: evs_op,
    kind: evs_input_kind,
    alpha: f64,
    a: *const evs_csr,
    x: *const evs_dense,
    beta: f64,
    y: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, kind) = (Op::from_raw(op)?, InputKind::from_raw(kind)?);
        ops::spmm(get("stream", stream)?, op, kind, alpha, get("A", a)?, get("x", x)?, beta, get("y", y)?, true)
    })
}

/// Sparse matrix × dense matrix: N `C(m x n) = alpha·A·B(k x n) + beta·C`, T
/// `C(k x n) = alpha·Aᵀ·B(m x n) + beta·C`. B and C are 2-D row-major; `kind` as for `evs_spmv`.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param op     `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param kind   `EVS_INPUT_FLOAT` (values multiply as they are) or `EVS_INPUT_EVENTS` (active entries count as 1)
/// @param alpha  scale of the product
/// @param a      the CSR matrix A (m x k)
/// @param b      input matrix: k x n (N) or m x n (T), row-major
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param c      output matrix of A's dtype: m x n (N) or k x n (T)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op` or `kind`
/// @retval EVS_ERROR_SHAPE_MISMATCH B or C has the wrong shape
/// @retval EVS_ERROR_DTYPE_MISMATCH B or C has the wrong dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup spmm
#[no_mangle]
pub unsafe extern "C" fn evs_spmm(
    stream: *mut evs_stream,
    op: evs_op,
    kind: evs_input_kind,
    alpha: f64,
    a: *const evs_csr,
    b: *const evs_dense,
    beta: f64,
    c: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, kind) = (Op::from_raw(op)?, InputKind::from_raw(kind)?);
        ops::spmm(get("stream", stream)?, op, kind, alpha, get("A", a)?, get("B", b)?, beta, get("C", c)?, false)
    })
}

/// Per-synapse product: N `out[j] = alpha·w_j·y[row(j)] + beta·out[j]`, T
/// `out[j] = alpha·w_j·y[indices[j]] + beta·out[j]`. y is 1-D (length m for N, k for T) with
/// out 1-D (nnz), or batched: y is b x (m or k) and out b x nnz. Dtypes are A's.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param op     `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param alpha  scale of the product
/// @param a      the CSR matrix (weights and structure)
/// @param y      length m (N) or k (T), or b x that (batched)
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param out    length nnz, or b x nnz (batched)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op`
/// @retval EVS_ERROR_SHAPE_MISMATCH y or out has the wrong shape
/// @retval EVS_ERROR_DTYPE_MISMATCH y or out is not of A's dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup yw2y
#[no_mangle]
pub unsafe extern "C" fn evs_yw2y(
    stream: *mut evs_stream,
    op: evs_op,
    alpha: f64,
    a: *const evs_csr,
    y: *const evs_dense,
    beta: f64,
    out: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let op = Op::from_raw(op)?;
        ops::yw2y(get("stream", stream)?, op, get("A", a)?, None, alpha, get("y", y)?, beta, get("out", out)?)
    })
}

/// `evs_yw2y` with per-batch weights: `weights` (b x nnz, or nnz for 1-D y) replaces A's
/// weights; A gives the structure only.
///
/// @param stream  stream the work is queued on; its context is the operation's
/// @param op      `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param alpha   scale of the product
/// @param a       the CSR matrix (structure only)
/// @param weights nnz, or b x nnz, weights of A's dtype
/// @param y       length m (N) or k (T), or b x that (batched)
/// @param beta    scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param out     length nnz, or b x nnz (batched)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op`
/// @retval EVS_ERROR_SHAPE_MISMATCH weights, y or out has the wrong shape
/// @retval EVS_ERROR_DTYPE_MISMATCH weights, y or out is not of A's dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup yw2y
#[no_mangle]
pub unsafe extern "C" fn evs_yw2y_weighted(
    stream: *mut evs_stream,
    op: evs_op,
    alpha: f64,
    a: *const evs_csr,
    weights: *const evs_dense,
    y: *const evs_dense,
    beta: f64,
    out: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let op = Op::from_raw(op)?;
        let (a, w) = (get("A", a)?, get("weights", weights)?);
        ops::yw2y(get("stream", stream)?, op, a, Some(w), alpha, get("y", y)?, beta, get("out", out)?)
    })
}

/// Dense weights × event (or float) vector: N `c = alpha·W·e(s) + beta·c` with W m x k,
/// s length k, c length m; T `c = alpha·Wᵀ·e(s) + beta·c` with W k x m.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param op     `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param kind   `EVS_INPUT_FLOAT` (values multiply as they are) or `EVS_INPUT_EVENTS` (active entries count as 1)
/// @param alpha  scale of the product
/// @param w      the weights W: m x k (N) or k x m (T)
/// @param s      input vector of length k
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param c      output vector of W's dtype, length m
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op` or `kind`
/// @retval EVS_ERROR_SHAPE_MISMATCH s or c has the wrong length
/// @retval EVS_ERROR_DTYPE_MISMATCH s or c has the wrong dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense_products
#[no_mangle]
pub unsafe extern "C" fn evs_dense_mv(
    stream: *mut evs_stream,
    op: evs_op,
    kind: evs_input_kind,
    alpha: f64,
    w: *const evs_dense,
    s: *const evs_dense,
    beta: f64,
    c: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, kind) = (Op::from_raw(op)?, InputKind::from_raw(kind)?);
        ops::dense_mm(get("stream", stream)?, op, kind, alpha, get("W", w)?, get("s", s)?, beta, get("c", c)?, true)
    })
}

/// Dense weights × event (or float) matrix: N `C(m x n) = alpha·W(m x k)·e(S)(k x n) + beta·C`,
/// T `C(m x n) = alpha·W(k x m)ᵀ·e(S)(k x n) + beta·C`.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param op     `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param kind   `EVS_INPUT_FLOAT` (values multiply as they are) or `EVS_INPUT_EVENTS` (active entries count as 1)
/// @param alpha  scale of the product
/// @param w      the weights W: m x k (N) or k x m (T)
/// @param s      input matrix k x n
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param c      output matrix of W's dtype, m x n
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op` or `kind`
/// @retval EVS_ERROR_SHAPE_MISMATCH S or C has the wrong shape
/// @retval EVS_ERROR_DTYPE_MISMATCH S or C has the wrong dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense_products
#[no_mangle]
pub unsafe extern "C" fn evs_dense_mm(
    stream: *mut evs_stream,
    op: evs_op,
    kind: evs_input_kind,
    alpha: f64,
    w: *const evs_dense,
    s: *const evs_dense,
    beta: f64,
    c: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, kind) = (Op::from_raw(op)?, InputKind::from_raw(kind)?);
        ops::dense_mm(get("stream", stream)?, op, kind, alpha, get("W", w)?, get("S", s)?, beta, get("C", c)?, false)
    })
}

/// Pre-synaptic plasticity on heterogeneous CSR weights: for every active pre-neuron i
/// (`pre_spikes`, length m, bool or float) and j in row i,
/// `w_j = clip(w_j + post_trace[indices[j]], w_min, w_max)` (`post_trace`: length k, A's dtype).
/// Use -INFINITY / INFINITY for an absent bound.
///
/// @param stream     stream the work is queued on; its context is the operation's
/// @param a          heterogeneous CSR matrix whose weights are updated in place
/// @param pre_spikes events of the m pre-neurons (bool or float)
/// @param post_trace length k, A's dtype
/// @param w_min      lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max      upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH a vector has the wrong length
/// @retval EVS_ERROR_DTYPE_MISMATCH post_trace is not of A's dtype, or the spikes not bool or float
/// @retval EVS_ERROR_INVALID_VALUE a homogeneous matrix, a NaN bound, w_min > w_max, or the weights overlap an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_csr_plasticity_pre(
    stream: *mut evs_stream,
    a: *mut evs_csr,
    pre_spikes: *const evs_dense,
    post_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        let (s, a) = (get("stream", stream)?, get("A", a)?);
        let spikes = Spikes::Events(get("pre_spikes", pre_spikes)?);
        ops::csr_plasticity(s, false, a, spikes, get("post_trace", post_trace)?, w_min, w_max)
    })
}

/// Post-synaptic plasticity on heterogeneous CSR weights: for every active post-neuron c
/// (`post_spikes`, length k) and every j with indices[j] = c,
/// `w_j = clip(w_j + pre_trace[row(j)], w_min, w_max)` (`pre_trace`: length m).
///
/// @param stream      stream the work is queued on; its context is the operation's
/// @param a           heterogeneous CSR matrix whose weights are updated in place
/// @param post_spikes events of the k post-neurons (bool or float)
/// @param pre_trace   length m, A's dtype
/// @param w_min       lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max       upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH a vector has the wrong length
/// @retval EVS_ERROR_DTYPE_MISMATCH pre_trace is not of A's dtype, or the spikes not bool or float
/// @retval EVS_ERROR_INVALID_VALUE a homogeneous matrix, a NaN bound, w_min > w_max, or the weights overlap an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_csr_plasticity_post(
    stream: *mut evs_stream,
    a: *mut evs_csr,
    post_spikes: *const evs_dense,
    pre_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        let (s, a) = (get("stream", stream)?, get("A", a)?);
        let spikes = Spikes::Events(get("post_spikes", post_spikes)?);
        ops::csr_plasticity(s, true, a, spikes, get("pre_trace", pre_trace)?, w_min, w_max)
    })
}

/// Pre-synaptic plasticity on dense weights W (m x k): `W[i,:] = clip(W[i,:] + post_trace)` for
/// every active i of `pre_spikes` (length m); `post_trace` has length k.
///
/// @param stream     stream the work is queued on; its context is the operation's
/// @param w          the weights W (m x k), updated in place
/// @param pre_spikes events of the m pre-neurons
/// @param post_trace length k, W's dtype
/// @param w_min      lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max      upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH a vector has the wrong length, or W is not 2-D
/// @retval EVS_ERROR_DTYPE_MISMATCH post_trace is not of W's dtype, or the spikes not bool or float
/// @retval EVS_ERROR_INVALID_VALUE a NaN bound, w_min > w_max, or W overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_dense_plasticity_pre(
    stream: *mut evs_stream,
    w: *mut evs_dense,
    pre_spikes: *const evs_dense,
    post_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        let (s, w) = (get("stream", stream)?, get("W", w)?);
        let spikes = Spikes::Events(get("pre_spikes", pre_spikes)?);
        ops::dense_plasticity(s, false, w, spikes, get("post_trace", post_trace)?, w_min, w_max)
    })
}

/// Post-synaptic plasticity on dense weights W (m x k): `W[:,c] = clip(W[:,c] + pre_trace)` for
/// every active c of `post_spikes` (length k); `pre_trace` has length m.
///
/// @param stream      stream the work is queued on; its context is the operation's
/// @param w           the weights W (m x k), updated in place
/// @param post_spikes events of the k post-neurons
/// @param pre_trace   length m, W's dtype
/// @param w_min       lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max       upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH a vector has the wrong length, or W is not 2-D
/// @retval EVS_ERROR_DTYPE_MISMATCH pre_trace is not of W's dtype, or the spikes not bool or float
/// @retval EVS_ERROR_INVALID_VALUE a NaN bound, w_min > w_max, or W overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_dense_plasticity_post(
    stream: *mut evs_stream,
    w: *mut evs_dense,
    post_spikes: *const evs_dense,
    pre_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        let (s, w) = (get("stream", stream)?, get("W", w)?);
        let spikes = Spikes::Events(get("post_spikes", post_spikes)?);
        ops::dense_plasticity(s, true, w, spikes, get("pre_trace", pre_trace)?, w_min, w_max)
    })
}

/// Block-sparse × dense: `C(M x N) = alpha·A(M x K)·B(K x N) + beta·C`, accumulating in f32.
/// B has A's dtype; C has A's dtype or f32.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param alpha  scale of the product
/// @param a      the BSR matrix A (M x K)
/// @param b      K x N, A's dtype
/// @param beta   scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param c      M x N, A's dtype or f32
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH B or C has the wrong shape
/// @retval EVS_ERROR_DTYPE_MISMATCH B or C has the wrong dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup bsrmm
#[no_mangle]
pub unsafe extern "C" fn evs_bsrmm(
    stream: *mut evs_stream,
    alpha: f64,
    a: *const evs_bsr,
    b: *const evs_dense,
    beta: f64,
    c: *mut evs_dense,
) -> evs_status {
    guard(|| ops::bsrmm(get("stream", stream)?, alpha, get("A", a)?, get("B", b)?, beta, get("C", c)?))
}

/// Event compaction: writes the indices of the active entries of `spikes` (1-D, bool or
/// float), in increasing order, to `indices[0..count)` (int32, at least as long as spikes;
/// later elements are untouched) and the count to `count[0]` (int32 vector of length 1,
/// readable on the device without a host sync).
///
/// @param stream  stream the work is queued on; its context is the operation's
/// @param spikes  1-D events (bool or float)
/// @param indices int32 vector at least as long as spikes: receives the active indices
/// @param count   int32 vector of length 1: receives their number
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH indices is shorter than spikes, spikes has over 2^31 - 1 neurons (int32 indices), or count's length is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH spikes is not bool or float, or an output is not int32
/// @retval EVS_ERROR_INVALID_VALUE the outputs overlap each other or spikes
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup compaction
#[no_mangle]
pub unsafe extern "C" fn evs_compact_events(
    stream: *mut evs_stream,
    spikes: *const evs_dense,
    indices: *mut evs_dense,
    count: *mut evs_dense,
) -> evs_status {
    guard(|| {
        ops::compact(get("stream", stream)?, get("spikes", spikes)?, get("indices", indices)?, get("count", count)?)
    })
}

/// CSR → CSC: `colptr` (k + 1, int32 or int64), `rowind` (nnz, int32) and `perm` (nnz, int32
/// or int64): the CSC entry p is the CSR entry perm[p], so CSC weights are `weights[perm[p]]`.
/// Stable: rows stay in increasing order within a column.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param a      the matrix
/// @param colptr receives k + 1 column offsets (int32 or int64 vector)
/// @param rowind receives nnz row indices (int32 vector)
/// @param perm   receives nnz CSR positions (int32 or int64 vector)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH an output has the wrong length
/// @retval EVS_ERROR_DTYPE_MISMATCH an output has the wrong type
/// @retval EVS_ERROR_INVALID_VALUE the outputs overlap
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_to_csc(
    stream: *mut evs_stream,
    a: *const evs_csr,
    colptr: *mut evs_dense,
    rowind: *mut evs_dense,
    perm: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let s = get("stream", stream)?;
        ops::csr_to_csc(s, get("A", a)?, get("colptr", colptr)?, get("rowind", rowind)?, get("perm", perm)?)
    })
}

/// The spike list of an entry point, its handles looked up.
unsafe fn spike_list<'a>(indices: *const evs_dense, count: *const evs_dense) -> crate::error::Result<SpikeList<'a>> {
    Ok(SpikeList { indices: get("spike_indices", indices)?, count: get("spike_count", count)? })
}

/// `evs_spmv` on a spike list: the neurons `spike_indices[0..spike_count[0])` (int32; the
/// count is an int32 vector of length 1, read where the work runs, as `evs_compact_events`
/// writes it) are active, each counting as 1 once per occurrence. N: they index A's columns
/// (`y = alpha·A·e + beta·y`, y length m); T: A's rows (`y = alpha·Aᵀ·e + beta·y`, y length
/// k). A CPU context rejects a count outside [0, length of spike_indices] or an index out of
/// range with `EVS_ERROR_INVALID_VALUE`; a GPU kernel cannot report without a host sync, so
/// it clamps the count to that range and skips indices out of range. On the GPU the spikes add
/// with atomics, f32 and f64 weights only, except where `output_slices` sums them in shared
/// memory where analysis keeps its offsets (N: up to 16,384 columns; T: long rows sorted by
/// column; README, plans), which takes every dtype; f16/bf16 elsewhere fail with
/// `EVS_ERROR_NOT_SUPPORTED`.
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param op            `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param alpha         scale of the product
/// @param a             the CSR matrix A (m x k)
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param beta          scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param y             output vector of A's dtype: length m (N) or k (T)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op`
/// @retval EVS_ERROR_SHAPE_MISMATCH y has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or y not of A's dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory, or (CPU) a count or an index out of range
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup spmv
#[no_mangle]
pub unsafe extern "C" fn evs_spmv_spikes(
    stream: *mut evs_stream,
    op: evs_op,
    alpha: f64,
    a: *const evs_csr,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    beta: f64,
    y: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, list) = (Op::from_raw(op)?, spike_list(spike_indices, spike_count)?);
        ops::spmv_spikes(get("stream", stream)?, op, alpha, get("A", a)?, list, beta, get("y", y)?)
    })
}

/// `evs_dense_mv` on a spike list (as for `evs_spmv_spikes`): N `c = alpha·W·e + beta·c`, the
/// list indexing W's columns; T `c = alpha·Wᵀ·e + beta·c`, the list indexing W's rows.
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param op            `EVS_OP_N` (as stored) or `EVS_OP_T` (transposed)
/// @param alpha         scale of the product
/// @param w             the weights W: m x k (N) or k x m (T)
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param beta          scale of the output's previous contents; with 0 the output is not read (NaN in it does not propagate)
/// @param c             output vector of W's dtype, length m
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_ENUM unknown `op`
/// @retval EVS_ERROR_SHAPE_MISMATCH c has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or c not of W's dtype
/// @retval EVS_ERROR_INVALID_VALUE an output overlaps an input in memory, or (CPU) a count or an index out of range
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense_products
#[no_mangle]
pub unsafe extern "C" fn evs_dense_mv_spikes(
    stream: *mut evs_stream,
    op: evs_op,
    alpha: f64,
    w: *const evs_dense,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    beta: f64,
    c: *mut evs_dense,
) -> evs_status {
    guard(|| {
        let (op, list) = (Op::from_raw(op)?, spike_list(spike_indices, spike_count)?);
        ops::dense_mv_spikes(get("stream", stream)?, op, alpha, get("W", w)?, list, beta, get("c", c)?)
    })
}

/// CSR plasticity on a spike list, its handles looked up.
#[allow(clippy::too_many_arguments)]
unsafe fn csr_plasticity_spikes(
    stream: *mut evs_stream,
    post: bool,
    a: *mut evs_csr,
    indices: *const evs_dense,
    count: *const evs_dense,
    trace: (&str, *const evs_dense),
    lo: f64,
    hi: f64,
) -> crate::error::Result<()> {
    let (s, a, list) = (get("stream", stream)?, get("A", a)?, spike_list(indices, count)?);
    ops::csr_plasticity(s, post, a, Spikes::List(list), get(trace.0, trace.1)?, lo, hi)
}

/// Dense plasticity on a spike list, its handles looked up.
#[allow(clippy::too_many_arguments)]
unsafe fn dense_plasticity_spikes(
    stream: *mut evs_stream,
    post: bool,
    w: *mut evs_dense,
    indices: *const evs_dense,
    count: *const evs_dense,
    trace: (&str, *const evs_dense),
    lo: f64,
    hi: f64,
) -> crate::error::Result<()> {
    let (s, w, list) = (get("stream", stream)?, get("W", w)?, spike_list(indices, count)?);
    ops::dense_plasticity(s, post, w, Spikes::List(list), get(trace.0, trace.1)?, lo, hi)
}

/// `evs_csr_plasticity_pre` with the active pre-neurons as a spike list (as for
/// `evs_spmv_spikes`). A neuron listed twice may have its update applied once or twice on the
/// GPU (once per occurrence on the CPU); lists from `evs_compact_events` hold each once.
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param a             heterogeneous CSR matrix whose weights are updated in place
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param post_trace    length k, the weights' dtype
/// @param w_min         lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max         upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH the trace has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or the trace not of the weights' dtype
/// @retval EVS_ERROR_INVALID_VALUE (CPU) a count or an index out of range; a NaN bound or w_min > w_max; the weights overlap an input; a homogeneous matrix
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_csr_plasticity_pre_spikes(
    stream: *mut evs_stream,
    a: *mut evs_csr,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    post_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        csr_plasticity_spikes(stream, false, a, spike_indices, spike_count, ("post_trace", post_trace), w_min, w_max)
    })
}

/// `evs_csr_plasticity_post` with the active post-neurons as a spike list (as for
/// `evs_csr_plasticity_pre_spikes`).
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param a             heterogeneous CSR matrix whose weights are updated in place
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param pre_trace     length m, the weights' dtype
/// @param w_min         lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max         upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH the trace has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or the trace not of the weights' dtype
/// @retval EVS_ERROR_INVALID_VALUE (CPU) a count or an index out of range; a NaN bound or w_min > w_max; the weights overlap an input; a homogeneous matrix
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_csr_plasticity_post_spikes(
    stream: *mut evs_stream,
    a: *mut evs_csr,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    pre_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| csr_plasticity_spikes(stream, true, a, spike_indices, spike_count, ("pre_trace", pre_trace), w_min, w_max))
}

/// `evs_dense_plasticity_pre` with the active pre-neurons as a spike list (as for
/// `evs_csr_plasticity_pre_spikes`).
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param w             the weights W (m x k), updated in place
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param post_trace    length k, the weights' dtype
/// @param w_min         lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max         upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH the trace has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or the trace not of the weights' dtype
/// @retval EVS_ERROR_INVALID_VALUE (CPU) a count or an index out of range; a NaN bound or w_min > w_max; the weights overlap an input
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_dense_plasticity_pre_spikes(
    stream: *mut evs_stream,
    w: *mut evs_dense,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    post_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        dense_plasticity_spikes(stream, false, w, spike_indices, spike_count, ("post_trace", post_trace), w_min, w_max)
    })
}

/// `evs_dense_plasticity_post` with the active post-neurons as a spike list (as for
/// `evs_csr_plasticity_pre_spikes`).
///
/// @param stream        stream the work is queued on; its context is the operation's
/// @param w             the weights W (m x k), updated in place
/// @param spike_indices int32 vector of neuron indices; the first `spike_count[0]` are active
/// @param spike_count   int32 vector of length 1 holding the count, read where the work runs (never on the host for a GPU)
/// @param pre_trace     length m, the weights' dtype
/// @param w_min         lower clip bound (-INFINITY: none; NaN is rejected)
/// @param w_max         upper clip bound (INFINITY: none; NaN is rejected)
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH the trace has the wrong length, or count's is not 1
/// @retval EVS_ERROR_DTYPE_MISMATCH the list is not int32, or the trace not of the weights' dtype
/// @retval EVS_ERROR_INVALID_VALUE (CPU) a count or an index out of range; a NaN bound or w_min > w_max; the weights overlap an input
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_NOT_SUPPORTED a forced algorithm (`evs_context_set_algorithm`) cannot run this call, or the device does not run this dtype combination
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup plasticity
#[no_mangle]
pub unsafe extern "C" fn evs_dense_plasticity_post_spikes(
    stream: *mut evs_stream,
    w: *mut evs_dense,
    spike_indices: *const evs_dense,
    spike_count: *const evs_dense,
    pre_trace: *const evs_dense,
    w_min: f64,
    w_max: f64,
) -> evs_status {
    guard(|| {
        dense_plasticity_spikes(stream, true, w, spike_indices, spike_count, ("pre_trace", pre_trace), w_min, w_max)
    })
}
