//! Dense-weight operations: event/float matrix products and plasticity.

use super::products::with_active_indices;
use super::{
    for_each_item, listed_mask, live_rows, load_input, packed, par_rows_mut, rows_mut, worth_sharing, Blend, Rule,
    MIN_ROWS_PER_TASK,
};
use crate::core::context::Stream;
use crate::core::dense::Dense;
use crate::core::spikes::HostSpikes;
use crate::core::{InputKind, Op};
use crate::dtype::{with_float, Acc, Float};
use crate::error::Result;
use rayon::prelude::*;

/// N: `C = W · e(S)` with W m x k; T: `C = Wᵀ · e(S)` with W k x m. S is k x n (a vector is
/// n = 1). Rows of S that are all zero are skipped: that is where events pay off.
pub fn dense_mm(op: Op, kind: InputKind, alpha: f64, w: &Dense, s: &Dense, beta: f64, c: &Dense) -> Result<()> {
    with_float!(w.dtype, T => dense_mm_typed::<T>(op, kind, alpha, w, s, beta, c))
}

fn dense_mm_typed<T: Float>(
    op: Op,
    kind: InputKind,
    alpha: f64,
    w: &Dense,
    s: &Dense,
    beta: f64,
    c: &Dense,
) -> Result<()> {
    let xs = load_input::<T>(s, kind)?;
    let n = c.cols;
    let k = if op == Op::N { w.cols } else { w.rows };
    let live = live_rows(&xs, k, n);
    let blend = Blend::new(alpha, beta);
    // SAFETY: T is the dtype of w and c (checked by the op); host memory.
    let (ws, out) = unsafe { (w.slice::<T>(), c.slice_mut::<T>()) };
    let weight = |i: usize, r: usize| match op {
        Op::N => ws[i * w.ld + r].to_acc(),
        Op::T => ws[r * w.ld + i].to_acc(),
    };
    par_rows_mut(out, c.ld, n).enumerate().for_each_init(
        || vec![T::Acc::ZERO; n],
        |acc, (i, row)| {
            acc.fill(T::Acc::ZERO);
            for &r in &live {
                let wv = weight(i, r);
                acc.iter_mut().zip(&xs[r * n..][..n]).for_each(|(a, &v)| *a = *a + wv * v);
            }
            row.iter_mut().zip(acc.iter()).for_each(|(o, &v)| blend.store(o, v));
        },
    );
    Ok(())
}

/// pre (`post = false`): `W[i,:] = clip(W[i,:] + trace)` for active i;
/// post: `W[:,c] = clip(W[:,c] + trace)` for active c. Spikes are an event vector or a checked
/// spike list, applied once per occurrence.
/// Runs on the calling thread, sharing the rows among the context's threads where W is large.
pub fn dense_plasticity(st: &Stream, w: &Dense, spikes: HostSpikes, rule: Rule) -> Result<()> {
    let parallel = worth_sharing(st, w.rows * w.cols);
    with_float!(w.dtype, T => match spikes {
        HostSpikes::Events(spikes) => dense_plasticity_typed::<T>(st, parallel, w, spikes, rule),
        HostSpikes::Listed(listed) => dense_plasticity_listed::<T>(st, parallel, w, listed, rule),
    })
}

/// The rule for the listed rows (pre) or columns (post) of W.
fn dense_plasticity_listed<T: Float>(st: &Stream, parallel: bool, w: &Dense, listed: &[u32], rule: Rule) -> Result<()> {
    if w.cols == 0 {
        return Ok(()); // no weights, and a W without columns spans no memory at all
    }
    let clip = rule.clip::<T::Acc>();
    // SAFETY: T is w's dtype, shared by the trace (checked by the op); host memory.
    let (ws, trace) = unsafe { (w.slice_mut::<T>(), rule.trace.slice::<T>()) };
    let tr = |i: usize| trace[i * rule.trace.ld].to_acc(); // read in place: nothing to allocate
    if rule.post {
        for_each_item(st, parallel, rows_mut(ws, w.ld, w.cols), MIN_ROWS_PER_TASK, |i, row| {
            let t = tr(i);
            listed.iter().for_each(|&c| clip.add(&mut row[c as usize], t));
        });
    } else {
        for &i in listed {
            let row = &mut ws[i as usize * w.ld..][..w.cols];
            row.iter_mut().enumerate().for_each(|(c, v)| clip.add(v, tr(c)));
        }
    }
    Ok(())
}

fn dense_plasticity_typed<T: Float>(st: &Stream, parallel: bool, w: &Dense, spikes: &Dense, rule: Rule) -> Result<()> {
    // the active neurons as a spike list; many active rows (pre) go over the pool below
    let active = with_active_indices(spikes, |listed| {
        if rule.post || !worth_sharing(st, listed.len() * w.cols) {
            dense_plasticity_listed::<T>(st, parallel, w, listed, rule)?;
            return Ok(None);
        }
        Ok(Some(listed_mask(listed, spikes.rows)))
    })?;
    let Some(active) = active else { return Ok(()) }; // done, on the listed rows or columns
    let (tr, clip) = (packed::<T, T::Acc>(rule.trace, Float::to_acc), rule.clip::<T::Acc>());
    // SAFETY: T is w's dtype; host memory.
    let ws = unsafe { w.slice_mut::<T>() };
    for_each_item(st, true, rows_mut(ws, w.ld, w.cols), MIN_ROWS_PER_TASK, |i, row| {
        if active[i] {
            row.iter_mut().zip(&tr).for_each(|(v, &t)| clip.add(v, t));
        }
    });
    Ok(())
}
