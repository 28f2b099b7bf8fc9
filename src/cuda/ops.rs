//! One launch sequence per operation of SPEC §3, on the caller's stream. Arguments were checked
//! by `core::ops`; nothing here allocates or waits on the host once a matrix is analysed.

use super::driver::check;
use super::launch::{Args, Grid, MAX_GRID_Y};
use super::parts;
use crate::core::bsr::Bsr;
use crate::core::context::Stream;
use crate::core::csr::{Csr, Weights};
use crate::core::dense::Dense;
use crate::core::{InputKind, Op};
use crate::dtype::DType;
use crate::error::Result;
use cudarc::driver::sys;

/// The structure and weights of a CSR matrix as kernel arguments.
fn csr_args(a: &Csr) -> Args {
    let (weights, homo) = match &a.weights {
        Weights::Homo(v) => (0, *v),
        Weights::Hetero(w) => (w.buf.addr(), 0.0),
    };
    Args {
        indptr: a.indptr.addr(),
        indices: a.indices.addr(),
        weights,
        homo,
        m: a.m as i64,
        k: a.k as i64,
        nnz: a.nnz as i64,
        idx64: (a.index == DType::I64) as i64,
        ..Args::default()
    }
}

/// Adds the cached CSC mirror (built now if it is not yet).
fn with_csc(s: &Stream, a: &Csr, args: Args) -> Result<Args> {
    let csc = a.device_analysis(s)?;
    Ok(Args { colptr: csc.colptr.addr(), rowind: csc.rowind.addr(), perm: csc.perm.addr(), ..args })
}

/// spmv (n = 1) and spmm. N gathers along CSR rows. T scatters with atomics in f32/f64 (only
/// rows with live input do work); f16/bf16 gather along the CSC mirror to accumulate in f32.
#[allow(clippy::too_many_arguments)]
pub fn spmm(s: &Stream, op: Op, kind: InputKind, alpha: f64, a: &Csr, x: &Dense, beta: f64, y: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (t, input, n) = (a.dtype.name(), x.dtype.name(), y.cols);
    let args = Args {
        x: x.buf.addr(),
        ldx: x.ld as i64,
        y: y.buf.addr(),
        ldy: y.ld as i64,
        n: n as i64,
        events: (kind == InputKind::Events) as i64,
        alpha,
        beta,
        ..csr_args(a)
    };
    let shape = if n == 1 { "spmv" } else { "spmm" };
    // one warp per output row (spmv), or per row and 64 columns (gather) / 32 columns (scatter)
    let grid = |rows: usize, per_warp: u64| match n {
        1 => Grid::warps(rows as u64),
        _ => Grid::warps_by_columns(rows as u64, n as u64, per_warp),
    };
    match op {
        Op::N => gpu.launch(stream, &format!("{shape}_n_{t}_{input}"), grid(a.m, 64), &args),
        Op::T if matches!(a.dtype, DType::F32 | DType::F64) => {
            let out = Args { m: a.k as i64, ..args };
            gpu.launch(stream, &format!("scale_{t}"), Grid::strided(gpu, (a.k * n) as u64), &out)?;
            gpu.launch(stream, &format!("{shape}_scatter_{t}_{input}"), grid(a.m, 32), &args)
        }
        Op::T => gpu.launch(stream, &format!("{shape}_t_{t}_{input}"), grid(a.k, 64), &with_csc(s, a, args)?),
    }
}

/// yw2y, 1-D (one batch) or batched; per-batch weights replace the CSR's when given.
#[allow(clippy::too_many_arguments)]
pub fn yw2y(
    s: &Stream,
    op: Op,
    a: &Csr,
    bw: Option<&Dense>,
    alpha: f64,
    y: &Dense,
    beta: f64,
    out: &Dense,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let batches = if y.ndim == 1 { 1 } else { y.rows };
    let args = Args {
        x: y.buf.addr(),
        ldx: y.ld as i64,
        y: out.buf.addr(),
        ldy: out.ld as i64,
        aux: bw.map_or(0, |w| w.buf.addr()),
        ldaux: bw.map_or(0, |w| w.ld as i64),
        batches: batches as i64,
        alpha,
        beta,
        ..csr_args(a)
    };
    let t = a.dtype.name();
    match op {
        Op::N => gpu.launch(stream, &format!("yw2y_n_{t}"), Grid::warps((a.m * batches) as u64), &args),
        Op::T => gpu.launch(stream, &format!("yw2y_t_{t}"), Grid::strided(gpu, (a.nnz * batches) as u64), &args),
    }
}

