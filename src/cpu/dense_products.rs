//! The fast CPU path of dense mv / mm (SPEC §3) on sparse inputs: only the input's nonzeros
//! (its events, or the non-zero floats) are visited, so a step with 1% of neurons spiking
//! costs 1% of the dense product. The reference it is tested against is `dense::dense_mm`.

use super::products::{prefetch, SharedRows};
use super::{counts_of, dense, event_value, gemm_update, pack_into, with_input, worth_sharing, Blend, PerThread};
use crate::core::context::Stream;
use crate::core::dense::Dense;
use crate::core::plan::{self, decide, Backend, DenseMm};
use crate::core::{InputKind, Op};
use crate::dtype::{with_event, with_float, Acc, DType, Float};
use crate::error::Result;
use rayon::prelude::*;

/// One dense product: `C = alpha·op(W)·S + beta·C`, its arguments checked.
pub struct DenseProduct<'a> {
    pub op: Op,
    pub kind: InputKind,
    pub alpha: f64,
    pub w: &'a Dense,
    pub s: &'a Dense,
    pub beta: f64,
    pub c: &'a Dense,
}

/// dense mv / mm on a CPU context, with the algorithm the plan picks.
pub fn dense_mm(st: &Stream, p: &DenseProduct) -> Result<()> {
    with_float!(p.w.dtype, T => dense_mm_typed::<T>(st, p))
}

/// The input's nonzeros, grouped by column: column j's are at `start[j]..start[j + 1]`, each
/// an input row and its value, rows ascending.
#[derive(Default)]
pub struct Nonzeros<A> {
    start: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<A>,
    /// Events as 0/1 values for the GEMM path.
    packed: Vec<A>,
    /// N's blocks of input rows (`split_rows`): block b of column j is at
    /// `block_start[b·n + j]..block_start[(b + 1)·n + j]`.
    block_start: Vec<usize>,
    block_rows: usize,
}

fn dense_mm_typed<T: Float>(st: &Stream, p: &DenseProduct) -> Result<()>
where
    T::Acc: PerThread,
{
    let reference = || st.ctx.run(|| dense::dense_mm(p.op, p.kind, p.alpha, p.w, p.s, p.beta, p.c));
    T::Acc::with_scratch(|scratch| {
        let nz = &mut scratch.nonzeros;
        let nonzeros = with_input!(p.s.dtype, p.kind, T, f => nz.count(p.s, f));
        let chosen = plan::choose_dense_mm_cpu(nonzeros, p.s.rows * p.s.cols, T::DTYPE);
        let gemm_fits = matches!(T::DTYPE, DType::F32 | DType::F64);
        let fits = |alg| alg != DenseMm::Gemm || gemm_fits;
        match decide(&st.ctx.forced, Backend::Cpu, chosen, fits)? {
            DenseMm::InputNonzeros => {
                with_input!(p.s.dtype, p.kind, T, f => nz.fill(p.s, f));
                nonzero_product::<T>(st, nz, p);
                Ok(())
            }
            DenseMm::Gemm if ieee_in_gemm(p) => gemm_product::<T>(st, &mut nz.packed, p),
            _ => reference(),
        }
    })
}

/// Whether the GEMM kernels give what the reference's IEEE arithmetic gives (alpha times the
/// finished sum, beta times the old value): not for an empty product (they leave beta·C where
/// NaN alpha times the empty sum is NaN) nor for non-finite scalars (they scale partial sums).
fn ieee_in_gemm(p: &DenseProduct) -> bool {
    let k = if p.op == Op::N { p.w.cols } else { p.w.rows };
    k > 0 && p.alpha.is_finite() && p.beta.is_finite()
}

/// dense mv on a spike list (checked against the neurons) on a CPU context: only the listed
/// rows (T) or columns (N) of W are read; the reference reads the list as a vector of counts.
pub fn dense_mv_spikes(st: &Stream, op: Op, alpha: f64, w: &Dense, listed: &[u32], beta: f64, c: &Dense) -> Result<()> {
    with_float!(w.dtype, T => dense_mv_spikes_typed::<T>(st, op, alpha, w, listed, beta, c))
}

