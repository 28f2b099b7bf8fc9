//! Every operation of SPEC §3: argument checks (before any work), then backend dispatch.
//! A call that fails a check changes nothing.

use super::bsr::Bsr;
use super::context::{Backend, Context, Stream};
use super::csr::{Csr, Weights};
use super::dense::{Dense, MAX_DIM};
use super::plan::{self, decide, Algorithm};
use super::spikes::{SpikeList, Spikes};
use super::{InputKind, Op};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::{cpu, cuda};
use std::sync::Arc;

/// Checks that every named handle lives in the stream's context.
fn same_context(s: &Stream, handles: &[(&str, &Arc<Context>)]) -> Result<()> {
    handles.iter().try_for_each(|(arg, ctx)| s.expect_context(arg, ctx))
}

/// Fails when an output shares memory with an input.
fn disjoint(out: (&str, &Dense), inputs: &[(&str, &Dense)]) -> Result<()> {
    inputs.iter().try_for_each(|(arg, d)| out.1.expect_disjoint(out.0, d, arg))
}

/// Fails when an output shares memory with the matrix' weights.
fn disjoint_from_weights(out: (&str, &Dense), a: &Csr) -> Result<()> {
    match &a.weights {
        Weights::Hetero(w) => disjoint(out, &[("the csr weights", w)]),
        Weights::Homo(_) => Ok(()),
    }
}

/// One spmv (n = 1) or spmm call: `y = alpha·op(A)·x + beta·y`, its arguments checked.
#[derive(Clone, Copy)]
pub struct Product<'a> {
    pub kind: InputKind,
    pub alpha: f64,
    pub a: &'a Csr,
    pub x: &'a Dense,
    pub beta: f64,
    pub y: &'a Dense,
}

/// Runs `work`, the CPU reference of `A`'s family, on the calling thread: the work shares itself
/// among the context's threads only where it is large enough (handing a small call to the pool
/// and waiting for it cost more than the work: a soak of 10^6 small calls spent 19 % of its
/// time in that wait, tests/soak.rs).
fn on_calling_thread<A: Algorithm>(s: &Stream, work: impl FnOnce() -> Result<()>) -> Result<()> {
    decide(&s.ctx.forced, plan::Backend::Cpu, A::REFERENCE, |_| true)?;
    work()
}

/// The GPU algorithm of a call: the chooser's, or the forced one where it fits.
fn gpu_plan<A: Algorithm>(s: &Stream, chosen: A, fits: impl Fn(A) -> bool) -> Result<A> {
    decide(&s.ctx.forced, plan::Backend::Gpu, chosen, fits)
}

/// The dtype rules for an input read as floats or events.
fn check_input(kind: InputKind, arg: &str, x: &Dense, dtype: DType) -> Result<()> {
    match kind {
        InputKind::Float => x.dtype.expect(arg, dtype),
        InputKind::Events => x.dtype.expect_event(arg),
    }
}

/// Shape of `x`/`y` for a product whose input has `in_len` rows and output `out_len` rows;
/// vectors for mv, 2-D arrays with a shared column count for mm.
fn check_product_shapes(
    vector: bool,
    x: (&str, &Dense),
    in_len: usize,
    y: (&str, &Dense),
    out_len: usize,
) -> Result<()> {
    if vector {
        x.1.expect_vector(x.0, in_len)?;
        y.1.expect_vector(y.0, out_len)
    } else {
        x.1.expect_matrix(x.0, in_len, x.1.cols)?;
        y.1.expect_matrix(y.0, out_len, x.1.cols)
    }
}

fn check_bounds(lo: f64, hi: f64) -> Result<()> {
    if lo.is_nan() || hi.is_nan() {
        return Err(Error::value(format!("plasticity: bounds must not be NaN (w_min = {lo}, w_max = {hi})")));
    }
    if lo > hi {
        return Err(Error::value(format!("plasticity: w_min = {lo} is greater than w_max = {hi}")));
    }
    Ok(())
}