/// Dense event mv/mm: W in aux; m output rows, k input rows, n columns.
#[allow(clippy::too_many_arguments)]
pub fn dense_mm(
    s: &Stream,
    op: Op,
    kind: InputKind,
    alpha: f64,
    w: &Dense,
    x: &Dense,
    beta: f64,
    c: &Dense,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        aux: w.buf.addr(),
        ldaux: w.ld as i64,
        x: x.buf.addr(),
        ldx: x.ld as i64,
        y: c.buf.addr(),
        ldy: c.ld as i64,
        m: c.rows as i64,
        k: x.rows as i64,
        n: c.cols as i64,
        events: (kind == InputKind::Events) as i64,
        alpha,
        beta,
        ..Args::default()
    };
    let (t, input, tr) = (w.dtype.name(), x.dtype.name(), if op == Op::N { "n" } else { "t" });
    let (m, n) = (c.rows as u64, c.cols as u64);
    let grid = match (c.cols, op) {
        (1, Op::N) => Grid::warps(m),
        (1, Op::T) => Grid::new((m.div_ceil(32), 1), (32, 8)),
        _ => Grid::new((n.div_ceil(64), m.div_ceil(64)), (256, 1)),
    };
    let shape = if c.cols == 1 { "mv" } else { "mm" };
    gpu.launch(stream, &format!("dense_{shape}_{tr}_{t}_{input}"), grid, &args)
}

/// CSR plasticity: pre walks the rows of active pre-neurons, post the CSC columns of active
/// post-neurons.
pub fn csr_plasticity(s: &Stream, post: bool, a: &Csr, spikes: &Dense, trace: &Dense, lo: f64, hi: f64) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args { x: spikes.buf.addr(), aux: trace.buf.addr(), lo, hi, ..csr_args(a) };
    let (t, e) = (a.dtype.name(), spikes.dtype.name());
    if post {
        gpu.launch(stream, &format!("csr_post_{t}_{e}"), Grid::warps(a.k as u64), &with_csc(s, a, args)?)
    } else {
        gpu.launch(stream, &format!("csr_pre_{t}_{e}"), Grid::warps(a.m as u64), &args)
    }
}

/// Dense plasticity on W (m x k): blocks of 256 columns over a stride of rows.
pub fn dense_plasticity(
    s: &Stream,
    post: bool,
    w: &Dense,
    spikes: &Dense,
    trace: &Dense,
    lo: f64,
    hi: f64,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        y: w.buf.addr(),
        ldy: w.ld as i64,
        x: spikes.buf.addr(),
        aux: trace.buf.addr(),
        m: w.rows as i64,
        k: w.cols as i64,
        lo,
        hi,
        ..Args::default()
    };
    let grid = Grid::new(((w.cols as u64).div_ceil(256), (w.rows as u64).min(MAX_GRID_Y)), (256, 1));
    let rule = if post { "post" } else { "pre" };
    gpu.launch(stream, &format!("dense_{rule}_{}_{}", w.dtype.name(), spikes.dtype.name()), grid, &args)
}

/// bsrmm: tensor cores (WMMA) for f16/bf16 when B's columns, row stride and both bases are
/// aligned to 16 elements / 32 bytes (staged through shared memory for blocks of at least
/// 64 x 32), else one thread per output element.
pub fn bsrmm(s: &Stream, alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        indptr: a.indptr.addr(),
        indices: a.indices.addr(),
        weights: a.values.buf.addr(),
        x: b.buf.addr(),
        ldx: b.ld as i64,
        y: c.buf.addr(),
        ldy: c.ld as i64,
        m: a.bm as i64,
        k: a.bk as i64,
        n: c.cols as i64,
        ldaux: a.mb as i64,
        alpha,
        beta,
        ..Args::default()
    };
    let (t, tc) = (a.values.dtype.name(), c.dtype.name());
    let (rows, n) = (a.rows() as u64, c.cols as u64);
    let tensor_cores = matches!(a.values.dtype, DType::F16 | DType::BF16)
        && n % 16 == 0
        && b.ld % 16 == 0
        && b.buf.addr() % 32 == 0
        && a.values.buf.addr() % 32 == 0;
    let (name, grid) = if tensor_cores && a.bm >= 64 && a.bk >= 32 {
        // 64 x 128 tiles of C staged through shared memory, one 64-row strip of a block row each
        ("tiled", Grid::new((n.div_ceil(128), rows / 64), (256, 1)))
    } else if tensor_cores {
        ("wmma", Grid::new((n.div_ceil(64), (rows / 16).div_ceil(4)), (128, 1)))
    } else {
        ("simt", Grid::new((n.div_ceil(64), rows.div_ceil(4)), (64, 4)))
    };
    gpu.launch(stream, &format!("bsrmm_{name}_{t}_{tc}"), grid, &args)
}