fn dense_mv_spikes_typed<T: Float>(
    st: &Stream,
    op: Op,
    alpha: f64,
    w: &Dense,
    listed: &[u32],
    beta: f64,
    c: &Dense,
) -> Result<()>
where
    T::Acc: PerThread,
{
    let fits = |alg| matches!(alg, DenseMm::InputNonzeros | DenseMm::Reference);
    if decide(&st.ctx.forced, Backend::Cpu, DenseMm::InputNonzeros, fits)? == DenseMm::Reference {
        let counts = counts_of(st, listed, if op == Op::N { w.cols } else { w.rows }, w.dtype)?;
        return st.ctx.run(|| dense::dense_mm(op, InputKind::Float, alpha, w, &counts, beta, c));
    }
    T::Acc::with_scratch(|scratch| {
        let nz = &mut scratch.nonzeros;
        nz.list(listed);
        // the nonzeros come from the list; s is never read
        nonzero_product::<T>(st, nz, &DenseProduct { op, kind: InputKind::Events, alpha, w, s: c, beta, c });
        Ok(())
    })
}

impl<A: Acc> Nonzeros<A> {
    /// One input column whose nonzeros are the listed rows, each 1.
    fn list(&mut self, listed: &[u32]) {
        self.start.clear();
        self.start.extend([0, listed.len()]);
        self.rows.clear();
        self.rows.extend_from_slice(listed);
        self.values.clear();
        self.values.resize(listed.len(), A::ONE);
    }

    /// Counts the nonzeros of S (k x n) per column, under `f`; returns their number. The
    /// chooser needs only this; `fill` lists them.
    fn count<E: Copy>(&mut self, s: &Dense, f: impl Fn(E) -> A) -> usize {
        let n = s.cols;
        self.start.clear();
        self.start.resize(n + 2, 0);
        for row in rows_of::<E>(s) {
            for (j, &v) in row.iter().enumerate() {
                self.start[j + 2] += (f(v) != A::ZERO) as usize;
            }
        }
        for j in 0..n {
            self.start[j + 2] += self.start[j + 1];
        }
        self.start[n + 1]
    }

    /// Lists the nonzeros that `count` (with the same `f`) counted, by column.
    fn fill<E: Copy>(&mut self, s: &Dense, f: impl Fn(E) -> A) {
        let (n, total) = (s.cols, self.start[s.cols + 1]);
        self.rows.resize(total, 0);
        self.values.resize(total, A::ZERO);
        // start[j + 1] runs from column j's first slot to its end: afterwards start[j] is j's first
        for (r, row) in rows_of::<E>(s).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let v = f(v);
                if v != A::ZERO {
                    let slot = &mut self.start[j + 1];
                    self.rows[*slot] = r as u32;
                    self.values[*slot] = v;
                    *slot += 1;
                }
            }
        }
        self.start.truncate(n + 1);
    }

    /// Splits each column's nonzeros at every `block_rows` input rows of [0, k) (one block of
    /// all k where a column's rows are not ascending: a caller's unsorted spike list).
    fn split_rows(&mut self, block_rows: usize, k: usize) {
        let n = self.start.len() - 1;
        let ascending = (0..n).all(|j| self.rows[self.start[j]..self.start[j + 1]].windows(2).all(|p| p[0] <= p[1]));
        self.block_rows = if ascending { block_rows.max(1) } else { k.max(1) };
        let blocks = k.div_ceil(self.block_rows);
        self.block_start.clear();
        for b in 0..=blocks {
            let bound = (b * self.block_rows) as u32;
            for j in 0..n {
                let column = &self.rows[self.start[j]..self.start[j + 1]];
                let first = if b == blocks { column.len() } else { column.partition_point(|&r| r < bound) };
                self.block_start.push(self.start[j] + first);
            }
        }
    }

    /// The rows and values of column j's nonzeros in input-row block b.
    fn block(&self, b: usize, j: usize) -> (&[u32], &[A]) {
        let n = self.start.len() - 1;
        let q = self.block_start[b * n + j]..self.block_start[(b + 1) * n + j];
        (&self.rows[q.clone()], &self.values[q])
    }
}

/// The rows of S (k x n), each trimmed to its n columns.
fn rows_of<'a, E: 'a>(s: &'a Dense) -> impl Iterator<Item = &'a [E]> + 'a {
    // SAFETY: callers pick E from s.dtype; host memory.
    let data = unsafe { s.slice::<E>() };
    (0..s.rows).filter(move |_| s.cols > 0).map(move |r| &data[r * s.ld..][..s.cols])
}

