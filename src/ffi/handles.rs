//! Handles: creation, destruction and queries of contexts, streams, dense arrays, CSR and
//! BSR matrices.
//!
//! A handle points to a `Slot` whose first word names its kind, so a handle of the wrong kind
//! is rejected with `EVS_ERROR_INVALID_HANDLE` instead of being misread. Slots are never given
//! back to the allocator: a destroyed handle's slot says so, and a call with it is rejected
//! the same way instead of reading freed memory, until `QUARANTINE` later handles have been
//! destroyed; then the slot is reused, so a handle used long after its destruction may name a
//! newer handle, as a reused file descriptor does.

use super::{guard, non_null, write_out};
use crate::core::bsr::{Bsr, BsrShape};
use crate::core::context::{evs_device_kind, Context, Stream};
use crate::core::csr::{Csr, CsrShape, Weights};
use crate::core::dense::Dense;
use crate::dtype::{evs_dtype, DType};
use crate::error::{evs_status, Error, Result};
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A device (CPU or one GPU) with its loaded kernels and memory pool. Thread-safe.
pub struct evs_context {
    _opaque: [u8; 0],
}
/// An ordered queue of asynchronous work on a context's device.
pub struct evs_stream {
    _opaque: [u8; 0],
}
/// A 1-D or 2-D row-major array on a context's device, owned or borrowed.
pub struct evs_dense {
    _opaque: [u8; 0],
}
/// A CSR matrix with homogeneous or heterogeneous weights, plus its cached analysis.
pub struct evs_csr {
    _opaque: [u8; 0],
}
/// A block-sparse (BSR) matrix.
pub struct evs_bsr {
    _opaque: [u8; 0],
}

/// Where a handle points: its kind's tag, then its boxed value (null once destroyed).
#[repr(C)]
struct Slot {
    tag: AtomicU64,
    value: AtomicPtr<()>,
}

const DEAD: u64 = 0xDEAD_DEAD_DEAD_DEAD;

/// Destroyed handles that stay recognisable as destroyed before their slots are reused.
const QUARANTINE: usize = 4096;

/// Slots of destroyed handles, the longest dead first.
static FREE_SLOTS: Mutex<VecDeque<&'static Slot>> = Mutex::new(VecDeque::new());

fn free_slots() -> std::sync::MutexGuard<'static, VecDeque<&'static Slot>> {
    FREE_SLOTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) trait Handle {
    const TAG: u64;
    const NAME: &'static str;
    type Value;
}

macro_rules! handle_kind {
    ($($c:ty => $value:ty, $tag:expr, $name:expr;)*) => {
        $(impl Handle for $c {
            const TAG: u64 = $tag;
            const NAME: &'static str = $name;
            type Value = $value;
        })*
        fn tag_name(tag: u64) -> &'static str {
            match tag {
                $($tag => concat!("a ", $name, " handle"),)*
                DEAD => "a destroyed handle",
                _ => "not an evsparse handle",
            }
        }
    };
}

handle_kind! {
    evs_context => Arc<Context>, 0x4556_5343_4f4e_5458, "context";
    evs_stream => Stream, 0x4556_5353_5452_4541, "stream";
    evs_dense => Dense, 0x4556_5344_454e_5345, "dense";
    evs_csr => Csr, 0x4556_5343_5352_4d41, "csr";
    evs_bsr => Bsr, 0x4556_5342_5352_4d41, "bsr";
}

fn into_handle<H: Handle>(value: H::Value) -> *mut H {
    let reused = {
        let mut free = free_slots();
        if free.len() > QUARANTINE {
            free.pop_front()
        } else {
            None
        }
    };
    let slot =
        reused.unwrap_or_else(|| Box::leak(Box::new(Slot { tag: AtomicU64::new(DEAD), value: AtomicPtr::default() })));
    slot.value.store(Box::into_raw(Box::new(value)) as *mut (), Ordering::Relaxed);
    slot.tag.store(H::TAG, Ordering::Release);
    slot as *const Slot as *mut H
}

/// Borrows the value behind a handle, checking NULL and the handle's kind.
///
/// # Safety
/// `p` must be NULL or a pointer returned by evsparse (of any handle kind, destroyed or not).
pub(crate) unsafe fn get<'a, H: Handle>(arg: &str, p: *const H) -> Result<&'a H::Value> {
    if p.is_null() {
        return Err(Error::null(format!("{arg}: {} handle is NULL", H::NAME)));
    }
    let slot = &*(p as *const Slot);
    let tag = slot.tag.load(Ordering::Acquire);
    if tag != H::TAG {
        return Err(Error::invalid_handle(format!("{arg}: expected a {} handle, got {}", H::NAME, tag_name(tag))));
    }
    Ok(&*(slot.value.load(Ordering::Relaxed) as *const H::Value))
}

