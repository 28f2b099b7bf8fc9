//! A matrix of more than 2^31 stored entries (issue #13): int64 indptr, an f32 weight per entry;
//! analysis, spmv N and T, csr→csc, yw2y N and T and the weights' view, each checked against
//! sums computed here from the formulas that built the matrix, on a sample of outputs. Every
//! value is a small multiple of a power of two, so every sum is exact in f32 whatever its order
//! and the results must match exactly. It needs about 66 GB of device and 60 GB of host memory,
//! so it runs only with EVS_TEST_BIG=1 (the GPU check sets it on the H100); EVS_TEST_BIG_ROWS
//! makes it smaller (a check of the test itself on the CPU).

mod common;

use common::{env_number, setup, upload, Rng};
use evsparse::core::context::{Context, Stream};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use evsparse::error::EVS_ERROR_DTYPE_MISMATCH;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

const K: usize = 1 << 20; // columns
const ROWS: usize = 1 << 21; // ROWS * PER_ROW = 2,149,580,800 entries, past 2^31
const PER_ROW: usize = 1025;
const STRIDE: usize = 1023; // row i's t-th column: t * STRIDE + (i * SPREAD) % STRIDE (sorted)
const SPREAD: usize = 37;
const SAMPLES: usize = 2000;

fn column(i: usize, t: usize) -> usize {
    t * STRIDE + i * SPREAD % STRIDE
}

/// Entry j's weight, a multiple of 2^-10 below 1.
fn weight(j: usize) -> f32 {
    (j % 1021 + 1) as f32 / 1024.0
}

/// The inputs of N (by column) and T (by row): multiples of 2^-2 and 2^-3.
fn x_n(c: usize) -> f32 {
    (c % 7) as f32 / 4.0 - 0.75
}

fn x_t(i: usize) -> f32 {
    (i % 5) as f32 / 8.0 - 0.25
}

/// The rows holding column c, in order, with the entry's position in each.
fn column_entries(m: usize, c: usize) -> Vec<(usize, usize)> {
    let (t, r) = (c / STRIDE, c % STRIDE);
    if t >= PER_ROW {
        return Vec::new();
    }
    let first = (0..STRIDE).find(|&i| i * SPREAD % STRIDE == r).expect("SPREAD is invertible mod STRIDE");
    (first..m).step_by(STRIDE).map(|i| (i, i * PER_ROW + t)).collect()
}

/// Elements [start, start + len) of a vector, through a view of them (no copy of the rest).
fn read<T: Copy + Default>(s: &Stream, d: &Dense, start: usize, len: usize) -> Vec<T> {
    if len == 0 {
        return Vec::new(); // a view at the array's end would point past its allocation
    }
    let at = d.buf.addr() as usize + start * d.dtype.size();
    let view = Dense::wrap(&d.ctx, d.dtype, 1, len as i64, 1, 1, at as *mut u8).unwrap();
    let mut out = vec![T::default(); len];
    // SAFETY: out holds len elements of the array's type (T matches its dtype at each call).
    unsafe { view.copy_to_host(s, out.as_mut_ptr() as *mut u8, len).unwrap() };
    s.synchronize().unwrap();
    out
}

/// Element i of a vector.
fn read_one<T: Copy + Default>(s: &Stream, d: &Dense, i: usize) -> T {
    read::<T>(s, d, i, 1)[0]
}

/// Prints how long the phase took since the last one (the GPU check's log keeps it).
fn lap(what: &str, since: &mut Instant) {
    eprintln!("big: {what} in {:.1} s", since.elapsed().as_secs_f64());
    *since = Instant::now();
}

fn vector(ctx: &Arc<Context>, t: DType, n: usize) -> Dense {
    Dense::create(ctx, t, 1, n as i64, 1).unwrap()
}

/// A vector of f32 values computed by `f` at 0..n.
fn f32_vector(ctx: &Arc<Context>, s: &Stream, n: usize, f: fn(usize) -> f32) -> Dense {
    upload(ctx, s, DType::F32, (1, n, 1), &(0..n).map(|i| f(i) as f64).collect::<Vec<_>>())
}