/// spmv (`vector`) and spmm, N and T.
#[allow(clippy::too_many_arguments)]
pub fn spmm(
    s: &Stream,
    op: Op,
    kind: InputKind,
    alpha: f64,
    a: &Csr,
    x: &Dense,
    beta: f64,
    y: &Dense,
    vector: bool,
) -> Result<()> {
    let (xa, ya) = if vector { ("x", "y") } else { ("B", "C") };
    same_context(s, &[("A", &a.ctx), (xa, &x.ctx), (ya, &y.ctx)])?;
    check_input(kind, xa, x, a.dtype)?;
    y.dtype.expect(ya, a.dtype)?;
    let (in_len, out_len) = if op == Op::N { (a.k, a.m) } else { (a.m, a.k) };
    check_product_shapes(vector, (xa, x), in_len, (ya, y), out_len)?;
    disjoint((ya, y), &[(xa, x)])?;
    disjoint_from_weights((ya, y), a)?;
    let profile = a.expect_valid(s)?;
    let product = Product { kind, alpha, a, x, beta, y };
    match (&s.ctx.backend, op) {
        (Backend::Cpu(_), _) => cpu::spmm(s, op, &product),
        (Backend::Cuda(_), Op::N) => {
            let chosen = plan::choose_spmm_n(&profile.stats, y.cols, kind, a.dtype, &s.ctx.device_info());
            let fits = |alg| match alg {
                plan::SpmmN::CscScatter => kind == InputKind::Events && y.cols == 1 && plan::can_scatter(a.dtype),
                plan::SpmmN::OutputSlices => {
                    kind == InputKind::Events && vector && plan::column_slice_width(&profile.stats).is_some()
                }
                plan::SpmmN::EventBits => kind == InputKind::Events && !vector,
                plan::SpmmN::NonzeroLists => kind == InputKind::Float && !vector,
                _ => true,
            };
            let alg = gpu_plan(s, chosen, fits)?;
            cuda::spmm_n(s, alg, profile, &product)
        }
        (Backend::Cuda(_), Op::T) => {
            let fits = |alg| match alg {
                plan::SpmmT::Scatter => plan::can_scatter(a.dtype),
                plan::SpmmT::RowWarpScatter => vector && plan::can_scatter(a.dtype),
                plan::SpmmT::EventBits => kind == InputKind::Events && !vector,
                plan::SpmmT::NonzeroLists => kind == InputKind::Float && !vector,
                plan::SpmmT::OutputSlices => {
                    kind == InputKind::Events && vector && plan::slice_offsets_kept(&profile.stats)
                }
                _ => true,
            };
            let alg = gpu_plan(s, plan::choose_spmm_t(&profile.stats, y.cols, a.dtype, kind), fits)?;
            cuda::spmm_t(s, alg, &product)
        }
    }
}

/// spmv on a spike list: N `y = alpha·A·e(list) + beta·y` (the list indexes A's columns),
/// T `y = alpha·Aᵀ·e(list) + beta·y` (it indexes A's rows).
pub fn spmv_spikes(s: &Stream, op: Op, alpha: f64, a: &Csr, list: SpikeList, beta: f64, y: &Dense) -> Result<()> {
    same_context(s, &[("A", &a.ctx), ("y", &y.ctx)])?;
    list.check(s)?;
    y.dtype.expect("y", a.dtype)?;
    let (neurons, out_len) = if op == Op::N { (a.k, a.m) } else { (a.m, a.k) };
    y.expect_vector("y", out_len)?;
    list.expect_disjoint_from("y", y)?;
    disjoint_from_weights(("y", y), a)?;
    let stats = &a.expect_valid(s)?.stats;
    match s.ctx.backend {
        Backend::Cpu(_) => cpu::spmv_spikes(s, op, alpha, a, list.host_entries(neurons)?, beta, y),
        Backend::Cuda(_) => {
            // output_slices sums in shared memory where analysis kept its offsets; the other
            // kernels add spikes with atomics, which f16/bf16 lack at f32 accumulation
            let slices = match op {
                Op::T => plan::slice_offsets_kept(stats),
                Op::N => plan::column_slice_width(stats).is_some(),
            };
            let scatters = plan::can_scatter(a.dtype);
            if !scatters && !slices {
                return Err(Error::not_supported(format!(
                    "spmv on a spike list with {} weights: the GPU adds spikes with atomics, which {} lacks at f32 \
                     accumulation (except where output_slices runs: T on rows sorted by column and long enough, N on matrices \
                     whose column slice offsets analysis keeps); pass \
                     the spikes as events (the vector evs_compact_events reads)",
                    a.dtype.name(),
                    a.dtype.name()
                )));
            }
            // the scatters take a warp per listed line (a warp taking 32 listed lines, as
            // `scatter` does for event vectors, walks them in series: 3-8x slower, measured)
            match op {
                Op::N => {
                    // output_slices has no gather branch for a list: at 10,000² it ties csc_scatter
                    // up to 1 % and takes 1.5-2x as long from 5 % (bench/NOTES.md, "spmv N on spike
                    // lists through output_slices"), so it runs where atomics cannot
                    let (sliced, scatter) = ((plan::SpmmN::OutputSlices, slices), (plan::SpmmN::CscScatter, scatters));
                    let alg = list_kernel(s, sliced, scatter, false)?;
                    cuda::spmv_spikes_n(s, alg, alpha, a, list, beta, y)
                }
                Op::T => {
                    let (sliced, scatter) =
                        ((plan::SpmmT::OutputSlices, slices), (plan::SpmmT::RowWarpScatter, scatters));
                    let alg = list_kernel(s, sliced, scatter, plan::output_slices_pay(stats))?;
                    cuda::spmv_spikes_t(s, alg, alpha, a, list, beta, y)
                }
            }
        }
    }
}