/// Destroys a handle; NULL is a no-op, a destroyed one is rejected.
///
/// # Safety
/// As for `get`; no call may be using the handle.
unsafe fn destroy<H: Handle>(p: *mut H) -> evs_status {
    guard(|| {
        if p.is_null() {
            return Ok(());
        }
        get::<H>("handle", p)?;
        let slot = &*(p as *const Slot);
        slot.tag.store(DEAD, Ordering::Release);
        drop(Box::from_raw(slot.value.swap(std::ptr::null_mut(), Ordering::Relaxed) as *mut H::Value));
        free_slots().push_back(slot);
        Ok(())
    })
}

/// Creates a context on a device: `EVS_DEVICE_DEFAULT` (GPU `ordinal` if it is usable, else
/// the CPU), `EVS_DEVICE_CPU`, or `EVS_DEVICE_CUDA` with a device ordinal. A CUDA context
/// retains the device's primary context, loads the kernels and makes a memory pool; without a
/// driver, a GPU or kernels in this build it fails with `EVS_ERROR_DEVICE_UNAVAILABLE` saying
/// which. The CPU backend uses `EVS_NUM_THREADS` threads if that variable is set, else one per
/// core.
///
/// @param kind    `EVS_DEVICE_DEFAULT`, `EVS_DEVICE_CPU` or `EVS_DEVICE_CUDA`
/// @param ordinal the CUDA device ordinal (>= 0; ignored for the CPU)
/// @param out     receives the new context handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_ENUM unknown `kind`
/// @retval EVS_ERROR_DEVICE_UNAVAILABLE no driver, no such GPU, or no kernels in this build (the message says which)
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup context
#[no_mangle]
pub unsafe extern "C" fn evs_context_create(
    kind: evs_device_kind,
    ordinal: i32,
    out: *mut *mut evs_context,
) -> evs_status {
    guard(|| {
        non_null("out", out)?;
        if ordinal < 0 {
            return Err(Error::value(format!("context: ordinal = {ordinal} is negative")));
        }
        write_out("out", out, into_handle::<evs_context>(Context::new(kind, ordinal)?))
    })
}

/// Destroys a context. Handles made from it stay valid until they are destroyed. NULL is a no-op.
///
/// @param ctx the context, or NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup context
#[no_mangle]
pub unsafe extern "C" fn evs_context_destroy(ctx: *mut evs_context) -> evs_status {
    destroy(ctx)
}

/// The device of a context: its kind (`EVS_DEVICE_CPU` or `EVS_DEVICE_CUDA`, never DEFAULT)
/// and ordinal (0 for the CPU). Either output may be NULL.
///
/// @param ctx     the context
/// @param kind    receives `EVS_DEVICE_CPU` or `EVS_DEVICE_CUDA`; may be NULL
/// @param ordinal receives the device ordinal (0 for the CPU); may be NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup context
#[no_mangle]
pub unsafe extern "C" fn evs_context_device(
    ctx: *const evs_context,
    kind: *mut evs_device_kind,
    ordinal: *mut i32,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        if !kind.is_null() {
            kind.write(ctx.kind());
        }
        if !ordinal.is_null() {
            ordinal.write(ctx.ordinal());
        }
        Ok(())
    })
}

