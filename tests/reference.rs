//! The backend of EVS_TEST_DEVICE (the CPU by default) against naive references written here, through the safe core API, on
//! random inputs (odd sizes, empty rows, duplicates, nnz = 0), plus validation units.

use evsparse::core::context::{Backend, Context, Stream};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::spikes::Spikes;
use evsparse::core::{ops, plan, InputKind, Op};
use evsparse::dtype::DType;
use evsparse::error::*;
use std::sync::Arc;

mod common;
use common::{read, setup, Rng};

/// A 1-D f64 array holding `values`.
fn vector(ctx: &Arc<Context>, s: &Stream, values: &[f64]) -> Dense {
    common::upload(ctx, s, DType::F64, (1, values.len(), 1), values)
}

struct Triples {
    m: usize,
    k: usize,
    indptr: Vec<i64>,
    indices: Vec<i32>,
    w: Vec<f64>,
}

fn random_csr(rng: &mut Rng) -> Triples {
    let (m, k) = (1 + rng.below(60), 1 + rng.below(60));
    let mut indptr = vec![0i64];
    let mut indices = vec![];
    for _ in 0..m {
        let len = if rng.below(4) == 0 { 0 } else { rng.below(10) };
        for _ in 0..len {
            let dup = !indices.is_empty() && rng.below(5) == 0;
            indices.push(if dup { *indices.last().unwrap() } else { rng.below(k) as i32 });
        }
        indptr.push(indices.len() as i64);
    }
    let w = (0..indices.len()).map(|_| rng.unit()).collect();
    Triples { m, k, indptr, indices, w }
}

/// m x m with `per_row` random columns in every row (nnz above the CPU's inline work bound).
fn wide_csr(rng: &mut Rng, m: usize, per_row: usize) -> Triples {
    let indptr = (0..=m).map(|i| (i * per_row) as i64).collect();
    let indices = (0..m * per_row).map(|_| rng.below(m) as i32).collect();
    let w = (0..m * per_row).map(|_| rng.unit()).collect();
    Triples { m, k: m, indptr, indices, w }
}

fn upload(ctx: &Arc<Context>, a: &Triples) -> Csr {
    let shape = CsrShape::new(a.m as i64, a.k as i64, a.indices.len() as i64, DType::I64, DType::F64).unwrap();
    unsafe {
        Csr::from_host(
            ctx,
            shape,
            a.indptr.as_ptr() as *const u8,
            a.indices.as_ptr(),
            Some(a.w.as_ptr() as *const u8),
            0.0,
        )
        .unwrap()
    }
}

fn entries(a: &Triples) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    (0..a.m)
        .flat_map(move |i| (a.indptr[i] as usize..a.indptr[i + 1] as usize).map(move |j| (i, a.indices[j] as usize, j)))
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn spmv_both_ops_match_naive_reference() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    for _ in 0..50 {
        let a = random_csr(&mut rng);
        let csr = upload(&ctx, &a);
        for op in [Op::N, Op::T] {
            let (n_in, n_out) = if op == Op::N { (a.k, a.m) } else { (a.m, a.k) };
            let x: Vec<f64> = (0..n_in).map(|_| rng.unit()).collect();
            let mut want = vec![0.0; n_out];
            for (r, c, j) in entries(&a) {
                let (src, dst) = if op == Op::N { (c, r) } else { (r, c) };
                want[dst] += a.w[j] * x[src];
            }
            let (xd, yd) = (vector(&ctx, &s, &x), vector(&ctx, &s, &vec![f64::NAN; n_out]));
            ops::spmm(&s, op, InputKind::Float, 1.0, &csr, &xd, 0.0, &yd, true).unwrap();
            assert_close("spmv", &read(&s, &yd), &want);
        }
    }
}

#[test]
fn events_count_as_one_when_positive() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    let a = random_csr(&mut rng);
    let csr = upload(&ctx, &a);
    let x: Vec<f64> = (0..a.m).map(|i| [-1.0, 0.0, 0.25, 3.0][i % 4]).collect();
    let mut want = vec![0.0; a.k];
    for (r, c, j) in entries(&a) {
        want[c] += if x[r] > 0.0 { a.w[j] } else { 0.0 };
    }
    let (xd, yd) = (vector(&ctx, &s, &x), vector(&ctx, &s, &vec![0.0; a.k]));
    ops::spmm(&s, Op::T, InputKind::Events, 1.0, &csr, &xd, 0.0, &yd, true).unwrap();
    assert_close("events", &read(&s, &yd), &want);
}