/// The GPU kernel of spmv on a spike list: `slices` (output_slices, where analysis kept its
/// offsets) or `scatter` (atomics, f32/f64), each with whether it can run; the slices where they
/// are preferred or the scatter cannot run. A forced algorithm must be one of the two and able to.
fn list_kernel<A: Algorithm>(s: &Stream, slices: (A, bool), scatter: (A, bool), prefer_slices: bool) -> Result<A> {
    let chosen = if prefer_slices || !scatter.1 { slices.0 } else { scatter.0 };
    gpu_plan(s, chosen, |alg| (alg == slices.0 && slices.1) || (alg == scatter.0 && scatter.1))
}

/// yw2y, plain (1-D y and out) or batched (2-D), optionally with per-batch weights.
#[allow(clippy::too_many_arguments)]
pub fn yw2y(
    s: &Stream,
    op: Op,
    a: &Csr,
    batch_weights: Option<&Dense>,
    alpha: f64,
    y: &Dense,
    beta: f64,
    out: &Dense,
) -> Result<()> {
    same_context(s, &[("A", &a.ctx), ("y", &y.ctx), ("out", &out.ctx)])?;
    if let Some(bw) = batch_weights {
        same_context(s, &[("weights", &bw.ctx)])?;
        bw.dtype.expect("weights", a.dtype)?;
    }
    y.dtype.expect("y", a.dtype)?;
    out.dtype.expect("out", a.dtype)?;
    let len = if op == Op::N { a.m } else { a.k };
    let batches = if y.ndim == 1 {
        y.expect_vector("y", len)?;
        out.expect_vector("out", a.nnz)?;
        1
    } else {
        y.expect_matrix("y", y.rows, len)?;
        out.expect_matrix("out", y.rows, a.nnz)?;
        y.rows
    };
    if let Some(bw) = batch_weights {
        if y.ndim == 1 {
            bw.expect_vector("weights", a.nnz)?;
        } else {
            bw.expect_matrix("weights", batches, a.nnz)?;
        }
        disjoint(("out", out), &[("weights", bw)])?;
    }
    disjoint(("out", out), &[("y", y)])?;
    disjoint_from_weights(("out", out), a)?;
    let stats = &a.expect_valid(s)?.stats;
    match s.ctx.backend {
        Backend::Cpu(_) => {
            on_calling_thread::<plan::Yw2y>(s, || cpu::yw2y(s, op, a, batch_weights, alpha, y, beta, out))
        }
        Backend::Cuda(_) => {
            let alg =
                gpu_plan(s, plan::choose_yw2y(op, stats, batches, a.dtype), |alg| plan::yw2y_fits(alg, op, stats))?;
            cuda::yw2y(s, alg, a, batch_weights, alpha, y, beta, out)
        }
    }
}