/// Forces kernel algorithms on a context, for tests, benchmarks and tuning. `spec` is a
/// comma-separated list of `family:algorithm` items, e.g. `"spmm_n:length_classes,bsrmm:simt"`;
/// `family:auto` gives a family back to its chooser, which otherwise picks per call from the
/// matrix statistics cached at analysis, the call and the device. A call that a forced
/// algorithm cannot run fails with `EVS_ERROR_NOT_SUPPORTED`. Every context starts with the
/// spec in the environment variable `EVS_FORCE_ALGORITHM`, if set. An unknown family or
/// algorithm is `EVS_ERROR_INVALID_VALUE` and changes nothing. Algorithms run on the GPU, on
/// the CPU, or both (marked below); one forced on a context whose device does not run it fails
/// the family's calls with `EVS_ERROR_NOT_SUPPORTED`. Every family has `reference` (CPU): the
/// plainly written loops every other path is tested against. `evs_last_plan` tells what ran.
///
/// Families and algorithms:
/// - `spmm_n` (spmv/spmm, `EVS_OP_N`): GPU `thread_per_row`, `warp_per_row`, `length_classes`, `event_bits` (spmm on events), `nonzero_lists` (spmm on floats), `output_slices` (spmv on event vectors of up to 16,384 elements, where analysis keeps the columns' slice offsets, and on f16/bf16 spike lists there); both `csc_scatter` (CPU: inputs whose live rows are few, spike lists; GPU: f32/f64 spike lists and event vectors); CPU `row_ranges`, `input_blocks` (B larger than L2, 128 or more columns, rows sorted), `reference`
/// - `spmm_t` (spmv/spmm, `EVS_OP_T`): both `scatter` (GPU: f32/f64 event vectors), `csc_gather`; GPU `row_warp_scatter` (spmv and spike lists, f32/f64), `output_slices` (spmv on events and spike lists, rows sorted by column), `event_bits` (spmm on events), `nonzero_lists` (spmm on floats); CPU `input_blocks` (B larger than L2, 128 or more columns), `reference`
/// - `yw2y`: GPU `row_warp` (N), `entry_thread`, `y_windows` (T); CPU `reference`
/// - `dense_mm` (dense mv/mm): GPU `mv_row_warp` (N, one column), `mv_column_blocks` (T, one column), `tiled`, `event_lists` (events, several columns), `wgmma` (events, several columns: N, T past `active_rows`; sm_90 tensor cores), `active_rows` (T on events, 2 to 16 columns); CPU `input_nonzeros`, `gemm` (f32/f64), `reference`
/// - `csr_plasticity`: GPU `pre_rows` (pre), `post_columns` (post); CPU `reference`
/// - `dense_plasticity`: GPU `row_stride`; CPU `reference`
/// - `bsrmm`: GPU `wgmma` (Hopper, sm_90: f16/bf16, 16-byte aligned operands), `wgmma_pairs` (the same for blocks of 64 x 64 or wider: two block rows a tile), `tiled`, `wmma` (both f16/bf16 with aligned operands; tiled for blocks of at least 64 x 32), `simt`; CPU `block_gemm` (f32), `reference`
/// - `compact`: GPU `block_slices`, `cluster_rounds` (sm_90; the default past 4,096 spikes); CPU `reference`
///
/// @param ctx  the context
/// @param spec NUL-terminated list of `family:algorithm` items
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_VALUE an unknown family or algorithm, or a malformed item (nothing changes)
/// @ingroup context
#[no_mangle]
pub unsafe extern "C" fn evs_context_set_algorithm(ctx: *mut evs_context, spec: *const c_char) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        non_null("spec", spec)?;
        let spec = CStr::from_ptr(spec).to_str().map_err(|_| Error::value("algorithm: spec is not valid UTF-8"))?;
        ctx.forced.apply(spec)
    })
}

/// Creates a stream owned by evsparse (a blocking CUDA stream on CUDA contexts). On a CPU
/// context work runs synchronously.
///
/// @param ctx the context
/// @param out receives the new stream handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup stream
#[no_mangle]
pub unsafe extern "C" fn evs_stream_create(ctx: *mut evs_context, out: *mut *mut evs_stream) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_stream>(Stream::new(ctx)?))
    })
}

/// Wraps a `CUstream`/`cudaStream_t` the caller owns (never destroyed by evsparse); NULL is the
/// legacy default stream. It must belong to the device's primary context (the CUDA runtime's,
/// torch's and cupy's), else `EVS_ERROR_CONTEXT_MISMATCH`. Only CUDA contexts have native
/// streams: on a CPU context this returns `EVS_ERROR_NOT_SUPPORTED`.
///
/// @param ctx    a CUDA context
/// @param native the caller's `CUstream`/`cudaStream_t`; NULL is the legacy default stream
/// @param out    receives the new stream handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the stream belongs to another CUDA context than the device's primary one
/// @retval EVS_ERROR_NOT_SUPPORTED a CPU context
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup stream
#[no_mangle]
pub unsafe extern "C" fn evs_stream_wrap(
    ctx: *mut evs_context,
    native: *mut c_void,
    out: *mut *mut evs_stream,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_stream>(Stream::wrap(ctx, native)?))
    })
}

/// Blocks the calling thread until all work queued on the stream has finished.
///
/// @param stream the stream
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup stream
#[no_mangle]
pub unsafe extern "C" fn evs_stream_synchronize(stream: *mut evs_stream) -> evs_status {
    guard(|| get("stream", stream)?.synchronize())
}

/// Destroys a stream (a wrapped native stream is left alone). NULL is a no-op.
///
/// @param stream the stream, or NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup stream
#[no_mangle]
pub unsafe extern "C" fn evs_stream_destroy(stream: *mut evs_stream) -> evs_status {
    destroy(stream)
}