/// Output rows a task takes.
const ROWS_PER_TASK: usize = 64;

/// Output rows N sums at once: independent chains of additions, each in the reference's order
/// (a single row's sum waits on the adder's latency at every nonzero).
const ROWS_AT_ONCE: usize = 8;

/// Bytes of each of N's ROWS_AT_ONCE rows of W read per block of input rows: the block's 8 x 2
/// KB stay in L1 while every column's nonzeros in it gather from them (whole rows, 8 x 8 KB at
/// 2,000 columns, spilled to L2: bench/NOTES.md).
const W_BLOCK_BYTES: usize = 2048;

/// `sums[t] += W[row t, r] · v` over the nonzeros (r, v) of one input column in one block of
/// input rows starting at r0, for `R` rows of W at once (`w_rows`: the block's part of each).
#[inline(always)]
fn gather_rows<T: Float, const R: usize>(
    w_rows: &[&[T]; R],
    (rows, values): (&[u32], &[T::Acc]),
    r0: usize,
    sums: &mut [T::Acc],
) {
    let mut acc: [T::Acc; R] = std::array::from_fn(|t| sums[t]);
    for (&r, &v) in rows.iter().zip(values) {
        let r = r as usize - r0;
        for t in 0..R {
            acc[t] = acc[t] + w_rows[t][r].to_acc() * v;
        }
    }
    sums[..R].copy_from_slice(&acc);
}

/// N for the output rows i..i + R: the input rows a block at a time, every column's sums of
/// the R rows kept in `sums` (R per column) and blended into C at the end.
fn n_rows<'w, T: Float + 'w, const R: usize>(
    nz: &Nonzeros<T::Acc>,
    w_row: impl Fn(usize) -> &'w [T],
    i: usize,
    sums: &mut Vec<T::Acc>,
    mut store: impl FnMut(usize, usize, T::Acc),
) {
    let n = nz.start.len() - 1;
    sums.clear();
    sums.resize(R * n, T::Acc::ZERO);
    let rows: [&[T]; R] = std::array::from_fn(|t| w_row(i + t));
    let k = rows[0].len();
    for (b, r0) in (0..k).step_by(nz.block_rows).enumerate() {
        let r1 = (r0 + nz.block_rows).min(k);
        let w_rows: [&[T]; R] = std::array::from_fn(|t| &rows[t][r0..r1]);
        for j in 0..n {
            gather_rows::<T, R>(&w_rows, nz.block(b, j), r0, &mut sums[j * R..]);
        }
    }
    for j in 0..n {
        (0..R).for_each(|t| store(i + t, j, sums[j * R + t]));
    }
}

/// `C = alpha·op(W)·S + beta·C` over S's nonzeros. N: each output row i gathers `W[i, r]` at the
/// rows r of a column's nonzeros (W's row i stays in L1). T: output column j adds the rows
/// `W[r, :]` of its nonzeros into an accumulator, with the machine's SIMD width.
fn nonzero_product<T: Float>(st: &Stream, nz: &mut Nonzeros<T::Acc>, p: &DenseProduct)
where
    T::Acc: PerThread,
{
    if p.op == Op::N {
        nz.split_rows(W_BLOCK_BYTES / std::mem::size_of::<T>(), p.w.cols);
    }
    let nz = &*nz;
    let (w, c) = (p.w, p.c);
    let (m, n) = (c.rows, c.cols);
    let blend = Blend::<T::Acc>::new(p.alpha, p.beta);
    // SAFETY: T is the dtype of W and C (checked by the op); host memory, C written at disjoint
    // rows (N) or columns (T) by the tasks below.
    let (ws, out) = unsafe { (w.slice::<T>(), c.slice_mut::<T>()) };
    let out = SharedRows::new(out);
    let work = nz.rows.len() * m;
    let parallel = worth_sharing(st, work);
    match p.op {
        Op::N => {
            let task = |t: usize| {
                let rows = t * ROWS_PER_TASK..((t + 1) * ROWS_PER_TASK).min(m);
                // SAFETY (out.part): task t alone writes output rows t·ROWS_PER_TASK.. (see above).
                let store =
                    |i: usize, j: usize, v| blend.store(&mut unsafe { out.part(i * c.ld + j, i * c.ld + j + 1) }[0], v);
                // a W without columns spans no memory at all
                let w_row = |i: usize| ws.get(i * w.ld..).map_or(&[][..], |row| &row[..w.cols]);
                T::Acc::with_task_buffer(|sums| {
                    let mut i = rows.start;
                    while i + ROWS_AT_ONCE <= rows.end {
                        n_rows::<T, ROWS_AT_ONCE>(nz, w_row, i, sums, store);
                        i += ROWS_AT_ONCE;
                    }
                    (i..rows.end).for_each(|i| n_rows::<T, 1>(nz, w_row, i, sums, store));
                })
            };
            let tasks = m.div_ceil(ROWS_PER_TASK);
            if parallel {
                st.ctx.run(|| (0..tasks).into_par_iter().for_each(task));
            } else {
                (0..tasks).for_each(task);
            }
        }
        Op::T => {
            let task = |j: usize| {
                T::Acc::with_task_buffer(|acc| {
                    acc.clear();
                    acc.resize(m, T::Acc::ZERO);
                    add_rows::<T>(acc, nz, j, ws, w.ld);
                    for (i, &v) in acc.iter().enumerate() {
                        // SAFETY: task j alone writes output column j.
                        blend.store(&mut unsafe { out.part(i * c.ld + j, i * c.ld + j + 1) }[0], v);
                    }
                })
            };
            if parallel {
                st.ctx.run(|| (0..n).into_par_iter().for_each(task));
            } else {
                (0..n).for_each(task);
            }
        }
    }
}