/// Event compaction in one block; the count stays on the device.
pub fn compact(s: &Stream, spikes: &Dense, indices: &Dense, count: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        x: spikes.buf.addr(),
        m: spikes.rows as i64,
        y: indices.buf.addr(),
        out2: count.buf.addr(),
        ..Args::default()
    };
    gpu.launch(stream, &format!("compact_{}", spikes.dtype.name()), Grid::new((1, 1), (1024, 1)), &args)
}

/// Copies the cached CSC mirror into the caller's arrays, narrowing to int32 where asked.
pub fn csr_to_csc(s: &Stream, a: &Csr, colptr: &Dense, rowind: &Dense, perm: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let csc = a.device_analysis(s)?;
    let copy_ints = |dst: &Dense, src: u64, len: usize| -> Result<()> {
        if dst.dtype == DType::I64 {
            copy_device(gpu, stream, dst.buf.addr(), src, len * 8)
        } else {
            let args = Args { x: src, y: dst.buf.addr(), n: len as i64, ..Args::default() };
            gpu.launch(stream, "narrow_i64_i32", Grid::strided(gpu, len as u64), &args)
        }
    };
    copy_ints(colptr, csc.colptr.addr(), a.k + 1)?;
    copy_device(gpu, stream, rowind.buf.addr(), csc.rowind.addr(), a.nnz * 4)?;
    copy_ints(perm, csc.perm.addr(), a.nnz)
}

fn copy_device(gpu: &super::Gpu, stream: sys::CUstream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let _scope = gpu.enter()?;
    // SAFETY: both regions hold `bytes` bytes (checked shapes).
    check(unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) }, "device copy")
}

/// Writes `value` into every logical element.
pub fn fill(s: &Stream, d: &Dense, value: f64) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args =
        Args { y: d.buf.addr(), ldy: d.ld as i64, m: d.rows as i64, n: d.cols as i64, alpha: value, ..Args::default() };
    gpu.launch(stream, &format!("fill_{}", d.dtype.name()), Grid::strided(gpu, d.numel() as u64), &args)
}

/// Copies between packed host memory and a (possibly strided) device array, in stream order.
///
/// # Safety
/// `host` must hold rows x cols elements, valid until the stream is synchronized.
pub unsafe fn copy_host(s: &Stream, d: &Dense, host: *mut u8, to_host: bool) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (size, row_bytes) = (d.dtype.size(), d.cols * d.dtype.size());
    if d.numel() == 0 {
        return Ok(());
    }
    let (device, pitch) = (d.buf.addr(), d.ld * size);
    let what = if to_host { "copy to host" } else { "copy from host" };
    let _scope = gpu.enter()?;
    if pitch == row_bytes || d.rows == 1 {
        let bytes = row_bytes * d.rows;
        return check(
            if to_host {
                sys::cuMemcpyDtoHAsync_v2(host as _, device, bytes, stream)
            } else {
                sys::cuMemcpyHtoDAsync_v2(device, host as _, bytes, stream)
            },
            what,
        );
    }
    let (host_type, device_type) = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
    let mut copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: device_type,
        srcHost: std::ptr::null(),
        srcDevice: device,
        srcArray: std::ptr::null_mut(),
        srcPitch: pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: host_type,
        dstHost: host as _,
        dstDevice: 0,
        dstArray: std::ptr::null_mut(),
        dstPitch: row_bytes,
        WidthInBytes: row_bytes,
        Height: d.rows,
    };
    if !to_host {
        (copy.srcMemoryType, copy.srcHost, copy.srcDevice, copy.srcPitch) = (host_type, host as _, 0, row_bytes);
        (copy.dstMemoryType, copy.dstHost, copy.dstDevice, copy.dstPitch) =
            (device_type, std::ptr::null_mut(), device, pitch);
    }
    check(sys::cuMemcpy2DAsync_v2(&copy, stream), what)
}