/// Creates an owned, zero-filled 1-D array of `n` elements.
///
/// @param ctx   the context
/// @param dtype element type (`EVS_DTYPE_*`)
/// @param n     elements (>= 0)
/// @param out   receives the new dense handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_create_vector(
    ctx: *mut evs_context,
    dtype: evs_dtype,
    n: i64,
    out: *mut *mut evs_dense,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let dtype = DType::from_raw(dtype, "dtype")?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_dense>(Dense::create(ctx, dtype, 1, n, 1)?))
    })
}

/// Creates an owned, zero-filled row-major `rows x cols` array (leading dimension = cols).
///
/// @param ctx   the context
/// @param dtype element type (`EVS_DTYPE_*`)
/// @param rows  rows (>= 0)
/// @param cols  columns (>= 0)
/// @param out   receives the new dense handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_create_matrix(
    ctx: *mut evs_context,
    dtype: evs_dtype,
    rows: i64,
    cols: i64,
    out: *mut *mut evs_dense,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let dtype = DType::from_raw(dtype, "dtype")?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_dense>(Dense::create(ctx, dtype, 2, rows, cols)?))
    })
}

/// Wraps `n` contiguous elements the caller owns (zero-copy; a device pointer on CUDA
/// contexts, host memory on CPU ones). `data` must be aligned to the element size and stay
/// valid while the handle is used. On CUDA the driver must know the pointer as memory of the
/// context's GPU, and the array must fit in its allocation (`EVS_ERROR_INVALID_VALUE`).
///
/// @param ctx   the context
/// @param dtype element type (`EVS_DTYPE_*`)
/// @param n     elements (>= 0)
/// @param data  the caller's memory (a device pointer on CUDA contexts), aligned to the element size
/// @param out   receives the new dense handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_INVALID_VALUE a negative size, a misaligned pointer, or (CUDA) memory the driver does not know as the context's GPU's or too small for the array
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_wrap_vector(
    ctx: *mut evs_context,
    dtype: evs_dtype,
    n: i64,
    data: *mut c_void,
    out: *mut *mut evs_dense,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let dtype = DType::from_raw(dtype, "dtype")?;
        non_null("data", data)?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_dense>(Dense::wrap(ctx, dtype, 1, n, 1, 1, data as *mut u8)?))
    })
}

/// Wraps a row-major `rows x cols` array with leading dimension `ld` (>= max(cols, 1), in elements)
/// that the caller owns (zero-copy).
///
/// @param ctx   the context
/// @param dtype element type (`EVS_DTYPE_*`)
/// @param rows  rows (>= 0)
/// @param cols  columns (>= 0)
/// @param ld    leading dimension in elements (>= max(cols, 1))
/// @param data  the caller's memory (a device pointer on CUDA contexts), aligned to the element size
/// @param out   receives the new dense handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_INVALID_VALUE a negative size, ld < cols, a misaligned pointer, or (CUDA) memory the driver does not know as the context's GPU's or too small for the array
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_wrap_matrix(
    ctx: *mut evs_context,
    dtype: evs_dtype,
    rows: i64,
    cols: i64,
    ld: i64,
    data: *mut c_void,
    out: *mut *mut evs_dense,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let dtype = DType::from_raw(dtype, "dtype")?;
        non_null("data", data)?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_dense>(Dense::wrap(ctx, dtype, 2, rows, cols, ld, data as *mut u8)?))
    })
}

/// Destroys a dense handle (borrowed memory is left alone). NULL is a no-op. Owned device
/// memory is freed in order on the legacy default stream, after work queued on blocking
/// streams; synchronize a non-blocking stream of yours that still uses it first.
///
/// @param dense the array, or NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_destroy(dense: *mut evs_dense) -> evs_status {
    destroy(dense)
}

/// Copies `count` packed row-major elements (count must equal rows x cols) from host memory,
/// in stream order. The host buffer must stay valid until the stream is synchronized.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param dst    the array written
/// @param src    `count` packed row-major host elements of dst's dtype
/// @param count  elements: rows x cols of dst
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH count is not rows x cols
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_copy_from_host(
    stream: *mut evs_stream,
    dst: *mut evs_dense,
    src: *const c_void,
    count: i64,
) -> evs_status {
    guard(|| {
        let (s, d) = (get("stream", stream)?, get("dst", dst)?);
        s.expect_context("dst", &d.ctx)?;
        non_null("src", src)?;
        d.copy_from_host(s, src as *const u8, host_count(count)?)
    })
}

/// Copies the elements, packed row-major, to host memory (`count` = rows x cols), in stream
/// order: the data is there once the stream is synchronized.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param src    the array read
/// @param dst    host buffer for `count` packed row-major elements
/// @param count  elements: rows x cols of src
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_SHAPE_MISMATCH count is not rows x cols
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_copy_to_host(
    stream: *mut evs_stream,
    src: *const evs_dense,
    dst: *mut c_void,
    count: i64,
) -> evs_status {
    guard(|| {
        let (s, d) = (get("stream", stream)?, get("src", src)?);
        s.expect_context("src", &d.ctx)?;
        non_null("dst", dst)?;
        d.copy_to_host(s, dst as *mut u8, host_count(count)?)
    })
}