#[test]
fn plasticity_clips_only_touched_synapses() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    for _ in 0..20 {
        let a = random_csr(&mut rng);
        let csr = upload(&ctx, &a);
        let spikes: Vec<f64> = (0..a.k).map(|_| (rng.below(3) == 0) as u8 as f64).collect();
        let trace: Vec<f64> = (0..a.m).map(|_| rng.unit()).collect();
        let mut want = a.w.clone();
        for (r, c, j) in entries(&a) {
            if spikes[c] > 0.0 {
                want[j] = (a.w[j] + trace[r]).clamp(-0.3, 0.3);
            }
        }
        let (sd, td) = (vector(&ctx, &s, &spikes), vector(&ctx, &s, &trace));
        ops::csr_plasticity(&s, true, &csr, Spikes::Events(&sd), &td, -0.3, 0.3).unwrap();
        let weights = csr.hetero_weights("test").unwrap();
        assert_close("post plasticity", &read(&s, weights), &want);
    }
}

/// T's gather along the CSC mirror (CPU: with the weights copied in CSC order where the matrix
/// sees every write) after each way the weights change: plasticity, a view's pointer while the
/// view lives and before it is dropped, and the caller's memory under a wrapped matrix.
#[test]
fn t_gather_follows_every_weight_write() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    for round in 0..20 {
        // round 0 large enough that the column-order copy is made on the thread pool
        let a = if round == 0 { wide_csr(&mut rng, 1000, 40) } else { random_csr(&mut rng) };
        let n = 1 + round % 5;
        let b: Vec<f64> = (0..a.m * n).map(|_| rng.unit()).collect();
        let bd = common::upload(&ctx, &s, DType::F64, (2, a.m, n), &b);
        let check = |what: &str, csr: &Csr, w: &[f64]| {
            let mut want = vec![0.0; a.k * n];
            for (r, c, j) in entries(&a) {
                (0..n).for_each(|q| want[c * n + q] += w[j] * b[r * n + q]);
            }
            let cd = common::upload(&ctx, &s, DType::F64, (2, a.k, n), &vec![f64::NAN; a.k * n]);
            ops::spmm(&s, Op::T, InputKind::Float, 1.0, csr, &bd, 0.0, &cd, false).unwrap();
            assert_close(what, &read(&s, &cd), &want);
        };
        let owned = upload(&ctx, &a);
        let mut w = a.w.clone();
        check("before any write", &owned, &w);
        // plasticity (post: the entries of spiking columns move by their row's trace)
        let spikes: Vec<f64> = (0..a.k).map(|_| (rng.below(2) == 0) as u8 as f64).collect();
        let trace: Vec<f64> = (0..a.m).map(|_| rng.unit()).collect();
        let (sd, td) = (vector(&ctx, &s, &spikes), vector(&ctx, &s, &trace));
        ops::csr_plasticity(&s, true, &owned, Spikes::Events(&sd), &td, -0.3, 0.3).unwrap();
        for (r, c, j) in entries(&a) {
            if spikes[c] > 0.0 {
                w[j] = (w[j] + trace[r]).clamp(-0.3, 0.3);
            }
        }
        check("after plasticity", &owned, &w);
        if !ctx.is_cpu() {
            continue; // the rest writes host memory
        }
        // a view: written through its pointer while it lives, then again just before it goes
        let view = owned.weights_view().unwrap();
        let write_through = |w: &mut Vec<f64>| {
            // SAFETY: the view holds nnz f64 weights in host memory (CPU context).
            let through = unsafe { view.slice_mut::<f64>() };
            through.iter_mut().for_each(|x| *x = *x * 0.5 + 1.0);
            w.clone_from_slice(through);
        };
        write_through(&mut w);
        check("a live view written", &owned, &w);
        write_through(&mut w);
        drop(view);
        check("a dropped view's writes", &owned, &w);
        // the caller's memory under a wrapped matrix, written between two products
        let (mut indptr, mut indices, mut caller_w) = (a.indptr.clone(), a.indices.clone(), a.w.clone());
        let shape = CsrShape::new(a.m as i64, a.k as i64, a.indices.len() as i64, DType::I64, DType::F64).unwrap();
        let (pi, pj, pw) = (indptr.as_mut_ptr() as *mut u8, indices.as_mut_ptr(), caller_w.as_mut_ptr());
        // (the arrays outlive `wrapped` and hold the shape's entries)
        let wrapped = Csr::wrap(&ctx, shape, pi, pj, Some(pw as *mut u8), 0.0).unwrap();
        check("wrapped", &wrapped, &a.w);
        // SAFETY: pw points at caller_w's nnz weights, which no product reads meanwhile.
        let written: Vec<f64> = unsafe { std::slice::from_raw_parts_mut(pw, a.w.len()) }
            .iter_mut()
            .map(|x| {
                *x = -*x;
                *x
            })
            .collect();
        check("wrapped, written by the caller", &wrapped, &written);
        drop(wrapped);
    }
}

