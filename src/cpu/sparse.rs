//! CSR operations: spmv/spmm, yw2y, plasticity, analysis and CSR -> CSC.

use super::products::{balanced, with_active_indices, Lines, SharedRows};
use super::{
    for_each_item, listed_mask, live_rows, load_input, pack_into, packed, par_rows_mut, worth_sharing, Blend,
    PerThread, Rule, MIN_ROWS_PER_TASK, SPARSE_WORK,
};
use crate::core::context::Stream;
use crate::core::csr::{with_index, Analysis, Csr, CsrView, Index, Weights};
use crate::core::dense::Dense;
use crate::core::spikes::HostSpikes;
use crate::core::{InputKind, Op};
use crate::dtype::{with_float, Acc, DType, Float};
use crate::error::Result;
use rayon::prelude::*;

/// Per-entry weights in accumulator precision.
pub(super) enum EntryWeights<'a, T: Float> {
    Homo(T::Acc),
    Hetero(&'a [T]),
}

impl<T: Float> EntryWeights<'_, T> {
    pub(super) fn of(a: &Csr) -> EntryWeights<'_, T> {
        match &a.weights {
            Weights::Homo(v) => EntryWeights::Homo(T::Acc::cast(*v)),
            // SAFETY: T is the csr dtype; CPU arrays are host memory.
            Weights::Hetero(w) => EntryWeights::Hetero(unsafe { w.slice::<T>() }),
        }
    }

    /// Asks for the cache line of weight `j` (heterogeneous weights).
    #[inline]
    pub(super) fn prefetch(&self, j: usize) {
        self.prefetch_range(j..j + 1);
    }

    /// Asks for the cache lines of weights `range` (heterogeneous weights).
    #[inline]
    pub(super) fn prefetch_range(&self, range: std::ops::Range<usize>) {
        if let EntryWeights::Hetero(w) = self {
            super::products::prefetch(&w[range]);
        }
    }

    #[inline]
    pub(super) fn at(&self, j: usize) -> T::Acc {
        match self {
            EntryWeights::Homo(v) => *v,
            EntryWeights::Hetero(w) => w[j].to_acc(),
        }
    }
}

/// Builds the CSC mirror and the row of every entry.
pub fn analyse<P: Index>(a: &CsrView<P>) -> Analysis {
    let (colptr, rowind, perm) = csc_mirror(a);
    let mut row_of = vec![0u32; a.indices.len()];
    let rows = SharedRows::new(&mut row_of);
    (0..a.m).into_par_iter().with_min_len(MIN_ROWS_PER_TASK).for_each(|i| {
        let span = a.row(i);
        // SAFETY: each row writes its own entries' slots.
        unsafe { rows.part(span.start, span.end) }.fill(i as u32);
    });
    Analysis { colptr, rowind, perm, row_of }
}

/// The CSC mirror (column pointers, each entry's row, each entry's CSR position) by a stable
/// counting sort over columns, in parallel: the rows split into parts of about equal entries,
/// each part counts its entries per column, then scatters them into the slots after the earlier
/// parts' (rows stay in order within a column). The parts' counts (parts x k) stay within the
/// entries' count, so a wide matrix with few entries sorts in fewer parts.
pub fn csc_mirror<P: Index>(a: &CsrView<P>) -> (Vec<usize>, Vec<u32>, Vec<usize>) {
    let nnz = a.indices.len();
    let parts = rayon::current_num_threads().min(nnz / (a.k + 1)).max(1);
    let rows: Vec<std::ops::Range<usize>> = (0..parts).map(|p| balanced(a, parts, p)).collect();
    let mut next: Vec<Vec<usize>> = rows
        .par_iter()
        .map(|part| {
            let mut counts = vec![0usize; a.k];
            let entries = a.offset(part.start)..a.offset(part.end);
            a.indices[entries].iter().for_each(|&c| counts[c as usize] += 1);
            counts
        })
        .collect();
    let mut colptr = vec![0usize; a.k + 1];
    for c in 0..a.k {
        let mut at = colptr[c];
        for part in next.iter_mut() {
            (part[c], at) = (at, at + part[c]); // a part's first slot in column c
        }
        colptr[c + 1] = at;
    }
    let (mut rowind, mut perm) = (vec![0u32; nnz], vec![0usize; nnz]);
    let (row_out, positions) = (SharedRows::new(&mut rowind), SharedRows::new(&mut perm));
    next.into_par_iter().zip(rows).for_each(|(mut next, part)| {
        for i in part {
            for j in a.row(i) {
                let slot = &mut next[a.indices[j] as usize];
                // SAFETY: a part alone writes its slots of each column (counted above).
                unsafe { (row_out.write(*slot, i as u32), positions.write(*slot, j)) };
                *slot += 1;
            }
        }
    });
    (colptr, rowind, perm)
}