fn host_count(count: i64) -> Result<usize> {
    usize::try_from(count).map_err(|_| Error::value(format!("count = {count} is negative")))
}

/// Sets every element to `value` (converted to the dtype; bool stores value != 0).
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param dense  the array
/// @param value  the value, converted to the dtype
/// @retval EVS_SUCCESS the work is queued on the stream (done, on a CPU context)
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_VALUE NaN for an integer or bool array
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_fill(stream: *mut evs_stream, dense: *mut evs_dense, value: f64) -> evs_status {
    guard(|| {
        let (s, d) = (get("stream", stream)?, get("dense", dense)?);
        s.expect_context("dense", &d.ctx)?;
        d.fill(s, value)
    })
}

/// Shape of a dense array: ndim (1 or 2), rows (the length of a 1-D array), cols (1 for 1-D)
/// and leading dimension in elements. Any output may be NULL.
///
/// @param dense the array
/// @param ndim  receives 1 or 2; may be NULL
/// @param rows  receives the rows (the length of a vector); may be NULL
/// @param cols  receives the columns (1 for a vector); may be NULL
/// @param ld    receives the leading dimension; may be NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_shape(
    dense: *const evs_dense,
    ndim: *mut i32,
    rows: *mut i64,
    cols: *mut i64,
    ld: *mut i64,
) -> evs_status {
    guard(|| {
        let d = get("dense", dense)?;
        write_optional(ndim, d.ndim as i32);
        write_optional(rows, d.rows as i64);
        write_optional(cols, d.cols as i64);
        write_optional(ld, d.ld as i64);
        Ok(())
    })
}

unsafe fn write_optional<T>(out: *mut T, value: T) {
    if !out.is_null() {
        out.write(value);
    }
}

/// The element type of a dense array.
///
/// @param dense the array
/// @param out   receives the element type
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_dtype(dense: *const evs_dense, out: *mut evs_dtype) -> evs_status {
    guard(|| {
        let d = get("dense", dense)?;
        write_out("out", out, d.dtype.raw())
    })
}

/// The address of the first element (a device pointer on CUDA contexts).
///
/// @param dense the array
/// @param out   receives the address of the first element
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup dense
#[no_mangle]
pub unsafe extern "C" fn evs_dense_data(dense: *const evs_dense, out: *mut *mut c_void) -> evs_status {
    guard(|| {
        let d = get("dense", dense)?;
        write_out("out", out, d.buf.ptr() as *mut c_void)
    })
}

/// Creates a CSR matrix from host arrays, checking the structure and copying it to the
/// context's device. `index_type` is `EVS_DTYPE_I32` or `EVS_DTYPE_I64` (the type of
/// `indptr`, m + 1 values); `indices` holds nnz int32 column indices (unsorted and duplicate
/// indices are allowed; duplicates add up). `weights` is NULL for a homogeneous matrix whose
/// entries all weigh `homo_weight`, else nnz values of `dtype`. On CPU contexts T products
/// with float inputs keep a copy of hetero weights in column order (built at their first use,
/// refreshed after plasticity or a weights view), so that they read them in step with the
/// transpose's columns. On CUDA contexts analysis keeps such a copy on the device (up to 2^28
/// entries and a quarter of the free device memory: nnz x the dtype's bytes) for T products,
/// used until plasticity or a weights view first writes the weights, CUDA graphs captured
/// before included; T then reads them through the mirror's permutation.
///
/// @param ctx         context whose device holds the matrix
/// @param m           rows (>= 0)
/// @param k           columns (>= 0)
/// @param nnz         stored entries (>= 0; the int32 indices limit it to what indptr's type can hold)
/// @param index_type  type of `indptr`: `EVS_DTYPE_I32` or `EVS_DTYPE_I64`
/// @param indptr      m + 1 row offsets (host)
/// @param indices     nnz column indices (host)
/// @param dtype       weight type: `EVS_DTYPE_F16`, `BF16`, `F32` or `F64`
/// @param weights     nnz weights (host), or NULL for a homogeneous matrix
/// @param homo_weight the weight of every entry of a homogeneous matrix (ignored otherwise)
/// @param out         receives the new CSR handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `index_type` or `dtype`
/// @retval EVS_ERROR_DTYPE_MISMATCH `dtype` is not a float type or `index_type` not an integer type
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size
/// @retval EVS_ERROR_INVALID_STRUCTURE indptr not from 0, decreasing or not ending at nnz, or an index out of range (the message names the entry)
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_create(
    ctx: *mut evs_context,
    m: i64,
    k: i64,
    nnz: i64,
    index_type: evs_dtype,
    indptr: *const c_void,
    indices: *const i32,
    dtype: evs_dtype,
    weights: *const c_void,
    homo_weight: f64,
    out: *mut *mut evs_csr,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let shape = csr_shape(m, k, nnz, index_type, dtype)?;
        non_null("indptr", indptr)?;
        if shape.nnz > 0 {
            non_null("indices", indices)?;
        }
        non_null("out", out)?;
        let weights = (!weights.is_null()).then_some(weights as *const u8);
        let csr = Csr::from_host(ctx, shape, indptr as *const u8, indices, weights, homo_weight)?;
        write_out("out", out, into_handle::<evs_csr>(csr))
    })
}