#[test]
fn csr_to_csc_is_a_stable_mirror() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    for _ in 0..30 {
        let a = random_csr(&mut rng);
        let csr = upload(&ctx, &a);
        let nnz = a.indices.len();
        let ints = |len: usize, t: DType| Dense::create(&ctx, t, 1, len as i64, 1).unwrap();
        let (colptr, rowind, perm) = (ints(a.k + 1, DType::I64), ints(nnz, DType::I32), ints(nnz, DType::I64));
        ops::csr_to_csc(&s, &csr, &colptr, &rowind, &perm).unwrap();
        let mut order: Vec<(usize, usize, usize)> = entries(&a).map(|(r, c, j)| (c, r, j)).collect();
        order.sort();
        assert_eq!(read(&s, &rowind), order.iter().map(|o| o.1 as f64).collect::<Vec<_>>());
        assert_eq!(read(&s, &perm), order.iter().map(|o| o.2 as f64).collect::<Vec<_>>());
        assert_eq!(*read(&s, &colptr).last().unwrap(), nnz as f64);
    }
}

fn csr_error(m: i64, k: i64, indptr: &[i32], indices: &[i32]) -> Error {
    let (ctx, _s) = setup();
    let shape = CsrShape::new(m, k, indices.len() as i64, DType::I32, DType::F32).unwrap();
    unsafe { Csr::from_host(&ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), None, 1.0) }.err().unwrap()
}

#[test]
fn structure_errors_name_position_and_value() {
    let e = csr_error(2, 5000, &[0, 1, 2], &[0, 5003]);
    assert_eq!(e.status, EVS_ERROR_INVALID_STRUCTURE);
    assert_eq!(e.message, "csr: indices[1] = 5003 out of range for 5000 columns");
    assert_eq!(csr_error(2, 3, &[1, 1, 2], &[0, 1]).message, "csr: indptr[0] = 1, expected 0");
    assert!(csr_error(2, 3, &[0, 2, 1], &[0, 1]).message.contains("non-decreasing"));
    assert_eq!(csr_error(2, 3, &[0, 1, 1], &[0, 1]).message, "csr: indptr[2] = 1, expected nnz = 2");
}

#[test]
fn sizes_are_checked_before_memory_is_read() {
    let too_many = CsrShape::new(4, 4, 3_000_000_000, DType::I32, DType::F32).err().unwrap();
    assert_eq!(too_many.status, EVS_ERROR_INVALID_VALUE);
    assert!(too_many.message.contains("int32"));
    assert_eq!(CsrShape::new(-1, 4, 0, DType::I32, DType::F32).err().unwrap().status, EVS_ERROR_INVALID_VALUE);
    assert_eq!(CsrShape::new(4, 4, 0, DType::F32, DType::F32).err().unwrap().status, EVS_ERROR_DTYPE_MISMATCH);
    assert_eq!(CsrShape::new(4, 4, 0, DType::I64, DType::Bool).err().unwrap().status, EVS_ERROR_DTYPE_MISMATCH);
}