/// N: `y[i,:] = Σ_{j in row i} w_j x[indices[j],:]`; T: `y[c,:] = Σ_{indices[j]=c} w_j x[row(j),:]`.
/// A vector is the one-column case.
pub fn spmm(op: Op, kind: InputKind, alpha: f64, a: &Csr, x: &Dense, beta: f64, y: &Dense) -> Result<()> {
    with_float!(a.dtype, T => spmm_typed::<T>(op, kind, alpha, a, x, beta, y))
}

fn spmm_typed<T: Float>(op: Op, kind: InputKind, alpha: f64, a: &Csr, x: &Dense, beta: f64, y: &Dense) -> Result<()> {
    with_index!(a.index, P => {
        let xs = load_input::<T>(x, kind)?;
        let w = EntryWeights::<T>::of(a);
        let blend = Blend::new(alpha, beta);
        let n = y.cols;
        // SAFETY: T is y's dtype (checked by the op), P the index type; host memory.
        let (out, view) = unsafe { (y.slice_mut::<T>(), a.view::<P>()) };
        match op {
            Op::N => par_rows_mut(out, y.ld, n).enumerate().for_each_init(
                || vec![T::Acc::ZERO; n],
                |acc, (i, row)| {
                    acc.fill(T::Acc::ZERO);
                    for j in view.row(i) {
                        axpy(acc, w.at(j), &xs[view.indices[j] as usize * n..][..n]);
                    }
                    row.iter_mut().zip(acc.iter()).for_each(|(o, &r)| blend.store(o, r));
                },
            ),
            Op::T => {
                let live = live_rows(&xs, a.m, n);
                if live.iter().map(|&r| view.row(r).len()).sum::<usize>() * SPARSE_WORK < a.nnz {
                    // Event-driven: scatter the rows of live events only. Per column, entries
                    // add up in the same order as in the CSC pass below (rows ascending).
                    let mut acc = vec![T::Acc::ZERO; a.k * n];
                    for &r in &live {
                        for j in view.row(r) {
                            axpy(&mut acc[view.indices[j] as usize * n..][..n], w.at(j), &xs[r * n..][..n]);
                        }
                    }
                    par_rows_mut(out, y.ld, n).enumerate().for_each(|(c, row)| {
                        row.iter_mut().zip(&acc[c * n..][..n]).for_each(|(o, &r)| blend.store(o, r))
                    });
                    return Ok(());
                }
                let an = a.analysis();
                par_rows_mut(out, y.ld, n).enumerate().for_each_init(
                    || vec![T::Acc::ZERO; n],
                    |acc, (c, row)| {
                        acc.fill(T::Acc::ZERO);
                        for p in an.colptr[c]..an.colptr[c + 1] {
                            axpy(acc, w.at(an.perm[p]), &xs[an.rowind[p] as usize * n..][..n]);
                        }
                        row.iter_mut().zip(acc.iter()).for_each(|(o, &r)| blend.store(o, r));
                    },
                )
            }
        }
        Ok(())
    })
}

#[inline]
fn axpy<A: Acc>(acc: &mut [A], w: A, x: &[A]) {
    acc.iter_mut().zip(x).for_each(|(a, &v)| *a = *a + w * v);
}

/// N: `out[b,j] = w_j y[b,row(j)]`; T: `out[b,j] = w_j y[b,indices[j]]`, with per-batch
/// weights `bw[b,j]` replacing w_j when given. A 1-D y and out are the one-batch case.
/// Runs on the calling thread, sharing the entries among the context's threads where there
/// are many.
#[allow(clippy::too_many_arguments)]
pub fn yw2y(
    st: &Stream,
    op: Op,
    a: &Csr,
    batch_weights: Option<&Dense>,
    alpha: f64,
    y: &Dense,
    beta: f64,
    out: &Dense,
) -> Result<()> {
    with_float!(a.dtype, T => yw2y_typed::<T>(st, op, a, batch_weights, alpha, y, beta, out))
}

/// Entries a task of yw2y takes.
const YW2Y_TASK: usize = 4096;

#[allow(clippy::too_many_arguments)]
fn yw2y_typed<T: Float>(
    st: &Stream,
    op: Op,
    a: &Csr,
    batch_weights: Option<&Dense>,
    alpha: f64,
    y: &Dense,
    beta: f64,
    out: &Dense,
) -> Result<()>
where
    T::Acc: PerThread,
{
    // y and the batch weights in accumulator precision, in this thread's reused buffers
    T::Acc::with_scratch(|scratch| {
        let (ys, bws) = (&mut scratch.y, &mut scratch.batch_weights);
        ys.clear();
        pack_into::<T, _>(y, ys, Float::to_acc);
        if let Some(bw) = batch_weights {
            bws.clear();
            pack_into::<T, _>(bw, bws, Float::to_acc);
        }
        yw2y_packed::<T>(st, op, a, batch_weights.map(|_| &bws[..]), alpha, (y, ys), beta, out)
    })
}