/// Wraps CSR arrays the caller owns (zero-copy; device memory on CUDA contexts). Arguments
/// as for `evs_csr_create`. The structure is trusted: call `evs_csr_validate` to check it.
/// The structure must not change while the handle lives; hetero weights may (so T products
/// on CPU contexts read them through the transpose's permutation, not from a column-order
/// copy as for matrices from `evs_csr_create`).
///
/// @param ctx         context whose device holds the matrix
/// @param m           rows (>= 0)
/// @param k           columns (>= 0)
/// @param nnz         stored entries (>= 0; the int32 indices limit it to what indptr's type can hold)
/// @param index_type  type of `indptr`: `EVS_DTYPE_I32` or `EVS_DTYPE_I64`
/// @param indptr      m + 1 row offsets (the context's device)
/// @param indices     nnz column indices (the context's device)
/// @param dtype       weight type: `EVS_DTYPE_F16`, `BF16`, `F32` or `F64`
/// @param weights     nnz weights (the context's device), or NULL for a homogeneous matrix
/// @param homo_weight the weight of every entry of a homogeneous matrix (ignored otherwise)
/// @param out         receives the new CSR handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `index_type` or `dtype`
/// @retval EVS_ERROR_DTYPE_MISMATCH `dtype` is not a float type or `index_type` not an integer type
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size, or (CUDA) memory the driver does not know as the context's GPU's
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_wrap(
    ctx: *mut evs_context,
    m: i64,
    k: i64,
    nnz: i64,
    index_type: evs_dtype,
    indptr: *mut c_void,
    indices: *mut i32,
    dtype: evs_dtype,
    weights: *mut c_void,
    homo_weight: f64,
    out: *mut *mut evs_csr,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let shape = csr_shape(m, k, nnz, index_type, dtype)?;
        non_null("indptr", indptr)?;
        non_null("indices", indices)?;
        non_null("out", out)?;
        let weights = (!weights.is_null()).then_some(weights as *mut u8);
        let csr = Csr::wrap(ctx, shape, indptr as *mut u8, indices, weights, homo_weight)?;
        write_out("out", out, into_handle::<evs_csr>(csr))
    })
}

fn csr_shape(m: i64, k: i64, nnz: i64, index_type: evs_dtype, dtype: evs_dtype) -> Result<CsrShape> {
    let index = DType::from_raw(index_type, "index_type")?;
    let dtype = DType::from_raw(dtype, "dtype")?;
    CsrShape::new(m, k, nnz, index, dtype)
}

/// Destroys a CSR handle and its cached analysis (borrowed arrays are left alone). NULL is a no-op.
///
/// @param csr the matrix, or NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_destroy(csr: *mut evs_csr) -> evs_status {
    destroy(csr)
}

/// Checks the structure of a (wrapped) CSR matrix: indptr[0] = 0, non-decreasing,
/// indptr[m] = nnz, every index in [0, k). Fails with `EVS_ERROR_INVALID_STRUCTURE`. On CUDA it
/// copies the structure to the host and waits for the stream.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param csr    the matrix
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_STRUCTURE the structure is invalid (the message names the first bad entry)
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_validate(stream: *mut evs_stream, csr: *const evs_csr) -> evs_status {
    guard(|| {
        let (s, a) = (get("stream", stream)?, get("csr", csr)?);
        s.expect_context("csr", &a.ctx)?;
        a.validate(s)
    })
}

/// Builds and caches the derived structures (the CSC mirror and its permutation, and for rows
/// sorted by column and long enough, where each row's entries of each 4,096-column slice begin;
/// on the context's device, and the stream's scratch that plasticity on an event vector lists it
/// into) now, so that later operations allocate nothing and never synchronize the host (a timestep
/// loop can then be captured in a CUDA graph). Waits for the stream.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param csr    the matrix
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_analyse(stream: *mut evs_stream, csr: *mut evs_csr) -> evs_status {
    guard(|| crate::core::ops::analyse(get("stream", stream)?, get("csr", csr)?))
}