#[test]
fn shape_mismatch_is_reported_before_work() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    let a = random_csr(&mut rng);
    let csr = upload(&ctx, &a);
    let x = vector(&ctx, &s, &vec![1.0; a.k + 1]);
    let y = vector(&ctx, &s, &vec![7.0; a.m]);
    let e = ops::spmm(&s, Op::N, InputKind::Float, 1.0, &csr, &x, 0.0, &y, true).err().unwrap();
    assert_eq!(e.status, EVS_ERROR_SHAPE_MISMATCH);
    assert_eq!(read(&s, &y), vec![7.0; a.m]);
}

/// A 2000 x 2000 matrix with 1 % of the events active: the event-driven paths (scatter for
/// spmv T, CSC walk for post plasticity) run, since they touch far under 1/8 of the entries.
fn sparse_activity_case(rng: &mut Rng) -> Triples {
    let (m, k, per_row) = (2000, 2000, 20);
    let indptr: Vec<i64> = (0..=m as i64).map(|i| i * per_row).collect();
    let indices: Vec<i32> = (0..m * per_row as usize).map(|_| rng.below(k) as i32).collect();
    let w = (0..indices.len()).map(|_| rng.unit()).collect();
    Triples { m, k, indptr, indices, w }
}

/// spmv of `sparse_activity_case` on an input with about 1 % of its elements `live()` (the
/// rest zero) against the naive sum; the context, for the caller's checks.
fn spmv_on_sparse_activity(op: Op, kind: InputKind, live: impl Fn(&mut Rng) -> f64) -> Arc<Context> {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    let a = sparse_activity_case(&mut rng);
    let csr = upload(&ctx, &a);
    let (n_in, n_out) = if op == Op::N { (a.k, a.m) } else { (a.m, a.k) };
    let x: Vec<f64> = (0..n_in).map(|_| if rng.below(100) == 0 { live(&mut rng) } else { 0.0 }).collect();
    let mut want = vec![0.0; n_out];
    for (r, c, j) in entries(&a) {
        let (src, dst) = if op == Op::N { (c, r) } else { (r, c) };
        want[dst] += a.w[j] * x[src];
    }
    let (xd, yd) = (vector(&ctx, &s, &x), vector(&ctx, &s, &vec![f64::NAN; n_out]));
    ops::spmm(&s, op, kind, 1.0, &csr, &xd, 0.0, &yd, true).unwrap();
    assert_close(&format!("spmv {op:?} on sparse activity"), &read(&s, &yd), &want);
    ctx
}

#[test]
fn event_driven_spmv_t_matches_naive_reference() {
    spmv_on_sparse_activity(Op::T, InputKind::Events, |_| 1.0);
}

/// spmv N on floats zero in most rows: on the CPU the plan spreads the live ones along the CSC
/// mirror (the entries they reach, not all of A), with the gather's result.
#[test]
fn float_input_zero_in_most_rows_matches_naive_reference() {
    let ctx = spmv_on_sparse_activity(Op::N, InputKind::Float, |rng| rng.unit() - 0.5);
    if matches!(ctx.backend, Backend::Cpu(_)) {
        assert_eq!(plan::plan_name(plan::last()), "spmm_n:csc_scatter");
    }
}

#[test]
fn event_driven_post_plasticity_matches_naive_reference() {
    let (ctx, s) = setup();
    let mut rng = Rng::new();
    let a = sparse_activity_case(&mut rng);
    let csr = upload(&ctx, &a);
    let spikes: Vec<f64> = (0..a.k).map(|_| if rng.below(100) == 0 { 1.0 } else { 0.0 }).collect();
    let trace: Vec<f64> = (0..a.m).map(|_| rng.unit()).collect();
    let mut want = a.w.clone();
    for (r, c, j) in entries(&a) {
        if spikes[c] > 0.0 {
            want[j] = (a.w[j] + trace[r]).clamp(-0.5, f64::INFINITY);
        }
    }
    let (sd, td) = (vector(&ctx, &s, &spikes), vector(&ctx, &s, &trace));
    ops::csr_plasticity(&s, true, &csr, Spikes::Events(&sd), &td, -0.5, f64::INFINITY).unwrap();
    assert_close("event-driven post plasticity", &read(&s, csr.hetero_weights("test").unwrap()), &want);
}