#[test]
fn more_than_2_31_entries() {
    if std::env::var("EVS_TEST_BIG").as_deref() != Ok("1") {
        eprintln!("skipped: set EVS_TEST_BIG=1 (66 GB of device memory)");
        return;
    }
    let (ctx, s) = setup();
    let mut clock = Instant::now();
    let m = env_number("EVS_TEST_BIG_ROWS").unwrap_or(ROWS);
    let nnz = m * PER_ROW;
    assert!(nnz > 1 << 31 || m != ROWS);
    let a = {
        let indptr: Vec<i64> = (0..=m).map(|i| (i * PER_ROW) as i64).collect();
        let mut indices = vec![0i32; nnz];
        indices
            .par_chunks_mut(PER_ROW)
            .enumerate()
            .for_each(|(i, row)| row.iter_mut().enumerate().for_each(|(t, c)| *c = column(i, t) as i32));
        let mut weights = vec![0f32; nnz];
        weights.par_iter_mut().enumerate().for_each(|(j, w)| *w = weight(j));
        let shape = CsrShape::new(m as i64, K as i64, nnz as i64, DType::I64, DType::F32).unwrap();
        // SAFETY: the host arrays hold m + 1 int64 offsets and nnz indices and f32 weights.
        unsafe {
            Csr::from_host(
                &ctx,
                shape,
                indptr.as_ptr() as *const u8,
                indices.as_ptr(),
                Some(weights.as_ptr() as *const u8),
                0.0,
            )
        }
        .unwrap()
    };
    lap("created (host arrays, checks, upload)", &mut clock);
    ops::analyse(&s, &a).unwrap();
    lap("analysed", &mut clock);
    let mut rng = Rng::new();
    let rows: Vec<usize> = (0..SAMPLES).map(|_| rng.below(m)).chain([0, m - 1]).collect();
    let cols: Vec<usize> = (0..SAMPLES).map(|_| rng.below(K)).chain([0, K - 1]).collect();

    // spmv N and T
    let (xn, yn) = (f32_vector(&ctx, &s, K, x_n), vector(&ctx, DType::F32, m));
    ops::spmm(&s, Op::N, InputKind::Float, 1.0, &a, &xn, 0.0, &yn, true).unwrap();
    for &i in &rows {
        let expected: f32 = (0..PER_ROW).map(|t| weight(i * PER_ROW + t) * x_n(column(i, t))).sum();
        assert_eq!(read_one::<f32>(&s, &yn, i), expected, "spmv N, row {i}");
    }
    drop((xn, yn));
    let (xt, yt) = (f32_vector(&ctx, &s, m, x_t), vector(&ctx, DType::F32, K));
    ops::spmm(&s, Op::T, InputKind::Float, 1.0, &a, &xt, 0.0, &yt, true).unwrap();
    for &c in &cols {
        let expected: f32 = column_entries(m, c).iter().map(|&(i, j)| weight(j) * x_t(i)).sum();
        assert_eq!(read_one::<f32>(&s, &yt, c), expected, "spmv T, column {c}");
    }
    drop((xt, yt));
    lap("spmv N and T", &mut clock);

    // csr→csc (perm needs int64 here: an int32 view of the same memory is refused)
    {
        let (colptr, rowind, perm) =
            (vector(&ctx, DType::I64, K + 1), vector(&ctx, DType::I32, nnz), vector(&ctx, DType::I64, nnz));
        if nnz > i32::MAX as usize {
            let narrow = Dense::wrap(&ctx, DType::I32, 1, nnz as i64, 1, 1, perm.buf.addr() as *mut u8).unwrap();
            let err = ops::csr_to_csc(&s, &a, &colptr, &rowind, &narrow).unwrap_err();
            assert_eq!(err.status, EVS_ERROR_DTYPE_MISMATCH, "{err}");
        }
        ops::csr_to_csc(&s, &a, &colptr, &rowind, &perm).unwrap();
        let offsets = read::<i64>(&s, &colptr, 0, K + 1);
        assert_eq!(offsets[K], nnz as i64);
        for &c in &cols {
            let (entries, start) = (column_entries(m, c), offsets[c] as usize);
            assert_eq!(offsets[c + 1] as usize - start, entries.len(), "colptr, column {c}");
            let (rows, positions) =
                (read::<i32>(&s, &rowind, start, entries.len()), read::<i64>(&s, &perm, start, entries.len()));
            for (p, &(i, j)) in entries.iter().enumerate() {
                assert_eq!((rows[p] as usize, positions[p] as usize), (i, j), "column {c}, entry {p}");
            }
        }
    }
    lap("csr to csc", &mut clock);

    // yw2y N and T: out[j] = w_j * y[row(j)] / y[column(j)]
    let out = vector(&ctx, DType::F32, nnz);
    let entries: Vec<usize> = (0..SAMPLES).map(|_| rng.below(nnz)).chain([0, nnz - 1]).collect();
    for op in [Op::N, Op::T] {
        let (len, by): (usize, fn(usize) -> f32) = if op == Op::N { (m, x_t) } else { (K, x_n) };
        let yv = f32_vector(&ctx, &s, len, by);
        ops::yw2y(&s, op, &a, None, 1.0, &yv, 0.0, &out).unwrap();
        for &j in &entries {
            let (i, t) = (j / PER_ROW, j % PER_ROW);
            let at = if op == Op::N { i } else { column(i, t) };
            assert_eq!(read_one::<f32>(&s, &out, j), weight(j) * by(at), "yw2y {op:?}, entry {j}");
        }
    }
    lap("yw2y N and T", &mut clock);

    // the weights as a vector of nnz elements
    let w = a.hetero_weights("weights").unwrap();
    assert_eq!(w.numel(), nnz);
    assert!(entries.iter().all(|&j| read_one::<f32>(&s, w, j) == weight(j)));
}