/// Shape of a CSR matrix. Any output may be NULL.
///
/// @param csr the matrix
/// @param m   receives the rows; may be NULL
/// @param k   receives the columns; may be NULL
/// @param nnz receives the stored entries; may be NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_shape(csr: *const evs_csr, m: *mut i64, k: *mut i64, nnz: *mut i64) -> evs_status {
    guard(|| {
        let a = get("csr", csr)?;
        write_optional(m, a.m as i64);
        write_optional(k, a.k as i64);
        write_optional(nnz, a.nnz as i64);
        Ok(())
    })
}

/// Types of a CSR matrix: weight dtype, indptr type, and whether the weights are
/// homogeneous (1) or one per entry (0). Any output may be NULL.
///
/// @param csr         the matrix
/// @param dtype       receives the weight type; may be NULL
/// @param index_type  receives indptr's type; may be NULL
/// @param homogeneous receives 1 (one weight) or 0 (one per entry); may be NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_types(
    csr: *const evs_csr,
    dtype: *mut evs_dtype,
    index_type: *mut evs_dtype,
    homogeneous: *mut i32,
) -> evs_status {
    guard(|| {
        let a = get("csr", csr)?;
        write_optional(dtype, a.dtype.raw());
        write_optional(index_type, a.index.raw());
        write_optional(homogeneous, matches!(a.weights, Weights::Homo(_)) as i32);
        Ok(())
    })
}

/// A new 1-D dense handle viewing the heterogeneous weights (nnz elements, zero-copy), to read
/// or write them with the dense functions or through `evs_dense_data`'s pointer while the view
/// lives. Destroy it with `evs_dense_destroy`; it keeps the weights alive. Fails with
/// `EVS_ERROR_INVALID_VALUE` on a homogeneous matrix.
///
/// @param csr a heterogeneous matrix
/// @param out receives the new dense handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_VALUE a homogeneous matrix
/// @ingroup csr
#[no_mangle]
pub unsafe extern "C" fn evs_csr_weights(csr: *const evs_csr, out: *mut *mut evs_dense) -> evs_status {
    guard(|| {
        let a = get("csr", csr)?;
        non_null("out", out)?;
        write_out("out", out, into_handle::<evs_dense>(a.weights_view()?))
    })
}

/// Creates a BSR matrix of `mb x kb` blocks of `bm x bk` (each 16, 32, 64 or 128) from host
/// arrays: `indptr` (mb + 1 int32), `indices` (nnzb int32 block columns), `values`
/// (nnzb * bm * bk elements of `dtype`: f16, bf16 or f32; each block row-major). The matrix
/// is (mb * bm) x (kb * bk).
///
/// @param ctx     context whose device holds the matrix
/// @param mb      block rows (>= 0)
/// @param kb      block columns (>= 0)
/// @param bm      rows of a block: 16, 32, 64 or 128
/// @param bk      columns of a block: 16, 32, 64 or 128
/// @param nnzb    stored blocks (>= 0)
/// @param indptr  mb + 1 block-row offsets (host)
/// @param indices nnzb block columns (host)
/// @param dtype   `EVS_DTYPE_F16`, `BF16` or `F32`
/// @param values  nnzb x bm x bk values, each block row-major (host)
/// @param out     receives the new BSR handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_DTYPE_MISMATCH `dtype` is not f16, bf16 or f32
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size, or a block extent other than 16, 32, 64, 128
/// @retval EVS_ERROR_INVALID_STRUCTURE an invalid block structure
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup bsr
#[no_mangle]
pub unsafe extern "C" fn evs_bsr_create(
    ctx: *mut evs_context,
    mb: i64,
    kb: i64,
    bm: i64,
    bk: i64,
    nnzb: i64,
    indptr: *const i32,
    indices: *const i32,
    dtype: evs_dtype,
    values: *const c_void,
    out: *mut *mut evs_bsr,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let shape = BsrShape::new(mb, kb, bm, bk, nnzb, DType::from_raw(dtype, "dtype")?)?;
        non_null("indptr", indptr)?;
        if shape.nnzb > 0 {
            non_null("indices", indices)?;
            non_null("values", values)?;
        }
        non_null("out", out)?;
        let bsr = Bsr::from_host(ctx, shape, indptr, indices, values as *const u8)?;
        write_out("out", out, into_handle::<evs_bsr>(bsr))
    })
}