/// Dense event mv (`vector`) and mm: N `C = W·e(S)` with W m x k; T `C = Wᵀ·e(S)` with W k x m.
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
    vector: bool,
) -> Result<()> {
    let (xa, ca) = if vector { ("s", "c") } else { ("S", "C") };
    same_context(s, &[("W", &w.ctx), (xa, &x.ctx), (ca, &c.ctx)])?;
    w.expect_2d("W")?;
    w.dtype.expect_float("W")?;
    check_input(kind, xa, x, w.dtype)?;
    c.dtype.expect(ca, w.dtype)?;
    let (in_len, out_len) = if op == Op::N { (w.cols, w.rows) } else { (w.rows, w.cols) };
    check_product_shapes(vector, (xa, x), in_len, (ca, c), out_len)?;
    disjoint((ca, c), &[(xa, x), ("W", w)])?;
    match s.ctx.backend {
        Backend::Cpu(_) => cpu::dense_mm(s, &cpu::DenseProduct { op, kind, alpha, w, s: x, beta, c }),
        Backend::Cuda(_) => {
            let tensor_cores = kind == InputKind::Events && cuda::dense_tma(s, w, c.cols);
            let fits = |alg| match alg {
                plan::DenseMm::MvRowWarp => op == Op::N && c.cols == 1,
                plan::DenseMm::MvColumnBlocks => op == Op::T && c.cols == 1,
                plan::DenseMm::EventLists => kind == InputKind::Events,
                plan::DenseMm::Wgmma => tensor_cores,
                plan::DenseMm::ActiveRows => {
                    op == Op::T && kind == InputKind::Events && (2..=plan::DENSE_ROWS_T_COLS).contains(&c.cols)
                }
                plan::DenseMm::Tiled
                | plan::DenseMm::InputNonzeros
                | plan::DenseMm::Gemm
                | plan::DenseMm::Reference => true,
            };
            let alg = gpu_plan(s, plan::choose_dense_mm(op, c.cols, kind, tensor_cores), fits)?;
            cuda::dense_mm(s, alg, op == Op::T, kind, alpha, w, x, beta, c)
        }
    }
}

/// Dense mv on a spike list: N `c = alpha·W·e(list) + beta·c` (the list indexes W's columns),
/// T `c = alpha·Wᵀ·e(list) + beta·c` (it indexes W's rows).
pub fn dense_mv_spikes(s: &Stream, op: Op, alpha: f64, w: &Dense, list: SpikeList, beta: f64, c: &Dense) -> Result<()> {
    same_context(s, &[("W", &w.ctx), ("c", &c.ctx)])?;
    list.check(s)?;
    w.expect_2d("W")?;
    w.dtype.expect_float("W")?;
    c.dtype.expect("c", w.dtype)?;
    let (neurons, out_len) = if op == Op::N { (w.cols, w.rows) } else { (w.rows, w.cols) };
    c.expect_vector("c", out_len)?;
    disjoint(("c", c), &[("W", w)])?;
    list.expect_disjoint_from("c", c)?;
    match s.ctx.backend {
        Backend::Cpu(_) => cpu::dense_mv_spikes(s, op, alpha, w, list.host_entries(neurons)?, beta, c),
        Backend::Cuda(_) => {
            let chosen = plan::choose_dense_mm(op, 1, InputKind::Events, false);
            let alg = gpu_plan(s, chosen, |alg| alg == chosen)?;
            cuda::dense_mv_spikes(s, alg, alpha, w, list, beta, c)
        }
    }
}

/// Trace and spike checks shared by the CSR and dense plasticity rules: pre spikes index
/// rows (`m`) and the trace columns (`k`); post the other way round.
#[allow(clippy::too_many_arguments)]
fn check_plasticity(
    s: &Stream,
    post: bool,
    m: usize,
    k: usize,
    dtype: DType,
    spikes: Spikes,
    trace: &Dense,
    weights: (&str, &Dense),
) -> Result<()> {
    let (sa, ta) = if post { ("post_spikes", "pre_trace") } else { ("pre_spikes", "post_trace") };
    s.expect_context(ta, &trace.ctx)?;
    trace.dtype.expect(ta, dtype)?;
    let (spike_len, trace_len) = if post { (k, m) } else { (m, k) };
    match spikes {
        Spikes::Events(x) => {
            s.expect_context(sa, &x.ctx)?;
            x.dtype.expect_event(sa)?;
            x.expect_vector(sa, spike_len)?;
            disjoint(weights, &[(sa, x)])?;
        }
        Spikes::List(list) => {
            list.check(s)?;
            list.expect_disjoint_from(weights.0, weights.1)?;
        }
    }
    trace.expect_vector(ta, trace_len)?;
    disjoint(weights, &[(ta, trace)])
}