/// yw2y with y (and the batch weights) packed in accumulator precision.
#[allow(clippy::too_many_arguments)]
fn yw2y_packed<T: Float>(
    st: &Stream,
    op: Op,
    a: &Csr,
    bws: Option<&[T::Acc]>,
    alpha: f64,
    (y, ys): (&Dense, &[T::Acc]),
    beta: f64,
    out: &Dense,
) -> Result<()> {
    let (batches, len) = if y.ndim == 1 { (1, y.rows) } else { (y.rows, y.cols) };
    let w = EntryWeights::<T>::of(a);
    let blend = Blend::new(alpha, beta);
    // SAFETY: T is the csr dtype, shared by y and out (checked by the op); host memory.
    let outs = unsafe { out.slice_mut::<T>() };
    // The element of y each entry reads: its row (N) or its column (T), read in place.
    let (rows, cols): (&[u32], &[i32]) = match op {
        Op::N => (&a.analysis().row_of, &[]),
        // SAFETY: P is the index type; host memory.
        Op::T => (&[], with_index!(a.index, P => unsafe { a.view::<P>() }.indices)),
    };
    let source = |j: usize| if op == Op::N { rows[j] as usize } else { cols[j] as usize };
    let (out_ld, out_cols) = if out.ndim == 1 { (a.nnz, a.nnz) } else { (out.ld, out.cols) };
    let parallel = worth_sharing(st, batches * a.nnz);
    for b in (0..batches).filter(|_| a.nnz > 0) {
        let yb = &ys[b * len..][..len];
        let row = &mut outs[b * out_ld..][..out_cols];
        for_each_item(st, parallel, row.chunks_mut(YW2Y_TASK), 1, |task, chunk| {
            for (j, o) in (task * YW2Y_TASK..).zip(chunk) {
                let wj = match bws {
                    Some(bw) => bw[b * a.nnz + j],
                    None => w.at(j),
                };
                blend.store(o, wj * yb[source(j)]);
            }
        });
    }
    Ok(())
}

/// Splits hetero weights into one mutable slice per row, so rows update in parallel.
fn weight_rows<'a, T, P: Index>(view: &'a CsrView<P>, mut w: &'a mut [T]) -> impl Iterator<Item = &'a mut [T]> {
    (0..view.m).map(move |i| {
        let (row, rest) = std::mem::take(&mut w).split_at_mut(view.row(i).len());
        w = rest;
        row
    })
}

/// pre (`post = false`): for active row i, `w_j = clip(w_j + trace[indices[j]])`.
/// post: for every entry whose column c is active, `w_j = clip(w_j + trace[row(j)])`.
/// Spikes are an event vector or a checked spike list, applied once per occurrence.
/// Runs on the calling thread, sharing the rows among the context's threads where A is large.
pub fn csr_plasticity(st: &Stream, a: &Csr, spikes: HostSpikes, rule: Rule) -> Result<()> {
    with_float!(a.dtype, T => match spikes {
        HostSpikes::Events(spikes) => csr_plasticity_typed::<T>(st, a, spikes, rule),
        HostSpikes::Listed(listed) => csr_plasticity_listed::<T>(a, listed, rule),
    })
}

/// The rule for the listed neurons, walking their rows (pre) or CSC columns (post): work in
/// proportion to their synapses (the trace is read where an entry needs it, not packed).
fn csr_plasticity_listed<T: Float>(a: &Csr, listed: &[u32], rule: Rule) -> Result<()> {
    let weights = a.hetero_weights("plasticity")?;
    let clip = rule.clip::<T::Acc>();
    // SAFETY: T is the weight dtype, shared by the trace (checked by the op); host memory.
    let (ws, trace) = unsafe { (weights.slice_mut::<T>(), rule.trace.slice::<T>()) };
    let tr = |i: usize| trace[i * rule.trace.ld].to_acc();
    if rule.post {
        let an = a.analysis();
        for &c in listed {
            for p in an.colptr[c as usize]..an.colptr[c as usize + 1] {
                clip.add(&mut ws[an.perm[p]], tr(an.rowind[p] as usize));
            }
        }
        return Ok(());
    }
    with_index!(a.index, P => {
        // SAFETY: P is the index type; host memory.
        let view = unsafe { a.view::<P>() };
        for &i in listed {
            for p in view.row(i as usize) {
                clip.add(&mut ws[p], tr(view.indices[p] as usize));
            }
        }
    });
    Ok(())
}