/// Wraps BSR arrays the caller owns (zero-copy). Arguments as for `evs_bsr_create`; the
/// structure is trusted: call `evs_bsr_validate` to check it.
///
/// @param ctx     context whose device holds the matrix
/// @param mb      block rows (>= 0)
/// @param kb      block columns (>= 0)
/// @param bm      rows of a block: 16, 32, 64 or 128
/// @param bk      columns of a block: 16, 32, 64 or 128
/// @param nnzb    stored blocks (>= 0)
/// @param indptr  mb + 1 block-row offsets (the context's device)
/// @param indices nnzb block columns (the context's device)
/// @param dtype   `EVS_DTYPE_F16`, `BF16` or `F32`
/// @param values  nnzb x bm x bk values, each block row-major (the context's device)
/// @param out     receives the new BSR handle; untouched on failure
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_INVALID_ENUM unknown `dtype`
/// @retval EVS_ERROR_DTYPE_MISMATCH `dtype` is not f16, bf16 or f32
/// @retval EVS_ERROR_INVALID_VALUE a negative or overflowing size, a block extent other than 16, 32, 64, 128, or (CUDA) memory the driver does not know
/// @ingroup bsr
#[no_mangle]
pub unsafe extern "C" fn evs_bsr_wrap(
    ctx: *mut evs_context,
    mb: i64,
    kb: i64,
    bm: i64,
    bk: i64,
    nnzb: i64,
    indptr: *mut i32,
    indices: *mut i32,
    dtype: evs_dtype,
    values: *mut c_void,
    out: *mut *mut evs_bsr,
) -> evs_status {
    guard(|| {
        let ctx = get("ctx", ctx)?;
        let shape = BsrShape::new(mb, kb, bm, bk, nnzb, DType::from_raw(dtype, "dtype")?)?;
        non_null("indptr", indptr)?;
        non_null("indices", indices)?;
        non_null("values", values)?;
        non_null("out", out)?;
        let bsr = Bsr::wrap(ctx, shape, indptr, indices, values as *mut u8)?;
        write_out("out", out, into_handle::<evs_bsr>(bsr))
    })
}

/// Destroys a BSR handle (borrowed arrays are left alone). NULL is a no-op.
///
/// @param bsr the matrix, or NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup bsr
#[no_mangle]
pub unsafe extern "C" fn evs_bsr_destroy(bsr: *mut evs_bsr) -> evs_status {
    destroy(bsr)
}

/// Checks the block structure of a (wrapped) BSR matrix, as `evs_csr_validate` does.
///
/// @param stream stream the work is queued on; its context is the operation's
/// @param bsr    the matrix
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @retval EVS_ERROR_CONTEXT_MISMATCH the handles belong to different contexts
/// @retval EVS_ERROR_INVALID_STRUCTURE the block structure is invalid
/// @retval EVS_ERROR_OUT_OF_MEMORY memory (or scratch on the device) could not be allocated; nothing leaked
/// @retval EVS_ERROR_DEVICE the device reported an error (CUDA contexts)
/// @ingroup bsr
#[no_mangle]
pub unsafe extern "C" fn evs_bsr_validate(stream: *mut evs_stream, bsr: *const evs_bsr) -> evs_status {
    guard(|| {
        let (s, a) = (get("stream", stream)?, get("bsr", bsr)?);
        s.expect_context("bsr", &a.ctx)?;
        a.validate(s)
    })
}

/// Shape of a BSR matrix: rows and cols in elements, block extents, stored blocks, dtype.
/// Any output may be NULL.
///
/// @param bsr   the matrix
/// @param rows  receives mb x bm; may be NULL
/// @param cols  receives kb x bk; may be NULL
/// @param bm    receives the block rows; may be NULL
/// @param bk    receives the block columns; may be NULL
/// @param nnzb  receives the stored blocks; may be NULL
/// @param dtype receives the value type; may be NULL
/// @retval EVS_SUCCESS the call succeeded
/// @retval EVS_ERROR_NULL_POINTER a required handle or pointer is NULL
/// @retval EVS_ERROR_INVALID_HANDLE a handle is not a live handle of its kind
/// @ingroup bsr
#[no_mangle]
pub unsafe extern "C" fn evs_bsr_shape(
    bsr: *const evs_bsr,
    rows: *mut i64,
    cols: *mut i64,
    bm: *mut i64,
    bk: *mut i64,
    nnzb: *mut i64,
    dtype: *mut evs_dtype,
) -> evs_status {
    guard(|| {
        let a = get("bsr", bsr)?;
        write_optional(rows, a.rows() as i64);
        write_optional(cols, a.cols() as i64);
        write_optional(bm, a.bm as i64);
        write_optional(bk, a.bk as i64);
        write_optional(nnzb, a.nnzb as i64);
        write_optional(dtype, a.values.dtype.raw());
        Ok(())
    })
}