/// CSR plasticity, pre (`post = false`) or post, in place on the hetero weights.
pub fn csr_plasticity(s: &Stream, post: bool, a: &Csr, spikes: Spikes, trace: &Dense, lo: f64, hi: f64) -> Result<()> {
    same_context(s, &[("A", &a.ctx)])?;
    let weights = a.hetero_weights("plasticity")?;
    check_plasticity(s, post, a.m, a.k, a.dtype, spikes, trace, ("the csr weights", weights))?;
    check_bounds(lo, hi)?;
    a.expect_valid(s)?;
    a.weights_written();
    match s.ctx.backend {
        Backend::Cpu(_) => {
            let spikes = spikes.on_host(if post { a.k } else { a.m })?;
            let rule = cpu::Rule { post, trace, lo, hi };
            on_calling_thread::<plan::CsrPlasticity>(s, || cpu::csr_plasticity(s, a, spikes, rule))
        }
        Backend::Cuda(_) => {
            let rule = plan::choose_csr_plasticity(post);
            let alg = gpu_plan(s, rule, |alg| alg == rule)?;
            cuda::csr_plasticity(s, alg, a, spikes, trace, lo, hi)
        }
    }
}

/// Dense plasticity, pre or post, in place on W (m x k).
pub fn dense_plasticity(
    s: &Stream,
    post: bool,
    w: &Dense,
    spikes: Spikes,
    trace: &Dense,
    lo: f64,
    hi: f64,
) -> Result<()> {
    same_context(s, &[("W", &w.ctx)])?;
    w.expect_2d("W")?;
    w.dtype.expect_float("W")?;
    check_plasticity(s, post, w.rows, w.cols, w.dtype, spikes, trace, ("W", w))?;
    check_bounds(lo, hi)?;
    match s.ctx.backend {
        Backend::Cpu(_) => {
            let spikes = spikes.on_host(if post { w.cols } else { w.rows })?;
            let rule = cpu::Rule { post, trace, lo, hi };
            on_calling_thread::<plan::DensePlasticity>(s, || cpu::dense_plasticity(s, w, spikes, rule))
        }
        Backend::Cuda(_) => {
            gpu_plan(s, plan::choose_dense_plasticity(), |_| true)?;
            cuda::dense_plasticity(s, post, w, spikes, trace, lo, hi)
        }
    }
}

/// `C = alpha·A·B + beta·C` for BSR A.
pub fn bsrmm(s: &Stream, alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    same_context(s, &[("A", &a.ctx), ("B", &b.ctx), ("C", &c.ctx)])?;
    let dtype = a.values.dtype;
    b.dtype.expect("B", dtype)?;
    if !(c.dtype == dtype || c.dtype == DType::F32) {
        return Err(Error::dtype(format!("C has dtype {}, expected {} or f32", c.dtype.name(), dtype.name())));
    }
    b.expect_matrix("B", a.cols(), b.cols)?;
    c.expect_matrix("C", a.rows(), b.cols)?;
    disjoint(("C", c), &[("B", b), ("A's values", &a.values)])?;
    a.expect_valid(s)?;
    match s.ctx.backend {
        Backend::Cpu(_) => cpu::bsrmm(s, alpha, a, b, beta, c),
        Backend::Cuda(_) => {
            let (aligned, tma) = (cuda::bsrmm_aligned(a, b), cuda::bsrmm_tma(s, a, b));
            let row_blocks = plan::row_blocks(a.nnzb, a.mb);
            let density = row_blocks / a.kb.max(1) as f64;
            let call = plan::BsrmmCall { dtype, bm: a.bm, bk: a.bk, aligned, tma, density, row_blocks };
            let alg = gpu_plan(s, plan::choose_bsrmm(&call), |alg| call.fits(alg))?;
            cuda::bsrmm(s, alg, alpha, a, b, beta, c)
        }
    }
}