/// The stored entries the listed rows (pre) or columns (post) hold.
fn reached_by(post: bool, a: &Csr, listed: &[u32]) -> usize {
    if post {
        let an = a.analysis();
        return listed.iter().map(|&c| an.colptr[c as usize + 1] - an.colptr[c as usize]).sum();
    }
    // SAFETY: P is the index type; host memory.
    with_index!(a.index, P => { let view = unsafe { a.view::<P>() }; listed.iter().map(|&i| view.row(i as usize).len()).sum() })
}

fn csr_plasticity_typed<T: Float>(st: &Stream, a: &Csr, spikes: &Dense, rule: Rule) -> Result<()> {
    let active = with_active_indices(spikes, |listed| {
        if reached_by(rule.post, a, listed) * SPARSE_WORK < a.nnz {
            // Event-driven: the active neurons as a spike list (post through the CSC mirror).
            csr_plasticity_listed::<T>(a, listed, rule)?;
            return Ok(None);
        }
        Ok(Some(listed_mask(listed, spikes.rows)))
    })?;
    let Some(active) = active else { return Ok(()) }; // done, event-driven
    let weights = a.hetero_weights("plasticity")?;
    with_index!(a.index, P => {
        let (tr, clip) = (packed::<T, T::Acc>(rule.trace, Float::to_acc), rule.clip::<T::Acc>());
        // SAFETY: T is the weight dtype, P the index type; host memory.
        let (view, ws) = unsafe { (a.view::<P>(), weights.slice_mut::<T>()) };
        let cols = &view.indices;
        let parallel = worth_sharing(st, a.nnz + a.m);
        for_each_item(st, parallel, weight_rows(&view, ws), MIN_ROWS_PER_TASK, |i, row| {
            let cols = &cols[view.row(i).start..][..row.len()];
            if rule.post {
                for (w, &c) in row.iter_mut().zip(cols) {
                    if active[c as usize] {
                        clip.add(w, tr[i]);
                    }
                }
            } else if active[i] {
                for (w, &c) in row.iter_mut().zip(cols) {
                    clip.add(w, tr[c as usize]);
                }
            }
        });
        Ok(())
    })
}

/// Writes the CSC mirror: column pointers, row indices, and the CSR position of each entry.
pub fn csr_to_csc(a: &Csr, colptr: &Dense, rowind: &Dense, perm: &Dense) -> Result<()> {
    let an = a.analysis();
    write_ints(colptr, &an.colptr);
    write_ints(rowind, &an.rowind.iter().map(|&r| r as usize).collect::<Vec<_>>());
    write_ints(perm, &an.perm);
    Ok(())
}

/// Stores usize values into an int32 or int64 vector (the op checked that they fit).
fn write_ints(dst: &Dense, values: &[usize]) {
    // SAFETY: the element type follows dst.dtype; host memory.
    unsafe {
        match dst.dtype {
            DType::I32 => dst.slice_mut::<i32>().iter_mut().zip(values).for_each(|(d, &v)| *d = v as i32),
            _ => dst.slice_mut::<i64>().iter_mut().zip(values).for_each(|(d, &v)| *d = v as i64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mirror as a plain stable sort of the entries by column would give it.
    fn sorted_mirror(view: &CsrView<i64>) -> (Vec<usize>, Vec<u32>, Vec<usize>) {
        let mut entries: Vec<(usize, u32, usize)> =
            (0..view.m).flat_map(|i| view.row(i).map(move |j| (view.indices[j] as usize, i as u32, j))).collect();
        entries.sort_by_key(|&(c, _, _)| c); // stable: rows stay in order within a column
        let mut colptr = vec![0; view.k + 1];
        entries.iter().for_each(|&(c, _, _)| colptr[c + 1] += 1);
        (0..view.k).for_each(|c| colptr[c + 1] += colptr[c]);
        (colptr, entries.iter().map(|e| e.1).collect(), entries.iter().map(|e| e.2).collect())
    }

    #[test]
    fn csc_mirror_is_the_stable_sort_by_column_for_any_number_of_parts() {
        let mut below = super::super::test_rng(0x9e37_79b9_7f4a_7c15u64);
        // (rows, columns, most entries a row): many short rows, few long ones, wide and narrow
        for (m, k, longest) in [(0, 3, 0), (5, 1, 4), (200, 7, 30), (64, 5000, 3), (300, 40, 200), (1, 9, 50)] {
            let mut indptr = vec![0i64];
            let mut indices = Vec::new();
            for _ in 0..m {
                let len = if below(4) == 0 { 0 } else { below(longest + 1) }; // empty rows too
                indices.extend((0..len).map(|_| below(k) as i32)); // unsorted, duplicates
                indptr.push(indices.len() as i64);
            }
            let view = CsrView { m, k, indptr: &indptr, indices: &indices };
            for threads in [1, 2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                assert_eq!(pool.install(|| csc_mirror(&view)), sorted_mirror(&view), "m {m}, k {k}, {threads} threads");
            }
        }
    }
}