/// `acc += v · W[r, :]` for the nonzeros (r, v) of column j, rows fetched two ahead.
#[multiversion::multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn add_rows<T: Float>(acc: &mut [T::Acc], nz: &Nonzeros<T::Acc>, j: usize, ws: &[T], ld: usize) {
    let m = acc.len();
    if m == 0 {
        return; // no outputs, and a W without columns spans no memory at all
    }
    let range = nz.start[j]..nz.start[j + 1];
    for q in range.clone() {
        if q + 2 < range.end {
            prefetch(&ws[nz.rows[q + 2] as usize * ld..][..m]);
        }
        let (r, v) = (nz.rows[q] as usize, nz.values[q]);
        acc.iter_mut().zip(&ws[r * ld..][..m]).for_each(|(a, &x)| *a = *a + x.to_acc() * v);
    }
}

/// `C = alpha·op(W)·S + beta·C` through the gemm crate's micro-kernels (f32/f64: W's dtype is its
/// own accumulator), S read in place when it holds floats, else packed as 0/1 values.
fn gemm_product<T: Float>(st: &Stream, packed: &mut Vec<T::Acc>, p: &DenseProduct) -> Result<()> {
    let (w, s, c) = (p.w, p.s, p.c);
    let (m, n, k) = (c.rows, c.cols, s.rows);
    // SAFETY: the plan runs this for f32/f64, whose values are their accumulator type; host
    // memory; C does not overlap W or S (checked by the op).
    let (ws, out) = unsafe { (w.slice::<T::Acc>(), c.slice_mut::<T::Acc>()) };
    let (x, ldx) = match p.kind {
        InputKind::Float => (unsafe { s.slice::<T::Acc>() }, s.ld),
        InputKind::Events => {
            packed.clear();
            with_event!(s.dtype, E => pack_into(s, packed, event_value::<E, T::Acc>));
            (&packed[..], n)
        }
    };
    // N: W is m x k; T: W is k x m, read transposed
    let (w_rs, w_cs) = if p.op == Op::N { (w.ld as isize, 1) } else { (1, w.ld as isize) };
    let threads = if m * n * k < plan::CPU.inline_work_max { 1 } else { st.ctx.threads() };
    let (beta, alpha) = (T::Acc::cast(p.beta), T::Acc::cast(p.alpha));
    let mut call = move || {
        let (c_strided, op_w) = ((out.as_mut_ptr(), c.ld as isize, 1), (ws.as_ptr(), w_rs, w_cs));
        // SAFETY: C is m x n at stride c.ld, op(W) m x k at (w_rs, w_cs), S k x n at stride ldx.
        unsafe {
            gemm_update((m, n, k), c_strided, p.beta != 0.0, op_w, (x.as_ptr(), ldx as isize, 1), beta, alpha, threads)
        }
    };
    if threads > 1 {
        st.ctx.run(call);
    } else {
        call();
    }
    Ok(())
}