/// Sorted indices of the active events and their count.
pub fn compact(s: &Stream, spikes: &Dense, indices: &Dense, count: &Dense) -> Result<()> {
    same_context(s, &[("spikes", &spikes.ctx), ("indices", &indices.ctx), ("count", &count.ctx)])?;
    spikes.dtype.expect_event("spikes")?;
    indices.dtype.expect("indices", DType::I32)?;
    count.dtype.expect("count", DType::I32)?;
    if spikes.ndim != 1 {
        return Err(Error::shape(format!("spikes must be a 1-D array, got a {}", spikes.describe())));
    }
    if spikes.rows > MAX_DIM as usize {
        return Err(Error::shape(format!("spikes has {} neurons; int32 indices reach {MAX_DIM}", spikes.rows)));
    }
    if indices.ndim != 1 || indices.rows < spikes.rows {
        return Err(Error::shape(format!(
            "indices must be a 1-D array of at least {} elements, got a {}",
            spikes.rows,
            indices.describe()
        )));
    }
    count.expect_vector("count", 1)?;
    disjoint(("indices", indices), &[("spikes", spikes), ("count", count)])?;
    disjoint(("count", count), &[("spikes", spikes)])?;
    match s.ctx.backend {
        Backend::Cpu(_) => on_calling_thread::<plan::Compact>(s, || cpu::compact(spikes, indices, count)),
        Backend::Cuda(_) => {
            let clusters = cuda::has_clusters(s);
            let alg = gpu_plan(s, plan::choose_compact(spikes.rows, clusters), |alg| {
                alg != plan::Compact::ClusterRounds || clusters
            })?;
            cuda::compact(s, alg, spikes, indices, count)
        }
    }
}

/// Fails unless `d` is an int32 or int64 vector whose type can hold `max_value`.
fn check_int_vector(arg: &str, d: &Dense, len: usize, max_value: usize) -> Result<()> {
    match d.dtype {
        DType::I64 => {}
        DType::I32 if max_value <= i32::MAX as usize => {}
        DType::I32 => return Err(Error::dtype(format!("{arg}: value {max_value} does not fit int32; use int64"))),
        other => return Err(Error::dtype(format!("{arg} has dtype {}, expected i32 or i64", other.name()))),
    }
    d.expect_vector(arg, len)
}

/// The CSC mirror of A: column pointers (k + 1), row indices (nnz, int32), permutation (nnz).
pub fn csr_to_csc(s: &Stream, a: &Csr, colptr: &Dense, rowind: &Dense, perm: &Dense) -> Result<()> {
    same_context(s, &[("A", &a.ctx), ("colptr", &colptr.ctx), ("rowind", &rowind.ctx), ("perm", &perm.ctx)])?;
    check_int_vector("colptr", colptr, a.k + 1, a.nnz)?;
    rowind.dtype.expect("rowind", DType::I32)?;
    rowind.expect_vector("rowind", a.nnz)?;
    check_int_vector("perm", perm, a.nnz, a.nnz.saturating_sub(1))?;
    disjoint(("colptr", colptr), &[("rowind", rowind), ("perm", perm)])?;
    disjoint(("rowind", rowind), &[("perm", perm)])?;
    a.expect_valid(s)?;
    match s.ctx.backend {
        Backend::Cpu(_) => s.ctx.run(|| cpu::csr_to_csc(a, colptr, rowind, perm)),
        Backend::Cuda(_) => cuda::csr_to_csc(s, a, colptr, rowind, perm),
    }
}

/// Builds and caches the derived structures now (statistics, row classes, the CSC mirror), so
/// later calls allocate nothing.
pub fn analyse(s: &Stream, a: &Csr) -> Result<()> {
    same_context(s, &[("A", &a.ctx)])?;
    a.expect_valid(s)?;
    match s.ctx.backend {
        Backend::Cpu(_) => {
            a.analysis();
        }
        Backend::Cuda(_) => {
            a.device_analysis(s)?;
            // plasticity on an event vector lists it in the stream scratch first
            cuda::reserve_spike_listing(s, a.m.max(a.k))?;
        }
    }
    Ok(())
}
